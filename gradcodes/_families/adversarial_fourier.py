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

from .._base.errors import GradcodesValueError
from .._core.detlinalg import log_two_sin_pi

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


def stride_angles(n: int) -> np.ndarray:
    """Worker ``i``'s angle index ``q i mod n`` (angle ``2π(index + δ)/n``), ``q`` the golden-ratio stride."""
    return (stride(n) * np.arange(n, dtype=np.int64)) % n


def unity_nodes(n: int, angles: np.ndarray | None = None) -> tuple[Fraction, ...]:
    """The dyadic nodes ``x_i = tan(θ_i/2)`` rounded to multiples of ``2^-24`` (see the module docstring); worker
    ``i`` at angle index ``angles[i]`` (default :func:`stride_angles`)."""
    ang = stride_angles(n) if angles is None else angles
    half = 1 if n % 2 == 0 else 0
    return cayley_nodes(tuple(2 * int(ang[i]) + half for i in range(n)), 2 * n)


#: most passes over all worker pairs made by :func:`spread_angles`
SPREAD_SWEEPS = 8


def spread_angles(S: np.ndarray, sweeps: int = SPREAD_SWEEPS) -> np.ndarray:
    r"""A worker-to-angle assignment for the placement ``S`` (n x k, bool) that spreads every partition's holders
    around the circle (``nodes="spread"`` of :func:`~gradcodes.adversarial_gc`).

    A partition's column of ``B`` is a polynomial that vanishes at the workers that do not store it; its value at
    a holder ``i`` is about ``n / prod_l |z_i - z_l|`` over the other holders ``l``, so holders bunched on the circle
    make ``B`` large and the decode inaccurate. The golden-ratio stride spreads cyclic windows, not arbitrary sets.
    Score of partition ``j``: ``max_i sum_{l != i} -log|z_i - z_l|`` over its holders, with the chords
    ``|z_i - z_l| = 2 sin(π d / n)`` read from a table computed with :mod:`mpmath` and rounded once
    (:func:`gradcodes._core.detlinalg.log_two_sin_pi`) and summed elementwise in a fixed order. Starting from the
    stride,
    swaps of two workers' angles are tried in a fixed order (all pairs ``i < i'``, at most ``sweeps`` passes, until a
    pass changes nothing) and kept when they lower (largest score, exact sum of the scores). Every operation is
    an IEEE basic operation in a fixed order or a comparison of such results, so the assignment is the same on
    every machine; no random numbers.
    """
    n, k = S.shape
    table = -np.array(log_two_sin_pi(n))
    table[0] = 0.0
    holders = [np.flatnonzero(S[:, j]) for j in range(k)]
    width = max((len(h) for h in holders), default=0)
    idx = np.zeros((k, width), dtype=np.int64)
    mask = np.zeros((k, width), dtype=bool)
    for j, h in enumerate(holders):
        idx[j, :len(h)] = h
        mask[j, :len(h)] = True
    pair = (mask[:, :, None] & mask[:, None, :]).astype(np.float64)
    parts = [np.flatnonzero(S[w]) for w in range(n)]
    ang = stride_angles(n)

    def scores(js: np.ndarray) -> np.ndarray:
        A = ang[idx[js]]
        terms = table[(A[:, :, None] - A[:, None, :]) % n] * pair[js]
        acc = terms[:, :, 0].copy()
        for c in range(1, width):
            acc += terms[:, :, c]
        return np.where(mask[js], acc, -np.inf).max(axis=1)

    V = scores(np.arange(k))
    best = (float(V.max()), math.fsum(V.tolist()))
    for _ in range(sweeps):
        changed = False
        for i in range(n):
            for i2 in range(i + 1, n):
                aff = np.union1d(parts[i], parts[i2])
                if aff.size == 0:
                    continue
                ang[i], ang[i2] = ang[i2], ang[i]
                old = V[aff]
                V[aff] = scores(aff)
                key = (float(V.max()), math.fsum(V.tolist()))
                if key < best:
                    best, changed = key, True
                else:
                    V[aff] = old
                    ang[i], ang[i2] = ang[i2], ang[i]
        if not changed:
            break
    return ang


