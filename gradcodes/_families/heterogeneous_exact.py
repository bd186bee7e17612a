r"""Heterogeneity-aware exact gradient codes: loads proportional to the workers' speeds, any ``s`` stragglers.

Wang, Guo, Tang, Li & Li, "Heterogeneity-aware gradient coding for straggler tolerance" (IEEE ICDCS 2019).
Worker ``i`` processes ``c_i`` partitions per unit of time (its *speed*, or computation capability); a worker
storing ``L_i`` partitions finishes in time ``L_i / c_i``. A code that tolerates any ``s`` stragglers stores every
partition on at least ``s + 1`` workers, so ``sum_i L_i >= (s + 1) k`` and the time of the slowest worker is at
least ``(s + 1) k / sum_i c_i`` (Wang et al. 2019: loads proportional to the speeds are optimal). The
construction here:

1. **Loads** (:func:`min_time_heterogeneous`): the integer loads ``0 <= L_i <= k`` with ``sum_i L_i = (s+1) k``
   that minimise ``T = max_i L_i / c_i``. Greedy: hand out the ``(s + 1) k`` partition slots one at a time to the
   worker whose time ``(L_i + 1)/c_i`` after the slot is smallest (ties to the smaller index). The final ``T``
   is the ``(s+1)k``-th smallest of the values ``L / c_i`` (``1 <= L <= k``), a lower bound for every admissible
   load vector, so the loads are optimal. They are proportional to the speeds up to rounding (and capped at
   ``k``: a worker faster than a ``1/(s+1)`` share of the cluster cannot usefully store a partition twice).
2. **Placement** (Wang et al. 2019): write the partitions ``0, 1, ..., k-1`` out ``s + 1`` times in a row
   and give worker ``i`` the next ``L_i`` positions of that sequence. The copies of partition ``j`` sit at
   positions ``j, j + k, ..., j + s k``; a worker's run has at most ``k`` positions, so it never holds two copies,
   and each partition is stored on exactly ``s + 1`` distinct workers.
3. **Coefficients** (the universal polynomial construction of Jahani-Nezhad & Maddah-Ali 2021, §IV, with
   ``a = 0`` and ``m = 1``, in the real Fourier form of ``gradcodes._families.adversarial_fourier``). Random
   coefficients on this support, in the manner of Tandon, Lei, Dimakis & Karampatziakis (2017, Algorithm 2), work
   with probability 1; here they are fixed and exact. Worker ``i``, whose run has its middle at position
   ``M_i = P_i + L_i/2`` (``P_i`` its start), gets the angle

   .. math:: θ_i = 2π \, \frac{M_i - (M_i \bmod k)/2 + (2i + 1)/(8n)}{(s + 1) k}

   and the dyadic node ``x_i = tan(θ_i / 2)`` (113-bit :mod:`mpmath`, rounded to a multiple of ``2^-24``). A
   position ``p`` maps to ``2π (p - (p mod k)/2) / ((s+1) k)``: the copies ``p = j + mk`` of partition ``j`` all
   have ``p mod k = j``, so its holders ``T_j`` sit ``2π/(s+1)`` apart on the circle (up to the offsets of the run
   middles), spread out whatever the speeds. Half the sum of their angles sets the phase of ``Λ_j`` below; the
   twist ``- (p mod k)/2`` keeps it within a quarter turn (mod a half turn), away from ``Re(ρ Λ_j) = 0``, only
   where every run lies inside one block of ``k`` positions: a run straddling a multiple of ``k`` has one angle for
   both sides, and the partitions near the block boundaries fill in the rest of the half turn (their small
   ``|cos arg(ρ Λ_j)|`` sets the worst cancellation, ``benchmarks/numerics/heterogeneous_phases.py``).
   With ``K = n - s``, ``P_j(x) = prod_{l ∉ T_j} (x - x_l)`` (degree ``K - 1``) and ``λ_l = (-i - x_l)/2``,

   .. math:: B_{tj} = \frac{2^{-e_t} P_j(x_t)}{\operatorname{Re}(ρ Λ_j)}, \qquad
             Λ_j = \prod_{l \notin T_j} λ_l, \qquad t \in T_j,

   ``ρ`` a fixed Gaussian integer with ``Re(ρ Λ_j) ≠ 0`` for every ``j`` (``adversarial_fourier.choose_rho``,
   exact) and the row scales (any powers of two would do; these keep ``B`` and the decoding weights near 1 in size)

   .. math:: e_t = \Big\lfloor \tfrac12 \log_2 \frac{W_t^2 \, (1 + x_t^2)^{1-s} \, 4^{n-1}}
             {n^2 \prod_l (1 + x_l^2)} \Big\rfloor, \qquad W_t = \prod_{l \ne t} (x_t - x_l),

   so that ``2^{e_t}`` is within a factor 2 of ``cos(θ_t/2)^{1-K} prod_{l != t} |z_t - z_l| / n`` (the chord
   product is ``n`` for equally spaced points, but varies exponentially in ``n`` with the workers' density).
   Under the Cayley map ``z = (1 + ix)/(1 - ix)`` a real polynomial ``p`` of degree ``< K`` becomes
   ``P(z) = ((1+z)/2)^{K-1} p(x(z))``, of degree ``< K`` in ``z``, and ``P_j`` has top coefficient ``Λ_j``; so
   the messages ``y_t = sum_j B_tj g_j`` are ``2^{-e_t} p(x_t)`` with ``p = sum_j g_j P_j / Re(ρ Λ_j)``, and the
   functional ``Re(ρ c_{K-1})`` of ``p``'s Cayley image is ``sum_j g_j``. Exact rational arithmetic throughout:
   ``B`` is the correctly rounded image of the rational code, the same bits everywhere.

**Decoder** (``"lagrange"``, closed form, no solve). From any ``K`` responders ``Q`` (the first ``n - s``), ``p``
is their Lagrange interpolant, and the functional of the Cayley image of the basis polynomial ``L_i`` is
``a_i = 2^{e_i} Re(ρ prod_{l ∈ Q∖i} λ_l / (x_i - x_l))`` (Jahani-Nezhad & Maddah-Ali 2021; the algebra of
``adversarial_fourier``): ``a`` is zero off ``Q`` and ``a B = 1`` exactly, whatever the placement, so the code
tolerates any ``s`` stragglers. :class:`LagrangeDecoder` evaluates it in ``O(n s)`` per pattern.

**Numerics.** ``|λ_l / (x_i - x_l)| = cos(θ_i/2) / |z_i - z_l|``, so ``a_t B_tj`` is about
``prod_{l ∈ S} |z_t - z_l| / (prod_{u ∈ T_j∖t} |z_t - z_u| |cos arg(ρ Λ_j)|)``: products of chords of circle
points, no divided differences of real nodes. The float decode's cancellation ``sum_t |a_t B_tj|`` is then
about the mean of ``prod_{l ∈ S} |z - z_l|`` over the holders' points ``z``, largest when the stragglers ``S``
cluster on one arc (``s`` consecutive workers): it grows like about ``1.9^s`` at ``s = n/4`` (each chord is at most 2)
instead of the ``4^s`` of real nodes. The worst searched float64 error at ``n = 100`` is within ``1e-10`` for
``s <= 20 = n/5`` and ``1.3e-9`` to ``2.3e-9`` at ``s = n/4 = 25`` under equal speeds and 2x / 4x spreads
(``benchmarks/numerics/heterogeneous_numerics.py``; the extrapolation to 0 over the real nodes ``20 n + i`` of earlier
versions gave ``2.3e-2`` there). The exact construction costs ``n`` products of ``n`` integers of about ``25 n``
bits (seconds at ``n = 1000``).
"""

