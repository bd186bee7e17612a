"""Song & Choi: approximate gradient codes for heterogeneous stragglers.

Song & Choi 2025 (arXiv 2510.22539, NeurIPS 2025). The paper writes ``k`` for the workers and ``n`` for the
partitions; here, as everywhere in gradcodes, ``n`` is the number of workers (rows of ``B``) and ``k`` the
number of partitions (columns).

Model. Worker ``i`` straggles independently with known probability ``p_i`` in (0, 1); let
``delta_i = p_i / (1 - p_i)``. Worker ``i`` sends ``y_i = sum_j alpha_ij g_j`` and the master forms
``ghat = sum_{i responds} y_i / (1 - p_i)``. Then

* ``E[ghat] = sum_j (sum_i alpha_ij) g_j``, so the code is unbiased iff every column of ``alpha`` sums to 1;
* ``E||ghat - g||^2 = sum_i delta_i ||sum_j alpha_ij g_j||^2`` (independent Bernoulli responses);
* under ``||g_j||^2 <= C`` and ``alpha >= 0`` this is at most ``C sum_i delta_i Y_i^2`` with the row sums
  ``Y_i = sum_j alpha_ij``; subject to ``sum_i Y_i = k`` it is minimised (Lagrange) by
  ``Y_i = k delta_i^{-1} / sum_i' delta_i'^{-1}``, with optimum ``k^2 / sum_i delta_i^{-1}``.

Any nonnegative ``alpha`` with row sums ``Y`` and column sums 1 is optimal; the schemes below differ in the
support they choose. All three have at most ``n + k - 1`` nonzeros, which is the minimum for generic ``p``
(see :func:`gradcodes.min_load_heterogeneous`).
"""

from __future__ import annotations

import warnings
from fractions import Fraction
from typing import Any

import numpy as np
import numpy.typing as npt

from .._base.aliases import ArrayLike, MatrixLike, ProbabilitiesLike
from .._base.errors import GradcodesTypeError, GradcodesValueError
from .._base.registry import Scheme, register
from .._base.validate import check_entries, check_int
from .._core.code import ApproximateCode
from .._core.fields import RationalField, field_for
from .._core.straggle import _scenario
from .._io.files import REBUILDERS
from .._verify.approx_adversaries import heaviest_rows, register_adversaries
from .._verify.approx_eval import (
    FixedWeightDecoder,
    evaluate_approximate,
    probability_list,
    straggle_probabilities,
)

__all__ = [
    "HeterogeneousCode",
    "NegativeCoefficientWarning",
    "heterogeneous",
    "optimal_row_sums",
    "song_choi_allocation",
]

SCHEMES = ("nw", "I", "II")


class NegativeCoefficientWarning(UserWarning):
    """An approximate code has negative encoding coefficients.

    For Song & Choi's Schemes I and II this happens whenever some ``Y_i`` is smaller than the fixed number
    of partitions the scheme forces on worker ``i``. The code stays unbiased and keeps the optimal row sums,
    but the bound ``C sum_i delta_i (sum_j alpha_ij)^2`` that the row sums optimise is then no longer an
    upper bound on the error (it needs ``(sum_j |alpha_ij|)^2``), and for gradients that are not aligned
    the true expected error can be several times larger than that of the nonnegative ``scheme="nw"``.
    """


# --------------------------------------------------------------------------------------------------------
# input handling
# --------------------------------------------------------------------------------------------------------


def _check_k(k: Any) -> int:
    return check_int("k", k, 1)


def _check_scheme(scheme: Any) -> str:
    key = {"nw": "nw", "i": "I", "ii": "II", "ii-nw": "nw"}.get(str(scheme).lower()) if isinstance(
        scheme, str) else None
    if key is None:
        raise GradcodesValueError(f"scheme must be one of 'nw', 'I', 'II', got {scheme!r}")
    return key


# --------------------------------------------------------------------------------------------------------
# the mathematics
# --------------------------------------------------------------------------------------------------------


