"""Wait policies: when the master stops waiting for messages in an iteration.

One small interface serves the simulator (vectorised over iterations) and the MPI runtime (one message at a
time):

* ``policy.counts(code, order)`` -- ``order`` (b, n) lists the workers of ``b`` iterations in arrival order;
  returns how many of the first arrivals the master waits for in each iteration (simulator);
* ``policy.tracker(code, dtype)`` -- an object with ``add(worker) -> bool`` (stop now?) and ``reset()``, fed one
  arriving message at a time (runtime: :meth:`gradcodes.mpi.Master.aggregate`, tree parents).

Policies:

* :class:`EarliestDecodable` -- stop at the first arrival after which the responders can decode
  (:meth:`gradcodes.LinearCode.decodable`); the default for exact codes. For fractional repetition this is one
  worker per group (Tandon et al. 2017, Section 3), so the iteration time is the maximum over groups of the minimum
  within each group.
* :class:`FixedK` -- the first ``k`` messages (``k = n - s``: the classical gradient-coding master; ``k = n``:
  wait for all; "fastest-k SGD" for an approximate code).
* :class:`BackupWorkers` -- synchronous SGD with ``b`` backup workers (Chen, Pan, Monga, Bengio & Jozefowicz,
  "Revisiting distributed synchronous SGD", 2016, Section 3): ``n = N + b`` workers compute, the master
  aggregates the first ``N = n - b`` gradients and drops the rest.
* :class:`AdaptiveK` -- fastest-``k`` SGD with ``k`` increased during training (Kas Hanna, Bitar, Parag, Dasari &
  El Rouayheb, "Adaptive distributed stochastic gradient descent for minimizing delay in the presence of
  stragglers", ICASSP 2020): small ``k`` gives fast iterations and a high error floor, large ``k`` slow iterations
  and a low floor, so ``k`` grows when the iterates stop improving. The switch is detected, as in the paper's
  algorithm, by Pflug's statistical test for stationarity of constant-step SGD (Pflug, "Non-asymptotic
  confidence bounds for stochastic approximation algorithms with constant step size", Monatshefte fur
  Mathematik 1990): the running sum of inner products of successive stochastic gradients becomes negative.
* :class:`KAsync` -- K-async SGD (Dutta, Joshi, Ghosh, Dube & Nagpurkar, "Slow and stale gradients can win the
  race: error-runtime trade-offs in distributed SGD", AISTATS 2018, Section 3): the master waits for any ``K``
  gradients, which may have been computed at older parameters (their staleness is recorded), updates, and only
  those ``K`` workers restart with the new parameters. Its updates are not synchronous iterations, so it is
  simulated by :func:`gradcodes._simulate._training.simulate_training` only (``counts`` and ``tracker``
  refuse it; the MPI runtime drops stale messages).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from .._base.aliases import DTypeLike
from .._base.errors import GradcodesValueError

if TYPE_CHECKING:
    from .._core.code import LinearCode

__all__ = ["WaitPolicy", "EarliestDecodable", "FixedK", "BackupWorkers", "AdaptiveK", "KAsync", "as_policy"]


class WaitPolicy:
    """Base class of the wait policies (module docstring).

    Examples
    --------
    >>> import gradcodes as gc
    >>> all(isinstance(p, gc.WaitPolicy) for p in (gc.FixedK(3), gc.EarliestDecodable(), gc.KAsync(2)))
    True
    """

    name = "policy"

    def counts(self, code: LinearCode, order: np.ndarray) -> np.ndarray:
        """Messages waited for in each of the ``b`` iterations of ``order``.

        Parameters
        ----------
        code : LinearCode
            The code the master decodes (its ``n`` workers and, for some policies, its decodability).
        order : ndarray of int, shape (b, n)
            Each row: one iteration's workers in the order their messages arrive.

        Returns
        -------
        ndarray of int64, shape (b,)
            The number of messages the master waits for in each iteration.

        Examples
        --------
        >>> import numpy as np, gradcodes as gc
        >>> order = np.array([[0, 1, 5, 2, 3, 4], [0, 1, 2, 3, 4, 5]])
        >>> gc.EarliestDecodable().counts(gc.fractional_repetition(6, 2), order).tolist()
        [3, 4]
        >>> gc.FixedK().counts(gc.fractional_repetition(6, 2), order).tolist()      # n - s
        [4, 4]
        """
        raise NotImplementedError

    def tracker(self, code: LinearCode, dtype: DTypeLike = np.float64) -> Any:
        """A per-message tracker for a runtime's master: ``add(worker) -> bool`` (True: stop waiting), ``reset()``.

        Parameters
        ----------
        code : LinearCode
            The code the master decodes.
        dtype : dtype, default float64
            The messages' dtype (the decodability of a set is judged in it).

        Returns
        -------
        object
            Its ``add(worker)`` records one arrived message and says whether to stop waiting; ``reset()`` starts
            the next iteration.

        Examples
        --------
        >>> import gradcodes as gc
        >>> t = gc.EarliestDecodable().tracker(gc.fractional_repetition(4, 1))
        >>> t.add(0), t.add(1), t.add(2)           # workers 0 and 1 hold the same partitions
        (False, False, True)
        """
        raise NotImplementedError

    def __str__(self) -> str:
        return self.name

    def __repr__(self) -> str:
        """The call that builds this policy (``FixedK(3)``); :func:`str` gives its label in tables (``first 3``)."""
        args = ", ".join(f"{k}={v!r}" for k, v in self._args().items())
        return f"{type(self).__name__}({args})"

    def _args(self) -> dict[str, Any]:
        return {}


class _CountTracker:
    def __init__(self, k: int) -> None:
        self.k, self.got = k, 0

    def add(self, worker: int) -> bool:
        self.got += 1
        return self.got >= self.k

    def reset(self) -> None:
        self.got = 0


class FixedK(WaitPolicy):
    """Wait for the first ``k`` messages (``k=None``: ``n - s`` of the code, the classical rule).

    Parameters
    ----------
    k : int, optional
        Messages waited for, ``k >= 1`` (at most the code's ``n``); None: ``n - s``.

    Raises
    ------
    GradcodesValueError
        If ``k`` is not a positive integer.

    Examples
    --------
    >>> import numpy as np, gradcodes as gc
    >>> gc.FixedK(3).counts(gc.fractional_repetition(6, 2), np.array([[5, 4, 3, 2, 1, 0]])).tolist()
    [3]
    """

    def __init__(self, k: int | None = None) -> None:
        if k is not None and (isinstance(k, bool) or not isinstance(k, (int, np.integer)) or k < 1):
            raise GradcodesValueError(f"k must be a positive integer (or None for n - s), got {k!r}")
        self.k = None if k is None else int(k)
        self.name = "first n-s" if k is None else f"first {k}"

    def _args(self) -> dict[str, Any]:
        return {} if self.k is None else {"k": self.k}

    def need(self, code: LinearCode) -> int:
        """Messages waited for with ``code``.

        Parameters
        ----------
        code : LinearCode
            The code the master decodes.

        Returns
        -------
        int
            ``k``, or ``code.n - code.s`` for ``k=None``.

        Raises
        ------
        GradcodesValueError
            If ``k`` exceeds ``code.n``.

        Examples
        --------
        >>> import gradcodes as gc
        >>> gc.FixedK().need(gc.cyclic_repetition(6, 2, rng=0)), gc.BackupWorkers(1).need(gc.uncoded(4))
        (4, 3)
        """
        if self.k is None:
            s = getattr(code, "s", None)
            return int(code.n - (s or 0))
        if self.k > code.n:
            raise GradcodesValueError(f"k={self.k} exceeds the number of workers n={code.n}")
        return self.k

    def counts(self, code: LinearCode, order: np.ndarray) -> np.ndarray:
        return np.full(order.shape[0], self.need(code), dtype=np.int64)

    def need_count(self, n: int) -> int:
        """Messages waited for among ``n`` uncoded workers (``k=None``: all ``n``).

        Parameters
        ----------
        n : int
            Number of workers.

        Returns
        -------
        int
            ``k``, or ``n`` for ``k=None``.

        Raises
        ------
        GradcodesValueError
            If ``k > n``.

        Examples
        --------
        >>> import gradcodes as gc
        >>> gc.FixedK(3).need_count(8), gc.FixedK().need_count(8), gc.BackupWorkers(2).need_count(8)
        (3, 8, 6)
        """
        if self.k is None:
            return n
        if self.k > n:
            raise GradcodesValueError(f"k={self.k} exceeds the number of workers n={n}")
        return self.k

    def tracker(self, code: LinearCode, dtype: DTypeLike = np.float64) -> Any:
        return _CountTracker(self.need(code))


class BackupWorkers(FixedK):
    """Synchronous SGD with ``b`` backup workers (Chen et al. 2016): wait for the first ``n - b`` messages.

    Parameters
    ----------
    b : int
        Backup workers, ``0 <= b < n``.

    Raises
    ------
    GradcodesValueError
        If ``b`` is not an integer ``>= 0``.

    Examples
    --------
    >>> import gradcodes as gc
    >>> gc.BackupWorkers(2).name
    'backup b=2'
    """

    def __init__(self, b: int) -> None:
        if isinstance(b, bool) or not isinstance(b, (int, np.integer)) or b < 0:
            raise GradcodesValueError(f"b must be an integer >= 0 (backup workers), got {b!r}")
        super().__init__(None)
        self.b = int(b)
        self.name = f"backup b={b}"

    def _args(self) -> dict[str, Any]:
        return {"b": self.b}

    def need(self, code: LinearCode) -> int:
        return self.need_count(code.n)

    def need_count(self, n: int) -> int:
        if self.b >= n:
            raise GradcodesValueError(f"b={self.b} backup workers leave none of the n={n} workers to wait for")
        return int(n - self.b)


class AdaptiveK(WaitPolicy):
    """Fastest-``k`` SGD with adaptive ``k`` (Kas Hanna et al. 2020; module docstring): start at ``k0``; after
    every ``burn`` updates at the current ``k``, if the sum of ``<g_t, g_{t-1}>`` over them is negative (Pflug's
    test: the iterates oscillate around the floor), ``k`` grows by ``step`` (at most ``n``).

    Stateful: :meth:`observe` feeds it the update directions, :meth:`reset` starts over.

    Parameters
    ----------
    k0 : int, default 1
        The initial ``k``.
    step : int, default 1
        Increase of ``k`` at each switch.
    burn : int, default 20
        Updates between two tests.

    Raises
    ------
    GradcodesValueError
        If ``k0``, ``step`` or ``burn`` is not an integer ``>= 1``.

    Examples
    --------
    >>> import numpy as np, gradcodes as gc
    >>> p = gc.AdaptiveK(k0=1, step=2, burn=2)
    >>> for g in ([1.0], [1.0], [-1.0], [1.0]):
    ...     p.observe(np.array(g), 8)
    >>> p.current_k(8), p.switches
    (3, [4])
    """

    def __init__(self, k0: int = 1, step: int = 1, burn: int = 20) -> None:
        for name, v, lo in (("k0", k0, 1), ("step", step, 1), ("burn", burn, 1)):
            if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < lo:
                raise GradcodesValueError(f"{name} must be an integer >= {lo}, got {v!r}")
        self.k0, self.step, self.burn = int(k0), int(step), int(burn)
        self.name = f"adaptive k (k0={k0}, step={step})"
        self.reset()

    def _args(self) -> dict[str, Any]:
        return {"k0": self.k0, "step": self.step, "burn": self.burn}

    def reset(self) -> None:
        """Back to ``k0`` (and forget the test's statistics).

        Examples
        --------
        >>> import numpy as np, gradcodes as gc
        >>> p = gc.AdaptiveK(k0=2, burn=1)
        >>> for g in ([1.0], [-1.0]):
        ...     p.observe(np.array(g), 8)
        >>> p.current_k(8)
        3
        >>> p.reset()
        >>> p.current_k(8), p.switches
        (2, [])
        """
        self.k = self.k0
        self._sum = 0.0
        self._count = 0
        self._prev: np.ndarray | None = None
        self._updates = 0
        self.switches: list[int] = []

    def current_k(self, n: int) -> int:
        """The current ``k`` (at most ``n``).

        Parameters
        ----------
        n : int
            Number of workers.

        Returns
        -------
        int
            ``min(k, n)``.

        Examples
        --------
        >>> import gradcodes as gc
        >>> gc.AdaptiveK(k0=5).current_k(8), gc.AdaptiveK(k0=5).current_k(3)
        (5, 3)
        """
        return min(self.k, n)

    def observe(self, g: np.ndarray, n: int) -> None:
        """Feed the update direction of one update; may increase ``k``.

        Parameters
        ----------
        g : ndarray
            The update direction (the gradient used) of one update.
        n : int
            Number of workers (``k`` never exceeds it).

        Examples
        --------
        >>> import numpy as np, gradcodes as gc
        >>> p = gc.AdaptiveK(k0=1, step=2, burn=1)
        >>> p.observe(np.array([1.0, 0.0]), 8); p.observe(np.array([-1.0, 0.0]), 8)   # <g_2, g_1> < 0
        >>> p.current_k(8), p.switches
        (3, [2])
        """
        g = np.asarray(g, dtype=float)
        self._updates += 1
        if self._prev is not None:
            self._sum += float(g @ self._prev)
            self._count += 1
        self._prev = g
        if self._count >= self.burn and self._sum < 0 and self.k < n:
            self.k = min(n, self.k + self.step)
            self.switches.append(self._updates)
            self._sum, self._count, self._prev = 0.0, 0, None

    def counts(self, code: LinearCode, order: np.ndarray) -> np.ndarray:
        return np.full(order.shape[0], self.current_k(code.n), dtype=np.int64)

    def tracker(self, code: LinearCode, dtype: DTypeLike = np.float64) -> Any:
        return _CountTracker(self.current_k(code.n))


class KAsync(WaitPolicy):
    """K-async SGD (Dutta et al., AISTATS 2018; module docstring): any ``K`` gradients, possibly stale.

    Parameters
    ----------
    K : int
        Gradients per update, ``1 <= K <= n``.

    Raises
    ------
    GradcodesValueError
        If ``K`` is not a positive integer.

    Examples
    --------
    >>> import gradcodes as gc
    >>> gc.KAsync(3).name
    'K-async K=3'
    """

    def __init__(self, K: int) -> None:
        if isinstance(K, bool) or not isinstance(K, (int, np.integer)) or K < 1:
            raise GradcodesValueError(f"K must be a positive integer, got {K!r}")
        self.K = int(K)
        self.name = f"K-async K={K}"

    def _args(self) -> dict[str, Any]:
        return {"K": self.K}

    def need(self, n: int) -> int:
        """Gradients per update among ``n`` workers.

        Parameters
        ----------
        n : int
            Number of workers.

        Returns
        -------
        int
            ``K``.

        Raises
        ------
        GradcodesValueError
            If ``K > n``.

        Examples
        --------
        >>> import gradcodes as gc
        >>> gc.KAsync(3).need(8)
        3
        """
        if self.K > n:
            raise GradcodesValueError(f"K={self.K} exceeds the number of workers n={n}")
        return self.K

    def counts(self, code: LinearCode, order: np.ndarray) -> np.ndarray:
        """Not defined: K-async updates are not synchronous iterations (use :func:`gradcodes.simulate_training`).

        Parameters
        ----------
        code : LinearCode
            The code (not read).
        order : ndarray of int, shape (b, n)
            Arrival orders (not read).

        Returns
        -------
        ndarray of int64, shape (b,)
            Never returns.

        Raises
        ------
        GradcodesValueError
            Always: a K-async update may use stale gradients of earlier iterations, which per-iteration counts
            cannot describe.

        Examples
        --------
        >>> import numpy as np, gradcodes as gc
        >>> gc.KAsync(3).counts(gc.fractional_repetition(6, 2), np.array([[0, 1, 2, 3, 4, 5]]))
        Traceback (most recent call last):
        ...
        gradcodes.GradcodesValueError: K-async updates are not synchronous iterations: ...
        """
        raise GradcodesValueError("K-async updates are not synchronous iterations: simulate them with "
                                  "simulate_training")

    def tracker(self, code: LinearCode, dtype: DTypeLike = np.float64) -> Any:
        """Not defined: the MPI runtime's master drops stale messages, so it cannot run K-async SGD.

        Parameters
        ----------
        code : LinearCode
            The code (not read).
        dtype : dtype, default float64
            The messages' dtype (not read).

        Returns
        -------
        object
            Never returns.

        Raises
        ------
        GradcodesValueError
            Always.

        Examples
        --------
        >>> import gradcodes as gc
        >>> gc.KAsync(3).tracker(gc.fractional_repetition(6, 2))
        Traceback (most recent call last):
        ...
        gradcodes.GradcodesValueError: K-async is not supported by the MPI runtime ...
        """
        raise GradcodesValueError("K-async is not supported by the MPI runtime (its master drops stale messages)")


class EarliestDecodable(WaitPolicy):
    """Stop as soon as the responders can decode (:meth:`gradcodes.LinearCode.decodable`).

    ``counts`` scans each iteration's prefixes from the first one that stores every partition (no set below can
    decode) and judges them in batches with the decode's acceptance rule; for group codes it is the closed form
    ``max over groups of (min arrival rank within the group) + 1``.

    Parameters
    ----------
    dtype : dtype, default float64
        The messages' dtype: a set is decodable when its decode passes the acceptance rule in it.

    Examples
    --------
    >>> import numpy as np, gradcodes as gc
    >>> gc.EarliestDecodable().counts(gc.fractional_repetition(6, 2), np.array([[0, 1, 5, 2, 3, 4]])).tolist()
    [3]
    """

    name = "earliest decodable"

    def __init__(self, dtype: DTypeLike = np.float64) -> None:
        self.dtype = np.dtype(dtype)

    def _args(self) -> dict[str, Any]:
        return {} if self.dtype == np.float64 else {"dtype": self.dtype.name}

    def counts(self, code: LinearCode, order: np.ndarray) -> np.ndarray:
        """Messages waited for in each of the ``b`` iterations: the first prefix of ``order`` that decodes.

        Parameters
        ----------
        code : LinearCode
            The code the master decodes.
        order : ndarray of int, shape (b, n)
            Each row: one iteration's workers in the order their messages arrive.

        Returns
        -------
        ndarray of int64, shape (b,)
            The length of the shortest decodable prefix of each row (judged in the policy's ``dtype``).

        Raises
        ------
        GradcodesValueError
            If ``code`` is a group code (e.g. :func:`~gradcodes.fractional_repetition`) whose group decode
            fails the acceptance rule in ``dtype`` for every responder set.

        Examples
        --------
        >>> import numpy as np, gradcodes as gc
        >>> order = np.array([[0, 1, 5, 2, 3, 4], [0, 1, 2, 3, 4, 5]])
        >>> gc.EarliestDecodable(np.float32).counts(gc.fractional_repetition(6, 2), order).tolist()
        [3, 4]
        """
        b, n = order.shape
        rank = np.empty_like(order)
        np.put_along_axis(rank, order, np.arange(n)[None, :].repeat(b, axis=0), axis=1)
        bounds = code._group_bounds()
        if bounds is not None:
            if not code._groups_accept(self.dtype):
                raise GradcodesValueError(f"code {code.name!r}: no responder set decodes in {self.dtype}")
            return np.minimum.reduceat(rank, bounds[:-1], axis=1).max(axis=1) + 1
        S = np.asarray(code.support_matrix)                  # (n, k)
        out = np.zeros(b, dtype=np.int64)
        for lo in range(0, b, max(1, 2_000_000 // max(n * code.k, 1))):
            hi = min(b, lo + max(1, 2_000_000 // max(n * code.k, 1)))
            r = rank[lo:hi]
            cover = np.where(S[None, :, :], r[:, :, None], n).min(axis=1).max(axis=1) + 1   # (hi-lo,)
            out[lo:hi] = self._scan(code, order[lo:hi], cover)
        return out

    def _scan(self, code: LinearCode, order: np.ndarray, start: np.ndarray) -> np.ndarray:
        b, n = order.shape
        J = np.zeros(b, dtype=np.int64)
        active = np.flatnonzero(start <= n)
        j_of = start.copy()
        cache: dict[bytes, bool] = {}
        while active.size:
            masks = np.zeros((active.size, n), dtype=bool)
            pref = np.arange(n)[None, :] < j_of[active][:, None]
            np.put_along_axis(masks, order[active], pref, axis=1)
            keys = [np.packbits(msk).tobytes() for msk in masks]
            todo = [t for t, key in enumerate(keys) if key not in cache]
            if todo:
                verdicts = code._decodable_masks(masks[todo], self.dtype)
                for t, v in zip(todo, verdicts, strict=True):
                    cache[keys[t]] = bool(v)
            ok = np.fromiter((cache[key] for key in keys), dtype=bool, count=len(keys))
            J[active[ok]] = j_of[active[ok]]
            rest = active[~ok]
            j_of[rest] += 1
            if np.any(j_of[rest] > n):
                raise GradcodesValueError(f"code {code.name!r}: even all {n} responders cannot decode in {self.dtype}")
            active = rest
        return J

    def tracker(self, code: LinearCode, dtype: DTypeLike | None = None) -> Any:
        return code.decodability(dtype=self.dtype if dtype is None else dtype)


def as_policy(policy: str | WaitPolicy | None, code: LinearCode) -> WaitPolicy:
    """``"earliest"``, ``"first"`` (``n - s``), ``"all"`` or a :class:`WaitPolicy` (``None``: the default,
    earliest decodable for exact codes, first ``n - s`` otherwise)."""
    from .._core.code import GradientCode

    if policy is None:
        policy = "earliest" if isinstance(code, GradientCode) else "first"
    if isinstance(policy, WaitPolicy):
        return policy
    if policy == "earliest":
        return EarliestDecodable()
    if policy == "first":
        return FixedK(None)
    if policy == "all":
        return FixedK(code.n)
    raise GradcodesValueError(f"policy must be 'earliest', 'first', 'all' or a WaitPolicy, got {policy!r}")
