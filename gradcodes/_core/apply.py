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
* :func:`csr` -- the compressed-row form of a dense matrix (non-zeros per row, in column order);
* :func:`csr_product` -- ``Y = B X`` for ``B`` in compressed-row form (the encode): a compiled kernel (numba,
  compiled on first use and cached on disk, never at ``import gradcodes``) that walks the columns in blocks and,
  for every block, all rows of ``Y``: the rows of ``X`` a block needs are read from memory once and then reused
  from cache by the other rows that store the same partitions, and each output block is summed in a small
  buffer and written once. Memory traffic is thus about one read of ``X`` and one write of ``Y``. Without numba
  (or with ``use_numba=False``) the same sums run as one :func:`combine_rows` per row.

Streaming the operands once is the physical limit of these products: they do about one multiply-add per loaded
number (Williams, Waterman & Patterson, *Roofline*, CACM 2009, section 2).
"""

from __future__ import annotations

import os
import threading
from fractions import Fraction
from typing import Any

import numpy as np

from .decoders import single_threaded_blas

__all__ = ["csr", "combine_rows", "apply_rows", "runs", "csr_product"]

#: Output columns per chunk in :func:`apply_rows`: 2**16 float32 (256 KiB) stays in L2 with a scratch row.
CHUNK = 1 << 16
#: Columns per block of the compiled decode (one accumulator of 4096 entries stays in the L1 cache)
_DECODE_BLOCK = 4096
#: the compiled (numba) kernels; False selects the numpy paths (same sums up to rounding; tested)
_USE_NUMBA = True

#: dtype -> BLAS axpy, filled on first use (scipy.linalg is imported lazily, not by `import gradcodes`)
_AXPY: dict[np.dtype[Any], Any] = {}


def _axpy(dtype: np.dtype[Any]) -> Any:
    """The BLAS axpy routine for ``dtype`` (None for other dtypes); imports scipy.linalg on first use."""
    if not _AXPY:
        from scipy.linalg import blas

        _AXPY.update({np.dtype(np.float32): blas.saxpy, np.dtype(np.float64): blas.daxpy,
                      np.dtype(np.complex64): blas.caxpy, np.dtype(np.complex128): blas.zaxpy})
    return _AXPY.get(dtype)


#: dtype -> BLAS dot (real dtypes), filled on first use
_DOT: dict[np.dtype[Any], Any] = {}


def _dot(dtype: np.dtype[Any]) -> Any:
    """The BLAS dot routine for a real ``dtype`` (None for other dtypes). Called directly it raises none of
    numpy's floating-point warnings (``np.dot`` checks the FPU flags, so a NaN check with it needs an
    ``np.errstate`` context on every call)."""
    if not _DOT:
        from scipy.linalg import blas

        _DOT.update({np.dtype(np.float32): blas.sdot, np.dtype(np.float64): blas.ddot})
    return _DOT.get(dtype)


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
    axpy = _axpy(out.dtype) if out.flags.c_contiguous else None
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
    if (one and _USE_NUMBA and r * out.shape[1] >= _KERNEL_MIN_WORK and Cs.dtype == X.dtype == out.dtype
            and X.dtype in _KERNEL_DTYPES and X.flags.c_contiguous and out.flags.c_contiguous
            and compiled_encode_kernel() is not None):
        # several runs of a decoding vector: the compiled kernel streams the used rows column block by column
        # block into one cache-resident accumulator (the traffic of ``a_F @ Y_F`` without the gather)
        csr_product(np.array([0, r], dtype=np.int64), srows.astype(np.int64), Cs[0], X, out,
                    block=_DECODE_BLOCK)
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


# ---------------------------------------------------------------------------------------------------------------
# the encode: Y = B X for a sparse B, column-blocked (compiled lazily; the numpy path is the same sums)

#: dtypes of the compiled encode kernel (data, matrix and output share one)
_KERNEL_DTYPES = frozenset(np.dtype(t) for t in (np.float32, np.float64, np.complex64, np.complex128))
#: bytes of ``X`` one column block may span (all rows): the block stays in the last-level cache while every row
#: of ``Y`` is formed from it
_BLOCK_BYTES = 16 << 20
#: below this many output entries one thread (a second one only costs its start-up)
_THREADS_MIN = 1 << 21
_ENCODE_KERNEL: Any = None
#: multiply-adds below which the numpy paths are used (no numba import or compilation for small data)
_KERNEL_MIN_WORK = 1 << 18


def _build_encode_kernel() -> Any:
    import numba

    @numba.njit(cache=True, nogil=True)
    def kernel(indptr, indices, data, X, Y, lo0, hi0, block):  # pragma: no cover - compiled
        # Row i of a column block is summed in its output block (in cache), up to eight terms per pass (each pass
        # streams eight rows of X at once: a dense decoding vector then reads its rows at the rate of BLAS gemv),
        # in the order of the row's non-zeros (the rounding of the sequential sum); 1-D views give unit-stride
        # loops that LLVM vectorises. The first pass writes the block without reading it.
        n = Y.shape[0]
        for lo in range(lo0, hi0, block):
            hi = min(hi0, lo + block)
            L = hi - lo
            for i in range(n):
                a = indptr[i]
                b = indptr[i + 1]
                y = Y[i, lo:hi]
                if a == b:
                    for t in range(L):
                        y[t] = 0
                    continue
                e = a
                c0 = data[e]
                x0 = X[indices[e], lo:hi]
                if b - e >= 8:
                    c1, c2, c3 = data[e + 1], data[e + 2], data[e + 3]
                    c4, c5, c6, c7 = data[e + 4], data[e + 5], data[e + 6], data[e + 7]
                    x1, x2, x3 = X[indices[e + 1], lo:hi], X[indices[e + 2], lo:hi], X[indices[e + 3], lo:hi]
                    x4, x5 = X[indices[e + 4], lo:hi], X[indices[e + 5], lo:hi]
                    x6, x7 = X[indices[e + 6], lo:hi], X[indices[e + 7], lo:hi]
                    for t in range(L):
                        y[t] = ((((((c0 * x0[t] + c1 * x1[t]) + c2 * x2[t]) + c3 * x3[t]) + c4 * x4[t])
                                 + c5 * x5[t]) + c6 * x6[t]) + c7 * x7[t]
                    e += 8
                elif b - e >= 4:
                    c1, c2, c3 = data[e + 1], data[e + 2], data[e + 3]
                    x1, x2, x3 = X[indices[e + 1], lo:hi], X[indices[e + 2], lo:hi], X[indices[e + 3], lo:hi]
                    for t in range(L):
                        y[t] = ((c0 * x0[t] + c1 * x1[t]) + c2 * x2[t]) + c3 * x3[t]
                    e += 4
                else:
                    for t in range(L):
                        y[t] = c0 * x0[t]
                    e += 1
                while b - e >= 8:
                    c0, c1, c2, c3 = data[e], data[e + 1], data[e + 2], data[e + 3]
                    c4, c5, c6, c7 = data[e + 4], data[e + 5], data[e + 6], data[e + 7]
                    x0, x1 = X[indices[e], lo:hi], X[indices[e + 1], lo:hi]
                    x2, x3 = X[indices[e + 2], lo:hi], X[indices[e + 3], lo:hi]
                    x4, x5 = X[indices[e + 4], lo:hi], X[indices[e + 5], lo:hi]
                    x6, x7 = X[indices[e + 6], lo:hi], X[indices[e + 7], lo:hi]
                    for t in range(L):
                        y[t] = (((((((y[t] + c0 * x0[t]) + c1 * x1[t]) + c2 * x2[t]) + c3 * x3[t]) + c4 * x4[t])
                                 + c5 * x5[t]) + c6 * x6[t]) + c7 * x7[t]
                    e += 8
                if b - e >= 4:
                    c0, c1, c2, c3 = data[e], data[e + 1], data[e + 2], data[e + 3]
                    x0, x1 = X[indices[e], lo:hi], X[indices[e + 1], lo:hi]
                    x2, x3 = X[indices[e + 2], lo:hi], X[indices[e + 3], lo:hi]
                    for t in range(L):
                        y[t] = (((y[t] + c0 * x0[t]) + c1 * x1[t]) + c2 * x2[t]) + c3 * x3[t]
                    e += 4
                if b - e >= 2:
                    c0, c1 = data[e], data[e + 1]
                    x0, x1 = X[indices[e], lo:hi], X[indices[e + 1], lo:hi]
                    for t in range(L):
                        y[t] = (y[t] + c0 * x0[t]) + c1 * x1[t]
                    e += 2
                if e < b:
                    c0 = data[e]
                    x0 = X[indices[e], lo:hi]
                    for t in range(L):
                        y[t] += c0 * x0[t]

    return kernel


def compiled_encode_kernel() -> Any:
    """The numba encode kernel (compiled, or loaded from numba's cache, on the first call), or None without
    numba."""
    global _ENCODE_KERNEL
    if _ENCODE_KERNEL is None:
        try:
            _ENCODE_KERNEL = _build_encode_kernel()
        except ImportError:  # pragma: no cover - numba comes with galois
            _ENCODE_KERNEL = False
    return _ENCODE_KERNEL or None


def csr_product(indptr: np.ndarray, indices: np.ndarray, data: np.ndarray, X: np.ndarray, Y: np.ndarray, *,
                use_numba: bool = True, threads: int | None = None, block: int | None = None) -> np.ndarray:
    """``Y = B X`` for ``B`` given by :func:`csr` (``n`` rows), in place; returns ``Y``.

    ``X`` (N, q) and ``Y`` (n, q) are C-contiguous; ``data``, ``X`` and ``Y`` share one float or complex dtype for
    the compiled path (used from :data:`_KERNEL_MIN_WORK` multiply-adds on), otherwise (object arrays, mixed
    dtypes, ``use_numba=False`` or no numba) each row is one :func:`combine_rows`. Both paths add row ``i``'s
    terms in the order of its non-zeros, in the data's dtype. ``threads`` (default: up to 2 for large products)
    split the columns between threads (the kernel releases the GIL); ``block`` is the number of columns per
    block (default: all rows of a block of ``X`` fit in the last-level cache).
    """
    kern = None
    if (use_numba and int(indptr[-1]) * Y.shape[1] >= _KERNEL_MIN_WORK and X.dtype in _KERNEL_DTYPES
            and X.dtype == Y.dtype == data.dtype and X.flags.c_contiguous and Y.flags.c_contiguous):
        kern = compiled_encode_kernel()
    if kern is None:
        from .decoders import single_threaded_blas

        with single_threaded_blas():
            for i in range(Y.shape[0]):
                lo, hi = indptr[i], indptr[i + 1]
                combine_rows(Y[i], data[lo:hi], X, indices[lo:hi])
        return Y
    n, q = Y.shape
    if block is None:
        block = int(max(256, min(16384, _BLOCK_BYTES // max(1, X.shape[0] * X.itemsize)))) // 256 * 256
    if threads is None:
        threads = min(2, os.cpu_count() or 1) if n * q >= _THREADS_MIN else 1
    threads = max(1, min(threads, -(-q // block)))
    ip = np.ascontiguousarray(indptr, dtype=np.int64)
    ix = np.ascontiguousarray(indices, dtype=np.int64)
    if threads == 1:
        kern(ip, ix, data, X, Y, 0, q, block)
        return Y
    nblocks = -(-q // block)
    per = -(-nblocks // threads) * block                          # whole blocks per thread
    bounds = [(lo, min(q, lo + per)) for lo in range(0, q, per)]
    workers = [threading.Thread(target=kern, args=(ip, ix, data, X, Y, lo, hi, block)) for lo, hi in bounds[1:]]
    for w in workers:
        w.start()
    try:
        kern(ip, ix, data, X, Y, bounds[0][0], bounds[0][1], block)
    finally:
        for w in workers:
            w.join()
    return Y
