"""Decoding: the sum of the partial gradients from the responders' messages, ``g = A_F Y``.

The responders may come in any order or as a boolean mask, the messages as the full receive buffer or one row per
responder (:meth:`DecodeMixin._message_rows` states the contract); only the messages with a non-zero decoding
coefficient are read, and a floating-point decode is accepted only within its tolerance in the messages' dtype
(:mod:`gradcodes._core.acceptance`).
"""

from __future__ import annotations

import numbers
from typing import Any, Literal, overload

import numpy as np

from .._base.aliases import Array, MatrixLike, Responders
from .._base.arrays import array_io
from .._base.errors import GradcodesRuntimeError, GradcodesTypeError, GradcodesValueError
from .._base.validate import check_choice, check_int, check_responders
from .acceptance import DecodeInfo, DecodingError, NonFiniteMessageError
from .apply import apply_rows
from .code_base import CodeBase
from .decoders import Decoder
from .fields import to_fraction
from .numerics import error_estimate, underflow_error

__all__ = ["DecodeMixin"]


class DecodeMixin(CodeBase):
    """:meth:`decode` of :class:`gradcodes.LinearCode`, with its responder and message-layout checks."""

    def _responder_order(self, responders: Any) -> tuple[np.ndarray | None, bool]:
        """``(order, ordered)``: the responders as given (int64, in their order; None for a boolean mask) and
        whether that order is meaningful (False for sets). Masks given as lists of bools become boolean arrays
        in :meth:`_mask`; a 0/1 *integer* mask is refused rather than read as worker indices."""
        n = self._n
        if isinstance(responders, np.ndarray):
            if responders.dtype == bool:
                return None, True
            if responders.ndim != 1:
                raise GradcodesValueError(
                    f"responders must be a 1-D sequence of worker indices or a boolean mask of shape "
                    f"({n},), got an array of shape {responders.shape}")
            raw = responders.tolist()
        elif isinstance(responders, (set, frozenset)):
            return None, False
        elif isinstance(responders, (str, bytes)) or not hasattr(responders, "__iter__"):
            raise GradcodesTypeError(
                f"responders must be a sequence of worker indices in [0, {n - 1}] or a boolean mask of "
                f"length {n}, got {type(responders).__name__}")
        else:
            raw = list(responders)
        if raw and all(isinstance(r, (bool, np.bool_)) for r in raw):
            return None, True
        if n >= 3 and len(raw) == n and all(isinstance(r, numbers.Integral) and not isinstance(r, bool)
                                            and r in (0, 1) for r in raw):
            raise GradcodesTypeError(
                f"responders looks like a 0/1 mask of length n={n}, which is ambiguous with worker "
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
                raise GradcodesValueError(
                    f"responders given as a boolean mask must have length n={self._n}, got {len(raw)}")
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
                raise GradcodesValueError(
                    f"messages has n={n} rows and responders lists all {n} workers in a non-sorted "
                    f"order, so the rows could be the full buffer (row i = worker i) or the responders' "
                    f"rows in the order given: pass rows='full' or rows='compact'")
            if nrows == r:
                rows = "compact"
            elif nrows == n:
                rows = "full"
            else:
                raise GradcodesValueError(
                    f"messages must have n={n} rows (full buffer) or one row per responder ({r}) in the "
                    f"order of responders, got {nrows} rows")
        if rows == "full":
            if nrows != n:
                raise GradcodesValueError(f"messages with rows='full' must have n={n} rows, got {nrows}")
            return None
        if nrows != r:
            raise GradcodesValueError(
                f"messages with rows='compact' must have one row per responder ({r}), got {nrows}")
        seq = F if order is None else order
        if not ordered and r != n and not np.array_equal(seq, np.arange(n)[:r]):
            raise GradcodesValueError(
                "responders is a set, which has no order: compact message rows need responders as a "
                "sequence (row r is the message of worker responders[r]), or pass the full buffer")
        where = np.full(n, -1, dtype=np.int64)
        where[seq] = np.arange(r)
        return where

    @overload
    def decode(self, responders: Responders, messages: MatrixLike, *, decoder: str | Decoder | None = ...,
               length: int | None = ..., return_info: Literal[False] = ..., rows: str = ...) -> Array: ...

    @overload
    def decode(self, responders: Responders, messages: MatrixLike, *, decoder: str | Decoder | None = ...,
               length: int | None = ..., return_info: Literal[True], rows: str = ...) -> tuple[Array, DecodeInfo]: ...

    @array_io
    def decode(self, responders: Responders, messages: MatrixLike, *, decoder: str | Decoder | None = None,
               length: int | None = None, return_info: bool = False,
               rows: str = "auto") -> Array | tuple[Array, DecodeInfo]:
        """The decoded sum of the partial gradients from the responders' messages.

        Only the messages whose decoding coefficient is non-zero are read (a 0/1 decoder such as fractional
        repetition's reads one worker per group), without a gathered copy, in the messages' dtype; the cost is
        one streaming read of those rows (see ``docs/numerics.md``). The decode is accepted only if its
        predicted error in the messages' dtype is within the code's tolerance for that dtype (see
        the acceptance rule, ``docs/acceptance.md``); otherwise it raises :class:`DecodingError` and names the cause.

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
            Length of the gradient (to drop the zero padding when ``m`` does not divide it); default
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
        terms = self._terms(A)
        self._accept(F, A, res, canc, dtype=M.dtype, terms=terms)
        src = cols if where is None else where[cols]
        if np.any(src < 0):                      # a decoder put weight on a non-responder: never silently read it
            raise GradcodesRuntimeError(
                f"decoder {dec.name!r} gave weight to workers {cols[src < 0].tolist()} that did not respond")
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
                    raise NonFiniteMessageError(f"messages from responders {bad} contain NaN or infinite values", bad)
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

