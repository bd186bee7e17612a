"""Fields of scalars and exact linear algebra.

A code's encoding matrix lives in one of four fields:

* ``"real"`` — float64 ndarray (rounding, accuracy reported by the verifier);
* ``"complex"`` — complex128 ndarray;
* ``"rational"`` — object ndarray of :class:`fractions.Fraction` (no rounding at all);
* ``"GF(p)"`` — a :mod:`galois` ``FieldArray`` over a prime field (no rounding; used to verify algebraic
  constructions such as cyclic MDS codes exactly).

This module is the one field layer of the package. Families write their constructions once, against a
:class:`Field` object (:class:`RealField`, :class:`RationalField` or :class:`PrimeField`, or :func:`field_of` an
existing array), and get float64, exact rational and exact GF(p) versions of the same code path. The exact fields
share one Gaussian elimination (:func:`rref`, :func:`solve_left`, :func:`left_nullspace`), written with whole-row
numpy operations so that it serves object arrays of Fractions and galois arrays alike.
"""

from __future__ import annotations

import numbers
from fractions import Fraction
from typing import Any

import numpy as np

from .._base.errors import GradcodesTypeError, GradcodesValueError

__all__ = ["as_matrix", "to_fraction", "is_exact_field", "exact_zeros", "rref", "solve_left", "left_nullspace",
           "is_galois_array", "to_gf", "Field", "RealField", "RationalField", "PrimeField", "field_of"]


def is_galois_array(x: object) -> bool:
    """True for a :mod:`galois` FieldArray (checked without importing galois)."""
    return any(c.__module__.startswith("galois") and c.__name__ == "FieldArray" for c in type(x).__mro__)


def is_exact_field(field: str) -> bool:
    """True for the fields decoded with no rounding (``"rational"`` and ``"GF(p)"``)."""
    return field == "rational" or field.startswith("GF(")


def to_fraction(x: object, name: str = "B") -> Fraction:
    """Convert an exact scalar (int, Fraction, sympy Rational, numpy integer, or float) to a Fraction.

    Floats are converted exactly (``0.1`` becomes the binary fraction it really is). Irrational sympy numbers are
    rejected with a TypeError.
    """
    if isinstance(x, Fraction):
        return x
    if isinstance(x, bool):
        return Fraction(int(x))
    if isinstance(x, numbers.Integral):
        return Fraction(int(x))
    if isinstance(x, (float, np.floating)):
        if not np.isfinite(x):
            raise GradcodesValueError(f"{name} must contain only finite entries, got {x!r}")
        return Fraction(float(x))
    # sympy Rational / Integer (duck-typed so that sympy is only imported when it is used)
    if hasattr(x, "is_Rational") and getattr(x, "is_Rational", False):
        return Fraction(int(x.p), int(x.q))  # type: ignore[attr-defined]
    raise GradcodesTypeError(f"{name} must contain rational entries (int, Fraction, sympy Rational) for the rational "
                             f"field, got {x!r} of type {type(x).__name__}")


def _looks_rational(a: np.ndarray) -> bool:
    return any(isinstance(v, Fraction) or getattr(v, "is_Rational", False) for v in a.flat)


