"""The cost of the whole-tree acceptance in the runtimes (MPI and torch): the master's :class:`TreeCheck` per
iteration (a pattern seen before, and a new one) and a tree parent's tail (:func:`write_tail`).

    python benchmarks/runtime/tree_check.py            # four trees, 7 repeats
    python benchmarks/runtime/tree_check.py --smoke    # one tree, 2 repeats, writes nothing (the test suite runs it)

One process, BLAS limited to one thread (as ``gradcodes.mpi`` sets it), float32 messages, trees
``coded_reduce(n, L, s, cyclic_repetition(n, s, rng=r, refine=0))``; the patterns are
``code.random_patterns(64, rng=0)`` reduced to the workers each parent's first ``n - s`` responders use. Columns:

* ``hit``: :meth:`TreeCheck.check` of a pattern whose verdict is cached (every iteration after the first with
  that pattern): rebuilding the used-workers mask from the master's children's tails, one lookup;
* ``miss``: the same for a pattern not seen before (the verdicts and the code's decoding-matrix cache cleared
  before each call; the inner code's decoding vectors stay cached): the whole tree's decoding vector, residual
  and cancellation and the acceptance rule (``CodedReduceCode._accept_tree``), once per new pattern;
* ``tail``: a level-1 parent's :func:`write_tail` from ``n - s`` used children (numpy; the torch parents do the
  same slice assignments on tensors);
* ``refused``: the fraction of the 64 patterns the rule refuses in float32 (these inner codes are ill-conditioned
  on purpose).

Times are medians over ``--repeats`` runs of the mean over the 64 patterns (``tail``: over 1000 calls), in
microseconds; the load average is printed. Results: ``benchmarks/runtime/results/tree_check.txt``.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")

import numpy as np  # noqa: E402

import gradcodes as gc  # noqa: E402
from gradcodes._runtime.layout import TreeCheck, write_tail  # noqa: E402
from gradcodes.mpi import layout_for  # noqa: E402

TREES = [(3, 2, 1, 7), (6, 2, 3, 34), (3, 3, 1, 7), (4, 3, 2, 25)]


def tails(lay, used: np.ndarray, rank: int) -> np.ndarray:
    """The tail rank sends up, built as the runtime's parents build it."""
    kids = lay.children(rank)
    if not kids:
        return np.zeros(0, dtype=np.float32)
    below = np.stack([tails(lay, used, c) for c in kids])
    out = np.empty(lay.tail(rank), dtype=np.float32)
    write_tail(out, [i for i, c in enumerate(kids) if used[c - 1]], below)
    return out


def measure(tree: tuple[int, int, int, int], repeats: int) -> dict[str, float]:
    n, L, s, r = tree
    code = gc.coded_reduce(n, L, s, gc.cyclic_repetition(n, s, rng=r, refine=0))
    lay = layout_for(code)
    kids = lay.children(0)
    cases = []
    for mask in code.random_patterns(64, rng=0):
        used = code.used(mask)
        cases.append(([i for i, c in enumerate(kids) if used[c - 1]], np.stack([tails(lay, used, c) for c in kids])))
    check = TreeCheck(code, lay, np.float32)
    refused = 0

    def run(clear: bool) -> float:
        nonlocal refused
        refused = 0
        t0 = time.perf_counter()
        for rows, tl in cases:
            if clear:
                check._verdicts.clear()
                code._cache.clear()                         # the code's decoding-matrix cache too: a cold pattern
            try:
                check.check(rows, tl)
            except gc.DecodingError:
                refused += 1
        return (time.perf_counter() - t0) / len(cases) * 1e6

    run(False)                                              # warm: the inner vectors, the verdicts
    hit = float(np.median([run(False) for _ in range(repeats)]))
    miss = float(np.median([run(True) for _ in range(repeats)]))
    sub = lay.children(kids[0])
    out = np.empty(lay.tail(kids[0]), dtype=np.float32)
    below = np.zeros((n, lay.tail(sub[0]) if sub else 0), dtype=np.float32)
    rows = list(range(n - s))
    reps = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        for _ in range(1000):
            write_tail(out, rows, below)
        reps.append((time.perf_counter() - t0) / 1000 * 1e6)
    return {"N": code.N, "hit": hit, "miss": miss, "tail": float(np.median(reps)), "refused": refused / len(cases)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=7)
    ap.add_argument("--smoke", action="store_true")
    args = ap.parse_args()
    trees = TREES[:1] if args.smoke else TREES
    repeats = 2 if args.smoke else args.repeats
    lines = [f"load average {os.getloadavg()[0]:.2f}; python {sys.version.split()[0]}, numpy {np.__version__}",
             f"{'tree (n, L, s, rng)':22} {'N':>4} {'hit us':>8} {'miss us':>9} {'tail us':>8} {'refused':>8}"]
    for tree in trees:
        m = measure(tree, repeats)
        lines.append(f"{str(tree):22} {m['N']:>4} {m['hit']:>8.1f} {m['miss']:>9.1f} {m['tail']:>8.2f} "
                     f"{m['refused']:>8.2f}")
    text = "\n".join(lines)
    print(text)
    if not args.smoke:
        out = Path(__file__).resolve().parent / "results" / "tree_check.txt"
        out.write_text(text + "\n")


if __name__ == "__main__":
    main()
