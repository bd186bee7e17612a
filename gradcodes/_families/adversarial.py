r"""Gradient codes for an arbitrary data placement with stragglers and adversarial workers (Jahani-Nezhad &
Maddah-Ali, "Optimal communication-computation trade-off in heterogeneous gradient coding", IEEE JSAIT 2021).

**Setting.** Worker ``i`` stores the partitions ``P_i`` (any placement: the workers may hold different numbers of
partitions); partition ``j`` is stored by the workers ``W_j``, ``r_j = |W_j|`` times, and ``r = min_j r_j``. Of the
``n`` workers up to ``s`` straggle and up to ``a`` of the others send *wrong* messages. Each worker sends a vector
of ``1/m`` the gradient's length (communication cost ``1/m``).

**Optimal cost** (Jahani-Nezhad & Maddah-Ali 2021, Theorem 1): for linear encoding the smallest communication
cost is ``1 / (r - s - 2a)``, fixed by the least replicated partition alone: ``m <= r - s - 2a``
(:func:`adversarial_comm_cost`).

**Universal polynomial construction** (after Jahani-Nezhad & Maddah-Ali 2021, §IV; the algebra below is ours). Let
``K = n - s - 2a`` and distinct nodes ``α_1..α_n``. Partition ``j``'s block ``u`` (``0 <= u < m``) is carried by

.. math:: q_{j,u}(x) = P_j(x)\,h_{j,u}(x), \qquad P_j(x) = \prod_{i \notin W_j} (x - α_i),

with ``deg h_{j,u} = K - 1 - (n - r_j) = r_j - s - 2a - 1 >= m - 1`` and the top ``m`` coefficients of ``h_{j,u}``
chosen (forward substitution, ``P_j`` is monic) so that the coefficient of ``x^{K-1-v}`` in ``q_{j,u}`` is
``δ_{uv}``; the lower coefficients of ``h`` are 0. Worker ``i`` sends ``f(α_i)`` with
``f(x) = sum_{j,u} g_j^{(u)} q_{j,u}(x)``: ``B[i, j m + u] = q_{j,u}(α_i)``, zero unless worker ``i`` stores ``j``.
``f`` has degree ``<= K - 1`` and its top ``m`` coefficients are the blocks of ``sum_j g_j``.

**Decoding.** ``n - s >= K + 2a`` evaluations of a polynomial of degree ``< K`` form a Reed–Solomon codeword of
minimum distance ``2a + 1``: from any ``K`` correct ones the master interpolates ``f`` (the ``"interpolation"``
decoder: the top ``m`` coefficients of the Lagrange interpolant on the first ``K`` responders, so the code is an
exact :class:`~gradcodes.GradientCode` for ``s + 2a`` stragglers), and with up to ``a`` wrong messages
:func:`decode_adversarial` finds the smallest set ``T`` of responders whose removal leaves messages consistent with
one polynomial of degree ``< K``. *Proof of correctness:* if at most ``a`` messages are wrong and
``|T| + a <= |R| - K``, the consistent polynomial agrees with ``f`` on at least ``|R| - |T| - a >= K`` points, so it
is ``f``; and every wrong message is then in ``T``, so the smallest consistent ``T`` is exactly the set of wrong
workers. With the ``|R| = n - s = K + 2a`` responders the code is built for, every ``|T| <= a`` qualifies; with
fewer, the search stops at ``|T| <= |R| - K - a`` (and needs ``|R| >= K + a`` to detect anything: below that,
``a`` wrong messages can agree with one wrong polynomial). When no such ``T`` is consistent, more wrong messages
than the responders can correct arrived: detected, not corrected.

**Nodes.** ``nodes="chebyshev"``: the Chebyshev points ``cos(π (2i + 1) / (2n))`` rounded to multiples of
``2^-24`` (dyadic rationals, computed from correctly rounded cosines) with the top monomial coefficients above; the
construction runs in exact rational arithmetic and the float code is its correctly rounded image, so ``B`` is the
same on every machine. Its float decode loses about a digit per few workers (the weights are divided differences).
The default ``nodes="unity"`` is the same construction in its real Fourier form (the top Fourier coefficients of
the Cayley image as the functionals, nodes ``tan(θ_i/2)`` of golden-stride roots of unity; see
``gradcodes._families.adversarial_fourier``), exact and deterministic the same way and accurate to rounding
level at ``n = 100`` (``benchmarks/numerics/adversarial_numerics.py``). ``nodes="spread"`` assigns the workers' angles
for the given placement (a deterministic local search), for arbitrary placements whose holders the stride leaves
bunched on the circle.
"""

