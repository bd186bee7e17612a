"""Simulated distributed SGD under a wait policy: loss against simulated wall-clock time.

The problem is least squares, ``f(w) = (1/2M) ||X w - y||^2`` on ``M`` synthetic points split evenly over ``n``
workers; the reported error is ``f(w) - f(w*)`` (exact, from the Hessian ``X^T X / M``). A worker's gradient is the
gradient on a fresh minibatch of ``batch_size`` points of its partition; its computation time is drawn from the
simulator's worker model for ``batch_size`` points (shifted exponential by default; Reisizadeh et al., Section 5), and
messages arrive through the single-port model (``t_c`` each).

Policies (all documented with their papers in :mod:`gradcodes._simulate._policies`):

* synchronous ``FixedK(k)`` / ``BackupWorkers(b)`` (fastest-``k`` SGD; Chen et al. 2016): every update waits for
  the ``k`` fastest fresh gradients and averages them; the slower workers' work is discarded;
* :class:`AdaptiveK` (Hanna, Bitar, Parag, Dasari & El Rouayheb 2020): fastest-``k`` with ``k`` increased when the
  iterates look stationary;
* :class:`KAsync` (Dutta, Joshi, Ghosh, Dube & Nagpurkar, AISTATS 2018, K-async SGD): the master waits for any
  ``K`` gradients, possibly computed at older parameters (staleness recorded), and only those ``K`` workers
  restart with the new parameters;
* a gradient code with :class:`EarliestDecodable` or ``FixedK(None)`` (first ``n - s``): every worker computes its
  ``load`` partitions' minibatches and the master decodes the exact sum over all ``n`` partitions.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from .._base.aliases import RNGLike
from .._base.errors import GradcodesTypeError
from .._base.validate import check_int, check_rng, check_size
from ._models import _reception_times
from ._policies import AdaptiveK, FixedK, KAsync, WaitPolicy
from ._workers import ShiftedExponentialWorkers, WorkerModel

if TYPE_CHECKING:
    from .._core.code import LinearCode

__all__ = ["TrainingResult", "simulate_training"]


@dataclass
class TrainingResult:
    """Loss against simulated wall-clock time of one run of :func:`simulate_training`.

    Attributes
    ----------
    policy : str
    time : ndarray, shape (updates,)
        Simulated wall-clock time (s) at each update.
    error : ndarray, shape (updates,)
        ``f(w_t) - f(w*)`` after each update.
    used : ndarray of int, shape (updates,)
        Gradients (or messages) used by each update.
    staleness : ndarray or None
        K-async: the mean staleness (updates since the gradients' parameters) of each update.
    details : dict

    Examples
    --------
    >>> import gradcodes as gc
    >>> r = gc.simulate_training(gc.FixedK(4), n=8, updates=200, rng=0)
    >>> r.time.shape, bool(r.error[-1] < r.error[0])
    ((200,), True)
    """

    policy: str
    time: np.ndarray
    error: np.ndarray
    used: np.ndarray
    staleness: np.ndarray | None = None
    details: dict[str, Any] = field(default_factory=dict)

    def time_to(self, error: float, window: int = 1) -> float:
        """The first simulated time at which the running mean of ``window`` errors is at most ``error``
        (``inf`` if never).

        Parameters
        ----------
        error : float
            The target error ``f(w_t) - f(w*)``.
        window : int, default 1
            Updates averaged.

        Returns
        -------
        float
            Simulated seconds, or ``inf``.

        Examples
        --------
        >>> import gradcodes as gc
        >>> r = gc.simulate_training(gc.FixedK(4), n=8, updates=200, rng=0)
        >>> bool(r.time_to(r.error[0] / 2) < r.time[-1]), r.time_to(-1.0)
        (True, inf)"""
        e = self.error if window <= 1 else np.convolve(self.error, np.ones(window) / window, mode="valid")
        hit = np.flatnonzero(e <= error)
        return float(self.time[hit[0] + (window - 1 if window > 1 else 0)]) if hit.size else math.inf

    def final(self, window: int = 50) -> float:
        """The mean error of the last ``window`` updates.

        Parameters
        ----------
        window : int, default 50
            Updates averaged (all of them when there are fewer).

        Returns
        -------
        float
            The mean of ``error[-window:]``.

        Examples
        --------
        >>> import gradcodes as gc
        >>> r = gc.simulate_training(gc.FixedK(4), n=8, updates=200, rng=0)
        >>> bool(r.final(50) < r.error[0] / 100)
        True"""
        return float(self.error[-window:].mean())


def _problem(M: int, dim: int, noise: float, rng: np.random.Generator) -> tuple[np.ndarray, ...]:
    X = rng.standard_normal((M, dim))
    w_star = rng.standard_normal(dim)
    y = X @ w_star + noise * rng.standard_normal(M)
    H = X.T @ X / M
    w_opt = np.linalg.solve(X.T @ X, X.T @ y)
    return X, y, H, w_opt


def simulate_training(policy: WaitPolicy, *, n: int = 8, code: LinearCode | None = None, time_budget: float | None
                      = None, updates: int = 500, batch_size: int = 8, points: int = 4000, dim: int = 10,
                      noise: float = 1.0, lr: float = 0.05, a: float = 1e-3, mu: float | None = None,
                      model: WorkerModel | None = None, t_c: float = 0.0, rng: RNGLike = None) -> TrainingResult:
    """Simulate SGD on a least-squares problem under a wait policy; returns the error against simulated time.

    Parameters
    ----------
    policy : WaitPolicy
        ``FixedK(k)``, ``BackupWorkers(b)``, ``AdaptiveK(...)``, ``KAsync(K)``; with ``code``, the code's wait
        policy (``EarliestDecodable()`` or ``FixedK(None)``).
    n : int
        Workers (ignored with ``code``: ``code.n``).
    code : GradientCode, optional
        A gradient code: every update is the exact sum of all partitions' minibatch gradients, at the time
        the policy stops; the computation per worker is ``load`` minibatches.
    time_budget : float, optional
        Stop at this simulated time instead of after ``updates`` updates.
    updates, batch_size, points, dim, noise, lr : int or float
        Updates (upper bound with ``time_budget``), minibatch size, data points, dimension, label noise,
        step size.
    a, mu, model, t_c
        The worker model (as :func:`gradcodes.simulate`; per worker ``batch_size`` points per partition) and the
        per-message time.
    rng : None, int, SeedSequence or Generator
        Random state (SPEC 7): data, minibatches and delays.

    Returns
    -------
    TrainingResult
        The error, the simulated time and the gradients used at each update.

    Raises
    ------
    GradcodesTypeError
        If ``policy``, ``code`` or ``model`` has the wrong type, or ``policy`` needs a ``code``.
    GradcodesValueError
        If a parameter is out of its range (the message names the parameter and the range).

    Examples
    --------
    >>> import gradcodes as gc
    >>> r = gc.simulate_training(gc.FixedK(4), n=8, updates=200, rng=0)
    >>> bool(r.error[-1] < r.error[0]), r.used[0]
    (True, np.int64(4))
    """
    gen = check_rng(rng)
    if not isinstance(policy, WaitPolicy):
        raise GradcodesTypeError(f"policy must be a WaitPolicy, got {type(policy).__name__}")
    if isinstance(policy, AdaptiveK):
        policy.reset()
    if code is not None:
        from .._core.code import LinearCode

        if not isinstance(code, LinearCode):
            raise GradcodesTypeError(f"code must be a gradcodes code (GradientCode or ApproximateCode), got "
                            f"{type(code).__name__}")
        from .._families.partial_stragglers import PartialStragglerCode

        if isinstance(code, PartialStragglerCode):      # its rows are chunk messages, not workers
            raise GradcodesTypeError("code: a PartialStragglerCode sends a message per chunk; simulate_training "
                                     "models one message per worker (time it with gradcodes.simulate or "
                                     "gradcodes.simulate_partial)")
        n = code.n
    n = check_int("n", n, 1)
    updates = check_int("updates", updates, 1)
    check_size("the simulated work (updates * n)", updates * n, "work")      # a huge count: refuse, don't hang
    batch = check_int("batch_size", batch_size, 1)
    M = check_int("points", points, n) // n * n
    X, y, H, w_opt = _problem(M, dim, noise, gen)
    part = M // n
    if model is not None and not isinstance(model, WorkerModel):
        raise GradcodesTypeError(f"model must be a WorkerModel (e.g. gradcodes.PersistentStragglers), got "
                        f"{type(model).__name__}")
    wm = model if model is not None else ShiftedExponentialWorkers(a, mu)
    load = 1 if code is None else int(code.load)
    w = np.zeros(dim)
    err0 = 0.5 * float((w - w_opt) @ H @ (w - w_opt))
    times: list[float] = []
    errs: list[float] = []
    used: list[int] = []
    stale: list[float] = []
    now = 0.0
    chunk = 256

    def grad(ws: np.ndarray, workers: np.ndarray) -> np.ndarray:
        """Minibatch gradients (len(workers), dim) at parameters ws (len(workers), dim) or (dim,)."""
        idx = workers[:, None] * part + gen.integers(0, part, size=(workers.size, batch))
        Xb, yb = X[idx], y[idx]
        W = np.broadcast_to(ws, (workers.size, dim))
        r = np.einsum("kbd,kd->kb", Xb, W) - yb
        return np.einsum("kbd,kb->kd", Xb, r) / batch

    def draw(count: int) -> np.ndarray:
        return wm.times(gen, count, n, float(batch * load))

    if isinstance(policy, KAsync):
        K = policy.need(n)
        finish = draw(1)[0]
        version = np.zeros(n, dtype=np.int64)
        params = np.zeros((n, dim))
        t = 0
        while t < updates and (time_budget is None or now <= time_budget):
            order = np.argsort(finish, kind="stable")[:K]
            R = _reception_times(np.sort(finish[order]), t_c)
            now = max(now, float(R[-1]))
            g = grad(params[order], order).mean(axis=0)
            stale.append(float(np.mean(t - version[order])))
            w = w - lr * g
            t += 1
            params[order] = w
            version[order] = t
            finish[order] = now + draw(1)[0][order]
            times.append(now)
            errs.append(0.5 * float((w - w_opt) @ H @ (w - w_opt)))
            used.append(K)
    else:
        t = 0
        T = draw(chunk)
        while t < updates and (time_budget is None or now <= time_budget):
            row = T[t % chunk]
            if t % chunk == chunk - 1:
                T = draw(chunk)
            order = np.argsort(row, kind="stable")
            R = _reception_times(row[order], t_c)
            if code is not None:
                J = int(policy.counts(code, order[None, :])[0])
                g = grad(w, np.arange(n)).mean(axis=0)           # the exact decoded sum, averaged
            else:
                if isinstance(policy, AdaptiveK):
                    k = policy.current_k(n)
                elif isinstance(policy, FixedK):
                    k = policy.need_count(n)
                else:
                    raise GradcodesTypeError(f"policy {policy} needs a code (code=...) or is not a training policy")
                J = k
                g = grad(w, order[:k]).mean(axis=0)
            now += float(R[J - 1])
            if isinstance(policy, AdaptiveK):
                policy.observe(g, n)
            w = w - lr * g
            t += 1
            times.append(now)
            errs.append(0.5 * float((w - w_opt) @ H @ (w - w_opt)))
            used.append(J)
    details = {"n": n, "batch_size": batch, "lr": lr, "initial_error": err0, "model": wm.label, "t_c": t_c}
    if isinstance(policy, AdaptiveK):
        details["switches"] = list(policy.switches)
    return TrainingResult(str(policy), np.asarray(times), np.asarray(errs), np.asarray(used, dtype=np.int64),
                          np.asarray(stale) if stale else None, details)