from __future__ import annotations

import heapq
import math
import numbers
from collections.abc import Iterable
from fractions import Fraction
from functools import partial
from typing import Any

import numpy as np

from .._base.aliases import MatrixLike
from .._base.errors import GradcodesTypeError, GradcodesValueError
from .._base.registry import Scheme, register
from .._base.validate import check_choice, check_entries, check_int, check_size
from .._core.code import GradientCode, LinearCode
from .._core.decoders import Decoder
from .._core.fields import PrimeField, RationalField
from .._core.sparse import owned, use_sparse
from .._io.files import REBUILDERS
from . import adversarial_fourier as _fourier
from .heterogeneous_fourier import _angles, _weights

__all__ = ["HeterogeneousExactCode", "heterogeneous_exact", "min_time_heterogeneous", "heterogeneous_loads",
           "LagrangeDecoder"]


# --------------------------------------------------------------------------------------------------------
# input handling
# --------------------------------------------------------------------------------------------------------


def _speeds(speeds: Any) -> list[Fraction]:
    """Validated speeds as exact positive Fractions (floats are converted to their exact binary value)."""
    if isinstance(speeds, str):
        speeds = [x.strip() for x in speeds.split(",")]
    if isinstance(speeds, np.ndarray):
        if speeds.ndim != 1:
            raise GradcodesValueError(f"speeds must be one-dimensional, got an array of shape {speeds.shape}")
        speeds = speeds.tolist()
    try:
        items = list(speeds)
    except TypeError:
        raise GradcodesTypeError(f"speeds must be a sequence of positive numbers, got {type(speeds).__name__}") \
            from None
    if not items:
        raise GradcodesValueError("speeds must hold one positive speed per worker (n >= 1), got an empty sequence")
    check_size("the number of workers len(speeds)", len(items), "entries")
    out = []
    for i, v in enumerate(items):
        if isinstance(v, (bool, np.bool_)) or not isinstance(v, (numbers.Real, str)):
            raise GradcodesTypeError(f"speeds[{i}] must be a real number, got {v!r} of type {type(v).__name__}")
        try:
            f = Fraction(v) if not isinstance(v, float) or math.isfinite(v) else None  # type: ignore[arg-type]
        except (ValueError, ZeroDivisionError):
            f = None
        if f is None or f <= 0:
            raise GradcodesValueError(f"speeds[{i}] must be a finite number > 0, got {v!r}")
        out.append(f)
    return out