def optimal_row_sums(p: ProbabilitiesLike, k: int) -> np.ndarray:
    r"""Optimal row sums ``Y`` of Song & Choi's allocation.

    Minimises ``sum_i delta_i Y_i^2`` subject to ``sum_i Y_i = k``: stationarity of the Lagrangian gives
    ``2 delta_i Y_i = lambda``, hence

    .. math:: Y_i = k\,\delta_i^{-1} \Big/ \sum_{i'} \delta_{i'}^{-1}, \qquad
              \delta_i = p_i / (1 - p_i),

    and the optimal value is ``k^2 / sum_i delta_i^{-1}``. Exact when ``p`` holds ``Fraction``\ s.

    Parameters
    ----------
    p : array_like
        Straggle probability of each worker, in (0, 1).
    k : int
        Number of partitions (>= 1).

    Returns
    -------
    numpy.ndarray
        Length-``n`` array (object array of ``Fraction`` in exact mode) summing to ``k``.

    Examples
    --------
    >>> from fractions import Fraction as F
    >>> [str(y) for y in optimal_row_sums([F(1, 10), F(1, 5), F(1, 2)], 3)]
    ['27/14', '6/7', '3/14']
    """
    return _row_sums(straggle_probabilities(p), _check_k(k))


def _row_sums(p: np.ndarray, k: int) -> np.ndarray:
    """``Y`` for validated ``p``. In float, ``delta^{-1}`` is scaled by ``delta_min`` first: ``1/p`` overflows for
    tiny ``p`` (e.g. 1e-310), which would turn every ``Y_i`` into ``inf/inf = nan``."""
    if p.dtype == object:
        inv = (1 - p) / p  # delta^{-1}, exact
        return inv * k / inv.sum()
    pmin = p.min()
    inv = ((1 - p) / (1 - pmin)) * (pmin / p)  # delta^{-1} / delta_min^{-1}, in (0, 1]: no overflow
    Y = inv * (k / inv.sum())
    return Y * (k / Y.sum())  # sum exactly k up to one rounding


def _prefix(Y: np.ndarray, k: int, exact: bool) -> np.ndarray:
    """Cumulative row sums ``C_0 = 0, ..., C_n = k``; in float, values within rounding of an integer snap."""
    n = Y.size
    if exact:
        C = np.empty(n + 1, dtype=object)
        C[0] = Fraction(0)
        acc = Fraction(0)
        for i, y in enumerate(Y):
            acc += y
            C[i + 1] = acc
        return C
    C = np.concatenate([[0.0], np.cumsum(Y)])
    C[-1] = float(k)
    near = np.rint(C)
    snap = np.abs(C - near) <= 16 * np.finfo(np.float64).eps * max(k, 1)
    C[snap] = near[snap]
    return C


def _nw(Y: np.ndarray, k: int, exact: bool) -> np.ndarray:
    """Northwest-corner allocation: alpha_ij = |[C_i, C_{i+1}) ∩ [j, j+1)|."""
    C = _prefix(Y, k, exact)
    j = np.arange(k)
    if exact:
        lo = np.maximum(C[:-1, None], j[None, :].astype(object))
        hi = np.minimum(C[1:, None], (j + 1)[None, :].astype(object))
        diff = hi - lo
        return np.where(diff > 0, diff, RationalField().const(0)).astype(object)
    lo = np.maximum(C[:-1, None], j[None, :])
    hi = np.minimum(C[1:, None], (j + 1)[None, :])
    return np.clip(hi - lo, 0.0, None)


def _zeros(n: int, k: int, exact: bool) -> np.ndarray:
    return np.asarray(field_for(exact).zeros((n, k)))


def _scheme_one(Y: np.ndarray, k: int, exact: bool) -> np.ndarray:
    """Scheme I: partition 0 shared by all; worker i also owns e_i exclusive partitions with alpha = 1."""
    n = Y.size
    alpha = _zeros(n, k, exact)
    e = [k - n + 1] + [1] * (n - 2) + [0]
    start = 1
    for i in range(n):
        alpha[i, 0] = Y[i] - e[i]
        alpha[i, start:start + e[i]] = 1
        start += e[i]
    assert start == k
    return alpha


