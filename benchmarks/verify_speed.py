"""Verifier speed and memory, against the previous algorithm and per-set least squares, measured in the same run.

    python benchmarks/verify_speed.py            # full run (several minutes on a busy 2-core machine)
    python benchmarks/verify_speed.py --quick    # smaller sizes

Every timing is the median of ``--repeat`` (default 5) runs, the methods alternating within each repeat; wall
time and process CPU time are both shown (on a shared machine the CPU time is what the method costs). The load
average is printed first.

Tables:
1. Exhaustive ``verify(cyclic_repetition(50, 5, rng=0), limit=3_000_000, stop_on_failure=False)`` (2,118,760
   sets): the screening kernel against the previous algorithm (every set through the decoder and the batched
   residual; still the reference path of the verifier). Targets: <= 1.5 s, <= 100 MB, >= 5x the previous.
   Same failing sets and worst cancellation are checked.
2. Ratio against per-set least squares (one ``np.linalg.lstsq`` per straggler set, as in Tandon et al.'s
   ``getA``) at (40, 4) (91,390 sets). Target: >= 200x.
3. The exhaustive frontier: for each s, the largest n whose C(n, s) sets the verifier's own budget check
   (rate measured on the first chunks of that very code) predicts to finish within 60 s.
4. Decoding-vector latency of one responder set, against ``np.linalg.lstsq`` on the responders' rows.
"""

from __future__ import annotations

import argparse
import math
import os
import sys
import time
import tracemalloc
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import gradcodes as gc  # noqa: E402
import gradcodes._verify as V  # noqa: E402
from gradcodes._tour import format_table  # noqa: E402


def lstsq_per_set(B: np.ndarray, s: int) -> float:
    """Per-set least squares over every straggler set; returns the worst residual."""
    n = B.shape[0]
    worst = 0.0
    ones = np.ones(B.shape[1])
    for S in V.straggler_batches(n, s, 4096):
        for row in S:
            F = np.setdiff1d(np.arange(n), row)
            a = np.linalg.lstsq(B[F].T, ones, rcond=None)[0]
            worst = max(worst, float(np.abs(a @ B[F] - 1).max()))
    return worst


def previous(code, limit):
    """The previous algorithm: the screening kernel switched off (every set through the reference path)."""
    old = V._KERNEL_MIN_SETS
    V._KERNEL_MIN_SETS = 1 << 62
    try:
        return gc.verify(code, limit=limit, stop_on_failure=False)
    finally:
        V._KERNEL_MIN_SETS = old


def alternate(methods: dict, repeat: int) -> dict:
    """Median wall and CPU seconds of each method, alternating the methods within each repeat."""
    wall = {k: [] for k in methods}
    cpu = {k: [] for k in methods}
    out = {}
    for _ in range(repeat):
        for k, fn in methods.items():
            t, c = time.perf_counter(), time.process_time()
            out[k] = fn()
            wall[k].append(time.perf_counter() - t)
            cpu[k].append(time.process_time() - c)
    return {k: (float(np.median(wall[k])), float(np.median(cpu[k])), out[k]) for k in methods}


def timed(fn, repeat: int = 1):
    best, out = float("inf"), None
    for _ in range(repeat):
        t = time.perf_counter()
        out = fn()
        best = min(best, time.perf_counter() - t)
    return best, out


def peak_mb(fn) -> float:
    tracemalloc.start()
    try:
        fn()
        return tracemalloc.get_traced_memory()[1] / 1e6
    finally:
        tracemalloc.stop()


def main(argv: list[str] | None = None) -> int:
    from threadpoolctl import threadpool_limits

    # One BLAS thread throughout: both sides are many small products, which a multithreaded BLAS only slows
    # down on a shared machine.
    with threadpool_limits(limits=1, user_api="blas"):
        return _run(argv)