def _check_s(s: Any, n: int) -> int:
    return check_int("s", s, 0, n - 1)


def _check_k(k: Any, n: int) -> int:
    return n if k is None else check_int("k", k, 1)


# --------------------------------------------------------------------------------------------------------
# loads and the bound
# --------------------------------------------------------------------------------------------------------


def _loads(c: list[Fraction], s: int, k: int) -> tuple[list[int], Fraction]:
    """Optimal integer loads (greedy, ties to the smaller index) and their time ``max_i L_i / c_i``."""
    check_size("the (s+1)*k partition slots handed out", (s + 1) * k, "work")
    n = len(c)
    L = [0] * n
    heap = [(1 / c[i], i) for i in range(n)]
    heapq.heapify(heap)
    t = Fraction(0)
    for _ in range((s + 1) * k):
        t, i = heapq.heappop(heap)
        L[i] += 1
        if L[i] < k:
            heapq.heappush(heap, ((L[i] + 1) / c[i], i))
    return L, t


def heterogeneous_loads(speeds: Any, s: int, k: int | None = None) -> np.ndarray:
    r"""The optimal integer loads of :func:`heterogeneous_exact` (partitions per worker).

    The loads ``0 <= L_i <= k`` with ``sum_i L_i = (s + 1) k`` that minimise ``max_i L_i / c_i``, handed out
    one slot at a time to the worker that finishes it first (ties to the smaller index; Wang et al. 2019,
    loads proportional to the speeds).

    Parameters
    ----------
    speeds : sequence of positive real numbers
        Speed ``c_i > 0`` of each worker (partitions per unit of time; only ratios matter); its length is the
        number of workers ``n``. Ints, Fractions, strings such as ``"3/2"`` and floats (taken at their exact
        binary value) are accepted.
    s : int
        Stragglers tolerated, ``0 <= s <= n - 1``.
    k : int, optional
        Number of partitions, ``k >= 1`` (default ``n``).

    Returns
    -------
    numpy.ndarray
        The ``n`` integer loads.

    Examples
    --------
    >>> heterogeneous_loads([1, 1, 2, 2], 1, 6).tolist()
    [2, 2, 4, 4]
    """
    c = _speeds(speeds)
    n = len(c)
    s = _check_s(s, n)
    return np.array(_loads(c, s, _check_k(k, n))[0], dtype=np.int64)


