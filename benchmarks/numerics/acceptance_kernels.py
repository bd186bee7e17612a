"""How much a decode's own measurement varies between BLAS kernels and thread counts, against the allowances of the
acceptance rule (gradcodes._core.numerics.error_bounds).

For a panel of codes with strong cancellation (where verdicts used to flip between machines), one process per
OpenBLAS setting (OPENBLAS_CORETYPE x OPENBLAS_NUM_THREADS, OPENBLAS_L2_SIZE unset; settings the CPU cannot run are
skipped) computes, for a fixed list of responder sets, the decoding matrix exactly as ``code.decode`` does (its
cached single-set computation) and the batched one of the verifier (``gc.verify``'s reference evaluation), and
measures residual, cancellation factor, magnitude and width. The parent compares every setting with the first:

* residual variation ``|r - r_ref|`` against the rule's residual allowance ``delta = (gamma_{w+1} + 2 gamma_w)
  (mag + 1)`` (ratio < 1 means the allowance covers it),
* relative cancellation variation against ``CANC_ALLOWANCE = 2^-20``,
* the verdict of every set by :func:`gradcodes._core.numerics.judge` in every setting (an ``ok`` in one setting and a
  ``fails`` in another would break the guarantee).

Usage: ``python benchmarks/numerics/acceptance_kernels.py`` (about a minute), ``--smoke`` (two settings, one code).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np

CODES = {
    "cyclic_repetition(30, 4, rng=7, refine=0)": "gc.cyclic_repetition(30, 4, rng=7, refine=0)",
    "cyclic_repetition(25, 5, rng=13, refine=0)": "gc.cyclic_repetition(25, 5, rng=13, refine=0)",
    "cyclic_repetition(40, 3, rng=0)": "gc.cyclic_repetition(40, 3, rng=0)",
    "cyclic_mds(32, 14)": "gc.cyclic_mds(32, 14)",
}
CORES = ["Prescott", "Nehalem", "Sandybridge", "Haswell", "SkylakeX", "Zen"]
NEEDS = {"SkylakeX": "avx512f", "Haswell": "avx2", "Zen": "avx2", "Sandybridge": "avx"}


def _sets(code, count: int = 40) -> list[list[int]]:
    """Responder sets to compare: the verifier's worst, borderline and failing sets and consecutive windows."""
    import gradcodes as gc

    rep = gc.verify(code, rng=0, stop_on_failure=False, time_budget=5)
    out = [list(F) for F in (rep.worst_responders, rep.worst_cancellation_responders) if F is not None]
    out += [list(F) for F in rep.borderline + rep.failures]
    n, s = code.n, code.s
    for t in range(n):
        S = {(t + j) % n for j in range(s)}
        out.append([i for i in range(n) if i not in S])
    seen, uniq = set(), []
    for F in out:
        if tuple(F) not in seen:
            seen.add(tuple(F))
            uniq.append(F)
    return uniq[:count]


def child(spec: dict[str, list[list[int]]]) -> dict[str, list[list[float]]]:
    import gradcodes as gc
    from gradcodes._core.numerics import cancellation, magnitude, residuals, widths

    out: dict[str, list[list[float]]] = {}
    for name, sets in spec.items():
        code = eval(CODES[name], {"gc": gc})  # noqa: S307 - the fixed expressions above
        dec = code._decoder(None)
        rows = []
        masks = np.zeros((len(sets), code.n), dtype=bool)
        for r, F in enumerate(sets):
            masks[r, F] = True
        batched = dec.matrices(code, masks)                     # the verifier's batched evaluation
        for r, F in enumerate(sets):
            A, res, canc = code._raw_decoding_matrix(np.asarray(F), masks[r], dec)   # decode's own computation
            for M in (A[None], batched[r:r + 1]):
                rows.append([float(residuals(M, code.B, code.target)[0]), float(cancellation(M, code.B, code.k)[0]),
                             float(magnitude(M, code.B)[0]), float(widths(M)[0]), float(code.load)])
        out[name] = rows
    return out


