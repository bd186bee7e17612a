"""Certify seeds of gradcodes.grouped_random: screen candidate seeds cheaply, then verify the best one exhaustively.

    python benchmarks/verify/certify_seeds.py --screen NG S EXTRA SEED0 SEED1 [--samples N]   # sample, rank the seeds
    python benchmarks/verify/certify_seeds.py NG S EXTRA SEED [SEED ...] [--target T] [--part I --parts K]
    python benchmarks/verify/certify_seeds.py --merge NG S EXTRA SEED --parts K               # combine finished parts
    python benchmarks/verify/certify_seeds.py --check [--max-sets N]                          # re-verify CERTIFIED
    python benchmarks/verify/certify_seeds.py --verify NG S EXTRA SEED [--workers W] [--checkpoint PATH]  # gc.verify it
    python benchmarks/verify/certify_seeds.py --code N S                # verify recommend(N, S, max_load=S+2) by blocks
    python benchmarks/verify/certify_seeds.py --smoke                   # screen, certify a (10, 3, 1) group, no files

A group of NG workers is coded by cyclic_repetition(NG, S + EXTRA, rng=SEED, refine=REFINE) and decoded by the
row-space decoder against S stragglers.

* ``--screen`` evaluates the same random straggler sets (``--samples``, default 500,000) for every seed in
  [SEED0, SEED1) and prints the sampled worst error and tail counts. A sample is NOT a worst case (the worst
  sets of these codes are far rarer than one in a million); it only orders the candidates.
* Certification checks all C(NG, S) straggler sets with the verifier's reference evaluation
  (``gradcodes._verify.verifier._Tracker``: the code's decoder, the batched residual and the acceptance rule of
  ``gradcodes.verify``), in chunks of consecutive lexicographic ranks visited in a fixed shuffled order, so that
  with ``--target`` a seed whose running worst error exceeds the target is abandoned early (its bad sets are
  met early on average). ``--part I --parts K`` runs the chunks with position = I mod K, for K processes; the
  certificate is the combination of the K finished parts (``--merge``; the worst values are maxima, the sets add
  up to C(NG, S) exactly once each).
* ``--check`` repeats the certification of every stored entry with ``gradcodes.verify(..., limit=C(NG, S))``
  itself and compares the worst error. ``--verify`` runs that second evaluation on a seed not stored yet (the
  entries hold both evaluations), on ``--workers`` local processes (default: every core), saving its progress to
  ``--checkpoint`` (a stopped run continues from it when given the same path).
* ``--code N S`` builds ``gradcodes.recommend(N, S, max_load=S + 2)`` and runs ``gradcodes.verify`` on the code it
  returns, enumerating every straggler set of every distinct group (the proof by blocks), and prints the verdict,
  the worst error and the time.

Results are appended to benchmarks/verify/results/certified_seeds.jsonl (one JSON object per line). Winning entries are
copied into gradcodes/_families/_certified_seeds.py by hand.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

import gradcodes as gc
from gradcodes._core.decoders import single_threaded_blas
from gradcodes._families._certified_seeds import CERTIFIED
from gradcodes._families._rowspace_kernel import kernels
from gradcodes._families.grouped_random import REFINE, RowSpaceDecoder, _block_code
from gradcodes._verify.fast import _binom_table, unrank_lex
from gradcodes._verify.verifier import _Tracker, random_straggler_sets

LOG = Path(__file__).parent / "results" / "certified_seeds.jsonl"
SCREEN_LOG = Path(__file__).parent / "results" / "seed_screen.jsonl"
CHUNK = 1 << 16


def _log(path: Path, rec: dict[str, Any]) -> None:
    path.parent.mkdir(exist_ok=True)
    with path.open("a") as fh:
        fh.write(json.dumps(rec) + "\n")


def screen(ng: int, s: int, extra: int, seeds: range, samples: int) -> list[dict[str, Any]]:
    """Sampled worst error of each seed on one common set of random straggler sets (not a worst case)."""
    S = random_straggler_sets(ng, s, samples, np.random.default_rng(12345))
    out = []
    for sd in seeds:
        sub = _block_code(ng, s, extra, sd)
        tr = _Tracker(sub, sub._decoder(None), sub.rtol)
        t0 = time.perf_counter()
        with single_threaded_blas():
            est = np.concatenate([tr.add(S[i:i + 4096]) for i in range(0, samples, 4096)])
        rec = {"n_g": ng, "s": s, "extra": extra, "seed": sd, "refine": REFINE, "samples": samples,
               "sampled_worst": float(est.max()), "above_1e-12": int((est > 1e-12).sum()),
               "above_3e-12": int((est > 3e-12).sum()), "q99.99": float(np.quantile(est, 0.9999)),
               "seconds": round(time.perf_counter() - t0, 1), "loadavg": os.getloadavg()[0]}
        print(json.dumps(rec), flush=True)
        _log(SCREEN_LOG, rec)
        out.append(rec)
    return out


def chunk_order(total: int) -> np.ndarray:
    """The fixed shuffled order of the chunks of CHUNK consecutive lexicographic ranks."""
    return np.random.default_rng(2026).permutation(-(-total // CHUNK))


def certify_part(ng: int, s: int, extra: int, seed: int, target: float | None, part: int, parts: int,
                 reference: bool = False, combine: tuple[float, float, float] | None = None) -> dict[str, Any]:
    """Every straggler set of this part's chunks (all of them when ``parts == 1``): by the compiled kernel
    (gradcodes._families._rowspace_kernel.certify_sets: the decoder's own decoding vectors, residual and
    cancellation evaluated on the spot; sets with a singular factor go to the verifier's reference evaluation, as
    the decoder sends them to least squares), or with ``reference`` by the verifier's reference evaluation.

    ``combine = (frac, res_other, canc_term)``: abandon when the bound of gradcodes._verify.blocks for a grouped code
    made
    of this group (share ``frac`` of the partitions) and already certified groups (largest residual ``res_other``,
    their share of the cancellation term ``canc_term`` = u sum (k_b/k) canc_b) exceeds ``target``, instead of this
    group's own worst estimate."""
    sub = _block_code(ng, s, extra, seed)
    dec = sub._decoder(None)
    tr = _Tracker(sub, dec, sub.rtol)
    total = math.comb(ng, s)
    table = _binom_table(ng, s)
    order = chunk_order(total)[part::parts]
    kern = None if reference else kernels()
    if kern is not None:
        C, c, w = RowSpaceDecoder.basis(sub)
        B = np.ascontiguousarray(sub.B, dtype=np.float64)
        E = np.ascontiguousarray(sub.target, dtype=np.float64)
        u = float(np.finfo(np.float64).eps) / 2
        worst = np.array([0.0, -1.0, -1.0])
        worst_set = np.zeros((3, s), dtype=np.int64)
        singular = np.zeros((4096, s), dtype=np.int64)
    t0 = last = time.perf_counter()
    aborted = False
    kernel_sets = 0
    with single_threaded_blas():
        for i, ch in enumerate(order):
            lo, hi = int(ch) * CHUNK, min(total, (int(ch) + 1) * CHUNK)
            if kern is None:
                for b in range(lo, hi, 4096):
                    tr.add(unrank_lex(ng, s, np.arange(b, min(hi, b + 4096), dtype=np.int64), table))
            else:
                first = unrank_lex(ng, s, np.array([lo], dtype=np.int64), table)[0]
                ns = kern[1](C, c, w, B, E, sub.k, u, first, hi - lo, worst, worst_set, singular)
                if ns > singular.shape[0]:
                    raise RuntimeError(f"{ns} singular sets in one chunk: use --reference")
                kernel_sets += hi - lo - ns
                if ns:
                    tr.add(singular[:ns].copy())         # the decoder's least-squares fallback, by the reference
            est = max(tr.worst_est, float(worst[0])) if kern is not None else tr.worst_est
            if combine is not None:                      # the bound of a grouped code with this group in it
                res_k, canc_k = (max(tr.worst_res, float(worst[1])), max(tr.worst_canc, float(worst[2]))) \
                    if kern is not None else (tr.worst_res, tr.worst_canc)
                frac, res_other, canc_term = combine
                est = max(res_k, res_other) + frac * canc_k * 2.0**-53 + canc_term
            if tr.n_failures or (target is not None and est > target):
                aborted = True
                break
            if time.perf_counter() - last > 60:
                last = time.perf_counter()
                done = tr.checked + kernel_sets
                print(f"  seed {seed} part {part}/{parts}: {done:,} sets, chunk {i + 1} of {len(order)}, "
                      f"{done / (last - t0):,.0f} sets/s, worst so far {est:.3g}", flush=True)
    rec: dict[str, Any] = {"n_g": ng, "s": s, "extra": extra, "seed": seed, "refine": REFINE, "part": part,
                           "parts": parts,
                           "chunk": CHUNK, "aborted": aborted, "target": target, "n_failures": tr.n_failures,
                           "evaluation": "reference" if kern is None else "kernel", "combine": combine}
    if kern is None:
        rec.update(error_estimate=tr.worst_est, worst_residual=tr.worst_res, worst_cancellation=tr.worst_canc,
                   worst_responders=list(tr.worst_res_S or ()), sets=tr.checked)
    else:
        comp = lambda S: [int(x) for x in np.setdiff1d(np.arange(ng), S)]   # noqa: E731
        est, res, canc = (float(x) for x in worst)
        rec.update(error_estimate=max(est, tr.worst_est), worst_residual=max(res, tr.worst_res),
                   worst_cancellation=max(canc, tr.worst_canc),
                   worst_responders=comp(worst_set[1]) if res >= tr.worst_res else list(tr.worst_res_S or ()),
                   worst_estimate_responders=comp(worst_set[0]), sets=kernel_sets + tr.checked,
                   singular_sets=tr.checked)
    rec.update(total=total, seconds=round(time.perf_counter() - t0, 1), loadavg=os.getloadavg()[0])
    return rec


