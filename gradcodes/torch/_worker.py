"""A worker (rank ``i + 1``) of master--worker and CodedReduce-tree aggregation over ``torch.distributed``
point-to-point messages (Gloo on CPU): receive the parameters, compute the coded message, send it (a CodedReduce
parent first adds the inner-code decode of its children's messages). The protocol, the message format and the
semantics of stale, NaN/inf and late messages are those of its master, ``gradcodes.torch._master``: two parameter
slots alternate (the next parameters land while the worker computes on the current ones, so newer parameters can
abandon an injected delay), each waited on by a receive thread that reports on one queue, and a watchdog thread
receives the master's control stop message.
"""

from __future__ import annotations

import math
import queue
import time
from collections.abc import Callable, Sequence
from typing import Any

from .._base.errors import GradcodesValueError
from .._base.log import get_logger
from .._runtime.delays import Delay, NoDelay
from .._runtime.layout import write_tail
from .._runtime.setup import GRACE, check_grace, height
from ._children import (
    BYE,
    DATA,
    GRAD_TAG,
    STOP,
    Children,
    Receiver,
    as_np_dtype,
    body,
    buffer,
    check_key,
    scale_word,
    trailer,
)
from ._links import PARAM_TAG, _Watchdog
from ._params import FlatParams, ModelBuffers, pin, wire_device
from ._setup import _check_tree_dtype, _combined, _dist, _layout, check_same, drain_deadline

__all__ = ["Worker"]

_log = get_logger("torch")


