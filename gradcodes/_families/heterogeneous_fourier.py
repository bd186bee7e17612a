"""The exact coefficients of :func:`~gradcodes.heterogeneous_exact` in integers: the workers' angles, the row
scales, ``B``'s non-zeros and the decoder's per-worker constants (the math is in
``gradcodes._families.heterogeneous_exact``'s module docstring; the Cayley nodes and ``ρ`` come from
``gradcodes._families.adversarial_fourier``).
"""

from __future__ import annotations

import math
from fractions import Fraction

from . import adversarial_fourier as _fourier


def _angles(L: list[int], s: int, k: int) -> tuple[tuple[int, ...], int]:
    """Worker ``i``'s half-angle ``θ_i / 2 = π nums_i / den`` (module docstring).

    ``θ_i = 2π (M_i - (M_i mod k)/2 + (2i + 1)/(8n)) / ((s + 1) k)`` with ``M_i = P_i + L_i/2`` the middle of its
    run: with ``u = 2 M_i``, ``nums_i = (2u - (u mod 2k)) 2n + 2i + 1`` and ``den = 8 (s + 1) k n``. The integers
    ``nums_i`` are strictly increasing in ``i`` (workers with no load are told apart by the ``2i + 1``), odd, so
    never ``den / 2`` (no node at ``θ = π``), and distinct mod ``den``.
    """
    n = len(L)
    nums, pos = [], 0
    for i, li in enumerate(L):
        u = 2 * pos + li
        nums.append((2 * u - u % (2 * k)) * 2 * n + 2 * i + 1)
        pos += li
    return tuple(nums), 8 * (s + 1) * k * n


def _gauss_factor(X: int) -> tuple[int, int]:
    """``-X - i 2^24``: the top coefficient of the Cayley image of ``x - X/2^24``, times ``2^25``."""
    return -X, -(1 << _fourier._NODE_BITS)


def _weights(holders: list[list[int]], x: tuple[Fraction, ...], K: int
             ) -> tuple[list[int], list[int], list[tuple[int, int, int]], tuple[Fraction, Fraction],
                        list[tuple[Fraction, Fraction]], tuple[int, ...], tuple[int, ...]]:
    r"""Exact non-zeros of ``B`` and ``ρ`` (module docstring): ``B_tj = 2^{n-s-1-e_t} prod_{l ∉ T_j} (X_t - X_l) /
    Re(ρ G_j)`` with ``X = 2^24 x`` and ``G_j = prod_{l ∉ T_j} (-X_l - 2^24 i)``.

    ``prod_{l ∉ T_j} (X_t - X_l)`` is ``W_t = prod_{l != t} (X_t - X_l)`` divided by the holders' factors and
    ``G_j`` the product over every worker divided by the holders' (exact integer divisions): ``O(n^2 + k s^2)``
    integer products instead of ``O(k n s)``. The same values as ``adversarial_fourier.construct`` with ``m = 1`` and
    these row scales. Also returns the decoder's constants ``C_t`` and exponents ``c_t`` (:class:`LagrangeDecoder`)
    and the row scales ``e_t``.
    """
    X = _fourier._ints(x)
    n = len(X)
    W = []
    for t in range(n):
        w = 1
        for l_ in range(n):
            if l_ != t:
                w *= X[t] - X[l_]
        W.append(w)
    # row scales (module docstring), in the integers X = s0 x:
    # 2^{2 e_t} ≈ W_t^2 (s0^2/(s0^2 + X_t^2))^{s-1} 4^{n-1} s0^2 / (n^2 prod (s0^2 + X_l^2))
    s0sq = 1 << (2 * _fourier._NODE_BITS)
    s = n - K
    norms = [s0sq + v * v for v in X]
    gamma = Fraction(4 ** (n - 1) * s0sq, n * n * math.prod(norms))
    exps = tuple(_fourier._floor_log2(Fraction(W[t] * W[t]) * Fraction(s0sq, norms[t]) ** (s - 1) * gamma) // 2
                 for t in range(n))
    g_all = (1, 0)
    for l_ in range(n):
        g_all = _fourier._gi_mul(g_all, _gauss_factor(X[l_]))
    G = []
    for T in holders:
        d = (1, 0)
        for u in T:
            d = _fourier._gi_mul(d, _gauss_factor(X[u]))
        norm = d[0] * d[0] + d[1] * d[1]
        num = _fourier._gi_mul(g_all, (d[0], -d[1]))
        G.append((num[0] // norm, num[1] // norm))           # exact: d divides g_all
    # ρ from the top 64 bits of each G_j (the score is scale-invariant; exact integer shifts), then checked exactly
    short = []
    for g in G:
        sh = max(0, max(abs(g[0]), abs(g[1])).bit_length() - 64)
        short.append((g[0] >> sh, g[1] >> sh))
    rho_i = _fourier.choose_rho(short)
    if any(rho_i[0] * g[0] == rho_i[1] * g[1] for g in G):     # some Re(ρ G_j) = 0: decide on the full values
        rho_i = _fourier.choose_rho(G)
    rows: list[int] = []
    cols: list[int] = []
    vals: list[tuple[int, int, int]] = []
    for j, T in enumerate(holders):
        R = rho_i[0] * G[j][0] - rho_i[1] * G[j][1]           # Re(ρ G_j) != 0 (checked above)
        for t in T:
            dt = 1
            for u in T:
                if u != t:
                    dt *= X[t] - X[u]
            rows.append(t)
            cols.append(j)
            vals.append((W[t] // dt, R, K - 1 - exps[t]))       # B_tj = num / den * 2^exp
    # the decoder's per-worker constants C_i = 2^{c_i} prod_{l != i} λ_l / (x_i - x_l) = 2^{c_i - n + 1} g_i / W_i,
    # g_i = prod_{l != i} (-X_l - 2^24 i), c_i = e_i + h_i (|C_i| is about 1/n)
    h = _fourier.scale_exponents(x, s + 1)                     # ⌊log2((1 + x_t^2)^s) / 2⌋
    e_all = tuple(e + hh for e, hh in zip(exps, h, strict=True))
    consts = []
    for i in range(n):
        fi = _gauss_factor(X[i])
        norm = fi[0] * fi[0] + fi[1] * fi[1]
        g = _fourier._gi_mul(g_all, (fi[0], -fi[1]))
        sh = e_all[i] - n + 1
        p2 = Fraction(2) ** sh
        consts.append((Fraction(g[0] // norm, W[i]) * p2, Fraction(g[1] // norm, W[i]) * p2))
    return rows, cols, vals, (Fraction(rho_i[0]), Fraction(rho_i[1])), consts, e_all, exps
