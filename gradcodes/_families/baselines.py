"""The approximate baselines that Song & Choi compare against (Song & Choi 2025), as ``ApproximateCode``\\ s.

* :func:`ignore_stragglers` (IS-SGD): uncoded, one partition per worker, responders only.
* :func:`stochastic_gc` (SGC, Bitar–Wootters–El Rouayheb): partition ``j`` on ``d`` workers, worker ``i``
  sends ``sum_j g_j / ((1 - p_i) d)``, the master sums the responders (unbiased).
* :func:`bernoulli_gc` (BGC, Charles–Papailiopoulos–Ellenberg): ``B_ij ~ Bernoulli(d/k)`` i.i.d., optimal
  least-squares decoding.
* :func:`erasurehead` (EHD, Wang–Charles–Papailiopoulos): fractional-repetition groups of ``d`` workers,
  one responder per group, groups without a responder dropped.
* :func:`optimal_decoding` (OD, Glasgow–Wootters): adjacency of a random ``d``-regular graph with optimal
  least-squares decoding ``u* = argmin ||B_R^T u - 1||``.

All take optional straggle probabilities ``p`` (stored as ``code.straggle_probabilities``); the evaluator
:func:`gradcodes.evaluate_approximate` uses them. Decoders are batched :class:`~gradcodes.Decoder`
subclasses that accept any response mask, including the empty one (estimate 0).
"""

from __future__ import annotations

import numbers
from fractions import Fraction
from typing import Any

import numpy as np

from .._base.aliases import ProbabilitiesLike, RNGLike
from .._base.errors import GradcodesTypeError, GradcodesValueError
from .._base.registry import Expect, Scheme, register
from .._base.validate import check_entries, check_int, check_rng
from .._core.code import ApproximateCode
from .._core.decoders import Decoder, LeastSquaresDecoder
from .._core.fields import RationalField, field_for
from .._core.straggle import _scenario
from .._io.files import REBUILDERS
from .._verify.approx_eval import (
    FixedWeightDecoder,
    evaluate_approximate,
    probability_list,
    straggle_probabilities,
)
from .expander import random_regular_graph

__all__ = [
    "bernoulli_gc",
    "erasurehead",
    "ignore_stragglers",
    "optimal_decoding",
    "stochastic_gc",
]


# --------------------------------------------------------------------------------------------------------
# validation helpers
# --------------------------------------------------------------------------------------------------------


def _seed_param(seed: Any) -> int | None:
    """A seed worth saving (ints only: a Generator's state is not reproducible from the file)."""
    return int(seed) if isinstance(seed, numbers.Integral) and not isinstance(seed, bool) else None


def _p(p: Any, n: int) -> np.ndarray | None:
    return None if p is None else straggle_probabilities(p, n)


def _pick(decoder: Any, decs: dict[str, Decoder]) -> str:
    """Validate the name of the default decoder."""
    if not isinstance(decoder, str):
        raise GradcodesTypeError(f"decoder must be a str, one of {sorted(decs)}, got {decoder!r}")
    if decoder not in decs:
        raise GradcodesValueError(f"decoder must be one of {sorted(decs)}, got {decoder!r}"
                                  + (" ('unbiased' needs p)" if decoder == "unbiased" else ""))
    return decoder


def _frac_matrix(M: np.ndarray) -> np.ndarray:
    out = np.empty(M.shape, dtype=object)
    for idx, v in np.ndenumerate(M):
        out[idx] = Fraction(int(v)) if isinstance(v, (int, np.integer)) else Fraction(v)
    return out


# --------------------------------------------------------------------------------------------------------
# decoders
# --------------------------------------------------------------------------------------------------------


class OptimalDecoder(LeastSquaresDecoder):
    """Optimal decoding ``u* = argmin_{supp u ⊆ R} ||B_R^T u - 1||_2``, minimum norm (batched pseudo-inverse).

    The core's least-squares decoder (it solves on the responders' rows only, so stragglers get exact zeros)
    under the name the baselines' papers use; the empty mask gives ``u = 0``.
    """

    name = "optimal"
    description = "optimal (minimum-norm least-squares) decoding"


