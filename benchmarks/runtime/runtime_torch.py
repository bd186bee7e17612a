"""Benchmark of gradcodes.torch: coded training on torch.distributed (Gloo, localhost) against DDP all-reduce.

    python benchmarks/runtime/runtime_torch.py          # launches the torchrun jobs itself (5 processes: n = 4, s = 1)
    python benchmarks/runtime/runtime_torch.py --smoke  # 3 processes, 3 iterations, no files; skipped without torch

Every job is ``torchrun -m gradcodes.torch`` (a small CNN on scikit-learn's 8x8 digits, global batch 240, SGD with
momentum, the same initial weights and batches for every scheme), repeated ``REPEATS`` times; one table of medians
over the repeats:

1. **No stragglers**: the coded scheme (cyclic repetition, earliest decodable set) and DDP; the per-iteration
   overhead of the master--worker exchange against DDP's all-reduce.
2. **Fixed stragglers**: ``s`` workers ``DELAY`` seconds late in every iteration (``slow:DELAY``): time to the
   stated test accuracy for the coded scheme, DDP, wait-for-all and ignore-stragglers. Targets: coded <= 1.15 x its
   no-straggler time, >= 3 x faster than DDP.
3. **Shifted exponential** (``shiftexp:A``, Reisizadeh et al. 2019; ``gc.simulate``'s model): the measured mean
   iteration time of the coded scheme against :func:`gradcodes.mpi.predict` with the per-message time calibrated
   from job 1 (``t_c = T_0 / K``, K messages waited for). Target: within 15 %.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import numpy as np

REPEATS = 3
DELAY = 0.3
A = 1e-3                      # shifted exponential: seconds per sample
ITERS, TARGET, BATCH, LR = 80, 0.85, 240, 0.1
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def launch(procs: int, args: list[str]) -> list[dict]:
    env = dict(os.environ, OMP_NUM_THREADS="1")
    env["PYTHONPATH"] = os.pathsep.join([ROOT, env.get("PYTHONPATH", "")])
    cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node", str(procs), "-m",
           "gradcodes.torch", "--json", *args]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=1800, env=env)
    if proc.returncode != 0:
        raise RuntimeError(f"job failed: {' '.join(cmd)}\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}")
    line = next(ln for ln in proc.stdout.splitlines() if ln.startswith("ROWS "))
    return json.loads(line[5:])


def smoke() -> int:
    try:
        import torch  # noqa: F401
    except ImportError:
        print("smoke: torch not installed (pip install 'gradcodes[torch]'): skipped")
        return 0
    rows = launch(3, ["--schemes", "cyclic_repetition,ddp", "--iterations", "3", "--delay", "none",
                      "--model", "linear", "--batch-size", "60"])
    print(f"smoke: {len(rows)} schemes, mean iteration {rows[0]['mean_iteration']:.4f} s (coded), "
          f"{rows[1]['mean_iteration']:.4f} s (DDP)")
    return 0


def med(runs: list[list[dict]], scheme: str, key: str) -> float:
    return float(np.median([next(r[key] for r in rows if r["scheme"] == scheme) for rows in runs]))


def main() -> int:
    import gradcodes as gc
    from gradcodes.mpi import ShiftedExponential, predict

    n, s = 4, 1
    common = ["--stragglers", str(s), "--iterations", str(ITERS), "--target", str(TARGET), "--batch-size", str(BATCH),
              "--lr", str(LR)]
    base, slow, expo = [], [], []
    for _ in range(REPEATS):                       # interleaved, so slow drifts of the machine hit every job
        base.append(launch(n + 1, ["--schemes", "cyclic_repetition,ddp", "--delay", "none", *common]))
        slow.append(launch(n + 1, ["--schemes", "cyclic_repetition,ddp,all,ignore", "--delay", f"slow:{DELAY}",
                                   *common]))
        expo.append(launch(n + 1, ["--schemes", "cyclic_repetition", "--delay", f"shiftexp:{A}", *common]))
    coded, ddp, ign = "cyclic_repetition", "DDP allreduce", f"ignore-stragglers (first {n - s})"
    t0, t_ddp0 = med(base, coded, "mean_iteration"), med(base, ddp, "mean_iteration")
    print(f"gradcodes.torch on {n} workers + master (Gloo, localhost), s = {s}, CNN on digits, batch {BATCH}, "
          f"{ITERS} iterations, medians of {REPEATS} runs")
    print(f"{'job':28s} {'scheme':34s} {'s/iter':>8s} {'time to ' + format(TARGET, '.0%'):>12s} {'final acc':>9s}")
    for label, runs in (("no stragglers", base), (f"{s} fixed {DELAY} s straggler", slow),
                        (f"shifted exp a={A:g}", expo)):
        for r in runs[0]:
            sc = r["scheme"]
            print(f"{label:28s} {sc:34s} {med(runs, sc, 'mean_iteration'):8.4f} "
                  f"{med(runs, sc, 'time_to_target'):12.3f} {med(runs, sc, 'final_accuracy'):9.3f}")
    t_slow = med(slow, coded, "mean_iteration")
    tta = {sc: med(slow, sc, "time_to_target") for sc in (coded, ddp, "wait-for-all", ign)}
    code = gc.cyclic_repetition(n, s, rng=0)
    need = n - s
    pred = predict(code, ShiftedExponential(A, m_data=BATCH, rng=0), workers=n, need=need, t_c=t0 / need)
    measured = med(expo, coded, "mean_iteration")
    print()
    print(f"no-straggler overhead vs DDP per iteration: {t0 / t_ddp0:.2f}x ({t0 * 1e3:.1f} ms vs "
          f"{t_ddp0 * 1e3:.1f} ms)")
    print(f"first decodable with stragglers / without: {t_slow / t0:.2f}x (target <= 1.15)")
    print(f"time to {TARGET:.0%}: DDP / coded = {tta[ddp] / tta[coded]:.2f}x (target >= 3), wait-for-all / coded = "
          f"{tta['wait-for-all'] / tta[coded]:.2f}x, ignore-stragglers {tta[ign]:.3f} s vs coded {tta[coded]:.3f} s")
    if pred is not None:
        print(f"shifted exponential: measured {measured:.4f} s/iter, gc.simulate {pred:.4f} s/iter "
              f"({measured / pred - 1:+.1%}; target within 15%)")
    return 0


if __name__ == "__main__":
    sys.exit(smoke() if sys.argv[1:] == ["--smoke"] else main())