def merge(ng: int, s: int, extra: int, seed: int, parts: int) -> dict[str, Any] | None:
    """Combine the finished parts of one certification from the log (None unless every part finished)."""
    recs = {}
    for line in LOG.read_text().splitlines():
        r = json.loads(line)
        if (r.get("n_g"), r.get("s"), r.get("extra"), r.get("seed"), r.get("parts")) == (ng, s, extra, seed, parts) \
                and not r.get("aborted") and "part" in r and r.get("chunk") == CHUNK \
                and r.get("refine", 0) == REFINE:
            recs[r["part"]] = r
    if sorted(recs) != list(range(parts)):
        return None
    total = math.comb(ng, s)
    sets = sum(r["sets"] for r in recs.values())
    if sets != total or any(r["n_failures"] for r in recs.values()):
        return None
    worst = max(recs.values(), key=lambda r: r["worst_residual"])
    return {"n_g": ng, "s": s, "extra": extra, "seed": seed, "refine": REFINE, "proven": True, "exhaustive": True,
            "error_estimate": max(r["error_estimate"] for r in recs.values()),
            "worst_residual": worst["worst_residual"],
            "worst_cancellation": max(r["worst_cancellation"] for r in recs.values()),
            "worst_responders": worst["worst_responders"], "n_failures": 0, "sets": sets, "total": total,
            "seconds": round(sum(r["seconds"] for r in recs.values()), 1),
            "loadavg": max(r["loadavg"] for r in recs.values()), "parts": parts}


