"""A torch.distributed job driven by tests/test_torch.py (``torchrun --nproc-per-node 4 tests/torch_job.py
SCENARIOS``), n = 3 workers; ``--nproc-per-node 7`` for the CodedReduce tree ``coded_reduce(2, 2, 1)``
(6 workers: ranks 1 and 2 are the master's children, ranks 3, 4 those of rank 1 and ranks 5, 6 those of rank 2);
``--nproc-per-node 13`` for ``coded_reduce(3, 2, 1)`` over an ill-conditioned inner code (``"code": "tree3"``).

SCENARIOS is a JSON list; each runs :func:`gradcodes.torch.train` on the digits with a code, a dtype and an
injected fault, and rank 0 checks every iteration's decoded gradient against the single-process full-batch
gradient at the same parameters (float64 for float16 and bfloat16), and the parameters after all iterations
against single-process training. Rank 0 prints one ``RESULT {...}`` line per scenario; a failed check raises,
which ends the job. Scenarios of issue 34: ``"code": "random"`` (a random code built without ``rng`` on every
rank: every rank must refuse it), ``"code": "adv"`` with ``"fault": "lie"`` (an adversarial code, a lying
worker), ``"freeze"`` and ``"opt": "adamw"`` (frozen parameters), ``"delay": "count"`` (``FixedDelay(count=1)``
without ``rng``), ``"repeat"`` (several ``train`` calls: threads and memory), ``"fault": "after"`` (a worker
raises in the last iteration and exits: the job's last scenario, every rank then exits at once). Issue 36:
``"data": "dataset"`` (a map-style Dataset read through a DataLoader, ``"loader_workers"`` processes),
``"model": "bn"`` (BatchNorm: ghost-batch statistics per partition, the lowest-ranked responder's buffers),
``"sched"``, ``"clip"``, ``"stop_at"`` (a scheduler per step or epoch, clipping, a callback that stops the run);
``"final": true`` checks that every rank ends with the master's final parameters and buffers; ``"stage": true``
stages every message through host vectors as for CUDA parameters (``gradcodes.torch._params.FORCE_STAGING``).
"""

from __future__ import annotations

import copy
import json
import os
import sys
import threading
import time


def flat_grad(model):
    import torch

    return torch.cat([p.grad.reshape(-1) for p in model.parameters() if p.requires_grad])


def tensor_bytes() -> int:
    """Bytes of the tensor storages reachable from Python objects (each storage once)."""
    import gc

    import torch

    gc.collect()
    seen = {}
    for obj in gc.get_objects():
        if isinstance(obj, torch.Tensor):
            st = obj.untyped_storage()
            seen[st.data_ptr()] = st.nbytes()
    return sum(seen.values())


def rss_mb() -> float:
    """This process's resident memory (MiB), from /proc."""
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2 ** 20


def flat_params(model):
    import torch

    return torch.cat([p.detach().reshape(-1) for p in model.parameters()])


class Pairs:
    """A map-style dataset of (input, target) samples (not a TensorDataset: train must not rely on tensors)."""

    def __init__(self, X, y):
        self.X, self.y = X, y

    def __len__(self):
        return len(self.y)

    def __getitem__(self, i):
        return self.X[i], self.y[i]


def bn_model(dtype):
    import torch
    from torch import nn

    torch.manual_seed(0)
    return nn.Sequential(nn.Flatten(), nn.Linear(64, 16), nn.BatchNorm1d(16), nn.ReLU(), nn.Linear(16, 10)).to(dtype)


def buffers_of(model, floats=False):
    import torch

    bufs = [b for b in model.buffers() if b.is_floating_point() or not floats]
    return torch.cat([b.detach().double().reshape(-1) for b in bufs]) if bufs else torch.zeros(0)


