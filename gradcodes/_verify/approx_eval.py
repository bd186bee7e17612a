"""Expected error and bias of approximate gradient codes under random (heterogeneous) stragglers.

Worker ``i`` straggles independently with probability ``p_i``. For a response pattern (mask) ``R`` the
decoder returns ``A_R`` (m x n, zero off ``R``); the estimate is ``ghat_R = A_R B G`` and its residual
``(A_R B - E) G`` with ``E = 1_k^T (x) I_m``. This module computes

* ``E||ghat - g||^2 = sum_R P(R) ||(A_R B - E) G||_F^2`` and the bias ``E[ghat] - g``,
  - exactly, by enumerating all ``2^n`` patterns in vectorised batches (``Fraction`` arithmetic when the
    code is rational, the probabilities are ``Fraction`` and the decoder is exact), or
  - by seeded Monte Carlo (mean +- standard error) when ``2^n`` is too large;
* the closed form for decoders with fixed weights ``a_i = w_i [i responds]``:
  ``E||ghat - g||^2 = ||(sum_i (1-p_i) w_i B_i - 1) G||^2 + sum_i p_i (1-p_i) w_i^2 ||B_i G||^2``,
  which for Song & Choi (``w_i = 1/(1-p_i)``, unbiased) is ``sum_i delta_i ||sum_j alpha_ij g_j||^2``;
* the minimum computation load of an optimal unbiased code, :func:`min_load_heterogeneous`.
"""

from __future__ import annotations

import math
import numbers
import time
from collections.abc import Sequence
from fractions import Fraction
from typing import Any

import numpy as np

from .._base.aliases import ArrayLike, MatrixLike, ProbabilitiesLike, RNGLike
from .._base.errors import GradcodesTypeError, GradcodesValueError
from .._base.validate import check_int, check_real, check_rng, check_size
from .._core.code import LinearCode
from .._core.decoders import Decoder
from .._core.fields import RationalField, field_for
from .._core.straggle import (
    _is_exact_scalar,
    exponential_straggle_probabilities,
    probability_list,
    straggle_probabilities,
)
from .approx_report import ApproxReport
from .bounds import min_load_heterogeneous
from .engine import Clock

__all__ = [
    "ApproxReport",
    "FixedWeightDecoder",
    "closed_form_error",
    "exponential_straggle_probabilities",
    "evaluate_approximate",
    "min_load_heterogeneous",
    "probability_list",
    "straggle_probabilities",
]

MAX_ENUMERATE = 16  # 2^16 = 65536 patterns: "auto" enumerates at or below this many workers by default
MAX_ENUMERATE_HARD = 24  # "enumerate" refuses more workers (2^24 patterns)
MAX_EXACT_ENUMERATE = 12  # beyond this, "auto" avoids Fraction enumeration (closed form, or float enumeration)
MAX_EXACT_ENUMERATE_HARD = 14  # Fraction enumeration: ~1.6 s at n = 12, about 4x more per worker; refused beyond


# --------------------------------------------------------------------------------------------------------
# decoders with fixed per-worker weights
# --------------------------------------------------------------------------------------------------------