def _scheme_two(Y: np.ndarray, k: int, exact: bool) -> np.ndarray:
    """Scheme II: worker i covers b_i = e_i + 1 consecutive partitions; consecutive blocks share one."""
    n = Y.size
    alpha = _zeros(n, k, exact)
    b = [k - n + 2] + [2] * (n - 2) + [1]
    start = 0
    prev_last: Any = None
    for i in range(n):
        stop = start + b[i]  # worker i covers partitions start .. stop-1
        if b[i] == 1:
            alpha[i, start] = Y[i]
        else:
            first = 1 if i == 0 else 1 - prev_last
            alpha[i, start] = first
            alpha[i, start + 1:stop - 1] = 1
            alpha[i, stop - 1] = Y[i] - first - (b[i] - 2)
        prev_last = alpha[i, stop - 1]
        start = stop - 1
    assert start == k - 1
    return alpha


def song_choi_allocation(p: ProbabilitiesLike, k: int, scheme: str = "nw") -> tuple[np.ndarray, np.ndarray]:
    r"""The coefficient matrix ``alpha`` (n x k) of a Song & Choi scheme, and its row sums ``Y``.

    ``alpha`` has column sums 1 (unbiased) and row sums :func:`optimal_row_sums` (optimal), and at most
    ``n + k - 1`` nonzeros.

    * ``"nw"`` (default): northwest-corner rule. Lay the row sums end to end,
      ``C_0 = 0, C_{i+1} = C_i + Y_i`` (so ``C_n = k``), and give worker ``i`` the overlap of
      ``[C_i, C_{i+1})`` with partition ``j``'s unit interval ``[j, j+1)``:
      ``alpha_ij = |[C_i, C_{i+1}) ∩ [j, j+1)|``. Hence ``0 <= alpha_ij <= 1``, columns sum to 1, rows
      to ``Y_i``, and each worker holds a contiguous run of partitions.
    * ``"I"``: the paper's Scheme I. With ``e = (k-n+1, 1, ..., 1, 0)``, partition
      0 is shared by everybody with ``alpha_i0 = Y_i - e_i`` and worker ``i`` owns ``e_i`` further
      partitions (consecutive from 1) with coefficient 1.
    * ``"II"``: the paper's Scheme II. Worker ``i`` covers ``b_i = e_i + 1``
      consecutive partitions, consecutive workers sharing one; first entry ``1`` (worker 0) or
      ``1 - (previous worker's last entry)``, middle entries 1, last entry ``Y_i - (rest of the row)``.

    Schemes I and II can have negative entries; :func:`heterogeneous` warns about them. Every scheme needs
    ``k >= n - 1`` (the Song-Choi setting, in which Schemes I and II are defined).

    Parameters
    ----------
    p : array_like
        Straggle probability of each worker, in (0, 1); ``Fraction`` entries give an exact result.
    k : int
        Number of partitions, ``k >= max(1, n - 1)``.
    scheme : {"nw", "I", "II"}
        Support pattern.

    Returns
    -------
    alpha : numpy.ndarray
        ``(n, k)`` coefficients (object array of ``Fraction`` in exact mode).
    Y : numpy.ndarray
        The optimal row sums.

    Examples
    --------
    >>> from fractions import Fraction as F
    >>> alpha, Y = song_choi_allocation([F(1, 10), F(1, 5), F(1, 2)], 3, "I")
    >>> [[str(a) for a in row] for row in alpha]
    [['13/14', '1', '0'], ['-1/7', '0', '1'], ['3/14', '0', '0']]
    """
    return _allocation(straggle_probabilities(p), _check_k(k), _check_scheme(scheme))


def _allocation(p: np.ndarray, k: int, scheme: str) -> tuple[np.ndarray, np.ndarray]:
    """:func:`song_choi_allocation` for validated arguments."""
    n = p.size
    exact = p.dtype == object
    check_entries(n, k, exact=exact, what="the allocation")
    Y = _row_sums(p, k)
    if n == 1:
        alpha = _zeros(1, k, exact)
        alpha[...] = 1
        return alpha, Y
    if k < n - 1:
        # The Song-Choi setting (and the paper's Schemes I/II) has k >= n - 1 partitions; the northwest-corner
        # rule itself would be well defined for fewer, but the load analysis and the schemes are stated for k >= n-1.
        raise GradcodesValueError(f"k must be >= n - 1 = {n - 1} partitions for n = {n} workers (scheme {scheme!r}); "
                                  f"got k = {k}")
    if scheme == "nw":
        return _nw(Y, k, exact), Y
    alpha = _scheme_one(Y, k, exact) if scheme == "I" else _scheme_two(Y, k, exact)
    return alpha, Y


