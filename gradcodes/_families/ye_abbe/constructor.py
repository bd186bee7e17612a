"""The :func:`ye_abbe` constructor (validation, the choice of construction, GF(p) rebuilds) and its scheme."""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable
from functools import partial
from typing import Any

import numpy as np

from ..._base.aliases import ArrayLike, RNGLike
from ..._base.errors import GradcodesValueError
from ..._base.registry import SAMPLED, Scheme, register
from ..._base.validate import check_choice, check_entries, check_int, check_rng, rng_param
from ..._core.code import GradientCode
from ..._core.fields import Field, PrimeField, RationalField, RealField, to_fraction
from ..._io.files import REBUILDERS, CodeFileError
from .common import _group, _prime_1_mod
from .decoder import YeAbbeDecoder
from .fourier import _cancellation_bound, _fourier_A, _fourier_A_top, _fourier_B, _FourierPlan, _gf_field, _Trig
from .fourier_plan import _fourier_plan
from .gaussian import _random_A, _random_B
from .polynomial import NODE_CHOICES, _named_nodes, _poly_A, _poly_B, _poly_parts, _user_nodes


class YeAbbeCode(GradientCode):
    """A code built by :func:`ye_abbe` (a :class:`~gradcodes.GradientCode`); Fourier codes carry their design.

    Attributes
    ----------
    functional_frequencies : tuple of float or None
        ``nodes="fourier"``: the frequency of each of the ``m`` functionals (None for other node choices).
    stride : int or None
        ``nodes="fourier"``: worker ``i`` evaluates at angle ``2 pi (stride i mod n) / n``.
    notes : str or None
        ``nodes="fourier"``: a one-line description of the functionals and the stride.
    cancellation_bound : float or None
        ``nodes="fourier"`` with the top functionals: a proven upper bound on the cancellation factor of every
        responder set (docs/ye_abbe.md, "A proven worst case, not just a searched one"); None otherwise.

    Examples
    --------
    >>> import gradcodes as gc
    >>> code = gc.ye_abbe(6, 2, 2)
    >>> isinstance(code, gc.YeAbbeCode), code.m, code.load
    (True, 2, 4)
    """

    functional_frequencies: tuple[float, ...] | None = None
    stride: int | None = None
    notes: str | None = None
    cancellation_bound: float | None = None


def _fourier_in_field(plan: _FourierPlan, k: int, params: dict[str, Any], fld: Any) -> YeAbbeCode:
    """The Fourier code of ``plan`` over GF(p) (``fld``: ``"GF"`` or a galois prime field with p = 1 mod 8n)."""
    n, s, m = plan.n, plan.s, plan.m
    GF = _gf_field(fld, 8 * n)
    for _ in range(8):  # "GF": an unlucky prime may make some M_j singular mod p; take the next one
        gbk = PrimeField(GF)
        try:
            gB = _group(_fourier_B(plan, gbk), n, k, m)
            break
        except ValueError:
            if not isinstance(fld, str):
                raise
            import galois

            GF = galois.GF(_prime_1_mod(8 * n, GF.characteristic + 1))
    else:  # pragma: no cover - would need 8 unlucky primes in a row
        raise GradcodesValueError("no prime field found in which every M_j is invertible")
    gtr = _Trig(n, gbk)
    gK = gtr.kernel(plan)
    gquad = YeAbbeDecoder("quadrature", partial(_fourier_A, plan, gbk, gtr, gK), s, True,
                          "quadrature form over GF(p)")
    gtop = YeAbbeDecoder("lagrange", partial(_fourier_A_top, plan, gbk, gtr), s, True,
                         "closed-form barycentric weights over GF(p)")
    gdecs = [gtop, gquad] if plan.top else [YeAbbeDecoder("lagrange", gquad._fn, s, True, gquad.description)]
    return YeAbbeCode(gB, s, m=m, name=f"ye_abbe[fourier, {GF.name}]", family="ye_abbe",
                      params=params, decoders=gdecs, default_decoder="lagrange")