class FixedWeightDecoder(Decoder):
    """Decoder ``a_i = w_i`` on responders, ``0`` on stragglers (weights do not depend on the pattern).

    Parameters
    ----------
    name : str
        Key in ``code.decoders``.
    weights : array_like
        Length-``n`` weights (float64, or ``Fraction`` for an exact decoder).

    Examples
    --------
    >>> import numpy as np
    >>> dec = FixedWeightDecoder("sum", np.ones(3))
    >>> dec.matrices(None, np.array([[True, False, True]]))
    array([[[1., 0., 1.]]])
    """

    def __init__(self, name: str, weights: ArrayLike | Sequence[Fraction | float]) -> None:
        if not isinstance(name, str) or not name:
            raise GradcodesTypeError(f"name must be a non-empty str, got {name!r}")
        w = np.asarray(weights)
        if w.ndim != 1 or w.size == 0:
            raise GradcodesValueError(f"weights must be a non-empty 1-D array, got shape {w.shape}")
        self.name = name
        self.exact = w.dtype == object and all(_is_exact_scalar(x) for x in w)
        if self.exact:
            w = np.array([Fraction(x) for x in w], dtype=object)
        else:
            if w.dtype.kind not in "biuf" and not (w.dtype == object and all(
                    isinstance(x, numbers.Real) and not isinstance(x, (bool, np.bool_)) for x in w)):
                raise GradcodesTypeError(f"weights must be real numbers (float, int or Fraction), got dtype {w.dtype}")
            w = w.astype(np.float64)
            if not np.isfinite(w).all():
                raise GradcodesValueError(f"weights must be finite, got {w.tolist()}")
        self.weights = w

    def matrices(self, code: LinearCode, mask: np.ndarray) -> np.ndarray:
        """Decoding matrices (b, 1, n): the fixed weights on the responders of each set, zero on its stragglers.

        Parameters
        ----------
        code : LinearCode
            The code (only its ``m`` is read; it must be 1).
        mask : array_like of bool, shape (b, n)
            Each row: the responders of one set.

        Returns
        -------
        ndarray, shape (b, 1, n)
            ``a_i = w_i`` on responders and 0 elsewhere; Fractions for an exact decoder, float64 otherwise.

        Raises
        ------
        GradcodesValueError
            If ``mask`` has not the shape ``(b, n)`` with ``n`` the number of weights, or if the code has
            ``m > 1``.

        Examples
        --------
        >>> import numpy as np, gradcodes as gc
        >>> code = gc.fractional_repetition(4, 1)
        >>> dec = gc.FixedWeightDecoder("halves", np.full(4, 0.5))
        >>> dec.matrices(code, np.array([[1, 1, 0, 1]], dtype=bool)).tolist()
        [[[0.5, 0.5, 0.0, 0.5]]]
        """
        mask = np.asarray(mask, dtype=bool)
        if mask.ndim != 2 or mask.shape[1] != self.weights.size:
            raise GradcodesValueError(f"mask must have shape (b, {self.weights.size}), got {mask.shape}")
        if getattr(code, "m", 1) != 1:
            raise GradcodesValueError(
                f"FixedWeightDecoder {self.name!r} needs m = 1 (one decoding row), got m = {code.m}")
        zero = field_for(self.exact).const(0)
        a = np.where(mask, self.weights[None, :], zero)
        return a[:, None, :]

    def __repr__(self) -> str:
        return f"FixedWeightDecoder({self.name!r}, n={self.weights.size})"



# --------------------------------------------------------------------------------------------------------
# helpers
# --------------------------------------------------------------------------------------------------------


def _check_code(code: Any) -> None:
    if not isinstance(code, LinearCode):
        raise GradcodesTypeError(f"code must be a gradcodes code (e.g. an ApproximateCode), got {type(code).__name__}")
    if code.field not in ("real", "rational"):
        raise GradcodesValueError(f"the evaluator supports real and rational codes, got field {code.field!r}")


def _resolve_decoder(code: Any, decoder: Any) -> Decoder:
    if decoder is None:
        decoder = code.default_decoder
    if isinstance(decoder, str):
        try:
            return code.decoders[decoder]
        except KeyError:
            raise GradcodesValueError(f"decoder must be one of {sorted(code.decoders)}, got {decoder!r}") from None
    if isinstance(decoder, Decoder):
        return decoder
    raise GradcodesTypeError(f"decoder must be a name or a Decoder, got {type(decoder).__name__}")


def _resolve_p(code: Any, p: Any) -> np.ndarray:
    """Validated probabilities: ``Fraction``s when all were given exactly, else float64."""
    if p is None:
        p = getattr(code, "straggle_probabilities", None)
        if p is None:
            raise GradcodesValueError("the code has no straggle_probabilities; pass p= (the command line: --p), one "
                                      "probability per worker in (0, 1), or a scalar")
    return straggle_probabilities(p, code.n)


