"""The report of :func:`gradcodes.evaluate_approximate`: expected error and bias of an approximate code."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

import numpy as np

__all__ = ["ApproxReport"]


@dataclass
class ApproxReport:
    """Expected error and bias of an approximate code under independent stragglers.

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
        """The columns ``gradcodes tour`` prints for an approximate code (error and bias, not exactness)."""
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
        return "\n".join(lines)

