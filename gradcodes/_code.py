"""The core types: :class:`LinearCode` (shared base), :class:`GradientCode` (exact) and :class:`ApproximateCode`.

Notation (Tandon et al.): ``n`` workers, ``k`` partitions, ``m`` communication factor, ``s`` stragglers. The encoding
matrix ``B`` is ``n x (k*m)``; column ``j*m + u`` carries block ``u`` of partial gradient ``g_j``. Worker ``i``
sends ``y_i = sum_{j,u} B[i, j*m+u] g_j^(u)`` (a vector of length ``ceil(p/m)``). For responders ``F`` a decoding
matrix ``A_F`` (m x n, zero outside ``F``) with ``A_F B = E = 1_k^T (x) I_m`` recovers block ``u`` of the sum
``g = sum_j g_j`` as row ``u`` of ``A_F Y``.
"""

from __future__ import annotations

import numbers
from collections import OrderedDict
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from fractions import Fraction
from typing import TYPE_CHECKING, Any

import numpy as np
import scipy.sparse

from ._apply import apply_rows, combine_rows, csr
from ._decoders import Decoder, ExactDecoder, LeastSquaresDecoder, NullSpaceDecoder, single_threaded_blas
from ._fields import as_matrix, is_exact_field, to_fraction
from ._numerics import (
    DEFAULT_RTOL,
    accepts,
    cancellation,
    decode_terms,
    error_estimate,
    exact_residual_ok,
    residuals,
    target_matrix,
    tolerance,
    underflow_error,
    unit_roundoff,
)
from ._validate import check_choice, check_int, check_real, check_responders

if TYPE_CHECKING:
    from ._families.binary import Recommendation

__all__ = ["LinearCode", "GradientCode", "ApproximateCode", "DecodeInfo", "DecodingError"]


class DecodingError(ValueError):
    """A responder set from which the code cannot recover the gradient (to the tolerance)."""

    def __init__(self, message: str, responders: np.ndarray | None = None, residual: float | None = None):
        super().__init__(message)
        self.responders = None if responders is None else [int(r) for r in responders]
        self.residual = residual


@dataclass(frozen=True)
class DecodeInfo:
    """What a decode reports about its own accuracy.

    Attributes
    ----------
    responders : tuple of int
        The responders used.
    decoder : str
        The decoder's name.
    residual : float
        ``||A_F B - E||_inf`` (0 for exact decoders that succeeded).
    cancellation : float
        ``max_u sum_i |A_F[u, i]| ||B_i||_1 / k`` (>= 1; 1 means no cancellation).
    error_estimate : float
        Predicted relative error of the decoded sum: ``u * cancellation + residual`` with ``u`` the unit roundoff
        of the messages' dtype (0 for exact arithmetic).
    exact : bool
        True when the decode ran in exact arithmetic.
    """

    responders: tuple[int, ...]
    decoder: str
    residual: float
    cancellation: float
    error_estimate: float
    exact: bool


_FLOAT_KINDS = "fc"
#: Below this message length a compiled sparse product beats a loop over the non-zeros of ``B``.
_SMALL_Q = 2048


