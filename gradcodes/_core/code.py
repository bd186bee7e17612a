"""The core types: :class:`LinearCode` (shared base), :class:`GradientCode` (exact) and :class:`ApproximateCode`.

Notation (Tandon et al.): ``n`` workers, ``k`` partitions, ``m`` communication factor, ``s`` stragglers. The encoding
matrix ``B`` is ``n x (k*m)``; column ``j*m + u`` carries block ``u`` of partial gradient ``g_j``. Worker ``i``
sends ``y_i = sum_{j,u} B[i, j*m+u] g_j^(u)`` (a vector of length ``ceil(length/m)`` for gradients of ``length``
coordinates). For responders ``F`` a decoding matrix ``A_F`` (m x n, zero outside ``F``) with
``A_F B = E = 1_k^T (x) I_m`` recovers block ``u`` of the sum ``g = sum_j g_j`` as row ``u`` of ``A_F Y``.

The methods live by responsibility: construction, properties, pickling and decoding matrices in
:mod:`gradcodes._core.code_base`, encoding in :mod:`gradcodes._core.code_encode`, decoding in
:mod:`gradcodes._core.code_decode`,
and the acceptance of floating-point decodes (:class:`DecodingError`, :class:`DecodeInfo`) in
:mod:`gradcodes._core.acceptance`.
"""

from __future__ import annotations

import numbers
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

import numpy as np

from .._base.aliases import MatrixLike, ProbabilitiesLike, Responders
from .._base.errors import GradcodesTypeError, GradcodesValueError
from .._base.validate import check_int, check_real
from .acceptance import DecodeInfo, DecodingError, check_float_decode, check_underflow
from .code_decode import DecodeMixin
from .code_encode import EncodeMixin
from .decodable import DecodableMixin
from .decoders import Decoder
from .fields import to_fraction
from .numerics import DEFAULT_RTOL, unit_roundoff

__all__ = ["LinearCode", "GradientCode", "ApproximateCode", "DecodeInfo", "DecodingError", "Recommendation",
           "check_float_decode", "check_underflow"]

#: :func:`gradcodes.recommend`'s default ``certify_seconds`` (with ``quick=True``: 1)
CERTIFY_SECONDS = 10.0


def _deprecated_attribute(old: str, new: str) -> None:
    import warnings

    warnings.warn(f"Recommendation.{old} is deprecated, use Recommendation.{new}", DeprecationWarning, stacklevel=3)


@dataclass
class Recommendation:
    """Why :func:`gradcodes.recommend` chose its code (its :attr:`GradientCode.recommendation`): the candidate
    table with loads, errors and how each was judged; ``str()`` prints it. :func:`gradcodes.recommend` builds it;
    its fields are its constructor's arguments.

    Parameters
    ----------
    n, s, m : int
        The workers, stragglers and message-size divisor of the :func:`~gradcodes.recommend` call.
    max_load : int or None
        The call's load budget (None: no budget).
    rtol : float
        The call's relative tolerance.
    chosen : str
        The chosen candidate's name (its family).
    load : int
        The chosen code's load (partitions per worker).
    error_estimate : float
        The chosen code's proven worst float64 error estimate when ``proven``, else the worst over the sets
        checked (a lower bound).
    meets_rtol : bool
        True only for a proven error ``<= rtol``.
    rows : list of dict, optional
        One row per candidate: ``name``, ``status`` and, when built, ``load``, ``error``, ``proven``, ``how`` (the
        proof, or why there is none) and ``meets_rtol``.
    reason : str, default ""
        Why the chosen candidate was chosen.
    proven : bool, default False
        Whether ``error_estimate`` is proven (every straggler set covered).
    certify_seconds : float, default 10
        The call's certification budget (seconds of the fixed cost model).

    Examples
    --------
    >>> import gradcodes as gc
    >>> rec = gc.recommend(12, 2, quick=True).recommendation
    >>> rec.chosen, rec.load, rec.proven, rec.meets_rtol
    ('fractional_repetition', 3, True, True)
    """

    n: int
    s: int
    m: int
    max_load: int | None
    rtol: float
    chosen: str
    load: int
    error_estimate: float
    meets_rtol: bool
    rows: list[dict[str, Any]] = field(default_factory=list)
    reason: str = ""
    proven: bool = False
    certify_seconds: float = CERTIFY_SECONDS

    @property
    def tol(self) -> float:
        """Deprecated alias of :attr:`rtol` (DeprecationWarning)."""
        _deprecated_attribute("tol", "rtol")
        return self.rtol

    @property
    def meets_tol(self) -> bool:
        """Deprecated alias of :attr:`meets_rtol` (DeprecationWarning)."""
        _deprecated_attribute("meets_tol", "meets_rtol")
        return self.meets_rtol

    def __str__(self) -> str:
        budget = "none" if self.max_load is None else str(self.max_load)
        kind = "proven" if self.proven else "not proven"
        lines = [f"recommend(n={self.n}, s={self.s}, m={self.m}, max_load={budget}, rtol={self.rtol:.0e}) -> "
                 f"{self.chosen} (load {self.load}, worst float64 error estimate {self.error_estimate:.1e}, {kind})",
                 f"  {self.reason}", "  candidates:"]
        for row in self.rows:
            err = row.get("error")
            if err is None:
                err_s = "-"
            elif not np.isfinite(err):
                err_s = "fails"
            else:
                err_s = f"{err:.1e}" if row.get("proven") else f">={err:.1e}"
            lines.append(f"    {row['name']:<22} load {str(row.get('load', '-')):>4}  error {err_s:>9}  "
                         f"{row['status']}")
        return "\n".join(lines)


