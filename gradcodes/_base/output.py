"""The command line's output: JSON forms of reports and one printer for every subcommand (``gradcodes``,
``gradcodes simulate``, ``gradcodes evaluate``), so that subcommands living beside their subject need not import
:mod:`gradcodes.cli`."""

from __future__ import annotations

import argparse
import dataclasses
import json
import math
from collections.abc import Iterable, Sequence
from fractions import Fraction
from typing import Any

import numpy as np

from .errors import GradcodesValueError

__all__ = ["to_json", "emit", "format_table", "count_text", "call_repr"]


def format_table(rows: Sequence[dict[str, Any]], columns: Sequence[str] | None = None,
                 right: Iterable[str] = (), wrap: str | None = None, width: int | None = None) -> str:
    """Align a list of row dicts as a plain-text table (missing cells shown as '-'): the one table printer of the
    command line, the tour, the simulator, the runtimes' results and the benchmarks.

    Columns are left-aligned, those named in ``right`` right-aligned (numbers); cells are printed with ``str``, so
    format numbers before. ``wrap`` names one column (the last, a free-text one) whose cells are wrapped at spaces
    so that the table fits ``width`` characters (the terminal's width for the command line); that column keeps at
    least 30 characters.

    >>> print(format_table([{"a": 1, "b": "x"}, {"a": 22}]))
    a   b
    --  -
    1   x
    22  -
    >>> print(format_table([{"n": "7", "t": "0.25"}, {"n": "12", "t": "1.5"}], right=["n", "t"]))
     n     t
    --  ----
     7  0.25
    12   1.5
    >>> print(format_table([{"name": "ab", "summary": "one two three four five six seven eight nine ten"}],
    ...                    wrap="summary", width=36))
    name  summary
    ----  ------------------------------
    ab    one two three four five six
          seven eight nine ten
    """
    import textwrap

    if columns is None:
        columns = []
        for row in rows:
            columns += [c for c in row if c not in columns]
    right = set(right)
    cells = [[str(row.get(c, "-")) for c in columns] for row in rows]
    widths = [max([len(c), *(len(r[i]) for r in cells)]) for i, c in enumerate(columns)]
    if wrap is not None and width is not None:
        if wrap not in columns or wrap != columns[-1]:
            raise GradcodesValueError(f"wrap must name the last column ({columns[-1] if columns else 'none'}), "
                                      f"got {wrap!r}")
        fit = max(30, width - sum(w + 2 for w in widths[:-1]))
        if widths[-1] > fit:
            widths[-1] = max(len(wrap), fit)
            wrapped = []
            for r in cells:
                lines = textwrap.wrap(r[-1], widths[-1], break_on_hyphens=False) or [""]
                wrapped.append([*r[:-1], lines[0]])
                wrapped += [[""] * (len(columns) - 1) + [more] for more in lines[1:]]
            cells = wrapped

    def line(values: Sequence[str]) -> str:
        return "  ".join(v.rjust(w) if c in right else v.ljust(w)
                         for v, w, c in zip(values, widths, columns, strict=True)).rstrip()

    return "\n".join([line(list(columns)), "  ".join("-" * w for w in widths), *(line(r) for r in cells)])


def labelled(prefix: str, text: str, width: int = 100) -> list[str]:
    """``prefix`` then ``text`` wrapped at spaces to ``width`` characters, the lines after the first indented to
    the text's column: a long note or theorem of a report reads as a paragraph instead of one 400-character line.

    >>> print("\\n".join(labelled("  note   ", "one two three four five six", width=20)))
      note   one two
             three four
             five six
    """
    import textwrap

    return textwrap.wrap(text, width, initial_indent=prefix, subsequent_indent=" " * len(prefix),
                         break_on_hyphens=False, break_long_words=False) or [prefix.rstrip()]


