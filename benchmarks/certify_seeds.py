"""Certify seeds of gradcodes.grouped_random: exhaustive verify of each candidate group code, once.

    python benchmarks/certify_seeds.py NG S EXTRA SEED [SEED ...]   # certify candidates, append to the JSON log
    python benchmarks/certify_seeds.py --check [--max-sets N]        # re-verify the stored table (CERTIFIED)

A group of NG workers is coded by cyclic_repetition(NG, S + EXTRA, seed=SEED) and decoded by the row-space decoder
against S stragglers; gradcodes.verify checks all C(NG, S) straggler sets (limit = C(NG, S)). Results are appended
to benchmarks/results/certified_seeds.jsonl (one JSON object per line: the worst error estimate, the worst set,
sets checked, seconds, load average). The winning entries are copied into gradcodes/_families/_certified_seeds.py
by hand; --check repeats the exhaustive verification of every stored entry and compares the worst error.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
import time
from pathlib import Path

import gradcodes as gc
from gradcodes._families._certified_seeds import CERTIFIED
from gradcodes._families.grouped_random import _block_code

LOG = Path(__file__).parent / "results" / "certified_seeds.jsonl"


def certify(ng: int, s: int, extra: int, seed: int) -> dict:
    sub = _block_code(ng, s, extra, seed)
    total = math.comb(ng, s)
    t0 = time.perf_counter()
    rep = gc.verify(sub, limit=total, stop_on_failure=False)
    return {"n_g": ng, "s": s, "extra": extra, "seed": seed, "proven": bool(rep),
            "exhaustive": bool(rep.exhaustive), "error_estimate": rep.error_estimate,
            "worst_residual": rep.worst_residual, "worst_cancellation": rep.worst_cancellation,
            "worst_responders": list(rep.worst_responders or ()), "n_failures": rep.n_failures,
            "sets": rep.patterns_checked, "total": total, "seconds": round(time.perf_counter() - t0, 1),
            "loadavg": os.getloadavg()[0]}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("args", nargs="*", type=int)
    ap.add_argument("--check", action="store_true")
    ap.add_argument("--max-sets", type=int, default=None, help="with --check: skip entries with more sets")
    a = ap.parse_args()
    print(f"load average at start: {os.getloadavg()}", flush=True)
    if a.check:
        bad = 0
        for (ng, s, extra), entry in sorted(CERTIFIED.items()):
            if a.max_sets is not None and math.comb(ng, s) > a.max_sets:
                print(f"skip ({ng}, {s}, {extra}): {math.comb(ng, s):,} sets > --max-sets")
                continue
            r = certify(ng, s, extra, int(entry["seed"]))
            same = r["proven"] and r["error_estimate"] <= 2 * entry["error_estimate"]
            bad += not same
            print(f"({ng}, {s}, {extra}) seed {entry['seed']}: stored {entry['error_estimate']:.3g}, "
                  f"re-verified {r['error_estimate']:.3g} over {r['sets']:,} sets in {r['seconds']} s: "
                  f"{'OK' if same else 'MISMATCH'}", flush=True)
        return 1 if bad else 0
    if len(a.args) < 4:
        ap.error("give NG S EXTRA SEED [SEED ...]")
    ng, s, extra, *seeds = a.args
    LOG.parent.mkdir(exist_ok=True)
    for seed in seeds:
        r = certify(ng, s, extra, seed)
        print(json.dumps(r), flush=True)
        with LOG.open("a") as fh:
            fh.write(json.dumps(r) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
