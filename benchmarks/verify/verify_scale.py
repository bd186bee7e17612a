"""Exhaustive verification on 1 and 2 local workers, on 1, 2 and 4 MPI ranks, and a projection for a cluster.

    python benchmarks/verify/verify_scale.py            # full run: cyclic_repetition(80, 5, rng=0), 24.0 million sets
    python benchmarks/verify/verify_scale.py --smoke    # tiny sizes, seconds, writes nothing (the test suite runs it)

It prints, in one run, the two ratios that measure the split (run it on an otherwise idle machine). The code has
many sets near the tolerance (borderline and failing: the header counts them), which the screen decides itself; it
is large enough (about 11 s on one core) that the fixed cost of a split (forking and warming the workers, about
0.3 s here) does not dominate: ``cyclic_repetition(70, 5, rng=0)``, 4 s on one core since the screen decides its
borderline sets, gave 1.72x.

* ``2 local processes vs 1``: wall time of ``workers=1`` over wall time of ``workers=2`` (target on an idle
  2-core machine: at least 1.8);
* ``R MPI ranks``: the rate on R ranks as a fraction of linear, ``rate(R) / (R rate(1 rank))``, with the ranks
  that fit the cores marked (target there: at least 0.85; more ranks than cores are oversubscribed, not a target).

Every rate is the median of ``--repeat`` (default 3) runs of ``gc.verify(code, limit=..., stop_on_failure=False)``
(sets per second of wall time; the kernel is compiled before the clock starts). The local workers are forked
processes (``workers=``; ``--threads`` measures threads instead: the screening kernel releases the GIL, the
reference re-check of the sets near the tolerance mostly does not); the MPI runs are
``mpiexec -n R python -m mpi4py benchmarks/verify/verify_scale.py --child ...`` (rank 0 times the call between two
barriers). Every run's report is checked equal to the one-thread report (counts,
worst values and sets). The load average is printed at the start and at the end: on a shared machine the ratios
are only as good as the cores that were free.

The cluster projection is a PROJECTION, not a measurement: ``R`` ranks run at ``min(R r, T / c)`` sets per
second, with ``r`` the measured one-rank rate, ``T`` the sets per task and ``c`` the measured cost of one task at
the master (receiving and unpickling the task's pieces, folding them, sending the next task), the only serial
part of the protocol. It ignores network latency beyond what a local message costs (tasks are requested two
ahead, so latency is hidden while ``T / r`` exceeds it) and the final broadcast.
"""

from __future__ import annotations

import argparse
import json
import os
import pickle
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

import gradcodes as gc  # noqa: E402
import gradcodes._verify.cost  # noqa: E402
import gradcodes._verify.mpi_driver as VM  # noqa: E402
import gradcodes._verify.parallel as P  # noqa: E402

RESULTS = Path(__file__).resolve().parent / "results" / "verify_scale.txt"
FIELDS = ("verdict", "patterns_checked", "n_failures", "failures", "n_borderline", "borderline", "worst_residual",
          "worst_responders", "worst_residual_bound", "worst_cancellation", "worst_cancellation_responders",
          "error_estimate")


def build(n: int, s: int, seed: int) -> gc.GradientCode:
    return gc.cyclic_repetition(n, s, rng=seed)


def summary(report: gc.VerifyReport) -> dict:
    return json.loads(json.dumps({f: getattr(report, f) for f in FIELDS}))


def loadavg() -> str:
    try:
        return " ".join(Path("/proc/loadavg").read_text().split()[:3])
    except OSError:
        return "n/a"


def child(args: argparse.Namespace) -> None:
    """One MPI run (every rank): prints rank 0's seconds and report summary as JSON."""
    from mpi4py import MPI

    world = MPI.COMM_WORLD
    if args.smoke:
        P._FIRST, P._CHUNK = (256, 512), 1024

        gradcodes._verify.cost._KERNEL_MIN_SETS = 0
    code = build(args.n, args.s, args.seed)
    gc.verify(gc.cyclic_repetition(12, 3, rng=0), limit=10**6, comm=world, workers=1)   # warm up every rank
    world.Barrier()
    t0, c0 = time.perf_counter(), time.process_time()
    report = gc.verify(code, limit=10**12, stop_on_failure=False, comm=world, workers=1)
    cpu = world.reduce(time.process_time() - c0, root=0)
    world.Barrier()
    dt = time.perf_counter() - t0
    if world.Get_rank() == 0:
        print("CHILD " + json.dumps({"seconds": dt, "cpu": cpu, "report": summary(report)}), flush=True)


