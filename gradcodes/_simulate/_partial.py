"""Iteration time of partial-straggler protocols against the classical protocol on the same assignment.

Ramamoorthy, Meng & Girimaji (NeurIPS 2024; their exact-recovery experiment, Fig. 3): every worker processes its
chunks one after the other and sends a message after each; the master finishes as soon as every chunk has ``m``
messages. The classical protocol of the same assignment (one message per worker after its whole load; Tandon et al.
2017 for ``m = 1``, Ye & Abbe 2018 for ``m > 1``) waits for the ``n - s`` first workers to finish everything. Both
are simulated on the *same* draws of the workers' chunk times, so the ratio of their means is measured without the
noise of two samples.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from fractions import Fraction
from typing import TYPE_CHECKING, Any

import numpy as np

from .._base.aliases import RNGLike
from .._base.errors import GradcodesTypeError, GradcodesValueError
from .._base.validate import check_choice, check_int, check_real, check_rng, check_size
from ._models import _chunks, _reception, _reception_times
from ._workers import ShiftedExponentialWorkers, WorkerModel

if TYPE_CHECKING:
    from .._families.partial_stragglers import PartialStragglerCode

__all__ = ["PartialSimulation", "simulate_partial"]


@dataclass
class PartialSimulation:
    """Result of :func:`gradcodes.simulate_partial` (times in seconds, one entry per iteration).

    Attributes
    ----------
    partial, classical : numpy.ndarray, shape (iterations,)
        Iteration times of the partial-straggler protocol (every chunk has ``m`` messages) and of the classical
        protocol on the same assignment and draws (the first ``n - s`` workers have finished their whole load).
    chunks_used : numpy.ndarray, shape (iterations,)
        Chunks processed by all workers together when the partial protocol decodes (at most ``code.q_max``).
    details : dict
        The parameters of the run.
    deadlines : numpy.ndarray, shape (D,), or None
        The stopping times given to :func:`gradcodes.simulate_partial` (approximate recovery).
    partial_error, classical_error : numpy.ndarray, shape (iterations, D), or None
        Normalised squared error ``min ||A B_F - E||_F^2 / (k m)`` of the least-squares estimate when the master
        stops at each deadline: from the messages arrived by then (partial protocol), and from the workers that
        have finished their whole load by then (classical protocol, ``details["classical_code"]``). 0 means an
        exact decode, 1 that nothing is known.

    Examples
    --------
    >>> import gradcodes as gc
    >>> code = gc.partial_straggler_code(8, 3, 1)
    >>> sim = gc.simulate_partial(code, model=gc.ShiftedExponentialWorkers(1.0, float("inf")), iters=5)
    >>> sim.partial.tolist(), sim.classical.tolist(), sim.chunks_used.tolist(), sim.deadlines is None
    ([1.0, 1.0, 1.0, 1.0, 1.0], [4.0, 4.0, 4.0, 4.0, 4.0], [8, 8, 8, 8, 8], True)
    >>> print(sim)
    partial: E[T] = 1 s, classical: E[T] = 4 s, speedup 4.000x over 5 iterations
    """

    partial: np.ndarray
    classical: np.ndarray
    chunks_used: np.ndarray
    details: dict[str, Any] = field(default_factory=dict)
    deadlines: np.ndarray | None = None
    partial_error: np.ndarray | None = None
    classical_error: np.ndarray | None = None

    @property
    def mse(self) -> tuple[np.ndarray, np.ndarray]:
        """Mean normalised squared errors ``(partial, classical)`` at every deadline (arrays of shape (D,))."""
        if self.partial_error is None or self.classical_error is None:
            raise GradcodesValueError("mse: the simulation was run without deadlines (pass deadlines=)")
        return self.partial_error.mean(axis=0), self.classical_error.mean(axis=0)

    @property
    def speedup(self) -> float:
        """Ratio of the mean iteration times, classical / partial."""
        return float(np.mean(self.classical) / np.mean(self.partial))

    def __str__(self) -> str:
        return (f"partial: E[T] = {np.mean(self.partial):.4g} s, classical: E[T] = {np.mean(self.classical):.4g} s, "
                f"speedup {self.speedup:.3f}x over {self.partial.size} iterations")


def _finish_times(model: WorkerModel, gen: np.random.Generator, iters: int, workers: int, chunks: int,
                  points: float, chunk_times: str) -> np.ndarray:
    """(iters, chunks, workers): time at which each worker finishes its ``t``-th chunk (t = 0..chunks-1)."""
    if chunk_times == "even":
        T1 = np.asarray(model.times(gen, iters, workers, points), dtype=float)
        return T1[:, None, :] * np.arange(1, chunks + 1, dtype=float)[None, :, None]
    T = np.asarray(model.times(gen, iters * chunks, workers, points), dtype=float).reshape(iters, chunks, workers)
    return np.cumsum(T, axis=1)


def simulate_partial(code: PartialStragglerCode, *, model: WorkerModel | None = None, iters: int = 10_000,
                     chunk_points: float = 1.0, chunk_times: str = "even", latency: float = 0.0,
                     rng: RNGLike = None, deadlines: Any = None, classical: Any = None) -> PartialSimulation:
    """Simulate the iteration time of a partial-straggler protocol and of the classical protocol.

    Worker ``i`` processes its chunks in ``code.order[i]``; its ``t``-th chunk is finished at ``F_i(t)`` and the
    message arrives ``latency`` seconds later. The partial protocol ends at
    ``max_j (m-th smallest arrival among the messages about chunk j)``; the classical protocol of the same
    assignment at the ``(n - s)``-th smallest time at which a worker has finished its whole load (plus
    ``latency``). With ``chunk_times="even"`` a worker keeps one speed per iteration (its chunk time ``c_i`` is one
    draw of ``model`` for ``chunk_points`` points, ``F_i(t) = (t + 1) c_i``, so the whole load takes
    ``gamma_i c_i``, the law the classical simulator uses for the same load only for deterministic shifts; slow
    workers are *partial stragglers*); with ``"independent"`` every chunk is a fresh draw.

    Parameters
    ----------
    code : PartialStragglerCode
        The protocol (:func:`gradcodes.partial_straggler_code`).
    model : WorkerModel, optional
        Worker speeds (:class:`ShiftedExponentialWorkers`, :class:`PersistentStragglers` with a base,
        :class:`TraceReplay` of per-chunk times, ...); default ``ShiftedExponentialWorkers(a=1, mu=1)`` per point.
    iters : int >= 1, default 10000
        Simulated iterations (the name :func:`gradcodes.simulate` uses).
    chunk_points : float > 0, default 1
        Data points per chunk (the ``points`` passed to the model).
    chunk_times : {"even", "independent"}, default "even"
        One speed per worker and iteration, or an independent draw per chunk.
    latency : float >= 0, default 0
        Seconds between finishing a chunk and its message's arrival.
    rng : None, int, numpy.random.SeedSequence or numpy.random.Generator, optional
        Random state (SPEC 7).
    deadlines : sequence of float > 0, optional
        Approximate recovery: stopping times at which the master forms the least-squares estimate from what it
        has (``PartialStragglerCode.squared_error`` of the messages arrived; the classical code's ``"lstsq"``
        decoder on the workers finished). Fills ``partial_error`` and ``classical_error``.
    classical : LinearCode, optional
        The classical protocol's code for the deadline comparison: one row per worker, supported on that
        worker's chunks. Default ``code.classical_code()`` (``gc.ye_abbe(n, s, m)``, cyclic assignments only).

    Returns
    -------
    PartialSimulation

    Raises
    ------
    GradcodesTypeError
        If ``code`` is not a :class:`PartialStragglerCode` or ``model`` not a :class:`WorkerModel`.
    GradcodesValueError
        If a parameter is out of its range (the message names the parameter and the range), or ``classical`` is given
        without ``deadlines``.

    Examples
    --------
    Equal deterministic speeds: every chunk has been processed once after the first round of chunks, while the
    classical protocol waits for whole loads (4 chunks), so the speedup is ``gamma / m = 4``:

    >>> import gradcodes as gc
    >>> code = gc.partial_straggler_code(8, 3, 1)
    >>> sim = gc.simulate_partial(code, model=gc.ShiftedExponentialWorkers(1.0, float("inf")), iters=5)
    >>> sim.partial.tolist(), sim.classical.tolist(), sim.speedup
    ([1.0, 1.0, 1.0, 1.0, 1.0], [4.0, 4.0, 4.0, 4.0, 4.0], 4.0)

    Stopping early: at ``t = 1`` every chunk has one message, so with ``m = 2`` half of every chunk's blocks are
    known (error 1/2), while no worker has finished its load (error 1); at ``t = 2`` the partial protocol decodes:

    >>> code = gc.partial_straggler_code(6, 1, 2)
    >>> sim = gc.simulate_partial(code, model=gc.ShiftedExponentialWorkers(1.0, float("inf")), iters=3,
    ...                           deadlines=[1.0, 2.0])
    >>> [v.tolist() for v in sim.mse]
    [[0.5, 0.0], [1.0, 1.0]]
    """
    from .._families.partial_stragglers import PartialStragglerCode

    if not isinstance(code, PartialStragglerCode):
        raise GradcodesTypeError(f"code must be a PartialStragglerCode (gradcodes.partial_straggler_code), got "
                                 f"{type(code).__name__}")
    if model is None:
        model = ShiftedExponentialWorkers(1.0, 1.0)
    if not isinstance(model, WorkerModel):
        raise GradcodesTypeError(f"model must be a WorkerModel, got {type(model).__name__}")
    iters = check_int("iters", iters, 1)
    points = check_real("chunk_points", chunk_points, 0, open_lo=True)
    chunk_times = check_choice("chunk_times", chunk_times, ("even", "independent"))
    latency = check_real("latency", latency, 0)
    D = None if deadlines is None else _check_deadlines(deadlines)
    if D is not None:
        from .._families.partial_stragglers_approx import check_classical

        cl = code.classical_code() if classical is None else check_classical(code, classical)
    elif classical is not None:
        raise GradcodesValueError("classical: only used with deadlines= (approximate recovery)")
    gen = check_rng(rng)
    N = code.workers
    loads = np.diff(code.offsets)
    G = int(loads.max())
    check_size("the simulated chunk times (iterations x max load x workers)", iters * G * N, "entries")
    F = _finish_times(model, gen, iters, N, G, points, chunk_times)               # (iters, G, N)
    arrive = F[:, code.message_position, code.message_worker] + latency            # (iters, n messages)
    T = np.zeros(iters)
    m = code.m
    for rows in code.holders:
        T = np.maximum(T, np.partition(arrive[:, rows], m - 1, axis=1)[:, m - 1])
    full = F[:, loads - 1, np.arange(N)] + latency                                  # whole load finished
    need = N - code.s
    classical = np.partition(full, need - 1, axis=1)[:, need - 1]
    done = (F <= (T - latency)[:, None, None]) & (np.arange(G)[None, :, None] < loads[None, None, :])
    used = done.sum(axis=(1, 2))
    details = {"workers": N, "s": code.s, "m": m, "model": repr(model), "chunk_points": points,
               "chunk_times": chunk_times, "latency": latency, "iters": iters, "q_max": code.q_max}
    if D is None:
        return PartialSimulation(partial=T, classical=classical, chunks_used=used, details=details)
    from .._families.partial_stragglers_approx import classical_squared_error

    pe = np.empty((iters, D.size))
    ce = np.empty((iters, D.size))
    for c, d in enumerate(D.tolist()):                 # deadlines x chunks work, never per gradient coordinate
        pe[:, c] = code.squared_error(arrive <= d) / (code.k * m)
        ce[:, c] = classical_squared_error(cl, full <= d)
    details["classical_code"] = cl.name
    return PartialSimulation(partial=T, classical=classical, chunks_used=used, details=details, deadlines=D,
                             partial_error=pe, classical_error=ce)


def _check_deadlines(deadlines: Any) -> np.ndarray:
    """Deadlines: a non-empty 1-D sequence of finite positive reals (float64)."""
    if isinstance(deadlines, (str, bytes)) or not hasattr(deadlines, "__iter__"):
        raise GradcodesTypeError(f"deadlines must be a sequence of positive real numbers, got "
                                 f"{type(deadlines).__name__}")
    vals = list(deadlines)
    if not vals:
        raise GradcodesValueError("deadlines must hold at least one time")
    return np.array([check_real(f"deadlines[{i}]", v, 0, open_lo=True) for i, v in enumerate(vals)])


def _sim_partial_scheme(rng: np.random.Generator, iters: int, code: PartialStragglerCode, m_data: float,
                        model: WorkerModel, t_c: float, want_resp: bool, policy: Any,
                        deadline: float | None) -> tuple[np.ndarray, np.ndarray | None, int, dict[str, Any]]:
    """:func:`gradcodes.simulate` of a partial-straggler protocol: the model of :func:`simulate_partial`
    (``chunk_times="even"``: worker ``i`` finishes its ``t``-th chunk at ``(t + 1) c_i``, ``c_i`` one draw of
    ``model`` for the ``m_data / k`` points of a chunk) with the simulator's single-port master: every message
    takes ``t_c`` (already divided by ``m``) and messages are received one at a time in the order they are sent,
    so the ``j``-th is received at ``R_j = j t_c + max_{i <= j} (c_(i) - (i-1) t_c)``. The iteration ends when
    every chunk has ``m`` received messages. The classical protocol of the same assignment on the same draws
    (the first ``n - s`` whole loads, one message each) is reported in ``details``. With a ``deadline`` the master
    stops at ``min(decode time, deadline)`` with the least-squares estimate of the messages received by then:
    ``details["expected_error"]`` is the mean of ``||A B_F - E||_F`` (the approximate codes' ``error``),
    ``details["mse"]`` the mean of its square over ``k m``, ``details["p_exact"]`` the fraction of exact decodes.

    Returns ``(times, received, messages, details)``: ``received`` (iters, messages) marks the messages received
    by the end of the iteration (``None`` unless ``want_resp``), ``messages`` the most received in an iteration.
    """
    from ._policies import EarliestDecodable

    if not (policy is None or isinstance(policy, EarliestDecodable) or (isinstance(policy, str) and
                                                                        policy == "earliest")):
        raise GradcodesValueError(f"policy: a partial-straggler protocol ends when every chunk has m messages "
                                  f"(policy 'earliest'), got {policy!r}")
    N, n, m = code.workers, code.n, code.m
    loads = np.diff(code.offsets)
    G = int(loads.max())
    points = float(m_data) / code.k
    check_size("the simulated chunk times (iters x max load x workers)", iters * G * N, "entries")
    times = np.empty(iters)
    classical = np.empty(iters)
    count = np.empty(iters, dtype=np.int64)
    received = np.zeros((iters, n), dtype=bool) if want_resp else None
    err = np.zeros(iters, dtype=np.int64)
    need = N - code.s
    for lo, hi in _chunks(iters, n + G * N):
        b = hi - lo
        F = _finish_times(model, rng, b, N, G, points, "even")                       # (b, G, N)
        ready = F[:, code.message_position, code.message_worker]                    # (b, n) messages sent
        order = np.argsort(ready, axis=1, kind="stable")
        R = np.empty_like(ready)
        np.put_along_axis(R, order, _reception_times(np.take_along_axis(ready, order, axis=1), t_c), axis=1)
        T = np.zeros(b)
        for rows in code.holders:
            T = np.maximum(T, np.partition(R[:, rows], m - 1, axis=1)[:, m - 1])
        if deadline is not None:
            T = np.minimum(T, deadline)             # stop early: the least-squares estimate from what has arrived
        times[lo:hi] = T
        got = R <= T[:, None]
        count[lo:hi] = got.sum(axis=1)
        if deadline is not None:
            err[lo:hi] = code.squared_error(got)
        if received is not None:
            received[lo:hi] = got
        full = F[:, loads - 1, np.arange(N)]                                        # whole loads finished
        classical[lo:hi] = _reception(full, need, t_c)[0]
    details = {"s": code.s, "m": m, "workers": N, "chunk_points": points, "chunk_times": "even",
               "load_fraction": Fraction(int(loads.max()), code.k), "policy": "earliest (every chunk m messages)",
               "mean_messages": float(count.mean()), "model": model.label, "q_max": code.q_max,
               "classical_mean": float(classical.mean()),
               "speedup_over_classical": float(classical.mean() / times.mean())}
    if deadline is not None:
        details.update({"exact": False, "deadline": deadline, "expected_error": float(np.sqrt(err).mean()),
                        "mse": float(err.mean() / (code.k * m)), "p_exact": float((err == 0).mean())})
    return times, received, int(count.max()), details
