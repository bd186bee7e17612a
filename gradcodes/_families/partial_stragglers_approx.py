"""Approximate recovery for partial-straggler protocols: what the master does when it stops early.

Ramamoorthy, Meng & Girimaji ("Leveraging partial stragglers within gradient coding", NeurIPS 2024,
arXiv:2405.19509) also study approximate recovery, where the master stops before every chunk has ``m``
messages. The paper's own approximate scheme could not be read for this implementation; what follows is
gradcodes' design within the paper's model (a message after every chunk, gradcodes' Vandermonde encoding of
:mod:`gradcodes._families.partial_stragglers`), with the least-squares ("optimal") decoding of the approximate
gradient coding literature (Glasgow & Wootters 2021).

Least squares, chunk by chunk. The rows of ``B`` about chunk ``j`` form a Vandermonde matrix on distinct integer
nodes, and every message is supported on one chunk, so ``min_A ||A B_F - E||_F^2`` splits over chunks. A chunk
with ``c_j >= m`` messages is recovered exactly; one with ``c_j < m`` messages ``V`` (``c_j x m``, full row rank)
is best estimated by the pseudo-inverse ``V^+ = V^T (V V^T)^{-1}``, which leaves ``||V^+ V - I_m||_F^2 = m - c_j``.
Hence the closed form

.. math::  \\min_A \\|A B_F - E\\|_F^2 = \\sum_j \\max(0,\\, m - c_j),

an integer: the number of gradient blocks the messages do not determine. Divided by ``||E||_F^2 = k m`` it is
the mean squared error of the estimate per unit of gradient energy when the chunk gradients' blocks are
uncorrelated with equal energy (the model in which least squares is the linear MMSE estimator).

The classical approximate protocol of the same assignment (one message per worker after its whole load) can only
use the workers that have finished: its error at a stop is ``min_a ||a B^cl_F - E||_F^2`` over the finished set
``F``, computed with the code's shared least-squares decoder (``"lstsq"``).
"""

from __future__ import annotations

from collections.abc import Sequence
from fractions import Fraction
from typing import TYPE_CHECKING, Any

import numpy as np

from .._base.errors import GradcodesTypeError, GradcodesValueError
from .._base.validate import check_int
from .._core.acceptance import NonFiniteMessageError
from .._core.apply import apply_rows
from .._core.code import GradientCode, LinearCode
from .._core.fields import solve_left, to_fraction

if TYPE_CHECKING:
    from .partial_stragglers import PartialStragglerCode

__all__ = ["vandermonde_pinv", "squared_error", "estimate", "classical_code", "check_classical",
           "classical_squared_error"]


def vandermonde_pinv(nodes: Sequence[int], m: int) -> list[list[Fraction]]:
    """Exact pseudo-inverse ``V^T (V V^T)^{-1}`` (m x c) of ``V[r, u] = nodes[r]^u`` (c x m, ``c < m`` distinct
    nodes: full row rank), so that ``V^+ V`` is the orthogonal projection onto the row space of ``V``."""
    c = len(nodes)
    V = np.array([[Fraction(x) ** u for u in range(m)] for x in nodes], dtype=object)
    eye = np.array([[Fraction(int(a == b)) for b in range(c)] for a in range(c)], dtype=object)
    Ginv = solve_left(V @ V.T, eye)                         # the Gram matrix is positive definite
    assert Ginv is not None
    return [list(row) for row in V.T @ Ginv]


def squared_error(code: PartialStragglerCode, mask: Any) -> Any:
    """``min_A ||A B_F - E||_F^2 = sum_j max(0, m - c_j)`` for message masks of shape (..., n) (int or array)."""
    M = np.asarray(mask)
    if M.dtype != np.bool_ or M.shape[-1:] != (code.n,):
        raise GradcodesValueError(f"mask must be booleans of shape (..., {code.n}) (one per message), got "
                                  f"{M.dtype} {M.shape}")
    out = np.zeros(M.shape[:-1], dtype=np.int64)
    for rows in code.holders:                       # k chunks; never a loop over gradient coordinates
        out += np.maximum(0, code.m - M[..., rows].sum(axis=-1))
    return int(out) if out.ndim == 0 else out