from __future__ import annotations

from collections.abc import Iterable
from fractions import Fraction
from typing import Any

import numpy as np

from .._base.aliases import MatrixLike
from .._base.errors import GradcodesTypeError, GradcodesValueError
from .._base.registry import Scheme, register
from .._base.validate import check_entries, check_int, check_size
from .._core.code import GradientCode, LinearCode
from .._core.decoders import Decoder
from .._core.fields import RationalField
from .._io.files import REBUILDERS
from . import adversarial_fourier as _fourier

__all__ = ["adversarial_gc", "AdversarialCode", "adversarial_comm_cost", "InterpolationDecoder"]

_NODE_BITS = 24


# ----------------------------------------------------------------------------------------------- placement, bound
def _placement(placement: Any, k: int | None = None) -> np.ndarray:
    """A boolean (n, k) support matrix from a 0/1 numpy array or (any other sequence) per-worker partition lists."""
    if isinstance(placement, np.ndarray):
        S = np.asarray(placement)
        if S.dtype.kind not in "biu" or not np.isin(S, (0, 1)).all():
            raise GradcodesValueError("placement matrix must contain only 0 and 1 (worker i stores partition j)")
        S = S.astype(bool)
    elif isinstance(placement, (list, tuple)) and placement:
        lists = []
        for i, parts in enumerate(placement):
            if not isinstance(parts, (list, tuple, np.ndarray, set, frozenset)):
                raise GradcodesTypeError(f"placement[{i}] must be a list of partition indices, got {parts!r}")
            row = []
            for j in parts:
                if isinstance(j, bool) or not isinstance(j, (int, np.integer)) or j < 0:
                    raise GradcodesValueError(f"placement[{i}] must hold partition indices >= 0, got {j!r}")
                row.append(int(j))
            lists.append(row)
        kk = max((max(r) for r in lists if r), default=-1) + 1 if k is None else check_int("k", k, 1)
        check_entries(len(lists), kk, what="the placement matrix")
        S = np.zeros((len(lists), kk), dtype=bool)
        for i, row in enumerate(lists):
            if any(j >= kk for j in row):
                raise GradcodesValueError(f"placement[{i}] names a partition >= k = {kk}")
            S[i, row] = True
    else:
        raise GradcodesTypeError(f"placement must be an (n, k) 0/1 matrix or per-worker lists of partitions, got "
                                 f"{placement!r}")
    if S.shape[0] < 2 or S.shape[1] < 1:
        raise GradcodesValueError(f"placement needs n >= 2 workers and k >= 1 partitions, got shape {S.shape}")
    if not S.any(axis=0).all():
        raise GradcodesValueError(f"partition {int(np.flatnonzero(~S.any(axis=0))[0])} is stored by no worker")
    return S


def adversarial_comm_cost(placement: Any, s: int, a: int) -> Fraction:
    """Optimal communication cost ``1 / (r - s - 2a)`` of linear gradient coding for a placement (exact).

    Jahani-Nezhad & Maddah-Ali (2021, Theorem 1): with ``r`` the smallest number of workers storing a partition,
    ``s`` stragglers and ``a`` adversarial workers, each worker must send at least ``1/(r - s - 2a)`` of a
    gradient, and the polynomial construction (:func:`adversarial_gc`) meets it. Needs ``r >= s + 2a + 1``.

    Parameters
    ----------
    placement : (n, k) 0/1 array_like or sequence of sequences of int
        ``placement[i]``: the partitions worker ``i`` stores (a 0/1 matrix, or per-worker lists of indices).
    s : int
        Stragglers tolerated, ``0 <= s <= n - 1``.
    a : int
        Adversarial workers tolerated, ``0 <= a <= n - 1``.

    Returns
    -------
    fractions.Fraction
        ``1 / (r - s - 2a)``, the fraction of a gradient each worker sends.

    Raises
    ------
    GradcodesValueError
        If the placement is malformed or ``r < s + 2a + 1`` (no exact recovery).

    Examples
    --------
    >>> import gradcodes as gc
    >>> placement = [[0, 1, 2], [0, 1, 3], [0, 2, 3], [1, 2, 3], [0, 1, 2, 3], [0, 1, 2, 3]]
    >>> gc.adversarial_comm_cost(placement, s=1, a=1)          # r = 5
    Fraction(1, 2)
    """
    S = _placement(placement)
    n = S.shape[0]
    s = check_int("s", s, 0, n - 1)
    a = check_int("a", a, 0, n - 1)
    r = int(S.sum(axis=0).min())
    if r - s - 2 * a < 1:
        raise GradcodesValueError(f"the least replicated partition is on r = {r} workers; exact recovery with s = {s} "
                                  f"stragglers and a = {a} adversaries needs r >= s + 2a + 1 = {s + 2 * a + 1}")
    return Fraction(1, r - s - 2 * a)


