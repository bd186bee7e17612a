"""The verifier's fast paths: vectorised enumeration of straggler sets and a screening kernel for float codes.

**Enumeration.** Straggler sets are produced batch by batch in lexicographic order by *unranking*: the
combinatorial number system writes every rank ``r < C(n, s)`` uniquely as ``sum_i C(c_i, i)`` (colexicographic
order; Knuth, TAOCP 4A, Section 7.2.1.3), and the map ``c -> n - 1 - c`` turns colex order of the complements into
lexicographic order. One ``searchsorted`` per position unranks a whole batch, so memory is O(batch * s) and no
Python loop runs per set.

**Screening kernel (null-space codes).** Every solution of ``a B = E`` is ``a = c + K z`` (``c`` a particular
solution, ``K`` an orthonormal basis of the left null space, ``d`` columns). When ``d = s`` a straggler set ``S``
determines ``z`` by the s x s system ``K_S z = -c_S`` and then

* the cancellation factor ``canc = max_u sum_v max_j (|a_u| |B|)_(j,v)`` (the worst column,
  :func:`gradcodes._core.numerics.cancellation`) has the cheap upper bound ``max_u sum_i |a_ui| omega_i`` with
  ``omega_i = sum_v max_j |B_i,(j,v)|``, one (n x d) product, and
* the residual is ``c B - E + z^T (K^T B)``: the k-vector ``c B - E`` and the d x k matrix ``K^T B`` are computed
  once, so the residual costs O(d k) instead of the O(n k) product ``a B``.

The kernel only *screens*: a set is accepted here when its upper bound
``u (k + 2) canc + (gamma_{t+2} + gamma64_{t+1}) (1 + eta) canc + residual + |K_S z + c_S| max ||B_i||_1 + delta
+ gamma64_{t+1}`` is at most ``rtol / 16`` (``u`` the unit roundoff of the message dtype, ``gamma`` in that unit
roundoff, ``gamma64`` in float64's, ``t = n - s + load`` the most terms of a decode, ``eta`` and ``delta =
(gamma_{w+1} + 2 gamma_w)(mag + 1)`` the allowances of the acceptance rule,
:func:`gradcodes._core.numerics.error_bounds`, with ``w = n - s`` and ``mag <= canc``), i.e. far inside the upper end of
the rule's interval whatever the rounding of the decoder's own computation (bounded by ``u k canc``). The exact
factor is computed (one ``|a| |B|`` product) only for sets whose cheap bound may beat the running worst or clear
no screen. Every other set (near the threshold, failing, singular ``K_S``, non-finite values) is handed back
to the reference evaluation (the code's decoder and the batched residual), so verdicts and failing sets are those
of the reference rule.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterator
from typing import Any

import numpy as np

from .._core.decoders import NullSpaceDecoder, row_scaled
from .._core.numerics import column_factor

__all__ = ["lex_straggler_batches", "NullSpaceScreen"]

_INT_LIMIT = 2**62


def _binom_table(n: int, s: int) -> np.ndarray:
    """``T[i, c] = C(c, i)`` for ``0 <= i <= s``, ``0 <= c <= n`` as int64, saturated at ``_INT_LIMIT``.

    Callers ensure ``C(n, s) < _INT_LIMIT``; entries of the middle rows can still be far larger when ``s > n / 2``
    (``C(70, 35)`` for ``C(70, 60)``). Unranking only reads entries at most the rank it unranks (below ``C(n, s)``)
    and searches rows that stay non-decreasing, so the saturated entries leave every result unchanged.
    """
    T = np.zeros((s + 1, n + 1), dtype=np.int64)
    for i in range(s + 1):
        for c in range(n + 1):
            T[i, c] = min(math.comb(c, i), _INT_LIMIT)
    return T


def unrank_lex(n: int, s: int, ranks: np.ndarray, table: np.ndarray | None = None) -> np.ndarray:
    """The straggler sets of lexicographic ranks ``ranks`` (int64, each ``< C(n, s)``) as a sorted (b, s) array.

    >>> unrank_lex(4, 2, np.arange(6)).tolist()
    [[0, 1], [0, 2], [0, 3], [1, 2], [1, 3], [2, 3]]
    """
    if table is None:
        table = _binom_table(n, s)
    total = int(table[s, n])
    rest = (total - 1) - np.asarray(ranks, dtype=np.int64)       # colex rank of the reflected set
    out = np.empty((rest.size, s), dtype=np.int64)
    for i in range(s, 0, -1):
        # largest c with C(c, i) <= rest: the i-th element of the reflected set (colex, 1-based position i)
        c = np.searchsorted(table[i, :n], rest, side="right") - 1
        rest = rest - table[i, c]
        out[:, s - i] = n - 1 - c
    return out


def lex_straggler_batches(n: int, s: int, batch: int, start: int = 0) -> Iterator[np.ndarray]:
    """All ``C(n, s)`` straggler sets from lexicographic rank ``start`` on, as (b, s) int64 arrays (b <= batch).

    Vectorised unranking when ``C(n, s) < 2^62``; beyond, ``itertools.combinations`` (such sizes are never
    enumerated to the end anyway).
    """
    total = math.comb(n, s)
    if s == 0:
        if start == 0:
            yield np.zeros((1, 0), dtype=np.int64)
        return
    if total >= _INT_LIMIT:
        combos = itertools.islice(itertools.combinations(range(n), s), start, None)
        while True:
            flat = np.fromiter(itertools.chain.from_iterable(itertools.islice(combos, batch)), dtype=np.int64)
            if flat.size == 0:
                return
            yield flat.reshape(-1, s)
    table = _binom_table(n, s)
    for lo in range(start, total, batch):
        yield unrank_lex(n, s, np.arange(lo, min(total, lo + batch), dtype=np.int64), table)


def _solve_small(M: np.ndarray, R: np.ndarray) -> np.ndarray:
    """Batched Gaussian elimination with partial pivoting: ``X`` with ``M X = R`` for (b, s, s) and (b, s, m).

    Vectorised over the batch (s numpy steps); a singular matrix gives inf/nan, which the caller screens out.
    Works on copies.
    """
    M = M.copy()
    X = R.copy()
    b, s, _ = M.shape
    rows = np.arange(b)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        for j in range(s):
            p = j + np.argmax(np.abs(M[:, j:, j]), axis=1)
            swap = p != j
            if swap.any():
                r = rows[swap]
                pj = p[swap]
                tmp = M[r, j].copy()
                M[r, j] = M[r, pj]
                M[r, pj] = tmp
                tmp = X[r, j].copy()
                X[r, j] = X[r, pj]
                X[r, pj] = tmp
            if j + 1 < s:
                f = M[:, j + 1:, j] / M[:, j, j][:, None]                     # (b, s-j-1)
                M[:, j + 1:, j:] -= f[:, :, None] * M[:, None, j, j:]
                X[:, j + 1:] -= f[:, :, None] * X[:, None, j]
        for j in range(s - 1, -1, -1):
            if j + 1 < s:
                X[:, j] -= np.einsum("bk,bkm->bm", M[:, j, j + 1:], X[:, j + 1:])
            X[:, j] /= M[:, j, j][:, None]
    return X


class NullSpaceScreen:
    """Screening kernel for float codes whose verified decoder is the null-space decoder and ``dim K = s``.

    ``screen(S)`` returns ``(canc, res, suspect)`` for a batch of straggler sets: the cancellation factor and the
    algebraic residual of ``a = c + K z`` (to rounding, the values the reference evaluation reports), and the sets
    that must be re-evaluated by the reference path.
    """

    def __init__(self, code: Any, u: float, rtol: float, load: int | None = None) -> None:
        from .._core.numerics import CANC_ALLOWANCE, _gamma, residual_slack

        C, K, _ = NullSpaceDecoder.basis(code)
        Bs, _ = row_scaled(code)
        E = code.target
        self.k = code.k
        self.C = np.ascontiguousarray(C)                                       # (m, n)
        self.K = np.ascontiguousarray(K)                                       # (n, d)
        self.KT = np.ascontiguousarray(K.T)
        m = E.shape[0]
        self.absB = np.ascontiguousarray(np.abs(Bs))                           # (n, k m)
        # omega_i = sum_v max_j |B_i,(j,v)|: canc(a) <= max_u sum_i |a_ui| omega_i (module docstring)
        self.w = self.absB.reshape(Bs.shape[0], -1, m).max(axis=1, initial=0.0).sum(axis=1)
        self.m = m
        self.R0 = C @ Bs - E                                                   # (m, k m)
        self.M = K.T @ Bs                                                      # (d, k m)
        self.wmax = float(self.absB.sum(axis=1).max(initial=0.0))             # max_i ||(diag(d) B)_i||_1
        # bounds of the compiled kernel: canc(a) <= canc(c) + sum_j |z_j| kappa_j; res <= max|R0| + sum |z_j| mmax_j
        self.c_canc = np.abs(self.C) @ self.w
        self.kappa = (np.abs(self.K) * self.w[:, None]).sum(axis=0)
        self.r0max = float(np.abs(self.R0).max(initial=0.0))
        self.mmax = np.abs(self.M).max(axis=1, initial=0.0)
        #: running largest exact cancellation (the kernel computes exact values only for sets that may beat it)
        self.best = np.zeros(1)
        self.u = u
        self.rtol = rtol
        # the upper end of the acceptance rule's interval, linear in canc: ucoef * canc + const (module docstring)
        width = code.n - code.s
        terms = width + (int(code.load) if load is None else int(load))
        slope = float(residual_slack(1.0, width)) / 2                  # (gamma_{w+1} + 2 gamma_w) per unit of mag
        g64 = float(_gamma(terms + 1))
        coef = (terms + 2) * u / (1 - (terms + 2) * u)                   # rounding_factor of a real dtype
        # mag <= canc (the largest entry of |A||B| is at most its worst column), so the slack is slope (canc + 1)
        self.ucoef = u * (self.k + 2) + (coef + g64) * (1 + CANC_ALLOWANCE) + slope
        self.const = slope + g64

    @staticmethod
    def applies(code: Any, decoder: object) -> bool:
        """True when the screen reproduces the decoder: real float64 code, null-space decoder, ``dim K = s > 0``."""
        if not isinstance(decoder, NullSpaceDecoder) or getattr(code, "field", None) != "real":
            return False
        if np.asarray(code.B).dtype != np.float64:
            return False
        s = code.s
        return s > 0 and NullSpaceDecoder.basis(code)[1].shape[1] == s

    def screen(self, S: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        b, s = S.shape
        C, K = self.C, self.K
        m, n = C.shape
        KS = K[S]                                                              # (b, s, d)
        cS = np.swapaxes(C[:, S], 0, 1)                                        # (b, m, s) -> need (b, s, m)
        cS = np.swapaxes(cS, 1, 2)
        Z = _solve_small(KS, -cS)                                              # (b, d, m)
        with np.errstate(invalid="ignore", over="ignore"):
            solve_err = np.abs(KS @ Z + cS).reshape(b, -1).max(axis=1)
            Zt = np.swapaxes(Z, 1, 2).reshape(b * m, -1)                       # (b m, d)
            A = (Zt @ self.KT).reshape(b, m, n)
            A += C
            np.abs(A, out=A)
            canc = column_factor(np.asarray(A.reshape(b * m, n) @ self.absB).reshape(b, m, -1), m)
            R = (Zt @ self.M).reshape(b, m, -1)
            R += self.R0
            res = np.abs(R).reshape(b, -1).max(axis=1)
            bound = self.ucoef * canc + res + solve_err * self.wmax + self.const
            suspect = ~np.isfinite(bound) | (bound > self.rtol / 16)
        return canc, res, suspect


# ---------------------------------------------------------------------------------------------------------------
# compiled kernel (numba, compiled lazily on first use and cached on disk; never at ``import gradcodes``)

_KERNEL: object = None


def _build_kernel() -> object:
    import numba

    @numba.njit(cache=True, nogil=True)
    def kernel(n, first, count, C, K, absB, R0, M, c_canc, kappa, r0max, mmax, wmax, ucoef, const, k, thresh, best,
               out_S, out_canc, out_res, out_flag):
        s = first.shape[0]
        m = C.shape[0]
        d = K.shape[1]
        km = M.shape[1]
        comb = first.copy()
        arow = np.empty(n)
        pmax = np.empty(m)
        KS = np.empty((s, s))
        X = np.empty((s, m))
        Z = np.empty((s, m))
        for t in range(count):
            for i in range(s):
                out_S[t, i] = comb[i]
                for j in range(d):
                    KS[i, j] = K[comb[i], j]
                for v in range(m):
                    X[i, v] = -C[v, comb[i]]
            # LU with partial pivoting on KS, applied to X
            singular = False
            for j in range(s):
                p = j
                pbest = abs(KS[j, j])
                for i in range(j + 1, s):
                    if abs(KS[i, j]) > pbest:
                        pbest = abs(KS[i, j])
                        p = i
                if pbest == 0.0:
                    singular = True
                    break
                if p != j:
                    for q in range(s):
                        tmp = KS[j, q]
                        KS[j, q] = KS[p, q]
                        KS[p, q] = tmp
                    for v in range(m):
                        tmp = X[j, v]
                        X[j, v] = X[p, v]
                        X[p, v] = tmp
                for i in range(j + 1, s):
                    f = KS[i, j] / KS[j, j]
                    for q in range(j + 1, s):
                        KS[i, q] -= f * KS[j, q]
                    for v in range(m):
                        X[i, v] -= f * X[j, v]
            if singular:
                out_canc[t] = np.inf
                out_res[t] = np.inf
                out_flag[t] = True
            else:
                for j in range(s - 1, -1, -1):
                    for v in range(m):
                        acc = X[j, v]
                        for q in range(j + 1, s):
                            acc -= KS[j, q] * Z[q, v]
                        Z[j, v] = acc / KS[j, j]
                # solve error |K_S z + c_S| (with the original rows)
                serr = 0.0
                for i in range(s):
                    for v in range(m):
                        acc = C[v, comb[i]]
                        for j in range(d):
                            acc += K[comb[i], j] * Z[j, v]
                        serr = max(serr, abs(acc))
                # cheap upper bounds: canc <= canc(c) + sum_j |z_j| kappa_j, res <= |R0| + sum_j |z_j| |M_j|
                canc = 0.0
                res = 0.0
                for v in range(m):
                    cb = c_canc[v]
                    rb = r0max
                    for j in range(d):
                        cb += abs(Z[j, v]) * kappa[j]
                        rb += abs(Z[j, v]) * mmax[j]
                    canc = max(canc, cb)
                    res = max(res, rb)
                exact = canc > best[0]
                bound = ucoef * canc + res + serr * wmax + const
                if exact or not (bound <= thresh):
                    # the exact factor: the worst column of |a_u| |B|, summed over the m pieces, largest over u
                    canc = 0.0
                    for v in range(m):
                        for i in range(n):
                            acc = C[v, i]
                            for j in range(d):
                                acc += K[i, j] * Z[j, v]
                            arow[i] = abs(acc)
                        for p in range(m):
                            pmax[p] = 0.0
                        for c in range(km):
                            col = 0.0
                            for i in range(n):
                                col += arow[i] * absB[i, c]
                            if col > pmax[c % m]:
                                pmax[c % m] = col
                        tot = 0.0
                        for p in range(m):
                            tot += pmax[p]
                        canc = max(canc, tot)
                    res = 0.0
                    for v in range(m):
                        for c in range(km):
                            acc = R0[v, c]
                            for j in range(d):
                                acc += Z[j, v] * M[j, c]
                            res = max(res, abs(acc))
                    if canc > best[0]:
                        best[0] = canc
                    exact = True
                    bound = ucoef * canc + res + serr * wmax + const
                out_canc[t] = canc if exact else -canc
                out_res[t] = res
                out_flag[t] = not (bound <= thresh)
            # next combination in lexicographic order
            i = s - 1
            while i >= 0 and comb[i] == n - s + i:
                i -= 1
            if i < 0:
                break
            comb[i] += 1
            for j in range(i + 1, s):
                comb[j] = comb[j - 1] + 1

    return kernel


def compiled_kernel() -> object:
    """The numba screening kernel, or None when numba is unavailable."""
    global _KERNEL
    if _KERNEL is None:
        try:
            _KERNEL = _build_kernel()
        except ImportError:  # pragma: no cover - numba comes with galois
            _KERNEL = False
    return _KERNEL or None


#: sets per call of the numpy screen (intermediates of about 1 MB per array for s = 4, n = 40)
_SCREEN_BATCH = 4096


def screen_range(screen: NullSpaceScreen, n: int, first: np.ndarray, count: int, use_numba: bool,
                 best: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """``count`` consecutive straggler sets (lexicographic) from ``first``: ``(S, canc, res, suspect)``.

    ``best`` (a 1-element float array, default ``screen.best``) is the running largest exact cancellation of the
    compiled kernel; a thread of its own per concurrent call."""
    kern = compiled_kernel() if use_numba else None
    s = first.size
    if kern is None:
        ranks = lex_rank(n, first) + np.arange(count, dtype=np.int64)
        S = unrank_lex(n, s, ranks)
        if count <= _SCREEN_BATCH:
            return (S, *screen.screen(S))
        # sub-batches whose intermediates stay in cache (one 65,536-set batch is several times slower per set)
        parts = [screen.screen(S[lo:lo + _SCREEN_BATCH]) for lo in range(0, count, _SCREEN_BATCH)]
        canc, res, suspect = (np.concatenate(col) for col in zip(*parts, strict=True))
        return S, canc, res, suspect
    S = np.empty((count, s), dtype=np.int64)
    canc = np.empty(count)
    res = np.empty(count)
    flag = np.empty(count, dtype=np.bool_)
    kern(n, first.astype(np.int64), count, screen.C, screen.K, screen.absB, screen.R0, screen.M,  # type: ignore[operator]
         screen.c_canc, screen.kappa, screen.r0max, screen.mmax, screen.wmax, screen.ucoef, screen.const,
         float(screen.k),
         screen.rtol / 16, screen.best if best is None else best, S, canc, res, flag)
    return S, canc, res, flag


def lex_rank(n: int, S: np.ndarray) -> int:
    """Lexicographic rank of one sorted straggler set (inverse of :func:`unrank_lex`)."""
    s = len(S)
    colex = sum(math.comb(n - 1 - int(c), s - i) for i, c in enumerate(S))
    return math.comb(n, s) - 1 - colex
