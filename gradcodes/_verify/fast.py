"""The verifier's fast paths: vectorised enumeration of straggler sets and a screening kernel for float codes.

**Enumeration.** Straggler sets are produced batch by batch in lexicographic order by *unranking*: the
combinatorial number system writes every rank ``r < C(n, s)`` uniquely as ``sum_i C(c_i, i)`` (colexicographic
order; Knuth, TAOCP 4A, Section 7.2.1.3), and the map ``c -> n - 1 - c`` turns colex order of the complements into
lexicographic order. One ``searchsorted`` per position unranks a whole batch, so memory is O(batch * s) and no
Python loop runs per set.

**Screening kernel (null-space codes).** Every solution of ``a B = E`` is ``a = c + K z`` (``c`` a particular
solution, ``K`` an orthonormal basis of the left null space, ``d`` columns). When ``d = s`` a straggler set ``S``
determines ``z`` by the s x s system ``K_S z = -c_S`` (LU with partial pivoting), and the kernel decides the set
*without* the reference evaluation whenever it can prove what the acceptance rule
(:func:`gradcodes._core.numerics.judge`) would say:

* **How far the kernel's vector is from the exact one.** ``N >= ||K_S^-1||_inf`` from the LU factors (the
  comparison matrices of the triangular factors bound their inverses, and ``P K_S + dK = L U`` with ``|dK| <=
  gamma_s |L||U|``, Higham 2002, Thm 9.3; the numpy screen uses an approximate inverse and the Neumann bound
  instead), so ``||z - z*|| <= N ||K_S z + c_S||`` (the residual with the rounding of its evaluation). The
  cancellation factor is a sum of absolute values, so it moves by at most ``sum_j |dz_j| kappa_j`` with
  ``kappa_j = sum_i |K_ij| omega_i`` and ``omega_i = sum_v max_j |B_i,(j,v)|``; the rounding of forming ``a``
  and of the sums adds ``gamma_{n+s+3}`` times the cheap bound ``canc <= max_u sum_i |a_ui| omega_i``.
* **What every machine computes.** The rule's own allowances carry the exact vector's values to every machine's
  (the cancellation within the relative ``CANC_ALLOWANCE``, a residual of at most ``delta`` for a set the code
  recovers), as they carry this machine's to another's. The residual the decoder measures is the one after its
  refinement step: the part of ``a B - E`` outside the row space of ``B``, ``(c B - E + z^T K^T B) Q`` with ``Q =
  I - pinv(B) B``, computed in O(d k m) per set from two matrices formed once; the upper end takes 64 times it
  (``_RES_SLACK``) or ``delta``, whichever is larger.
* **Decisions.** With these bounds the kernel computes an upper bound of the rule's upper end and a lower bound
  of its lower end (and the converse pair), each widened by ``2^-9`` for the rule's outward rounding to its grid:
  a set is *cleared* when the upper end is within ``rtol``, *failing* when the lower end exceeds it,
  *borderline* when the interval certainly straddles it, and handed to the reference evaluation otherwise
  (within about 0.3 % of either end, a singular or ill-determined ``K_S`` with ``dC > CANC_ALLOWANCE canc``, a
  non-finite value). The exact factor (a sparse pass over the non-zeros of ``|B|``) and residual are computed
  only for sets whose cheap bounds cannot clear them or may beat the running worst.

The reference evaluation still sees each chunk's worst-cancellation set, its largest screened estimates and its
first failing and borderline sets, so the reported worst values and the sets listed are the reference's; if it
ever judges one of them otherwise than the kernel did, the whole chunk is evaluated by the reference instead
(:data:`gradcodes._verify.parallel.SCREEN_DISAGREEMENTS`). On ``cyclic_repetition(66, 5, rng=2)`` the reference
now sees about 250 of every million sets (it saw 446,075 under the former one-sided screen at ``rtol / 16``).
"""

from __future__ import annotations