# ----------------------------------------------------------------------------------------------- construction
def _default_nodes(n: int) -> list[Fraction]:
    from .._core.detlinalg import cos_pi

    c = cos_pi(2 * np.arange(n) + 1, 2 * n)
    scale = float(1 << _NODE_BITS)
    nums = [int(v) for v in np.round(c * scale)]
    return [Fraction(v, 1 << _NODE_BITS) for v in nums]


def _poly_from_roots(roots: list[Fraction]) -> list[Fraction]:
    """Coefficients (highest first) of the monic ``prod (x - root)``."""
    c = [Fraction(1)]
    for z in roots:
        c = [*c, Fraction(0)]
        for t in range(len(c) - 1, 0, -1):
            c[t] -= z * c[t - 1]
    return c


def _horner(c: list[Fraction], x: Fraction) -> Fraction:
    v = Fraction(0)
    for t in c:
        v = v * x + t
    return v


class AdversarialCode(GradientCode):
    """A code of :func:`adversarial_gc`: ``GradientCode`` for ``s + 2a`` erasures, correcting ``a`` wrong messages.

    Attributes
    ----------
    stragglers, adversaries : int
        The design's ``s`` and ``a`` (the code's ``s`` is ``stragglers + 2 * adversaries``).
    nodes : tuple of Fraction
        The evaluation points ``α_i``.
    K : int
        ``n - s - 2a``: the polynomial has degree ``< K``.
    placement : numpy.ndarray
        (n, k) bool, the given placement.
    functionals : {"fourier", "monomial"}
        The decoded functionals: top Fourier coefficients of the Cayley image (nodes ``"unity"`` and
        ``"spread"``) or the top monomial coefficients (``"chebyshev"`` and given nodes).
    scale_exponents : tuple of int
        Worker ``i`` sends ``2^{-e_i} f(x_i)`` (all 0 for monomial functionals).
    node_kind : {"unity", "spread", "chebyshev", "given"}

    Examples
    --------
    >>> import gradcodes as gc
    >>> code = gc.adversarial_gc([[0, 1, 2], [0, 1, 3], [0, 2, 3], [1, 2, 3], [0, 1, 2, 3]], s=1, a=1)
    >>> isinstance(code, gc.AdversarialCode), code.n, code.k
    (True, 5, 4)
    """

    def __init__(self, B: MatrixLike, s: int, *, stragglers: int, adversaries: int,
                 nodes: Iterable[Fraction | int | float], K: int, placement: Any, functionals: str = "monomial",
                 scale_exponents: Iterable[int] | None = None, rho: tuple[Fraction, Fraction] = (Fraction(1),
                                                                                                 Fraction(0)),
                 node_kind: str = "given", **kwargs: Any) -> None:
        super().__init__(B, s, **kwargs)
        self.stragglers = int(stragglers)
        self.adversaries = int(adversaries)
        self.nodes = tuple(nodes)
        self.K = int(K)
        self.placement = np.asarray(placement, dtype=bool)
        self.functionals = functionals
        self.scale_exponents = tuple(int(v) for v in scale_exponents) if scale_exponents is not None else \
            (0,) * len(self.nodes)
        self.rho = rho
        self.node_kind = node_kind


