"""Argument validation shared by every constructor, decoder and verifier.

Every check raises :class:`ValueError` or :class:`TypeError` whose message names the parameter and its valid
range, so that bad input never turns into a silent wrong answer, a NaN or a hang.
"""

from __future__ import annotations

import numbers
from collections.abc import Iterable

import numpy as np

__all__ = ["check_int", "check_ns", "check_responders", "check_seed", "check_choice", "check_real"]


def check_int(name: str, value: object, lo: int | None = None, hi: int | None = None) -> int:
    """Return ``value`` as a Python int, or raise naming ``name`` and the range ``[lo, hi]``.

    Booleans and floats are rejected (``n=2.5`` and ``n=True`` are mistakes, not integers); a float that is an
    exact integer (``n=10.0``) is rejected too, to keep the API strict and predictable.
    """
    rng = _range_text(lo, hi)
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{name} must be an integer{rng}, got {value!r} of type {type(value).__name__}")
    v = int(value)
    if (lo is not None and v < lo) or (hi is not None and v > hi):
        raise ValueError(f"{name} must be an integer{rng}, got {v}")
    return v


def check_real(name: str, value: object, lo: float | None = None, hi: float | None = None,
               *, open_lo: bool = False, open_hi: bool = False) -> float:
    """Return ``value`` as a finite float in the given (half-)open range, or raise naming ``name``."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be a real number, got {value!r} of type {type(value).__name__}")
    v = float(value)
    lo_b = "(" if open_lo else "["
    hi_b = ")" if open_hi else "]"
    lo_b = "(" if lo is None else lo_b
    hi_b = ")" if hi is None else hi_b
    rng = f" in {lo_b}{'-inf' if lo is None else lo}, {'inf' if hi is None else hi}{hi_b}"
    bad = not np.isfinite(v)
    if lo is not None:
        bad |= v <= lo if open_lo else v < lo
    if hi is not None:
        bad |= v >= hi if open_hi else v > hi
    if bad:
        raise ValueError(f"{name} must be a finite real number{rng}, got {value!r}")
    return v


def check_ns(n: object, s: object, *, s_max_offset: int = 1) -> tuple[int, int]:
    """Validate the pair (n, s): integers with ``n >= 1`` and ``0 <= s <= n - s_max_offset``."""
    n = check_int("n", n, 1)
    s = check_int("s", s, 0, n - s_max_offset)
    return n, s


def check_seed(seed: object) -> np.random.Generator:
    """Turn ``seed`` (None, an int, or a Generator) into a :class:`numpy.random.Generator`."""
    if seed is None or isinstance(seed, np.random.Generator):
        return np.random.default_rng(seed)
    if isinstance(seed, bool) or not isinstance(seed, numbers.Integral) or int(seed) < 0:
        raise TypeError(f"seed must be None, a non-negative integer or a numpy Generator, got {seed!r}")
    return np.random.default_rng(int(seed))


def check_choice(name: str, value: object, choices: Iterable[str]) -> str:
    """Check that ``value`` is one of the strings ``choices``."""
    choices = tuple(choices)
    if not isinstance(value, str) or value not in choices:
        raise ValueError(f"{name} must be one of {', '.join(map(repr, choices))}, got {value!r}")
    return value


def check_responders(responders: object, n: int, *, min_size: int = 1, name: str = "responders") -> np.ndarray:
    """Validate a set of responding workers and return it as a sorted int64 array.

    Accepts any iterable of integers (or a boolean mask of length ``n``). Rejects duplicates, indices outside
    ``[0, n-1]``, non-integers, and sets with fewer than ``min_size`` members.
    """
    if isinstance(responders, np.ndarray) and responders.dtype == bool:
        if responders.shape != (n,):
            raise ValueError(f"{name} given as a boolean mask must have shape ({n},), got {responders.shape}")
        idx = np.flatnonzero(responders)
    else:
        try:
            raw = list(responders)  # type: ignore[call-overload]
        except TypeError:
            raise TypeError(f"{name} must be an iterable of worker indices in [0, {n - 1}]") from None
        for r in raw:
            if isinstance(r, bool) or not isinstance(r, numbers.Integral):
                raise TypeError(f"{name} must contain integer worker indices in [0, {n - 1}], got {r!r}")
        idx = np.asarray([int(r) for r in raw], dtype=np.int64)
        if idx.size and (idx.min() < 0 or idx.max() >= n):
            bad = idx[(idx < 0) | (idx >= n)][0]
            raise ValueError(f"{name} must be worker indices in [0, {n - 1}], got {bad}")
        uniq = np.unique(idx)
        if uniq.size != idx.size:
            vals, counts = np.unique(idx, return_counts=True)
            raise ValueError(f"{name} must not repeat a worker; duplicated: {vals[counts > 1].tolist()}")
        idx = uniq
    if idx.size < min_size:
        raise ValueError(f"{name} must contain at least {min_size} distinct workers (of n={n}), got {idx.size}")
    return idx.astype(np.int64)


def _range_text(lo: int | None, hi: int | None) -> str:
    if lo is None and hi is None:
        return ""
    if hi is None:
        return f" >= {lo}"
    if lo is None:
        return f" <= {hi}"
    if lo == hi:
        return f" equal to {lo}"
    return f" in [{lo}, {hi}]"