class Worker:
    """Worker ``worker`` (rank ``worker + 1``): receive parameters, compute the coded message, send it (a
    CodedReduce parent first adds the inner-code decode of its children's messages).

    Parameters
    ----------
    code : LinearCode
    worker : int
        This worker, ``0 <= worker < code.n``.
    params : sequence of tensors
        The model replica's parameters (overwritten with the master's each iteration).
    delay : Delay, optional
        Straggler injection (:mod:`gradcodes.mpi`'s models): the worker sleeps until ``delay`` seconds after
        the start of its iteration; newer parameters arriving meanwhile abandon the iteration. A hung worker
        (infinite delay) keeps draining its children's messages and still obeys the stop message.
    policy : str or WaitPolicy, optional
        A tree parent's wait for its children (default ``"earliest"`` decodable set of the inner code).
    timeout : float, default 60
        A tree parent that has not decoded its children for this many seconds raises
        :class:`gradcodes.mpi.StragglerTimeout` naming the missing ranks.
    grace : float, default ``GRACE`` (5 s)
        The master's (the same on every rank): when :meth:`run` has not returned ``grace`` seconds per tree level
        below this worker, plus one, after the master's stop message came on the control channel (a leaf:
        ``grace``), the worker's compute is stuck and the process ends itself with exit status 0
        (``_Watchdog``; status 1 when the link to the master failed before any stop message).
    buffers : sequence of tensors, optional
        The model's buffers (``model.buffers()``): overwritten with the master's with every parameters, sent with
        every message as ``compute`` left them (the master keeps the lowest-ranked responder's).
    nonfinite : {"straggler", "overflow"}, default "straggler"
        The master's (the same on every rank): what a tree parent makes of a child's NaN/inf message.

    After :meth:`run` the model holds the master's final parameters and buffers (they come with the stop
    message), unless the worker's compute was stuck when the run ended.

    Examples
    --------
    Worker ``i`` runs on rank ``i + 1`` and computes on the samples of the partitions it stores
    (:class:`CodedSampler`):

    >>> import gradcodes as gc
    >>> from gradcodes.torch import CodedSampler
    >>> code = gc.cyclic_repetition(3, 1, rng=0)
    >>> CodedSampler(60, code, worker=2, batch_size=12).partitions.tolist()      # rank 3's partitions
    [0, 2]

    Ranks 1..3 of ``torchrun --nproc-per-node 4`` (rank 0 runs :class:`Master`), with a
    :class:`CodedGradient` that writes the message of the worker's batch of iteration ``t``::

        worker = Worker(code, rank - 1, list(model.parameters()))
        sampler = CodedSampler(len(X), code, rank - 1, batch_size=12)
        coded = CodedGradient(model, loss_fn, code, rank - 1, sampler)

        def compute(t, message):
            sampler.set_epoch(t // len(sampler))
            idx = next(sampler.batches(t % len(sampler)))
            coded(X[idx], y[idx], message)

        worker.run(compute)
    """

    def __init__(self, code: Any, worker: int, params: Sequence[Any], *, delay: Delay | None = None,
                 poll: float = 2e-4, policy: Any = None, timeout: float = 60.0, grace: float = GRACE,
                 buffers: Sequence[Any] = (), nonfinite: str = "straggler") -> None:

        from .._simulate._policies import as_policy

        self.dist = _dist()
        self.flat = FlatParams(params)
        dev = wire_device(self.flat.device, self.flat.stage, self.dist.get_backend())      # the messages' device
        pinned = pin(self.flat.device) and dev.type == "cpu"
        self.bufs = ModelBuffers(buffers)
        check_same(code, self.dist, self.flat.size, dev, self.bufs.nbytes)
        self.layout = _layout(code, self.dist)
        _check_tree_dtype(self.layout, self.flat.dtype)
        self.code, self.worker = code, int(worker)
        if not 0 <= self.worker < self.layout.workers:
            raise GradcodesValueError(f"worker must be in [0, {self.layout.workers - 1}], got {worker}")
        self.rank = self.worker + 1
        self.parent = self.layout.parent(self.rank)
        as_np_dtype(self.flat.dtype)                      # a float dtype
        self.q = -(-self.flat.size // int(code.m))
        nbytes = self.bufs.nbytes
        #: two parameter slots: header words, then the parameters (``params_in``), then the buffers (``bufs_in``)
        self.inbox = buffer(2, self.flat.size, self.flat.dtype, dev, nbytes, pinned)
        self.params_in = body(self.inbox, self.flat.size, self.flat.dtype)
        self.bufs_in = trailer(self.inbox, self.flat.size, self.flat.dtype, nbytes)
        #: entries after the payload: a tree parent's flags of the ranks below it whose messages are in its sum
        #: (the tree message format, docs/runtime.md); 0 for a leaf and for flat codes
        self.tail = self.layout.tail(self.rank)
        self.outbox = buffer(None, self.q + self.tail, self.flat.dtype, dev, nbytes, pinned)
        self._body = body(self.outbox, self.q + self.tail, self.flat.dtype)
        self.bufs_out = trailer(self.outbox, self.q + self.tail, self.flat.dtype, nbytes)
        self.delay = delay or NoDelay()
        self.poll = float(poll)
        self.timeout = float(timeout)
        self.grace = check_grace(grace)
        self.ctrl = buffer(None, 0, self.flat.dtype, dev)      # the control stop message (header words only)
        self.load_fraction = float(code.loads[self.worker]) / float(code.k)
        self.iterations = 0
        #: the loss scale of the parameters being computed on (from the header of the master's message)
        self.scale = 1.0
        self._arrived: queue.Queue[int] = queue.Queue()
        kids = self.layout.children(self.rank)
        self.children: Children | None = None
        if kids:
            inner = _combined(code, self.layout)
            self.children = Children(self.dist, inner, kids, self.q, self.flat.dtype, dev, self._arrived, 2,
                                     as_policy(policy, inner), extra=self.layout.tail(kids[0]), nbytes=nbytes,
                                     pinned=pinned, nonfinite=nonfinite)

    @property
    def message(self) -> Any:
        """The send buffer's message part (length ``ceil(P/m)``): ``compute`` writes the message here."""
        return self._body[:self.q]

    def _next(self, threads: Sequence[Receiver], t: int) -> int:
        """The next parameter slot to arrive (children's messages meanwhile are kept or dropped)."""
        while True:
            key = check_key(self._arrived.get(), threads)
            if key < 2:
                return key
            assert self.children is not None
            self.children.note(key, t)

    def run(self, compute: Callable[[int, Any], None]) -> int:
        """Serve until the master's stop message; ``compute(iteration, message)`` fills the message in place
        (called after the parameters were written into the model). Returns the number of messages sent.

        Two receive slots alternate: while the worker computes on one, the next parameters land in the other.
        A watchdog thread receives the master's control stop message: if this call has not returned a grace
        after it (``compute`` is stuck), the watchdog ends the process (``_Watchdog``); an error raised here
        after the stop message came (a link failed as the job wound down) is reported, not raised: the run has
        finished.

        Parameters
        ----------
        compute : callable
            ``compute(iteration, message)``: write this worker's coded message of ``iteration`` into the tensor
            ``message`` (length ``ceil(size / m)``, the parameters' dtype), e.g. with :class:`CodedGradient`.

        Returns
        -------
        int
            The number of messages sent.

        Examples
        --------
        ``compute`` writes a message of ``ceil(size / m)`` entries, ``size`` the trainable parameters' count:

        >>> import torch, gradcodes as gc
        >>> from gradcodes.torch import FlatParams
        >>> code = gc.cyclic_repetition(3, 1, rng=0)
        >>> model = torch.nn.Linear(3, 1, dtype=torch.float64)
        >>> -(-FlatParams(list(model.parameters())).size // code.m)      # the length of compute's message
        4

        Ranks 1..3 of ``torchrun --standalone --nproc-per-node 4`` (rank 0 runs :class:`Master`), ``code`` as in
        :class:`Worker`'s example, the message computed by hand as the gradient of the worker's weighted loss
        (:func:`loss_weights`, :func:`coded_loss`; :class:`CodedGradient` does this, and more)::

            worker = Worker(code, rank - 1, list(model.parameters()))
            flat = FlatParams(list(model.parameters()))
            sampler = CodedSampler(len(X), code, rank - 1, batch_size=12, shuffle=False)
            weights = loss_weights(code, rank - 1, sampler.partition_ids, 12, dtype=torch.float64)

            def compute(t, message):                # the model holds iteration t's parameters
                idx = next(sampler.batches(t % len(sampler)))
                model.zero_grad()
                coded_loss(loss_fn(model(X[idx]), y[idx]), weights).backward()
                flat.read_grads(message)            # the coded gradient: this worker's message

            sent = worker.run(compute)              # returns after the master's stop()
        """
        watchdog = _Watchdog(self.dist, self.ctrl, self.rank, self.grace * (height(self.layout, self.rank) + 1))
        watchdog.start()
        self._compute_failed = False
        try:
            count = self._serve(compute)
        except Exception as exc:
            if self._compute_failed:                  # the user's compute raised: decided at once
                finished = watchdog.stopped.is_set()
            else:
                # a worker resumed after the run (SIGCONT) finds its link closed while the stop message already
                # waits in its socket: give the watchdog the moment it needs to read it before deciding
                finished = watchdog.stopped.wait(min(self.grace, 2.0))
            if not finished:
                watchdog.done.set()
                raise
            _log.warning("gradcodes.torch: rank %d: after the stop message (%s): %r", self.rank, watchdog.why, exc)
            count = self.iterations
        watchdog.done.set()
        watchdog.join(self.grace)
        return count

    def _take(self, slot: int) -> None:
        """Write the parameters and buffers of parameter slot ``slot`` into the model (and take its loss scale)."""
        self.scale = float(scale_word(self.inbox[slot]))
        self.flat.write(self.params_in[slot])
        if self.bufs.nbytes:
            self.bufs.unpack(self.bufs_in[slot])

    def _serve(self, compute: Callable[[int, Any], None]) -> int:
        slots = [Receiver(self.dist, self.inbox[j], 0, PARAM_TAG, j, self._arrived, STOP) for j in range(2)]
        slots[1].free.clear()           # slot 0 receives first; slot 1 once slot 0 holds a message
        kids = self.children
        threads: list[Receiver] = [*slots, *(kids.recv if kids is not None else [])]
        for th in slots:
            th.start()
        if kids is not None:
            kids.start()
        count = 0
        t = -1
        since: float | None = None       # a tree parent: when it began waiting for a decode
        cur = self._next(threads, t)
        msg = self._body[:self.q]
        while True:
            if int(self.inbox[cur, 1]) == STOP:      # it carries the master's final parameters and buffers
                self._take(cur)
                break
            t = int(self.inbox[cur, 0])
            nxt = 1 - cur
            slots[nxt].release()
            start = time.monotonic()
            d = self.delay.delay(self.worker, t, workers=self.layout.workers, load_fraction=self.load_fraction)
            if math.isinf(d):            # hung: never answers, but keeps its children's sends flowing
                if kids is not None:
                    kids.forget(t)
                cur = self._next(threads, t)
                continue
            self._take(cur)
            try:
                compute(t, msg)
            except Exception:
                self._compute_failed = True          # the user's code raised: not a link of the finished run
                raise
            if self.bufs.nbytes:
                self.bufs.pack(self.bufs_out)
            self.outbox[0] = t
            self.outbox[1] = DATA
            newer: list[int] = []
            if kids is not None:
                if since is None:
                    since = start

                def other(key: int, newer: list[int] = newer) -> bool:
                    newer.append(key)
                    return True

                rows, _, _ = kids.collect(t, since + self.timeout, other=other, threads=threads,
                                          who=f"rank {self.rank}: ")
                if rows is None:         # the master moved on: skip ahead
                    cur = newer[0]
                    continue
                kids.combine(rows, msg, accumulate=True)
                write_tail(self._body[self.q:], rows, kids.tails)     # which workers are in the sum
                kids.release(rows)
                since = None
            while d > 0 and not newer:   # the injected delay; newer parameters (or STOP) abandon this iteration
                wait = start + d - time.monotonic()
                if wait <= 0:
                    break
                try:
                    key = check_key(self._arrived.get(timeout=wait), threads)
                except queue.Empty:
                    break
                if key < 2:
                    newer.append(key)
                elif kids is not None:
                    kids.note(key, t)
            if newer:
                cur = newer[0]
                continue
            self.dist.isend(self.outbox, self.parent, tag=GRAD_TAG).wait()
            count += 1
            self.iterations = count
            cur = self._next(threads, t)
        if kids is not None:
            missing = kids.drain(drain_deadline(self.layout, self.rank, time.monotonic(), self.grace),
                                 threads=threads)
            if missing:
                _log.warning("gradcodes.torch: rank %d: children %s did not finish", self.rank, missing)
        self.outbox[1] = BYE
        self.dist.isend(self.outbox, self.parent, tag=GRAD_TAG).wait()
        for th in slots:                 # the slot that took the stop message has ended; the other waits: end it
            th.close()
            th.join(self.grace)
        self.iterations = count
        return count
