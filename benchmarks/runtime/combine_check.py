"""The MPI master's decode and its NaN/inf check: one check after the whole combine, or a check per cache-sized
block right after it is written, against the floor program's combine (no check).

    python benchmarks/runtime/combine_check.py            # q = 1e3, 1e5, 1e6; 7 repeats
    python benchmarks/runtime/combine_check.py --smoke    # q = 1e3, 2 repeats, writes nothing (the test suite runs it)

One process, BLAS limited to one thread (as ``gradcodes.mpi`` sets it), float64 messages of
``cyclic_repetition(8, 2, rng=0)`` and the six responders ``[0, 2, 3, 5, 6, 7]``:

* ``floor``: the combine of ``benchmarks/runtime/runtime_floor.py``'s minimal program (a multiply for the first message,
  then one ``combine_rows`` call per message; no check);
* ``whole + check``: ``Combiner.combine_finite`` of ``gradcodes._runtime.codec`` (one ``combine_rows`` over the
  messages, then one sum of squares of the result by BLAS ``dot``);
* ``blocks of 2^b + check``: the previous ``combine_finite`` (the result in blocks of ``2^b`` columns, each block
  combined and then checked while it is in cache), written out here for the comparison.

Times are medians over ``--repeats`` runs of the mean of a batch of calls, the methods alternated; the load
average is printed. Results: ``benchmarks/runtime/results/combine_check.txt``.
"""

from __future__ import annotations

import argparse
import math
import os
import sys
import time
from pathlib import Path

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")

import numpy as np  # noqa: E402

import gradcodes as gc  # noqa: E402
from gradcodes._core.apply import combine_rows  # noqa: E402
from gradcodes._runtime.codec import Combiner  # noqa: E402

ROWS = [0, 2, 3, 5, 6, 7]


def blocked(comb: Combiner, rows: list[int], buf: np.ndarray, out: np.ndarray, block: int) -> bool:
    """The previous ``combine_finite``: blocks of ``block`` columns, each checked right after it is written."""
    q = buf.shape[1]
    ok = True
    with np.errstate(over="ignore", invalid="ignore"):
        idx, cs = comb.plan(rows, buf.dtype)[0]
        parts = [buf[i] for i in idx]
        for a in range(0, q, block):
            b = min(q, a + block)
            o = out[a:b]
            combine_rows(o, cs, [r[a:b] for r in parts], range(len(idx)))
            if ok and not math.isfinite(float(abs(np.dot(o, o)))):
                ok = bool(np.isfinite(o).all())
    return ok


def measure(comb: Combiner, idx: list[int], cs: list[float], n: int, q: int, repeats: int) -> str:
    """One line of the table: every method's median time at message length ``q``."""
    buf = np.random.default_rng(0).normal(size=(n, q))
    out = np.empty(q)
    calls = max(3, min(2000, 2_000_000 // q))

    def floor() -> None:
        for a, (i, c) in enumerate(zip(idx, cs, strict=True)):
            if a == 0:
                np.multiply(buf[i], c, out=out)
            else:
                combine_rows(out, [c], buf, [i], accumulate=True)

    methods = {"floor": floor, "whole + check": lambda: comb.combine_finite(ROWS, buf, out)}
    for b in (14, 16):
        methods[f"blocks of 2^{b} + check"] = lambda b=b: blocked(comb, ROWS, buf, out, 1 << b)
    ref = np.empty(q)
    comb.combine(ROWS, buf, ref)
    for name, fn in methods.items():                       # every method computes the same decode
        fn()
        assert np.allclose(out, ref, rtol=1e-12, atol=1e-12), name
    times: dict[str, list[float]] = {k: [] for k in methods}
    for _ in range(repeats):
        for name, fn in methods.items():
            t0 = time.perf_counter()
            for _ in range(calls):
                fn()
            times[name].append((time.perf_counter() - t0) / calls)
    med = {k: float(np.median(v)) * 1e6 for k, v in times.items()}
    return (f"q = {q:>8}: " + ", ".join(f"{k} {v:.1f}" for k, v in med.items())
            + f"; whole + check / floor = {med['whole + check'] / med['floor']:.2f}")


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--smoke", action="store_true")
    ap.add_argument("--repeats", type=int, default=7)
    args = ap.parse_args(argv)
    qs = [1000] if args.smoke else [1000, 100_000, 1_000_000]
    repeats = 2 if args.smoke else args.repeats
    code = gc.cyclic_repetition(8, 2, rng=0)
    comb = Combiner(code)
    idx, cs = comb.plan(ROWS, np.dtype(np.float64))[0]
    la = os.getloadavg()
    lines = [f"combine + NaN/inf check, {time.strftime('%Y-%m-%d %H:%M')}, load average {la[0]:.2f}; "
             f"cyclic_repetition(8, 2), 6 float64 messages; microseconds per decode, median of {repeats} runs"]
    for q in qs:
        lines.append(measure(comb, idx, cs, code.n, q, repeats))
    print("\n".join(lines))
    if not args.smoke:
        out_path = Path(__file__).parent / "results" / "combine_check.txt"
        out_path.write_text("# PYTHONPATH=. python benchmarks/runtime/combine_check.py\n" + "\n".join(lines) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
