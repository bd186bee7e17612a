"""Time ``gradcodes.recommend(500, 125)`` (target: at most 3 s, with the same choice and explanation every run).

    python benchmarks/speed/recommend_speed.py [--runs 5] [--n 500] [--s 125]
    python benchmarks/speed/recommend_speed.py --smoke     # one run of recommend(20, 4), writes nothing (the tests)

Each run is a fresh Python process (nothing cached in memory from an earlier call): it imports gradcodes (timed
apart, not counted), then times one ``recommend(n, s, rng=1)`` call: wall time and the process's CPU time. The
table gives every run, the medians, the load average at the start and end, and checks that every run makes the
same choice with the same explanation (the chosen family, its load and the reason line; the candidates' rows are
printed from the first run). The target is absolute: a median wall time of at most 3 s for (500, 125). Wall times
on a shared machine grow with its load; the CPU time is the steadier figure. Writes
benchmarks/speed/results/recommend_speed.txt.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

OUT = Path(__file__).parent / "results" / "recommend_speed.txt"
CHILD = r"""
import json, sys, time
t0 = time.perf_counter()
import gradcodes as gc
t_import = time.perf_counter() - t0
n, s = int(sys.argv[1]), int(sys.argv[2])
w0, c0 = time.perf_counter(), time.process_time()
code = gc.recommend(n, s, rng=1)
wall, cpu = time.perf_counter() - w0, time.process_time() - c0
rec = code.recommendation
print(json.dumps({"wall": wall, "cpu": cpu, "import": t_import, "chosen": rec.chosen, "load": rec.load,
                  "reason": rec.reason, "text": str(rec)}))
"""


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--n", type=int, default=500)
    ap.add_argument("--s", type=int, default=125)
    ap.add_argument("--smoke", action="store_true", help="one run at (20, 4), nothing written")
    a = ap.parse_args()
    if a.smoke:
        a.runs, a.n, a.s = 1, 20, 4
    lines = [f"recommend({a.n}, {a.s}, rng=1): {a.runs} runs, each in a fresh process (import not counted)",
             f"load average at start: {tuple(round(x, 2) for x in os.getloadavg())}"]
    print("\n".join(lines), flush=True)
    runs = []
    for i in range(a.runs):
        out = subprocess.run([sys.executable, "-c", CHILD, str(a.n), str(a.s)], capture_output=True, text=True,
                             check=True)
        r = json.loads(out.stdout.strip().splitlines()[-1])
        runs.append(r)
        line = (f"run {i + 1}: wall {r['wall']:.2f} s, cpu {r['cpu']:.2f} s (import {r['import']:.2f} s) -> "
                f"{r['chosen']} load {r['load']}; load average {os.getloadavg()[0]:.2f}")
        print(line, flush=True)
        lines.append(line)
    same = len({(r["chosen"], r["load"], r["reason"]) for r in runs}) == 1
    wall = statistics.median(r["wall"] for r in runs)
    cpu = statistics.median(r["cpu"] for r in runs)
    tail = [f"median wall {wall:.2f} s, median cpu {cpu:.2f} s; target: median wall <= 3 s -> "
            f"{'MET' if wall <= 3.0 else 'NOT MET'} (cpu {'<=' if cpu <= 3.0 else '>'} 3 s)",
            f"same choice and explanation in every run: {same}",
            f"load average at end: {tuple(round(x, 2) for x in os.getloadavg())}",
            "", "first run's explanation:", runs[0]["text"]]
    print("\n".join(tail))
    lines += tail
    if (a.n, a.s) == (500, 125):
        OUT.parent.mkdir(exist_ok=True)
        OUT.write_text("\n".join(lines) + "\n")
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
