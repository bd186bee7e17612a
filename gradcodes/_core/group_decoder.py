"""The group decoder: contiguous groups of workers with identical 0/1 rows that tile the all-ones vector.

A core decoder (like those of :mod:`gradcodes._core.decoders`), not a family's: fractional repetition (Tandon et al.
2017) builds on it, and so do the stable binary, grouped and block codes, the verifier's block theorems
(:mod:`gradcodes._verify.blocks`) and the fast group rule of :meth:`~gradcodes.LinearCode.decodable`.
"""

from __future__ import annotations

from fractions import Fraction
from typing import TYPE_CHECKING, Any

import numpy as np

from .._base.validate import check_choice
from .decoders import Decoder
from .numerics import real_error_bound
from .sparse import csr_of_dense

if TYPE_CHECKING:
    from .code import LinearCode

__all__ = ["GroupDecoder"]


class GroupDecoder(Decoder):
    """Decoder of repetition codes: contiguous groups of workers with identical rows that tile the all-ones vector.

    ``bounds`` are the group boundaries (group ``g`` is workers ``bounds[g]:bounds[g+1]``; any sizes).
    ``mode="first"`` takes, in every group, the responder with the smallest index, with weight 1 (the decode is a
    plain sum of messages: no rounding beyond the additions); ``mode="mean"`` puts weight ``1/|F ∩ group|`` on
    every responder of the group (the minimum-norm solution). Batched: the first responder of every group comes
    from one ``np.minimum.reduceat`` over the group boundaries. A group without a responder leaves its block
    undecoded (zero weights), which the residual then reports.
    """

    description = "one responder per group, 0/1 weights"
    deterministic = True          # integer bookkeeping and one division per group: the same bits everywhere

    def __init__(self, bounds: np.ndarray, mode: str = "first") -> None:
        self.bounds = np.asarray(bounds, dtype=np.int64)
        self.mode = check_choice("mode", mode, ("first", "mean"))
        self.name = "group" if mode == "first" else "group-mean"
        if mode == "mean":
            self.description = "weight 1/|F ∩ group| on every responder (minimum norm)"

    def matrices(self, code: LinearCode, mask: np.ndarray) -> Any:
        b, n = mask.shape
        starts = self.bounds[:-1]
        if self.mode == "first":
            idx = np.where(mask, np.arange(n)[None, :], n)
            first = np.minimum.reduceat(idx, starts, axis=1)               # (b, G); n where the group is dead
            W = np.zeros((b, n + 1))
            np.put_along_axis(W, first, 1.0, axis=1)
            W = W[:, :n]
        else:
            cnt = np.add.reduceat(mask.astype(np.int64), starts, axis=1)   # responders per group
            sizes = np.diff(self.bounds)
            per = np.repeat(np.where(cnt > 0, 1.0 / np.maximum(cnt, 1), 0.0), sizes, axis=1)
            W = per * mask
        if code.exact:
            out = np.empty((b, 1, n), dtype=object)
            if self.mode == "first":
                out[:, 0, :] = np.vectorize(lambda v: Fraction(int(v)), otypes=[object])(W)
            else:
                cntr = np.repeat(np.add.reduceat(mask.astype(np.int64), starts, axis=1), np.diff(self.bounds),
                                 axis=1)
                out[:, 0, :] = np.vectorize(lambda msk, c: Fraction(int(msk), int(max(c, 1))),
                                            otypes=[object])(mask, cntr)
            return out
        return W[:, None, :].astype(code._entry_dtype())

    def theorem(self, code: LinearCode, u: float, rtol: float) -> str | None:
        """A proof of recovery for every set of at most ``s`` stragglers, if ``code.B`` has the group structure.

        Checked on the actual matrix: ``m = 1``; every group (``bounds``) has at least ``s + 1`` workers with
        identical 0/1 rows; the groups' supports are disjoint and cover all ``k`` partitions. Then ``s``
        stragglers leave a responder in every group, and ``mode="first"`` puts weight 1 on one responder per
        group, so ``a_F B = 1_k`` exactly (residual 0) with cancellation factor 1: the error bound of the
        acceptance rule with ``t = G + load`` terms (``G`` groups; :func:`gradcodes._core.numerics.real_error_bound`),
        computed without rounding of the residual (0/1 values: no allowance of the acceptance rule), accepted when
        it is at most ``rtol`` (Tandon et al. 2017, Section 3, fractional
        repetition). Returns the statement, or None when a condition fails (then the verifier does not count it as
        a proof).
        """
        s = getattr(code, "s", None)                        # only a GradientCode promises recovery
        if s is None or self.mode != "first" or code.m != 1 or code.field not in ("real", "rational"):
            return None
        # the acceptance rule's bound (cancellation 1, residual 0, evaluated exactly: no slack), with terms = one
        # message per group plus the encoding load (gradcodes._core.numerics.decode_terms)
        if not float(real_error_bound(1.0, 0.0, u, self.bounds.size - 1 + code.load)) <= rtol:
            return None
        if code.field == "rational":
            B = np.vectorize(lambda v: v if v in (0, 1) else 2, otypes=[np.float64])(code.B)
            indptr, indices, data = csr_of_dense(np.asarray(B, dtype=np.float64))
        else:
            indptr, indices, data = code._csr_parts()         # the non-zeros: O(nnz) at any size
        if code.n != self.bounds[-1] or self.bounds[0] != 0 or not np.all(data == 1):
            return None
        # every group: >= s+1 rows with the same non-zero columns (all ones); the groups' columns tile 0..k-1
        starts, ends = self.bounds[:-1], self.bounds[1:]
        if np.any(ends - starts < s + 1):
            return None
        first = indptr[starts]
        width = indptr[starts + 1] - first
        if not np.array_equal(np.diff(indptr), np.repeat(width, ends - starts)):
            return None
        # runs of consecutive groups of equal size and width: each run's indices are one (groups, size, width)
        # array whose rows must all equal the group's first row (memory traffic: one pass over the non-zeros)
        size = ends - starts
        cut = np.flatnonzero((np.diff(size) != 0) | (np.diff(width) != 0)) + 1
        cover = np.zeros(code.k, dtype=np.int64)
        for a, b in zip(np.concatenate([[0], cut]), np.concatenate([cut, [starts.size]]), strict=True):
            g, h, w = int(b - a), int(size[a]), int(width[a])
            block = indices[int(first[a]):int(first[a]) + g * h * w].reshape(g, h, w)
            if not bool((block == block[:, :1, :]).all()):
                return None
            cover += np.bincount(block[:, 0, :].ravel(), minlength=code.k)[:code.k]
        if cover.size != code.k or not np.all(cover == 1):
            return None
        return (f"fractional repetition: {self.bounds.size - 1} groups of >= s+1 = {s + 1} identical 0/1 "
                f"rows tile the all-ones vector; s stragglers leave a responder in every group and the 0/1 decoder "
                f"sums one per group (residual 0, cancellation 1)")
