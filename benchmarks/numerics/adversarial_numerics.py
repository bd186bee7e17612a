"""Float64 decode accuracy of ``adversarial_gc`` (Jahani-Nezhad & Maddah-Ali 2021): the paper's monomial functionals
at Chebyshev nodes (``nodes="chebyshev"``, the construction before) against the default Fourier real form
(``nodes="unity"``), on the same placements, straggler sets and adversaries.

For each ``n`` in {20, 50, 100}, each placement kind and each ``(s, a, m)``:

* *cyclic*: worker ``i`` stores ``i, ..., i + r - 1 (mod n)`` with ``r = s + 2a + m`` (every partition on exactly
  ``r`` workers, the tight case of the optimal cost ``1/(r - s - 2a) = 1/m``);
* *heterogeneous*: partition ``j`` on the ``r_j = r + (j mod 3)`` workers ``j, ..., j + r_j - 1`` (unequal loads and
  replication; the least replicated partition fixes ``m``);
* *random*: partition ``j`` on a uniformly random set of ``r + U{0..3}`` workers (seed 0).

Erasure decodes (``code.decoding_matrices``, the ``"interpolation"`` decoder): all ``n`` windows of ``s + 2a``
consecutive workers and 60 uniformly random sets of that size; the error is ``max|ĝ - g| / max|g|`` for partial
gradients ``g_j = 1 + 0.1 N(0, 1)`` (64 coordinates) encoded by ``B`` in float64. Adversarial decodes
(``gc.decode_adversarial``): 3 random straggler sets of size ``s`` with ``a`` random liars among the responders
(each liar's message shifted by ``N(0, 1)``); ``named`` counts the decodes that found exactly the liars, ``adv err``
is the worst error of the corrected sum. ``build`` is the construction time (exact rational arithmetic).

Run from the repository root::

    PYTHONPATH=. python benchmarks/numerics/adversarial_numerics.py           # n = 20, 50, 100 (a few minutes)
    PYTHONPATH=. python benchmarks/numerics/adversarial_numerics.py --smoke   # seconds, no output file
    PYTHONPATH=. python benchmarks/numerics/adversarial_numerics.py --spread  # unity against spread nodes (minutes)

Writes ``benchmarks/numerics/results/adversarial_numerics.txt`` (``--spread``: ``adversarial_spread.txt``, the default
``nodes="unity"`` against ``nodes="spread"``, whose worker angles are assigned for the placement).
"""

from __future__ import annotations

import argparse
import os
import time

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import numpy as np  # noqa: E402

import gradcodes as gc  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
PARAMS = [(1, 1, 1), (1, 1, 2), (2, 1, 2), (1, 1, 3), (2, 2, 4), (5, 2, 5)]
LARGE = [(10, 1, 2), (25, 1, 2)]             # s = n/10 and n/4 at n = 100: where the real form runs out


def placement(kind: str, n: int, r: int) -> np.ndarray:
    S = np.zeros((n, n), dtype=np.int64)
    rng = np.random.default_rng(0)
    for j in range(n):
        if kind == "cyclic":
            S[(j + np.arange(r)) % n, j] = 1
        elif kind == "heterogeneous":
            S[(j + np.arange(min(n, r + j % 3))) % n, j] = 1
        else:
            S[rng.permutation(n)[:min(n, r + int(rng.integers(0, 4)))], j] = 1
    return S


def erasure_error(code: gc.LinearCode, rng: np.random.Generator) -> float:
    n, e = code.n, code.s
    G = 1 + 0.1 * rng.standard_normal((code.k * code.m, 64))
    Y = code.float_B() @ G
    true = code.target @ G
    sets = [((t + np.arange(e)) % n) for t in range(n)] + [rng.choice(n, e, replace=False) for _ in range(60)]
    mask = np.ones((len(sets), n), dtype=bool)
    for row, S in enumerate(sets):
        mask[row, S] = False
    A = code.decoding_matrices(mask)
    return float(max(np.abs(A[b] @ Y - true).max() for b in range(len(sets))) / np.abs(true).max())