def min_time_heterogeneous(speeds: Any, s: int, k: int | None = None, *, integral: bool = True) -> Fraction:
    r"""Lower bound on the computation time ``max_i L_i / c_i`` of an exact code for workers of unequal speed.

    Worker ``i`` stores ``L_i`` of the ``k`` partitions and processes ``c_i`` of them per unit of time. A code
    that tolerates any ``s`` stragglers stores every partition on at least ``s + 1`` workers (the argument of
    :func:`gradcodes.min_load`: a partition on at most ``s`` workers is lost when they all straggle), so
    ``sum_i L_i >= (s + 1) k`` with ``L_i <= k``. Hence, for every such code,

    .. math:: T = \max_i \frac{L_i}{c_i} \;\ge\; T^* = \min\Big\{ T :
              \sum_i \min\big(k, \lfloor T c_i \rfloor\big) \ge (s + 1) k \Big\}
              \;\ge\; \min\Big\{ T : \sum_i \min(k, T c_i) \ge (s + 1) k \Big\},

    and without the cap ``L_i <= k`` the last value is ``(s + 1) k / sum_i c_i`` (Wang et al. 2019).
    ``integral=True`` returns ``T*`` (integer loads: the bound :func:`heterogeneous_exact` attains); it is the
    ``(s+1) k``-th smallest of the values ``L / c_i`` (``1 <= L <= k``, every worker ``i``), since a load vector
    with time ``T`` uses only slots of value at most ``T``. ``integral=False`` returns the fractional bound
    (water filling: the workers whose share would pass ``k`` are capped at ``k``).

    Parameters
    ----------
    speeds : sequence of positive real numbers
        Speed ``c_i > 0`` of each worker; its length is ``n``. Floats are taken at their exact binary value.
    s : int
        Stragglers tolerated, ``0 <= s <= n - 1``.
    k : int, optional
        Number of partitions, ``k >= 1`` (default ``n``).
    integral : bool, default True
        Integer loads (``T*``) or fractional loads.

    Returns
    -------
    fractions.Fraction
        The exact bound.

    Raises
    ------
    GradcodesValueError
        If a parameter is out of its range (the message names the parameter and the range).
    GradcodesTypeError
        If ``integral`` is not a bool.

    Examples
    --------
    >>> min_time_heterogeneous([1, 1, 2, 2], 1, 6)
    Fraction(2, 1)
    >>> min_time_heterogeneous([1, 1, 1, 4], 1, 3), min_time_heterogeneous([1, 1, 1, 4], 1, 3, integral=False)
    (Fraction(1, 1), Fraction(1, 1))
    >>> min_time_heterogeneous([1, 2, 4], 1, 5), min_time_heterogeneous([1, 2, 4], 1, 5, integral=False)
    (Fraction(2, 1), Fraction(5, 3))
    """
    c = _speeds(speeds)
    n = len(c)
    s = _check_s(s, n)
    k = _check_k(k, n)
    if not isinstance(integral, (bool, np.bool_)):
        raise GradcodesTypeError(f"integral must be a bool, got {integral!r}")
    if integral:
        return _loads(c, s, k)[1]
    # water filling: cap the fastest workers at k one at a time while their share exceeds k
    order = sorted(range(n), key=lambda i: (-c[i], i))
    need, rest = Fraction((s + 1) * k), sum(c, Fraction(0))
    for i in order:
        t = need / rest
        if t * c[i] <= k:
            return t
        need -= k
        rest -= c[i]
    raise AssertionError("unreachable: n >= s + 1 workers capped at k cover (s + 1) k slots")


# --------------------------------------------------------------------------------------------------------
# the decoder
# --------------------------------------------------------------------------------------------------------