def as_matrix(B: Any, field: str | None = None, name: str = "B") -> tuple[Any, str]:
    """Return ``(matrix, field)`` for a user-given 2-D matrix, validating shape and finiteness.

    ``field=None`` infers it: a galois array is ``"GF(p)"``; Fractions or sympy Rationals give ``"rational"``;
    complex numbers ``"complex"``; anything else numeric ``"real"``.
    """
    if field is not None and not isinstance(field, str):
        raise GradcodesTypeError(f"field must be None or one of 'real', 'complex', 'rational', got {field!r}")
    if is_galois_array(B):
        F = type(B)
        if F.degree != 1:
            raise GradcodesValueError(f"{name} must be over a prime field GF(p); got GF({F.characteristic}^{F.degree})")
        if B.ndim != 2 or 0 in B.shape:
            raise GradcodesValueError(f"{name} must be a non-empty 2-D matrix, got shape {B.shape}")
        gf_name = f"GF({F.characteristic})"
        if field not in (None, gf_name, "GF"):
            raise GradcodesValueError(f"field={field!r} does not match the galois array over {gf_name}")
        return B, gf_name
    if field is not None and field not in ("real", "complex", "rational"):
        raise GradcodesValueError(
            f"field must be one of 'real', 'complex', 'rational' (or pass a galois array for GF(p)), "
            f"got {field!r}")
    try:
        arr = np.asarray(B)
    except (ValueError, TypeError) as exc:
        raise GradcodesTypeError(f"{name} must be a 2-D array-like of numbers: {exc}") from None
    if arr.ndim != 2 or 0 in arr.shape:
        raise GradcodesValueError(f"{name} must be a non-empty 2-D matrix (rows = workers), got shape {arr.shape}")
    if arr.dtype == object:
        if field is None:
            field = "rational" if _looks_rational(arr) else None
        if field is None:
            try:
                arr = arr.astype(np.complex128 if any(isinstance(v, complex) for v in arr.flat) else np.float64)
            except (TypeError, ValueError):
                raise GradcodesTypeError(f"{name} must contain numbers only") from None
    elif arr.dtype.kind not in "biufc":
        raise GradcodesTypeError(f"{name} must contain numbers, got dtype {arr.dtype}")
    if field is None:
        field = "complex" if arr.dtype.kind == "c" else "real"
    if field == "rational":
        out = np.empty(arr.shape, dtype=object)
        flat = arr.ravel()
        for i, v in enumerate(flat):
            out.flat[i] = to_fraction(v.item() if isinstance(v, np.generic) else v, name)
        return out, field
    if field == "real":
        if arr.dtype.kind == "c":
            if np.any(arr.imag != 0):
                raise GradcodesValueError(f"{name} has complex entries; use field='complex'")
            arr = arr.real
        arr = np.array(arr, dtype=np.float64)
    else:
        arr = np.array(arr, dtype=np.complex128)
    if not np.all(np.isfinite(arr)):
        bad = np.argwhere(~np.isfinite(arr))[0]
        raise GradcodesValueError(f"{name} must contain only finite entries; {name}[{bad[0]}, {bad[1]}] = "
                                  f"{arr[tuple(bad)]}")
    return arr, field


def to_gf(B: Any, GF: Any) -> Any:
    """Map a rational (or integer) matrix into the prime field ``GF``: a/b -> a * b^-1 mod p."""
    return PrimeField(GF).const(B)


def exact_zeros(like: Any, shape: tuple[int, ...]) -> Any:
    """Zeros in the same exact field as ``like`` (object Fractions or a galois array)."""
    return field_of(like).zeros(shape)


#: The exact-arithmetic backend of :func:`rref` for rational matrices: ``"flint"`` (python-flint's ``fmpq_mat``,
#: the ``exact`` extra) when it is installed, else ``"fractions"`` (object arrays of :class:`fractions.Fraction`).
#: Both give the same result (the reduced row echelon form is unique); tests run both. None: decide on first use.
EXACT_BACKEND: str | None = None


def exact_backend() -> str:
    """The backend :func:`rref` uses for rational matrices: ``"flint"`` if python-flint is importable (checked
    once, without importing it), else ``"fractions"``; set :data:`EXACT_BACKEND` to choose."""
    global EXACT_BACKEND
    if EXACT_BACKEND is None:
        import importlib.util

        EXACT_BACKEND = "flint" if importlib.util.find_spec("flint") is not None else "fractions"
    return EXACT_BACKEND


def _rref_flint(M: np.ndarray) -> tuple[np.ndarray, list[int]] | None:
    """:func:`rref` of a rational object matrix with python-flint (FLINT's fraction-free elimination in C); None
    when an entry is not a Fraction or an int (the generic elimination then handles it as before)."""
    import flint

    rows, cols = M.shape
    entries: list[Any] = []
    for x in M.flat:
        if isinstance(x, Fraction):
            entries.append(x.numerator if x.denominator == 1 else flint.fmpq(x.numerator, x.denominator))
        elif isinstance(x, int) and not isinstance(x, bool):
            entries.append(x)
        else:
            return None
    R, rank = flint.fmpq_mat(rows, cols, entries).rref()
    out = np.empty((rows, cols), dtype=object)
    flat = out.reshape(-1)
    small = {0: Fraction(0), 1: Fraction(1), -1: Fraction(-1)}       # Fractions are immutable: shared
    for i, q in enumerate(R.entries()):
        num, den = int(q.p), int(q.q)
        flat[i] = small.get(num) if den == 1 and num in small else Fraction(num, den)
    pivots = [int(np.flatnonzero(out[i] != 0)[0]) for i in range(int(rank))]
    return out, pivots


