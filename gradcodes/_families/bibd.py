r"""Approximate gradient codes from balanced incomplete block designs, for adversarial stragglers.

Kadhe, Koyluoglu & Ramchandran, "Gradient coding based on block designs for mitigating adversarial stragglers"
(IEEE ISIT 2019; arXiv:1904.13373). A ``(v, K, λ)`` BIBD is a family of ``b`` blocks (``K``-subsets of ``v``
points) in which every point lies in ``r`` blocks and every pair of points in exactly ``λ`` blocks; then
``b K = v r`` and ``λ (v - 1) = r (K - 1)`` (Stinson 2004, *Combinatorial Designs*, Chapter 1).

The code: the workers are the points (``n = v``), the partitions the blocks (``k = b``), worker ``i`` stores the
``r`` blocks through point ``i`` and ``B = N / K`` with the ``v x b`` incidence matrix ``N`` (every column sums to 1).
Since ``N N^T = (r - λ) I + λ J`` (Stinson 2004, Chapter 1), for responders ``F`` with ``f = |F|`` the vector
``1_F`` is an eigenvector of ``B_F B_F^T`` and the least-squares decoder is the scaled sum

.. math:: u_F = \frac{K r}{r - λ + λ f}\, 1_F, \qquad
          \|u_F B - 1_b\|_2^2 = b - \frac{f\, r^2}{r - λ + λ f}.

The error depends only on the number of stragglers ``s = n - f``: an adversary choosing which workers straggle
gains nothing over random stragglers (Kadhe et al. 2019). For ``f = n`` the error is 0.

Designs built here, deterministically (integer arithmetic only):

* ``"projective_plane"`` (``q`` prime): PG(2, q), points and lines the 1- and 2-dimensional subspaces of GF(q)^3,
  ``v = b = q^2 + q + 1``, ``K = r = q + 1``, ``λ = 1`` (a symmetric design, the case Kadhe et al. single out);
  ``q = 2`` is the Fano plane.
* ``"affine_plane"`` (``q`` prime): AG(2, q), the lines ``y = m x + c`` and ``x = c`` of Z_q^2, ``v = q^2``,
  ``b = q^2 + q``, ``K = q``, ``r = q + 1``, ``λ = 1``.
* any user design given as its list of blocks, checked to be a BIBD.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from fractions import Fraction
from typing import Any

import numpy as np

from .._base.aliases import MatrixLike, ProbabilitiesLike
from .._base.errors import GradcodesTypeError, GradcodesValueError
from .._base.registry import Scheme, register
from .._base.validate import check_choice, check_entries, check_int, check_size
from .._core.code import ApproximateCode, LinearCode
from .._core.decoders import Decoder
from .._core.fields import RationalField
from .._core.sparse import owned, use_sparse
from .._io.files import REBUILDERS
from .._verify.approx_adversaries import UpperBound, partition_holders, register_adversaries, register_upper_bound
from .._verify.approx_eval import FixedWeightDecoder, evaluate_approximate, probability_list, straggle_probabilities
from .._verify.approx_worst import worst_case_error

__all__ = ["BIBDCode", "BIBDDecoder", "bibd_code", "block_design", "stochastic_bibd"]

DESIGNS = ("projective_plane", "affine_plane")


def _is_prime(q: int) -> bool:
    return q >= 2 and all(q % d for d in range(2, math.isqrt(q) + 1))


def _check_q(q: Any) -> int:
    q = check_int("q", q, 2)
    if not _is_prime(q):
        raise GradcodesValueError(f"q must be a prime (the planes are built over Z_q), got q={q}")
    return q


def _normalized(q: int) -> list[tuple[int, int, int]]:
    """Representatives of the 1-dimensional subspaces of GF(q)^3 (first non-zero coordinate 1), in lex order."""
    out = [(0, 0, 1)]
    out += [(0, 1, a) for a in range(q)]
    out += [(1, a, c) for a in range(q) for c in range(q)]
    return sorted(out)


def _projective_plane(q: int) -> list[list[int]]:
    pts = _normalized(q)
    return [[i for i, p in enumerate(pts) if (p[0] * ln[0] + p[1] * ln[1] + p[2] * ln[2]) % q == 0]
            for ln in pts]


def _affine_plane(q: int) -> list[list[int]]:
    lines = [sorted(x * q + (m * x + c) % q for x in range(q)) for m in range(q) for c in range(q)]
    lines += [[c * q + y for y in range(q)] for c in range(q)]
    return lines


def block_design(design: str, q: int) -> list[list[int]]:
    """The blocks of a named design (sorted point lists), as :func:`bibd_code` builds it.

    Parameters
    ----------
    design : {"projective_plane", "affine_plane"}
        PG(2, q) or AG(2, q).
    q : int
        The order, a prime.

    Returns
    -------
    list of list of int

    Examples
    --------
    >>> block_design("projective_plane", 2)          # the Fano plane
    [[1, 3, 5], [0, 3, 4], [2, 3, 6], [0, 1, 2], [1, 4, 6], [0, 5, 6], [2, 4, 5]]
    """
    design = check_choice("design", design, DESIGNS)
    q = _check_q(q)
    check_size("the incidence checks of the plane (q^2 + q + 1)^2", (q * q + q + 1) ** 2, "work")
    return _projective_plane(q) if design == "projective_plane" else _affine_plane(q)


def _parameters(blocks: list[list[int]]) -> tuple[int, int, int, int, int]:
    """``(v, b, r, K, λ)`` of a validated BIBD, or GradcodesValueError naming the violation."""
    if not blocks:
        raise GradcodesValueError("design must have at least one block")
    b = len(blocks)
    v = 1 + max((max(B) for B in blocks if B), default=-1)
    K = len(blocks[0])
    for j, B in enumerate(blocks):
        if len(B) != K:
            raise GradcodesValueError(f"design: every block must have the same size; block 0 has {K} points, "
                                      f"block {j} has {len(B)}")
    if K < 2 or K >= v:
        raise GradcodesValueError(f"design: the block size K must satisfy 2 <= K < v (an incomplete design), got "
                                  f"K={K}, v={v}")
    check_size("the pair counts v^2 + b K^2 of the design check", v * v + b * K * K, "work")
    deg = np.zeros(v, dtype=np.int64)
    pairs = np.zeros((v, v), dtype=np.int64)
    for B in blocks:
        idx = np.asarray(B, dtype=np.int64)
        deg[idx] += 1
        pairs[np.ix_(idx, idx)] += 1
    if deg.min() != deg.max():
        i = int(np.argmin(deg))
        raise GradcodesValueError(f"design is not balanced: point {i} lies in {int(deg[i])} blocks, point "
                                  f"{int(np.argmax(deg))} in {int(deg.max())}")
    off = pairs[~np.eye(v, dtype=bool)]
    if off.min() != off.max() or off.min() == 0:
        a, c = np.argwhere((pairs != off.max()) & ~np.eye(v, dtype=bool))[0]
        raise GradcodesValueError(f"design is not a BIBD: the pair ({int(a)}, {int(c)}) lies in "
                                  f"{int(pairs[a, c])} blocks, other pairs in {int(off.max())} (every pair of "
                                  f"points must lie in the same number λ >= 1 of blocks)")
    return v, b, int(deg[0]), K, int(off[0])


def _blocks(design: Any) -> list[list[int]]:
    """A user design as sorted point lists, each point a non-negative int, no repeats within a block."""
    if isinstance(design, (str, bytes)) or not isinstance(design, (Sequence, np.ndarray)):
        raise GradcodesTypeError(f"design must be one of {DESIGNS} or a sequence of blocks (sequences of point "
                                 f"indices), got {type(design).__name__}")
    check_size("the number of blocks of design", len(design), "entries")
    out = []
    for j, blk in enumerate(design):
        try:
            pts = [int(x) for x in blk]
        except (TypeError, ValueError):
            raise GradcodesTypeError(f"design block {j} must be a sequence of point indices, got {blk!r}") from None
        if any(isinstance(x, (bool, np.bool_, float)) for x in blk):
            raise GradcodesTypeError(f"design block {j} must hold integer point indices, got {blk!r}")
        if min(pts, default=0) < 0 or len(set(pts)) != len(pts):
            raise GradcodesValueError(f"design block {j} must hold distinct points >= 0, got {blk!r}")
        check_size("a point index of design", max(pts, default=0), "entries")
        out.append(sorted(pts))
    return out


class BIBDDecoder(Decoder):
    r"""The optimal decoder of a BIBD code: ``u_F = K r / (r - λ + λ |F|) 1_F`` (least squares, closed form).

    Exact for rational codes; in floats one correctly rounded quotient of integers per pattern.

    Parameters
    ----------
    r : int
        Blocks through every point of the design: the number of partitions every worker stores.
    block_size : int
        ``K``, the points of every block: the number of workers that store a partition.
    lam : int
        ``λ``, the blocks through every pair of points.

    Examples
    --------
    >>> import gradcodes as gc
    >>> code = gc.bibd_code("projective_plane", 2)
    >>> code.decoders["optimal"].weight(7)            # every worker responds: K r / (r - λ + λ n) = 1
    Fraction(1, 1)
    >>> gc.BIBDDecoder(r=3, block_size=3, lam=1).weight(5)     # the Fano plane's parameters
    Fraction(9, 7)
    """

    name = "optimal"
    description = "closed form: u_F = K r / (r - λ + λ|F|) on the responders (least squares)"
    deterministic = True
    least_squares = True

    def __init__(self, r: int, block_size: int, lam: int) -> None:
        self.r, self.block_size, self.lam = int(r), int(block_size), int(lam)

    def weight(self, f: int) -> Fraction:
        """The weight ``K r / (r - λ + λ f)`` for ``f`` responders.

        Parameters
        ----------
        f : int
            Number of responders.

        Returns
        -------
        fractions.Fraction
            The weight of every responder's message.

        Examples
        --------
        >>> import gradcodes as gc
        >>> code = gc.bibd_code("projective_plane", 2)              # K = r = 3, λ = 1
        >>> code.decoders["optimal"].weight(5)
        Fraction(9, 7)
        """
        return Fraction(self.block_size * self.r, self.r - self.lam + self.lam * f)

    def matrices(self, code: LinearCode, mask: np.ndarray) -> Any:
        mask = np.asarray(mask, dtype=bool)
        b, n = mask.shape
        cnt = mask.sum(axis=1)
        if code.exact:
            out = RationalField().zeros((b, 1, n))
            for i in range(b):
                out[i, 0, mask[i]] = self.weight(int(cnt[i]))
            return out
        w = (self.block_size * self.r) / (self.r - self.lam + self.lam * cnt.astype(np.float64))
        return (mask * w[:, None])[:, None, :]


class BIBDCode(ApproximateCode):
    """A code built by :func:`bibd_code` (Kadhe et al. 2019).

    Attributes
    ----------
    blocks : list of list of int
        The design's blocks (partition ``j`` is block ``j``; its points are the workers storing it).
    v, b, r, block_size, lam : int
        The design's parameters ``(v, b, r, K, λ)``: ``n = v`` workers, ``k = b`` partitions, load ``r``,
        replication ``K``, pair count ``λ``.

    Examples
    --------
    >>> import gradcodes as gc
    >>> code = gc.bibd_code("projective_plane", 2)
    >>> isinstance(code, gc.BIBDCode), code.n, code.load
    (True, 7, 3)
    """

    def __init__(self, B: MatrixLike, *, blocks: list[list[int]], design: tuple[int, int, int, int, int],
                 **kwargs: Any) -> None:
        super().__init__(B, **kwargs)
        self.blocks: list[list[int]] = blocks
        self.v, self.b, self.r, self.block_size, self.lam = design

    def squared_error(self, s: int) -> Fraction:
        r"""``||u_F B - 1||_2^2 = b - f r^2 / (r - λ + λ f)`` for ``f = n - s`` responders, exactly (any such set).

        Parameters
        ----------
        s : int
            Number of stragglers, ``0 <= s < n``.

        Returns
        -------
        fractions.Fraction
            The optimal decoder's squared error, the same for every set.

        Examples
        --------
        >>> import gradcodes as gc
        >>> gc.bibd_code("projective_plane", 2).squared_error(2)            # the Fano plane
        Fraction(4, 7)
        """
        s = check_int("s", s, 0, self.n - 1)
        f = self.n - s
        return self.b - Fraction(f * self.r * self.r, self.r - self.lam + self.lam * f)

    def spectral_bound(self, s: int) -> float:
        """The optimal decoder's error with ``s`` stragglers, the same for every set: ``sqrt(squared_error(s))``.

        (The name is the one of the other families' bounds; here it is attained by every straggler set, and
        :func:`gradcodes.worst_case_error` reports it as the proven worst case.)

        Parameters
        ----------
        s : int
            Number of stragglers, ``0 <= s < n``.

        Returns
        -------
        float
            ``||u_F B - 1||_2`` of the optimal decoder for any set of ``n - s`` responders (0.0 for ``s = 0``).

        Raises
        ------
        GradcodesValueError
            If ``s`` is not in ``[0, n)``.

        Examples
        --------
        >>> import gradcodes as gc
        >>> code = gc.bibd_code("projective_plane", 2)                     # the Fano plane
        >>> round(code.spectral_bound(2), 6), code.squared_error(2)
        (0.755929, Fraction(4, 7))
        """
        e = self.squared_error(s)
        return math.sqrt(e.numerator / e.denominator) if e else 0.0


def _assemble(blocks: list[list[int]], v: int, K: int, exact: bool) -> Any:
    b = len(blocks)
    rows = [p for B in blocks for p in B]
    cols = [j for j, B in enumerate(blocks) for _ in B]
    if exact:
        Bm = RationalField().zeros((v, b))
        Bm[rows, cols] = Fraction(1, K)
        return Bm
    from scipy import sparse

    csr = sparse.csr_array((np.full(len(rows), 1.0 / K), (rows, cols)), shape=(v, b))
    return owned(csr) if use_sparse(v, b) else csr.toarray()       # stored sparse at scale, as the other families


def bibd_code(design: Any = "projective_plane", q: int | None = None, *, s: int | None = None,
              field: str = "real") -> BIBDCode:
    r"""Approximate gradient code of a balanced incomplete block design (Kadhe, Koyluoglu & Ramchandran 2019).

    Workers are the design's points, partitions its blocks: ``n = v``, ``k = b``, worker ``i`` stores the ``r``
    blocks through point ``i`` (load ``r``), every partition is on ``K`` workers, ``B = N / K`` with the incidence
    matrix ``N``. The default decoder ``"optimal"`` is the closed-form least-squares decoder
    ``u_F = K r / (r - λ + λ |F|) 1_F``, and its error ``||u_F B - 1||_2^2 = b - f r^2 / (r - λ + λ f)``
    (``f = |F|``) is the same for every set of ``s = n - f`` stragglers: adversarial stragglers do no worse than
    random ones (module docstring; ``code.squared_error(s)`` exactly, ``code.spectral_bound(s)`` its root).

    Parameters
    ----------
    design : {"projective_plane", "affine_plane"} or sequence of blocks
        A named design, built deterministically from ``q`` (:func:`block_design`), or the blocks of any BIBD
        (sequences of point indices ``0 .. v-1``), checked: equal block sizes ``2 <= K < v``, every point in
        the same number ``r`` of blocks, every pair of points in the same number ``λ >= 1`` of blocks.
    q : int, optional
        The order of a named plane, a prime ``>= 2``: PG(2, q) has ``n = q^2 + q + 1`` workers and load
        ``q + 1``; AG(2, q) has ``n = q^2`` workers, ``q^2 + q`` partitions and load ``q + 1``. Not allowed
        with a user design.
    s : int, optional
        The number of stragglers the code is meant for, ``0 <= s <= n - 1`` (informational: the default of
        :func:`gradcodes.worst_case_error`).
    field : {"real", "rational"}
        Floating point or exact Fractions (errors then exact).

    Returns
    -------
    BIBDCode
        An :class:`~gradcodes.ApproximateCode` with decoders ``"optimal"`` (default) and the generic ones, the
        attributes ``blocks``, ``v, b, r, block_size, lam`` and the methods ``squared_error(s)`` and
        ``spectral_bound(s)``.

    Raises
    ------
    ValueError
        Unknown design name, ``q`` missing or not a prime, ``q`` given with user blocks, blocks that do not form
        a BIBD (the message names the block, point or pair), ``s`` out of range, unknown ``field``.
    TypeError
        A design that is neither a name nor a sequence of blocks, non-integer points.

    Examples
    --------
    The Fano plane: 7 workers, 7 partitions, load 3.

    >>> import gradcodes as gc
    >>> code = gc.bibd_code("projective_plane", 2, field="rational")
    >>> code.n, code.k, code.load, (code.v, code.b, code.r, code.block_size, code.lam)
    (7, 7, 3, (7, 7, 3, 3, 1))
    >>> [str(x) for x in code.decoding_matrix([0, 1, 2, 3, 4])[0]]      # u = K r/(r - λ + λ f) = 9/7
    ['9/7', '9/7', '9/7', '9/7', '9/7', '0', '0']
    >>> code.squared_error(2)                                           # 7 - 5*9/7, for every pair
    Fraction(4, 7)
    >>> rep = gc.worst_case_error(code, 2)
    >>> rep.exhaustive, round(rep.worst_lower ** 2, 12), round(rep.average_error ** 2, 12)
    (True, 0.571428571429, 0.571428571429)
    """
    check_choice("field", field, ("real", "rational"))
    exact = field == "rational"
    params: dict[str, Any] = {"field": field}
    blocks, named, label = _design_blocks(design, q)
    params.update(named)
    name = "bibd" if label == "design" else f"bibd[{label}]"
    v, b, r, K, lam = _parameters(blocks)
    check_entries(v, b, exact=exact)
    if s is not None:
        params["s"] = s = check_int("s", s, 0, v - 1)
    B = _assemble(blocks, v, K, exact)
    return BIBDCode(B, blocks=blocks, design=(v, b, r, K, lam), s=s, field=field,
                    name=f"{name}(v={v}, b={b}, r={r}, K={K}, λ={lam})", family="bibd_code", params=params,
                    decoders=[BIBDDecoder(r, K, lam)], default_decoder="optimal")


def _design_blocks(design: Any, q: int | None) -> tuple[list[list[int]], dict[str, Any], str]:
    """Blocks, the params that name them, and a label, for a named design or user blocks."""
    if isinstance(design, str):
        design = check_choice("design", design, DESIGNS)
        if q is None:
            raise GradcodesValueError(f"q (the order of the plane, a prime) is required for design={design!r}")
        q = _check_q(q)
        label = f"{'PG' if design == 'projective_plane' else 'AG'}(2,{q})"
        return block_design(design, q), {"design": design, "q": q}, label
    if q is not None:
        raise GradcodesValueError("q applies to the named designs only; a user design is given by its blocks")
    blocks = _blocks(design)
    return blocks, {"design": blocks}, "design"


def stochastic_bibd(design: Any = "projective_plane", q: int | None = None, *,
                    p: ProbabilitiesLike) -> ApproximateCode:
    r"""Stochastic gradient coding on a block design (Bitar, Wootters & El Rouayheb 2020).

    Stochastic gradient coding (:func:`gradcodes.stochastic_gc`) with the assignment of a BIBD: workers are the
    points, partitions the blocks (as in :func:`bibd_code`), so partition ``j`` is on the ``d = K`` workers of
    block ``j``; worker ``i`` sends ``sum_{j ∋ i} g_j / ((1 - p_i) K)`` and the master sums the responders
    (decoder ``"sum"``), an unbiased estimate of ``g`` when worker ``i`` straggles independently with probability
    ``p_i``. Bitar et al. assign the data by pair-wise balanced designs: in a symmetric design (e.g. a projective
    plane) every two partitions are stored together by exactly ``λ`` workers, and for equal ``p`` the expected
    error is then

    .. math:: E\|\hat g - g\|^2 = \frac{p}{(1-p) K^2}\Big((K - λ) \sum_j \|g_j\|^2 + λ \|g\|^2\Big),

    which depends on the gradients only through ``sum_j ||g_j||^2`` and ``||g||^2``, not on how they correlate.

    Parameters
    ----------
    design : {"projective_plane", "affine_plane"} or sequence of blocks
        As in :func:`bibd_code`.
    q : int, optional
        The order of a named plane (a prime).
    p : float or array_like
        Straggle probability of each worker (or one for all), in (0, 1); ``Fraction`` entries give an exact code.

    Returns
    -------
    ApproximateCode
        With ``straggle_probabilities = p`` and the decoder ``"sum"`` (weight 1 on every responder).

    Examples
    --------
    >>> import gradcodes as gc
    >>> from fractions import Fraction as F
    >>> code = gc.stochastic_bibd("projective_plane", 2, p=F(1, 4))
    >>> code.B[0].tolist()                            # point 0 is on blocks 1, 3, 5: 1/((1 - 1/4) 3) = 4/9
    [Fraction(0, 1), Fraction(4, 9), Fraction(0, 1), Fraction(4, 9), Fraction(0, 1), Fraction(4, 9), Fraction(0, 1)]
    >>> gc.closed_form_error(code)                    # orthonormal g_j: p/((1-p) K^2) (K - λ + λ) b = 7/9
    Fraction(7, 9)
    >>> gc.closed_form_error(code, "aligned")         # g_j = g_0: p/((1-p) K^2) ((K - λ) b + λ b^2) = 7/3
    Fraction(7, 3)
    """
    blocks, params, label = _design_blocks(design, q)
    v, b, r, K, lam = _parameters(blocks)
    pp = straggle_probabilities(p, v)
    exact = pp.dtype == object
    check_entries(v, b, exact=exact)
    scale = 1 / ((1 - pp) * K)
    rows = np.array([pt for B in blocks for pt in B], dtype=np.int64)
    cols = np.array([j for j, B in enumerate(blocks) for _ in B], dtype=np.int64)
    if exact:
        Bm = RationalField().zeros((v, b))
        Bm[rows, cols] = scale[rows]
        w: Any = np.array([Fraction(1)] * v, dtype=object)
    else:
        from scipy import sparse

        csr = sparse.csr_array((scale[rows].astype(np.float64), (rows, cols)), shape=(v, b))
        Bm = owned(csr) if use_sparse(v, b) else csr.toarray()
        w = np.ones(v)
    return ApproximateCode(Bm, field="rational" if exact else "real", name=f"SGC[{label}](n={v}, degree={K})",
                           family="stochastic_bibd", params={**params, "p": probability_list(pp)},
                           decoders=[FixedWeightDecoder("sum", w)], default_decoder="sum", straggle_probabilities=pp)


def _rebuild(design: Any, field: str = "real", q: int | None = None, s: int | None = None, **_: Any) -> BIBDCode:
    return bibd_code(design, q, s=s, field=field)


def _build(q: int = 3, design: str = "projective_plane", s: int = 2) -> BIBDCode:
    return bibd_code(design, q, s=s)


def _rebuild_sgc(design: Any, p: Any, q: int | None = None, **_: Any) -> ApproximateCode:
    return stochastic_bibd(design, q, p=p)


def _bibd_upper(code: Any, s: int, dec: Any) -> UpperBound | None:
    """Kadhe et al. (2019): the least-squares error is the same for every set of ``s`` stragglers (attained)."""
    if dec.name not in ("optimal", "lstsq"):
        return None
    return UpperBound(code.spectral_bound(s), "theorem: Kadhe et al. 2019 closed form: b - f r^2/(r - λ + λ f), "
                      "the same for every straggler set (a BIBD, least-squares decoding)", attained=True)


REBUILDERS.update(bibd_code=_rebuild, stochastic_bibd=_rebuild_sgc)
register_adversaries("bibd_code", partition_holders)
register_upper_bound("bibd_code", _bibd_upper)
register(Scheme(
    "bibd_code", _build,
    "Kadhe et al. BIBD code: workers = points, partitions = blocks of PG(2,q) / AG(2,q); the same error for "
    "every straggler set (adversarial = random), closed-form optimal decoder",
    tour=({"q": 2, "s": 2}, {"q": 5, "s": 6}, {"q": 7, "design": "affine_plane", "s": 10}),
    evaluate=lambda code: worst_case_error(code, samples=200, search_steps=3, neighbours=32, rng=0),
    kind="adversarial"))
register(Scheme(
    "sgc_bibd", lambda q=3, design="projective_plane", p=0.1: stochastic_bibd(design, q, p=p),
    "Bitar et al. stochastic gradient coding on a block design (workers = points of PG(2,q) / AG(2,q)); unbiased, "
    "load q+1",
    tour=({"q": 3, "p": 0.1}, {"q": 7, "design": "affine_plane", "p": 0.2}),
    evaluate=evaluate_approximate, kind="approximate"))
