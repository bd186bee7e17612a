"""Straggle probabilities: validation, and the exponential model of Song & Choi (2021) for simulated clusters.

Worker ``i`` straggles independently with probability ``p_i``; the probabilities are float64 or, for exact
evaluation, :class:`fractions.Fraction`.
"""

from __future__ import annotations

import numbers
from fractions import Fraction
from typing import Any

import numpy as np

from .._base.aliases import ProbabilitiesLike, RNGLike
from .._base.errors import GradcodesTypeError, GradcodesValueError
from .._base.validate import check_int, check_real, check_rng, check_size
from . import detlinalg as _det

__all__ = ["straggle_probabilities", "exponential_straggle_probabilities", "probability_list"]


def _is_exact_scalar(x: Any) -> bool:
    return isinstance(x, (Fraction, numbers.Integral)) and not isinstance(x, (bool, np.bool_))


def straggle_probabilities(p: ProbabilitiesLike, n: int | None = None, *, exact: bool | None = None,
                           name: str = "p") -> np.ndarray:
    """Validate straggle probabilities and return them as a 1-D array.

    Parameters
    ----------
    p : array_like, scalar or str
        Probability that each worker straggles, every entry strictly inside (0, 1). A scalar is broadcast
        to ``n`` workers (``n`` is then required). ``fractions.Fraction`` entries (or ints, or strings such
        as ``"1/10"``; a single string ``"1/10,1/5,1/2"`` is split at the commas) keep the computation exact.
    n : int, optional
        Expected number of workers; a length mismatch raises ``ValueError``.
    exact : bool, optional
        Force exact (``Fraction``; floats are converted to their exact binary value) or float64 output.
        By default the result is exact iff no entry is a float.
    name : str
        Parameter name used in error messages.

    Returns
    -------
    numpy.ndarray
        float64 array, or object array of ``Fraction`` when exact.

    Raises
    ------
    GradcodesValueError
        If a probability is not strictly inside ``(0, 1)`` or there is not one per worker.
    GradcodesTypeError
        If a probability is not a real number.

    Examples
    --------
    >>> straggle_probabilities("1/10, 1/2")
    array([Fraction(1, 10), Fraction(1, 2)], dtype=object)
    >>> straggle_probabilities(0.25, n=3)
    array([0.25, 0.25, 0.25])
    """
    if isinstance(p, (bytes, set, frozenset, dict)) or (hasattr(p, "__iter__") and not hasattr(p, "__len__")):
        raise GradcodesTypeError(
            f"{name} must be a sequence or array of probabilities in (0, 1), got {type(p).__name__}")
    if isinstance(p, str):
        p = [x.strip() for x in p.split(",")] if "," in p else p
    if n is not None:
        n = check_int("n", n, 1)
        check_size("n (workers)", n, "exact_entries")
    arr = np.asarray(p, dtype=object)
    if arr.ndim == 0:
        if n is None:
            raise GradcodesValueError(
                f"{name} is a scalar; give one straggle probability per worker (e.g. [{name}] * n)")
        arr = np.full(n, arr.item(), dtype=object)
    if arr.ndim != 1:
        raise GradcodesValueError(f"{name} must be one-dimensional (one probability per worker), got shape {arr.shape}")
    if arr.size == 0:
        raise GradcodesValueError(f"{name} must contain at least one probability (one per worker)")
    if n is not None and arr.size != n:
        raise GradcodesValueError(f"{name} must have length n = {n} (one probability per worker), got {arr.size}")
    vals = []
    for i, x in enumerate(arr):
        if isinstance(x, str):
            try:
                x = Fraction(x)
            except (ValueError, ZeroDivisionError):
                raise GradcodesValueError(f"{name}[{i}] = {x!r} is not a number (use e.g. '1/10' or 0.1)") from None
        elif isinstance(x, (bool, np.bool_)) or not isinstance(x, (numbers.Real, Fraction)):
            raise GradcodesTypeError(f"{name} must contain real numbers, got {x!r} of type {type(x).__name__}")
        vals.append(x)
    if exact is None:
        exact = all(_is_exact_scalar(x) for x in vals)
    if exact:
        out = np.empty(arr.size, dtype=object)
        for i, x in enumerate(vals):
            if not _is_exact_scalar(x) and not np.isfinite(float(x)):
                raise GradcodesValueError(
                    f"{name}[{i}] = {x!r}: straggle probabilities must lie strictly inside (0, 1)")
            out[i] = Fraction(x) if _is_exact_scalar(x) else Fraction(float(x))
    else:
        out = np.array([float(x) for x in vals], dtype=np.float64)
    bad = [i for i, x in enumerate(out) if not (0 < x < 1)]
    if bad:
        i = bad[0]
        raise GradcodesValueError(f"{name}[{i}] = {vals[i]!r}: straggle probabilities must lie strictly inside (0, 1)")
    return out