# --------------------------------------------------------------------------------------------------------
# the code
# --------------------------------------------------------------------------------------------------------


class HeterogeneousCode(ApproximateCode):
    """A code built by :func:`heterogeneous` (Song & Choi's optimal unbiased codes for known straggle rates).

    Attributes
    ----------
    row_sums : numpy.ndarray
        ``Y``, the optimal row sums (:func:`optimal_row_sums`; Fractions for a rational code).
    objective : float or fractions.Fraction
        The bounded-gradient objective ``sum_i delta_i (sum_j |alpha_ij|)^2``.

    Examples
    --------
    >>> import gradcodes as gc
    >>> code = gc.heterogeneous([0.1, 0.1, 0.2, 0.2], 4)
    >>> isinstance(code, gc.HeterogeneousCode), code.n, code.load
    (True, 4, 2)
    """

    def __init__(self, B: MatrixLike, *, row_sums: ArrayLike, objective: float | Fraction,
                 **kwargs: Any) -> None:
        super().__init__(B, **kwargs)
        self.row_sums: np.ndarray = np.asarray(row_sums)
        self.objective: float | Fraction = objective


def heterogeneous(p: npt.ArrayLike, k: int, scheme: str = "nw", *, warn: bool = True) -> HeterogeneousCode:
    r"""Song & Choi's optimal unbiased approximate gradient code for heterogeneous stragglers.

    Worker ``i`` straggles independently with probability ``p_i``. The code has ``B = alpha`` (``n x k``,
    see :func:`song_choi_allocation`): worker ``i`` sends ``y_i = sum_j alpha_ij g_j`` and the default
    decoder ``"weighted"`` forms ``ghat = sum_{i responds} y_i / (1 - p_i)``. With
    ``delta_i = p_i/(1-p_i)``:

    * unbiased: ``E[ghat] = sum_j (sum_i alpha_ij) g_j = g`` (columns of ``alpha`` sum to 1);
    * ``E||ghat - g||^2 = sum_i delta_i ||sum_j alpha_ij g_j||^2``; for ``alpha >= 0`` and
      ``||g_j||^2 <= C`` this is at most ``C sum_i delta_i Y_i^2 = C k^2 / sum_i delta_i^{-1}``,
      the smallest value any unbiased code with these weights can guarantee (row sums
      ``Y_i = k delta_i^{-1} / sum delta^{-1}``);
    * ``nnz(alpha) <= n + k - 1``: average replication ``1 + (n-1)/k`` partitions per partition, the
      minimum for generic ``p`` (:func:`gradcodes.min_load_heterogeneous`).

    (The paper allows any nonzero ``w~_i``, sending ``alpha_ij / w~_i`` and weighting by
    ``w~_i/(1-p_i)``; only the products matter, and ``w~ = 1`` is used here.)

    Parameters
    ----------
    p : array_like
        Straggle probability of each worker, each strictly inside (0, 1); its length is the number of
        workers ``n``. ``fractions.Fraction`` entries give a rational code (``field="rational"``, exact
        ``B`` and decoder), so unbiasedness and the error can be checked exactly.
    k : int
        Number of partitions, ``k >= n - 1``.
    scheme : {"nw", "I", "II"}
        ``"nw"`` (default): northwest-corner rule, always ``0 <= alpha <= 1`` and contiguous supports.
        ``"I"`` / ``"II"``: the paper's Scheme I (one common partition) and Scheme II (chain); these can
        produce negative coefficients.
    warn : bool
        Emit :class:`NegativeCoefficientWarning` when ``min alpha < 0`` (default True).

    Returns
    -------
    HeterogeneousCode
        An :class:`~gradcodes.ApproximateCode` with ``straggle_probabilities = p``, ``params = {"p", "k",
        "scheme"}``, decoder ``"weighted"`` (``w_i = 1/(1 - p_i)``), and the attributes ``row_sums`` (``Y``) and
        ``objective``, the bounded-gradient objective ``sum_i delta_i (sum_j |alpha_ij|)^2`` (equal to ``k^2 / sum
        delta^{-1}`` when ``alpha >= 0``).

    Raises
    ------
    ValueError
        ``p`` empty, not one-dimensional or outside (0, 1); ``k < 1``; ``k < n - 1``;
        unknown ``scheme``.
    TypeError
        Non-integer ``k``, non-real ``p``, ``p`` not a sequence, or non-bool ``warn``.

    Warns
    -----
    NegativeCoefficientWarning
        Scheme I or II produced negative coefficients (see the warning class for why it matters).

    Examples
    --------
    A worked example (n = k = 3):

    >>> import gradcodes as gc
    >>> from fractions import Fraction as F
    >>> code = gc.heterogeneous([F(1, 10), F(1, 5), F(1, 2)], 3)
    >>> [[str(a) for a in row] for row in code.B]
    [['1', '13/14', '0'], ['0', '1/14', '11/14'], ['0', '0', '3/14']]
    >>> code.objective
    Fraction(9, 14)
    >>> ghat = code.decode([0, 1], code.encode(np.eye(3, dtype=object) * F(1)))
    >>> [str(x) for x in ghat]
    ['10/9', '565/504', '55/56']
    """
    pp = straggle_probabilities(p)
    k = _check_k(k)
    scheme = _check_scheme(scheme)
    if not isinstance(warn, (bool, np.bool_)):
        raise GradcodesTypeError(f"warn must be a bool, got {warn!r} of type {type(warn).__name__}")
    alpha, Y = _allocation(pp, k, scheme)
    exact = pp.dtype == object
    n = pp.size
    delta = pp / (1 - pp)
    l1 = np.array([sum(abs(a) for a in row) for row in alpha], dtype=object) if exact else np.abs(alpha).sum(1)
    objective = (delta * l1 * l1).sum()
    amin = alpha.min()
    if warn and amin < 0:
        warnings.warn(
            f"heterogeneous(scheme={scheme!r}) produced negative coefficients (min alpha = {amin}); the code is "
            f"still unbiased with optimal row sums, but the bounded-gradient error bound C*sum_i delta_i*Y_i^2 "
            f"no longer holds (it needs (sum_j |alpha_ij|)^2) and for non-aligned gradients the expected error "
            f"can be much larger; scheme='nw' gives alpha >= 0 at the same load",
            NegativeCoefficientWarning, stacklevel=2)
    w = 1 / (1 - pp)
    return HeterogeneousCode(
        alpha, row_sums=Y, objective=objective if exact else float(objective),
        field="rational" if exact else "real", name=f"heterogeneous(n={n}, k={k}, {scheme})", family="heterogeneous",
        params={"p": probability_list(pp), "k": k, "scheme": scheme},
        decoders=[FixedWeightDecoder("weighted", w)], default_decoder="weighted",
        straggle_probabilities=pp)


def _build(n: int | None = None, k: int | None = None, p: Any = None, tau: float = 1.5, scheme: str = "nw",
           seed: Any = 0) -> ApproximateCode:
    """Registry builder: ``p`` given, or drawn from the paper's model for ``n`` workers and deadline ``tau``."""
    pp = _scenario(n, p, tau, seed)
    return heterogeneous(pp, pp.size if k is None else k, scheme)


REBUILDERS.update(heterogeneous=heterogeneous)
register_adversaries("heterogeneous", heaviest_rows)
register(Scheme(
    "heterogeneous", _build,
    "Song & Choi optimal unbiased approximate code for heterogeneous straggle probabilities p (NW/I/II); "
    "load 1 + (n-1)/k",
    tour=({"p": "1/10,1/5,1/2", "k": 3}, {"n": 10, "tau": 1.5}, {"n": 100, "tau": 1.5}),
    evaluate=evaluate_approximate, kind="approximate"))
