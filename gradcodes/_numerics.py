"""Batched numerical diagnostics of decoding matrices (see ``docs/numerics.md``).

For a decoding matrix ``A_F`` (m x n) of a code with encoding matrix ``B`` (n x k*m) and target
``E = 1_k^T (x) I_m``:

* **residual** ``||A_F B - E||_inf`` — how far the decoder is from exact recovery;
* **cancellation factor** ``canc(A_F) = max_u sum_i |A_F[u, i]| * ||B_i||_1 / k`` — row-scale invariant, >= 1,
  exactly 1 for fractional repetition; rounding in the decoded sum grows like ``u * canc``;
* **error estimate** ``eps * canc * sqrt(terms) + residual`` — the predicted relative error of the decoded sum,
  with ``eps`` the unit roundoff of the message dtype and ``terms`` the rounded additions per coordinate;
* **acceptance** ``error estimate <= tolerance(rtol, dtype)``: the float64 tolerance ``rtol`` keeps the same share
  of the digits of other dtypes (:func:`tolerance`), so float32 decodes are judged by float32's unit roundoff.

**The acceptance rule, in one place.** A decode computes its own decoding matrix and accepts it when its error
estimate is within the tolerance (:func:`accepts`). A verdict must hold for every machine's decode, so the verifier
judges an *interval* that contains every machine's estimate (:func:`error_bounds`, :func:`judge`): a set is **ok**
when the upper end clears the tolerance, **fails** when even the lower end misses it, and is **borderline**
otherwise. The interval's half-width has two parts (Higham, *Accuracy and Stability of Numerical Algorithms*, 2nd
ed. 2002):

* the residual: a computed inner product of ``w`` non-zero terms is within ``gamma_w |a|^T |b|`` of the exact one
  (section 3.1, (3.5); ``gamma_w = w u / (1 - w u)``, ``u`` float64's unit roundoff), so the residual evaluated
  anywhere is within ``gamma_{w+1} (mag + 1)`` of the exact residual of the same matrix, where
  ``mag = max_uj (|A| |B|)_uj`` (:func:`magnitude`); a decoding matrix
  computed by another BLAS kernel, batch size or thread count solves the same system with another rounding, and a
  backward-stable solve (sections 9.3, 19.3) leaves a residual within ``gamma_w mag`` of the exact system's, so
  two machines' matrices differ in residual by at most ``2 gamma_w mag``. Together:
  ``delta = (gamma_{w+1} + 2 gamma_w)(mag + 1)`` on each side of the measured residual;
* the cancellation factor: a relative allowance :data:`CANC_ALLOWANCE` (``2^-20``) for the variation of the
  computed decoding matrix's entries between machines (measured below ``2e-10`` across six OpenBLAS kernels on the
  most ill-conditioned set of the panel that CI checks on every kernel).

Both parts vanish when the evaluation is exact: a deterministic decoder (no BLAS or LAPACK in its computation, for
example the 0/1 group decoders) with integer-valued ``A`` and ``B`` and ``mag < 2^53`` computes every residual
entry without rounding.

All functions take a batch ``A`` of shape (b, m, n) and return arrays of shape (b,).
"""

from __future__ import annotations

from fractions import Fraction
from typing import Any

import numpy as np

from ._fields import exact_zeros, is_galois_array

__all__ = ["target_matrix", "residuals", "cancellation", "magnitude", "widths", "accepts", "error_estimate",
           "error_bounds", "residual_slack", "judge", "exact_residual_ok", "unit_roundoff", "tolerance", "decode_terms",
           "underflow_error", "OK", "BORDERLINE", "FAILS"]

#: Relative factor of the default float64 acceptance tolerance.
DEFAULT_RTOL = 1e-8

#: Relative allowance for the variation of a computed cancellation factor between machines (see the module
#: docstring): the verifier's interval multiplies the cancellation term by ``1 +/- CANC_ALLOWANCE``.
CANC_ALLOWANCE = 2.0 ** -20

#: Verdicts of :func:`judge`, per pattern.
OK, BORDERLINE, FAILS = 0, 1, 2

_U64 = float(np.finfo(np.float64).eps) / 2


def target_matrix(k: int, m: int, like: Any = None) -> Any:
    """The target ``E = 1_k^T (x) I_m`` of shape (m, k*m): ``E[u, j*m + u] = 1``.

    >>> target_matrix(2, 2)
    array([[1., 0., 1., 0.],
           [0., 1., 0., 1.]])
    """
    E = np.tile(np.eye(m), (1, k))
    if like is None or not (is_galois_array(like) or (isinstance(like, np.ndarray) and like.dtype == object)):
        return E if like is None else E.astype(like.dtype)
    out = exact_zeros(like, (m, k * m))
    one = type(like)(1) if is_galois_array(like) else Fraction(1)
    for u in range(m):
        out[u, u::m] = one
    return out