def _poly_A_quiet(theta: Any, full: Any, e_all: list[Any], n: int, m: int, bk: Field, S: np.ndarray) -> Any:
    """:func:`_poly_A` with float64 over/underflow warnings silenced (the acceptance rule reports accuracy)."""
    with np.errstate(all="ignore"):
        return _poly_A(theta, full, e_all, n, m, bk, S)


def _poly_in_field(theta: Any, n: int, s: int, m: int, k: int, label: str, params: dict[str, Any],
                   fld: Any) -> YeAbbeCode:
    """The polynomial code with rational nodes ``theta`` over GF(p) (``fld``: ``"GF"`` or a galois prime field)."""
    import galois

    vals = [to_fraction(v) for v in theta]
    GF = galois.GF(_prime_1_mod(2, 1000)) if isinstance(fld, str) else fld
    gbk = PrimeField(GF)
    gtheta = gbk.const(vals)
    if len(set(np.asarray(gtheta.view(np.ndarray)).tolist())) != n:
        raise GradcodesValueError(f"the nodes are not distinct modulo p = {GF.characteristic}")
    gfull, ge = _poly_parts(gtheta, n, m, gbk)
    gB = _poly_B(gtheta, n, s, m, gbk, gfull, ge)
    gdec = YeAbbeDecoder("lagrange", partial(_poly_A, gtheta, gfull, ge, n, m, gbk), s, True,
                         "closed-form Lagrange weights over GF(p)")
    return YeAbbeCode(_group(gB, n, k, m), s, m=m, name=f"ye_abbe[{label}, {GF.name}]", family="ye_abbe",
                      params=params, decoders=[gdec], default_decoder="lagrange")


