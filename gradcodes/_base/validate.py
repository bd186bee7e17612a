"""Argument validation shared by every constructor, decoder and verifier.

Every check raises a :class:`ValueError` or :class:`TypeError` (both also :class:`gradcodes.GradcodesError`) whose
message names the parameter and its valid range, so that bad input never turns into a silent wrong answer, a NaN
or a hang.

Sizes are bounded up front: every constructor and function computes the size of what it is about to build or
enumerate (matrix entries, straggler sets, simulated samples) and calls :func:`check_size` before allocating
anything. The bounds live in the module-level object :data:`limits` (``gradcodes.limits``), which users may
raise when they have the memory and the time.
"""

from __future__ import annotations

import contextlib
import functools
import math
import numbers
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, fields
from typing import Any, TypeVar, cast

import numpy as np

from .errors import GradcodesTypeError, GradcodesValueError

__all__ = ["check_int", "check_ns", "check_responders", "check_choice", "check_real", "check_size",
           "check_rng", "rng_param", "RNG_TYPES",
           "check_entries", "check_tree_size", "SizeLimitError", "Limits", "limits", "deprecated_alias"]

_F = TypeVar("_F", bound=Callable[..., Any])


class SizeLimitError(GradcodesValueError):
    """A requested size exceeds a bound of :data:`gradcodes.limits` (raise the bound to go ahead); a
    :class:`ValueError` and a :class:`gradcodes.GradcodesError`."""


@dataclass
class Limits:
    """Upper bounds on the work a single call may start, checked before anything is allocated.

    Attributes
    ----------
    entries : int, default 10**8
        Array elements one call may allocate (a dense ``n x k m`` encoding matrix, an ``iters x workers`` sample
        array, ...): ``10**8`` float64 entries are 800 MB.
    exact_entries : int, default 10**6
        Entries of a matrix of Python objects (exact rationals) or of a GF(p) matrix built entry by entry; each
        costs about 100 bytes and a Python-level operation.
    work : int, default 10**10
        Elementary steps of an enumeration or simulation (for example straggler sets times workers, or simulated
        iterations times workers); ``10**10`` is minutes of vectorised numpy.

    Examples
    --------
    >>> import gradcodes as gc
    >>> gc.limits.entries
    100000000
    >>> with gc.limits.raised(entries=10**9):        # a temporary bound for one big construction
    ...     gc.limits.entries
    1000000000
    >>> gc.limits.entries
    100000000
    """

    entries: int = 10**8
    exact_entries: int = 10**6
    work: int = 10**10

    def __setattr__(self, name: str, value: object) -> None:
        if name not in {f.name for f in fields(self)}:
            raise AttributeError(f"gradcodes.limits has no bound {name!r}; bounds: entries, exact_entries, work")
        super().__setattr__(name, check_int(f"limits.{name}", value, 1))

    @contextlib.contextmanager
    def raised(self, **bounds: int) -> Iterator[Limits]:
        """Context manager: set some bounds (``entries=..., exact_entries=..., work=...``) for a ``with`` block.

        Parameters
        ----------
        **bounds : int
            New values (``>= 1``) of some of ``entries``, ``exact_entries`` and ``work``; the old values come back
            when the block ends, also on an exception.

        Yields
        ------
        Limits
            This object, with the new bounds.

        Raises
        ------
        AttributeError
            If a name is not a bound.
        GradcodesValueError
            If a value is not an integer ``>= 1`` (GradcodesTypeError for a non-integer).

        Examples
        --------
        >>> import gradcodes as gc
        >>> with gc.limits.raised(work=10**12) as lim:
        ...     lim.work
        1000000000000
        >>> gc.limits.work
        10000000000
        """
        old = {k: getattr(self, k) for k in bounds}
        try:
            for k, v in bounds.items():
                setattr(self, k, v)
            yield self
        finally:
            for k, v in old.items():
                setattr(self, k, v)


def check_size(name: str, value: int, bound: int | str = "entries") -> int:
    """Raise :class:`SizeLimitError` if ``value`` (the size called ``name``) exceeds ``bound``.

    ``bound`` is a number, or the name of a field of :data:`limits` (``"entries"``, ``"exact_entries"``,
    ``"work"``), whose current value is used; the message then says how to raise it. Returns ``value``.

    >>> check_size("n * k", 10**12)
    Traceback (most recent call last):
    ...
    gradcodes.SizeLimitError: n * k = 1,000,000,000,000 exceeds the bound 100,000,000 ...
    """
    if isinstance(bound, str):
        limit = int(getattr(limits, bound))
        how = (f" (gradcodes.limits.{bound}); raise it with gradcodes.limits.{bound} = ... or "
               f"`with gradcodes.limits.raised({bound}=...):` if you have the memory and the time")
    else:
        limit, how = int(bound), ""
    if value > limit:
        raise SizeLimitError(f"{name} = {value:,} exceeds the bound {limit:,}{how}")
    return value


