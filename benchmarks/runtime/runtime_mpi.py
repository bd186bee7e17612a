"""Benchmark of gradcodes.mpi on real MPI processes (MPICH from the ``mpi-local`` extra), ratios in the same run.

    python benchmarks/runtime/runtime_mpi.py            # launches the MPI jobs itself with the venv's mpiexec
    python benchmarks/runtime/runtime_mpi.py --smoke    # 3 ranks, 3 iterations, writes nothing; skipped without mpi4py
    python benchmarks/runtime/runtime_mpi.py --real-straggler   # only job 4: results/runtime_mpi_real_straggler.txt

Four jobs, each running every configuration ``REPEATS`` times interleaved; per configuration the median over
repeats of the per-run median iteration time (first iteration left out; job 4 times to a loss target):

1. **Fixed delays**, flat ``n = 8, s = 2`` (9 ranks) and the ``1 + 3 + 9`` CodedReduce tree (13 ranks). Every
   worker "computes" ``BASE`` seconds; ``s`` workers (flat: 2; tree: one child of every parent) are ``DELAY``
   seconds later. Targets: first-(n-s) time <= 1.1 x the same code without stragglers, and >= 3 x faster than
   wait-for-all and than ``MPI.Allreduce`` with the same stragglers. ``MPI.Allreduce (workers)`` is the
   data-parallel program users run (``gradcodes.mpi.allreduce_train``: a blocking ``Allreduce`` among the
   workers, a local step on every worker, the master only observing; within 1.1 x a hand-written mpi4py loop,
   ``runtime_floor.py``); its time is worker 1's iteration.
2. **Shifted-exponential delays** (``a``, ``mu = 1/a``; ``gc.simulate``'s model) on 13 ranks: CodedReduce
   (3, 2, 1), a master-worker GC with the same resiliency (cyclic repetition, N = 12, s = 4) and uncoded
   wait-for-all, each measured against ``gc.simulate``'s prediction. The simulator's per-message time ``t_c`` is
   calibrated per layout from a run without delays in the same job: ``t_c = T_0 / K`` for a master waiting for
   ``K`` messages, ``T_0 / (L (n - s))`` for the tree. Target: measured mean within +-15 % of the prediction.
3. **Training** (the same runs, synthetic least squares): loss against wall time for CR, GC, wait-for-all and
   ignore-stragglers. The exact codes must follow uncoded gradient descent iteration by iteration (relative loss
   difference <= 1e-9); the script exits non-zero otherwise. Plot: ``benchmarks/runtime/results/runtime_mpi.png``.
4. **Real straggler** (``--real-straggler``, its own results file): no delay model; the operating system slows one
   worker process (rank ``n``, never the master): a controller thread of this script (``runtime_torch.py``'s
   :class:`DutyCycle`) sends it ``SIGSTOP`` for ``STOP_S`` s out of every ``PERIOD_S`` s, ``SIGCONT`` otherwise and
   always at the end. Least squares (``REAL_POINTS`` x ``REAL_DIM``, step 1/L) on ``n = 4`` workers, ``s = 1``:
   wall-clock time until the loss is within ``REAL_TOL`` (relative to the initial gap) of the optimum, for
   cyclic repetition (first n - s) and ``train("allreduce")``, with and without the straggler; both are exact, so
   both reach the target at the same iteration. The clock starts after iteration 1, which holds each scheme's
   set-up (the workers' start, the coded runtime's same-code check); its time is shown apart. Medians of
   ``REPEATS`` interleaved jobs.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time

import numpy as np

REPEATS = 3
BASE, DELAY = 0.05, 0.3
FIXED_ITERS, EXP_ITERS = 12, 20
P_FIXED = 100_000                      # gradient length in the fixed-delay job
A, M_DATA = 1e-4, 3000                 # shifted exponential: seconds per point, data points per iteration
REAL_POINTS, REAL_DIM, REAL_ITERS, REAL_TOL = 4000, 1000, 80, 1e-10   # job 4 (real straggler)
STOP_S, PERIOD_S = 0.2, 0.25           # job 4: SIGSTOP for STOP_S seconds out of every PERIOD_S
RESULTS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "results")


# ------------------------------------------------------------------------------------------------ MPI side
def job(cfg: dict) -> None:
    from mpi4py import MPI

    import gradcodes as gc
    from gradcodes.mpi import FixedDelay, NoDelay, ShiftedExponential, train
    from gradcodes.mpi._problem import SyntheticProblem

    comm = MPI.COMM_WORLD
    N = comm.Get_size() - 1
    out = []
    prob = SyntheticProblem("least-squares", points=M_DATA, dim=50, rng=0)

    def build(name: str):
        if name == "cr":
            return gc.coded_reduce(3, 2, 1)
        if name == "gc":
            return gc.cyclic_repetition(N, cfg["s"], rng=0)
        if name == "wait-for-all":
            return gc.uncoded(N)
        if name == "ignore-stragglers":
            return gc.ignore_stragglers(N)
        return "allreduce"

    for rep in range(cfg["repeats"]):
        for run in cfg["runs"]:
            code = build(run["code"])
            k = N if isinstance(code, str) else code.k
            if run["delay"] == "fixed-none":
                delay = FixedDelay(BASE, workers=range(N))
            elif run["delay"] == "fixed":
                delay = FixedDelay(BASE, workers=range(N)) + FixedDelay(DELAY, workers=cfg["slow"])
            elif run["delay"] == "exp":
                delay = ShiftedExponential(A, m_data=M_DATA, rng=rep)
            else:
                delay = NoDelay()
            if cfg["kind"] == "fixed":
                p = P_FIXED
                bufs = np.zeros((k, p))

                def grad(w, j, bufs=bufs):
                    return np.multiply(w, j + 1.0, out=bufs[j])

                def step(w, g, t):
                    w *= 0.5

                res = train(code, np.ones(p), grad, step, iterations=cfg["iters"], delay=delay, timeout=120)
            else:
                grad = prob.partial_gradient(k)

                def step(w, g, t):
                    w -= prob.lr * g

                kw = {"wait_for": N - cfg["s"]} if run["code"] == "ignore-stragglers" else {}
                res = train(code, np.zeros(prob.dim), grad, step, iterations=cfg["iters"], delay=delay,
                            timeout=120, loss=prob.loss, **kw)
            if res is not None:
                out.append({"label": run["label"], "repeat": rep, "time": res.time.tolist(),
                            "loss": None if res.loss is None else res.loss.tolist(), "need": res.need,
                            "workers": res.workers})
    if comm.Get_rank() == 0:
        with open(cfg["out"], "w") as fh:
            json.dump(out, fh)


def real_job(cfg: dict) -> None:
    """Job 4's MPI side: every rank publishes its PID, then the coded scheme and the allreduce baseline train."""
    from mpi4py import MPI
    from runtime_torch import write_pid  # this folder is on sys.path (python -m mpi4py PATH puts it there)

    import gradcodes as gc
    from gradcodes.mpi import train
    from gradcodes.mpi._problem import SyntheticProblem

    comm = MPI.COMM_WORLD
    rank, N = comm.Get_rank(), comm.Get_size() - 1
    prob = SyntheticProblem("least-squares", points=cfg["points"], dim=cfg["dim"], rng=0)
    write_pid(cfg["pids"], rank)
    comm.Barrier()
    out = []
    for label in ("coded, first n-s", 'train("allreduce")'):
        code = gc.cyclic_repetition(N, cfg["s"], rng=0) if label.startswith("coded") else "allreduce"

        def step(w, g, t):
            w -= prob.lr * g

        res = train(code, np.zeros(prob.dim), prob.partial_gradient(N if code == "allreduce" else code.k), step,
                    iterations=cfg["iters"], timeout=120, loss=prob.loss)
        if res is not None:
            out.append({"label": label, "time": res.time.tolist(), "loss": res.loss.tolist()})
    if rank == 0:
        with open(cfg["out"], "w") as fh:
            json.dump(out, fh)