def rref(M: Any) -> tuple[Any, list[int]]:
    """Reduced row echelon form of an exact matrix and its pivot columns (whole-row vectorised elimination).

    Rational matrices (object arrays of Fractions) go through python-flint when it is installed
    (:func:`exact_backend`), with the same result: the reduced row echelon form of a matrix is unique.
    """
    if (isinstance(M, np.ndarray) and not is_galois_array(M) and M.dtype == object and M.size
            and exact_backend() == "flint"):
        out = _rref_flint(M)
        if out is not None:
            return out
    A = M.copy()
    rows, cols = A.shape
    pivots: list[int] = []
    r = 0
    for c in range(cols):
        if r == rows:
            break
        nz = np.flatnonzero(np.asarray(A[r:, c] != 0))
        if nz.size == 0:
            continue
        piv = r + int(nz[0])
        if piv != r:
            A[[r, piv]] = A[[piv, r]]
        A[r] = A[r] / A[r, c]
        others = np.flatnonzero(np.asarray(A[:, c] != 0))
        others = others[others != r]
        if others.size:
            A[others] = A[others] - np.multiply.outer(A[others, c], A[r])
        pivots.append(c)
        r += 1
    return A, pivots


def solve_left(M: Any, T: Any) -> Any | None:
    """One solution ``X`` of ``X @ M = T`` over an exact field (free variables set to 0), or None if none exists.

    ``M`` is (r, c) and ``T`` is (t, c); the result is (t, r).
    """
    r, c = M.shape
    t = T.shape[0]
    aug = exact_zeros(M, (c, r + t))
    aug[:, :r] = M.T
    aug[:, r:] = T.T
    R, pivots = rref(aug)
    if any(p >= r for p in pivots):
        return None  # a pivot in the right-hand side: inconsistent
    X = exact_zeros(M, (r, t))
    for i, p in enumerate(pivots):
        X[p] = R[i, r:]
    return X.T


def left_nullspace(M: Any) -> Any:
    """A basis (as columns, shape (r, d)) of ``{x : x^T M = 0}`` over an exact field (free variables = identity).

    Over GF(p) our elimination is as fast as galois' ``row_reduce`` and 1.5-2.5x faster than its
    ``left_null_space`` on 10 x 20 to 120 x 240 matrices (``python benchmarks/speed/fields_gf.py``), so both fields use
    it.
    """
    return _left_nullspace_elim(M)


def _left_nullspace_elim(M: Any) -> Any:
    """:func:`left_nullspace` by our own elimination (:func:`rref`), for any exact field."""
    r = M.shape[0]
    R, pivots = rref(M.T.copy())
    free = [j for j in range(r) if j not in pivots]
    K = exact_zeros(M, (r, len(free)))
    if free:
        cols = np.arange(len(free))
        K[free, cols] = field_of(M).one
        if pivots:
            K[np.asarray(pivots)[:, None], cols[None, :]] = -R[:len(pivots)][:, free]
    return K


# ---------------------------------------------------------------------------------------------------------------
# field objects: one code path for float64, exact rationals and GF(p)


class Field:
    """Arithmetic of one scalar field over numpy arrays (the base class is float64).

    Constructions written against a field (``F.const``, ``F.zeros``, ``F.stack``, ``F.solve_right`` and the
    ordinary array operators) run unchanged in float64 (:class:`RealField`), over the rationals
    (:class:`RationalField`, object arrays of Fractions) and over a prime field (:class:`PrimeField`, galois
    arrays): one implementation, checked exactly in the exact fields and evaluated fast in float64.
    """

    #: the field's name as :func:`as_matrix` reports it
    name: str = "real"
    #: True when arithmetic has no rounding
    exact: bool = False

    def const(self, x: Any) -> Any:
        """``x`` (a scalar or array-like of numbers) as an array of this field."""
        return np.asarray(x, dtype=np.float64)

    def zeros(self, shape: int | tuple[int, ...]) -> Any:
        return np.zeros(shape)

    def ones(self, shape: int | tuple[int, ...]) -> Any:
        return np.ones(shape)

    @property
    def one(self) -> Any:
        return self.const(1)

    def stack(self, arrays: list[Any], axis: int = 0) -> Any:
        """``np.stack`` that keeps the field's array type."""
        return np.stack(arrays, axis=axis)

    def concatenate(self, arrays: list[Any], axis: int = 0) -> Any:
        """``np.concatenate`` that keeps the field's array type."""
        return np.concatenate(arrays, axis=axis)

    def repeat(self, a: Any, repeats: int, axis: int) -> Any:
        """``np.repeat`` that keeps the field's array type."""
        return np.repeat(a, repeats, axis=axis)

    def unit_diagonal(self, a: Any) -> Any:
        """``a`` (``(..., d, d)``) with ones on the diagonal of its last two axes (in place; returned)."""
        eye = np.eye(a.shape[-1], dtype=bool)
        a[..., eye] = self.one
        return a

    def solve_right(self, Phi: Any, M: Any) -> Any:
        """``Phi @ inv(M)`` for stacks ``Phi`` (j, d, m) and ``M`` (j, m, m)."""
        return np.swapaxes(np.linalg.solve(np.swapaxes(M, 1, 2), np.swapaxes(Phi, 1, 2)), 1, 2)

    def __eq__(self, other: object) -> bool:
        return type(other) is type(self) and self.__dict__ == other.__dict__

    def __hash__(self) -> int:
        return hash((type(self), self.name))

    def __repr__(self) -> str:
        return f"{type(self).__name__}()"


