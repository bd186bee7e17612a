"""Which responder sets can decode, asked once (:meth:`DecodableMixin.decodable`) or as messages arrive
(:meth:`DecodableMixin.decodability`, a :class:`Decodability` tracker).

A set ``F`` is **decodable** when the code's decode from ``F`` would be accepted: the default decoder's matrix
``A_F`` is computed and judged by exactly the rule of :meth:`gradcodes.LinearCode.decode` in the messages' dtype (exact
fields: ``A_F B = E`` exactly; floating point: the acceptance rule, ``docs/acceptance.md``, the error bound
the acceptance rule's bound, ``docs/acceptance.md`` within the code's tolerance for that dtype). So ``code.decodable(F,
dtype=dt)`` is True exactly when ``code.decoding_matrix(F, dtype=dt)`` returns (no :class:`~gradcodes.DecodingError`),
on this machine. A set the verifier judges *ok* (:func:`gradcodes._core.numerics.judge`) is decodable on every
machine; a
*borderline* set may be decodable on some machines and not others.

This includes sets smaller than ``n - s``: fractional repetition (Tandon et al. 2017, Section 3) decodes as soon
as one worker of every group has answered, a block-diagonal code (stable binary, grouped MDS, grouped random) as
soon as every block can decode, so a master that waits for the *earliest decodable set* instead of the first
``n - s`` messages finishes earlier (the iteration time is the maximum over groups of the minimum within each
group instead of the ``(n - s)``-th order statistic).

Fast paths (each agrees with the general rule; tested exhaustively on small codes):

* **groups** -- a code whose default decoder is the 0/1 group decoder on groups of identical 0/1 rows with
  disjoint supports covering every partition (fractional repetition, uncoded): decodable iff every group has a
  responder (then ``A_F B = E`` exactly with cancellation factor 1, accepted whenever its bound is within the
  tolerance, which is decided once per dtype). The tracker keeps a counter per group: O(1) per message.
* **coverage** -- every code: a decodable set stores every partition (a partition stored by no responder leaves a
  zero column in ``A_F B``), so the tracker counts the partitions still uncovered (O(load) per message) and runs
  the decoder only once they are all covered.
* **trees** (:class:`~gradcodes.CodedReduceCode`): a set decodes only if every parent whose message is used has
  at least ``n - s`` responding children (its own pattern rule), then the decode's acceptance.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .._base.aliases import DTypeLike, Responders
from .._base.errors import GradcodesTypeError, GradcodesValueError
from .._base.validate import check_int, check_responders
from .acceptance import DecodingError
from .code_base import CodeBase
from .numerics import DEFAULT_RTOL, accepts, cancellation, residuals, tolerance, widths

__all__ = ["DecodableMixin", "Decodability"]


#: bytes of responder masks kept as keys of a code's cache of verdicts (per dtype and rtol); cleared when full
_DECIDED_BYTES = 1 << 23


def _float_dtype(dtype: Any) -> np.dtype[Any]:
    dt = np.dtype(dtype)
    if dt.kind not in "fc":
        raise GradcodesTypeError(f"dtype must be a float or complex dtype (float32, float64, complex64, complex128), "
                         f"got {dt}")
    return dt


class DecodableMixin(CodeBase):
    """:meth:`decodable` and :meth:`decodability` of :class:`gradcodes.LinearCode`."""

    # ------------------------------------------------------------------ hooks
    def _pattern_ok(self, mask: np.ndarray) -> bool:
        """Hook: a code with its own straggler-pattern rule (trees) refuses patterns here; flat codes accept."""
        return True

    def _rtol(self) -> float:
        return float(getattr(self, "rtol", DEFAULT_RTOL))

    def _group_bounds(self) -> np.ndarray | None:
        """Group boundaries when the fast group rule applies (module docstring), else None; memoised."""
        if "decodable_groups" in self._memo:
            return self._memo["decodable_groups"]
        from .group_decoder import GroupDecoder

        out = None
        dec = self.decoders[self.default_decoder]
        if isinstance(dec, GroupDecoder) and dec.mode == "first" and self._m == 1 and not self._field.startswith(
                "GF(") and type(self)._usable is CodeBase._usable:
            bounds = dec.bounds
            nz = np.asarray(self._B != 0)
            ones = np.asarray(self._B == 1)
            ok = bool(bounds[0] == 0 and bounds[-1] == self._n and np.all(np.diff(bounds) > 0)
                      and np.array_equal(nz, ones))
            if ok:
                rows = nz[bounds[:-1]]                               # (G, k): each group's common row
                ok = bool(np.all(rows.sum(axis=0) == 1))            # disjoint supports covering every partition
                for g in range(bounds.size - 1):
                    ok = ok and bool(np.all(nz[bounds[g]:bounds[g + 1]] == rows[g]))
            out = bounds if ok else None
        self._memo["decodable_groups"] = out
        return out

    def _groups_accept(self, dtype: np.dtype[Any]) -> bool:
        """The group decode's verdict once every group has a responder: residual 0, cancellation 1,
        ``t = G + load`` terms."""
        bounds = self._group_bounds()
        assert bounds is not None
        if self.exact:
            return True
        terms = (bounds.size - 1) + int(self.loads.max())
        return bool(accepts(1.0, 0.0, self._rtol(), dtype, terms))

    def _decodable_set(self, F: np.ndarray, mask: np.ndarray, dtype: np.dtype[Any]) -> bool:
        """The decode's verdict for a validated set (no size floor); see :meth:`decodable`."""
        if F.size == 0 or not self._pattern_ok(mask):
            return False
        bounds = self._group_bounds()
        if bounds is not None:
            hit = np.add.reduceat(mask.astype(np.int64), bounds[:-1])
            return bool(np.all(hit > 0)) and self._groups_accept(dtype)
        if not np.all(np.asarray(self.support_matrix)[F].any(axis=0)):
            return False                                            # a partition nobody in F stores
        usable = self._usable(mask)
        if usable is not mask:
            F = np.flatnonzero(usable)
        try:
            A, res, canc = self._raw_decoding_matrix(F, usable, self._decoder(None))
        except (np.linalg.LinAlgError, ZeroDivisionError, ArithmeticError):
            return False
        terms = self._terms(A)
        try:
            self._accept(F, A, res, canc, dtype=dtype, terms=terms)
        except DecodingError:
            return False
        if type(self)._accept is CodeBase._accept:                   # approximate codes accept anything:
            if self.exact:                                          # "decodable" then means exact recovery
                return res == 0
            return bool(accepts(canc, res, self._rtol(), dtype, terms))
        return True

    def _decodable_masks(self, masks: np.ndarray, dtype: np.dtype[Any]) -> np.ndarray:
        """:meth:`decodable` for a batch of responder masks (b, n), with one batched decoder call for
        floating-point flat codes (the same formulas as a single decode; a batched product may round differently
        from a single one, so only sets within rounding of the tolerance can get another verdict)."""
        masks = np.asarray(masks, dtype=bool)
        out = np.zeros(masks.shape[0], dtype=bool)
        flat = type(self)._usable is CodeBase._usable and type(self)._pattern_ok is DecodableMixin._pattern_ok
        if self.exact or not flat or self._group_bounds() is not None or masks.shape[0] < 8:
            for t, msk in enumerate(masks):
                out[t] = self._decodable_set(np.flatnonzero(msk), msk, dtype)
            return out
        S = np.asarray(self.support_matrix)
        covered = (masks.astype(np.int64) @ S.astype(np.int64) > 0).all(axis=1) & masks.any(axis=1)
        idx = np.flatnonzero(covered)
        if idx.size == 0:
            return out
        A = np.asarray(self.decoding_matrices(masks[idx]))
        res = residuals(A, self._B, self._target)
        canc = cancellation(A, self._B, self._k)
        terms = widths(A) + self._max_load()
        out[idx] = accepts(canc, res, self._rtol(), dtype, terms)
        return out

    def _may_decode(self, F: np.ndarray, mask: np.ndarray) -> bool:
        """Whether a set smaller than ``n - s`` is let through to the decode's own acceptance: its residual is
        within the largest tolerance of any dtype (float16's), so that ``decodable(F, dtype=dt)`` implies that
        ``decoding_matrix(F, dtype=dt)`` returns, for every dtype."""
        if F.size == 0 or not self._pattern_ok(mask):
            return False
        bounds = self._group_bounds()
        if bounds is not None:
            return bool(np.all(np.add.reduceat(mask.astype(np.int64), bounds[:-1]) > 0))
        if not np.all(np.asarray(self.support_matrix)[F].any(axis=0)):
            return False
        try:
            res = self._raw_decoding_matrix(F, mask, self._decoder(None))[1]
        except (np.linalg.LinAlgError, ZeroDivisionError, ArithmeticError):
            return False
        return bool(res == 0) if self.exact else bool(res <= tolerance(self._rtol(), np.float16))

    # ------------------------------------------------------------------ public
    def decodable(self, responders: Responders, *, dtype: DTypeLike = np.float64) -> bool:
        """Whether the responders' messages can be decoded: True exactly when :meth:`decode` of messages of
        ``dtype`` from these responders (with the default decoder) would be accepted.

        The rows of the responders must span the target ``E = 1_k^T (x) I_m`` to the code's acceptance rule
        (exact fields: exactly; floating point: the error bound of the acceptance rule's bound, ``docs/acceptance.md``
        within the tolerance of ``dtype``, the acceptance rule, ``docs/acceptance.md``). Sets smaller than ``n - s``
        count
        too: fractional repetition decodes from one worker per group (Tandon et al. 2017, Section 3), and :meth:`decode`
        accepts such sets. For an :class:`~gradcodes.ApproximateCode` it means *exact* recovery to the default
        tolerance (``rtol = 1e-8`` for float64). Trees need ``n - s`` responding children at every parent
        whose message is used (Reisizadeh et al., CodedReduce).

        Parameters
        ----------
        responders : sequence of int, or boolean mask of length n
            The workers whose messages arrived.
        dtype : float or complex dtype, default float64
            The dtype of the messages (float32 decodes are judged by float32's tolerance).

        Returns
        -------
        bool

        Examples
        --------
        >>> import gradcodes as gc
        >>> code = gc.fractional_repetition(6, 2)          # groups {0, 1, 2} and {3, 4, 5}
        >>> code.decodable([0, 5]), code.decodable([0, 1, 2])
        (True, False)
        >>> gc.cyclic_repetition(6, 2, rng=0).decodable([0, 5])
        False
        """
        dt = _float_dtype(dtype)
        if isinstance(responders, np.ndarray) and responders.dtype == bool:
            F = check_responders(responders, self._n, min_size=0)
        else:
            F = check_responders(list(responders) if isinstance(responders, (set, frozenset)) else responders,
                                 self._n, min_size=0)
        mask = np.zeros(self._n, dtype=bool)
        mask[F] = True
        return self._decodable_set(F, mask, dt)

    def decodability(self, *, dtype: DTypeLike = np.float64) -> Decodability:
        """A tracker of the responders as their messages arrive: ``tracker.add(worker)`` returns whether the
        responders so far are :meth:`decodable`.

        Cheap enough to call per message: a counter per group for group codes, a count of uncovered partitions
        for every code (the decoder runs only once every partition is covered), the pattern rule for trees. The
        verdict of a covered set is kept with the code (per dtype, shared by every tracker of the code in the
        process; bounded memory), so a set seen before costs one dictionary look-up.

        Parameters
        ----------
        dtype : dtype, default float64
            The messages' dtype: a set is decodable when its decode passes the acceptance rule in it (as for
            :meth:`decodable`).

        Returns
        -------
        Decodability
            A new tracker with no responders yet.

        Examples
        --------
        >>> import gradcodes as gc
        >>> t = gc.fractional_repetition(6, 2).decodability()
        >>> [t.add(w) for w in (1, 2, 4)]
        [False, False, True]
        >>> t.responders, t.done
        ([1, 2, 4], True)
        """
        return Decodability(self, dtype=dtype)