class LinearCode:
    """A linear code for distributed gradient computation: the shared base of every code type.

    Parameters
    ----------
    B : array_like, shape (n, k*m)
        Encoding matrix, rows = workers. Floats give the ``"real"`` field, complex numbers ``"complex"``,
        :class:`fractions.Fraction` or sympy Rationals ``"rational"`` (exact), a galois array ``"GF(p)"`` (exact).
    m : int, default 1
        Communication factor: each message has length ``ceil(p/m)``; ``B`` has ``k*m`` columns.
    field : {"real", "complex", "rational"}, optional
        Force a field (for example ``"rational"`` for an integer matrix); inferred from ``B`` by default.
    name : str, optional
        A label shown in reports (default: the family, or ``"custom"``).
    family : str, optional
        The constructor that built the code (used by :func:`gradcodes.save` / :func:`gradcodes.load`).
    params : mapping, optional
        The constructor's parameters (JSON-serialisable), kept for reports and files.
    decoders : iterable of Decoder, optional
        Family decoders added to the generic ones.
    default_decoder : str, optional
        Name of the decoder used when none is given.
    cache_size : int, default 256
        Number of decoding matrices kept (least recently used first out); 0 disables the cache.
    field_builder : callable, optional
        ``field_builder(field) -> code``: the same construction over another field (e.g. GF(p)); used by
        ``verify(code, field=...)``.
    """

    def __init__(self, B: Any, *, m: int = 1, field: str | None = None, name: str | None = None,
                 family: str | None = None, params: Mapping[str, Any] | None = None,
                 decoders: Iterable[Decoder] | None = None, default_decoder: str | None = None,
                 cache_size: int = 256, field_builder: Callable[[Any], LinearCode] | None = None) -> None:
        mat, fld = as_matrix(B, field)
        self._m = check_int("m", m, 1)
        n, cols = mat.shape
        if cols % self._m:
            raise ValueError(f"B must have k*m columns; got {cols} columns, not a multiple of m={self._m}")
        self._B = mat
        if isinstance(self._B, np.ndarray):
            self._B.flags.writeable = False
        self._field = fld
        self._n = n
        self._k = cols // self._m
        self.family = family or "custom"
        self.name = name or self.family
        self.params = dict(params or {})
        self._cache_size = check_int("cache_size", cache_size, 0)
        self._cache: OrderedDict[tuple[str, tuple[int, ...]], Any] = OrderedDict()
        self._memo: dict[str, Any] = {}
        self._field_builder = field_builder
        self._target = target_matrix(self._k, self._m, self._B if self.exact else None)
        if not self.exact and self._field == "complex":
            self._target = self._target.astype(np.complex128)
        self.decoders: dict[str, Decoder] = {}
        generic: list[Decoder] = [ExactDecoder()] if self.exact else [NullSpaceDecoder(), LeastSquaresDecoder()]
        for dec in [*generic, *(decoders or [])]:
            if not isinstance(dec, Decoder):
                raise TypeError(f"decoders must be Decoder instances, got {dec!r}")
            self.decoders[dec.name] = dec
        default = default_decoder or generic[0].name
        if default not in self.decoders:
            raise ValueError(f"default_decoder must be one of {sorted(self.decoders)}, got {default!r}")
        self.default_decoder = default

    # ------------------------------------------------------------------ properties
    @property
    def B(self) -> Any:
        """The encoding matrix (n x k*m), read-only."""
        return self._B

    @property
    def n(self) -> int:
        """Number of workers (rows of ``B``)."""
        return self._n

    @property
    def k(self) -> int:
        """Number of data partitions."""
        return self._k

    @property
    def m(self) -> int:
        """Communication factor: messages are ``1/m`` of a gradient."""
        return self._m

    @property
    def field(self) -> str:
        """``"real"``, ``"complex"``, ``"rational"`` or ``"GF(p)"``."""
        return self._field

    @property
    def exact(self) -> bool:
        """True if the code computes in exact arithmetic (rational or finite field)."""
        return is_exact_field(self._field)

    @property
    def target(self) -> Any:
        """``E = 1_k^T (x) I_m`` (m x k*m), in the code's field."""
        return self._target

    @property
    def support_matrix(self) -> np.ndarray:
        """Boolean (n, k): worker ``i`` stores partition ``j``."""
        nz: np.ndarray = np.asarray(self._B != 0)
        return np.asarray(nz.reshape(self._n, self._k, self._m).any(axis=2))

    @property
    def supports(self) -> list[np.ndarray]:
        """The partitions stored by each worker."""
        return [np.flatnonzero(row) for row in self.support_matrix]

    @property
    def loads(self) -> np.ndarray:
        """Partitions stored by each worker (length n)."""
        return self.support_matrix.sum(axis=1)

    @property
    def load(self) -> int:
        """Computation load: the largest number of partitions a worker stores."""
        return int(self.loads.max())

    @property
    def replication(self) -> np.ndarray:
        """Number of workers storing each partition (length k)."""
        return self.support_matrix.sum(axis=0)

    def float_B(self, dtype: Any = None) -> np.ndarray:
        """``B`` as a float/complex ndarray of ``dtype`` (exact fields are rounded; GF(p) has no float form)."""
        if self._field.startswith("GF("):
            raise TypeError(f"a code over {self._field} has no floating-point form")
        key = f"float:{np.dtype(dtype) if dtype is not None else 'native'}"
        if key not in self._memo:
            if self._field == "rational":
                base = np.vectorize(float, otypes=[np.float64])(self._B)
            else:
                base = self._B
            if dtype is not None:
                dt = np.dtype(dtype)
                if base.dtype.kind == "c" and dt.kind == "f":
                    dt = np.result_type(dt, np.complex64)
                base = base.astype(dt)
            base = np.ascontiguousarray(base)
            base.flags.writeable = False
            self._memo[key] = base
        return self._memo[key]

    #: Set by :func:`gradcodes.recommend` on the code it returns: the reasoning (candidates, loads, errors).
    recommendation: Recommendation | None = None

    # ------------------------------------------------------------------ pickling
    def __getstate__(self) -> dict[str, Any]:
        """Pickle the construction, not the caches (decoding matrices are recomputed on demand)."""
        state = self.__dict__.copy()
        state["_cache"] = OrderedDict()
        state["_memo"] = {}
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        for arr in (self._B, self._target):
            if isinstance(arr, np.ndarray):
                arr.flags.writeable = False

    def in_field(self, field: Any) -> LinearCode:
        """The same construction over another field (e.g. ``galois.GF(p)``), when the family supports it."""
        if self._field_builder is None:
            raise ValueError(f"the {self.family!r} code cannot be rebuilt over another field "
                             f"(its constructor provides no field_builder)")
        return self._field_builder(field)

    def __repr__(self) -> str:
        extra = f", s={self.s}" if hasattr(self, "s") else ""
        return (f"{type(self).__name__}(name={self.name!r}, n={self.n}{extra}, k={self.k}, m={self.m}, "
                f"field={self.field!r}, load={self.load})")

    # ------------------------------------------------------------------ decoding matrices
    def _min_responders(self) -> int:
        return 0

    def _mask(self, responders: Any) -> tuple[np.ndarray, np.ndarray]:
        F = check_responders(responders, self._n, min_size=self._min_responders())
        mask = np.zeros(self._n, dtype=bool)
        mask[F] = True
        return F, mask

    def _decoder(self, decoder: str | Decoder | None) -> Decoder:
        if decoder is None:
            return self.decoders[self.default_decoder]
        if isinstance(decoder, Decoder):
            return decoder
        if not isinstance(decoder, str) or decoder not in self.decoders:
            raise ValueError(f"decoder must be one of {sorted(self.decoders)}, got {decoder!r}")
        return self.decoders[decoder]

    def decoding_matrices(self, mask: np.ndarray, decoder: str | Decoder | None = None) -> Any:
        """Batched decoding matrices (b, m, n) for responder masks (b, n); no validation of the result."""
        mask = np.asarray(mask, dtype=bool)
        if mask.ndim != 2 or mask.shape[1] != self._n:
            raise ValueError(f"mask must have shape (b, {self._n}), got {mask.shape}")
        return self._decoder(decoder).matrices(self, mask)

    def _check_matrix(self, F: np.ndarray, A: Any) -> tuple[float, float]:
        """(residual, cancellation) of one decoding matrix; subclasses decide what to do with them."""
        if self.exact:
            ok = exact_residual_ok(A[None], self._B, self._target)[0]
            canc = 1.0
            if self._field == "rational":
                Af = np.vectorize(float, otypes=[np.float64])(A)
                canc = float(cancellation(Af[None], self.float_B(), self._k)[0])
            return (0.0 if ok else float("inf")), canc
        res = float(residuals(A[None], self._B, self._target)[0])
        canc = float(cancellation(A[None], self._B, self._k)[0])
        return res, canc

    def _raw_decoding_matrix(self, F: np.ndarray, mask: np.ndarray, dec: Decoder) -> tuple[Any, float, float]:
        key = (dec.name, tuple(int(i) for i in F))
        if key in self._cache:
            self._cache.move_to_end(key)
            return self._cache[key]
        A = dec.matrices(self, mask[None])[0]
        res, canc = self._check_matrix(F, A)
        entry = (A, res, canc)
        if self._cache_size:
            if isinstance(A, np.ndarray) and A.dtype != object:
                A.flags.writeable = False
            self._cache[key] = entry
            while len(self._cache) > self._cache_size:
                self._cache.popitem(last=False)
        return entry

    def decoding_matrix(self, responders: Any, decoder: str | Decoder | None = None) -> Any:
        """The decoding matrix ``A_F`` (m x n, zero outside the responders).

        Parameters
        ----------
        responders : iterable of int or bool mask of length n
            The workers whose messages arrived.
        decoder : str or Decoder, optional
            A key of :attr:`decoders` (default :attr:`default_decoder`).
        """
        F, mask = self._mask(responders)
        A, res, canc = self._raw_decoding_matrix(F, mask, self._decoder(decoder))
        self._accept(F, A, res, canc)
        return A.copy() if isinstance(A, np.ndarray) else A

    def _accept(self, F: np.ndarray, A: Any, res: float, canc: float, *, dtype: Any = np.float64,
                terms: int = 1) -> None:
        """Hook: GradientCode raises when the decode misses its tolerance in ``dtype``; approximate codes accept
        anything."""

    # ------------------------------------------------------------------ encode / decode
    def _check_data(self, name: str, X: Any) -> np.ndarray:
        if isinstance(X, (list, tuple)):
            X = np.asarray(X, dtype=object if self.exact else None)
        if not isinstance(X, np.ndarray):
            raise TypeError(f"{name} must be a 2-D numpy array, got {type(X).__name__}")
        if X.ndim != 2:
            raise ValueError(f"{name} must be 2-D, got shape {X.shape}")
        kind = X.dtype.kind
        if kind == "O":
            if self._field != "rational":
                raise TypeError(f"{name} has dtype object; exact (Fraction) data needs a code over the "
                                f"rational field, this code is over {self._field}")
            return np.vectorize(lambda v: to_fraction(v, name), otypes=[object])(X)
        if kind in "iu":
            if self._field == "rational":
                return np.vectorize(lambda v: to_fraction(int(v), name), otypes=[object])(X)
            return X.astype(np.float64)
        if kind not in _FLOAT_KINDS:
            raise TypeError(f"{name} must have a float or complex dtype (float32, float64, complex64, "
                            f"complex128), got {X.dtype}")
        if self._field.startswith("GF("):
            raise TypeError(f"{name}: a code over {self._field} cannot encode or decode floating-point data")
        return X

    def _matrix_for(self, X: np.ndarray, exact_matrix: Any) -> Any:
        """Cast a matrix (B or A) to the data's precision: float32 data stays float32 (complex64 for complex codes)."""
        if X.dtype == object:
            return exact_matrix
        if exact_matrix is self._B:
            M = self.float_B()
        elif self._field == "rational":
            M = np.vectorize(float, otypes=[np.float64])(exact_matrix)
        else:
            M = exact_matrix
        target = X.dtype
        if M.dtype.kind == "c" and target.kind == "f":
            target = np.result_type(target, np.complex64)
        if M.dtype == target:
            return M
        with np.errstate(over="ignore"):
            cast = M.astype(target)
        if not np.all(np.isfinite(cast)):
            raise ValueError(f"the code's matrix (max |entry| = {np.abs(M).max():.3g}) does not fit {target}: "
                             f"use float64 data with this code, or a better-scaled code")
        return cast

    def _sparse_B(self, like: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
        """CSR form of ``B`` in the dtype used with data ``like``; None when ``B`` is dense (more than half
        non-zero) and float, where one BLAS product is faster than a loop over the non-zeros."""
        key = f"csr:{like.dtype}"
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
            raise TypeError(f"out must be a numpy array of shape {shape} and dtype {np.dtype(dtype)}, got "
                            f"{type(out).__name__}")
        if out.shape != shape or out.dtype != dtype:
            raise ValueError(f"out must have shape {shape} and dtype {np.dtype(dtype)}, got shape {out.shape} "
                             f"and dtype {out.dtype}")
        if not out.flags.c_contiguous or not out.flags.writeable:
            raise ValueError("out must be a writeable C-contiguous array")
        return out

    def _result_dtype(self, X: np.ndarray) -> Any:
        if X.dtype == object:
            return np.dtype(object)
        Bf = self.float_B()
        return np.result_type(X.dtype, np.complex64) if Bf.dtype.kind == "c" else X.dtype

    def encode(self, partials: Any, *, out: np.ndarray | None = None) -> np.ndarray:
        """Worker messages ``Y`` (n x q) from partial gradients (k x p), ``q = ceil(p/m)``.

        Each partial gradient is split into ``m`` contiguous blocks of length ``q`` (zero padded when ``m`` does not
        divide ``p``); worker ``i`` sends ``y_i = sum_{j,u} B[i, j*m+u] g_j^(u)``. The cost is proportional to the
        non-zeros of ``B``, ``O(nnz(B) q)``: each message adds the ``load`` blocks its worker stores (one vectorised
        row operation per non-zero, no loop over coordinates); a dense ``B`` uses one matrix product. float32
        stays float32 (complex64 for complex codes).

        Parameters
        ----------
        partials : ndarray, shape (k, p)
            Partial gradient ``g_j`` in row ``j``.
        out : ndarray, shape (n, q), optional
            Preallocated C-contiguous buffer of the result dtype to write the messages into.

        Returns
        -------
        Y : ndarray, shape (n, q)

        See Also
        --------
        encode_worker : one worker's message from its own partial gradients only.
        """
        G = self._check_data("partials", partials)
        if G.shape[0] != self._k:
            raise ValueError(f"partials must have k={self._k} rows (one per partition), got shape {G.shape}")
        p = G.shape[1]
        if p == 0:
            raise ValueError("partials must have at least one coordinate (p >= 1)")
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
            Bs = scipy.sparse.csr_matrix((data, indices, indptr), shape=(self._n, self._k * m))
            Y[...] = Bs @ G
            return Y
        if G.dtype != object:
            G = np.ascontiguousarray(G)
        with single_threaded_blas():
            for i in range(self._n):
                lo, hi = indptr[i], indptr[i + 1]
                combine_rows(Y[i], data[lo:hi], G, indices[lo:hi])
        return Y

    def encode_worker(self, i: int, partials: Any, *, length: int | None = None,
                      out: np.ndarray | None = None) -> np.ndarray:
        """Worker ``i``'s message from its own partial gradients only, at a cost proportional to its load.

        The message is ``y_i = sum_{j in supp(i)} sum_u B[i, j*m+u] g_j^(u)`` where ``supp(i)`` =
        ``code.supports[i]`` (ascending partition indices) and ``g_j^(u)`` is block ``u`` of ``g_j`` (``m`` blocks
        of length ``q = ceil(p/m)``, the last one zero padded). It equals row ``i`` of :meth:`encode` of the full
        (k, p) matrix of partials, without forming it: a distributed worker calls this with the gradients of the
        partitions it stores.

        Parameters
        ----------
        i : int
            The worker, ``0 <= i < n``.
        partials : ndarray of shape (load_i, p), or a sequence of ``load_i`` 1-D arrays of length p
            The partial gradients of the partitions ``code.supports[i]``, in that order.
        length : int, optional
            The gradient length ``p`` (default: the length of the partials); checked against them.
        out : ndarray, shape (q,), optional
            Preallocated C-contiguous buffer of the result dtype (the partials' dtype; complex of the same
            precision for complex codes) to write the message into, e.g. an MPI send buffer.

        Returns
        -------
        y : ndarray, shape (ceil(p/m),)
            In the partials' dtype (float32 stays float32; Fractions stay exact).

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
                raise ValueError(f"worker {i} stores no partition: pass its partials as a (0, p) array or give "
                                 f"length=p to get its (zero) message")
            p = check_int("length", length, 1)
        elif length is not None and check_int("length", length, 1) != p:
            raise ValueError(f"length={length} does not match the partials' length {p}")
        m = self._m
        q = -(-p // m)
        dtype = self._result_dtype(like)
        y = self._out_buffer(out, (q,), dtype)
        coef = self._matrix_for(like, self._B)[i].reshape(self._k, m)[support]   # (load_i, m)
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
            raise TypeError(f"{name} must be a (load, p) array or a sequence of 1-D arrays, got "
                            f"{type(partials).__name__}")
        if len(rows) != count:
            raise ValueError(f"{name} must hold the worker's {count} partial gradients (one per stored partition, "
                             f"in the order of code.supports[i]), got {len(rows)}")
        out = []
        for r in rows:
            a = np.asarray(r) if not isinstance(r, np.ndarray) else r
            if a.ndim != 1:
                raise ValueError(f"each of {name} must be a 1-D array, got shape {a.shape}")
            out.append(self._check_data(name, a.reshape(1, -1))[0])
        if out and len({a.shape[0] for a in out}) != 1:
            raise ValueError(f"{name} must all have the same length, got {sorted({a.shape[0] for a in out})}")
        if out and len({a.dtype for a in out}) != 1:
            raise ValueError(f"{name} must all have the same dtype, got {sorted({str(a.dtype) for a in out})}")
        if out:
            shape_p = out[0].shape[0]
            like = out[0][:1].reshape(1, 1) if shape_p else None
        if shape_p == 0:
            raise ValueError(f"{name} must have at least one coordinate (p >= 1)")
        if like is None:
            like = np.zeros((1, 1))
        return out, shape_p, like

    def _responder_order(self, responders: Any) -> tuple[np.ndarray | None, bool]:
        """``(order, ordered)``: the responders as given (int64, in their order; None for a boolean mask) and
        whether that order is meaningful (False for sets). Masks given as lists of bools become boolean arrays
        in :meth:`_mask`; a 0/1 *integer* mask is refused rather than read as worker indices."""
        n = self._n
        if isinstance(responders, np.ndarray):
            if responders.dtype == bool:
                return None, True
            if responders.ndim != 1:
                raise ValueError(f"responders must be a 1-D sequence of worker indices or a boolean mask of shape "
                                 f"({n},), got an array of shape {responders.shape}")
            raw = responders.tolist()
        elif isinstance(responders, (set, frozenset)):
            return None, False
        elif isinstance(responders, (str, bytes)) or not hasattr(responders, "__iter__"):
            raise TypeError(f"responders must be a sequence of worker indices in [0, {n - 1}] or a boolean mask of "
                            f"length {n}, got {type(responders).__name__}")
        else:
            raw = list(responders)
        if raw and all(isinstance(r, (bool, np.bool_)) for r in raw):
            return None, True
        if n >= 3 and len(raw) == n and all(isinstance(r, numbers.Integral) and not isinstance(r, bool)
                                            and r in (0, 1) for r in raw):
            raise TypeError(f"responders looks like a 0/1 mask of length n={n}, which is ambiguous with worker "
                            f"indices: pass a boolean array (np.asarray(mask, dtype=bool)) or the indices of the "
                            f"responding workers")
        check_responders(raw, n, min_size=0)
        return np.asarray([int(r) for r in raw], dtype=np.int64), True

    def _responders(self, responders: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray | None, bool]:
        """``(F, mask, order, ordered)`` for :meth:`decode`: validated, sorted ``F`` and mask, plus the order."""
        order, ordered = self._responder_order(responders)
        if order is None and not isinstance(responders, np.ndarray):
            if isinstance(responders, (set, frozenset)):
                F, mask = self._mask(sorted(responders) if all(isinstance(r, numbers.Integral) for r in responders)
                                     else responders)
                return F, mask, None, False
            raw = list(responders)
            if len(raw) != self._n:
                raise ValueError(f"responders given as a boolean mask must have length n={self._n}, got {len(raw)}")
            responders = np.asarray(raw, dtype=bool)
        F, mask = self._mask(responders if order is None else order)
        return F, mask, order, ordered

    def _message_rows(self, F: np.ndarray, order: np.ndarray | None, ordered: bool, nrows: int,
                      rows: str) -> np.ndarray | None:
        """Row of ``messages`` holding each worker's message (length n, -1 = absent), or None for the full buffer.

        The contract: with ``rows="auto"``, messages with one row per responder are the responders' rows in the
        order of ``responders``, and n rows are the full receive buffer; when both hold (all n respond) the two
        agree if ``responders`` is a mask or sorted, and otherwise the call is refused as ambiguous.
        ``rows="full"`` or ``"compact"`` states the layout explicitly.
        """
        n, r = self._n, F.size
        rows = check_choice("rows", rows, ("auto", "full", "compact"))
        if rows == "auto":
            if nrows == r == n and order is not None and np.any(np.diff(order) < 0):
                raise ValueError(f"messages has n={n} rows and responders lists all {n} workers in a non-sorted "
                                 f"order, so the rows could be the full buffer (row i = worker i) or the responders' "
                                 f"rows in the order given: pass rows='full' or rows='compact'")
            if nrows == r:
                rows = "compact"
            elif nrows == n:
                rows = "full"
            else:
                raise ValueError(f"messages must have n={n} rows (full buffer) or one row per responder ({r}) in the "
                                 f"order of responders, got {nrows} rows")
        if rows == "full":
            if nrows != n:
                raise ValueError(f"messages with rows='full' must have n={n} rows, got {nrows}")
            return None
        if nrows != r:
            raise ValueError(f"messages with rows='compact' must have one row per responder ({r}), got {nrows}")
        seq = F if order is None else order
        if not ordered and r != n and not np.array_equal(seq, np.arange(n)[:r]):
            raise ValueError("responders is a set, which has no order: compact message rows need responders as a "
                             "sequence (row r is the message of worker responders[r]), or pass the full buffer")
        where = np.full(n, -1, dtype=np.int64)
        where[seq] = np.arange(r)
        return where

    def decode(self, responders: Any, messages: Any, *, decoder: str | Decoder | None = None,
               length: int | None = None, return_info: bool = False, rows: str = "auto") -> Any:
        """The decoded sum of the partial gradients from the responders' messages.

        Only the messages whose decoding coefficient is non-zero are read (a 0/1 decoder such as fractional
        repetition's reads one worker per group), without a gathered copy, in the messages' dtype; the cost is
        one streaming read of those rows (see :mod:`gradcodes._apply`). The decode is accepted only if its
        predicted error in the messages' dtype is within the code's tolerance for that dtype (see
        :func:`gradcodes._numerics.accepts`); otherwise it raises :class:`DecodingError` and names the cause.

        Parameters
        ----------
        responders : sequence of int, or boolean mask of length n
            The workers whose messages arrived, as distinct worker indices in any order, or a boolean array
            (or list of bools) with True for each responder. A 0/1 *integer* sequence of length n is refused as
            ambiguous.
        messages : ndarray, shape (n, q) or (len(responders), q)
            Either the full receive buffer (row ``i`` = worker ``i``; straggler rows are never read, so they may
            hold garbage) or the responders' rows in the order of ``responders`` (row ``r`` = worker
            ``responders[r]``), inferred from the number of rows. When all ``n`` workers respond and
            ``responders`` is neither sorted nor a mask, both layouts have ``n`` rows: pass ``rows``.
        decoder : str or Decoder, optional
            Decoder name (default :attr:`default_decoder`).
        length : int, optional
            Length ``p`` of the gradient (to drop the zero padding when ``m`` does not divide ``p``); default
            ``m*q``.
        return_info : bool, default False
            Also return a :class:`DecodeInfo` with the residual and an error estimate.
        rows : {"auto", "full", "compact"}, default "auto"
            The layout of ``messages``: ``"full"`` (row ``i`` = worker ``i``), ``"compact"`` (row ``r`` = worker
            ``responders[r]``, for every code type and any order, all ``n`` included) or ``"auto"`` (inferred when
            unambiguous, as described above).

        Returns
        -------
        g : ndarray, shape (length,)
            In the messages' dtype (float32 stays float32; Fractions stay exact).

        Raises
        ------
        DecodingError
            When the responders cannot recover the sum to the tolerance in the messages' dtype (for example
            float32 messages on a responder set with strong cancellation) or the result overflows.
        ValueError, TypeError
            For malformed responders, messages, ``rows`` or ``length``, naming the parameter.

        Examples
        --------
        >>> import numpy as np, gradcodes as gc
        >>> code = gc.cyclic_repetition(5, 1, rng=0)
        >>> G = np.arange(15.0).reshape(5, 3)
        >>> Y = code.encode(G)
        >>> order = [4, 0, 2, 1, 3]                       # all five arrived, in this order
        >>> np.round(code.decode(order, Y[order], rows="compact"), 9)   # rows in the order of responders
        array([30., 35., 40.])
        >>> np.round(code.decode([4, 0, 2, 1], Y[[4, 0, 2, 1]]), 9)    # fewer rows than n: compact
        array([30., 35., 40.])
        >>> np.round(code.decode(np.array([1, 0, 1, 1, 1], dtype=bool), Y), 9)    # full buffer, worker 1 absent
        array([30., 35., 40.])
        """
        F, mask, order, ordered = self._responders(responders)
        dec = self._decoder(decoder)
        M = self._check_data("messages", messages)
        where = self._message_rows(F, order, ordered, M.shape[0], rows)
        q = M.shape[1]
        if length is not None:
            length = check_int("length", length, 1, self._m * q)
        usable = self._usable(mask)
        if usable is not mask:
            F = np.flatnonzero(usable)
        A, res, canc = self._raw_decoding_matrix(F, usable, dec)
        exact = M.dtype == object
        cols = np.flatnonzero(np.asarray(A != 0).any(axis=0))
        terms = decode_terms(np.asarray(A != 0), self._max_load())
        self._accept(F, A, res, canc, dtype=M.dtype, terms=terms)
        src = cols if where is None else where[cols]
        if np.any(src < 0):                      # a decoder put weight on a non-responder: never silently read it
            raise RuntimeError(f"decoder {dec.name!r} gave weight to workers {cols[src < 0].tolist()} that did "
                               f"not respond")
        C = self._matrix_for(M, A)[:, cols]
        if exact:
            out = C @ M[src] if cols.size else np.full((self._m, q), to_fraction(0), dtype=object)
            amax = 0.0
        else:
            out = np.empty((self._m, q), dtype=self._result_dtype(M))
            with np.errstate(over="ignore", invalid="ignore"):
                amax = apply_rows(C, M, src, out)
            if not np.isfinite(amax):
                bad = [int(w) for w, i in zip(cols, src, strict=True) if not np.all(np.isfinite(M[i]))]
                if bad:
                    raise ValueError(f"messages from responders {bad} contain NaN or infinite values")
                raise DecodingError(f"responders {F.tolist()}: the decoded sum overflows {M.dtype} (largest "
                                    f"finite {np.finfo(M.dtype).max:.3g}); decode float64 messages or rescale the "
                                    f"gradients", F, res)
        floor = 0.0
        if not exact and not self.exact:
            floor = underflow_error(float(np.abs(C).sum(axis=1).max(initial=0)), terms, self._max_load(), amax,
                                    M.dtype)
            self._accept_floor(F, res, canc, floor, amax, M.dtype, terms)
        g = out.reshape(-1)
        if length is not None:
            g = g[:length]
        if not return_info:
            return g
        est = 0.0 if exact else float(error_estimate(canc, res, M.dtype, terms)) + floor
        info = DecodeInfo(tuple(int(i) for i in F), dec.name, 0.0 if exact and res == 0 else res, canc, est,
                          exact)
        return g, info

    def _usable(self, mask: np.ndarray) -> np.ndarray:
        """Hook: the responders whose messages can be used (all of them here; trees drop silenced subtrees)."""
        return mask

    def _max_load(self) -> int:
        if "load" not in self._memo:
            self._memo["load"] = self.load
        return self._memo["load"]

    def _accept_floor(self, F: np.ndarray, res: float, canc: float, floor: float, amax: float, dtype: Any,
                      terms: int) -> None:
        """Hook: exact codes refuse decodes whose result is so close to underflow that the tolerance is lost."""

    # ------------------------------------------------------------------ diagnostics
    def residual(self, responders: Any, decoder: str | Decoder | None = None) -> float:
        """``||A_F B - E||_inf`` for a responder set (0 when an exact decode succeeds)."""
        F, mask = self._mask(responders)
        return self._raw_decoding_matrix(F, mask, self._decoder(decoder))[1]

    def error_estimate(self, responders: Any, decoder: str | Decoder | None = None,
                       dtype: Any = np.float64) -> float:
        """Predicted relative error ``u * canc + residual`` of a decode from these responders."""
        F, mask = self._mask(responders)
        A, res, canc = self._raw_decoding_matrix(F, mask, self._decoder(decoder))
        if self.exact:
            return 0.0 if res == 0 else res
        return float(error_estimate(canc, res, dtype, decode_terms(np.asarray(A != 0), self._max_load())))


class GradientCode(LinearCode):
    """An exact gradient code: any ``n - s`` responders recover the sum of the partial gradients.

    The contract is ``A_F B = E = 1_k^T (x) I_m`` for every responder set ``F`` with ``|F| >= n - s``; it is checked
    by :func:`gradcodes.verify`, and every decode checks its own residual (``decoding_matrix`` raises
    :class:`DecodingError` naming the responder set when it is not met).

    Parameters
    ----------
    B : array_like, shape (n, k*m)
        Encoding matrix (rows = workers).
    s : int
        Stragglers tolerated, ``0 <= s <= n - 1``.
    m : int, default 1
        Communication factor.
    rtol : float in (0, 1), default 1e-8
        Float64 decodes are accepted when their predicted relative error ``u * canc * sqrt(t) + residual`` (unit
        roundoff ``u``, cancellation factor ``canc``, ``t`` rounded additions per coordinate, residual
        ``||A_F B - E||_inf``) is at most ``rtol``; decodes of other dtypes use their own unit roundoff and the
        tolerance with the same share of their digits (``2.3e-4`` for float32 at the default; see
        :func:`gradcodes._numerics.tolerance`).
    **kwargs
        See :class:`LinearCode`.

    Examples
    --------
    A 3-worker code tolerating one straggler (Tandon et al. 2017, cyclic repetition), in exact arithmetic:

    >>> import numpy as np
    >>> from fractions import Fraction as Fr
    >>> import gradcodes as gc
    >>> code = gc.GradientCode([[1, -1, 0], [0, 1, Fr(1, 2)], [2, 0, 1]], s=1)
    >>> code.field, code.load
    ('rational', 2)
    >>> code.decoding_matrix([0, 1])
    array([[Fraction(1, 1), Fraction(2, 1), Fraction(0, 1)]], dtype=object)

    The same matrix in floating point, decoding real gradients:

    >>> code = gc.GradientCode(np.array([[1, -1, 0], [0, 1, 0.5], [2, 0, 1]]), s=1)
    >>> G = np.arange(12.0).reshape(3, 4)          # k = 3 partial gradients of length 4
    >>> Y = code.encode(G)                          # one message per worker
    >>> code.decode([0, 2], Y)                      # worker 1 straggles
    array([12., 15., 18., 21.])
    """

    def __init__(self, B: Any, s: int, *, m: int = 1, rtol: float = DEFAULT_RTOL, **kwargs: Any) -> None:
        super().__init__(B, m=m, **kwargs)
        self.s = check_int("s", s, 0, self.n - 1)
        self.rtol = check_real("rtol", rtol, 0, 1, open_lo=True, open_hi=True)

    def _min_responders(self) -> int:
        return self.n - self.s

    def _accept(self, F: np.ndarray, A: Any, res: float, canc: float, *, dtype: Any = np.float64,
                terms: int = 1) -> None:
        if self.exact:
            if res != 0:
                raise DecodingError(f"responders {F.tolist()} cannot recover the gradient: the sum is not in "
                                    f"the span of their rows (exact {self.field} arithmetic)", F, res)
            return
        check_float_decode(self, F, res, canc, self.rtol, dtype, terms)

    def _accept_floor(self, F: np.ndarray, res: float, canc: float, floor: float, amax: float, dtype: Any,
                      terms: int) -> None:
        check_underflow(F, res, canc, floor, amax, self.rtol, dtype, terms)

    @property
    def unit_roundoff(self) -> float:
        """Unit roundoff of the code's arithmetic (0 for exact fields)."""
        return 0.0 if self.exact else unit_roundoff(np.float64)


