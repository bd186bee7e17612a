"""Codes for workers of unequal speed against cyclic repetition in ``gc.simulate``: one table, 2x and 4x spreads.

Issue 23's comparison: the heterogeneity-aware exact code (Wang, Guo, Tang, Li & Li, ICDCS 2019;
``gc.heterogeneous_exact``) and its variant robust to misestimated speeds (``gc.robust_heterogeneous_exact``,
designed against one worker up to 2x slower than estimated), the universal polynomial code for an arbitrary placement
(Jahani-Nezhad & Maddah-Ali, JSAIT 2021; ``gc.adversarial_gc``) with ``a = 0`` and ``a = 1`` adversaries, and cyclic
repetition (Tandon et al. 2017; ``gc.cyclic_repetition``, load ``s + 1`` for every worker), all with the same ``n``
workers and ``s`` stragglers.

* Speeds ``c_i = 1 + (spread - 1) i / (n - 1)`` (linear from 1 to ``spread``), known exactly.
* The placement of ``adversarial_gc``: loads proportional to the speeds with every partition on ``r`` workers,
  ``r = s + 2a + 1`` (the least that works: message size ``1/(r - s - 2a) = 1``) and ``r = s + 2a + 2`` (message
  size ``1/2``, the optimal communication cost of that placement); it is the support of
  ``gc.heterogeneous_exact(speeds, r - 1, k)``.
* The model is ``gc.simulate``'s: worker ``i`` computes its own ``L_i / k`` of ``m = 49,920`` points in
  ``a_i l + Exp(mean l / mu_i)`` with ``a_i = 5e-5 / c_i`` s per point and ``a_i mu_i = 1``; the master receives one
  message at a time, ``t_c = 5`` ms for a gradient-sized one (``t_c / m`` for a code sending ``1/m`` of a
  gradient), until it has ``n - s`` (the robust code: ``n - s - e'``; ``adversarial_gc`` with ``a`` adversaries:
  ``n - s``, of which ``a`` may be wrong). 20,000 iterations, seed 0.
* The last column of each spread is cyclic repetition's mean iteration time divided by the row's, same run.

Run from the repository root::

    PYTHONPATH=. python benchmarks/families/heterogeneous_compare.py            # ~1 min
    PYTHONPATH=. python benchmarks/families/heterogeneous_compare.py --smoke    # one small block, seconds, no files

Writes ``benchmarks/families/results/heterogeneous_compare.txt`` (the printed table).
"""

from __future__ import annotations

import argparse
import os
import sys
from fractions import Fraction

import gradcodes as gc

HERE = os.path.dirname(os.path.abspath(__file__))
M_DATA, A, T_C = 49_920, 5e-5, 0.005


def speeds(n: int, spread: int) -> list[Fraction]:
    return [1 + Fraction((spread - 1) * i, n - 1) for i in range(n)]


def codes(n: int, s: int, k: int, c: list[Fraction]) -> list[tuple[str, object]]:
    out: list[tuple[str, object]] = [("cyclic_repetition", gc.cyclic_repetition(n, s, rng=0)),
                                     ("heterogeneous_exact", gc.heterogeneous_exact(c, s, k)),
                                     ("robust_heterogeneous_exact e=1 rho=2",
                                      gc.robust_heterogeneous_exact(c, s, k, misestimated=1, slowdown=2))]
    for a in (0, 1):
        for extra in (1, 2):
            r = s + 2 * a + extra
            if r > n:
                continue
            placement = gc.heterogeneous_exact(c, r - 1, k).support_matrix.astype(int)
            out.append((f"adversarial_gc a={a} r={r}", gc.adversarial_gc(placement, s, a)))
    return out


def mean_time(code, c: list[Fraction], iters: int) -> float:
    a = [A / float(x) for x in c]
    adversarial = int(getattr(code, "adversaries", 0) or 0) > 0
    res = gc.simulate(code, a=a, mu=[1 / x for x in a], t_c=T_C, m_data=M_DATA, iters=iters, rng=0,
                      policy=None if adversarial else "first")
    return next(iter(res.schemes.values())).mean


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--smoke", action="store_true", help="one small block, no files")
    args = ap.parse_args(argv)
    iters = 500 if args.smoke else 20_000
    plan = [(8, 1)] if args.smoke else [(10, 1), (20, 2), (50, 3)]
    lines = [f"# PYTHONPATH=. python benchmarks/families/heterogeneous_compare.py; m = {M_DATA:,} points, "
             f"a = {A:g} s/point at speed 1, a_i mu_i = 1, t_c = {T_C * 1e3:g} ms, {iters:,} iterations, seed 0, "
             "k = 2n (cyclic: n)",
             "# tol: stragglers decoded around (the master waits for n - tol; adversarial_gc: n - s, a of them may be "
             "wrong); m: message = 1/m gradient; L: largest load / k",
             f"{'n':>3} {'s':>2}  {'scheme':<38} {'tol':>3} {'m':>2} {'max L/k':>8} | "
             f"{'2x: E[T] (s)':>12} {'cyc/this':>8} | {'4x: E[T] (s)':>12} {'cyc/this':>8}"]
    lines.append("-" * len(lines[-1]))
    print("\n".join(lines), flush=True)
    for n, s in plan:
        k = 2 * n
        rows: dict[str, list[str]] = {}
        meta: dict[str, str] = {}
        for spread in (2, 4):
            c = speeds(n, spread)
            built = codes(n, s, k, c)
            times = {name: mean_time(code, c, iters) for name, code in built}
            ref = times["cyclic_repetition"]
            for name, code in built:
                tol = int(code.stragglers) if hasattr(code, "adversaries") else int(code.s)
                frac = Fraction(int(code.load), int(code.k))
                meta.setdefault(name, f"{tol:>3} {int(code.m):>2} {float(frac):>8.3f}")
                rows.setdefault(name, []).append(f"{times[name]:>12.4f} {ref / times[name]:>8.2f}")
        for name in rows:
            line = f"{n:>3} {s:>2}  {name:<38} {meta[name]} | " + " | ".join(rows[name])
            lines.append(line)
            print(line, flush=True)
    if not args.smoke:
        os.makedirs(os.path.join(HERE, "results"), exist_ok=True)
        with open(os.path.join(HERE, "results", "heterogeneous_compare.txt"), "w") as fh:
            fh.write("\n".join(lines) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
