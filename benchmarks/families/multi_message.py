"""Multi-message communication (uncoded) against single-message gradient coding of the same load.

    PYTHONPATH=. python benchmarks/families/multi_message.py            # full run, writes results/multi_message.txt
    PYTHONPATH=. python benchmarks/families/multi_message.py --smoke    # seconds, no files

Ozfatura, Gündüz & Ulukus (ISIT 2019) report that letting each worker send every partial gradient as soon as it
is computed (uncoded computation, multi-message communication: ``gc.multi_message_code``) reduces the average
iteration time significantly for a slightly larger communication load. Model (``gc.multi_message_time``): worker
``i`` needs ``X_i = a + Exp(rate mu)`` seconds per partition, one draw per worker and iteration. For every
``(n, r, a, mu)`` the table gives

* ``multi``: E[T] of multi-message communication, exact (transfer matrix + quadrature), and the Monte Carlo mean of
  ``gc.simulate_partial`` with its standard error (the check ``|MC - exact| / SE``);
* ``cyclic``: cyclic repetition, one message per worker after its whole load, the first ``n - r + 1`` workers
  (closed form; ``simulate_partial``'s classical protocol on the same draws agrees);
* ``fractional``: fractional repetition with the earliest decodable set (closed form, when ``r`` divides ``n``);
* the ratio cyclic / multi (same load), and the messages the master has received when it decodes (multi: the
  mean, measured; single message: ``n - r + 1``);
* a summary line per setting with each protocol at its best load.

The paper's own parameters could not be read (only its abstract was available), so the settings here are the
library's: n = 20 workers, loads r = 1..5, a = 1 s and mu = 1 or 0.2 per partition.
"""

from __future__ import annotations

import argparse
import os
import time

import numpy as np


def table(gc, n, loads, settings, iters):
    lines = [f"{'n':>3} {'r':>2} {'a':>4} {'mu':>4} {'multi exact':>12} {'multi MC':>9} {'SE':>6} {'dev/SE':>6} "
             f"{'cyclic':>8} {'cyclic MC':>9} {'fractional':>10} {'cyc/multi':>9} {'msgs multi':>10} "
             f"{'msgs single':>11}"]
    ratios, devs, best = {}, [], {}
    for a, mu in settings:
        for r in loads:
            code = gc.multi_message_code(n, r)
            sim = gc.simulate_partial(code, model=gc.ShiftedExponentialWorkers(a, mu), iters=iters, rng=r)
            exact = gc.multi_message_time(n, r, a=a, mu=mu)
            single = gc.multi_message_time(n, r, a=a, mu=mu, protocol="single")
            frac = f"{gc.multi_message_time(n, r, a=a, mu=mu, protocol='fractional'):>10.3f}" if n % r == 0 \
                else f"{'-':>10}"
            se = float(np.std(sim.partial) / np.sqrt(iters))
            dev = abs(float(np.mean(sim.partial)) - exact) / se if se > 0 else 0.0
            devs.append(dev)
            ratios[(r, a, mu)] = single / exact
            singles = [(single, f"cyclic r={r}")] + ([(gc.multi_message_time(n, r, a=a, mu=mu, protocol="fractional"),
                                                        f"fractional r={r}")] if n % r == 0 else [])
            b = best.setdefault((a, mu), {"multi": (np.inf, ""), "single": (np.inf, "")})
            b["multi"] = min(b["multi"], (exact, f"multi r={r}"))
            b["single"] = min(b["single"], *singles)
            lines.append(f"{n:>3} {r:>2} {a:>4g} {mu:>4g} {exact:>12.4f} {np.mean(sim.partial):>9.4f} {se:>6.4f} "
                         f"{dev:>6.2f} {single:>8.4f} {np.mean(sim.classical):>9.4f} {frac} "
                         f"{single / exact:>9.2f} {np.mean(sim.chunks_used):>10.2f} {n - r + 1:>11}")
    return lines, ratios, devs, best


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--smoke", action="store_true", help="tiny sizes, no files (the test suite's run)")
    args = ap.parse_args()
    import gradcodes as gc

    t0 = time.perf_counter()
    n, loads, iters = (6, [1, 2, 3], 2000) if args.smoke else (20, [1, 2, 3, 4, 5], 100_000)
    settings = [(1.0, 1.0), (1.0, 0.2)]
    lines, ratios, devs, best = table(gc, n, loads, settings, iters)
    head = [f"multi-message (uncoded) vs single-message gradient coding of load r, {iters} simulated iterations per "
            f"row, X_i = a + Exp(mu) seconds per partition"]
    big = [ratios[(r, a, mu)] for r in loads if r > 1 for a, mu in settings]
    head.append(f"cyclic repetition / multi-message, r >= 2: {min(big):.2f}x .. {max(big):.2f}x; largest "
                f"|MC - exact| / SE = {max(devs):.2f}")
    for (a, mu), b in best.items():
        head.append(f"each at its best load r in {loads} (a={a:g}, mu={mu:g}): single message {b['single'][0]:.3f} s "
                    f"({b['single'][1]}), multi-message {b['multi'][0]:.3f} s ({b['multi'][1]}): "
                    f"{b['single'][0] / b['multi'][0]:.2f}x")
    lines = head + [""] + lines + ["", f"time: {time.perf_counter() - t0:.1f} s, load average "
                                       f"{os.getloadavg()[0]:.2f}"]
    print("\n".join(lines))
    if not args.smoke:
        out = os.path.join(os.path.dirname(os.path.abspath(__file__)), "results", "multi_message.txt")
        with open(out, "w") as fh:
            fh.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