import functools
import itertools
import math
from collections.abc import Iterator
from typing import Any

import numpy as np

from .._core.decoders import NullSpaceDecoder, row_scaled
from .._core.numerics import column_factor

__all__ = ["lex_straggler_batches", "NullSpaceScreen"]

_INT_LIMIT = 2**62


@functools.lru_cache(maxsize=64)
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
    T.flags.writeable = False                  # cached: shared by every caller
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


#: ``NullSpaceScreen.par`` slots (one float64 array, so that the compiled kernel's signature stays short)
_U, _U64, _RTOL, _COEF_HI, _G_HI, _SLOPE, _ETA, _LOAD, _M = range(9)

#: Verdicts of the screen per set: cleared (every machine's decode accepts), handed to the reference evaluation,
#: failing (every machine's decode refuses), borderline (the rule's interval certainly straddles the tolerance).
CLEAR, REFER, FAIL, BORDER = 0, 1, 2, 3

#: Relative widening of the screen's interval ends: the rule's ends are rounded outward to a grid of relative
#: spacing ``2^-11`` twice (:func:`gradcodes._core.numerics.outward`), and the screen's own products and sums
#: round; ``2^-9`` covers both with room to spare.
_WIDEN = 2.0 ** -9


#: Factor on the screen's estimate of the refined residual in the upper end (module docstring).
_RES_SLACK = 64.0


def _gamma64(t: float) -> float:
    u = 2.0 ** -53
    return t * u / (1.0 - t * u)


