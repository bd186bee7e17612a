"""Worker models of the simulator: how long each worker computes in each iteration.

* :class:`ShiftedExponentialWorkers` -- ``T_i = a_i l + Exp(mean l / mu_i)`` independently across workers and iterations
  (Reisizadeh et al., CodedReduce, Section 5), with per-worker ``a_i`` and ``mu_i`` (unequal speeds);
  :func:`gradcodes.simulate`'s scalar ``a`` and ``mu`` are this model with equal workers.
* :class:`PersistentStragglers` -- every worker is a two-state Markov chain (fast/slow) over iterations, a slow
  worker's time multiplied by ``slowdown``: stragglers persist for ``1/p_recover`` iterations on average, the
  time-correlated straggling measured on cloud clusters (Yadwadkar, Hariharan, Gonzalez & Katz, "Multi-task
  learning for straggler avoiding predictive job scheduling", JMLR 2016; the two-state chain is the
  Gilbert--Elliott model). The stationary share of slow workers is ``p_slow / (p_slow + p_recover)``; the first
  iteration starts from it.
* :class:`TraceReplay` -- measured times, one row per iteration and one column per worker (for example the
  per-worker times of a :class:`gradcodes.mpi.RunResult`), replayed in order (cyclically when more iterations are
  simulated than the trace has).

A model answers ``times(generator, iters, workers, points)``: an ``(iters, workers)`` array of seconds; ``points``
is a scalar or, for a code whose workers store different numbers of partitions, one entry per worker.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from .._base.errors import GradcodesTypeError, GradcodesValueError

__all__ = ["WorkerModel", "ShiftedExponentialWorkers", "PersistentStragglers", "TraceReplay"]


def _per_worker(name: str, value: Any, workers: int, *, positive: bool, allow_inf: bool = False) -> np.ndarray:
    """A scalar or a length-``workers`` sequence of reals as a float array of shape (workers,)."""
    arr = np.asarray(value, dtype=object if isinstance(value, (list, tuple)) else None)
    try:
        out = np.asarray(arr, dtype=float)
    except (TypeError, ValueError):
        raise GradcodesTypeError(f"{name} must be a real number or a sequence of {workers} real numbers, got "
                        f"{value!r}") from None
    if out.dtype.kind not in "fiu" or np.asarray(value).dtype == bool:
        raise GradcodesTypeError(f"{name} must be real, got {value!r}")
    if out.ndim == 0:
        out = np.full(workers, float(out))
    if out.shape != (workers,):
        raise GradcodesValueError(f"{name} must be a scalar or have one entry per worker ({workers}), got shape "
                                  f"{out.shape}")
    if np.any(np.isnan(out)) or (not allow_inf and np.any(np.isinf(out))):
        raise GradcodesValueError(f"{name} must be finite, got {value!r}")
    if positive and not np.all(out > 0):
        raise GradcodesValueError(f"{name} must be > 0 for every worker, got {value!r}")
    if not positive and not np.all(out >= 0):
        raise GradcodesValueError(f"{name} must be >= 0 for every worker, got {value!r}")
    return out


class WorkerModel:
    """Base class of the worker models: :meth:`~gradcodes.WorkerModel.times` gives every worker's computation time
    per iteration.

    Examples
    --------
    >>> import gradcodes as gc
    >>> isinstance(gc.ShiftedExponentialWorkers(a=1e-3, mu=1e3), gc.WorkerModel)
    True
    """

    #: Label shown in results.
    label = "model"

    def times(self, generator: np.random.Generator, iters: int, workers: int,
              points: float | np.ndarray) -> np.ndarray:
        """``(iters, workers)`` computation times (seconds) of workers processing ``points`` data points each.

        Parameters
        ----------
        generator : numpy.random.Generator
            The random state (advanced by the draw).
        iters : int
            Iterations.
        workers : int
            Workers.
        points : float or ndarray of shape (workers,)
            Data points per worker per iteration (its load).

        Returns
        -------
        ndarray, shape (iters, workers)
            Computation times in seconds.

        Examples
        --------
        >>> import numpy as np, gradcodes as gc
        >>> model = gc.ShiftedExponentialWorkers(a=1e-3, mu=1e3)      # at least a = 1 ms per point
        >>> T = model.times(np.random.default_rng(0), 3, 4, 100.0)
        >>> T.shape, bool((T >= 0.1).all())
        ((3, 4), True)
        """
        raise NotImplementedError

    def __repr__(self) -> str:
        """The call that builds the model (``ShiftedExponentialWorkers(a=1.0, mu=2.0)``); ``label`` names it in
        tables."""
        from .._base.output import call_repr

        return call_repr(self, self._args(), {"mu": None, "base": None})

    def _args(self) -> dict[str, Any]:
        return {}


class ShiftedExponentialWorkers(WorkerModel):
    r"""Independent shifted-exponential workers with their own speeds: ``T_i = a_i l + Exp(mean l / mu_i)``.

    Parameters
    ----------
    a : float or sequence of float
        Seconds per data point, >= 0 (per worker or shared).
    mu : float or sequence of float, optional
        Rate of the exponential part per data point, > 0 (``inf``: deterministic); default ``1 / a``.

    Examples
    --------
    >>> import numpy as np
    >>> m = ShiftedExponentialWorkers(a=[1e-3, 2e-3], mu=float("inf"))
    >>> m.times(np.random.default_rng(0), 2, 2, 100.0)
    array([[0.1, 0.2],
           [0.1, 0.2]])
    """

    def __init__(self, a: Any, mu: Any = None) -> None:
        self.a, self.mu = a, mu
        self.label = f"shifted-exponential(a={a}, mu={mu})"

    def _args(self) -> dict[str, Any]:
        return {"a": self.a, "mu": self.mu}

    def params(self, workers: int) -> tuple[np.ndarray, np.ndarray]:
        """``(a, mu)`` as arrays of shape (workers,).

        Parameters
        ----------
        workers : int
            Number of workers (a scalar ``a`` or ``mu`` is repeated for each).

        Returns
        -------
        a : ndarray of float, shape (workers,)
            Seconds per data point of every worker.
        mu : ndarray of float, shape (workers,)
            The rate of every worker's exponential part (``inf``: deterministic); ``1 / a`` when not given.

        Raises
        ------
        GradcodesValueError
            If ``a`` or ``mu`` is neither a scalar nor has ``workers`` entries, if ``a`` has a negative, NaN or
            infinite entry, if ``mu`` has an entry that is not > 0 (or is NaN), or if ``mu`` is not given and
            some ``a`` is 0.
        GradcodesTypeError
            If ``a`` or ``mu`` is not real.

        Examples
        --------
        >>> import gradcodes as gc
        >>> a, mu = gc.ShiftedExponentialWorkers(a=[1e-3, 2e-3]).params(2)
        >>> a.tolist(), mu.tolist()                                  # mu defaults to 1 / a
        ([0.001, 0.002], [1000.0, 500.0])
        """
        a = _per_worker("a", self.a, workers, positive=False)
        if self.mu is None:
            if np.any(a == 0):
                raise GradcodesValueError("mu must be given when some a == 0 (the default mu = 1/a needs a > 0)")
            return a, 1.0 / a
        return a, _per_worker("mu", self.mu, workers, positive=True, allow_inf=True)

    def times(self, generator: np.random.Generator, iters: int, workers: int,
              points: float | np.ndarray) -> np.ndarray:
        a, mu = self.params(workers)
        base = a * points                                   # points: a scalar or one entry per worker
        if not np.any(points) or np.all(np.isinf(mu)):
            return np.broadcast_to(base, (iters, workers)).copy()
        scale = np.where(np.isinf(mu), 0.0, points / mu)
        return base + generator.exponential(1.0, size=(iters, workers)) * scale


class PersistentStragglers(WorkerModel):
    r"""Time-correlated stragglers: each worker is a two-state Markov chain over iterations.

    A fast worker becomes slow with probability ``p_slow`` per iteration and a slow worker recovers with
    probability ``p_recover``; a slow worker's time is ``slowdown`` times its draw from ``base``.

    Parameters
    ----------
    p_slow, p_recover : float in (0, 1]
        Transition probabilities (fast -> slow, slow -> fast).
    slowdown : float >= 1
        Factor on a slow worker's computation time.
    base : WorkerModel, optional
        The per-iteration times before the slowdown (default: the simulator's shifted exponential with its own
        ``a`` and ``mu``, passed by :func:`gradcodes.simulate`).

    Examples
    --------
    >>> import numpy as np
    >>> m = PersistentStragglers(0.1, 0.1, 5.0, base=ShiftedExponentialWorkers(1.0, float("inf")))
    >>> T = m.times(np.random.default_rng(0), 1000, 4, 1.0)
    >>> sorted(set(T.ravel().tolist()))                        # fast = 1 s, slow = 5 s
    [1.0, 5.0]
    >>> bool(abs((T == 5).mean() - 0.5) < 0.1)                  # stationary share p_slow / (p_slow + p_recover)
    True
    """

    def __init__(self, p_slow: float, p_recover: float, slowdown: float, *, base: WorkerModel | None = None) -> None:
        for name, v in (("p_slow", p_slow), ("p_recover", p_recover)):
            if isinstance(v, bool) or not isinstance(v, (int, float, np.integer, np.floating)) or not 0 < v <= 1:
                raise GradcodesValueError(f"{name} must be a probability in (0, 1], got {v!r}")
        if isinstance(slowdown, bool) or not isinstance(slowdown, (int, float, np.integer, np.floating)) \
                or not 1 <= slowdown < math.inf:
            raise GradcodesValueError(f"slowdown must be a finite real number >= 1, got {slowdown!r}")
        if base is not None and not isinstance(base, WorkerModel):
            raise GradcodesTypeError(f"base must be a WorkerModel, got {type(base).__name__}")
        self.p_slow, self.p_recover, self.slowdown = float(p_slow), float(p_recover), float(slowdown)
        self.base = base
        self.label = f"persistent(p_slow={p_slow:g}, p_recover={p_recover:g}, slowdown={slowdown:g})"

    def _args(self) -> dict[str, Any]:
        return {"p_slow": self.p_slow, "p_recover": self.p_recover, "slowdown": self.slowdown, "base": self.base}

    def states(self, generator: np.random.Generator, iters: int, workers: int) -> np.ndarray:
        """Boolean (iters, workers): True where the worker is slow (the chain, from its stationary law).

        Parameters
        ----------
        generator : numpy.random.Generator
            The random state (advanced).
        iters : int
            Iterations.
        workers : int
            Workers.

        Returns
        -------
        ndarray of bool, shape (iters, workers)
            True where the worker is slow.

        Examples
        --------
        >>> import gradcodes as gc
        >>> import numpy as np
        >>> S = gc.PersistentStragglers(0.1, 0.5, 10.0).states(np.random.default_rng(0), 5, 4)
        >>> S.shape, S.dtype
        ((5, 4), dtype('bool'))
        """
        u = generator.random((iters, workers))
        slow = np.empty((iters, workers), dtype=bool)
        slow[0] = u[0] < self.p_slow / (self.p_slow + self.p_recover)
        for t in range(1, iters):              # one vector operation per iteration (workers in parallel)
            slow[t] = np.where(slow[t - 1], u[t] >= self.p_recover, u[t] < self.p_slow)
        return slow

    def times(self, generator: np.random.Generator, iters: int, workers: int,
              points: float | np.ndarray) -> np.ndarray:
        """``(iters, workers)`` computation times: the base model's, times ``slowdown`` where the chain is slow.

        Parameters
        ----------
        generator : numpy.random.Generator
            The random state (advanced by the base model's draw, then by the chain's).
        iters : int
            Iterations.
        workers : int
            Workers.
        points : float or ndarray of shape (workers,)
            Data points per worker per iteration (its load).

        Returns
        -------
        ndarray, shape (iters, workers)
            Computation times in seconds.

        Raises
        ------
        GradcodesValueError
            If the model has no ``base`` (:func:`gradcodes.simulate` supplies one; give ``base=`` or use
            :meth:`~gradcodes.PersistentStragglers.with_base` elsewhere).

        Examples
        --------
        >>> import numpy as np, gradcodes as gc
        >>> m = gc.PersistentStragglers(0.5, 0.5, 10.0, base=gc.TraceReplay([[1.0, 2.0]]))
        >>> m.times(np.random.default_rng(0), 3, 2, 1.0).tolist()     # slow draws are 10 times longer
        [[1.0, 20.0], [10.0, 2.0], [10.0, 2.0]]
        """
        if self.base is None:
            raise GradcodesValueError("PersistentStragglers needs a base model (gradcodes.simulate supplies its a "
                                      "and mu)")
        T = self.base.times(generator, iters, workers, points)
        return np.where(self.states(generator, iters, workers), T * self.slowdown, T)

    def with_base(self, base: WorkerModel) -> PersistentStragglers:
        """The same chain over another base model.

        Parameters
        ----------
        base : WorkerModel
            The model of a worker's time when it is not slow.

        Returns
        -------
        PersistentStragglers
            A new model; this one is unchanged.

        Examples
        --------
        >>> import gradcodes as gc
        >>> slow = gc.PersistentStragglers(0.1, 0.5, 10.0)
        >>> slow.with_base(gc.ShiftedExponentialWorkers(a=1e-3, mu=1e3)).base is slow.base
        False
        """
        return PersistentStragglers(self.p_slow, self.p_recover, self.slowdown, base=base)


class TraceReplay(WorkerModel):
    """Replay measured computation times: row ``t % rows`` of ``times`` is iteration ``t`` (one column per worker).

    Parameters
    ----------
    times : array_like, shape (rows, workers)
        Seconds, finite and >= 0 (``inf`` marks a worker that never answered that iteration).

    Examples
    --------
    >>> import numpy as np
    >>> TraceReplay([[1.0, 2.0], [3.0, 0.5]]).times(np.random.default_rng(0), 3, 2, 10.0)
    array([[1. , 2. ],
           [3. , 0.5],
           [1. , 2. ]])
    """

    def __init__(self, times: Any) -> None:
        T = np.asarray(times, dtype=float)
        if T.ndim != 2 or T.shape[0] < 1 or T.shape[1] < 1:
            raise GradcodesValueError(f"times must be a 2-D array (iterations x workers), got shape {T.shape}")
        if np.any(np.isnan(T)) or np.any(T < 0):
            raise GradcodesValueError("times must be >= 0 (inf for a worker that never answered), without NaN")
        self.trace = T.copy()
        self.trace.flags.writeable = False
        self.label = f"trace({T.shape[0]} iterations x {T.shape[1]} workers)"

    def _args(self) -> dict[str, Any]:
        return {"times": self.trace}

    def times(self, generator: np.random.Generator, iters: int, workers: int,
              points: float | np.ndarray) -> np.ndarray:
        """The first ``iters`` rows of the trace, repeated cyclically; ``generator`` and ``points`` are not read.

        Parameters
        ----------
        generator : numpy.random.Generator
            Not used (a replay draws nothing).
        iters : int
            Iterations.
        workers : int
            Workers; must equal the trace's number of columns.
        points : float or ndarray of shape (workers,)
            Not used (the measured times already include the load).

        Returns
        -------
        ndarray, shape (iters, workers)
            Row ``t`` is row ``t % rows`` of the trace.

        Raises
        ------
        GradcodesValueError
            If ``workers`` differs from the trace's number of columns.

        Examples
        --------
        >>> import numpy as np, gradcodes as gc
        >>> gc.TraceReplay([[1.0, 2.0], [3.0, 0.5]]).times(np.random.default_rng(0), 3, 2, 10.0).tolist()
        [[1.0, 2.0], [3.0, 0.5], [1.0, 2.0]]
        """
        if workers != self.trace.shape[1]:
            raise GradcodesValueError(f"the trace has {self.trace.shape[1]} workers, the scheme has {workers}")
        idx = np.arange(iters) % self.trace.shape[0]
        return self.trace[idx]
