"""The computation and communication models of the simulator (Reisizadeh et al., CodedReduce, Section 5).

* computation: shifted exponential ``a l + Exp(mean l/mu)`` (:func:`_computation`), or a worker model of
  :mod:`gradcodes._simulate._workers` (unequal, persistent stragglers, replayed traces);
* communication: single-port reception (:func:`_reception`, :func:`_reception_times`).
"""

from __future__ import annotations

import math
import zlib

import numpy as np

# Bound the size of the per-chunk arrays (iterations x workers) to keep memory small for big trees.
_CHUNK_ELEMENTS = 2_000_000


def _computation(rng: np.random.Generator, shape: tuple[int, ...], points: float | np.ndarray, a: float,
                 mu: float) -> np.ndarray:
    """Shifted exponential computation times ``a*l + Exp(mean l/mu)`` (``points``: a scalar, or one entry per
    worker, the last axis of ``shape``)."""
    if np.ndim(points):
        l_ = np.asarray(points, dtype=float)
        if math.isinf(mu) or not l_.any():
            return np.broadcast_to(a * l_, shape).copy()
        return a * l_ + rng.exponential(1.0, size=shape) * (l_ / mu)
    base = a * points
    if math.isinf(mu) or points == 0:
        return np.full(shape, base)
    return base + rng.exponential(points / mu, size=shape)


def _reception(children: np.ndarray, K: int, t_c: float, start: np.ndarray | None = None,
               want_order: bool = False) -> tuple[np.ndarray, np.ndarray | None]:
    """Single-port reception of the first ``K`` messages.

    ``children`` has shape ``(..., c)`` (ready times of a parent's ``c`` children). Returns the time ``R_K``
    at which the K-th message has been received (shape ``(...)``) and, if asked, the indices of the ``K``
    children used (the first ``K`` to become ready; ties go to the smaller index).
    ``start`` (shape ``(...)``) is the time the parent starts receiving (no overlap); ``None`` = time 0.
    """
    if want_order:
        order = np.argsort(children, axis=-1, kind="stable")[..., :K]
        first = np.take_along_axis(children, order, axis=-1)
    else:
        order = None
        first = np.sort(children, axis=-1)[..., :K]
    # R_K = K t_c + max_{j<=K} (c_(j) - (j-1) t_c)   (j is 1-based)
    shift = t_c * np.arange(K, dtype=float)
    R = K * t_c + np.max(first - shift, axis=-1)
    if start is not None:
        R = np.maximum(R, start + K * t_c)
    return R, order


def _reception_times(ready: np.ndarray, t_c: float) -> np.ndarray:
    """``R_j`` for every ``j = 1..c``: ``ready`` (..., c) is sorted ascending (arrival order); returns (..., c) with
    ``R_j = j t_c + max_{i <= j} (c_(i) - (i-1) t_c)``, the time the ``j``-th message has been received."""
    c = ready.shape[-1]
    shift = t_c * np.arange(c, dtype=float)
    return np.maximum.accumulate(ready - shift, axis=-1) + t_c * np.arange(1, c + 1, dtype=float)


def _rng_for(seed: np.random.SeedSequence, label: str) -> np.random.Generator:
    """One independent stream per scheme label, so a scheme's samples don't depend on the others."""
    return np.random.default_rng(np.random.SeedSequence(seed.entropy,
                                                        spawn_key=(zlib.crc32(label.encode()),)))


def _chunks(iters: int, width: int):
    size = max(1, _CHUNK_ELEMENTS // max(width, 1))
    for lo in range(0, iters, size):
        yield lo, min(iters, lo + size)