def estimate(code: PartialStragglerCode, responders: Any, messages: Any, length: int | None,
             return_error: bool) -> Any:
    """:meth:`PartialStragglerCode.estimate` (see there)."""
    F, mask, order, ordered = code._responders(responders)
    M = code._check_data("messages", messages)
    where = code._message_rows(F, order, ordered, M.shape[0], "auto")
    q = M.shape[1]
    if length is not None:
        length = check_int("length", length, 1, code.m * q)
    A = code._raw_decoding_matrix(F, mask, code.decoders["chunks_lstsq"])[0]
    cols = np.flatnonzero(np.asarray(A != 0).any(axis=0))
    src = cols if where is None else where[cols]
    C = code._matrix_for(M, A)[:, cols]
    if M.dtype == object:
        out = C @ M[src] if cols.size else np.full((code.m, q), to_fraction(0), dtype=object)
    else:
        out = np.empty((code.m, q), dtype=code._result_dtype(M))
        with np.errstate(over="ignore", invalid="ignore"):
            amax = apply_rows(C, M, src, out)
        if not np.isfinite(amax):
            bad = [int(w) for w, i in zip(cols, src, strict=True) if not np.all(np.isfinite(M[i]))]
            raise NonFiniteMessageError(f"messages from responders {bad} contain NaN or infinite values, or the "
                                        f"estimate overflows {M.dtype}", bad)
    g = out.reshape(-1)
    if length is not None:
        g = g[:length]
    if not return_error:
        return g
    return g, squared_error(code, mask)


def classical_code(code: PartialStragglerCode) -> GradientCode:
    """The classical code of a cyclic assignment: ``gc.ye_abbe(workers, s, m)`` (the same data per worker)."""
    from .partial_stragglers_order import cyclic_assignment
    from .ye_abbe import ye_abbe

    N = code.workers
    if code.k != N or not np.array_equal(code.assignment, cyclic_assignment(N, code.s + code.m)):
        raise GradcodesValueError("classical: the default classical code (gc.ye_abbe) stores the cyclic "
                                  "assignment; pass classical= (a code with one row per worker) for this assignment")
    return ye_abbe(N, code.s, code.m)


def check_classical(code: PartialStragglerCode, classical: Any) -> LinearCode:
    """A classical code for the comparison: one row per worker, ``k`` chunks, each worker's row supported on its
    own chunks, with the shared least-squares decoder."""
    if not isinstance(classical, LinearCode):
        raise GradcodesTypeError(f"classical must be a gradient code (LinearCode), got {type(classical).__name__}")
    if classical.n != code.workers or classical.k != code.k:
        raise GradcodesValueError(f"classical must have one row per worker and the same chunks (n={code.workers}, "
                                  f"k={code.k}), got n={classical.n}, k={classical.k}")
    if "lstsq" not in classical.decoders:
        raise GradcodesValueError(f"classical: needs the least-squares decoder 'lstsq', has "
                                  f"{sorted(classical.decoders)}")
    B = np.asarray(classical.B)
    support = (B != 0).reshape(classical.n, classical.k, classical.m).any(axis=2)
    if np.any(support & ~code.assignment):
        w = int(np.flatnonzero((support & ~code.assignment).any(axis=1))[0])
        raise GradcodesValueError(f"classical: worker {w}'s row uses chunks it does not hold in the assignment")
    return classical


def classical_squared_error(classical: LinearCode, finished: np.ndarray) -> np.ndarray:
    """``min_a ||a B_F - E||_F^2 / (k m)`` for finished-worker masks (b, N): one least-squares solve per distinct
    set (the shared ``"lstsq"`` decoder), 1 for the empty set, 0 for ``n - s`` or more workers of an exact code."""
    uniq, inv = np.unique(finished, axis=0, return_inverse=True)
    k, m = classical.k, classical.m
    err = np.ones(uniq.shape[0])
    cnt = uniq.sum(axis=1)
    need = classical.n - classical.s if isinstance(classical, GradientCode) else classical.n + 1
    err[cnt >= need] = 0.0
    todo = np.flatnonzero((cnt > 0) & (cnt < need))
    if todo.size:
        A = np.asarray(classical.decoding_matrices(uniq[todo], "lstsq"), dtype=np.float64)
        B = np.asarray(classical.B, dtype=np.float64)
        E = np.asarray(classical.target, dtype=np.float64)
        R = A @ B - E
        err[todo] = np.einsum("bij,bij->b", R, R) / (k * m)
    return err[np.asarray(inv).reshape(-1)]
