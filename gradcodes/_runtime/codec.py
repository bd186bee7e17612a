"""A rank's encode and decode of messages (any transport): :class:`WorkerEncoder` builds worker ``i``'s own message
``y_i = sum_{j,u} B[i, j m + u] g_j^{(u)}`` from the partitions it stores (Tandon et al. 2017, Section 2; Ye &
Abbe 2018, Section 2 for ``m > 1``), :class:`Combiner` combines a parent's responders ``F`` with the decoding
matrix ``A_F`` (block ``u`` of the gradient is ``sum_{i in F} A_F[u, i] y_i``), plans and error estimates cached
per responder set and dtype, and :class:`UnitTracker` holds a wait until a format numpy lacks (bfloat16) can
trust the decode. Who sends to whom is ``gradcodes._runtime.layout``.
"""

from __future__ import annotations

import math
from collections import OrderedDict
from collections.abc import Callable
from typing import Any

import numpy as np

from .. import ApproximateCode, DecodingError, LinearCode
from .._base.aliases import ArrayLike, DTypeLike
from .._base.errors import GradcodesTypeError, GradcodesValueError
from .._core.apply import combine_rows
from .._core.decoders import Decoder
from .._core.numerics import real_error_bound, tolerance_for
from .engine import finite

__all__ = ["WorkerEncoder", "Combiner", "UnitTracker"]


def _float(M: Any) -> np.ndarray:
    """A decoding or encoding matrix as float64 (Fractions are rounded once)."""
    arr = np.asarray(M)
    if arr.dtype == object:
        return np.vectorize(float, otypes=[np.float64])(arr)
    if arr.dtype.kind == "c":
        raise GradcodesTypeError("complex codes are not supported by the MPI runtime (gradients are real)")
    return arr.astype(np.float64)


