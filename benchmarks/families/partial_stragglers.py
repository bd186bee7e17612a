"""Partial stragglers: the per-chunk protocol against the classical protocol on the same assignment and draws.

    PYTHONPATH=. python benchmarks/families/partial_stragglers.py          # full run: results/partial_stragglers.txt
    PYTHONPATH=. python benchmarks/families/partial_stragglers.py --smoke  # seconds, no files

Ramamoorthy, Meng & Girimaji (NeurIPS 2024) report that exact recovery with messages after every chunk is about
2x faster than the original protocol class (one message per worker after its whole load, waiting for n - s
workers). Here: the cyclic assignment with load gamma = s + m chunks per worker, n = 20 and n = 100 workers,
communication factors m = 1..3, and three worker settings drawn from the simulator's worker models:

* *exponential*: i.i.d. shifted exponential per worker and iteration, a = 1 s and mu = 1 per chunk;
* *heavy*: the same with mu = 0.2 (a long exponential tail: frequent slow workers);
* *persistent*: two-state Markov stragglers (p_slow = 0.1, p_recover = 0.3, slowdown 5) over the exponential.

A worker keeps one speed within an iteration (``chunk_times="even"``: slow workers are partial stragglers); the
last columns repeat the ratio with an independent draw per chunk. Both protocols run on the same draws
(``gc.simulate_partial``), and the table prints the mean iteration times, their ratio, and ``gamma / m`` (the
ratio with equal deterministic speeds). The protocol's exactness on these parameters is proven separately by
``gc.verify`` for small n (tests/test_partial_stragglers.py). A last table runs the protocol in ``gc.simulate``,
where messages cost communication time (:func:`communication`).
"""

from __future__ import annotations

import argparse
import os
import time

import numpy as np


def models(gc):
    base = gc.ShiftedExponentialWorkers(1.0, 1.0)
    return {
        "exponential": base,
        "heavy": gc.ShiftedExponentialWorkers(1.0, 0.2),
        "persistent": gc.PersistentStragglers(0.1, 0.3, 5.0, base=base),
    }


def table(gc, sizes, loads, iters):
    lines = [f"{'n':>4} {'s':>2} {'m':>2} {'gamma':>5} {'workers':<12} {'E[T] partial':>13} {'E[T] classical':>15} "
             f"{'ratio':>6} {'ratio (indep.)':>15} {'gamma/m':>8} {'q_max':>6}"]
    ratios = {}
    for n in sizes:
        for gamma in loads:
            for m in range(1, min(3, gamma) + 1):
                s = gamma - m
                code = gc.partial_straggler_code(n, s, m)
                for name, model in models(gc).items():
                    sim = gc.simulate_partial(code, model=model, iters=iters, rng=1)
                    ind = gc.simulate_partial(code, model=model, iters=iters, rng=1, chunk_times="independent")
                    ratios[(n, gamma, m, name)] = sim.speedup
                    lines.append(f"{n:>4} {s:>2} {m:>2} {gamma:>5} {name:<12} {np.mean(sim.partial):>13.3f} "
                                 f"{np.mean(sim.classical):>15.3f} {sim.speedup:>6.2f} {ind.speedup:>15.2f} "
                                 f"{gamma / m:>8.2f} {code.q_max:>6}")
    return lines, ratios


def communication(gc, n, s, m, iters):
    """The same protocols in ``gc.simulate`` (label ``PS[...]``), whose master receives one message at a time:
    the per-chunk protocol sends ``gamma`` messages per worker instead of one, each taking ``t_c / m``. Chunk
    times as in the *exponential* rows (``a = 1``, ``mu = 1`` per chunk: one data point per chunk); ``t_c`` is
    given in units of the mean chunk time (2 s). The classical protocol runs on the same draws (``details``); the
    Ye-Abbe code of the same data is simulated beside it (its own draws, the earliest decodable set)."""
    code = gc.partial_straggler_code(n, s, m)
    classical_code = gc.ye_abbe(n, s, m) if m > 1 else gc.cyclic_repetition(n, s, rng=0)
    lines = [f"gc.simulate, n = {n}, s = {s}, m = {m} (gamma = {s + m}), exponential workers, single-port master, "
             f"{iters} iterations",
             f"{'t_c/chunk':>9} {'E[T] partial':>13} {'messages':>9} {'E[T] classical':>15} {'ratio':>6} "
             f"{'E[T] ' + classical_code.name:>34}"]
    for frac in (0.0, 0.01, 0.05, 0.1, 0.25):
        res = gc.simulate([code, classical_code], a=1.0, mu=1.0, m_data=float(code.k), t_c=2.0 * frac,
                          iters=iters, rng=2)
        r = res[f"PS[{code.name}]"]
        other = next(v for k, v in res.schemes.items() if k.startswith("GC["))
        lines.append(f"{frac:>9.2f} {r.mean:>13.3f} {r.details['mean_messages']:>9.1f} "
                     f"{r.details['classical_mean']:>15.3f} {r.details['speedup_over_classical']:>6.2f} "
                     f"{other.mean:>34.3f}")
    return lines


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--smoke", action="store_true", help="tiny sizes, no files (the test suite's run)")
    args = ap.parse_args()
    import gradcodes as gc

    t0 = time.perf_counter()
    sizes, loads, iters = ([8], [2], 200) if args.smoke else ([20, 100], [2, 4], 20_000)
    lines, ratios = table(gc, sizes, loads, iters)
    head = [f"partial stragglers vs the classical protocol, {iters} iterations per row, cyclic assignment "
            f"(load gamma = s + m), same draws for both protocols"]
    if not args.smoke:
        r = [ratios[(n, 4, 2, w)] for n in sizes for w in ("exponential", "heavy", "persistent")]
        r1 = [ratios[(n, 2, 1, w)] for n in sizes for w in ("exponential", "heavy", "persistent")]
        head.append(f"headline (gamma=4, m=2): speedup {min(r):.2f}x .. {max(r):.2f}x; (gamma=2, m=1): "
                    f"{min(r1):.2f}x .. {max(r1):.2f}x  -- the paper reports about 2x")
    comm = communication(gc, 8, 2, 2, iters) if args.smoke else communication(gc, 20, 2, 2, iters)
    lines = head + [""] + lines + [""] + comm + ["", f"time: {time.perf_counter() - t0:.1f} s, load average "
                                                     f"{os.getloadavg()[0]:.2f} on {os.cpu_count()} cores"]
    print("\n".join(lines))
    if not args.smoke:
        out = os.path.join(os.path.dirname(os.path.abspath(__file__)), "results", "partial_stragglers.txt")
        with open(out, "w") as fh:
            fh.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