class NullSpaceScreen:
    """Screening kernel for float codes whose verified decoder is the null-space decoder and ``dim K = s``.

    ``screen(S)`` returns, for a batch of straggler sets, ``(canc, res, hi, rhi, verdict)``: the cancellation
    factor and the residual of the kernel's decoding vector (exact values positive; a negative ``canc`` is minus
    an upper bound that sufficed), an upper bound ``hi`` of the acceptance rule's interval (``rhi`` of its
    residual part) and the screen's verdict per set (:data:`CLEAR`, :data:`REFER` or :data:`FAIL`; module
    docstring).
    """

    #: the attributes the kernel reads (the MPI driver broadcasts rank 0's, so every rank screens alike)
    FIELDS = ("k", "C", "K", "KT", "Ksum", "absB", "col_ptr", "col_row", "col_val", "R0", "M", "c_canc", "kappa",
              "sumkappa", "r0max", "mmax", "summmax", "par", "rtol")

    def __init__(self, code: Any, u: float, rtol: float, load: int | None = None) -> None:
        from .._core.numerics import CANC_ALLOWANCE, residual_slack

        C, K, P = NullSpaceDecoder.basis(code)
        Bs, _ = row_scaled(code)
        E = code.target
        n, s = code.n, code.s
        self.k = code.k
        self.C = np.ascontiguousarray(C)                                       # (m, n)
        self.K = np.ascontiguousarray(K)                                       # (n, d)
        self.KT = np.ascontiguousarray(K.T)
        self.Ksum = np.abs(self.K).sum(axis=1)                                 # (n,)
        m = E.shape[0]
        self.m = m
        self.absB = np.ascontiguousarray(np.abs(Bs))                           # (n, k m)
        # the non-zeros of |B| column by column (rows ascending), for the kernel's sparse pass (numpy only: a small
        # verify does not load scipy)
        nzT = self.absB.T != 0
        self.col_ptr = np.concatenate([[0], np.cumsum(nzT.sum(axis=1))]).astype(np.int64)
        self.col_row = np.nonzero(nzT)[1].astype(np.int64)
        self.col_val = np.ascontiguousarray(self.absB.T[nzT], dtype=np.float64)
        # omega_i = sum_v max_j |B_i,(j,v)|: canc(a) <= max_u sum_i |a_ui| omega_i (module docstring)
        w = self.absB.reshape(n, -1, m).max(axis=1, initial=0.0).sum(axis=1)
        # the residual after the decoder's refinement step: the part of a B - E outside the row space of B,
        # (c B - E + z^T K^T B) Q with Q = I - pinv(B) B (module docstring)
        Q = np.eye(Bs.shape[1]) - P @ Bs
        self.R0 = (C @ Bs - E) @ Q                                             # (m, k m)
        self.M = (K.T @ Bs) @ Q                                                # (d, k m)
        self.c_canc = np.abs(self.C) @ w                                       # (m,)
        self.kappa = (np.abs(self.K) * w[:, None]).sum(axis=0)                # (d,)
        self.sumkappa = float(self.kappa.sum())
        self.r0max = float(np.abs(self.R0).max(initial=0.0))
        self.mmax = np.abs(self.M).max(axis=1, initial=0.0)
        self.summmax = float(self.mmax.sum())
        #: running largest exact cancellation (the kernel computes exact values only where they are needed)
        self.best = np.zeros(1)
        self.u = u
        self.rtol = rtol
        width = n - s
        terms = width + (int(code.load) if load is None else int(load))
        par = np.zeros(9)
        par[_U], par[_U64], par[_RTOL] = u, 2.0 ** -53, rtol
        tu = (terms + 2) * u
        par[_COEF_HI] = tu / (1 - tu) + _gamma64(terms + 1)      # rounding_factor + gamma_{t+1}, t = n - s + load
        par[_G_HI] = _gamma64(terms + 1)
        par[_SLOPE] = float(residual_slack(0.0, width))         # delta = slope (mag + 1)
        par[_ETA] = CANC_ALLOWANCE
        par[_LOAD] = terms - width
        par[_M] = m
        self.par = par

    @staticmethod
    def applies(code: Any, decoder: object) -> bool:
        """True when the screen reproduces the decoder: real float64 code, null-space decoder, ``dim K = s > 0``."""
        if not isinstance(decoder, NullSpaceDecoder) or getattr(code, "field", None) != "real":
            return False
        if np.asarray(code.B).dtype != np.float64:
            return False
        s = code.s
        return s > 0 and NullSpaceDecoder.basis(code)[1].shape[1] == s

    def screen(self, S: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """The numpy screen (every set's exact values; the compiled kernel computes the same bounds)."""
        b, s = S.shape
        C, K, par = self.C, self.K, self.par
        m, n = C.shape
        u64, eta = par[_U64], par[_ETA]
        KS = K[S]                                                              # (b, s, d)
        cS = np.swapaxes(C[:, S], 0, 1)                                        # (b, m, s)
        cS = np.ascontiguousarray(np.swapaxes(cS, 1, 2))                       # (b, s, m)
        with np.errstate(invalid="ignore", over="ignore", divide="ignore"):
            try:                                       # LAPACK, batched; a singular K_S anywhere: the slow path
                Z = np.linalg.solve(KS, -cS)                                   # (b, d, m)
                Xi = np.linalg.inv(KS)                                         # approximate inverses
            except np.linalg.LinAlgError:
                Z = _solve_small(KS, -cS)
                Xi = _solve_small(KS, np.broadcast_to(np.eye(s), (b, s, s)))
            # N >= ||K_S^-1||_inf (Neumann: rho >= ||I - Xi K_S||_inf with the rounding of its evaluation)
            absXi = np.abs(Xi)
            rho = (np.abs(np.eye(s) - Xi @ KS).sum(axis=2).max(axis=1)
                   + _gamma64(s + 1) * (absXi @ np.abs(KS)).sum(axis=2).max(axis=1))
            N = absXi.sum(axis=2).max(axis=1) / (1 - rho) * (1 + 8 * u64)
            absZ = np.abs(Z)                                                   # (b, d, m)
            r = np.abs(KS @ Z + cS) + _gamma64(s + 2) * (np.abs(cS) + np.abs(KS) @ absZ)
            dz = N * r.reshape(b, -1).max(axis=1) * (1 + 4 * u64)
            cb = (self.c_canc[None, :] + np.einsum("bdm,d->bm", absZ, self.kappa)).max(axis=1)
            dC = dz * self.sumkappa * (1 + 4 * u64) + _gamma64(n + s + 3) * cb
            Zt = np.swapaxes(Z, 1, 2).reshape(b * m, -1)                       # (b m, d)
            A = (Zt @ self.KT).reshape(b, m, n)
            A += C
            np.put_along_axis(A, np.broadcast_to(S[:, None, :], (b, m, s)), 0.0, axis=2)
            absA = np.abs(A)
            canc = column_factor(np.asarray(absA.reshape(b * m, n) @ self.absB).reshape(b, m, -1), m)
            R = (Zt @ self.M).reshape(b, m, -1)
            R += self.R0
            res = np.abs(R).reshape(b, -1).max(axis=1)
            rb = self.r0max + np.einsum("bdm,d->bm", absZ, self.mmax).max(axis=1)
            Rp = res + _gamma64(s + 2) * rb + dz * self.summmax
            hi, rhi = _hi(canc + dC, Rp, par)
            rt = par[_RTOL]
            verdict = np.where(hi <= rt, CLEAR, REFER).astype(np.int8)
            near = np.flatnonzero(verdict == REFER)
            if near.size:
                # the entries certainly non-zero in every machine's decoding vector: the widths' lower bound
                dzn, aZ, aA = dz[near], absZ[near], absA[near]
                dev = (dzn[:, None, None] * self.Ksum[None, None, :]
                       + _gamma64(s + 2) * (np.abs(C)[None] + np.swapaxes(aZ, 1, 2) @ np.abs(K).T))
                wlo = (aA > 2 * dev + eta * aA.max(axis=2, keepdims=True)).sum(axis=2).max(axis=1)
                cn, dCn = canc[near], dC[near]
                lo = _lo(cn - dCn, wlo, par)
                straddles = (_hi_lower(cn - dCn, wlo, par) > rt) & (_lo_upper(cn + dCn, Rp[near], par) <= rt)
                verdict[near] = np.where(lo > rt, FAIL, np.where(straddles, BORDER, REFER))
            unsure = ~(np.isfinite(hi) & np.isfinite(canc)) | ~(rho < 0.5) | ~(dC <= eta * canc)
            verdict[unsure] = REFER
        return canc, res, hi, rhi, verdict


def _hi(Chi: Any, Rp: Any, par: np.ndarray) -> tuple[Any, Any]:
    """Upper ends of the rule's interval (and of its residual part) for a cancellation factor of the exact
    decoding vector at most ``Chi`` and an exact residual at most ``Rp`` (module docstring)."""
    eta = par[_ETA]
    Cr = Chi * (1 + eta)                              # every machine's computed factor (the rule's allowance)
    delta = par[_SLOPE] * (Cr + 1)
    rhi = (np.maximum(_RES_SLACK * Rp, delta) + delta) * (1 + _WIDEN)
    return (par[_COEF_HI] * Cr * (1 + eta) + par[_G_HI] + rhi) * (1 + _WIDEN), rhi


def _lo(Clo: Any, width: Any, par: np.ndarray) -> Any:
    """Lower end of the rule's interval for a cancellation factor of the exact decoding vector at least ``Clo``
    and decodes of at least ``width + load`` terms (the residual part left out: it is non-negative)."""
    eta = par[_ETA]
    t = np.maximum(width + par[_LOAD], 1.0)
    tu = (t + 2) * par[_U]
    tv = (t + 1) * par[_U64]
    coef = tu / (1 - tu) + tv / (1 - tv)
    return coef * np.maximum(Clo, 0.0) * (1 - eta) * (1 - eta) * (1 - _WIDEN)


def _hi_lower(Clo: Any, width: Any, par: np.ndarray) -> Any:
    """Lower bound of the rule's upper end: the cancellation part at the fewest terms, and the residual part at
    least ``2 delta`` (``mag >= canc / m``; module docstring)."""
    eta = par[_ETA]
    w = np.maximum(width, 1.0)
    t = w + par[_LOAD]
    tu = (t + 2) * par[_U]
    tv = (t + 1) * par[_U64]
    coef = tu / (1 - tu) + tv / (1 - tv)
    Cr = np.maximum(Clo, 0.0) * (1 - eta)
    wu = (w + 1) * par[_U64]
    wv = w * par[_U64]
    delta = (wu / (1 - wu) + 2 * wv / (1 - wv)) * (Cr / par[_M] + 1)
    return (coef * Cr * (1 + eta) + 2 * delta) * (1 - _WIDEN)


def _lo_upper(Chi: Any, Rp: Any, par: np.ndarray) -> Any:
    """Upper bound of the rule's lower end (module docstring)."""
    eta = par[_ETA]
    Cr = Chi * (1 + eta)
    return (par[_COEF_HI] * Cr * (1 - eta) + par[_G_HI] + _RES_SLACK * Rp) * (1 + _WIDEN)


# ---------------------------------------------------------------------------------------------------------------
# compiled kernel (numba, compiled lazily on first use and cached on disk; never at ``import gradcodes``)

_KERNEL: object = None
_HI_NB: Any = None
_LO_NB: Any = None
_G64_NB: Any = None
_HIL_NB: Any = None
_LOU_NB: Any = None


def _build_kernel() -> object:
    import numba

    global _HI_NB, _LO_NB, _G64_NB, _HIL_NB, _LOU_NB
    # module globals (not closure variables), so that the kernel that calls them is cached on disk
    _HI_NB = numba.njit(cache=True, nogil=True)(_hi)
    _LO_NB = numba.njit(cache=True, nogil=True)(_lo)
    _HIL_NB = numba.njit(cache=True, nogil=True)(_hi_lower)
    _LOU_NB = numba.njit(cache=True, nogil=True)(_lo_upper)
    _G64_NB = numba.njit(cache=True, nogil=True)(_gamma64)

    @numba.njit(cache=True, nogil=True)
    def kernel(n, first, count, C, K, Ksum, col_ptr, col_row, col_val, R0, M, c_canc, kappa, sumkappa, r0max,
               mmax, summmax, par, best, out_S, out_canc, out_res, out_hi, out_rhi, out_flag):
        s = first.shape[0]
        m = C.shape[0]
        d = K.shape[1]
        km = M.shape[1]
        u64 = par[1]
        rtol = par[2]
        eta = par[6]
        comb = first.copy()
        arow = np.empty(n)
        isS = np.zeros(n, dtype=np.bool_)
        pmax = np.empty(m)
        KS = np.empty((s, s))
        X = np.empty((s, m))
        Z = np.empty((s, m))
        bvec = np.empty(s)
        uvec = np.empty(s)
        piv = np.empty(s, dtype=np.int64)
        rinv = np.empty(s)
        g_2s = _G64_NB(2.0 * s + 3.0)
        g_s2 = _G64_NB(s + 2.0)
        g_form = _G64_NB(n + s + 3.0)
        for t in range(count):
            for i in range(s):
                out_S[t, i] = comb[i]
                isS[comb[i]] = True
                for j in range(d):
                    KS[i, j] = K[comb[i], j]
                for v in range(m):
                    X[i, v] = -C[v, comb[i]]
            # LU with partial pivoting (multipliers kept below the diagonal), applied to X
            singular = False
            for j in range(s):
                p = j
                pbest = abs(KS[j, j])
                for i in range(j + 1, s):
                    if abs(KS[i, j]) > pbest:
                        pbest = abs(KS[i, j])
                        p = i
                piv[j] = p
                if not (pbest > 0.0):
                    singular = True
                    break
                rp = 1.0 / KS[p, j]                                # one division per pivot
                if p != j:
                    for q in range(s):
                        tmp = KS[j, q]
                        KS[j, q] = KS[p, q]
                        KS[p, q] = tmp
                    for v in range(m):
                        tmp = X[j, v]
                        X[j, v] = X[p, v]
                        X[p, v] = tmp
                rinv[j] = rp
                for i in range(j + 1, s):
                    f = KS[i, j] * rp
                    KS[i, j] = f
                    for q in range(j + 1, s):
                        KS[i, q] -= f * KS[j, q]
                    for v in range(m):
                        X[i, v] -= f * X[j, v]
            flag = 1
            canc = np.inf
            res = np.inf
            hi = np.inf
            rhi = np.inf
            if not singular:
                for j in range(s - 1, -1, -1):
                    for v in range(m):
                        acc = X[j, v]
                        for q in range(j + 1, s):
                            acc -= KS[j, q] * Z[q, v]
                        Z[j, v] = acc * rinv[j]
                # N >= ||K_S^-1||_inf from the factors: |U^-1| |L^-1| <= M(U)^-1 M(L)^-1 (comparison matrices of
                # triangular factors), and P K_S + dK = L U with |dK| <= gamma_s |L| |U| (Higham 2002, Thm 9.3)
                for i in range(s):
                    acc = 1.0
                    for q in range(i):
                        acc += abs(KS[i, q]) * bvec[q]
                    bvec[i] = acc
                nx = 0.0
                for i in range(s - 1, -1, -1):
                    acc = bvec[i]
                    for q in range(i + 1, s):
                        acc += abs(KS[i, q]) * bvec[q]
                    bvec[i] = acc * abs(rinv[i])
                    nx = max(nx, bvec[i])
                nx *= 1.0 + g_2s
                for q in range(s):                                # (|U| e)_q
                    acc = 0.0
                    for r in range(q, s):
                        acc += abs(KS[q, r])
                    uvec[q] = acc
                lu = 0.0                                          # || |L| |U| e ||_inf
                for i in range(s):
                    acc = uvec[i]
                    for q in range(i):
                        acc += abs(KS[i, q]) * uvec[q]
                    lu = max(lu, acc)
                # multipliers formed with the pivot's reciprocal: one rounding more than Thm 9.3 counts per entry,
                # so gamma_{2s+3} instead of gamma_s (and nx carries the rounding of its own sums and products)
                rho = nx * g_2s * lu * (1.0 + g_2s)
                if rho < 0.5:
                    N = nx / (1.0 - rho) * (1.0 + 8.0 * u64)
                    # the solve's residual, with the rounding of its evaluation: ||z - z*|| <= N ||r||
                    rmax = 0.0
                    for i in range(s):
                        for v in range(m):
                            acc = C[v, comb[i]]
                            aacc = abs(acc)
                            for j in range(d):
                                acc += K[comb[i], j] * Z[j, v]
                                aacc += abs(K[comb[i], j]) * abs(Z[j, v])
                            rmax = max(rmax, abs(acc) + g_s2 * aacc)
                    dz = N * rmax * (1.0 + 4.0 * u64)
                    cb = 0.0
                    rb = 0.0
                    for v in range(m):
                        c1 = c_canc[v]
                        r1 = 0.0
                        for j in range(d):
                            c1 += abs(Z[j, v]) * kappa[j]
                            r1 += abs(Z[j, v]) * mmax[j]
                        cb = max(cb, c1)
                        rb = max(rb, r1)
                    rb += r0max
                    dzk = dz * sumkappa * (1.0 + 4.0 * u64)
                    dC = dzk + g_form * cb
                    Rp = rb + g_s2 * rb + dz * summmax
                    hi, rhi = _HI_NB(cb + dC, Rp, par)
                    canc = -cb
                    res = rb
                    if cb > best[0] or not (hi <= rtol) or not (dC <= eta * cb):
                        # exact values: the kernel's decoding vector (zero on the stragglers), its worst column
                        # of |a| |B| (summed over the m pieces) and its residual; the widths' lower bound below,
                        # only for a set these do not clear
                        canc = 0.0
                        for v in range(m):
                            for i in range(n):
                                if isS[i]:
                                    arow[i] = 0.0
                                else:
                                    acc = C[v, i]
                                    for j in range(d):
                                        acc += K[i, j] * Z[j, v]
                                    arow[i] = abs(acc)
                            for p in range(m):
                                pmax[p] = 0.0
                            for c in range(km):
                                col = 0.0
                                for q in range(col_ptr[c], col_ptr[c + 1]):
                                    col += arow[col_row[q]] * col_val[q]
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
                        Rp = res + g_s2 * rb + dz * summmax
                        hi, rhi = _HI_NB(canc + dC, Rp, par)
                        if not (dC <= eta * canc):
                            flag = 1                  # the kernel's own vector is not known well enough
                        elif hi <= rtol:
                            flag = 0
                        else:
                            # the widths' lower bound: entries of a certainly non-zero (over each piece's largest)
                            wlo = 0
                            for v in range(m):
                                amax = 0.0
                                for i in range(n):
                                    if isS[i]:
                                        arow[i] = 0.0
                                    else:
                                        acc = C[v, i]
                                        for j in range(d):
                                            acc += K[i, j] * Z[j, v]
                                        arow[i] = abs(acc)
                                        amax = max(amax, arow[i])
                                cnt = 0
                                for i in range(n):
                                    if not isS[i]:
                                        aacc = abs(C[v, i])
                                        for j in range(d):
                                            aacc += abs(K[i, j]) * abs(Z[j, v])
                                        if arow[i] > 2.0 * (dz * Ksum[i] + g_s2 * aacc) + eta * amax:
                                            cnt += 1
                                wlo = max(wlo, cnt)
                            if _LO_NB(canc - dC, float(wlo), par) > rtol:
                                flag = 2
                            elif (_HIL_NB(canc - dC, float(wlo), par) > rtol
                                  and _LOU_NB(canc + dC, Rp, par) <= rtol):
                                flag = 3
                    elif hi <= rtol:
                        flag = 0
            out_canc[t] = canc
            out_res[t] = res
            out_hi[t] = hi
            out_rhi[t] = rhi
            out_flag[t] = flag
            for i in range(s):
                isS[comb[i]] = False
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

Screened = tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]