def exponential_straggle_probabilities(n: int, tau: float, *, psi: tuple[float, float] = (0.1, 2.0),
                                       rng: RNGLike = None) -> np.ndarray:
    r"""Straggle probabilities of Song & Choi's experiments: ``p_i = exp(-psi_i (tau - 1))``.

    Worker ``i``'s response time is ``1 + Exp(psi_i)`` (shift-1 exponential with rate ``psi_i``), and it is a
    straggler when slower than the deadline ``tau``; so ``p_i = P(T_i > tau) = exp(-psi_i (tau - 1))`` with
    ``psi_i ~ U(psi)`` i.i.d. (seeded). The paper uses ``tau`` in {1.1, 1.5}; its summary gives
    ``psi ~ U(0.1, 2)`` (the default here), the authors' follow-up code ``U(0.01, 2)``. The exponential is
    evaluated from IEEE basic operations in a fixed order (not with numpy's vectorised ``exp``, whose last bit
    depends on the CPU's SIMD level), so the same ``rng`` gives the same probabilities on every machine.

    Parameters
    ----------
    n : int
        Number of workers.
    tau : float
        Deadline, ``tau > 1``.
    psi : (float, float)
        Range of the rates, ``0 < lo <= hi``.
    rng : None, int, numpy.random.SeedSequence or numpy.random.Generator, optional
        Random state (SPEC 7: None for fresh entropy, an int, a SeedSequence or a Generator).

    Returns
    -------
    numpy.ndarray
        float64, length ``n``, entries in (0, 1).

    Raises
    ------
    GradcodesValueError
        If ``psi`` is not a pair of rates, or the probabilities round to 0 or 1.

    Examples
    --------
    >>> p = exponential_straggle_probabilities(5, 1.5, rng=0)
    >>> p.shape, bool(((0 < p) & (p < 1)).all())
    ((5,), True)
    """
    n = check_int("n", n, 1)
    check_size("n (workers)", n, "entries")
    tau = check_real("tau", tau, 1.0, None, open_lo=True)
    if isinstance(psi, (str, bytes)) or not hasattr(psi, "__len__") or len(psi) != 2:
        raise GradcodesValueError(f"psi must be a pair (lo, hi) of rates, got {psi!r}")
    lo = check_real("psi[0]", psi[0], 0.0, None, open_lo=True)
    hi = check_real("psi[1]", psi[1], lo, None)
    rates = check_rng(rng).uniform(lo, hi, size=n)
    p = _det.exp(-rates * (tau - 1.0))        # basic operations in a fixed order: the same bits on every machine
    if not np.all((p > 0) & (p < 1)):
        raise GradcodesValueError(f"tau = {tau} and psi = {psi} give straggle probabilities that round to 0 or 1")
    return p


def _scenario(n: int | None, p: Any, tau: float, seed: Any) -> np.ndarray:
    """Registry helper: ``p`` if given (checked against ``n``), else the paper's model for ``n`` workers."""
    if p is not None:
        return straggle_probabilities(p, n)
    if n is None:
        raise GradcodesValueError(
            "give the number of workers n (probabilities from the paper's model, see --param tau=) "
            "or the straggle probabilities p")
    return exponential_straggle_probabilities(n, tau, rng=seed)


def probability_list(p: np.ndarray | None) -> list[str] | list[float] | None:
    """JSON-friendly form of validated probabilities: strings for ``Fraction``, floats otherwise."""
    if p is None:
        return None
    return [str(x) for x in p] if p.dtype == object else [float(x) for x in p]

