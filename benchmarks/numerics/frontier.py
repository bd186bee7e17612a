"""The numerics frontier: certified worst float64 error against load, between ``s + 1`` and the binary load.

    python benchmarks/numerics/frontier.py [--quick] [--limit SETS] [--samples N] [--points N,S ...] [--fresh]
                                  [--regroup] [--report-only]

For every grid point ``(n, s)`` (``n`` in {20, 50, 97, 100, 200, 500}; ``s`` about n/10, n/4, n/2; ``n = q(s+1)+r``,
the ``r <= q`` and ``r > q`` cases both occur) and every family, at every load from ``s + 1`` to the binary load
(every load when there are at most 12, else a geometric subset, said in the output), the worst predicted float64 error
``u canc + residual`` of :func:`gradcodes.verify`:

* ``proven``: every straggler set checked (directly, or block by block: gradcodes._verify.blocks), or a decoder's
theorem;
* ``searched``: the worst of consecutive, random and locally searched sets. NOT a worst case (a lower bound on it);
* ``FAILS``: a checked set fails.

Reference rows are the published constructions: Tandon et al. 2017 (random cyclic repetition; fractional repetition),
Raviv et al. 2018 (cyclic MDS), Charalambides et al. 2020 (binary), Ye & Abbe 2018. The oversampled grouped random
code (gradcodes.grouped_random, ``extra`` = load - s - 1) fills the loads in between; its group certificates are cached
in benchmarks/numerics/results/frontier_cache.json (delete it to recompute); certificates stored in the package
(gradcodes._families._certified_seeds, exhaustive, re-checked by benchmarks/verify/certify_seeds.py --check) are used as
they are and marked. Finished grid points are kept in benchmarks/numerics/results/frontier_points.json, so an
interrupted run resumes (--fresh recomputes; --points selects; --regroup recomputes only the grouped_random rows of
finished points, after a change of its groups' construction, and records when). Writes
benchmarks/numerics/results/frontier.txt, .json and frontier.png (one panel per grid point: load against error, filled =
proven, hollow = searched).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
import time
import warnings
from pathlib import Path
from typing import Any

import numpy as np

import gradcodes as gc
from gradcodes._families._certified_seeds import CERTIFIED
from gradcodes._families.binary import stable_binary_load
from gradcodes._families.grouped_random import certified_bound, group_sizes
from gradcodes._verify.blocks import is_proof

OUT = Path(__file__).parent / "results"
NS = (20, 50, 97, 100, 200, 500)
#: cached group certificates are keyed by the decoder implementation and the groups' construction that produced
#: them (refine2: cyclic_repetition(..., refine=2) rows, gradcodes.grouped_random's default)
DECODER_VERSION = "rowspace-numba-1+refine2"


def grid() -> list[tuple[int, int]]:
    pts = []
    for n in NS:
        for s in sorted({max(1, round(n / 10)), round(n / 4), n // 2}):
            pts.append((n, s))
    return pts


def loads_to_try(s: int, top: int) -> list[int]:
    """Every load from s+1 to top when at most 12, else s+1, s+2, s+3 and a geometric subset up to top."""
    if top - s <= 12:
        return list(range(s + 1, top + 1))
    out = {s + 1, s + 2, s + 3, top}
    e = 4
    while s + e < top:
        out.add(s + e)
        e = int(math.ceil(e * 1.6))
    return sorted(out)


def status_of(rep: Any) -> str:
    if rep.n_failures:
        return "FAILS"
    return "proven" if is_proof(rep) else "searched"


def measure(code: Any, limit: int, samples: int) -> dict[str, Any]:
    t0 = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        rep = gc.verify(code, limit=limit, samples=samples, rng=0, stop_on_failure=True)
    return {"load": int(code.load), "error": float(rep.error_estimate) if not rep.n_failures else float("inf"),
            "status": status_of(rep), "sets": int(rep.patterns_checked), "seconds": time.perf_counter() - t0}


#: gradcodes.limits.work for this script (the largest grid point's groups need 6.2e10)
WORK_LIMIT = 10**11


def grouped_random_row(n: int, s: int, extra: int, limit: int, cache: dict[str, Any], candidates: int
                       ) -> dict[str, Any]:
    """The grouped_random code at load s + 1 + extra: stored certificates (gradcodes' CERTIFIED, exhaustive), else
    this script's cached group certificates, else a seed search (exhaustive when a group has <= limit sets)."""
    t0 = time.perf_counter()
    sizes = sorted(set(int(x) for x in group_sizes(n, s)), reverse=True)
    seeds: dict[str, Any] = {}
    certs: list[dict[str, Any]] = []
    for ng in sizes:
        key = f"{ng},{s},{extra},{limit},{candidates},{DECODER_VERSION}"
        if (ng, s, extra) in CERTIFIED:
            cert = {"n_g": ng, **CERTIFIED[(ng, s, extra)], "status": "proven (stored certificate)"}
        elif key in cache:
            cert = cache[key]
        else:
            sub = gc.grouped_random(ng, s, extra, candidates=candidates, limit=limit)   # one group of ng workers
            cert = sub.params["certificates"][0]
            cache[key] = cert
        seeds[str(ng)] = cert["seed"]
        certs.append(cert)
    code = gc.grouped_random(n, s, extra, block_seeds=seeds, certificates=certs)
    bound, proven, failed = certified_bound(code)
    return {"load": int(code.load), "error": bound, "status": "FAILS" if failed else ("proven" if proven else
                                                                                      "searched"),
            "sets": int(sum(c.get("sets", 0) for c in certs)),
            "seconds": time.perf_counter() - t0, "seeds": seeds,
            "stored": [c["n_g"] for c in certs if "stored" in str(c.get("status", ""))]}


def grouped_random_entry(n: int, s: int, extra: int, args: argparse.Namespace, cache: dict[str, Any]
                         ) -> dict[str, Any]:
    try:
        row = grouped_random_row(n, s, extra, args.limit, cache, args.candidates)
    except (ValueError, gc.SizeLimitError) as exc:             # past gradcodes.limits: recorded, not computed
        print(f"  ({n},{s}) grouped_random extra={extra}: n/a ({exc})", flush=True)
        return {"family": f"grouped_random extra={extra}", "load": s + 1 + extra, "error": None,
                "status": f"n/a ({exc})"[:60], "stored": []}
    stored = f" [stored cert. n_g={row['stored']}]" if row["stored"] else ""
    print(f"  ({n},{s}) grouped_random extra={extra}: {row['status']} {row['error']:.2g} "
          f"[{row['seconds']:.1f} s]", flush=True)
    return {"family": f"grouped_random extra={extra}{stored}", **row}


def references(n: int, s: int, limit: int, samples: int) -> list[tuple[str, Any]]:
    out: list[tuple[str, Any]] = []
    out.append(("binary (Charalambides et al.)", lambda: gc.stable_binary(n, s)))
    if n % (s + 1) == 0:
        out.append(("FR (Tandon et al.)", lambda: gc.fractional_repetition(n, s)))
    out.append(("random cyclic (Tandon et al.)", lambda: gc.cyclic_repetition(n, s, rng=0)))
    out.append(("cyclic MDS complex (Raviv et al.)", lambda: gc.cyclic_mds(n, s, "complex")))
    if (n - s) % 2 == 1:
        out.append(("cyclic MDS real (Raviv et al.)", lambda: gc.cyclic_mds(n, s, "real")))
    out.append(("Ye-Abbe m=1", lambda: gc.ye_abbe(n, s, 1)))
    out.append(("grouped_mds", lambda: gc.grouped_mds(n, s)))
    return out


def run(args: argparse.Namespace) -> dict[str, Any]:
    """Every grid point not yet in frontier_points.json (unless --fresh); the file is updated after each point, so
    an interrupted run resumes where it stopped."""
    cache_path = OUT / "frontier_cache.json"
    cache = json.loads(cache_path.read_text()) if cache_path.exists() else {}
    points_path = OUT / ("frontier_points_quick.json" if args.quick else "frontier_points.json")
    results: dict[str, Any] = json.loads(points_path.read_text()) if points_path.exists() else {}
    pts = grid() if not args.quick else [(20, 2), (20, 5), (50, 5), (50, 12)]
    if args.points:
        wanted = {tuple(int(x) for x in p.split(",")) for p in args.points}
        pts = [p for p in pts if p in wanted]
    if args.report_only:
        pts = []
    if args.fresh:                                   # recompute the selected points (all without --points)
        for n, s in pts:
            results.pop(f"{n},{s}", None)
    results = {k: results[k] for k in sorted(results, key=lambda k: tuple(int(x) for x in k.split(",")))}
    if args.regroup:                                 # finished points: recompute only the grouped_random rows
        for n, s in pts:
            res = results.get(f"{n},{s}")
            if res is None:
                continue
            t_point = time.perf_counter()
            rows = [r for r in res["rows"] if not r["family"].startswith("grouped_random")]
            for load in res["loads_tried"]:
                rows.append(grouped_random_entry(n, s, load - s - 1, args, cache))
                cache_path.write_text(json.dumps(cache, indent=0, sort_keys=True))
            res.update(rows=rows, regrouped={"seconds": time.perf_counter() - t_point,
                                             "loadavg": os.getloadavg()[0], "version": DECODER_VERSION})
            points_path.write_text(json.dumps(results, indent=1, default=str))
        pts = []
    for n, s in pts:
        if f"{n},{s}" in results:
            continue
        t_point = time.perf_counter()
        q, r = divmod(n, s + 1)
        top = stable_binary_load(n, s)
        rows: list[dict[str, Any]] = []
        for name, build in references(n, s, args.limit, args.samples):
            try:
                code = build()
            except (ValueError, gc.SizeLimitError) as exc:
                rows.append({"family": name, "load": None, "error": None, "status": f"n/a ({exc})"[:60]})
                continue
            rows.append({"family": name, **measure(code, args.limit, args.samples)})
            print(f"  ({n},{s}) {name}: {rows[-1]['status']} {rows[-1]['error']:.2g} "
                  f"[{rows[-1]['seconds']:.1f} s]", flush=True)
        loads = loads_to_try(s, top - 1)
        for load in loads:
            rows.append(grouped_random_entry(n, s, load - s - 1, args, cache))
            cache_path.write_text(json.dumps(cache, indent=0, sort_keys=True))
        results[f"{n},{s}"] = {"n": n, "s": s, "q": q, "r": r, "case": "r <= q" if r <= q else "r > q",
                               "binary_load": top, "loads_tried": loads,
                               "every_load": loads == list(range(s + 1, top)), "rows": rows,
                               "seconds": time.perf_counter() - t_point, "loadavg": os.getloadavg()[0],
                               "options": {"limit": args.limit, "samples": args.samples,
                                           "candidates": args.candidates}}
        points_path.write_text(json.dumps(results, indent=1, default=str))
    order = {f"{n},{s}": i for i, (n, s) in enumerate(grid())}
    return {k: results[k] for k in sorted(results, key=lambda k: order.get(k, len(order)))}


def frontier(rows: list[dict[str, Any]], status: str = "proven") -> dict[int, tuple[float, str]]:
    """Smallest error per load among rows with the given status."""
    best: dict[int, tuple[float, str]] = {}
    for row in rows:
        if row.get("status") == status and row["error"] is not None and np.isfinite(row["error"]):
            if row["load"] not in best or row["error"] < best[row["load"]][0]:
                best[row["load"]] = (row["error"], row["family"])
    return best


def report(results: dict[str, Any]) -> str:
    lines = []
    for res in results.values():
        n, s = res["n"], res["s"]
        lines.append(f"\n(n, s) = ({n}, {s}): q = {res['q']}, r = {res['r']} ({res['case']}), binary load "
                     f"{res['binary_load']}" + ("" if res["every_load"] else
                                                 f"; loads tried {res['loads_tried']} (geometric subset)"))
        lines.append(f"  {'family':<36} {'load':>5} {'worst error':>12}  status     sets        seconds")
        for row in res["rows"]:
            err = row["error"]
            e = "-" if err is None else ("inf" if not np.isfinite(err) else f"{err:.2e}")
            label = {"proven": "proven", "searched": "SEARCHED", "FAILS": "FAILS"}.get(row["status"], row["status"])
            lines.append(f"  {row['family']:<36} {str(row['load']):>5} {e:>12}  {label:<10} "
                         f"{row.get('sets', 0):>11,} {row.get('seconds', 0):8.1f}")
        fr = frontier(res["rows"])
        cert12 = [ld for ld, (e, _) in sorted(fr.items()) if e <= 1e-12]
        cert11 = [ld for ld, (e, _) in sorted(fr.items()) if e <= 1e-11]
        lines.append("  certified frontier (lowest proven error per load): "
                     + ", ".join(f"{ld}: {e:.1e} ({f})" for ld, (e, f) in sorted(fr.items())))
        lines.append(f"  lowest load proven <= 1e-11: {cert11[0] if cert11 else 'none'}; <= 1e-12: "
                     f"{cert12[0] if cert12 else 'none'} (binary load {res['binary_load']})")
    return "\n".join(lines)


def plot(results: dict[str, Any], path: Path) -> None:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    keys = list(results)
    cols = 2                          # 8 inches wide: the page shows it at about its own size, text readable
    rows_ = math.ceil(len(keys) / cols)
    fig, axes = plt.subplots(rows_, cols, figsize=(8, 3.3 * rows_), squeeze=False)
    markers = {"binary": "s", "FR": "D", "random cyclic": "^", "cyclic MDS complex": "v", "cyclic MDS real": "<",
               "Ye-Abbe": ">", "grouped_mds": "P"}
    for ax, key in zip(axes.ravel(), keys, strict=False):
        res = results[key]
        gr = [r for r in res["rows"] if r["family"].startswith("grouped_random") and r["error"] is not None]
        for status, fill in (("proven", True), ("searched", False)):
            pts = [(r["load"], max(r["error"], 1e-17)) for r in gr if r["status"] == status and
                   np.isfinite(r["error"])]
            if pts:
                x, y = zip(*pts, strict=True)
                ax.plot(x, y, "o", color="C0", mfc="C0" if fill else "none",
                        label=f"grouped_random ({status})")
        for r in res["rows"]:
            if r["family"].startswith("grouped_random") or r["error"] is None or not np.isfinite(r["error"]):
                continue
            mk = next((v for k, v in markers.items() if r["family"].startswith(k)), "x")
            fill = r["status"] == "proven"
            ax.plot([r["load"]], [max(r["error"], 1e-17)], mk, color="C3", mfc="C3" if fill else "none",
                    label=f"{r['family']} ({r['status']})")
        ax.axhline(1e-12, color="grey", lw=0.6, ls=":")
        ax.set_yscale("log")
        ax.set_title(f"n={res['n']}, s={res['s']} ({res['case']})", fontsize=9)
        ax.set_xlabel("load")
        ax.set_ylabel("worst float64 error estimate")
        ax.legend(fontsize=6.5)
    for ax in axes.ravel()[len(keys):]:
        ax.axis("off")
    fig.suptitle("Load vs certified worst error\n(filled: proven; hollow: searched, not a worst case)")
    fig.tight_layout(rect=(0, 0, 1, 1 - 0.6 / (3.3 * rows_)))        # 0.6 inch at the top for the title
    fig.savefig(path, dpi=100)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="four small grid points")
    ap.add_argument("--smoke", action="store_true",
                    help="tiny sizes (seconds) and no output files: checks that the script still runs")
    ap.add_argument("--limit", type=int, default=200_000, help="sets enumerated per block (default 200,000)")
    ap.add_argument("--samples", type=int, default=300, help="random sets when a block is searched")
    ap.add_argument("--candidates", type=int, default=2, help="seeds tried per uncertified group size")
    ap.add_argument("--fresh", action="store_true", help="recompute the selected grid points (default: resume)")
    ap.add_argument("--points", nargs="*", default=None, help="only these grid points, e.g. 100,25 97,24")
    ap.add_argument("--regroup", action="store_true",
                    help="finished points: recompute only the grouped_random rows (after a change of its groups)")
    ap.add_argument("--report-only", action="store_true", help="no computing: table and plot of the finished points")
    ap.add_argument("--replot", action="store_true",
                    help="only redraw results/frontier[_quick].png from the saved results/frontier[_quick].json")
    args = ap.parse_args()
    global OUT
    if args.replot:
        suffix = "_quick" if args.quick else ""
        plot(json.loads((OUT / f"frontier{suffix}.json").read_text()), OUT / f"frontier{suffix}.png")
        return 0
    if args.smoke:                                   # the grid point (20, 2) afresh, files in a throwaway directory
        import tempfile

        OUT = Path(tempfile.mkdtemp(prefix="frontier_smoke_"))
        args.quick, args.fresh, args.points, args.limit, args.samples = True, True, ["20,2"], 2_000, 20
    print(f"load average at start: {os.getloadavg()}", flush=True)
    t0 = time.perf_counter()
    # The grid's largest groups (one 500-worker group at (500, 250), s + extra up to 498) cost up to 6.2e10 in
    # n * s^3 to build, past the default gradcodes.limits.work of 1e10: raised here for these known sizes.
    with gc.limits.raised(work=WORK_LIMIT):
        results = run(args)
    text = report(results)
    todo = [f"({n}, {s})" for n, s in (grid() if not args.quick else []) if f"{n},{s}" not in results]
    if todo:
        text += "\n\nNOT FINISHED (no result yet): " + ", ".join(todo) + " (rerun to resume)"
    text += "\n\nseconds per grid point: " + ", ".join(f"({r['n']}, {r['s']}) {r.get('seconds', float('nan')):.0f}"
                                                   for r in results.values())
    elapsed = time.perf_counter() - t0
    opts = sorted({json.dumps(r.get("options"), sort_keys=True) for r in results.values()})
    text += (f"\n\nthis invocation {elapsed:.0f} s; options of the finished points: {'; '.join(opts)}; load average "
             f"at each point's end: " + ", ".join(f"({r['n']}, {r['s']}) {r.get('loadavg', float('nan')):.1f}"
                                                  for r in results.values())
             + f"; load average now: {os.getloadavg()}")
    regrouped = [r for r in results.values() if "regrouped" in r]
    if regrouped:
        text += ("\n\ngrouped_random rows recomputed (--regroup, groups " + regrouped[0]["regrouped"]["version"]
                 + "): " + ", ".join(f"({r['n']}, {r['s']}) {r['regrouped']['seconds']:.0f} s at load "
                                     f"{r['regrouped']['loadavg']:.1f}" for r in regrouped))
    print(text)
    suffix = "_quick" if args.quick else ""
    OUT.mkdir(exist_ok=True)
    (OUT / f"frontier{suffix}.txt").write_text(text + "\n")
    (OUT / f"frontier{suffix}.json").write_text(json.dumps(results, indent=1, default=str))
    try:
        plot(results, OUT / f"frontier{suffix}.png")
    except ImportError:
        print("matplotlib not installed: no plot (pip install 'gradcodes[plot]')")
    return 0


if __name__ == "__main__":
    sys.exit(main())
