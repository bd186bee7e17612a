"""The report of :func:`gradcodes.verify`: verdict words, exact or "at least" failure counts, short repr."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import numpy as np

from .._base.output import count_text, labelled

__all__ = ["VerifyReport"]


@dataclass(repr=False)
class VerifyReport:
    """The result of :func:`verify`.

    Attributes
    ----------
    verdict : str
        ``"exact"`` (proof, exact arithmetic), ``"ok"`` (proof, float decodes within ``rtol``), ``"unproven"``
        (no checked set failed, but not every set was checked and no theorem covers the code), ``"inaccurate"``
        (residuals within ``rtol`` but cancellation pushes the predicted error above it) or ``"FAILS"``.
    proven, exact : bool
        True only for a proof (``verdict`` is ``"exact"`` or ``"ok"``); ``bool(report)`` is the same.
    exhaustive : bool
        All ``C(n, s)`` straggler sets were checked.
    theorem : str or None
        The decoder's theorem that proves the code when enumeration did not (checked on ``B``).
    patterns_checked, patterns_total : int
        Straggler sets checked (random ones may repeat), and ``C(n, s)``.
    strategies : dict
        How many sets each strategy checked.
    worst_residual : float
        Largest ``||A_F B - E||_inf`` found; ``worst_responders`` is that set.
    worst_cancellation : float
        Largest cancellation factor (the worst column of ``|A_F| |B|``, ``docs/acceptance.md``);
        ``worst_cancellation_responders``.
    error_estimate : float
        Largest error bound ``c_t canc + residual + gamma64_{t+1} (canc + 1)`` of a decode in ``dtype`` (``c_t =
        gamma_{t+2}`` in the dtype's unit roundoff; a bound of the relative error for every gradient; 0 for exact
        arithmetic; ``docs/acceptance.md``), re-evaluated by the reference evaluation for the sets a screening
        kernel cleared.
    error_bound : float
        Largest upper end of the acceptance rule's interval over the checked sets (what no machine's error estimate
        of those sets exceeds; ``docs/acceptance.md``); a proof has ``error_bound <= rtol``.
    worst_residual_lower : float or None
        Largest residual minus its rounding allowance (what every machine's residual exceeds): ``"FAILS"`` rather
        than ``"inaccurate"`` when it exceeds ``rtol``. None: ``worst_residual`` is used.
    worst_residual_bound : float
        Largest residual plus its rounding allowance (the residual part of the upper end of the acceptance rule's
        interval, ``docs/acceptance.md``); equal to ``worst_residual`` where the residual is computed without
        rounding.
    failures : list
        Up to 10 failing patterns (responder tuples; trees list readable patterns); ``n_failures`` counts the
        failing sets found, which is the exact number
        when ``failures_exact`` (an exhaustive run that did not stop early) and a lower bound otherwise.
    borderline : list
        Up to 10 *borderline* patterns: their error estimate lies within the acceptance rule's rounding allowance of
        the tolerance (``docs/acceptance.md``), so whether a decode accepts them can depend on the
        BLAS kernel, batch size or thread count; ``n_borderline`` counts them. Any borderline pattern makes the
        verdict ``"unproven"``: a proof must hold on every machine.
    interrupted : bool
        The run was stopped by Ctrl-C (KeyboardInterrupt); the report covers the sets checked until then.
    load, average_load, load_lower_bound, meets_lower_bound
        Maximum and average partitions per worker, the bound of :func:`gradcodes.min_load`, and whether the
        maximum load equals its ceiling.
    dtype : str
        The message dtype whose unit roundoff the acceptance rule used.
    pattern_model : str
        The straggler-pattern model that was checked (``"straggler sets"``: every set of ``s`` of the ``n``
        workers; trees: :class:`gradcodes.TreeVerifyReport`).

    Examples
    --------
    >>> import gradcodes as gc
    >>> report = gc.verify(gc.fractional_repetition(6, 2))
    >>> bool(report), report.exhaustive, report.patterns_checked
    (True, True, 15)
    """

    name: str
    n: int
    s: int
    k: int
    m: int
    field: str
    decoder: str
    exact: bool
    exhaustive: bool
    patterns_checked: int
    patterns_total: int
    strategies: dict[str, int]
    worst_residual: float
    worst_responders: tuple[int, ...] | None
    worst_cancellation: float
    worst_cancellation_responders: tuple[int, ...] | None
    error_estimate: float
    failures: list[Any]
    n_failures: int
    load: int
    average_load: Fraction
    load_lower_bound: Fraction
    meets_lower_bound: bool
    rtol: float
    seconds: float
    stopped_early: bool = False
    notes: list[str] = dataclasses.field(default_factory=list)  # (the attribute `field` shadows it)
    theorem: str | None = None
    interrupted: bool = False
    dtype: str = "float64"
    pattern_model: str = "straggler sets"
    borderline: list[Any] = dataclasses.field(default_factory=list)
    n_borderline: int = 0
    worst_residual_bound: float = 0.0
    worst_residual_lower: float | None = None
    error_bound: float = 0.0

    @property
    def proven(self) -> bool:
        """True only for a proof: every set checked, or a theorem of the decoder; and no failing set."""
        return self.exact

    @property
    def method(self) -> str:
        """How the sets were covered: ``"theorem: <statement>"`` (a theorem checked on ``B``, such as fractional
        repetition's or the proof by blocks; no enumeration needed), ``"exhaustive"`` (every set decoded) or
        ``"sampled"`` (not a proof by itself)."""
        if self.theorem:
            return f"theorem: {self.theorem}"
        return "exhaustive" if self.exhaustive else "sampled"

    @property
    def failures_exact(self) -> bool:
        """``n_failures`` is the exact number of failing sets (exhaustive run, not stopped early)."""
        return self.exhaustive and not self.stopped_early and not self.interrupted

    @property
    def failing_responders(self) -> tuple[int, ...] | None:
        """The first failing responder set found, or None."""
        return self.failures[0] if self.failures else None

    @property
    def _exact_field(self) -> bool:
        return self.field == "rational" or self.field.startswith("GF(")

    @property
    def verdict(self) -> str:
        """``exact`` / ``ok`` (proofs), ``unproven``, ``inaccurate`` or ``FAILS`` (see the class docstring)."""
        if self.n_failures:
            # FAILS: some set's residual exceeds rtol on every machine (its lower bound does); otherwise the
            # failures are (at least partly) cancellation
            low = self.worst_residual if self.worst_residual_lower is None else self.worst_residual_lower
            return "inaccurate" if (not self._exact_field and low <= self.rtol) else "FAILS"
        if self.exact:
            return "exact" if self._exact_field else "ok"
        return "unproven"

    def __bool__(self) -> bool:
        return self.exact

    def _count_text(self) -> str:
        if self.failures_exact:
            return f"{self.n_failures:,} of {count_text(self.patterns_total)}"
        return f"at least {self.n_failures:,} of {count_text(self.patterns_total)}"

    def _headline(self) -> str:
        v = self.verdict
        if v == "FAILS":
            return f"FAILS for {self._count_text()} {self.pattern_model}"
        if v == "inaccurate":
            return (f"INACCURATE in {self.dtype} for {self._count_text()} {self.pattern_model} (cancellation: "
                    f"predicted error {self.error_estimate:.2g} > rtol={self.rtol:g})")
        if v == "unproven" and self.n_borderline:
            return (f"UNPROVEN (borderline): {self.n_borderline:,} {self.pattern_model} within the rounding "
                    f"allowance of rtol={self.rtol:g} in {self.dtype} (accepted or refused depending on the "
                    f"machine); not a proof")
        if v == "unproven":
            how = "interrupted; " if self.interrupted else ""
            return f"UNPROVEN: no failure found in {self._checked_of()} {self.pattern_model} ({how}not a proof)"
        scope = (f"all {count_text(self.patterns_total)} {self.pattern_model} checked" if self.exhaustive else
                 f"by a theorem ({self.patterns_checked:,} sets also checked)")
        if self.field.startswith("GF("):
            return (f"EXACT RECOVERY over {self.field}, {scope}: proves the algebra of the construction over "
                    f"{self.field} only, NOT the float code's rounding (verify without field= for that)")
        if self.field == "rational":
            return f"EXACT RECOVERY (rational arithmetic), {scope}"
        return f"RECOVERY PROVEN to rtol={self.rtol:g} in {self.dtype}, {scope}"

    def _checked_of(self) -> str:
        """``"468 of 45"`` read as more sets checked than exist: random sets and search moves may repeat a set."""
        total = count_text(self.patterns_total)
        if self.patterns_checked > self.patterns_total:
            return f"{self.patterns_checked:,} evaluations (sampled and searched sets repeat) of {total}"
        return f"{self.patterns_checked:,} of {total}"

    def __repr__(self) -> str:
        return (f"<VerifyReport {self.name} (n={self.n}, s={self.s}): {self.verdict}, "
                f"{self.patterns_checked:,} of {count_text(self.patterns_total)} sets checked"
                + (f", {'' if self.failures_exact else '>= '}{self.n_failures:,} failing" if self.n_failures else "")
                + ">")

    def _load_relation(self) -> str:
        """How the load compares with the lower bound, in words (a load below it cannot give exact recovery)."""
        if self.load < self.load_lower_bound:
            return "below the bound: no exact code with this load tolerates s stragglers"
        return "meets the bound" if self.meets_lower_bound else "above the bound"

    def __str__(self) -> str:
        strat = ", ".join(f"{k}: {v:,}" for k, v in self.strategies.items())
        lines = [
            f"{self.name} (n={self.n}, s={self.s}, k={self.k}, m={self.m}, field={self.field}, "
            f"decoder={self.decoder}, dtype={self.dtype})",
            *labelled("  verdict            ", self._headline()),
            f"  checked            {self._checked_of()} ({strat})"
            + (" [stopped at the first failing batch]" if self.stopped_early else "")
            + (" [interrupted]" if self.interrupted else ""),
        ]
        if self.theorem:
            lines += labelled("  theorem            ", self.theorem)
        lines += [
            f"  worst residual     {self.worst_residual:.3g} at responders {_short(self.worst_responders, self.n)}",
            f"  worst cancellation {self.worst_cancellation:.3g} at responders "
            f"{_short(self.worst_cancellation_responders, self.n)}",
            f"  error estimate     {self.error_estimate:.3g} ({self.dtype}, relative)",
            f"  load               {self.load} (average {_frac(self.average_load)}; lower bound "
            f"{_frac(self.load_lower_bound)}; {self._load_relation()})",
        ]
        if self.borderline:
            lines.append(f"  borderline sets    {self.n_borderline:,}; first: responders "
                         f"{_short(self.borderline[0], self.n)}")
        if self.failures:
            lines.append(f"  failing sets       {'' if self.failures_exact else 'at least '}{self.n_failures:,}; "
                         f"first: responders {_short(self.failures[0], self.n)}")
        lines += [line for note in self.notes for line in labelled("  note               ", note)]
        lines.append(f"  time               {self.seconds:.2f} s")
        return "\n".join(lines)

    def tour_row(self) -> dict[str, Any]:
        """The columns of ``gradcodes tour``.

        Returns
        -------
        dict of str to str or number
            Column name to cell, ``result`` among them.

        Examples
        --------
        >>> import gradcodes as gc
        >>> gc.verify(gc.fractional_repetition(6, 2)).tour_row()["result"]
        'ok'
        """
        return {
            "scheme": self.name, "n": self.n, "s": self.s, "m": self.m,
            "load / bound": f"{self.load} / {_frac(self.load_lower_bound)}",
            "sets checked": f"{self.patterns_checked:,}",
            "exhaustive": "yes" if self.exhaustive else ("theorem" if self.theorem else "no"),
            "result": self.verdict,
            "worst residual": f"{self.worst_residual:.1e}",
            "error est.": f"{self.error_estimate:.1e}",
            "seconds": f"{self.seconds:.2f}",
        }


def _short(F: tuple[int, ...] | None, n: int | None = None, width: int = 12) -> str:
    """A responder set in a line: the list when short; else the workers left out (the stragglers, the part that
    tells one set from another) when they are few; else the first ``width`` responders.

    >>> _short((0, 1, 2)), _short(tuple(range(45)), 50), _short(tuple(range(45)), width=3)
    ('[0, 1, 2]', 'all but [45, 46, 47, 48, 49] (45 of 50 workers)', '[0, 1, 2, ... (45 workers)]')
    """
    if F is None:
        return "-"
    if len(F) <= width:
        return str(list(F))
    if n is not None and 0 < n - len(F) <= width and len(set(F)) == len(F) and all(0 <= int(f) < n for f in F):
        out = sorted(set(range(n)) - {int(f) for f in F})
        return f"all but {out} ({len(F)} of {n} workers)"
    return f"[{', '.join(map(str, F[:width]))}, ... ({len(F)} workers)]"


def _frac(x: Fraction) -> str:
    return str(x.numerator) if x.denominator == 1 else f"{x} ≈ {float(x):.3g}"


def _hms(sec: float) -> str:
    if not np.isfinite(sec):
        return "unknown time"
    if sec < 120:
        return f"{sec:.0f} s"
    if sec < 7200:
        return f"{sec / 60:.0f} min"
    if sec < 3 * 86400 * 365:
        return f"{sec / 3600:,.1f} h"
    return f"{sec / (86400 * 365):,.3g} years"
