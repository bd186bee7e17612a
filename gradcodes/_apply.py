"""Applying a code's matrices to gradient data at a cost proportional to their non-zeros.

Encoding computes ``Y = B G`` (``B`` is n x k*m, ``G`` the k*m x q blocks of the partial gradients) and decoding
``g = A_F Y`` (``A_F`` is m x n). Both matrices are sparse in the codes that matter in practice: worker ``i``
stores ``load`` of the ``k`` partitions (``nnz(B) = sum of the loads``), and a 0/1 decoder such as fractional
repetition's reads one worker per group. The kernels here touch only the rows of the data whose coefficient is
non-zero, never copy (gather) those rows, and keep the data's dtype (float32 data is accumulated in float32):

* :func:`combine_rows` -- ``out = sum_t c_t X[r_t]``: a loop over the non-zeros, each step one vectorised row
  operation (copy / add / subtract for coefficients 0 and +-1, BLAS ``axpy`` otherwise);
* :func:`apply_rows` -- ``out = C X[rows]`` for a decoding matrix: the selected rows are grouped into runs of
  consecutive rows, each run is one BLAS ``gemv``/``gemm`` on a view of the data, and the output is built in
  chunks of columns that stay in cache, so the data is streamed once and the output written once (the memory
  traffic of ``a @ Y_F`` on rows already gathered, without the gather);
* :func:`csr` -- the compressed-row form of a dense matrix (non-zeros per row, in column order).

Streaming the operands once is the physical limit of these products: they do about one multiply-add per loaded
number (Williams, Waterman & Patterson, *Roofline*, CACM 2009, section 2).
"""

from __future__ import annotations

from fractions import Fraction
from typing import Any

import numpy as np
from scipy.linalg import blas

from ._decoders import single_threaded_blas

__all__ = ["csr", "combine_rows", "apply_rows", "runs"]

#: Output columns per chunk in :func:`apply_rows`: 2**16 float32 (256 KiB) stays in L2 with a scratch row.
CHUNK = 1 << 16

_AXPY = {np.dtype(np.float32): blas.saxpy, np.dtype(np.float64): blas.daxpy,
         np.dtype(np.complex64): blas.caxpy, np.dtype(np.complex128): blas.zaxpy}