def call_repr(obj: Any, args: dict[str, Any], defaults: dict[str, Any] | None = None) -> str:
    """The one ``repr`` style of the library's values: the call that builds ``obj``, ``Type(name=value, ...)``,
    leaving out arguments at their default; arrays of more than 6 entries appear as ``array(shape=(r, c))``.
    (Results and reports print ``<Type: summary>`` instead: they are not built from arguments.)

    >>> import numpy as np
    >>> class Model:
    ...     pass
    >>> call_repr(Model(), {"a": 1.0, "mu": None, "times": np.zeros((5, 3))}, {"mu": None})
    'Model(a=1.0, times=array(shape=(5, 3)))'
    """
    import numpy as np

    def show(v: Any) -> str:
        if isinstance(v, np.ndarray):
            return repr(v.tolist()) if v.size <= 6 else f"array(shape={v.shape})"
        if isinstance(v, np.generic):
            return repr(v.item())
        return repr(v)

    defaults = defaults or {}
    parts = [f"{k}={show(v)}" for k, v in args.items() if not (k in defaults and _same(v, defaults[k]))]
    return f"{type(obj).__name__}({', '.join(parts)})"


def _same(a: Any, b: Any) -> bool:
    try:
        return bool(a is b or a == b)
    except (TypeError, ValueError):           # arrays: never equal to a scalar default here
        return False


def count_text(n: int) -> str:
    """A count for reports: thousands separators, or ``~d.ddde<exp>`` past ``10^30`` (a tree's pattern count can
    have thousands of digits, more than Python converts to a string or numpy to a float).

    >>> count_text(1234567), count_text(3 * 10**4880)
    ('1,234,567', '~3.000e4880')
    """
    n = int(n)
    if abs(n) < 10**30:
        return f"{n:,}"
    exp = int(math.log10(abs(n)))
    q = abs(n) // 10 ** (exp - 3)
    while q >= 10_000:                                   # log10 may round up or down by one
        exp, q = exp + 1, q // 10
    while q < 1_000:
        exp, q = exp - 1, abs(n) // 10 ** (exp - 4)
    return f"~{'-' if n < 0 else ''}{q // 1000}.{q % 1000:03d}e{exp}"


def to_json(obj: Any) -> Any:
    """A JSON-ready form of a report, typed: dataclasses become objects, Fractions numbers (an int when integral,
    else the nearest float; reports that need the exact value carry it as a ``"p/q"`` string in a field of its
    own), numpy values numbers or lists. A non-finite float (an infinite error bound, a NaN not computed) is
    ``null``: JSON has no such numbers, and ``null`` is what ``JSON.stringify``, pandas and pydantic write for
    them, so a field holds a number or ``null``, never a string. What such a value means is in the report's typed
    fields (``ok``, ``verdict``, ``exact``): test those, not a bound that may be ``null``.

    >>> to_json({"a": Fraction(1, 4), "b": Fraction(6, 3), "c": float("inf"), "d": np.arange(2)})
    {'a': 0.25, 'b': 2, 'c': None, 'd': [0, 1]}
    """
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        out = {f.name: to_json(getattr(obj, f.name)) for f in dataclasses.fields(obj)}
        for extra in ("verdict",):
            if hasattr(type(obj), extra):
                out[extra] = to_json(getattr(obj, extra))
        if hasattr(type(obj), "__bool__"):
            out["ok"] = bool(obj)
        return out
    if isinstance(obj, dict):
        return {str(k): to_json(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple, set, frozenset)):
        return [to_json(v) for v in obj]
    if isinstance(obj, np.ndarray):
        return [to_json(v) for v in obj.tolist()] if obj.dtype == object else to_json(obj.tolist())
    if isinstance(obj, np.generic):
        return to_json(obj.item())
    if isinstance(obj, int) and not isinstance(obj, bool) and abs(obj) >= 10**300:
        return count_text(obj)                           # no JSON reader takes (nor Python prints) such an int
    if isinstance(obj, bool) or obj is None or isinstance(obj, (int, str)):
        return obj
    if isinstance(obj, Fraction):
        return int(obj) if obj.denominator == 1 else to_json(float(obj))
    if isinstance(obj, float):
        return obj if math.isfinite(obj) else None
    if isinstance(obj, complex):
        return {"real": to_json(obj.real), "imag": to_json(obj.imag)}
    return str(obj)


def emit(args: argparse.Namespace, result: Any, text: str | None = None) -> None:
    """Print a command's result: its JSON form (:func:`to_json`) with ``--json``, else ``text`` or ``str(result)``."""
    if getattr(args, "json", False):
        print(json.dumps(to_json(result), indent=1, allow_nan=False))   # strict JSON: no NaN or Infinity
    else:
        print(text if text is not None else result)