class RescaleDecoder(Decoder):
    """``a_i = n/|R|`` on the responders ``R`` (0 if nobody responds): IS-SGD's rescaled sum (Tandon et al. 2017)."""

    def __init__(self, exact: bool = False, name: str = "rescale") -> None:
        self.name = name
        self.exact = exact

    def matrices(self, code: Any, mask: np.ndarray) -> np.ndarray:
        mask = np.asarray(mask, dtype=bool)
        n = mask.shape[1]
        cnt = mask.sum(axis=1)
        if self.exact:
            scale = np.array([Fraction(n, c) if c else Fraction(0) for c in cnt], dtype=object)
            a = np.where(mask, scale[:, None], RationalField().const(0))
        else:
            a = mask * np.divide(n, cnt, out=np.zeros(cnt.shape), where=cnt > 0)[:, None]
        return a[:, None, :]


class GroupDecoder(Decoder):
    """ErasureHead decoding: weight ``w_g`` on the smallest-index responder of each group ``g``.

    ``w_g = 1`` (``name="group"``: the group sums of the responding groups, as ErasureHead and the authors'
    code do) or ``w_g = 1 / (1 - prod_{i in g} p_i)`` (``name="unbiased"``), which makes the estimate
    unbiased because group ``g`` is heard from with probability ``1 - prod_{i in g} p_i``.
    """

    def __init__(self, name: str, groups: np.ndarray, weights: np.ndarray) -> None:
        self.name = name
        self.groups = groups  # (G, d) worker indices
        self.weights = weights  # (G,)
        self.exact = weights.dtype == object

    def matrices(self, code: Any, mask: np.ndarray) -> np.ndarray:
        mask = np.asarray(mask, dtype=bool)
        b, n = mask.shape
        sub = mask[:, self.groups]  # (b, G, d)
        first = self.groups[np.arange(self.groups.shape[0])[None, :], sub.argmax(axis=2)]  # (b, G)
        heard = sub.any(axis=2)
        a = field_for(self.exact).zeros((b, n))
        rows = np.broadcast_to(np.arange(b)[:, None], first.shape)
        w = np.broadcast_to(self.weights[None, :], first.shape)
        a[rows[heard], first[heard]] = w[heard]
        return a[:, None, :]


# --------------------------------------------------------------------------------------------------------
# random regular graphs (no networkx)
# --------------------------------------------------------------------------------------------------------


# --------------------------------------------------------------------------------------------------------
# constructors
# --------------------------------------------------------------------------------------------------------


def ignore_stragglers(n: int, *, p: ProbabilitiesLike | None = None, decoder: str | None = None) -> ApproximateCode:
    r"""IS-SGD: uncoded (``B = I_n``, ``k = n``); the master uses the responders only.

    Decoders: ``"unbiased"`` (``a_i = 1/(1 - p_i)``, needs ``p``; ``E[ghat] = g``), ``"rescale"``
    (``a = (n/|R|) 1_R``, Tandon et al. 2017; biased: with equal ``p_i = p`` it gives ``E[ghat] = (1 - p^n) g``, the
    factor being the chance that somebody responds, and with unequal ``p_i`` it also reweights the partitions)
    and ``"sum"`` (``a = 1_R``, the weight-1 variant in Song & Choi's code; ``E[ghat_j] = (1 - p_j) g_j``).
    Default: ``"unbiased"`` when ``p`` is given, else ``"rescale"``.

    Parameters
    ----------
    n : int
        Number of workers (= partitions).
    p : array_like or float, optional
        Straggle probabilities; ``Fraction``\ s make the code rational and its fixed-weight decoders exact.
    decoder : str, optional
        Default decoder name.

    Returns
    -------
    ApproximateCode

    Examples
    --------
    >>> import gradcodes as gc
    >>> code = gc.ignore_stragglers(4, p=0.2)
    >>> code.default_decoder, code.load
    ('unbiased', 1)
    """
    n = check_int("n", n, 1)
    check_entries(n, n)
    pp = _p(p, n)
    exact = pp is not None and pp.dtype == object
    B = _frac_matrix(np.eye(n, dtype=np.int64)) if exact else np.eye(n)
    decs: dict[str, Decoder] = {
        "rescale": RescaleDecoder(exact=exact),
        "sum": FixedWeightDecoder("sum", _frac_matrix(np.ones(n, dtype=np.int64)) if exact else np.ones(n)),
    }
    if pp is not None:
        decs["unbiased"] = FixedWeightDecoder("unbiased", 1 / (1 - pp))
    default = _pick(("unbiased" if pp is not None else "rescale") if decoder is None else decoder, decs)
    return ApproximateCode(B, field="rational" if exact else "real", name=f"IS-SGD(n={n})",
                           family="ignore_stragglers",
                           params={"n": n, "p": probability_list(pp), "decoder": default},
                           decoders=list(decs.values()),
                           default_decoder=default, straggle_probabilities=pp)


