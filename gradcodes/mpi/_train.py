"""The high-level training loop, and the ``MPI.Allreduce`` baseline."""

from __future__ import annotations

import math
import time
import warnings
from collections.abc import Callable
from typing import Any

import numpy as np

from .._base.errors import GradcodesTypeError, GradcodesValueError
from .._base.validate import renamed_keyword
from .._core.code import LinearCode
from .._core.decoders import Decoder
from .._runtime.delays import Delay, NoDelay
from .._simulate._policies import FixedK, WaitPolicy
from ._comm import StragglerTimeout, get_mpi
from ._result import RunResult, predict
from ._runtime import GRACE, Master, Worker
from ._setup import limit_blas

__all__ = ["train", "allreduce_train"]

Step = Callable[[np.ndarray, np.ndarray, int], Any]


def _check_params(params: Any) -> np.ndarray:
    if not isinstance(params, np.ndarray) or params.ndim != 1 or params.dtype.kind != "f":
        raise GradcodesTypeError(f"params must be a flat float numpy array, got {type(params).__name__} "
                        f"{getattr(params, 'shape', '')} {getattr(params, 'dtype', '')}")
    return params


def _check_iterations(iterations: Any) -> int:
    if isinstance(iterations, bool) or not isinstance(iterations, (int, np.integer)) or iterations < 1:
        raise GradcodesValueError(f"iterations must be an integer >= 1, got {iterations!r}")
    return int(iterations)