class RealField(Field):
    """float64 arithmetic (rounding; the verifier reports the accuracy)."""


class RationalField(Field):
    """Exact rationals: object arrays of :class:`fractions.Fraction`."""

    name = "rational"
    exact = True

    def const(self, x: Any) -> Any:
        arr = np.asarray(x, dtype=object)
        if arr.ndim == 0:
            return np.asarray(to_fraction(arr.item()), dtype=object)
        out = np.empty(arr.shape, dtype=object)
        for i, v in enumerate(arr.flat):
            out.flat[i] = to_fraction(v)
        return out

    def zeros(self, shape: int | tuple[int, ...]) -> Any:
        out = np.empty(shape, dtype=object)
        out.fill(Fraction(0))
        return out

    def ones(self, shape: int | tuple[int, ...]) -> Any:
        out = np.empty(shape, dtype=object)
        out.fill(Fraction(1))
        return out

    def solve_right(self, Phi: Any, M: Any) -> Any:
        out = self.zeros(Phi.shape)
        for j in range(Phi.shape[0]):
            X = solve_left(M[j], Phi[j])
            if X is None:
                raise GradcodesValueError(f"the matrix M_{j} is singular in this field")
            out[j] = X
        return out


class PrimeField(RationalField):
    """Exact arithmetic in a prime field ``GF(p)`` (a :mod:`galois` field class); rationals map to a * b^-1 mod p."""

    def __init__(self, GF: Any) -> None:
        if int(getattr(GF, "degree", 0)) != 1:
            raise GradcodesValueError(f"PrimeField needs a galois prime field GF(p), got {GF!r}")
        self.GF = GF
        self.p = int(GF.characteristic)
        self.name = f"GF({self.p})"

    def const(self, x: Any) -> Any:
        if is_galois_array(x) and type(x) is self.GF:
            return x
        arr = np.asarray(x, dtype=object)
        out = np.zeros(arr.shape, dtype=np.int64)
        p = self.p
        for idx, v in np.ndenumerate(arr):
            f = to_fraction(v)
            if f.denominator % p == 0:
                where = f"entry {idx} = " if arr.ndim else "the value "
                raise GradcodesValueError(f"{where}{f} has a denominator divisible by p = {p}; choose another prime")
            out[idx] = (f.numerator % p) * pow(f.denominator, -1, p) % p
        return self.GF(out)

    def zeros(self, shape: int | tuple[int, ...]) -> Any:
        return self.GF.Zeros(shape)

    def ones(self, shape: int | tuple[int, ...]) -> Any:
        return self.GF.Ones(shape)

    def _raw(self, a: Any) -> np.ndarray:
        return np.asarray(a.view(np.ndarray))

    def stack(self, arrays: list[Any], axis: int = 0) -> Any:
        return self.GF(np.stack([self._raw(a) for a in arrays], axis=axis))

    def concatenate(self, arrays: list[Any], axis: int = 0) -> Any:
        return self.GF(np.concatenate([self._raw(a) for a in arrays], axis=axis))

    def repeat(self, a: Any, repeats: int, axis: int) -> Any:
        return self.GF(np.repeat(self._raw(a), repeats, axis=axis))

    def __repr__(self) -> str:
        return f"PrimeField(GF({self.p}))"

    def __hash__(self) -> int:
        return hash((type(self), self.p))


def field_for(exact: bool) -> Field:
    """The field of a construction that runs exactly (:class:`RationalField`, Fractions) or in float64
    (:class:`RealField`): ``field_for(exact).zeros(shape)`` instead of hand-built Fraction or float zeros."""
    return RationalField() if exact else RealField()


def field_of(like: Any) -> Field:
    """The :class:`Field` of an existing array: galois -> :class:`PrimeField`, object -> :class:`RationalField`,
    anything else -> :class:`RealField`."""
    if is_galois_array(like):
        return PrimeField(type(like))
    if isinstance(like, np.ndarray) and like.dtype == object:
        return RationalField()
    return RealField()
