"""A torch.distributed job with real faults, driven by tests/test_torch.py (``torchrun --nproc-per-node 4
tests/torch_fault_job.py CONFIG``): n = 3 workers of ``cyclic_repetition(3, 1)`` (s = 1), or with ``"code":
"tree"`` the CodedReduce tree ``coded_reduce(2, 2, 1)`` on 7 ranks; a linear model on random digit-shaped data in
float64.

CONFIG is JSON: ``"faults": {"<worker index>": kind}`` (tests/_faults.py: ``"loop"``, ``"spin"``, ``"sigstop"``,
``"sigkill"``, ``"exit0"``, ``"exit1"``, ``"raise"``, ``"sleep"``) happen inside the user's loss function, once, at
the first call at iteration ``"at"`` or later (one call per iteration); not through the library's delay models.
Rank 0 checks every iteration's decoded gradient against the single-process full-batch gradient at the same
parameters and prints ``RESULT {...}`` (the worst relative error, the iterations, every iteration's time and
responders, the failures :func:`gradcodes.torch.train` reported and the seconds from the last iteration to its
return), then ``MASTER_EXIT``.
"""

from __future__ import annotations

import json
import sys
import time

from _faults import Fault


def main() -> None:
    import torch
    import torch.distributed as dist

    import gradcodes as gc
    from gradcodes.torch import CodedSampler, train
    from gradcodes.torch._job import make_model

    cfg = json.loads(sys.argv[1])
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    n = dist.get_world_size() - 1
    code = gc.coded_reduce(2, 2, 1) if cfg.get("code") == "tree" else gc.cyclic_repetition(n, 1, rng=0)
    gen = torch.Generator().manual_seed(0)                 # digit-shaped random data: no scikit-learn import per rank
    X = torch.rand(1500, 1, 8, 8, generator=gen, dtype=torch.float64)
    y = torch.randint(0, 10, (1500,), generator=gen)
    batch, iters = 120, cfg.get("iters", 8)
    model = make_model("linear", seed=0, dtype=torch.float64)
    base = torch.nn.CrossEntropyLoss(reduction="none")
    fault = Fault(cfg, rank)
    calls = [0]

    def loss_fn(out, target):
        fault(calls[0])
        calls[0] += 1
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
            "times": [float(x) for x in res.times], "used": [sorted(i.responders) for i in res.infos],
            "responders": sorted({w for i in res.infos for w in i.responders}),
            "failures": {str(k): v for k, v in getattr(res, "failures", {}).items()},
            "after_last": time.monotonic() - last[0], "last_at": time.time() - (time.monotonic() - last[0])}),
              flush=True)
    dist.destroy_process_group()
    if rank == 0:
        print(f"MASTER_EXIT {time.time()!r}", flush=True)


if __name__ == "__main__":
    main()