class WorkerEncoder:
    """Worker ``i``'s own message from its own partial gradients only: ``y_i = sum_{j in S_i, u} B[i, j m + u]
    g_j^{(u)}`` over the partitions ``S_i`` it stores, written into a preallocated buffer (cost proportional to the
    worker's load, no gradient-sized temporary).

    Everything that does not change between iterations is done once here: the arguments are checked, the
    coefficients ``B[i, j m + u]`` are cast to the messages' dtype and their zeros dropped, and the sequence of
    row operations is fixed. :meth:`encode` then only calls ``partial_gradient`` and runs that sequence: for
    ``m = 1`` one pass per stored partition (a copy, add or subtract for coefficients ``+-1``, one BLAS ``axpy``
    otherwise), the same sums as
    :meth:`gradcodes.LinearCode.encode_worker` without its per-call validation.

    Parameters
    ----------
    code : LinearCode
    worker : int
    p : int
        Gradient length.
    dtype : numpy dtype
        The messages' dtype (float32 stays float32).

    Raises
    ------
    GradcodesValueError
        If ``worker`` is not in ``[0, n)`` or ``p < 1``.
    GradcodesTypeError
        If the code is over GF(p) or the complex numbers, or ``dtype`` is not a float dtype.

    Examples
    --------
    >>> import numpy as np, gradcodes as gc
    >>> from gradcodes.mpi import WorkerEncoder
    >>> code = gc.cyclic_repetition(4, 1, rng=0)
    >>> enc = WorkerEncoder(code, 2, 3, np.float64)             # worker 2, gradients of length 3
    >>> enc.partitions, enc.q
    ([2, 3], 3)
    >>> G = np.arange(12.0).reshape(4, 3)                       # the four partial gradients
    >>> out = np.empty(enc.q)
    >>> enc.encode(None, lambda params, j: G[j], out)           # calls the callback for partitions 2 and 3 only
    >>> bool(np.allclose(out, code.encode(G)[2]))
    True
    """

    def __init__(self, code: LinearCode, worker: int, p: int, dtype: DTypeLike) -> None:
        if code.field.startswith("GF("):
            raise GradcodesTypeError(f"a code over {code.field} cannot run on real gradients")
        if code.field == "complex":
            raise GradcodesTypeError("complex codes are not supported by the MPI runtime (gradients are real)")
        self.code = code
        self.worker = int(worker)
        if not 0 <= self.worker < code.n:
            raise GradcodesValueError(f"worker must be in [0, n - 1] = [0, {code.n - 1}], got {worker}")
        self.m = code.m
        self.p = int(p)
        if self.p < 1:
            raise GradcodesValueError(f"p must be an integer >= 1, got {p}")
        self.q = -(-self.p // self.m)
        self.dtype = np.dtype(dtype)
        if self.dtype.kind != "f":
            raise GradcodesTypeError(f"dtype must be a float dtype, got {self.dtype}")
        self.partitions = [int(j) for j in code.supports[worker]]
        self._parts: list[Any] = [None] * len(self.partitions)
        k, m = code.k, self.m
        if code.sparse and code._entry_dtype().kind == "f":   # the worker's row from the non-zeros: no dense B
            indptr, indices, data = code._csr_parts()
            lo, hi = int(indptr[self.worker]), int(indptr[self.worker + 1])
            full = np.zeros(k * m, dtype=self.dtype)
            full[indices[lo:hi]] = data[lo:hi].astype(self.dtype)
            row = full.reshape(k, m)
        else:
            row = code.float_B(self.dtype)[self.worker].reshape(k, m)
        #: ``weights[j, u] = B[i, j m + u]`` in the messages' dtype (shape ``(k,)`` when ``m = 1``), read-only: the
        #: argument of a ``coded_gradient(params, weights)`` callback
        self.weights = np.ascontiguousarray(row[:, 0] if m == 1 else row)
        self.weights.flags.writeable = False
        coef = row[self.partitions]                                  # (load, m)
        # (u, positions a of the partials with a non-zero coefficient, those coefficients, block length)
        self._plan = []
        for u in range(m):
            L = max(0, min(self.q, self.p - u * self.q))
            nz = np.flatnonzero(coef[:, u] != 0)
            self._plan.append((u, [int(a) for a in nz], [coef[a, u].item() for a in nz], L))
        self._shape = (self.p,)

    def check_part(self, g: Any, j: int) -> np.ndarray:
        """A partial gradient checked against the run's length and dtype (clear errors).

        Parameters
        ----------
        g : object
            What ``partial_gradient(params, j)`` returned.
        j : int
            The partition (named in the error message).

        Returns
        -------
        ndarray, shape (p,)
            ``g`` itself.

        Raises
        ------
        GradcodesValueError
            If ``g`` is not a numpy array of shape ``(p,)``.
        GradcodesTypeError
            If its dtype is not the run's.

        Examples
        --------
        >>> import numpy as np, gradcodes as gc
        >>> from gradcodes.mpi import WorkerEncoder
        >>> enc = WorkerEncoder(gc.cyclic_repetition(4, 1, rng=0), 2, 3, np.float64)
        >>> enc.check_part(np.zeros(3), 2)
        array([0., 0., 0.])
        >>> enc.check_part(np.zeros(3, dtype=np.float32), 2)
        Traceback (most recent call last):
        ...
        gradcodes.GradcodesTypeError: partial_gradient(params, 2) returned dtype float32; the run uses float64 ...
        """
        p = self.p
        if not isinstance(g, np.ndarray) or g.shape != (p,):
            raise GradcodesValueError(f"partial_gradient(params, {j}) must return a flat numpy array of length {p}, "
                             f"got {type(g).__name__} {getattr(g, 'shape', '')}")
        if g.dtype != self.dtype:
            raise GradcodesTypeError(f"partial_gradient(params, {j}) returned dtype {g.dtype}; the run uses "
                            f"{self.dtype} (the parameters' dtype)")
        return g

    def check_message(self, y: Any) -> np.ndarray:
        """A ``coded_gradient`` result checked against the message length and dtype.

        Parameters
        ----------
        y : object
            What ``coded_gradient(params, weights)`` returned.

        Returns
        -------
        ndarray, shape (q,)
            ``y`` itself.

        Raises
        ------
        GradcodesValueError
            If ``y`` is not a numpy array of shape ``(q,)`` (``q = ceil(p / m)``) and the run's dtype.

        Examples
        --------
        >>> import numpy as np, gradcodes as gc
        >>> from gradcodes.mpi import WorkerEncoder
        >>> enc = WorkerEncoder(gc.cyclic_repetition(4, 1, rng=0), 2, 3, np.float64)
        >>> enc.check_message(np.ones(3))
        array([1., 1., 1.])
        >>> enc.check_message(np.ones(2))
        Traceback (most recent call last):
        ...
        gradcodes.GradcodesValueError: coded_gradient(params, weights) must return a flat numpy array of length ...
        """
        if not isinstance(y, np.ndarray) or y.shape != (self.q,) or y.dtype != self.dtype:
            raise GradcodesValueError(f"coded_gradient(params, weights) must return a flat numpy array of length "
                             f"ceil(length/m)={self.q} and dtype {self.dtype}, got {type(y).__name__} "
                             f"{getattr(y, 'shape', '')} {getattr(y, 'dtype', '')}")
        return y

    def encode(self, params: np.ndarray, partial_gradient: Callable[[np.ndarray, int], ArrayLike],
               out: np.ndarray) -> None:
        """Write the message for ``params`` into ``out`` (length ``q``, C-contiguous, the run's dtype).

        ``partial_gradient(params, j)`` is called once per stored partition; each result must stay valid until
        the message is built (return a new array, or one buffer per partition). Its shape and dtype are compared
        with the run's (two attribute reads); nothing else is validated per call.

        Parameters
        ----------
        params : ndarray
            The parameters, passed to ``partial_gradient`` as they are.
        partial_gradient : callable
            ``partial_gradient(params, j)``: the gradient of partition ``j``, a numpy array of shape ``(p,)`` in
            the run's dtype.
        out : ndarray, shape (q,)
            The message buffer (C-contiguous, the run's dtype), overwritten.

        Raises
        ------
        GradcodesValueError, GradcodesTypeError
            If a partial gradient has the wrong shape or dtype (:meth:`check_part`).

        Examples
        --------
        >>> import numpy as np, gradcodes as gc
        >>> from gradcodes.mpi import WorkerEncoder
        >>> code = gc.fractional_repetition(4, 1)                  # worker 0 stores partitions 0 and 1
        >>> enc = WorkerEncoder(code, 0, 2, np.float64)
        >>> out = np.empty(enc.q)
        >>> enc.encode(np.zeros(2), lambda w, j: np.full(2, float(j + 1)), out)
        >>> out.tolist()                                            # 1 + 2 in each coordinate
        [3.0, 3.0]
        """
        parts = self._parts
        shape, dt = self._shape, self.dtype
        for a, j in enumerate(self.partitions):
            g = partial_gradient(params, j)
            if not isinstance(g, np.ndarray) or g.shape != shape or g.dtype != dt:
                self.check_part(g, j)
            parts[a] = g
        try:
            if self.m == 1:
                u, nz, cs, _ = self._plan[0]
                combine_rows(out, cs, parts, nz)
            else:
                q = self.q
                out.fill(0)
                for u, nz, cs, L in self._plan:
                    if L and nz:
                        combine_rows(out[:L], cs, [parts[a][u * q:u * q + L] for a in nz], range(len(nz)),
                                     accumulate=True)
        finally:
            for a in range(len(parts)):
                parts[a] = None


class Combiner:
    """A parent's linear combination of its children's messages: ``out[u] (+)= sum_{i in F} A_F[u, i] y_i``.

    ``weights(F, dtype)`` gives the ``m x K`` matrix for the rows ``F`` that arrived (cached per set and dtype,
    least recently used out); for a GradientCode the decoding matrix is validated by the code's acceptance rule in
    the messages' dtype (``DecodingError`` when the set cannot decode to the tolerance of that dtype, exactly as
    :meth:`gradcodes.LinearCode.decode` would refuse it), for an ApproximateCode it comes from the chosen (optimal
    or fixed) decoder. With the matrix, each set caches its combination plan (the non-zero coefficients cast to
    the messages' dtype) and its error estimate, so a repeated responder set costs one multiply-add pass per
    message (a copy or an add for coefficients ``+-1``, BLAS ``axpy`` otherwise) and nothing else.

    Parameters
    ----------
    code : LinearCode
        The code decoded at this parent (the whole code for flat layouts, the inner code for tree parents).
    decoder : str or Decoder, optional
        Decoder name for :meth:`gradcodes.LinearCode.decoding_matrix`.
    """

    def __init__(self, code: LinearCode, decoder: str | Decoder | None = None, cache_size: int = 256) -> None:
        self.code = code
        self.decoder = decoder
        self.m = code.m
        self._cache: OrderedDict[tuple[tuple[int, ...], str], np.ndarray] = OrderedDict()
        self._plans: OrderedDict[tuple[tuple[int, ...], str], list[tuple[list[int], list[Any]]]] = OrderedDict()
        self._errors: OrderedDict[tuple[tuple[int, ...], str], float] = OrderedDict()
        self._unit_ok: OrderedDict[tuple[tuple[int, ...], float], bool] = OrderedDict()
        self._size = cache_size

    def _remember(self, cache: OrderedDict, key: Any, value: Any) -> None:
        cache[key] = value
        while len(cache) > self._size:
            cache.popitem(last=False)

    def weights(self, rows: list[int], dtype: DTypeLike = np.float64) -> np.ndarray:
        rows_key = tuple(sorted(rows))
        dt = np.dtype(dtype)
        key = (rows_key, dt.str)
        W = self._cache.get(key)
        if W is None:
            if not rows_key:
                W = np.zeros((self.m, self.code.n))
            else:
                W = _float(self.code.decoding_matrix(list(rows_key), decoder=self.decoder, dtype=dt))
            W.flags.writeable = False
            self._remember(self._cache, key, W)
        else:
            self._cache.move_to_end(key)
        return W

    def plan(self, rows: list[int], dtype: DTypeLike,
             coef_dtype: DTypeLike | None = None) -> list[tuple[list[int], list[Any]]]:
        """Per output block ``u``: the rows with a non-zero coefficient (ascending) and those coefficients in
        ``coef_dtype`` (default ``dtype``), the decode accepted by the rule in the messages' ``dtype`` (cached per
        set and dtypes). ``coef_dtype=float64`` for float32 messages: coefficients not rounded to float32, for
        a decode accumulated in float64."""
        dt = np.dtype(dtype)
        ct = dt if coef_dtype is None else np.dtype(coef_dtype)
        key = (tuple(sorted(rows)), dt.str if ct == dt else dt.str + ct.str)
        plan = self._plans.get(key)
        if plan is None:
            W = self.weights(rows, dt).astype(ct)
            plan = []
            for u in range(self.m):
                idx = [i for i in key[0] if W[u, i] != 0]
                plan.append((idx, [W[u, i].item() for i in idx]))
            self._remember(self._plans, key, plan)
        return plan

    def single(self, rows: list[int], dtype: DTypeLike) -> int | None:
        """The row whose message is the decode itself (``m = 1``, one non-zero coefficient, exactly 1, as the
        0/1 decodes of fractional repetition or a CodedReduce parent's ``n - s = 1`` child), else None."""
        if self.m != 1:
            return None
        idx, cs = self.plan(rows, dtype)[0]
        return idx[0] if len(idx) == 1 and cs[0] == 1 else None

    def error_estimate(self, rows: list[int], dtype: DTypeLike) -> float:
        """The code's predicted relative error of this decode (:meth:`gradcodes.LinearCode.error_estimate`),
        cached per responder set and dtype."""
        if not rows:
            return float("nan")
        key = (tuple(sorted(rows)), np.dtype(dtype).str)
        est = self._errors.get(key)
        if est is None:
            if isinstance(self.code, ApproximateCode):
                est = float(self.code.approximation_error(list(key[0]), decoder=self.decoder))
            else:
                est = float(self.code.error_estimate(list(key[0]), decoder=self.decoder, dtype=dtype))
            self._remember(self._errors, key, est)
        return est

    def check_unit(self, rows: list[int], u: float, name: str) -> None:
        """Raise :class:`gradcodes.DecodingError` unless the decode of ``rows`` meets the acceptance rule for
        messages in a real format that numpy lacks, given by its unit roundoff ``u`` and ``name`` (bfloat16: ``u =
        2**-8``): the bound :func:`gradcodes._core.numerics.real_error_bound` of the set's cancellation, residual and
        terms against :func:`gradcodes._core.numerics.tolerance_for` (cached per set)."""
        key = (tuple(sorted(rows)), float(u))
        if key in self._unit_ok:
            self._unit_ok.move_to_end(key)
            return
        code: Any = self.code
        F, mask = code._mask(list(key[0]))
        A, res, canc = code._raw_decoding_matrix(F, mask, code._decoder(self.decoder))
        bound = float(real_error_bound(canc, res, u, code._terms(A)))
        tol = tolerance_for(code.rtol, u)
        if not (math.isfinite(bound) and bound <= tol):
            raise DecodingError(
                f"responders {F.tolist()} cannot recover the gradient to the {name} tolerance {tol:.3g} (rtol="
                f"{code.rtol:g} for float64): error bound {bound:.3g} in {name} (unit roundoff {u:.2g}; residual "
                f"{res:.3g}, cancellation {canc:.3g}); float32 or float64 messages, or a code without cancellation "
                f"(e.g. gradcodes.stable_binary), decode within their tolerance", F, res)
        self._remember(self._unit_ok, key, True)

    def combine(self, rows: list[int], buf: np.ndarray, out: np.ndarray, tmp: np.ndarray | None = None,
                accumulate: bool = False, base: np.ndarray | None = None) -> None:
        """``out`` (length ``m q``) = [``out`` +] the combination of ``buf[rows]`` (each of length ``q``).

        ``base`` (same length as ``out``, another array): ``out = base +`` the combination, in one pass over
        ``base`` (a tree parent adds its children's decode to a ``coded_gradient`` message without copying it
        first: the first message's add or subtract reads ``base`` and writes ``out``).
        ``tmp`` is not needed any more (kept for callers of the earlier signature)."""
        q = buf.shape[1]
        for u, (idx, cs) in enumerate(self.plan(rows, buf.dtype)):
            self._block(out[u * q:(u + 1) * q], idx, cs, buf, accumulate,
                        None if base is None else base[u * q:(u + 1) * q])

    @staticmethod
    def _block(o: np.ndarray, idx: list[int], cs: list[Any], buf: np.ndarray, accumulate: bool,
               b: np.ndarray | None) -> None:
        """One output block: ``o = [o +] sum cs[a] buf[idx[a]]``, or ``o = b + ...`` (one pass over ``b``)."""
        if b is None:
            combine_rows(o, cs, buf, idx, accumulate=accumulate)
            return
        if idx and cs[0] in (1, -1):
            (np.add if cs[0] == 1 else np.subtract)(b, buf[idx[0]], out=o)
            idx, cs = idx[1:], cs[1:]
        else:
            np.copyto(o, b)
        combine_rows(o, cs, buf, idx, accumulate=True)

    def combine_finite(self, rows: list[int], buf: np.ndarray, out: np.ndarray,
                       base: np.ndarray | None = None) -> bool:
        """``out`` (length ``m q``, C-contiguous) = [``base`` +] the combination of ``buf[rows]``; returns whether
        every entry of ``out`` is finite.

        The same multiply-adds as :meth:`combine` (one pass per message: a copy, add or BLAS ``axpy``), then one
        check of each output block for NaN/inf (its sum of squares, one BLAS ``dot``; the exact check only when
        that sum is not finite, :func:`gradcodes._runtime.engine.finite`): one check of the result in place of one check
        per message, the messages inspected one by one only when it fails (a NaN in ``base``, the parent's own
        message, fails it too: the caller tells the two apart). Checking cache-sized pieces of the result
        right after writing them (an earlier way) was slower on the project's 2-core test machine: six float64
        messages 125 against 116 microseconds at ``q = 10^5`` and 1.88 against 1.62 ms at ``10^6``
        (``benchmarks/runtime/combine_check.py``, medians of 7 runs; the combine alone, as the floor program does it,
        106 and 1,521): the per-piece calls cost more than the memory traffic they save."""
        q = buf.shape[1]
        ok = True
        with np.errstate(over="ignore", invalid="ignore"):
            for u, (idx, cs) in enumerate(self.plan(rows, buf.dtype)):
                o_u = out[u * q:(u + 1) * q]
                self._block(o_u, idx, cs, buf, False, None if base is None else base[u * q:(u + 1) * q])
                if ok and not finite(o_u):
                    ok = False
        return ok


class UnitTracker:
    """A wait policy's tracker that also requires the decode of the rows so far to meet the rule of a format given
    by its unit roundoff (:meth:`Combiner.check_unit`; bfloat16): the wait goes on past a set that the policy
    would take but whose decode that format cannot trust."""

    def __init__(self, tracker: Any, combiner: Combiner, u: float, name: str) -> None:
        self.inner, self.combiner, self.u, self.name = tracker, combiner, float(u), name
        self.rows: list[int] = []

    def reset(self) -> None:
        self.rows = []
        self.inner.reset()

    def add(self, row: int) -> bool:
        self.rows.append(int(row))
        if not self.inner.add(row):
            return False
        try:
            self.combiner.check_unit(self.rows, self.u, self.name)
        except DecodingError:
            return False
        return True
