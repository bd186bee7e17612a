"""Partial-straggler protocols on MPI: several messages per worker and iteration, one per finished chunk.

Ramamoorthy, Meng & Girimaji (NeurIPS 2024): worker ``i`` processes its chunks in ``code.order[i]`` and sends a
message after each (:func:`gradcodes.partial_straggler_code`); the master decodes as soon as every chunk has ``m``
messages, so a slow worker's finished chunks count. Rank 0 is the master, rank ``i + 1`` worker ``i``.

Messages. Everything on the gradient path is a buffer send of a preallocated numpy array (no pickling). The tag of
worker ``i``'s message after its ``pos``-th chunk of iteration ``t`` is ``FIRST + (t mod W) G + pos`` (``G`` the
largest load, ``W`` the tag window divided by ``G``), so the tag carries the iteration and the chunk. The master
keeps one ``Irecv`` posted per worker, into a ring of ``gamma_i`` preallocated rows of that worker: by MPI's
non-overtaking rule (MPI standard 4.0, section 3.5) a worker's messages arrive in the order it sent them, so the
messages of one iteration fill consecutive ring rows and never overwrite each other; a message of an older
iteration is dropped and its row re-used. The master counts, per chunk, the messages of the current iteration
(O(1) per message) and decodes when every count reaches ``m``: the decoding vector of the arrived messages (the
code's cached :class:`~gradcodes.ChunkDecoder` matrix) is applied to the rows it uses, one vectorised
multiply-add per used message. Workers keep ``gamma_i`` send buffers (a buffer is reused once its previous send
has completed) and two parameter buffers (the next ``Irecv`` is posted while computing, so newer parameters are
noticed between two chunks and the rest of an old iteration is skipped). With a ``deadline`` the master stops
waiting then and returns the least-squares estimate from the messages that arrived (approximate recovery).
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import numpy as np

from .._base.aliases import DTypeLike
from .._base.errors import GradcodesTypeError, GradcodesValueError
from .._base.validate import check_real
from .._runtime.delays import Delay, NoDelay
from ._comm import ParamSender, StragglerTimeout, Tags, get_mpi, wait_request

if TYPE_CHECKING:
    from .._families.partial_stragglers import PartialStragglerCode

__all__ = ["ChunkTags", "PartialMaster", "PartialWorker"]


class ChunkTags(Tags):
    """Tags of per-chunk messages: ``FIRST + (t mod W) G + pos`` for chunk position ``pos < G`` of iteration ``t``.

    >>> tags = ChunkTags(G=3, tag_ub=32767)
    >>> tags.chunk_tag(5, 2), tags.split(tags.chunk_tag(5, 2), near=5)
    (20, (5, 2))
    """

    def __init__(self, comm: Any = None, *, G: int, tag_ub: int | None = None) -> None:
        super().__init__(comm, tag_ub=tag_ub)
        self.G = int(G)
        self.chunk_window = self.window // self.G

    def chunk_tag(self, t: int, pos: int) -> int:
        """The tag of the message after chunk position ``pos`` of iteration ``t``."""
        return self.FIRST + (t % self.chunk_window) * self.G + pos

    def split(self, tag: int, near: int) -> tuple[int, int]:
        """``(iteration, position)`` of a chunk tag, the iteration taken nearest to ``near``."""
        slot, pos = divmod(tag - self.FIRST, self.G)
        d = (near - slot) % self.chunk_window
        if d >= self.chunk_window // 2:
            d -= self.chunk_window
        return near - d, pos


def _check_code(code: Any) -> Any:
    from .._families.partial_stragglers import PartialStragglerCode

    if not isinstance(code, PartialStragglerCode):
        raise GradcodesTypeError(f"code must be a PartialStragglerCode (gradcodes.partial_straggler_code), got "
                                 f"{type(code).__name__}")
    if code.exact:
        raise GradcodesValueError("code: the MPI runtime sends float messages; build the code with field='real'")
    return code


def _check_comm(code: Any, comm: Any) -> None:
    size = comm.Get_size()
    if size != code.workers + 1:
        raise GradcodesValueError(f"the partial-straggler runtime needs {code.workers + 1} MPI ranks (1 master + "
                                  f"{code.workers} workers), this job has {size}: run it with  mpiexec -n "
                                  f"{code.workers + 1} python -m mpi4py ...")


class PartialMaster:
    """Rank 0 of a partial-straggler job: sends parameters, collects per-chunk messages, decodes.

    Parameters
    ----------
    code : PartialStragglerCode
        The protocol (float, ``field="real"``); every rank must build the same one.
    comm : mpi4py communicator
        ``code.workers + 1`` ranks.
    p : int >= 1
        Gradient length.
    dtype : {float64, float32}, default float64
        Dtype of parameters and messages.
    poll : float >= 0, default 0
        Sleep between polls while waiting (0: spin).

    Raises
    ------
    GradcodesValueError
        If ``p`` is not an integer >= 1, ``dtype`` is not float64 or float32, the code is not over the reals, or
        the communicator has not ``code.workers + 1`` ranks.
    GradcodesTypeError
        If ``code`` is not a :class:`~gradcodes.PartialStragglerCode`.

    Examples
    --------
    The job needs ``code.workers + 1`` ranks; worker ``i`` sends a message after each of its chunks, in the order
    ``code.order[i]``:

    >>> import gradcodes as gc
    >>> code = gc.partial_straggler_code(4, 1)
    >>> code.workers + 1, code.n, code.order[0]          # mpiexec -n 5; 8 messages per iteration
    (5, 8, (0, 1))

    Rank 0 of ``mpiexec -n 5 python -m mpi4py script.py`` (ranks 1..4 run :class:`PartialWorker`)::

        master = PartialMaster(code, MPI.COMM_WORLD, p=10)
        w = np.zeros(10)
        for t in range(100):
            master.broadcast(w, t)
            g, info = master.aggregate(t, timeout=60)
            w -= 0.1 * g
        master.stop()
    """

    def __init__(self, code: PartialStragglerCode, comm: Any, p: int, *, dtype: DTypeLike = np.float64,
                 poll: float = 0.0) -> None:
        self.MPI = get_mpi()
        self.code = _check_code(code)
        _check_comm(code, comm)
        if isinstance(p, bool) or not isinstance(p, (int, np.integer)) or p < 1:
            raise GradcodesValueError(f"p must be an integer >= 1 (the gradient length), got {p!r}")
        self.dtype = np.dtype(dtype)
        if self.dtype not in (np.dtype(np.float64), np.dtype(np.float32)):
            raise GradcodesValueError(f"dtype must be float64 or float32, got {self.dtype}")
        self.comm, self.p, self.poll = comm, int(p), float(poll)
        self.q = -(-self.p // code.m)
        loads = np.diff(code.offsets)
        self.tags = ChunkTags(comm, G=int(loads.max()))
        self.params = ParamSender(comm, list(range(1, code.workers + 1)), self.p, self.dtype, self.tags)
        self.ring = np.zeros((code.n, self.q), dtype=self.dtype)     # worker i: rows offsets[i] .. offsets[i+1]-1
        self.next_row = [int(o) for o in code.offsets[:-1]]            # the row the posted receive fills
        self.slot = np.full(code.n, -1, dtype=np.int64)               # message -> ring row (current iteration)
        self.final = [False] * code.workers
        self.out = np.zeros(code.m * self.q, dtype=self.dtype)
        self.scratch = np.zeros(self.q, dtype=self.dtype)
        self._status = self.MPI.Status()
        self.reqs = [self._post(i) for i in range(code.workers)]
        self.stale = 0
        self._sent = -math.inf                          # time of the last broadcast (for a deadline)

    def _post(self, i: int) -> Any:
        return self.comm.Irecv(self.ring[self.next_row[i]], source=i + 1, tag=self.MPI.ANY_TAG)

    def _advance(self, i: int) -> None:
        lo, hi = int(self.code.offsets[i]), int(self.code.offsets[i + 1])
        self.next_row[i] = lo + (self.next_row[i] + 1 - lo) % (hi - lo)

    def broadcast(self, params: np.ndarray, t: int) -> None:
        """Send iteration ``t``'s parameters to every worker (without blocking on stragglers).

        Parameters
        ----------
        params : ndarray, shape (p,)
            The parameters, in the run's dtype (copied).
        t : int
            The iteration.

        Examples
        --------
        The parameters go to every worker, ranks ``1 .. code.workers``:

        >>> import gradcodes as gc
        >>> code = gc.partial_straggler_code(4, 1)
        >>> list(range(1, code.workers + 1))               # mpiexec -n 5: the ranks broadcast sends to
        [1, 2, 3, 4]

        Rank 0 of ``mpiexec -n 5 python -m mpi4py script.py`` (ranks 1..4 run :class:`PartialWorker`)::

            master = PartialMaster(code, MPI.COMM_WORLD, p=10)
            w = np.ones(10)
            for t in range(3):
                master.broadcast(w, t)              # copied: w may change at once
                g, info = master.aggregate(t, timeout=60)
                w = w - 0.1 * g
            master.stop()
        """
        self._sent = time.perf_counter()
        self.params.send(params, t)

    def aggregate(self, t: int, *, timeout: float = math.inf,
                  deadline: float | None = None) -> tuple[np.ndarray, dict[str, Any]]:
        """Wait until every chunk has ``m`` messages of iteration ``t``; return the decoded sum (length ``p``; a
        view of a buffer reused next iteration) and ``{"messages": rows used, "arrived": per-worker counts,
        "wait": seconds, "squared_error": 0}``.

        ``deadline`` (seconds after :meth:`broadcast`): stop waiting then, with the messages that arrived, and
        return the least-squares estimate of the sum (:meth:`gradcodes.PartialStragglerCode.estimate`, the
        ``"chunks_lstsq"`` decoder: exact on every chunk with ``m`` messages, the orthogonal projection on the
        others) with ``info["squared_error"] = sum_j max(0, m - c_j)`` (``c_j`` messages about chunk ``j``; 0 when
        every chunk was complete: then the decode is the exact one). Not a proof of exactness when positive.

        Parameters
        ----------
        t : int
            The iteration just broadcast.
        timeout : float, default inf
            Seconds to wait for every chunk's ``m`` messages.
        deadline : float, optional
            Seconds after :meth:`broadcast` to stop waiting, as above.

        Returns
        -------
        gradient : ndarray, shape (p,)
            The decoded sum (exact) or, past the deadline, the least-squares estimate.
        info : dict
            ``"messages"`` (the message rows used), ``"arrived"`` (messages per worker), ``"wait"`` (seconds),
            ``"stale"`` (older messages dropped so far) and ``"squared_error"``.

        Raises
        ------
        StragglerTimeout
            After ``timeout`` seconds with a chunk that has fewer than ``m`` messages (without a deadline).
        NonFiniteMessageError
            When used messages hold NaN or inf, naming their workers.
        GradcodesValueError
            If ``deadline`` is negative or not a number.

        Examples
        --------
        The decode needs ``m`` messages about every chunk, from any workers: the first message of each of the
        four workers (rows 0, 2, 4, 6) covers the four chunks, and decodes to the sum:

        >>> import numpy as np, gradcodes as gc
        >>> code = gc.partial_straggler_code(4, 1)
        >>> rows = [0, 2, 4, 6]
        >>> code.m, code.message_chunk[rows].tolist()      # one message about each chunk
        (1, [0, 1, 2, 3])
        >>> G = np.arange(40.0).reshape(4, 10)            # the chunks' gradients
        >>> Y = code.encode(G)                            # the 8 messages
        >>> bool(np.allclose(code.decode(rows, Y[rows]), G.sum(axis=0)))
        True

        Rank 0 of ``mpiexec -n 5 python -m mpi4py script.py`` (ranks 1..4 run :class:`PartialWorker`), exact
        decodes, then a deadline of 50 ms after each broadcast (the least-squares estimate when chunks lack
        messages then)::

            master = PartialMaster(code, MPI.COMM_WORLD, p=10)
            w = np.zeros(10)
            for t in range(4):
                master.broadcast(w, t)
                g, info = master.aggregate(t, timeout=60, deadline=None if t < 2 else 0.05)
                print(t, info["messages"], info["squared_error"])
                w = w - 0.1 * g
            master.stop()
        """
        code = self.code
        start = time.perf_counter()
        stop_at = math.inf
        if deadline is not None:
            stop_at = self._sent + check_real("deadline", deadline, 0.0)
        self.slot[:] = -1
        counts = np.zeros(code.k, dtype=np.int64)
        missing = code.k
        arrived = np.zeros(code.workers, dtype=np.int64)
        while missing:
            idx, flag = self.MPI.Request.Testany(self.reqs, self._status)
            if not flag or idx == self.MPI.UNDEFINED or idx < 0:
                self.params.progress()
                now = time.perf_counter()
                if now >= stop_at:
                    break
                if now - start > timeout:
                    late = [j for j in range(code.k) if counts[j] < code.m]
                    raise StragglerTimeout(f"iteration {t}: chunks {late} have fewer than m={code.m} messages "
                                           f"after {timeout:g} s")
                if self.poll:
                    time.sleep(self.poll)
                continue
            tag = self._status.Get_tag()
            if tag == Tags.FINAL:
                self.final[idx] = True
                self.reqs[idx] = self.MPI.REQUEST_NULL
                continue
            it, pos = self.tags.split(tag, t)
            row = self.next_row[idx]
            if it == t:
                msg = int(code.offsets[idx]) + pos
                self.slot[msg] = row
                arrived[idx] += 1
                j = int(code.message_chunk[msg])
                counts[j] += 1
                if counts[j] == code.m:
                    missing -= 1
                self._advance(idx)
            else:
                self.stale += 1                     # an older iteration: drop, re-use the row
            self.reqs[idx] = self._post(idx)
        waited = time.perf_counter() - start
        mask = self.slot >= 0
        F = np.flatnonzero(mask)
        if missing:                                     # stopped at the deadline: the least-squares estimate
            A = np.asarray(code._raw_decoding_matrix(F, mask, code.decoders["chunks_lstsq"])[0], dtype=np.float64)
            used = np.flatnonzero((A != 0).any(axis=0))
            sq = int(code.squared_error(mask))
        else:
            A = code.decoding_matrix(F, dtype=self.dtype)
            used = np.flatnonzero(code.used_messages(mask))
            sq = 0
        out2 = self.out.reshape(code.m, self.q)
        out2[...] = 0
        for u in range(code.m):         # one vectorised multiply-add per used message (no temporaries)
            for r in used:
                a = float(A[u, r])
                if a == 1.0:
                    np.add(out2[u], self.ring[self.slot[r]], out=out2[u])
                elif a != 0.0:
                    np.multiply(self.ring[self.slot[r]], a, out=self.scratch)   # a Python float: the dtype stays
                    np.add(out2[u], self.scratch, out=out2[u])
        if not np.isfinite(self.out).all():              # one check of the decode; the senders only when it fails
            bad = sorted({int(code.message_worker[r]) for r in used if not np.isfinite(self.ring[self.slot[r]]).all()})
            if bad:
                from .._core.acceptance import NonFiniteMessageError

                raise NonFiniteMessageError(f"iteration {t}: the chunk messages of workers {bad} hold NaN or inf, "
                                            f"so the decoded gradient is not finite", responders=bad)
        return self.out[: self.p], {"messages": tuple(int(r) for r in used), "arrived": arrived.tolist(),
                                    "wait": waited, "stale": self.stale, "squared_error": sq}

    def stop(self, timeout: float = 30.0) -> None:
        """Send STOP to every worker and drain their remaining messages until each has said FINAL.

        Parameters
        ----------
        timeout : float, default 30
            Seconds to wait for every worker's FINAL.

        Raises
        ------
        StragglerTimeout
            When workers did not say FINAL within ``timeout`` (their receives are cancelled).

        Examples
        --------
        Rank 0 of ``mpiexec -n 5 python -m mpi4py script.py`` (ranks 1..4 run :class:`PartialWorker`), ``code`` as
        in :class:`PartialMaster`'s example; after the last iteration, every worker's :meth:`PartialWorker.run`
        returns::

            master = PartialMaster(code, MPI.COMM_WORLD, p=10)
            w = np.zeros(10)
            for t in range(3):
                master.broadcast(w, t)
                g, info = master.aggregate(t, timeout=60)
                w = w - 0.1 * g
            master.stop(timeout=30)                 # raises StragglerTimeout if a worker never says FINAL
        """
        self.params.stop(self.poll, timeout)
        start = time.perf_counter()
        while not all(self.final):
            idx, flag = self.MPI.Request.Testany(self.reqs, self._status)
            if flag and idx != self.MPI.UNDEFINED and idx >= 0:
                if self._status.Get_tag() == Tags.FINAL:
                    self.final[idx] = True
                    self.reqs[idx] = self.MPI.REQUEST_NULL
                else:
                    self.reqs[idx] = self._post(idx)
                continue
            if time.perf_counter() - start > timeout:
                for r in self.reqs:
                    if r != self.MPI.REQUEST_NULL:
                        r.Cancel()
                raise StragglerTimeout(f"workers {[i for i, f in enumerate(self.final) if not f]} did not stop "
                                       f"within {timeout:g} s")
            time.sleep(self.poll or 1e-4)


class PartialWorker:
    """Rank ``i + 1`` of a partial-straggler job: worker ``i``.

    Parameters
    ----------
    code : PartialStragglerCode
    comm : mpi4py communicator
    p : int >= 1
        Gradient length.
    gradient : callable
        ``gradient(chunk, params) -> array of length p``: the partial gradient of one chunk.
    dtype : {float64, float32}, default float64
    delay : gradcodes.mpi.Delay, optional
        Injected straggling: the worker's ``t``-th chunk of an iteration is finished no earlier than
        ``(t + 1) / gamma_i`` of the model's delay for the iteration (one speed per iteration, as
        :func:`gradcodes.simulate_partial` with ``chunk_times="even"``).
    poll : float >= 0, default 1e-4
        Sleep between polls.

    Raises
    ------
    GradcodesTypeError
        If ``code`` is not a :class:`~gradcodes.PartialStragglerCode`, ``gradient`` is not callable or ``delay``
        not a delay model.
    GradcodesValueError
        If the code is not over the reals, the communicator has not ``code.workers + 1`` ranks, or this rank is
        not a worker rank (1..``code.workers``).

    Examples
    --------
    Worker ``i`` (rank ``i + 1``) computes its chunks in the order ``code.order[i]`` and sends one message after
    each, row ``code.offsets[i] + position`` of the code:

    >>> import gradcodes as gc
    >>> code = gc.partial_straggler_code(4, 1)
    >>> code.order[2], list(range(code.offsets[2], code.offsets[3]))     # rank 3: chunks 2, 3; rows 4, 5
    ((2, 3), [4, 5])

    Ranks 1..4 of ``mpiexec -n 5 python -m mpi4py script.py`` (rank 0 runs :class:`PartialMaster`), with
    ``grad(chunk, w)`` the gradient of one chunk::

        PartialWorker(code, MPI.COMM_WORLD, 10, grad).run()
    """

    def __init__(self, code: PartialStragglerCode, comm: Any, p: int, gradient: Callable[[int, np.ndarray], Any],
                 *, dtype: DTypeLike = np.float64, delay: Delay | None = None, poll: float = 1e-4) -> None:
        self.MPI = get_mpi()
        self.code = _check_code(code)
        _check_comm(code, comm)
        if not callable(gradient):
            raise GradcodesTypeError("gradient must be a callable gradient(chunk, params) -> array of length p")
        if delay is not None and not isinstance(delay, Delay):
            raise GradcodesTypeError(f"delay must be a gradcodes.mpi.Delay, got {type(delay).__name__}")
        self.comm, self.p, self.poll = comm, int(p), float(poll)
        self.dtype = np.dtype(dtype)
        self.i = comm.Get_rank() - 1
        if not 0 <= self.i < code.workers:
            raise GradcodesValueError(f"rank {comm.Get_rank()} is not a worker rank (1..{code.workers})")
        self.gradient, self.delay = gradient, delay or NoDelay()
        self.q = -(-self.p // code.m)
        lo, hi = int(code.offsets[self.i]), int(code.offsets[self.i + 1])
        self.rows = list(range(lo, hi))
        self.tags = ChunkTags(comm, G=int(np.diff(code.offsets).max()))
        self.send_buf = np.zeros((hi - lo, self.q), dtype=self.dtype)
        self.send_req: list[Any] = [None] * (hi - lo)
        self.param_buf = np.zeros((2, self.p), dtype=self.dtype)
        self.sent = 0
        # one encode at set-up: its lazy imports and plans are not paid by the first message
        code.encode_worker(lo, self.param_buf[:1], out=self.send_buf[0])

    def run(self) -> int:
        """Serve iterations until STOP; returns the number of messages sent.

        Returns
        -------
        int
            The chunk messages this worker sent over the whole run.

        Examples
        --------
        Worker 1 (rank 2) sends at most its load of messages per iteration, one per chunk, in its order:

        >>> import gradcodes as gc
        >>> code = gc.partial_straggler_code(4, 1)
        >>> code.order[1], int(code.offsets[2] - code.offsets[1])
        ((1, 2), 2)

        Ranks 1..4 of ``mpiexec -n 5 python -m mpi4py script.py`` (rank 0 runs :class:`PartialMaster`), with
        ``grad(chunk, w)`` the gradient of one chunk::

            worker = PartialWorker(code, MPI.COMM_WORLD, 10, grad)
            sent = worker.run()                     # returns after the master's stop()
        """
        code, MPI = self.code, self.MPI
        st = MPI.Status()
        cur = 0
        req = self.comm.Irecv(self.param_buf[cur], source=0, tag=MPI.ANY_TAG)
        done = False                    # req has completed (its status is in st)
        last = -1
        load = len(self.rows)
        while True:
            while not done and not req.Test(st):
                time.sleep(self.poll)
            done = False
            tag = st.Get_tag()
            if tag == Tags.STOP:
                break
            t = self.tags.iteration(tag, last + 1)
            last = t
            params = self.param_buf[cur]
            cur ^= 1
            req = self.comm.Irecv(self.param_buf[cur], source=0, tag=MPI.ANY_TAG)   # newer parameters, or STOP
            total = self.delay.delay(self.i, t, workers=code.workers, load_fraction=load / code.k)
            begin = time.perf_counter()
            for pos, row in enumerate(self.rows):
                if req.Test(st):
                    done = True
                    break
                g = np.asarray(self.gradient(int(code.order[self.i][pos]), params), dtype=self.dtype)
                due = begin + total * (pos + 1) / load
                while time.perf_counter() < due:
                    if req.Test(st):
                        done = True
                        break
                    time.sleep(min(1e-3, max(0.0, due - time.perf_counter())))
                if done:                # newer parameters (or STOP): the rest of this iteration is stale
                    break
                if self.send_req[pos] is not None:
                    wait_request(self.send_req[pos], self.poll, "previous message")
                code.encode_worker(row, g[None, :], out=self.send_buf[pos])
                self.send_req[pos] = self.comm.Isend(self.send_buf[pos], dest=0, tag=self.tags.chunk_tag(t, pos))
                self.sent += 1
        for r in self.send_req:
            if r is not None:
                wait_request(r, self.poll, "last messages")
        final = self.comm.Isend(np.empty(0, dtype=self.dtype), dest=0, tag=Tags.FINAL)
        wait_request(final, self.poll, "FINAL")
        return self.sent
