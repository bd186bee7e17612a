"""Message passing for the runtime: tags, the first-K receive loop, parameter and result sends.

Everything on the gradient path uses mpi4py's buffer interface (``Isend``/``Irecv`` of preallocated numpy arrays,
no pickling), as in the mpi4py tutorial's numpy examples. ``mpi4py`` is imported lazily, so importing
:mod:`gradcodes.mpi` (or collecting its doctests) does not initialise MPI.

Receive pattern (the master, and every parent of a CodedReduce tree). One ``Irecv(inbox[i], source=c_i,
tag=ANY_TAG)`` stays posted per child. MPI's non-overtaking rule (MPI standard 4.0, section 3.5: messages from one
sender on one communicator arrive in the order they were sent) means a late child's older messages always arrive
before its newer ones, so a message whose tag is an older iteration is dropped and the receive re-posted; a
message for the current iteration is kept until it has been combined; a message for a *newer* iteration (a parent
that fell behind) is held for that iteration. Completion is polled with ``Testany``: the master spins (its
receives are the critical path), workers and tree parents sleep a little between polls (``poll``), which on
oversubscribed cores is much cheaper than spinning.

NaN/inf checks: a parent may check every message (``check_finite=True``), or combine first and check its result
once (:func:`finite`), looking at the individual messages only when that check fails; the rows found non-finite
are then passed back to :meth:`Inbox.collect` (``bad=``), which re-posts their receives and waits for others.
"""

from __future__ import annotations

import math
import time
from typing import Any

import numpy as np

from .._base.errors import GradcodesValueError
from .._runtime.engine import ABORT, Collection, StragglerTimeout, _Abort, finite

__all__ = ["StragglerTimeout", "get_mpi", "world", "Tags", "Inbox", "ParamSender", "wait_request", "finite", "CHUNK",
           "RECENT"]


def get_mpi() -> Any:
    """The ``mpi4py.MPI`` module, with an install hint when mpi4py is missing."""
    try:
        from mpi4py import MPI
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise ImportError("gradcodes.mpi needs mpi4py: pip install 'gradcodes[mpi-local]' (mpi4py and the MPICH "
                          "wheel) or 'gradcodes[mpi]' (mpi4py for a site MPI)") from exc
    return MPI


def world(comm: Any) -> Any:
    """``comm``, or ``MPI.COMM_WORLD`` when it is None (the default communicator of the runtime's classes)."""
    return get_mpi().COMM_WORLD if comm is None else comm


class Tags:
    """Message tags: iteration numbers modulo a window below ``MPI.TAG_UB``, plus two control tags.

    MPI only guarantees ``TAG_UB >= 32767`` (MPI standard 4.0, section 3.2.3), so iteration ``t`` is sent with tag
    ``FIRST + t % window``; thanks to non-overtaking, the tag identifies the iteration as long as no sender lags
    more than ``window / 2`` iterations behind.
    """

    STOP = 1
    FINAL = 2
    FIRST = 3

    def __init__(self, comm: Any = None, *, tag_ub: int | None = None) -> None:
        if tag_ub is None:
            ub = comm.Get_attr(get_mpi().TAG_UB)
            tag_ub = 32767 if ub is None else int(ub)
        self.window = min(int(tag_ub), 2**30) - self.FIRST

    def tag(self, t: int) -> int:
        """The tag of iteration ``t``."""
        return self.FIRST + t % self.window

    def age(self, tag: int, t: int) -> int:
        """How many iterations older than ``t`` the data message ``tag`` is (negative: newer)."""
        d = (t - (tag - self.FIRST)) % self.window
        return d if d < self.window // 2 else d - self.window

    def iteration(self, tag: int, near: int) -> int:
        """The iteration a data tag stands for, given a nearby iteration ``near``."""
        return near - self.age(tag, near)


def wait_request(req: Any, poll: float, what: str, timeout: float = math.inf) -> None:
    """Complete one request by polling (``Test`` + sleep); raise after ``timeout`` seconds."""
    start = time.perf_counter()
    while not req.Test():
        if time.perf_counter() - start > timeout:
            raise TimeoutError(f"{what} did not complete within {timeout:g} s")
        if poll:
            time.sleep(poll)


#: A spinning :class:`Inbox` runs its clock, interrupt and progress checks once per this many empty polls.
SPIN = 16


