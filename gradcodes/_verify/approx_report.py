"""The reports of approximate codes: ``ApproxReport`` (:func:`gradcodes.evaluate_approximate`, expected error and
bias under random stragglers) and ``ApproximationReport`` (:func:`gradcodes.worst_case_error`, the worst straggler
set as a proven value or as a lower and an upper bound).

Both print errors relative to the same quantity: the squared error of the decoded sum divided by the squared norm
of the true sum, ``|err|^2/|g|^2``. With orthonormal gradients (``g_j = e_j``, the convention of both reports)
``|g|^2 = ||E||_F^2 = k m``, so a worst-case error ``||A_F B - E||_2`` reads ``||A_F B - E||^2 / (k m)``: rows with
different numbers of partitions are comparable, and comparable with the expected error ``E|err|^2/|g|^2``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

import numpy as np

from .._base.output import labelled

__all__ = ["ApproxReport", "ApproximationReport"]


@dataclass
class ApproxReport:
    """Expected error and bias under independent stragglers (the worst case is :class:`~gradcodes.ApproximationReport`).

    Attributes
    ----------
    expected_error : float or Fraction
        ``E||ghat - g||^2`` (exact ``Fraction`` when ``exact``).
    expected_error_stderr : float
        Monte Carlo standard error (0 for enumeration).
    relative_error : float or Fraction or None
        ``expected_error / ||g||^2`` (None when ``g = 0``).
    bias : numpy.ndarray
        ``E[ghat] - g`` (one entry per gradient coordinate, ``m`` blocks concatenated).
    bias_norm : float or Fraction
        ``||E[ghat] - g||_2`` (for ``Fraction`` results, the squared norm is exact and this is its root).
    bias_stderr : float
        Monte Carlo noise level of ``bias_norm``: ``sqrt(sum_c Var(residual_c) / samples)`` (0 if enumerated).
    unbiased : bool
        Enumeration: bias exactly 0 (exact mode) or ``bias_norm <= 1e-10 * ||g||``. Monte Carlo:
        ``bias_norm <= 4 bias_stderr`` (consistent with zero).
    method : str
        ``"enumerate"``, ``"closed"`` (fixed-weight closed form, no patterns) or ``"montecarlo"``.
    patterns : int
        Number of patterns enumerated or sampled.
    exact : bool
        Rational arithmetic throughout.
    closed_form : float or Fraction or None
        The fixed-weight closed form when the decoder has fixed weights, else ``None``.
    nnz, replication, load, load_lower_bound, meets_lower_bound
        Nonzeros of ``B``, average replication ``nnz/k`` (``Fraction``), max per-worker load,
        :func:`min_load_heterogeneous` and whether ``replication <= load_lower_bound`` (equality: the code
        attains the minimum; below it is possible only for a code that is not optimal and unbiased, such as
        IS-SGD, or for non-generic ``p``).
    min_coefficient : float or Fraction
        Smallest entry of ``B`` (negative entries void the bounded-gradient bound).
    gradient_norm2 : float or Fraction
        ``||g||^2`` of the gradients used.
    notes : list of str
        How a ``time_budget`` changed the method or cut the sampling.
    budget_exhausted : bool
        The ``time_budget`` ran out (the Monte Carlo estimate is over ``patterns`` samples, fewer than asked).

    Examples
    --------
    >>> import gradcodes as gc
    >>> report = gc.evaluate_approximate(gc.stochastic_gc(6, 2, 0.2, rng=0), p=0.2)
    >>> report.method, report.patterns, bool(report.bias_norm < 1e-12)      # 2**6 patterns, exactly
    ('enumerate', 64, True)
    """

    code_name: str
    n: int
    k: int
    gradients: str
    decoder: str
    expected_error: float | Fraction
    expected_error_stderr: float
    relative_error: float | Fraction | None
    bias: np.ndarray
    bias_norm: float | Fraction
    bias_stderr: float
    unbiased: bool
    method: str
    patterns: int
    exact: bool
    closed_form: float | Fraction | None
    nnz: int
    replication: Fraction
    load: int
    load_lower_bound: Fraction
    meets_lower_bound: bool
    min_coefficient: float | Fraction
    gradient_norm2: float | Fraction | None = None
    seed: int | None = None
    seconds: float = 0.0
    extra: dict = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    budget_exhausted: bool = False

    def _rel_text(self, digits: int = 4) -> str:
        if self.relative_error is None:
            return "-"
        txt = f"{float(self.relative_error):.{digits}g}"
        if self.method == "montecarlo" and self.gradient_norm2:
            txt += f" ± {self.expected_error_stderr / float(self.gradient_norm2):.2g}"
        return txt

    def _bound_text(self) -> str:
        if self.replication == self.load_lower_bound:
            return "meets it"
        if self.meets_lower_bound:  # below: not an optimal unbiased code, or p not generic (see the bound)
            return "below it; the bound is for optimal unbiased codes with generic p"
        return "above it"

    def tour_row(self) -> dict[str, Any]:
        """The columns ``gradcodes tour`` prints for an approximate code (error and bias, not exactness).

        Returns
        -------
        dict of str to str or number
            Column name to cell, ``result`` among them.

        Examples
        --------
        >>> import gradcodes as gc
        >>> gc.evaluate_approximate(gc.stochastic_gc(6, 2, 0.2, rng=0), p=0.2).tour_row()["result"]
        'unbiased'
        """
        return {
            "scheme": self.code_name, "n": self.n, "k": self.k,
            "load / bound": f"{self.load} / -",
            "replication / bound": f"{float(self.replication):.3g} / {float(self.load_lower_bound):.3g}",
            "sets checked": "closed form" if self.method == "closed"
            else f"{self.patterns:,}" + (" MC" if self.method == "montecarlo" else ""),
            "exhaustive": "yes" if self.method in ("enumerate", "closed") else "no",
            "result": "unbiased" if self.unbiased else "BIASED",
            "E|err|^2/|g|^2": self._rel_text(),
            "|bias|/|g|": f"{float(self.bias_norm) / math.sqrt(float(self.gradient_norm2)):.2g}"
            if self.gradient_norm2 else "-",
            "seconds": f"{self.seconds:.2f}",
        }

    def __str__(self) -> str:
        if self.method == "montecarlo":
            err = (f"{float(self.expected_error):.6g} ± {self.expected_error_stderr:.2g} (Monte Carlo, "
                   f"{self.patterns} samples, seed {self.seed})")
        elif self.method == "closed":
            err = f"{self.expected_error} (closed form{', exact' if self.exact else ''})"
        else:
            err = f"{self.expected_error} (all {self.patterns} patterns{', exact' if self.exact else ''})"
        bias = f"{float(self.bias_norm):.3g}"
        if self.method == "montecarlo":
            bias += f" (Monte Carlo noise {self.bias_stderr:.2g})"
        lines = [
            f"{self.code_name}: n = {self.n} workers, k = {self.k} partitions, decoder {self.decoder!r}, "
            f"gradients {self.gradients}",
            f"  E||ghat - g||^2 = {err}",
            f"  relative error  = {self._rel_text(6)}  (E||ghat - g||^2 / ||g||^2)",
            f"  ||E[ghat] - g|| = {bias}  -> {'unbiased' if self.unbiased else 'BIASED'}",
        ]
        if self.closed_form is not None:
            lines.append(f"  closed form     = {self.closed_form}")
        lines.append(f"  load: nnz(B) = {self.nnz}, replication {float(self.replication):.4g} per partition "
                     f"(minimum 1 + (n-1)/k = {float(self.load_lower_bound):.4g}: "
                     f"{self._bound_text()}), max per worker {self.load}")
        if float(self.min_coefficient) < 0:
            lines.append(f"  min coefficient = {float(self.min_coefficient):.4g} (negative)")
        lines.append(f"  {self.seconds:.3f} s")
        lines.extend(line for x in self.notes for line in labelled("  note: ", x))
        return "\n".join(lines)



def _rel(x: float, norm2: float) -> str:
    return "-" if not math.isfinite(x) else f"{x * x / norm2:.3g}"


@dataclass
class ApproximationReport:
    """Worst-case error over the sets of ``s`` stragglers (the expected error is :class:`~gradcodes.ApproxReport`).

    The worst error is proven, or bracketed by a lower and an upper bound.

    Errors are ``||A_F B - E||_2`` (the error of the decoded sum per unit of ``||G||_2``, as
    :func:`gradcodes.approximation_error`); printed tables divide their squares by ``norm2 = ||E||_F^2 = k m``
    (``|err|^2/|g|^2`` with orthonormal gradients, the normalisation of :class:`gradcodes.ApproxReport` too).

    Attributes
    ----------
    worst_lower : float
        The largest error of the sets evaluated (``worst_responders`` is that set): a lower bound on the worst case,
        equal to it when ``proven``.
    lower_source : str
        How it was found: ``"exhaustive (N sets)"``, ``"theorem: ..."`` or ``"search: structured+random+greedy (N
        sets)"`` (with ``"time_budget ran out"`` when the budget stopped it).
    worst_upper : float
        A certified upper bound on the worst case (``inf`` when there is none): every set was evaluated, or a
        theorem of the code's family (``upper_source`` cites it with its conditions), or the trivial bound of
        least-squares decoders.
    upper_source : str
        How the upper bound is proven (``"none"`` when there is none).
    proven : bool
        The worst case is known exactly: every set was evaluated, or a theorem gives the value and a set attaining
        it (``worst_lower == worst_upper``).
    average_error, average_stderr : float
        Mean of ``||A_F B - E||_2`` over every set (``exhaustive``) or over uniformly random sets (then with its
        standard error); ``mean_squared_error`` is the mean of the squares.
    strategies : dict
        Sets evaluated per strategy (``exhaustive``, ``lexicographic prefix``, ``structured:<adversary>``, ``random``,
        ``greedy``).
    notes : list of str
        Why the result is not exhaustive, and whether a time budget stopped it.

    Examples
    --------
    >>> import gradcodes as gc
    >>> report = gc.worst_case_error(gc.expander_code(8, 3, rng=0), s=2)
    >>> report.proven, report.exhaustive
    (True, True)
    """

    name: str
    n: int
    s: int
    decoder: str
    exhaustive: bool
    patterns_checked: int
    patterns_total: int
    worst_lower: float
    lower_source: str
    worst_responders: tuple[int, ...]
    worst_upper: float
    upper_source: str
    proven: bool
    average_error: float
    average_stderr: float
    mean_squared_error: float
    norm2: float
    load: int
    seconds: float
    strategies: dict[str, int] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    budget_exhausted: bool = False

    @property
    def worst(self) -> float | None:
        """The worst error when it is proven (every set, or an attained theorem), else ``None``."""
        return self.worst_lower if self.proven else None

    @property
    def bound_holds(self) -> bool:
        """``worst_lower <= worst_upper`` up to rounding (False means a bug in a theorem's implementation)."""
        return self.worst_lower <= self.worst_upper * (1 + 1e-9) + 1e-12

    @property
    def worst_error(self) -> float:
        """Deprecated: ``worst_lower`` (a lower bound unless ``proven``; ``worst`` is the proven value)."""
        import warnings

        warnings.warn("ApproximationReport.worst_error is deprecated: use worst_lower (a lower bound unless proven), "
                      "worst (the proven value or None) and worst_upper", DeprecationWarning, stacklevel=2)
        return self.worst_lower

    @property
    def bound(self) -> float | None:
        """Deprecated: ``worst_upper`` (``None`` when it is infinite)."""
        import warnings

        warnings.warn("ApproximationReport.bound is deprecated: use worst_upper and upper_source", DeprecationWarning,
                      stacklevel=2)
        return self.worst_upper if math.isfinite(self.worst_upper) else None

    def relative(self, error: float) -> float:
        """``error^2 / ||E||_F^2``: an error ``||A_F B - E||_2`` relative to the true sum, squared.

        Parameters
        ----------
        error : float
            An error ``||A_F B - E||_2``.

        Returns
        -------
        float
            ``error**2 / (k m)``.

        Examples
        --------
        >>> import gradcodes as gc
        >>> gc.worst_case_error(gc.expander_code(8, 3, rng=0), s=2).relative(1.0)        # k m = 8
        0.125
        """
        return error * error / self.norm2

    @property
    def result(self) -> str:
        """``"proven"``, ``"bounded"`` (a certified upper bound above the lower one), ``"lower bound only"`` or
        ``"bound violated"``."""
        if not self.bound_holds:
            return "bound violated"
        if self.proven:
            return "proven"
        return "bounded" if math.isfinite(self.worst_upper) else "lower bound only"

    def __str__(self) -> str:
        k_m = self.norm2
        lines = [f"{self.name} (n={self.n}, s={self.s}, load={self.load}, decoder={self.decoder}); error "
                 f"||A_F B - E||_2, relative |err|^2/|g|^2 = error^2/{k_m:g}"]
        if self.proven:
            lines.append(f"  worst error   = {self.worst_lower:.4g} (relative {_rel(self.worst_lower, k_m)}): "
                         f"{self.lower_source}")
        else:
            lines.append(f"  worst error  >= {self.worst_lower:.4g} (relative {_rel(self.worst_lower, k_m)}): "
                         f"{self.lower_source} -- a lower bound, not the worst case")
            up = "none" if not math.isfinite(self.worst_upper) else f"{self.worst_upper:.4g}"
            lines.append(f"              <= {up} (relative {_rel(self.worst_upper, k_m)}): {self.upper_source}"
                         + ("" if self.bound_holds else "  -- VIOLATED"))
        if self.proven and self.upper_source and not self.exhaustive:
            lines.append(f"                 upper bound: {self.upper_source}")
        lines.append(f"  average error {self.average_error:.4g}" + (
            f" (all {self.patterns_total:,} sets)" if self.exhaustive
            else f" ± {self.average_stderr:.2g} (random sets)") + f", mean relative "
            f"{self.mean_squared_error / k_m:.3g}")
        lines.append(f"  {self.patterns_checked:,} of {self.patterns_total:,} straggler sets evaluated in "
                     f"{self.seconds:.2f} s")
        lines.extend(line for x in self.notes for line in labelled("  note: ", x))
        return "\n".join(lines)

    def tour_row(self) -> dict[str, Any]:
        """The columns of ``gradcodes tour`` (errors as ``|err|^2/|g|^2``; ``=`` proven, ``>=`` a lower bound).

        Returns
        -------
        dict of str to str or number
            Column name to cell, ``result`` among them.

        Examples
        --------
        >>> import gradcodes as gc
        >>> gc.worst_case_error(gc.expander_code(8, 3, rng=0), s=2).tour_row()["result"]
        'proven'
        """
        k_m = self.norm2
        lower = ("= " if self.proven else ">= ") + _rel(self.worst_lower, k_m)
        upper = ("= " if self.proven else "<= ") + _rel(self.worst_upper, k_m) if math.isfinite(self.worst_upper) \
            else "none"
        return {"scheme": self.name, "n": self.n, "s": self.s, "load": self.load,
                "sets checked": f"{self.patterns_checked:,}", "exhaustive": "yes" if self.exhaustive else "no",
                "result": self.result,
                "worst |err|^2/|g|^2": lower, "how": _short(self.lower_source),
                "upper": upper, "upper from": _short(self.upper_source),
                "mean |err|^2/|g|^2": f"{self.mean_squared_error / k_m:.2g}", "seconds": f"{self.seconds:.2f}"}


def _short(source: str) -> str:
    """The first two clauses of a source (``"theorem: Kadhe et al. 2019 closed form: b - ..."`` -> ``"theorem:
    Kadhe et al. 2019 closed form"``; ``"search: structured+random (N sets)"`` -> ``"search: structured+random"``).

    >>> _short("theorem: Kadhe et al. 2019 closed form: b - f r^2/(r - λ + λ f)")
    'theorem: Kadhe et al. 2019 closed form'
    """
    parts = source.split(": ")
    return ": ".join(parts[:2]).split(" (")[0]
