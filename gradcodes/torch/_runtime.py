"""Master--worker and CodedReduce-tree aggregation over ``torch.distributed`` point-to-point messages (Gloo on CPU).

Rank 0 is the master (the root) and rank ``i + 1`` runs worker ``i`` of the code; the ranks are laid out as in
:mod:`gradcodes.mpi` (:func:`gradcodes.mpi.layout_for`): for a master--worker code every worker is a child of
the master; for a :class:`~gradcodes.CodedReduceCode` (Reisizadeh et al. 2019, Section 3) the parent of rank
``r`` is rank ``(r - 1) // n`` and every parent decodes its children with the inner code and adds the result to
its own message. Every iteration the master sends the flattened parameters to every worker (tagged with the
iteration); each parent receives its children's coded messages into one preallocated row per child, stops at
the first decodable set of children (the wait policies of :func:`gradcodes.simulate`: by default the earliest
decodable set) and decodes with cached coefficients (:mod:`gradcodes.torch._children`). The master decodes into
a preallocated gradient vector and exposes it as the parameters' ``.grad`` (views, no copy), so any
``torch.optim`` optimizer steps as usual.

Set-up (collective, every rank): the ranks compare a digest of the code and the number of trainable parameter
entries (:func:`check_same`, as :func:`gradcodes.mpi._setup.check_same_code` does), so ranks that built
different codes (a random construction without ``rng``) or models all raise the same error naming the ranks, before
any message. Every message is an int64 buffer: a header ``[iteration, kind, loss scale]`` then the payload's bytes
in the parameters' dtype (:func:`gradcodes.torch._children.buffer`), so any float dtype of torch travels (float16,
bfloat16, float32, float64) and the iteration is exact. Only parameters with ``requires_grad`` are sent, decoded
and given a ``.grad`` (:class:`FlatParams`): frozen ones are never touched. A code of
:func:`gradcodes.adversarial_gc` is decoded by :func:`gradcodes.decode_adversarial`, as :mod:`gradcodes.mpi`
does.

Semantics, as in :mod:`gradcodes.mpi`: a message carries its iteration in its header and is dropped when it
is stale; a message with a NaN or infinite entry is dropped and its sender treated as a straggler, and when the
NaN/inf senders leave no decodable set the parent raises :class:`gradcodes.mpi.StragglerTimeout` at once (under a
loss scaler, ``nonfinite="overflow"``, such a message is an overflow signal and an answer instead); when
the children cannot decode within ``timeout`` seconds the parent raises the same error naming the missing ranks
(a tree parent counts the time since its last decode, across the iterations it abandoned for newer
parameters); a crash on any rank ends the job (``torchrun`` stops every process when one fails). A worker whose
previous parameters the master could not yet deliver (it is still busy) is skipped, so no buffer is overwritten
while a send is in flight, and nothing gradient-sized is allocated per iteration.

Gloo sends complete only when the receiver has posted the matching receive, and a request's ``is_completed``
turns true only once ``wait`` has returned, so each pending receive is waited on by a small thread that reports
its slot on a queue: every parent keeps one receive posted per child, a worker one for its next parameters while
it computes (so newer parameters can abandon an injected delay), and the master's sends run on one thread per
worker so that a busy worker is skipped rather than waited for.
"""

from __future__ import annotations

import math
import queue
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from .._base.errors import GradcodesRuntimeError, GradcodesTypeError, GradcodesValueError
from .._base.log import get_logger
from .._core.acceptance import DecodingError
from .._families.adversarial import AdversarialCode
from .._families.adversarial_decode import decode_adversarial
from .._runtime.delays import Delay, NoDelay
from .._runtime.engine import StragglerTimeout
from .._runtime.layout import TreeCheck, write_tail
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
    finite,
    scale_word,
    trailer,
)

__all__ = ["FlatParams", "ModelBuffers", "Master", "Worker", "AggregateInfo", "StragglerTimeout", "GRAD_TAG",
           "PARAM_TAG", "CTRL_TAG", "CUT_TAG", "STOPPED_STATUS", "ORPHAN_STATUS", "GRACE", "STOP_WAIT", "check_same",
           "drain_deadline", "height"]

from ._links import CTRL_TAG, CUT_TAG, ORPHAN_STATUS, PARAM_TAG, STOPPED_STATUS, _Once, _Sender, _Watchdog
from ._params import FlatParams, ModelBuffers, pin, wire_device
from ._setup import STOP_WAIT, _check_tree_dtype, _combined, _layout, check_same, drain_deadline

