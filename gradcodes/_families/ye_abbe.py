r"""Ye & Abbe, "Communication-Computation Efficient Gradient Coding" (ICML 2018): every worker sends 1/m of a gradient.

Spec §3. ``n`` workers, ``k = n`` partitions (or ``n | k`` by grouping), worker ``i`` stores the cyclic window
``{i, ..., i+d-1} mod n`` of ``d = s + m`` partitions, splits every partial gradient into ``m`` contiguous blocks
and sends one coded vector of length ``ceil(p/m)``. Any ``n - s`` responders recover the full sum. The load
``s + m`` meets the lower bound of :func:`gradcodes.min_load` with equality.

One algebraic scheme, three realisations (``nodes=``):

``"fourier"`` (default)
    Real trigonometric polynomials at the angles ``2 pi k / n`` (the real form of complex roots of unity), worker
    ``i`` at angle ``2 pi (q i mod n) / n`` for a stride ``q`` coprime to ``n``, decoded from the *top* ``m``
    Fourier coefficients of the interpolant. Closed-form, cancellation-free decoder, and a proven bound on the
    cancellation factor for every responder set (``code.cancellation_bound``). Worst searched float64 error
    ~1e-13 at ``(n, s, m) = (50, 5, 5)`` and still ~1e-13 at ``n = 200`` (the published construction fails for
    ``n >= 15`` at ``s = m = 5``).
``"chebyshev"``, ``"equispaced"``, ``"integer"`` or a sequence of nodes
    The published construction (spec §3.3): polynomials of degree ``< n - s`` at real nodes, decoded from the top
    ``m`` monomial coefficients of the interpolant (closed-form Lagrange weights, never a Vandermonde inverse).
    Exact over the rationals for rational nodes (``field="rational"``). Ill-conditioned beyond ``n ~ 20``.
``"random"``
    The same structure with a seeded Gaussian "generator" ``V`` and functionals ``C`` (decodable with
    probability 1; exact over the rationals with ``field="rational"``).

The general construction
------------------------
Let ``N = n - s`` and let ``T`` be an ``N``-dimensional space of functions that is *unisolvent* on the nodes
(every ``N`` of the ``n`` node values determine the function), with ``m`` linear functionals
``kappa_1..kappa_m`` on ``T``. Partition ``j`` is missing at the ``n - d`` workers ``j+1, ..., j+n-d`` ("non-holders")
and ``Z_j`` denotes the subspace of ``T`` vanishing there (dimension ``m``). If the ``m x m`` matrix
``M_j = [kappa_u(z_w)]`` is invertible for a basis ``z_w`` of ``Z_j``, define ``p_j^(u) in Z_j`` by
``kappa_v(p_j^(u)) = delta_uv`` and ``B[i, j*m + u] = p_j^(u)(node_i)``. Then

* **support**: ``B[i, j*m+u] = 0`` whenever worker ``i`` does not hold partition ``j`` (``p_j^(u)`` vanishes there);
* **recovery**: worker ``i`` sends ``Q(node_i)`` with ``Q = sum_{j,u} g_j^(u) p_j^(u) in T``. From any ``N``
  responders ``F``, ``Q`` is determined (unisolvence) and ``kappa_u(Q) = sum_j g_j^(u)``. With ``L_i^F`` the
  Lagrange basis of ``T`` on ``F``, ``A_F[u, i] = kappa_u(L_i^F)`` and ``A_F B = 1^T (x) I_m`` exactly.

For ``"fourier"``: ``T`` = real trigonometric polynomials with frequencies ``-(N-1)/2, ..., (N-1)/2`` (half
integers when ``N`` is even); it is unisolvent on any ``N`` distinct angles because
``Q(phi) = e^{-i(N-1)phi/2} P(e^{i phi})`` with ``P`` a polynomial of degree ``< N``. ``Z_j`` is
``S_j(phi) R(phi)`` with ``S_j(phi) = prod_t 2 sin((phi - phi_t)/2)`` over the non-holders' angles and ``R`` a
trigonometric polynomial of degree ``(m-1)/2``. The functionals are the real and imaginary parts of the top
Fourier coefficients ``c(f) = (1/n) sum_k Q(phi_k) e^{-i f phi_k}``, ``f = (N-1)/2, (N-3)/2, ...`` (plus one
phase-shifted real part when ``m`` is odd), the exact analogue of the paper's top monomial coefficients. The
windows are rotations of each other (also after the stride permutation), so the pairs are rotation covariant and
``M_j`` is the same matrix for every ``j`` up to a rotation; invertibility is checked at construction, and the
whole identity ``A_F B = E`` is checked exactly over ``GF(p)``, ``p = 1 mod 8n`` (the same code path with a
primitive ``8n``-th root of unity for ``e^{i pi/(4n)}``), by ``verify(code, field="GF")``.

Decoding (stable closed form). With ``z_k = e^{2 pi i k/n}``, the top coefficient of the interpolant from ``F`` is
``sum_{i in F} y_i h_i^{N-1} w_i^F`` with ``w_i^F = (z_i/n) prod_{l in S} (z_i - z_l)`` and the next ones carry the
complete homogeneous sums ``h_r`` of ``s + 1`` unit-modulus numbers, so for *every* straggler set
``sum_i |A_F[u, i]| <= 2^(s+1) C(s + r, r)`` (``r`` = rank of the frequency from the top): the decoder side of
the cancellation factor does not depend on ``n`` or on the pattern. The encoder side, ``max_i ||B_i||_1``, is a
property of the matrix alone; in natural order (``q = 1``) the holders of a partition are ``d`` adjacent angles,
``S_j`` is a narrow bump there and its top Fourier coefficients are ``(n / 2 pi)^(d-1)`` times smaller than its
values, so ``B`` explodes. Spreading the holders around the circle with a stride removes that; the stride
minimising ``max_i ||B_i||_1`` is chosen at construction. Together:
``canc(A_F) <= code.cancellation_bound`` for every responder set, proven rather than searched.

``spacing="auto"`` (or a number) gives the intermediate design studied on the way: Fourier functionals spread
over the band in natural order (good ``B``, but its decoder grows like ``n^(s-1)`` on consecutive stragglers);
``stride=1`` the natural-order top design. See ``docs/ye_abbe.md`` and ``benchmarks/ye_abbe_numerics.py``.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import numpy as np

from .._code import GradientCode
from .._decoders import Decoder
from .._fields import is_galois_array, solve_left, to_fraction
from .._io import REBUILDERS
from .._registry import Scheme, register
from .._validate import check_choice, check_int, check_seed

__all__ = ["ye_abbe", "YeAbbeDecoder", "family_entries", "NODE_CHOICES"]

#: The named node choices accepted by :func:`ye_abbe` (a sequence of numbers is accepted too).
NODE_CHOICES = ("fourier", "chebyshev", "equispaced", "integer", "random")

# ---------------------------------------------------------------------------------------------------------------
# arithmetic backends: float64 numpy, exact Fractions (object arrays), galois GF(p)


class _Backend:
    exact = False

    def const(self, x: Any) -> Any:
        return np.asarray(x, dtype=np.float64)

    def zeros(self, shape: tuple[int, ...]) -> Any:
        return np.zeros(shape)

    def solve_right(self, Phi: Any, M: Any) -> Any:
        """``Phi @ inv(M)`` for stacks (j, d, m) and (j, m, m)."""
        return np.swapaxes(np.linalg.solve(np.swapaxes(M, 1, 2), np.swapaxes(Phi, 1, 2)), 1, 2)


class _FracBackend(_Backend):
    exact = True

    def const(self, x: Any) -> Any:
        arr = np.asarray(x, dtype=object)
        return np.vectorize(to_fraction, otypes=[object])(arr) if arr.size else arr

    def zeros(self, shape: tuple[int, ...]) -> Any:
        out = np.empty(shape, dtype=object)
        out.fill(Fraction(0))
        return out

    def solve_right(self, Phi: Any, M: Any) -> Any:
        out = self.zeros(Phi.shape)
        for j in range(Phi.shape[0]):
            X = solve_left(M[j], Phi[j])
            if X is None:
                raise ValueError(f"the functional matrix M_{j} is singular in this field")
            out[j] = X
        return out


class _GFBackend(_FracBackend):
    def __init__(self, GF: Any) -> None:
        self.GF = GF
        self.p = int(GF.characteristic)

    def const(self, x: Any) -> Any:
        arr = np.asarray(x, dtype=object)
        flat = []
        for v in arr.ravel():
            f = to_fraction(v)
            if f.denominator % self.p == 0:
                raise ValueError(f"the value {f} has a denominator divisible by p = {self.p}")
            flat.append(f.numerator % self.p * pow(f.denominator, -1, self.p) % self.p)
        return self.GF(np.array(flat, dtype=np.int64).reshape(arr.shape))

    def zeros(self, shape: tuple[int, ...]) -> Any:
        return self.GF.Zeros(shape)


def _prime_1_mod(q: int, lo: int = 1000) -> int:
    """The smallest prime ``p >= lo`` with ``p = 1 (mod q)``."""
    p = (lo // q + 1) * q + 1
    while True:
        if p > 3 and all(p % r for r in range(2, math.isqrt(p) + 1)):
            return p
        p += q


def _gf_field(field: Any, q: int) -> Any:
    """A galois prime field with ``p = 1 mod q`` from ``"GF"`` or a galois field class."""
    import galois

    if isinstance(field, str):
        if field not in ("GF", "GF(p)"):
            raise ValueError(f"field must be 'GF' or a galois field class, got {field!r}")
        return galois.GF(_prime_1_mod(q))
    if not (isinstance(field, type) and hasattr(field, "characteristic")):
        raise TypeError(f"field must be 'GF' or a galois.GF(p) class, got {field!r}")
    if field.degree != 1 or (field.characteristic - 1) % q:
        raise ValueError(f"this construction needs a prime field GF(p) with p = 1 (mod {q}); got {field.name}")
    return field


# ---------------------------------------------------------------------------------------------------------------
# the Fourier (real trigonometric) construction


@dataclass(frozen=True)
class _FourierPlan:
    n: int
    s: int
    m: int
    #: functionals as (2f, kind, shift) with kind in {"dc", "cos", "sin", "mix"}; "mix" is an unpaired
    #: ``cos(f phi + shift * pi / (4n))`` (needed when m is odd and there is no DC functional)
    functionals: tuple[tuple[int, str, int], ...]
    #: positions (0..d-1) in each holder window of the m interpolation points of the R-space Lagrange basis
    pos: tuple[int, ...]
    #: worker i evaluates at the angle phi_{stride * i mod n} (stride coprime to n)
    stride: int = 1
    #: True when the functionals are the top ones (the stable closed-form decoder applies)
    top: bool = False

    @property
    def node(self) -> np.ndarray:
        """``node[i]``: the angle index of worker ``i``."""
        return (self.stride * np.arange(self.n)) % self.n

    @property
    def d(self) -> int:
        return self.s + self.m

    @property
    def N(self) -> int:
        return self.n - self.s


class _Trig:
    """The trigonometric primitives of the Fourier construction over one backend.

    Float: ``two_sin(k) = 2 sin(pi k / n)``, ``cos_sin(e) = (cos, sin)(pi e / (4n))``. GF(p): the same algebraic
    expressions in a primitive ``8n``-th root of unity ``zeta`` (``e^{i pi/(4n)} -> zeta``, ``i -> zeta^(2n)``).
    """

    def __init__(self, n: int, bk: _Backend) -> None:
        self.n, self.bk = n, bk
        if isinstance(bk, _GFBackend):
            GF = bk.GF
            zeta = GF.primitive_element ** ((bk.p - 1) // (8 * n))
            self.table = zeta ** np.arange(8 * n)              # zeta^e, e mod 8n
            self.inv_i = self.table[(-2 * n) % (8 * n)]         # 1 / i
            self.half = GF(1) / GF(2)

    def two_sin(self, k: np.ndarray) -> Any:
        k = np.asarray(k, dtype=np.int64)
        if not isinstance(self.bk, _GFBackend):
            return 2.0 * np.sin(np.pi * k / self.n)
        q = 8 * self.n
        return (self.table[(4 * k) % q] - self.table[(-4 * k) % q]) * self.inv_i

    def cos_sin(self, e: np.ndarray) -> tuple[Any, Any]:
        """``cos(pi e / (4n))``, ``sin(pi e / (4n))`` for integer arrays ``e``."""
        e = np.asarray(e, dtype=np.int64)
        if not isinstance(self.bk, _GFBackend):
            x = np.pi * e / (4 * self.n)
            return np.cos(x), np.sin(x)
        q = 8 * self.n
        a, b = self.table[e % q], self.table[(-e) % q]
        return (a + b) * self.half, (a - b) * self.half * self.inv_i

    def kernel(self, plan: _FourierPlan) -> Any:
        """``K`` (m, n): ``kappa_u(Q) = sum_k K[u, k] Q(phi_k)`` for ``Q`` in the code space (k = angle index)."""
        n, bk = self.n, self.bk
        k = np.arange(n)
        rows = []
        two_n = bk.const(Fraction(2, n))
        for f2, kind, shift in plan.functionals:
            if kind == "dc":
                rows.append(bk.const([Fraction(1, n)] * n))
                continue
            # angle 2 pi f k / n = pi (8 f k) / (4n); "mix" adds a phase (not rotation covariant, so its shift is
            # chosen at construction to keep every M_j well conditioned)
            c, s_ = self.cos_sin(4 * f2 * k + (shift if kind == "mix" else 0))
            rows.append(two_n * (s_ if kind == "sin" else c))
        return _stack(bk, rows)

    def sign(self, e: np.ndarray) -> Any:
        return self.bk.const(np.where(np.asarray(e) % 2 == 0, 1, -1))

    def expi(self, e: np.ndarray) -> Any:
        """``exp(i pi e / (4n))`` (complex128, or zeta^e over GF(p)) for integer arrays ``e``."""
        e = np.asarray(e, dtype=np.int64) % (8 * self.n)
        if isinstance(self.bk, _GFBackend):
            return self.table[e]
        return np.exp(1j * np.pi * e / (4 * self.n))


def _stack(bk: _Backend, arrays: list[Any]) -> Any:
    """``np.stack`` that keeps galois arrays galois arrays."""
    if isinstance(bk, _GFBackend):
        return bk.GF(np.stack([np.asarray(a.view(np.ndarray)) for a in arrays]))
    return np.stack(arrays)


def _holders(n: int, d: int) -> np.ndarray:
    """(n, d): row ``j`` lists the workers holding partition ``j`` (``j-d+1, ..., j`` mod n)."""
    return (np.arange(n)[:, None] + np.arange(-d + 1, 1)[None, :]) % n


def _fourier_B(plan: _FourierPlan, bk: _Backend, max_cond: float | None = 1e10) -> Any:
    """Encoding matrix (n, n*m) of the Fourier construction (closed-form sine products, one m x m solve per j).

    Float64: raises ValueError when some ``M_j`` has condition number above ``max_cond`` (``B`` would lose
    ``log10(cond)`` digits); ``max_cond=None`` skips that check (and its batched SVD).
    """
    n, d, m = plan.n, plan.d, plan.m
    tr = _Trig(n, bk)
    K = tr.kernel(plan)
    Hw = _holders(n, d)                                            # (n, d) holder workers
    H = plan.node[Hw]                                              # (n, d) their angle indices
    diff = H[:, :, None] - H[:, None, :]                           # (n, d, d)
    ts = tr.two_sin(diff)
    eye = np.eye(d, dtype=bool)
    one = bk.const(1)
    if isinstance(bk, _GFBackend):
        ts[:, eye] = one
    else:
        ts = np.where(eye[None], one, ts)
    # S_j(phi_i) = (-1)^(n-1-i) n / prod_{h in H_j, h != i} 2 sin(pi (i-h)/n)
    S = tr.sign(n - 1 - H) * bk.const(n) / np.prod(ts, axis=2)      # (n, d)
    pos = np.asarray(plan.pos)
    psi = H[:, pos]                                                # (n, m) interpolation points of the R-space
    num = tr.two_sin(H[:, :, None] - psi[:, None, :])              # (n, d, m)
    den = tr.two_sin(psi[:, :, None] - psi[:, None, :])            # (n, m, m)
    eye_m = np.eye(m, dtype=bool)
    if isinstance(bk, _GFBackend):
        den[:, eye_m] = one
    else:
        den = np.where(eye_m[None], one, den)
    # Lagrange basis l_w(i) = prod_{v != w} sin(pi(i - psi_v)/n) / sin(pi(psi_w - psi_v)/n)
    Lb = bk.zeros((n, d, m)) if bk.exact else np.empty((n, d, m))
    for w in range(m):
        others = [v for v in range(m) if v != w]
        numw = np.prod(num[:, :, others], axis=2) if others else bk.const(np.ones((n, d)))
        denw = np.prod(den[:, w, others], axis=1) if others else bk.const(np.ones(n))
        Lb[:, :, w] = numw / denw[:, None]
    Phi = S[:, :, None] * Lb                                       # (n, d, m): S_j l_w at the holders
    M = _stack(bk, [K[:, H[j]] @ Phi[j] for j in range(n)]) if bk.exact else np.einsum("ujk,jkw->juw", K[:, H], Phi)
    if not bk.exact and max_cond is not None:
        sv = np.linalg.svd(M, compute_uv=False)
        with np.errstate(over="ignore", divide="ignore", invalid="ignore"):
            cond = sv[:, 0] / np.maximum(sv[:, -1], np.finfo(float).tiny)
        if not np.all(np.isfinite(cond)) or cond.max() > max_cond:
            raise ValueError(f"the Fourier functionals are (nearly) singular on some partition (cond(M_j) = "
                             f"{cond.max():.3g}); choose another spacing or stride")
    Bj = bk.solve_right(Phi, M)                                    # (n, d, m)
    B = bk.zeros((n, n, m))
    for a in range(d):
        B[Hw[:, a], np.arange(n)] = Bj[:, a]
    return B.reshape(n, n * m)


def _fourier_A(plan: _FourierPlan, bk: _Backend, tr: _Trig, K: Any, S: np.ndarray) -> Any:
    """Decoding matrices (b, m, n) for straggler sets ``S`` (b, s): quadrature form (any functionals).

    ``A_F[u, i] = K_u(i) + sum_{l in S} L_i^F(phi_l) K_u(l)`` with the sine-product Lagrange values of the module
    notes: exact quadrature of the interpolant over all n angles, the stragglers' values extrapolated.
    """
    n, m = plan.n, plan.m
    b, s = S.shape
    if s == 0:
        Kw = K[:, plan.node]                                         # worker i's column: its angle's kernel
        if bk.exact:
            out = bk.zeros((b, m, n))
            out[:] = Kw
            return out
        return np.broadcast_to(Kw, (b, m, n)).copy()
    mask = np.ones((b, n), dtype=bool)
    np.put_along_axis(mask, S, False, axis=1)
    Fw = np.flatnonzero(mask.ravel()).reshape(b, n - s) % n          # (b, N) responding workers, sorted
    F, S = plan.node[Fw], plan.node[S]                               # their angle indices
    DFS = tr.two_sin(F[:, :, None] - S[:, None, :])                  # (b, N, s)
    W = np.prod(DFS, axis=2)                                         # (b, N)
    DSS = tr.two_sin(S[:, :, None] - S[:, None, :])                  # (b, s, s)
    one = bk.const(1)
    eye = np.eye(s, dtype=bool)
    if isinstance(bk, _GFBackend):
        DSS[:, eye] = one
    else:
        DSS = np.where(eye[None], one, DSS)
    om = np.prod(DSS, axis=2)                                        # (b, s)
    sign = tr.sign(F[:, :, None] - S[:, None, :])
    L = sign * W[:, :, None] / (-DFS * om[:, None, :])               # (b, N, s): L_i^F(phi_l); D(l,i) = -D(i,l)
    KF = K[:, F]                                                     # (m, b, N)
    KS = K[:, S]                                                     # (m, b, s)
    if isinstance(bk, _GFBackend):
        corr = _stack(bk, [(L[i] @ KS[:, i].T).T for i in range(b)])        # (b, m, N)
        vals = bk.GF(np.swapaxes(np.asarray(KF.view(np.ndarray)), 0, 1)) + corr
    else:
        vals = np.swapaxes(KF, 0, 1) + np.einsum("bil,ubl->bui", L, KS)
    out = bk.zeros((b, m, n))
    rows = np.arange(b)[:, None]
    for u in range(m):
        out[rows, u, Fw] = vals[:, u, :]
    return out


def _series_inv(x: Any, R: int, one: Any) -> list[Any]:
    """Coefficients of ``1 / (1 + x t)`` up to ``t^(R-1)``: ``(-x)^r`` (elementwise, shaped like ``x``)."""
    out = [one + 0 * x]
    for _ in range(1, R):
        out.append(-out[-1] * x)
    return out


def _series_mul(a: list[Any], b: list[Any]) -> list[Any]:
    """Product of two power series truncated to ``len(a)`` terms."""
    return [sum((a[i] * b[r - i] for i in range(1, r + 1)), a[0] * b[r]) for r in range(len(a))]


def _fourier_A_top(plan: _FourierPlan, bk: _Backend, tr: _Trig, S: np.ndarray) -> Any:
    r"""Decoding matrices (b, m, n) for the top functionals, with no cancellation.

    With ``z_k = e^{2 pi i k/n}``, ``h_k = e^{i pi k/n}`` and ``P(z) = h^{N-1} L(phi)`` the polynomial form of the
    Lagrange function ``L_i^F``, its Fourier coefficients at the top frequencies ``f = (N-1)/2 - r`` are

    .. math:: \hat c(f) = h_i^{N-1} w_i^F (-1)^r e_r(F \setminus i),\qquad
              \hat c(-f) = h_i^{N-1} w_i^F (-1)^{N-1-r} e_{N-1}(F \setminus i)\, e_r((F \setminus i)^{-1}),

    with ``w_i^F = (z_i/n) prod_{l in S} (z_i - z_l)`` and the elementary symmetric functions from truncated power
    series (``prod_all (1 + z_k t) = 1 + O(t^n)``): products and short sums of unit-modulus numbers only, unlike
    the quadrature form whose large Lagrange extrapolations cancel. The real functionals are
    ``cos: c(f) + c(-f)``, ``sin: i (c(f) - c(-f))``, ``mix: e^{-i beta} c(f) + e^{i beta} c(-f)``, ``dc: c(0)``.
    """
    n, m, N = plan.n, plan.m, plan.N
    b, s = S.shape
    mask = np.ones((b, n), dtype=bool)
    if s:
        np.put_along_axis(mask, S, False, axis=1)
    Fw = np.flatnonzero(mask.ravel()).reshape(b, N) % n
    F, Sn = plan.node[Fw], plan.node[S]
    zF, hN = tr.expi(8 * F), tr.expi(4 * (N - 1) * F)                # z_i, h_i^(N-1)    (b, N)
    zS = tr.expi(8 * Sn)                                             # (b, s)
    izF, izS = tr.expi(-8 * F), tr.expi(-8 * Sn)
    one = bk.const(1)
    wF = zF * bk.const(Fraction(1, n))
    for c in range(s):
        wF = wF * (zF - zS[:, c:c + 1])
    R = max((N - 1 - f2) // 2 for f2, _, _ in plan.functionals) + 1   # number of distinct top frequencies
    pos = _series_inv(zF, R, one)
    neg = _series_inv(izF, R, one)
    for c in range(s):
        pos = _series_mul(pos, _series_inv(zS[:, c:c + 1] + 0 * zF, R, one))
        neg = _series_mul(neg, _series_inv(izS[:, c:c + 1] + 0 * zF, R, one))
    # e_{N-1}(F minus i) = prod_all z / (z_i prod_S z_l), prod_all z = (-1)^(n-1)
    eN1 = bk.const((-1) ** (n - 1)) * izF
    for c in range(s):
        eN1 = eN1 * izS[:, c:c + 1]
    base = hN * wF
    cpos, cneg = {}, {}
    for r in range(R):
        f2 = N - 1 - 2 * r
        cpos[f2] = base * (pos[r] if r % 2 == 0 else -pos[r])
        cneg[f2] = base * eN1 * (neg[r] if (N - 1 - r) % 2 == 0 else -neg[r])
    ii = tr.expi(np.array(2 * n))                                    # i
    rows = []
    for f2, kind, shift in plan.functionals:
        if kind == "dc":
            rows.append(cpos[f2])
        elif kind == "cos":
            rows.append(cpos[f2] + cneg[f2])
        elif kind == "sin":
            rows.append(ii * (cpos[f2] - cneg[f2]))
        else:
            rows.append(tr.expi(np.array(-shift)) * cpos[f2] + tr.expi(np.array(shift)) * cneg[f2])
    out = bk.zeros((b, m, n))
    idx = np.arange(b)[:, None]
    for u, val in enumerate(rows):
        out[idx, u, Fw] = val if bk.exact else val.real
    return out


def _cancellation_bound(plan: _FourierPlan, code: GradientCode) -> float:
    r"""A proven upper bound on the cancellation factor over *every* responder set (top functionals only).

    For the functional at the ``r``-th frequency from the top, ``|c(+-f)(L_i^F)| = |w_i^F| |h_r| <=
    (2^s / n) C(s + r, r)`` (``|z| = 1``; ``h_r`` is a complete homogeneous symmetric polynomial of ``s + 1``
    unit-modulus numbers), so ``sum_i |A_F[u, i]| <= 2^(s+1) C(s + r, r) (n - s) / n`` whatever ``F``, and
    ``canc(A_F) <= max_u sum_i |A_F[u, i]| * max_i ||B_i||_1 / k``.
    """
    n, s, N = plan.n, plan.s, plan.N
    worst_a = 0.0
    for f2, kind, _ in plan.functionals:
        r = (N - 1 - f2) // 2
        worst_a = max(worst_a, (1 if kind == "dc" else 2) * 2.0**s * math.comb(s + r, r) * N / n)
    return float(worst_a * np.abs(code.B).sum(axis=1).max() / code.k)


def _snap(x: float, half: bool) -> int:
    """Twice the grid frequency nearest to ``|x|`` (grid = integers, or half integers when ``half``)."""
    x = abs(x)
    return 2 * math.floor(x) + 1 if half else 2 * math.floor(x + 0.5)


def _fourier_functionals(n: int, s: int, m: int, spacing: float) -> tuple[tuple[int, str, int], ...] | None:
    """Symmetric frequency set of spacing ``spacing``; None if it does not fit the band or collides."""
    N = n - s
    half = N % 2 == 0
    fmax2 = N - 1                                                    # 2 * (N-1)/2
    pos = [(t - (m - 1) / 2) * spacing for t in range(m)]
    out: list[tuple[int, str, int]] = []
    seen: set[int] = set()
    for x in pos:
        if x < 0:
            continue
        f2 = _snap(x, half)
        if f2 in seen or f2 > fmax2:
            return None
        seen.add(f2)
        if x == 0:                                                   # the centre of an odd-sized set
            out.append((0, "dc", 0) if not half else (f2, "mix", 2 * n - 1))
        else:
            out += [(f2, "cos", 0), (f2, "sin", 0)]
    return tuple(out) if len(out) == m else None


def _fourier_top(n: int, s: int, m: int, shift: int = 1) -> tuple[tuple[int, str, int], ...]:
    """The top ``m`` real Fourier coefficients of the band (the analogue of Ye–Abbe's "top coefficients")."""
    out: list[tuple[int, str, int]] = []
    f2 = n - s - 1
    while len(out) < m:
        if f2 == 0:
            out.append((0, "dc", 0))
            break
        if m - len(out) == 1:
            out.append((f2, "mix", shift))
        else:
            out += [(f2, "cos", 0), (f2, "sin", 0)]
        f2 -= 2
    return tuple(out)


def _positions(d: int, m: int) -> tuple[int, ...]:
    return tuple(int(v) for v in np.round(np.linspace(0, d - 1, m)).astype(int))


def _b_side(plan: _FourierPlan, max_cond: float | None = 1e6) -> tuple[float, np.ndarray] | None:
    """``(max_i ||B_i||_1, B)`` for a plan in float64, or None when some ``M_j`` is (nearly) singular."""
    try:
        B = _fourier_B(plan, _Backend(), max_cond=max_cond)
    except (ValueError, np.linalg.LinAlgError):
        return None
    if not np.all(np.isfinite(B)):
        return None
    return float(np.abs(B).sum(axis=1).max()), B


def _consecutive_estimate(plan: _FourierPlan, B: np.ndarray) -> float:
    """Worst float64 error estimate ``u * canc + residual`` over the n consecutive straggler sets."""
    n, s, m = plan.n, plan.s, plan.m
    bk = _Backend()
    tr = _Trig(n, bk)
    K = tr.kernel(plan)
    S = np.sort((np.arange(n)[:, None] + np.arange(s)[None, :]) % n, axis=1)
    worst = 0.0
    row_l1 = np.abs(B).sum(axis=1)
    E = np.tile(np.eye(m), (1, n))
    step = max(1, 2_000_000 // max(1, n * max(s, 1)))
    for lo in range(0, n, step):
        A = _fourier_A(plan, bk, tr, K, S[lo:lo + step])
        canc = (np.abs(A) @ row_l1).max(axis=1) / n
        res = np.abs((A.reshape(-1, n) @ B).reshape(A.shape[0], m, -1) - E).max(axis=(1, 2))
        worst = max(worst, float(np.max(1.1e-16 * canc + res)))
    return worst


def _stride_candidates(n: int, count: int = 24) -> list[int]:
    """Strides coprime to n spread over [1, n/2] (q and n - q give mirror-image codes)."""
    coprime = [q for q in range(1, n // 2 + 1) if math.gcd(q, n) == 1] or [1]
    if len(coprime) <= count:
        return coprime
    idx = np.unique(np.round(np.linspace(0, len(coprime) - 1, count)).astype(int))
    return [coprime[i] for i in idx]


def _fourier_plan(n: int, s: int, m: int, spacing: Any = None, stride: int | None = None) -> _FourierPlan:
    """Choose the functionals and the stride.

    ``spacing=None``: the top ``m`` frequencies (a bounded decoder for *every* straggler set, see the module notes)
    and, unless given, the stride minimising ``max_i ||B_i||_1`` (the only stride-dependent factor of the
    cancellation). ``spacing="auto"`` or a number: spread frequencies in natural order (stride 1 unless given).
    """
    d = s + m
    pos = _positions(d, m)
    if spacing is None:
        # the search costs about n (m^3 + d m) per candidate: fewer strides for very large m
        count = int(min(24, max(2, 2e8 // (n * (m**3 + d * m)))))
        strides = _stride_candidates(n, count) if stride is None else [stride]
        shifts = [1, 2, n, 2 * n - 1] if any(k == "mix" for _, k, _ in _fourier_top(n, s, m)) else [1]
        ranked: list[tuple[float, int, _FourierPlan]] = []
        for q in strides:
            for sh in shifts:
                plan = _FourierPlan(n, s, m, _fourier_top(n, s, m, sh), pos, q, top=True)
                got = _b_side(plan, max_cond=None)                 # no SVD while ranking
                if got is not None:
                    ranked.append((got[0], len(ranked), plan))
        # smallest ||B|| first; norms equal to rounding (e.g. d = n, where every stride gives the same code up to
        # a relabelling) keep the candidate order, so the choice does not hinge on the last bit
        tie = min((t[0] for t in ranked), default=0.0) * (1 + 1e-9)
        for *_, plan in sorted(ranked, key=lambda t: (t[0] > tie, t[0] if t[0] > tie else 0.0, t[1])):
            if _b_side(plan) is not None:
                return plan
        raise ValueError(f"no stride in {strides} gives well-conditioned Fourier functionals for n={n}, s={s}, "
                         f"m={m}; try another stride")
    q = 1 if stride is None else stride
    if spacing != "auto" or m == 1:
        funcs = _fourier_functionals(n, s, m, 1.0 if spacing == "auto" else spacing)
        if funcs is None:
            raise ValueError(f"spacing={spacing} does not fit {m} distinct frequencies in the band "
                             f"|f| <= {(n - s - 1) / 2} (n={n}, s={s})")
        return _FourierPlan(n, s, m, funcs, pos, q)
    dmax = (n - s - 1) / max(m - 1, 1) + 1
    cands = sorted(set(np.unique(np.round(np.geomspace(1, dmax, 14), 1)).tolist()) | {round(n / 7, 1)})
    found: tuple[float, _FourierPlan] | None = None
    for c in cands:
        funcs = _fourier_functionals(n, s, m, c)
        if funcs is None:
            continue
        plan = _FourierPlan(n, s, m, funcs, pos, q)
        got = _b_side(plan)
        if got is None:
            continue
        est = _consecutive_estimate(plan, got[1])
        if found is None or est < found[0]:
            found = (est, plan)
    if found is None:  # pragma: no cover - spacing 1 always fits
        raise ValueError(f"no valid Fourier functionals for n={n}, s={s}, m={m}")
    return found[1]


# ---------------------------------------------------------------------------------------------------------------
# the polynomial construction (spec §3.3): real nodes, top monomial coefficients


def _poly_parts(theta: Any, n: int, m: int, bk: _Backend) -> tuple[Any, list[Any]]:
    """``full_i = prod_{k != i} (theta_i - theta_k)`` (n,) and ``e_r`` of all the nodes, ``r < m``."""
    one = bk.const(1)
    diff = theta[:, None] - theta[None, :]
    eye = np.eye(n, dtype=bool)
    if isinstance(bk, _GFBackend):
        diff[eye] = one
    else:
        diff = np.where(eye, one, diff)
    e_all = [one] + [bk.const(0)] * (m - 1)
    for t in range(n):
        e_all = [e_all[0]] + [e_all[r] + theta[t] * e_all[r - 1] for r in range(1, m)]
    return np.prod(diff, axis=1), e_all


def _poly_B(theta: Any, n: int, s: int, m: int, bk: _Backend, full: Any, e_all: list[Any]) -> Any:
    d = s + m
    H = _holders(n, d)
    one = bk.const(1)
    dH = theta[H][:, :, None] - theta[H][:, None, :]                 # (n, d, d)
    eyed = np.eye(d, dtype=bool)
    if isinstance(bk, _GFBackend):
        dH[:, eyed] = one
    else:
        dH = np.where(eyed[None], one, dH)
    Z = full[H] / np.prod(dH, axis=2)                                # (n, d): Z_j(theta_i), i in H_j
    # e_r(non-holders of j), r < m, via the series prod_all (1 + theta t) / prod_{h in H_j} (1 + theta_h t)
    e = [x * (bk.const(np.ones(n, dtype=np.int64)) if bk.exact else np.ones(n)) for x in e_all]
    for a in range(d):
        e = _series_mul(e, _series_inv(theta[H[:, a]], m, one))
    # B_j = Phi M^{-1}, Phi[a, w] = Z_j(theta_a) theta_a^w, M[v, w] = (-1)^(w-v) e_{w-v} (unit upper triangular)
    powers = [bk.const(np.ones((n, d), dtype=np.int64)) if bk.exact else np.ones((n, d))]
    for _ in range(1, m):
        powers.append(powers[-1] * theta[H])
    cols: list[Any] = []
    for w in range(m):
        col = Z * powers[w]
        for v in range(w):
            Mvw = e[w - v] if (w - v) % 2 == 0 else -e[w - v]
            col = col - cols[v] * Mvw[:, None]
        cols.append(col)
    B = bk.zeros((n, n, m))
    for a in range(d):
        for u in range(m):
            B[H[:, a], np.arange(n), u] = cols[u][:, a]
    return B.reshape(n, n * m)


def _poly_A(theta: Any, full: Any, e_all: list[Any], n: int, m: int, bk: _Backend, S: np.ndarray) -> Any:
    """``A_F[u, i] = [x^(n-d+u)] L_i^F(x) = w_i^F (-1)^(m-1-u) e_(m-1-u)(F minus i)`` for i in F, batched."""
    b, s = S.shape
    # w_i^F = prod_{l in S} (theta_i - theta_l) / full_i   (zero at the stragglers automatically)
    num = np.prod(theta[None, :, None] - theta[S][:, None, :], axis=2) if s else None
    wF = (num / full[None, :]) if s else (bk.const(np.ones((b, n), dtype=np.int64)) if bk.exact
                                          else np.ones((b, n))) / full[None, :]
    ones_bn = bk.const(np.ones((b, n), dtype=np.int64)) if bk.exact else np.ones((b, n))
    e = [x * ones_bn for x in e_all]
    one = bk.const(1)
    for c in range(s):
        e = _series_mul(e, _series_inv(theta[S[:, c]][:, None] * ones_bn, m, one))
    e = _series_mul(e, _series_inv(theta[None, :] * ones_bn, m, one))
    out = bk.zeros((b, m, n))
    for u in range(m):
        r = m - 1 - u
        out[:, u, :] = wF * (e[r] if r % 2 == 0 else -e[r])
    return out


# ---------------------------------------------------------------------------------------------------------------
# the random construction: Gaussian V (N x n) and C (N x m)


def _random_B(V: Any, C: Any, n: int, s: int, m: int, bk: _Backend) -> Any:
    d = s + m
    H = _holders(n, d)
    B = bk.zeros((n, n, m))
    for j in range(n):
        nh = (j + np.arange(1, n - d + 1)) % n
        Mj = np.concatenate([V[:, nh], C], axis=1)                   # (N, N)
        # P (N x m): V_nh^T P = 0 and C^T P = I
        rhs = bk.zeros((n - s, m))
        for u in range(m):
            rhs[n - d + u, u] = bk.const(1)
        if bk.exact:
            X = solve_left(Mj, rhs.T)                                # X Mj = rhs^T, i.e. Mj^T X^T = rhs
            if X is None:
                raise ValueError(f"the random construction is singular at partition {j}; use another seed")
            P = X.T
        else:
            P = np.linalg.solve(Mj.T, rhs)
        B[H[j], j] = V[:, H[j]].T @ P
    return B.reshape(n, n * m)


def _random_A(V: Any, C: Any, n: int, bk: _Backend, S: np.ndarray) -> Any:
    b, s = S.shape
    m = C.shape[1]
    mask = np.ones((b, n), dtype=bool)
    np.put_along_axis(mask, S, False, axis=1)
    F = np.flatnonzero(mask.ravel()).reshape(b, n - s) % n
    out = bk.zeros((b, m, n))
    if bk.exact:
        for i in range(b):
            X = solve_left(V[:, F[i]].T.copy(), C.T)                 # X V_F^T = C^T  ->  V_F X^T = C
            if X is not None:
                out[i][:, F[i]] = X
        return out
    VF = np.swapaxes(V[:, F], 0, 1)                                  # (b, N, N)
    a = np.linalg.solve(VF, np.broadcast_to(C, (b,) + C.shape))      # (b, N, m)
    rows = np.arange(b)[:, None]
    for u in range(m):
        out[rows, u, F] = a[:, :, u]
    return out


# ---------------------------------------------------------------------------------------------------------------
# decoder and constructor


class YeAbbeDecoder(Decoder):
    """Closed-form decoder of :func:`ye_abbe` codes: ``A_F[u, i] = kappa_u(L_i^F)``, batched over responder sets.

    ``"fourier"``: sine products (O(n s) per set); polynomial nodes: barycentric weights times elementary
    symmetric functions from truncated power series (O(n s m) per set; never a Vandermonde inverse); ``"random"``:
    one ``(n-s) x (n-s)`` solve per set. When more than ``n - s`` workers respond, the ``n - s`` smallest indices
    are used (spec §0.3). Exact (Fraction / GF(p)) for exact codes.
    """

    def __init__(self, name: str, fn: Callable[[np.ndarray], Any], s: int, exact: bool, description: str) -> None:
        self.name = name
        self._fn = fn
        self._s = s
        self.exact = exact
        self.description = description

    def matrices(self, code: Any, mask: np.ndarray) -> Any:
        mask = np.asarray(mask, dtype=bool)
        b, n = mask.shape
        s = self._s
        counts = n - mask.sum(axis=1)
        if np.all(counts == s):
            return self._batched(mask, code.m)
        out = self._zeros(code, b, n)
        for t in np.unique(counts):
            if t > s:  # too few responders: no decoding matrix (zeros; the residual reports it)
                continue
            rows = np.flatnonzero(counts == t)
            mk = mask[rows].copy()
            if t < s:  # more responders than needed: keep the n - s smallest indices
                mk &= np.cumsum(mk, axis=1) <= n - s
            out[rows] = self._batched(mk, code.m)
        return out

    def _zeros(self, code: Any, b: int, n: int) -> Any:
        if is_galois_array(code.B):
            return type(code.B).Zeros((b, code.m, n))
        if code.B.dtype == object:
            z = np.empty((b, code.m, n), dtype=object)
            z.fill(Fraction(0))
            return z
        return np.zeros((b, code.m, n))

    def _batched(self, mask: np.ndarray, m: int) -> Any:
        b, n = mask.shape
        S = np.flatnonzero(~mask.ravel()).reshape(b, -1) % n
        chunk = max(1, 4_000_000 // (n * (S.shape[1] + m + 1)))     # (chunk, m, n) output + O(n (s + m)) work
        if b <= chunk:
            return self._fn(S)
        parts = [self._fn(S[lo:lo + chunk]) for lo in range(0, b, chunk)]
        if is_galois_array(parts[0]):
            return type(parts[0])(np.concatenate([np.asarray(p.view(np.ndarray)) for p in parts]))
        return np.concatenate(parts)


def _named_nodes(kind: str, n: int, exact: bool) -> Any:
    if kind == "integer":
        vals = [Fraction(i + 1) for i in range(n)]
    elif kind == "equispaced":
        vals = [Fraction(-1) + Fraction(2 * i, n - 1) if n > 1 else Fraction(0) for i in range(n)]
    elif kind == "chebyshev":
        if exact:
            raise ValueError("nodes='chebyshev' are irrational: exact (field='rational') codes need rational nodes "
                             "('integer', 'equispaced', or a sequence of Fractions); to check the Fourier "
                             "construction exactly use verify(code, field='GF')")
        return np.cos((2 * np.arange(n) + 1) * np.pi / (2 * n))
    else:  # pragma: no cover - guarded by the caller
        raise ValueError(kind)
    return np.array(vals, dtype=object) if exact else np.array([float(v) for v in vals])


def _user_nodes(nodes: Any, n: int, exact: bool) -> tuple[Any, list[str]]:
    try:
        raw = list(nodes)
    except TypeError:
        raise TypeError(f"nodes must be one of {', '.join(map(repr, NODE_CHOICES))} or a sequence of n={n} "
                        f"distinct real numbers, got {nodes!r}") from None
    if len(raw) != n:
        raise ValueError(f"nodes must have length n={n} (one evaluation point per worker), got {len(raw)}")
    if exact:
        try:
            vals = [Fraction(v) if isinstance(v, str) else to_fraction(v, "nodes") for v in raw]
        except (ValueError, ZeroDivisionError) as err:
            raise ValueError(f"nodes must be rational numbers (or strings like '1/3') for field='rational': "
                             f"{err}") from None
        arr = np.array(vals, dtype=object)
    else:
        for v in raw:
            if isinstance(v, (bool, complex, np.complexfloating)) or not isinstance(v, (int, float, Fraction,
                                                                                        np.integer, np.floating)):
                raise TypeError(f"nodes must be real numbers, got {v!r}")
        arr = np.array([float(v) for v in raw])
        if not np.all(np.isfinite(arr)):
            raise ValueError("nodes must be finite real numbers")
        vals = arr.tolist()
    uniq, counts = np.unique(np.array([float(v) for v in vals]), return_counts=True)
    if exact:
        dup = len(set(vals)) != len(vals)
    else:
        dup = bool((counts > 1).any())
    if dup:
        seen: dict[Any, int] = {}
        pairs = []
        for i, v in enumerate(vals):
            if v in seen:
                pairs.append((seen[v], i))
            seen.setdefault(v, i)
        raise ValueError(f"nodes must be distinct; nodes {pairs[0][0]} and {pairs[0][1]} are both {vals[pairs[0][1]]}")
    return arr, [str(v) for v in vals]


def _group(B: Any, n: int, k: int, m: int) -> Any:
    if k == n:
        return B
    r = k // n
    B3 = B.reshape(n, n, m)
    if is_galois_array(B):
        return type(B)(np.repeat(np.asarray(B3.view(np.ndarray)), r, axis=1).reshape(n, k * m))
    return np.repeat(B3, r, axis=1).reshape(n, k * m)


def ye_abbe(n: int, s: int, m: int = 2, k: int | None = None, *, nodes: Any = "fourier", seed: Any = None,
            spacing: Any = None, stride: int | None = None, field: str = "real") -> GradientCode:
    r"""Ye–Abbe communication-efficient gradient code: load ``s + m``, messages of length ``ceil(p/m)``.

    Worker ``i`` stores partitions ``i, ..., i+s+m-1 (mod n)``; any ``n - s`` responders recover the sum
    ``sum_j g_j`` (``A_F B = 1_k^T (x) I_m`` for every responder set). The load ``d = s + m`` meets the lower
    bound ``d >= k (s + m) / n`` (:func:`gradcodes.min_load`) with equality.

    Parameters
    ----------
    n : int
        Number of workers, ``n >= 1``.
    s : int
        Stragglers tolerated, ``0 <= s <= n - m``.
    m : int, default 2
        Communication factor, ``1 <= m <= n - s``: each worker sends ``1/m`` of a gradient.
    k : int, optional
        Number of partitions, a multiple of ``n`` (default ``n``): consecutive partitions are grouped into ``n``
        super-partitions (load ``(s + m) k / n``).
    nodes : str or sequence, default "fourier"
        ``"fourier"``: real trigonometric polynomials at the angles ``2 pi (q i mod n) / n`` (the real form of roots
        of unity) with the top Fourier coefficients as functionals: the numerically stable default, with a proven
        cancellation bound ``code.cancellation_bound`` (module notes, ``docs/ye_abbe.md``). ``"chebyshev"``
        (``cos((2i+1) pi / 2n)``), ``"equispaced"`` (in [-1, 1]), ``"integer"`` (``1..n``, the paper's numerical
        setting) or a sequence of ``n`` distinct reals: the published polynomial construction (spec §3.3) with
        top-monomial-coefficient functionals. ``"random"``: Gaussian generator and functionals, seeded.
    seed : int or numpy Generator, optional
        Seed of ``nodes="random"`` (ignored otherwise).
    spacing : None, "auto" or float, optional
        ``nodes="fourier"`` only. None (default): the top frequencies. ``"auto"`` or a number: frequencies spread
        over the band with that spacing (``"auto"``: chosen by the worst consecutive-straggler estimate); kept for
        comparison, see ``benchmarks/ye_abbe_numerics.py``.
    stride : int, optional
        ``nodes="fourier"`` only: worker ``i`` evaluates at angle ``2 pi (stride i mod n) / n``; coprime to ``n``.
        Default: the stride minimising ``max_i ||B_i||_1`` among up to 24 candidates spread over ``[1, n/2]`` (fewer
        when ``m`` is very large; ties go to the first) for the top frequencies, 1 for spread ones.
    field : {"real", "rational"}, default "real"
        ``"rational"``: exact arithmetic (Fractions) for rational nodes (``"integer"``, ``"equispaced"``, a
        sequence of Fractions) and for ``"random"`` (draws converted exactly). The Fourier construction is checked
        exactly over ``GF(p)`` instead: ``gradcodes.verify(code, field="GF")``.

    Returns
    -------
    GradientCode
        ``B`` has shape ``(n, k*m)`` (column ``j*m + u`` = block ``u`` of partition ``j``); its default decoder
        ``"lagrange"`` is the closed form (:class:`YeAbbeDecoder`). Fourier codes also carry ``stride``,
        ``functional_frequencies``, ``notes`` and ``cancellation_bound`` (a proven bound on the cancellation
        factor of every responder set, None for spread functionals), and a second decoder ``"quadrature"``.

    Raises
    ------
    ValueError
        For ``m < 1``, ``s < 0``, ``s + m > n``, ``k`` not a multiple of ``n``, nodes of the wrong length or not
        distinct, irrational nodes with ``field="rational"``, or a float64 overflow (the polynomial construction at
        large ``n``).

    Warns
    -----
    RuntimeWarning
        For a real-node polynomial code (``"chebyshev"``, ``"equispaced"``, ``"integer"`` or given nodes, float64)
        whose predicted decode error for the straggler set ``0..s-1`` exceeds ``rtol`` (1e-8).

    Examples
    --------
    The spec's worked example (n = 3, d = 2, m = 2, nodes 1, 2, 3), exactly:

    >>> import gradcodes as gc
    >>> code = gc.ye_abbe(3, 0, 2, nodes=[1, 2, 3], field="rational")
    >>> [[str(x) for x in row] for row in code.B]
    [['-1', '-3', '-2', '-8', '0', '0'], ['0', '0', '-1', '-5', '1', '3'], ['1', '5', '0', '0', '2', '8']]
    >>> [[str(x) for x in row] for row in code.decoding_matrix([0, 1, 2])]
    [['-5/2', '4', '-3/2'], ['1/2', '-1', '1/2']]

    The default (Fourier) construction, decoding a gradient of odd length with two workers missing:

    >>> import numpy as np
    >>> code = gc.ye_abbe(8, 2, 3)
    >>> code.load, code.m
    (5, 3)
    >>> G = np.random.default_rng(0).normal(size=(8, 100))      # 8 partial gradients, p = 100
    >>> Y = code.encode(G)                                        # messages of length ceil(100/3) = 34
    >>> Y.shape
    (8, 34)
    >>> g = code.decode([0, 1, 3, 4, 6, 7], Y, length=100)
    >>> bool(np.allclose(g, G.sum(axis=0), rtol=0, atol=1e-12))
    True
    """
    n = check_int("n", n, 1)
    m = check_int("m", m, 1, n)
    s = check_int("s", s, 0, n - m)
    if k is None:
        k = n
    else:
        k = check_int("k", k, 1)
        if k % n:
            raise ValueError(f"k must be a positive multiple of n={n} (partitions are grouped into n "
                             f"super-partitions), got k={k}")
    check_choice("field", field, ("real", "rational"))
    rng = check_seed(seed)                 # validated for every node choice; used by nodes="random" only
    exact = field == "rational"
    params: dict[str, Any] = {"n": n, "s": s, "m": m, "k": k, "field": field}
    common = dict(m=m, field=field, family="ye_abbe")
    if isinstance(nodes, str):
        check_choice("nodes", nodes, NODE_CHOICES)
        params["nodes"] = nodes
    if (spacing is not None or stride is not None) and not (isinstance(nodes, str) and nodes == "fourier"):
        raise ValueError("spacing and stride apply to nodes='fourier' only")

    if isinstance(nodes, str) and nodes == "fourier":
        if exact:
            raise ValueError("nodes='fourier' has irrational entries; for an exact check use "
                             "gradcodes.verify(code, field='GF') (the same construction over GF(p)), or "
                             "rational nodes with field='rational'")
        if spacing is not None and spacing != "auto":
            if isinstance(spacing, bool) or not isinstance(spacing, (int, float)) or not 0 < spacing < math.inf:
                raise ValueError(f"spacing must be None (top frequencies), 'auto' or a positive finite number, "
                                 f"got {spacing!r}")
        if stride is not None:
            stride = check_int("stride", stride, 1, max(1, n - 1))
            if math.gcd(stride, n) != 1:
                raise ValueError(f"stride must be coprime to n={n} (a permutation of the angles), got {stride}")
        plan = _fourier_plan(n, s, m, spacing, stride)
        params["stride"] = plan.stride
        if spacing is not None:
            params["spacing"] = spacing
        B = _fourier_B(plan, _Backend())
        bk = _Backend()
        tr = _Trig(n, bk)
        K = tr.kernel(plan)
        quad_doc = "exact quadrature plus sine-product Lagrange extrapolation to the stragglers, O(n s)"
        quad = YeAbbeDecoder("quadrature" if plan.top else "lagrange", lambda S: _fourier_A(plan, bk, tr, K, S), s,
                             False, quad_doc)
        decs = [quad]
        if plan.top:
            decs.insert(0, YeAbbeDecoder("lagrange", lambda S: _fourier_A_top(plan, bk, tr, S), s, False,
                                         "closed-form barycentric weights times short symmetric sums, no "
                                         "cancellation, O(n s m)"))

        def builder(fld: Any) -> GradientCode:
            GF = _gf_field(fld, 8 * n)
            for _ in range(8):  # "GF": an unlucky prime may make some M_j singular mod p; take the next one
                gbk = _GFBackend(GF)
                try:
                    gB = _group(_fourier_B(plan, gbk), n, k, m)
                    break
                except ValueError:
                    if not isinstance(fld, str):
                        raise
                    import galois

                    GF = galois.GF(_prime_1_mod(8 * n, GF.characteristic + 1))
            else:  # pragma: no cover - would need 8 unlucky primes in a row
                raise ValueError("no prime field found in which every M_j is invertible")
            gtr = _Trig(n, gbk)
            gK = gtr.kernel(plan)
            gquad = YeAbbeDecoder("quadrature", lambda S: _fourier_A(plan, gbk, gtr, gK, S), s, True,
                                  "quadrature form over GF(p)")
            gtop = YeAbbeDecoder("lagrange", lambda S: _fourier_A_top(plan, gbk, gtr, S), s, True,
                                 "closed-form barycentric weights over GF(p)")
            gdecs = [gtop, gquad] if plan.top else [YeAbbeDecoder("lagrange", gquad._fn, s, True, gquad.description)]
            return GradientCode(gB, s, m=m, name=f"ye_abbe[fourier, {GF.name}]", family="ye_abbe",
                                params=params, decoders=gdecs, default_decoder="lagrange")

        freqs = ", ".join(f"{f2 / 2:g}{'*' if kind == 'mix' else ''}" for f2, kind, _ in plan.functionals
                          if kind != "sin")
        code = GradientCode(_group(B, n, k, m), s, name="ye_abbe", decoders=decs, default_decoder="lagrange",
                            params=params, field_builder=builder, **{**common, "field": "real"})
        code.functional_frequencies = tuple(f2 / 2 for f2, _, _ in plan.functionals)  # type: ignore[attr-defined]
        code.stride = plan.stride  # type: ignore[attr-defined]
        code.notes = (f"Fourier functionals at frequencies {freqs}; worker i at angle "  # type: ignore[attr-defined]
                      f"2 pi ({plan.stride} i mod n) / n")
        code.cancellation_bound = _cancellation_bound(plan, code) if plan.top else None  # type: ignore[attr-defined]
        return code

    if isinstance(nodes, str) and nodes == "random":
        if isinstance(seed, (int, np.integer)):
            params["seed"] = int(seed)
        N = n - s
        Vf = rng.standard_normal((N, n))
        Cf = rng.standard_normal((N, m))
        bk = _FracBackend() if exact else _Backend()
        V = bk.const(Vf.tolist()) if exact else Vf
        C = bk.const(Cf.tolist()) if exact else Cf
        try:
            B = _random_B(V, C, n, s, m, bk)
        except np.linalg.LinAlgError:
            raise ValueError("the random construction is singular; use another seed") from None
        dec = YeAbbeDecoder("lagrange", lambda S: _random_A(V, C, n, bk, S), s, exact,
                            "solve V_F a = C (one (n-s) x (n-s) solve per set)")
        return GradientCode(_group(B, n, k, m), s, name="ye_abbe[random]", decoders=[dec],
                            default_decoder="lagrange", params=params, **common)

    # polynomial construction
    if isinstance(nodes, str):
        theta = _named_nodes(nodes, n, exact)
        label = nodes
    else:
        theta, strs = _user_nodes(nodes, n, exact)
        params["nodes"] = strs if exact else [float(v) for v in theta]
        label = "nodes"
    bk = _FracBackend() if exact else _Backend()
    if exact:
        theta = np.array([to_fraction(v) for v in theta], dtype=object)
    with np.errstate(all="ignore"):
        full, e_all = _poly_parts(theta, n, m, bk)
        B = _poly_B(theta, n, s, m, bk, full, e_all)
    if not exact and not (np.all(np.isfinite(B)) and np.all(np.isfinite(full)) and np.all(full != 0)
                          and all(np.isfinite(x) for x in e_all)):
        raise ValueError(f"the polynomial construction with nodes={label!r} over- or underflows float64 at "
                         f"n={n}; use nodes='fourier' (the stable default) or smaller n")

    def poly_A(S: np.ndarray, theta: Any = theta, full: Any = full, e_all: Any = e_all, bk: Any = bk) -> Any:
        with np.errstate(all="ignore"):
            return _poly_A(theta, full, e_all, n, m, bk, S)

    dec = YeAbbeDecoder("lagrange", poly_A, s, exact,
                        "closed-form Lagrange weights: barycentric weight times elementary symmetric functions")

    def poly_builder(fld: Any) -> GradientCode:
        import galois

        vals = [to_fraction(v) for v in theta]          # only given for exact (rational) codes
        GF = galois.GF(_prime_1_mod(2, 1000)) if isinstance(fld, str) else fld
        gbk = _GFBackend(GF)
        gtheta = gbk.const(vals)
        if len(set(np.asarray(gtheta.view(np.ndarray)).tolist())) != n:
            raise ValueError(f"the nodes are not distinct modulo p = {GF.characteristic}")
        gfull, ge = _poly_parts(gtheta, n, m, gbk)
        gB = _poly_B(gtheta, n, s, m, gbk, gfull, ge)
        gdec = YeAbbeDecoder("lagrange", lambda S: _poly_A(gtheta, gfull, ge, n, m, gbk, S), s, True,
                             "closed-form Lagrange weights over GF(p)")
        return GradientCode(_group(gB, n, k, m), s, m=m, name=f"ye_abbe[{label}, {GF.name}]", family="ye_abbe",
                            params=params, decoders=[gdec], default_decoder="lagrange")

    code = GradientCode(_group(B, n, k, m), s, name=f"ye_abbe[{label}]", decoders=[dec], default_decoder="lagrange",
                        params=params, field_builder=poly_builder if exact else None, **common)
    if not exact:
        # a real-node polynomial code is a Vandermonde system: say so at construction when float64 cannot decode it
        # (checked on the s consecutive stragglers 0..s-1, one closed-form decoding matrix)
        est = code.error_estimate(np.arange(s, n))
        if not est <= code.rtol:
            warnings.warn(f"ye_abbe(nodes={label!r}) at n={n}, s={s}, m={m}: float64 decodes are inaccurate "
                          f"(predicted relative error {est:.1e} with "
                          f"{f'workers 0..{s - 1} straggling' if s else 'no stragglers'}, rtol "
                          f"{code.rtol:g}); use nodes='fourier' (the stable default) or field='rational'",
                          RuntimeWarning, stacklevel=2)
    return code


def family_entries() -> list[tuple[str, Callable[[int, int, int], GradientCode]]]:
    """``(label, build(n, s, m))`` for every node choice, for numerics benchmarks (e.g. ``decode_numerics.py``).

    The first entry is the default construction; the others are the alternatives it was measured against
    (``benchmarks/ye_abbe_numerics.py``).

    >>> [label for label, _ in family_entries()][:3]
    ['ye_abbe fourier', 'ye_abbe fourier natural-order spread', 'ye_abbe fourier natural-order top']
    """
    return [
        ("ye_abbe fourier", lambda n, s, m: ye_abbe(n, s, m)),
        ("ye_abbe fourier natural-order spread", lambda n, s, m: ye_abbe(n, s, m, spacing="auto", stride=1)),
        ("ye_abbe fourier natural-order top", lambda n, s, m: ye_abbe(n, s, m, stride=1)),
        ("ye_abbe random", lambda n, s, m: ye_abbe(n, s, m, nodes="random", seed=0)),
        ("ye_abbe chebyshev", lambda n, s, m: ye_abbe(n, s, m, nodes="chebyshev")),
        ("ye_abbe equispaced", lambda n, s, m: ye_abbe(n, s, m, nodes="equispaced")),
        ("ye_abbe integer", lambda n, s, m: ye_abbe(n, s, m, nodes="integer")),
    ]


REBUILDERS.update(ye_abbe=ye_abbe)
def _scheme_build(n: int, s: int, m: int = 2, k: int | None = None, seed: Any = None, nodes: Any = "fourier",
                  stride: int | None = None, spacing: Any = None, field: str = "real") -> GradientCode:
    return ye_abbe(n, s, m, k, nodes=nodes, seed=seed, stride=stride, spacing=spacing, field=field)


register(Scheme(
    "ye_abbe",
    _scheme_build,
    "Ye & Abbe: load s+m, each worker sends 1/m of the gradient (stable Fourier construction)",
    tour=({"n": 10, "s": 2, "m": 3}, {"n": 50, "s": 5, "m": 5}, {"n": 200, "s": 5, "m": 5}),
))
