"""Straggler injection for experiments and tests: how long a worker pretends to compute in an iteration.

Every model answers ``delay(worker, iteration, workers=N, load_fraction=f)`` in seconds (``math.inf`` = the
worker never answers). Random draws depend only on ``(rng, worker, iteration)``, so every rank can evaluate any
worker's delay and a run is reproducible whatever the timing. A worker sleeps until its delay has passed since
the start of its iteration (its real computation counts towards the delay); when newer parameters arrive during
the delay it abandons the old iteration, whose message would be dropped anyway, so every iteration's delays are
independent draws, as in :func:`gradcodes.simulate`'s model. (A real computation is not interrupted: the worker
finishes it, its message is dropped as stale, and it skips to the newest parameters.)
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Any

import numpy as np

from .._base.aliases import RNGLike
from .._base.errors import GradcodesTypeError, GradcodesValueError
from .._base.validate import check_int, rng_entropy

__all__ = ["Delay", "NoDelay", "ShiftedExponential", "FixedDelay", "Hang", "Combined"]


def _nonneg(name: str, value: Any, allow_inf: bool = False) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise GradcodesTypeError(f"{name} must be a real number, got {type(value).__name__}")
    v = float(value)
    if math.isnan(v) or v < 0 or (math.isinf(v) and not allow_inf):
        raise GradcodesValueError(f"{name} must be a finite number >= 0, got {value}")
    return v


def _workers(name: str, workers: Iterable[int]) -> tuple[int, ...]:
    try:
        out = tuple(check_int(name, w, 0) for w in workers)
    except TypeError:
        raise GradcodesTypeError(f"{name} must be an iterable of worker indices, got {workers!r}") from None
    return out


class Delay:
    """Base class: no delay. Add models with ``+`` (their delays add up).

    Examples
    --------
    >>> from gradcodes.mpi import Delay, FixedDelay, Hang
    >>> model = FixedDelay(0.5, workers=[1]) + Hang([3], start=10)
    >>> isinstance(model, Delay), model.describe()
    (True, 'fixed 0.5 s on workers [1] + hung workers [3] from iteration 10')
    """

    def delay(self, worker: int, iteration: int, *, workers: int, load_fraction: float) -> float:
        """Seconds that ``worker`` waits, on top of its compute, in ``iteration``.

        Parameters
        ----------
        worker : int
            The worker's index, ``0 <= worker < workers``.
        iteration : int
            The iteration.
        workers : int
            Number of workers of the job.
        load_fraction : float
            The worker's share of the data (models that scale with the work use it).

        Returns
        -------
        float
            Seconds, ``>= 0``; a random model's draw depends only on its ``rng``, ``worker``, ``iteration`` and
            ``workers`` (the same on every rank).

        Examples
        --------
        >>> from gradcodes.mpi import FixedDelay, NoDelay
        >>> d = FixedDelay(0.5, workers=[1])
        >>> d.delay(1, 0, workers=4, load_fraction=0.25), d.delay(0, 0, workers=4, load_fraction=0.25)
        (0.5, 0.0)
        >>> NoDelay().delay(1, 0, workers=4, load_fraction=0.25)
        0.0
        """
        return 0.0

    def __add__(self, other: Delay) -> Delay:
        if type(self) in (Delay, NoDelay):
            return other
        return Combined(self, other)

    def describe(self) -> str:
        """One line for logs and reports.

        Returns
        -------
        str
            The model and its parameters.

        Examples
        --------
        >>> from gradcodes.mpi import FixedDelay, NoDelay
        >>> FixedDelay(0.5, workers=[1]).describe(), NoDelay().describe()
        ('fixed 0.5 s on workers [1]', 'none')
        """
        return "none"


class NoDelay(Delay):
    """No injected delay.

    Examples
    --------
    >>> from gradcodes.mpi import NoDelay, FixedDelay
    >>> NoDelay().delay(0, 0, workers=4, load_fraction=0.25)
    0.0
    >>> (NoDelay() + FixedDelay(0.5, workers=[1])).describe()      # adding to NoDelay gives the other model
    'fixed 0.5 s on workers [1]'
    """


class ShiftedExponential(Delay):
    r"""The shifted-exponential computation model of :func:`gradcodes.simulate` (Reisizadeh et al., Section 5).

    A worker processing ``l = load_fraction * m_data`` data points takes ``a l + Exp(mean l / mu)`` seconds.

    Parameters
    ----------
    a : float
        Seconds per data point (the shift).
    mu : float, optional
        Rate per data point (default ``1/a``).
    m_data : float
        Data points per iteration (the whole dataset).
    rng : None, int, SeedSequence or Generator, optional
        Random state, as scientific Python's SPEC 7 recommends (default None: fresh entropy). Draws depend on
        ``(rng, worker, iteration)`` only; :func:`~gradcodes.mpi.train` uses rank 0's model on every rank.

    Examples
    --------
    >>> d = ShiftedExponential(a=1e-4, m_data=1000, rng=0)
    >>> t = d.delay(3, 7, workers=8, load_fraction=0.25)
    >>> 0.025 <= t, t == d.delay(3, 7, workers=8, load_fraction=0.25)
    (True, True)
    """

    def __init__(self, a: float, mu: float | None = None, *, m_data: float, rng: RNGLike = None) -> None:
        self.a = _nonneg("a", a)
        if mu is None:
            if self.a == 0:
                raise GradcodesValueError("mu must be given when a == 0")
            mu = 1.0 / self.a
        self.mu = _nonneg("mu", mu, allow_inf=True)
        if self.mu == 0:
            raise GradcodesValueError("mu must be > 0")
        self.m_data = _nonneg("m_data", m_data)
        #: The int that keys every draw (see :func:`gradcodes._base.validate.rng_entropy`).
        self.entropy = rng_entropy(rng)

    def delay(self, worker: int, iteration: int, *, workers: int, load_fraction: float) -> float:
        points = load_fraction * self.m_data
        base = self.a * points
        if math.isinf(self.mu) or points == 0:
            return base
        rng = np.random.default_rng([self.entropy, 1, int(worker), int(iteration)])
        return base + float(rng.exponential(points / self.mu))

    def describe(self) -> str:
        return f"shifted-exponential(a={self.a:g}, mu={self.mu:g}, m_data={self.m_data:g})"


class FixedDelay(Delay):
    """A fixed delay on some workers.

    Parameters
    ----------
    seconds : float
        The delay.
    workers : iterable of int, optional
        Persistent stragglers: these workers are late in every iteration.
    count : int, optional
        Per-iteration stragglers: in each iteration ``count`` workers drawn at random (from ``(rng,
        iteration)``, the same on every rank) are late. Give ``workers`` or ``count``.
    rng : None, int, SeedSequence or Generator, optional
        Random state of ``count`` (SPEC 7; default None: fresh entropy); :func:`~gradcodes.mpi.train` uses rank
        0's model on every rank.

    Examples
    --------
    >>> FixedDelay(0.3, workers=[1, 4]).delay(4, 0, workers=8, load_fraction=0.25)
    0.3
    >>> d = FixedDelay(0.3, count=2, rng=1)
    >>> sum(d.delay(w, 5, workers=8, load_fraction=0.25) > 0 for w in range(8))
    2
    """

    def __init__(self, seconds: float, *, workers: Iterable[int] | None = None, count: int | None = None,
                 rng: RNGLike = None) -> None:
        self.seconds = _nonneg("seconds", seconds)
        if (workers is None) == (count is None):
            raise GradcodesValueError("give either workers (persistent stragglers) or count (random per iteration)")
        self.workers = None if workers is None else frozenset(_workers("workers", workers))
        self.count = None if count is None else check_int("count", count, 0)
        self.entropy = rng_entropy(rng)

    def stragglers(self, iteration: int, workers: int) -> frozenset[int]:
        """The late workers of an iteration.

        Parameters
        ----------
        iteration : int
            The iteration (with ``count``, it and ``rng`` decide the draw, the same on every rank).
        workers : int
            Number of workers.

        Returns
        -------
        frozenset of int
            The given ``workers`` (every iteration), or ``count`` workers drawn without replacement.

        Raises
        ------
        GradcodesValueError
            If ``count`` exceeds ``workers``.

        Examples
        --------
        >>> sorted(FixedDelay(0.3, workers=[1, 4]).stragglers(0, workers=8))
        [1, 4]
        >>> d = FixedDelay(0.3, count=2, rng=1)
        >>> d.stragglers(5, workers=8) == d.stragglers(5, workers=8), len(d.stragglers(5, workers=8))
        (True, 2)
        """
        if self.workers is not None:
            return self.workers
        assert self.count is not None
        if self.count > workers:
            raise GradcodesValueError(f"count={self.count} exceeds the number of workers ({workers})")
        rng = np.random.default_rng([self.entropy, 2, int(iteration)])
        return frozenset(int(w) for w in rng.choice(workers, self.count, replace=False))

    def delay(self, worker: int, iteration: int, *, workers: int, load_fraction: float) -> float:
        return self.seconds if worker in self.stragglers(iteration, workers) else 0.0

    def describe(self) -> str:
        who = f"workers {sorted(self.workers)}" if self.workers is not None else f"{self.count} random/iteration"
        return f"fixed {self.seconds:g} s on {who}"


class Hang(Delay):
    """Workers that stop answering from iteration ``start`` on (they still obey the final STOP).

    Parameters
    ----------
    workers : iterable of int
        The hanging workers (0-based).
    start : int, default 0
        The first iteration they do not answer.

    Raises
    ------
    GradcodesValueError
        If ``start`` is negative or a worker index is not a non-negative integer.

    Examples
    --------
    >>> from gradcodes.mpi import Hang
    >>> hang = Hang([2], start=3)
    >>> hang.delay(2, 2, workers=4, load_fraction=0.5), hang.delay(2, 3, workers=4, load_fraction=0.5)
    (0.0, inf)
    >>> hang.describe()
    'hung workers [2] from iteration 3'
    """

    def __init__(self, workers: Iterable[int], *, start: int = 0) -> None:
        self.workers = frozenset(_workers("workers", workers))
        self.start = check_int("start", start, 0)

    def delay(self, worker: int, iteration: int, *, workers: int, load_fraction: float) -> float:
        return math.inf if worker in self.workers and iteration >= self.start else 0.0

    def describe(self) -> str:
        return f"hung workers {sorted(self.workers)} from iteration {self.start}"


class Combined(Delay):
    """The sum of several models' delays (what ``model_a + model_b`` builds).

    Parameters
    ----------
    *models : Delay
        The models added.

    Raises
    ------
    GradcodesTypeError
        If a model is not a :class:`Delay`.

    Examples
    --------
    >>> from gradcodes.mpi import FixedDelay
    >>> both = FixedDelay(0.5, workers=[1]) + FixedDelay(0.25, workers=[1, 2])
    >>> type(both).__name__, both.delay(1, 0, workers=4, load_fraction=0.25)
    ('Combined', 0.75)
    """

    def __init__(self, *models: Delay) -> None:
        for m in models:
            if not isinstance(m, Delay):
                raise GradcodesTypeError(f"delay models must be Delay instances, got {type(m).__name__}")
        self.models = models

    def delay(self, worker: int, iteration: int, *, workers: int, load_fraction: float) -> float:
        return sum(m.delay(worker, iteration, workers=workers, load_fraction=load_fraction) for m in self.models)

    def describe(self) -> str:
        return " + ".join(m.describe() for m in self.models)


class ModelDelay(Delay):
    """A worker model of the simulator as injected delays: the same unequal, persistent or replayed times in a
    run as in :func:`gradcodes.simulate` (``model=...``).

    The model's ``(horizon, workers)`` times are drawn once per rank from ``(rng, workers, load)`` (so every
    rank agrees) for ``load_fraction * m_data`` points per worker; iteration ``t`` uses row ``t % horizon`` (a
    :class:`~gradcodes.TraceReplay` replays its own rows).

    Parameters
    ----------
    model : gradcodes.WorkerModel
        ``ShiftedExponentialWorkers`` (per-worker ``a``, ``mu``), ``PersistentStragglers`` (with a ``base``) or
        ``TraceReplay``.
    m_data : float
        Data points per iteration (the whole dataset).
    horizon : int, default 10000
        Iterations drawn (the Markov chain of persistent stragglers runs over them).
    rng : None, int, SeedSequence or Generator, optional
        Random state (SPEC 7; default None: fresh entropy).

    Examples
    --------
    >>> import gradcodes as gc
    >>> d = ModelDelay(gc.TraceReplay([[0.1, 0.2], [0.3, 0.4]]), m_data=100)
    >>> d.delay(1, 0, workers=2, load_fraction=0.5), d.delay(0, 3, workers=2, load_fraction=0.5)
    (0.2, 0.3)
    """

    def __init__(self, model: Any, *, m_data: float, horizon: int = 10_000, rng: RNGLike = None) -> None:
        from .._simulate import PersistentStragglers, WorkerModel

        if not isinstance(model, WorkerModel):
            raise GradcodesTypeError(f"model must be a gradcodes.WorkerModel, got {type(model).__name__}")
        if isinstance(model, PersistentStragglers) and model.base is None:
            raise GradcodesValueError("PersistentStragglers needs base= (e.g. gc.ShiftedExponentialWorkers(a)) for a "
                                      "run")
        self.model = model
        self.m_data = _nonneg("m_data", m_data)
        self.horizon = check_int("horizon", horizon, 1)
        self.entropy = rng_entropy(rng)
        self._cache: dict[tuple[int, float], np.ndarray] = {}

    def times(self, workers: int, load_fraction: float) -> np.ndarray:
        """The ``(horizon, workers)`` array of injected times for workers processing ``load_fraction`` of the data.

        Drawn once per ``(workers, load_fraction)`` from ``(rng, workers)`` and cached, so that every rank gets the
        same times.

        Parameters
        ----------
        workers : int
            Number of workers.
        load_fraction : float
            The share of the data every worker processes (``load_fraction * m_data`` points).

        Returns
        -------
        ndarray, shape (horizon, workers)
            Seconds; row ``t % horizon`` is iteration ``t``.

        Examples
        --------
        >>> import gradcodes as gc
        >>> d = ModelDelay(gc.TraceReplay([[0.1, 0.2], [0.3, 0.4]]), m_data=100, horizon=3)
        >>> d.times(2, 0.5).tolist()
        [[0.1, 0.2], [0.3, 0.4], [0.1, 0.2]]
        """
        key = (int(workers), float(load_fraction))
        if key not in self._cache:
            gen = np.random.default_rng([self.entropy, 3, int(workers)])
            self._cache[key] = self.model.times(gen, self.horizon, int(workers), load_fraction * self.m_data)
        return self._cache[key]

    def delay(self, worker: int, iteration: int, *, workers: int, load_fraction: float) -> float:
        return float(self.times(workers, load_fraction)[iteration % self.horizon, worker])

    def describe(self) -> str:
        return f"{self.model.label}, m_data={self.m_data:g}"


# shown (reprs, pickles, the API pages' "Bases") under the public module they are imported from
for _cls in (Delay, NoDelay, ShiftedExponential, FixedDelay, Hang, Combined, ModelDelay):
    _cls.__module__ = "gradcodes.mpi"
del _cls
# doctest's finder skips classes whose __module__ is another module's: name them, so their examples run here
__test__ = {c.__name__: c for c in (Delay, NoDelay, ShiftedExponential, FixedDelay, Hang, Combined, ModelDelay)}