class ApproximateCode(LinearCode):
    """A code without an exactness promise, judged by its error (and, for random stragglers, its bias).

    ``decoding_matrix(responders)`` works for any responder set (possibly empty, giving a zero estimate), and
    :meth:`approximation_error` gives ``||A_F B - E||_2``.

    Parameters
    ----------
    B : array_like, shape (n, k*m)
        Encoding matrix (rows = workers).
    straggle_probabilities : array_like of length n, optional
        Each worker's probability of straggling, in (0, 1), for codes designed for random stragglers.
    s : int, optional
        The number of stragglers the code was designed for (informational; decodes accept any set).
    **kwargs
        See :class:`LinearCode`.

    Examples
    --------
    >>> import numpy as np, gradcodes as gc
    >>> code = gc.ApproximateCode(np.eye(4), name="ignore-stragglers")
    >>> code.approximation_error([0, 1, 2], decoder="lstsq")
    1.0
    """

    def __init__(self, B: Any, *, straggle_probabilities: Any = None, s: int | None = None,
                 **kwargs: Any) -> None:
        super().__init__(B, **kwargs)
        self.s = None if s is None else check_int("s", s, 0, self.n - 1)
        if straggle_probabilities is not None:
            straggle_probabilities = _check_probabilities(straggle_probabilities, self.n)
        self.straggle_probabilities = straggle_probabilities

    def approximation_error(self, responders: Any, decoder: str | Decoder | None = None) -> float:
        """``||A_F B - E||_2`` (Frobenius for m > 1): the error of the decoded sum per unit of gradient norm."""
        F, mask = self._mask(responders)
        A = self._raw_decoding_matrix(F, mask, self._decoder(decoder))[0]
        if self.exact:
            R = A @ self._B - self._target
            return float(np.sqrt(float(sum(v * v for v in R.flat))))
        return float(np.linalg.norm(A @ self._B - self._target))


