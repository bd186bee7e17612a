"""Verifier speed and memory, against the previous algorithm and per-set least squares, measured in the same run.

    python benchmarks/verify/verify_speed.py            # full run: about 20 minutes on an idle 2-core machine
    python benchmarks/verify/verify_speed.py --quick    # smaller sizes
    python benchmarks/verify/verify_speed.py --smoke    # tiny sizes, seconds, writes nothing (the test suite runs it)

Every timing is the median of ``--repeat`` (default 5) runs, the methods alternating within each repeat; wall
time and CPU time (this process and its reaped children: ``gc.verify`` uses every core by default, in forked
processes) are both shown (on a shared machine the CPU time is what the method costs). The load
average is printed at the start and at the end. Results go to ``benchmarks/verify/results/verify_speed.txt``.

Tables:
1. Exhaustive ``verify(cyclic_repetition(50, 5, rng=3), limit=3_000_000, stop_on_failure=False)`` (2,118,760
   sets, 4,723 of them borderline and 1,686 failing at the default tolerance) against the previous algorithm
   (every set through the decoder and the batched residual; still the reference path of the verifier, and the
   algorithm ``tests/test_verify.py`` compares with). Targets: <= 1.0 s wall, <= 100 MB, >= 5x the previous.
   The previous algorithm is *timed on every* ``--stride``-th *batch* of the enumeration and scaled by the
   stride (its cost per set is the same in every batch); one full run of it checks that the failing sets and the
   worst-cancellation set are the same.
2. Ratio against per-set least squares (one ``np.linalg.lstsq`` per straggler set, as in Tandon et al.'s
   ``getA``) at ``cyclic_repetition(40, 4, rng=21)`` (91,390 sets, 84 borderline, 31 failing), warm (the
   compiled kernel loaded). Target: >= 500x. A second row times the numpy screen, the path of a fresh process
   below 200,000 sets. Least squares is timed on every ``--stride``-th set in
   lexicographic order and scaled by the stride (the output says so).
3. The 60 s exhaustive frontier of ``cyclic_repetition(n, s, rng=0)``. First a PREDICTION: the largest n whose
   C(n, s) sets take <= 60 s at the rate of the exhaustive pipeline measured for 1 s on a prefix of that very
   code's enumeration (bracketing and bisection on n). The prefix is not typical of the whole enumeration (codes
   with many near-failing sets send them to the reference re-check unevenly), so the frontier itself is
   MEASURED: runs of the pipeline stopped at 60 s bracket n from the prediction and bisect it, and the largest n
   that finished is confirmed by one timed ``gc.verify`` call (n + 1 was stopped at 60 s). Up to about 5
   minutes per s. The time is not monotone in n (each n is another random code, and the codes with more
   near-failing sets are slower), so the result is an n that finished next to an n + 1 that did not, not a
   guarantee for every smaller n.
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

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

import gradcodes as gc  # noqa: E402
import gradcodes._verify.cost  # noqa: E402
import gradcodes._verify.verifier as V  # noqa: E402
from gradcodes._base.output import format_table  # noqa: E402

RESULTS = Path(__file__).resolve().parent / "results" / "verify_speed.txt"


def lstsq_sets(B: np.ndarray, s: int, stride: int) -> float:
    """Per-set least squares on every ``stride``-th straggler set (lexicographic order); returns the worst
    residual."""
    n = B.shape[0]
    worst = 0.0
    ones = np.ones(B.shape[1])
    rank = 0
    for S in V.straggler_batches(n, s, 4096):
        for row in S[(-rank) % stride::stride]:
            F = np.setdiff1d(np.arange(n), row)
            a = np.linalg.lstsq(B[F].T, ones, rcond=None)[0]
            worst = max(worst, float(np.abs(a @ B[F] - 1).max()))
        rank += S.shape[0]
    return worst


def summary(rep) -> tuple:
    """What must agree between two runs of the verifier on the same code: verdict, counts and the sets listed."""
    return (rep.verdict, rep.n_failures, rep.n_borderline, tuple(rep.failures), tuple(rep.borderline),
            rep.worst_cancellation_responders)


def previous_full(code, limit):
    """The previous algorithm on every set: the screening kernel switched off (the reference path)."""
    old = gradcodes._verify.cost._KERNEL_MIN_SETS
    gradcodes._verify.cost._KERNEL_MIN_SETS = 1 << 62
    try:
        return gc.verify(code, limit=limit, stop_on_failure=False)
    finally:
        gradcodes._verify.cost._KERNEL_MIN_SETS = old


def previous_strided(code, stride: int) -> int:
    """The previous algorithm's work on every ``stride``-th batch of the enumeration (the verifier's own batch
    size; same tracker, decoder and batched residual); returns the sets evaluated."""
    from gradcodes._core.decoders import single_threaded_blas

    tracker = V._Tracker(code, code._decoder(None), code.rtol)
    per_set = 8 * (code.n * code.m * 4 + code.k * code.m * code.m + code.n * code.n)
    batch = int(min(8192, max(256, 2**23 // per_set)))            # as verify() chooses it
    done = 0
    with single_threaded_blas():
        for i, S in enumerate(V.straggler_batches(code.n, code.s, batch)):
            if i % stride == 0:
                tracker.add(S)
                done += S.shape[0]
    return done


#: the exhaustive frontier's time limit (seconds)
FRONTIER_SECONDS = 60.0


def run_within(n: int, s: int, seconds: float) -> tuple[bool, float, int]:
    """The verifier's exhaustive pipeline on ``cyclic_repetition(n, s, rng=0)``, stopped after ``seconds``:
    ``(finished, elapsed seconds, sets done)`` (the kernel's one-off compilation or cache load excluded)."""
    from gradcodes._verify.engine import Clock

    class Stopwatch(Clock):
        def over_budget(self, budget: float) -> bool:
            return time.perf_counter() - self.start > budget

    code = gc.cyclic_repetition(n, s, rng=0)
    tracker = V._Tracker(code, code._decoder(None), code.rtol)
    clock = Stopwatch(math.comb(n, s), False, "frontier")
    tracker.model.fast_enumerate(tracker, clock, False, seconds)
    elapsed = time.perf_counter() - clock.start
    return clock.done == math.comb(n, s), elapsed, clock.done


def enumeration_rate(n: int, s: int, seconds: float = 1.0) -> float:
    """Sets per second of the verifier's exhaustive pipeline (screening kernel + reference re-checks) on
    ``cyclic_repetition(n, s, rng=0)``, measured for ``seconds`` on a prefix of its enumeration (the kernel's
    one-off compilation or cache load excluded, as in the verifier's own budget check)."""
    _, elapsed, done = run_within(n, s, seconds)
    return done / elapsed


def measured_frontier(s: int, n0: int, say) -> tuple[int, int, dict]:
    """Largest ``n`` whose exhaustive run finishes within :data:`FRONTIER_SECONDS`, by measured runs stopped at
    the limit: bracket from the predicted ``n0`` (stepping with the rate each run measured), then bisect.
    Returns ``(lo, hi = lo + 1, {n: (finished, seconds, sets done)})``."""
    probes: dict[int, tuple[bool, float, int]] = {}

    def probe(nn: int) -> bool:
        probes[nn] = run_within(nn, s, FRONTIER_SECONDS)
        fin, sec, done = probes[nn]
        say(f"   probe ({nn}, {s}): {'finished' if fin else 'stopped'} after {sec:.1f} s, {done:,} of "
            f"{math.comb(nn, s):,} sets")
        return fin

    def fits(rate: float, margin: float) -> int:
        """Largest n whose C(n, s) sets take at most margin * limit at ``rate`` sets/s."""
        nn = s + 1
        while math.comb(nn + 1, s) <= margin * FRONTIER_SECONDS * rate:
            nn += 1
        return nn

    lo, hi = (n0, None) if probe(n0) else (None, n0)
    while lo is None:
        _, sec, done = probes[hi]
        nn = min(hi - 1, fits(done / sec, 0.9))
        lo, hi = (nn, hi) if probe(nn) else (None, nn)
    while hi is None:
        _, sec, done = probes[lo]
        nn = max(lo + 1, fits(done / sec, 1.05))
        lo, hi = (nn, None) if probe(nn) else (lo, nn)
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if probe(mid):
            lo = mid
        else:
            hi = mid
    return lo, hi, probes


def cpu_time() -> float:
    """CPU seconds of this process and of its finished children (the verifier's forked workers: a pool ends with
    its call, so its processes are reaped and counted)."""
    import resource

    own, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime        # microseconds, unlike os.times()


def alternate(methods: dict, repeat: int) -> dict:
    """Median wall and CPU seconds of each method, alternating the methods within each repeat."""
    wall = {k: [] for k in methods}
    cpu = {k: [] for k in methods}
    out = {}
    for _ in range(repeat):
        for k, fn in methods.items():
            t, c = time.perf_counter(), cpu_time()
            out[k] = fn()
            wall[k].append(time.perf_counter() - t)
            cpu[k].append(cpu_time() - c)
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
    ap.add_argument("--quick", action="store_true", help="smaller sizes")
    ap.add_argument("--smoke", action="store_true",
                    help="tiny sizes (seconds) and no output files: checks that the script still runs")
    ap.add_argument("--repeat", type=int, default=5, help="repeats per timing (median reported; >= 5)")
    ap.add_argument("--stride", type=int, default=10, help="baselines are timed on every stride-th batch/set")
    ap.add_argument("--no-confirm", action="store_true", help="skip the measured runs of table 3 (prediction only)")
    ap.add_argument("--no-write", action="store_true", help="do not write benchmarks/verify/results/verify_speed.txt")
    args = ap.parse_args(argv)
    if args.smoke:                                   # the quick run's tables at tiny sizes, nothing written
        args.quick, args.no_confirm, args.no_write, args.repeat, args.stride = True, True, True, 1, 50
    lines: list[str] = []

    def say(text: str = "") -> None:
        print(text, flush=True)
        lines.append(text)

    t_start = time.perf_counter()
    say(f"load average at start: {' '.join(f'{x:.2f}' for x in os.getloadavg())} "
        f"({os.cpu_count()} CPUs); repeats: {args.repeat}; baseline stride: {args.stride}; one BLAS thread")
    say()
    met = []
    stride = args.stride

    # 1. exhaustive verification: kernel vs previous ---------------------------------------------------------
    n, s = (12, 2) if args.smoke else (30, 4) if args.quick else (50, 5)
    code = gc.cyclic_repetition(n, s, rng=3)
    total = math.comb(n, s)
    gc.verify(code, limit=total, stop_on_failure=False)                 # compile / load the kernel once
    r = alternate({"new": lambda: gc.verify(code, limit=3_000_000, stop_on_failure=False),
                   "previous": lambda: previous_strided(code, stride)}, args.repeat)
    mem = peak_mb(lambda: gc.verify(code, limit=3_000_000, stop_on_failure=False))
    t_full = time.perf_counter()
    old = previous_full(code, 3_000_000)
    t_full = time.perf_counter() - t_full
    new = r["new"][2]
    same = (new.n_failures == old.n_failures and new.failures == old.failures and
            new.worst_cancellation_responders == old.worst_cancellation_responders and
            abs(new.worst_cancellation - old.worst_cancellation) <= 1e-6 * old.worst_cancellation)
    sub = r["previous"][2]
    scale = total / sub
    rows = [{"method": "verify (screening kernel)", "sets": f"{total:,}", "wall s": f"{r['new'][0]:.2f}",
             "cpu s": f"{r['new'][1]:.2f}", "sets/s (wall)": f"{total / r['new'][0]:,.0f}",
             "failing": new.n_failures, "worst canc": f"{new.worst_cancellation:.4e}",
             "worst residual": f"{new.worst_residual:.2e}"},
            {"method": f"previous algorithm, 1/{stride} of the batches x {scale:.2f}", "sets": f"{sub:,}",
             "wall s": f"{r['previous'][0] * scale:.2f}", "cpu s": f"{r['previous'][1] * scale:.2f}",
             "sets/s (wall)": f"{sub / r['previous'][0]:,.0f}", "failing": "", "worst canc": "",
             "worst residual": ""},
            {"method": "previous algorithm, every set (once)", "sets": f"{old.patterns_checked:,}",
             "wall s": f"{t_full:.2f}", "cpu s": "", "sets/s (wall)": f"{total / t_full:,.0f}",
             "failing": old.n_failures, "worst canc": f"{old.worst_cancellation:.4e}",
             "worst residual": f"{old.worst_residual:.2e}"}]
    say(f"1. Exhaustive verify(cyclic_repetition({n}, {s}, rng=3), limit=3_000_000, stop_on_failure=False), "
        f"{new.n_borderline:,} borderline and {new.n_failures:,} failing sets: targets <= 1.0 s, <= 100 MB, >= 5x "
        "the previous algorithm")
    say(format_table(rows))
    ratio = r["previous"][0] * scale / r["new"][0]
    ratio_cpu = r["previous"][1] * scale / max(r["new"][1], 1e-6)
    say(f"   speed-up {ratio:.1f}x wall, {ratio_cpu:.1f}x cpu (previous algorithm timed on {sub:,} sets, every "
        f"{stride}th batch, scaled by {scale:.2f}); peak traced memory {mem:.1f} MB; same failing sets, worst-"
        f"cancellation set and value as the previous algorithm's full run: {same}")
    met += [(f"exhaustive ({n}, {s}) <= 1.0 s wall", r["new"][0] <= 1.0, f"{r['new'][0]:.2f} s wall"),
            (f"exhaustive ({n}, {s}) <= 1.0 s cpu", r["new"][1] <= 1.0, f"{r['new'][1]:.2f} s cpu"),
            ("<= 100 MB", mem <= 100, f"{mem:.1f} MB"),
            (">= 5x the previous algorithm (wall)", ratio >= 5, f"{ratio:.1f}x"),
            ("same failing sets / worst-cancellation set", same, str(same))]
    say()

    # 2. against per-set least squares -----------------------------------------------------------------------
    bn, bs = (10, 2) if args.smoke else (20, 3) if args.quick else (40, 4)
    bcode = gc.cyclic_repetition(bn, bs, rng=21)
    btotal = math.comb(bn, bs)
    bsub = len(range(0, btotal, stride))

    def numpy_screen():
        old = V._USE_NUMBA
        V._USE_NUMBA = False
        try:
            return gc.verify(bcode, limit=btotal, stop_on_failure=False)
        finally:
            V._USE_NUMBA = old

    r = alternate({"verify": lambda: gc.verify(bcode, limit=btotal, stop_on_failure=False),
                   "numpy": numpy_screen, "lstsq": lambda: lstsq_sets(bcode.B, bs, stride)}, args.repeat)
    bscale = btotal / bsub
    rows = [{"method": f"per-set np.linalg.lstsq, every {stride}th set x {bscale:.2f}", "sets": f"{bsub:,}",
             "wall s": f"{r['lstsq'][0] * bscale:.2f}", "cpu s": f"{r['lstsq'][1] * bscale:.2f}",
             "worst residual": f"{r['lstsq'][2]:.1e}"},
            {"method": "gradcodes.verify (exhaustive, compiled kernel)", "sets": f"{btotal:,}",
             "wall s": f"{r['verify'][0]:.3f}", "cpu s": f"{r['verify'][1]:.3f}",
             "worst residual": f"{r['verify'][2].worst_residual:.1e}"},
            {"method": "gradcodes.verify (exhaustive, numpy screen)", "sets": f"{btotal:,}",
             "wall s": f"{r['numpy'][0]:.3f}", "cpu s": f"{r['numpy'][1]:.3f}",
             "worst residual": f"{r['numpy'][2].worst_residual:.1e}"}]
    ratio = r["lstsq"][0] * bscale / r["verify"][0]
    ratio_cpu = r["lstsq"][1] * bscale / max(r["verify"][1], 1e-6)
    ratio_np = r["lstsq"][0] * bscale / r["numpy"][0]
    rv = r["verify"][2]
    say(f"2. Against per-set least squares on cyclic_repetition({bn}, {bs}, rng=21), {btotal:,} sets "
        f"({rv.n_borderline:,} borderline, {rv.n_failures:,} failing; target >= 500x warm); least squares timed on "
        f"{bsub:,} sets (every {stride}th) and scaled by {bscale:.2f}")
    say(format_table(rows))
    say(f"   ratio {ratio:.0f}x wall, {ratio_cpu:.0f}x cpu (compiled kernel); {ratio_np:.0f}x wall (numpy screen); "
        f"same report on both paths: {summary(rv) == summary(r['numpy'][2])}")
    met.append((f"ratio vs per-set lstsq at ({bn}, {bs}) >= 500x (wall, warm)", ratio >= 500, f"{ratio:.0f}x"))
    say()

    # 3. exhaustive frontier ---------------------------------------------------------------------------------
    rows = []
    frontier = {}
    secs = 0.02 if args.smoke else 0.3 if args.quick else 1.0

    for fs in ((4,) if args.smoke else (4, 5) if args.quick else (4, 5, 6)):
        # bracket and bisect on n: the predicted time C(n, s) / rate(n) with the rate measured at n itself (it
        # moves with n: codes with more near-failing sets send more sets to the reference re-check, so a fixed
        # point on the rate did not converge); n grows by 25% while the prediction stays <= 60 s
        def predicted(nn: int, fs: int = fs) -> tuple[float, float]:
            rate_ = enumeration_rate(nn, fs, secs)
            return math.comb(nn, fs) / rate_, rate_

        lo, hi = fs + 2, 4 * fs + 20
        while predicted(hi)[0] <= 60:
            lo, hi = hi, hi + max(1, hi // 4)
        while hi - lo > 1:
            mid = (lo + hi) // 2
            if predicted(mid)[0] <= 60:
                lo = mid
            else:
                hi = mid
        nn = lo
        rt = predicted(nn)[1]
        frontier[fs] = nn
        rows.append({"s": fs, "largest n (PREDICTED <= 60 s)": nn, "sets": f"{math.comb(nn, fs):,}",
                     "measured rate at n, sets/s": f"{rt:,.0f}", "predicted s": f"{math.comb(nn, fs) / rt:.0f}"})
    say("3. Exhaustive 60 s frontier (cyclic_repetition(n, s, rng=0), stop_on_failure=False): PREDICTION from the "
        "rate measured for 1 s on a prefix of each code's enumeration")
    say(format_table(rows))
    if not args.quick and not args.no_confirm:
        rows = []
        for fs, fn in frontier.items():
            lo, hi, probes = measured_frontier(fs, fn, say)
            # the frontier's own confirmation: the public call, exhaustive, timed end to end
            for _ in range(3):
                t, c = time.perf_counter(), cpu_time()
                rep = gc.verify(gc.cyclic_repetition(lo, fs, rng=0), limit=math.comb(lo, fs), stop_on_failure=False)
                w, c = time.perf_counter() - t, cpu_time() - c
                say(f"   gc.verify at ({lo}, {fs}): {rep!r} in {w:.1f} s wall, {c:.1f} s cpu "
                    f"(exhaustive: {rep.exhaustive})")
                if w <= FRONTIER_SECONDS or lo <= fs + 1:
                    break
                hi, lo = lo, lo - 1                                # the probe's margin was not enough: step down
            ok = rep.exhaustive and w <= FRONTIER_SECONDS
            rows.append({"s": fs, "largest n (MEASURED)": lo, "sets": f"{math.comb(lo, fs):,}",
                         "gc.verify wall s": f"{w:.1f}", "verdict": rep.verdict,
                         "n + 1": f"n = {hi} stopped at {FRONTIER_SECONDS:.0f} s after {probes[hi][2]:,} of "
                                     f"{math.comb(hi, fs):,} sets" if hi in probes and not probes[hi][0]
                                     else "over 60 s in gc.verify",
                         "probe runs": len(probes)})
            met.append((f"60 s frontier at s = {fs} measured (n = {lo} verified exhaustively by gc.verify within "
                        f"{FRONTIER_SECONDS:.0f} s, n = {hi} not)", ok, f"{w:.1f} s wall"))
        say(f"   MEASURED 60 s frontier: for each s, runs of the exhaustive pipeline stopped at "
            f"{FRONTIER_SECONDS:.0f} s (bracketing from the prediction above, then bisection on n), and the "
            "largest n that finished confirmed by one timed gc.verify call")
        say(format_table(rows))
    say()

    # 4. decoding-vector latency ------------------------------------------------------------------------
    rows = []
    rng = np.random.default_rng(1)
    for dn in ((20,) if args.smoke else (100,) if args.quick else (100, 500)):
        ds = dn // 10
        dcode = gc.GradientCode(gc.cyclic_repetition(dn, ds, rng=0).B, s=ds, cache_size=0)
        t_basis, _ = timed(lambda dcode=dcode: gc.NullSpaceDecoder.basis(dcode))
        sets = [np.sort(rng.choice(dn, dn - ds, replace=False)) for _ in range(20)]
        t_lstsq, _ = timed(lambda dcode=dcode, sets=sets: [np.linalg.lstsq(dcode.B[F].T, np.ones(dcode.k), rcond=None)
                                                          for F in sets], repeat=3)
        def checked(F, dcode=dcode):
            """The checked decode: the decoding matrix, or None when the acceptance rule refuses the set (the
            same work: the matrix, its residual and cancellation)."""
            try:
                return dcode.decoding_matrix(F)
            except gc.DecodingError:
                return None

        t_null, got = timed(lambda sets=sets: [checked(F) for F in sets], repeat=3)
        masks = np.ones((2000, dn), dtype=bool)
        for row in masks:
            row[rng.choice(dn, ds, replace=False)] = False
        t_batch, _ = timed(lambda dcode=dcode, masks=masks: dcode.decoding_matrices(masks))
        rows.append({"n, s": f"{dn}, {ds}", "np.linalg.lstsq": f"{t_lstsq / 20 * 1e3:.2f} ms",
                     "decoding_matrix": f"{t_null / 20 * 1e3:.2f} ms",
                     "ratio": f"{t_lstsq / t_null:.1f}x",
                     "batched (2000 sets)": f"{t_batch / 2000 * 1e3:.3f} ms/set",
                     "batched ratio": f"{t_lstsq / 20 / (t_batch / 2000):.0f}x",
                     "one-off basis": f"{t_basis * 1e3:.0f} ms",
                     "refused (of 20)": sum(a is None for a in got)})
    say("4. Decoding-vector latency, one responder set (cyclic_repetition, s = n/10; checked decode incl. "
        "residual and the acceptance rule, which refuses some random sets of the larger code; best of 3)")
    say(format_table(rows))
    say()
    say("Targets:")
    for name, ok, value in met:
        say(f"  {'MET    ' if ok else 'NOT MET'}  {name}: {value}")
    say(f"load average at end: {' '.join(f'{x:.2f}' for x in os.getloadavg())}; total "
        f"{time.perf_counter() - t_start:.0f} s")
    if not args.no_write and not args.quick:
        RESULTS.parent.mkdir(parents=True, exist_ok=True)
        RESULTS.write_text("$ python benchmarks/verify/verify_speed.py"
                           + "".join(f" {a}" for a in (argv or sys.argv[1:])) + "\n" + "\n".join(lines) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
