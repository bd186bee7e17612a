"""A parent's receive side on ``torch.distributed``: one buffer row and one receive thread per child, the wait for
the first decodable set, the decode into a preallocated vector.

Used by the master of a master--worker job (its children are every worker, decoded with the code itself) and by
every parent of a CodedReduce tree (the root and the inner workers, decoded with the inner code; Reisizadeh et
al. 2019, Section 3). The rank layout and the combination coefficients are those of :mod:`gradcodes.mpi`
(:func:`gradcodes.mpi.layout_for`, :class:`gradcodes._runtime.codec.Combiner`: the decoding vector of a responder
set, cached, validated by the acceptance rule in the messages' dtype); only the message passing and the
arithmetic are torch's.

Message format: every message is one int64 buffer, a header of :data:`HEAD` int64 words (the iteration, the
kind: :data:`DATA`, :data:`STOP` or :data:`BYE`, and the loss scale as the bits of a float64: :func:`scale_word`,
1.0 unless the master's ``torch.amp.GradScaler`` set it) followed by the payload's bytes in the parameters' dtype
(viewed in place, :func:`body`), so the iteration is exact whatever the dtype (float16 could not count past 2048, and
bfloat16 had no numpy dtype for a float header) and nothing is pickled.

Semantics (as :mod:`gradcodes.mpi`'s ``Inbox``): a message of an earlier iteration is dropped, one of a later
iteration (a parent that fell behind) is kept for that iteration; a message with a NaN or infinite entry is
dropped and its sender treated as a straggler (with ``nonfinite="overflow"``, mixed precision with a loss
scaler: an answer like any other, ``gradcodes._runtime.engine.Collection``), and as soon as the children still
able to answer cannot decode any more the wait ends with :class:`gradcodes.mpi.StragglerTimeout` naming the ranks
(no point waiting for the timeout); past the deadline the same error names the ranks that did not answer.
"""

from __future__ import annotations

import queue
import threading
import time
from collections.abc import Callable, Sequence
from collections.abc import Collection as Coll
from typing import Any

import numpy as np

from .._base.errors import GradcodesRuntimeError
from .._runtime.codec import Combiner, UnitTracker
from .._runtime.engine import ABORT, Collection, Lost, _Abort, age

__all__ = ["Children", "Receiver", "check_key", "finite", "age", "GRAD_TAG", "HEAD", "DATA", "STOP", "BYE",
           "buffer", "body", "trailer", "scale_word", "as_np_dtype"]

GRAD_TAG = 71
#: int64 words of every message's header: ``[iteration, kind, loss scale (float64 bits)]``
HEAD = 3
#: message kinds (the header's second word): a payload, the master's stop message, a child's goodbye
DATA, STOP, BYE = 0, 1, 2


