r"""The well-conditioned default of :func:`~gradcodes.adversarial_gc`: real nodes that are the Cayley images of
roots of unity, and the top *Fourier* coefficients as the decoded functionals.

**Why.** The polynomial construction of Jahani-Nezhad & Maddah-Ali (2021) decodes the top ``m`` coefficients of a
polynomial of degree ``< K`` interpolated from ``K`` real evaluations. In the monomial basis at real nodes the
decoding weights grow like ``2^K`` (a divided difference): float64 loses the sum from ``n ≈ 20``. On the unit circle
the same problem is perfectly conditioned (the top coefficient of the interpolant through all ``n``-th roots of unity
is a discrete Fourier coefficient), but complex messages would double the communication.

**The real form** (our algebra, after Ye & Abbe's Fourier construction, ``docs/ye_abbe.md``). The Cayley map
``x = tan(θ/2)``, ``z = e^{iθ} = (1 + ix)/(1 - ix)`` sends a real polynomial ``p`` of degree ``< K`` to

.. math:: P(z) = \left(\tfrac{1 + z}{2}\right)^{K-1} p(x(z)), \qquad \deg P < K,

and ``P(z_i) = ((1 + z_i)/2)^{K-1} p(x_i)`` with ``|(1 + z_i)/2| = cos(θ_i/2)``. So real messages ``y_i = 2^{-e_i}
p(x_i)`` (``2^{e_i}`` a power of two within a factor 2 of ``(1 + x_i^2)^{(K-1)/2}``) are, up to unimodular factors,
the values of ``P`` on the unit circle. The functionals are the top ``⌈m/2⌉`` complex coefficients of ``P``, real and
imaginary parts (``m`` odd: the last one is ``Re(ρ c)`` for a fixed Gaussian rational ``ρ``). They are linear
functionals on ``p`` with Gaussian-rational values; the construction keeps the paper's structure (``q_{j,u} = P_j
h_{j,u}`` vanishes at the workers that do not store ``j``) and its exactness:

* ``P_j(x) = prod_{l ∉ W_j}(x - x_l)`` maps to ``Λ_j prod_{l ∉ W_j}(z - z_l)`` with ``Λ_j = prod (-i - x_l)/2``;
* ``h`` is a real combination of ``b_t(x) = (1 + ix)^{D-t}(1 - ix)^t`` (``D = r_j - s - 2a - 1``), which map to the
  monomials ``z^{D-t}``: ``Re b_t`` and ``Im b_t`` set the coefficient of ``z^{D-t}`` to ``(α - iβ)/2`` and the
  top coefficients of ``P_j h`` are triangular in them (diagonal ``Λ_j ≠ 0``); when ``m`` is odd and
  ``D = m - 1`` the last ``b_t = (1 + x^2)^t`` is real and ``ρ`` is chosen (exactly, among fixed candidates) so that
  ``Re(ρ Λ_j) ≠ 0`` for every such ``j``.

**Decoding.** The Lagrange basis polynomial of node ``i`` on the responders ``Q`` maps to
``prod_{l ∈ Q∖i} λ_l (z - z_l)/(x_i - x_l)``, ``λ_l = (-i - x_l)/2``: its top coefficients are
``(prod_l λ_l/(x_i - x_l)) (-1)^t e_t(z_{Q∖i})``. With the nodes at the (stride-permuted) roots of unity,
``|prod_l λ_l/(x_i - x_l)| 2^{e_i} ≈ 1/prod_{l∈Q∖i}|z_i - z_l| = prod_{l∉Q}|z_i - z_l| / n <= 2^{n-K}/n``: the weights
are products of chords, no cancelling divided differences.

**Nodes.** Worker ``i`` gets the angle ``θ_i = 2π(q i mod n + δ)/n`` (``δ = 1/2`` for even ``n``, so no node is at
``θ = π``), ``q`` the first integer ``>= ⌊n (3 - √5)/2⌋`` coprime to ``n`` (the golden-ratio stride: consecutive
workers, which cyclic placements make share partitions, are spread around the circle), and ``x_i = tan(θ_i/2)``
evaluated with :mod:`mpmath` at 113 bits and rounded to a multiple of ``2^-24``: exact dyadic rationals, the same on
every machine. The construction runs in exact rational arithmetic; the float code is its correctly rounded image.
"""

from __future__ import annotations

