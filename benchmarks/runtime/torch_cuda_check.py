"""CUDA parameters in gradcodes.torch.train over Gloo (messages staged through pinned host buffers): a check that a
GPU session runs in one short command.

    python benchmarks/runtime/torch_cuda_check.py            # 60 steps; writes results/torch_cuda_check.txt
    python benchmarks/runtime/torch_cuda_check.py --smoke    # 5 steps, writes nothing (the test suite runs it)
    python benchmarks/runtime/torch_cuda_check.py --cpu-staged --smoke   # the script itself, on the CPU

Without CUDA (``torch.cuda.is_available()`` False) it prints ``skipped: no CUDA`` and exits 0: nothing was checked
or measured, and the exit status says only that the script ran. With CUDA it launches ``torchrun --standalone
--nproc-per-node 4`` on this file: rank 0 the master and ranks 1-3 the workers of ``cyclic_repetition(3, 1,
rng=0)``, every rank's model on ``cuda:0`` (one GPU shared; the process group is Gloo, so every message goes through
the host), a 3-layer MLP on synthetic data (seeded, no download), SGD with momentum, float64 then float32. Rank 0
then trains the same model in one process on the GPU over the same global batches and reports the relative
distance of the final parameters (float64 must be within 1e-10: both sum the same per-sample gradients, in other
orders; float32 within 1e-4), the master's median step time against the single process's, and exits 1 when a
bound is missed. The times are one run's medians over the steps (the first 5 excluded: CUDA warm-up), on a GPU
that the 4 processes share: they measure the staging's overhead on one machine, not a multi-GPU job.
``--cpu-staged`` runs the same job with CPU parameters whose messages are staged as CUDA ones would be
(``gradcodes.torch._params.FORCE_STAGING``): a check of this script and of the staging logic, not of CUDA.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve()
BOUNDS = {"float64": 1e-10, "float32": 1e-4}


def _data(dtype):
    import torch

    g = torch.Generator().manual_seed(0)
    X = torch.randn(3000, 32, generator=g, dtype=torch.float64)
    w = torch.randn(32, 10, generator=g, dtype=torch.float64)
    y = (X @ w).argmax(1)
    return X.to(dtype), y


def _model(dtype, device):
    import torch
    from torch import nn

    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(32, 64), nn.ReLU(), nn.Linear(64, 64), nn.ReLU(), nn.Linear(64, 10)).to(
        device=device, dtype=dtype)


def rank_job(steps: int, device: str) -> None:
    """One rank of the torchrun job (``--rank-job``)."""
    import statistics

    import torch
    import torch.distributed as dist
    from torch import nn

    import gradcodes as gc
    from gradcodes.torch import CodedSampler, train

    dist.init_process_group("gloo")
    rank = dist.get_rank()
    dev = torch.device(device)
    if dev.type == "cpu":
        import gradcodes.torch._params as params_module

        params_module.FORCE_STAGING = True
    code = gc.cyclic_repetition(3, 1, rng=0)
    loss_fn = nn.CrossEntropyLoss(reduction="none")
    out = {}
    for name in ("float64", "float32"):
        dtype = getattr(torch, name)
        X, y = _data(dtype)
        X, y = X.to(dev), y.to(dev)
        model = _model(dtype, dev)
        ref = _model(dtype, dev)

        def opt(ps):
            return torch.optim.SGD(ps, lr=0.05, momentum=0.9)

        res = train(code, model, loss_fn, X, y, batch_size=120, iterations=steps, optimizer=opt, seed=0,
                    timeout=60.0)
        if rank != 0:
            continue
        o = opt(ref.parameters())
        sampler = CodedSampler(len(X), code, None, batch_size=120, seed=0)
        times = []
        for t in range(steps):
            start = time.monotonic()
            sampler.set_epoch(t // len(sampler))
            idx = torch.as_tensor(sampler.global_batch(t % len(sampler)), device=dev)
            o.zero_grad()
            loss_fn(ref(X[idx]), y[idx]).mean().backward()
            o.step()
            if dev.type == "cuda":
                torch.cuda.synchronize()
            times.append(time.monotonic() - start)
        pa = torch.cat([p.detach().double().reshape(-1) for p in model.parameters()])
        pb = torch.cat([p.detach().double().reshape(-1) for p in ref.parameters()])
        skip = 5 if steps > 10 else 0
        out[name] = {"params_err": float((pa - pb).norm() / pb.norm()), "steps": len(res.times),
                     "coded_step_s": statistics.median(res.times[skip:]),
                     "single_step_s": statistics.median(times[skip:]),
                     "device": str(next(model.parameters()).device)}
    if rank == 0:
        print("RESULT " + json.dumps(out), flush=True)
    dist.destroy_process_group()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--smoke", action="store_true", help="5 steps, write nothing")
    ap.add_argument("--steps", type=int, default=60, help="optimizer steps per dtype (default 60)")
    ap.add_argument("--cpu-staged", action="store_true",
                    help="CPU parameters with the messages staged as for CUDA: checks the script, not CUDA")
    ap.add_argument("--rank-job", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--device", default="cuda:0", help=argparse.SUPPRESS)
    args = ap.parse_args()
    steps = 5 if args.smoke else args.steps
    if args.rank_job:
        rank_job(steps, args.device)
        return 0
    import importlib.util

    missing = [m for m in ("torch", "sklearn") if importlib.util.find_spec(m) is None]
    if missing:                       # optional extras: skip with a message
        print(f"skipped: {', '.join(missing)} not installed (pip install 'gradcodes[torch]')")
        return 0
    import torch

    device = "cpu" if args.cpu_staged else "cuda:0"
    if not args.cpu_staged and not torch.cuda.is_available():
        print("skipped: no CUDA (torch.cuda.is_available() is False): nothing was checked or measured")
        return 0
    load = os.getloadavg()[0]
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(HERE.parents[2]), os.environ.get("PYTHONPATH", "")]),
               OMP_NUM_THREADS="1")
    cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node", "4", str(HERE),
           "--rank-job", "--steps", str(steps), "--device", device]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=540, env=env)
    found = [ln[7:] for ln in proc.stdout.splitlines() if ln.startswith("RESULT ")]
    if proc.returncode != 0 or not found:
        print(proc.stdout[-3000:], proc.stderr[-5000:], sep="\n")
        print(f"FAILED: the torchrun job exited {proc.returncode}")
        return 1
    res = json.loads(found[0])
    where = "CPU, staged as for CUDA (not a CUDA measurement)" if args.cpu_staged else torch.cuda.get_device_name(0)
    lines = [f"load average before: {load:.2f}; device: {where}; torch {torch.__version__}",
             f"cyclic_repetition(3, 1), 4 ranks on one device over Gloo (messages staged through host memory), MLP "
             f"32-64-64-10, batches of 120, {steps} steps; medians over the steps after the first 5"]
    ok = True
    for name, r in res.items():
        good = r["params_err"] <= BOUNDS[name] and r["steps"] == steps
        ok = ok and good
        lines.append(f"{name}: parameters {r['params_err']:.3g} from single-process training on the device (bound "
                     f"{BOUNDS[name]:g}: {'ok' if good else 'MISSED'}); step {1e3 * r['coded_step_s']:.2f} ms coded "
                     f"(master) vs {1e3 * r['single_step_s']:.2f} ms single process; parameters on {r['device']}")
    text = "\n".join(lines) + "\n"
    print(text, end="")
    if not args.smoke and not args.cpu_staged:
        (HERE.parent / "results" / "torch_cuda_check.txt").write_text(text, encoding="utf-8")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
