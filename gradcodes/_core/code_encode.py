"""Encoding: the workers' messages ``Y = B G`` from partial gradients, for all workers or one.

Worker ``i`` sends ``y_i = sum_{j,u} B[i, j*m+u] g_j^(u)`` (Tandon et al. 2017, with the communication factor
``m`` of Ye & Abbe 2018). The cost is proportional to the non-zeros of ``B``; float32 stays float32.
"""

from __future__ import annotations

from collections.abc import Sequence
from fractions import Fraction
from typing import Any

import numpy as np

from .._base.aliases import Array, ArrayLike, MatrixLike
from .._base.arrays import array_io
from .._base.errors import GradcodesTypeError, GradcodesValueError
from .._base.validate import check_int, limits
from .apply import combine_rows, csr, csr_product
from .code_base import CodeBase
from .decoders import single_threaded_blas
from .fields import to_fraction

__all__ = ["EncodeMixin"]

#: Below this message length scipy's compiled sparse product beats the column-blocked kernel's set-up.
_SMALL_Q = 2048
#: the compiled (numba) encode kernel; False selects the numpy loop over the non-zeros (same sums; tested)
_USE_NUMBA = True


class EncodeMixin(CodeBase):
    """:meth:`encode` and :meth:`encode_worker` of :class:`gradcodes.LinearCode`."""

    def _sparse_B(self, like: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
        """CSR form of ``B`` in the dtype used with data ``like``; None when ``B`` is dense (more than half
        non-zero) and float, where one BLAS product is faster than a loop over the non-zeros.

        The rule reads the non-zeros, not the storage: a code stored sparse takes the dense product exactly when
        the same code stored dense does (and its dense form fits ``gradcodes.limits.entries``), so that the two
        give the same bits on one machine (the BLAS product and the sparse sum add in different orders).
        """
        key = f"csr:{like.dtype}"
        if key not in self._memo and self._csr is not None:
            indptr, indices, data = self._csr
            cells = self._n * self._k * self._m
            if like.dtype != object and len(data) > cells // 2 and cells <= limits.entries:
                self._memo[key] = None
            else:
                self._memo[key] = (indptr, indices, self._cast_entries(like, data))
        if key not in self._memo:
            Bm = self._matrix_for(like, self._B)
            nnz = int(np.count_nonzero(np.asarray(Bm != 0)))
            dense = like.dtype != object and nnz > Bm.size // 2
            self._memo[key] = None if dense else csr(Bm)
        return self._memo[key]

    def _out_buffer(self, out: Any, shape: tuple[int, ...], dtype: Any) -> np.ndarray:
        if out is None:
            return np.empty(shape, dtype=dtype)
        if not isinstance(out, np.ndarray):
            raise GradcodesTypeError(f"out must be a numpy array of shape {shape} and dtype {np.dtype(dtype)}, got "
                                     f"{type(out).__name__}")
        if out.shape != shape or out.dtype != dtype:
            raise GradcodesValueError(f"out must have shape {shape} and dtype {np.dtype(dtype)}, got shape {out.shape} "
                                      f"and dtype {out.dtype}")
        if not out.flags.c_contiguous or not out.flags.writeable:
            raise GradcodesValueError("out must be a writeable C-contiguous array")
        return out

    @array_io
    def encode(self, partials: MatrixLike, *, out: Array | None = None) -> Array:
        """Worker messages ``Y`` (n x q) from partial gradients (k x length), ``q = ceil(length/m)``.

        Each partial gradient is split into ``m`` contiguous blocks of length ``q`` (zero padded when ``m`` does not
        divide ``length``); worker ``i`` sends ``y_i = sum_{j,u} B[i, j*m+u] g_j^(u)``. The cost is proportional to the
        non-zeros of ``B``, ``O(nnz(B) q)``: each message adds the ``load`` blocks its worker stores, in a
        compiled kernel that walks the columns in cache-sized blocks so that the partials are read from memory
        about once and the messages written once (``docs/numerics.md``; compiled on the first
        large encode, never at import); a dense ``B`` uses one matrix product. float32 stays float32 (complex64
        for complex codes).

        Parameters
        ----------
        partials : ndarray, shape (k, length)
            Partial gradient ``g_j`` in row ``j``.
        out : ndarray, shape (n, q), optional
            Preallocated C-contiguous buffer of the result dtype to write the messages into.

        Returns
        -------
        Y : ndarray, shape (n, q)

        Raises
        ------
        GradcodesValueError
            If ``partials`` is not 2-D, has not ``k`` rows or has no column, if ``out`` has not the shape
            ``(n, q)`` and the result dtype or is not a writeable C-contiguous array, or if the code's entries
            overflow the data's precision (e.g. float32).
        GradcodesTypeError
            If ``partials`` is not an array, or has a dtype the code cannot take (not float, complex or integer;
            Fractions with a code not over the rationals; floating-point data with a code over GF(p)), or if
            ``out`` is not a numpy array.

        See Also
        --------
        encode_worker : one worker's message from its own partial gradients only.

        Examples
        --------
        >>> import numpy as np, gradcodes as gc
        >>> code = gc.cyclic_repetition(5, 2, rng=0)
        >>> G = np.arange(10.0).reshape(5, 2)                 # five partial gradients of length 2
        >>> Y = code.encode(G)
        >>> Y.shape, code.decode([0, 2, 4], Y[[0, 2, 4]]).tolist()
        ((5, 2), [20.0, 25.0])
        """
        G = self._check_data("partials", partials)
        if G.shape[0] != self._k:
            raise GradcodesValueError(f"partials must have k={self._k} rows (one per partition), got shape {G.shape}")
        p = G.shape[1]
        if p == 0:
            raise GradcodesValueError("partials must have at least one coordinate (length >= 1)")
        m = self._m
        q = -(-p // m)
        if m > 1:
            if q * m != p:
                pad = np.zeros((self._k, q * m - p), dtype=G.dtype)
                if G.dtype == object:
                    pad.fill(to_fraction(0))
                G = np.concatenate([G, pad], axis=1)
            G = np.ascontiguousarray(G).reshape(self._k * m, q)
        dtype = self._result_dtype(G)
        Y = self._out_buffer(out, (self._n, q), dtype)
        plan = self._sparse_B(G)
        if plan is None:
            np.matmul(self._matrix_for(G, self._B), G, out=Y)
            return Y
        indptr, indices, data = plan
        if G.dtype != object and q < _SMALL_Q:
            import scipy.sparse

            Bs = scipy.sparse.csr_matrix((data, indices, indptr), shape=(self._n, self._k * m))
            Y[...] = Bs @ G
            return Y
        if G.dtype != object:
            G = np.ascontiguousarray(G)
        return csr_product(indptr, indices, data, G, Y, use_numba=_USE_NUMBA)

    @array_io
    def encode_worker(self, i: int, partials: MatrixLike | Sequence[ArrayLike], *, length: int | None = None,
                      out: Array | None = None) -> Array:
        """Worker ``i``'s message from its own partial gradients only, at a cost proportional to its load.

        The message is ``y_i = sum_{j in supp(i)} sum_u B[i, j*m+u] g_j^(u)`` where ``supp(i)`` =
        ``code.supports[i]`` (ascending partition indices) and ``g_j^(u)`` is block ``u`` of ``g_j`` (``m`` blocks
        of length ``q = ceil(length/m)``, the last one zero padded). It equals row ``i`` of :meth:`encode` of the full
        (k, length) matrix of partials, without forming it: a distributed worker calls this with the gradients of the
        partitions it stores.

        Parameters
        ----------
        i : int
            The worker, ``0 <= i < n``.
        partials : ndarray of shape (load_i, length), or a sequence of ``load_i`` 1-D arrays of one length
            The partial gradients of the partitions ``code.supports[i]``, in that order.
        length : int, optional
            The gradient length (default: the length of the partials); checked against them.
        out : ndarray, shape (q,), optional
            Preallocated C-contiguous buffer of the result dtype (the partials' dtype; complex of the same
            precision for complex codes) to write the message into, e.g. an MPI send buffer.

        Returns
        -------
        y : ndarray, shape (ceil(length/m),)
            In the partials' dtype (float32 stays float32; Fractions stay exact).

        Raises
        ------
        GradcodesValueError
            If ``i`` is not in ``[0, n)``, the partials are not one per partition of ``code.supports[i]`` of one
            length, ``length`` does not match them (or is missing for a worker that stores no partition), or
            ``out`` has not the shape ``(q,)`` and the result dtype or is not a writeable C-contiguous array.
        GradcodesTypeError
            If ``i`` is not an integer, ``partials`` is neither a 2-D array nor a sequence of 1-D arrays or has
            a dtype the code cannot take (as in :meth:`encode`), or ``out`` is not a numpy array.

        Examples
        --------
        >>> import numpy as np, gradcodes as gc
        >>> code = gc.cyclic_repetition(6, 2, rng=0)
        >>> G = np.random.default_rng(1).standard_normal((6, 5)).astype(np.float32)
        >>> y2 = code.encode_worker(2, G[code.supports[2]])
        >>> y2.dtype, bool(np.allclose(y2, code.encode(G)[2], atol=1e-5))
        (dtype('float32'), True)
        """
        i = check_int("i", i, 0, self._n - 1)
        support = self._support_of(i)
        rows, p, like = self._worker_partials(partials, support.size)
        if p is None:
            if length is None:
                raise GradcodesValueError(
                    f"worker {i} stores no partition: pass its partials as a (0, length) array or give "
                    f"length= to get its (zero) message")
            p = check_int("length", length, 1)
        elif length is not None and check_int("length", length, 1) != p:
            raise GradcodesValueError(f"length={length} does not match the partials' length {p}")
        m = self._m
        q = -(-p // m)
        dtype = self._result_dtype(like)
        y = self._out_buffer(out, (q,), dtype)
        coef = self._row_of(i, like).reshape(self._k, m)[support]   # (load_i, m)
        if m == 1:
            nz = np.flatnonzero(coef[:, 0] != 0)
            with single_threaded_blas():
                combine_rows(y, coef[nz, 0], rows, nz)
            return y
        y[...] = Fraction(0) if np.dtype(dtype).kind == "O" else 0
        with single_threaded_blas():
            for u in range(m):
                L = max(0, min(q, p - u * q))
                if L == 0:
                    continue
                nz = np.flatnonzero(coef[:, u] != 0)
                seg = [r[u * q:u * q + L] for r in rows]
                combine_rows(y[:L], coef[nz, u], seg, nz, accumulate=True)
        return y

    def _cast_entries(self, like: np.ndarray, values: np.ndarray) -> np.ndarray:
        """Stored non-zeros cast to the data's precision, as :meth:`_matrix_for` casts a dense ``B``."""
        if like.dtype == object:
            return np.array([to_fraction(float(v)) if self._field == "real" else v for v in values], dtype=object)
        target = like.dtype
        if values.dtype.kind == "c" and target.kind == "f":
            target = np.result_type(target, np.complex64)
        if values.dtype == target:
            return values
        with np.errstate(over="ignore"):
            out = values.astype(target)
        if not np.all(np.isfinite(out)):
            raise GradcodesValueError(f"the code's matrix (max |entry| = {np.abs(values).max():.3g}) does not fit "
                                      f"{target}: use float64 data with this code, or a better-scaled code")
        return out

    def _row_of(self, i: int, like: np.ndarray) -> np.ndarray:
        """Row ``i`` of ``B`` (length k*m) in the data's precision; from the stored non-zeros for sparse codes."""
        if self._csr is None:
            return np.asarray(self._matrix_for(like, self._B)[i])
        indptr, indices, data = self._csr
        vals = self._cast_entries(like, data[indptr[i]:indptr[i + 1]])
        row = np.zeros(self._k * self._m, dtype=vals.dtype)
        row[indices[indptr[i]:indptr[i + 1]]] = vals
        return row

    def _support_of(self, i: int) -> np.ndarray:
        key = "supports"
        if key not in self._memo:
            self._memo[key] = self.supports
        return self._memo[key][i]

    def _worker_partials(self, partials: Any, count: int) -> tuple[list[np.ndarray], int | None, np.ndarray]:
        """``(rows, p, like)``: the rows of ``partials`` as 1-D arrays of one length and dtype (checked like
        :meth:`encode`'s), their length (None if unknown) and a 1 x 1 array of their dtype."""
        name = "partials"
        if isinstance(partials, np.ndarray) and partials.ndim == 2:
            rows = list(partials)
            shape_p: int | None = partials.shape[1]
            like = self._check_data(name, np.zeros((1, 1), dtype=partials.dtype))
        elif isinstance(partials, np.ndarray) and partials.ndim == 1 and count == 1:
            rows, shape_p, like = [partials], partials.shape[0], None
        elif isinstance(partials, (list, tuple)):
            rows, shape_p, like = list(partials), None, None
        else:
            raise GradcodesTypeError(f"{name} must be a (load, length) array or a sequence of 1-D arrays, got "
                                     f"{type(partials).__name__}")
        if len(rows) != count:
            raise GradcodesValueError(
                f"{name} must hold the worker's {count} partial gradients (one per stored partition, "
                f"in the order of code.supports[i]), got {len(rows)}")
        out = []
        for r in rows:
            a = np.asarray(r) if not isinstance(r, np.ndarray) else r
            if a.ndim != 1:
                raise GradcodesValueError(f"each of {name} must be a 1-D array, got shape {a.shape}")
            out.append(self._check_data(name, a.reshape(1, -1))[0])
        if out and len({a.shape[0] for a in out}) != 1:
            raise GradcodesValueError(f"{name} must all have the same length, got {sorted({a.shape[0] for a in out})}")
        if out and len({a.dtype for a in out}) != 1:
            raise GradcodesValueError(f"{name} must all have the same dtype, got {sorted({str(a.dtype) for a in out})}")
        if out:
            shape_p = out[0].shape[0]
            like = out[0][:1].reshape(1, 1) if shape_p else None
        if shape_p == 0:
            raise GradcodesValueError(f"{name} must have at least one coordinate (length >= 1)")
        if like is None:
            like = np.zeros((1, 1))
        return out, shape_p, like