def residuals(A: np.ndarray, B: np.ndarray, E: np.ndarray) -> np.ndarray:
    """``max |A_b B - E|`` for each matrix of the batch, with one matrix product for the whole batch."""
    b, m, n = A.shape
    R = np.asarray(A.reshape(b * m, n) @ B).reshape(b, m, -1)       # B may be a scipy.sparse array
    R -= E
    return np.abs(R).max(axis=(1, 2))


def exact_residual_ok(A: Any, B: Any, E: Any) -> np.ndarray:
    """For exact fields: True where ``A_b B == E`` holds exactly."""
    ok = np.empty(A.shape[0], dtype=bool)
    for i in range(A.shape[0]):
        ok[i] = bool(np.all(np.asarray(A[i] @ B == E)))
    return ok


def cancellation(A: np.ndarray, B: np.ndarray, k: int) -> np.ndarray:
    """Cancellation factor ``max_u sum_i |A[u, i]| ||B_i||_1 / k`` for each matrix of the batch."""
    row_l1 = np.asarray(abs(B).sum(axis=1)).reshape(-1)               # B may be a scipy.sparse array
    return (np.abs(A) @ row_l1).max(axis=1) / k


def magnitude(A: np.ndarray, B: np.ndarray) -> np.ndarray:
    """``mag = max_{u,j} (|A| |B|)[u, j]`` for each matrix of the batch: the size that the rounding of ``A B`` is
    relative to (Higham 2002, (3.5); row-scale invariant, like the cancellation factor)."""
    b, m, n = A.shape
    M = np.asarray(np.abs(A).reshape(b * m, n) @ abs(B))                # B may be a scipy.sparse array
    return np.asarray(M.reshape(b, -1).max(axis=1, initial=0.0))


def widths(A: Any) -> np.ndarray:
    """The most non-zeros of a row of each decoding matrix of the batch (the terms of one decoded coordinate)."""
    return np.asarray(np.count_nonzero(np.asarray(A != 0), axis=-1), dtype=np.int64).max(axis=-1, initial=0)


def _gamma(w: Any) -> Any:
    wu = np.asarray(w, dtype=float) * _U64
    return wu / (1.0 - wu)


def residual_slack(mag: Any, width: Any, exact_eval: Any = False) -> Any:
    """``delta = (gamma_{w+1} + 2 gamma_w)(mag + 1)``: how far any machine's computed residual of a set can be from
    this machine's (module docstring); 0 where ``exact_eval``."""
    w = np.asarray(width, dtype=float)
    return np.where(np.asarray(exact_eval, dtype=bool), 0.0,
                    (_gamma(w + 1) + 2 * _gamma(w)) * (np.asarray(mag, dtype=float) + 1.0))


def error_bounds(canc: Any, residual: Any, mag: Any, width: Any, dtype: Any = np.float64, terms: Any = 1,
                 exact_eval: Any = False) -> tuple[Any, Any, Any]:
    """``(lo, est, hi)``: the error estimate of a decode (:func:`error_estimate`) and an interval that holds every
    machine's estimate of the same set (module docstring: the residual within ``delta = (gamma_{w+1} + 2
    gamma_w)(mag + 1)``, the cancellation within the relative :data:`CANC_ALLOWANCE`; both zero where
    ``exact_eval``).

    >>> lo, est, hi = error_bounds(10.0, 1e-12, 20.0, 5)
    >>> bool(lo < est < hi), float(hi - est) < 1e-13
    (True, True)
    >>> lo, est, hi = error_bounds(1.0, 0.0, 3.0, 3, exact_eval=True)    # exact evaluation: no interval
    >>> float(lo) == float(est) == float(hi)
    True
    """
    exact_eval = np.asarray(exact_eval, dtype=bool)
    delta = residual_slack(mag, width, exact_eval)
    eta = np.where(exact_eval, 0.0, CANC_ALLOWANCE)
    res = np.asarray(residual, dtype=float)
    u_canc = unit_roundoff(dtype) * np.asarray(canc, dtype=float) * np.sqrt(
        np.maximum(np.asarray(terms, dtype=float), 1.0))
    with np.errstate(invalid="ignore", over="ignore"):
        est = u_canc + res
        lo = u_canc * (1 - eta) + np.maximum(res - delta, 0.0)
        hi = u_canc * (1 + eta) + res + delta
    return lo, est, hi


def judge(canc: Any, residual: Any, mag: Any, width: Any, rtol: float, dtype: Any = np.float64, terms: Any = 1,
          exact_eval: Any = False) -> np.ndarray:
    """The machine-independent verdict per pattern: :data:`OK` (every machine's decode accepts: the upper end of
    :func:`error_bounds` is within ``rtol``, the tolerance of ``dtype``), :data:`FAILS` (every machine's decode
    refuses: even the lower end exceeds it, or a value is not finite) or :data:`BORDERLINE` (in between: the
    verdict would depend on the BLAS kernel, batch size or thread count, so it is not a proof either way).

    >>> judge([1e3, 1e3, 1e3], [0.0, 2e-8, 0.0], [1e3, 1e3, 1e9], [10, 10, 10], 1e-8).tolist()
    [0, 2, 1]
    """
    lo, _, hi = error_bounds(canc, residual, mag, width, dtype, terms, exact_eval)
    with np.errstate(invalid="ignore"):
        out = np.where(np.isfinite(hi) & (hi <= rtol), OK, np.where(np.isfinite(lo) & (lo <= rtol), BORDERLINE,
                                                                     FAILS))
    return np.asarray(out, dtype=np.int8)