_log = get_logger("torch")


def _dist() -> Any:
    import torch.distributed as dist

    return dist

@dataclass
class AggregateInfo:
    """What happened in one :meth:`Master.aggregate`: the responders in arrival order, dropped senders, time.

    Attributes
    ----------
    iteration : int
        The iteration aggregated.
    responders : list of int
        The workers whose messages were decoded, in arrival order (for a CodedReduce tree the level-1 workers,
        each carrying its subtree).
    stale : int
        Messages of earlier iterations dropped during this aggregation.
    bad : list of int
        Workers whose message contained NaN or inf (treated as stragglers).
    seconds : float
        Time spent collecting and decoding.
    adversaries, overflow, nonfinite
        As commented in the class body (adversarial codes; a loss scaler's overflow and its senders).

    Examples
    --------
    :meth:`Master.aggregate` returns one every step (and :class:`Callback`'s ``on_step`` receives it); built by
    hand here:

    >>> from gradcodes.torch import AggregateInfo
    >>> info = AggregateInfo(iteration=3, responders=[2, 0, 1], seconds=0.02)
    >>> info.responders, info.stale, info.bad, info.overflow
    ([2, 0, 1], 0, [], False)
    """

    iteration: int
    responders: list[int]
    stale: int = 0
    bad: list[int] = field(default_factory=list)
    seconds: float = 0.0
    #: codes of :func:`gradcodes.adversarial_gc`: the workers whose messages were found wrong and corrected
    adversaries: list[int] = field(default_factory=list)
    #: under a loss scaler (``nonfinite="overflow"``): the decoded gradient is not finite (the scaler skips the step)
    overflow: bool = False
    #: with :attr:`overflow`: the responders whose messages were not finite
    nonfinite: list[int] = field(default_factory=list)