def _cyclic_support(n: int, k: int, d: int) -> np.ndarray:
    S = np.zeros((n, k), dtype=bool)
    for j in range(k):
        start = (j * n) // k
        S[(start + np.arange(d)) % n, j] = True
    return S


def stochastic_gc(n: int, degree: int, p: ProbabilitiesLike, *, k: int | None = None, assignment: str = "cyclic",
                  rng: RNGLike = None) -> ApproximateCode:
    r"""Stochastic gradient coding (SGC, Bitar–Wootters–El Rouayheb) for known straggle probabilities.

    Partition ``j`` is stored by ``d`` workers; worker ``i`` sends ``sum_{j in S_i} g_j / ((1-p_i) d)`` and
    the master sums the responders (decoder ``"sum"``, weight 1). Since worker ``i`` responds with
    probability ``1 - p_i``, ``E[ghat] = sum_j sum_{i ∋ j} g_j / d = g``: unbiased.

    Assignment ``"cyclic"`` puts partition ``j`` on workers ``floor(j n/k) + t (mod n)``, ``t < d``
    (for ``k = n`` every worker holds ``d`` partitions); ``"random"`` draws ``d`` distinct workers per
    partition uniformly (seeded).

    Parameters
    ----------
    n : int
        Number of workers.
    degree : int
        ``d``: replication per partition (its degree in the worker--partition assignment graph),
        ``1 <= d <= n``.
    p : array_like or float
        Straggle probabilities (required: they are part of the encoding). ``Fraction``\ s make it exact.
    k : int, optional
        Number of partitions (default ``n``).
    assignment : {"cyclic", "random"}
    rng : None, int, numpy.random.SeedSequence or numpy.random.Generator, optional
        Random state of ``"random"`` (SPEC 7; default None: fresh entropy).

    Returns
    -------
    ApproximateCode

    Raises
    ------
    GradcodesValueError
        If a parameter is out of its range (the message names the parameter and the range), or ``assignment`` is
        unknown.

    Examples
    --------
    >>> import gradcodes as gc
    >>> from fractions import Fraction as F
    >>> code = gc.stochastic_gc(3, 2, p=[F(1, 2), F(1, 3), F(1, 4)])
    >>> code.B[0].tolist()
    [Fraction(1, 1), Fraction(0, 1), Fraction(1, 1)]
    """
    n = check_int("n", n, 1)
    k = n if k is None else check_int("k", k, 1)
    d = check_int("degree", degree, 1, n)
    check_entries(n, k)
    pp = straggle_probabilities(p, n)
    exact = pp.dtype == object
    if assignment == "cyclic":
        S = _cyclic_support(n, k, d)
    elif assignment == "random":
        gen = check_rng(rng)
        S = np.zeros((n, k), dtype=bool)
        for j in range(k):
            S[gen.choice(n, size=d, replace=False), j] = True
    else:
        raise GradcodesValueError(f"assignment must be 'cyclic' or 'random', got {assignment!r}")
    scale = 1 / ((1 - pp) * d)
    if exact:
        B = RationalField().zeros((n, k))
        rows, cols = np.nonzero(S)
        B[rows, cols] = scale[rows]
        w = _frac_matrix(np.ones(n, dtype=np.int64))
    else:
        B = S * scale[:, None]
        w = np.ones(n)
    return ApproximateCode(B, field="rational" if exact else "real", name=f"SGC(n={n}, degree={d})",
                           family="stochastic_gc",
                           params={"n": n, "degree": d, "p": probability_list(pp), "k": k, "assignment": assignment,
                                   "rng": _seed_param(rng)},
                           decoders=[FixedWeightDecoder("sum", w)], default_decoder="sum",
                           straggle_probabilities=pp)


