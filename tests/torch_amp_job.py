"""A torch.distributed job driven by tests/test_torch_amp.py (``torchrun --nproc-per-node 4 tests/torch_amp_job.py
SCENARIOS``), n = 3 workers: mixed precision (autocast, the master's GradScaler) and gradient accumulation of
:func:`gradcodes.torch.train` on the digits, each scenario against single-process training over the same global
batches.

Scenario keys: ``code`` (``"cyclic"``: ``cyclic_repetition(3, 1, rng=0)``, non-0/1 coefficients, per-partition
messages; ``"frac"``: ``fractional_repetition(3, 2)``, 0/1, one weighted backward pass; ``"ye_abbe"``: ``m = 2``;
``"tree"``: ``coded_reduce(2, 2, 1)`` on 7 ranks), ``model`` (``"mlp"``: Linear 64-32, ReLU, Linear 32-10;
``"cnn"``, ``"linear"``: the digits CNN or linear model), ``dtype``, ``iters``, ``batch``, ``lr``, ``noref`` (no
single-process run: float16 and bfloat16 parameters),
``autocast`` (``"float16"``/``"bfloat16"``), ``scaler`` (GradScaler keyword arguments; absent: no scaler),
``poison`` (indices of training samples set to 1e5, which is inf in float16: every batch holding one overflows),
``fault: "nan"`` (worker ``worker`` sends NaN every step), ``accumulate`` (batches per optimizer step),
``sched: "epoch"``, ``evaluate`` (record the test accuracy of both runs). Rank 0 prints ``RESULT {...}``: the
steps the scaler skipped and the scales, against the single-process run's, the parameters' relative distance, the
accuracies.
"""

from __future__ import annotations

import contextlib
import copy
import json

from torch_job import main  # tests/ is on the path of a script run from there


def scenario(sc: dict, rank: int, n: int) -> None:
    import torch
    import torch.distributed as dist
    from torch import nn

    import gradcodes as gc
    from gradcodes.torch import CodedSampler, train
    from gradcodes.torch._job import digits, make_model

    dtype = getattr(torch, sc.get("dtype", "float32"))
    code = {"cyclic": lambda: gc.cyclic_repetition(n, 1, rng=0),
            "frac": lambda: gc.fractional_repetition(n, n - 1),
            "ye_abbe": lambda: gc.ye_abbe(n, 1, 2),
            "tree": lambda: gc.coded_reduce(2, 2, 1)}[sc.get("code", "cyclic")]()
    X, y, Xt, yt = digits(dtype)
    for i in sc.get("poison", []):
        X[i] = 1e5
    if sc.get("model", "mlp") == "mlp":
        torch.manual_seed(0)
        model = nn.Sequential(nn.Flatten(), nn.Linear(64, 32), nn.ReLU(), nn.Linear(32, 10)).to(dtype)
    else:
        model = make_model(sc["model"], seed=0, dtype=dtype)
    ref = copy.deepcopy(model)
    batch, iters, k = sc.get("batch", 120), sc.get("iters", 20), sc.get("accumulate", 1)
    loss_fn = nn.CrossEntropyLoss(reduction="none")
    half = getattr(torch, sc["autocast"]) if "autocast" in sc else None
    scaler_kw = sc.get("scaler")

    def optimizer(ps):
        return torch.optim.SGD(ps, lr=sc.get("lr", 0.1), momentum=0.9)

    def make_sched(opt):
        return torch.optim.lr_scheduler.StepLR(opt, step_size=1, gamma=0.5) if sc.get("sched") else None

    def accuracy(mdl):
        with torch.no_grad():
            return float((mdl(Xt).argmax(1) == yt).double().mean())

    def corrupt(w, t, msg):
        if sc.get("fault") == "nan" and w == sc.get("worker", 2):
            msg[0] = float("nan")

    extra = {}
    if half is not None:
        extra["autocast"] = half
    if scaler_kw is not None:
        extra["grad_scaler"] = lambda: torch.amp.GradScaler("cpu", **scaler_kw)
    if k != 1:
        extra["accumulate_grad_batches"] = k
    if sc.get("sched"):
        extra.update(scheduler=make_sched, scheduler_step="epoch")
    res = train(code, model, loss_fn, X, y, batch_size=batch, iterations=iters, optimizer=optimizer, seed=0,
                timeout=sc.get("timeout", 30.0), corrupt=corrupt,
                evaluate=accuracy if sc.get("evaluate") else None, **extra)
    if rank == 0:
        # single-process training over the same global batches, with the same scaler and accumulation
        opt = optimizer(ref.parameters())
        sched = make_sched(opt)
        scaler = torch.amp.GradScaler("cpu", **scaler_kw) if scaler_kw is not None else None
        sampler = CodedSampler(len(X), code, None, batch_size=batch, seed=0)
        per_epoch = len(sampler)
        scales, skipped, acc, lrs = [], [], [], []
        ctx = (lambda: torch.autocast("cpu", dtype=half)) if half is not None else contextlib.nullcontext
        poisoned = []              # the steps whose batches hold a poisoned sample (they overflow at any scale)
        for t in range(iters):
            for b in range(t * k, t * k + k):
                sampler.set_epoch(b // per_epoch)
                if set(sampler.global_batch(b % per_epoch).tolist()) & set(sc.get("poison", [])):
                    poisoned.append(t)
        epoch_ended = False       # the scheduler steps after the optimizer step that used an epoch's last batch
        for t in range(0 if sc.get("noref") else iters):
            opt.zero_grad()
            for a in range(k):
                b = t * k + a
                sampler.set_epoch(b // per_epoch)
                idx = sampler.global_batch(b % per_epoch)
                with ctx():
                    loss = loss_fn(ref(X[idx]), y[idx]).mean() / k
                (scaler.scale(loss) if scaler is not None else loss).backward()
                epoch_ended = epoch_ended or (b + 1) % per_epoch == 0
            lrs.append(opt.param_groups[0]["lr"])
            if scaler is not None:
                scales.append(float(scaler.get_scale()))
                scaler.unscale_(opt)
                if not all(bool(torch.isfinite(p.grad).all()) for p in ref.parameters()):
                    skipped.append(t)
                scaler.step(opt)
                scaler.update()
            else:
                opt.step()
            if sched is not None and epoch_ended:
                sched.step()
            epoch_ended = False
            if sc.get("evaluate"):
                acc.append(accuracy(ref))
        pa = torch.cat([p.detach().double().reshape(-1) for p in model.parameters()])
        pb = torch.cat([p.detach().double().reshape(-1) for p in ref.parameters()])
        out = {"name": sc["name"], "iterations": len(res.infos), "overflow": res.overflow, "overflow_ref": skipped,
               "poisoned": sorted(set(poisoned)),
               "loss_scale": res.loss_scale, "loss_scale_ref": scales, "lr": res.lr, "lr_ref": lrs,
               "params_err": float((pa - pb).norm() / pb.norm()), "accuracy": res.accuracy[-1:],
               "final_accuracy": accuracy(model), "finite": bool(torch.isfinite(pa).all()),
               "accuracy_ref": acc[-1:], "responders": sorted({w for i in res.infos for w in i.responders}),
               "nonfinite": sorted({w for i in res.infos for w in i.nonfinite}),
               "bad": sorted({w for i in res.infos for w in i.bad})}
        print("RESULT " + json.dumps(out), flush=True)
    dist.barrier()


if __name__ == "__main__":
    main(scenario)