def tolerance(rtol: float, dtype: Any = np.float64) -> float:
    """The acceptance tolerance for messages of ``dtype``, given the float64 tolerance ``rtol``.

    ``rtol`` is stated for float64. Another dtype keeps the same share of its digits: with ``u`` the unit
    roundoff of ``dtype`` and ``u64`` float64's, ``tol = u ** (log rtol / log u64)``, so ``tol = rtol`` for float64
    and the default ``rtol = 1e-8`` (half of float64's digits) gives ``2.3e-4`` for float32 and complex64 (half of
    theirs).

    >>> tolerance(1e-8, np.float64)
    1e-08
    >>> round(tolerance(1e-8, np.float32), 6)
    0.000238
    """
    u = unit_roundoff(dtype)
    u64 = unit_roundoff(np.float64)
    if u == u64:
        return float(rtol)
    return float(u ** (np.log(rtol) / np.log(u64)))


def accepts(canc: Any, residual: Any, rtol: float = DEFAULT_RTOL, dtype: Any = np.float64,
            terms: Any = 1) -> np.ndarray:
    """True where a decode in ``dtype`` is trustworthy: ``error_estimate(canc, residual, dtype, terms) <=
    tolerance(rtol, dtype)`` (and both are finite).

    This is the acceptance rule of every decode (and the helper a verifier uses to answer for a dtype). It is
    stricter than the common residual test ``residual <= rtol * max(1, ||a||_1 max|B|)``, which grows with the
    cancellation and so accepts decoding vectors that lose every digit; the target ``E`` has unit entries and
    ``A_F B`` is invariant under row scalings of ``B``, so no further scaling is needed. With the default
    ``terms=1`` and float64 it is ``u * canc + residual <= rtol``.

    >>> bool(accepts(1e3, 0.0)), bool(accepts(1e3, 0.0, dtype=np.float32)), bool(accepts(1e5, 0.0, dtype=np.float32))
    (True, True, False)
    """
    est = error_estimate(canc, residual, dtype, terms)
    return np.isfinite(est) & (est <= tolerance(rtol, dtype))


def unit_roundoff(dtype: Any) -> float:
    """Unit roundoff of a float/complex dtype (float64 for anything exact or integer)."""
    dt = np.dtype(dtype)
    if dt.kind in "fc":
        return float(np.finfo(dt).eps) / 2
    return float(np.finfo(np.float64).eps) / 2


def error_estimate(canc: Any, residual: Any, dtype: Any = np.float64, terms: Any = 1) -> Any:
    """Predicted relative error of a decoded sum: ``u * canc * sqrt(terms) + residual``.

    ``u`` is the unit roundoff of ``dtype`` and ``terms`` the number of rounded additions along one coordinate
    (the decoding vector's non-zeros plus the encoding load): rounding errors of a sum of ``t`` terms grow like
    ``sqrt(t) u`` (Higham, *Accuracy and Stability of Numerical Algorithms*, 2nd ed. 2002, section 4.2), and
    each term is amplified by the cancellation factor. The error is relative to ``||sum_j |g_j| ||_inf``; for
    data near the underflow threshold add :func:`underflow_error`.
    """
    return unit_roundoff(dtype) * np.asarray(canc) * np.sqrt(np.maximum(np.asarray(terms, dtype=float), 1.0)) \
        + np.asarray(residual)


def decode_terms(A: np.ndarray, load: int) -> int:
    """Rounded additions along one coordinate of a decode with matrix ``A`` (m, n): the most non-zeros of a row
    of ``A`` plus the encoding ``load``."""
    return int(np.count_nonzero(np.asarray(A != 0), axis=-1).max(initial=0)) + int(load)


def underflow_error(coef_l1: float, terms: int, load: int, amax: float, dtype: Any) -> float:
    """Relative error floor of a decode whose result has magnitude ``amax`` (at most its largest entry) in ``dtype``.

    Below the smallest normal number every rounding has an absolute error up to half the smallest subnormal
    ``eta`` whatever the size of the operands, so the absolute error of a decoded coordinate is at most
    ``eta/2 * (||a||_1 (load + 1) + terms)`` (each message carries ``load + 1`` roundings, weighted by the
    decoding coefficients, plus the decode's own); relative to ``amax`` this is negligible for normal data and
    dominant for subnormal data. Exactly zero results report 0.
    """
    dt = np.dtype(dtype)
    if dt.kind not in "fc" or not amax > 0:
        return 0.0
    eta = float(np.finfo(dt).smallest_subnormal)
    return eta / float(amax) * (coef_l1 * (load + 1) + terms) / 2   # eta / 2 itself would round to 0 in float64