def bernoulli_gc(n: int, degree: float, *, k: int | None = None, p: ProbabilitiesLike | None = None,
                 rng: RNGLike = None, decoder: str = "optimal") -> ApproximateCode:
    r"""Bernoulli gradient coding (BGC, Charles–Papailiopoulos–Ellenberg).

    ``B_ij ~ Bernoulli(d/k)`` i.i.d. (seeded), so each worker holds ``d`` partitions on average. Decoders:
    ``"optimal"`` (default; min-norm least squares ``argmin ||B_R^T u - 1||``, as in the paper) and
    ``"sum"`` (weight 1 on responders, as in Song & Choi's code; biased by a factor ``~ n d (1-p)/k``).

    Parameters
    ----------
    n : int
        Number of workers.
    degree : float
        ``d``: expected load per worker (its expected degree in the worker--partition assignment graph),
        ``0 < d <= k``.
    k : int, optional
        Number of partitions (default ``n``).
    p : array_like or float, optional
        Straggle probabilities stored for evaluation.
    rng : None, int, numpy.random.SeedSequence or numpy.random.Generator, optional
        Random state (SPEC 7; default None: fresh entropy).
    decoder : {"optimal", "sum"}

    Returns
    -------
    ApproximateCode

    Raises
    ------
    GradcodesValueError
        If ``degree`` is not in ``(0, k]`` or another parameter is out of its range.
    GradcodesTypeError
        If ``degree`` is not a real number.

    Examples
    --------
    >>> import gradcodes as gc
    >>> code = gc.bernoulli_gc(20, 3, rng=1)
    >>> code.B.shape, set(code.B.ravel().tolist()) <= {0.0, 1.0}
    ((20, 20), True)
    """
    n = check_int("n", n, 1)
    k = n if k is None else check_int("k", k, 1)
    d = degree
    if isinstance(d, (bool, np.bool_)) or not isinstance(d, numbers.Real):
        raise GradcodesTypeError(f"degree (expected load) must be a real number in (0, k = {k}], got {d!r} of type "
                                 f"{type(d).__name__}")
    if not (0 < d <= k):  # also rejects NaN
        raise GradcodesValueError(f"degree (expected load) must be a real number in (0, k = {k}], got {d!r}")
    check_entries(n, k)
    gen = check_rng(rng)
    B = (gen.random((n, k)) < d / k).astype(np.float64)
    decs: dict[str, Decoder] = {"optimal": OptimalDecoder(), "sum": FixedWeightDecoder("sum", np.ones(n))}
    _pick(decoder, decs)
    pp = _p(p, n)
    return ApproximateCode(B, field="real", name=f"BGC(n={n}, degree={d})", family="bernoulli_gc",
                           params={"n": n, "degree": d, "k": k, "p": probability_list(pp), "rng": _seed_param(rng),
                                   "decoder": decoder},
                           decoders=list(decs.values()), default_decoder=decoder,
                           straggle_probabilities=pp)