@functools.lru_cache(maxsize=16)
def cayley_nodes(nums: tuple[int, ...], den: int) -> tuple[Fraction, ...]:
    """``x_i = tan(π nums_i / den)`` (the Cayley image of the angle ``θ_i = 2π nums_i / den``) evaluated with
    :mod:`mpmath` at 113 bits and rounded to the nearest multiple of ``2^-24``: exact dyadic rationals, the same on
    every machine (shared by :func:`unity_nodes` and ``heterogeneous_exact``).

    >>> cayley_nodes((1, 3), 8)
    (Fraction(3474675, 8388608), Fraction(20251891, 8388608))
    """
    import mpmath

    out = []
    with mpmath.workprec(113):
        scale = mpmath.mpf(2) ** _NODE_BITS
        for a in nums:
            v = mpmath.tan(mpmath.pi * a / den) * scale
            out.append(Fraction(int(mpmath.nint(v)), 1 << _NODE_BITS))
    return tuple(out)


def thin_placement(S: np.ndarray, need: int, angles: np.ndarray | None = None) -> np.ndarray:
    """The holders the code uses: ``need = s + 2a + m`` of each partition's ``r_j`` holders, the most spread out on
    the circle (worker ``i`` at angle index ``angles[i]``, default :func:`stride_angles`).

    The Cayley image of ``P_j h`` vanishes at the unused holders too, so ``B``'s column is the tight-case polynomial
    of the kept holders; a partition's value at a kept holder is about ``n / prod |z_i - z_l|`` over the other kept
    holders, so clustered holders make ``B`` large. Rule (integer angle indices ``q i mod n``, exact): while more
    than ``need`` remain, drop the holder with the smallest gap to a circular neighbour (ties: smaller sum of its
    two gaps, then the larger worker index).
    """
    n, k = S.shape
    ang = stride_angles(n) if angles is None else angles
    out = S.copy()
    for j in range(k):
        hold = [int(i) for i in np.flatnonzero(S[:, j])]
        if len(hold) <= need:
            continue
        hold.sort(key=lambda i: int(ang[i]))
        while len(hold) > need:
            L = len(hold)
            best, key = 0, None
            for c in range(L):
                prev = (int(ang[hold[c]]) - int(ang[hold[c - 1]])) % n
                nxt = (int(ang[hold[(c + 1) % L]]) - int(ang[hold[c]])) % n
                kk = (min(prev, nxt), prev + nxt, -hold[c])
                if key is None or kk < key:
                    best, key = c, kk
            out[hold[best], j] = False
            del hold[best]
    return out


def _floor_log2(f: Fraction) -> int:
    a, b = f.numerator, f.denominator
    t = a.bit_length() - b.bit_length()
    if (a << max(0, -t)) < (b << max(0, t)):
        t -= 1
    return t


