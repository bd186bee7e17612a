"""Exact rational elimination: python-flint (``fmpq_mat.rref``) against object arrays of Fractions.

    python benchmarks/speed/exact_backend.py               # 20x40 and 40x80, 9 repeats: results/exact_backend.txt
    python benchmarks/speed/exact_backend.py --repeats 21  # more repeats
    python benchmarks/speed/exact_backend.py --smoke       # 6x12, 3 repeats, writes nothing (the test suite runs it)

``gradcodes._core.fields.rref`` is the exact elimination under the rational decoders and constructions
(``solve_left``, ``left_nullspace``). It runs on python-flint when installed (``pip install 'gradcodes[exact]'``)
and on Fractions otherwise; the reduced row echelon form is unique, so both give the same matrix and pivots
(checked here on every input). Each time is the end-to-end call as gradcodes makes it (conversion to and from
flint included), the median of ``--repeats`` calls after one untimed call of each backend, alternating the
backends. Two kinds of input per size: integer entries in [-9, 9] (as the integer ``H`` of the rational
cyclic-repetition code), and rationals p/q with |p| <= 9, 1 <= q <= 9.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from fractions import Fraction
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

import gradcodes._core.fields as fields  # noqa: E402

RESULTS = Path(__file__).resolve().parent / "results" / "exact_backend.txt"


def matrix(rows: int, cols: int, kind: str, rng: np.random.Generator) -> np.ndarray:
    num = rng.integers(-9, 10, size=(rows, cols))
    den = np.ones_like(num) if kind == "integer" else rng.integers(1, 10, size=(rows, cols))
    out = np.empty((rows, cols), dtype=object)
    for idx in np.ndindex(rows, cols):
        out[idx] = Fraction(int(num[idx]), int(den[idx]))
    return out


def timed(M: np.ndarray, backend: str) -> tuple[float, np.ndarray, list[int]]:
    fields.EXACT_BACKEND = backend
    t = time.perf_counter()
    R, piv = fields.rref(M)
    return time.perf_counter() - t, R, piv


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--repeats", type=int, default=9)
    ap.add_argument("--smoke", action="store_true", help="6x12, 3 repeats, no output file")
    args = ap.parse_args(argv)
    try:
        import flint
    except ImportError:
        print("python-flint is not installed (pip install 'gradcodes[exact]'): nothing to compare")
        return 0
    sizes = [(6, 12)] if args.smoke else [(20, 40), (40, 80)]
    repeats = 3 if args.smoke else max(3, args.repeats)
    rng = np.random.default_rng(20261201)
    lines = [f"load average: {' '.join(f'{x:.2f}' for x in os.getloadavg())}; python-flint {flint.__version__}; "
             f"median of {repeats} calls",
             f"{'matrix':>10} {'entries':>9} {'Fractions ms':>13} {'flint ms':>9} {'speed-up':>9}  same result"]
    for rows, cols in sizes:
        for kind in ("integer", "rational"):
            M = matrix(rows, cols, kind, rng)
            _, R0, p0 = timed(M, "fractions")
            _, R1, p1 = timed(M, "flint")
            same = p0 == p1 and bool(np.all(R0 == R1))
            if not same:
                raise SystemExit(f"{rows}x{cols} {kind}: the backends disagree")
            t: dict[str, list[float]] = {"fractions": [], "flint": []}
            for _ in range(repeats):
                for b in t:
                    t[b].append(timed(M, b)[0])
            a, b = statistics.median(t["fractions"]), statistics.median(t["flint"])
            lines.append(f"{f'{rows}x{cols}':>10} {kind:>9} {a * 1e3:13.2f} {b * 1e3:9.2f} {a / b:8.1f}x  {same}")
    fields.EXACT_BACKEND = None
    print("\n".join(lines))
    if not args.smoke:
        RESULTS.write_text("\n".join(lines) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
