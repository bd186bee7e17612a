"""Exact linear algebra over GF(p): our whole-row elimination (gradcodes._core.fields) against galois.

Prints the median of 5 runs of ``rref`` vs galois ``row_reduce`` and of the elimination-based left null space vs
galois ``left_null_space``, on random GF(10007) matrices whose right half is a combination of the left half
(rank deficient, as decoding matrices are). gradcodes._core.fields keeps its own elimination: it is as
fast or faster here.

    python benchmarks/speed/fields_gf.py [--smoke]      # --smoke: the smallest shape, one run (the test suite)
"""

from __future__ import annotations

import argparse
import os
import time

import galois
import numpy as np

from gradcodes._core.fields import _left_nullspace_elim, rref


def _median(f, repeats: int = 5) -> float:
    times = []
    for _ in range(repeats):
        t = time.perf_counter()
        f()
        times.append(time.perf_counter() - t)
    return float(np.median(times))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--smoke", action="store_true", help="the smallest shape and one run: checks that it still runs")
    args = ap.parse_args()
    GF = galois.GF(10007)
    rng = np.random.default_rng(0)
    repeats = 1 if args.smoke else 5
    print(f"load average {os.getloadavg()[0]:.2f}; medians of {repeats} runs, GF(10007)")
    print(f"{'shape':>9} {'rref ours':>10} {'galois':>10} {'null ours':>10} {'galois':>10}")
    for a, b in [(10, 20)] if args.smoke else [(10, 20), (40, 80), (120, 240)]:
        M = GF(rng.integers(0, 10007, (a, b)))
        M[:, b // 2:] = M[:, :b // 2] @ GF(rng.integers(0, 10007, (b // 2, b - b // 2)))
        assert np.array_equal(rref(M)[0], M.row_reduce())
        N1, N2 = _left_nullspace_elim(M.T.copy()), M.T.left_null_space().T
        assert N1.shape == N2.shape and not np.any(N1.T @ M.T) and not np.any(N2.T @ M.T)
        t = [_median(lambda M=M: rref(M), repeats), _median(lambda M=M: M.row_reduce(), repeats),
             _median(lambda M=M: _left_nullspace_elim(M.T.copy()), repeats),
             _median(lambda M=M: M.T.left_null_space(), repeats)]
        print(f"{a:>4}x{b:<4} " + " ".join(f"{x * 1e3:>8.2f}ms" for x in t))


if __name__ == "__main__":
    main()