def scenario(sc: dict, rank: int, n: int) -> None:
    import numpy as np
    import torch
    import torch.distributed as dist

    import gradcodes as gc
    import gradcodes.torch._params as params_module
    from gradcodes.mpi import FixedDelay, Hang
    from gradcodes.torch import CodedSampler, train
    from gradcodes.torch._job import digits, make_model

    # messages staged through a separate host vector, as for CUDA parameters (the path a GPU takes, on the CPU)
    params_module.FORCE_STAGING = bool(sc.get("stage"))
    dtype = getattr(torch, sc.get("dtype", "float64"))
    half = dtype in (torch.float16, torch.bfloat16)
    code = {"cyclic": lambda: gc.cyclic_repetition(n, 1, rng=0),
            "random": lambda: gc.cyclic_repetition(n, 1),          # no rng: a different code on every rank
            "adv": lambda: gc.adversarial_gc(np.ones((n, n), dtype=np.int64), 0, 1),   # corrects 1 liar
            "frac": lambda: gc.fractional_repetition(n, n - 1),
            "ye_abbe": lambda: gc.ye_abbe(n, 1, 2),
            "tree": lambda: gc.coded_reduce(2, 2, 1),
            # 13 ranks: an ill-conditioned inner code (tests/test_torch.py, the whole-tree acceptance)
            "tree3": lambda: gc.coded_reduce(3, 2, 1, gc.cyclic_repetition(3, 1, rng=7, refine=0)),
            }[sc.get("code", "cyclic")]()
    X, y, _, _ = digits(dtype)
    batch, iters, lr = 120, sc.get("iters", 20), sc.get("lr", 0.1)
    if sc.get("model") == "wide":            # 600k parameters: a leaked buffer shows in the resident memory
        torch.manual_seed(0)
        model = torch.nn.Sequential(torch.nn.Flatten(), torch.nn.Linear(64, 8000), torch.nn.Linear(8000, 10))
        model = model.to(dtype)
    elif sc.get("model") == "bn":
        model = bn_model(dtype)
    else:
        model = make_model(sc.get("model", "cnn"), seed=0, dtype=dtype)
    bn = sc.get("model") == "bn"
    per = batch // code.k

    def batch_grad(mdl, Xr, idx):
        """The single-process gradient of the mean loss over the global batch ``idx`` (BatchNorm: each partition
        normalised over its own samples, ghost batches)."""
        if not bn:
            loss_fn(mdl(Xr[idx]), y[idx]).mean().backward()
            return
        for j in range(code.k):
            sl = idx[j * per:(j + 1) * per]
            (loss_fn(mdl(Xr[sl]), y[sl]).sum() / batch).backward()
    for name, p in model.named_parameters():
        if name in sc.get("freeze", []):
            p.requires_grad_(False)
    frozen0 = {name: p.detach().clone() for name, p in model.named_parameters() if not p.requires_grad}
    loss_fn = torch.nn.CrossEntropyLoss(reduction="none")
    fault = sc.get("fault", "none")
    delay = None
    if sc.get("delay") == "count":
        delay = FixedDelay(0.3, count=1)                  # no rng: every rank would draw its own late workers
    if fault == "hang":
        delay = Hang(sc.get("workers", [sc.get("worker", 0)]))
    elif fault == "toomany":
        delay = Hang(sc.get("workers", [0, 1]), start=2)
    elif "hang" in sc:
        delay = Hang(sc["hang"])
    elif fault == "late":
        delay = FixedDelay(0.05, workers=[2])
    elif "others_late" in sc:           # the faulty workers answer first, the others this many seconds later
        delay = FixedDelay(sc["others_late"], workers=[w for w in range(n) if w not in sc.get("workers", [2])])

    def corrupt(w, t, msg, fault=fault):
        if fault == "nan" and w in sc.get("workers", [2]) and t >= sc.get("start", 0):
            msg[3] = float("nan")
        if fault == "lie" and w == sc.get("worker", 1):
            msg += 10.0                                    # a wrong message of the right shape
        if fault == "after" and w == sc.get("worker", 2) and t == iters - 1:
            raise RuntimeError("injected failure in the last iteration")
        if fault == "stale" and w == 1 and 2 <= t < 5:
            time.sleep(0.25)                           # uninterruptible: the message arrives stale
        if fault == "crash" and w == sc.get("worker", 1) and t == 3:
            print(f"CRASH_AT {time.time()!r}", flush=True)
            raise RuntimeError("injected crash")

    worst = [0.0]
    checked = []
    ref = copy.deepcopy(model)
    ref_sampler = CodedSampler(len(X), code, None, batch_size=batch, seed=0)
    every = sc.get("check_every", 1)

    def check(t, mdl, info):
        if sc.get("steps"):
            print(f"STEP {t} {time.time()!r}", flush=True)
        if t % every and t < iters - 3:
            return
        checked.append(t)
        scratch = copy.deepcopy(mdl)
        Xr = X
        if half:                                           # the expected sum in float64
            scratch, Xr = scratch.double(), X.double()
        scratch.zero_grad()
        ref_sampler.set_epoch(t // len(ref_sampler))
        idx = ref_sampler.global_batch(t % len(ref_sampler))
        batch_grad(scratch, Xr, idx)
        gref = flat_grad(scratch)
        g = flat_grad(mdl).to(gref.dtype)
        worst[0] = max(worst[0], float((g - gref).norm() / gref.norm()))

    if fault == "crash" and rank == 0:
        sc["timeout"] = 120.0

    def optimizer(ps):
        if sc.get("opt") == "adamw":
            return torch.optim.AdamW(ps, lr=0.01, weight_decay=0.1)
        return torch.optim.SGD(ps, lr=lr, momentum=0.9)

    def make_sched(opt):
        if sc.get("sched") is None:
            return None
        return torch.optim.lr_scheduler.StepLR(opt, step_size=sc.get("sched_every", 2), gamma=0.5)

    class Stop:
        """Logs every step's responders and stops the run after step ``stop_at``."""

        def __init__(self):
            self.seen = []

        def on_step(self, t, mdl, info):
            self.seen.append(t)

        def on_step_end(self, t, mdl, result):
            return t >= sc["stop_at"]

    stopper = Stop()
    data = (Pairs(X, y),) if sc.get("data") == "dataset" else (X, y)
    extra = {}
    if sc.get("data") == "dataset":
        extra["loader_kwargs"] = {"num_workers": sc.get("loader_workers", 0)}
    if sc.get("sched"):
        extra.update(scheduler=make_sched, scheduler_step=sc["sched"])
    if sc.get("clip"):
        extra["clip_grad_norm"] = sc["clip"]
    if "stop_at" in sc:
        extra["callbacks"] = [stopper]

    def run(on_step):
        return train(code, model, loss_fn, *data, batch_size=batch, iterations=iters, optimizer=optimizer,
                     delay=delay, timeout=sc.get("timeout", 30.0), seed=0, on_step=on_step, corrupt=corrupt,
                     **extra)

    if sc.get("code") == "random":                         # every rank must refuse at set-up, naming the ranks
        try:
            run(None)
            err = None
        except gc.GradcodesError as exc:
            err = f"{type(exc).__name__}: {exc}"
        errors = [None] * dist.get_world_size()
        dist.all_gather_object(errors, err)
        if rank == 0:
            print("RESULT " + json.dumps({"name": sc.get("name", ""), "errors": errors}), flush=True)
        dist.barrier()
        return
    if sc.get("repeat"):                                   # threads and memory over repeated train calls
        stats = []
        for _ in range(sc["repeat"]):
            run(None)
            stats.append((threading.active_count(), rss_mb(), tensor_bytes()))
        every_rank = [None] * dist.get_world_size()
        dist.all_gather_object(every_rank, stats)
        if rank == 0:
            print("RESULT " + json.dumps({"name": sc.get("name", ""), "stats": every_rank}), flush=True)
        dist.barrier()
        return
    try:
        res = run(check if rank == 0 else None)
    except RuntimeError as exc:
        if fault == "after" and rank - 1 == sc.get("worker", 2) and "injected" in str(exc):
            print(f"WORKER_FAILED {exc}", flush=True)
            time.sleep(2.0)                                # the master has finished by then
            os._exit(0)                                    # a clean exit after its last message
        raise
    if fault == "after":                                   # the job's last scenario: one rank is gone
        if rank == 0:
            print("RESULT " + json.dumps({"name": sc.get("name", ""), "iterations": len(res.infos),
                                          "failures": getattr(res, "failures", None)}), flush=True)
        sys.stdout.flush()
        os._exit(0)
    final_same = None
    if sc.get("final"):                                    # every rank holds the master's final model
        mine = torch.cat([flat_params(model).double(), buffers_of(model)])
        every = [None] * dist.get_world_size()
        dist.all_gather_object(every, mine)
        final_same = [bool(torch.equal(v, every[0])) for v in every]
    if rank == 0:
        opt = optimizer([p for p in ref.parameters() if p.requires_grad])
        sched = make_sched(opt)
        per_epoch = len(ref_sampler)
        lrs = []
        for t in range(0 if sc.get("noref") else len(res.infos)):
            opt.zero_grad()
            ref_sampler.set_epoch(t // len(ref_sampler))
            idx = ref_sampler.global_batch(t % len(ref_sampler))
            saved = [b.clone() for b in ref.buffers()]
            batch_grad(ref, X, idx)
            if bn:          # the buffers: those the lowest-ranked responder's partitions leave, from the step's start
                for b, v in zip(ref.buffers(), saved, strict=True):
                    b.copy_(v)
                with torch.no_grad():
                    for j in code.supports[min(res.infos[t].responders)]:
                        ref(X[idx[j * per:(j + 1) * per]])
            if sc.get("clip"):
                torch.nn.utils.clip_grad_norm_(list(ref.parameters()), sc["clip"])
            lrs.append(opt.param_groups[0]["lr"])
            opt.step()
            if sched is not None and (sc["sched"] == "step" or (t + 1) % per_epoch == 0):
                sched.step()
        pa, pb = flat_params(model), flat_params(ref)
        params_err = float((pa - pb).norm() / pb.norm())
        ba, bb = buffers_of(model), buffers_of(ref)
        buffers_err = float((ba - bb).abs().max()) if len(bb) else 0.0
        moved = float((buffers_of(ref, True) - buffers_of(bn_model(dtype), True)).abs().max()) if bn else 0.0
        out = {"name": sc.get("name", ""), "grad_err": worst[0], "params_err": params_err,
               "stale": sum(i.stale for i in res.infos), "bad": sorted({w for i in res.infos for w in i.bad}),
               "responders": sorted({w for i in res.infos for w in i.responders}), "skipped": res.skipped,
               "checked": len(checked), "iterations": len(res.infos),
               "adversaries": sorted({w for i in res.infos for w in getattr(i, "adversaries", [])}),
               "adversarial_iterations": sum(bool(getattr(i, "adversaries", [])) for i in res.infos),
               "frozen_same": all(torch.equal(p, frozen0[name]) for name, p in model.named_parameters()
                                  if name in frozen0),
               "frozen_grad": [name for name, p in model.named_parameters() if name in frozen0 and p.grad is not None],
               "buffers_err": buffers_err, "buffers_moved": moved, "final_same": final_same, "lr": res.lr,
               "lr_ref": lrs,
               "grad_norm": res.grad_norm, "callback_steps": stopper.seen}
        if delay is not None and sc.get("delay") == "count":
            late = [sorted(delay.stragglers(t, n)) for t in range(iters)]
            out["late_responded"] = sum(bool(set(lt) & set(i.responders))
                                        for lt, i in zip(late, res.infos, strict=True))
            out["slow_iterations"] = sum(x >= 0.25 for x in res.times)
        print("RESULT " + json.dumps(out), flush=True)
    dist.barrier()


def main(run=None) -> None:
    """Run the scenarios of ``sys.argv[1]`` in turn with ``run(sc, rank, n)`` (default: :func:`scenario`; the
    other jobs of tests/ pass theirs)."""
    import torch.distributed as dist

    dist.init_process_group("gloo")
    rank = dist.get_rank()
    n = dist.get_world_size() - 1
    for sc in json.loads(sys.argv[1]):
        (run or scenario)(sc, rank, n)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
