"""Compiled kernels of :class:`~gradcodes._families.grouped_random.RowSpaceDecoder` (numba; compiled lazily on first
use and cached on disk, never at ``import gradcodes``).

``solve_one`` is the decoder's per-set computation: the thin QR ``C_F = Q R`` of the responders' row-weighted
coordinates by classical Gram-Schmidt with one reorthogonalisation (CGS2; Giraud, Langou & Rozloznik 2005), the
forward substitution ``R^T Y = c^T`` and ``a_F = (Q Y)^T`` (weighted coordinates; the decoder divides by the row
weights). :func:`decode_sets` runs it over a batch of responder sets (the decoder's path), :func:`certify_sets`
over a range of straggler sets in lexicographic order, evaluating each decode's residual ``||a_F B_F - E||_inf`` and
cancellation factor (the worst column of ``|a_F| |B_F|``, :func:`gradcodes._core.numerics.cancellation`) on the spot
(the exhaustive certification of
``benchmarks/verify/certify_seeds.py``; the decoding vectors are bitwise those of the decoder, the residual and the
cancellation are the verifier's formulas summed in a fixed order). Sets whose factor is singular are handed back
(the decoder falls back to least squares for them).
"""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = ["kernels"]

#: the compiled ``_solve_one`` (a module global, so that the compiled callers and numba's on-disk cache find it)
_SOLVE_ONE: Any = None
_KERNELS: Any = None


def _solve_one(C, c, Fb, Q, R, Y, v, h, aF):  # pragma: no cover - compiled
    f = Fb.shape[0]
    r = C.shape[1]
    m = c.shape[0]
    for j in range(r):
        for i in range(r):
            R[i, j] = 0.0
    for j in range(r):
        for i in range(f):
            v[i] = C[Fb[i], j]
        for _ in range(2):                           # classical Gram-Schmidt, reorthogonalised once
            for p in range(j):
                acc = 0.0
                for i in range(f):
                    acc += Q[i, p] * v[i]
                h[p] = acc
            for p in range(j):
                for i in range(f):
                    v[i] -= Q[i, p] * h[p]
                R[p, j] += h[p]
        nrm = 0.0
        for i in range(f):
            nrm += v[i] * v[i]
        nrm = np.sqrt(nrm)
        R[j, j] = nrm
        scale = nrm if nrm > 0.0 else 1.0
        for i in range(f):
            Q[i, j] = v[i] / scale
    dmin = np.inf
    amax = 0.0
    for i in range(r):
        dmin = min(dmin, abs(R[i, i]))
        for j in range(r):
            amax = max(amax, abs(R[i, j]))
    if not dmin > amax * 1e-13:
        return False
    for i in range(r):                               # R^T Y = c^T (forward substitution)
        for u in range(m):
            acc = c[u, i]
            for j in range(i):
                acc -= R[j, i] * Y[j, u]
            Y[i, u] = acc / R[i, i]
    for u in range(m):                               # a_F = (Q Y)^T
        for i in range(f):
            acc = 0.0
            for p in range(r):
                acc += Q[i, p] * Y[p, u]
            aF[u, i] = acc
    return True


def _decode_sets(C, c, F, out, ok):  # pragma: no cover - compiled
    g, f = F.shape
    r = C.shape[1]
    Q = np.empty((f, r))
    R = np.empty((r, r))
    Y = np.empty((r, c.shape[0]))
    v = np.empty(f)
    h = np.empty(r)
    for b in range(g):
        ok[b] = _SOLVE_ONE(C, c, F[b], Q, R, Y, v, h, out[b])


def _certify_sets(C, c, w, B, E, k, u, first, count, worst, worst_set, singular):  # pragma: no cover
    # worst: [est, res, canc]; worst_set (3, s): the straggler sets reaching them; returns #singular
    n, r = C.shape
    s = first.shape[0]
    f = n - s
    m = c.shape[0]
    km = B.shape[1]
    Q = np.empty((f, r))
    R = np.empty((r, r))
    Y = np.empty((r, m))
    v = np.empty(f)
    h = np.empty(r)
    aF = np.empty((m, f))
    a = np.empty((m, f))
    pmax = np.empty(m)
    Fb = np.empty(f, dtype=np.int64)
    strag = np.zeros(n, dtype=np.bool_)
    comb = first.copy()
    nsing = 0
    for _t in range(count):
        for i in range(n):
            strag[i] = False
        for i in range(s):
            strag[comb[i]] = True
        p = 0
        for i in range(n):
            if not strag[i]:
                Fb[p] = i
                p += 1
        if not _SOLVE_ONE(C, c, Fb, Q, R, Y, v, h, aF):
            if nsing < singular.shape[0]:
                singular[nsing, :] = comb
            nsing += 1
        else:
            for uu in range(m):
                for i in range(f):
                    a[uu, i] = aF[uu, i] / w[Fb[i]]
            res = 0.0
            canc = 0.0
            for uu in range(m):
                for p in range(m):
                    pmax[p] = 0.0
                for j in range(km):
                    acc = 0.0
                    col = 0.0
                    for i in range(f):
                        acc += a[uu, i] * B[Fb[i], j]
                        col += abs(a[uu, i]) * abs(B[Fb[i], j])
                    d = abs(acc - E[uu, j])
                    if not d <= res:                 # NaN propagates as the worst
                        res = d
                    if col > pmax[j % m]:
                        pmax[j % m] = col
                tot = 0.0
                for p in range(m):
                    tot += pmax[p]
                if tot > canc:                       # the worst column, summed over the m pieces
                    canc = tot
            est = u * canc + res
            if not est <= worst[0]:
                worst[0] = est
                worst_set[0, :] = comb
            if res > worst[1]:
                worst[1] = res
                worst_set[1, :] = comb
            if canc > worst[2]:
                worst[2] = canc
                worst_set[2, :] = comb
        # next straggler set in lexicographic order
        i = s - 1
        while i >= 0 and comb[i] == n - s + i:
            i -= 1
        if i < 0:
            break
        comb[i] += 1
        for j in range(i + 1, s):
            comb[j] = comb[j - 1] + 1
    return nsing


def _build() -> tuple[Any, Any]:
    global _SOLVE_ONE
    import numba

    jit = numba.njit(cache=True, nogil=True)
    _SOLVE_ONE = jit(_solve_one)
    return jit(_decode_sets), jit(_certify_sets)


def kernels() -> tuple[Any, Any] | None:
    """``(decode_sets, certify_sets)``, or None when numba is unavailable."""
    global _KERNELS
    if _KERNELS is None:
        try:
            _KERNELS = _build()
        except ImportError:  # pragma: no cover - numba comes with galois
            _KERNELS = False
    return _KERNELS or None
