"""Why ``gc.heterogeneous_exact`` loses accuracy at large ``s``: the phases of ``ρ Λ_j`` and the cancellation.

The code divides partition ``j``'s column of ``B`` by ``Re(ρ Λ_j)`` (``Λ_j = prod_{l ∉ T_j} λ_l``, module
docstring of ``gradcodes._families.heterogeneous_exact``), so a partition whose phase ``arg(ρ Λ_j)`` is near a
quarter turn (mod a half turn) has a small ``|cos arg(ρ Λ_j)|`` and a large column. For each speed profile and
``(n, s)`` (``k = n``) the script reports, in float64 from the code's exact nodes and ``ρ``:

* ``span``: the shortest arc (mod π, in degrees) holding every phase ``arg(ρ Λ_j)``, with
  ``arg λ_l = arg(-i - x_l)`` summed over the non-holders;
* ``min|cos|``: the smallest ``|cos arg(ρ Λ_j)|`` over the partitions;
* over the ``n`` windows of ``s`` consecutive stragglers, the window with the largest cancellation
  ``max_j sum_t |a_t B_tj|`` (``a`` from the code's default decoder), that cancellation, the ``|cos|`` of its worst
  partition and the correlation over the partitions of ``log sum_t |a_t B_tj|`` with ``log 1/|cos arg(ρ Λ_j)|``
  at that window.

Run from the repository root::

    PYTHONPATH=. python benchmarks/numerics/heterogeneous_phases.py            # seconds
    PYTHONPATH=. python benchmarks/numerics/heterogeneous_phases.py --smoke    # one row, no files

Writes ``benchmarks/numerics/results/heterogeneous_phases.txt``.
"""

from __future__ import annotations

import argparse
import math
import os
import sys

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import numpy as np  # noqa: E402

import gradcodes as gc  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
PROFILES = {
    "equal": lambda n: [1] * n,
    "linear 4x": lambda n: [1 + 3 * i / (n - 1) for i in range(n)],
    "interleaved 4x": lambda n: [1 + i % 4 for i in range(n)],
}
SIZES = [(20, 1), (20, 5), (50, 5), (50, 12), (100, 9), (100, 10), (100, 19), (100, 20), (100, 24), (100, 25)]
HEADER = (f"{'speeds':<15}{'n':>4}{'s':>4} | {'span':>6}{'min|cos|':>9} | {'window':>6}{'canc':>10}"
          f"{'its |cos|':>10}{'corr':>6}")


def phases(code: gc.HeterogeneousExactCode) -> np.ndarray:
    """``arg(ρ Λ_j)`` mod π for every partition (float64 sums of the factors' arguments)."""
    x = np.array([float(v) for v in code.nodes])
    arg_l = np.arctan2(-1.0, -x)                                # arg(-i - x_l); the factor 1/2 has no phase
    arg_rho = math.atan2(float(code.rho[1]), float(code.rho[0]))
    holders = np.asarray(code.support_matrix, dtype=bool)
    total = arg_l.sum()
    return np.mod(arg_rho + total - holders.T.astype(float) @ arg_l, np.pi)


def span(ph: np.ndarray) -> float:
    """The shortest arc of the circle of circumference π holding every value of ``ph``."""
    v = np.sort(ph)
    gaps = np.diff(np.concatenate([v, [v[0] + np.pi]]))
    return float(np.pi - gaps.max())


def row(profile: str, n: int, s: int) -> str:
    code = gc.heterogeneous_exact(PROFILES[profile](n), s)
    ph = phases(code)
    cos = np.abs(np.cos(ph))
    B = np.abs(code.float_B())
    dec = code.decoders[code.default_decoder]
    masks = np.ones((n, n), dtype=bool)
    for st in range(n):
        masks[st, (st + np.arange(s)) % n] = False
    A = np.asarray(dec.matrices(code, masks), dtype=np.float64)[:, 0, :]     # one decoding vector per window
    cols = np.abs(A) @ B                                                      # (windows, k)
    w = int(np.argmax(cols.max(axis=1)))
    j = int(np.argmax(cols[w]))
    corr = float(np.corrcoef(np.log(cols[w]), np.log(1 / cos))[0, 1])
    return (f"{profile:<15}{n:>4}{s:>4} | {math.degrees(span(ph)):>6.1f}{cos.min():>9.3f} | {w:>6}"
            f"{cols[w, j]:>10.2e}{cos[j]:>10.3f}{corr:>6.2f}")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--smoke", action="store_true", help="one row, no files")
    args = ap.parse_args(argv)
    lines = [HEADER, "-" * len(HEADER)]
    print(HEADER, flush=True)
    todo = [("equal", 20, 5)] if args.smoke else [(p, n, s) for p in PROFILES for n, s in SIZES]
    for p, n, s in todo:
        line = row(p, n, s)
        print(line, flush=True)
        lines.append(line)
    if not args.smoke:
        with open(os.path.join(HERE, "results", "heterogeneous_phases.txt"), "w") as fh:
            fh.write("# PYTHONPATH=. python benchmarks/numerics/heterogeneous_phases.py\n" + "\n".join(lines) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