class LagrangeDecoder(Decoder):
    r"""Closed-form decoder of :func:`heterogeneous_exact`: the top Fourier functional of the Lagrange interpolant.

    On the first ``K = n - s`` responders ``Q`` (in index order; ``E`` the other ``s`` workers, ascending) worker
    ``i`` gets

    .. math:: a_i = 2^{e_i} \operatorname{Re}\Big(ρ \prod_{l \in Q,\, l \ne i} \frac{λ_l}{x_i - x_l}\Big)
              = 2^{-h_i} \operatorname{Re}\Big(ρ\, C_i \prod_{l \in E} \frac{x_i - x_l}{λ_l}\Big),

    ``λ_l = (-i - x_l)/2``: the functional ``Re(ρ c_{K-1})`` of the Cayley image of the Lagrange basis polynomial
    ``L_i`` (module docstring), so ``a B = 1`` exactly. ``C_i = 2^{e_i + h_i} prod_{l != i} λ_l / (x_i - x_l)``
    is computed once, exactly (``h_i = ⌊log2((1 + x_i^2)^s)/2⌋``, so ``|C_i|`` is about ``1/n``): a pattern costs
    ``O(n s)``. Float codes: ``C_i`` and ``1/λ_l`` correctly rounded, the ``s`` factors multiplied in the order of
    ``E`` with ``2^{-h_i}`` applied in exact steps (folded into the exact node differences); rational codes:
    Fractions; GF(p) codes: the rational weights reduced mod ``p``. Fewer than ``K`` responders: zero rows.

    :func:`heterogeneous_exact` builds it from the code's own data (``code.decoders["lagrange"]``); the
    arguments are the attributes of the :class:`~gradcodes.HeterogeneousExactCode` of the same name.

    Parameters
    ----------
    nodes : iterable of fractions.Fraction or int
        The dyadic nodes ``x_i`` (``code.nodes``).
    scale_exponents : sequence of int
        The row scales ``e_i`` of ``B`` (``code.scale_exponents``).
    rho : tuple of two fractions.Fraction
        Real and imaginary part of ``ρ`` (``code.rho``).
    s : int
        Stragglers tolerated: the first ``n - s`` responders are used.
    consts : sequence of pairs of fractions.Fraction
        Real and imaginary part of every ``C_i``, exactly (``code.consts``).
    base_exponents : sequence of int
        The exponents ``c_i`` the stored ``C_i`` are scaled by (``code.base_exponents``): worker ``i``'s weight is
        multiplied by ``2^{e_i - c_i}``.
    exact : bool, default False
        Exact Fraction weights (for a code over the rationals).
    gf : galois.GF(p) class, optional
        Weights reduced mod ``p`` (for the code over GF(p) of ``code.in_field``); implies exact arithmetic.

    Examples
    --------
    >>> import numpy as np, gradcodes as gc
    >>> code = gc.heterogeneous_exact([1, 1, 2, 2], 1, 6, field="rational")
    >>> dec = gc.LagrangeDecoder(code.nodes, code.scale_exponents, code.rho, code.s, code.consts,
    ...                          code.base_exponents, exact=True)
    >>> A = dec.matrices(code, np.array([[1, 0, 1, 1]], dtype=bool))     # worker 1 straggles
    >>> [round(float(v), 4) for v in A[0, 0]], (A[0] @ code.B).tolist() == [[1] * 6]
    ([0.3951, 0.0, -2.0085, 0.9275], True)
    """

    name = "lagrange"
    description = "closed form: the top Fourier coefficient of the interpolant on the first n - s responders, O(n s)"
    deterministic = True

    def __init__(self, nodes: Iterable[Fraction | int], scale_exponents: Any, rho: tuple[Fraction, Fraction], s: int,
                 consts: Any, base_exponents: Any, exact: bool = False, gf: Any = None) -> None:
        self.nodes = tuple(Fraction(v) for v in nodes)
        self.s = int(s)
        self.rho = rho
        self.consts = tuple((Fraction(a), Fraction(b)) for a, b in consts)
        self.shift = np.asarray(scale_exponents, dtype=np.int64) - np.asarray(base_exponents, dtype=np.int64)
        self.exact = exact or gf is not None
        self.gf = gf                              # a galois GF(p) class: the rational weights mod p
        self.inv_lam = tuple((-2 * v / (1 + v * v), 2 / (1 + v * v)) for v in self.nodes)      # 1/λ_l, exactly

    def _exact_row(self, E: list[int], n: int) -> list[Fraction]:
        x, out = self.nodes, []
        for i in range(n):
            if i in E:
                out.append(Fraction(0))
                continue
            pr, pi = self.consts[i]
            for l_ in E:
                d = x[i] - x[l_]
                fr, fi = d * self.inv_lam[l_][0], d * self.inv_lam[l_][1]
                pr, pi = pr * fr - pi * fi, pr * fi + pi * fr
            out.append((self.rho[0] * pr - self.rho[1] * pi) * Fraction(2) ** int(self.shift[i]))
        return out

    def matrices(self, code: LinearCode, mask: np.ndarray) -> Any:
        mask = np.asarray(mask, dtype=bool)
        b, n = mask.shape
        s = self.s
        ok = mask.sum(axis=1) >= n - s
        # E: the workers after the first n - s responders are dropped with the stragglers (s of them, ascending)
        order = np.argsort(~mask, axis=1, kind="stable")
        E = np.sort(order[:, n - s:], axis=1)
        if self.exact:
            out = RationalField().zeros((b, 1, n))
            for r in np.flatnonzero(ok):
                out[r, 0, :] = self._exact_row([int(v) for v in E[r]], n)
            return out if self.gf is None else PrimeField(self.gf).const(out)
        out = np.zeros((b, 1, n))
        rows = np.flatnonzero(ok)
        if rows.size:
            x = np.array([float(v) for v in self.nodes])
            ir = np.array([float(v[0]) for v in self.inv_lam])
            ii = np.array([float(v[1]) for v in self.inv_lam])
            pr = np.tile(np.array([float(c[0]) for c in self.consts]), (rows.size, 1))
            pi = np.tile(np.array([float(c[1]) for c in self.consts]), (rows.size, 1))
            Er = E[rows]
            for t in range(s):
                col = Er[:, t]
                d = x[None, :] - x[col][:, None]                      # exact: differences of dyadic nodes
                inc = _fourier._spread_ldexp(t, s, self.shift)
                if inc.any():
                    d *= np.ldexp(1.0, inc)[None, :]                  # exact: a power of two per worker
                fr, fi = d * ir[col][:, None], d * ii[col][:, None]
                pr, pi = pr * fr - pi * fi, pr * fi + pi * fr
            a = float(self.rho[0]) * pr - float(self.rho[1]) * pi
            np.put_along_axis(a, Er, 0.0, axis=1)
            out[rows, 0, :] = a
        return out.astype(code.B.dtype, copy=False)


