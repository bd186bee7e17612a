"""Coded training loops on ``torch.distributed``: :func:`train` (master--worker with any code and wait policy, or a
CodedReduce tree) and
:func:`ddp_train` (the DistributedDataParallel all-reduce baseline), with the worker's message computation
:class:`CodedGradient` (loss weighting for ``m = 1``, one backward pass per partition and ``encode_worker`` for
``m > 1``)."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ..mpi._delays import Delay, NoDelay
from ._data import CodedSampler
from ._loss import coded_loss, loss_weights
from ._runtime import AggregateInfo, FlatParams, Master, Worker

__all__ = ["CodedGradient", "train", "ddp_train", "TrainResult"]


class CodedGradient:
    """Worker ``worker``'s coded message from its samples of a global batch.

    ``loss_fn(outputs, targets)`` must return per-sample losses (``reduction="none"``). For ``m = 1`` the message
    is the gradient of the loss weighted by :func:`gradcodes.torch.loss_weights` (one backward pass); for
    ``m > 1`` each stored partition's gradient of its share of the mean loss is computed by its own backward pass
    into a preallocated (load, P) buffer and encoded by :meth:`gradcodes.LinearCode.encode_worker`.
    """

    def __init__(self, model: Any, loss_fn: Callable[[Any, Any], Any], code: Any, worker: int,
                 sampler: CodedSampler) -> None:
        import torch

        self.model, self.loss_fn, self.code, self.worker = model, loss_fn, code, int(worker)
        self.flat = FlatParams(list(model.parameters()))
        self.batch_size = sampler.batch_size
        self.per_partition = sampler.per_partition
        self.parts = sampler.partitions
        if int(code.m) == 1:
            self.weights = loss_weights(code, worker, sampler.partition_ids, sampler.batch_size,
                                        dtype=self.flat.dtype)
        else:
            self.rows = torch.zeros(len(self.parts), self.flat.size, dtype=self.flat.dtype)

    def __call__(self, inputs: Any, targets: Any, out: Any) -> None:
        """Write the message for ``inputs``/``targets`` (this worker's batch from the sampler) into ``out``."""
        self.model.zero_grad(set_to_none=False)
        if int(self.code.m) == 1:
            coded_loss(self.loss_fn(self.model(inputs), targets), self.weights).backward()
            self.flat.read_grads(out)
            return
        b = self.per_partition
        for r in range(len(self.parts)):
            self.model.zero_grad(set_to_none=False)
            sl = slice(r * b, (r + 1) * b)
            (self.loss_fn(self.model(inputs[sl]), targets[sl]).sum() / self.batch_size).backward()
            self.flat.read_grads(self.rows[r])
        self.code.encode_worker(self.worker, self.rows, out=out)


@dataclass
class TrainResult:
    """The master's record of a run: per-iteration wall time (evaluation excluded), accuracy, responders."""

    scheme: str
    times: list[float] = field(default_factory=list)
    accuracy: list[float] = field(default_factory=list)
    infos: list[AggregateInfo] = field(default_factory=list)
    skipped: int = 0

    def time_to(self, accuracy: float) -> float:
        """Cumulative seconds until the accuracy first reached ``accuracy`` (inf if never)."""
        total = 0.0
        for t, a in zip(self.times, self.accuracy, strict=True):
            total += t
            if a >= accuracy:
                return total
        return float("inf")

    @property
    def mean_iteration(self) -> float:
        return sum(self.times) / max(len(self.times), 1)


def train(code: Any, model: Any, loss_fn: Callable[[Any, Any], Any], X: Any, y: Any, *, batch_size: int,
          iterations: int, optimizer: Callable[[Any], Any], policy: Any = None, delay: Delay | None = None,
          timeout: float = 60.0, seed: int = 0, evaluate: Callable[[Any], float] | None = None,
          on_step: Callable[[int, Any, AggregateInfo], None] | None = None,
          corrupt: Callable[[int, int, Any], None] | None = None, name: str | None = None) -> TrainResult | None:
    """Coded data-parallel training on ``code.n + 1`` ranks (rank 0 master, rank ``i + 1`` worker ``i``).

    A :class:`~gradcodes.CodedReduceCode` runs as its tree (Reisizadeh et al. 2019, Section 3): rank ``r``
    sends to rank ``(r - 1) // branching``, every parent decodes its first decodable set of children with the
    inner code (``policy`` applies to it) and adds its own message; a parent that cannot decode for ``timeout``
    seconds raises :class:`gradcodes.mpi.StragglerTimeout` naming its missing children.

    Every rank calls it with the same arguments and an identically initialised ``model``. The master steps
    ``optimizer(model.parameters())`` on the decoded gradient of the mean loss over each global batch of
    ``batch_size`` samples of ``(X, y)`` (:class:`CodedSampler`, epochs keyed by ``seed``). ``evaluate(model)``
    (master, excluded from the times) gives the accuracy after each step; ``on_step(t, model, info)`` is called
    on the master after each decode, before the optimizer steps (tests compare ``.grad`` there);
    ``corrupt(worker, t, message)`` may alter a worker's message (fault tests). Returns a :class:`TrainResult`
    on the master and None on the workers.
    """
    import torch.distributed as dist

    rank = dist.get_rank()
    if rank == 0:
        master = Master(code, list(model.parameters()), policy=policy, timeout=timeout)
        opt = optimizer(model.parameters())
        res = TrainResult(name or str(getattr(code, "name", "code")))
        try:
            for t in range(iterations):
                start = time.monotonic()
                master.broadcast(t)
                info = master.aggregate(t)
                if on_step is not None:
                    on_step(t, model, info)
                opt.step()
                res.times.append(time.monotonic() - start)
                res.infos.append(info)
                if evaluate is not None:
                    res.accuracy.append(float(evaluate(model)))
        finally:
            res.skipped = master._skipped
        master.stop()
        return res
    w = rank - 1
    sampler = CodedSampler(len(X), code, w, batch_size=batch_size, seed=seed)
    grad = CodedGradient(model, loss_fn, code, w, sampler)
    worker = Worker(code, w, list(model.parameters()), delay=delay or NoDelay(), policy=policy,
                    timeout=timeout)
    per_epoch = len(sampler)

    def compute(t: int, out: Any) -> None:
        sampler.set_epoch(t // per_epoch)
        idx = sampler.global_batch(t % per_epoch)[sampler._offsets]
        grad(X[idx], y[idx], out)
        if corrupt is not None:
            corrupt(w, t, out)

    worker.run(compute)
    return None


def ddp_train(model: Any, loss_fn: Callable[[Any, Any], Any], X: Any, y: Any, *, workers: int, batch_size: int,
              iterations: int, optimizer: Callable[[Any], Any], group: Any, delay: Delay | None = None,
              seed: int = 0, evaluate: Callable[[Any], float] | None = None) -> TrainResult | None:
    """The baseline: ``torch.nn.parallel.DistributedDataParallel`` on ranks ``1..workers`` (``group``), each on
    ``batch_size / workers`` samples of the same global batches; the all-reduce waits for every rank. Rank 1
    returns the :class:`TrainResult`, the others None (rank 0 does not take part)."""
    import torch
    import torch.distributed as dist

    import gradcodes as gc

    rank = dist.get_rank()
    if rank == 0 or rank > workers:
        return None
    w = rank - 1
    code = gc.uncoded(workers)
    sampler = CodedSampler(len(X), code, w, batch_size=batch_size, seed=seed)
    ddp = torch.nn.parallel.DistributedDataParallel(model, process_group=group)
    opt = optimizer(ddp.parameters())
    delay = delay or NoDelay()
    res = TrainResult("DDP allreduce")
    per_epoch = len(sampler)
    for t in range(iterations):
        start = time.monotonic()
        sampler.set_epoch(t // per_epoch)
        idx = sampler.global_batch(t % per_epoch)[sampler._offsets]
        opt.zero_grad()
        d = delay.delay(w, t, workers=workers, load_fraction=1.0 / workers)
        loss = loss_fn(ddp(X[idx]), y[idx]).mean()
        pause = start + d - time.monotonic()
        if pause > 0:
            time.sleep(pause)
        loss.backward()
        opt.step()
        res.times.append(time.monotonic() - start)
        if evaluate is not None and rank == 1:
            res.accuracy.append(float(evaluate(model)))
    return res if rank == 1 else None