def erasurehead(n: int, degree: int, *, k: int | None = None, p: ProbabilitiesLike | None = None,
                decoder: str = "group") -> ApproximateCode:
    r"""ErasureHead-style group decoding (EHD, Wang–Charles–Papailiopoulos).

    Fractional-repetition assignment: the ``n`` workers form ``n/d`` groups of ``d`` consecutive workers
    (``d | n``), the ``k`` partitions are split into ``n/d`` contiguous blocks, and every worker of group
    ``g`` sends the sum of block ``g`` (``B_ij = 1``). The master takes one responder per group (the
    smallest index) and drops groups with no responder: decoder ``"group"`` (weight 1, biased towards 0 by the
    dropped groups). Decoder ``"unbiased"`` (needs ``p``) weights group ``g`` by ``1/(1 - prod_{i in g} p_i)``.

    Parameters
    ----------
    n : int
        Number of workers.
    degree : int
        ``d``: group size = replication (each worker's and each partition's degree in the assignment graph),
        ``d | n``.
    k : int, optional
        Number of partitions, ``k >= n/d`` (default ``n``).
    p : array_like or float, optional
        Straggle probabilities; ``Fraction``\ s make the code rational and its decoders exact.
    decoder : {"group", "unbiased"}

    Returns
    -------
    ApproximateCode

    Raises
    ------
    GradcodesValueError
        If a parameter is out of its range (the message names the parameter and the range), or ``degree`` does not
        divide ``n``.

    Examples
    --------
    >>> import gradcodes as gc
    >>> code = gc.erasurehead(4, 2)
    >>> code.B.astype(int).tolist()
    [[1, 1, 0, 0], [1, 1, 0, 0], [0, 0, 1, 1], [0, 0, 1, 1]]
    """
    n = check_int("n", n, 1)
    d = check_int("degree", degree, 1, n)
    if n % d:
        raise GradcodesValueError(f"degree (group size) must divide n = {n}, got degree = {d}")
    G = n // d
    k = n if k is None else check_int("k", k, G)
    check_entries(n, k)
    pp = _p(p, n)
    exact = pp is not None and pp.dtype == object
    groups = np.arange(n).reshape(G, d)
    S = np.zeros((n, k), dtype=np.int64)
    for g, block in enumerate(np.array_split(np.arange(k), G)):
        S[np.ix_(groups[g], block)] = 1
    B = _frac_matrix(S) if exact else S.astype(np.float64)
    one = _frac_matrix(np.ones(G, dtype=np.int64)) if exact else np.ones(G)
    decs: dict[str, Decoder] = {"group": GroupDecoder("group", groups, one)}
    if pp is not None:
        hear = 1 - pp[groups].prod(axis=1)
        decs["unbiased"] = GroupDecoder("unbiased", groups, 1 / hear)
    _pick(decoder, decs)
    return ApproximateCode(B, field="rational" if exact else "real", name=f"EHD(n={n}, degree={d})",
                           family="erasurehead",
                           params={"n": n, "degree": d, "k": k, "p": probability_list(pp), "decoder": decoder},
                           decoders=list(decs.values()),
                           default_decoder=decoder, straggle_probabilities=pp)


def optimal_decoding(n: int, degree: int, *, p: ProbabilitiesLike | None = None, rng: RNGLike = None,
                     decoder: str = "optimal") -> ApproximateCode:
    r"""Optimal decoding on an expander assignment (OD, Glasgow–Wootters), ``k = n``.

    ``B = A_G / d`` with ``A_G`` the adjacency of a random simple ``d``-regular graph
    (:func:`~gradcodes.random_regular_graph`: Steger–Wormald pairing, seeded).
    Worker ``i`` holds the partitions of its ``d`` neighbours. Decoders: ``"optimal"`` (default,
    ``u* = argmin_{supp u ⊆ R} ||B_R^T u - 1||``, minimum norm) and ``"fixed"`` (``u = (n/|R|) 1_R``).

    Parameters
    ----------
    n : int
        Number of workers = partitions.
    degree : int
        ``d``: the graph's degree = load, ``1 <= d <= n - 1``, ``n d`` even.
    p : array_like or float, optional
        Straggle probabilities stored for evaluation.
    rng : None, int, numpy.random.SeedSequence or numpy.random.Generator, optional
        Random state (SPEC 7; default None: fresh entropy).
    decoder : {"optimal", "fixed"}

    Returns
    -------
    ApproximateCode

    Examples
    --------
    >>> import gradcodes as gc
    >>> code = gc.optimal_decoding(10, 3, rng=0)
    >>> code.load, bool(abs(code.B.sum(axis=0) - 1).max() < 1e-15)
    (3, True)
    """
    n = check_int("n", n, 2)
    d = check_int("degree", degree, 1, n - 1)
    check_entries(n, n)
    A = random_regular_graph(n, d, check_rng(rng))
    pp = _p(p, n)
    decs: dict[str, Decoder] = {"optimal": OptimalDecoder(), "fixed": RescaleDecoder(name="fixed")}
    _pick(decoder, decs)
    return ApproximateCode(A / d, field="real", name=f"OD(n={n}, degree={d})", family="optimal_decoding",
                           params={"n": n, "degree": d, "p": probability_list(pp), "rng": _seed_param(rng),
                                   "decoder": decoder},
                           decoders=list(decs.values()), default_decoder=decoder, straggle_probabilities=pp)