def _run(argv: list[str] | None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="smaller sizes (CI smoke run)")
    ap.add_argument("--repeat", type=int, default=5, help="repeats per timing (median reported)")
    args = ap.parse_args(argv)
    print(f"load average at start: {' '.join(f'{x:.2f}' for x in os.getloadavg())} "
          f"({os.cpu_count()} CPUs); repeats: {args.repeat}")
    print()
    met = []

    # 1. exhaustive verification: kernel vs previous ---------------------------------------------------------
    n, s = (30, 4) if args.quick else (50, 5)
    code = gc.cyclic_repetition(n, s, rng=0)
    total = math.comb(n, s)
    gc.verify(code, limit=total, stop_on_failure=False)                 # compile / load the kernel once
    r = alternate({"new": lambda: gc.verify(code, limit=3_000_000, stop_on_failure=False),
                   "previous": lambda: previous(code, 3_000_000)}, args.repeat)
    mem = peak_mb(lambda: gc.verify(code, limit=3_000_000, stop_on_failure=False))
    new, old = r["new"][2], r["previous"][2]
    same = (new.n_failures == old.n_failures and new.failures == old.failures and
            new.worst_cancellation_responders == old.worst_cancellation_responders)
    rows = []
    for k, label in (("new", "verify (screening kernel)"), ("previous", "previous algorithm (reference path)")):
        w, c, rep = r[k]
        rows.append({"method": label, "sets": f"{rep.patterns_checked:,}", "wall s": f"{w:.2f}",
                     "cpu s": f"{c:.2f}", "sets/s (wall)": f"{total / w:,.0f}", "failing": rep.n_failures,
                     "worst canc": f"{rep.worst_cancellation:.4e}", "worst residual": f"{rep.worst_residual:.2e}"})
    print(f"1. Exhaustive verify(cyclic_repetition({n}, {s}, rng=0), stop_on_failure=False): targets <= 1.5 s, "
          f"<= 100 MB, >= 5x the previous")
    print(format_table(rows))
    ratio = r["previous"][0] / r["new"][0]
    ratio_cpu = r["previous"][1] / r["new"][1]
    print(f"   speed-up {ratio:.1f}x wall, {ratio_cpu:.1f}x cpu; peak traced memory {mem:.1f} MB; same failing "
          f"sets and worst-cancellation set as the previous algorithm: {same}")
    met += [("exhaustive (50, 5) <= 1.5 s wall", r["new"][0] <= 1.5, f"{r['new'][0]:.2f} s"),
            ("exhaustive (50, 5) <= 1.5 s cpu", r["new"][1] <= 1.5, f"{r['new'][1]:.2f} s"),
            ("<= 100 MB", mem <= 100, f"{mem:.1f} MB"), (">= 5x previous (wall)", ratio >= 5, f"{ratio:.1f}x"),
            ("same failing sets / worst set", same, str(same))]
    print()

    # 2. against per-set least squares -----------------------------------------------------------------------
    bn, bs = (20, 3) if args.quick else (40, 4)
    bcode = gc.cyclic_repetition(bn, bs, rng=0)
    btotal = math.comb(bn, bs)
    r = alternate({"verify": lambda: gc.verify(bcode, limit=btotal, stop_on_failure=False),
                   "lstsq": lambda: lstsq_per_set(bcode.B, bs)}, args.repeat)
    rows = [{"method": "per-set np.linalg.lstsq", "sets": f"{btotal:,}", "wall s": f"{r['lstsq'][0]:.2f}",
             "cpu s": f"{r['lstsq'][1]:.2f}", "worst residual": f"{r['lstsq'][2]:.1e}"},
            {"method": "gradcodes.verify", "sets": f"{btotal:,}", "wall s": f"{r['verify'][0]:.3f}",
             "cpu s": f"{r['verify'][1]:.3f}", "worst residual": f"{r['verify'][2].worst_residual:.1e}"}]
    ratio = r["lstsq"][0] / r["verify"][0]
    ratio_cpu = r["lstsq"][1] / r["verify"][1]
    print(f"2. Against per-set least squares on ({bn}, {bs}) (target >= 200x)")
    print(format_table(rows))
    print(f"   ratio {ratio:.0f}x wall, {ratio_cpu:.0f}x cpu")
    met.append((f"ratio vs lstsq at ({bn}, {bs}) >= 200x", ratio >= 200, f"{ratio:.0f}x"))
    print()

    # 3. exhaustive frontier ---------------------------------------------------------------------------------
    def rate(nn: int, ss: int) -> float:
        """Sets per second of the exhaustive pipeline on cyclic_repetition(nn, ss): the verifier's budget mode
        with a zero budget enumerates a prefix (>= 0.05 s) and stops; the report's time covers it."""
        rep = gc.verify(gc.cyclic_repetition(nn, ss, rng=0), time_budget=0, samples=0, search=False,
                        stop_on_failure=False)
        done = rep.strategies.get("lexicographic prefix", rep.strategies.get("exhaustive", 0))
        return done / max(rep.seconds, 1e-9)

    rows = []
    for fs in ((4, 5) if args.quick else (4, 5, 6)):
        n_best, lo, hi = None, fs + 2, 2000
        while lo <= hi:                                  # binary search on n with the measured rate
            mid = (lo + hi) // 2
            pred = math.comb(mid, fs) / rate(mid, fs)
            if pred <= 60:
                n_best, pred_best, lo = mid, pred, mid + 1
            else:
                hi = mid - 1
        if n_best is not None:
            rows.append({"s": fs, "largest n (predicted <= 60 s)": n_best, "sets": f"{math.comb(n_best, fs):,}",
                         "predicted s": f"{pred_best:.0f}"})
    print("3. Exhaustive frontier (cyclic_repetition, seed 0): largest n whose C(n, s) sets fit 60 s at the rate "
          "measured on that code (prefix of its enumeration)")
    print(format_table(rows))
    if not args.quick and rows:
        fs = rows[1]["s"] if len(rows) > 1 else rows[0]["s"]
        fn = rows[1]["largest n (predicted <= 60 s)"] if len(rows) > 1 else rows[0]["largest n (predicted <= 60 s)"]
        t = time.perf_counter()
        rep = gc.verify(gc.cyclic_repetition(fn, fs, rng=0), limit=math.comb(fn, fs), stop_on_failure=False)
        print(f"   confirmation run at ({fn}, {fs}): {repr(rep)} in {time.perf_counter() - t:.1f} s")
    print()

    # 4. decoding-vector latency ------------------------------------------------------------------------
    rows = []
    rng = np.random.default_rng(1)
    for dn in ((100,) if args.quick else (100, 500)):
        ds = dn // 10
        dcode = gc.GradientCode(gc.cyclic_repetition(dn, ds, rng=0).B, s=ds, cache_size=0)
        t_basis, _ = timed(lambda dcode=dcode: gc.NullSpaceDecoder.basis(dcode))
        sets = [np.sort(rng.choice(dn, dn - ds, replace=False)) for _ in range(20)]
        t_lstsq, _ = timed(lambda dcode=dcode, sets=sets: [np.linalg.lstsq(dcode.B[F].T, np.ones(dcode.k), rcond=None)
                                                          for F in sets], repeat=3)
        t_null, _ = timed(lambda dcode=dcode, sets=sets: [dcode.decoding_matrix(F) for F in sets], repeat=3)
        masks = np.ones((2000, dn), dtype=bool)
        for row in masks:
            row[rng.choice(dn, ds, replace=False)] = False
        t_batch, _ = timed(lambda dcode=dcode, masks=masks: dcode.decoding_matrices(masks))
        rows.append({"n, s": f"{dn}, {ds}", "np.linalg.lstsq": f"{t_lstsq / 20 * 1e3:.2f} ms",
                     "decoding_matrix": f"{t_null / 20 * 1e3:.2f} ms",
                     "ratio": f"{t_lstsq / t_null:.1f}x",
                     "batched (2000 sets)": f"{t_batch / 2000 * 1e3:.3f} ms/set",
                     "batched ratio": f"{t_lstsq / 20 / (t_batch / 2000):.0f}x",
                     "one-off basis": f"{t_basis * 1e3:.0f} ms"})
    print("4. Decoding-vector latency, one responder set (cyclic_repetition, s = n/10; checked decode incl. "
          "residual)")
    print(format_table(rows))
    print()
    print("Targets:")
    for name, ok, value in met:
        print(f"  {'MET    ' if ok else 'NOT MET'}  {name}: {value}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
