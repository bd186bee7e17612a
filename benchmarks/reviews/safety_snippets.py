"""The bad-input snippets of the safety review (files, sizes, honesty gaps), each run in a fresh subprocess.

Prints, per snippet, the outcome (exception type and the start of its message, or the result) and the median wall
time of ``--repeat`` runs (default 3), measured inside the subprocess around the call (imports excluded). Compare
with the behaviour before the fix given in the ``before`` column (from the review; not re-measured here).

    python benchmarks/reviews/safety_snippets.py [--repeat 3]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile

SETUP = '''
import json, os, time, warnings, numpy as np, gradcodes as gc
warnings.simplefilter("ignore")
tmp = {tmp!r}
def small_file_with_n(n):
    path = os.path.join(tmp, "big_n.npz")
    gc.save_code(gc.fractional_repetition(6, 1), path)
    data = dict(np.load(path))
    meta = json.loads(str(data["meta"])); meta["params"]["n"] = n
    data["meta"] = np.array(json.dumps(meta)); np.savez(path, **data)
    return path
def truncated():
    path = os.path.join(tmp, "cut.npz"); gc.save_code(gc.cyclic_mds(7, 2), path)
    raw = open(path, "rb").read(); open(path, "wb").write(raw[: len(raw) // 2]); return path
'''

SNIPPETS = [
    # (label, before, prepare, call)
    ("load: 1.6 KB file claiming n = 30000", "30 s, 6.7 GiB, MemoryError",
     "p = small_file_with_n(30000)", "gc.load_code(p)"),
    ("load: truncated file", "BadZipFile / EOFError", "p = truncated()", "gc.load_code(p)"),
    ("load: rtol kept", "rtol dropped", "c = gc.GradientCode(gc.cyclic_repetition(7, 2, rng=1).B, 2, rtol=1e-3); "
     "p = os.path.join(tmp, 'r.npz'); gc.save_code(c, p)", "gc.load_code(p).rtol"),
    ("load: GF(p) decoder kept", "generic 'exact'", "p = os.path.join(tmp, 'g.npz'); "
     "gc.save_code(gc.cyclic_mds(7, 2).in_field('GF'), p)", "gc.load_code(p).default_decoder"),
    ("coded_reduce_load(3, 10**5, 1)", "> 100 s", "", "gc.coded_reduce_load(3, 10**5, 1)"),
    ("coded_reduce(3, 10**9, 1)", "> 30 s", "", "gc.coded_reduce(3, 10**9, 1)"),
    ("simulate(L=10**9)", "> 30 s", "", "gc.simulate(L=10**9)"),
    ("ye_abbe(10**9, 2, 2)", "> 30 s", "", "gc.ye_abbe(10**9, 2, 2)"),
    ("grouped_mds(10**9, 3)", "> 30 s", "", "gc.grouped_mds(10**9, 3)"),
    ("recommend(2**63, 3)", "> 30 s", "", "gc.recommend(2**63, 3)"),
    ("uncoded(10**9)", "MemoryError 6.94 EiB", "", "gc.uncoded(10**9)"),
    ("song_choi_allocation(p, k=2**63)", "empty allocation", "", "gc.song_choi_allocation([0.1, 0.2, 0.3], 2**63)"),
    ("0/1 integer mask", "read as indices", "c = gc.fractional_repetition(4, 1)",
     "c.decoding_matrix(np.array([1, 0, 1, 1]))"),
    ("cyclic_repetition(5, 1, rng=-1)", "TypeError (seed=-1)", "", "gc.cyclic_repetition(5, 1, rng=-1)"),
    ("cyclic_repetition(5, 1, rng=SeedSequence)", "rejected", "",
     "gc.cyclic_repetition(5, 1, rng=np.random.SeedSequence(1)).n"),
]


def run(prepare: str, call: str, tmp: str) -> tuple[str, float]:
    code = SETUP.format(tmp=tmp) + f'''
{prepare}
t = time.perf_counter()
try:
    r = {call}
    out = "returns " + repr(r)[:60]
except Exception as e:
    out = type(e).__name__ + ": " + str(e)[:70]
print(time.perf_counter() - t)
print(out)
'''
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=600)
    lines = res.stdout.strip().splitlines()
    if len(lines) < 2:
        return "crashed: " + res.stderr.strip().splitlines()[-1][:80], float("nan")
    return lines[1], float(lines[0])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--smoke", action="store_true", help="the first two snippets once: checks that it still runs")
    args = ap.parse_args()
    snippets = SNIPPETS[:2] if args.smoke else SNIPPETS
    if args.smoke:
        args.repeat = 1
    print(f"load average {os.getloadavg()[0]:.1f}; median of {args.repeat} runs")
    print(f"{'snippet':42s} {'before':28s} {'seconds':>8s}  now")
    with tempfile.TemporaryDirectory() as tmp:
        for label, before, prepare, call in snippets:
            outs, times = [], []
            for _ in range(args.repeat):
                out, t = run(prepare, call, tmp)
                outs.append(out)
                times.append(t)
            print(f"{label:42s} {before:28s} {statistics.median(times):8.4f}  {outs[0]}")


if __name__ == "__main__":
    main()
