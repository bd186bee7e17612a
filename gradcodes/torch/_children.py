"""A parent's receive side on ``torch.distributed``: one buffer row and one receive thread per child, the wait for
the first decodable set, the decode into a preallocated vector.

Used by the master of a master--worker job (its children are every worker, decoded with the code itself) and by
every parent of a CodedReduce tree (the root and the inner workers, decoded with the inner code; Reisizadeh et
al. 2019, Section 3). The rank layout and the combination coefficients are those of :mod:`gradcodes.mpi`
(:func:`gradcodes.mpi.layout_for`, :class:`gradcodes.mpi._layout.Combiner`: the decoding vector of a responder
set, cached, validated by the acceptance rule in the messages' dtype); only the message passing and the
arithmetic are torch's.

Message format: every message is one int64 buffer, a header of :data:`HEAD` int64 words (the iteration, the
kind: :data:`DATA`, :data:`STOP` or :data:`BYE`) followed by the payload's bytes in the parameters' dtype (viewed in
place, :func:`body`), so the iteration is exact whatever the dtype (float16 could not count past 2048, and
bfloat16 had no numpy dtype for a float header) and nothing is pickled.

Semantics (as :mod:`gradcodes.mpi`'s ``Inbox``): a message of an earlier iteration is dropped, one of a later
iteration (a parent that fell behind) is kept for that iteration; a message with a NaN or infinite entry is
dropped and its sender treated as a straggler, and as soon as the children still able to answer cannot decode any
more the wait ends with :class:`gradcodes.mpi.StragglerTimeout` naming the ranks (no point waiting for the
timeout); past the deadline the same error names the ranks that did not answer.
"""

from __future__ import annotations

import queue
import threading
import time
from collections.abc import Callable, Collection, Sequence
from typing import Any

import numpy as np

from .._base.errors import GradcodesRuntimeError
from ..mpi._comm import StragglerTimeout
from ..mpi._layout import Combiner

__all__ = ["Children", "Receiver", "check_key", "finite", "age", "GRAD_TAG", "HEAD", "DATA", "STOP", "BYE",
           "buffer", "body", "as_np_dtype"]

GRAD_TAG = 71
#: int64 words of every message's header: ``[iteration, kind]``
HEAD = 2
#: message kinds (the header's second word): a payload, the master's stop message, a child's goodbye
DATA, STOP, BYE = 0, 1, 2


def age(tag: int, t: int) -> int:
    """How many iterations older than ``t`` a message of iteration ``tag`` is (negative: newer)."""
    return int(t) - int(tag)