# ------------------------------------------------------------------------------------------------ driver
def mpiexec() -> str:
    exe = os.path.join(os.path.dirname(sys.executable), "mpiexec")
    if not os.path.exists(exe):
        sys.exit("no mpiexec next to this python: pip install -e '.[mpi-local]'")
    return exe


def smoke() -> int:
    """One tiny job (a master and two workers, a code tolerating one straggler, 3 iterations): the MPI path runs."""
    import importlib.util

    exe = os.path.join(os.path.dirname(sys.executable), "mpiexec")
    if importlib.util.find_spec("mpi4py") is None or not os.path.exists(exe):
        print("mpi4py or mpiexec not installed: skipped (pip install -e '.[mpi-local]')")
        return 0
    rows = launch(3, {"kind": "fixed", "runs": [{"label": "coded, first n-s", "code": "gc", "delay": "fixed"}],
                      "repeats": 1, "iters": 3, "slow": [0], "s": 1})
    print(f"smoke: {len(rows)} run, {len(rows[0]['time'])} iterations, median {np.median(rows[0]['time']):.3f} s")
    # job 4's path, tiny: rank 2 (a worker) SIGSTOPped 50 ms out of every 100 ms
    real, stops = launch_real(2, {"points": 240, "dim": 5, "iters": 3, "s": 1}, True, 0.05, 0.1)
    print(f"smoke, real straggler ({stops} SIGSTOPs): " + ", ".join(f"{r['label']} {len(r['time'])} iterations"
                                                                    for r in real))
    return 0 if rows and len(rows[0]["time"]) >= 1 and len(real) == 2 else 1


