"""Heterogeneity-aware exact codes versus cyclic repetition: expected iteration time under 2x and 4x speed spreads.

Wang, Guo, Tang, Li & Li (ICDCS 2019) give every worker a share of the data proportional to its speed and still
tolerate any ``s`` stragglers; cyclic repetition (Tandon et al. 2017) gives every worker ``s + 1`` of ``n``
partitions. Both are exact and send one gradient-sized message per worker, so they differ only in who computes
how much. The model is the simulator's (``gc.simulate``; Reisizadeh et al., CodedReduce): worker ``i`` with
``l_i`` data points finishes at ``a_i l_i + Exp(mean l_i / mu_i)`` with ``a_i = a / c_i`` and ``a_i mu_i = 1``
(speed ``c_i``), and the master receives one message at a time (``t_c`` each) until it holds ``n - s``
(``gradcodes._simulate._models._reception``). This first table draws the per-worker times itself with the same
formulas (written before ``gc.simulate`` charged each worker its own load; its cyclic rows agree with
``gc.simulate(code, a=..., mu=...)``, checked below).

Speeds ``c_i = 1 + (spread - 1) i / (n - 1)`` (linear between 1 and ``spread``), ``m = 49,920`` points per
iteration, ``a = 5e-5`` s per point at speed 1, ``t_c = 5`` ms, ``k = n`` partitions (``k = 4n`` too, which lets
the loads follow the speeds more closely), 20,000 iterations, seed 0. The last column is the ratio of cyclic
repetition's mean iteration time to the heterogeneous code's, measured in the same run; the ``det.`` columns repeat
the comparison with deterministic computation times (``mu = inf``: speeds known exactly, no random delay), where the
loads' advantage is not diluted by the exponential part.

Run from the repository root::

    PYTHONPATH=. python benchmarks/families/heterogeneous_exact.py            # ~2 min
    PYTHONPATH=. python benchmarks/families/heterogeneous_exact.py --smoke    # one row, seconds, no files

A second table (:func:`misestimated`, through ``gc.simulate``) compares ``gc.robust_heterogeneous_exact`` with the
non-robust code and cyclic repetition when the fastest-estimated workers are slower than estimated.

Writes ``benchmarks/families/results/heterogeneous_exact.txt`` (the printed tables).
"""

from __future__ import annotations

import argparse
import os
import sys
from fractions import Fraction

import numpy as np

import gradcodes as gc
from gradcodes._simulate._models import _reception

HERE = os.path.dirname(os.path.abspath(__file__))
M_DATA, A, T_C = 49_920, 5e-5, 0.005


def speeds(n: int, spread: int) -> list[Fraction]:
    return [1 + Fraction((spread - 1) * i, n - 1) for i in range(n)]


def iteration_times(loads: np.ndarray, k: int, c: list[Fraction], s: int, iters: int, seed: int,
                    random: bool = True) -> np.ndarray:
    """Per-iteration time: shifted-exponential computation of each worker's own load, first ``n - s`` received
    (``random=False``: deterministic computation times ``a_i l_i``, one iteration)."""
    n = loads.size
    a = A / np.array([float(x) for x in c])                   # seconds per point of each worker
    points = loads * (M_DATA / k)
    base = a * points
    if not random:
        return _reception(base[None, :], n - s, T_C)[0]
    rng = np.random.default_rng(seed)
    out = np.empty(iters)
    step = 2000
    for lo in range(0, iters, step):
        hi = min(iters, lo + step)
        T = base + rng.exponential(1.0, size=(hi - lo, n)) * (a * points)    # mean l_i / mu_i = a_i l_i
        out[lo:hi] = _reception(T, n - s, T_C)[0]
    return out


