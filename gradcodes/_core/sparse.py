"""Sparse storage of encoding matrices: the compressed-row (CSR) form a code keeps when ``B`` is given sparse.

The codes run on large clusters have ``load`` non-zeros per row (``s + 1`` for fractional repetition), so a dense
``n x k m`` matrix wastes ``k m / load`` times the memory of its non-zeros. A code built from a
:mod:`scipy.sparse` matrix stores the canonical compressed-row arrays (Saad, *Iterative Methods for Sparse Linear
Systems*, 2nd ed. 2003, section 3.4): ``indptr`` (n + 1 row offsets), ``indices`` (the columns of each row's
non-zeros, ascending) and ``data`` (their values; float64 for real codes, complex128 for complex ones), with no
explicit zeros and no duplicates, so that equal matrices have equal arrays. Everything here works on those arrays
at a cost proportional to the non-zeros; the dense form is built only on request and under
``gradcodes.limits.entries``.

scipy is imported only by the functions that take or return scipy objects (not by ``import gradcodes``).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .._base.errors import GradcodesTypeError, GradcodesValueError
from .._base.validate import check_entries, check_size
from .numerics import column_factor

__all__ = ["SPARSE_FROM", "use_sparse", "csr_from_rows", "owned", "is_scipy_sparse", "canonical_csr", "csr_of_dense",
           "dense_of", "row_supports", "residual_cancellation", "to_scipy"]

CSR = tuple[np.ndarray, np.ndarray, np.ndarray]

#: Family constructors whose matrices are naturally sparse (fractional repetition, stable binary, grouped codes,
#: CodedReduce trees) store ``B`` sparse from this many dense entries ``n x k m`` on (the same matrix either way:
#: the dense form of a sparse code is bit-for-bit the dense construction)
SPARSE_FROM = 10**6


def use_sparse(n: int, cols: int) -> bool:
    """Whether a naturally sparse family stores an ``n x cols`` matrix sparse (:data:`SPARSE_FROM`)."""
    return n * cols >= SPARSE_FROM


def csr_from_rows(indptr: np.ndarray, indices: np.ndarray, data: np.ndarray, shape: tuple[int, int]) -> Any:
    """A :class:`scipy.sparse.csr_array` from row offsets, column indices and values (for the constructors),
    after checking the non-zeros against ``gradcodes.limits.entries``."""
    import scipy.sparse

    check_size(f"the non-zeros of the encoding matrix ({shape[0]:,} x {shape[1]:,})", int(data.size), "entries")
    return owned(scipy.sparse.csr_array((data, indices, indptr), shape=shape, copy=False))


def owned(M: Any) -> Any:
    """Mark a scipy matrix a constructor has just built (and holds no other reference to): the code type then
    keeps its arrays instead of copying them."""
    M._gradcodes_owned = True
    return M


def is_scipy_sparse(B: Any) -> bool:
    """True for a :mod:`scipy.sparse` array or matrix (without importing scipy)."""
    return type(B).__module__.startswith("scipy.sparse") and hasattr(B, "tocsr") and hasattr(B, "nnz")


def _readonly(*arrays: np.ndarray) -> None:
    for a in arrays:
        a.flags.writeable = False


def canonical_csr(B: Any, field: str | None, name: str = "B") -> tuple[CSR, tuple[int, int], str]:
    """``((indptr, indices, data), shape, field)`` of a scipy.sparse matrix: int64 indices, sorted, summed
    duplicates, explicit zeros removed; data float64 (``"real"``) or complex128 (``"complex"``), all finite."""
    if field not in (None, "real", "complex"):
        raise GradcodesValueError(f"a scipy.sparse {name} gives a code over 'real' or 'complex'; got field={field!r} "
                                  f"(pass a dense matrix of Fractions or a galois array for exact fields)")
    if B.ndim != 2 or 0 in B.shape:
        raise GradcodesValueError(f"{name} must be a non-empty 2-D matrix (rows = workers), got shape {B.shape}")
    kind = np.dtype(B.dtype).kind
    if kind not in "biufc":
        raise GradcodesTypeError(f"{name} must contain numbers, got dtype {B.dtype}")
    check_size(f"the stored entries of {name}", int(B.nnz), "entries")
    owned = getattr(B, "_gradcodes_owned", False)          # built by a constructor here: no other reference
    M = B.tocsr(copy=not owned)
    if not M.has_canonical_format:
        M.sum_duplicates()
    if M.data.size and not np.all(M.data):
        M.eliminate_zeros()
    data = np.asarray(M.data)
    if field is None:
        field = "complex" if kind == "c" else "real"
    if field == "real":
        if kind == "c":
            if np.any(data.imag != 0):
                raise GradcodesValueError(f"{name} has complex entries; use field='complex'")
            data = data.real
        data = np.asarray(data, dtype=np.float64)
    else:
        data = np.asarray(data, dtype=np.complex128)
    if not np.all(np.isfinite(data)):
        raise GradcodesValueError(f"{name} must contain only finite entries")
    keep = data != 0                                  # entries that became zero in the cast (none for finite data)
    indptr = np.asarray(M.indptr, dtype=np.int64)
    indices = np.asarray(M.indices, dtype=np.int64)
    if not np.all(keep):
        counts = np.add.reduceat(keep.astype(np.int64), indptr[:-1]) if data.size else np.zeros(0, np.int64)
        counts[np.diff(indptr) == 0] = 0
        indptr = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)
        indices, data = indices[keep], data[keep]
    out = (np.ascontiguousarray(indptr), np.ascontiguousarray(indices), np.ascontiguousarray(data))
    _readonly(*out)
    return out, (int(B.shape[0]), int(B.shape[1])), field


def csr_of_dense(M: np.ndarray) -> CSR:
    """The canonical compressed-row arrays of a dense float or complex matrix (explicit zeros, including
    ``-0.0``, dropped)."""
    from .apply import csr

    indptr, indices, data = csr(M)
    return indptr, indices, np.ascontiguousarray(data)


def dense_of(parts: CSR, shape: tuple[int, int], what: str = "B") -> np.ndarray:
    """The dense matrix of compressed-row arrays, after checking its size against ``gradcodes.limits.entries``
    (a :class:`gradcodes.SizeLimitError` names the size; use the sparse form instead)."""
    try:
        check_entries(shape[0], shape[1], what=f"the dense form of {what}")
    except GradcodesValueError as exc:
        raise type(exc)(f"{exc}. This code is stored sparse ({int(parts[0][-1]):,} non-zeros): use code.B_sparse "
                        f"(a scipy.sparse.csr_array) rather than code.B") from None
    indptr, indices, data = parts
    out = np.zeros(shape, dtype=data.dtype)
    rows = np.repeat(np.arange(shape[0], dtype=np.int64), np.diff(indptr))
    out[rows, indices] = data
    return out


def to_scipy(parts: CSR, shape: tuple[int, int], dtype: Any = None) -> Any:
    """A new :class:`scipy.sparse.csr_array` (own copies of the arrays) of compressed-row arrays."""
    import scipy.sparse

    indptr, indices, data = parts
    d = data.astype(dtype if dtype is not None else data.dtype, copy=True)
    return scipy.sparse.csr_array((d, indices.copy(), indptr.copy()), shape=shape)


def row_supports(parts: CSR, n: int, m: int) -> tuple[np.ndarray, np.ndarray]:
    """``(indptr, partitions)``: the partitions stored by each worker (row ``i``:
    ``partitions[indptr[i]:indptr[i+1]]``, ascending), from the column indices ``j m + u`` of the non-zeros."""
    indptr, indices, _ = parts
    if m == 1:
        return indptr, indices
    part = indices // m
    rows = np.repeat(np.arange(n, dtype=np.int64), np.diff(indptr))
    first = np.ones(part.size, dtype=bool)
    first[1:] = (part[1:] != part[:-1]) | (rows[1:] != rows[:-1])
    counts = np.bincount(rows[first], minlength=n)
    ip = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(counts, out=ip[1:])
    return ip, part[first]


def residual_cancellation(A: np.ndarray, parts: CSR, shape: tuple[int, int], E: np.ndarray,
                          k: int) -> tuple[float, float]:
    """``(max |A B - E|, cancellation factor)`` (:func:`gradcodes._core.numerics.cancellation`) for one decoding
    matrix ``A`` (m, n) and ``B`` in compressed-row form, at a cost proportional to the non-zeros of ``B`` in the
    rows ``A`` uses."""
    indptr, indices, data = parts
    n, cols = shape
    used = np.flatnonzero(np.any(A != 0, axis=0))
    lo, hi = indptr[used], indptr[used + 1]
    cnt = hi - lo
    pos = np.repeat(lo - np.concatenate([[0], np.cumsum(cnt)[:-1]]), cnt) + np.arange(int(cnt.sum()))
    rows = np.repeat(np.arange(used.size), cnt)
    vals, cidx = data[pos], indices[pos]
    Au = A[:, used]
    m = A.shape[0]
    R = np.zeros((m, cols), dtype=np.result_type(A.dtype, data.dtype))
    Mabs = np.zeros((m, cols))
    avals = np.abs(vals)
    for u in range(m):
        np.add.at(R[u], cidx, Au[u, rows] * vals)
        np.add.at(Mabs[u], cidx, np.abs(Au[u, rows]) * avals)
    R -= E
    res = float(np.abs(R).max(initial=0.0))
    canc = float(column_factor(Mabs[None], m)[0])
    return res, canc