# --------------------------------------------------------------------------------------------------------
# the code
# --------------------------------------------------------------------------------------------------------


def _placement(L: list[int], k: int) -> list[list[int]]:
    """Holders of each partition: worker ``i`` takes positions ``P_i .. P_i + L_i - 1`` of ``(0..k-1)`` x (s+1)."""
    holders: list[list[int]] = [[] for _ in range(k)]
    pos = 0
    for i, li in enumerate(L):
        for p in range(pos, pos + li):
            holders[p % k].append(i)
        pos += li
    return holders


def _float(num: int, den: int, e: int) -> float:
    """``num / den * 2^e`` correctly rounded (Python's ``int / int`` is, for integers of any size)."""
    return (num << e) / den if e >= 0 else num / (den << -e)


def _assemble(rows: list[int], cols: list[int], vals: list[tuple[int, int, int]], n: int, k: int,
              exact: bool) -> Any:
    """The encoding matrix from its non-zeros (at most ``(s + 1) k`` of ``n k``)."""
    if exact:
        B = RationalField().zeros((n, k))
        B[rows, cols] = [Fraction(a, b) * Fraction(2) ** e for a, b, e in vals]
        return B
    from scipy import sparse

    try:
        data = np.array([_float(a, b, e) for a, b, e in vals])
    except OverflowError:
        raise GradcodesValueError(f"s is too large for field='real' at n = {n}: the weights exceed the float64 "
                                  f"range; use field='rational'") from None
    csr = sparse.csr_array((data, (rows, cols)), shape=(n, k))
    return owned(csr) if use_sparse(n, k) else csr.toarray()       # stored sparse at scale, as the other families


class HeterogeneousExactCode(GradientCode):
    """A code built by :func:`heterogeneous_exact`.

    Attributes
    ----------
    speeds : list of fractions.Fraction
        The workers' speeds ``c_i``, exactly.
    nodes : tuple of fractions.Fraction
        The dyadic nodes ``x_i = tan(θ_i / 2)`` (multiples of ``2^-24``) of the coefficients and of the decoder.
    scale_exponents : tuple of int
        The row scales ``e_i``: row ``i`` of ``B`` carries the factor ``2^{-e_i}`` (module docstring).
    rho : tuple of two Fractions
        The Gaussian integer ``ρ`` of the decoded functional ``Re(ρ c_{K-1})`` (real and imaginary part).
    time : fractions.Fraction
        The computation time ``max_i L_i / c_i``, equal to :func:`min_time_heterogeneous`.

    Examples
    --------
    >>> import gradcodes as gc
    >>> code = gc.heterogeneous_exact([1, 1, 2, 2], s=1)
    >>> isinstance(code, gc.HeterogeneousExactCode), code.s, code.k
    (True, 1, 4)
    """

    def __init__(self, B: MatrixLike, s: int, *, speeds: list[Fraction], nodes: Iterable[Fraction | int],
                 time: Fraction, scale_exponents: Any = None,
                 rho: tuple[Fraction, Fraction] = (Fraction(1), Fraction(0)), consts: Any = (),
                 base_exponents: Any = (), **kwargs: Any) -> None:
        super().__init__(B, s, **kwargs)
        self.speeds: list[Fraction] = list(speeds)
        self.nodes: tuple[Fraction, ...] = tuple(Fraction(v) for v in nodes)
        self.scale_exponents: tuple[int, ...] = tuple(int(v) for v in scale_exponents) \
            if scale_exponents is not None else (0,) * len(self.nodes)
        self.rho: tuple[Fraction, Fraction] = rho
        self.consts: tuple[tuple[Fraction, Fraction], ...] = tuple(consts)   # the decoder's C_i (exact)
        self.base_exponents: tuple[int, ...] = tuple(int(v) for v in base_exponents)
        self.time: Fraction = time