def launch(ranks: int, cfg: dict, entry: str = "--job") -> list[dict]:
    with tempfile.TemporaryDirectory() as tmp:
        cfg = dict(cfg, out=os.path.join(tmp, "out.json"))
        env = dict(os.environ, OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1")
        cmd = [mpiexec(), "-n", str(ranks), sys.executable, "-m", "mpi4py", os.path.abspath(__file__), entry,
               json.dumps(cfg)]
        subprocess.run(cmd, check=True, timeout=1800, env=env)
        with open(cfg["out"]) as fh:
            return json.load(fh)


def launch_real(n: int, cfg: dict, straggle: bool, stop_s: float = STOP_S,
                period_s: float = PERIOD_S) -> tuple[list, int]:
    """One job 4 run on ``n + 1`` ranks; with ``straggle``, rank ``n`` is duty-cycled. ``(rows, SIGSTOPs sent)``."""
    from runtime_torch import real_straggler  # the controller, shared with the torch benchmark

    if not straggle:
        with tempfile.TemporaryDirectory() as folder:
            return launch(n + 1, dict(cfg, pids=folder), entry="--real-job"), 0
    with real_straggler(n, stop_s, period_s) as (folder, ctl):
        rows = launch(n + 1, dict(cfg, pids=folder), entry="--real-job")
    return rows, ctl.stops


def time_to(row: dict, target: float) -> tuple[float, int]:
    """``(wall seconds after iteration 1, iterations)`` until the loss first reached ``target`` (``(inf, -1)`` if
    never)."""
    hit = np.flatnonzero(np.asarray(row["loss"]) <= target)
    return (float(np.sum(row["time"][1:hit[0] + 1])), int(hit[0]) + 1) if hit.size else (float("inf"), -1)


def real_straggler_rows(repeats: int = REPEATS, stop_s: float = STOP_S, period_s: float = PERIOD_S) -> list[str]:
    """Job 4: the lines of its table."""
    from gradcodes.mpi._problem import SyntheticProblem

    n, s = 4, 1
    prob = SyntheticProblem("least-squares", points=REAL_POINTS, dim=REAL_DIM, rng=0)
    f_star = prob.loss(np.linalg.lstsq(prob.X, prob.y, rcond=None)[0])
    target = f_star + REAL_TOL * (prob.loss(np.zeros(REAL_DIM)) - f_star)
    cfg = {"points": REAL_POINTS, "dim": REAL_DIM, "iters": REAL_ITERS, "s": s}
    runs: dict[str, list] = {}
    stops = []
    for _ in range(repeats):                             # interleaved, so slow drifts of the machine hit both
        for straggle in (False, True):
            rows, k = launch_real(n, cfg, straggle, stop_s, period_s)
            stops += [k] if straggle else []
            for r in rows:
                runs.setdefault(("real straggler (SIGSTOP)" if straggle else "no straggler", r["label"]), []).append(
                    (*time_to(r, target), float(np.median(r["time"][1:])), r["time"][0]))
    lines = [f"4. real straggler: rank {n} (a worker) SIGSTOPped {stop_s} s out of every {period_s} s by a controller "
             f"thread of this script (SIGCONT always at the end), no delay model; {n} workers + master, s = {s}; "
             f"least squares {REAL_POINTS} x {REAL_DIM}, step 1/L, {REAL_ITERS} iterations; target: loss - f* <= "
             f"{REAL_TOL:g} x (f(0) - f*), wall clock from the end of iteration 1 (set-up); medians of {repeats} runs "
             f"(SIGSTOPs per run: {', '.join(map(str, stops))})",
             f"{'job':<26}{'scheme':<20}{'iter 1 (s)':>11}{'s/iter':>9}{'iters':>7}{'time to target':>16}"]
    med = {key: np.median(np.asarray(v), axis=0) for key, v in runs.items()}
    for (job, label), (tt, it, per, first) in med.items():
        lines.append(f"{job:<26}{label:<20}{first:>11.3f}{per:>9.4f}{it:>7.0f}{tt:>14.3f} s")
    real, base = "real straggler (SIGSTOP)", "no straggler"
    coded, ar = "coded, first n-s", 'train("allreduce")'
    lines.append(f"time to target with the real straggler: allreduce / coded = "
                 f"{med[real, ar][0] / med[real, coded][0]:.2f}x; coded with / without it = "
                 f"{med[real, coded][0] / med[base, coded][0]:.2f}x, allreduce with / without it = "
                 f"{med[real, ar][0] / med[base, ar][0]:.2f}x")
    return lines


def real_straggler_main(repeats: int = REPEATS) -> int:
    """Job 4 alone: prints its table and writes it to ``results/runtime_mpi_real_straggler.txt`` under a header."""
    start, load0 = time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime()), os.getloadavg()
    lines = real_straggler_rows(repeats)
    load1 = os.getloadavg()
    lines = [f"# python benchmarks/runtime/runtime_mpi.py {' '.join(sys.argv[1:])}",
             f"# {start} to {time.strftime('%H:%M:%S UTC', time.gmtime())}; {os.cpu_count()} cores, shared; "
             f"load average {load0[0]:.2f} {load0[1]:.2f} {load0[2]:.2f} at start, {load1[0]:.2f} {load1[1]:.2f} "
             f"{load1[2]:.2f} at end; MPICH", *lines]
    print("\n".join(lines), flush=True)
    os.makedirs(RESULTS, exist_ok=True)
    with open(os.path.join(RESULTS, "runtime_mpi_real_straggler.txt"), "w") as fh:
        fh.write("\n".join(lines) + "\n")
    return 0


