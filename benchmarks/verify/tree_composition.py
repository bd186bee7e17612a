"""Verification of large CodedReduce trees by composition of the inner code's proof: seconds and peak memory.

    python benchmarks/verify/tree_composition.py            # the 33,824-worker trees; results/tree_composition.txt
    python benchmarks/verify/tree_composition.py --smoke    # a small tree, no output file

For each tree, ``gc.verify(code)`` (the default budget) runs ``--repeats`` times in this process after the code is
built (the build is not timed); the median wall-clock seconds, the verdict, how it was reached and the process's
peak resident memory (``ru_maxrss``, the interpreter and libraries included; the process's peak so far, so the
first tree's is its own) are printed. What it compares
against: before the composition (issue 37), ``coded_reduce(32, 3, 4)`` (Ye-Abbe inner code) raised
``SizeLimitError`` and the other trees had no verdict but a sampled "unproven". The load average is printed
first; the machine is shared, so the seconds are an upper bound of an idle run.
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

import gradcodes as gc  # noqa: E402
from gradcodes._base.output import format_table  # noqa: E402

TREES = [(32, 3, 4), (32, 3, 3), (7, 3, 2), (3, 6, 1)]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--smoke", action="store_true", help="a small tree, no output file")
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args(argv)
    trees = [(5, 2, 1)] if args.smoke else TREES
    repeats = 1 if args.smoke else args.repeats
    lines = [f"load average at start: {' '.join(f'{x:.2f}' for x in os.getloadavg())} ({os.cpu_count()} CPUs)"]
    print(lines[0], flush=True)
    rows = []
    for tree in trees:
        code = gc.coded_reduce(*tree)
        times, rep = [], None
        for _ in range(repeats):
            start = time.perf_counter()
            rep = gc.verify(code)
            times.append(time.perf_counter() - start)
        assert rep is not None
        rows.append({"tree": f"coded_reduce{tree}", "workers": f"{code.N:,}", "inner": code.inner.family,
                     "verdict": rep.verdict, "how": rep.method.split(":")[0] if rep.theorem or rep.exhaustive else
                     ", ".join(f"{k} {v}" for k, v in rep.strategies.items()),
                     "worst canc": f"{rep.worst_cancellation:.3g}",
                     "seconds (median)": f"{statistics.median(times):.2f}",
                     "peak MB": f"{resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f}"})
        print(format_table(rows[-1:]), flush=True)
    table = format_table(rows)
    lines += ["", table, "", f"load average at end: {' '.join(f'{x:.2f}' for x in os.getloadavg())}"]
    print("\n" + "\n".join(lines[1:]))
    if not args.smoke:
        out = Path(__file__).resolve().parent / "results" / "tree_composition.txt"
        out.write_text("\n".join(lines) + "\n")
        print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
