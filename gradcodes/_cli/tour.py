"""``gradcodes tour``: build every registered scheme at representative sizes, check each, print one table.

Every row has an expected outcome (:class:`gradcodes._base.registry.Expect`, from the scheme's registration or the
default of its kind); :func:`tour_status` is 0 when every row has one of its expected results and 1 otherwise, so a
demonstration of a failing code (Tandon et al.'s random cyclic code at (50, 5)) does not make the tour fail, while
a proven code that stops being proven does.
"""

from __future__ import annotations

import math
import time
from collections.abc import Iterable, Sequence
from fractions import Fraction
from typing import Any, TextIO

from .._base.errors import GradcodesTypeError, GradcodesValueError
from .._base.output import format_table, labelled
from .._base.registry import Expect, Scheme, schemes
from .._verify.verifier import verify

__all__ = ["tour", "tour_status", "typed_row"]


def _num(x: Any) -> float | int | None:
    """A JSON number: ints stay ints, Fractions and numpy scalars become floats (ints when integral)."""
    if x is None:
        return None
    if isinstance(x, bool):
        return int(x)
    if isinstance(x, int):
        return x
    if isinstance(x, Fraction):
        return int(x) if x.denominator == 1 else float(x)
    if hasattr(x, "item"):
        return _num(x.item())
    return float(x)


def typed_row(report: Any) -> dict[str, Any]:
    """The typed data of one tour row (numbers, booleans, ``None``; snake_case keys), from its report.

    ``result`` is the verdict for exact and tree codes, ``"unbiased"`` / ``"BIASED"`` for approximate codes judged
    under random stragglers, and ``"proven"`` / ``"bounded"`` / ``"lower bound only"`` / ``"bound violated"`` for
    approximate codes judged by their worst straggler set (errors relative to ``|g|^2 = k m``: ``relative_*``).
    """
    if hasattr(report, "verdict"):                      # VerifyReport, TreeVerifyReport, BlockVerifyReport
        return {"n": report.n, "s": report.s, "m": report.m, "k": report.k, "load": _num(report.load),
                "load_lower_bound": _num(report.load_lower_bound), "patterns_checked": report.patterns_checked,
                "patterns_total": _num(report.patterns_total), "pattern_model": report.pattern_model,
                "exhaustive": bool(report.exhaustive), "theorem": report.theorem, "result": report.verdict,
                "proven": bool(report), "worst_residual": _num(report.worst_residual),
                "error_estimate": _num(report.error_estimate), "rtol": _num(report.rtol)}
    if hasattr(report, "unbiased"):                     # ApproxReport (random stragglers)
        norm2 = float(report.gradient_norm2)
        return {"n": report.n, "k": report.k, "load": _num(report.load), "replication": _num(report.replication),
                "replication_lower_bound": _num(report.load_lower_bound), "method": report.method,
                "patterns_checked": None if report.method == "closed" else report.patterns,
                "exhaustive": report.method in ("enumerate", "closed"),
                "result": "unbiased" if report.unbiased else "BIASED",
                "expected_error": _num(report.expected_error),
                "expected_error_stderr": _num(report.expected_error_stderr),
                "relative_error": _num(report.relative_error),
                "relative_bias": float(report.bias_norm) / math.sqrt(norm2) if norm2 else None}
    if hasattr(report, "worst_lower"):                  # ApproximationReport (worst straggler set)
        norm2 = float(report.norm2)
        upper = None if not math.isfinite(report.worst_upper) else float(report.worst_upper)
        return {"n": report.n, "s": report.s, "load": _num(report.load), "patterns_checked": report.patterns_checked,
                "patterns_total": _num(report.patterns_total), "exhaustive": bool(report.exhaustive),
                "result": report.result, "proven": bool(report.proven),
                "worst_lower": _num(report.worst_lower), "lower_source": report.lower_source,
                "worst_upper": upper, "upper_source": report.upper_source,
                "relative_worst_lower": report.worst_lower ** 2 / norm2,
                "relative_worst_upper": None if upper is None else upper ** 2 / norm2,
                "average_error": _num(report.average_error),
                "relative_mean_squared_error": report.mean_squared_error / norm2}
    raise GradcodesTypeError(f"no tour data for a {type(report).__name__}")


def _evaluate(scheme: Scheme, params: dict[str, Any], expect: Expect) -> tuple[dict[str, Any], dict[str, Any]]:
    """(typed row, display row) of one scheme at one parameter set."""
    t0 = time.perf_counter()
    code = scheme.build(**params)
    report = scheme.evaluate(code) if scheme.evaluate else verify(code, rng=0)   # a reproducible table
    if getattr(report, "interrupted", False):   # Ctrl-C reached a check, which kept its partial report: the
        raise KeyboardInterrupt                  # tour stops there (it used to mark the row and carry on, exit 0)
    seconds = time.perf_counter() - t0
    data = {"scheme": scheme.name, "kind": scheme.kind, "params": dict(params), **typed_row(report),
            "seconds": seconds, "expected": sorted(expect.results), "as_expected": False,
            "demonstration": expect.demonstration, "reason": expect.reason}
    data["as_expected"] = data["result"] in expect.results
    display = dict(report.tour_row())
    display["scheme"] = scheme.name
    display["seconds"] = f"{seconds:.2f}"
    return data, display