def per_config(rows: list[dict]) -> dict[str, dict]:
    """label -> {median: median over repeats of the per-run median time, mean: same for means, runs}."""
    out: dict[str, dict] = {}
    for r in rows:
        t = np.asarray(r["time"][1:])
        d = out.setdefault(r["label"], {"medians": [], "means": [], "runs": []})
        d["medians"].append(float(np.median(t)))
        d["means"].append(float(np.mean(t)))
        d["runs"].append(r)
    for d in out.values():
        d["median"] = float(np.median(d["medians"]))
        d["mean"] = float(np.median(d["means"]))
    return out


def main() -> int:
    import gradcodes as gc

    os.makedirs(RESULTS, exist_ok=True)
    lines: list[str] = []

    def say(s: str = "") -> None:
        print(s, flush=True)
        lines.append(s)

    say("command: PYTHONPATH=. python benchmarks/runtime/runtime_mpi.py")
    say(f"gradcodes.mpi benchmark, {time.strftime('%Y-%m-%d %H:%M:%S UTC', time.gmtime())}, load average at start "
        f"{os.getloadavg()[0]:.2f} {os.getloadavg()[1]:.2f} {os.getloadavg()[2]:.2f}, {os.cpu_count()} cores")
    ok = True

    # 1. fixed delays ------------------------------------------------------------------------------------
    fixed_runs = [{"label": "coded, no stragglers", "code": "gc", "delay": "fixed-none"},
                  {"label": "coded, first n-s", "code": "gc", "delay": "fixed"},
                  {"label": "wait-for-all", "code": "wait-for-all", "delay": "fixed"},
                  {"label": "MPI.Allreduce (workers)", "code": "allreduce", "delay": "fixed"}]
    tree_runs = [dict(r, code="cr" if r["code"] == "gc" else r["code"]) for r in fixed_runs]
    say(f"\n1. fixed delays: every worker {BASE} s, s workers {DELAY} s more; p = {P_FIXED} float64; "
        f"{FIXED_ITERS} iterations x {REPEATS} repeats; median s/iteration")
    say(f"{'layout':<22}{'configuration':<24}{'s/iter':>9}{'ratio':>10}  target")
    for name, ranks, runs, slow, s in [("flat n=8, s=2", 9, fixed_runs, [0, 5], 2),
                                       ("tree 1+3+9, s=1", 13, tree_runs, [0, 3, 6, 9], 1)]:
        res = per_config(launch(ranks, {"kind": "fixed", "runs": runs, "repeats": REPEATS, "iters": FIXED_ITERS,
                                        "slow": slow, "s": s}))
        first = res["coded, first n-s"]["median"]
        for r in runs:
            v = res[r["label"]]["median"]
            if r["label"] == "coded, no stragglers":
                say(f"{name:<22}{r['label']:<24}{v:>9.4f}{'':>10}")
                continue
            if r["label"] == "coded, first n-s":
                ratio = v / res["coded, no stragglers"]["median"]
                good = ratio <= 1.1
                say(f"{name:<22}{r['label']:<24}{v:>9.4f}{ratio:>9.2f}x  <= 1.1 x no stragglers "
                    f"{'ok' if good else 'NOT MET'}")
            else:
                ratio = v / first
                good = ratio >= 3
                say(f"{name:<22}{r['label']:<24}{v:>9.4f}{ratio:>9.2f}x  >= 3 x first n-s "
                    f"{'ok' if good else 'NOT MET'}")
            ok &= good
        say(f"{'':<22}(stragglers: workers {slow})")

    # 2 + 3. shifted exponential ---------------------------------------------------------------------------
    cr = gc.coded_reduce(3, 2, 1)
    N, s_gc = cr.N, (cr.s * cr.N) // cr.branching
    labels = {"cr": "CodedReduce (3,2,1)", "gc": f"GC cyclic_repetition(N={N}, s={s_gc})",
              "wait-for-all": "uncoded wait-for-all", "ignore-stragglers": f"ignore-stragglers (first {N - s_gc})"}
    runs = [{"label": f"calib {c}", "code": c, "delay": "none"} for c in ("cr", "gc", "wait-for-all")]
    runs += [{"label": labels[c], "code": c, "delay": "exp"} for c in labels]
    rows = launch(N + 1, {"kind": "exp", "runs": runs, "repeats": REPEATS, "iters": EXP_ITERS, "s": s_gc})
    res = per_config(rows)
    codes = {"cr": cr, "gc": gc.cyclic_repetition(N, s_gc, rng=0), "wait-for-all": gc.uncoded(N)}
    K = {"cr": cr.L * (cr.branching - cr.s), "gc": N - s_gc, "wait-for-all": N}
    say(f"\n2. shifted-exponential delays: a = {A:g} s/point, mu = 1/a, {M_DATA} points per iteration, 13 ranks; "
        f"{EXP_ITERS} iterations x {REPEATS} repeats; mean s/iteration (median over repeats)")
    say(f"{'scheme':<34}{'T_0 (s)':>9}{'t_c (s)':>9}{'measured':>10}{'simulate':>10}{'ratio':>8}  target +-15%")
    for c in ("cr", "gc", "wait-for-all"):
        T0 = res[f"calib {c}"]["mean"]
        t_c = T0 / K[c]
        pred = gc.simulate(codes[c], m_data=M_DATA, a=A, mu=1 / A, t_c=t_c, iters=20_000, rng=0)
        pred = next(iter(pred)).mean
        meas = res[labels[c]]["mean"]
        good = abs(meas / pred - 1) <= 0.15
        ok &= good
        say(f"{labels[c]:<34}{T0:>9.4f}{t_c:>9.4f}{meas:>10.4f}{pred:>10.4f}{meas / pred:>8.2f}  "
            f"{'ok' if good else 'NOT MET'}")
    sgd = res[labels["ignore-stragglers"]]["mean"]
    T0 = res["calib wait-for-all"]["mean"]
    pred = gc.simulate("SGD", branching=N, L=1, s=0, s_gc=s_gc, m_data=M_DATA, a=A, mu=1 / A, t_c=T0 / N, iters=20_000,
                       rng=0)["SGD"].mean
    say(f"{labels['ignore-stragglers']:<34}{'':>9}{T0 / N:>9.4f}{sgd:>10.4f}{pred:>10.4f}{sgd / pred:>8.2f}  "
        f"(t_c of wait-for-all; no target)")

    # 3. training -----------------------------------------------------------------------------------------
    say("\n3. training (least squares, step 1/L), first repeat: loss after iterations 1, 5, 10 and the last; "
        "total wall time of the iterations")
    ref = [r for r in rows if r["label"] == labels["wait-for-all"]]
    curves = {}
    for c in labels:
        mine = [r for r in rows if r["label"] == labels[c]]
        r0 = mine[0]
        curves[labels[c]] = (np.cumsum(r0["time"]), np.asarray(r0["loss"]))
        follow = ""
        if c in ("cr", "gc"):
            diff = max(float(np.max(np.abs(np.asarray(a["loss"]) - np.asarray(b["loss"])) / np.abs(b["loss"])))
                       for a, b in zip(mine, ref, strict=True))
            good = diff <= 1e-9
            ok &= good
            follow = f"  follows uncoded GD: max rel. loss difference {diff:.1e} {'ok' if good else 'NOT MET'}"
        L = r0["loss"]
        say(f"{labels[c]:<34}{L[0]:>11.5g}{L[4]:>11.5g}{L[9]:>11.5g}{L[-1]:>11.5g}"
            f"{np.sum(r0['time']):>8.2f} s{follow}")
    from gradcodes.mpi._problem import SyntheticProblem

    prob = SyntheticProblem("least-squares", points=M_DATA, dim=50, rng=0)
    f_star = prob.loss(np.linalg.lstsq(prob.X, prob.y, rcond=None)[0])
    say("final suboptimality f - f*: " + ", ".join(f"{name} {loss[-1] - f_star:.2e}"
                                                    for name, (_, loss) in curves.items()))
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        fig, ax = plt.subplots(figsize=(6, 4.8))
        for name, (t, loss) in curves.items():
            biased = name.startswith("ignore-stragglers")    # drops the stragglers' partitions: a biased gradient
            ax.semilogy(t, np.maximum(loss - f_star, 1e-17), marker=".", ls=":" if biased else "-",
                        label=f"{name} (BIASED)" if biased else name)
        ax.set_xlabel("wall time (s)")
        ax.set_ylabel("training loss - optimum")
        ax.set_title("least squares on 12 MPI workers, shifted-exp. delays", fontsize=10)
        fig.legend(fontsize=8, loc="lower center", ncol=2, frameon=False)    # below the axes: hides no point
        fig.tight_layout(rect=(0, 0.14, 1, 1))
        fig.savefig(os.path.join(RESULTS, "runtime_mpi.png"), dpi=120)
        say("plot: benchmarks/runtime/results/runtime_mpi.png")
    except ImportError:
        say("(matplotlib not installed: no plot; pip install -e '.[plot]')")
    say()                                  # 4. real straggler (alone: --real-straggler) ----------------------------
    for line in real_straggler_rows():
        say(line)
    say(f"\nload average at end {os.getloadavg()[0]:.2f} {os.getloadavg()[1]:.2f} {os.getloadavg()[2]:.2f}")
    say("all targets met" if ok else "SOME TARGETS NOT MET")
    with open(os.path.join(RESULTS, "runtime_mpi.txt"), "w") as fh:
        fh.write("\n".join(lines) + "\n")
    return 0 if ok else 1


if __name__ == "__main__":
    if len(sys.argv) > 2 and sys.argv[1] == "--job":
        job(json.loads(sys.argv[2]))
    elif len(sys.argv) > 2 and sys.argv[1] == "--real-job":
        real_job(json.loads(sys.argv[2]))
    else:
        import argparse

        ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter,
                                     epilog="(--job CFG / --real-job CFG: the MPI ranks' entries; not for users)")
        ap.add_argument("--smoke", action="store_true", help="tiny jobs (3 ranks, 3 iterations), writes nothing")
        ap.add_argument("--real-straggler", action="store_true",
                        help="run only job 4 (a real, SIGSTOP-duty-cycled straggler); writes its own results file")
        ap.add_argument("--repeats", type=int, default=REPEATS, help="repeats of job 4 (default %(default)s)")
        ns = ap.parse_args()
        sys.exit(smoke() if ns.smoke else real_straggler_main(ns.repeats) if ns.real_straggler else main())
