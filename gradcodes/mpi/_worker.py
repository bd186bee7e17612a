"""The workers (ranks ``1..N``) of an MPI job, and the watchdog that ends a stuck one.

A worker waits for the newest parameters (skipping iterations it missed), computes its own message from its own
partial gradients (:class:`WorkerEncoder`, or a ``coded_gradient`` callback), a CodedReduce parent adds the decode
of its first ``n - s`` children, and sends the result up. Its master is ``gradcodes.mpi._master``.
"""

from __future__ import annotations

import math
import os
import sys
import threading
import time
from collections.abc import Callable
from typing import Any

import numpy as np

from .. import CodedReduceCode, LinearCode
from .._base.aliases import DTypeLike
from .._base.errors import GradcodesTypeError, GradcodesValueError
from .._base.log import get_logger
from .._runtime.codec import Combiner, WorkerEncoder
from .._runtime.delays import Delay, NoDelay
from .._runtime.layout import layout_for, write_tail
from .._runtime.setup import GRACE, check_grace, height, limit_blas, wait_tracker
from .._simulate._policies import WaitPolicy
from ._comm import Inbox, StragglerTimeout, Tags, finite, get_mpi, wait_request, world
from ._setup import check_same_code, check_size

_log = get_logger("mpi")

#: seconds a watchdog waits between ``MPI_Finalize`` and ``os._exit`` (an exit right after it was sometimes
#: reported by hydra as a bad termination: measured, ``docs/runtime.md``)
EXIT_PAUSE = 0.5

__all__ = ["Worker"]

#: Sleep granularity of an injected delay: a worker checks for newer parameters this often while it "computes".
NAP = 1e-3


class _Watchdog(threading.Thread):
    """A worker's control receiver: polls a receive on the control communicator for the master's stop message
    (posted for the whole run, so the message arrives however stuck the worker's compute is). When it came and
    :attr:`done` (set by :meth:`Worker.run` on its way out) is not set within ``wait`` seconds, the worker is
    stuck: the watchdog prints why, calls ``MPI_Finalize`` (which returns once the other ranks finalize, so
    mpiexec sees a clean exit and the master is not killed) and ends the process with status 0
    (``os._exit``). Without ``MPI_Finalize``, MPICH's hydra takes the exit for a failure: it kills the ranks still
    running, the master included (measured, ``docs/runtime.md``)."""

    def __init__(self, comm: Any, rank: int, wait: float, dtype: Any) -> None:
        super().__init__(daemon=True, name=f"gradcodes-watchdog-{rank}")
        self.rank, self.wait = int(rank), float(wait)
        self.buf = np.empty(0, dtype=dtype)
        self.req = comm.Irecv(self.buf, source=0, tag=0)
        self.stopped = threading.Event()
        self.done = threading.Event()

    def run(self) -> None:
        ended: float | None = None
        while not self.req.Test():
            if self.done.is_set():            # the run ended; the control message may still be on its way
                ended = time.monotonic() if ended is None else ended
                if time.monotonic() - ended > self.wait:
                    return                    # Worker.run cancels the receive
            time.sleep(0.02)
        self.stopped.set()
        if self.done.wait(self.wait):
            return
        try:
            # written straight to stderr, not through the logger: a handler's lock held by the stuck compute thread
            # must not keep this process from ending
            sys.stdout.flush()
            print(f"gradcodes.mpi: rank {self.rank}: the master's stop message came {self.wait:g} s ago and this "
                  "worker has not finished (its compute has not returned): ending the process with status 0",
                  file=sys.stderr, flush=True)
            get_mpi().Finalize()
            time.sleep(EXIT_PAUSE)
        except BaseException as exc:        # exiting without MPI_Finalize: hydra will take it for a failure
            print(f"gradcodes.mpi: rank {self.rank}: MPI_Finalize failed: {exc!r}", file=sys.stderr, flush=True)
        finally:
            os._exit(0)


