"""Reproducible floating-point kernels for the constructors: the same bits on every machine.

IEEE 754 rounds each single ``+ - * /`` and ``sqrt`` correctly, so a computation made of elementwise operations in
a fixed order gives the same result everywhere (Higham, *Accuracy and Stability of Numerical Algorithms*, 2nd
ed., 2002, §2.2). BLAS and LAPACK products and solves do not: the order of their sums depends on the kernel
(OpenBLAS picks one per CPU), the block sizes and the thread count; numpy's vectorised ``exp``, ``log``, ``sin``
and ``cos`` depend on the SIMD level. The constructors therefore build their matrices with the kernels below:

* :func:`solve`: batched Gaussian elimination with partial pivoting (Higham §9.1), written with numpy elementwise
  operations over the batch and Python loops over the (small) matrix dimension, so every operation is rounded in
  the same order on every machine; optional steps of iterative refinement with residuals as accurate as in twice
  the working precision (Ogita, Rump & Oishi 2005, ``Dot2``; Higham §12.1) bring the result to about one unit in
  the last place of the solution of the given system.
* :func:`matmul`: batched products with the inner sum in index order.
* :func:`cos_pi`, :func:`sin_pi`: tables of ``cos(pi j / N)`` computed with :mod:`mpmath` (pure Python, integer
  arithmetic) at 113 bits and rounded once to float64 (the correctly rounded value unless it lies within
  2^-60 relative of a rounding boundary), extended by exact symmetries: the same bits everywhere.
* :func:`exp`: a polynomial evaluation in IEEE basic operations (within about two units in the last place).
"""

from __future__ import annotations

import functools
import math
from typing import Any

import numpy as np

__all__ = ["solve", "matmul", "dot2", "cos_pi", "sin_pi", "log_two_sin_pi", "exp"]

_PREC = 113     # bits of the mpmath evaluations (binary128's precision), rounded once to float64
_SPLIT = 134217729.0          # 2^27 + 1, Dekker's splitting constant for float64