import functools
import math
from fractions import Fraction
from typing import Any

import numpy as np

Gauss = tuple[Fraction, Fraction]

_NODE_BITS = 24
_ONE: Gauss = (Fraction(1), Fraction(0))
_ZERO: Gauss = (Fraction(0), Fraction(0))


def gmul(a: Gauss, b: Gauss) -> Gauss:
    return a[0] * b[0] - a[1] * b[1], a[0] * b[1] + a[1] * b[0]


def gdiv(a: Gauss, b: Gauss) -> Gauss:
    d = b[0] * b[0] + b[1] * b[1]
    return (a[0] * b[0] + a[1] * b[1]) / d, (a[1] * b[0] - a[0] * b[1]) / d


def gsub(a: Gauss, b: Gauss) -> Gauss:
    return a[0] - b[0], a[1] - b[1]


def stride(n: int) -> int:
    """The golden-ratio stride: the first ``q >= max(1, ⌊n (3 - √5)/2⌋)`` coprime to ``n`` (exact integers).

    >>> [stride(n) for n in (2, 5, 12, 100)]
    [1, 2, 5, 39]
    """
    q = max(1, (3 * n - math.isqrt(5 * n * n)) // 2)
    while math.gcd(q, n) != 1:
        q += 1
    return q


@functools.lru_cache(maxsize=16)
def unity_nodes(n: int) -> tuple[Fraction, ...]:
    """The dyadic nodes ``x_i = tan(θ_i/2)`` rounded to multiples of ``2^-24`` (see the module docstring)."""
    import mpmath

    q = stride(n)
    half = 1 if n % 2 == 0 else 0
    out = []
    with mpmath.workprec(113):
        scale = mpmath.mpf(2) ** _NODE_BITS
        for i in range(n):
            a = (q * i) % n
            v = mpmath.tan(mpmath.pi * (2 * a + half) / (2 * n)) * scale
            out.append(Fraction(int(mpmath.nint(v)), 1 << _NODE_BITS))
    return tuple(out)


def _floor_log2(f: Fraction) -> int:
    a, b = f.numerator, f.denominator
    t = a.bit_length() - b.bit_length()
    if (a << max(0, -t)) < (b << max(0, t)):
        t -= 1
    return t


def scale_exponents(x: tuple[Fraction, ...] | list[Fraction], K: int) -> tuple[int, ...]:
    """``e_i = ⌊log2((1 + x_i^2)^{K-1}) / 2⌋`` exactly: ``2^{e_i}`` is within a factor 2 of ``(1+x_i^2)^{(K-1)/2}``."""
    return tuple(_floor_log2((1 + v * v) ** (K - 1)) // 2 for v in x)


def circle_point(x: Fraction) -> Gauss:
    """``z = (1 + ix)/(1 - ix)``, exactly on the unit circle."""
    d = 1 + x * x
    return (1 - x * x) / d, 2 * x / d


def lam(x: Fraction) -> Gauss:
    """``λ = (-i - x)/2``: ``((1 + z)/2)(x(z) - x) = λ (z - z(x))``."""
    return -x / 2, Fraction(-1, 2)


def _top_elementary(zs: list[Gauss], T: int) -> list[Gauss]:
    """Top ``T`` coefficients (highest first) of the monic ``prod (z - z_l)``: ``(-1)^t e_t``."""
    c = [_ONE] + [_ZERO] * (T - 1)
    for zl in zs:
        for t in range(T - 1, 0, -1):
            c[t] = gsub(c[t], gmul(zl, c[t - 1]))
    return c


def _rho_candidates() -> list[Gauss]:
    out = [(Fraction(1), Fraction(0)), (Fraction(0), Fraction(1))]
    for a in range(1, 6):
        for b in range(1, 6):
            if math.gcd(a, b) == 1:
                out += [(Fraction(a), Fraction(b)), (Fraction(a), Fraction(-b))]
    return out


def choose_rho(lams: list[Gauss]) -> Gauss:
    """A fixed Gaussian rational ``ρ`` with ``Re(ρ Λ) ≠ 0`` for every ``Λ`` given, maximising the worst
    ``Re(ρ Λ)^2 / |ρ Λ|^2`` over the candidates (exact comparison; first maximum in a fixed order)."""
    if not lams:
        return _ONE
    best, best_score = _ONE, Fraction(-1)
    for rho in _rho_candidates():
        score = min((gmul(rho, L)[0] ** 2) / (gmul(rho, L)[0] ** 2 + gmul(rho, L)[1] ** 2) for L in lams)
        if score > best_score:
            best, best_score = rho, score
    if best_score == 0:                                     # every candidate orthogonal to some Λ: search further
        a = 6
        while best_score == 0:
            best = (Fraction(a), Fraction(1))
            best_score = min(gmul(best, L)[0] ** 2 for L in lams)
            a += 1
    return best


def construct(S: np.ndarray, m: int, K: int, x: tuple[Fraction, ...], exps: tuple[int, ...]
              ) -> tuple[list[list[Fraction]], Gauss]:
    """The exact encoding matrix (rows of Fractions) and ``ρ``: see the module docstring."""
    n, k = S.shape
    T = (m + 1) // 2
    odd = m % 2 == 1
    zs = [circle_point(v) for v in x]
    lm = [lam(v) for v in x]
    r_j = S.sum(axis=0)
    Lam = []
    for j in range(k):
        L = _ONE
        for i in np.flatnonzero(~S[:, j]):
            L = gmul(L, lm[int(i)])
        Lam.append(L)
    middle = [odd and int(K - 1 - (n - r_j[j])) == m - 1 for j in range(k)]
    rho = choose_rho([Lam[j] for j in range(k) if middle[j]]) if odd else _ONE
    B = [[Fraction(0)] * (k * m) for _ in range(n)]
    for j in range(k):
        non = [int(i) for i in np.flatnonzero(~S[:, j])]
        hold = [int(i) for i in np.flatnonzero(S[:, j])]
        D = K - 1 - len(non)
        pi = _top_elementary([zs[i] for i in non], T)
        Pval = {}
        for i in hold:
            v = Fraction(1)
            for l_ in non:
                v *= x[i] - x[l_]
            Pval[i] = v
        # b_t(x_i) = (1 + i x)^{D-t} (1 - i x)^t for the holders
        bvals = {}
        for i in hold:
            w_p: Gauss = (Fraction(1), x[i])
            w_m: Gauss = (Fraction(1), -x[i])
            row = []
            for t in range(T):
                v = _ONE
                for _ in range(D - t):
                    v = gmul(v, w_p)
                for _ in range(t):
                    v = gmul(v, w_m)
                row.append(v)
            bvals[i] = row
        for u in range(m):
            eta: list[Gauss] = []
            coef: list[tuple[Fraction, Fraction]] = []      # (α_t, β_t)
            for t in range(T):
                R = _ZERO                                   # Σ_{t2 < t} π_{t-t2} η_{t2}
                for t2 in range(t):
                    p_ = gmul(pi[t - t2], eta[t2])
                    R = (R[0] + p_[0], R[1] + p_[1])
                last = odd and t == T - 1
                if last and middle[j]:
                    # c = Λ (α + R) with α real; need Re(ρ c) = δ
                    rl = gmul(rho, Lam[j])
                    rlR = gmul(rl, R)
                    alpha = (Fraction(int(u == m - 1)) - rlR[0]) / rl[0]
                    eta.append((alpha, Fraction(0)))
                    coef.append((alpha, Fraction(0)))
                    continue
                if last:
                    target = gdiv((Fraction(int(u == m - 1)), Fraction(0)), rho)
                else:
                    target = ((Fraction(int(u == 2 * t)), Fraction(int(u == 2 * t + 1))))
                e = gsub(gdiv(target, Lam[j]), R)
                eta.append(e)
                coef.append((2 * e[0], -2 * e[1]))
            for i in hold:
                h = Fraction(0)
                for t in range(T):
                    al, be = coef[t]
                    bv = bvals[i][t]
                    h += al * bv[0] + be * bv[1]
                B[i][j * m + u] = Pval[i] * h / (Fraction(2) ** exps[i])
    return B, rho


def weights_exact(xQ: list[Fraction], eQ: list[int], m: int, rho: Gauss) -> list[list[Fraction]]:
    """``A[u][c]``: the ``u``-th real functional of the Lagrange basis polynomial of ``xQ[c]``, times ``2^{e_c}``."""
    K = len(xQ)
    T = (m + 1) // 2
    zs = [circle_point(v) for v in xQ]
    lm = [lam(v) for v in xQ]
    out = [[Fraction(0)] * K for _ in range(m)]
    for c in range(K):
        pre = _ONE
        for l_ in range(K):
            if l_ != c:
                pre = gmul(pre, (lm[l_][0] / (xQ[c] - xQ[l_]), lm[l_][1] / (xQ[c] - xQ[l_])))
        top = _top_elementary([zs[l_] for l_ in range(K) if l_ != c], T)
        sc = Fraction(2) ** eQ[c]
        for u in range(m):
            w = gmul(pre, top[u // 2])
            if m % 2 == 1 and u == m - 1:
                w = gmul(rho, w)
            out[u][c] = (w[1] if u % 2 == 1 and not (m % 2 == 1 and u == m - 1) else w[0]) * sc
    return out


def _spread_ldexp(step: int, total: int, e: np.ndarray) -> np.ndarray:
    """The exponent increments that apply ``2^e`` in ``total`` exact steps (step = 0 .. total - 1)."""
    return (e * (step + 1)) // total - (e * step) // total


def weights_float(xQ: np.ndarray, eQ: np.ndarray, m: int, rho: Gauss) -> np.ndarray:
    """Float weights for a batch: ``xQ`` (b, K) nodes, ``eQ`` (b, K) scale exponents; returns (b, m, K).

    Products of ``K - 1`` factors ``λ_l / (x_c - x_l)`` (exact differences of the dyadic nodes, one rounding each)
    with the scale ``2^{e_c}`` applied in exact steps (no overflow), and the top elementary symmetric functions of
    the circle points accumulated in the workers' order (the golden stride spreads every prefix around the circle).
    """
    b, K = xQ.shape
    T = (m + 1) // 2
    d = 1.0 + xQ * xQ
    z = ((1.0 - xQ * xQ) / d) + 1j * (2.0 * xQ / d)               # (b, K)
    lmb = (-0.5 * xQ) - 0.5j                                       # (b, K)
    pre = np.ones((b, K), dtype=np.complex128)
    top = np.zeros((T, b, K), dtype=np.complex128)
    top[0] = 1.0
    step = 0
    for l_ in range(K):
        diff = xQ - xQ[:, l_:l_ + 1]                               # x_c - x_l, (b, K); zero at c = l
        own = diff == 0
        fac = np.where(own, 1.0 + 0j, lmb[:, l_:l_ + 1] / np.where(own, 1.0, diff))
        pre *= fac
        inc = _spread_ldexp(step, K, eQ)
        pre = np.ldexp(pre.real, inc) + 1j * np.ldexp(pre.imag, inc)
        zl = np.where(own, 0.0 + 0j, z[:, l_:l_ + 1])
        for t in range(T - 1, 0, -1):
            top[t] = top[t] - zl * top[t - 1]
        step += 1
    out = np.empty((b, m, K))
    for u in range(m):
        w = pre * top[u // 2]
        if m % 2 == 1 and u == m - 1:
            w = w * complex(float(rho[0]), float(rho[1]))
            out[:, u] = w.real
        else:
            out[:, u] = w.imag if u % 2 == 1 else w.real
    return out


def interp_exact(xQ: list[Fraction], eQ: list[int], xt: list[Fraction], et: list[int]) -> list[list[Fraction]]:
    """``M[l][c] = L_c(xt_l) 2^{eQ_c - et_l}``: the scaled messages at ``xt`` predicted from those at ``xQ``."""
    K = len(xQ)
    M = []
    for xl, el in zip(xt, et, strict=True):
        row = []
        for c in range(K):
            v = Fraction(2) ** (eQ[c] - el)
            for k2 in range(K):
                if k2 != c:
                    v = v * (xl - xQ[k2]) / (xQ[c] - xQ[k2])
            row.append(v)
        M.append(row)
    return M


def interp_float(xQ: np.ndarray, eQ: np.ndarray, xt: np.ndarray, et: np.ndarray) -> np.ndarray:
    """Float :func:`interp_exact` (len(xt), K), the scale applied in exact steps (no overflow)."""
    K = xQ.size
    M = np.ones((xt.size, K))
    e = eQ[None, :] - et[:, None]
    for k2 in range(K):
        den = xQ - xQ[k2]
        own = den == 0
        fac = np.where(own[None, :], 1.0, (xt[:, None] - xQ[k2]) / np.where(own, 1.0, den)[None, :])
        M = np.ldexp(M * fac, _spread_ldexp(k2, K, e))
    return M
