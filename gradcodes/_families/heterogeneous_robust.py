r"""Heterogeneity-aware exact codes robust to misestimated speeds: a worst-case guarantee, computed exactly.

Wang, Guo, Tang, Li & Li ("Heterogeneity-aware gradient coding for straggler tolerance", IEEE ICDCS 2019) give
every worker a load proportional to its *estimated* speed (:func:`gradcodes.heterogeneous_exact`) and propose a
variant for when the estimates are not accurate. The variant's text was not available to us (only the paper's
abstract); this module is gradcodes' own robust variant within the paper's model, built from the same codes.

**Model.** Worker ``i`` has the estimated speed ``c_i``; its true speed may be lower. Up to ``e`` workers
(``misestimated``) are slower than estimated by a factor of at most ``rho >= 1`` (``slowdown``), the others run
at their estimate, and up to ``s`` workers straggle (never answer), any of them. A code tolerating ``s + e'``
stragglers with loads ``L_i`` is decoded from the first ``n - s - e'`` messages, so its worst-case computation time
(no random delay, no communication) is

.. math:: W(L, e') = \max_{|S| \le s,\ |E| \le e}\ \big(n - s - e'\big)\text{-th smallest of }
          \Big\{ \infty\ (i \in S),\ \rho L_i / c_i\ (i \in E),\ L_i / c_i\ (\text{else}) \Big\}.

The non-robust code (``e' = 0``, loads for ``s`` stragglers) waits for a slowed worker whenever the adversary
keeps one among the ``n - s`` it needs: ``W`` is about ``rho T*(s)``. Extra redundancy ``e'`` lets the master skip
``e'`` slowed workers at the price of the loads for ``s + e'`` stragglers (about ``T*(s+e') ~ (s+e'+1)/(s+1) T*(s)``).

**Construction.** For every ``e' = 0, ..., min(e, n - 1 - s)`` take :func:`gradcodes.heterogeneous_exact` with
``s + e'`` stragglers (optimal loads for the estimates, the paper's placement, exact Fourier-form coefficients),
compute ``W`` exactly (below) and keep the smallest (ties to the smaller ``e'``). Everything is a Fraction: the
choice never compares rounding noise, and the code is the same on every machine.

**Computing W exactly.** ``W >= v`` if and only if the adversary can make at least ``s + e' + 1`` workers finish at
``v`` or later. With ``A`` workers already at ``t_i >= v``, ``Bv`` workers with ``t_i < v <= rho t_i`` (a slowdown or a
straggle reaches ``v``) and ``C`` workers with ``rho t_i < v`` (only a straggle does), the most it can reach is
``A + min(Bv, e) + min(s, C + max(Bv - e, 0))`` (slowdowns on the middle group first, stragglers on the rest). The
order statistic is one of the values ``t_i`` or ``rho t_i``, so ``W`` is the largest such value that passes:
``O(n^2)`` exact comparisons (tests/test_heterogeneous_robust.py checks it against enumeration of ``S`` and ``E``).
"""

from __future__ import annotations

from fractions import Fraction
from functools import partial
from typing import Any

from .._base.errors import GradcodesTypeError, GradcodesValueError
from .._base.registry import Scheme, register
from .._base.validate import check_int
from .._io.files import REBUILDERS
from .heterogeneous_exact import (
    HeterogeneousExactCode,
    _check_k,
    _check_s,
    _in_gf,
    _loads,
    _speeds,
    _spread_speeds,
    heterogeneous_exact,
)

__all__ = ["robust_heterogeneous_exact", "RobustHeterogeneousCode", "worst_time_heterogeneous"]