def cpu_self_and_children() -> float:
    """User + system CPU seconds of this process and its finished children (the forked workers)."""
    ts = os.times()
    return ts.user + ts.system + ts.children_user + ts.children_system


def mpiexec() -> str | None:
    for name in ("mpiexec", "mpirun"):
        cand = os.path.join(os.path.dirname(sys.executable), name)
        if os.path.exists(cand):
            return cand
    return None


def run_mpi(ranks: int, args: argparse.Namespace) -> tuple[float, float, dict]:
    cmd = [mpiexec(), "-n", str(ranks), sys.executable, "-m", "mpi4py", __file__, "--child", "--n", str(args.n),
           "--s", str(args.s), "--seed", str(args.seed)] + (["--smoke"] if args.smoke else [])
    env = dict(os.environ, OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1")
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=3600)   # type: ignore[arg-type]
    if proc.returncode != 0:
        raise RuntimeError(f"mpiexec -n {ranks} failed:\n{proc.stderr[-2000:]}")
    line = next(x for x in proc.stdout.splitlines() if x.startswith("CHILD "))
    got = json.loads(line[6:])
    return got["seconds"], got["cpu"], got["report"]


def task_cost(code: gc.GradientCode, repeat: int) -> tuple[float, int]:
    """Seconds the master spends on one task (pickle round trip of its pieces, fold, the next task's message) and
    the sets per task, measured on real pieces of this code."""
    import numpy as np

    from gradcodes._verify.fast import NullSpaceScreen
    from gradcodes._verify.verifier import _Tracker

    dec = code._decoder(None)
    tr = _Tracker(code, dec, code.rtol)
    screen = NullSpaceScreen(code, float(np.finfo(np.float64).eps / 2), code.rtol, tr.load)
    lo = P.chunk_start(len(P._FIRST))
    pieces = []
    for _ in range(VM.TASK_CHUNKS):
        hi = lo + P._CHUNK
        pieces.append(P.screen_chunk(tr, screen, lo, hi, True))
        lo = hi
    times = []
    for _ in range(repeat):
        prog = P.Progress(10**15, 10, False)
        prog.prefix.hi = pieces[0].lo
        t0 = time.perf_counter()
        got = pickle.loads(pickle.dumps(pieces))
        for p in got:
            prog.add(p)
        pickle.loads(pickle.dumps(("task", [(p.lo, p.hi) for p in got])))
        times.append(time.perf_counter() - t0)
    return statistics.median(times), VM.TASK_CHUNKS * P._CHUNK


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--smoke", action="store_true")
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--n", type=int, default=80)
    ap.add_argument("--s", type=int, default=5)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--threads", action="store_true", help="local workers as threads instead of processes")
    args = ap.parse_args()
    P._USE_PROCESSES = not args.threads
    if args.child:
        child(args)
        return
    if args.smoke:
        args.n, args.s, args.repeat = 22, 4, 1
        P._FIRST, P._CHUNK = (256, 512), 1024

        gradcodes._verify.cost._KERNEL_MIN_SETS = 0
    code = build(args.n, args.s, args.seed)
    total = code.n and __import__("math").comb(code.n, code.s)
    lines = [f"verify_scale: {code.name}(n={code.n}, s={code.s}, rng={args.seed}), {total:,} sets, median of "
             f"{args.repeat}; cores available: {P.default_workers()}; load average at start: {loadavg()}"]
    print(lines[0], flush=True)
    gc.verify(gc.cyclic_repetition(12, 3, rng=0), limit=10**6)            # compile / load the kernel
    first = gc.verify(code, limit=10**12, stop_on_failure=False, workers=1)
    ref = summary(first)
    lines.append(f"the code's sets near the tolerance: {first.n_borderline:,} borderline, {first.n_failures:,} failing "
                 "(the screen decides them itself; the reference evaluation re-checks a sample per chunk)")
    # the runs alternate within each repeat (1 thread, 2 threads, 1, 2, 4 ranks), so a change of the machine's
    # load hits every configuration alike
    configs: list[tuple[str, int]] = [("threads", 1), ("threads", 2)]
    if mpiexec() is not None:
        configs += [("mpi", 1), ("mpi", 2), ("mpi", 4)]
    secs: dict[tuple[str, int], list[float]] = {c: [] for c in configs}
    cpus: dict[tuple[str, int], list[float]] = {c: [] for c in configs}
    for _ in range(args.repeat):
        for kind, count in configs:
            if kind == "threads":
                t0, c0 = time.perf_counter(), cpu_self_and_children()
                got = summary(gc.verify(code, limit=10**12, stop_on_failure=False, workers=count))
                secs[kind, count].append(time.perf_counter() - t0)
                cpus[kind, count].append(cpu_self_and_children() - c0)
            else:
                dt, cpu, got = run_mpi(count, args)
                secs[kind, count].append(dt)
                cpus[kind, count].append(cpu)
            assert got == ref, f"{kind} x {count}: the report differs from the one-thread report"
    rate = {c: total / statistics.median(v) for c, v in secs.items()}
    base = rate["threads", 1]

    def cpu_per(c: tuple[str, int]) -> float:
        return statistics.median(cpus[c]) / total * 1e6
    rows = []
    for workers in (1, 2):
        c = ("threads", workers)
        kind = "thread" if args.threads else "process"
        rows.append((f"{workers} {kind}{'es' * (workers > 1) if kind == 'process' else 's' * (workers > 1)}",
                     rate[c], rate[c] / base, f"{rate[c] / (workers * base):.2f} of linear", cpu_per(c)))
    mpi_rate1 = None
    if mpiexec() is None:
        rows.append(("MPI", float("nan"), float("nan"), "skipped: no mpiexec next to this python", float("nan")))
    else:
        mpi_rate1 = rate["mpi", 1]
        for ranks in (1, 2, 4):
            r = rate["mpi", ranks]
            note = "ranks > cores: oversubscribed" if ranks > P.default_workers() else \
                f"{r / (ranks * mpi_rate1):.2f} of linear"
            rows.append((f"{ranks} MPI rank{'s' * (ranks > 1)}", r, r / base, note, cpu_per(("mpi", ranks))))
    lines.append("wall-time rates are what this machine gave (a shared machine gives only the cores that were free); "
                 "CPU s per million sets (all processes) is the work: equal CPU per set means the split adds no work")
    lines.append(f"{'run':<14} {'sets/s (wall)':>14} {'vs 1 local':>11} {'CPU s/Mset':>11}  note")
    for name, r, ratio, note, cpu in rows:
        lines.append(f"{name:<14} {r:>14,.0f} {ratio:>11.2f} {cpu:>11.3f}  {note}")
    cores = P.default_workers()
    t1, t2 = statistics.median(secs["threads", 1]), statistics.median(secs["threads", 2])
    lines.append(f"RATIO 2 local {'threads' if args.threads else 'processes'} vs 1 (wall time {t1:.3f} s / "
                 f"{t2:.3f} s): {t1 / t2:.2f}x  [target >= 1.8 on an idle 2-core machine; cores here: {cores}]")
    if mpi_rate1 is not None:
        for ranks in (1, 2, 4):
            frac = rate["mpi", ranks] / (ranks * mpi_rate1)
            mark = ("ranks <= cores: target >= 0.85" if ranks <= cores else
                    f"ranks > cores = {cores}: oversubscribed, not a target")
            lines.append(f"RATIO {ranks} MPI rank{'s' * (ranks > 1)} as a fraction of linear (rate / ({ranks} x "
                         f"1-rank rate)): {frac:.2f}  [{mark}]")
    cost, per_task = task_cost(code, max(5, args.repeat))
    r1 = mpi_rate1 or base
    assert r1 is not None
    lines.append(f"master cost per task (pickle round trip of {VM.TASK_CHUNKS} pieces, fold, next task): "
                 f"{cost * 1e6:.0f} us for {per_task:,} sets")
    lines.append("PROJECTION (not measured) for a cluster: R ranks at min(R * r, T / c), r = measured one-rank "
                 f"rate {r1:,.0f} sets/s, T = {per_task:,} sets per task, c = {cost * 1e6:.0f} us")
    for R in (16, 64, 256, 1024, 4096):
        proj = min(R * r1, per_task / cost)
        lines.append(f"  R = {R:>5}: {proj:>16,.0f} sets/s projected"
                     f"{' (master-bound)' if proj < R * r1 else ''}; C({code.n},{code.s}) in "
                     f"{total / proj:,.1f} s")
    lines.append(f"load average at end: {loadavg()}")
    for line in lines[1:]:
        print(line)
    if not args.smoke:
        RESULTS.write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