def check_float_decode(code: LinearCode, F: np.ndarray, res: float, canc: float, rtol: float, dtype: Any,
                       terms: int) -> None:
    """Raise :class:`DecodingError` unless a floating-point decode meets its tolerance in ``dtype``.

    The message names the cause (overflow, not in the span, or cancellation), the float64 alternative when the
    messages are in a lower precision, and a code without cancellation.
    """
    dt = np.dtype(dtype) if np.dtype(dtype).kind in "fc" else np.dtype(np.float64)
    if accepts(canc, res, rtol, dt, terms):
        return
    tol = tolerance(rtol, dt)
    est = float(error_estimate(canc, res, dt, terms))
    what = f"to rtol={rtol:g}" if tol == rtol else f"to the {dt} tolerance {tol:.3g} (rtol={rtol:g} for float64)"
    if not np.isfinite(res) or not np.isfinite(canc) or res > 1e100:
        why = "the decoding vector overflows float64"
    elif res > tol:
        why = "the sum is not in the span of their rows (to float64 accuracy)"
    else:
        why = (f"cancellation: the decoding coefficients amplify the rounding errors of {dt} messages (unit "
               f"roundoff {unit_roundoff(dt):.2g}) by a factor {canc:.3g}")
        if unit_roundoff(dt) > unit_roundoff(np.float64):
            est64 = float(error_estimate(canc, res, np.float64, terms))
            if accepts(canc, res, rtol, np.float64, terms):
                why += f"; float64 messages decode within rtol (predicted error {est64:.2g})"
            else:
                why += f"; float64 messages would not meet rtol either (predicted error {est64:.2g})"
        s = getattr(code, "s", None)
        if isinstance(s, int) and code.n > s:
            why += (f"; a code without cancellation decodes exactly in any precision, e.g. "
                    f"gradcodes.stable_binary({code.n}, {s}) (0/1 decoding)")
    raise DecodingError(f"responders {F.tolist()} cannot recover the gradient {what}: {why} (residual "
                        f"||A_F B - E|| = {res:.3g}, cancellation {canc:.3g}, predicted error {est:.3g})", F, res)