def heterogeneous_exact(speeds: Any, s: int, k: int | None = None, *, field: str = "real") -> HeterogeneousExactCode:
    r"""Heterogeneity-aware exact gradient code (Wang, Guo, Tang, Li & Li 2019): loads follow the speeds.

    ``n = len(speeds)`` workers, ``k`` partitions, any ``s`` stragglers. Worker ``i`` stores ``L_i`` partitions,
    the optimal integer loads for its speed ``c_i`` (:func:`heterogeneous_loads`), laid out by the paper's
    placement (the partitions written ``s + 1`` times in a row, consecutive runs to consecutive workers), so
    every partition is on ``s + 1`` distinct workers. Its coefficients are exact: the universal polynomial
    construction (Jahani-Nezhad & Maddah-Ali 2021) in its real Fourier form, ``B_tj = 2^{-e_t} P_j(x_t) /
    Re(ρ Λ_j)`` with ``P_j`` vanishing at the workers that do not hold partition ``j``, over the dyadic Cayley
    nodes ``x_i = tan(θ_i/2)`` of angles at the middles of the workers' runs (module docstring), and the
    closed-form decoder (the top Fourier functional of the Lagrange interpolant on the first ``n - s``
    responders) recovers ``1`` from any ``n - s`` responders. The computation time
    ``max_i L_i / c_i`` equals :func:`min_time_heterogeneous` exactly (attribute ``time``). With equal speeds
    and ``k = n`` the loads are ``s + 1``: the placement is cyclic repetition's.

    Parameters
    ----------
    speeds : sequence of positive real numbers
        Speed ``c_i > 0`` of each worker (partitions processed per unit of time; only ratios matter); its
        length is the number of workers ``n >= 1``. Ints, Fractions, strings such as ``"3/2"`` (or one
        comma-separated string) and finite floats (taken at their exact binary value) are accepted.
    s : int
        Stragglers tolerated, ``0 <= s <= n - 1``.
    k : int, optional
        Number of partitions, ``k >= 1`` (default ``n``). More partitions let the loads follow the speeds more
        closely (the integer rounding costs at most one partition per worker).
    field : {"real", "rational"}
        Floating point (``B`` rounded once from exact values) or exact arithmetic.

    Returns
    -------
    HeterogeneousExactCode
        A :class:`~gradcodes.GradientCode` with ``params = {"speeds", "s", "k", "field"}`` (speeds as exact
        strings), the decoders ``"lagrange"`` (default) and the generic ones, and the attributes ``speeds``
        (Fractions), ``nodes``, ``scale_exponents``, ``rho`` and ``time`` (the Fraction ``max_i L_i / c_i``).

    Raises
    ------
    ValueError
        Empty ``speeds`` or a speed that is not finite and positive; ``s`` outside ``[0, n - 1]``; ``k < 1``;
        unknown ``field``; sizes over ``gc.limits``.
    TypeError
        A speed that is not a real number, non-integer ``s`` or ``k``.

    Examples
    --------
    Four workers, two of them twice as fast, six partitions, one straggler:

    >>> import gradcodes as gc
    >>> code = gc.heterogeneous_exact([1, 1, 2, 2], 1, 6, field="rational")
    >>> code.loads.tolist(), code.time
    ([2, 2, 4, 4], Fraction(2, 1))
    >>> for row in code.B:                                  # exact Fractions, shown to 4 digits
    ...     print([round(float(v), 4) for v in row])
    [0.383, 0.383, 0.0, 0.0, 0.0, 0.0]
    [0.0, 0.0, -0.8539, -0.8539, 0.0, 0.0]
    [-0.4225, -0.4225, 0.0, 0.0, -1.3554, -1.3554]
    [0.0, 0.0, 1.0782, 1.0782, -1.8571, -1.8571]
    >>> a = code.decoding_matrix([0, 2, 3])                 # worker 1 straggles
    >>> [round(float(v), 4) for v in a[0]], (a @ code.B).tolist() == [[1] * 6]
    ([0.3951, 0.0, -2.0085, 0.9275], True)
    >>> gc.verify(code).verdict
    'exact'
    """
    c = _speeds(speeds)
    n = len(c)
    s = _check_s(s, n)
    k = _check_k(k, n)
    check_choice("field", field, ("real", "rational"))
    exact = field == "rational"
    check_entries(n, k, exact=exact)
    # n products of n node differences (integers of about 25 n bits), then (s+1)^2 k small ones
    check_size("the exact construction n^3 + (s+1)^2 k", n ** 3 + (s + 1) ** 2 * k, "work")
    L, time = _loads(c, s, k)
    holders = _placement(L, k)
    x = _fourier.cayley_nodes(*_angles(L, s, k))
    if len(set(x)) != n:
        raise GradcodesValueError(f"(s + 1) k n = {(s + 1) * k * n:,} is too large: two nodes coincide at the "
                                  f"2^-{_fourier._NODE_BITS} resolution of the dyadic nodes; use fewer partitions k")
    K = n - s
    rows, cols, vals, rho, consts, base, exps = _weights(holders, x, K)
    B = _assemble(rows, cols, vals, n, k, exact)
    params = {"speeds": [str(v) for v in c], "s": s, "k": k, "field": field}
    return HeterogeneousExactCode(
        B, s, speeds=c, nodes=x, scale_exponents=exps, rho=rho, time=time, field=field, consts=consts,
        base_exponents=base,
        name=f"heterogeneous_exact(n={n}, s={s}, k={k})", family="heterogeneous_exact", params=params,
        decoders=[LagrangeDecoder(x, exps, rho, s, consts, base, exact)], default_decoder="lagrange",
        field_builder=partial(_in_gf, c, s, k))


