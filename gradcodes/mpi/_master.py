"""The master (rank 0) of an MPI job: broadcast the parameters, aggregate the first messages, stop the workers.

Each iteration the master sends the parameters to every worker (:class:`ParamSender`, no collective, so stragglers
cannot block it), waits for the first messages it needs (:class:`Inbox`), and combines them (:class:`Combiner`):
one multiply-add pass per message, one NaN/inf check of the decode. Its workers are ``gradcodes.mpi._worker``.
Launch with ``mpiexec -n SIZE python -m mpi4py script.py``: with ``-m mpi4py`` an uncaught exception on any rank
aborts the whole job (mpi4py documentation, "mpi4py.run").
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass
from typing import Any

import numpy as np

from .. import ApproximateCode, CodedReduceCode, DecodingError, LinearCode
from .._base.aliases import DTypeLike
from .._base.errors import GradcodesRuntimeError, GradcodesTypeError, GradcodesValueError
from .._core.decoders import Decoder
from .._families.adversarial import AdversarialCode
from .._families.adversarial_decode import decode_adversarial
from .._runtime.codec import Combiner
from .._runtime.layout import TreeCheck, layout_for
from .._runtime.setup import GRACE, check_grace, height, limit_blas, wait_count, wait_tracker
from .._simulate._policies import WaitPolicy
from ._comm import Inbox, ParamSender, StragglerTimeout, Tags, finite, world
from ._setup import check_same_code, check_size

__all__ = ["Master", "AggregateInfo"]


@dataclass(frozen=True)
class AggregateInfo:
    """What :meth:`Master.aggregate` reports about one iteration.

    Attributes
    ----------
    iteration : int
    responders : tuple of int
        The master's children whose messages were used, in arrival order (worker indices; for a CodedReduce tree
        the level-1 workers, each carrying its subtree).
    bad : tuple of int
        Children whose message contained NaN or inf (treated as stragglers).
    wait, decode : float
        Seconds spent waiting for messages and combining them.
    error_estimate : float
        The error bound of this decode (exact codes: the acceptance rule's bound for every gradient, see
        :meth:`gradcodes.LinearCode.error_estimate`; approximate codes: ``||A_F B - E||``; CodedReduce trees: the
        bound of the whole pattern decoded, every parent's decoding set composed, as
        :meth:`gradcodes.CodedReduceCode.execute` computes it).
    stale : int
        Messages from earlier iterations dropped by the master so far (cumulative).
    adversaries : tuple of int
        Codes of :func:`gradcodes.adversarial_gc`: the workers whose messages were found wrong and corrected
        (:func:`gradcodes.decode_adversarial`).

    Examples
    --------
    :meth:`Master.aggregate` returns one with every gradient; built by hand here:

    >>> from gradcodes.mpi import AggregateInfo
    >>> info = AggregateInfo(iteration=7, responders=(0, 2, 3), bad=(), wait=0.012, decode=0.0004,
    ...                      error_estimate=1e-15)
    >>> info.responders, info.stale, info.adversaries
    ((0, 2, 3), 0, ())
    """

    iteration: int
    responders: tuple[int, ...]
    bad: tuple[int, ...]
    wait: float
    decode: float
    error_estimate: float
    stale: int = 0
    adversaries: tuple[int, ...] = ()


class Master:
    """The master (rank 0): broadcast the parameters, then aggregate the first messages.

    Parameters
    ----------
    code : LinearCode
        An exact :class:`~gradcodes.GradientCode` (any ``m``), an :class:`~gradcodes.ApproximateCode` or a
        :class:`~gradcodes.CodedReduceCode` (run as a tree).
    length : int
        Number of parameters (the gradient length).
    dtype : numpy dtype, default float64
        Parameters, gradients and messages (float32 stays float32).
    comm : mpi4py communicator, optional
        Default ``MPI.COMM_WORLD``; its size must be the layout's.
    wait_for : int, optional
        Messages to wait for: ``n - s`` for exact codes (the default); for approximate codes the count at which
        the master stops (default ``n - s`` when the code has ``s``, else ``n``).
    deadline : float, optional
        Approximate codes only: stop waiting this many seconds after the broadcast, with whoever answered.
    decoder : str or Decoder, optional
        The decoder (for approximate codes the optimal ``"lstsq"`` or a fixed-weight one).
    timeout : float, default 60
        Seconds to wait for the needed messages before :class:`StragglerTimeout` (naming the missing workers).
    poll : float, default 0
        Sleep between two polls of the posted receives (seconds). The master's receives are the iteration's
        critical path, so by default it spins on ``Testany``; the workers have their own setting
        (:class:`Worker`), whose default sleeps.
    policy : {"earliest", "first"} or WaitPolicy, optional
        When to stop waiting. Default for exact codes (and the children of every CodedReduce parent):
        ``"earliest"``, the first arrival after which the responders can decode
        (:meth:`gradcodes.LinearCode.decodable`; e.g. one worker per group of fractional repetition), at most
        ``n - s`` messages; ``"first"``: the first ``n - s`` (or ``wait_for``) messages.
    blas_threads : int or None, default 1
        BLAS threads of this process, set once here (through threadpoolctl); None leaves BLAS alone.
    grace : float, default ``GRACE`` (5 s)
        After the last iteration (:meth:`stop`): seconds per tree level, plus one, that the master waits for the
        workers' goodbyes; the same on every rank (a worker stuck in its compute ends its own process this long
        after the stop message).

    Notes
    -----
    Per iteration the master combines the messages with the coefficients cached for their responder set (one
    multiply-add pass per message), then checks the decoded gradient for NaN/inf once; only when that check
    fails does it look at the individual messages, treat the non-finite ones' senders as stragglers and wait
    for others. The error estimate is computed once per responder set and cached. A decode that is one message
    with coefficient exactly 1 (``Combiner.single``) is returned as that received message (checked, not
    copied; its receive is posted again at the next :meth:`aggregate`).

    Examples
    --------
    The job needs the ranks of the code's layout, the master and one rank per worker:

    >>> import gradcodes as gc
    >>> from gradcodes.mpi import layout_for
    >>> code = gc.cyclic_repetition(4, 1, rng=0)
    >>> layout = layout_for(code)
    >>> layout.size, layout.children(0)           # mpiexec -n 5: rank 0 the master, ranks 1..4 its workers
    (5, [1, 2, 3, 4])

    Rank 0 of ``mpiexec -n 5 python -m mpi4py script.py`` (ranks 1..4 run :class:`Worker`), the loop of
    :func:`gradcodes.mpi.train`::

        master = Master(code, length=10)
        w = master.writable_params(np.zeros(10))
        for t in range(100):
            master.broadcast(w, t)
            g, info = master.aggregate(t)
            w = master.writable_params(w)
            w -= 0.1 * g
        master.stop()
    """

    def __init__(self, code: LinearCode, length: int, dtype: DTypeLike = np.float64, *, comm: Any = None,
                 wait_for: int | None = None, deadline: float | None = None, decoder: str | Decoder | None = None,
                 timeout: float = 60.0, poll: float = 0.0, policy: str | WaitPolicy | None = None,
                 blas_threads: int | None = 1, grace: float = GRACE) -> None:
        self.grace = check_grace(grace)
        #: workers that did not say goodbye within the grace after the stop message: rank -> how (:meth:`stop`)
        self.failures: dict[int, str] = {}
        self.comm = world(comm)
        self.layout = layout_for(code)
        check_size(self.layout, self.comm, f"code {code.name!r}")
        check_same_code(code, self.comm)
        #: the control channel (a duplicate of ``comm``, collective with the workers' set-up): the stop message
        #: every worker's watchdog receives however stuck its compute is (``_Watchdog``)
        self.ctrl = self.comm.Dup()
        if self.comm.Get_rank() != 0:
            raise GradcodesValueError("the Master runs on rank 0")
        self.code = code
        self.p = int(length)
        self.dtype = np.dtype(dtype)
        if self.dtype.kind != "f":
            raise GradcodesTypeError(f"dtype must be a float dtype, got {self.dtype}")
        if not math.isfinite(float(poll)) or poll < 0:
            raise GradcodesValueError(f"poll must be a number of seconds >= 0, got {poll!r}")
        limit_blas(blas_threads)
        self._adversarial = isinstance(code, AdversarialCode)
        if isinstance(code, AdversarialCode) and policy is None and wait_for is None:
            policy, wait_for = "first", code.n - code.stragglers   # n - s messages: a wrong ones can be corrected
        decoded = code.inner if isinstance(code, CodedReduceCode) else code
        self.tracker, wait_for = wait_tracker(decoded, policy, wait_for, self.dtype)
        self.need = wait_count(code, wait_for)
        if isinstance(code, AdversarialCode) and (self.tracker is not None
                                                  or self.need < code.K + code.adversaries):
            raise GradcodesValueError(
                f"policy / wait_for: an adversarial_gc code's master waits for a count of messages, at least K + a = "
                f"{code.K + code.adversaries} to detect a = {code.adversaries} wrong ones (the default, n - s = "
                f"{code.n - code.stragglers}, also corrects them); got "
                + ("a policy that stops at the first decodable set" if self.tracker is not None
                   else f"{self.need}"))
        if deadline is not None and not isinstance(code, ApproximateCode):
            raise GradcodesValueError("deadline: only approximate codes may stop before n - s messages")
        self.deadline = None if deadline is None else float(deadline)
        self.timeout = float(timeout)
        self.poll = float(poll)
        self.tags = Tags(self.comm)
        tree = isinstance(code, CodedReduceCode)
        self.m = 1 if tree else code.m
        self.q = self.p if tree else -(-self.p // self.m)
        self.combiner = Combiner(code.inner if isinstance(code, CodedReduceCode) else code,
                                 None if tree else decoder)
        kids = self.layout.children(0)
        self.inbox = Inbox(self.comm, kids, self.q, self.dtype, self.tags, self.poll,
                           extra=self.layout.tail(kids[0]) if tree else 0, tracker=self.tracker, need=self.need)
        #: a CodedReduce tree: the whole tree's acceptance of each iteration's pattern (None for flat layouts)
        self.tree_check = TreeCheck(code, self.layout, self.dtype) if isinstance(code, CodedReduceCode) else None
        self.sender = ParamSender(self.comm, list(range(1, self.layout.size)), self.p, self.dtype, self.tags)
        self.out = np.zeros(self.m * self.q, dtype=self.dtype)
        self._grad = self.out[: self.p]
        self._lent = -1                                         # an inbox row returned as the gradient
        self._kid_workers = tuple(r - 1 for r in self.layout.children(0))   # children's worker indices
        self._sent = -math.inf
        self._stopped = False

    def broadcast(self, params: np.ndarray, iteration: int) -> None:
        """Send iteration ``iteration``'s parameters to every worker (non-blocking). ``params`` is copied, unless
        it is the array returned by :meth:`writable_params` (sent without a copy).

        Parameters
        ----------
        params : ndarray, shape (length,)
            The parameters, in the run's dtype.
        iteration : int
            The iteration they are for (the workers answer with their message of it).

        Examples
        --------
        The parameters go to every worker rank, ``1 .. size - 1`` of the code's layout:

        >>> import gradcodes as gc
        >>> from gradcodes.mpi import layout_for
        >>> code = gc.cyclic_repetition(4, 1, rng=0)
        >>> list(range(1, layout_for(code).size))          # mpiexec -n 5: the ranks broadcast sends to
        [1, 2, 3, 4]

        Rank 0 of ``mpiexec -n 5 python -m mpi4py script.py`` (ranks 1..4 run :class:`Worker`): iteration ``t``'s
        parameters go out without waiting for any worker, then its gradient is aggregated::

            master = Master(code, length=10)
            w = np.ones(10)
            for t in range(3):
                master.broadcast(w, t)              # copied: w may change at once
                g, info = master.aggregate(t)
                w = w - 0.1 * g
            master.stop()
        """
        self._sent = time.monotonic()
        self.sender.send(params, iteration)

    def writable_params(self, params: np.ndarray) -> np.ndarray:
        """``params`` in a buffer the caller may update in place and pass to :meth:`broadcast` without a copy.

        Call it after :meth:`aggregate` and before changing the parameters: it returns the same array as long
        as no worker is still receiving it (a copy otherwise).

        Parameters
        ----------
        params : ndarray, shape (length,)
            The current parameters.

        Returns
        -------
        ndarray, shape (length,)
            ``params`` itself when no send still reads it, else a copy of it.

        Examples
        --------
        Rank 0 of ``mpiexec -n 5 python -m mpi4py script.py`` (ranks 1..4 run :class:`Worker`), ``code`` as in
        :class:`Master`'s example; the loop of :func:`gradcodes.mpi.train`, whose parameters are sent without a
        copy and updated in place::

            master = Master(code, length=10)
            w = master.writable_params(np.zeros(10))
            for t in range(3):
                master.broadcast(w, t)              # no copy of a writable buffer
                g, info = master.aggregate(t)
                w = master.writable_params(w)       # w itself, unless a send still reads it
                w -= 0.1 * g
            master.stop()
        """
        return self.sender.writable(params)

    def aggregate(self, iteration: int) -> tuple[np.ndarray, AggregateInfo]:
        """Wait for the messages of ``iteration`` and return ``(gradient, info)``.

        The gradient (of ``length`` coordinates) is a view of a buffer reused by the next call: copy it to keep
        it. Messages from earlier iterations are dropped; a message with NaN/inf makes its sender a straggler. Raises
        :class:`StragglerTimeout` after ``timeout`` seconds without enough messages. On a CodedReduce tree every
        parent accepts its own children's decode, and the master then checks the whole pattern it decoded
        (``TreeCheck`` in ``gradcodes/_runtime/layout.py``: the rule of :meth:`gradcodes.CodedReduceCode.execute`, from
        the flags every parent sends after its payload): a pattern whose composed decode misses the tolerance of
        the messages' dtype raises :class:`gradcodes.DecodingError` naming the ranks.

        Parameters
        ----------
        iteration : int
            The iteration whose messages to decode (the one just broadcast).

        Returns
        -------
        gradient : ndarray, shape (length,)
            The decoded gradient (a view of a reused buffer).
        info : AggregateInfo
            The responders used, the senders dropped, the times and the decode's error estimate.

        Raises
        ------
        StragglerTimeout
            After ``timeout`` seconds without the messages needed, naming the missing workers.
        DecodingError
            On a CodedReduce tree, when the pattern decoded misses the tolerance of the messages' dtype.
        GradcodesRuntimeError
            For an :func:`~gradcodes.adversarial_gc` code, when the messages are inconsistent beyond the wrong
            ones the code corrects.

        Examples
        --------
        The gradient is the decode of the first messages that arrive; when workers 0, 2 and 3 answer, it is what
        :meth:`gradcodes.LinearCode.decode` makes of their messages:

        >>> import numpy as np, gradcodes as gc
        >>> code = gc.cyclic_repetition(4, 1, rng=0)
        >>> G = np.arange(40.0).reshape(4, 10)            # the partitions' gradients
        >>> Y = code.encode(G)                            # the workers' messages
        >>> g = code.decode([0, 2, 3], Y[[0, 2, 3]])
        >>> bool(np.allclose(g, G.sum(axis=0)))
        True

        Rank 0 of ``mpiexec -n 5 python -m mpi4py script.py`` (ranks 1..4 run :class:`Worker`)::

            master = Master(code, length=10)
            w = np.zeros(10)
            for t in range(3):
                master.broadcast(w, t)
                g, info = master.aggregate(t)       # g: a view of a buffer the next call reuses
                print(t, info.responders, info.error_estimate)
                w = w - 0.1 * g
            master.stop()
        """
        deadline = None if self.deadline is None else self._sent + self.deadline
        start = time.perf_counter()
        bad: list[int] = []
        buf, waited = self.inbox.buf, 0.0
        if self._lent >= 0:                                  # the previous gradient was a message: receive again
            self.inbox.release([self._lent])
            self._lent = -1
        grad = self._grad
        while True:
            left = self.timeout if not bad else self.timeout - (time.perf_counter() - start)
            rows, info = self.inbox.collect(iteration, timeout=left, stop_at=deadline, progress=self.sender.idle,
                                            check_finite=False, bad=bad)
            assert rows is not None
            waited += info["waited"]
            t0 = time.perf_counter()
            if self._adversarial:
                culprits = [i for i in rows if not finite(buf[i])]
                if culprits:
                    bad += culprits
                    continue
                assert isinstance(self.code, AdversarialCode)
                res = decode_adversarial(self.code, list(rows), buf[list(rows)])
                if not res.corrected or res.gradient is None:
                    raise GradcodesRuntimeError(
                        f"iteration {iteration}: the messages of workers {sorted(rows)} are inconsistent beyond "
                        f"{self.code.adversaries} wrong ones (more adversaries than the code corrects)")
                np.copyto(self.out, res.gradient)
                adversaries = res.adversarial
                break
            adversaries = ()
            one = self.combiner.single(rows, buf.dtype)
            if one is not None:                                   # the decode is one message as it is: no pass
                if finite(buf[one]):                              # over it but its check, lent until the next call
                    grad, self._lent = buf[one, : self.p], one
                    break
            elif self.combiner.combine_finite(rows, buf, self.out):    # the decode and its one check
                break
            culprits = [i for i in rows if not finite(buf[i])]   # only now: who sent the NaN/inf
            if not culprits:                                      # finite messages, overflowing sum: as decoded
                break
            bad += culprits
        tree_est = None
        if self.tree_check is not None:           # every parent's set was accepted; now the whole tree's decode
            try:
                tree_est = self.tree_check.check(rows, self.inbox.tail, iteration)
            except DecodingError:
                self.inbox.release(rows)
                self._lent = -1
                raise
        self.inbox.release([i for i in rows if i != self._lent])
        dt = time.perf_counter() - t0
        kw = self._kid_workers
        est = self.combiner.error_estimate(rows, self.dtype) if tree_est is None else tree_est
        return grad, AggregateInfo(iteration, tuple(kw[i] for i in rows), tuple(kw[i] for i in bad), waited,
                                         dt, est, self.inbox.dropped, adversaries)

    def stop(self, grace: float | None = None) -> dict[int, str]:
        """Tell every worker to stop; the ranks that did not say goodbye within the grace, and how.

        Every worker gets the stop message twice: at once on the control channel (``ctrl``, received by its
        watchdog thread however stuck its compute is) and on the parameter channel after its pending parameters,
        which ends its loop. The master drains its children's last messages until every child said goodbye
        (``FINAL``) or ``grace`` seconds per tree level below it, plus one, have passed (a flat master:
        ``2 * grace``; default ``grace``). Never raises for a worker that did not answer: the run has
        finished. Such ranks are returned and kept in :attr:`failures`, and the receives still posted for them
        are cancelled.

        Parameters
        ----------
        grace : float, optional
            Seconds per tree level to wait for the goodbyes (default: the ``grace`` given at construction).

        Returns
        -------
        dict of int to str
            The ranks that did not say goodbye, and how; empty when every worker ended cleanly. A second call
            returns the first call's.

        Examples
        --------
        Rank 0 of ``mpiexec -n 5 python -m mpi4py script.py`` (ranks 1..4 run :class:`Worker`), ``code`` as in
        :class:`Master`'s example; after the last iteration::

            master = Master(code, length=10)
            w = np.zeros(10)
            for t in range(3):
                master.broadcast(w, t)
                g, info = master.aggregate(t)
                w = w - 0.1 * g
            failures = master.stop()                # {} when every worker said goodbye
            assert failures == master.failures
        """
        if self._stopped:
            return self.failures
        self._stopped = True
        wait = self.grace if grace is None else check_grace(grace)
        start = time.perf_counter()
        empty = np.empty(0, dtype=self.dtype)
        ctrl = [self.ctrl.Isend(empty, dest=r, tag=0) for r in range(1, self.layout.size)]
        deadline = start + wait * (height(self.layout, 0) + 1)
        try:
            self.sender.stop(self.poll, wait)
        except StragglerTimeout:               # a stop message still queued behind a stuck worker's parameters
            pass
        missing = self.inbox.drain(max(deadline - time.perf_counter(), 0.0))
        failures: dict[int, str] = {}
        for i in missing:
            failures[self.inbox.sources[i]] = (
                f"no goodbye within the grace ({wait * (height(self.layout, 0) + 1):g} s after the stop message): "
                "its compute is stuck (it then ends its own process), or it is stopped (SIGSTOP) or gone")
        if missing:
            self.inbox.cancel()
        for r, req in zip(range(1, self.layout.size), ctrl, strict=True):
            if not req.Test():
                req.Cancel()
                req.Wait()
                failures.setdefault(r, "its control stop message could not be delivered")
        self.failures = failures
        return failures