@renamed_keyword("progress", "callback")
def train(code: LinearCode | str, params: np.ndarray,
          partial_gradient: Callable[[np.ndarray, int], np.ndarray] | None, step: Step, *, iterations: int,
          comm: Any = None, delay: Delay | None = None, wait_for: int | None = None, deadline: float | None = None,
          decoder: str | Decoder | None = None, timeout: float = 60.0, poll: float = 1e-4,
          loss: Callable[[np.ndarray], float] | None = None, t_c: float = 0.0,
          callback: Callable[[int, float, Any], None] | None = None, policy: str | WaitPolicy | None = None,
          coded_gradient: Callable[[np.ndarray, np.ndarray], np.ndarray] | None = None, master_poll: float = 0.0,
          blas_threads: int | None = 1, grace: float = GRACE) -> RunResult | None:
    r"""Run distributed gradient descent with a code on MPI; call it on every rank with the same arguments.

    Each iteration the master (rank 0) sends the parameters to every worker, waits for the messages its code
    needs (the first ``n - s`` for an exact code; a count or a deadline for an approximate one; the first
    ``n - s`` children at every parent of a CodedReduce tree), decodes the gradient
    :math:`g = \sum_j g_j` and calls ``step``. Workers skip to the newest parameters when they fall behind.

    Parameters
    ----------
    code : LinearCode or "allreduce"
        A :class:`~gradcodes.GradientCode`, :class:`~gradcodes.ApproximateCode` or
        :class:`~gradcodes.CodedReduceCode`; ``"allreduce"`` runs the uncoded ``MPI.Allreduce`` baseline
        (every worker ``i`` computes partition ``i``; no straggler tolerance).
    params : ndarray, shape (length,)
        The initial parameters (a flat float array; only the master's values are used).
    partial_gradient : callable or None
        ``partial_gradient(params, j)``: the gradient on partition ``j`` (flat, of the parameters' length). May
        be None when ``coded_gradient`` is given.
    step : callable
        ``step(params, gradient, iteration)`` on the master: update ``params`` in place or return new ones
        (same shape and dtype). ``gradient`` is reused by the next iteration: copy it to keep it.
    iterations : int
    comm : mpi4py communicator, optional
        Default ``MPI.COMM_WORLD``.
    delay : Delay, optional
        Injected straggling (evaluated on the workers). Rank 0's model is broadcast to every rank, so random
        models drawn with ``rng=None`` agree across ranks.
    wait_for, deadline, decoder, timeout, policy
        See :class:`Master` (``policy``: default the earliest decodable set for exact codes and at every
        CodedReduce parent; ``"first"`` for the first ``n - s``).
    poll : float, default 1e-4
        The workers' sleep between two polls (seconds); see :class:`Worker`.
    master_poll : float, default 0
        The master's sleep between two polls: by default it spins, its receives being the critical path.
    coded_gradient : callable, optional
        The fast path: ``coded_gradient(params, weights)`` returns the worker's coded combination directly
        (``sum_j weights[j] g_j``, e.g. one backward pass of a sample-weighted loss); see :class:`Worker`.
        The ``"allreduce"`` baseline calls it with the unit vector of the worker's partition.
    blas_threads : int or None, default 1
        BLAS threads of every rank, set once per process; None leaves BLAS alone.
    grace : float, default 5
        Seconds that bound the end of the job (the same on every rank): after its last iteration the master sends
        every worker the stop message, waits at most ``2 * grace`` (a CodedReduce tree of height ``h``:
        ``(h + 1) * grace``) for their goodbyes, records the workers that did not say goodbye in
        :attr:`RunResult.failures`, warns (:class:`RuntimeWarning`) and returns. A worker whose compute is stuck
        in user code when the stop message comes ends its own process ``grace`` seconds later (``MPI_Finalize``,
        exit status 0, so mpiexec returns 0 for a finished run). A worker that dies during the run ends the whole
        job: MPICH's hydra kills the other ranks (``docs/runtime.md``, "When a rank fails").
    loss : callable, optional
        ``loss(params) -> float`` recorded after each step (not counted in the iteration time).
    t_c : float
        Per-message time for the :func:`gradcodes.simulate` prediction stored in the result.
    callback : callable, optional
        ``callback(iteration, seconds, loss)`` on the master after each iteration (``progress=`` is a deprecated
        alias: ``progress`` is a bool switch of a progress display elsewhere).

    Returns
    -------
    RunResult on the master, None on the workers.

    Examples
    --------
    The same script on every rank (``mpiexec -n 7 python -m mpi4py script.py``)::

        import numpy as np, gradcodes as gc
        from gradcodes.mpi import train
        code = gc.cyclic_repetition(6, 2, rng=0)   # the same code on every rank
        X = np.random.default_rng(0).normal(size=(600, 10)); y = X @ np.ones(10)
        parts = np.array_split(np.arange(600), code.k)
        grad = lambda w, j: X[parts[j]].T @ (X[parts[j]] @ w - y[parts[j]]) / 600
        def sgd(w, g, t):
            w -= 0.1 * g
        res = train(code, np.zeros(10), grad, sgd, iterations=50)
        if res is not None:
            print(res)
    """
    params = _check_params(params)
    iterations = _check_iterations(iterations)
    if isinstance(code, str):
        if code != "allreduce":
            raise GradcodesValueError(f"code must be a gradcodes code or 'allreduce', got {code!r}")
        return allreduce_train(params, partial_gradient, step, iterations=iterations, comm=comm, delay=delay,
                               timeout=timeout, poll=poll, loss=loss, t_c=t_c, callback=callback,
                               coded_gradient=coded_gradient, blas_threads=blas_threads)
    MPI = get_mpi()
    comm = MPI.COMM_WORLD if comm is None else comm
    delay = comm.bcast(delay, root=0)    # rank 0's delay model everywhere, so rng=None draws agree across ranks
    p, dtype = params.size, params.dtype
    if comm.Get_rank() != 0:
        Worker(code, p, partial_gradient, dtype, comm=comm, delay=delay, poll=poll, policy=policy,
               coded_gradient=coded_gradient, blas_threads=blas_threads, grace=grace).run()
        return None
    master = Master(code, p, dtype, comm=comm, wait_for=wait_for, deadline=deadline, decoder=decoder,
                    timeout=timeout, poll=master_poll, policy=policy, blas_threads=blas_threads, grace=grace)
    K = len(master.layout.children(0))
    times, waits, decs, ests = (np.zeros(iterations) for _ in range(4))
    used = np.zeros((iterations, K), dtype=bool)
    losses = np.zeros(iterations) if loss is not None else None
    pos = {r - 1: i for i, r in enumerate(master.layout.children(0))}   # a responder's column of `used`
    w = master.writable_params(params)                 # sent without copies (copied only for a slow receiver)
    for t in range(iterations):     # on an exception the job aborts (python -m mpi4py): no stop handshake
        t0 = time.perf_counter()
        master.broadcast(w, t)
        g, info = master.aggregate(t)
        w = master.writable_params(w)
        new = step(w, g, t)
        if new is not None and new is not w:
            w = master.writable_params(_check_params(new))   # one copy into the sender's buffers
        times[t] = time.perf_counter() - t0
        waits[t], decs[t], ests[t] = info.wait, info.decode, info.error_estimate
        used[t, [pos[r] for r in info.responders]] = True
        if losses is not None and loss is not None:
            losses[t] = float(loss(w))
        if callback is not None:
            callback(t, times[t], None if losses is None else losses[t])
    failures = master.stop()
    if failures:
        warnings.warn("gradcodes.mpi.train: the run finished, then ranks did not say goodbye: "
                      + "; ".join(f"rank {r}: {what}" for r, what in sorted(failures.items())),
                      RuntimeWarning, stacklevel=2)
    if w is not params:
        np.copyto(params, w)
    d = delay if delay is not None else NoDelay()
    return RunResult(code.name, master.layout.kind, master.layout.workers, master.need, times, waits, decs, used,
                     losses, ests, d.describe(),
                     predict(code, d, workers=master.layout.workers, need=master.need, t_c=t_c,
                             policy=FixedK(wait_for) if wait_for is not None else policy),
                     {"p": p, "dtype": str(dtype), "iterations": iterations, "timeout": timeout, "poll": poll,
                      "master_poll": master_poll, "deadline": deadline, "decoder": str(decoder), "t_c": t_c,
                      "policy": "default" if policy is None else str(policy), "grace": grace},
                     master.inbox.dropped, dict(failures))


