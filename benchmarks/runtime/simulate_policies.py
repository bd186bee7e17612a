"""Wait policies and worker models side by side: iteration time, time to a stated loss, and MPI measurements.

    PYTHONPATH=. python benchmarks/runtime/simulate_policies.py            # full run (simulator + MPI jobs)
    PYTHONPATH=. python benchmarks/runtime/simulate_policies.py --quick    # a few seconds: small Monte Carlo, no MPI

1. **Iteration time** (``gc.simulate``) for n = 12 workers, a = 1e-3 s/point, 100 points per partition,
   t_c = 5 ms, under three worker settings: *identical* (i.i.d. shifted exponential, a mu = 1), *unequal*
   (workers 6..11 take twice as long: per-worker ``a`` and ``mu``), *persistent* (two-state Markov stragglers,
   p_slow = 0.05, p_recover = 0.2, slowdown 5). Codes with the earliest decodable set and with the first n - s
   messages; uncoded wait-for-all; fastest-k (ignore stragglers) and backup workers as labelled baselines.
2. **Training** (``gc.simulate_training``, least squares): simulated time until the error ``f(w) - f*`` first
   reaches the stated target (running mean of 20 updates), for each policy and setting.
3. **MPI** (skipped by ``--quick`` or without ``mpiexec``): fractional repetition (6, 2) on 7 ranks with the
   runtime's shifted-exponential delay (a = 1e-4 s/point, 3000 points) under the earliest decodable set and the
   first n - s, measured mean iteration time next to ``gc.simulate``'s prediction for the same setting (t_c
   calibrated from a run without delays). Target: within 15 %.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

import numpy as np

N, S = 12, 3
A, POINTS, T_C = 1e-3, 100, 0.005
TARGET = 0.02                 # the stated loss of part 2
MPI_A, MPI_M, MPI_ITERS = 1e-4, 3000, 25


def settings(gc):
    slow = np.where(np.arange(N) >= N // 2, 2.0, 1.0)
    return {
        "identical": {},
        "unequal": {"a": (A * slow).tolist(), "mu": (1 / (A * slow)).tolist()},
        "persistent": {"model": gc.PersistentStragglers(0.05, 0.2, 5.0)},
    }


def part_iteration(gc, iters: int) -> list[str]:
    codes = [gc.fractional_repetition(N, S), gc.stable_binary(N + 1, S), gc.grouped_mds(N, S),
             gc.cyclic_repetition(N, S, rng=0)]
    out = [f"1. mean iteration time (s), n = {N} (stable_binary: {N + 1}), s = {S}, a = {A:g} s/point, "
           f"{POINTS} points per partition, t_c = {T_C:g} s, {iters} iterations",
           f"{'scheme':<34}{'policy':<20}" + "".join(f"{k:>14}" for k in settings(gc))]
    rows: dict[tuple[str, str], list[str]] = {}
    for _name, kw in settings(gc).items():
        for code in codes:
            kw_code = dict(kw)
            if "a" in kw_code and code.n != N:
                kw_code["a"] = kw_code["a"] + [kw_code["a"][-1]] * (code.n - N)
                kw_code["mu"] = kw_code["mu"] + [kw_code["mu"][-1]] * (code.n - N)
            for pol in ("earliest", "first"):
                r = next(iter(gc.simulate(code, policy=pol, m_data=POINTS * code.k, a=kw_code.get("a", A),
                                          mu=kw_code.get("mu"), model=kw_code.get("model"), t_c=T_C,
                                          iters=iters, rng=0)))
                rows.setdefault((code.name, pol), []).append(f"{r.mean:>9.4f} ±{r.stderr:.3f}")
        labels = {"UMW": ("uncoded", "wait for all"), "SGD": ("ignore stragglers", f"first {N - S}")}
        res = gc.simulate(["UMW", "SGD"], branching=N, L=1, s=S, s_gc=S, m_data=POINTS * N, a=kw.get("a", A),
                          mu=kw.get("mu"), model=kw.get("model"), t_c=T_C, iters=iters, rng=0)
        for lab, key in labels.items():
            rows.setdefault(key, []).append(f"{res[lab].mean:>9.4f} ±{res[lab].stderr:.3f}")
        backup = gc.simulate(gc.uncoded(N), policy=gc.BackupWorkers(2), m_data=POINTS * N, a=kw.get("a", A),
                             mu=kw.get("mu"), model=kw.get("model"), t_c=T_C, iters=iters, rng=0)
        rows.setdefault(("uncoded", "backup b=2 (inexact)"), []).append(
            f"{next(iter(backup)).mean:>9.4f} ±{next(iter(backup)).stderr:.3f}")
    for (name, pol), cells in rows.items():
        out.append(f"{name:<34}{pol:<20}" + "".join(f"{c:>14}" for c in cells))
    fr = [c for (name, pol), c in rows.items() if name == "fractional_repetition"]
    e, f = (float(x.split()[0]) for x in (fr[0][0], fr[1][0]))
    out.append(f"fractional repetition, identical workers: first n - s / earliest = {f / e:.2f}x")
    return out


def part_training(gc, updates: int) -> list[str]:
    n = 8
    slow = np.where(np.arange(n) >= n // 2, 2.0, 1.0)
    sets = {"identical": {}, "unequal": {"model": gc.ShiftedExponentialWorkers(1e-3 * slow, 1 / (1e-3 * slow))},
            "persistent": {"model": gc.PersistentStragglers(0.05, 0.2, 5.0,
                                                            base=gc.ShiftedExponentialWorkers(1e-3))}}
    code = gc.fractional_repetition(n, 1)
    policies = [("wait for all (k = n)", gc.FixedK(n), None), ("fastest k = 4", gc.FixedK(4), None),
                ("backup workers b = 2", gc.BackupWorkers(2), None), ("adaptive k", gc.AdaptiveK(1, 1, 10), None),
                ("K-async K = 2", gc.KAsync(2), None), ("FR(8,1) earliest", gc.EarliestDecodable(), code),
                ("FR(8,1) first n-s", gc.FixedK(), code)]
    out = [f"2. training (least squares, n = {n}, lr 0.1, batch 4): simulated seconds until the error (running mean "
           f"of 20) reaches {TARGET} | reaches wait-for-all's final error (mean of its last 50 of {updates} "
           f"updates); each run stops at wait-for-all's time",
           f"{'policy':<24}" + "".join(f"{k:>30}" for k in sets)]
    budget, floor = {}, {}
    for name, kw in sets.items():
        full = gc.simulate_training(gc.FixedK(n), n=n, updates=updates, lr=0.1, batch_size=4, rng=0, **kw)
        budget[name], floor[name] = full.time[-1], full.final()
    for label, pol, c in policies:
        cells = []
        for name, kw in sets.items():
            r = gc.simulate_training(pol, n=n, code=c, time_budget=budget[name], updates=100 * updates, lr=0.1,
                                     batch_size=4, rng=0, **kw)
            t, t2 = r.time_to(TARGET, window=20), r.time_to(floor[name], window=20)
            cells.append(f"{t:.2f} | {t2:.2f} of {budget[name]:.2f} s")
        out.append(f"{label:<24}" + "".join(f"{x:>30}" for x in cells))
    return out


# ------------------------------------------------------------------------------------------------ MPI
def job(cfg: dict) -> None:
    import gradcodes as gc
    from gradcodes.mpi import ModelDelay, NoDelay, ShiftedExponential, train

    code = gc.fractional_repetition(6, 2)
    rows = []
    bufs = np.zeros((code.k, 64))

    def grad(w, j):
        return np.multiply(w, j + 1.0, out=bufs[j])

    def step(w, g, t):
        w *= 0.5

    for run in cfg["runs"]:
        if run["delay"] == "none":
            delay = NoDelay()
        elif run["delay"] == "exp":
            delay = ShiftedExponential(MPI_A, m_data=MPI_M, rng=run["rep"])
        else:
            delay = ModelDelay(_mpi_model(gc, run["delay"]), m_data=MPI_M, rng=run["rep"])
        res = train(code, np.ones(64), grad, step, iterations=MPI_ITERS, delay=delay, policy=run["policy"],
                    t_c=run.get("t_c", 0.0), timeout=120)
        if res is not None:
            rows.append({"label": run["label"], "time": res.time.tolist(), "predicted": res.predicted,
                         "used": res.used.sum(axis=1).tolist()})
    if rows:
        with open(cfg["out"], "w") as fh:
            json.dump(rows, fh)


def _mpi_model(gc, kind: str):
    """The worker models of the MPI comparison: unequal speeds (a spread of 4x over the 6 workers) and persistent
    stragglers (a two-state Markov chain per worker, 4x slower while slow)."""
    if kind == "unequal":
        return gc.ShiftedExponentialWorkers([MPI_A * (1 + 3 * i / 5) for i in range(6)])
    return gc.PersistentStragglers(0.2, 0.5, 4.0, base=gc.ShiftedExponentialWorkers(MPI_A))


def launch(cfg: dict) -> list[dict]:
    exe = os.path.join(os.path.dirname(sys.executable), "mpiexec")
    with tempfile.TemporaryDirectory() as tmp:
        cfg = dict(cfg, out=os.path.join(tmp, "out.json"))
        env = dict(os.environ, OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1")
        subprocess.run([exe, "-n", "7", sys.executable, "-m", "mpi4py", os.path.abspath(__file__), "--job",
                        json.dumps(cfg)], check=True, timeout=900, env=env)
        with open(cfg["out"]) as fh:
            return json.load(fh)


def part_mpi() -> list[str]:
    exe = os.path.join(os.path.dirname(sys.executable), "mpiexec")
    if not os.path.exists(exe):
        return ["3. MPI: skipped (no mpiexec next to this python)"]
    calib = launch({"runs": [{"label": "calib", "delay": "none", "policy": "first", "rep": 0}]})
    T0 = float(np.median(calib[0]["time"][1:]))
    t_c = T0 / 4                                     # the first n - s = 4 messages of a run without delays
    kinds = {"exp": "identical", "unequal": "unequal (4x spread)", "persistent": "persistent (Markov, 4x)"}
    runs = [{"label": f"{kind}/{pol}", "delay": kind, "policy": pol, "rep": rep, "t_c": t_c}
            for rep in range(2) for kind in kinds for pol in ("earliest", "first")]
    rows = launch({"runs": runs})
    out = [f"3. MPI, fractional_repetition(6, 2), 7 ranks, shifted exponential a = {MPI_A:g} s/point, "
           f"{MPI_M} points; t_c = {t_c * 1e3:.2f} ms calibrated (no-delay median {T0 * 1e3:.2f} ms / 4); "
           f"{MPI_ITERS} iterations x 2 repeats; simulate: the same worker model (gradcodes.mpi.ModelDelay)",
           f"{'workers':<26}{'policy':<12}{'messages':>10}{'measured (s)':>14}{'simulate (s)':>14}{'ratio':>8}"
           f"  target +-15%"]
    for kind, text in kinds.items():
        for pol in ("earliest", "first"):
            mine = [r for r in rows if r["label"] == f"{kind}/{pol}"]
            meas = float(np.mean([np.mean(r["time"][1:]) for r in mine]))
            pred = float(np.mean([r["predicted"] for r in mine]))
            msgs = float(np.mean([np.mean(r["used"]) for r in mine]))
            ratio = meas / pred
            out.append(f"{text:<26}{pol:<12}{msgs:>10.2f}{meas:>14.4f}{pred:>14.4f}{ratio:>8.2f}  "
                       f"{'ok' if abs(ratio - 1) <= 0.15 else 'NOT MET'}")
    return out


def main() -> int:
    import gradcodes as gc

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="small Monte Carlo and training, no MPI jobs")
    ap.add_argument("--smoke", action="store_true", help="tiny sizes, no MPI jobs, no files (the test suite's run)")
    args = ap.parse_args()
    small = args.quick or args.smoke
    t0 = time.perf_counter()
    lines = part_iteration(gc, 100 if args.smoke else 500 if args.quick else 20_000)
    lines += [""] + part_training(gc, 40 if args.smoke else 150 if args.quick else 1500)
    if not small:
        lines += [""] + part_mpi()
    mode = ", --smoke" if args.smoke else ", --quick" if args.quick else ""
    lines.append(f"\n({time.perf_counter() - t0:.1f} s{mode})")
    text = "\n".join(lines)
    print(text)
    if not small:
        out = os.path.join(os.path.dirname(os.path.abspath(__file__)), "results", "simulate_policies.txt")
        with open(out, "w") as fh:
            fh.write("PYTHONPATH=. python benchmarks/runtime/simulate_policies.py\n" + text + "\n")
    return 0


if __name__ == "__main__":
    if len(sys.argv) > 2 and sys.argv[1] == "--job":
        job(json.loads(sys.argv[2]))
    else:
        sys.exit(main())