def tour_status(rows: Sequence[dict[str, Any]]) -> int:
    """The tour's exit status: 0 when every row has one of its expected results, 1 otherwise.

    >>> tour_status([{"result": "FAILS", "as_expected": True}, {"result": "ok", "as_expected": True}])
    0
    >>> tour_status([{"result": "unproven", "as_expected": False}])
    1
    """
    return 0 if all(r.get("as_expected") for r in rows) else 1


def _note(data: dict[str, Any], footnotes: list[str]) -> str:
    """The 'expected' cell of a row; demonstration rows and surprises get a numbered footnote."""
    if data["as_expected"] and not data["demonstration"]:
        return "yes"
    footnotes.append("")
    label = f"[{len(footnotes)}]"
    where = f"{data['scheme']} {data['params']}"
    if not data["as_expected"]:
        footnotes[-1] = (f"{label} UNEXPECTED: {where} gave {data['result']}, expected one of "
                         f"{', '.join(data['expected'])} ({data['reason']})")
        return f"NO {label}"
    text = f"{label} {where}: {data['reason']}"
    if data.get("rtol") is not None and data.get("error_estimate") is not None:
        text += (f"; worst predicted error {data['error_estimate']:.2g} against the threshold rtol = "
                 f"{data['rtol']:.0e}")
    footnotes[-1] = text
    return f"demo {label}"


def tour(names: Iterable[str] | None = None, *, quick: bool = False, out: TextIO | None = None,
         log: TextIO | None = None) -> list[dict[str, Any]]:
    """Run the tour and print its table to ``out`` (stdout by default) and one progress line per row to ``log``
    (default: ``out``; the command line sends it to stderr); returns the typed rows (see :func:`typed_row`; each
    also has ``scheme``, ``kind``, ``params``, ``seconds``, ``expected``, ``as_expected``, ``demonstration`` and
    ``reason``).

    Parameters
    ----------
    names : iterable of str, optional
        Only these schemes (default: all registered).
    quick : bool
        Only the first (smallest) parameter set of each scheme.
    """
    import sys

    out = out or sys.stdout
    log = log or out
    registry = schemes()
    selected = list(registry) if names is None else list(names)
    for name in selected:
        if name not in registry:
            raise GradcodesValueError(f"unknown scheme {name!r}; valid schemes: {', '.join(registry)}")
    rows: list[dict[str, Any]] = []
    by_kind: dict[str, list[dict[str, Any]]] = {}
    footnotes: list[str] = []
    order = {kind: i for i, kind in enumerate(_KIND_TITLES)}
    for name in sorted(selected, key=lambda nm: order.get(registry[nm].kind, len(order))):
        scheme = registry[name]
        for index, params in enumerate(scheme.tour[:1] if quick else scheme.tour):
            data, display = _evaluate(scheme, dict(params), scheme.expected(index))
            display["expected"] = _note(data, footnotes)
            rows.append(data)
            by_kind.setdefault(scheme.kind, []).append(display)
            print(f"  {name} {dict(params)}: {data['result']} in {display['seconds']} s", file=log, flush=True)
    for kind, kind_rows in by_kind.items():
        print(file=out)
        print("\n".join(labelled("", _KIND_TITLES.get(kind, kind))), file=out)   # titles and notes: 100 columns
        print(format_table(kind_rows), file=out)
    if footnotes:
        print(file=out)
        for note in footnotes:
            label, _, text = note.partition(" ")
            print("\n".join(labelled(label + " ", text)), file=out)
    unexpected = sum(not r["as_expected"] for r in rows)
    print(file=out)
    print(f"{len(rows)} rows, {len(rows) - unexpected} as expected"
          + (f", {unexpected} UNEXPECTED" if unexpected else ""), file=out)
    return rows


_KIND_TITLES = {
    "exact": "Exact gradient codes: recovery from every set of n - s responders (result ok/exact = proven: every set "
             "checked or a theorem; unproven = sampled, not a proof)",
    "tree": "Tree codes: straggler patterns with at most s stragglers per parent (ok/exact = every pattern checked; "
            "unproven = sampled, not a proof)",
    "partial": "Partial-straggler protocols: a message per finished chunk (rows are messages), recovery from every "
               "admitted chunk-arrival pattern (ok/exact = proven)",
    "adversarial": "Approximate codes: worst-case error over the sets of s stragglers, |err|^2/|g|^2 = ||A_F B - E||^2 "
                   "/ (k m) ('= x' proven: every set or a theorem; '>= x' a lower bound found by search, not the worst "
                   "case; '<= y' a certified upper bound; 'how' and 'upper from' say how each was obtained)",
    "approximate": "Approximate codes: expected error and bias under random stragglers, E|err|^2/|g|^2 (the same "
                   "normalisation)",
}
