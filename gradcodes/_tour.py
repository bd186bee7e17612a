"""``gradcodes tour``: build every registered scheme at representative sizes, check each, print one table."""

from __future__ import annotations

import time
from collections.abc import Iterable, Sequence
from typing import Any, TextIO

from ._registry import Scheme, schemes
from ._verify import verify

__all__ = ["tour", "format_table"]


def format_table(rows: Sequence[dict[str, Any]], columns: Sequence[str] | None = None) -> str:
    """Align a list of row dicts as a plain-text table (missing cells shown as '-').

    >>> print(format_table([{"a": 1, "b": "x"}, {"a": 22}]))
    a   b
    --  -
    1   x
    22  -
    """
    if columns is None:
        columns = []
        for row in rows:
            columns += [c for c in row if c not in columns]
    cells = [[str(row.get(c, "-")) for c in columns] for row in rows]
    widths = [max([len(c), *(len(r[i]) for r in cells)]) for i, c in enumerate(columns)]
    lines = ["  ".join(c.ljust(w) for c, w in zip(columns, widths, strict=True)).rstrip(),
             "  ".join("-" * w for w in widths)]
    lines += ["  ".join(v.ljust(w) for v, w in zip(r, widths, strict=True)).rstrip() for r in cells]
    return "\n".join(lines)


def _evaluate(scheme: Scheme, params: dict[str, Any]) -> dict[str, Any]:
    t0 = time.perf_counter()
    code = scheme.build(**params)
    report = scheme.evaluate(code) if scheme.evaluate else verify(code, rng=0)   # a reproducible table
    row = dict(report.tour_row())
    row["scheme"] = scheme.name
    row["seconds"] = f"{time.perf_counter() - t0:.2f}"
    return row


def tour(names: Iterable[str] | None = None, *, quick: bool = False, out: TextIO | None = None,
         log: TextIO | None = None) -> list[dict[str, Any]]:
    """Run the tour and print its table to ``out`` (stdout by default) and one progress line per row to ``log``
    (default: ``out``; the command line sends it to stderr); returns the rows.

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
            raise ValueError(f"unknown scheme {name!r}; valid schemes: {', '.join(registry)}")
    rows: list[dict[str, Any]] = []
    by_kind: dict[str, list[dict[str, Any]]] = {}
    order = {kind: i for i, kind in enumerate(_KIND_TITLES)}
    for name in sorted(selected, key=lambda nm: order.get(registry[nm].kind, len(order))):
        scheme = registry[name]
        for params in (scheme.tour[:1] if quick else scheme.tour):
            row = _evaluate(scheme, dict(params))
            rows.append(row)
            by_kind.setdefault(scheme.kind, []).append(row)
            print(f"  {name} {dict(params)}: {row.get('result', '')} in {row['seconds']} s", file=log, flush=True)
    for kind, kind_rows in by_kind.items():
        print(file=out)
        print(_KIND_TITLES.get(kind, kind), file=out)
        print(format_table(kind_rows), file=out)
    return rows


_KIND_TITLES = {
    "exact": "Exact gradient codes: recovery from every set of n - s responders (result ok/exact = proven: every set "
             "checked or a theorem; unproven = sampled, not a proof)",
    "tree": "Tree codes: straggler patterns with at most s stragglers per parent (ok/exact = every pattern checked; "
            "unproven = sampled, not a proof)",
    "adversarial": "Approximate codes: worst-case and mean error over every set of s stragglers",
    "approximate": "Approximate codes: expected error and bias under random stragglers",
}