def check_underflow(F: np.ndarray, res: float, canc: float, floor: float, amax: float, rtol: float, dtype: Any,
                    terms: int) -> None:
    """Raise :class:`DecodingError` when subnormal rounding (``floor``, see
    :func:`gradcodes._numerics.underflow_error`) pushes a decode past its tolerance in ``dtype``."""
    if floor <= 0:
        return
    dt = np.dtype(dtype)
    tol = tolerance(rtol, dt)
    est = float(error_estimate(canc, res, dt, terms)) + floor
    if est <= tol:
        return
    raise DecodingError(f"responders {F.tolist()}: the decoded sum is near the underflow threshold of {dt} (largest "
                        f"|g| about {amax:.3g}, smallest normal {float(np.finfo(dt).tiny):.3g}), where rounding is "
                        f"absolute: predicted relative error {est:.3g} > tolerance {tol:.3g}; rescale the gradients "
                        f"or decode float64 messages", F, res)


def _check_probabilities(p: Any, n: int) -> np.ndarray:
    """Straggle probabilities: a length-``n`` sequence of real numbers (floats, Fractions, or strings such as
    ``"1/10"``) in the open interval (0, 1); float64 array, or object array of Fractions when all are exact."""
    name = "straggle_probabilities"
    if isinstance(p, (str, bytes)) or not hasattr(p, "__iter__") or isinstance(p, (set, dict)):
        raise TypeError(f"{name} must be a sequence of n={n} probabilities, got {type(p).__name__}")
    values = list(p)
    if len(values) != n:
        raise ValueError(f"{name} must have length n={n}, got {len(values)}")
    exact = []
    for i, v in enumerate(values):
        if isinstance(v, str):
            try:
                v = Fraction(v.strip())
            except (ValueError, ZeroDivisionError):
                raise TypeError(f"{name}[{i}] = {v!r} is not a number") from None
        if isinstance(v, bool) or not isinstance(v, (numbers.Real, Fraction)) and not hasattr(v, "is_Rational"):
            raise TypeError(f"{name}[{i}] must be a real number, got {v!r} of type {type(v).__name__}")
        if not (0 < v < 1):
            raise ValueError(f"{name}[{i}] = {v!r} must lie in the open interval (0, 1)")
        exact.append(v)
    if all(isinstance(v, (Fraction, numbers.Integral)) or hasattr(v, "is_Rational") for v in exact):
        return np.array([to_fraction(v, name) for v in exact], dtype=object)
    return np.array([float(v) for v in exact], dtype=np.float64)