def _gf_ok(p: int, code: HeterogeneousExactCode) -> bool:
    """``p`` odd and coprime to every denominator of ``B`` and of every decoding weight (exact integer checks)."""
    if p == 2:
        return False
    X = _fourier._ints(code.nodes)
    if any((X[i] - X[j]) % p == 0 for i in range(len(X)) for j in range(i)):
        return False
    return all(Fraction(v).denominator % p for v in np.asarray(code.B).ravel())


def _in_gf(speeds: list[Fraction], s: int, k: int, field: Any) -> HeterogeneousExactCode:
    """``code.in_field(field)``: the rational code reduced mod ``p`` (``"GF"``: the smallest suitable prime).

    A prime ``p`` is suitable when it is odd and divides no difference of the nodes' numerators ``X_i - X_l`` and no
    denominator of ``B`` (the ``Re(ρ G_j)``): then every entry of ``B`` and every decoding weight (denominators
    ``2^{K-1} prod (X_i - X_l)``, module docstring) exists mod ``p`` and the identity ``a B = 1``, a polynomial
    identity over the integers localised at ``p``, holds there too: ``gc.verify(code, field="GF")`` checks it with
    no rounding at all.
    """
    import galois

    n = len(speeds)
    exact = heterogeneous_exact(speeds, s, k, field="rational")
    if isinstance(field, str):
        if field != "GF":
            raise GradcodesValueError(f"field must be 'GF' (the smallest suitable prime) or a galois.GF(p) class, "
                                      f"got {field!r}")
        p = max(3, n)
        while not (galois.is_prime(p) and _gf_ok(p, exact)):
            p += 1
        GF = galois.GF(p)
    elif isinstance(field, type) and hasattr(field, "characteristic") and hasattr(field, "degree"):
        if field.degree != 1 or not _gf_ok(int(field.characteristic), exact):
            raise GradcodesValueError(f"field must be a prime field GF(p) with p odd and coprime to the node "
                                      f"differences and the denominators of B (code.in_field('GF') finds one), got "
                                      f"GF({field.characteristic}^{field.degree})")
        GF = field
    else:
        raise GradcodesTypeError(f"field must be 'GF' or a galois.GF(p) class, got {field!r}")
    B = PrimeField(GF).const(exact.B)
    return HeterogeneousExactCode(
        B, s, speeds=exact.speeds, nodes=exact.nodes, scale_exponents=exact.scale_exponents, rho=exact.rho,
        time=exact.time, name=f"heterogeneous_exact[GF({GF.characteristic})](n={n}, s={s}, k={k})",
        family="heterogeneous_exact_gf", params={**exact.params, "field": f"GF({GF.characteristic})"},
        consts=exact.consts, base_exponents=exact.base_exponents,
        decoders=[LagrangeDecoder(exact.nodes, exact.scale_exponents, exact.rho, s, exact.consts,
                                  exact.base_exponents, gf=GF)],
        default_decoder="lagrange")


def _spread_speeds(n: int, spread: int) -> list[int]:
    """Deterministic speeds with a ``spread``x range: ``1, 2, ..., spread`` repeated (the tour's clusters)."""
    return [1 + i % spread for i in range(n)]


def _build(s: int, n: int | None = None, k: int | None = None, speeds: Any = None, spread: int = 4,
           field: str = "real") -> HeterogeneousExactCode:
    """Registry builder: ``speeds`` given, or ``n`` workers with speeds ``1..spread`` repeated."""
    if speeds is None:
        if n is None:
            raise GradcodesValueError("heterogeneous_exact needs speeds or n")
        speeds = _spread_speeds(check_int("n", n, 1), check_int("spread", spread, 1))
    return heterogeneous_exact(speeds, s, k, field=field)


REBUILDERS.update(heterogeneous_exact=heterogeneous_exact)
register(Scheme(
    "heterogeneous_exact", _build,
    "Wang et al. heterogeneity-aware exact code: optimal loads for the workers' speeds, any s stragglers, exact "
    "Fourier-form coefficients (universal polynomial code, Cayley nodes) and closed-form decoder",
    tour=({"speeds": [1, 1, 2, 2], "s": 1, "k": 6}, {"n": 20, "s": 3, "k": 40}, {"n": 100, "s": 2})))