def screen_range(screen: NullSpaceScreen, n: int, first: np.ndarray, count: int, use_numba: bool,
                 best: np.ndarray | None = None) -> Screened:
    """``count`` consecutive straggler sets (lexicographic) from ``first``: ``(S, canc, res, hi, rhi, verdict)``
    (:meth:`NullSpaceScreen.screen`).

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
        cols = [np.concatenate(col) for col in zip(*parts, strict=True)]
        return S, cols[0], cols[1], cols[2], cols[3], cols[4]
    S = np.empty((count, s), dtype=np.int64)
    canc = np.empty(count)
    res = np.empty(count)
    hi = np.empty(count)
    rhi = np.empty(count)
    flag = np.empty(count, dtype=np.int8)
    kern(n, first.astype(np.int64), count, screen.C, screen.K, screen.Ksum, screen.col_ptr,  # type: ignore[operator]
         screen.col_row, screen.col_val, screen.R0, screen.M, screen.c_canc, screen.kappa, screen.sumkappa,
         screen.r0max, screen.mmax, screen.summmax, screen.par, screen.best if best is None else best, S, canc, res,
         hi, rhi, flag)
    return S, canc, res, hi, rhi, flag


def lex_rank(n: int, S: np.ndarray) -> int:
    """Lexicographic rank of one sorted straggler set (inverse of :func:`unrank_lex`)."""
    s = len(S)
    colex = sum(math.comb(n - 1 - int(c), s - i) for i, c in enumerate(S))
    return math.comb(n, s) - 1 - colex
