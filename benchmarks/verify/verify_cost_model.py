"""Calibration of the verifier's default budget (:mod:`gradcodes._verify.cost`): measured against predicted
microseconds per straggler pattern, for a panel of codes of every enumeration path.

    PYTHONPATH=. python benchmarks/verify/verify_cost_model.py          # a minute: results/verify_cost_model.txt
    PYTHONPATH=. python benchmarks/verify/verify_cost_model.py --smoke  # one code per path, writes nothing

Every code is enumerated completely by ``gc.verify(code, limit=total, workers=1, search=False,
stop_on_failure=False, progress=False)`` (one core: the default budget does not depend on the number of
workers), after one warm-up call; the time is the median of ``--repeat`` (default 3) runs. The constants of
:data:`gradcodes._verify.cost.COSTS` were rounded from this output so that the predictions are close to or above
the measurements of the larger codes (small enumerations are dominated by fixed set-up costs that the per-set
model does not try to follow). The restart search's move cost (``SEARCH_COST``) is measured on random ``K`` of the
shapes below, as the search solves them. The load average is printed: run it on an idle machine.
"""

from __future__ import annotations

import argparse
import math
import os
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

import gradcodes as gc
from gradcodes._verify.cost import SEARCH_COST, flat_path, pattern_cost_us


def _panel(smoke: bool) -> list[tuple[str, Any, dict[str, Any]]]:
    cyc = gc.cyclic_repetition
    rows: list[tuple[str, Any, dict[str, Any]]] = [
        ("cyclic_repetition(40, 4)", lambda: cyc(40, 4, rng=0), {}),
        ("cyclic_repetition(45, 3)", lambda: cyc(45, 3, rng=4), {}),
        ("cyclic_repetition(20, 3) lstsq", lambda: cyc(20, 3, rng=0), {"decoder": "lstsq"}),
        ("cyclic_repetition(14, 3) rational", lambda: cyc(14, 3, rng=0, field="rational"), {}),
        ("cyclic_mds(12, 2) GF", lambda: gc.cyclic_mds(12, 2), {"field": "GF"}),
        ("coded_reduce(3, 2, 1)", lambda: gc.coded_reduce(3, 2, 1), {}),
    ]
    if not smoke:
        rows += [
            ("cyclic_repetition(60, 4)", lambda: cyc(60, 4, rng=0), {}),
            ("cyclic_repetition(30, 6)", lambda: cyc(30, 6, rng=0), {}),
            ("cyclic_repetition(100, 2)", lambda: cyc(100, 2, rng=0), {}),
            ("cyclic_repetition(150, 2)", lambda: cyc(150, 2, rng=0), {}),
            ("cyclic_mds(30, 3)", lambda: gc.cyclic_mds(30, 3), {}),
            ("cyclic_repetition(30, 2) lstsq", lambda: cyc(30, 2, rng=0), {"decoder": "lstsq"}),
            ("cyclic_repetition(45, 2) lstsq", lambda: cyc(45, 2, rng=0), {"decoder": "lstsq"}),
            ("cyclic_repetition(20, 3) rational", lambda: cyc(20, 3, rng=0, field="rational"), {}),
            ("cyclic_mds(16, 3) GF", lambda: gc.cyclic_mds(16, 3), {"field": "GF"}),
            ("coded_reduce(4, 2, 1)", lambda: gc.coded_reduce(4, 2, 1), {}),
            ("coded_reduce(3, 2, 1) rational", lambda: gc.coded_reduce(3, 2, 1, field="rational"), {}),
        ]
    return rows


def _predicted(code: Any, opts: dict[str, Any]) -> tuple[str, float]:
    if isinstance(code, gc.CodedReduceCode):
        path = "tree_rational" if code.exact else "tree"
        return path, pattern_cost_us(path, n=code.N, s=code.s, k=code.P, complex_=code.field == "complex")
    if opts.get("field") is not None:
        code = code.in_field(opts["field"])
    dec = code._decoder(opts.get("decoder"))
    path = flat_path(code, dec, math.comb(code.n, code.s))
    nnz = int(np.count_nonzero(code.support_matrix))
    return path, pattern_cost_us(path, n=code.n, s=code.s, k=code.k, m=code.m, nnz=nnz,
                                 complex_=code.field == "complex")


def _search_moves(repeat: int) -> list[str]:
    from gradcodes._verify.fast import _solve_small

    lines = []
    for n, s in [(40, 5), (100, 10), (200, 30)]:
        rng = np.random.default_rng(0)
        K, c = rng.standard_normal((n, s)), rng.standard_normal(n)
        S = np.sort(rng.choice(n, s, replace=False))
        out = np.setdiff1d(np.arange(n), S)
        cand = np.repeat(S[None], out.size, axis=0)
        cand[:, 0] = out
        times = []
        for _ in range(repeat):
            t0, runs = time.perf_counter(), 0
            while time.perf_counter() - t0 < 0.2:
                _solve_small(K[cand], -c[cand][:, :, None])
                runs += 1
            times.append((time.perf_counter() - t0) / runs * 1e6)
        pred = (n - s) * (SEARCH_COST[0] + SEARCH_COST[1] * (s ** 3 / 3 + s * s))
        lines.append(f"search move (n={n}, s={s}): measured {statistics.median(times):9.1f} us, "
                     f"predicted {pred:9.1f} us")
    return lines


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--smoke", action="store_true")
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    repeat = 1 if args.smoke else args.repeat
    lines = [f"load average at start: {os.getloadavg()}", f"python {sys.version.split()[0]}, numpy {np.__version__}",
             f"{'code':36s} {'path':10s} {'sets':>9s} {'measured us/set':>16s} {'predicted':>10s} {'ratio':>6s}"]
    print("\n".join(lines), flush=True)
    for name, build, opts in _panel(args.smoke):
        code = build()
        total = gc.verify(code, limit=1, samples=0, search=False, workers=1, progress=False, **opts).patterns_total
        kw = dict(limit=total, workers=1, search=False, stop_on_failure=False, progress=False, **opts)
        gc.verify(code, **kw)                                                    # warm-up (caches, compilation)
        times = []
        for _ in range(repeat):
            t0 = time.perf_counter()
            gc.verify(code, **kw)
            times.append(time.perf_counter() - t0)
        us = statistics.median(times) / total * 1e6
        path, pred = _predicted(code, opts)
        line = f"{name:36s} {path:10s} {total:9,d} {us:16.2f} {pred:10.2f} {pred / us:6.2f}"
        print(line, flush=True)
        lines.append(line)
    for line in _search_moves(repeat):
        print(line, flush=True)
        lines.append(line)
    lines.append(f"load average at end: {os.getloadavg()}")
    print(lines[-1])
    if not args.smoke:
        out = Path(__file__).parent / "results" / "verify_cost_model.txt"
        out.write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
