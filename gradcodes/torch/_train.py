"""Coded training loops on ``torch.distributed``: :func:`train` (master--worker with any code and wait policy, or a
CodedReduce tree) and
:func:`ddp_train` (the DistributedDataParallel all-reduce baseline), with the worker's message computation
:class:`CodedGradient` (loss weighting for ``m = 1``, one backward pass per partition and ``encode_worker`` for
``m > 1``)."""

from __future__ import annotations

import time
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from .._base.errors import GradcodesValueError
from .._runtime.delays import Delay, NoDelay
from ._data import CodedSampler
from ._loss import coded_loss, loss_weights
from ._runtime import GRACE, AggregateInfo, FlatParams, Master, Worker

__all__ = ["CodedGradient", "train", "ddp_train", "TrainResult"]


class CodedGradient:
    """Worker ``worker``'s coded message from its samples of a global batch.

    ``loss_fn(outputs, targets)`` must return per-sample losses (``reduction="none"``). Two ways to compute the
    message ``y_i = sum_{j, u} B[i, j m + u] g_j^{(u)}`` (Tandon et al. 2017; Ye & Abbe 2018 for ``m > 1``):

    * ``"loss"`` (``m = 1`` only): the gradient of the loss weighted by :func:`gradcodes.torch.loss_weights`,
      one backward pass and no encode step;
    * ``"partitions"``: one backward pass per stored partition (its share of the mean loss, the weight ``1/N``
      of the single-process loss), the partition gradients combined with the coefficients of ``B`` in float64 in
      a buffer allocated once, and the message rounded once to the parameters' dtype.

    In float64 both agree to rounding. In float32 the weighted backward pass rounds at the scale of the message
    ``sum_j B_ij g_j``, and the decode's cancellation (``sum_i |a_i| |y_i|`` against ``|sum_j g_j|``) amplifies
    those roundings: for ``cyclic_repetition(3, 1)`` on the digits CNN the decoded gradient was 3e-6 away from the
    single-process one, and 5e-7 with ``"partitions"``, whose only amplified error is the message's final
    rounding (``benchmarks/numerics/torch_float32.py``). ``encoding="auto"`` (the default) takes ``"loss"`` when it
    cannot be amplified (float64 parameters, or every coefficient of ``B`` 0 or 1) and ``"partitions"``
    otherwise; ``m > 1`` always takes ``"partitions"``. Its cost is ``load`` smaller backward passes instead of one
    (the same samples) and two buffers of the parameters' size.
    """

    def __init__(self, model: Any, loss_fn: Callable[[Any, Any], Any], code: Any, worker: int,
                 sampler: CodedSampler, *, encoding: str = "auto") -> None:
        import numpy as np
        import torch

        self.model, self.loss_fn, self.code, self.worker = model, loss_fn, code, int(worker)
        self.flat = FlatParams(list(model.parameters()))
        self.batch_size = sampler.batch_size
        self.per_partition = sampler.per_partition
        self.parts = sampler.partitions
        self.m = int(code.m)
        if encoding not in ("auto", "loss", "partitions"):
            raise GradcodesValueError(f"encoding must be 'auto', 'loss' or 'partitions', got {encoding!r}")
        if encoding == "loss" and self.m != 1:
            raise GradcodesValueError(f"encoding='loss' needs m = 1, this code has m = {self.m}")
        if encoding == "auto":
            B = np.asarray(code.float_B())
            plain = self.flat.dtype == torch.float64 or bool(np.isin(B, (0.0, 1.0)).all())
            encoding = "loss" if self.m == 1 and plain else "partitions"
        self.encoding = encoding
        dev = self.flat.device
        if encoding == "loss":
            self.weights = loss_weights(code, worker, sampler.partition_ids, sampler.batch_size,
                                        dtype=self.flat.dtype, device=dev)
            return
        P, m = self.flat.size, self.m
        q = -(-P // m)
        row = np.asarray(code.float_B(np.float64))[self.worker].reshape(int(code.k), m)
        #: per stored partition: (block u, length, coefficient) of its non-zero coefficients (float64)
        self.plan = [[(u, max(0, min(q, P - u * q)), float(row[j, u])) for u in range(m) if row[j, u] != 0]
                     for j in self.parts]
        self.q = q
        self.row = torch.zeros(P, dtype=self.flat.dtype, device=dev)
        self.acc = torch.zeros(q, dtype=torch.float64, device=dev)

    def __call__(self, inputs: Any, targets: Any, out: Any) -> None:
        """Write the message for ``inputs``/``targets`` (this worker's batch from the sampler) into ``out``."""
        if self.encoding == "loss":
            self.model.zero_grad(set_to_none=False)
            coded_loss(self.loss_fn(self.model(inputs), targets), self.weights).backward()
            self.flat.read_grads(out)
            return
        b, q = self.per_partition, self.q
        self.acc.zero_()
        for r, plan in enumerate(self.plan):
            if not plan:
                continue
            self.model.zero_grad(set_to_none=False)
            sl = slice(r * b, (r + 1) * b)
            (self.loss_fn(self.model(inputs[sl]), targets[sl]).sum() / self.batch_size).backward()
            self.flat.read_grads(self.row)
            for u, L, c in plan:
                if L:
                    self.acc[:L].add_(self.row[u * q:u * q + L], alpha=c)
        out.copy_(self.acc)


@dataclass
class TrainResult:
    """The master's record of a run: per-iteration wall time (evaluation excluded), accuracy, responders.

    ``failures`` names the ranks that failed after the master's last iteration (their process ended or raised
    after its last message, or they did not say goodbye within the grace after the stop message: frozen in their
    compute, stopped, or gone) and how: the run had finished, so :func:`train` returns this result (and warns)
    instead of raising. A worker that failed during the run and was skipped as a straggler is named here too
    (it never says goodbye)."""

    scheme: str
    times: list[float] = field(default_factory=list)
    accuracy: list[float] = field(default_factory=list)
    infos: list[AggregateInfo] = field(default_factory=list)
    skipped: int = 0
    failures: dict[int, str] = field(default_factory=dict)

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
          corrupt: Callable[[int, int, Any], None] | None = None, name: str | None = None,
          encoding: str = "auto", grace: float = GRACE) -> TrainResult | None:
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
    ``corrupt(worker, t, message)`` may alter a worker's message (fault tests); ``encoding`` is the workers'
    :class:`CodedGradient` encoding (``"auto"``, ``"loss"`` or ``"partitions"``). Returns a :class:`TrainResult`
    on the master and None on the workers.

    At set-up every rank checks that all ranks hold the same code and the same number of trainable parameter
    entries (an error on every rank naming the ranks that differ), and takes rank 0's ``delay`` model (so a model
    drawn without ``rng`` picks the same late workers on every rank, as in :func:`gradcodes.mpi.train`).
    Parameters with ``requires_grad=False`` are not sent and never get a ``.grad``. Once the master has finished
    every iteration the run's result is returned: a rank that fails afterwards is recorded in
    :attr:`TrainResult.failures` and warned about (:class:`RuntimeWarning`). Every call joins its threads and
    releases its buffers before it returns (on a clean finish).

    ``grace`` (seconds, default 5; the same on every rank) bounds the end of the job: after its last iteration
    the master sends every worker the stop message and waits for the goodbyes at most ``2 * grace`` (a
    CodedReduce tree of height ``h``: ``(h + 1) * grace``), records the workers that did not say goodbye in
    :attr:`TrainResult.failures` (rank and how) and returns. A worker whose compute is stuck in user code (an
    endless loop, a sleep) when the stop message comes ends its own process ``grace`` seconds later (a tree parent
    of height ``h``: ``(h + 1) * grace``) with exit status 0, so ``torchrun`` returns 0 for a finished run. A
    stopped process (``SIGSTOP``) cannot end itself: the master still returns and names it, and the launcher
    waits for it (``docs/runtime.md``, "When a rank fails").
    """
    import torch.distributed as dist

    rank = dist.get_rank()
    box = [delay]
    dist.broadcast_object_list(box, src=0)  # rank 0's delay model everywhere, so rng=None draws agree
    delay = box[0]
    if rank == 0:
        master = Master(code, list(model.parameters()), policy=policy, timeout=timeout, grace=grace)
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
        try:
            master.stop()
            res.failures = dict(master.failures)
        except Exception as exc:        # the run has finished: report, never lose the result
            res.failures[-1] = f"stopping the workers failed: {exc!r}"
        if res.failures:
            warnings.warn("gradcodes.torch.train: the run finished, then ranks failed: "
                          + "; ".join(f"rank {r}: {what}" for r, what in sorted(res.failures.items())),
                          RuntimeWarning, stacklevel=2)
        return res
    w = rank - 1
    sampler = CodedSampler(len(X), code, w, batch_size=batch_size, seed=seed)
    grad = CodedGradient(model, loss_fn, code, w, sampler, encoding=encoding)
    worker = Worker(code, w, list(model.parameters()), delay=delay or NoDelay(), policy=policy,
                    timeout=timeout, grace=grace)
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