class Decodability:
    """Incremental :meth:`~gradcodes.LinearCode.decodable`: add responders one at a time (see
    :meth:`gradcodes.LinearCode.decodability`).

    Attributes
    ----------
    code : LinearCode
    dtype : numpy.dtype
    responders : list of int
        The workers added so far, in arrival order.
    done : bool
        Whether the responders so far are decodable (the value of the last :meth:`add`).

    Examples
    --------
    >>> import gradcodes as gc
    >>> t = gc.fractional_repetition(6, 2).decodability()       # a code's tracker
    >>> [t.add(w) for w in (1, 2, 4)], t.responders
    ([False, False, True], [1, 2, 4])
    """

    def __init__(self, code: DecodableMixin, *, dtype: DTypeLike = np.float64) -> None:
        self.code = code
        self.dtype = _float_dtype(dtype)
        n = code.n
        self.responders: list[int] = []
        self.done = False
        self._bounds = code._group_bounds()
        if self._bounds is not None:
            self._group_of = np.repeat(np.arange(self._bounds.size - 1), np.diff(self._bounds))
            self._hits = np.zeros(self._bounds.size - 1, dtype=np.int64)
            self._missing_groups = self._bounds.size - 1
        else:
            # per worker its partitions as Python ints (a count per partition, updated in Python: a few
            # partitions per message cost less than the numpy calls; the counts touched are reset one by one)
            self._supports = [[int(j) for j in sup] for sup in code.supports]
            self._cover = [0] * int(code.k)
            self._uncovered = int(code.k)
        # the verdict of each covered set, shared by every tracker of this code and dtype: whether a set decodes
        # is a function of the set (not of the arrival order), so each is decided once per process
        self._bits = 0
        self._rtol = self._group_rtol = -1.0
        self._group_ok = False
        self._decided: dict[int, bool] = {}
        self._limit = max(64, _DECIDED_BYTES // (n // 8 + 64))

    def _verdicts(self) -> dict[int, bool]:
        """The code's verdicts for this dtype at its current ``rtol`` (a code's ``rtol`` may be changed)."""
        rtol = self.code._rtol()
        if rtol != self._rtol:
            self._rtol = rtol
            self._decided = self.code._memo.setdefault(f"decided {self.dtype.str} {rtol!r}", {})
        return self._decided

    def _groups_accept(self) -> bool:
        """The group rule's verdict at the code's current ``rtol`` (decided again only when it changes)."""
        rtol = getattr(self.code, "rtol", DEFAULT_RTOL)
        if rtol != self._group_rtol:
            self._group_rtol, self._group_ok = rtol, self.code._groups_accept(self.dtype)
        return self._group_ok

    def add(self, worker: int) -> bool:
        """Record that ``worker``'s message arrived; return whether the responders so far are decodable.

        Parameters
        ----------
        worker : int
            The worker whose message arrived, ``0 <= worker < n``.

        Returns
        -------
        bool
            Whether the responders so far can decode (:meth:`gradcodes.LinearCode.decodable`).

        Raises
        ------
        GradcodesValueError
            If ``worker`` is out of range or was already added since the last :meth:`reset`.

        Examples
        --------
        >>> import gradcodes as gc
        >>> t = gc.fractional_repetition(6, 2).decodability()
        >>> t.add(1), t.add(2), t.add(4)                 # groups {0, 1, 2} and {3, 4, 5}
        (False, False, True)
        """
        n = self.code.n
        w = check_int("worker", worker, 0, n - 1)
        bit = 1 << w
        if self._bits & bit:
            raise GradcodesValueError(f"worker {w} was already added")
        self._bits |= bit
        self.responders.append(w)
        if self._bounds is not None:
            g = self._group_of[w]
            if self._hits[g] == 0:
                self._missing_groups -= 1
            self._hits[g] += 1
            self.done = self._missing_groups == 0 and self._groups_accept()
            return self.done
        cover = self._cover
        for j in self._supports[w]:
            if not cover[j]:
                self._uncovered -= 1
            cover[j] += 1
        if self._uncovered > 0:
            self.done = False
            return False
        decided = self._decided if getattr(self.code, "rtol", DEFAULT_RTOL) == self._rtol else self._verdicts()
        done = decided.get(self._bits)
        if done is None:
            mask = self.mask
            done = bool(self.code._decodable_set(np.flatnonzero(mask), mask, self.dtype))
            if len(decided) >= self._limit:
                decided.clear()
            decided[self._bits] = done
        self.done = done
        return done

    def reset(self) -> None:
        """Forget every responder (for the next iteration).

        Examples
        --------
        >>> import gradcodes as gc
        >>> t = gc.fractional_repetition(6, 2).decodability()
        >>> t.add(1), t.add(4)
        (False, True)
        >>> t.reset()
        >>> t.responders, t.done
        ([], False)"""
        if self._bounds is not None:
            self._hits[:] = 0
            self._missing_groups = self._bounds.size - 1
        else:
            cover = self._cover
            for w in self.responders:
                for j in self._supports[w]:
                    cover[j] = 0
            self._uncovered = len(cover)
        self.responders = []
        self._bits = 0
        self.done = False

    @property
    def mask(self) -> np.ndarray:
        """Boolean (n,): the responders so far (a copy)."""
        mask = np.zeros(self.code.n, dtype=bool)
        mask[self.responders] = True
        return mask

    def __repr__(self) -> str:
        return f"Decodability({self.code.name!r}, responders={self.responders}, done={self.done})"