def misestimated(iters: int, smoke: bool) -> list[str]:
    """Second table: the robust variant against the non-robust code when the fastest workers are slower than
    estimated (``gc.simulate`` with each worker's own load and true speed)."""
    # (label, e, x, a_i mu_i, persistent stragglers?)
    scen = [("accurate", 0, 1, 1, False), ("e=1 x2", 1, 2, 1, False), ("e=2 x2", 2, 2, 1, False),
            ("P:accur.", 0, 1, 20, True), ("P:e=1 x2", 1, 2, 20, True), ("P:e=2 x2", 2, 2, 20, True)]
    persistent = gc.PersistentStragglers(0.05, 0.5, 5.0)
    head = (f"{'n':>3} {'s':>2} {'scheme':<27} {'tol':>3} {'W(e=1,x2)':>9} | "
            + " ".join(f"{sc[0]:>9}" for sc in scen))
    out = ["", "Misestimated speeds: estimated speeds linear 1..4, k = 2n; the e fastest-estimated workers (largest "
           "loads) run x times slower than estimated; mean iteration time (s) in gc.simulate (each worker its own "
           f"load and true speed, a_i mu_i = 1, t_c = {T_C * 1e3:g} ms, first n - tol messages, {iters:,} iterations, "
           "seed 0). W(e=1,x2): the exact worst-case computation time (gc.worst_time_heterogeneous units) against "
           "s stragglers and one worker 2x slower. Columns P: a_i mu_i = 20 (little noise) and persistent stragglers "
           "(gc.PersistentStragglers(0.05, 0.5, 5.0): a worker turns 5x slow w.p. 0.05 per iteration, recovers w.p. "
           "0.5), so stragglers and misestimated workers meet.", head, "-" * len(head)]
    print("\n".join(out), flush=True)
    for n, s in ([(8, 1)] if smoke else [(10, 1), (20, 2), (50, 3)]):
        c = speeds(n, 4)
        k = 2 * n
        cands = [("cyclic_repetition", gc.cyclic_repetition(n, s, rng=0)),
                 ("heterogeneous_exact", gc.heterogeneous_exact(c, s, k)),
                 ("robust e=1 rho=2", gc.robust_heterogeneous_exact(c, s, k, misestimated=1, slowdown=2)),
                 ("robust e=2 rho=2", gc.robust_heterogeneous_exact(c, s, k, misestimated=2, slowdown=2))]
        fastest = sorted(range(n), key=lambda i: (-c[i], i))
        for name, code in cands:
            tol = int(code.s)
            if name == "cyclic_repetition":
                w = "-"
            else:
                extra = getattr(code, "extra", 0)
                w = f"{float(gc.worst_time_heterogeneous(c, s, k, misestimated=1, slowdown=2, extra=extra)):.3f}"
            cells = []
            for _, e, x, amu, pers in scen:
                true = [ci / x if i in fastest[:e] else ci for i, ci in enumerate(c)]
                a = [A / float(t) for t in true]
                res = gc.simulate(code, a=a, mu=[amu / v for v in a], t_c=T_C, m_data=M_DATA, iters=iters, rng=0,
                                  policy="first", model=persistent if pers else None)
                cells.append(f"{next(iter(res.schemes.values())).mean:>9.4f}")
            row = f"{n:>3} {s:>2} {name:<27} {tol:>3} {w:>9} | " + " ".join(cells)
            out.append(row)
            print(row, flush=True)
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--smoke", action="store_true", help="one small row, no files")
    args = ap.parse_args(argv)
    iters = 500 if args.smoke else 20_000
    plan = [(8, 1, 1)] if args.smoke else [(n, s, f) for n in (10, 20, 50) for s in (1, 2, 3) for f in (1, 4)]
    head = (f"{'spread':>6} {'n':>3} {'s':>2} {'k':>4} | {'het max load':>12} {'T* (slots)':>10} | "
            f"{'het mean (s)':>12} {'cyclic mean (s)':>15} {'cyclic/het':>10} | {'det. het':>8} {'det. cyclic':>11} "
            f"{'cyclic/het':>10}")
    lines = [head, "-" * len(head)]
    print(head + "\n" + lines[1], flush=True)
    for spread in (2, 4):
        for n, s, f in plan:
            c = speeds(n, spread)
            k = f * n
            het = gc.heterogeneous_exact(c, s, k)
            cyc = gc.cyclic_repetition(n, s, k, rng=0)
            th = iteration_times(het.loads, k, c, s, iters, 0)
            tc = iteration_times(cyc.loads, k, c, s, iters, 0)
            if f == 1 and not args.smoke and spread == 2 and n == 10 and s == 1:
                # the cyclic code through gc.simulate itself (equal loads: the same model)
                a = [A / float(x) for x in c]
                sim = gc.simulate(cyc, a=a, mu=[1 / x for x in a], t_c=T_C, m_data=M_DATA, iters=iters, rng=0)
                ref = next(iter(sim.schemes.values())).mean
                if abs(ref - tc.mean()) > 0.02 * tc.mean():
                    print(f"cyclic mean {tc.mean():.4f} differs from gc.simulate's {ref:.4f}", file=sys.stderr)
                    return 1
            dh = float(iteration_times(het.loads, k, c, s, 1, 0, random=False)[0])
            dc = float(iteration_times(cyc.loads, k, c, s, 1, 0, random=False)[0])
            row = (f"{spread:>5}x {n:>3} {s:>2} {k:>4} | {int(het.load):>12} {float(het.time):>10.3f} | "
                   f"{th.mean():>12.4f} {tc.mean():>15.4f} {tc.mean() / th.mean():>10.2f} | {dh:>8.4f} {dc:>11.4f} "
                   f"{dc / dh:>10.2f}")
            lines.append(row)
            print(row, flush=True)
    lines += misestimated(iters, args.smoke)
    if not args.smoke:
        os.makedirs(os.path.join(HERE, "results"), exist_ok=True)
        with open(os.path.join(HERE, "results", "heterogeneous_exact.txt"), "w") as fh:
            fh.write("\n".join(lines) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