def _slowdown(rho: Any) -> Fraction:
    if isinstance(rho, bool) or not isinstance(rho, (int, float, Fraction, str)) and not hasattr(rho, "__index__"):
        raise GradcodesTypeError(f"slowdown must be a real number >= 1, got {rho!r} of type {type(rho).__name__}")
    try:
        f = Fraction(rho)
    except (ValueError, ZeroDivisionError, OverflowError, TypeError):
        raise GradcodesValueError(f"slowdown must be a finite real number >= 1, got {rho!r}") from None
    if f < 1:
        raise GradcodesValueError(f"slowdown must be a finite real number >= 1 (true speed >= estimate / slowdown), "
                                  f"got {rho!r}")
    return f


def _worst(t: list[Fraction], s: int, tol: int, e: int, rho: Fraction) -> Fraction:
    """``W``: the worst (n - tol)-th smallest finishing time over ``s`` stragglers and ``e`` workers slowed by rho."""
    need = tol + 1                                            # workers that must finish at v or later
    best = None
    for v in sorted({*t, *(rho * x for x in t)}, reverse=True):
        A = sum(1 for x in t if x >= v)
        Bv = sum(1 for x in t if x < v <= rho * x)
        C = len(t) - A - Bv
        if A + min(Bv, e) + min(s, C + max(Bv - e, 0)) >= need:
            best = v
            break
    assert best is not None, "unreachable: v = min t_i passes (n >= tol + 1 workers finish no earlier)"
    return best


def _design(c: list[Fraction], s: int, k: int, e: int, rho: Fraction,
            extra: int | None = None) -> tuple[int, Fraction, list[Fraction]]:
    """``(e', W(e'), [W(0), W(1), ...])`` over the admissible extra tolerances (one of them if ``extra`` is given)."""
    n = len(c)
    top = min(e, n - 1 - s)
    cands = range(top + 1) if extra is None else [extra]
    worst = []
    for x in cands:
        L, _ = _loads(c, s + x, k)
        worst.append(_worst([Fraction(li) / ci for li, ci in zip(L, c, strict=True)], s, s + x, e, rho))
    j = min(range(len(worst)), key=lambda i: (worst[i], i))
    return cands[j], worst[j], worst


def worst_time_heterogeneous(speeds: Any, s: int, k: int | None = None, *, misestimated: int = 1,
                             slowdown: Any = 2, extra: int | None = None) -> Fraction:
    r"""Worst-case computation time of a heterogeneity-aware code when speeds are overestimated (exact).

    The code is :func:`gradcodes.heterogeneous_exact` for ``s + extra`` stragglers (loads for the *estimated*
    speeds); up to ``s`` workers straggle and up to ``misestimated`` others are slower than estimated by a factor
    of at most ``slowdown``; the master decodes from the first ``n - s - extra`` messages. Returns the largest
    time of that message over every such choice of workers (module docstring, ``W``). ``extra=None``: the
    smallest of these over ``extra = 0..min(misestimated, n - 1 - s)``, the time
    :func:`robust_heterogeneous_exact` guarantees.

    Parameters
    ----------
    speeds : sequence of positive real numbers
        Estimated speed of each worker (as :func:`gradcodes.heterogeneous_exact`).
    s : int
        Stragglers, ``0 <= s <= n - 1``.
    k : int, optional
        Partitions (default ``n``).
    misestimated : int
        Workers whose speed may be overestimated, ``0 <= misestimated <= n``.
    slowdown : real >= 1
        The most by which such a worker is slower than its estimate (ints, Fractions, strings, floats exactly).
    extra : int, optional
        Extra tolerance ``e'``, ``0 <= extra <= n - 1 - s``.

    Returns
    -------
    fractions.Fraction
        The worst-case time, in units of partitions per unit of speed (as ``code.time``).

    Examples
    --------
    Six workers, ``k = 14`` partitions, one straggler, one worker possibly twice slower than estimated. The
    non-robust code (loads 2, 2, 4, 4, 8, 8: every worker needs time 2) can be made to wait for the slowed worker,
    time 4; one extra straggler tolerated (loads 3, 3, 6, 6, 12, 12) guarantees 3:

    >>> import gradcodes as gc
    >>> speeds = [1, 1, 2, 2, 4, 4]
    >>> gc.worst_time_heterogeneous(speeds, 1, 14, misestimated=1, slowdown=2, extra=0)
    Fraction(4, 1)
    >>> gc.worst_time_heterogeneous(speeds, 1, 14, misestimated=1, slowdown=2, extra=1)
    Fraction(3, 1)
    >>> gc.worst_time_heterogeneous(speeds, 1, 14, misestimated=1, slowdown="5/4")     # extra = 0 is best
    Fraction(5, 2)
    """
    c = _speeds(speeds)
    n = len(c)
    s = _check_s(s, n)
    k = _check_k(k, n)
    e = check_int("misestimated", misestimated, 0, n)
    rho = _slowdown(slowdown)
    if extra is not None:
        extra = check_int("extra", extra, 0, n - 1 - s)
    return _design(c, s, k, e, rho, extra)[1]


