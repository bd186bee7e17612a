"""The high-level training loop, and the ``MPI.Allreduce`` baseline."""

from __future__ import annotations

import math
import time
import warnings
from collections.abc import Callable
from typing import Any

import numpy as np

from .._base.errors import GradcodesTypeError, GradcodesValueError
from .._core.code import LinearCode
from .._core.decoders import Decoder
from .._runtime.delays import Delay, NoDelay
from .._runtime.setup import GRACE
from .._simulate._policies import FixedK, WaitPolicy
from ._comm import StragglerTimeout, get_mpi
from ._master import Master
from ._result import RunResult, predict
from ._setup import limit_blas
from ._worker import Worker

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
        (:func:`allreduce_train`: worker ``i`` computes partition ``i - 1``, ``Allreduce`` among the workers, a local
        ``step`` on every worker, the master only observing; no straggler tolerance).
    params : ndarray, shape (length,)
        The initial parameters (a flat float array; only the master's values are used).
    partial_gradient : callable or None
        ``partial_gradient(params, j)``: the gradient on partition ``j`` (flat, of the parameters' length). May
        be None when ``coded_gradient`` is given.
    step : callable
        ``step(params, gradient, iteration)`` on the master (for ``"allreduce"``: on every worker, so it must be
        deterministic): update ``params`` in place or return new ones (same shape and dtype). ``gradient`` is
        reused by the next iteration: copy it to keep it.
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
        ``callback(iteration, seconds, loss)`` on the master after each iteration.

    Returns
    -------
    RunResult on the master, None on the workers.

    Raises
    ------
    GradcodesValueError
        If a parameter is out of its range (the message names the parameter and the range), or ``code`` is neither a
        gradcodes code nor ``"allreduce"``.

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


#: The master's sleep between two polls of worker 1's records in :func:`allreduce_train` (seconds): it only
#: observes, so it keeps its core free for the workers; a record's latency delays nothing but the callback.
OBSERVE_POLL = 1e-2
_RECORD, _READY, _FINAL = 1, 2, 3      # tags of the baseline's observation channel (a duplicate communicator)


def allreduce_train(params: np.ndarray, partial_gradient: Callable[[np.ndarray, int], np.ndarray] | None,
                    step: Step, *, iterations: int, comm: Any = None, delay: Delay | None = None,
                    timeout: float = 60.0, poll: float = 1e-4, loss: Callable[[np.ndarray], float] | None = None,
                    t_c: float = 0.0, callback: Callable[[int, float, Any], None] | None = None,
                    blocking: bool = True, coded_gradient: Callable[[np.ndarray, np.ndarray], np.ndarray] | None = None,
                    blas_threads: int | None = 1) -> RunResult | None:
    """The uncoded data-parallel baseline as users run it: the workers (ranks ``1..n``) sum their gradients with
    ``MPI.Allreduce`` among themselves and each steps its own copy of the parameters; the master (rank 0) only
    observes. Call it on every rank with the same arguments.

    At set-up (once): rank 0's delay model and parameters are broadcast to every rank (so every worker starts
    from the master's parameters), and the workers' communicator is split off ``comm`` (``comm.Split``). Each
    iteration the worker on rank ``r`` computes partition ``r - 1`` (``partial_gradient(w, r - 1)``, or without
    it ``coded_gradient(w, e_{r-1})``, the unit vector of its partition), waits out its injected delay, calls a
    blocking ``Allreduce`` on the workers' communicator and calls ``step(w, gradient, t)`` on its own copy.
    ``step`` runs on every worker, not on the master: it must be deterministic (the same arithmetic on the same
    inputs), so that, ``Allreduce`` giving every worker the same sum (MPI 4.0, section 6.9.1, advice to
    implementors; MPICH's algorithms do), the parameters are identical on every worker. At the end the workers
    compare a checksum of their parameters and a :class:`RuntimeWarning` on the master names any worker that
    differs.

    The master sends nothing during the iterations and is in no collective: worker 1 sends it one record per
    iteration without blocking (iteration time, its time inside ``Allreduce``, and ``loss(w)`` when ``loss`` is
    given, computed on worker 1 after its step, outside the timed iteration; the records not yet sent go in one
    message once half the master's poll interval has passed, so fast iterations send few messages), and the final
    parameters once after the last iteration (copied into ``params`` on the master; every worker copies its own into
    its ``params``, so every rank ends with the trained parameters). The master polls those records, sleeping
    ``OBSERVE_POLL`` (10 ms) in between, fills the same :class:`RunResult` as before (``time``: worker 1's
    iteration, from the start of its gradient to the end of its step; ``wait``: its time inside ``Allreduce``, which
    includes waiting for the slowest worker; ``decode``: zeros) and calls ``callback`` as records arrive.

    Faults. By default (``blocking=True``) the workers call MPI's blocking ``Allreduce``, the call a data-parallel
    program makes; as with any blocking collective, a hung worker hangs the job (``timeout`` is not used).
    ``blocking=False`` polls ``Iallreduce`` instead (sleeping ``poll`` between tests), and a worker that has waited
    ``min(OBSERVE_POLL, timeout / 10)`` inside an iteration's ``Iallreduce`` tells the master once, without
    blocking, that it has its gradient of that iteration (nothing is sent while the collective is fast): when no
    record of an iteration arrives within ``timeout`` seconds, the master raises :class:`StragglerTimeout` naming
    the workers that did not finish their gradient (``missing``), which with ``python -m mpi4py`` aborts the job.
    (The former baseline, which broadcast the parameters from the master every iteration and summed over all ranks,
    could only say that "a rank is hung".) The iteration count is known to every rank (the same ``iterations``
    argument), so no control message is sent.

    Parameters
    ----------
    params : ndarray, shape (length,)
        The initial parameters (a flat float array; rank 0's values are broadcast to every worker).
    partial_gradient : callable or None
        ``partial_gradient(params, j)``: the gradient on partition ``j`` (flat, of the parameters' length). May
        be None when ``coded_gradient`` is given.
    step : callable
        ``step(params, gradient, iteration)`` on every worker: update ``params`` in place or return new ones; it
        must be deterministic.
    iterations : int
        Iterations run (the same on every rank).
    comm : mpi4py communicator, optional
        Default ``MPI.COMM_WORLD``; one master and ``n`` workers.
    delay : Delay, optional
        Injected straggling (evaluated on the workers; rank 0's model is broadcast).
    timeout : float, default 60
        With ``blocking=False``: seconds the master waits for an iteration's record before raising
        :class:`StragglerTimeout`.
    poll : float, default 1e-4
        With ``blocking=False``: the workers' sleep between two tests of ``Iallreduce`` (seconds).
    loss : callable, optional
        ``loss(params) -> float``, computed on worker 1 after its step.
    t_c : float
        Per-message time for the :func:`gradcodes.simulate` prediction stored in the result.
    callback : callable, optional
        ``callback(iteration, seconds, loss)`` on the master as the records arrive (``progress=`` is a deprecated
        alias).
    blocking : bool, default True
        Blocking ``Allreduce`` (a hung worker hangs the job) or polled ``Iallreduce`` (a hung worker raises
        :class:`StragglerTimeout` on the master).
    coded_gradient : callable, optional
        ``coded_gradient(params, weights)``: called with the unit vector of the worker's partition when
        ``partial_gradient`` is None.
    blas_threads : int or None, default 1
        BLAS threads of every rank, set once per process; None leaves BLAS alone.

    Returns
    -------
    RunResult or None
        The run's record on the master (rank 0), None on the workers.

    Raises
    ------
    GradcodesTypeError
        If neither ``partial_gradient`` nor ``coded_gradient`` is given.
    GradcodesValueError
        If a parameter is out of its range (the message names the parameter and the range), or the communicator has
        fewer than 2 ranks.

    Examples
    --------
    The same script on every rank (``mpiexec -n 7 python -m mpi4py script.py``), as for :func:`train` with
    ``"allreduce"`` in place of the code::

        import numpy as np
        from gradcodes.mpi import allreduce_train
        X = np.random.default_rng(0).normal(size=(600, 10)); y = X @ np.ones(10)
        parts = np.array_split(np.arange(600), 6)
        grad = lambda w, j: X[parts[j]].T @ (X[parts[j]] @ w - y[parts[j]]) / 600
        def sgd(w, g, t):
            w -= 0.1 * g
        res = allreduce_train(np.zeros(10), grad, sgd, iterations=50)
        if res is not None:                       # rank 0
            print(res.time.mean())
    """
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
    comm.Bcast(w, root=0)                # once: every worker starts from the master's parameters
    obs = comm.Dup()                     # the master's observation channel: its tags never meet the user's
    sub = comm.Split(0 if rank else MPI.UNDEFINED, rank)     # the workers' communicator (COMM_NULL on rank 0)
    d = delay if delay is not None else NoDelay()
    try:
        if rank != 0:
            w = _allreduce_worker(MPI, obs, sub, w, partial_gradient, coded_gradient, step, d,
                                  iterations=iterations, rank=rank, n=n, poll=poll, blocking=blocking,
                                  timeout=timeout, loss=loss)
            np.copyto(params, w)
            return None
        times, waits, losses = _allreduce_observe(MPI, obs, w, iterations=iterations, n=n, timeout=timeout,
                                                  blocking=blocking, loss=loss is not None, callback=callback)
    finally:
        if rank != 0:
            sub.Free()
        obs.Free()
    np.copyto(params, w)
    return RunResult("allreduce", "allreduce", n, n, times, waits, np.zeros(iterations),
                     np.ones((iterations, n), dtype=bool), losses, np.full(iterations, np.nan), d.describe(),
                     predict("allreduce", d, workers=n, need=n, t_c=t_c),
                     {"p": p, "dtype": str(dtype), "iterations": iterations, "timeout": timeout, "poll": poll,
                      "t_c": t_c, "blocking": blocking})


def _allreduce_worker(MPI: Any, obs: Any, sub: Any, w: np.ndarray,
                      partial_gradient: Callable[[np.ndarray, int], np.ndarray] | None,
                      coded_gradient: Callable[[np.ndarray, np.ndarray], np.ndarray] | None, step: Step, d: Delay, *,
                      iterations: int, rank: int, n: int, poll: float, blocking: bool, timeout: float,
                      loss: Callable[[np.ndarray], float] | None) -> np.ndarray:
    """One worker of :func:`allreduce_train`: gradient, delay, ``Allreduce`` among the workers, local step;
    returns the final parameters.

    Worker 1 writes one record per iteration into an array written once per row and sends the rows not yet sent
    in one ``Isend`` when half the master's poll interval has passed since its last send (and after the last
    iteration): at most a few small messages per master poll, never a wait on a send. With ``blocking=False`` a
    worker that has waited ``min(OBSERVE_POLL, timeout / 10)`` inside an iteration's ``Iallreduce`` tells the
    master once, without blocking, that it has its gradient of that iteration (nothing is sent while the
    collective is fast), so that a timeout names only the workers that did not get there."""
    import zlib

    p, dtype = w.size, w.dtype
    send = np.zeros(p, dtype=dtype)
    recv = np.zeros(p, dtype=dtype)
    unit = np.zeros(n, dtype=dtype)
    unit[rank - 1] = 1
    unit.flags.writeable = False
    first = rank == 1                                # worker 1 reports to the master
    records = np.zeros((iterations if first else 0, 4))
    sent, last = 0, time.perf_counter()
    sends: list[Any] = []                            # record batches and gradient-ready notes in flight
    notes: list[np.ndarray] = []                     # the notes' buffers (kept until their sends complete)
    note_after = min(OBSERVE_POLL, timeout / 10)
    for t in range(iterations):
        start = time.perf_counter()
        dl = d.delay(rank - 1, t, workers=n, load_fraction=1 / n)
        g = partial_gradient(w, rank - 1) if partial_gradient is not None else coded_gradient(w, unit)  # type: ignore[misc]
        np.copyto(send, g, casting="unsafe")
        rest = start + dl - time.perf_counter()
        if rest > 0:
            time.sleep(min(rest, 1e9))
        t1 = time.perf_counter()
        if blocking:
            sub.Allreduce(send, recv, op=MPI.SUM)
        else:
            req = sub.Iallreduce(send, recv, op=MPI.SUM)
            noted = False
            while not req.Test():
                if not noted and time.perf_counter() - t1 >= note_after:
                    notes.append(np.array([float(t)]))
                    sends.append(obs.Isend(notes[-1], dest=0, tag=_READY))
                    noted = True
                if poll:
                    time.sleep(poll)
        t2 = time.perf_counter()
        new = step(w, recv, t)
        if new is not None and new is not w:
            w = np.ascontiguousarray(_check_params(new))
        if first:
            end = time.perf_counter()
            records[t] = (t, end - start, t2 - t1, float(loss(w)) if loss is not None else math.nan)
            if t + 1 == iterations or end - last >= OBSERVE_POLL / 2:
                sends.append(obs.Isend(records[sent:t + 1], dest=0, tag=_RECORD))
                sent, last = t + 1, end
        if len(sends) > 64:                          # forget the completed sends (each completes on its own)
            sends = [r for r in sends if not r.Test()]
    MPI.Request.Waitall(sends)
    told = sub.gather((zlib.crc32(w.data), len(notes)), root=0)
    if first:
        obs.Send(w, dest=0, tag=_FINAL)
        obs.send(told, dest=0, tag=_FINAL)
    return w


def _allreduce_observe(MPI: Any, obs: Any, w: np.ndarray, *, iterations: int, n: int, timeout: float,
                       blocking: bool, loss: bool, callback: Callable[[int, float, Any], None] | None
                       ) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
    """The master of :func:`allreduce_train`: worker 1's records (and, with ``blocking=False``, the workers'
    gradient-ready notes, to name the ones missing at a timeout), then the final parameters into ``w``."""
    records = np.zeros((iterations, 4))
    got = 0
    status = MPI.Status()
    req = obs.Irecv(records, source=1, tag=_RECORD)
    ready = np.zeros((n, 1))
    latest = np.full(n, -1)                          # the newest iteration each worker said it reached
    count = np.zeros(n, dtype=np.int64)              # notes received per worker
    qreqs = [] if blocking else [obs.Irecv(ready[i], source=i + 1, tag=_READY) for i in range(n)]

    def note(i: int) -> None:
        latest[i] = max(latest[i], int(ready[i, 0]))
        count[i] += 1
        qreqs[i] = obs.Irecv(ready[i], source=i + 1, tag=_READY)

    since = time.perf_counter()
    while got < iterations:
        if req.Test(status):
            k = status.Get_count(MPI.DOUBLE) // 4
            for t in range(got, got + k):
                if callback is not None:
                    callback(t, float(records[t, 1]), float(records[t, 3]) if loss else None)
            got += k
            if got < iterations:
                req = obs.Irecv(records[got:], source=1, tag=_RECORD)
            since = time.perf_counter()
            continue
        for i, q in enumerate(qreqs):
            if q.Test():
                note(i)
        if not blocking and time.perf_counter() - since > timeout:
            missing = [i + 1 for i in range(n) if latest[i] < got]
            what = (f"ranks {missing} did not finish their gradient" if missing else
                    "every worker finished its gradient, the Iallreduce did not complete")
            raise StragglerTimeout(f"iteration {got}: MPI.Iallreduce among the workers did not complete within "
                                   f"{timeout:g} s: {what} (a collective cannot skip stragglers)", missing)
        time.sleep(OBSERVE_POLL)
    fin = obs.Irecv(w, source=1, tag=_FINAL)
    while not fin.Test():
        time.sleep(OBSERVE_POLL)
    told = obs.recv(source=1, tag=_FINAL)
    for i, q in enumerate(qreqs):                    # the notes still in flight: every one the worker sent
        while count[i] < told[i][1]:
            q.Wait()
            note(i)
            q = qreqs[i]
        q.Cancel()
        q.Wait()
    sums = [c for c, _ in told]
    differ = [r + 1 for r, c in enumerate(sums) if c != sums[0]]
    if differ:
        warnings.warn(f"gradcodes.mpi.allreduce_train: the parameters of ranks {differ} differ from rank 1's at the "
                      "end (a step that is not deterministic, or an Allreduce that is not bitwise identical on every "
                      "rank); the master returns rank 1's", RuntimeWarning, stacklevel=3)
    times, waits = records[:, 1].copy(), records[:, 2].copy()
    return times, waits, (records[:, 3].copy() if loss else None)