def adversarial_gc(placement: Any, s: int, a: int, *, m: int | None = None, k: int | None = None,
                   nodes: Iterable[Fraction | int | float] | str | None = None,
                   field: str = "real", angles: Iterable[int] | None = None) -> AdversarialCode:
    r"""The universal polynomial gradient code for a given placement, ``s`` stragglers and ``a`` adversaries.

    Parameters
    ----------
    placement : (n, k) 0/1 numpy array, or a list of lists
        Which partitions each worker stores: a numpy array is the 0/1 support matrix (row ``i``: worker ``i``),
        a list holds each worker's partition indices. Any placement; every
        partition must be stored by ``r_j >= s + 2a + m`` workers.
    s : int
        Stragglers, ``0 <= s``.
    a : int
        Adversarial workers (wrong messages), ``0 <= a``.
    m : int, optional
        Communication factor (each message is ``1/m`` of a gradient), ``1 <= m <= r - s - 2a``; default the optimum
        ``r - s - 2a``.
    k : int, optional
        Number of partitions when ``placement`` is given as lists (default: largest index + 1).
    nodes : {"unity", "spread", "chebyshev"} or sequence of n distinct rationals, optional
        ``"unity"`` (default, ``None``): dyadic Cayley images ``tan(θ_i/2)`` of stride-permuted roots of unity
        with the top *Fourier* coefficients as the decoded functionals (the well-conditioned real form, see
        docs/adversarial.md, "Numerics"); ``"spread"``: the same form with the workers' angles
        assigned for this placement, so that every partition's holders are spread around the circle (a
        deterministic local search: seconds at
        ``n = 100``; for arbitrary placements, where the stride leaves some holders bunched); ``"chebyshev"``:
        dyadic Chebyshev points with the paper's top monomial coefficients (ill-conditioned from ``n ≈ 20``, kept
        for comparison); or your own evaluation points (ints, Fractions or floats, taken exactly; top monomial
        coefficients).
    field : {"real", "rational"}
        Floats (the correctly rounded image of the exact construction) or Fractions.
    angles : sequence of int, optional
        With ``nodes="spread"`` only: the workers' angle assignment, a permutation of ``0..n-1``, instead of the
        local search (the code records the one it used in ``code.params["angles"]``, so that a saved code is
        rebuilt without searching).

    Returns
    -------
    AdversarialCode
        A :class:`~gradcodes.GradientCode` with ``s = s + 2a`` (any ``K = n - s - 2a`` responders decode), decoder
        ``"interpolation"``; decode with wrong messages through :func:`decode_adversarial`.

    Raises
    ------
    GradcodesValueError
        If a parameter is out of its range (the message names the parameter and the range), the placement stores some
        partition on fewer than ``s + 2a + m`` workers, or ``nodes`` are not ``n`` distinct rationals.
    GradcodesTypeError
        If the placement or ``nodes`` have the wrong type.

    Examples
    --------
    Six workers, four partitions, the least replicated partition on ``r = 5`` workers; one straggler and one
    adversary leave ``m = r - s - 2a = 2``, the optimal cost ``1/2``:

    >>> import gradcodes as gc
    >>> placement = [[0, 1, 2], [0, 1, 3], [0, 2, 3], [1, 2, 3], [0, 1, 2, 3], [0, 1, 2, 3]]
    >>> code = gc.adversarial_gc(placement, s=1, a=1, nodes=range(6), field="rational")
    >>> code.m, code.K, code.s, code.loads.tolist()
    (2, 3, 3, [3, 3, 3, 3, 4, 4])
    >>> bool((code.decoding_matrix([0, 2, 5]) @ code.B == code.target).all())
    True
    """
    S = _placement(placement, k)
    n, kk = S.shape
    s = check_int("s", s, 0, n - 1)
    a = check_int("a", a, 0, n - 1)
    r_j = S.sum(axis=0)
    r = int(r_j.min())
    m_max = r - s - 2 * a
    if m_max < 1:
        raise GradcodesValueError(f"the least replicated partition is on r = {r} workers; s = {s} stragglers and "
                                  f"a = {a} adversaries need r >= s + 2a + 1 = {s + 2 * a + 1}")
    m = m_max if m is None else check_int("m", m, 1)
    if m > m_max:
        raise GradcodesValueError(f"m must be an integer in [1, r - s - 2a] = [1, {m_max}] (the optimal communication "
                                  f"cost 1/(r - s - 2a) with r = {r}), got {m}")
    if field not in ("real", "rational"):
        raise GradcodesValueError(f"field must be 'real' or 'rational', got {field!r}")
    check_size("the exact construction work n^2 k m", n * n * kk * m, "work")
    check_size(f"the entries of the encoding matrix ({n:,} x {kk * m:,})", n * kk * m,
               "exact_entries" if field == "rational" else "entries")
    K = n - s - 2 * a
    if nodes is None:
        nodes = "unity"
    node_param: Any
    if angles is not None and not (isinstance(nodes, str) and nodes == "spread"):
        raise GradcodesValueError(f"angles= is for nodes='spread' only, got nodes={nodes!r}")
    ang: np.ndarray | None = None
    if isinstance(nodes, str):
        if nodes not in ("unity", "spread", "chebyshev"):
            raise GradcodesValueError(f"nodes must be 'unity', 'spread', 'chebyshev' or a sequence of n rationals, "
                                      f"got {nodes!r}")
        if nodes == "spread":
            ang = _fourier.spread_angles(S.astype(bool)) if angles is None else _spread_angles_given(angles, n)
        alpha = list(_fourier.unity_nodes(n, ang)) if nodes != "chebyshev" else _default_nodes(n)
        node_param = nodes
    else:
        vals = list(nodes)
        if len(vals) != n:
            raise GradcodesValueError(f"nodes must have n = {n} entries, got {len(vals)}")
        try:
            alpha = [Fraction(v) for v in vals]
        except (TypeError, ValueError):
            raise GradcodesTypeError("nodes must be rational numbers (ints, Fractions or finite floats)") from None
        node_param = [str(v) for v in alpha]
    if len(set(alpha)) != n:
        raise GradcodesValueError("nodes must be distinct" + (" (default nodes: n too large)" if nodes is None else ""))
    params: dict[str, Any] = {"placement": S.astype(int).tolist(), "stragglers": s, "adversaries": a, "m": m,
                              "nodes": node_param, "field": field}
    if ang is not None:
        params["angles"] = [int(v) for v in ang]
    if node_param in ("unity", "spread"):
        exps = _fourier.scale_exponents(alpha, K)
        rows, rho = _fourier.construct(_fourier.thin_placement(S, s + 2 * a + m, ang), m, K, tuple(alpha), exps)
        Bu: Any = RationalField().zeros((n, kk * m))
        for i_, row in enumerate(rows):
            Bu[i_, :] = row
        Bfu = Bu if field == "rational" else np.array([[float(v) for v in row] for row in rows], dtype=np.float64)
        return AdversarialCode(Bfu, s + 2 * a, m=m, stragglers=s, adversaries=a, nodes=alpha, K=K, placement=S,
                               functionals="fourier", scale_exponents=exps, rho=rho, node_kind=node_param,
                               field=field, name=f"adversarial_gc[s={s},a={a},m={m}]", family="adversarial_gc",
                               params=params, decoders=[InterpolationDecoder()], default_decoder="interpolation")
    B = RationalField().zeros((n, kk * m))
    for j in range(kk):
        Wj = np.flatnonzero(S[:, j])
        P = _poly_from_roots([alpha[i] for i in range(n) if not S[i, j]])       # monic, degree n - r_j
        D = K - 1 - (n - int(r_j[j]))                                          # degree of h_{j,u}
        for u in range(m):
            h_top = [Fraction(0)] * m                                          # h_top[w]: coefficient of x^{D-w}
            for v in range(m):
                acc = Fraction(int(u == v))
                for t in range(1, min(v, len(P) - 1) + 1):
                    acc -= P[t] * h_top[v - t]
                h_top[v] = acc
            h = h_top + [Fraction(0)] * (D + 1 - m)                            # highest first, degree D
            for i in Wj:
                B[i, j * m + u] = _horner(P, alpha[i]) * _horner(h, alpha[i])
    Bf = B if field == "rational" else np.array([[float(v) for v in row] for row in B], dtype=np.float64)
    return AdversarialCode(Bf, s + 2 * a, m=m, stragglers=s, adversaries=a, nodes=alpha, K=K, placement=S,
                           node_kind="chebyshev" if node_param == "chebyshev" else "given", field=field,
                           name=f"adversarial_gc[s={s},a={a},m={m}]", family="adversarial_gc",
                           params=params, decoders=[InterpolationDecoder()], default_decoder="interpolation")