class Worker:
    """A worker rank: receive the newest parameters, compute and send its message (a tree parent also combines
    its first ``n - s`` children).

    Parameters
    ----------
    code : LinearCode
        The same code as the master's.
    length : int
        Number of parameters.
    partial_gradient : callable or None
        ``partial_gradient(params, j) -> flat array of that length``: the gradient on partition ``j`` (on a
        CodedReduce tree, data unit ``j``). May be None when ``coded_gradient`` is given.
    dtype : numpy dtype, default float64
    comm : mpi4py communicator, optional
    delay : Delay, optional
        Injected straggling (:mod:`gradcodes.mpi`'s delay models).
    poll : float, default 1e-4
        Sleep between two polls while waiting (seconds). Workers sleep by default: on oversubscribed cores a
        spinning worker takes the core from the ones computing.
    policy : {"earliest", "first"} or WaitPolicy, optional
        A CodedReduce parent's wait for its children (default ``"earliest"``: the first decodable set of the inner
        code, at most ``n - s`` children; see :class:`Master`).
    coded_gradient : callable, optional
        The fast path: ``coded_gradient(params, weights) -> y`` returns the worker's coded combination directly,
        ``y = sum_j weights[j] g_j(params)`` for ``m = 1`` (``weights``: the worker's row of ``B``, shape
        ``(k,)``, zero on the partitions it does not store) and ``y = sum_{j,u} weights[j, u] g_j^{(u)}`` of
        length ``ceil(length/m)`` for ``m > 1`` (``weights`` of shape ``(k, m)``), in the run's dtype. A model whose
        loss is a sum over samples computes it in one backward pass of the loss with sample weights
        ``weights[j]`` on partition ``j``, so the message costs no more than one gradient (Tandon et al. 2017,
        Section 2: worker ``i`` sends ``b_i G``). The returned array is sent as it is (no copy; a tree parent
        adds its children's decode to it in one pass into its own send buffer, never writing the callback's
        array), and is not read after the next call.
    blas_threads : int or None, default 1
        BLAS threads of this process, set once (through threadpoolctl); None leaves BLAS alone.
    grace : float, default ``GRACE`` (5 s)
        The master's (the same on every rank): when :meth:`run` has not returned ``grace`` seconds per tree level
        below this worker, plus one, after the master's stop message came on the control channel (a leaf:
        ``grace``), the compute is stuck and the process ends itself: ``MPI_Finalize``, then exit status 0
        (``_Watchdog``).

    Notes
    -----
    Everything is checked once at set-up: the code, the sizes, the coefficients (cast to the run's dtype), the
    BLAS threads. The parameters arrive through a posted ``Irecv`` (two buffers: the next parameters land while
    the current ones are in use), a newer message already there is taken instead (skipping ahead), and the
    message is built by :class:`WorkerEncoder` with precomputed coefficients (or by ``coded_gradient``).

    Examples
    --------
    Worker ``i`` runs on rank ``i + 1`` and computes the partitions it stores; its message is what
    :class:`WorkerEncoder` builds:

    >>> import numpy as np, gradcodes as gc
    >>> from gradcodes.mpi import WorkerEncoder, layout_for
    >>> code = gc.cyclic_repetition(4, 1, rng=0)
    >>> layout_for(code).parent(3), WorkerEncoder(code, 2, 10, np.float64).partitions   # rank 3: worker 2
    (0, [2, 3])

    Ranks 1..4 of ``mpiexec -n 5 python -m mpi4py script.py`` (rank 0 runs :class:`Master`), with
    ``grad(w, j)`` the gradient of partition ``j``::

        Worker(code, 10, grad).run()
    """

    def __init__(self, code: LinearCode, length: int,
                 partial_gradient: Callable[[np.ndarray, int], np.ndarray] | None,
                 dtype: DTypeLike = np.float64, *, comm: Any = None, delay: Delay | None = None,
                 poll: float = 1e-4, policy: str | WaitPolicy | None = None,
                 coded_gradient: Callable[[np.ndarray, np.ndarray], np.ndarray] | None = None,
                 blas_threads: int | None = 1, grace: float = GRACE) -> None:
        self.grace = check_grace(grace)
        if partial_gradient is None and coded_gradient is None:
            raise GradcodesTypeError("give partial_gradient(params, j) or coded_gradient(params, weights)")
        if coded_gradient is not None and not callable(coded_gradient):
            raise GradcodesTypeError(f"coded_gradient must be callable, got {type(coded_gradient).__name__}")
        if partial_gradient is not None and not callable(partial_gradient):
            raise GradcodesTypeError(f"partial_gradient must be callable, got {type(partial_gradient).__name__}")
        if not math.isfinite(float(poll)) or poll < 0:
            raise GradcodesValueError(f"poll must be a number of seconds >= 0, got {poll!r}")
        self.MPI = get_mpi()
        self.comm = world(comm)
        self.layout = layout_for(code)
        check_size(self.layout, self.comm, f"code {code.name!r}")
        check_same_code(code, self.comm)
        self.ctrl = self.comm.Dup()                 # the control channel (see Master.ctrl)
        self.rank = self.comm.Get_rank()
        if self.rank == 0:
            raise GradcodesValueError("rank 0 is the master; workers are ranks 1..N")
        limit_blas(blas_threads)
        self.worker = self.rank - 1
        self.code = code
        self.p = int(length)
        self.dtype = np.dtype(dtype)
        self.partial_gradient = partial_gradient
        self.coded_gradient = coded_gradient
        self.delay = delay if delay is not None else NoDelay()
        self._delayed = type(self.delay) not in (Delay, NoDelay)      # no call per iteration without a model
        self.poll = float(poll)
        self.tags = Tags(self.comm)
        self.encoder = WorkerEncoder(code, self.worker, self.p, self.dtype)
        self.load_fraction = len(self.encoder.partitions) / code.k
        self.q = self.encoder.q
        self.parent = self.layout.parent(self.rank)
        kids = self.layout.children(self.rank)
        self.inbox = None
        #: entries after the payload of this worker's messages: a tree parent's 0/1 flags of the ranks below it
        #: whose messages are in its sum (the tree message format, docs/runtime.md); 0 for a leaf
        self.tail = self.layout.tail(self.rank)
        if kids:
            assert isinstance(code, CodedReduceCode)
            self.combiner = Combiner(code.inner)
            self.need = code.branching - code.s
            self.tracker, _ = wait_tracker(code.inner, policy, None, self.dtype)
            self.inbox = Inbox(self.comm, kids, self.q, self.dtype, self.tags, self.poll,
                               extra=self.layout.tail(kids[0]), tracker=self.tracker, need=self.need,
                               who=f"rank {self.rank}: ")
        self.sendbufs = np.zeros((2, self.q + self.tail), dtype=self.dtype)
        self.sendreqs: list[Any] = [self.MPI.REQUEST_NULL, self.MPI.REQUEST_NULL]
        self._cur = 0
        self._status = self.MPI.Status()
        self._empty = np.empty(0, dtype=self.dtype)
        self._next = 0
        self.iterations_done = 0
        # parameters: one Irecv always posted into the buffer not in use
        self._pbufs = np.zeros((2, self.p), dtype=self.dtype)
        self._pviews = [self._pbufs[0], self._pbufs[1]]         # views made once, not per iteration
        self._sviews = [self.sendbufs[0, :self.q], self.sendbufs[1, :self.q]]     # the payloads
        self._sfull = [self.sendbufs[0], self.sendbufs[1]]                        # payload + tail: what is sent
        self._any_tag = self.MPI.ANY_TAG
        self._window = self.tags.window
        self._pcur = 0
        self._preq = self.comm.Irecv(self._pbufs[1], source=0, tag=self.MPI.ANY_TAG)
        self._ptag: int | None = None                        # tag of a completed, not yet taken, message

    @property
    def params(self) -> np.ndarray:
        """The parameters of the iteration being computed (a buffer the runtime reuses)."""
        return self._pviews[self._pcur]

    def _master_waiting(self) -> bool:
        """Newer parameters (or STOP) have arrived."""
        if self._ptag is not None:
            return True
        if self._preq.Test(self._status):
            self._ptag = self._status.Get_tag()
            return True
        return False

    def _recv_params(self) -> int | None:
        """Wait (polling) for the master's next message; take the newest parameters. ``None`` = STOP."""
        if self._ptag is None:                                # the wait: one Test and one sleep per poll
            req, status, poll, sleep = self._preq, self._status, self.poll, time.sleep
            while not req.Test(status):
                if poll:
                    sleep(poll)
            self._ptag = status.Get_tag()
        while True:
            tag, self._ptag = self._ptag, None
            if tag == Tags.STOP:
                self._preq = self.MPI.REQUEST_NULL
                return None
            self._pcur ^= 1                                   # the buffer just filled
            self._preq = self.comm.Irecv(self._pviews[self._pcur ^ 1], source=0, tag=self._any_tag)
            if not self._master_waiting():                    # no newer message: this is the newest
                break
        assert tag is not None
        t = self.tags.iteration(tag, self._next)
        self._next = t + 1
        return t

    def _message(self, params: np.ndarray) -> np.ndarray:
        """This iteration's own message: a send buffer filled by the encoder, or the callback's array."""
        if self.coded_gradient is not None:
            for r in self.sendreqs:                           # the callback may return the same array again
                if r != self.MPI.REQUEST_NULL:
                    wait_request(r, self.poll, "the previous send")
            y = self.coded_gradient(params, self.encoder.weights)
            if not isinstance(y, np.ndarray) or y.shape != (self.q,) or y.dtype != self.dtype:
                self.encoder.check_message(y)
            if self.inbox is not None:                        # a parent: step() adds the children's decode to
                return y                                      # it into a send buffer (no copy of it first)
            if y.flags.c_contiguous:
                return y
            buf = self._sviews[self._cur]
            np.copyto(buf, y)
            return buf
        buf = self._sviews[self._cur]
        req = self.sendreqs[self._cur]
        if not req.Test():                                    # the send of two iterations ago, normally done
            wait_request(req, self.poll, "the previous send")
        assert self.partial_gradient is not None
        self.encoder.encode(params, self.partial_gradient, buf)
        return buf

    def step(self) -> bool:
        """One iteration; returns False once the master said STOP (after finishing cleanly).

        Waits for the newest parameters, computes this worker's message (a tree parent adds the decode of its
        children) and sends it to its parent.

        Returns
        -------
        bool
            True after an iteration, False once the master's stop message came.

        Examples
        --------
        What a step sends is the worker's message, built from the partial gradients of the partitions it stores
        (here worker 2's, rank 3):

        >>> import numpy as np, gradcodes as gc
        >>> from gradcodes.mpi import WorkerEncoder
        >>> code = gc.cyclic_repetition(4, 1, rng=0)
        >>> G = np.arange(40.0).reshape(4, 10)            # the partitions' gradients at the parameters
        >>> y = np.empty(10)
        >>> WorkerEncoder(code, 2, 10, np.float64).encode(None, lambda w, j: G[j], y)
        >>> bool(np.allclose(y, code.encode(G)[2]))
        True

        Ranks 1..4 of ``mpiexec -n 5 python -m mpi4py script.py`` (rank 0 runs :class:`Master`), with ``grad(w,
        j)`` the gradient of partition ``j``: the loop of :meth:`run`, without its watchdog, for a worker that
        does something between two iterations::

            worker = Worker(code, 10, grad)
            while worker.step():                    # False once the master's stop() came
                pass
        """
        t = self._recv_params()
        if t is None:
            self._finish()
            return False
        if self._delayed or self.inbox is not None or self.coded_gradient is not None:
            return self._step(t)
        # the common path (a flat layout's worker, no injected delay): the message built into the send buffer
        # whose previous send (two iterations ago) has completed, and sent; a few Python calls per iteration
        cur = self._cur
        req = self.sendreqs[cur]
        if not req.Test():
            wait_request(req, self.poll, "the previous send")
        y = self._sviews[cur]
        assert self.partial_gradient is not None                   # given when coded_gradient is not
        self.encoder.encode(self._pviews[self._pcur], self.partial_gradient, y)
        self.sendreqs[cur] = self.comm.Isend(y, dest=self.parent, tag=Tags.FIRST + t % self._window)
        self._cur = cur ^ 1
        self.iterations_done += 1
        return True

    def _step(self, t: int) -> bool:
        """The rest of :meth:`step` with an injected delay, children to combine or a ``coded_gradient``."""
        if self._delayed:
            start = time.perf_counter()
            d = self.delay.delay(self.worker, t, workers=self.layout.workers, load_fraction=self.load_fraction)
        else:
            start, d = 0.0, 0.0
        if d == math.inf:                                   # hung: never answers (children are drained)
            if self.inbox is not None:
                self.inbox.discard(self._master_waiting)
            return True
        y = self._message(self.params)
        if self.inbox is not None:
            out = self._children(t, y)
            if out is None:                                 # the master moved on, or too many NaN children
                return True
            y = out
        if d:
            while True:                   # the injected delay; newer parameters (or STOP) abandon this iteration
                rest = start + d - time.perf_counter()
                if rest <= 0:
                    break
                if self._master_waiting():
                    return True
                time.sleep(min(rest, NAP))
        self.sendreqs[self._cur] = self.comm.Isend(y, dest=self.parent, tag=self.tags.tag(t))
        self._cur ^= 1
        self.iterations_done += 1
        return True

    def _children(self, t: int, y: np.ndarray) -> np.ndarray | None:
        """A parent's message: its own ``y`` plus the decode of its first decodable children of iteration ``t``,
        followed by its tail (the flags of the ranks below it whose messages are in the sum, built from the
        children's tails; ``gradcodes._runtime.layout``, tree message format), in a send buffer (``None``: the master
        moved on, or too many children sent NaN/inf to decode; this iteration straggles).

        ``y`` built by the encoder is summed into in place, each child's message checked for NaN/inf on arrival
        (a bad child's message must not reach ``y``, which cannot be rebuilt without recomputing). ``y`` from
        ``coded_gradient`` is left as it is: the sum goes into a send buffer and only that sum is checked (one
        pass in place of one per child); the children are inspected one by one only when the check fails, a
        non-finite child is then dropped as a straggler and the wait resumes, exactly as with the check on
        arrival. A sum that fails with every used child finite (the parent's own message is not, or the sum
        overflows) is sent as it is, as the parent's own message would be."""
        assert self.inbox is not None
        inbox, fused = self.inbox, self.coded_gradient is not None
        bad: list[int] = []
        while True:
            try:
                rows, _ = inbox.collect(t, interrupt=self._master_waiting, check_finite=not fused, bad=bad)
            except StragglerTimeout:
                return None
            if rows is None:
                return None
            if not fused:
                self.combiner.combine(rows, inbox.buf, y, accumulate=True)
                break
            if self.combiner.combine_finite(rows, inbox.buf, self._sviews[self._cur], base=y):
                break
            culprits = [i for i in rows if not finite(inbox.buf[i])]
            if not culprits:
                break
            bad += culprits
        write_tail(self.sendbufs[self._cur, self.q:], rows, inbox.tail)     # which workers are in the sum
        inbox.release(rows)
        return self._sfull[self._cur]

    def run(self) -> int:
        """Run until STOP; returns the number of iterations this worker answered.

        A watchdog thread receives the master's control stop message: if this call has not returned a grace
        after it (the compute is stuck), the watchdog ends the process (``_Watchdog``).

        Returns
        -------
        int
            The number of iterations this worker answered.

        Examples
        --------
        Every worker of a master--worker code answers rank 0:

        >>> import gradcodes as gc
        >>> from gradcodes.mpi import layout_for
        >>> layout = layout_for(gc.cyclic_repetition(4, 1, rng=0))
        >>> [layout.parent(rank) for rank in range(1, layout.size)]
        [0, 0, 0, 0]

        Ranks 1..4 of ``mpiexec -n 5 python -m mpi4py script.py`` (rank 0 runs :class:`Master`), with ``grad(w,
        j)`` the gradient of partition ``j``::

            worker = Worker(code, 10, grad)
            answered = worker.run()                 # returns after the master's stop()
        """
        dog = _Watchdog(self.ctrl, self.rank, self.grace * (height(self.layout, self.rank) + 1), self.dtype)
        dog.start()
        try:
            while self.step():
                pass
        except BaseException:
            dog.wait = 0.0                     # the error ends the job: the watchdog goes at once
            raise
        finally:
            dog.done.set()
            dog.join()
            if not dog.stopped.is_set():       # ended without the control message (an error): withdraw it
                dog.req.Cancel()
                dog.req.Wait()
        return self.iterations_done

    def _finish(self, timeout: float | None = None) -> None:
        if self.inbox is not None:
            wait = self.grace * height(self.layout, self.rank) if timeout is None else timeout
            missing = self.inbox.drain(wait)
            if missing:                          # the run has finished: report, never raise
                _log.warning("gradcodes.mpi: rank %d: children %s did not say goodbye within %g s of the stop "
                             "message", self.rank, [self.inbox.sources[i] for i in missing], wait)
                self.inbox.cancel()
            timeout = wait
        else:
            timeout = self.grace if timeout is None else timeout
        for r in self.sendreqs:
            wait_request(r, self.poll, "a pending send", timeout)
        self.comm.Send(self._empty, dest=self.parent, tag=Tags.FINAL)