class LinearCode(DecodeMixin, EncodeMixin, DecodableMixin):
    """A linear code for distributed gradient computation: the shared base of every code type.

    Parameters
    ----------
    B : array_like or scipy.sparse array/matrix, shape (n, k*m)
        Encoding matrix, rows = workers. Floats give the ``"real"`` field, complex numbers ``"complex"``,
        :class:`fractions.Fraction` or sympy Rationals ``"rational"`` (exact), a galois array ``"GF(p)"`` (exact).
        A :mod:`scipy.sparse` array or matrix (any format; integer, float or complex entries) gives a code *stored
        sparse* (:attr:`sparse`) over ``"real"`` or ``"complex"``: it keeps a copy of the canonical compressed rows
        (sorted column indices, duplicates summed, explicit zeros dropped; float64 or complex128 values), so that
        memory, :meth:`encode`, :meth:`encode_worker`, :meth:`decode`, the decoding matrices, the theorems of
        :func:`gradcodes.verify` and :func:`gradcodes.save_code` cost in proportion to the non-zeros, and
        ``gradcodes.limits.entries`` bounds the non-zeros instead of ``n k m``. It equals (``==``, ``hash``) the
        code of the same matrix given dense; :attr:`B` is its dense form on request (under
        ``gradcodes.limits.entries``) and :attr:`B_sparse` a :class:`scipy.sparse.csr_array` copy. With
        ``field="rational"`` a sparse matrix is densified (exact codes are stored dense).
    m : int, default 1
        Communication factor: each message has length ``ceil(length/m)`` (``length``: the gradient's); ``B``
        has ``k*m`` columns.
    field : {"real", "complex", "rational"}, optional
        Force a field (for example ``"rational"`` for an integer matrix); inferred from ``B`` by default.
    name : str, optional
        A label shown in reports (default: the family, or ``"custom"``).
    family : str, optional
        The constructor that built the code (used by :func:`gradcodes.save_code` / :func:`gradcodes.load_code`).
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

    Examples
    --------
    >>> import numpy as np, gradcodes as gc
    >>> code = gc.LinearCode(np.eye(3))              # usually a subclass: GradientCode, ApproximateCode
    >>> code
    LinearCode(name='custom', n=3, k=3, m=1, field='real', load=1)
    >>> code.decode([0, 1, 2], code.encode(np.ones((3, 2)))).tolist()
    [3.0, 3.0]
    """

    #: Set by :func:`gradcodes.recommend` on the code it returns: the reasoning (candidates, loads, errors).
    recommendation: Recommendation | None = None
    # Instance attributes set by the constructor (declared here so the reference documents them)
    #: The available decoders by name: the generic ones of the field and the family's.
    decoders: dict[str, Decoder]
    #: Name of the decoder used when none is given (a key of :attr:`decoders`).
    default_decoder: str
    #: The constructor that built the code (``"custom"`` for a wrapped matrix).
    family: str
    #: The label shown in reports.
    name: str
    #: The constructor's parameters, kept for reports and code files.
    params: dict[str, Any]


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
        Float64 decodes are accepted when their error bound ``gamma_{t+2} canc + residual + gamma_{t+1} (canc + 1)``
        (``gamma_w = w u / (1 - w u)``, unit roundoff ``u``, cancellation factor ``canc`` the worst column of
        ``|A_F| |B|``, ``t`` rounded operations per coordinate, residual
        ``||A_F B - E||_inf``) is at most ``rtol``; decodes of other dtypes use their own unit roundoff and the
        tolerance with the same share of their digits (``2.3e-4`` for float32 at the default; see
        ``docs/acceptance.md``).
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

    A matrix given as a :mod:`scipy.sparse` array is stored sparse (memory proportional to its non-zeros) and is
    the same code as its dense form:

    >>> import scipy.sparse
    >>> S = scipy.sparse.csr_array(np.array([[1.0, -1, 0], [0, 1, 0.5], [2, 0, 1]]))
    >>> sparse = gc.GradientCode(S, s=1)
    >>> sparse.sparse, sparse.nnz, sparse == gc.GradientCode(S.toarray(), s=1)
    (True, 6, True)

    The same matrix in floating point, decoding real gradients:

    >>> code = gc.GradientCode(np.array([[1, -1, 0], [0, 1, 0.5], [2, 0, 1]]), s=1)
    >>> G = np.arange(12.0).reshape(3, 4)          # k = 3 partial gradients of length 4
    >>> Y = code.encode(G)                          # one message per worker
    >>> code.decode([0, 2], Y)                      # worker 1 straggles
    array([12., 15., 18., 21.])
    """

    #: Stragglers tolerated: any ``n - s`` responders recover the gradient.
    s: int
    #: Tolerance on the predicted relative error of a float64 decode.
    rtol: float

    def __init__(self, B: MatrixLike, s: int, *, m: int = 1, rtol: float = DEFAULT_RTOL, **kwargs: Any) -> None:
        super().__init__(B, m=m, **kwargs)
        self.s = check_int("s", s, 0, self.n - 1)
        self.rtol = check_real("rtol", rtol, 0, 1, open_lo=True, open_hi=True)
        if type(self) is GradientCode:      # a matrix given by hand (families prove their own structure)
            self._check_replication()

    def _check_replication(self) -> None:
        """Warn about a matrix that cannot tolerate ``s`` stragglers: a partition held by ``c <= s`` workers is lost
        when those ``c`` straggle (the other rows are zero on its columns, so no ``A_F`` gives ``A_F B = E``).
        One pass over the non-zeros; a necessary condition only. A warning, not an error: such a code is still a
        valid object (tests of verifiers build them on purpose), and :func:`gradcodes.verify` reports it FAILS."""
        rep = np.asarray(self.replication)
        short = np.flatnonzero(rep <= self.s)
        if not short.size:
            return
        import warnings

        j = int(short[0])
        why = (f"partition {j} is stored on no worker" if rep[j] == 0 else
               f"partition {j} is held by {int(rep[j])} worker(s), so s={self.s} stragglers holding it leave it out "
               f"of every decode (s at most {int(rep.min()) - 1} for this matrix)")
        warnings.warn(f"GradientCode(B, s={self.s}) cannot recover the sum from every n - s responders: {why}; "
                      f"{short.size} of the {self.k} partitions have fewer than s + 1 = {self.s + 1} holders "
                      f"(gradcodes.verify(code) reports FAILS)", UserWarning, stacklevel=3)

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

    def __init__(self, B: MatrixLike, *, straggle_probabilities: ProbabilitiesLike | None = None,
                 s: int | None = None, **kwargs: Any) -> None:
        super().__init__(B, **kwargs)
        self.s = None if s is None else check_int("s", s, 0, self.n - 1)
        if straggle_probabilities is not None:
            straggle_probabilities = _check_probabilities(straggle_probabilities, self.n)
        self.straggle_probabilities = straggle_probabilities

    def approximation_error(self, responders: Responders, decoder: str | Decoder | None = None) -> float:
        """``||A_F B - E||_2`` (Frobenius for m > 1): the error of the decoded sum per unit of gradient norm.

        Parameters
        ----------
        responders : iterable of int or bool mask
            The workers whose messages arrived.
        decoder : str or Decoder, optional
            Default: the code's default decoder.

        Returns
        -------
        float
            The error (0 up to rounding when the responders decode exactly).

        Examples
        --------
        >>> import gradcodes as gc
        >>> code = gc.expander_code(8, 3, rng=0)
        >>> f"{code.approximation_error([0, 1, 2, 3, 4, 5]):.3f}"         # workers 6 and 7 straggle
        '0.354'
        """
        F, mask = self._mask(responders)
        A = self._raw_decoding_matrix(F, mask, self._decoder(decoder))[0]
        if self.exact:
            R = A @ self._B - self._target
            return float(np.sqrt(float(sum(v * v for v in R.flat))))
        return float(np.linalg.norm(A @ self._B - self._target))



def _check_probabilities(p: Any, n: int) -> np.ndarray:
    """Straggle probabilities: a length-``n`` sequence of real numbers (floats, Fractions, or strings such as
    ``"1/10"``) in the open interval (0, 1); float64 array, or object array of Fractions when all are exact."""
    name = "straggle_probabilities"
    if isinstance(p, (str, bytes)) or not hasattr(p, "__iter__") or isinstance(p, (set, dict)):
        raise GradcodesTypeError(f"{name} must be a sequence of n={n} probabilities, got {type(p).__name__}")
    values = list(p)
    if len(values) != n:
        raise GradcodesValueError(f"{name} must have length n={n}, got {len(values)}")
    exact = []
    for i, v in enumerate(values):
        if isinstance(v, str):
            try:
                v = Fraction(v.strip())
            except (ValueError, ZeroDivisionError):
                raise GradcodesTypeError(f"{name}[{i}] = {v!r} is not a number") from None
        if isinstance(v, bool) or not isinstance(v, (numbers.Real, Fraction)) and not hasattr(v, "is_Rational"):
            raise GradcodesTypeError(f"{name}[{i}] must be a real number, got {v!r} of type {type(v).__name__}")
        if not (0 < v < 1):
            raise GradcodesValueError(f"{name}[{i}] = {v!r} must lie in the open interval (0, 1)")
        exact.append(v)
    if all(isinstance(v, (Fraction, numbers.Integral)) or hasattr(v, "is_Rational") for v in exact):
        return np.array([to_fraction(v, name) for v in exact], dtype=object)
    return np.array([float(v) for v in exact], dtype=np.float64)
