"""The shared base of the code types: construction, properties, pickling, decoding matrices and diagnostics.

:class:`CodeBase` holds what every operation on a linear code needs: the encoding matrix ``B`` in its field, the
target ``E``, the decoders and the least-recently-used cache of decoding matrices ``A_F``, the checks and casts of
data (float32 stays float32), and the hooks by which :class:`gradcodes.GradientCode` refuses decodes that miss its
tolerance. Encoding lives in :mod:`gradcodes._core.code_encode`, decoding in :mod:`gradcodes._core.code_decode`, and
:class:`gradcodes.LinearCode` (:mod:`gradcodes._core.code`) puts them together.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Any, cast

import numpy as np

from .._base.aliases import Array, DTypeLike, FieldLike, MatrixLike, NDArray, Responders
from .._base.arrays import array_io
from .._base.errors import GradcodesTypeError, GradcodesValueError
from .._base.validate import check_entries, check_int, check_responders
from .acceptance import DecodingError
from .code_identity import identity_digest, register_code_type
from .decoders import Decoder, ExactDecoder, LeastSquaresDecoder, NullSpaceDecoder
from .fields import as_matrix, is_exact_field, to_fraction
from .numerics import (
    cancellation,
    decode_terms,
    error_estimate,
    exact_residual_ok,
    residuals,
    target_matrix,
)
from .sparse import (
    canonical_csr,
    csr_of_dense,
    dense_of,
    is_scipy_sparse,
    residual_cancellation,
    row_supports,
    to_scipy,
)

if TYPE_CHECKING:
    from .code import LinearCode

__all__ = ["CodeBase"]

_FLOAT_KINDS = "fc"
#: dense entries up to which a code stored sparse checks decoding matrices with the dense products
DENSE_CHECK_MAX = 10**6


class _DenseOnRequest:
    """``code._B`` of a code stored sparse: the dense matrix, built once (under ``gradcodes.limits.entries``) and
    kept in the code's memo. A non-data descriptor, so a dense code's instance attribute ``_B`` takes precedence
    (and its pickles are unchanged)."""

    def __get__(self, obj: Any, objtype: Any = None) -> Any:
        if obj is None:
            return self
        memo = obj.__dict__.setdefault("_memo", {})
        if "dense B" not in memo:
            D = dense_of(obj._csr, (obj._n, obj._k * obj._m))
            D.flags.writeable = False
            memo["dense B"] = D
        return memo["dense B"]


@register_code_type
class CodeBase:
    """Construction, properties, pickling, decoding matrices and diagnostics of a linear code.

    Not used directly: see :class:`gradcodes.LinearCode`, whose docstring lists the parameters.
    """

    def __init__(self, B: MatrixLike, *, m: int = 1, field: str | None = None, name: str | None = None,
                 family: str | None = None, params: Mapping[str, Any] | None = None,
                 decoders: Iterable[Decoder] | None = None, default_decoder: str | None = None,
                 cache_size: int = 256, field_builder: Callable[[FieldLike], LinearCode] | None = None) -> None:
        self._m = check_int("m", m, 1)
        if is_scipy_sparse(B) and field not in ("rational",):
            # stored sparse: the canonical compressed-row arrays only (gradcodes._core.sparse); ``_B`` is then the dense
            # form built on request (the class attribute below), never kept in the instance's state
            self._csr, (n, cols), fld = canonical_csr(B, field)
        else:
            mat, fld = as_matrix(cast(Any, B).toarray() if is_scipy_sparse(B) else B, field)
            n, cols = mat.shape
            self._B = mat
            if isinstance(self._B, np.ndarray):
                self._B.flags.writeable = False
        if cols % self._m:
            raise GradcodesValueError(f"B must have k*m columns; got {cols} columns, not a multiple of m={self._m}")
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
        if self.sparse and self._field == "complex":
            self._target = self._target.astype(np.complex128)
        if not self.exact and self._field == "complex":
            self._target = self._target.astype(np.complex128)
        self.decoders: dict[str, Decoder] = {}
        generic: list[Decoder] = [ExactDecoder()] if self.exact else [NullSpaceDecoder(), LeastSquaresDecoder()]
        for dec in [*generic, *(decoders or [])]:
            if not isinstance(dec, Decoder):
                raise GradcodesTypeError(f"decoders must be Decoder instances, got {dec!r}")
            self.decoders[dec.name] = dec
        default = default_decoder or generic[0].name
        if default not in self.decoders:
            raise GradcodesValueError(f"default_decoder must be one of {sorted(self.decoders)}, got {default!r}")
        self.default_decoder = default

    # ------------------------------------------------------------------ storage
    #: the dense encoding matrix; an instance attribute for dense codes, built on request for sparse ones
    _B = _DenseOnRequest()
    #: compressed-row arrays (indptr, indices, data) of a code stored sparse; None for dense codes
    _csr: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None

    @property
    def sparse(self) -> bool:
        """True when the code stores ``B`` in compressed-row form (it was given as a :mod:`scipy.sparse` matrix)."""
        return self._csr is not None

    def _csr_parts(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The canonical compressed-row arrays of ``B`` (stored, or computed once from the dense float matrix)."""
        if self._csr is not None:
            return self._csr
        if "csr parts" not in self._memo:
            if self.exact:
                raise GradcodesTypeError(f"a code over {self._field} has no floating-point sparse form")
            self._memo["csr parts"] = csr_of_dense(self._B)
        return self._memo["csr parts"]

    def _entry_dtype(self) -> np.dtype[Any]:
        """dtype of ``B``'s entries (object for rational codes) without building a dense form."""
        return self._csr[2].dtype if self._csr is not None else np.asarray(self._B).dtype

    @property
    def B(self) -> Array:
        """The encoding matrix (n x k*m), read-only.

        For a code stored sparse (:attr:`sparse`) this is the dense form, built once on request when its
        ``n x k*m`` entries fit ``gradcodes.limits.entries`` (else :class:`gradcodes.SizeLimitError`, which
        names the size); :attr:`B_sparse` gives the non-zeros at any size.
        """
        return self._B

    @property
    def B_sparse(self) -> Any:
        """The encoding matrix as a new :class:`scipy.sparse.csr_array` (n x k*m): canonical (sorted indices, no
        explicit zeros), float64 for real codes and complex128 for complex ones; memory proportional to the
        non-zeros. Works for codes stored dense too (not for exact fields).

        >>> import gradcodes as gc
        >>> code = gc.fractional_repetition(4, 1)
        >>> S = code.B_sparse
        >>> S.nnz, S.shape, gc.GradientCode(S, s=1, name=code.name, family=code.family, params=code.params,
        ...                                 decoders=code.decoders.values(), default_decoder="group") == code
        (8, (4, 4), True)
        """
        return to_scipy(self._csr_parts(), (self._n, self._k * self._m))

    def _scipy_B(self) -> Any:
        """``B`` as a scipy.sparse.csr_array shared by the library's own products (memoised; never handed out)."""
        if "scipy B" not in self._memo:
            self._memo["scipy B"] = to_scipy(self._csr_parts(), (self._n, self._k * self._m))
        return self._memo["scipy B"]

    @property
    def nnz(self) -> int:
        """Number of non-zero entries of ``B``."""
        if self._csr is not None:
            return int(self._csr[0][-1])
        return int(np.count_nonzero(np.asarray(self._B != 0)))

    # ------------------------------------------------------------------ properties

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
    def target(self) -> Array:
        """``E = 1_k^T (x) I_m`` (m x k*m), in the code's field."""
        return self._target

    @property
    def support_matrix(self) -> np.ndarray:
        """Boolean (n, k): worker ``i`` stores partition ``j``."""
        if self._csr is not None:
            check_entries(self._n, self._k, what="the support matrix")
            ip, part = row_supports(self._csr, self._n, self._m)
            S = np.zeros((self._n, self._k), dtype=bool)
            S[np.repeat(np.arange(self._n), np.diff(ip)), part] = True
            return S
        nz: np.ndarray = np.asarray(self._B != 0)
        return np.asarray(nz.reshape(self._n, self._k, self._m).any(axis=2))

    @property
    def supports(self) -> list[np.ndarray]:
        """The partitions stored by each worker (read-only arrays; computed once per code, so indexing
        ``code.supports[i]`` in a loop costs a list copy, not a pass over ``B``)."""
        if "supports" not in self._memo:
            if self._csr is not None:
                ip, part = row_supports(self._csr, self._n, self._m)
                rows = [part[ip[i]:ip[i + 1]] for i in range(self._n)]
            else:
                rows = [np.flatnonzero(row) for row in self.support_matrix]
            for r in rows:
                r.flags.writeable = False
            self._memo["supports"] = rows
        return list(self._memo["supports"])

    @property
    def loads(self) -> np.ndarray:
        """Partitions stored by each worker (length n)."""
        if self._csr is not None:
            if "loads" not in self._memo:
                loads = np.diff(row_supports(self._csr, self._n, self._m)[0])
                loads.flags.writeable = False
                self._memo["loads"] = loads
            return self._memo["loads"]
        return self.support_matrix.sum(axis=1)

    @property
    def load(self) -> int:
        """Computation load: the largest number of partitions a worker stores."""
        return int(self.loads.max())

    @property
    def replication(self) -> np.ndarray:
        """Number of workers storing each partition (length k)."""
        if self._csr is not None:
            return np.bincount(row_supports(self._csr, self._n, self._m)[1], minlength=self._k)
        return self.support_matrix.sum(axis=0)

    def float_B(self, dtype: DTypeLike | None = None) -> NDArray[np.inexact[Any]]:
        """``B`` as a float/complex ndarray of ``dtype`` (exact fields are rounded; GF(p) has no float form).

        Parameters
        ----------
        dtype : dtype, optional
            Default: float64 (complex128 for complex codes).

        Returns
        -------
        ndarray, shape (n, k m)
            A dense copy, cached per dtype (do not modify it).

        Raises
        ------
        GradcodesTypeError
            If the code is over a finite field GF(p).

        Examples
        --------
        >>> import numpy as np, gradcodes as gc
        >>> gc.fractional_repetition(4, 1, field="rational").float_B(np.float32)[0].tolist()
        [1.0, 1.0, 0.0, 0.0]
        """
        if self._field.startswith("GF("):
            raise GradcodesTypeError(f"a code over {self._field} has no floating-point form")
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

    # ------------------------------------------------------------------ value identity
    def __eq__(self, other: object) -> bool:
        """Codes are equal when they are the same construction: same type, field, ``n``, ``k``, ``m``, ``s``,
        ``rtol``, name, family, ``params``, bit-for-bit equal ``B`` and every other stored attribute (a tree's
        structure, an expander's graph), compared through a SHA-256 digest (:mod:`gradcodes._core.code_identity`).
        A pickled and unpickled code equals the original.

        >>> import pickle, gradcodes as gc
        >>> code = gc.cyclic_repetition(6, 2, rng=0)
        >>> pickle.loads(pickle.dumps(code)) == code, code == gc.cyclic_repetition(6, 2, rng=1)
        (True, False)
        """
        if self is other:
            return True
        if type(self) is not type(other):
            return NotImplemented
        return identity_digest(self) == identity_digest(other)

    def __hash__(self) -> int:
        """Consistent with ``==`` (codes are immutable: ``B`` is read-only)."""
        return int.from_bytes(identity_digest(self)[:8], "little", signed=True)

    # ------------------------------------------------------------------ pickling
    def __getstate__(self) -> dict[str, Any]:
        """Pickle the construction, not the caches (decoding matrices are recomputed on demand)."""
        state = self.__dict__.copy()
        state["_cache"] = OrderedDict()
        state["_memo"] = {}
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        for arr in (self.__dict__.get("_B"), self._target, *(self._csr or ())):
            if isinstance(arr, np.ndarray):
                arr.flags.writeable = False

    def in_field(self, field: FieldLike) -> LinearCode:
        """The same construction over another field (e.g. ``galois.GF(p)``), when the family supports it.

        Parameters
        ----------
        field : str or galois.FieldArray class
            The field: ``"real"``, ``"rational"``, ``"complex"`` or a prime field ``galois.GF(p)``, as the family
            accepts.

        Returns
        -------
        LinearCode
            The family's construction with the same parameters over ``field``.

        Raises
        ------
        GradcodesValueError
            If the family cannot be rebuilt over another field (a code built from a matrix).

        Examples
        --------
        >>> import galois, gradcodes as gc
        >>> gc.cyclic_mds(5, 2, field="real").in_field(galois.GF(11))
        CyclicMDSCode(name='cyclic_mds[GF(11)]', n=5, s=2, k=5, m=1, field='GF(11)', load=3)
        """
        if self._field_builder is None:
            raise GradcodesValueError(f"the {self.family!r} code cannot be rebuilt over another field "
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
        need = self._min_responders()
        F = check_responders(responders, self._n, min_size=0)
        mask = np.zeros(self._n, dtype=bool)
        mask[F] = True
        if F.size < need and not cast("LinearCode", self)._may_decode(F, mask):
            # fewer than n - s responders are accepted only when they can decode (the earliest decodable set,
            # e.g. one worker per group of fractional repetition; see gradcodes._core.decodable)
            # these responders cannot recover the gradient: DecodingError (a GradcodesValueError, as it was)
            raise DecodingError(f"responders {F.tolist()} cannot recover the gradient: they must contain at least "
                                f"{need} distinct workers (of n={self._n}), got {F.size}, or be a smaller set that "
                                f"can decode (code.decodable)", F)
        return F, mask

    def _decoder(self, decoder: str | Decoder | None) -> Decoder:
        if decoder is None:
            return self.decoders[self.default_decoder]
        if isinstance(decoder, Decoder):
            return decoder
        if not isinstance(decoder, str) or decoder not in self.decoders:
            raise GradcodesValueError(f"decoder must be one of {sorted(self.decoders)}, got {decoder!r}")
        return self.decoders[decoder]

    def decoding_matrices(self, mask: NDArray[np.bool_], decoder: str | Decoder | None = None) -> Array:
        """Batched decoding matrices (b, m, n) for responder masks (b, n); no validation of the result.

        Parameters
        ----------
        mask : ndarray of bool, shape (b, n)
            Each row: the responders of one set.
        decoder : str or Decoder, optional
            Default: the code's default decoder.

        Returns
        -------
        ndarray, shape (b, m, n)
            ``A_F`` of each set (zero in the columns of non-responders); not checked against ``A_F B = E``
            (:meth:`decode` and :func:`gradcodes.verify` check it).

        Raises
        ------
        GradcodesValueError
            If ``mask`` has not the shape ``(b, n)``.

        Examples
        --------
        >>> import numpy as np, gradcodes as gc
        >>> code = gc.fractional_repetition(4, 1)
        >>> code.decoding_matrices(np.array([[1, 0, 1, 1], [0, 1, 1, 1]], dtype=bool)).tolist()
        [[[1.0, 0.0, 1.0, 0.0]], [[0.0, 1.0, 1.0, 0.0]]]
        """
        mask = np.asarray(mask, dtype=bool)
        if mask.ndim != 2 or mask.shape[1] != self._n:
            raise GradcodesValueError(f"mask must have shape (b, {self._n}), got {mask.shape}")
        return self._decoder(decoder).matrices(cast("LinearCode", self), mask)

    def _check_matrix(self, F: np.ndarray, A: Any) -> tuple[float, float]:
        """(residual, cancellation) of one decoding matrix; subclasses decide what to do with them."""
        if self.exact:
            ok = exact_residual_ok(A[None], self._B, self._target)[0]
            canc = 1.0
            if self._field == "rational":
                Af = np.vectorize(float, otypes=[np.float64])(A)
                canc = float(cancellation(Af[None], self.float_B(), self._k)[0])
            return (0.0 if ok else float("inf")), canc
        if self._csr is not None and self._n * self._k * self._m > DENSE_CHECK_MAX:
            # the products on the non-zeros; below the bound the dense ones, so that a code stored sparse measures
            # (and accepts) exactly as the equal dense code does
            return residual_cancellation(A, self._csr, (self._n, self._k * self._m), self._target, self._k)
        res = float(residuals(A[None], self._B, self._target)[0])
        canc = float(cancellation(A[None], self._B, self._k)[0])
        return res, canc

    def _raw_decoding_matrix(self, F: np.ndarray, mask: np.ndarray, dec: Decoder) -> tuple[Any, float, float]:
        key = (dec.name, tuple(int(i) for i in F))
        if key in self._cache:
            self._cache.move_to_end(key)
            return self._cache[key]
        A = dec.matrices(cast("LinearCode", self), mask[None])[0]
        res, canc = self._check_matrix(F, A)
        entry = (A, res, canc)
        if self._cache_size:
            if isinstance(A, np.ndarray) and A.dtype != object:
                A.flags.writeable = False
            self._cache[key] = entry
            while len(self._cache) > self._cache_size:
                self._cache.popitem(last=False)
        return entry

    @array_io
    def decoding_matrix(self, responders: Responders, decoder: str | Decoder | None = None, *,
                        dtype: DTypeLike = np.float64) -> Array:
        """The decoding matrix ``A_F`` (m x n, zero outside the responders).

        Parameters
        ----------
        responders : iterable of int or bool mask of length n
            The workers whose messages arrived.
        decoder : str or Decoder, optional
            A key of :attr:`decoders` (default :attr:`default_decoder`).
        dtype : numpy dtype, default float64
            The dtype of the messages it will decode: an exact code's decode is accepted by the same rule as
            :meth:`decode` in that dtype (the acceptance rule of ``docs/acceptance.md``), else
            :class:`DecodingError`.

        Returns
        -------
        ndarray of shape (m, n)
            ``A_F`` with ``A_F B = 1`` (the all-ones target, to the rule's tolerance); a copy the caller may change.

        Raises
        ------
        DecodingError
            An exact code whose responders cannot recover the gradient to the tolerance in ``dtype`` (too few, not
            spanning, or too much cancellation; the message says which).
        GradcodesValueError
            ``responders`` not a set of worker indices in ``[0, n)`` or a mask of length ``n``.

        Examples
        --------
        >>> import gradcodes as gc
        >>> code = gc.fractional_repetition(6, 2)             # two groups of 3 workers, each holding half the data
        >>> code.decoding_matrix([0, 3]).tolist()            # one worker of each group
        [[1.0, 0.0, 0.0, 1.0, 0.0, 0.0]]
        >>> code.decoding_matrix([0, 1])                      # both in the first group
        Traceback (most recent call last):
        ...
        gradcodes.DecodingError: responders [0, 1] cannot recover the gradient: ...
        """
        F, mask = self._mask(responders)
        A, res, canc = self._raw_decoding_matrix(F, mask, self._decoder(decoder))
        dt = np.dtype(dtype)
        self._accept(F, A, res, canc, dtype=dt if dt.kind in _FLOAT_KINDS else np.dtype(np.float64),
                     terms=self._terms(A))
        return A.copy() if isinstance(A, np.ndarray) else A

    def _terms(self, A: Any) -> int:
        """Rounded additions along one decoded coordinate (:func:`gradcodes._core.numerics.decode_terms`)."""
        return decode_terms(np.asarray(A != 0), self._max_load())

    def _accept(self, F: np.ndarray, A: Any, res: float, canc: float, *, dtype: Any = np.float64,
                terms: int = 1) -> None:
        """Hook: GradientCode raises when the decode misses its tolerance in ``dtype``; approximate codes accept
        anything."""

    # ------------------------------------------------------------------ encode / decode
    def _check_data(self, name: str, X: Any) -> np.ndarray:
        if isinstance(X, (list, tuple)):
            X = np.asarray(X, dtype=object if self.exact else None)
        if not isinstance(X, np.ndarray):
            raise GradcodesTypeError(f"{name} must be a 2-D numpy array, got {type(X).__name__}")
        if X.ndim != 2:
            raise GradcodesValueError(f"{name} must be 2-D, got shape {X.shape}")
        kind = X.dtype.kind
        if kind == "O":
            if self._field != "rational":
                raise GradcodesTypeError(f"{name} has dtype object; exact (Fraction) data needs a code over the "
                                         f"rational field, this code is over {self._field}")
            return np.vectorize(lambda v: to_fraction(v, name), otypes=[object])(X)
        if kind in "iu":
            if self._field == "rational":
                return np.vectorize(lambda v: to_fraction(int(v), name), otypes=[object])(X)
            return X.astype(np.float64)
        if kind not in _FLOAT_KINDS:
            raise GradcodesTypeError(f"{name} must have a float or complex dtype (float32, float64, complex64, "
                                     f"complex128), got {X.dtype}")
        if self._field.startswith("GF("):
            raise GradcodesTypeError(f"{name}: a code over {self._field} cannot encode or decode floating-point data")
        return X

    def _matrix_for(self, X: np.ndarray, exact_matrix: Any) -> Any:
        """Cast a matrix (B or A) to the data's precision: float32 data stays float32 (complex64 for complex codes)."""
        if X.dtype == object:
            return exact_matrix
        if self._csr is None and exact_matrix is self._B:
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
            raise GradcodesValueError(f"the code's matrix (max |entry| = {np.abs(M).max():.3g}) does not fit {target}: "
                                      f"use float64 data with this code, or a better-scaled code")
        return cast

    def _result_dtype(self, X: np.ndarray) -> Any:
        if X.dtype == object:
            return np.dtype(object)
        return np.result_type(X.dtype, np.complex64) if self._field == "complex" else X.dtype


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
    def residual(self, responders: Responders, decoder: str | Decoder | None = None) -> float:
        """``||A_F B - E||_inf`` for a responder set (0 when an exact decode succeeds).

        Parameters
        ----------
        responders : iterable of int or bool mask
            The workers whose messages arrived.
        decoder : str or Decoder, optional
            Default: the code's default decoder.

        Returns
        -------
        float
            The largest entry of ``|A_F B - E|``.

        Raises
        ------
        DecodingError
            If the responders cannot decode.

        Examples
        --------
        >>> import gradcodes as gc
        >>> gc.fractional_repetition(4, 1).residual([0, 2, 3])
        0.0
        """
        F, mask = self._mask(responders)
        return self._raw_decoding_matrix(F, mask, self._decoder(decoder))[1]

    def error_estimate(self, responders: Responders, decoder: str | Decoder | None = None,
                       dtype: DTypeLike = np.float64) -> float:
        """The error bound of a decode from these responders in ``dtype``, relative to ``max sum_j |g_j|`` and valid
        for every gradient (the bound :meth:`decode` accepts; ``docs/acceptance.md``).

        Parameters
        ----------
        responders : iterable of int or bool mask
            The workers whose messages arrived.
        decoder : str or Decoder, optional
            Default: the code's default decoder.
        dtype : dtype, default float64
            The messages' dtype.

        Returns
        -------
        float
            The bound (for an exact code: 0 when the decode is exact, else its residual).

        Raises
        ------
        DecodingError
            If the responders cannot decode.

        Examples
        --------
        >>> import numpy as np, gradcodes as gc
        >>> code = gc.fractional_repetition(4, 1)
        >>> f"{code.error_estimate([0, 2, 3]):.2e}", f"{code.error_estimate([0, 2, 3], dtype=np.float32):.2e}"
        ('1.78e-15', '3.58e-07')
        """
        F, mask = self._mask(responders)
        A, res, canc = self._raw_decoding_matrix(F, mask, self._decoder(decoder))
        if self.exact:
            return 0.0 if res == 0 else res
        return float(error_estimate(canc, res, dtype, self._terms(A)))

