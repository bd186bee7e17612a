"""A torch.distributed job driven by tests/test_torch.py (``torchrun --nproc-per-node 4 tests/torch_job.py
SCENARIOS``), n = 3 workers; ``--nproc-per-node 7`` for the CodedReduce tree ``coded_reduce(2, 2, 1)``
(6 workers: ranks 1 and 2 are the master's children, ranks 3, 4 those of rank 1 and ranks 5, 6 those of rank 2);
``--nproc-per-node 13`` for ``coded_reduce(3, 2, 1)`` over an ill-conditioned inner code (``"code": "tree3"``).

SCENARIOS is a JSON list; each runs :func:`gradcodes.torch.train` on the digits with a code, a dtype and an
injected fault, and rank 0 checks every iteration's decoded gradient against the single-process full-batch
gradient at the same parameters, and the parameters after all iterations against single-process training. Rank 0
prints one ``RESULT {...}`` line per scenario; a failed check raises, which ends the job.
"""

from __future__ import annotations

import copy
import json
import sys
import time


def flat_grad(model):
    import torch

    return torch.cat([p.grad.reshape(-1) for p in model.parameters()])


def flat_params(model):
    import torch

    return torch.cat([p.detach().reshape(-1) for p in model.parameters()])


def scenario(sc: dict, rank: int, n: int) -> None:
    import torch
    import torch.distributed as dist

    import gradcodes as gc
    from gradcodes.mpi import FixedDelay, Hang
    from gradcodes.torch import CodedSampler, train
    from gradcodes.torch._job import digits, make_model

    dtype = getattr(torch, sc.get("dtype", "float64"))
    code = {"cyclic": lambda: gc.cyclic_repetition(n, 1, rng=0),
            "frac": lambda: gc.fractional_repetition(n, n - 1),
            "ye_abbe": lambda: gc.ye_abbe(n, 1, 2),
            "tree": lambda: gc.coded_reduce(2, 2, 1),
            # 13 ranks: an ill-conditioned inner code (tests/test_torch.py, the whole-tree acceptance)
            "tree3": lambda: gc.coded_reduce(3, 2, 1, gc.cyclic_repetition(3, 1, rng=7, refine=0)),
            }[sc.get("code", "cyclic")]()
    X, y, _, _ = digits(dtype)
    batch, iters, lr = 120, sc.get("iters", 20), 0.1
    model = make_model(sc.get("model", "cnn"), seed=0, dtype=dtype)
    loss_fn = torch.nn.CrossEntropyLoss(reduction="none")
    fault = sc.get("fault", "none")
    delay = None
    if fault == "hang":
        delay = Hang(sc.get("workers", [sc.get("worker", 0)]))
    elif fault == "toomany":
        delay = Hang(sc.get("workers", [0, 1]), start=2)
    elif "hang" in sc:
        delay = Hang(sc["hang"])
    elif fault == "late":
        delay = FixedDelay(0.05, workers=[2])

    def corrupt(w, t, msg, fault=fault):
        if fault == "nan" and w in sc.get("workers", [2]) and t >= sc.get("start", 0):
            msg[3] = float("nan")
        if fault == "stale" and w == 1 and 2 <= t < 5:
            time.sleep(0.25)                           # uninterruptible: the message arrives stale
        if fault == "crash" and w == sc.get("worker", 1) and t == 3:
            print(f"CRASH_AT {time.time()!r}", flush=True)
            raise RuntimeError("injected crash")

    worst = [0.0]
    ref = copy.deepcopy(model)
    ref_sampler = CodedSampler(len(X), code, None, batch_size=batch, seed=0)

    def check(t, mdl, info):
        if sc.get("steps"):
            print(f"STEP {t} {time.time()!r}", flush=True)
        scratch = copy.deepcopy(mdl)
        scratch.zero_grad()
        ref_sampler.set_epoch(t // len(ref_sampler))
        idx = ref_sampler.global_batch(t % len(ref_sampler))
        loss_fn(scratch(X[idx]), y[idx]).mean().backward()
        g, gref = flat_grad(mdl), flat_grad(scratch)
        worst[0] = max(worst[0], float((g - gref).norm() / gref.norm()))

    if fault == "crash" and rank == 0:
        sc["timeout"] = 120.0
    res = train(code, model, loss_fn, X, y, batch_size=batch, iterations=iters,
                optimizer=lambda ps: torch.optim.SGD(ps, lr=lr, momentum=0.9), delay=delay,
                timeout=sc.get("timeout", 30.0), seed=0, on_step=check if rank == 0 else None,
                corrupt=corrupt)
    if rank == 0:
        opt = torch.optim.SGD(ref.parameters(), lr=lr, momentum=0.9)
        for t in range(iters):
            opt.zero_grad()
            ref_sampler.set_epoch(t // len(ref_sampler))
            idx = ref_sampler.global_batch(t % len(ref_sampler))
            loss_fn(ref(X[idx]), y[idx]).mean().backward()
            opt.step()
        pa, pb = flat_params(model), flat_params(ref)
        params_err = float((pa - pb).norm() / pb.norm())
        out = {"name": sc.get("name", ""), "grad_err": worst[0], "params_err": params_err,
               "stale": sum(i.stale for i in res.infos), "bad": sorted({w for i in res.infos for w in i.bad}),
               "responders": sorted({w for i in res.infos for w in i.responders}), "skipped": res.skipped}
        print("RESULT " + json.dumps(out), flush=True)
    dist.barrier()


def main() -> None:
    import torch.distributed as dist


    dist.init_process_group("gloo")
    rank = dist.get_rank()
    n = dist.get_world_size() - 1
    for sc in json.loads(sys.argv[1]):
        scenario(sc, rank, n)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