class Inbox:
    """Receive buffers of one parent: one row and one posted ``Irecv`` per child; the MPI endpoint of the
    collection protocol (:class:`gradcodes._runtime.engine.Collection`, :attr:`collection`).

    Parameters
    ----------
    comm : mpi4py communicator
    sources : sequence of int
        The children's ranks (row ``i`` of :attr:`buf` receives from ``sources[i]``).
    q : int
        Message length.
    dtype : numpy dtype
    tags : Tags
    poll : float
        Sleep between two ``Testany`` calls (seconds; 0 = spin).
    extra : int, default 0
        Entries after the payload of every message (a CodedReduce tree's tail of 0/1 flags, see
        :mod:`gradcodes._runtime.layout`): row ``i`` of :attr:`raw` receives the whole message, :attr:`buf` is the
        payload (``raw[:, :q]``) and :attr:`tail` the rest (``raw[:, q:]``).
    tracker, need, who
        The wait policy of :class:`~gradcodes._runtime.engine.Collection` (a tracker ending the wait early, a
        count of messages) and the prefix of its errors.
    """

    def __init__(self, comm: Any, sources: list[int], q: int, dtype: Any, tags: Tags, poll: float,
                 extra: int = 0, *, tracker: Any = None, need: int | None = None, who: str = "") -> None:
        self.MPI = get_mpi()
        self.comm = comm
        self.sources = [int(r) for r in sources]
        self.K = len(self.sources)
        self.raw = np.zeros((self.K, q + int(extra)), dtype=dtype)
        self.buf = self.raw[:, :q] if extra else self.raw
        self.tail = self.raw[:, q:]
        self.tags = tags
        self.poll = float(poll)
        self.held: list[int | None] = [None] * self.K      # tag of a received message still in buf[i]
        self.final = [False] * self.K
        self._status = self.MPI.Status()
        self.reqs = [self._post(i) for i in range(self.K)]
        self.collection = Collection(self.sources, tracker=tracker, need=self.K if need is None else need, who=who)
        self._interrupt: Any = None
        self._progress: Any = None

    @property
    def dropped(self) -> int:
        """Stale messages dropped so far."""
        return self.collection.stale

    def _post(self, i: int) -> Any:
        self.held[i] = None
        return self.comm.Irecv(self.raw[i], source=self.sources[i], tag=self.MPI.ANY_TAG)

    def release(self, rows: Any) -> None:
        """Re-post the receives of rows whose messages have been used."""
        for i in rows:
            if self.held[i] is not None and not self.final[i]:
                self.reqs[i] = self._post(i)

    def _poll_one(self) -> tuple[int, int] | None:
        idx, flag = self.MPI.Request.Testany(self.reqs, self._status)
        if not flag or idx == self.MPI.UNDEFINED or idx < 0:
            return None
        tag = self._status.Get_tag()
        if tag == Tags.FINAL:
            self.final[idx] = True
            self.reqs[idx] = self.MPI.REQUEST_NULL
            return None
        self.held[idx] = tag
        return idx, tag

    # -- the endpoint of the collection protocol (gradcodes._runtime.engine.Endpoint)
    def age(self, i: int, t: int) -> int | None:
        h = self.held[i]
        return None if h is None else self.tags.age(h, t)

    def finite(self, i: int) -> bool:
        return finite(self.buf[i])

    def drop(self, i: int) -> None:
        if self.held[i] is not None and not self.final[i]:
            self.reqs[i] = self._post(i)

    def wait(self, timeout: float) -> int | _Abort | None:
        """The next row to receive a message within ``timeout`` seconds: polls ``Testany`` back to back when
        spinning (MPI's progress, which moves a large message in pieces, runs on every poll; the clock, interrupt
        and progress checks on every :data:`SPIN`-th idle poll), else sleeping ``poll`` between polls."""
        end = time.monotonic() + timeout
        spin = not self.poll
        idle = 0
        interrupt, progress = self._interrupt, self._progress
        while True:
            hit = self._poll_one()
            if hit is not None:
                return hit[0]
            if spin:
                idle += 1
                if idle % SPIN:
                    continue
            if interrupt is not None and interrupt():
                return ABORT
            if time.monotonic() >= end:
                return None
            if progress is not None:
                progress()
            if self.poll:
                time.sleep(self.poll)

    def collect(self, t: int, *, timeout: float = math.inf, stop_at: float | None = None,
                interrupt: Any = None, progress: Any = None, check_finite: bool = True,
                bad: list[int] | None = None) -> tuple[list[int] | None, dict[str, Any]]:
        """The messages of iteration ``t`` (:meth:`gradcodes._runtime.engine.Collection.collect`).

        Returns ``(rows, info)``: the rows used in arrival order (``None`` when ``interrupt()`` became true first),
        and ``{"bad": rows with NaN/inf, "waited": seconds}``. Returns early at ``stop_at`` (a ``time.monotonic()``
        value) with whatever arrived; raises :class:`StragglerTimeout` after ``timeout`` seconds, or as soon as the
        children left cannot end the wait. ``progress()`` runs while waiting (the master's parameter sends).
        """
        start = time.monotonic()
        self._interrupt, self._progress = interrupt, progress
        try:
            rows, bad = self.collection.collect(self, t, deadline=start + timeout, timeout=timeout, stop_at=stop_at,
                                                bad=bad or (), check_finite=check_finite)
        finally:
            self._interrupt = self._progress = None
        return rows, {"bad": bad, "waited": time.monotonic() - start}

    def drain(self, timeout: float) -> list[int]:
        """Drop data messages until every child has sent FINAL; returns the rows that did not within timeout."""
        start = time.perf_counter()
        for i in range(self.K):
            if self.held[i] is not None and not self.final[i]:
                self.reqs[i] = self._post(i)
        while not all(self.final):
            hit = self._poll_one()
            if hit is not None:
                self.reqs[hit[0]] = self._post(hit[0])
                continue
            if time.perf_counter() - start > timeout:
                return [i for i in range(self.K) if not self.final[i]]
            if self.poll:
                time.sleep(self.poll)
        return []

    def discard(self, until: Any) -> None:
        """Drop every data message until ``until()`` is true (a hung parent must not block its children)."""
        for i in range(self.K):
            if self.held[i] is not None and not self.final[i]:
                self.reqs[i] = self._post(i)
        while not until():
            hit = self._poll_one()
            if hit is not None:
                self.reqs[hit[0]] = self._post(hit[0])
            elif self.poll:
                time.sleep(self.poll)

    def cancel(self) -> None:
        """Cancel the receives still posted (only after :meth:`drain` failed)."""
        for r in self.reqs:
            if r != self.MPI.REQUEST_NULL:
                r.Cancel()