def _cpu_flags() -> set[str]:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("flags"):
                return set(line.split(":", 1)[1].split())
    except OSError:
        pass
    return set()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--smoke", action="store_true", help="two settings, one code (seconds)")
    ap.add_argument("--child", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        print(json.dumps(child(json.loads(Path(args.child).read_text()))))
        return
    import gradcodes as gc
    from gradcodes._core.numerics import CANC_ALLOWANCE, judge, residual_slack

    names = list(CODES)[:1] if args.smoke else list(CODES)
    spec = {name: _sets(eval(CODES[name], {"gc": gc})) for name in names}  # noqa: S307
    path = Path(os.environ.get("TMPDIR", "/tmp")) / f"acceptance_kernels_{os.getpid()}.json"
    path.write_text(json.dumps(spec))
    flags = _cpu_flags()
    settings = []
    for core in (CORES[:1] + CORES[3:4] if args.smoke else CORES):
        need = NEEDS.get(core)
        if need and flags and need not in flags:
            print(f"skip {core}: the CPU lacks {need}")
            continue
        for threads in ((1,) if args.smoke else (1, 2)):
            settings.append((core, threads))
    results = {}
    for core, threads in settings:
        env = {k: v for k, v in os.environ.items() if k != "OPENBLAS_L2_SIZE"}
        env.update(OPENBLAS_CORETYPE=core, OPENBLAS_NUM_THREADS=str(threads))
        res = subprocess.run([sys.executable, __file__, "--child", str(path)], env=env, capture_output=True,
                             text=True, check=True)
        results[(core, threads)] = json.loads(res.stdout)
    path.unlink()
    ref_key = settings[0]
    print(f"reference setting: OPENBLAS_CORETYPE={ref_key[0]} OPENBLAS_NUM_THREADS={ref_key[1]}; "
          f"{len(settings)} settings; per code: decode's and the verifier's matrices of each set")
    print(f"{'code':44} {'sets':>5} {'max |dr| / delta':>17} {'max |dcanc|/canc':>17} {'/ 2^-20':>8} "
          f"{'verdicts (reference)':>22}")
    worst_ratio = 0.0
    for name in names:
        ref = np.array(results[ref_key][name])
        dr, dc, verdicts = [], [], []
        for key in settings:
            got = np.array(results[key][name])
            delta = residual_slack(np.maximum(ref[:, 2], got[:, 2]), np.maximum(ref[:, 3], got[:, 3]))
            dr.append(np.abs(got[:, 0] - ref[:, 0]) / delta)
            dc.append(np.abs(got[:, 1] - ref[:, 1]) / ref[:, 1])
            v = judge(got[:, 1], got[:, 0], got[:, 2], got[:, 3], 1e-8, np.float64, got[:, 3] + got[:, 4])
            verdicts.append(v)
        r, c = float(np.max(dr)), float(np.max(dc))
        worst_ratio = max(worst_ratio, r, c / CANC_ALLOWANCE)
        V = np.array(verdicts)
        contradictions = int(((V == 0).any(axis=0) & (V == 2).any(axis=0)).sum())
        worst_ratio = max(worst_ratio, float("inf") if contradictions else 0.0)
        counts = V[0]
        text = f"{int((counts == 0).sum())} ok {int((counts == 1).sum())} bl {int((counts == 2).sum())} fails"
        print(f"{name:44} {len(spec[name]):5d} {r:17.3g} {c:17.3g} {c / CANC_ALLOWANCE:8.3g} {text:>22} "
              f"{contradictions:>3} ok/fails contradictions")
    print(f"largest variation / allowance: {worst_ratio:.3g} (< 1: every setting's measurement is inside the rule's "
          f"interval around the reference's)")


if __name__ == "__main__":
    main()
