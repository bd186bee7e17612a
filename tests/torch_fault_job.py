"""A torch.distributed job with real faults, driven by tests/test_torch.py (``torchrun --nproc-per-node 4
tests/torch_fault_job.py CONFIG``): n = 3 workers of ``cyclic_repetition(3, 1)`` (s = 1), a linear model on the
digits in float64.

CONFIG is JSON: ``fault`` is what the workers in ``workers`` (worker indices) do inside the user's loss function
at their ``at``-th call (one call per iteration): ``"loop"`` (an endless loop: sleeps of 0.1 s, forever),
``"spin"`` (an endless busy loop), ``"sigstop"`` (``os.kill(os.getpid(), SIGSTOP)``), ``"exit1"``
(``os._exit(1)``), ``"exit0"`` (``os._exit(0)``), ``"raise"`` (an exception), or ``"none"``; not through the
library's delay models. Rank 0 checks every iteration's decoded gradient against the single-process full-batch
gradient at the same parameters and prints ``RESULT {...}`` (the worst relative error, the iterations, the
slowest iteration, the failures :func:`gradcodes.torch.train` reported and the seconds from the last iteration to
its return), then ``MASTER_EXIT``. With ``"cont"`` the master sends SIGCONT to the stopped workers after ``train``
returned (an operator resuming them), so that they can end themselves.
"""

from __future__ import annotations

import json
import os
import signal
import sys
import time


def main() -> None:
    import torch
    import torch.distributed as dist

    import gradcodes as gc
    from gradcodes.torch import CodedSampler, train
    from gradcodes.torch._job import digits, make_model

    cfg = json.loads(sys.argv[1])
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    n = dist.get_world_size() - 1
    pids = [None] * (n + 1)
    dist.all_gather_object(pids, os.getpid())
    code = gc.cyclic_repetition(n, 1, rng=0)
    X, y, _, _ = digits(torch.float64)
    batch, iters = 120, cfg.get("iters", 8)
    model = make_model("linear", seed=0, dtype=torch.float64)
    base = torch.nn.CrossEntropyLoss(reduction="none")
    fault, at = cfg.get("fault", "none"), cfg.get("at", 2)
    faulty = rank - 1 in cfg.get("workers", [0])
    calls = [0]

    def loss_fn(out, target):
        calls[0] += 1
        if faulty and calls[0] == at:
            print(f"FAULT {fault} rank {rank} {time.time()!r}", flush=True)
            if fault == "loop":
                while True:
                    time.sleep(0.1)
            elif fault == "spin":
                while True:
                    pass
            elif fault == "sigstop":
                os.kill(os.getpid(), signal.SIGSTOP)
            elif fault == "exit1":
                os._exit(1)
            elif fault == "exit0":
                os._exit(0)
            elif fault == "raise":
                raise RuntimeError(f"injected failure on rank {rank}")
        return base(out, target)

    ref_sampler = CodedSampler(len(X), code, None, batch_size=batch, seed=0)
    worst = [0.0]

    def check(t, mdl, info):
        import copy

        scratch = copy.deepcopy(mdl)
        scratch.zero_grad()
        ref_sampler.set_epoch(t // len(ref_sampler))
        idx = ref_sampler.global_batch(t % len(ref_sampler))
        base(scratch(X[idx]), y[idx]).mean().backward()
        gref = torch.cat([p.grad.reshape(-1) for p in scratch.parameters()])
        g = torch.cat([p.grad.reshape(-1) for p in mdl.parameters()])
        worst[0] = max(worst[0], float((g - gref).norm() / gref.norm()))
        last[0] = time.monotonic()

    last = [0.0]
    kw = {"grace": cfg["grace"]} if "grace" in cfg else {}
    res = train(code, model, loss_fn, X, y, batch_size=batch, iterations=iters,
                optimizer=lambda ps: torch.optim.SGD(ps, lr=0.1), timeout=cfg.get("timeout", 20.0), seed=0,
                on_step=check if rank == 0 else None, **kw)
    if rank == 0:
        assert res is not None
        print("RESULT " + json.dumps({
            "grad_err": worst[0], "iterations": len(res.infos), "slowest": max(res.times),
            "responders": sorted({w for i in res.infos for w in i.responders}),
            "failures": {str(k): v for k, v in getattr(res, "failures", {}).items()},
            "after_last": time.monotonic() - last[0], "last_at": time.time() - (time.monotonic() - last[0])}),
              flush=True)
        if cfg.get("cont"):
            for w in cfg.get("workers", [0]):
                os.kill(pids[w + 1], signal.SIGCONT)
    dist.destroy_process_group()
    if rank == 0:
        print(f"MASTER_EXIT {time.time()!r}", flush=True)


if __name__ == "__main__":
    main()