#: Elements of the parameters copied per :meth:`ParamSender.idle` call while a spare copy is prepared (2**16
#: float64: 512 KiB, tens of microseconds between two polls of the master's receives).
CHUNK = 1 << 16
#: After a copy was needed, :meth:`ParamSender.idle` prepares spare copies for this many iterations.
RECENT = 8


class ParamSender:
    """The master's parameter broadcast to every worker without collectives (stragglers must not block it).

    Iteration ``t``'s parameters are copied once into a free buffer and ``Isend`` to each worker whose previous
    parameter message has been received; a worker still busy receiving an older one gets the newest parameters
    as soon as that completes (:meth:`progress`), so a late worker skips ahead instead of replaying iterations.
    A buffer is reused once no pending send refers to it, so after the first iterations no memory is allocated
    (a worker that never receives pins at most one buffer). A caller that owns its loop can skip the copy:
    :meth:`writable` returns the current parameters in one of these buffers, which no pending send reads, and
    :meth:`send` of that very array sends it as it is.

    When a slow worker is still receiving the current parameters at the end of an iteration, :meth:`writable`
    needs a copy (MPI forbids changing a buffer that a pending send reads: MPI standard 4.0, section 3.7.2).
    That copy is taken off the critical path: while the master waits for its messages it calls :meth:`idle`,
    which copies the current parameters into a spare buffer :data:`CHUNK` elements at a time (between two polls),
    as long as a copy was needed in the last :data:`RECENT` iterations; :meth:`writable` then returns the spare
    (finishing its copy if the wait was too short). :attr:`copies` counts the copies :meth:`writable` and
    :meth:`send` made on the critical path, :attr:`copied` the elements they copied, :attr:`prepared` the spare
    copies made while waiting.
    """

    def __init__(self, comm: Any, dests: list[int], p: int, dtype: Any, tags: Tags) -> None:
        self.MPI = get_mpi()
        self.comm = comm
        self.dests = [int(d) for d in dests]
        self.p, self.dtype, self.tags = int(p), np.dtype(dtype), tags
        self.buffers: list[np.ndarray] = []
        self.refs: list[int] = []
        self.pending: list[tuple[Any, int] | None] = [None] * len(self.dests)
        self.want = [False] * len(self.dests)
        self.current = -1
        self.t = -1
        self.copies = 0                     # parameter copies made on the critical path (writable, send)
        self.copied = 0                     # elements those copies (and finished spares) copied on it
        self.prepared = 0                   # spare copies made while waiting (idle)
        self._spare = -1                    # the buffer being prepared as a copy of buffers[_spare_of]
        self._spare_of = -1
        self._spare_done = 0                # elements of the spare copied so far
        self._recent = 0                    # iterations left in which idle() prepares spares

    def _free_buffer(self) -> int:
        for b, r in enumerate(self.refs):
            if r == 0 and b != self.current:
                return b
        self.buffers.append(np.empty(self.p, dtype=self.dtype))
        self.refs.append(0)
        return len(self.buffers) - 1

    def _send(self, w: int) -> None:
        b = self.current
        req = self.comm.Isend(self.buffers[b], dest=self.dests[w], tag=self.tags.tag(self.t))
        self.pending[w] = (req, b)
        self.refs[b] += 1
        self.want[w] = False

    def progress(self) -> None:
        """Complete finished sends and send the newest parameters to workers that were still busy."""
        for w, pend in enumerate(self.pending):
            if pend is not None and pend[0].Test():
                self.refs[pend[1]] -= 1
                self.pending[w] = None
                if self.want[w]:
                    self._send(w)

    def idle(self) -> None:
        """Called while the master waits for messages: :meth:`progress`, then, when a copy of the current
        parameters was needed recently and a pending send still reads them, copy the next :data:`CHUNK` elements
        of them into a spare buffer (which :meth:`writable` returns instead of copying on the critical path)."""
        self.progress()
        b = self.current
        # only while a pending send reads the buffer (preparing a copy also for a deferred send, to a worker
        # still receiving older parameters, was tried and was slower: that send usually completes in time)
        if self._recent <= 0 or b < 0 or not self.refs[b]:
            return
        if self._spare_of != b:
            self._spare_of, self._spare_done = b, 0
            self._spare = self._free_buffer()
        a = self._spare_done
        if a < self.p:
            e = min(self.p, a + CHUNK)
            np.copyto(self.buffers[self._spare][a:e], self.buffers[b][a:e])
            self._spare_done = e
            if e == self.p:
                self.prepared += 1

    def _copy(self, params: np.ndarray) -> np.ndarray:
        """``params`` copied into a free buffer on the critical path (counted)."""
        nb = self._free_buffer()
        np.copyto(self.buffers[nb], params)
        self.copies += 1
        self.copied += self.p
        return self.buffers[nb]

    def _check(self, params: Any) -> None:
        if not isinstance(params, np.ndarray) or params.shape != (self.p,) or params.dtype != self.dtype:
            raise GradcodesValueError(f"params must keep shape ({self.p},) and dtype {self.dtype}; got "
                             f"{getattr(params, 'shape', type(params).__name__)} {getattr(params, 'dtype', '')}")

    def writable(self, params: np.ndarray) -> np.ndarray:
        """The parameters ``params`` in a buffer of this sender that the caller may change until it passes it to
        :meth:`send` (which then sends it without a copy): ``params`` itself when it is such a buffer and no
        pending send reads it, else a copy in another buffer (only while a slow worker is still receiving): the
        spare prepared by :meth:`idle` while the master waited (finished here if the wait was too short), or a
        copy made now."""
        self._check(params)
        self.progress()
        spare, of, done = self._spare, self._spare_of, self._spare_done
        self._spare_of = -1
        for b, buf in enumerate(self.buffers):
            if buf is params:
                if self.refs[b] == 0:
                    self._recent = max(0, self._recent - 1)
                    return buf
                self._recent = RECENT                     # a slow worker: prepare the next copies while waiting
                if of == b:
                    if done < self.p:
                        np.copyto(self.buffers[spare][done:], buf[done:])
                        self.copied += self.p - done
                    return self.buffers[spare]
                break
        return self._copy(params)

    def send(self, params: np.ndarray, t: int) -> None:
        """Send iteration ``t``'s parameters: copied, so the caller may change ``params`` right away, unless
        ``params`` is an array returned by :meth:`writable` (sent as it is; change it only through
        :meth:`writable` again)."""
        self._check(params)
        self._spare_of = -1
        b = next((i for i, buf in enumerate(self.buffers) if buf is params), -1)
        if b < 0 or self.refs[b]:
            params = self._copy(params)
            b = next(i for i, buf in enumerate(self.buffers) if buf is params)
        self.current, self.t = b, t
        self.progress()                   # finished sends; workers that were busy get these parameters now
        for w in range(len(self.dests)):
            if self.pending[w] is None:
                self._send(w)
            else:
                self.want[w] = True

    def stop(self, poll: float, timeout: float) -> list[int]:
        """Send STOP to every worker after its pending parameters; returns the workers that did not take them."""
        start = time.perf_counter()
        stops = []
        left = set(range(len(self.dests)))
        while left:
            self.progress()
            for w in sorted(left):
                if self.pending[w] is None:
                    stops.append(self.comm.Isend(np.empty(0, dtype=self.dtype), dest=self.dests[w],
                                                 tag=Tags.STOP))
                    left.discard(w)
            if not left or time.perf_counter() - start > timeout:
                break
            time.sleep(poll or 1e-4)
        for w in sorted(left):   # still busy: send STOP anyway (it queues behind the pending parameters)
            stops.append(self.comm.Isend(np.empty(0, dtype=self.dtype), dest=self.dests[w], tag=Tags.STOP))
        for r in stops:
            wait_request(r, poll, "STOP", timeout)
        return sorted(left)
