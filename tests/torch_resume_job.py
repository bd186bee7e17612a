"""A torch.distributed job driven by tests/test_torch.py for checkpoint and resume (``torchrun --nproc-per-node 4
tests/torch_resume_job.py CONFIG``): :func:`gradcodes.torch.train` on the digits, n = 3 workers, float64, the linear
model, a map-style dataset, Adam, a StepLR scheduler, ``policy="all"`` (a decode of the same responders every step,
so that two uninterrupted runs agree bitwise), and a gradient-noise hook on the master that draws from torch's and
numpy's global generators (the random state a resumed run must restore), with ``checkpoint=CONFIG["ckpt"]`` every
``CONFIG["every"]`` steps.

With ``"kill_at": t`` the master SIGKILLs itself at the end of step ``t``, once: it first creates
``CONFIG["marker"]``, and a run that finds the marker does not kill, so the restart is the same command. Rank 0
saves its final ``state_dict`` to ``CONFIG["out"]`` and prints ``RESULT {...}``; with ``"then_refuse": true`` a
second ``train`` call with another seed follows, whose refusal of the checkpoint is caught on every rank and the
messages are gathered into the RESULT (``"errors"``). ``"accumulate"`` and ``"sched_step"`` are passed as
``accumulate_grad_batches`` and ``scheduler_step``.
"""

from __future__ import annotations

import json
import os
import signal
import sys

from torch_job import Pairs  # tests/ is on the path of a script run from there (a map-style dataset)


def main() -> None:
    cfg = json.loads(sys.argv[1])
    import numpy as np
    import torch
    import torch.distributed as dist

    import gradcodes as gc
    from gradcodes.torch import Callback, train
    from gradcodes.torch._job import digits, make_model

    dist.init_process_group("gloo")
    rank = dist.get_rank()
    X, y, _, _ = digits(torch.float64)
    model = make_model("linear", seed=0, dtype=torch.float64)
    torch.manual_seed(1234)                     # the master's noise draws start here in every fresh run
    np.random.seed(1234)                        # noqa: NPY002 - the global state a resume must restore

    class Noise(Callback):
        """Gradient noise from the master's global generators (a trajectory that depends on its random state)."""

        def on_step(self, step, mdl, info):
            scale = 1e-3 * float(np.random.random())        # noqa: NPY002
            for p in mdl.parameters():
                p.grad.add_(torch.randn_like(p), alpha=scale)

    class Kill(Callback):
        def on_step_end(self, step, mdl, result):
            if step == cfg.get("kill_at") and not os.path.exists(cfg["marker"]):
                open(cfg["marker"], "w").close()
                print(f"KILLED_AFTER {step}", flush=True)
                os.kill(os.getpid(), signal.SIGKILL)

    def run(seed):
        return train(gc.cyclic_repetition(3, 1, rng=0), model, torch.nn.CrossEntropyLoss(reduction="none"),
                     Pairs(X, y), batch_size=120, iterations=cfg["iters"], seed=seed, policy="all",
                     optimizer=lambda ps: torch.optim.Adam(ps, lr=0.01),
                     scheduler=lambda opt: torch.optim.lr_scheduler.StepLR(opt, 4, gamma=0.5),
                     callbacks=[Noise(), Kill()], checkpoint=cfg["ckpt"], checkpoint_every=cfg["every"],
                     loader_kwargs={"num_workers": 0}, timeout=60.0,
                     accumulate_grad_batches=cfg.get("accumulate", 1), scheduler_step=cfg.get("sched_step", "step"))

    res = run(0)
    out = {"start": res.start, "steps": len(res.times), "infos": len(res.infos), "lr": res.lr} if rank == 0 else None
    if rank == 0:
        torch.save(model.state_dict(), cfg["out"])
    if cfg.get("then_refuse"):          # the same checkpoint with another seed (another data order): refused
        try:
            run(1)
            err = None
        except gc.GradcodesValueError as exc:
            err = f"{type(exc).__name__}: {exc}"
        errors = [None] * dist.get_world_size()
        dist.all_gather_object(errors, err)
        if rank == 0:
            out["errors"] = errors
    if rank == 0:
        print("RESULT " + json.dumps(out), flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