def check_entry(ng: int, s: int, extra: int, seed: int, workers: int | None = None,
                checkpoint: str | None = None) -> dict[str, Any]:
    sub = _block_code(ng, s, extra, seed)
    total = math.comb(ng, s)
    t0 = time.perf_counter()
    rep = gc.verify(sub, limit=total, stop_on_failure=False, workers=workers, checkpoint=checkpoint,
                    checkpoint_every=60)
    return {"proven": bool(rep), "error_estimate": rep.error_estimate, "worst_residual": rep.worst_residual,
            "worst_cancellation": rep.worst_cancellation, "sets": rep.patterns_checked,
            "seconds": round(time.perf_counter() - t0, 1)}


def check_code(n: int, s: int) -> int:
    code = gc.recommend(n, s, max_load=s + 2, rng=0)
    print(code.recommendation, flush=True)
    sizes = sorted({len(b.workers) for b in gc.blocks_of(code) or []}) if code.family == "grouped_random" else []
    limit = max([math.comb(ng, s) for ng in sizes] + [1])
    t0 = time.perf_counter()
    rep = gc.verify(code, limit=limit, stop_on_failure=False)
    print(f"gc.verify(recommend({n}, {s}, max_load={s + 2})) [{code.family}, load {code.load}, group sizes {sizes}]: "
          f"verdict {rep.verdict!r}, proven {bool(rep)}, worst error {rep.error_estimate:.3g} (residual "
          f"{rep.worst_residual:.3g}, cancellation {rep.worst_cancellation:.4g}), {rep.patterns_checked:,} sets in "
          f"{time.perf_counter() - t0:.1f} s; load average {os.getloadavg()[0]:.1f}", flush=True)
    return 0 if bool(rep) and rep.error_estimate <= 1e-11 else 1


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("args", nargs="*", type=int)
    ap.add_argument("--check", action="store_true")
    ap.add_argument("--max-sets", type=int, default=None, help="with --check: skip entries with more sets")
    ap.add_argument("--only", type=int, nargs=3, default=None, metavar=("NG", "S", "EXTRA"),
                    help="with --check: this entry only")
    ap.add_argument("--screen", action="store_true")
    ap.add_argument("--code", action="store_true", help="verify recommend(N, S, max_load=S+2): args N S")
    ap.add_argument("--verify", action="store_true", help="gc.verify one seed over every set: args NG S EXTRA SEED")
    ap.add_argument("--workers", type=int, default=None, help="with --verify: local processes (default: all cores)")
    ap.add_argument("--checkpoint", default=None, help="with --verify: save progress here and continue from it")
    ap.add_argument("--samples", type=int, default=500_000)
    ap.add_argument("--target", type=float, default=None, help="abandon a seed once its worst error exceeds this")
    ap.add_argument("--part", type=int, default=0)
    ap.add_argument("--parts", type=int, default=1)
    ap.add_argument("--merge", action="store_true")
    ap.add_argument("--reference", action="store_true", help="the verifier's reference evaluation, not the kernel")
    ap.add_argument("--smoke", action="store_true",
                    help="tiny sizes (seconds) and no output files: checks that the script still runs")
    ap.add_argument("--combine", type=float, nargs=3, default=None, metavar=("FRAC", "RES_OTHER", "CANC_TERM"),
                    help="with --target: abandon on the combined block bound (see certify_part)")
    a = ap.parse_args()
    print(f"load average at start: {os.getloadavg()}", flush=True)
    if a.smoke:                                      # screen two seeds of a small group, certify one; no log files
        global SCREEN_LOG
        import tempfile

        SCREEN_LOG = Path(tempfile.mkdtemp(prefix="certify_smoke_")) / "seed_screen.jsonl"
        recs = screen(10, 3, 1, range(2), 200)
        r = certify_part(10, 3, 1, int(recs[0]["seed"]), None, 0, 1)
        print(json.dumps(r))
        return 0 if not r["aborted"] and r["sets"] == math.comb(10, 3) else 1
    if a.check:
        bad = 0
        for (ng, s, extra), entry in sorted(CERTIFIED.items()):
            if a.only is not None and (ng, s, extra) != tuple(a.only):
                continue
            if a.max_sets is not None and math.comb(ng, s) > a.max_sets:
                print(f"skip ({ng}, {s}, {extra}): {math.comb(ng, s):,} sets > --max-sets")
                continue
            r = check_entry(ng, s, extra, int(entry["seed"]))
            # the stored entries hold the former estimate u canc + residual (mean column); the re-verification the
            # rigorous bound (worst column, gamma_{t+2}): a match is a proof again with a consistent residual
            same = r["proven"] and r["worst_residual"] <= 2 * entry["worst_residual"]
            bad += not same
            print(f"({ng}, {s}, {extra}) seed {entry['seed']}: stored {entry['error_estimate']:.3g}, "
                  f"re-verified {r['error_estimate']:.3g} over {r['sets']:,} sets in {r['seconds']} s: "
                  f"{'OK' if same else 'MISMATCH'}", flush=True)
            print(json.dumps({"check": [ng, s, extra], "seed": entry["seed"], "refine": REFINE, **r,
                              "loadavg": os.getloadavg()[0]}), flush=True)
        return 1 if bad else 0
    if a.verify:
        if len(a.args) != 4:
            ap.error("--verify takes NG S EXTRA SEED")
        ng, s, extra, seed = a.args
        r = check_entry(ng, s, extra, seed, a.workers, a.checkpoint)
        print(json.dumps({"verify": [ng, s, extra], "seed": seed, "refine": REFINE, **r,
                          "workers": a.workers or os.cpu_count(), "loadavg": os.getloadavg()[0]}), flush=True)
        return 0 if r["proven"] else 1
    if a.code:
        if len(a.args) != 2:
            ap.error("--code takes N S")
        return check_code(*a.args)
    if a.screen:
        if len(a.args) != 5:
            ap.error("--screen takes NG S EXTRA SEED0 SEED1")
        ng, s, extra, s0, s1 = a.args
        recs = screen(ng, s, extra, range(s0, s1), a.samples)
        for r in sorted(recs, key=lambda r: (r["above_3e-12"], r["above_1e-12"], r["sampled_worst"])):
            print(f"seed {r['seed']:4d}: sampled worst {r['sampled_worst']:.3g}, > 3e-12: {r['above_3e-12']}, "
                  f"> 1e-12: {r['above_1e-12']} (of {r['samples']:,} random sets; not a worst case)")
        return 0
    if a.merge:
        if len(a.args) != 4:
            ap.error("--merge takes NG S EXTRA SEED")
        cert = merge(*a.args, a.parts)
        if cert is None:
            print("not every part has finished (or a part aborted or failed)")
            return 1
        print(json.dumps(cert))
        _log(LOG, cert)
        return 0
    if len(a.args) < 4:
        ap.error("give NG S EXTRA SEED [SEED ...]")
    if not 0 <= a.part < a.parts:
        ap.error("--part must be in [0, --parts)")
    ng, s, extra, *seeds = a.args
    for seed in seeds:
        r = certify_part(ng, s, extra, seed, a.target, a.part, a.parts, a.reference,
                         None if a.combine is None else tuple(a.combine))
        print(json.dumps(r), flush=True)
        _log(LOG, r)
        if a.parts == 1 and not r["aborted"] and not r["n_failures"]:
            r.update(proven=True, exhaustive=True)
            print(f"seed {seed}: proven, worst error {r['error_estimate']:.3g} over all {r['sets']:,} sets")
    return 0


if __name__ == "__main__":
    sys.exit(main())
