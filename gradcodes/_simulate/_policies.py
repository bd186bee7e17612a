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
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from .._typing import DTypeLike

if TYPE_CHECKING:
    from .._code import LinearCode

__all__ = ["WaitPolicy", "EarliestDecodable", "FixedK", "BackupWorkers", "as_policy"]


class WaitPolicy:
    """Base class of the wait policies (module docstring)."""

    name = "policy"

    def counts(self, code: LinearCode, order: np.ndarray) -> np.ndarray:
        """Messages waited for in each of the ``b`` iterations of ``order`` (b, n)."""
        raise NotImplementedError

    def tracker(self, code: LinearCode, dtype: DTypeLike = np.float64) -> Any:
        """A per-message tracker: ``add(worker) -> bool`` (True: stop waiting) and ``reset()``."""
        raise NotImplementedError

    def __repr__(self) -> str:
        return self.name


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

    >>> import numpy as np, gradcodes as gc
    >>> FixedK(3).counts(gc.fractional_repetition(6, 2), np.array([[5, 4, 3, 2, 1, 0]])).tolist()
    [3]
    """

    def __init__(self, k: int | None = None) -> None:
        if k is not None and (isinstance(k, bool) or not isinstance(k, (int, np.integer)) or k < 1):
            raise ValueError(f"k must be a positive integer (or None for n - s), got {k!r}")
        self.k = None if k is None else int(k)
        self.name = "first n-s" if k is None else f"first {k}"

    def need(self, code: LinearCode) -> int:
        if self.k is None:
            s = getattr(code, "s", None)
            return int(code.n - (s or 0))
        if self.k > code.n:
            raise ValueError(f"k={self.k} exceeds the number of workers n={code.n}")
        return self.k

    def counts(self, code: LinearCode, order: np.ndarray) -> np.ndarray:
        return np.full(order.shape[0], self.need(code), dtype=np.int64)

    def tracker(self, code: LinearCode, dtype: DTypeLike = np.float64) -> Any:
        return _CountTracker(self.need(code))


class BackupWorkers(FixedK):
    """Synchronous SGD with ``b`` backup workers (Chen et al. 2016): wait for the first ``n - b`` messages.

    >>> BackupWorkers(2).name
    'backup b=2'
    """

    def __init__(self, b: int) -> None:
        if isinstance(b, bool) or not isinstance(b, (int, np.integer)) or b < 0:
            raise ValueError(f"b must be an integer >= 0 (backup workers), got {b!r}")
        super().__init__(None)
        self.b = int(b)
        self.name = f"backup b={b}"

    def need(self, code: LinearCode) -> int:
        if self.b >= code.n:
            raise ValueError(f"b={self.b} backup workers leave none of the n={code.n} workers to wait for")
        return int(code.n - self.b)


class EarliestDecodable(WaitPolicy):
    """Stop as soon as the responders can decode (:meth:`gradcodes.LinearCode.decodable`).

    ``counts`` scans each iteration's prefixes from the first one that stores every partition (no set below can
    decode) and judges them in batches with the decode's acceptance rule; for group codes it is the closed form
    ``max over groups of (min arrival rank within the group) + 1``.

    >>> import numpy as np, gradcodes as gc
    >>> EarliestDecodable().counts(gc.fractional_repetition(6, 2), np.array([[0, 1, 5, 2, 3, 4]])).tolist()
    [3]
    """

    name = "earliest decodable"

    def __init__(self, dtype: DTypeLike = np.float64) -> None:
        self.dtype = np.dtype(dtype)

    def counts(self, code: LinearCode, order: np.ndarray) -> np.ndarray:
        b, n = order.shape
        rank = np.empty_like(order)
        np.put_along_axis(rank, order, np.arange(n)[None, :].repeat(b, axis=0), axis=1)
        bounds = code._group_bounds()
        if bounds is not None:
            if not code._groups_accept(self.dtype):
                raise ValueError(f"code {code.name!r}: no responder set decodes in {self.dtype}")
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
                raise ValueError(f"code {code.name!r}: even all {n} responders cannot decode in {self.dtype}")
            active = rest
        return J

    def tracker(self, code: LinearCode, dtype: DTypeLike | None = None) -> Any:
        return code.decodability(dtype=self.dtype if dtype is None else dtype)


def as_policy(policy: str | WaitPolicy | None, code: LinearCode) -> WaitPolicy:
    """``"earliest"``, ``"first"`` (``n - s``), ``"all"`` or a :class:`WaitPolicy` (``None``: the default,
    earliest decodable for exact codes, first ``n - s`` otherwise)."""
    from .._code import GradientCode

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
    raise ValueError(f"policy must be 'earliest', 'first', 'all' or a WaitPolicy, got {policy!r}")
