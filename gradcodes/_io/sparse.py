"""Code files of codes stored sparse: the compressed-row arrays of ``B``, read as untrusted input.

A code stored sparse (:attr:`gradcodes.LinearCode.sparse`) is written by :func:`gradcodes.save_code` as three
entries, so that the file is proportional to the non-zeros: ``B_indptr`` (int64, ``n + 1`` row offsets),
``B_indices`` (int64, the column of each non-zero) and ``B_data`` (float64 or complex128, the values), with the
matrix's ``shape`` in the parameters. :func:`gradcodes.load_code` checks every header before reading the data (at
most ``max_entries`` non-zeros and rows, default ``gradcodes.limits.entries``; the shape and the family's
parameters agree) and then the contents: canonical compressed rows (offsets from 0, non-decreasing, ending at the
number of non-zeros; column indices in range and strictly increasing within each row; finite, non-zero values).
Anything else raises :class:`gradcodes.CodeFileError`. The matrix then goes through the same rules as a dense one:
the family's decoders (and their proofs) are used only when the rebuild has the same matrix bit for bit.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from .._base.validate import limits

__all__ = ["SPARSE_ENTRIES", "sparse_arrays", "check_sparse_header", "check_sparse_columns", "sparse_matrix",
           "same_sparse"]

#: The entries of a sparse code file and the dtype kinds each may have.
SPARSE_ENTRIES = {"B_indptr": "iu", "B_indices": "iu", "B_data": "fc"}


def sparse_arrays(code: Any) -> dict[str, np.ndarray]:
    """The entries :func:`gradcodes.save_code` writes for a code stored sparse."""
    indptr, indices, data = code._csr_parts()
    return {"B_indptr": np.asarray(indptr, dtype=np.int64), "B_indices": np.asarray(indices, dtype=np.int64),
            "B_data": np.asarray(data)}


def check_sparse_header(where: str, key: str, shape: tuple[int, ...], meta: dict[str, Any],
                        max_entries: int | None, seen: dict[str, int], error: Callable[[str], Exception]) -> None:
    """An entry's ``.npy`` header (before its data is read): 1-D, of the length the declared shape allows."""
    bound = max_entries if max_entries is not None else limits.entries
    if meta.get("shape") is None:
        raise error(f"{where!r}: invalid saved matrix: a sparse matrix needs its 'shape' in the parameters")
    n, cols = meta["shape"]
    if len(shape) != 1:
        raise error(f"{where!r}: entry {key!r} must be 1-D, got shape {shape}")
    length = shape[0]
    if key == "B_indptr":
        if n > bound:
            raise error(f"{where!r}: the saved matrix has {n:,} rows, more than the bound {bound:,}; if you trust "
                        f"the file, load it with gradcodes.load_code(path, max_entries={n})")
        if length != n + 1:
            raise error(f"{where!r}: invalid saved matrix: 'B_indptr' has {length:,} entries for {n:,} rows")
        return
    if length > bound:
        raise error(f"{where!r}: the saved matrix has {length:,} non-zeros, more than the bound {bound:,}; if "
                    f"you trust the file, load it with gradcodes.load_code(path, max_entries={length})")
    if length > n * cols:
        raise error(f"{where!r}: invalid saved matrix: {length:,} non-zeros in a {n:,} x {cols:,} matrix")
    check_sparse_columns(where, n, cols, int(meta["m"]), length, bound, error)
    for other, seen_len in seen.items():
        if other != "B_indptr" and seen_len != length:
            raise error(f"{where!r}: invalid saved matrix: entry {key!r} has {length:,} entries, {other!r} "
                        f"{seen_len:,}")
    seen[key] = length


def check_sparse_columns(where: str, n: int, cols: int, m: int, nnz: int, bound: int,
                         error: Callable[[str], Exception]) -> None:
    """The columns of a sparse file, bounded by its own size before anything is read or built.

    A code's target ``E = 1_k^T (x) I_m`` is an ``m x cols`` array and much of the code's work is per column; a
    sparse file holds ``nnz`` non-zeros and ``n`` rows, so it may declare at most ``nnz + n`` columns (a column
    for each non-zero, and one without for each worker: a partition no worker computes), and ``m * cols`` at most
    the entry ``bound`` (``max_entries``, default ``gradcodes.limits.entries``).
    """
    if cols > nnz + n:
        raise error(f"{where!r}: invalid saved matrix: {cols:,} columns for {nnz:,} non-zeros in {n:,} rows; a "
                    f"sparse code file has between 1 and non-zeros + rows = {nnz + n:,} columns")
    if m * cols > bound:
        raise error(f"{where!r}: the saved code's target has m x k m = {m:,} x {cols:,} = {m * cols:,} entries, "
                    f"more than the bound {bound:,}; if you trust the file, load it with "
                    f"gradcodes.load_code(path, max_entries={m * cols})")


def sparse_matrix(where: str, meta: dict[str, Any], arrays: dict[str, np.ndarray],
                  error: Callable[[str], Exception]) -> Any:
    """The saved sparse matrix (a canonical :class:`scipy.sparse.csr_array`), its contents checked."""
    def fail(what: str) -> Exception:
        return error(f"{where!r}: invalid saved matrix: {what}")

    if set(SPARSE_ENTRIES) - set(arrays):
        raise fail(f"a sparse matrix needs the entries {sorted(SPARSE_ENTRIES)}, got {sorted(arrays)}")
    if meta["field"] not in ("real", "complex"):
        raise fail(f"a sparse matrix in a file whose field is {meta['field']!r}")
    n, cols = meta["shape"]
    indptr = arrays["B_indptr"].astype(np.int64)
    indices = arrays["B_indices"].astype(np.int64)
    data = arrays["B_data"]
    if not data.dtype.isnative:
        data = data.astype(data.dtype.newbyteorder("="))
    nnz = indices.size
    if indptr[0] != 0 or indptr[-1] != nnz or np.any(np.diff(indptr) < 0):
        raise fail("'B_indptr' must rise from 0 to the number of non-zeros")
    if nnz and (indices.min() < 0 or indices.max() >= cols):
        raise fail(f"column indices must lie in [0, {cols - 1}]")
    rows = np.repeat(np.arange(n, dtype=np.int64), np.diff(indptr))
    if nnz > 1 and np.any((np.diff(indices) <= 0) & (rows[1:] == rows[:-1])):
        raise fail("column indices must increase strictly within each row (canonical compressed rows)")
    if not np.all(np.isfinite(data)) or np.any(data == 0):
        raise fail("the stored values must be finite and non-zero")
    if meta["field"] == "real" and data.dtype.kind != "f":
        raise fail("a real code's values must be floats")
    import scipy.sparse

    return scipy.sparse.csr_array((data.astype(np.float64 if meta["field"] == "real" else np.complex128),
                                   indices, indptr), shape=(n, cols))


def same_sparse(code: Any, saved: Any) -> bool:
    """The rebuilt ``code``'s matrix is the saved sparse matrix bit for bit (shape, dtype, every non-zero; a
    dense rebuild with a ``-0.0`` entry differs)."""
    if tuple(saved.shape) != (code.n, code.k * code.m) or code.exact:
        return False
    indptr, indices, data = code._csr_parts()
    if data.dtype != saved.dtype or not (np.array_equal(indptr, saved.indptr) and
                                         np.array_equal(indices, saved.indices)):
        return False
    if data.tobytes() != np.ascontiguousarray(saved.data).tobytes():
        return False
    if not code.sparse:
        B = code.B
        return not bool(np.any((B == 0) & np.signbit(B.real if B.dtype.kind == "c" else B)))
    return True