def buffer(rows: int | None, count: int, dtype: Any, device: Any) -> Any:
    """A message buffer (``rows`` messages, or one for None): int64, :data:`HEAD` header words then room for
    ``count`` entries of ``dtype``; :func:`body` views the entries."""
    import torch

    size = torch.empty(0, dtype=dtype).element_size()
    words = HEAD + -(-int(count) * size // 8)
    shape = (words,) if rows is None else (int(rows), words)
    return torch.zeros(shape, dtype=torch.int64, device=device)


def body(buf: Any, count: int, dtype: Any) -> Any:
    """The ``count`` entries of ``dtype`` after the header of the message buffer ``buf`` (a view, no copy)."""
    return buf[..., HEAD:].view(dtype)[..., :int(count)]


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
        :mod:`gradcodes.mpi._layout`); row ``i`` of :attr:`tails` holds child ``i``'s.
    """

    def __init__(self, dist: Any, code: Any, ranks: Sequence[int], q: int, dtype: Any, device: Any,
                 arrived: queue.Queue[int], base: int, policy: Any, extra: int = 0) -> None:

        self.code, self.ranks, self.K, self.q = code, [int(r) for r in ranks], len(ranks), int(q)
        self.dtype = dtype
        self.np_dtype = as_np_dtype(dtype)
        self.m = int(code.m)
        #: the messages as received: int64 header words, then the payload and tail in ``dtype`` (:func:`buffer`)
        self.inbox = buffer(self.K, self.q + int(extra), dtype, device)
        self.head = self.inbox[:, :HEAD]
        entries = body(self.inbox, self.q + int(extra), dtype)
        self.payload = entries[:, :self.q]                   # the messages without header and tail
        self.tails = entries[:, self.q:]
        self.arrived, self.base, self.policy = arrived, int(base), policy
        self.tracker = policy.tracker(code, self.np_dtype)
        self.combiner = Combiner(code)
        self.held: list[int | None] = [None] * self.K       # iteration of a message kept in a row
        self.recv = [Receiver(dist, self.inbox[i], r, GRAD_TAG, self.base + i, arrived, BYE)
                     for i, r in enumerate(self.ranks)]
        self.stale = 0
        self.done = [False] * self.K                        # the child said goodbye (after the stop message)
        self.acc: Any = None                                # float64 decode buffer of float32 messages
        #: children that failed after the stop message: rank -> what happened (:meth:`drain`)
        self.failed: dict[int, str] = {}
        #: rows whose link failed during the run (:meth:`lost`): row -> what happened; never waited for again
        self.dead: dict[int, str] = {}

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

    def names(self, rows: Any) -> list[int]:
        return sorted(self.ranks[i] for i in set(rows))

    def possible(self, excluded: set[int]) -> bool:
        """Whether the children outside ``excluded`` could still satisfy the wait policy."""
        tr = self.policy.tracker(self.code, self.np_dtype)
        tr.reset()
        return any(tr.add(i) for i in range(self.K) if i not in excluded)

    def note(self, key: int, t: int) -> None:
        """A child's message arrived while this parent is not collecting (it is at iteration ``t``): keep it if it
        is for a later iteration, drop it otherwise."""
        i = key - self.base
        if self._bye(i):
            return
        tag = int(self.head[i, 0])
        if age(tag, t) >= 0:
            self.stale += 1
            self._drop(i)
        else:
            self.held[i] = tag

    def forget(self, t: int) -> None:
        """Drop the kept messages of iteration ``t`` and earlier (a hung parent, which never collects)."""
        for i, h in enumerate(self.held):
            if h is not None and age(h, t) >= 0:
                self.stale += 1
                self._drop(i)

    def collect(self, t: int, deadline: float, *, other: Callable[[int], bool] | None = None,
                absent: Collection[int] = (), threads: Sequence[Receiver] = (),
                who: str = "") -> tuple[list[int] | None, list[int], int]:
        """Wait for the children's messages of iteration ``t`` until the wait policy is satisfied.

        Returns ``(rows, bad, stale)``: the rows used in arrival order (None when ``other(key)``, called with each
        key on ``arrived`` that is not a child's, returned True), the rows that sent NaN/inf and the stale
        messages dropped. ``absent``: rows known not to answer this iteration (counted with the NaN senders when
        deciding that the iteration cannot finish; a set is used as it is, so ``other`` may remove rows from it
        when they can answer after all). Raises :class:`StragglerTimeout` at ``deadline``
        (``time.monotonic()``) or as soon as the NaN/inf senders and ``absent`` leave no decodable set.
        """
        self.tracker.reset()
        got: list[int] = []
        bad: list[int] = []
        stale0 = self.stale
        absent_set = absent if isinstance(absent, set) else set(absent)   # (a set the caller may shrink)
        absent_set |= set(self.dead)

        def use(i: int) -> bool:
            if not finite(self.payload[i]):
                bad.append(i)
                self._drop(i)
                if not self.possible(absent_set | set(bad)):
                    rest = [j for j in range(self.K) if j not in absent_set and j not in bad]
                    raise StragglerTimeout(
                        f"{who}iteration {t}: ranks {self.names(bad)} sent NaN or infinite values"
                        + (f", ranks {self.names(absent_set)} cannot answer (still busy with earlier parameters)"
                           if absent_set else "")
                        + f"; the remaining ranks {self.names(rest)} cannot decode, so the iteration cannot "
                        f"finish", missing=self.names(absent_set), bad=self.names(bad))
                return False
            got.append(i)
            return bool(self.tracker.add(i))

        for i in range(self.K):                  # messages kept from earlier
            h = self.held[i]
            if h is None:
                continue
            a = age(h, t)
            if a > 0:
                self.stale += 1
                self._drop(i)
            elif a == 0 and use(i):
                return got, bad, self.stale - stale0
        while True:
            try:
                key = self.arrived.get(timeout=max(deadline - time.monotonic(), 0.0))
            except queue.Empty:
                missing = [i for i in range(self.K) if i not in got and i not in bad]
                raise StragglerTimeout(
                    f"{who}iteration {t}: no decodable set of responders before the timeout; received from ranks "
                    f"{[self.ranks[i] for i in got]}, missing ranks {self.names(missing)}"
                    + (f", ranks {self.names(bad)} sent NaN or infinite values" if bad else ""),
                    missing=self.names(missing), bad=self.names(bad)) from None
            if key < 0 and self.owns(-1 - key):     # a child's link failed: its process ended, a straggler now
                self.lost(-1 - key - self.base, t, absent_set | set(bad), who)
                continue
            key = check_key(key, threads or self.recv)
            if not self.owns(key):
                if other is not None and other(key):
                    return None, bad, self.stale - stale0
                continue
            i = key - self.base
            if self._bye(i):
                continue
            h = int(self.head[i, 0])
            a = age(h, t)
            if a > 0:
                self.stale += 1
                self._drop(i)
                continue
            self.held[i] = h
            if a == 0 and use(i):
                return got, bad, self.stale - stale0

    def lost(self, i: int, t: int, excluded: set[int], who: str = "") -> None:
        """Child ``i``'s link failed during iteration ``t`` (its process ended: a crash, ``os._exit``, a kill the
        launcher let the job survive): from now on it is a straggler that never answers (:attr:`dead`); raise
        :class:`StragglerTimeout` at once when the children left, outside ``excluded``, cannot decode."""
        th = self.recv[i]
        self.dead[i] = f"its link failed during the run, at iteration {t} (its process ended): {th.error!r}"
        self.held[i] = None
        if not self.possible(excluded | set(self.dead)):
            gone = self.names(self.dead)
            raise StragglerTimeout(
                f"{who}iteration {t}: the links of ranks {gone} failed (their processes ended)"
                + (f", ranks {self.names(excluded - set(self.dead))} cannot answer" if excluded - set(self.dead)
                   else "")
                + "; the remaining ranks cannot decode, so the iteration cannot finish",
                missing=self.names(excluded | set(self.dead)))

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


def as_np_dtype(dtype: Any) -> np.dtype:
    """The numpy dtype of the acceptance rule for messages of the torch float ``dtype``.

    bfloat16 has no numpy dtype: its messages are accepted by the rule for float16, the narrowest numpy float,
    whose unit roundoff (2**-11) is 8 times bfloat16's: a decode's error estimate against the tolerance is about
    sqrt(8) = 2.8 times smaller under the float16 rule than bfloat16's own would be (``docs/torch.md``)."""
    import torch

    if dtype == torch.bfloat16:
        return np.dtype(np.float16)
    if not torch.empty(0, dtype=dtype).is_floating_point():
        from .._base.errors import GradcodesTypeError

        raise GradcodesTypeError(f"the parameters must have a float dtype, got {dtype}")
    return np.dtype(torch.empty(0, dtype=dtype).numpy().dtype)