def _gradients(code: Any, gradients: Any) -> tuple[np.ndarray | None, str]:
    """The (k*m, length) gradient matrix (``None`` for the identity): an object array of ``Fraction``/int when every
    entry is exact, else float64."""
    km = code.k * code.m
    if gradients is None or (isinstance(gradients, str) and gradients == "orthonormal"):
        return None, "orthonormal (g_j = e_j)"
    if isinstance(gradients, str):
        if gradients == "aligned":
            return RationalField().ones((km, 1)), "aligned (g_j = 1)"
        raise GradcodesValueError(
            f"gradients must be 'orthonormal', 'aligned' or a (k, length) array, got {gradients!r}")
    if code.m != 1:
        raise GradcodesValueError(f"a gradients array needs m = 1 (got m = {code.m}); use 'orthonormal' or 'aligned'")
    try:
        G = np.asarray(gradients)
    except ValueError:
        raise GradcodesValueError("gradients must be a rectangular (k, length) array") from None
    if G.ndim == 1:
        G = G[:, None]
    if G.ndim != 2 or G.shape[0] != code.k or G.shape[1] == 0:
        raise GradcodesValueError(
            f"gradients must have shape (k, length) = ({code.k}, length) with length >= 1, got "
            f"{np.shape(gradients)}")
    if G.dtype.kind in "biu":
        return G.astype(object), f"array {G.shape[0]}x{G.shape[1]}"
    if G.dtype == object:
        if all(_is_exact_scalar(x) for x in G.flat):
            return G, f"array {G.shape[0]}x{G.shape[1]}"
        bad = [x for x in G.flat if isinstance(x, (bool, np.bool_)) or not isinstance(x, numbers.Real)]
        if bad:
            raise GradcodesTypeError(f"gradients must be real numbers, got {bad[0]!r} of type {type(bad[0]).__name__}")
    elif G.dtype.kind != "f":
        raise GradcodesTypeError(f"gradients must be a real array, got dtype {G.dtype}")
    G = G.astype(np.float64)
    if not np.isfinite(G).all():
        raise GradcodesValueError("gradients must be finite (no NaN or inf)")
    return G, f"array {G.shape[0]}x{G.shape[1]}"


def _E(code: Any, exact: bool) -> np.ndarray:
    E = np.kron(np.ones((1, code.k), dtype=np.int64), np.eye(code.m, dtype=np.int64))
    return np.vectorize(Fraction, otypes=[object])(E) if exact else E.astype(np.float64)


def _B(code: Any, exact: bool) -> np.ndarray:
    return np.asarray(code.B).astype(object) if exact else np.array(code.float_B(), dtype=np.float64)


def _masks(start: int, stop: int, n: int) -> np.ndarray:
    t = np.arange(start, stop, dtype=np.int64)
    return ((t[:, None] >> np.arange(n, dtype=np.int64)[None, :]) & 1).astype(bool)


def _fixed_weights(dec: Decoder, code: Any) -> np.ndarray | None:
    """The weights of a fixed-weight decoder on an ``m = 1`` code (else ``None``: no closed form)."""
    return dec.weights if isinstance(dec, FixedWeightDecoder) and code.m == 1 else None


def _closed(B: np.ndarray, w: np.ndarray, p: np.ndarray, G: np.ndarray | None, e: np.ndarray) -> tuple[Any, Any]:
    """``(E||ghat - g||^2, E[ghat] - g)`` of the fixed-weight decoder ``w`` (m = 1), in closed form."""
    q = 1 - p
    bias = (q * w) @ B - e  # (k,)
    BG = B if G is None else B @ G  # (n, p)
    if G is not None:
        bias = bias @ G
    return (bias * bias).sum() + (p * q * w * w * (BG * BG).sum(axis=1)).sum(), bias


def _as_float(p: np.ndarray, G: np.ndarray | None) -> tuple[np.ndarray, np.ndarray | None]:
    return p.astype(np.float64), None if G is None else G.astype(np.float64)


def _rational(code: Any, dec: Decoder, p: np.ndarray, G: np.ndarray | None) -> bool:
    """Exact arithmetic is possible: rational code, exact decoder, ``Fraction`` p, rational (or identity) G."""
    return bool(code.field == "rational" and dec.exact and p.dtype == object and (G is None or G.dtype == object))


