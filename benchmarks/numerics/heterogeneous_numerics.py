"""Float64 decode accuracy of ``gc.heterogeneous_exact`` under equal speeds and 2x / 4x speed spreads.

For each speed profile (equal; ``1 + (spread - 1) i / (n - 1)``, linear, spread 2 and 4; ``1 + i % 4``,
interleaved, the profile of ``benchmarks/numerics/decode_numerics.py``), ``n`` in {20, 50, 100} and ``s`` in {1, n/10,
n/5, n/4} (plus 15, 18, 19, 22 at ``n = 100``; ``k = n``), the script decodes the sum of ``k`` partial
gradients ``g_j = 1 + 0.1 N(0, 1)`` (256 coordinates) from float64 messages with the code's default decoder over

* every *window* of ``s`` consecutive workers (the adversarial case: consecutive workers have neighbouring nodes
  on the circle, so a window is a cluster of stragglers),
* 200 *random* straggler sets,
* *searched* sets: greedy single swaps (``decode_numerics.Bench.search``, up to 8) from the two worst windows and
  the two worst random sets, keeping a swap while the measured error grows,

and reports the worst relative error ``max |ghat - g| / max |g|`` of each kind, the worst cancellation
``sum_i |a_i| ||B_i||_1 / k`` and whether the worst error is within ``1e-10``. Seed 0.

Run from the repository root::

    PYTHONPATH=. python benchmarks/numerics/heterogeneous_numerics.py            # ~1 min
    PYTHONPATH=. python benchmarks/numerics/heterogeneous_numerics.py --smoke    # one row, seconds, no files

Writes ``benchmarks/numerics/results/heterogeneous_numerics.txt``.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from fractions import Fraction

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import numpy as np  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from decode_numerics import Bench  # noqa: E402

import gradcodes as gc  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
PROFILES = {
    "equal": lambda n: [1] * n,
    "linear 2x": lambda n: [1 + Fraction(i, n - 1) for i in range(n)],
    "linear 4x": lambda n: [1 + Fraction(3 * i, n - 1) for i in range(n)],
    "interleaved 4x": lambda n: [1 + i % 4 for i in range(n)],
}
#: extra s at n = 100: around where the worst error crosses 1e-10, and 9, 19, 24 (s + 1 divides n)
EXTRA_S = {9, 15, 18, 19, 22, 24}
HEADER = (f"{'speeds':<15}{'n':>4}{'s':>4}{'load':>5} | {'windows':>9}{'random':>9}{'searched':>9}{'worst':>9}"
          f"{'canc':>9} {'<=1e-10':>8}")


def row(profile: str, n: int, s: int, seed: int = 0) -> str:
    code = gc.heterogeneous_exact(PROFILES[profile](n), s)
    rng = np.random.default_rng(seed)
    bench = Bench(code, None, seed)
    win = np.sort((np.arange(n)[:, None] + np.arange(s)[None, :]) % n, axis=1)
    rnd = np.sort(np.argsort(rng.random((200, n)), axis=1)[:, :s], axis=1)
    w64, _, wc = bench.errors(win)
    r64, _, rc = bench.errors(rnd)
    starts = np.concatenate([win[np.argsort(-w64)[:2]], rnd[np.argsort(-r64)[:2]]])
    s64, _, sc = bench.search(starts, rng, steps=8)
    worst = max(w64.max(), r64.max(), s64)
    canc = max(wc.max(), rc.max(), sc)
    return (f"{profile:<15}{n:>4}{s:>4}{int(code.load):>5} | {w64.max():>9.1e}{r64.max():>9.1e}{s64:>9.1e}"
            f"{worst:>9.1e}{canc:>9.1e} {'yes' if worst <= 1e-10 else 'NO':>8}")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--smoke", action="store_true", help="one small row, no file written")
    args = ap.parse_args(argv)
    if args.smoke:
        print(HEADER)
        print(row("linear 4x", 20, 2))
        return 0
    t0 = time.perf_counter()
    lines = [HEADER, "-" * len(HEADER)]
    print(HEADER, flush=True)
    for profile in PROFILES:
        for n in (20, 50, 100):
            for s in sorted({1, n // 10, n // 5, n // 4} | (EXTRA_S if n == 100 else set())):
                lines.append(row(profile, n, s))
                print(lines[-1], flush=True)
    head = ["# PYTHONPATH=. python benchmarks/numerics/heterogeneous_numerics.py",
            "# gc.heterogeneous_exact(speeds, s), k = n: worst float64 relative error of the decoded sum over every "
            "window of s consecutive workers,",
            "# 200 random straggler sets and greedy swaps from the two worst of each (seed 0); canc = worst "
            "sum_i |a_i| ||B_i||_1 / k",
            f"# {time.perf_counter() - t0:.0f} s; load average (1 min) at the end: {os.getloadavg()[0]:.2f} on "
            f"{os.cpu_count()} cores"]
    os.makedirs(os.path.join(HERE, "results"), exist_ok=True)
    with open(os.path.join(HERE, "results", "heterogeneous_numerics.txt"), "w") as fh:
        fh.write("\n".join(head + lines) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