def ye_abbe(n: int, s: int, m: int = 2, k: int | None = None, *, nodes: str | ArrayLike = "fourier",
            rng: RNGLike = None, spacing: str | float | None = None, stride: int | None = None,
            field: str = "real") -> YeAbbeCode:
    r"""Ye–Abbe communication-efficient gradient code: load ``s + m``, messages of length ``ceil(length/m)``.

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
        setting) or a sequence of ``n`` distinct reals: the published polynomial construction (Ye & Abbe 2018) with
        top-monomial-coefficient functionals. ``"random"``: Gaussian generator and functionals, seeded.
    rng : None, int, numpy.random.SeedSequence or numpy.random.Generator, optional
        Random state of ``nodes="random"`` (ignored otherwise), as scientific Python's SPEC 7 recommends.
    spacing : None, "auto" or float, optional
        ``nodes="fourier"`` only. None (default): the top frequencies. ``"auto"`` or a number: frequencies spread
        over the band with that spacing (``"auto"``: chosen by the worst consecutive-straggler estimate); kept for
        comparison, see ``benchmarks/numerics/ye_abbe_numerics.py``.
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
    YeAbbeCode
        A :class:`~gradcodes.GradientCode`. ``B`` has shape ``(n, k*m)`` (column ``j*m + u`` = block ``u`` of
        partition ``j``); its default decoder ``"lagrange"`` is the closed form (:class:`YeAbbeDecoder`). Fourier
        codes also carry ``stride``, ``functional_frequencies``, ``notes`` and ``cancellation_bound`` (a proven
        bound on the cancellation factor of every responder set, None for spread functionals), and a second decoder
        ``"quadrature"``.

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
    A worked example (n = 3, d = 2, m = 2, nodes 1, 2, 3), exactly:

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
    s = check_int("s", s, 0, n - 1)
    m = check_int("m", m, 1, n - s)               # s + m <= n: the range names m, the extra one
    if k is None:
        k = n
    else:
        k = check_int("k", k, 1)
        if k % n:
            raise GradcodesValueError(f"k must be a positive multiple of n={n} (partitions are grouped into n "
                                      f"super-partitions), got k={k}")
    check_choice("field", field, ("real", "rational"))
    check_entries(n, k * m, exact=field == "rational")
    gen = check_rng(rng)                   # validated for every node choice; used by nodes="random" only
    exact = field == "rational"
    params: dict[str, Any] = {"n": n, "s": s, "m": m, "k": k, "field": field}
    if isinstance(nodes, str):
        check_choice("nodes", nodes, NODE_CHOICES)
        params["nodes"] = nodes
    if (spacing is not None or stride is not None) and not (isinstance(nodes, str) and nodes == "fourier"):
        raise GradcodesValueError("spacing and stride apply to nodes='fourier' only")

    if isinstance(nodes, str) and nodes == "fourier":
        if exact:
            raise GradcodesValueError("nodes='fourier' has irrational entries; for an exact check use "
                                      "gradcodes.verify(code, field='GF') (the same construction over GF(p)), or "
                                      "rational nodes with field='rational'")
        if spacing is not None and spacing != "auto":
            if isinstance(spacing, bool) or not isinstance(spacing, (int, float)) or not 0 < spacing < math.inf:
                raise GradcodesValueError(
                    f"spacing must be None (top frequencies), 'auto' or a positive finite number, "
                    f"got {spacing!r}")
        if stride is not None:
            stride = check_int("stride", stride, 1, max(1, n - 1))
            if math.gcd(stride, n) != 1:
                raise GradcodesValueError(
                    f"stride must be coprime to n={n} (a permutation of the angles), got {stride}")
        plan = _fourier_plan(n, s, m, spacing, stride)
        params["stride"] = plan.stride
        if spacing is not None:
            params["spacing"] = spacing
        bk: Field = RealField()
        B = _fourier_B(plan, bk)
        tr = _Trig(n, bk)
        K = tr.kernel(plan)
        quad_doc = "exact quadrature plus sine-product Lagrange extrapolation to the stragglers, O(n s)"
        quad = YeAbbeDecoder("quadrature" if plan.top else "lagrange", partial(_fourier_A, plan, bk, tr, K), s,
                             False, quad_doc)
        decs = [quad]
        if plan.top:
            decs.insert(0, YeAbbeDecoder("lagrange", partial(_fourier_A_top, plan, bk, tr), s, False,
                                         "closed-form barycentric weights times short symmetric sums, no "
                                         "cancellation, O(n s m)"))
        freqs = ", ".join(f"{f2 / 2:g}{'*' if kind == 'mix' else ''}" for f2, kind, _ in plan.functionals
                          if kind != "sin")
        code = YeAbbeCode(_group(B, n, k, m), s, name="ye_abbe", decoders=decs, default_decoder="lagrange",
                          params=params, field_builder=partial(_fourier_in_field, plan, k, params), m=m,
                          family="ye_abbe", field="real")
        code.functional_frequencies = tuple(f2 / 2 for f2, _, _ in plan.functionals)
        code.stride = plan.stride
        code.notes = f"Fourier functionals at frequencies {freqs}; worker i at angle 2 pi ({plan.stride} i mod n) / n"
        code.cancellation_bound = _cancellation_bound(plan, code) if plan.top else None
        return code

    if isinstance(nodes, str) and nodes == "random":
        if rng_param(rng) is not None:
            params["rng"] = rng_param(rng)
        N = n - s
        Vf = gen.standard_normal((N, n))
        Cf = gen.standard_normal((N, m))
        bk = RationalField() if exact else RealField()
        V = bk.const(Vf.tolist()) if exact else Vf
        C = bk.const(Cf.tolist()) if exact else Cf
        try:
            B = _random_B(V, C, n, s, m, bk)
        except np.linalg.LinAlgError:
            raise GradcodesValueError("the random construction is singular; use another seed") from None
        dec = YeAbbeDecoder("lagrange", partial(_random_A, V, C, n, bk), s, exact,
                            "solve V_F a = C (one (n-s) x (n-s) solve per set)")
        return YeAbbeCode(_group(B, n, k, m), s, name="ye_abbe[random]", decoders=[dec],
                          default_decoder="lagrange", params=params, m=m, field=field, family="ye_abbe")

    # polynomial construction
    if isinstance(nodes, str):
        theta = _named_nodes(nodes, n, exact)
        label = nodes
    else:
        theta, strs = _user_nodes(nodes, n, exact)
        params["nodes"] = strs if exact else [float(v) for v in theta]
        label = "nodes"
    bk = RationalField() if exact else RealField()
    if exact:
        theta = np.array([to_fraction(v) for v in theta], dtype=object)
    with np.errstate(all="ignore"):
        full, e_all = _poly_parts(theta, n, m, bk)
        B = _poly_B(theta, n, s, m, bk, full, e_all)
    if not exact and not (np.all(np.isfinite(B)) and np.all(np.isfinite(full)) and np.all(full != 0)
                          and all(np.isfinite(x) for x in e_all)):
        raise GradcodesValueError(f"the polynomial construction with nodes={label!r} over- or underflows float64 at "
                                  f"n={n}; use nodes='fourier' (the stable default) or smaller n")

    dec = YeAbbeDecoder("lagrange", partial(_poly_A_quiet, theta, full, e_all, n, m, bk), s, exact,
                        "closed-form Lagrange weights: barycentric weight times elementary symmetric functions")
    builder = partial(_poly_in_field, theta, n, s, m, k, label, params) if exact else None
    code = YeAbbeCode(_group(B, n, k, m), s, name=f"ye_abbe[{label}]", decoders=[dec], default_decoder="lagrange",
                      params=params, field_builder=builder, m=m, field=field, family="ye_abbe")
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
    (``benchmarks/numerics/ye_abbe_numerics.py``).

    >>> [label for label, _ in family_entries()][:3]
    ['ye_abbe fourier', 'ye_abbe fourier natural-order spread', 'ye_abbe fourier natural-order top']
    """
    return [
        ("ye_abbe fourier", lambda n, s, m: ye_abbe(n, s, m)),
        ("ye_abbe fourier natural-order spread", lambda n, s, m: ye_abbe(n, s, m, spacing="auto", stride=1)),
        ("ye_abbe fourier natural-order top", lambda n, s, m: ye_abbe(n, s, m, stride=1)),
        ("ye_abbe random", lambda n, s, m: ye_abbe(n, s, m, nodes="random", rng=0)),
        ("ye_abbe chebyshev", lambda n, s, m: ye_abbe(n, s, m, nodes="chebyshev")),
        ("ye_abbe equispaced", lambda n, s, m: ye_abbe(n, s, m, nodes="equispaced")),
        ("ye_abbe integer", lambda n, s, m: ye_abbe(n, s, m, nodes="integer")),
    ]


def _rebuild(**params: Any) -> YeAbbeCode:
    """:func:`gradcodes.load_code`'s constructor: the recorded stride, never the stride search."""
    if params.get("nodes", "fourier") == "fourier" and params.get("spacing") is None and params.get("stride") is None:
        raise CodeFileError("invalid ye_abbe parameters: a Fourier code file must record its stride (a code file is "
                            "rebuilt from its recorded choices, never by a search)")
    return ye_abbe(**params)


REBUILDERS.update(ye_abbe=_rebuild)


def _scheme_build(n: int, s: int, m: int = 2, k: int | None = None, seed: Any = 0, nodes: Any = "fourier",
                  stride: int | None = None, spacing: Any = None, field: str = "real") -> YeAbbeCode:
    return ye_abbe(n, s, m, k, nodes=nodes, rng=seed, stride=stride, spacing=spacing, field=field)


register(Scheme(
    "ye_abbe",
    _scheme_build,
    "Ye & Abbe: load s+m, each worker sends 1/m of the gradient (stable Fourier construction)",
    tour=({"n": 10, "s": 2, "m": 3}, {"n": 50, "s": 5, "m": 5}, {"n": 200, "s": 5, "m": 5}),
    expect=(None, SAMPLED, SAMPLED),
))
