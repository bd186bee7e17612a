"""Cold start: ``import gradcodes`` plus the first verify of a (40, 4) code in a fresh interpreter.

    python benchmarks/speed/cold_start.py              # 15 repeats of each process, writes results/cold_start.txt
    python benchmarks/speed/cold_start.py --repeats 31 # more repeats
    python benchmarks/speed/cold_start.py --smoke      # 3 repeats, writes nothing (the test suite runs it)

Each repeat starts two fresh processes, alternating: the bare interpreter (``python -c pass``) and

    python -c "import gradcodes as gc; gc.verify(gc.cyclic_repetition(40, 4, rng=21))"

and times them from outside (wall clock, ``time.perf_counter`` around ``subprocess.run``). The result is the
median of the differences, with the medians of ``import gradcodes`` alone and of the bare interpreter; the target
is at most 0.5 s over the bare interpreter. It also lists the heavy packages a plain ``import gradcodes`` loads
(none of scipy, numba, galois, torch, mpi4py, hypothesis should be among them). The load average is printed first:
on a loaded machine every time grows.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
RESULTS = Path(__file__).resolve().parent / "results" / "cold_start.txt"

BARE = "pass"
IMPORT = "import gradcodes"
VERIFY = "import gradcodes as gc; gc.verify(gc.cyclic_repetition(40, 4, rng=21))"
HEAVY = ("scipy", "numba", "llvmlite", "galois", "torch", "mpi4py", "hypothesis", "mpmath", "sympy")
TARGET = 0.5


def run_once(code: str, env: dict[str, str]) -> float:
    t = time.perf_counter()
    subprocess.run([sys.executable, "-c", code], check=True, env=env, cwd=ROOT)
    return time.perf_counter() - t


def heavy_modules(env: dict[str, str]) -> list[str]:
    probe = (f"import sys, gradcodes; print(' '.join(sorted({{m.split('.')[0] for m in sys.modules}} & "
             f"set({HEAVY!r}))))")
    out = subprocess.run([sys.executable, "-c", probe], check=True, env=env, cwd=ROOT, capture_output=True,
                         text=True).stdout.split()
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--repeats", type=int, default=15, help="fresh processes per command (median)")
    ap.add_argument("--smoke", action="store_true", help="3 repeats, no output file")
    args = ap.parse_args(argv)
    repeats = 3 if args.smoke else max(3, args.repeats)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]))
    # a user's interpreter caches the modules' bytecode (__pycache__); with PYTHONDONTWRITEBYTECODE set every run
    # would compile every module changed since the last cached copy, which times the compiler, not gradcodes
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    run_once(VERIFY, env)                      # fill the OS file cache, __pycache__ and numba's cache once, untimed
    times: dict[str, list[float]] = {BARE: [], IMPORT: [], VERIFY: []}
    for _ in range(repeats):
        for code in times:
            times[code].append(run_once(code, env))
    bare = statistics.median(times[BARE])
    over_import = statistics.median(t - b for t, b in zip(times[IMPORT], times[BARE], strict=True))
    over_verify = statistics.median(t - b for t, b in zip(times[VERIFY], times[BARE], strict=True))
    heavy = heavy_modules(env)
    lines = [
        f"load average: {' '.join(f'{x:.2f}' for x in os.getloadavg())}; {repeats} repeats; python "
        f"{sys.version.split()[0]}",
        f"bare interpreter (python -c pass)          median {bare:.3f} s",
        f"import gradcodes                          +{over_import:.3f} s over bare (median of differences)",
        f"import + verify(cyclic_repetition(40, 4)) +{over_verify:.3f} s over bare (target <= {TARGET} s): "
        f"{'met' if over_verify <= TARGET else 'NOT met'}",
        f"heavy packages loaded by import gradcodes: {', '.join(heavy) if heavy else 'none'}",
    ]
    print("\n".join(lines))
    if not args.smoke:
        RESULTS.write_text("\n".join(lines) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