class RobustHeterogeneousCode(HeterogeneousExactCode):
    """A code built by :func:`robust_heterogeneous_exact` (a :class:`~gradcodes.HeterogeneousExactCode`).

    Attributes
    ----------
    stragglers, misestimated : int
        The design's ``s`` and ``e``; the code's ``s`` is ``stragglers + extra``.
    slowdown : fractions.Fraction
        The design's ``rho``.
    extra : int
        The extra tolerance ``e'`` chosen.
    worst_time : fractions.Fraction
        The guaranteed worst-case time ``W`` (:func:`worst_time_heterogeneous`).

    Examples
    --------
    >>> import gradcodes as gc
    >>> code = gc.robust_heterogeneous_exact([1, 1, 2, 2], s=1)
    >>> isinstance(code, gc.RobustHeterogeneousCode), code.n, code.k
    (True, 4, 4)
    """

    def __init__(self, *args: Any, stragglers: int, misestimated: int, slowdown: Fraction, extra: int,
                 worst_time: Fraction, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.stragglers = int(stragglers)
        self.misestimated = int(misestimated)
        self.slowdown = slowdown
        self.extra = int(extra)
        self.worst_time = worst_time


def robust_heterogeneous_exact(speeds: Any, s: int, k: int | None = None, *, misestimated: int = 1,
                               slowdown: Any = 2, field: str = "real") -> RobustHeterogeneousCode:
    r"""Heterogeneity-aware exact code robust to overestimated speeds (after Wang et al. 2019; module docstring).

    Among :func:`gradcodes.heterogeneous_exact` codes for ``s + e'`` stragglers, ``e' = 0..min(e, n - 1 - s)``,
    returns the one with the smallest worst-case computation time ``W`` when ``s`` workers straggle and up to
    ``e = misestimated`` others are slower than their estimated speed by up to ``rho = slowdown``
    (:func:`worst_time_heterogeneous`, exact; ties to the smaller ``e'``). The code tolerates any ``s + e'``
    stragglers exactly (proven by ``gc.verify``); its master decodes from the first ``n - s - e'`` messages.
    ``misestimated=0`` or ``slowdown=1`` gives ``heterogeneous_exact(speeds, s, k)``.

    Parameters
    ----------
    speeds : sequence of positive real numbers
        Estimated speed of each worker (as :func:`gradcodes.heterogeneous_exact`).
    s : int
        Stragglers, ``0 <= s <= n - 1``.
    k : int, optional
        Partitions (default ``n``).
    misestimated : int, default 1
        Workers whose speed may be overestimated, ``0 <= misestimated <= n``.
    slowdown : real >= 1, default 2
        The most by which such a worker is slower than estimated.
    field : {"real", "rational"}
        As :func:`gradcodes.heterogeneous_exact`.

    Returns
    -------
    RobustHeterogeneousCode
        With ``s = stragglers + extra``, ``params = {"speeds", "stragglers", "k", "misestimated", "slowdown",
        "field"}``, attributes ``extra``, ``worst_time`` (Fraction), ``time`` (the time with
        accurate speeds and no straggler wait, ``max_i L_i / c_i``) and the design's ``stragglers``,
        ``misestimated``, ``slowdown``.

    Raises
    ------
    ValueError
        As :func:`gradcodes.heterogeneous_exact`; ``misestimated`` outside ``[0, n]``; ``slowdown < 1`` or not
        finite.
    TypeError
        A non-integer ``misestimated``; a ``slowdown`` that is not a real number.

    Examples
    --------
    >>> import gradcodes as gc
    >>> speeds = [1, 1, 2, 2, 4, 4]
    >>> code = gc.robust_heterogeneous_exact(speeds, 1, 14, misestimated=1, slowdown=2, field="rational")
    >>> code.extra, code.s, code.worst_time, code.time
    (1, 2, Fraction(3, 1), Fraction(3, 1))
    >>> code.loads.tolist(), gc.heterogeneous_exact(speeds, 1, 14).loads.tolist()
    ([3, 3, 6, 6, 12, 12], [2, 2, 4, 4, 8, 8])
    >>> gc.verify(code).verdict
    'exact'
    >>> gc.robust_heterogeneous_exact(speeds, 1, 14, misestimated=1, slowdown="5/4").extra   # 5/2 < 3: no extra
    0
    """
    c = _speeds(speeds)
    n = len(c)
    s = _check_s(s, n)
    k = _check_k(k, n)
    e = check_int("misestimated", misestimated, 0, n)
    rho = _slowdown(slowdown)
    extra, worst, _ = _design(c, s, k, e, rho)
    base = heterogeneous_exact(c, s + extra, k, field=field)
    params = {"speeds": [str(v) for v in c], "stragglers": s, "k": k, "misestimated": e, "slowdown": str(rho),
              "field": field}                      # "stragglers": the code's own s is stragglers + extra
    return RobustHeterogeneousCode(
        base.B, base.s, speeds=base.speeds, nodes=base.nodes, scale_exponents=base.scale_exponents, rho=base.rho,
        consts=base.consts, base_exponents=base.base_exponents, time=base.time, stragglers=s, misestimated=e,
        slowdown=rho, extra=extra, worst_time=worst, field=field,
        name=f"robust_heterogeneous_exact(n={n}, s={s}, e={e}, rho={rho}, k={k})", family="robust_heterogeneous_exact",
        params=params, decoders=[base.decoders["lagrange"]], default_decoder="lagrange",
        field_builder=partial(_in_gf, c, s + extra, k))


def _build(s: int, n: int | None = None, k: int | None = None, speeds: Any = None, spread: int = 4,
           misestimated: int = 1, slowdown: Any = 2, field: str = "real") -> RobustHeterogeneousCode:
    """Registry builder: ``speeds`` given, or ``n`` workers with speeds ``1..spread`` repeated."""
    if speeds is None:
        if n is None:
            raise GradcodesValueError("robust_heterogeneous_exact needs speeds or n")
        speeds = _spread_speeds(check_int("n", n, 1), check_int("spread", spread, 1))
    return robust_heterogeneous_exact(speeds, s, k, misestimated=misestimated, slowdown=slowdown, field=field)


def _rebuild(speeds: Any, stragglers: int, k: int | None = None, misestimated: int = 1, slowdown: Any = 2,
             field: str = "real") -> RobustHeterogeneousCode:
    """Rebuild from saved parameters (``stragglers`` is the design's ``s``)."""
    return robust_heterogeneous_exact(speeds, stragglers, k, misestimated=misestimated, slowdown=slowdown,
                                      field=field)


REBUILDERS.update(robust_heterogeneous_exact=_rebuild)
register(Scheme(
    "robust_heterogeneous_exact", _build,
    "heterogeneity-aware exact code with extra redundancy chosen exactly against workers slower than their "
    "estimated speed (worst-case time over s stragglers and e misestimated workers)",
    tour=({"speeds": [1, 1, 2, 2, 4, 4], "s": 1, "k": 14}, {"n": 20, "s": 2, "misestimated": 2, "slowdown": 2})))
