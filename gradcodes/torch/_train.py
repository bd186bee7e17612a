"""Coded training loops on ``torch.distributed``: :func:`train` (master--worker with any code and wait policy, or a
CodedReduce tree; the worker's message is :class:`CodedGradient`'s) and :func:`ddp_train` (the
DistributedDataParallel all-reduce baseline)."""

from __future__ import annotations

import copy
import os
import time
import warnings
from collections.abc import Callable, Sequence
from typing import Any

from .._base.errors import GradcodesValueError
from .._runtime.delays import Delay, NoDelay
from .._runtime.setup import GRACE
from ._amp import Scaling, check_precision
from ._checkpoint import Checkpointer
from ._coded import CodedGradient
from ._data import CodedSampler, LoaderFeed
from ._master import AggregateInfo, Master
from ._params import FlatParams
from ._result import TrainResult
from ._worker import Worker

__all__ = ["train", "ddp_train"]


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
