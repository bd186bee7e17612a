"""The master (rank 0) of master--worker and CodedReduce-tree aggregation over ``torch.distributed``
point-to-point messages (Gloo on CPU); its workers are ``gradcodes.torch._worker``.

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

import queue
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from .._base.errors import GradcodesRuntimeError, GradcodesTypeError, GradcodesValueError
from .._core.acceptance import DecodingError
from .._families.adversarial import AdversarialCode
from .._families.adversarial_decode import decode_adversarial
from .._runtime.layout import TreeCheck
from .._runtime.setup import GRACE, check_grace
from ._children import DATA, STOP, Children, as_np_dtype, body, buffer, finite, scale_word, trailer
from ._links import CTRL_TAG, CUT_TAG, PARAM_TAG, _Once, _Sender
from ._params import FlatParams, ModelBuffers, pin, wire_device
from ._setup import _check_tree_dtype, _combined, _dist, _layout, check_same, drain_deadline

__all__ = ["Master", "AggregateInfo"]


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
            For an :func:`~gradcodes.adversarial_gc` code, when the messages disagree beyond the ``a`` wrong ones
            the code corrects (more adversaries than it was built for).

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