def csr(M: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(indptr, indices, data)`` of a dense 2-D array: row ``i``'s non-zeros are
    ``data[indptr[i]:indptr[i+1]]`` in columns ``indices[...]`` (ascending).

    >>> csr(np.array([[0., 2.], [3., 0.]]))
    (array([0, 1, 2]), array([1, 0]), array([2., 3.]))
    """
    nz = np.asarray(M != 0)
    rows, cols = np.nonzero(nz)
    indptr = np.zeros(M.shape[0] + 1, dtype=np.int64)
    np.cumsum(nz.sum(axis=1), out=indptr[1:])
    return indptr, cols.astype(np.int64), M[rows, cols]


def combine_rows(out: np.ndarray, coefs: Any, X: Any, rows: Any, *, accumulate: bool = False) -> np.ndarray:
    """``out = sum_t coefs[t] * X[rows[t]]`` (or ``out +=`` with ``accumulate``), in place, without a gathered copy.

    ``X`` is anything indexable by the entries of ``rows`` whose items are 1-D arrays the length of ``out`` (a 2-D
    array, or a list of rows). Coefficients ``1`` and ``-1`` cost one add or subtract, others one BLAS ``axpy``
    (real and complex float dtypes) or a multiply into a scratch row. With no coefficients ``out`` is zeroed
    (unless ``accumulate``). Object arrays (Fractions) work with the same loop in exact arithmetic.
    """
    coefs = list(coefs)
    rows = list(rows)
    first = not accumulate
    axpy = _AXPY.get(out.dtype) if out.flags.c_contiguous else None
    tmp = None
    for c, r in zip(coefs, rows, strict=True):
        x = X[r]
        if first:
            if c == 1:
                np.copyto(out, x)
            elif c == -1:
                np.negative(x, out=out)
            else:
                np.multiply(x, c, out=out)
            first = False
        elif c == 1:
            np.add(out, x, out=out)
        elif c == -1:
            np.subtract(out, x, out=out)
        elif axpy is not None and x.dtype == out.dtype and x.flags.c_contiguous:
            axpy(x, out, a=c)                          # in place: out is contiguous and of the BLAS dtype
        else:
            if tmp is None:
                tmp = np.empty_like(out)
            np.multiply(x, c, out=tmp)
            np.add(out, tmp, out=out)
    if first:
        out[...] = Fraction(0) if out.dtype == object else 0
    return out


def runs(rows: np.ndarray) -> list[tuple[int, int, int]]:
    """Maximal runs of consecutive row indices: ``(position in rows, first row, length)`` for each run.

    >>> runs(np.array([2, 3, 4, 7, 9, 10]))
    [(0, 2, 3), (3, 7, 1), (4, 9, 2)]
    """
    if rows.size == 0:
        return []
    cut = np.flatnonzero(np.diff(rows) != 1) + 1
    starts = np.concatenate([[0], cut])
    ends = np.concatenate([cut, [rows.size]])
    return [(int(a), int(rows[a]), int(b - a)) for a, b in zip(starts, ends, strict=True)]


def apply_rows(C: np.ndarray, X: np.ndarray, rows: np.ndarray, out: np.ndarray) -> float:
    """``out = C @ X[rows]`` for ``C`` (m, r) and ``X`` (N, q) without gathering ``X[rows]``; returns a magnitude.

    ``rows`` must be distinct. They are sorted and split into runs of consecutive rows; for each chunk of
    :data:`CHUNK` columns every run is one ``matmul`` on a view of ``X`` (BLAS gemv/gemm with a leading
    dimension, no copy), accumulated into the chunk of ``out`` while it is in cache. Runs of one row with
    coefficient +-1 are an add or subtract. ``out`` has shape (m, q) and the result dtype; for real ``C`` it has
    ``X``'s dtype.

    The returned magnitude ``mu`` satisfies ``rms(out) <= mu <= max |out|`` (the largest root mean square of a
    chunk, one BLAS dot per chunk while it is in cache; the exact maximum where squares would underflow or
    overflow). It is NaN when the result holds a NaN or an infinity, so it doubles as the finiteness check.
    """
    m, r = C.shape
    if r == 0:
        out[...] = 0
        return 0.0
    order = np.argsort(rows, kind="stable")
    srows = rows[order]
    Cs = np.ascontiguousarray(C[:, order])
    one = m == 1
    pieces = [(Cs[0, a:a + L] if one else Cs[:, a:a + L], start, L) for a, start, L in runs(srows)]
    unit = [bool(one and L == 1 and abs(Cp[0]) == 1) for Cp, _, L in pieces]
    sign = [bool(u and Cp[0] == 1) for u, (Cp, _, _) in zip(unit, pieces, strict=True)]
    if len(pieces) == 1 and not unit[0]:
        # one run of consecutive rows (compact messages, or no straggler inside the used rows): one BLAS call on
        # the view is exactly ``a_F @ Y_F`` on rows already gathered
        Cp, start, L = pieces[0]
        np.matmul(Cp, X[start:start + L], out=out[0] if one else out)
        return _magnitude(out, CHUNK)
    with single_threaded_blas():                 # many small calls: a threaded BLAS only spins on them
        return _chunked(pieces, unit, sign, X, out, one)


def _chunked(pieces: list, unit: list[bool], sign: list[bool], X: np.ndarray, out: np.ndarray, one: bool) -> float:
    m, q = out.shape
    mu = 0.0
    tmp_full = np.empty((m, min(CHUNK, q)), dtype=out.dtype)
    small, big = _safe_range(out.dtype)
    for lo in range(0, q, CHUNK):
        hi = min(q, lo + CHUNK)
        oc = out[0, lo:hi] if one else out[:, lo:hi]
        tmp = tmp_full[0, : hi - lo] if one else tmp_full[:, : hi - lo]
        for t, (Cp, start, L) in enumerate(pieces):
            Xv = X[start, lo:hi] if unit[t] else X[start:start + L, lo:hi]
            if unit[t]:
                if t == 0:
                    np.copyto(oc, Xv) if sign[t] else np.negative(Xv, out=oc)
                else:
                    (np.add if sign[t] else np.subtract)(oc, Xv, out=oc)
            elif t == 0:
                np.matmul(Cp, Xv, out=oc)
            else:
                np.matmul(Cp, Xv, out=tmp)
                np.add(oc, tmp, out=oc)
        if out.dtype != object and mu == mu:
            c = _chunk_magnitude(oc[None] if one else oc, small, big)
            mu = c if c != c else max(mu, c)
    return mu


def _chunk_magnitude(oc: np.ndarray, small: float, big: float) -> float:
    """``rms <= mu <= max |oc|`` over the rows of a chunk (NaN if not finite), one dot per row."""
    mu = 0.0
    for row in oc:
        ss = float(np.vdot(row, row).real)
        if small < ss < big:
            mu = max(mu, (ss / row.size) ** 0.5)
        elif np.all(np.isfinite(row)):                      # squares under- or overflow: the exact maximum
            mu = max(mu, float(np.abs(row).max()))
        else:
            return float("nan")
    return mu


def _magnitude(out: np.ndarray, chunk: int) -> float:
    if out.dtype == object:
        return 0.0
    small, big = _safe_range(out.dtype)
    mu = 0.0
    for lo in range(0, out.shape[1], chunk):
        c = _chunk_magnitude(out[:, lo:lo + chunk], small, big)
        if c != c:
            return c
        mu = max(mu, c)
    return mu


def _safe_range(dtype: np.dtype) -> tuple[float, float]:
    """Sums of squares strictly inside this range are accurate (no underflow of the squares, no overflow)."""
    if dtype.kind not in "fc":
        return 0.0, float("inf")
    fi = np.finfo(dtype)
    return float(fi.tiny) ** 0.5 * 2.0 ** 20, float(fi.max) / 2.0 ** 20


def _neg(dst: np.ndarray, src: np.ndarray) -> None:
    np.negative(src, out=dst)
