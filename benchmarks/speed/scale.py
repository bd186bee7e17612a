"""Codes at cluster scale: build, verify, one decode and one encode_worker, sparse storage against dense.

    python benchmarks/speed/scale.py          # n = 1e3, 1e4, 1e5 (and the 33,824-worker trees): results/scale.txt
    python benchmarks/speed/scale.py --smoke  # n ~ 200, writes nothing (the test suite runs it)

For each family -- fractional repetition (s = 99), stable binary (s = 100), grouped MDS (s = 100) and CodedReduce
trees (depth 3, fractional-repetition inner code; ``coded_reduce(32, 3, 4)`` with its Ye-Abbe inner code, which has
no theorem, and with an exact 0/1 inner code of 6 unequal groups, proven by composition) --
and each size, one fresh process builds the code, verifies it (``gc.verify`` with its defaults; on the dense path
with ``samples=100, search=False`` up to n = 2000 and not beyond, since it decodes sets, each a product with the
dense ``B``, before trying its theorem), decodes one
iteration from ``n - s`` responders (``q = 16`` columns, compact rows; trees: one random pattern of ``s``
stragglers per parent) and encodes one worker's message (``p = 1000``), and reports each time and the process's
peak resident memory (``ru_maxrss``, which includes the interpreter, numpy and scipy: about 100 MB). The same
point runs a second time with the code stored dense (``gradcodes._core.sparse.SPARSE_FROM`` raised) where its dense
matrix fits ``gradcodes.limits.entries``; "-" where it does not. Peak memory of the sparse path grows with the
non-zeros (``nnz`` column): the slope is the ratio of two rows. The load average is printed first: on a loaded
machine every time grows.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
RESULTS = Path(__file__).resolve().parent / "results" / "scale.txt"

#: (label, constructor, args) per size class
FULL = {
    "fractional_repetition": [(1000, 99), (10_000, 99), (100_000, 99)],
    "stable_binary": [(1000, 100), (10_000, 100), (100_000, 100)],
    "grouped_mds": [(1000, 100), (10_000, 100), (100_000, 100)],
    "coded_reduce": [(10, 3, 1), (21, 3, 2), (32, 3, 3), (46, 3, 1), (32, 3, 4)],
    "coded_reduce_groups": [(32, 3, 4)],
}
SMOKE = {
    "fractional_repetition": [(200, 9)],
    "stable_binary": [(203, 10)],
    "grouped_mds": [(203, 10)],
    "coded_reduce": [(5, 3, 1)],
    "coded_reduce_groups": [(7, 2, 2)],
}


def group_inner(gc: object, b: int, s: int) -> object:
    """An exact 0/1 inner code for any ``(b, s)``: ``b // (s + 1)`` groups of near-equal sizes (each at least
    ``s + 1``), one partition per group, decoded by one responder per group (fractional repetition with unequal
    groups); its proof is the group theorem, so the tree's proof is by composition."""
    import numpy as np

    from gradcodes._families.repetition import GroupDecoder

    G = b // (s + 1)
    sizes = [b // G + (1 if g < b % G else 0) for g in range(G)]
    bounds = np.cumsum([0, *sizes])
    B = np.zeros((b, G))
    for g in range(G):
        B[bounds[g]:bounds[g + 1], g] = 1.0
    return gc.GradientCode(B, s, decoders=[GroupDecoder(bounds)], default_decoder="group",  # type: ignore[attr-defined]
                           name=f"groups{tuple(sizes)}")


def point(family: str, args: list[int], dense: bool) -> dict:
    """One measurement, in this (fresh) process."""
    sys.path.insert(0, str(ROOT))
    import numpy as np

    import gradcodes as gc
    from gradcodes._core import sparse as _sparse

    if dense:
        _sparse.SPARSE_FROM = 10**30
    out: dict = {"family": family, "args": args, "storage": "dense" if dense else "sparse"}
    t = time.perf_counter()
    try:
        if family == "coded_reduce_groups":
            code = gc.coded_reduce(*args, inner=group_inner(gc, args[0], args[2]))
        else:
            code = getattr(gc, family)(*args)
    except gc.SizeLimitError:
        out["skipped"] = "dense B over gradcodes.limits.entries"
        return out
    out["build"] = time.perf_counter() - t
    out["n"], out["nnz"], out["load"] = code.n, code.nnz, int(code.load)
    from gradcodes._families.coded_reduce_verify import tree_theorem

    slow_tree = family.startswith("coded_reduce") and code.n > 10**4 and tree_theorem(code, 1e-8) is None
    if slow_tree:
        out["verify"], out["method"] = None, "not run (no theorem; sampling 33,824 targeted patterns)"
    elif dense and code.n > 2000:
        out["verify"], out["method"] = None, "not run (the dense verifier decodes sets before its theorem)"
    else:
        t = time.perf_counter()
        # the dense path samples sets before its theorem: 100 sets, no search, to keep it within minutes
        rep = gc.verify(code, samples=100, search=False) if dense else gc.verify(code)
        out["verify"] = time.perf_counter() - t
        out["method"] = f"{rep.verdict}: {rep.method.split(':')[0]}{': ' + rep.theorem[:22] if rep.theorem else ''}"
    rng = np.random.default_rng(0)
    if hasattr(code, "random_patterns"):
        F = np.flatnonzero(code.random_patterns(1, rng=0)[0])
    else:
        F = np.setdiff1d(np.arange(code.n), rng.choice(code.n, code.s, replace=False))
    Y = rng.standard_normal((F.size, 16))
    t = time.perf_counter()
    try:
        code.decode(F, Y)
        out["decode"] = time.perf_counter() - t
    except gc.DecodingError:                               # a code verify reports as failing: the decode refuses
        out["decode"] = None
        out["method"] += "; decode refused (DecodingError)"
    G = rng.standard_normal((int(code.loads[7]), 1000))
    warm = gc.fractional_repetition(2, 1)                  # lazy imports of the encode path, untimed
    warm.encode_worker(0, np.ones((warm.load, 4)))
    t = time.perf_counter()
    code.encode_worker(7, G)
    out["encode_worker"] = time.perf_counter() - t
    out["peak_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return out


def run_point(family: str, args: tuple[int, ...], dense: bool) -> dict:
    cmd = [sys.executable, __file__, "--point", json.dumps([family, list(args), dense])]
    res = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT, timeout=3600)
    if res.returncode != 0:
        return {"family": family, "args": list(args), "storage": "dense" if dense else "sparse",
                "error": res.stderr.strip().splitlines()[-1] if res.stderr.strip() else f"exit {res.returncode}"}
    return json.loads(res.stdout.strip().splitlines()[-1])


def fmt(v: float | None) -> str:
    return f"{'-':>7}" if v is None else f"{v:7.2f}"


def row(r: dict) -> str:
    head = f"{r['family'] + str(tuple(r['args'])):34} {r['storage']:6}"
    if "error" in r:
        return f"{head} error: {r['error'][:80]}"
    if "skipped" in r:
        return f"{head} {'-':>7} (skipped: {r['skipped']})"
    return (f"{head} {r['n']:>7,} {r['nnz']:>11,} {fmt(r['build'])} {fmt(r['verify'])} {fmt(r['decode'])} "
            f"{fmt(r['encode_worker'])} {r['peak_mb']:8.0f}  {r['method']}")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--smoke", action="store_true", help="tiny sizes, no output file")
    ap.add_argument("--point", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.point:
        family, fargs, dense = json.loads(args.point)
        print(json.dumps(point(family, fargs, dense)))
        return 0
    plan = SMOKE if args.smoke else FULL
    lines = [f"load average: {' '.join(f'{x:.2f}' for x in os.getloadavg())} ({os.cpu_count()} cores; a busy "
             f"machine makes every time larger); python {sys.version.split()[0]}",
             "times in seconds; peak = the process's maximum resident memory (MB, interpreter and libraries "
             "included)",
             f"{'code':34} {'store':6} {'n':>7} {'nnz':>11} {'build':>7} {'verify':>7} {'decode':>7} "
             f"{'enc_w':>7} {'peak':>8}  verify result"]
    print("\n".join(lines), flush=True)
    for family, sizes in plan.items():
        for fargs in sizes:
            for dense in (False, True):
                line = row(run_point(family, fargs, dense))
                print(line, flush=True)
                lines.append(line)
    if not args.smoke:
        RESULTS.write_text("\n".join(lines) + "\n")
        print(f"wrote {RESULTS}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
