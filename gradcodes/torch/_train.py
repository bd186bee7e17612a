"""Coded training loops on ``torch.distributed``: :func:`train` (master--worker with any code and wait policy, or a
CodedReduce tree) and
:func:`ddp_train` (the DistributedDataParallel all-reduce baseline), with the worker's message computation
:class:`CodedGradient` (loss weighting for ``m = 1``, one backward pass per partition and ``encode_worker`` for
``m > 1``)."""

from __future__ import annotations

import copy
import os
import time
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from .._base.errors import GradcodesValueError
from .._runtime.delays import Delay, NoDelay
from ._amp import Scaling, autocast_context, check_precision
from ._checkpoint import Checkpointer
from ._data import CodedSampler, LoaderFeed
from ._loss import coded_loss, loss_weights
from ._runtime import GRACE, AggregateInfo, FlatParams, Master, Worker

__all__ = ["CodedGradient", "train", "ddp_train", "TrainResult", "Callback"]


def _batch_norms(model: Any) -> list[str]:
    """Names of the modules of ``model`` that normalise over the batch (BatchNorm of any dimension, SyncBatchNorm)."""
    from torch.nn.modules.batchnorm import _BatchNorm

    return [name or type(mod).__name__ for name, mod in model.named_modules() if isinstance(mod, _BatchNorm)]


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

    A model with BatchNorm layers always takes ``"partitions"`` (``"loss"`` is refused): the batch statistics of
    one forward pass over all of a worker's samples would depend on which partitions the worker holds, so the
    partition gradients of different workers would not be the same functions and the decode would not be the
    gradient of any loss. One forward pass per partition normalises each partition over its own
    ``batch_size / k`` samples (ghost batch normalisation, the ghost batches being the partitions), the same on
    every worker (``docs/torch.md``, "Buffers").

    ``autocast`` (``torch.float16`` or ``torch.bfloat16``) runs every forward pass and ``loss_fn`` under
    ``torch.autocast``; the backward passes and the message stay in the parameters' dtype.

    Calling it, ``coded(inputs, targets, out)``, writes the message for the worker's batch ``inputs``/``targets``
    (from the sampler, partition by partition) into ``out``, a vector of the parameters' dtype and length
    ``ceil(size / m)``.

    Parameters
    ----------
    model : torch.nn.Module
        The model (its trainable parameters: :class:`~gradcodes.torch.FlatParams`); its ``.grad`` are overwritten.
    loss_fn : callable
        ``loss_fn(outputs, targets)``: per-sample losses (``reduction="none"``).
    code : LinearCode
        The gradient code, the same on every rank.
    worker : int
        This worker, ``0 <= worker < code.n``.
    sampler : CodedSampler
        This worker's sampler (its batch size and the partitions of its samples).
    encoding : {"auto", "loss", "partitions"}, default "auto"
        How the message is computed, as above.
    autocast : torch.dtype, optional
        ``torch.float16`` or ``torch.bfloat16``: the forward passes under ``torch.autocast``.

    Raises
    ------
    GradcodesValueError
        If ``encoding`` is not one of the three, or is ``"loss"`` for a code with ``m > 1`` or a model with
        BatchNorm layers.

    Examples
    --------
    >>> import torch, gradcodes as gc
    >>> from gradcodes.torch import CodedGradient, CodedSampler
    >>> code = gc.cyclic_repetition(4, 1, rng=0)
    >>> model = torch.nn.Linear(3, 1, dtype=torch.float64)
    >>> loss_fn = lambda out, target: ((out - target) ** 2).sum(dim=1)      # per-sample losses
    >>> gen = torch.Generator().manual_seed(0)
    >>> X = torch.randn(8, 3, dtype=torch.float64, generator=gen)
    >>> y = torch.randn(8, 1, dtype=torch.float64, generator=gen)
    >>> sampler = CodedSampler(8, code, worker=1, batch_size=8, shuffle=False)
    >>> idx = next(iter(sampler))                                 # worker 1's samples: partitions 1 and 2
    >>> coded = CodedGradient(model, loss_fn, code, 1, sampler)
    >>> out = torch.empty(coded.flat.size, dtype=torch.float64)
    >>> coded(X[idx], y[idx], out)
    >>> by_parts = CodedGradient(model, loss_fn, code, 1, sampler, encoding="partitions")
    >>> out2 = torch.empty_like(out)
    >>> by_parts(X[idx], y[idx], out2)
    >>> coded.encoding, by_parts.encoding, torch.allclose(out, out2)        # float64: the two agree
    ('loss', 'partitions', True)
    """

    def __init__(self, model: Any, loss_fn: Callable[[Any, Any], Any], code: Any, worker: int,
                 sampler: CodedSampler, *, encoding: str = "auto", autocast: Any = None) -> None:
        import numpy as np
        import torch

        self.model, self.loss_fn, self.code, self.worker = model, loss_fn, code, int(worker)
        self.flat = FlatParams(list(model.parameters()))
        self.autocast = autocast_context(autocast, self.flat.device)
        self.batch_size = sampler.batch_size
        self.per_partition = sampler.per_partition
        self.parts = sampler.partitions
        self.m = int(code.m)
        if encoding not in ("auto", "loss", "partitions"):
            raise GradcodesValueError(f"encoding must be 'auto', 'loss' or 'partitions', got {encoding!r}")
        if encoding == "loss" and self.m != 1:
            raise GradcodesValueError(f"encoding='loss' needs m = 1, this code has m = {self.m}")
        norms = _batch_norms(model)
        if encoding == "loss" and norms:
            raise GradcodesValueError(f"encoding='loss' computes one forward pass over all of a worker's samples, and "
                                      f"the BatchNorm layers {norms} would normalise over partitions that differ "
                                      f"between workers: use encoding='auto' or 'partitions'")
        if encoding == "auto":
            B = np.asarray(code.float_B())
            plain = (self.flat.dtype == torch.float64 or bool(np.isin(B, (0.0, 1.0)).all())) and not norms
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

    def __call__(self, inputs: Any, targets: Any, out: Any, *, scale: float = 1.0,
                 micro: tuple[int, int] = (0, 1)) -> None:
        """Write the message for ``inputs``/``targets`` (this worker's batch from the sampler) into ``out``.

        ``scale``: the loss is multiplied by it before the backward pass (a loss scaler's scale, a power of two).
        ``micro=(a, k)``: this batch is the ``a``-th of ``k`` whose messages are summed, each of the mean loss
        divided by ``k`` (gradient accumulation: the message of the mean loss over the ``k`` batches); the
        first zeroes the sum, the last writes it into ``out``, the others leave ``out`` alone.
        """
        a, k = micro
        f = float(scale) / k
        if self.encoding == "loss":
            if a == 0:
                self.model.zero_grad(set_to_none=False)
            with self.autocast():
                losses = self.loss_fn(self.model(inputs), targets)
            loss = coded_loss(losses, self.weights)
            (loss if f == 1.0 else loss * f).backward()
            if a == k - 1:
                self.flat.read_grads(out)
            return
        b, q = self.per_partition, self.q
        if a == 0:
            self.acc.zero_()
        for r, plan in enumerate(self.plan):
            if not plan:
                continue
            self.model.zero_grad(set_to_none=False)
            sl = slice(r * b, (r + 1) * b)
            with self.autocast():
                losses = self.loss_fn(self.model(inputs[sl]), targets[sl])
            loss = losses.sum() / self.batch_size
            (loss if f == 1.0 else loss * f).backward()
            self.flat.read_grads(self.row)
            for u, L, c in plan:
                if L:
                    self.acc[:L].add_(self.row[u * q:u * q + L], alpha=c)
        if a == k - 1:
            out.copy_(self.acc)


@dataclass
class TrainResult:
    """The master's record of a run: per-iteration wall time (evaluation excluded), accuracy, responders.

    ``failures`` names the ranks that failed after the master's last iteration (their process ended or raised
    after its last message, or they did not say goodbye within the grace after the stop message: frozen in their
    compute, stopped, or gone) and how: the run had finished, so :func:`train` returns this result (and warns)
    instead of raising. A worker that failed during the run and was skipped as a straggler is named here too
    (it never says goodbye).

    Attributes
    ----------
    scheme : str
        The run's name: :func:`train`'s ``name`` or the code's name; ``"DDP allreduce"`` for :func:`ddp_train`.
    times : list of float
        Seconds of every step, evaluation excluded.
    accuracy : list of float
        ``evaluate(model)`` after every step (empty without ``evaluate``).
    infos : list of AggregateInfo
        What the master's aggregation reported at every step of this process.
    skipped : int
        Parameter sends the master skipped because the worker had not yet taken its previous parameters.
    failures : dict of int to str
        Ranks that failed after the last iteration, and how (above).
    lr, grad_norm, loss_scale, overflow, start
        As commented in the class body: the learning rate, the gradient norm before clipping, the loss scale
        and the overflowed steps of every step, and the first step this process ran.

    Examples
    --------
    :func:`train` returns one on the master; built by hand here:

    >>> from gradcodes.torch import TrainResult
    >>> res = TrainResult("cyclic_repetition(4, 1)", times=[0.5, 0.25, 0.25], accuracy=[0.6, 0.85, 0.92])
    >>> res.mean_iteration, res.time_to(0.8)
    (0.3333333333333333, 0.75)
    """

    scheme: str
    times: list[float] = field(default_factory=list)
    accuracy: list[float] = field(default_factory=list)
    infos: list[AggregateInfo] = field(default_factory=list)
    skipped: int = 0
    failures: dict[int, str] = field(default_factory=dict)
    #: the learning rate of the optimizer's first parameter group at each step (before the scheduler stepped)
    lr: list[float] = field(default_factory=list)
    #: with ``clip_grad_norm``: the decoded gradient's norm at each step, before clipping
    grad_norm: list[float] = field(default_factory=list)
    #: with ``grad_scaler``: the loss scale each step's messages were computed with
    loss_scale: list[float] = field(default_factory=list)
    #: with ``grad_scaler``: the steps whose decoded gradient was not finite (an overflow: the scaler skipped the
    #: optimizer step and lowered the scale)
    overflow: list[int] = field(default_factory=list)
    #: the first step this process ran: 0, or a resumed run's checkpoint step (``times``, ``accuracy``, ``lr``
    #: ``grad_norm``, ``loss_scale`` and ``overflow`` then hold the earlier steps' records from the checkpoint,
    #: ``infos`` only this process's)
    start: int = 0

    def time_to(self, accuracy: float) -> float:
        """Cumulative seconds until the accuracy first reached ``accuracy`` (inf if never).

        Parameters
        ----------
        accuracy : float
            The target accuracy.

        Returns
        -------
        float
            The sum of ``times`` up to and including the first step whose accuracy is at least ``accuracy``;
            ``inf`` if no step reached it.

        Examples
        --------
        >>> from gradcodes.torch import TrainResult
        >>> res = TrainResult("code", times=[0.5, 0.25, 0.25], accuracy=[0.6, 0.85, 0.92])
        >>> res.time_to(0.8), res.time_to(0.99)
        (0.75, inf)
        """
        total = 0.0
        for t, a in zip(self.times, self.accuracy, strict=True):
            total += t
            if a >= accuracy:
                return total
        return float("inf")

    @property
    def mean_iteration(self) -> float:
        return sum(self.times) / max(len(self.times), 1)


class Callback:
    """Hooks of :func:`train` on the master, for logging, evaluation and early stopping: subclass and override
    either method (an object with either method, under these names, will do).

    Examples
    --------
    Stop once the test accuracy reached 0.9, and log the loss-free facts of every step:

    >>> class EarlyStop(Callback):
    ...     def __init__(self, target):
    ...         self.target = target
    ...     def on_step(self, step, model, info):
    ...         print(step, info.responders)
    ...     def on_step_end(self, step, model, result):
    ...         return bool(result.accuracy) and result.accuracy[-1] >= self.target
    >>> EarlyStop(0.9).on_step_end(3, None, TrainResult("code", accuracy=[0.5, 0.93]))
    True
    """

    def on_step(self, step: int, model: Any, info: AggregateInfo) -> None:
        """After the decode, before clipping and the optimizer step: ``.grad`` holds the decoded gradient of the
        mean loss over the global batch of ``step``; ``info`` says who answered (:class:`AggregateInfo`).

        The default does nothing.

        Parameters
        ----------
        step : int
            The step (global iteration).
        model : torch.nn.Module
            The master's model, its ``.grad`` the decoded gradient.
        info : AggregateInfo
            The aggregation's report: responders, dropped senders, time.

        Examples
        --------
        >>> from gradcodes.torch import AggregateInfo, Callback
        >>> class Log(Callback):
        ...     def on_step(self, step, model, info):
        ...         print(f"step {step}: workers {info.responders}")
        >>> Log().on_step(3, None, AggregateInfo(3, [2, 0, 1]))
        step 3: workers [2, 0, 1]
        """

    def on_step_end(self, step: int, model: Any, result: TrainResult) -> bool | None:
        """After the optimizer step, the scheduler and ``evaluate`` (``result`` holds this step's time, accuracy
        and learning rate). Return True to stop training: the workers are stopped and :func:`train` returns.

        Parameters
        ----------
        step : int
            The step (global iteration) just finished.
        model : torch.nn.Module
            The master's model, after the optimizer step.
        result : TrainResult
            The run's record so far, this step included.

        Returns
        -------
        bool or None
            True to stop training; the default returns None (go on).

        Examples
        --------
        >>> from gradcodes.torch import Callback, TrainResult
        >>> Callback().on_step_end(0, None, TrainResult("code", times=[0.1], accuracy=[0.5])) is None
        True
        """
        return None


def _check_data(X: Any, y: Any) -> tuple[Any, int]:
    """``(dataset or None, number of samples)``: a map-style dataset when ``y`` is None, else tensors."""
    if y is None:
        if not (hasattr(X, "__getitem__") and hasattr(X, "__len__")):
            raise GradcodesValueError("train(code, model, loss_fn, dataset, ...): the dataset must be map-style "
                                      "(len(dataset) and dataset[i] -> (input, target)); or pass the tensors X, y")
        if type(X).__name__ == "Tensor":
            raise GradcodesValueError("train got the inputs X without the targets y: pass both tensors, or a map-"
                                      "style Dataset alone")
        return X, len(X)
    if len(X) != len(y):
        raise GradcodesValueError(f"X has {len(X)} samples and y {len(y)}")
    return None, len(X)


def train(code: Any, model: Any, loss_fn: Callable[[Any, Any], Any], X: Any, y: Any = None, *, batch_size: int,
          iterations: int, optimizer: Callable[[Any], Any], policy: Any = None, delay: Delay | None = None,
          timeout: float = 60.0, seed: int = 0, evaluate: Callable[[Any], float] | None = None,
          on_step: Callable[[int, Any, AggregateInfo], None] | None = None,
          corrupt: Callable[[int, int, Any], None] | None = None, name: str | None = None,
          encoding: str = "auto", grace: float = GRACE, loader_kwargs: dict[str, Any] | None = None,
          scheduler: Callable[[Any], Any] | None = None, scheduler_step: str = "step",
          clip_grad_norm: float | None = None, callbacks: Sequence[Any] = (),
          checkpoint: str | os.PathLike[str] | None = None, checkpoint_every: int | None = None,
          autocast: Any = None, grad_scaler: Callable[[], Any] | None = None,
          accumulate_grad_batches: int = 1) -> TrainResult | None:
    """Coded data-parallel training on ``code.n + 1`` ranks (rank 0 master, rank ``i + 1`` worker ``i``).

    Every rank calls it with the same arguments and an identically initialised ``model``. The master steps
    ``optimizer(model.parameters())`` on the decoded gradient of the mean loss over each global batch of
    ``batch_size`` samples (:class:`CodedSampler`, epochs keyed by ``seed``), then the scheduler; each worker
    computes its coded message on its own samples of the batch. When it returns, every rank's model holds the
    master's final parameters and buffers (a worker whose compute was stuck at the end excepted).

    Parameters
    ----------
    code : LinearCode
        The gradient code (the same on every rank). A :class:`~gradcodes.CodedReduceCode` runs as its tree
        (Reisizadeh et al. 2019, Section 3): rank ``r`` sends to rank ``(r - 1) // branching``, every parent
        decodes its first decodable set of children with the inner code (``policy`` applies to it) and adds its
        own message; a parent that cannot decode for ``timeout`` seconds raises
        :class:`gradcodes.mpi.StragglerTimeout` naming its missing children.
    model : torch.nn.Module
        Initialised identically on every rank. Its buffers (BatchNorm running statistics) follow the master's:
        each step the master takes those of the lowest-ranked responder of the decoding set and sends them with the
        parameters (``docs/torch.md``, "Buffers").
    loss_fn : callable
        ``loss_fn(outputs, targets)`` returning per-sample losses (``reduction="none"``).
    X : Tensor or torch.utils.data.Dataset
        The inputs (with ``y``), or a map-style dataset whose ``dataset[i]`` is one sample ``(input, target)``
        (``y`` omitted): each worker then reads only its samples of every global batch through a
        ``torch.utils.data.DataLoader`` (:class:`LoaderFeed`).
    y : Tensor, optional
        The targets, with the tensor ``X``.
    batch_size : int
        Samples per global batch, a multiple of ``code.k``.
    iterations : int
        Optimizer steps (fewer when a callback stops the run).
    optimizer : callable
        ``optimizer(params)`` builds the optimizer on the master, e.g. ``lambda ps: torch.optim.SGD(ps, lr=0.1)``.
    policy, delay, timeout, seed, name, encoding, grace
        The wait policy; the straggler injection (rank 0's is used everywhere); seconds before
        :class:`gradcodes.mpi.StragglerTimeout`; the data order's seed; the result's name; the workers'
        :class:`CodedGradient` encoding (``"auto"``, ``"loss"``, ``"partitions"``); the end-of-job grace (below).
    evaluate : callable, optional
        ``evaluate(model)`` on the master after each step, excluded from the times: the accuracy recorded.
    on_step : callable, optional
        ``on_step(step, model, info)`` on the master after each decode, before clipping and the optimizer step
        (tests compare ``.grad`` there); the same as a :class:`Callback`'s ``on_step``.
    corrupt : callable, optional
        ``corrupt(worker, step, message)`` may alter a worker's message (fault tests).
    loader_kwargs : dict, optional
        With a dataset: passed to every worker's ``DataLoader`` (``num_workers``, ``collate_fn``, ``pin_memory``,
        ``persistent_workers``, ``prefetch_factor``, ...); ``collate_fn`` must return ``(inputs, targets)``.
    scheduler : callable, optional
        ``scheduler(optimizer)`` builds a learning-rate scheduler (``torch.optim.lr_scheduler``) on the master,
        stepped after the optimizer every step, or at the end of every epoch (``scheduler_step="epoch"``: after
        the step that used the epoch's last global batch; an epoch is ``len(data) // batch_size`` batches).
    scheduler_step : {"step", "epoch"}, default "step"
    clip_grad_norm : float, optional
        Clip the decoded gradient to this norm (``torch.nn.utils.clip_grad_norm_``) before the optimizer step;
        the norm before clipping is recorded in :attr:`TrainResult.grad_norm`.
    callbacks : sequence of Callback
        Their ``on_step`` after ``on_step``, their ``on_step_end`` after each step; one returning True stops
        the run.
    checkpoint : str or os.PathLike, optional
        A checkpoint file on the master (its directory must exist). The master writes it every
        ``checkpoint_every`` steps and at the end of the run, atomically (a temporary file in the same directory,
        ``fsync``, ``os.replace``): the model's parameters and buffers, the optimizer's and scheduler's state,
        the next step (the data position: the sampler's epoch and batch follow from it and ``seed``), the
        master's torch, numpy and Python random states, the delay model's entropy and the steps' records. When
        the file exists, the run resumes from it: the master loads it and the workers start at its step (their
        models come with every parameter message), so a job killed at any step and restarted with the same
        command continues the same trajectory. A file of another run (a different code digest, parameter count
        or dtype, buffers, batch size, seed, dataset size or scheduler), or one that is corrupt, truncated or
        too large, raises :class:`~gradcodes.GradcodesValueError` on every rank naming the file and what
        differs (``docs/torch.md``, "Checkpoint and resume").
    checkpoint_every : int, optional
        Steps between checkpoints (default: the steps of one epoch, ``len(data) // batch_size //
        accumulate_grad_batches``, at least 1).
    autocast : torch.dtype, optional
        ``torch.float16`` or ``torch.bfloat16``: every worker runs its forward passes and ``loss_fn`` under
        ``torch.autocast(device_type, dtype)`` (the parameters, the backward passes' gradients and the messages
        keep the parameters' dtype).
    grad_scaler : callable, optional
        ``grad_scaler()`` builds a ``torch.amp.GradScaler`` on the master, e.g. ``lambda:
        torch.amp.GradScaler("cpu")`` (float32 or float64 parameters). The master owns it: its scale travels to
        the workers with every parameter message (exactly: scales are powers of two), the workers backpropagate
        the scaled loss, and the master decodes the scaled gradient, then calls ``scaler.unscale_`` (so
        ``on_step`` and the callbacks see the unscaled gradient), clips, and calls ``scaler.step`` and
        ``scaler.update``, as single-process mixed precision does. A NaN/inf message is then an overflow signal,
        not a faulty worker: it is accepted as an answer, the decode is not finite, and the scaler skips the
        step and lowers the scale (:attr:`TrainResult.overflow`, :attr:`TrainResult.loss_scale`). An overflow at
        a scale of 1 or below (no scale makes the gradient finite: a faulty worker, or a diverged model) raises
        :class:`~gradcodes.GradcodesRuntimeError` on the master naming the ranks whose messages were not finite
        (``docs/torch.md``, "Mixed precision"). Without a scaler a NaN/inf message is a straggler's.
    accumulate_grad_batches : int, default 1
        Global batches per optimizer step (gradient accumulation, as ``DistributedDataParallel.no_sync`` lets a
        data-parallel job do): each worker sums its messages of ``k`` consecutive global batches locally and
        sends once per step, so the decoded gradient is that of the mean loss over the ``k * batch_size``
        samples, with one message per worker and step. Step ``t`` uses global batches ``t k`` to ``t k + k - 1``
        of the batch sequence (epoch after epoch, a step may span two epochs); ``iterations`` counts optimizer
        steps; checkpoints record the step, so the data position is ``k`` batches per step (a checkpoint of
        another ``k`` is refused).

    Returns
    -------
    TrainResult or None
        The master's record; None on the workers.

    Raises
    ------
    GradcodesValueError
        On every rank before any message: ``X`` is neither a pair of tensors with ``y`` nor a map-style dataset,
        ``X`` and ``y`` differ in length, ``batch_size`` is not a multiple of ``code.k`` (or exceeds the data),
        ``scheduler_step`` is not ``"step"`` or ``"epoch"``, ``checkpoint_every`` or ``accumulate_grad_batches``
        is not a positive int, ``checkpoint_every`` is given without ``checkpoint``, ``autocast`` is not
        float16 or bfloat16, ``grad_scaler`` goes with float16/bfloat16 parameters or an ``adversarial_gc`` code,
        or rank 0 refused its ``checkpoint`` file (another run's, or corrupt).
    GradcodesTypeError
        If ``grad_scaler`` is not callable, or the parameters have several dtypes.
    gradcodes.mpi.StragglerTimeout
        When the master (or a tree parent) waited ``timeout`` seconds without a decodable set of messages.
    GradcodesRuntimeError
        On the master, with ``grad_scaler``: an overflow at a scale of 1 or below (above).

    Notes
    -----
    At set-up every rank checks that all ranks hold the same code and the same number of trainable parameter
    entries (an error on every rank naming the ranks that differ), and takes rank 0's ``delay`` model (so a model
    drawn without ``rng`` picks the same late workers on every rank, as in :func:`gradcodes.mpi.train`).
    Parameters with ``requires_grad=False`` are not sent and never get a ``.grad``. Once the master has finished
    every iteration the run's result is returned: a rank that fails afterwards is recorded in
    :attr:`TrainResult.failures` and warned about (:class:`RuntimeWarning`). Every call joins its threads and
    releases its buffers before it returns (on a clean finish).

    ``grace`` (seconds, default 5; the same on every rank) bounds the end of the job: after its last iteration
    the master sends every worker the stop message (with the final parameters and buffers) and waits for the
    goodbyes at most ``2 * grace`` (a CodedReduce tree of height ``h``: ``(h + 1) * grace``), records the workers
    that did not say goodbye in :attr:`TrainResult.failures` (rank and how) and returns. A worker whose compute is
    stuck in user code (an endless loop, a sleep) when the stop message comes ends its own process ``grace``
    seconds later (a tree parent of height ``h``: ``(h + 1) * grace``) with exit status 0, so ``torchrun`` returns
    0 for a finished run. A stopped process (``SIGSTOP``) cannot end itself: the master still returns and names
    it, and the launcher waits for it (``docs/runtime.md``, "When a rank fails").

    Examples
    --------
    Under ``torchrun --standalone --nproc-per-node 4`` (3 workers), a map-style dataset read by two loader
    processes per worker, a step scheduler and clipping::

        result = train(gc.cyclic_repetition(3, 1, rng=0), model, nn.CrossEntropyLoss(reduction="none"), dataset,
                       batch_size=120, iterations=100, optimizer=lambda ps: torch.optim.SGD(ps, lr=0.1),
                       loader_kwargs={"num_workers": 2}, clip_grad_norm=1.0,
                       scheduler=lambda opt: torch.optim.lr_scheduler.StepLR(opt, 30, gamma=0.5))
    """
    import torch
    import torch.distributed as dist

    dataset, size = _check_data(X, y)
    if scheduler_step not in ("step", "epoch"):
        raise GradcodesValueError(f"scheduler_step must be 'step' or 'epoch', got {scheduler_step!r}")
    if checkpoint_every is not None and (isinstance(checkpoint_every, bool)
                                         or not isinstance(checkpoint_every, int) or checkpoint_every < 1):
        raise GradcodesValueError(f"checkpoint_every must be a positive int, got {checkpoint_every!r}")
    if isinstance(accumulate_grad_batches, bool) or not isinstance(accumulate_grad_batches, int) \
            or accumulate_grad_batches < 1:
        raise GradcodesValueError(f"accumulate_grad_batches must be a positive int, got {accumulate_grad_batches!r}")
    acc = accumulate_grad_batches
    if checkpoint_every is not None and checkpoint is None:
        raise GradcodesValueError("checkpoint_every needs checkpoint= (the file the master saves to)")
    flat = FlatParams(list(model.parameters()))
    check_precision(autocast, grad_scaler, flat.dtype, code)
    rank = dist.get_rank()
    buffers = list(model.buffers())
    nonfinite = "straggler" if grad_scaler is None else "overflow"
    first, stopped, problem = 0, False, None
    if rank == 0:
        per_epoch = len(CodedSampler(size, code, None, batch_size=batch_size, seed=seed))   # checks batch_size too
        opt = optimizer(model.parameters())
        sched = scheduler(opt) if scheduler is not None else None
        amp = Scaling(grad_scaler(), opt, flat.device) if grad_scaler is not None else None
        res = TrainResult(name or str(getattr(code, "name", "code")))
        ckpt = None
        if checkpoint is not None:
            delay = copy.copy(delay)        # a resumed run sets the copy's entropy, not the caller's model's
            ckpt = Checkpointer(checkpoint, code=code, model=model, batch_size=batch_size, seed=seed,
                                dataset_size=size, iterations=iterations, scheduler_step=scheduler_step,
                                accumulate_grad_batches=acc)
            try:
                got = ckpt.load(opt, sched, res, delay, amp.scaler if amp is not None else None)
            except GradcodesValueError as exc:
                problem = str(exc)
            else:
                if got is not None:
                    first, stopped = got
                    res.start = first
    # rank 0's delay model everywhere (so rng=None draws agree; a resumed run's has the checkpoint's entropy), the
    # step to resume from and a refused checkpoint's reason (every rank raises it)
    box: list[Any] = [delay, first, problem]
    dist.broadcast_object_list(box, src=0)
    delay, first, problem = box
    if problem is not None:
        raise GradcodesValueError(problem if rank == 0 else f"rank 0 refused its checkpoint: {problem}")
    if rank == 0:
        master = Master(code, list(model.parameters()), policy=policy, timeout=timeout, grace=grace,
                        buffers=buffers, nonfinite=nonfinite)
        if amp is not None:
            amp.start()
        trainable = [p for p in model.parameters() if p.requires_grad]
        hooks = [on_step] if on_step is not None else []
        hooks += [cb.on_step for cb in callbacks if hasattr(cb, "on_step")]
        ends = [cb.on_step_end for cb in callbacks if hasattr(cb, "on_step_end")]
        every = checkpoint_every or max(1, per_epoch // acc)
        try:
            for t in range(first, first if stopped else iterations):
                start = time.monotonic()
                if amp is not None:
                    master.scale = amp.scale()
                master.broadcast(t)
                info = master.aggregate(t)
                if amp is not None:
                    res.loss_scale.append(master.scale)
                    if info.overflow:
                        res.overflow.append(t)
                    amp.unscale(t, master.scale, info)
                for hook in hooks:
                    hook(t, model, info)
                if clip_grad_norm is not None:
                    res.grad_norm.append(float(torch.nn.utils.clip_grad_norm_(trainable, clip_grad_norm)))
                res.lr.append(float(opt.param_groups[0]["lr"]))
                if amp is not None:
                    amp.step()
                else:
                    opt.step()
                # "epoch": after the step that used an epoch's last batch (batches t acc .. (t + 1) acc - 1)
                if sched is not None and (scheduler_step == "step"
                                          or (t + 1) * acc // per_epoch > t * acc // per_epoch):
                    sched.step()
                res.times.append(time.monotonic() - start)
                res.infos.append(info)
                if evaluate is not None:
                    res.accuracy.append(float(evaluate(model)))
                stopped = any([bool(end(t, model, res)) for end in ends])     # every callback sees every step
                if ckpt is not None and (stopped or (t + 1) % every == 0 or t + 1 == iterations):
                    ckpt.save(t + 1, opt, sched, res, delay, stopped, amp.scaler if amp is not None else None)
                if stopped:
                    break
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
    sampler = CodedSampler(size, code, w, batch_size=batch_size, seed=seed)
    grad = CodedGradient(model, loss_fn, code, w, sampler, encoding=encoding, autocast=autocast)
    worker = Worker(code, w, list(model.parameters()), delay=delay or NoDelay(), policy=policy,
                    timeout=timeout, grace=grace, buffers=buffers, nonfinite=nonfinite)
    per_epoch = len(sampler)
    feed = None
    if dataset is not None:
        feed = LoaderFeed(dataset, sampler, loader_kwargs, device=grad.flat.device)
        feed.start(first * acc)         # loader processes fork before the communication threads start

    def compute(t: int, out: Any) -> None:
        for a in range(acc):            # global batches t acc .. t acc + acc - 1, summed into one message
            b = t * acc + a
            if feed is not None:
                inputs, targets = feed.get(b)
            else:
                sampler.set_epoch(b // per_epoch)
                idx = sampler.global_batch(b % per_epoch)[sampler._offsets]
                inputs, targets = X[idx], y[idx]
            grad(inputs, targets, out, scale=worker.scale, micro=(a, acc))
        if corrupt is not None:
            corrupt(w, t, out)

    worker.run(compute)
    return None


def ddp_train(model: Any, loss_fn: Callable[[Any, Any], Any], X: Any, y: Any, *, workers: int, batch_size: int,
              iterations: int, optimizer: Callable[[Any], Any], group: Any, delay: Delay | None = None,
              seed: int = 0, evaluate: Callable[[Any], float] | None = None) -> TrainResult | None:
    """The baseline: ``torch.nn.parallel.DistributedDataParallel`` on ranks ``1..workers`` (``group``), each on
    ``batch_size / workers`` samples of the same global batches; the all-reduce waits for every rank. Rank 1
    returns the :class:`TrainResult`, the others None (rank 0 does not take part).

    Every rank calls it with the same arguments (ranks 0 and above ``workers`` return at once); the global batches
    are those of :func:`train` with the same ``seed`` and ``batch_size`` (:class:`CodedSampler` of
    :func:`gradcodes.uncoded`), so the two runs see the same data.

    Parameters
    ----------
    model : torch.nn.Module
        Initialised identically on every rank (wrapped in ``DistributedDataParallel``).
    loss_fn : callable
        ``loss_fn(outputs, targets)`` returning per-sample losses (``reduction="none"``); their mean is
        backpropagated.
    X, y : Tensor
        The inputs and targets.
    workers : int
        The data-parallel ranks ``1..workers``.
    batch_size : int
        Samples per global batch, a multiple of ``workers``.
    iterations : int
        Optimizer steps.
    optimizer : callable
        ``optimizer(params)`` builds each rank's optimizer.
    group : torch.distributed.ProcessGroup
        The process group of ranks ``1..workers`` (``torch.distributed.new_group(range(1, workers + 1))``,
        created on every rank).
    delay : Delay, optional
        Straggler injection: worker ``rank - 1`` sleeps until its delay has passed before its backward pass.
    seed : int, default 0
        The data order's seed.
    evaluate : callable, optional
        ``evaluate(model)`` on rank 1 after each step, excluded from the times (the ranks then wait for each
        other): the accuracy recorded.

    Returns
    -------
    TrainResult or None
        Rank 1's record (scheme ``"DDP allreduce"``); None on every other rank.

    Examples
    --------
    Rank ``r`` (``1 <= r <= workers``) computes on its ``batch_size / workers`` samples of each global batch, the
    share of worker ``r - 1`` of :func:`gradcodes.uncoded`:

    >>> import gradcodes as gc
    >>> from gradcodes.torch import CodedSampler
    >>> sampler = CodedSampler(60, gc.uncoded(3), 0, batch_size=12)     # rank 1 of 3 data-parallel ranks
    >>> sampler.per_partition, sampler.partitions.tolist()
    (4, [0])

    Every rank of ``torchrun --standalone --nproc-per-node 4`` (rank 0 takes no part and returns None; ranks
    1..3 train), with ``model``, ``loss_fn``, ``X`` and ``y`` as for :func:`train`::

        group = dist.new_group([1, 2, 3])           # collective: every rank creates it
        result = ddp_train(model, loss_fn, X, y, workers=3, batch_size=12, iterations=5,
                           optimizer=lambda ps: torch.optim.SGD(ps, lr=0.1), group=group)
        if dist.get_rank() == 1:
            print(result.scheme, len(result.times))
    """
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
        if evaluate is not None:
            if rank == 1:
                res.accuracy.append(float(evaluate(model)))
            # every rank starts the next step together: rank 1's evaluation would otherwise overlap a late rank's
            # delay and hide up to its duration from rank 1's next recorded step
            dist.barrier(group=group)
    return res if rank == 1 else None
