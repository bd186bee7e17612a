"""Catch rate of the verifier's non-exhaustive mode on planted failing straggler sets, measured in one run.

    python benchmarks/verify/verify_search.py            # (20, 4), (30, 5), (40, 6); 12 trials each
    python benchmarks/verify/verify_search.py --quick    # fewer trials

A failing set is planted in a random cyclic-repetition code: with ``K`` the left null space of ``B`` (all decoding
vectors are ``c + K z``), the rows ``K_S0`` of one random straggler set ``S0`` are projected onto a random
hyperplane of ``R^s``, and ``B`` is replaced by ``(I - Q Q^T) B`` with ``Q`` an orthonormal basis of the modified
``K``. Then ``K_S0`` is singular, so ``S0`` cannot decode (checked for every trial), while the other sets stay
generic. Each trial runs ``verify(code, limit=0)`` (no enumeration) with the search on and, as the baseline in the
same run, with ``search=False`` (the consecutive and random sets only); both with the same seed and ``samples``.
A trial is caught when the report says FAILS/inaccurate (every reported failing set is a genuine one: the
reference rule decides). The load average is printed first.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

import gradcodes as gc  # noqa: E402
from gradcodes._base.output import format_table  # noqa: E402
from gradcodes._core.decoders import NullSpaceDecoder  # noqa: E402


def plant(n: int, s: int, seed: int) -> tuple[gc.GradientCode, np.ndarray]:
    """A cyclic-repetition code with one planted singular straggler set ``S0``; returns (code, S0)."""
    rng = np.random.default_rng(1000 + seed)
    base = gc.cyclic_repetition(n, s, rng=seed)
    K = NullSpaceDecoder.basis(base)[1].copy()
    S0 = np.sort(rng.choice(n, s, replace=False))
    y = rng.standard_normal(K.shape[1])
    y /= np.linalg.norm(y)
    K[S0] -= np.outer(K[S0] @ y, y)
    Q = np.linalg.qr(K)[0]
    B = base.B - Q @ (Q.T @ base.B)
    return gc.GradientCode(B, s=s, name=f"planted({n},{s},{seed})"), S0


def planted_fails(code: gc.GradientCode, S0: np.ndarray) -> bool:
    from gradcodes._verify.verifier import _Tracker

    tr = _Tracker(code, code._decoder(None), code.rtol)
    return bool(tr.evaluate(S0[None])[2][0])


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--smoke", action="store_true",
                    help="tiny sizes (seconds) and no output files: checks that the script still runs")
    ap.add_argument("--trials", type=int, default=12)
    ap.add_argument("--samples", type=int, default=2000)
    args = ap.parse_args(argv)
    trials = 1 if args.smoke else 4 if args.quick else args.trials
    sizes = [(12, 3)] if args.smoke else [(20, 4), (30, 5)] if args.quick else [(20, 4), (30, 5), (40, 6)]
    if args.smoke:
        args.samples = 50
    print(f"load average at start: {' '.join(f'{x:.2f}' for x in os.getloadavg())} ({os.cpu_count()} CPUs)")
    rows = []
    for n, s in sizes:
        caught = {"search": 0, "random only": 0}
        secs = {"search": [], "random only": []}
        valid = 0
        for t in range(trials):
            code, S0 = plant(n, s, t)
            if not planted_fails(code, S0):
                continue
            valid += 1
            for label, search in (("search", True), ("random only", False)):     # alternating, same seed
                t0 = time.perf_counter()
                rep = gc.verify(code, limit=0, samples=args.samples, search=search, rng=t)
                secs[label].append(time.perf_counter() - t0)
                caught[label] += rep.n_failures > 0
        rows.append({"n, s": f"{n}, {s}", "trials": valid,
                     "caught (search)": f"{caught['search']}/{valid}",
                     "caught (random only)": f"{caught['random only']}/{valid}",
                     "median s (search)": f"{np.median(secs['search']):.2f}",
                     "median s (random only)": f"{np.median(secs['random only']):.2f}"})
        print(f"  ({n}, {s}) done", file=sys.stderr, flush=True)
    print(f"Catch rate on planted failing sets, verify(code, limit=0, samples={args.samples}); "
          f"search = restarted coordinate ascent + greedy swaps (1 s budget)")
    print(format_table(rows))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