def check_int(name: str, value: object, lo: int | None = None, hi: int | None = None) -> int:
    """Return ``value`` as a Python int, or raise naming ``name`` and the range ``[lo, hi]``.

    Booleans and floats are rejected (``n=2.5`` and ``n=True`` are mistakes, not integers); a float that is an
    exact integer (``n=10.0``) is rejected too, to keep the API strict and predictable.
    """
    if type(value) is int and (lo is None or value >= lo) and (hi is None or value <= hi):
        return value                                    # the common case, without building the message
    rng = _range_text(lo, hi)
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise GradcodesTypeError(f"{name} must be an integer{rng}, got {value!r} of type {type(value).__name__}")
    v = int(value)
    if (lo is not None and v < lo) or (hi is not None and v > hi):
        raise GradcodesValueError(f"{name} must be an integer{rng}, got {v}")
    return v


def check_real(name: str, value: object, lo: float | None = None, hi: float | None = None,
               *, open_lo: bool = False, open_hi: bool = False) -> float:
    """Return ``value`` as a finite float in the given (half-)open range, or raise naming ``name``."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise GradcodesTypeError(f"{name} must be a real number, got {value!r} of type {type(value).__name__}")
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
        raise GradcodesValueError(f"{name} must be a finite real number{rng}, got {value!r}")
    return v


def check_ns(n: object, s: object, *, s_max_offset: int = 1) -> tuple[int, int]:
    """Validate the pair (n, s): integers with ``n >= 1`` and ``0 <= s <= n - s_max_offset``."""
    n = check_int("n", n, 1)
    s = check_int("s", s, 0, n - s_max_offset)
    return n, s


#: What an ``rng`` parameter accepts (scientific Python's SPEC 7).
RNG_TYPES = "None, a non-negative int, a numpy.random.SeedSequence, a BitGenerator or a numpy.random.Generator"


def check_rng(rng: object = None, *, name: str = "rng") -> np.random.Generator:
    """The :class:`numpy.random.Generator` of an ``rng`` argument, as scientific Python's SPEC 7 recommends.

    ``None`` draws fresh entropy from the operating system; an int (``>= 0``), a :class:`numpy.random.SeedSequence`
    or a BitGenerator seeds a new Generator (:func:`numpy.random.default_rng`); a Generator is used as it is (its
    state advances).

    >>> check_rng(0).integers(10) == check_rng(np.random.SeedSequence(0)).integers(10)
    np.True_
    """
    if isinstance(rng, np.random.Generator):
        return rng
    if rng is None or isinstance(rng, (np.random.SeedSequence, np.random.BitGenerator)):
        return np.random.default_rng(rng)
    if isinstance(rng, bool) or not isinstance(rng, numbers.Integral):
        raise GradcodesTypeError(f"{name} must be {RNG_TYPES}; got {rng!r} of type {type(rng).__name__}")
    if int(rng) < 0:
        raise GradcodesValueError(f"{name} must be a non-negative integer seed (or {RNG_TYPES}), got {int(rng)}")
    return np.random.default_rng(int(rng))


def deprecated_alias(fn: _F, old: str, new: str) -> _F:
    """``fn`` under its former public name ``old`` (``gradcodes.<old>``): calls warn (DeprecationWarning) that
    ``gradcodes.<new>`` replaces it, then run ``fn``."""
    @functools.wraps(fn)
    def alias(*args: Any, **kwargs: Any) -> Any:
        import warnings

        warnings.warn(f"gradcodes.{old} is deprecated, use gradcodes.{new} (same arguments)", DeprecationWarning,
                      stacklevel=2)
        return fn(*args, **kwargs)

    alias.__name__ = alias.__qualname__ = old
    alias.__doc__ = f"Deprecated alias of :func:`gradcodes.{new}` (DeprecationWarning); use ``{new}``."
    return cast("_F", alias)


def rng_entropy(rng: object = None, *, name: str = "rng") -> int:
    """A non-negative int that keys reproducible, order-independent draws (``default_rng([entropy, *key])``).

    For models that draw per ``(worker, iteration)`` rather than in sequence (the MPI delay models): an int ``rng``
    is its own entropy; a SeedSequence gives its 128-bit
    state, a Generator or BitGenerator 128 random bits (advancing it), and None 128 bits of fresh OS entropy.

    >>> rng_entropy(5), rng_entropy(np.random.SeedSequence(5)) == rng_entropy(np.random.SeedSequence(5))
    (5, True)
    """
    if isinstance(rng, numbers.Integral) and not isinstance(rng, bool):
        if int(rng) < 0:
            raise GradcodesValueError(f"{name} must be a non-negative integer seed (or {RNG_TYPES}), got {int(rng)}")
        return int(rng)
    if isinstance(rng, np.random.SeedSequence):
        words = rng.generate_state(4, np.uint32)
    else:
        words = check_rng(rng, name=name).integers(0, 2**32, size=4, dtype=np.uint64)
    return sum(int(w) << (32 * i) for i, w in enumerate(words))


def rng_param(rng: object) -> int | None:
    """The value of ``rng`` worth recording in a code's ``params`` (so that :func:`gradcodes.load_code` can rebuild it):
    the int seed, or None for entropy, SeedSequences and Generators."""
    return int(rng) if isinstance(rng, numbers.Integral) and not isinstance(rng, bool) else None


def check_choice(name: str, value: object, choices: Iterable[str]) -> str:
    """Check that ``value`` is one of the strings ``choices``."""
    choices = tuple(choices)
    if not isinstance(value, str) or value not in choices:
        raise GradcodesValueError(f"{name} must be one of {', '.join(map(repr, choices))}, got {value!r}")
    return value


def check_responders(responders: object, n: int, *, min_size: int = 1, name: str = "responders") -> np.ndarray:
    """Validate a set of responding workers and return it as a sorted int64 array.

    Accepts any iterable of integers (or a boolean mask of length ``n``). Rejects duplicates, indices outside
    ``[0, n-1]``, non-integers, and sets with fewer than ``min_size`` members.
    """
    if isinstance(responders, np.ndarray) and responders.dtype == bool:
        if responders.shape != (n,):
            raise GradcodesValueError(f"{name} given as a boolean mask must have shape ({n},), got {responders.shape}")
        idx = np.flatnonzero(responders)
    else:
        try:
            raw = list(responders)  # type: ignore[call-overload]
        except TypeError:
            raise GradcodesTypeError(f"{name} must be an iterable of worker indices in [0, {n - 1}]") from None
        for r in raw:
            if isinstance(r, bool) or not isinstance(r, numbers.Integral):
                raise GradcodesTypeError(f"{name} must contain integer worker indices in [0, {n - 1}], got {r!r}")
        idx = np.asarray([int(r) for r in raw], dtype=np.int64)
        if idx.size and (idx.min() < 0 or idx.max() >= n):
            bad = idx[(idx < 0) | (idx >= n)][0]
            raise GradcodesValueError(f"{name} must be worker indices in [0, {n - 1}], got {bad}")
        uniq = np.unique(idx)
        if uniq.size != idx.size:
            if idx.size == n and set(uniq.tolist()) <= {0, 1}:
                raise GradcodesTypeError(
                    f"{name} looks like a 0/1 mask of length n={n} given as integers, which would be "
                    f"read as worker indices; pass a boolean mask (np.asarray(mask, dtype=bool)) or "
                    f"the indices (np.flatnonzero(mask))")
            vals, counts = np.unique(idx, return_counts=True)
            raise GradcodesValueError(f"{name} must not repeat a worker; duplicated: {vals[counts > 1].tolist()}")
        idx = uniq
    if idx.size < min_size:
        raise GradcodesValueError(
            f"{name} must contain at least {min_size} distinct workers (of n={n}), got {idx.size}")
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


def check_entries(rows: int, cols: int, *, exact: bool = False, what: str = "the encoding matrix") -> None:
    """:func:`check_size` for a dense ``rows x cols`` matrix (``limits.exact_entries`` when ``exact``)."""
    check_size(f"the entries of {what} ({rows:,} x {cols:,})", rows * cols,
               "exact_entries" if exact else "entries")


def check_tree_size(n: int, L: int, bound: int | str = "work") -> int:
    """The number of workers ``b + b^2 + ... + b^L`` of the tree with branching factor ``b = n`` and depth ``L``,
    checked by :func:`check_size` (without computing astronomically large powers)."""
    name = f"the workers b + b^2 + ... + b^L of the tree with branching b={n}, L={L}"
    if n >= 2 and L * math.log10(n) > 300:            # math.log10: exact for ints beyond float64's range
        limit = getattr(limits, bound) if isinstance(bound, str) else bound
        raise SizeLimitError(f"{name} number about 10^{L * math.log10(n):.0f}, more than the bound {limit:,}"
                             + (f" (gradcodes.limits.{bound})" if isinstance(bound, str) else ""))
    return check_size(name, n * L if n == 1 else (n ** (L + 1) - n) // (n - 1), bound)


#: The bounds checked by :func:`check_size` (exported as ``gradcodes.limits``).
limits = Limits()


# shown (tracebacks, reprs, pickles) under the public names they are imported by
SizeLimitError.__module__ = "gradcodes"