def _spread_angles_given(angles: Iterable[int], n: int) -> np.ndarray:
    """Given angles for ``nodes="spread"``: a permutation of ``0..n-1`` (int64)."""
    vals = list(angles)
    if len(vals) != n or not all(isinstance(v, (int, np.integer)) and not isinstance(v, bool) for v in vals) \
            or sorted(int(v) for v in vals) != list(range(n)):
        raise GradcodesValueError(f"angles must be a permutation of 0..{n - 1} (one angle per worker), got "
                                  f"{len(vals)} values")
    return np.array([int(v) for v in vals], dtype=np.int64)


# ----------------------------------------------------------------------------------------------- decoding
def _weights(alpha: list[Any], m: int) -> list[list[Any]]:
    """``w[u][i]``: coefficient of ``x^{K-1-u}`` of the Lagrange basis polynomial ``L_i`` of the points ``alpha``
    (``K = len(alpha)``): ``(-1)^u e_u(alpha without i) / prod_{l != i} (alpha_i - alpha_l)``, any number type."""
    K = len(alpha)
    out = [[alpha[0] * 0 for _ in range(K)] for _ in range(m)]
    for i in range(K):
        den = alpha[0] * 0 + 1
        e = [den] + [alpha[0] * 0] * m                 # elementary symmetric sums of the other points, up to m
        for l_ in range(K):
            if l_ == i:
                continue
            den = den * (alpha[i] - alpha[l_])
            for u in range(m, 0, -1):
                e[u] = e[u] + alpha[l_] * e[u - 1]
        for u in range(m):
            out[u][i] = (-1) ** u * e[u] / den
    return out