def _two_sum(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    s = a + b
    z = s - a
    return s, (a - (s - z)) + (b - z)


def _split(a: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    c = _SPLIT * a
    hi = c - (c - a)
    return hi, a - hi


def _two_prod(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    p = a * b
    ah, al = _split(a)
    bh, bl = _split(b)
    return p, al * bl - (((p - ah * bh) - al * bh) - ah * bl)


def dot2(A: np.ndarray, y: np.ndarray, extra: np.ndarray | None = None) -> np.ndarray:
    """``sum_t A[..., t] y[..., t] (+ extra)`` over the last axis, as accurate as in twice the working precision.

    ``A`` (..., T) and ``y`` broadcastable to it; ``extra`` (...) is added as one more (already rounded) term.
    """
    p, acc = _two_prod(A[..., 0], y[..., 0])
    for t in range(1, A.shape[-1]):
        h, r = _two_prod(A[..., t], y[..., t])
        p, q = _two_sum(p, h)
        acc = acc + (q + r)
    if extra is not None:
        p, q = _two_sum(p, extra)
        acc = acc + q
    return p + acc


def solve(A: Any, Bm: Any, *, refine: int = 0) -> np.ndarray:
    """``X`` with ``A X = B`` for stacks ``A`` (..., s, s) and ``B`` (..., s, r), reproducibly.

    Gaussian elimination with partial pivoting (the first largest ``|pivot|`` wins ties), elementwise over the
    batch; then ``refine`` steps ``X <- X + A^{-1}(B - A X)`` with ``Dot2`` residuals. A singular ``A`` gives
    non-finite entries (no exception): callers check.

    Examples
    --------
    >>> import numpy as np
    >>> A = np.array([[[2.0, 1.0], [1.0, 3.0]]])
    >>> solve(A, np.array([[[3.0], [4.0]]]))[0, :, 0].tolist()
    [1.0, 1.0]
    """
    A = np.asarray(A, dtype=np.float64)
    Bm = np.asarray(Bm, dtype=np.float64)
    shape = Bm.shape
    s = A.shape[-1]
    A2 = A.reshape(-1, s, s)
    B2 = np.broadcast_to(Bm, A.shape[:-2] + shape[-2:]).reshape(-1, s, shape[-1])
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        X = _ge(A2, B2)
        for _ in range(refine):
            # R = B - A X: Dot2 over the s terms of each row, with -B as an extra term (then negated)
            R = -dot2(A2[:, :, None, :], np.swapaxes(X, 1, 2)[:, None, :, :], extra=-B2)
            X = X + _ge(A2, R)
    return X.reshape(A.shape[:-2] + shape[-2:])


def _ge(A: np.ndarray, Bm: np.ndarray) -> np.ndarray:
    """Gaussian elimination with partial pivoting and back substitution, batched, in a fixed order."""
    A = np.array(A, dtype=np.float64, copy=True)
    X = np.array(Bm, dtype=np.float64, copy=True)
    b, s, _ = A.shape
    idx = np.arange(b)
    for k in range(s):
        p = k + np.argmax(np.abs(A[:, k:, k]), axis=1)
        swap = p != k
        if swap.any():
            i, q = idx[swap], p[swap]
            A[i, k], A[i, q] = A[i, q], A[i, k].copy()
            X[i, k], X[i, q] = X[i, q], X[i, k].copy()
        if k + 1 < s:
            lk = A[:, k + 1:, k] / A[:, k, k][:, None]                             # (b, s-k-1) multipliers
            A[:, k + 1:, k + 1:] -= lk[:, :, None] * A[:, k, None, k + 1:]
            X[:, k + 1:] -= lk[:, :, None] * X[:, k, None, :]
    for k in range(s - 1, -1, -1):                  # column-oriented back substitution (fixed order per row)
        X[:, k] = X[:, k] / A[:, k, k, None]
        if k:
            X[:, :k] -= A[:, :k, k, None] * X[:, k, None, :]
    return X


def matmul(A: Any, Bm: Any) -> np.ndarray:
    """``A @ B`` (broadcast over leading axes) with each inner sum taken in index order, reproducibly.

    >>> matmul(np.array([[1.0, 2.0]]), np.array([[3.0], [4.0]])).tolist()
    [[11.0]]
    """
    A = np.asarray(A)
    Bm = np.asarray(Bm)
    out = A[..., :, 0, None] * Bm[..., 0, None, :]
    for t in range(1, A.shape[-1]):
        out = out + A[..., :, t, None] * Bm[..., t, None, :]
    return out


@functools.lru_cache(maxsize=16)
def _cos_table(den: int) -> np.ndarray:
    """``cos(pi j / den)`` for ``j = 0, ..., den // 2`` (the first quarter period), rounded once."""
    import mpmath

    with mpmath.workprec(_PREC):
        vals = [float(mpmath.cospi(mpmath.mpf(j) / den)) for j in range(den // 2 + 1)]
    out = np.array(vals, dtype=np.float64)
    out.setflags(write=False)
    return out


def cos_pi(num: Any, den: int) -> np.ndarray:
    """``cos(pi num / den)`` for integer arrays ``num`` and a positive integer ``den``, reproducibly.

    The first quarter period is evaluated once per ``den`` (:mod:`mpmath` at 113 bits, rounded once); the rest
    follows by the exact symmetries ``cos(pi - x) = -cos x`` and periodicity.

    >>> cos_pi(np.array([0, 1, 2, 3, 4]), 4).tolist()[::2]
    [1.0, 0.0, -1.0]
    """
    num = np.asarray(num, dtype=np.int64)
    den = int(den)
    j = num % (2 * den)                              # angle in [0, 2 pi)
    j = np.where(j > den, 2 * den - j, j)            # cos is even: [0, pi]
    neg = 2 * j > den                                # (pi/2, pi]: cos(pi - x) = -cos(x)
    j = np.where(neg, den - j, j)
    table = _cos_table(den)
    vals = table[j]
    return np.where(neg, -vals, vals) + 0.0          # + 0.0 turns -0.0 into 0.0


@functools.lru_cache(maxsize=8)
def log_two_sin_pi(n: int) -> np.ndarray:
    """``log(2 sin(pi d / n))`` for ``d = 0, ..., n - 1`` (entry 0 is ``-inf``), each evaluated with :mod:`mpmath`
    at 113 bits and rounded once; read-only.

    >>> bool(log_two_sin_pi(6)[3] == 0.6931471805599453)           # log 2
    True
    """
    import mpmath

    with mpmath.workprec(_PREC):
        vals = [float("-inf")] + [float(mpmath.log(2 * mpmath.sinpi(mpmath.mpf(k) / n))) for k in range(1, n)]
    out = np.array(vals, dtype=np.float64)
    out.setflags(write=False)
    return out


def sin_pi(num: Any, den: int) -> np.ndarray:
    """``sin(pi num / den) = cos(pi (den - 2 num) / (2 den))``, reproducibly (see :func:`cos_pi`)."""
    num = np.asarray(num, dtype=np.int64)
    return cos_pi(int(den) - 2 * num, 2 * int(den))


#: 1/k! rounded, k = 0..17: the Taylor polynomial of exp on |r| <= ln(2)/2 (truncation below 1e-24 relative)
_EXP_COEF = [1.0 / math.factorial(k) for k in range(18)]
_LN2_HI = 6.93147180369123816490e-01      # ln 2 with 21 trailing zero bits: k * _LN2_HI is exact for |k| < 2^21
_LN2_LO = 1.90821492927058770002e-10      # ln 2 - _LN2_HI
_INV_LN2 = 1.44269504088896338700e+00


def exp(x: Any) -> np.ndarray:
    """``exp(x)`` elementwise for float64 arrays, from IEEE basic operations only, reproducibly.

    Cody & Waite's reduction ``x = k ln 2 + r`` (``|r| <= ln(2)/2``, ``ln 2`` split so that ``k ln2_hi`` is
    exact), the degree-17 Taylor polynomial of ``exp(r)`` by Horner's rule, then ``2^k`` exactly (Muller,
    *Elementary Functions*, 3rd ed., 2016, §11.3). Error within about two units in the last place; every step is
    a correctly rounded ``+ - * /`` or an exact scaling, so the bits are the same on every machine (numpy's own
    ``exp`` changes with the SIMD level).

    >>> float(exp(np.array([0.0]))[0]), bool(abs(exp(np.array([1.0]))[0] - math.e) <= 2 * math.ulp(math.e))
    (1.0, True)
    """
    x = np.asarray(x, dtype=np.float64)
    with np.errstate(over="ignore", invalid="ignore", under="ignore"):
        k = np.rint(x * _INV_LN2)
        k = np.clip(k, -2200.0, 2200.0)                      # beyond: 0 or inf after the scaling anyway
        r = (x - k * _LN2_HI) - k * _LN2_LO
        p = np.full(x.shape, _EXP_COEF[-1])
        for c in _EXP_COEF[-2::-1]:
            p = p * r + c
        # 2^k in two steps (each factor a normal number) so that results near the subnormal range stay exact
        k1 = np.floor(k / 2)
        out = np.ldexp(np.ldexp(p, k1.astype(np.int64)), (k - k1).astype(np.int64))
    out = np.where(x > 710.0, np.inf, np.where(x < -746.0, 0.0, out))      # outside: overflow / underflow
    return np.where(np.isnan(x), x, out)