def _closed_form(code: Any, dec: Decoder, w: np.ndarray, p: np.ndarray, G: np.ndarray | None) -> tuple[Any, Any]:
    """:func:`_closed` on validated inputs, exact whenever :func:`_rational` allows (float otherwise)."""
    exact = _rational(code, dec, p, G)
    if not exact:
        p, G = _as_float(p, G)
        w = w.astype(np.float64)
    err, bias = _closed(_B(code, exact), w, p, G, _E(code, exact)[0])
    return (err, bias) if exact else (float(err), bias)


# --------------------------------------------------------------------------------------------------------
# closed form
# --------------------------------------------------------------------------------------------------------


def closed_form_error(code: LinearCode, gradients: MatrixLike | None = None, *, p: ProbabilitiesLike | None = None,
                      decoder: str | Decoder | None = None) -> float | Fraction:
    r"""Expected squared error of a fixed-weight decoder, in closed form.

    With ``a_i = w_i`` when worker ``i`` responds (probability ``1 - p_i``, independently) and 0 otherwise,

    .. math:: E\|\hat g - g\|^2 = \Big\|\big(\textstyle\sum_i (1-p_i) w_i B_i - \mathbf 1\big) G\Big\|^2
              + \sum_i p_i (1-p_i) w_i^2 \|B_i G\|^2 .

    For Song & Choi (``w_i = 1/(1-p_i)``, column sums 1) this is
    ``sum_i delta_i ||sum_j alpha_ij g_j||^2``.

    Parameters
    ----------
    code : ApproximateCode
        A code with ``m = 1`` whose decoder is a :class:`FixedWeightDecoder`.
    gradients : {"orthonormal", "aligned"} or array_like, optional
        ``G`` (k x p); default the identity (``g_j = e_j``).
    p : array_like, optional
        Straggle probabilities; default ``code.straggle_probabilities``.
    decoder : str or Decoder, optional
        Default: the code's default decoder.

    Returns
    -------
    float or fractions.Fraction
        Exact when the code, ``p``, ``G`` and the weights are rational.

    Raises
    ------
    GradcodesValueError
        If the decoder has no fixed weights for this code (only fixed-weight decoders of ``m = 1`` codes have a closed
        form).

    Examples
    --------
    >>> import gradcodes as gc
    >>> from fractions import Fraction as F
    >>> code = gc.heterogeneous([F(1, 10), F(1, 5), F(1, 2)], 3)
    >>> gc.closed_form_error(code)
    Fraction(1441, 3528)
    """
    _check_code(code)
    dec = _resolve_decoder(code, decoder)
    w = _fixed_weights(dec, code)
    if w is None:
        raise GradcodesValueError(f"decoder {dec.name!r} does not have fixed weights on an m = 1 code (m = {code.m}); "
                                  f"use evaluate_approximate")
    return _closed_form(code, dec, w, _resolve_p(code, p), _gradients(code, gradients)[0])[0]


# --------------------------------------------------------------------------------------------------------
# the evaluator
# --------------------------------------------------------------------------------------------------------