def buffer(rows: int | None, count: int, dtype: Any, device: Any, nbytes: int = 0, pinned: bool = False) -> Any:
    """A message buffer (``rows`` messages, or one for None): int64, :data:`HEAD` header words then room for
    ``count`` entries of ``dtype`` and, word-aligned after them, ``nbytes`` raw bytes (the model's buffers,
    :func:`trailer`); :func:`body` views the entries. ``pinned``: page-locked host memory (staged CUDA
    messages)."""
    import torch

    size = torch.empty(0, dtype=dtype).element_size()
    words = HEAD + -(-int(count) * size // 8) + -(-int(nbytes) // 8)
    shape = (words,) if rows is None else (int(rows), words)
    return torch.zeros(shape, dtype=torch.int64, device=device, pin_memory=pinned)


def scale_word(buf: Any) -> Any:
    """The loss-scale word of the header of the message buffer ``buf`` (or of each row), viewed as float64 (a view,
    no copy): the master writes its ``GradScaler``'s scale there in every parameter message. Scales are powers of
    two, so the worker gets the master's exactly."""
    import torch

    return buf[..., 2:3].view(torch.float64)[..., 0]


def body(buf: Any, count: int, dtype: Any) -> Any:
    """The ``count`` entries of ``dtype`` after the header of the message buffer ``buf`` (a view, no copy)."""
    return buf[..., HEAD:].view(dtype)[..., :int(count)]


def trailer(buf: Any, count: int, dtype: Any, nbytes: int) -> Any:
    """The ``nbytes`` raw bytes (uint8) after the ``count`` entries of ``dtype`` of the message buffer ``buf``
    (a view, no copy; it starts on a word boundary)."""
    import torch

    size = torch.empty(0, dtype=dtype).element_size()
    start = HEAD + -(-int(count) * size // 8)
    return buf[..., start:start + -(-int(nbytes) // 8)].view(torch.uint8)[..., :int(nbytes)]


def finite(row: Any) -> bool:
    """All entries finite, without a row-sized temporary in the usual case: a NaN or inf makes the sum non-finite;
    a finite row whose sum overflows falls back to the exact check."""
    import torch

    if bool(torch.isfinite(row.sum())):
        return True
    return bool(torch.isfinite(row).all())


class Receiver(threading.Thread):
    """Keeps one receive posted into ``buf`` (a message buffer, :func:`buffer`) from ``src``; reports ``key`` on
    ``out`` when a message has landed and posts the next receive after :meth:`release`. Ends after a message of
    kind ``last``, or when :meth:`close` is called while no receive is posted.

    Gloo requests complete only in ``wait`` (``is_completed`` turns true once ``wait`` returned), so each pending
    receive is waited on by its own thread."""

    def __init__(self, dist: Any, buf: Any, src: int, tag: int, key: int, out: queue.Queue[int],
                 last: int) -> None:
        super().__init__(daemon=True, name=f"gradcodes-recv-{src}-{tag}")
        self.dist, self.buf, self.src, self.tag, self.key, self.out, self.last = dist, buf, src, tag, key, out, last
        self.free = threading.Event()
        self.free.set()
        self.closing = False
        self.error: BaseException | None = None

    def release(self) -> None:
        self.free.set()

    def close(self) -> None:
        """End the thread if it is waiting for :meth:`release` (not inside a receive)."""
        self.closing = True
        self.free.set()

    def run(self) -> None:
        try:
            while True:
                self.free.wait()
                self.free.clear()
                if self.closing:
                    return
                self.dist.irecv(self.buf, src=self.src, tag=self.tag).wait()
                # reading the header waits for the data on the host too (a NCCL wait only orders the stream)
                kind = int(self.buf[1])
                self.out.put(self.key)
                if kind == self.last:
                    return
        except Exception as exc:   # a peer died: wake the waiting thread, which raises
            self.error = exc
            self.out.put(-1 - self.key)


def check_key(key: int, threads: Sequence[Receiver]) -> int:
    """``key``, or raise the error of the receive thread that reported ``-1 - key``."""
    if key < 0:
        th = threads[-1 - key]
        raise GradcodesRuntimeError(f"receiving from rank {th.src} failed: {th.error}") from th.error
    return key


class Children:
    """The messages of one parent's children: buffers, receive threads, wait policy and decode.

    Parameters
    ----------
    dist : module
        ``torch.distributed``.
    code : LinearCode
        The code decoded here (the whole code at a master--worker master, the inner code at a tree parent); row
        ``i`` of the buffer is its worker ``i``.
    ranks : list of int
        The children's ranks (row ``i`` receives from ``ranks[i]``).
    q : int
        Message length (payload entries, without the header and the tail).
    dtype, device
        The messages' torch dtype and device (the parameters').
    arrived : queue.Queue
        Where the receive threads report; child ``i`` reports key ``base + i``.
    base : int
        Key of row 0 on ``arrived`` (a worker's own parameter slots use the keys below).
    policy : WaitPolicy
        When the children's messages suffice (``policy.tracker(code, dtype)``).
    extra : int, default 0
        Entries after the payload of every child's message (a CodedReduce tree parent's tail of 0/1 flags, see
        :mod:`gradcodes._runtime.layout`); row ``i`` of :attr:`tails` holds child ``i``'s.
    nbytes : int, default 0
        Raw bytes after the entries of every child's message: the child's model buffers (BatchNorm running
        statistics, ``gradcodes.torch._params.ModelBuffers``); row ``i`` of :attr:`buffers` holds child ``i``'s.
    pinned : bool, default False
        Page-locked receive rows (host messages of a model on CUDA, staged: ``gradcodes.torch._params``).
    nonfinite : {"straggler", "overflow"}, default "straggler"
        What a child's NaN/inf message is (``gradcodes._runtime.engine.Collection``): a straggler's, or, under
        a loss scaler, an overflow signal accepted as an answer.
    """

    def __init__(self, dist: Any, code: Any, ranks: Sequence[int], q: int, dtype: Any, device: Any,
                 arrived: queue.Queue[int], base: int, policy: Any, extra: int = 0, nbytes: int = 0,
                 pinned: bool = False, nonfinite: str = "straggler") -> None:
        import torch

        self.code, self.ranks, self.K, self.q = code, [int(r) for r in ranks], len(ranks), int(q)
        self.dtype = dtype
        self.np_dtype = as_np_dtype(dtype)
        self.m = int(code.m)
        #: the messages as received: int64 header words, then the payload and tail in ``dtype`` (:func:`buffer`)
        self.inbox = buffer(self.K, self.q + int(extra), dtype, device, nbytes, pinned)
        self.head = self.inbox[:, :HEAD]
        entries = body(self.inbox, self.q + int(extra), dtype)
        self.payload = entries[:, :self.q]                   # the messages without header and tail
        self.tails = entries[:, self.q:]
        #: each child's model buffers (BatchNorm statistics) as raw bytes after its message (``nbytes`` long)
        self.buffers = trailer(self.inbox, self.q + int(extra), dtype, nbytes)
        self.arrived, self.base, self.policy = arrived, int(base), policy
        self.combiner = Combiner(code)
        self.tracker = policy.tracker(code, self.np_dtype)
        if dtype == torch.bfloat16:          # the float16 rule, and bfloat16's own (numpy has no bfloat16)
            self.tracker = UnitTracker(self.tracker, self.combiner, BFLOAT16_U, "bfloat16")
        self.held: list[int | None] = [None] * self.K       # iteration of a message kept in a row
        self.recv = [Receiver(dist, self.inbox[i], r, GRAD_TAG, self.base + i, arrived, BYE)
                     for i, r in enumerate(self.ranks)]
        self.done = [False] * self.K                        # the child said goodbye (after the stop message)
        self.acc: Any = None                                # float64 decode buffer of float32 messages
        #: children that failed after the stop message: rank -> what happened (:meth:`drain`)
        self.failed: dict[int, str] = {}
        #: the collection protocol (wait policy, stale/NaN/lost messages, timeouts naming ranks), shared with
        #: :mod:`gradcodes.mpi`; this object is its endpoint (:meth:`age`, :meth:`finite`, :meth:`drop`, :meth:`wait`)
        self.collection = Collection(self.ranks, tracker=self.tracker, nonfinite=nonfinite)
        self._other: Callable[[int], bool] | None = None
        self._threads: Sequence[Receiver] = ()

    def start(self) -> None:
        for th in self.recv:
            th.start()

    def owns(self, key: int) -> bool:
        return self.base <= key < self.base + self.K

    def _bye(self, i: int) -> bool:
        """Row ``i`` holds the child's goodbye (it got the stop message before this parent did)."""
        if int(self.head[i, 1]) == BYE:
            self.done[i] = True
            return True
        return False

    def _drop(self, i: int) -> None:
        self.held[i] = None
        self.recv[i].release()

    @property
    def stale(self) -> int:
        """Stale messages dropped so far."""
        return self.collection.stale

    @property
    def dead(self) -> dict[int, str]:
        """Rows whose link failed during the run: row -> what happened; never waited for again."""
        return self.collection.dead

    def names(self, rows: Any) -> list[int]:
        return self.collection.names(rows)

    def note(self, key: int, t: int) -> None:
        """A child's message arrived while this parent is not collecting (it is at iteration ``t``): keep it if it
        is for a later iteration, drop it otherwise."""
        i = key - self.base
        if self._bye(i):
            return
        tag = int(self.head[i, 0])
        if age(tag, t) >= 0:
            self.collection.stale += 1
            self._drop(i)
        else:
            self.held[i] = tag

    def forget(self, t: int) -> None:
        """Drop the kept messages of iteration ``t`` and earlier (a hung parent, which never collects)."""
        for i, h in enumerate(self.held):
            if h is not None and age(h, t) >= 0:
                self.collection.stale += 1
                self._drop(i)

    # -- the endpoint of the collection protocol (gradcodes._runtime.engine.Endpoint)
    def age(self, i: int, t: int) -> int | None:
        h = self.held[i]
        return None if h is None else age(h, t)

    def finite(self, i: int) -> bool:
        return finite(self.payload[i])

    def drop(self, i: int) -> None:
        self._drop(i)

    def wait(self, timeout: float) -> int | Lost | _Abort | None:
        """The next event on the arrival queue within ``timeout`` seconds: a child's row (its message is held), a
        child whose link failed (:class:`~gradcodes._runtime.engine.Lost`), :data:`ABORT` when ``other(key)``
        (called with each key that is not a child's) returned True, or None."""
        try:
            key = self.arrived.get(timeout=timeout)
        except queue.Empty:
            return None
        if key < 0 and self.owns(-1 - key):     # a child's link failed: its process ended, a straggler now
            i = -1 - key - self.base
            self.held[i] = None
            return Lost(i, repr(self.recv[i].error))
        key = check_key(key, self._threads or self.recv)
        if not self.owns(key):
            if self._other is not None and self._other(key):
                return ABORT
            return None
        i = key - self.base
        if self._bye(i):
            return None
        self.held[i] = int(self.head[i, 0])
        return i

    def collect(self, t: int, deadline: float, *, other: Callable[[int], bool] | None = None,
                absent: Coll[int] = (), threads: Sequence[Receiver] = (),
                who: str = "") -> tuple[list[int] | None, list[int], int]:
        """Wait for the children's messages of iteration ``t`` until the wait policy is satisfied
        (:meth:`gradcodes._runtime.engine.Collection.collect`).

        Returns ``(rows, bad, stale)``: the rows used in arrival order (None when ``other(key)``, called with each
        key on ``arrived`` that is not a child's, returned True), the rows that sent NaN/inf and the stale
        messages dropped. ``absent``: rows known not to answer this iteration (counted with the NaN senders when
        deciding that the iteration cannot finish; a set is used as it is, so ``other`` may remove rows from it
        when they can answer after all). Raises :class:`gradcodes.mpi.StragglerTimeout` at ``deadline``
        (``time.monotonic()``) or as soon as the NaN/inf senders and ``absent`` leave no decodable set.
        """
        stale0 = self.collection.stale
        self.collection.who = who
        self._other, self._threads = other, threads
        try:
            rows, bad = self.collection.collect(self, t, deadline=deadline, absent=absent)
        finally:
            self._other, self._threads = None, ()
        return rows, bad, self.collection.stale - stale0

    def combine(self, rows: list[int], out: Any, *, accumulate: bool) -> None:
        """``out`` (length ``m q``) = [``out`` +] the decode of ``rows`` (cached coefficients, one multiply-add
        pass per message, no temporary).

        Messages below float64 (float32 stays float32 on the wire) are combined with float64 coefficients in a
        float64 buffer allocated on the first decode and rounded once into ``out``; the decode is still accepted
        by the rule in the messages' dtype."""
        import torch

        q = self.q
        wide = self.dtype != torch.float64
        if wide and self.acc is None:
            self.acc = torch.zeros(self.m * q, dtype=torch.float64, device=self.inbox.device)
        dst = self.acc if wide else out
        if wide and accumulate:
            dst.copy_(out)
        if self.dtype == torch.bfloat16:          # numpy has no bfloat16: its own rule, u = 2**-8, on top
            self.combiner.check_unit(rows, BFLOAT16_U, "bfloat16")
        plan = self.combiner.plan(rows, self.np_dtype, np.float64 if wide else None)
        for u, (idx, cs) in enumerate(plan):
            seg = dst[u * q:(u + 1) * q]
            if not accumulate:
                seg.zero_()
            for i, a in zip(idx, cs, strict=True):
                seg.add_(self.payload[i], alpha=a)
        if wide:
            out.copy_(dst)

    def release(self, rows: list[int]) -> None:
        for i in rows:
            if self.held[i] is not None:
                self._drop(i)

    def drain(self, deadline: float, other: Callable[[int], None] | None = None,
              threads: Sequence[Receiver] = ()) -> list[int]:
        """After the stop message: drop data messages until every child said goodbye; the ranks that did not.

        A child whose link failed meanwhile (its process ended, or raised, after its last message) is recorded in
        :attr:`failed` (rank: what happened) and not waited for: the run it served has finished, so this is
        reported, never raised."""
        for i, what in self.dead.items():
            self.failed[self.ranks[i]] = what
        pending = {i for i in range(self.K) if not self.done[i] and i not in self.dead}
        for i in range(self.K):
            if self.held[i] is not None and not self.done[i]:
                self._drop(i)
        every = threads or self.recv
        while pending:
            try:
                key = self.arrived.get(timeout=max(deadline - time.monotonic(), 0.0))
            except queue.Empty:
                break
            if key < 0:
                th = every[-1 - key]
                self.failed[th.src] = (f"its link failed after its last message, without a goodbye (its process "
                                       f"ended): {th.error!r}")
                if self.owns(-1 - key):
                    pending.discard(-1 - key - self.base)
                continue
            if not self.owns(key):
                if other is not None:
                    other(key)
                continue
            i = key - self.base
            if self._bye(i):
                pending.discard(i)
            else:
                self._drop(i)
        for th in self.recv:
            th.join(max(deadline - time.monotonic(), 0.0))
        for i in pending:
            self.failed.setdefault(self.ranks[i], "it did not say goodbye after the stop message")
        return self.names(pending)


#: bfloat16's unit roundoff (8 significand bits)
BFLOAT16_U = 2.0 ** -8


def as_np_dtype(dtype: Any) -> np.dtype:
    """The numpy dtype of the acceptance rule for messages of the torch float ``dtype``.

    bfloat16 has no numpy dtype: its messages go through the rule for float16 (the narrowest numpy float, unit
    roundoff 2**-11) and, since bfloat16's unit roundoff is 8 times larger, also through bfloat16's own rule
    (:meth:`gradcodes._runtime.codec.Combiner.check_unit` with ``u = 2**-8``, :data:`BFLOAT16_U`): a decode is
    used only when it meets both (``docs/torch.md``)."""
    import torch

    if dtype == torch.bfloat16:
        return np.dtype(np.float16)
    if not torch.empty(0, dtype=dtype).is_floating_point():
        from .._base.errors import GradcodesTypeError

        raise GradcodesTypeError(f"the parameters must have a float dtype, got {dtype}")
    return np.dtype(torch.empty(0, dtype=dtype).numpy().dtype)
