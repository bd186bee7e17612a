"""How many straggler sets the verifier's screen decides itself, and that every decision is the reference's.

    python benchmarks/verify/screen_band.py             # 1,000,000 sets of three codes; writes results/screen_band.txt
    python benchmarks/verify/screen_band.py --smoke     # 20,000 sets of one code, writes nothing (the test suite)

For each code it runs the compiled screening kernel (``gradcodes/_verify/fast.py``) over the first ``--sets``
straggler sets in lexicographic order (the numpy screen with ``--numpy``) and counts its verdicts: cleared, failing,
borderline, and handed to the reference evaluation (the band within about 0.3 % of an end of the acceptance rule's
interval, or a set whose decoding vector the kernel cannot bound). Then it evaluates, with the reference rule,
every set the kernel did not clear and every ``--stride``-th cleared set, and counts the decisions the reference
contradicts (the target: none). No timing is reported except the kernel's own wall time (median of ``--repeat``),
for scale. The codes have many sets near the tolerance: ``cyclic_repetition(66, 5, rng=2)`` (145,417 borderline
and 54,875 failing sets among its 8,936,928), ``cyclic_repetition(70, 5, rng=0)`` and
``cyclic_repetition(50, 5, rng=3)``.
"""

from __future__ import annotations

import argparse
import math
import os
import statistics
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

import gradcodes as gc  # noqa: E402
from gradcodes._base.output import format_table  # noqa: E402
from gradcodes._core.numerics import BORDERLINE, FAILS, OK, unit_roundoff  # noqa: E402
from gradcodes._verify.fast import (  # noqa: E402
    BORDER,
    CLEAR,
    FAIL,
    REFER,
    NullSpaceScreen,
    compiled_kernel,
    screen_range,
)
from gradcodes._verify.verifier import _Tracker  # noqa: E402

RESULTS = Path(__file__).resolve().parent / "results" / "screen_band.txt"
CODES = [(66, 5, 2), (70, 5, 0), (50, 5, 3)]


def measure(n: int, s: int, seed: int, sets: int, stride: int, repeat: int, numba: bool) -> dict[str, object]:
    code = gc.cyclic_repetition(n, s, rng=seed)
    tr = _Tracker(code, code._decoder(None), code.rtol)
    screen = NullSpaceScreen(code, unit_roundoff(np.float64), code.rtol, tr.load)
    count = min(sets, math.comb(n, s))
    first = np.arange(s, dtype=np.int64)
    screen_range(screen, n, first, 1, numba, best=np.zeros(1))                  # compile / load the kernel
    walls = []
    for _ in range(repeat):
        t = time.perf_counter()
        S, _, _, _, _, verdict = screen_range(screen, n, first, count, numba, best=np.zeros(1))
        walls.append(time.perf_counter() - t)
    check = np.flatnonzero((verdict != CLEAR) | (np.arange(count) % stride == 0))
    ev = tr.evaluate(S[check])
    vk, vr = verdict[check], ev.verdict
    wrong = int(np.count_nonzero(((vk == CLEAR) & (vr != OK)) | ((vk == FAIL) & (vr != FAILS))
                                 | ((vk == BORDER) & (vr != BORDERLINE))))
    return {"code": f"cyclic_repetition({n}, {s}, rng={seed})", "sets": f"{count:,}",
            "cleared": f"{int(np.count_nonzero(verdict == CLEAR)):,}",
            "failing": f"{int(np.count_nonzero(verdict == FAIL)):,}",
            "borderline": f"{int(np.count_nonzero(verdict == BORDER)):,}",
            "to the reference": f"{int(np.count_nonzero(verdict == REFER)):,}",
            "per million": f"{1e6 * np.count_nonzero(verdict == REFER) / count:.0f}",
            "re-evaluated": f"{check.size:,}", "contradicted": wrong,
            "kernel s": f"{statistics.median(walls):.2f}"}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sets", type=int, default=1_000_000, help="straggler sets per code (default 1,000,000)")
    ap.add_argument("--stride", type=int, default=50, help="re-evaluate every stride-th cleared set (default 50)")
    ap.add_argument("--repeat", type=int, default=3, help="kernel timings per code (median; default 3)")
    ap.add_argument("--numpy", action="store_true", help="the numpy screen instead of the compiled kernel")
    ap.add_argument("--smoke", action="store_true", help="20,000 sets of one code, nothing written")
    args = ap.parse_args(argv)
    codes = CODES
    if args.smoke:
        args.sets, args.repeat, codes = 20_000, 1, CODES[:1]
    numba = not args.numpy and compiled_kernel() is not None
    lines = [f"screen_band: first {args.sets:,} straggler sets in lexicographic order, "
             f"{'compiled kernel' if numba else 'numpy screen'}, default rtol 1e-8 (float64); every set not "
             f"cleared and every {args.stride}th cleared set re-evaluated by the reference rule; load average at "
             f"start {' '.join(f'{x:.2f}' for x in os.getloadavg())}"]
    print(lines[0], flush=True)
    rows = [measure(n, s, seed, args.sets, args.stride, args.repeat, numba) for n, s, seed in codes]
    lines.append(format_table(rows))
    bad = sum(int(r["contradicted"]) for r in rows)                        # type: ignore[call-overload]
    lines.append(f"decisions the reference contradicts: {bad} (target 0)")
    for line in lines[1:]:
        print(line)
    if not args.smoke:
        RESULTS.write_text("\n".join(lines) + "\n")
    return 0 if bad == 0 else 1


if __name__ == "__main__":
    raise SystemExit(main())