def scale_exponents(x: tuple[Fraction, ...] | list[Fraction], K: int) -> tuple[int, ...]:
    """``e_i = ⌊log2((1 + x_i^2)^{K-1}) / 2⌋`` exactly: ``2^{e_i}`` is within a factor 2 of ``(1+x_i^2)^{(K-1)/2}``."""
    return tuple(_floor_log2((1 + v * v) ** (K - 1)) // 2 for v in x)


GInt = tuple[int, int]


def _gi_mul(a: GInt, b: GInt) -> GInt:
    return a[0] * b[0] - a[1] * b[1], a[0] * b[1] + a[1] * b[0]


def _ints(x: Any) -> list[int]:
    """The numerators of dyadic nodes over ``2^24`` (exact)."""
    out = []
    for v in x:
        v = Fraction(v)
        if (1 << _NODE_BITS) % v.denominator:
            raise GradcodesValueError("nodes: the Fourier form needs dyadic nodes with denominators dividing 2^24")
        out.append(int(v * (1 << _NODE_BITS)))
    return out


def _top_linear_product(factors: list[tuple[GInt, GInt]], T: int) -> list[GInt]:
    """Top ``T`` coefficients (highest first) of ``prod (a z + b)`` over Gaussian integers."""
    c: list[GInt] = [(1, 0)] + [(0, 0)] * (T - 1)
    for a_, b_ in factors:
        for t in range(T - 1, -1, -1):
            v = _gi_mul(a_, c[t])
            if t:
                w = _gi_mul(b_, c[t - 1])
                v = (v[0] + w[0], v[1] + w[1])
            c[t] = v
    return c


def _rho_candidates() -> list[GInt]:
    out = [(1, 0), (0, 1)]
    for a in range(1, 6):
        for b in range(1, 6):
            if math.gcd(a, b) == 1:
                out += [(a, b), (a, -b)]
    return out


def choose_rho(lams: list[GInt]) -> GInt:
    """A fixed Gaussian integer ``ρ`` with ``Re(ρ Λ) ≠ 0`` for every ``Λ`` given, maximising the worst
    ``Re(ρ Λ)^2 / |ρ Λ|^2`` over the candidates (exact comparison; the first maximum in a fixed order)."""
    if not lams:
        return (1, 0)

    def score(rho: GInt) -> Fraction:
        return min(Fraction(_gi_mul(rho, L)[0] ** 2, _gi_mul(rho, L)[0] ** 2 + _gi_mul(rho, L)[1] ** 2)
                   for L in lams)

    best, best_score = (1, 0), Fraction(-1)
    for rho in _rho_candidates():
        sc = score(rho)
        if sc > best_score:
            best, best_score = rho, sc
    a = 6
    while best_score == 0:                                  # every candidate orthogonal to some Λ: search further
        best = (a, 1)
        best_score = score(best)
        a += 1
    return best


def construct(S: np.ndarray, m: int, K: int, x: tuple[Fraction, ...], exps: tuple[int, ...]
              ) -> tuple[list[list[Fraction]], Gauss]:
    """The exact encoding matrix (rows of Fractions) and ``ρ``: see the module docstring.

    Integer arithmetic throughout (nodes ``X_i / 2^24``): ``P_j(x_i) = prod (X_i - X_l) / 2^{24 |N_j|}``, the Cayley
    image of ``P_j`` is ``prod ((-X_l - 2^24 i) z + (2^24 i - X_l)) / (2^25)^{|N_j|}`` and ``b_t(x_i) =
    (2^24 + i X_i)^{D-t} (2^24 - i X_i)^t / 2^{24 D}``.
    """
    n, k = S.shape
    X = _ints(x)
    s0 = 1 << _NODE_BITS
    T = (m + 1) // 2
    odd = m % 2 == 1
    r_j = S.sum(axis=0)
    Pz = []                                                  # top T coefficients of the Cayley image of P_j
    for j in range(k):
        non = [int(i) for i in np.flatnonzero(~S[:, j])]
        top = _top_linear_product([((-X[l_], -s0), (-X[l_], s0)) for l_ in non], T)
        den = Fraction(1, (2 * s0) ** len(non))
        Pz.append([(Fraction(c[0]) * den, Fraction(c[1]) * den) for c in top])
    middle = [odd and int(K - 1 - (n - r_j[j])) == m - 1 for j in range(k)]
    rho_i = choose_rho([_top_linear_product([((-X[int(l_)], -s0), (-X[int(l_)], s0))
                                             for l_ in np.flatnonzero(~S[:, j])], 1)[0]
                        for j in range(k) if middle[j]]) if odd else (1, 0)
    rho: Gauss = (Fraction(rho_i[0]), Fraction(rho_i[1]))
    B = [[Fraction(0)] * (k * m) for _ in range(n)]
    for j in range(k):
        non = [int(i) for i in np.flatnonzero(~S[:, j])]
        hold = [int(i) for i in np.flatnonzero(S[:, j])]
        D = K - 1 - len(non)
        Pi = Pz[j]
        Pval = {}
        for i in hold:
            prod = 1
            for l_ in non:
                prod *= X[i] - X[l_]
            Pval[i] = Fraction(prod, s0 ** len(non))
        bvals = {}
        for i in hold:
            row = []
            for t in range(T):
                v: GInt = (1, 0)
                for _ in range(D - t):
                    v = _gi_mul(v, (s0, X[i]))
                for _ in range(t):
                    v = _gi_mul(v, (s0, -X[i]))
                row.append((Fraction(v[0], s0 ** D), Fraction(v[1], s0 ** D)))
            bvals[i] = row
        for u in range(m):
            eta: list[Gauss] = []
            coef: list[tuple[Fraction, Fraction]] = []      # (α_t, β_t)
            for t in range(T):
                R = _ZERO                                   # Σ_{t2 < t} Π_{t-t2} η_{t2}
                for t2 in range(t):
                    p_ = gmul(Pi[t - t2], eta[t2])
                    R = (R[0] + p_[0], R[1] + p_[1])
                last = odd and t == T - 1
                if last and middle[j]:
                    # c = Π_0 α + R with α real; need Re(ρ c) = δ
                    rl = gmul(rho, Pi[0])
                    alpha = (Fraction(int(u == m - 1)) - gmul(rho, R)[0]) / rl[0]
                    eta.append((alpha, Fraction(0)))
                    coef.append((alpha, Fraction(0)))
                    continue
                if last:
                    target = gdiv((Fraction(int(u == m - 1)), Fraction(0)), rho)
                else:
                    target = (Fraction(int(u == 2 * t)), Fraction(int(u == 2 * t + 1)))
                e = gdiv(gsub(target, R), Pi[0])
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
    """``A[u][c]``: the ``u``-th real functional of the Lagrange basis polynomial of ``xQ[c]``, times ``2^{e_c}``.

    The Cayley image of ``L_c`` is ``prod_{l≠c} ((-X_l - 2^24 i) z + (2^24 i - X_l)) / (2^{K-1} prod_{l≠c}
    (X_c - X_l))``: Gaussian integers, one division per weight.
    """
    K = len(xQ)
    X = _ints(xQ)
    s0 = 1 << _NODE_BITS
    T = (m + 1) // 2
    out = [[Fraction(0)] * K for _ in range(m)]
    for c in range(K):
        top = _top_linear_product([((-X[l_], -s0), (-X[l_], s0)) for l_ in range(K) if l_ != c], T)
        den = 1 << (K - 1)
        for l_ in range(K):
            if l_ != c:
                den *= X[c] - X[l_]
        sc = Fraction(2) ** eQ[c] / den
        for u in range(m):
            w = top[u // 2]
            if m % 2 == 1 and u == m - 1:
                wf = gmul(rho, (Fraction(w[0]), Fraction(w[1])))
                out[u][c] = wf[0] * sc
            else:
                out[u][c] = (w[1] if u % 2 == 1 else w[0]) * sc
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


def interp_exact(xQ: list[Any], eQ: list[int], xt: list[Any], et: list[int]) -> list[list[Fraction]]:
    """``M[l][c] = L_c(xt_l) 2^{eQ_c - et_l}``: the scaled messages at ``xt`` predicted from those at ``xQ``
    (integer products of the dyadic numerators, one division per entry; any rational nodes work)."""
    K = len(xQ)
    M = []
    for xl, el in zip(xt, et, strict=True):
        row = []
        for c in range(K):
            num, den = Fraction(1), Fraction(1)
            for k2 in range(K):
                if k2 != c:
                    num *= xl - xQ[k2]
                    den *= xQ[c] - xQ[k2]
            row.append(num / den * Fraction(2) ** (eQ[c] - el))
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