def _code_weights(code: AdversarialCode, Q: list[int]) -> list[list[Any]]:
    """Exact decoding weights (m x K) of ``code`` on the responders ``Q`` (rational codes)."""
    if code.functionals == "fourier":
        return _fourier.weights_exact([Fraction(code.nodes[i]) for i in Q], [code.scale_exponents[i] for i in Q],
                                      code.m, code.rho)
    return _weights([Fraction(code.nodes[i]) for i in Q], code.m)


def _float_weights(code: AdversarialCode, idx: np.ndarray) -> np.ndarray:
    """Float decoding weights (b, m, K) on the responder index sets ``idx`` (b, K)."""
    nodes = np.array([float(v) for v in code.nodes])
    al = nodes[idx]
    if code.functionals == "fourier":
        return _fourier.weights_float(al, np.asarray(code.scale_exponents, dtype=np.int64)[idx], code.m, code.rho)
    W = _weights([al[:, c] for c in range(idx.shape[1])], code.m)          # elementwise over the batch
    return np.stack([np.stack(W[u], axis=1) for u in range(code.m)], axis=1)


class InterpolationDecoder(Decoder):
    """The decoded functionals of the interpolant on the first ``K`` responders (in index order).

    Default (``"unity"``) codes: real and imaginary parts of the top Fourier coefficients, weights ``2^{e_i}
    prod_l λ_l/(x_i - x_l)`` times short elementary symmetric sums of circle points; ``"chebyshev"`` and given
    nodes: the top ``m`` monomial coefficients. Rational codes: exact Fractions. Float codes: the same formulas in
    floats over the batch (differences of the dyadic nodes are exact). Fewer than ``K`` responders: zero rows.

    Examples
    --------
    >>> import gradcodes as gc
    >>> placement = [[0, 1, 2], [0, 1, 3], [0, 2, 3], [1, 2, 3], [0, 1, 2, 3], [0, 1, 2, 3]]
    >>> code = gc.adversarial_gc(placement, s=1, a=1, nodes=range(6), field="rational")
    >>> code.default_decoder, isinstance(code.decoders["interpolation"], gc.InterpolationDecoder)
    ('interpolation', True)
    """

    name = "interpolation"
    description = "Lagrange interpolation on the first K responders (Jahani-Nezhad & Maddah-Ali)"

    def matrices(self, code: LinearCode, mask: np.ndarray) -> Any:
        """Decoding matrices (b, m, n) for the responder masks ``mask`` (b, n): the first ``K`` responders of each.

        Parameters
        ----------
        code : AdversarialCode
            A code of :func:`~gradcodes.adversarial_gc` (its nodes, ``K`` and ``m``).
        mask : ndarray of bool, shape (b, n)
            Each row: the responders of one set.

        Returns
        -------
        ndarray, shape (b, m, n)
            The interpolation weights of the first ``K`` responders of each set, zero elsewhere (all zero when a
            set has fewer than ``K`` responders); exact Fractions for a rational code.

        Raises
        ------
        GradcodesTypeError
            If ``code`` is not a code of :func:`~gradcodes.adversarial_gc`.

        Examples
        --------
        >>> import numpy as np, gradcodes as gc
        >>> placement = [[0, 1, 2], [0, 1, 3], [0, 2, 3], [1, 2, 3], [0, 1, 2, 3], [0, 1, 2, 3]]
        >>> code = gc.adversarial_gc(placement, s=1, a=1, nodes=range(6), field="rational")
        >>> mask = np.array([[1, 0, 1, 0, 0, 1], [1, 1, 0, 0, 0, 0]], dtype=bool)   # K = 3 and 2 responders
        >>> A = gc.InterpolationDecoder().matrices(code, mask)
        >>> A.shape, bool((A[0] @ code.B == code.target).all()), bool((A[1] == 0).all())
        ((2, 2, 6), True, True)
        """
        if not isinstance(code, AdversarialCode):
            raise GradcodesTypeError(f"the interpolation decoder needs an adversarial_gc code, got "
                                     f"{type(code).__name__}")
        b, n = mask.shape
        K, m = code.K, code.m
        if code.exact:
            out = RationalField().zeros((b, m, n))
            for t in range(b):
                Q = np.flatnonzero(mask[t])[:K]
                if Q.size < K:
                    continue
                w = _code_weights(code, [int(i) for i in Q])
                for u in range(m):
                    for c, i in enumerate(Q):
                        out[t, u, i] = w[u][c]
            return out
        out = np.zeros((b, m, n))
        ok = mask.sum(axis=1) >= K
        if not ok.any():
            return out
        idx = np.argsort(~mask[ok], axis=1, kind="stable")[:, :K]              # first K responders, in order
        W = _float_weights(code, idx)                                          # (b', m, K)
        rows = np.flatnonzero(ok)
        for u in range(m):
            out[rows[:, None], u, idx] = W[:, u, :]
        return out