class Master:
    """The master (rank 0): send parameters, collect the first decodable messages, decode into ``.grad``.

    Parameters
    ----------
    code : LinearCode
        The gradient code; worker ``i`` is rank ``i + 1``. A master--worker job has ``code.n + 1`` ranks; a
        :class:`~gradcodes.CodedReduceCode` runs as its tree (``code.N + 1`` ranks, the master decodes its
        ``branching`` children with the inner code).
    params : sequence of tensors
        The model's parameters (``model.parameters()``), one float dtype (float16, bfloat16, float32 or
        float64), one device (off the CPU on Gloo the messages are staged through pinned host buffers, one copy
        per message: ``docs/torch.md``, "CUDA parameters"); those with ``requires_grad=False`` are left out.
    policy : str or WaitPolicy, optional
        When to stop waiting (a :class:`gradcodes.WaitPolicy` or its name, for the code decoded here:
        ``"earliest"`` decodable set, the default for exact codes; ``"first"`` ``n - s`` messages, the default for
        approximate codes; ``"all"``). A code of :func:`gradcodes.adversarial_gc` waits for a count of messages,
        at least ``K + a`` (default ``n - s``, which corrects ``a`` wrong ones), and is decoded by
        :func:`gradcodes.decode_adversarial`, as :mod:`gradcodes.mpi` does.
    timeout : float, default 60
        Seconds to wait in one iteration before :class:`gradcodes.mpi.StragglerTimeout`.
    poll : float, default 2e-4
        Unused (kept for callers of the earlier signature): the receive threads report arrivals on a queue.
    grace : float, default ``GRACE`` (5 s)
        After the last iteration (:meth:`stop`): seconds per tree level, plus one, that the master waits for the
        workers' goodbyes (a flat master: ``2 * grace``); the workers that did not say goodbye are in
        :attr:`failures`. Every worker must be given the same ``grace``.
    buffers : sequence of tensors, optional
        The model's buffers (``model.buffers()``: BatchNorm running statistics); the same on every rank. They
        travel with the parameters, and :meth:`aggregate` takes those of the lowest-ranked responder of the decoding
        set (an ``adversarial_gc`` code: the lowest-ranked not found wrong), so that a run whose decoding sets are
        deterministic (``policy="all"``) has deterministic running statistics too.
    nonfinite : {"straggler", "overflow"}, default "straggler"
        What a NaN/inf message is: a straggler's (dropped), or, under a
        loss scaler, an overflow signal accepted as an answer (:attr:`AggregateInfo.overflow`: the decode is not
        finite). The attribute ``scale`` (1.0; set before each :meth:`broadcast`) travels in every parameter
        message's header. Not with an ``adversarial_gc`` code, whose decode compares messages.

    Examples
    --------
    The job needs the ranks of the code's layout (``torch.distributed``'s world size), the master and one rank
    per worker:

    >>> import gradcodes as gc
    >>> from gradcodes.mpi import layout_for
    >>> code = gc.cyclic_repetition(3, 1, rng=0)
    >>> layout_for(code).size                  # torchrun --nproc-per-node 4: rank 0 the master, 1..3 workers
    4

    Rank 0's loop (ranks 1..3 run :class:`Worker`; :func:`train` does this with data, schedulers and
    checkpoints)::

        master = Master(code, list(model.parameters()))
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        for t in range(100):
            master.broadcast(t)
            info = master.aggregate(t)         # the decoded gradient is in every parameter's .grad
            opt.step()
        master.stop()
    """

    def __init__(self, code: Any, params: Sequence[Any], *, policy: Any = None, timeout: float = 60.0,
                 poll: float = 2e-4, grace: float = GRACE, buffers: Sequence[Any] = (),
                 nonfinite: str = "straggler") -> None:
        import torch

        from .._simulate._policies import FixedK, as_policy

        self.dist = _dist()
        self.flat = FlatParams(params)
        self.dtype, self.device = self.flat.dtype, self.flat.device
        #: where the messages live: the host when the parameters are staged (CUDA over Gloo), else their device
        self.wire = wire_device(self.device, self.flat.stage, self.dist.get_backend())
        pinned = pin(self.device) and self.wire.type == "cpu"
        #: the model's buffers, sent after the parameters and taken from the lowest-ranked responder
        self.bufs = ModelBuffers(buffers)
        check_same(code, self.dist, self.flat.size, self.wire, self.bufs.nbytes)
        self.layout = _layout(code, self.dist)
        _check_tree_dtype(self.layout, self.dtype)
        self.code, self.n, self.m = code, int(self.layout.workers), int(code.m)
        self.np_dtype = as_np_dtype(self.dtype)
        self.q = -(-self.flat.size // self.m)
        inner = _combined(code, self.layout)
        self.adversarial = isinstance(code, AdversarialCode)
        self.overflow = nonfinite == "overflow"
        self.scale = 1.0
        if self.adversarial and self.overflow:
            raise GradcodesValueError("nonfinite='overflow' (a loss scaler) is not supported with an adversarial_gc "
                                      "code, whose decode compares messages")
        if self.adversarial:
            if policy is None:          # n - s messages: a wrong ones can be corrected
                policy = FixedK(code.n - code.stragglers)
            pol = as_policy(policy, code)
            need = pol.need(code) if isinstance(pol, FixedK) else None
            if need is None or need < code.K + code.adversaries:
                raise GradcodesValueError(
                    f"policy: an adversarial_gc code's master waits for a count of messages, at least K + a = "
                    f"{code.K + code.adversaries} to detect a = {code.adversaries} wrong ones (the default, n - s = "
                    f"{code.n - code.stragglers}, also corrects them); got "
                    + ("a policy that stops at the first decodable set" if need is None else f"{need}"))
            if self.np_dtype.itemsize < 4:
                raise GradcodesTypeError(f"an adversarial_gc code decodes float32 or float64 messages, the parameters "
                                         f"are {self.dtype}")
        self.policy = as_policy(policy, inner)
        self.timeout, self.poll = float(timeout), float(poll)
        self.grace = check_grace(grace)
        #: the control stop message of every worker (header words only; ``CTRL_TAG``)
        self.ctrl = buffer(self.n, 0, self.dtype, self.wire)
        self.ctrl[:, 1] = STOP
        self._ctrl: list[_Once] = []
        nbytes = self.bufs.nbytes
        #: one parameter message per worker: header words, then the parameters (``out_params``), then the buffers
        self.outbox = buffer(self.n, self.flat.size, self.dtype, self.wire, nbytes, pinned)
        self.out_params = body(self.outbox, self.flat.size, self.dtype)
        self.out_bufs = trailer(self.outbox, self.flat.size, self.dtype, nbytes)
        self.grad = torch.zeros(self.m * self.q, dtype=self.dtype, device=self.device)
        #: the decode's target: ``grad``, or (staged) a host vector copied into it in one piece
        self.grad_wire = self.grad if not self.flat.stage else \
            torch.zeros(self.m * self.q, dtype=self.dtype, device=self.wire, pin_memory=pinned)
        #: ranks that failed after the last iteration (rank: what happened), filled by :meth:`stop`
        self.failures: dict[int, str] = {}
        self._skipped = 0
        self._busy: set[int] = set()
        self._arrived: queue.Queue[int] = queue.Queue()
        tree = self.layout.kind == "tree"
        kids = self.layout.children(0)
        self.children = Children(self.dist, inner, kids, self.q, self.dtype, self.wire,
                                 self._arrived, 0, self.policy, extra=self.layout.tail(kids[0]) if tree else 0,
                                 nbytes=nbytes, pinned=pinned, nonfinite=nonfinite)
        #: a CodedReduce tree: the whole tree's acceptance of each iteration's pattern (None for flat codes)
        self.tree_check = TreeCheck(code, self.layout, self.np_dtype) if tree else None
        self.tracker = self.children.tracker
        self.inbox = self.children.inbox
        # a busy worker's sender reports key K + w once its earlier parameters are taken (K: the children's keys)
        self._send = [_Sender(self.dist, self.outbox[w], w + 1, PARAM_TAG, self._arrived, self.children.K + w)
                      for w in range(self.n)]
        self._sent_at = [-1] * self.n                    # the iteration whose parameters each worker was sent
        for w, sender in enumerate(self._send):          # the stop message carries the final parameters
            sender.fill = lambda w=w: self._fill(w)
        self.children.start()
        for th in self._send:
            th.start()

    def broadcast(self, iteration: int) -> None:
        """Send the current parameters to every worker whose previous parameters have been delivered; the others
        get them during :meth:`aggregate`, as soon as they take their earlier ones.

        Parameters
        ----------
        iteration : int
            The iteration the parameters are for (with the model's buffers and ``scale``).

        Examples
        --------
        Each worker gets the trainable parameters as one flat vector (:class:`FlatParams`):

        >>> import torch
        >>> from gradcodes.torch import FlatParams
        >>> model = torch.nn.Linear(3, 1, dtype=torch.float64)
        >>> FlatParams(list(model.parameters())).size        # the entries broadcast sends each worker
        4

        Rank 0 of ``torchrun --standalone --nproc-per-node 4`` (ranks 1..3 run :class:`Worker`), ``code`` as in
        :class:`Master`'s example::

            master = Master(code, list(model.parameters()))
            opt = torch.optim.SGD(model.parameters(), lr=0.1)
            for t in range(3):
                master.broadcast(t)                 # the parameters as they are now, to every free worker
                info = master.aggregate(t)
                opt.step()
            master.stop()
        """
        self._busy = set()
        for w in range(self.n):
            if self._send[w].error is not None:        # its process ended: a straggler that never answers
                self._busy.add(w)
                continue
            if not self._send[w].want():
                self._skipped += 1
                self._busy.add(w)
                continue
            self._send_params(w, iteration)

    def _send_params(self, w: int, iteration: int) -> None:
        row = self.outbox[w]
        row[0] = iteration
        row[1] = DATA
        self._fill(w)
        self._sent_at[w] = iteration
        self._send[w].send()

    def _fill(self, w: int) -> None:
        """Write the current parameters, buffers and loss scale into worker ``w``'s message (its send is not in
        flight)."""
        scale_word(self.outbox[w]).fill_(self.scale)
        self.flat.read(self.out_params[w])
        if self.bufs.nbytes:
            self.bufs.pack(self.out_bufs[w])

    def aggregate(self, iteration: int) -> AggregateInfo:
        """Collect messages of ``iteration`` until the policy stops, decode into ``grad`` and ``.grad``.

        On a CodedReduce tree every parent accepts its own children's decode, and the master then checks the whole
        pattern it decoded (``TreeCheck`` in ``gradcodes/_runtime/layout.py``, the rule of
        :meth:`gradcodes.CodedReduceCode.execute`, from the flags every parent sends after its payload): a
        pattern whose composed decode misses the tolerance of the messages' dtype raises
        :class:`gradcodes.DecodingError` naming the ranks.

        Parameters
        ----------
        iteration : int
            The iteration just broadcast.

        Returns
        -------
        AggregateInfo
            The responders in arrival order, the stale and NaN/inf messages dropped, the time; ``grad`` and every
            trainable parameter's ``.grad`` (views of it) hold the decoded gradient.

        Raises
        ------
        gradcodes.mpi.StragglerTimeout
            After ``timeout`` seconds without a set of messages that stops the policy, naming the missing ranks.
        DecodingError
            On a CodedReduce tree, when the pattern decoded misses the tolerance of the messages' dtype.
        GradcodesRuntimeError
            For an :func:`~gradcodes.adversarial_gc` code, when the messages are inconsistent beyond the wrong
            ones the code corrects.

        Examples
        --------
        The decoded gradient lands in one vector whose pieces are the parameters' ``.grad``
        (:meth:`FlatParams.set_grads`), so the optimizer steps on it without a copy:

        >>> import torch
        >>> from gradcodes.torch import FlatParams
        >>> model = torch.nn.Linear(2, 1, dtype=torch.float64)
        >>> FlatParams(list(model.parameters())).set_grads(torch.tensor([0.5, -1.0, 2.0], dtype=torch.float64))
        >>> model.weight.grad.tolist(), model.bias.grad.tolist()
        ([[0.5, -1.0]], [2.0])

        Rank 0 of ``torchrun --standalone --nproc-per-node 4`` (ranks 1..3 run :class:`Worker`), ``code`` as in
        :class:`Master`'s example::

            master = Master(code, list(model.parameters()))
            opt = torch.optim.SGD(model.parameters(), lr=0.1)
            for t in range(3):
                master.broadcast(t)
                info = master.aggregate(t)          # the decoded gradient is in every parameter's .grad
                print(t, info.responders, float(master.grad.norm()))
                opt.step()
            master.stop()
        """
        start = time.monotonic()
        kids = self.children.ranks
        absent = {i for i, r in enumerate(kids) if r - 1 in self._busy}
        row_of = {r - 1: i for i, r in enumerate(kids)}
        K = self.children.K

        def late(key: int) -> bool:
            """A worker skipped by :meth:`broadcast` took its earlier parameters: send it this iteration's now
            (when every worker was busy at the broadcast, the iteration could otherwise never finish)."""
            w = key - K
            if 0 <= w < self.n and self._sent_at[w] < iteration and self._send[w].want():
                self._send_params(w, iteration)
                self._busy.discard(w)
                absent.discard(row_of.get(w, -1))
            return False

        rows, bad, stale = self.children.collect(iteration, start + self.timeout, absent=absent, other=late)
        assert rows is not None
        adversaries: list[int] = []
        if self.adversarial:
            adversaries = self._decode_adversarial(rows, iteration)
        else:
            self.children.combine(rows, self.grad_wire, accumulate=False)
            if self.grad_wire is not self.grad:
                self.grad.copy_(self.grad_wire)
        if self.bufs.nbytes:                  # the lowest-ranked responder's buffers (not one found wrong)
            first = min((i for i in rows if kids[i] - 1 not in adversaries), default=min(rows))
            self.bufs.unpack(self.children.buffers[first])
        if self.tree_check is not None:
            tails = self.children.tails
            try:
                self.tree_check.check(rows, (tails if tails.device.type == "cpu" else tails.cpu()).numpy(),
                                      iteration)
            except DecodingError:
                self.children.release(rows)
                raise
        overflow, nonfinite = False, []
        if self.overflow and not finite(self.grad):   # one check of the decode; the senders only when it fails
            overflow = True
            nonfinite = [kids[i] - 1 for i in rows if not finite(self.children.payload[i])]
        self.children.release(rows)
        self.flat.set_grads(self.grad[:self.flat.size])
        return AggregateInfo(iteration, [kids[i] - 1 for i in rows], stale, [kids[i] - 1 for i in bad],
                             time.monotonic() - start, adversaries, overflow, nonfinite)

    def _decode_adversarial(self, rows: list[int], iteration: int) -> list[int]:
        """Decode an adversarial_gc code's messages of ``rows`` (flat: row ``i`` is worker ``i``) with
        :func:`gradcodes.decode_adversarial` into ``grad``; the workers found wrong."""
        import torch

        msgs = self.children.payload[rows]
        res = decode_adversarial(self.code, list(rows), (msgs if msgs.device.type == "cpu" else msgs.cpu()).numpy())
        if not res.corrected or res.gradient is None:
            self.children.release(rows)
            raise GradcodesRuntimeError(
                f"iteration {iteration}: the messages of workers {sorted(rows)} are inconsistent beyond "
                f"{self.code.adversaries} wrong ones (more adversaries than the code corrects)")
        self.grad.copy_(torch.from_numpy(res.gradient).to(self.device))
        return [int(w) for w in res.adversarial]

    def stop(self, timeout: float | None = None) -> list[int]:
        """Send every worker the stop message and drain the children's last messages; the ranks that did not
        say goodbye.

        Every worker gets the stop message twice: at once on the control channel (``CTRL_TAG``, always
        received, so a worker stuck in its compute learns of it and ends its own process after its grace,
        ``_Watchdog``), and on the parameter channel as soon as its previous parameters are delivered
        (``_Sender.stop``), which ends its loop. The drain waits for the goodbyes as long as ``drain_deadline``
        says with ``timeout`` (default ``grace``) seconds per step, then gives up. Never raises for a rank
        that failed: the run has finished. Such ranks are in :attr:`failures` with what happened: no goodbye
        within the grace (and whether its process then ended, or its link is still open: a stopped process, or
        one stuck outside Python), or its link failed (its process ended or raised after its last message).

        Parameters
        ----------
        timeout : float, optional
            Seconds per step of the drain (default: ``grace``).

        Returns
        -------
        list of int
            The ranks that did not say goodbye (empty when every worker ended cleanly).

        Examples
        --------
        Rank 0 of ``torchrun --standalone --nproc-per-node 4`` (ranks 1..3 run :class:`Worker`), ``code`` as in
        :class:`Master`'s example; after the last iteration, every worker's :meth:`Worker.run` returns::

            master = Master(code, list(model.parameters()))
            opt = torch.optim.SGD(model.parameters(), lr=0.1)
            for t in range(3):
                master.broadcast(t)
                info = master.aggregate(t)
                opt.step()
            missing = master.stop()                 # [] when every worker said goodbye
            print(missing, master.failures)
        """
        wait = self.grace if timeout is None else check_grace(timeout)
        start = time.monotonic()
        self._ctrl = [_Once(self.dist, self.ctrl[w], w + 1, CTRL_TAG) for w in range(self.n)]
        for th in self._ctrl:
            th.start()
        for sender in self._send:
            sender.stop()
        deadline = drain_deadline(self.layout, 0, start, wait)
        missing = self.children.drain(deadline)
        # let the communication threads finish their last requests before the caller tears the process group down
        # (a thread still inside a Gloo wait at interpreter exit aborts the process); a worker stuck in its compute
        # ends its own process a grace after its control stop message, which fails these requests
        for sender in self._send:
            sender.join(max(deadline - time.monotonic(), 0.0))
        for once in self._ctrl:
            once.join(max(deadline - time.monotonic(), 0.0))
        stuck = self._cut(deadline)
        self.failures = dict(self.children.failed)
        for i, rank in enumerate(self.children.ranks):
            what = self.failures.get(rank)
            if what is None or not what.startswith("it did not say goodbye"):
                continue
            what = f"no goodbye within the grace ({deadline - start:.3g} s after the stop message)"
            rec, ctrl = self.children.recv[i], self._ctrl[rank - 1]
            if rank in stuck:
                what += ("; its link was still open (the master closed it): its process is stopped (SIGSTOP) or "
                         "stuck outside Python, cannot end itself, and only the launcher can end it")
            elif rec.error is not None or ctrl.error is not None:
                what += "; then its link failed (its process ended)"
            self.failures[rank] = what
        for sender in self._send:
            if sender.error is not None:
                self.failures.setdefault(sender.dst, f"its link failed (its process ended): {sender.error!r}")
        return missing


    def _cut(self, deadline: float) -> set[int]:
        """Close the link to every worker that still has a request pending with this process after the drain's
        ``deadline`` (a stopped process, or one stuck outside Python), so that the threads waiting on it end: a
        thread still inside a Gloo wait when the process exits aborts it (SIGABRT, measured: ``docs/runtime.md``).

        A Gloo wait that times out closes its pair (``Application timeout caused pair closure``), which fails every
        request pending on that pair, so one receive on :data:`CUT_TAG` waited on for a millisecond cuts the link.
        Returns the ranks whose link was cut.
        """
        import datetime

        stuck = {th.src for th in self.children.recv if th.is_alive()}
        stuck |= {th.dst for th in self._send if th.is_alive()} | {th.dst for th in self._ctrl if th.is_alive()}
        if not stuck:
            return stuck
        scratch = buffer(None, 0, self.dtype, self.wire)
        for rank in sorted(stuck):
            try:
                self.dist.irecv(scratch, src=rank, tag=CUT_TAG).wait(timeout=datetime.timedelta(milliseconds=1))
            except Exception:                     # the expected timeout: the pair is closed
                pass
        for th in (*self.children.recv, *self._send, *self._ctrl):
            th.join(max(deadline + 1.0 - time.monotonic(), 0.1))
        return stuck


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