def evaluate_approximate(code: LinearCode, gradients: MatrixLike | None = None, *, p: ProbabilitiesLike | None = None,
                         decoder: str | Decoder | None = None,
                         method: str = "auto", samples: int = 20000, rng: RNGLike = None, batch_size: int = 4096,
                         max_enumerate: int = MAX_ENUMERATE, time_budget: float | None = None,
                         progress: bool | None = None) -> ApproxReport:
    r"""Expected squared error and bias of an approximate code under independent random stragglers.

    Worker ``i`` straggles with probability ``p_i`` independently. For every response pattern ``R`` the
    decoder gives ``A_R`` and the estimate ``ghat_R = A_R B G``; this returns ``E||ghat - g||^2``, the bias
    ``E[ghat] - g`` and the load statistics.

    Parameters
    ----------
    code : LinearCode
        Usually an ``ApproximateCode``; any real or rational code whose decoders accept arbitrary masks works.
    gradients : {"orthonormal", "aligned"} or array_like, optional
        The partial gradients ``G`` (k x p, real). ``"orthonormal"`` (default) is ``G = I`` (``g_j = e_j``), so
        the error is ``E||A_R B - 1||^2``; ``"aligned"`` is ``g_j = 1`` for all ``j`` (the bounded-gradient worst
        case for nonnegative codes).
    p : array_like or float, optional
        Straggle probabilities (default ``code.straggle_probabilities``).
    decoder : str or Decoder, optional
        Default: the code's default decoder.
    method : {"auto", "enumerate", "montecarlo", "closed"}
        ``"enumerate"``: all ``2^n`` patterns in vectorised batches (``n <= 24``). ``"closed"``: the closed form
        of :func:`closed_form_error` (fixed-weight decoders, any ``n``). ``"montecarlo"``: ``samples`` seeded
        patterns, mean ± standard error. ``"auto"`` enumerates when ``n <= max_enumerate``; beyond, it takes the
        closed form when the decoder has fixed weights and Monte Carlo otherwise. Exact (``Fraction``)
        enumeration is used up to ``n = 12`` by ``"auto"`` (beyond, the exact closed form when it applies, else
        float enumeration) and refused beyond ``n = 14`` (its cost grows about 4x per worker).
    samples : int
        Monte Carlo sample count (>= 2).
    rng : None, int, numpy.random.SeedSequence or numpy.random.Generator, optional
        Monte Carlo random state (SPEC 7: None for fresh entropy, an int, a SeedSequence or a
        Generator).
    batch_size : int
        Patterns per vectorised batch, ``1 <= batch_size <= 2^20`` (memory grows with it).
    max_enumerate : int
        Largest ``n`` that ``"auto"`` enumerates, ``0 <= max_enumerate <= 24``.
    time_budget : float, optional
        Seconds (``>= 0``; the clock of :func:`gradcodes.verify`). An enumeration that the rate of its first batches
        predicts to overrun it is abandoned for Monte Carlo over the time left, and Monte Carlo stops when it runs
        out, with the estimate of the samples drawn so far (``patterns``; ``budget_exhausted`` and ``notes`` say
        so; at least one batch is drawn). The result then depends on the machine's speed.
    progress : bool, optional
        Progress on stderr (tqdm on a terminal, a line every 10 s otherwise); default: when the run is predicted
        to take more than 10 s.

    Returns
    -------
    ApproxReport
        Exact (``Fraction`` values, ``exact=True``) when the code is rational, its decoder exact, ``p`` and ``G``
        rational (``Fraction`` or int entries) and the method is ``"enumerate"`` or ``"closed"``.

    Raises
    ------
    GradcodesValueError
        If a parameter is out of its range (the message names the parameter and the range), ``method`` is unknown, or
        ``method="closed"`` with a decoder that has no fixed weights.
    GradcodesTypeError
        If ``progress`` is not a bool or None.

    Examples
    --------
    >>> import gradcodes as gc
    >>> from fractions import Fraction as F
    >>> rep = gc.evaluate_approximate(gc.heterogeneous([F(1, 10), F(1, 5), F(1, 2)], 3))
    >>> rep.expected_error, rep.unbiased, rep.patterns
    (Fraction(1441, 3528), True, 8)
    """
    t0 = time.perf_counter()
    _check_code(code)
    if method not in ("auto", "enumerate", "montecarlo", "closed"):
        raise GradcodesValueError(f"method must be 'auto', 'enumerate', 'montecarlo' or 'closed', got {method!r}")
    samples = check_int("samples", samples, 2)
    batch = check_int("batch_size", batch_size, 1, 1 << 20)  # bounds the (batch, n) masks and (batch, m, k) residuals
    max_enumerate = check_int("max_enumerate", max_enumerate, 0, MAX_ENUMERATE_HARD)
    budget = None if time_budget is None else check_real("time_budget", time_budget, 0)
    if progress is not None and not isinstance(progress, bool):
        raise GradcodesTypeError(f"progress must be a bool or None, got {type(progress).__name__}")
    notes: list[str] = []
    ran_out = False
    gen = check_rng(rng)
    n = code.n
    check_size("the Monte Carlo work samples * n", samples * n, "work")
    dec = _resolve_decoder(code, decoder)
    w = _fixed_weights(dec, code)
    pp = _resolve_p(code, p)
    G, gdesc = _gradients(code, gradients)
    exact = _rational(code, dec, pp, G)
    if method == "auto":
        if n <= max_enumerate and not (exact and w is not None and n > MAX_EXACT_ENUMERATE):
            method = "enumerate"
            exact = exact and n <= MAX_EXACT_ENUMERATE
        else:
            method = "closed" if w is not None else "montecarlo"
    if method == "closed" and w is None:
        raise GradcodesValueError(f"method='closed' needs a fixed-weight decoder and m = 1; decoder {dec.name!r} "
                                  f"is not one (use 'enumerate' or 'montecarlo')")
    if method == "enumerate" and n > MAX_ENUMERATE_HARD:
        raise GradcodesValueError(
            f"method='enumerate' needs n <= {MAX_ENUMERATE_HARD} workers (2^n patterns), got n = {n}; "
            f"use method='montecarlo'" + (" or 'closed'" if w is not None else ""))
    if method == "enumerate" and exact and n > MAX_EXACT_ENUMERATE_HARD:
        raise GradcodesValueError(
            f"exact (Fraction) enumeration of 2^n patterns needs n <= {MAX_EXACT_ENUMERATE_HARD} "
            f"workers (about 4x slower per worker), got n = {n}; use method='closed' (exact, fixed-weight "
            f"decoders), float probabilities (float enumeration) or method='montecarlo'")
    # the closed form is reported next to every method when it applies (exact whenever possible: it is cheap)
    closed, closed_bias = (None, None) if w is None else _closed_form(code, dec, w, pp, G)
    exact = exact and method != "montecarlo"
    if not exact:
        pp, G = _as_float(pp, G)
    B = _B(code, exact)
    E = _E(code, exact)
    target = E if G is None else E @ G  # (m, p): the true gradient, blocks as rows
    g2 = (target * target).sum()
    err_se = bias_se = 0.0

    def residuals(mask: np.ndarray) -> np.ndarray:
        A = np.asarray(dec.matrices(code, mask))
        if A.shape != (mask.shape[0], code.m, n):
            raise GradcodesValueError(
                f"decoder {dec.name!r} returned shape {A.shape}, expected {(mask.shape[0], code.m, n)}")
        if not exact:
            A = A.astype(np.float64)
            if not np.isfinite(A).all():
                raise GradcodesValueError(f"decoder {dec.name!r} returned non-finite decoding coefficients")
        R = A @ B - E[None]  # (b, m, k*m)
        return R if G is None else R @ G  # (b, m, p)

    if method == "closed":  # (exact here iff _rational, as in _closed_form)
        assert closed is not None and closed_bias is not None      # method "closed" needs fixed weights
        err, bias, patterns = closed, closed_bias[None, :], 0
    elif method == "enumerate":
        total = 1 << n
        err = Fraction(0) if exact else 0.0
        bias = field_for(exact).zeros(target.shape)
        clock = Clock(total, progress if progress is not None else (False if budget is not None else None),
                      f"evaluate_approximate({n} workers)", "patterns")
        start = piece = 0
        try:
            while start < total:
                piece = min(batch, max(64, 2 * piece)) if budget is not None else batch
                mask = _masks(start, min(total, start + piece), n)
                probs = np.where(mask, (1 - pp)[None, :], pp[None, :]).prod(axis=1)
                RG = residuals(mask)
                err = err + (probs * (RG * RG).sum(axis=(1, 2))).sum()
                bias = bias + np.tensordot(probs, RG, axes=(0, 0))
                start += mask.shape[0]
                clock.update(mask.shape[0])
                if budget is not None and start < total and clock.over_budget(budget):
                    break
        finally:
            clock.close()
        patterns = total
        if start < total:                     # abandoned: Monte Carlo over the time left (float arithmetic)
            notes.append(f"enumerating 2^{n} = {total:,} patterns would take about "
                         f"{clock.predicted() + time.perf_counter() - clock.start:.3g} s > time_budget = {budget:g} s: "
                         f"Monte Carlo instead")
            method, exact = "montecarlo", False
            pp, G = _as_float(pp, G)
            B, E = _B(code, False), _E(code, False)
            target = E if G is None else E @ G
            g2 = (target * target).sum()
    if method == "montecarlo":
        # sums of (x - K) and (x - K)^2 with K the first batch's mean: the variance does not cancel catastrophically
        s1 = s2 = 0.0
        b1 = np.zeros(target.shape)
        b2 = np.zeros(target.shape)
        deadline = None if budget is None else t0 + budget
        clock = Clock(samples, progress if progress is not None else (False if budget is not None and budget <= 10
                                                                      else None),
                      f"evaluate_approximate({n} workers) Monte Carlo", "samples")
        done = piece = 0
        mc_start = time.perf_counter()
        try:
            while done < samples:
                piece = min(batch, max(64, 2 * piece)) if budget is not None else batch
                if deadline is not None and done:          # no piece that the rate so far says would overrun
                    per = (time.perf_counter() - mc_start) / done
                    piece = max(2, min(piece, int((deadline - time.perf_counter()) / per))) if per > 0 else piece
                mask = gen.random((min(piece, samples - done), n)) >= pp[None, :]
                RG = residuals(mask)
                e = (RG * RG).sum(axis=(1, 2))
                if done == 0:
                    ke, kb = e.mean(), RG.mean(axis=0)
                e, RG = e - ke, RG - kb
                s1 += e.sum()
                s2 += (e * e).sum()
                b1 += RG.sum(axis=0)
                b2 += (RG * RG).sum(axis=0)
                done += mask.shape[0]
                clock.update(mask.shape[0])
                if deadline is not None and done < samples and time.perf_counter() > deadline and done >= 2:
                    ran_out = True
                    notes.append(f"time_budget = {budget:g} s ran out after {done:,} of {samples:,} samples")
                    break
        finally:
            clock.close()
        N = patterns = done
        err = ke + s1 / N
        err_se = math.sqrt(max(s2 - s1 * s1 / N, 0.0) / (N - 1) / N)
        bias = kb + b1 / N
        bias_se = float(math.sqrt((np.maximum(b2 - b1 * b1 / N, 0.0) / (N - 1)).sum() / N))
    bias2 = (bias * bias).sum()
    if exact:
        unbiased = bool(bias2 == 0)
        bias_norm: Any = Fraction(0) if unbiased else math.sqrt(bias2)
        rel = err / g2 if g2 else None
    else:
        err, g2 = float(err), float(g2)
        bias_norm = float(np.sqrt(bias2))
        # Monte Carlo: consistent with 0 at 4 standard errors; otherwise 0 up to rounding
        scale = max(1.0, math.sqrt(g2))
        unbiased = bias_norm <= (4 * bias_se + 1e-12 * scale if method == "montecarlo" else 1e-10 * scale)
        rel = err / g2 if g2 else None
    Bc = np.asarray(code.B)
    nz = Bc != 0
    nnz = int(np.count_nonzero(nz))
    rep = Fraction(nnz, code.k)
    bound = min_load_heterogeneous(n, code.k)
    return ApproxReport(
        code_name=str(getattr(code, "name", None) or type(code).__name__), n=n, k=code.k, gradients=gdesc,
        decoder=dec.name, expected_error=err, expected_error_stderr=err_se, relative_error=rel,
        bias=bias.reshape(-1), bias_norm=bias_norm, bias_stderr=bias_se, unbiased=bool(unbiased),
        method=method, patterns=patterns, exact=exact, closed_form=closed, nnz=nnz, replication=rep,
        load=int(nz.sum(axis=1).max()), load_lower_bound=bound, meets_lower_bound=bool(rep <= bound),
        min_coefficient=Bc.min(), gradient_norm2=g2,
        seed=int(rng) if isinstance(rng, numbers.Integral) and method == "montecarlo" else None,
        seconds=time.perf_counter() - t0, notes=notes, budget_exhausted=ran_out,
    )
