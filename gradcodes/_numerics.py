"""Batched numerical diagnostics of decoding matrices (see ``docs/numerics.md``).

For a decoding matrix ``A_F`` (m x n) of a code with encoding matrix ``B`` (n x k*m) and target
``E = 1_k^T (x) I_m``:

* **residual** ``||A_F B - E||_inf`` — how far the decoder is from exact recovery;
* **cancellation factor** ``canc(A_F) = max_u sum_i |A_F[u, i]| * ||B_i||_1 / k`` — row-scale invariant, >= 1,
  exactly 1 for fractional repetition; rounding in the decoded sum grows like ``u * canc``;
* **error estimate** ``eps * canc + residual`` — the predicted relative error of the decoded sum, with ``eps``
  the unit roundoff of the message dtype.

All functions take a batch ``A`` of shape (b, m, n) and return arrays of shape (b,).
"""

from __future__ import annotations

from fractions import Fraction
from typing import Any

import numpy as np

from ._fields import exact_zeros, is_galois_array

__all__ = ["target_matrix", "residuals", "cancellation", "accepts", "error_estimate", "exact_residual_ok",
           "unit_roundoff"]

#: Relative factor of the default float64 acceptance tolerance.
DEFAULT_RTOL = 1e-8


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
    R = (A.reshape(b * m, n) @ B).reshape(b, m, -1)
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
    row_l1 = np.abs(B).sum(axis=1)
    return (np.abs(A) @ row_l1).max(axis=1) / k


def accepts(canc: np.ndarray, residual: np.ndarray, rtol: float = DEFAULT_RTOL) -> np.ndarray:
    """True where a float64 decode is trustworthy: ``u * canc + residual <= rtol`` (and both are finite).

    This is stricter than the common ``residual <= rtol * max(1, ||a||_1 max|B|)``, which grows with the
    cancellation and so accepts decoding vectors that lose every digit; the target ``E`` has unit entries and
    ``A_F B`` is invariant under row scalings of ``B``, so no further scaling is needed.
    """
    est = error_estimate(canc, residual)
    return np.isfinite(est) & (est <= rtol)


def unit_roundoff(dtype: Any) -> float:
    """Unit roundoff of a float/complex dtype (float64 for anything exact or integer)."""
    dt = np.dtype(dtype)
    if dt.kind in "fc":
        return float(np.finfo(dt).eps) / 2
    return float(np.finfo(np.float64).eps) / 2


def error_estimate(canc: np.ndarray | float, residual: np.ndarray | float, dtype: Any = np.float64) -> Any:
    """Predicted relative error of a decoded sum: ``u * canc + residual`` (``u`` = unit roundoff of ``dtype``)."""
    return unit_roundoff(dtype) * np.asarray(canc) + np.asarray(residual)