# ----------------------------------------------------------------------------------------------- registration
def _rebuild(placement: Any, stragglers: int, adversaries: int, m: int, nodes: Any = None, field: str = "real",
             angles: Any = None, **_: Any) -> AdversarialCode:
    # files written before the "unity" default stored nodes=None for the (then default) Chebyshev nodes
    kind = "chebyshev" if nodes is None else nodes if isinstance(nodes, str) else [Fraction(v) for v in nodes]
    if kind == "spread" and angles is None:                 # a rebuild never searches (gradcodes.load_code)
        raise GradcodesValueError("a nodes='spread' record must give its angles")
    return adversarial_gc(np.asarray(placement, dtype=np.int64), stragglers, adversaries, m=m, nodes=kind,
                          field=field, angles=angles)


def _cyclic_placement(n: int, load: int) -> np.ndarray:
    """Worker i stores partitions i, i+1, ..., i+load-1 (mod n): replication ``load``."""
    S = np.zeros((n, n), dtype=np.int64)
    for i in range(n):
        S[i, (i + np.arange(load)) % n] = 1
    return S


REBUILDERS.update(adversarial_gc=_rebuild)
register(Scheme("adversarial_gc",
                lambda n=8, s=1, a=1, m=1: adversarial_gc(_cyclic_placement(n, s + 2 * a + m), s, a, m=m),
                "Jahani-Nezhad & Maddah-Ali universal polynomial code (placement, s stragglers, a adversaries)",
                tour=({"n": 8, "s": 1, "a": 1, "m": 1}, {"n": 12, "s": 2, "a": 1, "m": 2})))
