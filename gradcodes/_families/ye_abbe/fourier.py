"""The Fourier (real trigonometric) construction of Ye–Abbe codes: encoding matrix and decoders.

The module notes of :mod:`gradcodes._families.ye_abbe` give the mathematics; every function here runs over one
:class:`~gradcodes._core.fields.Field` (float64, or GF(p) for the exact check).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction
from typing import TYPE_CHECKING, Any

import numpy as np

from ..._base.errors import GradcodesTypeError, GradcodesValueError
from ..._core import detlinalg as _det
from ..._core.fields import Field, PrimeField
from .common import _holders, _prime_1_mod, _series_inv, _series_mul

if TYPE_CHECKING:
    from ..._core.code import GradientCode



def _gf_field(field: Any, q: int) -> Any:
    """A galois prime field with ``p = 1 mod q`` from ``"GF"`` or a galois field class."""
    import galois

    if isinstance(field, str):
        if field not in ("GF", "GF(p)"):
            raise GradcodesValueError(f"field must be 'GF' or a galois field class, got {field!r}")
        return galois.GF(_prime_1_mod(q))
    if not (isinstance(field, type) and hasattr(field, "characteristic")):
        raise GradcodesTypeError(f"field must be 'GF' or a galois.GF(p) class, got {field!r}")
    GF: Any = field
    if GF.degree != 1 or (GF.characteristic - 1) % q:
        raise GradcodesValueError(f"this construction needs a prime field GF(p) with p = 1 (mod {q}); got {GF.name}")
    return GF



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

    def __init__(self, n: int, bk: Field) -> None:
        self.n, self.bk = n, bk
        self.sin_table: np.ndarray | None = None
        if isinstance(bk, PrimeField):
            GF = bk.GF
            zeta = GF.primitive_element ** ((bk.p - 1) // (8 * n))
            self.table = zeta ** np.arange(8 * n)              # zeta^e, e mod 8n
            self.inv_i = self.table[(-2 * n) % (8 * n)]         # 1 / i
            self.half = GF(1) / GF(2)

    def sin_values(self) -> np.ndarray:
        """``2 sin(pi x / n)`` for the integers ``x = -(n-1), ..., n-1`` (float backend), at index ``x + n - 1``."""
        if self.sin_table is None:
            n = self.n
            self.sin_table = 2.0 * _det.sin_pi(np.arange(-n + 1, n, dtype=np.int64), n)
        return self.sin_table

    def two_sin(self, k: np.ndarray) -> Any:
        k = np.asarray(k, dtype=np.int64)
        if not isinstance(self.bk, PrimeField):
            n = self.n
            if k.size > 4 * n and k.size and -n < k.min() and k.max() < n:
                # every argument is an integer in (-n, n): look the values up (the same formula, evaluated once
                # per integer, so the values are bitwise those of the direct evaluation)
                return self.sin_values()[k + (n - 1)]
            return 2.0 * _det.sin_pi(k, n)
        q = 8 * self.n
        return (self.table[(4 * k) % q] - self.table[(-4 * k) % q]) * self.inv_i

    def cos_sin(self, e: np.ndarray) -> tuple[Any, Any]:
        """``cos(pi e / (4n))``, ``sin(pi e / (4n))`` for integer arrays ``e``."""
        e = np.asarray(e, dtype=np.int64)
        if not isinstance(self.bk, PrimeField):
            return _det.cos_pi(e, 4 * self.n), _det.sin_pi(e, 4 * self.n)
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
        return bk.stack(rows)

    def sign(self, e: np.ndarray) -> Any:
        return self.bk.const(np.where(np.asarray(e) % 2 == 0, 1, -1))

    def expi(self, e: np.ndarray) -> Any:
        """``exp(i pi e / (4n))`` (complex128, or zeta^e over GF(p)) for integer arrays ``e``."""
        e = np.asarray(e, dtype=np.int64) % (8 * self.n)
        if isinstance(self.bk, PrimeField):
            return self.table[e]
        out = np.empty(e.shape, dtype=np.complex128)
        out.real, out.imag = _det.cos_pi(e, 4 * self.n), _det.sin_pi(e, 4 * self.n)
        return out



#: the last few functional-independent parts of float64 encoding matrices (the stride search of
#: :func:`gradcodes._families.ye_abbe.fourier_plan._fourier_plan` tries several functionals per stride and then
#: builds the chosen plan again: the sine products are computed once per (n, s, m, pos, stride))
_PARTS: dict[tuple[int, int, int, tuple[int, ...], int], tuple[np.ndarray, np.ndarray, np.ndarray]] = {}


def _interpolation_part(plan: _FourierPlan, bk: Field, tr: _Trig) -> tuple[np.ndarray, Any, Any]:
    """``(Hw, H, Phi)``: holder workers (n, d), their angle indices and ``S_j l_w`` at the holders (n, d, m); they
    depend on the nodes and interpolation points only, not on the functionals."""
    key = (plan.n, plan.s, plan.m, plan.pos, plan.stride)
    if not bk.exact and key in _PARTS:
        return _PARTS[key]
    n, d, m = plan.n, plan.d, plan.m
    Hw = _holders(n, d)                                            # (n, d) holder workers
    H = plan.node[Hw]                                              # (n, d) their angle indices
    # S_j(phi_i) = (-1)^(n-1-i) n / prod_{h in H_j, h != i} 2 sin(pi (i-h)/n)
    if bk.exact:
        diff = H[:, :, None] - H[:, None, :]                       # (n, d, d)
        ts = bk.unit_diagonal(tr.two_sin(diff))
        prod = np.prod(ts, axis=2)
    else:
        # the same products, factor by factor in the same order (bitwise equal to np.prod over the (n, d, d)
        # array of factors, without materialising it: one (n, d) column of factors at a time)
        table = tr.sin_values()                                    # 2 sin(pi x / n), x = -(n-1)..n-1
        Hs = H + (n - 1)
        prod = None
        for b in range(d):
            col = table[Hs - H[:, b:b + 1]]                        # a new array: the factors of column b
            col[:, b] = 1.0
            if prod is None:
                prod = col
            else:
                prod *= col
        if prod is None:
            prod = np.ones((n, 0))
    S = tr.sign(n - 1 - H) * bk.const(n) / prod                    # (n, d)
    pos = np.asarray(plan.pos)
    psi = H[:, pos]                                                # (n, m) interpolation points of the R-space
    num = tr.two_sin(H[:, :, None] - psi[:, None, :])              # (n, d, m)
    den = tr.two_sin(psi[:, :, None] - psi[:, None, :])            # (n, m, m)
    den = bk.unit_diagonal(den)
    # Lagrange basis l_w(i) = prod_{v != w} sin(pi(i - psi_v)/n) / sin(pi(psi_w - psi_v)/n)
    Lb = bk.zeros((n, d, m))
    for w in range(m):
        others = [v for v in range(m) if v != w]
        numw = np.prod(num[:, :, others], axis=2) if others else bk.ones((n, d))
        denw = np.prod(den[:, w, others], axis=1) if others else bk.ones(n)
        Lb[:, :, w] = numw / denw[:, None]
    Phi = S[:, :, None] * Lb                                       # (n, d, m): S_j l_w at the holders
    if not bk.exact:
        if len(_PARTS) >= 4:
            _PARTS.pop(next(iter(_PARTS)))
        for arr in (Hw, H, Phi):
            arr.setflags(write=False)
        _PARTS[key] = (Hw, H, Phi)
    return Hw, H, Phi


def _fourier_B(plan: _FourierPlan, bk: Field, max_cond: float | None = 1e10) -> Any:
    """Encoding matrix (n, n*m) of the Fourier construction (closed-form sine products, one m x m solve per j).

    Float64: raises ValueError when some ``M_j`` has condition number above ``max_cond`` (``B`` would lose
    ``log10(cond)`` digits); ``max_cond=None`` skips that check (and its batched SVD).
    """
    n, d, m = plan.n, plan.d, plan.m
    tr = _Trig(n, bk)
    K = tr.kernel(plan)
    Hw, H, Phi = _interpolation_part(plan, bk, tr)
    # M_j = K[:, H_j] Phi_j; float64: sums in index order (no BLAS, no SIMD reduction: the same bits everywhere)
    M = bk.stack([K[:, H[j]] @ Phi[j] for j in range(n)]) if bk.exact else _det.matmul(np.swapaxes(K[:, H], 0, 1), Phi)
    if not bk.exact and max_cond is not None:
        sv = np.linalg.svd(M, compute_uv=False)
        with np.errstate(over="ignore", divide="ignore", invalid="ignore"):
            cond = sv[:, 0] / np.maximum(sv[:, -1], np.finfo(float).tiny)
        if not np.all(np.isfinite(cond)) or cond.max() > max_cond:
            raise GradcodesValueError(f"the Fourier functionals are (nearly) singular on some partition (cond(M_j) = "
                                      f"{cond.max():.3g}); choose another spacing or stride")
    if bk.exact:
        Bj = bk.solve_right(Phi, M)                                # (n, d, m)
    else:
        # Phi M^{-1} by elimination in a fixed order with two refinement steps (Dot2 residuals): the solution of
        # the computed system to about one unit in the last place, and the same bits on every machine
        Bj = np.swapaxes(_det.solve(np.swapaxes(M, 1, 2), np.swapaxes(Phi, 1, 2), refine=2), 1, 2)
    B = bk.zeros((n, n, m))
    for a in range(d):
        B[Hw[:, a], np.arange(n)] = Bj[:, a]
    return B.reshape(n, n * m)


def _fourier_A(plan: _FourierPlan, bk: Field, tr: _Trig, K: Any, S: np.ndarray) -> Any:
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
    DSS = bk.unit_diagonal(DSS)
    om = np.prod(DSS, axis=2)                                        # (b, s)
    sign = tr.sign(F[:, :, None] - S[:, None, :])
    L = sign * W[:, :, None] / (-DFS * om[:, None, :])               # (b, N, s): L_i^F(phi_l); D(l,i) = -D(i,l)
    KF = K[:, F]                                                     # (m, b, N)
    KS = K[:, S]                                                     # (m, b, s)
    if isinstance(bk, PrimeField):
        corr = bk.stack([(L[i] @ KS[:, i].T).T for i in range(b)])        # (b, m, N)
        vals = bk.GF(np.swapaxes(np.asarray(KF.view(np.ndarray)), 0, 1)) + corr
    else:
        vals = np.swapaxes(KF, 0, 1) + np.einsum("bil,ubl->bui", L, KS)
    out = bk.zeros((b, m, n))
    rows = np.arange(b)[:, None]
    for u in range(m):
        out[rows, u, Fw] = vals[:, u, :]
    return out



def _fourier_A_top(plan: _FourierPlan, bk: Field, tr: _Trig, S: np.ndarray) -> Any:
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
    unit-modulus numbers), so ``sum_i |A_F[u, i]| <= 2^(s+1) C(s + r, r) (n - s) / n`` whatever ``F``, and the
    worst column (:func:`gradcodes._core.numerics.cancellation`) ``canc(A_F) <= max_u sum_i |A_F[u, i]| * max_i
    omega_i``, ``omega_i = sum_v max_j |B_i,(j,v)|`` (each column sum ``sum_i |A_ui| |B_i,(j,v)|`` is at most
    ``sum_i |A_ui| max_j |B_i,(j,v)|``, summed over the ``m`` pieces ``v``).
    """
    n, s, N = plan.n, plan.s, plan.N
    worst_a = 0.0
    for f2, kind, _ in plan.functionals:
        r = (N - 1 - f2) // 2
        worst_a = max(worst_a, (1 if kind == "dc" else 2) * 2.0**s * math.comb(s + r, r) * N / n)
    absB = np.abs(np.asarray(code.B))
    omega = absB.reshape(absB.shape[0], code.k, code.m).max(axis=1).sum(axis=1)
    return float(worst_a * omega.max())