# --------------------------------------------------------------------------------------------------------
# registry (p from the paper's model p_i = exp(-psi_i (tau - 1)) unless given)
# --------------------------------------------------------------------------------------------------------


def _fast_evaluate(code: ApproximateCode) -> Any:
    """Least-squares decoders cost one pseudo-inverse per pattern: fewer Monte Carlo samples in the tour."""
    return evaluate_approximate(code, samples=2000)


def _build_is_sgd(n: int | None = None, p: Any = None, tau: float = 1.5, seed: Any = 0,
                  decoder: str | None = None) -> ApproximateCode:
    pp = _scenario(n, p, tau, seed)
    return ignore_stragglers(pp.size, p=pp, decoder=decoder)


def _build_sgc(n: int | None = None, degree: int = 2, p: Any = None, tau: float = 1.5, seed: Any = 0,
               k: int | None = None, assignment: str = "cyclic") -> ApproximateCode:
    pp = _scenario(n, p, tau, seed)
    return stochastic_gc(pp.size, degree, pp, k=k, assignment=assignment, rng=seed)


def _build_bgc(n: int | None = None, degree: float = 2, p: Any = None, tau: float = 1.5, seed: Any = 0,
               k: int | None = None, decoder: str = "optimal") -> ApproximateCode:
    pp = _scenario(n, p, tau, seed)
    return bernoulli_gc(pp.size, degree, k=k, p=pp, rng=seed, decoder=decoder)


def _build_ehd(n: int | None = None, degree: int = 2, p: Any = None, tau: float = 1.5, seed: Any = 0,
               k: int | None = None, decoder: str = "group") -> ApproximateCode:
    pp = _scenario(n, p, tau, seed)
    return erasurehead(pp.size, degree, k=k, p=pp, decoder=decoder)


def _build_od(n: int | None = None, degree: int = 2, p: Any = None, tau: float = 1.5, seed: Any = 0,
              decoder: str = "optimal") -> ApproximateCode:
    pp = _scenario(n, p, tau, seed)
    return optimal_decoding(pp.size, degree, p=pp, rng=seed, decoder=decoder)


REBUILDERS.update(ignore_stragglers=ignore_stragglers, stochastic_gc=stochastic_gc, bernoulli_gc=bernoulli_gc,
                  erasurehead=erasurehead, optimal_decoding=optimal_decoding)
_TOUR = ({"n": 10, "degree": 2, "tau": 1.5}, {"n": 100, "degree": 2, "tau": 1.5})
_SMALL_TOUR = ({"n": 10, "degree": 2, "tau": 1.5}, {"n": 30, "degree": 2, "tau": 1.5})
# BGC, ErasureHead and optimal decoding are biased by design (Song & Choi 2025 compare them with unbiased codes)
_BIASED = (Expect(frozenset({"BIASED"}), "biased by design: E[g_hat] != g under random stragglers",
                  demonstration=True),) * 2
register(Scheme("is_sgd", _build_is_sgd, "IS-SGD baseline: uncoded, responders weighted 1/(1-p_i) (unbiased)",
                tour=({"n": 10, "tau": 1.5}, {"n": 100, "tau": 1.5}), evaluate=evaluate_approximate,
                kind="approximate"))
register(Scheme("sgc", _build_sgc,
                "stochastic gradient coding (Bitar et al.): d copies, weights 1/((1-p_i) d), plain sum (unbiased)",
                tour=_TOUR, evaluate=evaluate_approximate, kind="approximate"))
register(Scheme("bgc", _build_bgc,
                "Bernoulli gradient coding (Charles et al.): B_ij ~ Bernoulli(d/k), optimal least-squares decoding",
                tour=_SMALL_TOUR, expect=_BIASED, evaluate=_fast_evaluate, kind="approximate"))
register(Scheme("ehd", _build_ehd,
                "ErasureHead (Wang et al.): fractional-repetition groups of d, one responder per group",
                tour=_TOUR, expect=_BIASED, evaluate=evaluate_approximate, kind="approximate"))
register(Scheme("od", _build_od,
                "optimal decoding (Glasgow & Wootters) on a random d-regular graph, least-squares decoding",
                tour=_SMALL_TOUR, expect=_BIASED, evaluate=_fast_evaluate, kind="approximate"))