def adversarial_error(code: gc.AdversarialCode, rng: np.random.Generator, trials: int = 3) -> tuple[float, int]:
    n, s, a = code.n, code.stragglers, code.adversaries
    G = 1 + 0.1 * rng.standard_normal((code.k * code.m, 16))
    Y = code.float_B() @ G
    true = (code.target @ G).ravel()
    worst, named = 0.0, 0
    for _ in range(trials):
        R = np.sort(rng.permutation(n)[:n - s])
        T = np.sort(rng.choice(R, a, replace=False))
        Yr = Y[R].copy()
        for t in T:
            Yr[np.searchsorted(R, t)] += rng.standard_normal(Yr.shape[1])
        try:
            res = gc.decode_adversarial(code, R.tolist(), Yr)
        except gc.DecodingError:
            worst = float("inf")
            continue
        if res.gradient is None:
            worst = float("inf")
            continue
        named += res.adversarial == tuple(int(t) for t in T)
        worst = max(worst, float(np.abs(res.gradient - true).max() / np.abs(true).max()))
    return worst, named


def _e(x: float) -> str:
    return "refused" if not np.isfinite(x) else f"{x:.1e}"


HEADER = (f"{'n':>4} {'placement':<14} {'s':>3} {'a':>2} {'m':>2} {'nodes':<10} {'build':>7} {'erasure err':>12} "
          f"{'adv err':>9} {'named':>6}")


def run(ns: tuple[int, ...], kinds: tuple[str, ...], params: list[tuple[int, int, int]],
        large: list[tuple[int, int, int]], node_kinds: tuple[str, ...] = ("chebyshev", "unity")) -> list[str]:
    lines = []
    for n in ns:
        for kind in kinds:
            for s, a, m in params + (large if n == max(ns) and kind == "cyclic" else []):
                S = placement(kind, n, s + 2 * a + m)
                for nodes in node_kinds:
                    t0 = time.perf_counter()
                    code = gc.adversarial_gc(S, s, a, m=m, nodes=nodes)
                    t_b = time.perf_counter() - t0
                    rng = np.random.default_rng(1)
                    err = erasure_error(code, rng)
                    adv, named = adversarial_error(code, rng, trials=3 if a <= 1 or n <= 50 else 1)
                    tr = 3 if a <= 1 or n <= 50 else 1
                    lines.append(f"{n:>4} {kind:<14} {s:>3} {a:>2} {m:>2} {nodes:<10} {t_b:>6.1f}s {_e(err):>12} "
                                 f"{_e(adv):>9} {named:>4}/{tr}")
                    print(lines[-1], flush=True)
    return lines


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--smoke", action="store_true", help="n = 12 only, no output file")
    ap.add_argument("--spread", action="store_true",
                    help="nodes='unity' against nodes='spread' on the heterogeneous and random placements only; "
                         "writes results/adversarial_spread.txt")
    args = ap.parse_args(argv)
    print(HEADER)
    if args.smoke:
        run((12,), ("cyclic", "random"), [(1, 1, 1), (1, 1, 2)], [], ("chebyshev", "unity", "spread"))
        return 0
    t0 = time.perf_counter()
    if args.spread:
        lines = run((20, 50, 100), ("heterogeneous", "random"), PARAMS, [], ("unity", "spread"))
        write("adversarial_spread.txt", "--spread",
              "# worst float64 relative error of the decoded sum (as in adversarial_numerics.txt) on the same\n"
              "# placements: nodes=unity, the workers' angles by the golden-ratio stride (default), against\n"
              "# nodes=spread, the angles assigned for the placement by spread_angles (build includes that\n"
              "# search).", lines, t0)
        return 0
    lines = run((20, 50, 100), ("cyclic", "heterogeneous", "random"), PARAMS, LARGE)
    write("adversarial_numerics.txt", "",
          "# worst float64 relative error of the decoded sum: erasure decodes (n windows of s + 2a consecutive\n"
          "# workers + 60 random sets) and adversarial decodes (a liars among n - s responders); 'refused':\n"
          "# the acceptance rule raised DecodingError. nodes=chebyshev: the paper's monomial functionals (the\n"
          "# construction before); nodes=unity: the Fourier real form (default).", lines, t0)
    return 0


def write(name: str, flags: str, about: str, lines: list[str], t0: float, *, script: str = "adversarial_numerics.py",
          header: str = HEADER) -> None:
    """``benchmarks/results/NAME``: the command (``script`` and ``flags``), ``about``, the time and load, then the
    table (``header`` and ``lines``)."""
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    os.makedirs(os.path.join(HERE, "results"), exist_ok=True)
    with open(os.path.join(HERE, "results", name), "w") as fh:
        fh.write(f"# PYTHONPATH=. python benchmarks/{script}{' ' + flags if flags else ''}\n")
        fh.write(f"{about} {time.perf_counter() - t0:.0f} s, load average {load:.2f}\n")
        fh.write(header + "\n" + "\n".join(lines) + "\n")

if __name__ == "__main__":
    raise SystemExit(main())