def _poll(req: Any, poll: float, timeout: float, what: str) -> None:
    start = time.perf_counter()
    while not req.Test():
        if time.perf_counter() - start > timeout:
            raise StragglerTimeout(f"{what} did not complete within {timeout:g} s: a rank is hung (a collective "
                                   "cannot skip stragglers)")
        if poll:
            time.sleep(poll)


@renamed_keyword("progress", "callback")
def allreduce_train(params: np.ndarray, partial_gradient: Callable[[np.ndarray, int], np.ndarray] | None,
                    step: Step, *, iterations: int, comm: Any = None, delay: Delay | None = None,
                    timeout: float = 60.0, poll: float = 1e-4, loss: Callable[[np.ndarray], float] | None = None,
                    t_c: float = 0.0, callback: Callable[[int, float, Any], None] | None = None,
                    blocking: bool = True, coded_gradient: Callable[[np.ndarray, np.ndarray], np.ndarray] | None = None,
                    blas_threads: int | None = 1) -> RunResult | None:
    """The uncoded collective baseline: the parameters broadcast from the master, worker ``i`` computes partition
    ``i``, and the gradient summed by ``MPI.Allreduce`` over all ranks (the master adds zeros); every delay stacks.

    By default (``blocking=True``) both collectives are MPI's blocking ``Bcast`` and ``Allreduce``, the calls a
    data-parallel program makes, so the baseline costs what MPI's own collective costs on these ranks; as with
    any blocking collective, a hung rank hangs the job (``timeout`` is not used). ``blocking=False`` polls
    ``Ibcast``/``Iallreduce`` instead (sleeping ``poll`` between tests), so that a hung rank raises
    :class:`StragglerTimeout` on the master after ``timeout`` seconds, at the price of the polling.
    The iteration count is known to every rank (the same ``iterations`` argument), so no control message is sent.
    Without ``partial_gradient``, worker ``i`` calls ``coded_gradient(params, e_i)`` (the unit vector of its
    partition)."""
    MPI = get_mpi()
    comm = MPI.COMM_WORLD if comm is None else comm
    params = _check_params(params)
    iterations = _check_iterations(iterations)
    if partial_gradient is None and coded_gradient is None:
        raise GradcodesTypeError("give partial_gradient(params, j) or coded_gradient(params, weights)")
    rank, size = comm.Get_rank(), comm.Get_size()
    if size < 2:
        raise GradcodesValueError("allreduce needs at least 2 ranks (1 master + workers)")
    limit_blas(blas_threads)
    delay = comm.bcast(delay, root=0)    # rank 0's delay model everywhere, so rng=None draws agree across ranks
    n = size - 1
    p, dtype = params.size, params.dtype
    w = params.copy()
    send = np.zeros(p, dtype=dtype)
    recv = np.zeros(p, dtype=dtype)
    d = delay if delay is not None else NoDelay()

    if blocking:
        def bcast(buf: np.ndarray, what: str) -> None:
            comm.Bcast(buf, root=0)

        def allreduce(what: str) -> None:
            comm.Allreduce(send, recv, op=MPI.SUM)
    else:
        def bcast(buf: np.ndarray, what: str) -> None:
            _poll(comm.Ibcast(buf, root=0), poll, timeout if rank == 0 else math.inf, what)

        def allreduce(what: str) -> None:
            _poll(comm.Iallreduce(send, recv, op=MPI.SUM), poll, timeout if rank == 0 else math.inf, what)

    if rank != 0:
        unit = np.zeros(n, dtype=dtype)
        unit[rank - 1] = 1
        unit.flags.writeable = False
        for t in range(iterations):
            bcast(w, "Ibcast")
            start = time.perf_counter()
            dl = d.delay(rank - 1, t, workers=n, load_fraction=1 / n)
            g = partial_gradient(w, rank - 1) if partial_gradient is not None else coded_gradient(w, unit)  # type: ignore[misc]
            np.copyto(send, g, casting="unsafe")
            rest = start + dl - time.perf_counter()
            if rest > 0:
                time.sleep(min(rest, 1e9))
            allreduce("Iallreduce")
        return None
    times, waits, decs = (np.zeros(iterations) for _ in range(3))
    losses = np.zeros(iterations) if loss is not None else None
    for t in range(iterations):
        t0 = time.perf_counter()
        bcast(w, "Ibcast")
        t1 = time.perf_counter()
        allreduce(f"iteration {t}: MPI.Iallreduce")
        waits[t] = time.perf_counter() - t1
        new = step(w, recv, t)
        times[t] = time.perf_counter() - t0
        if new is not None:
            w = _check_params(new)
        if losses is not None and loss is not None:
            losses[t] = float(loss(w))
        if callback is not None:
            callback(t, times[t], None if losses is None else losses[t])
    np.copyto(params, w)
    return RunResult("allreduce", "allreduce", n, n, times, waits, decs, np.ones((iterations, n), dtype=bool),
                     losses, np.full(iterations, np.nan), d.describe(),
                     predict("allreduce", d, workers=n, need=n, t_c=t_c),
                     {"p": p, "dtype": str(dtype), "iterations": iterations, "timeout": timeout, "poll": poll,
                      "t_c": t_c, "blocking": blocking})
