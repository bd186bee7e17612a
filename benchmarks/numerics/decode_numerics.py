"""Decode numerics of every exact family: worst end-to-end error, cancellation and decoding-vector time.

For each family of :data:`FAMILIES` and each ``(n, s)`` on the grid ``n`` in {20, 50, 100, 200, 500},
``s`` in {1, n/10, n/4}, the script

* draws straggler sets of three kinds: *consecutive* windows ``{t, ..., t+s-1}`` (all of them, at most 60),
  *random* sets (uniform, 60 of them) and *searched* sets (greedy single swaps from the worst sets found, keeping
  a swap while the measured error grows);
* decodes the sum of ``k = n`` partial gradients ``g_j = 1 + 0.1 N(0, 1)`` (256 coordinates) from float64 and from
  float32 worker messages with the family's default decoder, and reports the worst relative error
  ``max |ghat - g| / max |g|`` of each kind;
* reports the worst cancellation factor ``Σ_i |a_i| ||B_i||_1 / n`` and the time per decoding vector (batched,
  one BLAS thread), next to ``np.linalg.lstsq`` on the same sets measured in the same run (ratio).

A decode whose error exceeds 0.5 is shown as ``fails``. Other families add rows by appending a :class:`Family`
to :data:`FAMILIES` (as Ye-Abbe does).

Run from the repository root::

    PYTHONPATH=. python benchmarks/numerics/decode_numerics.py           # full grid up to n = 500 (a few minutes)
    PYTHONPATH=. python benchmarks/numerics/decode_numerics.py --quick   # n <= 100
    PYTHONPATH=. python benchmarks/numerics/decode_numerics.py --partial # partial-straggler protocol only, n <= 100
    PYTHONPATH=. python benchmarks/numerics/decode_numerics.py --family heterogeneous_exact   # one family's rows

Writes ``benchmarks/numerics/results/decode_numerics.txt`` (the table) and ``decode_numerics.png`` (worst float64 error
against ``n``, one line per family, one panel per ``s`` rule); ``--partial`` writes the rows of the partial-straggler
protocol (:func:`partial_rows`) to ``decode_numerics_partial.txt``.
"""

from __future__ import annotations

import argparse
import itertools
import os
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import numpy as np  # noqa: E402

import gradcodes as gc  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
FAIL = 0.5


@dataclass(frozen=True)
class Family:
    """A row family: ``build(n, s)`` returns a code or None when the family does not exist for ``(n, s)``."""

    name: str
    build: Callable[[int, int], gc.LinearCode | None]
    decoder: str | None = None   # None: the code's default decoder


def _maybe(fn: Callable[[], gc.LinearCode]) -> gc.LinearCode | None:
    try:
        return fn()
    except ValueError:
        return None


FAMILIES: list[Family] = [
    Family("fractional_repetition", lambda n, s: _maybe(lambda: gc.fractional_repetition(n, s))),
    Family("stable_binary", lambda n, s: gc.stable_binary(n, s)),
    Family("grouped_mds", lambda n, s: gc.grouped_mds(n, s)),
    Family("cyclic_mds[complex]", lambda n, s: gc.cyclic_mds(n, s)),
    Family("cyclic_mds[real]", lambda n, s: _maybe(lambda: gc.cyclic_mds(n, s, "real"))),
    Family("cyclic_mds[textbook]", lambda n, s: gc.cyclic_mds(n, s, placement="textbook"), "lstsq"),
    Family("cyclic_repetition", lambda n, s: gc.cyclic_repetition(n, s, rng=0)),
    Family("ye_abbe[m=1]", lambda n, s: gc.ye_abbe(n, s, 1)),
    Family("heterogeneous_exact", lambda n, s: gc.heterogeneous_exact([1 + i % 4 for i in range(n)], s)),
]


def grid(quick: bool, smoke: bool = False) -> list[tuple[int, int]]:
    if smoke:
        return [(20, 2)]
    ns = (20, 50, 100) if quick else (20, 50, 100, 200, 500)
    out = []
    for n in ns:
        for s in sorted({1, max(1, n // 10), n // 4}):
            out.append((n, s))
    return out


def _masks(n: int, S: np.ndarray) -> np.ndarray:
    mask = np.ones((S.shape[0], n), dtype=bool)
    np.put_along_axis(mask, S, False, axis=1)
    return mask


class Bench:
    def __init__(self, code: gc.LinearCode, decoder: str | None, seed: int) -> None:
        self.code = code
        self.dec = decoder or code.default_decoder
        rng = np.random.default_rng(seed)
        self.G = 1 + 0.1 * rng.standard_normal((code.n, 256))
        self.true = self.G.sum(axis=0)
        self.Y64 = code.encode(self.G)
        try:
            self.Y32 = code.encode(self.G.astype(np.float32))
        except gc.GradcodesValueError:                 # B does not fit float32: every float32 decode "fails"
            self.Y32 = np.full(self.Y64.shape, np.nan, dtype=np.float32)
        self.row_l1 = np.abs(code.float_B()).sum(axis=1)

    def errors(self, S: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(float64 error, float32 error, cancellation) per straggler set."""
        out64, out32, canc = [], [], []
        for lo in range(0, S.shape[0], 64):
            A = self.code.decoding_matrices(_masks(self.code.n, S[lo:lo + 64]), self.dec)[:, 0, :]
            with np.errstate(all="ignore"):
                g64 = A @ self.Y64                       # complex codes: the imaginary part is error too
                A32 = A.astype(np.complex64 if np.iscomplexobj(A) else np.float32)
                g32 = (A32 @ self.Y32).astype(np.complex128 if np.iscomplexobj(A) else np.float64)
                scale = np.abs(self.true).max()
                out64.append(np.nan_to_num(np.abs(g64 - self.true).max(axis=1) / scale, nan=np.inf))
                out32.append(np.nan_to_num(np.abs(g32 - self.true).max(axis=1) / scale, nan=np.inf))
                canc.append(np.abs(A) @ self.row_l1 / self.code.k)
        return np.concatenate(out64), np.concatenate(out32), np.concatenate(canc)

    def search(self, starts: np.ndarray, rng: np.random.Generator, steps: int = 4, neighbours: int = 48) -> tuple:
        """Greedy swaps maximising the float64 error from each start; returns the worst set's errors."""
        n, s = self.code.n, starts.shape[1]
        best = (-1.0, -1.0, 0.0)
        for cur in starts:
            e64, e32, c = (v[0] for v in self.errors(cur[None]))
            for _ in range(steps):
                outside = np.setdiff1d(np.arange(n), cur)
                pairs = np.array(list(itertools.product(range(s), range(outside.size))))
                pairs = pairs[rng.choice(len(pairs), min(neighbours, len(pairs)), replace=False)]
                cand = np.repeat(cur[None], len(pairs), axis=0)
                cand[np.arange(len(pairs)), pairs[:, 0]] = outside[pairs[:, 1]]
                cand.sort(axis=1)
                ce64, ce32, cc = self.errors(cand)
                j = int(np.argmax(ce64))
                if not ce64[j] > e64:
                    break
                cur, e64, e32, c = cand[j], ce64[j], ce32[j], cc[j]
            if e64 > best[0]:
                best = (float(e64), float(e32), float(c))
        return best

    def timing(self, S: np.ndarray) -> tuple[float, float]:
        """Seconds per decoding vector: the family's decoder (batched) and np.linalg.lstsq (per set)."""
        mask = _masks(self.code.n, S)
        self.code.decoding_matrices(mask[:2], self.dec)                 # warm caches (basis, tables)
        t0 = time.perf_counter()
        self.code.decoding_matrices(mask, self.dec)
        t_dec = (time.perf_counter() - t0) / len(S)
        B = self.code.float_B()
        t0 = time.perf_counter()
        reps = min(len(S), 4)
        for row in mask[:reps]:
            np.linalg.lstsq(B[row].T, np.ones(self.code.k, dtype=B.dtype), rcond=None)
        t_ls = (time.perf_counter() - t0) / reps
        return t_dec, t_ls


def run(quick: bool, seed: int = 0, smoke: bool = False) -> list[dict]:
    rows = []
    for (n, s), fam in itertools.product(grid(quick, smoke), FAMILIES):
        code = fam.build(n, s)
        if code is None:
            continue
        rng = np.random.default_rng(seed)
        t0 = time.perf_counter()
        bench = Bench(code, fam.decoder, seed)
        cons = (np.arange(n)[:, None] + np.arange(s)[None, :]) % n
        cons = np.sort(cons[np.unique(np.linspace(0, n - 1, min(n, 60)).astype(int))], axis=1)
        rnd = np.sort(np.argsort(rng.random((60, n)), axis=1)[:, :s], axis=1)
        c64, c32, cc = bench.errors(cons)
        r64, r32, rc = bench.errors(rnd)
        starts = np.concatenate([cons[np.argsort(-c64)[:1]], rnd[np.argsort(-r64)[:1]]])
        s64, s32, sc = bench.search(starts, rng, steps=2 if n >= 200 else 4)
        worst64 = max(c64.max(), r64.max(), s64)
        worst32 = max(c32.max(), r32.max(), s32)
        t_dec, t_ls = bench.timing(rnd[:16])
        rows.append({"family": fam.name, "n": n, "s": s, "load": code.load, "decoder": bench.dec,
                     "consec": c64.max(), "random": r64.max(), "searched": s64, "worst64": worst64,
                     "worst32": worst32, "canc": max(cc.max(), rc.max(), sc), "t_dec": t_dec, "t_lstsq": t_ls,
                     "seconds": time.perf_counter() - t0})
        print(_fmt_row(rows[-1]), flush=True)
    return rows


#: the partial-straggler protocol's (s, m): load gamma = s + m, as in benchmarks/families/partial_stragglers.py
PARTIAL = ((1, 1), (2, 2), (1, 3), (3, 5))


def _partial_errors(mask: np.ndarray, code: gc.LinearCode, Y64: np.ndarray, Y32: np.ndarray, true: np.ndarray,
                    row_l1: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(float64 error, float32 error, cancellation) of the chunk decoder per message mask."""
    A = code.decoding_matrices(mask)                                   # (b, m, n)
    with np.errstate(all="ignore"):
        g64 = np.einsum("bun,np->bup", A, Y64).reshape(len(mask), -1)
        g32 = np.einsum("bun,np->bup", A.astype(np.float32), Y32).astype(np.float64).reshape(len(mask), -1)
    scale = np.abs(true).max()
    canc = (np.abs(A) @ row_l1).max(axis=1) / code.k
    return np.abs(g64 - true).max(axis=1) / scale, np.abs(g32 - true).max(axis=1) / scale, canc


def partial_rows(quick: bool, seed: int = 0, smoke: bool = False) -> list[dict]:
    """The chunk decoder of :func:`gradcodes.partial_straggler_code` (Ramamoorthy, Meng & Girimaji 2024) at
    ``n`` in {20, 50, 100}: the same columns as the exact families, on *arrival patterns* instead of straggler sets.

    * ``consec``: progress states in which ``s`` consecutive workers have sent nothing and the others everything
      (the classical protocol's sets, every window, at most 60);
    * ``random``: 60 random admitted progress states, each grown chunk by chunk from a uniform state until every
      chunk has ``m`` messages (the verifier's sampler: minimal, hardest states);
    * ``searched``: every *uniform selection* (each chunk decoded from the holders of the same ranks, one of the
      ``C(gamma, m)`` subsets of its ``gamma`` holders), which covers every ``m x m`` Vandermonde block the decoder
      can invert, exhaustively.

    Partial gradients ``g_j = 1 + 0.1 N(0, 1)`` (``k = n`` chunks, 256 coordinates, so ``256 m`` per chunk before
    the split into ``m`` blocks), float64 and float32 messages; time per decoding matrix against ``np.linalg.lstsq``
    of ``B_F^T X = E^T`` on the same patterns.
    """
    from itertools import combinations

    from gradcodes._families.partial_stragglers_verify import ProgressPatterns

    ns = (20,) if smoke else (20, 50, 100)
    params = ((2, 2),) if smoke else PARTIAL
    rows = []
    for n, (s, m) in itertools.product(ns, params):
        t0 = time.perf_counter()
        code = gc.partial_straggler_code(n, s, m)
        rng = np.random.default_rng(seed)
        G = 1 + 0.1 * rng.standard_normal((code.k, 256 * m))
        true = G.sum(axis=0)
        Y64, Y32 = code.encode(G), code.encode(G.astype(np.float32))
        loads = np.diff(code.offsets)
        model = ProgressPatterns(code)
        wins = np.unique(np.linspace(0, n - 1, min(n, 60)).astype(int))
        cons = np.tile(loads, (wins.size, 1))
        for r, t in enumerate(wins):
            cons[r, (t + np.arange(s)) % n] = 0
        rnd = model.random(60, rng)
        gamma = s + m
        rank = np.empty(code.n, dtype=np.int64)
        for rows_j in code.holders:
            rank[rows_j] = np.arange(rows_j.size)
        subsets = list(combinations(range(gamma), m))
        uni = np.array([np.isin(rank, sub) for sub in subsets])
        row_l1 = np.abs(code.float_B()).sum(axis=1)

        args = (code, Y64, Y32, true, row_l1)
        c64, c32, cc = _partial_errors(code.progress_mask(cons), *args)
        r64, r32, rc = _partial_errors(code.progress_mask(rnd), *args)
        u64, u32, uc = _partial_errors(uni, *args)
        mask = code.progress_mask(rnd[:16])
        code.decoding_matrices(mask[:2])
        B, E = code.float_B(), np.asarray(code.target, dtype=float)
        t_dec = t_ls = np.inf                     # best of 3 repeats each (the machine is shared)
        for _ in range(3):
            t1 = time.perf_counter()
            code.decoding_matrices(mask)
            t_dec = min(t_dec, (time.perf_counter() - t1) / len(mask))
            t1 = time.perf_counter()
            for row in mask[:4]:
                np.linalg.lstsq(B[row].T, E.T, rcond=None)
            t_ls = min(t_ls, (time.perf_counter() - t1) / 4)
        rows.append({"family": f"partial_straggler[m={m}]", "n": n, "s": s, "load": gamma, "decoder": "chunks",
                     "consec": c64.max(), "random": r64.max(), "searched": u64.max(),
                     "worst64": max(c64.max(), r64.max(), u64.max()), "worst32": max(c32.max(), r32.max(), u32.max()),
                     "canc": max(cc.max(), rc.max(), uc.max()), "t_dec": t_dec, "t_lstsq": t_ls,
                     "seconds": time.perf_counter() - t0})
        print(_fmt_row(rows[-1]), flush=True)
    return rows


def latency(n: int = 500, s: int = 50, sets: int = 20, seed: int = 0) -> list[str]:
    """Decoding-vector latency and residual of the cyclic-MDS decoders against ``np.linalg.lstsq`` (same sets).

    Residual ``max |a B - 1|`` (the exact-recovery defect) and time per vector, for random and consecutive
    straggler sets; the ratio is lstsq time / decoder time.
    """
    lines = [f"cyclic_mds[complex] at (n, s) = ({n}, {s}): decoding vectors for {sets} straggler sets of each kind",
             f"{'sets':<12} {'decoder':<12} {'time/vector':>12} {'lstsq/t':>8} {'max residual':>13} "
             f"{'lstsq residual':>15}"]
    code = gc.cyclic_mds(n, s)
    B = code.B
    rng = np.random.default_rng(seed)
    kinds = {"random": np.sort(np.argsort(rng.random((sets, n)), axis=1)[:, :s], axis=1),
             "consecutive": np.sort((rng.integers(0, n, sets)[:, None] + np.arange(s)) % n, axis=1)}
    for kind, S in kinds.items():
        mask = _masks(n, S)
        t0 = time.perf_counter()
        ls = [np.linalg.lstsq(B[row].T, np.ones(n, dtype=B.dtype), rcond=None)[0] for row in mask]
        t_ls = (time.perf_counter() - t0) / sets
        res_ls = max(np.abs(a @ B[row] - 1).max() for a, row in zip(ls, mask, strict=True))
        for dec in ("spectral", "barycentric"):
            code.decoding_matrices(mask[:1], dec)
            t0 = time.perf_counter()
            A = code.decoding_matrices(mask, dec)[:, 0, :]
            t = (time.perf_counter() - t0) / sets
            res = np.abs(A @ B - 1).max()
            lines.append(f"{kind:<12} {dec:<12} {t * 1e3:>10.3f}ms {t_ls / t:>7.1f}x {res:>13.2e} {res_ls:>15.2e}")
    return lines


def _e(x: float) -> str:
    return "fails" if not x < FAIL else f"{x:.1e}"


HEADER = (f"{'family':<22} {'n':>4} {'s':>4} {'load':>4} {'decoder':<12} {'consec':>8} {'random':>8} "
          f"{'searched':>8} {'worst64':>8} {'worst32':>8} {'canc':>8} {'t_vec':>9} {'lstsq/t':>8}")


def _fmt_row(r: dict) -> str:
    return (f"{r['family']:<22} {r['n']:>4} {r['s']:>4} {r['load']:>4} {r['decoder']:<12} {_e(r['consec']):>8} "
            f"{_e(r['random']):>8} {_e(r['searched']):>8} {_e(r['worst64']):>8} {_e(r['worst32']):>8} "
            f"{r['canc']:>8.1e} {r['t_dec'] * 1e3:>7.3f}ms {r['t_lstsq'] / r['t_dec']:>7.1f}x")


RTOL = 1e-8  # gradcodes' default decode tolerance (GradientCode.rtol)


def plot(rows: list[dict], path: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rules = [("s = 1", lambda n, s: s == 1), ("s = n/10", lambda n, s: s == max(1, n // 10) and s != 1),
             ("s = n/4", lambda n, s: s == n // 4 and s != max(1, n // 10))]
    # one panel a row, 7.5 inches wide: the page shows it at about its own size, so its text stays readable
    fig, axes = plt.subplots(3, 1, figsize=(7.5, 12.5), sharex=True)
    colors = {fam.name: plt.cm.tab10(i % 10) for i, fam in enumerate(FAMILIES)}
    markers = "osD^vP*Xh<>"
    ticks = sorted({r["n"] for r in rows})
    for ax, (title, rule) in zip(axes, rules, strict=True):
        for i, fam in enumerate(FAMILIES):
            pts = sorted((r["n"], r["worst64"]) for r in rows if r["family"] == fam.name and rule(r["n"], r["s"]))
            if pts:
                xs, ys = zip(*pts, strict=True)
                capped = [min(max(y, 1e-17), 10.0) for y in ys]
                ax.plot(xs, capped, marker=markers[i % len(markers)],
                        color=colors[fam.name], label=fam.name, alpha=0.85)
                # failures: the decode misses the default tolerance rtol (GradientCode.decode refuses these sets)
                bad = [(x, y) for x, y in zip(xs, capped, strict=True) if y > RTOL]
                if bad:
                    ax.scatter(*zip(*bad, strict=True), s=170, facecolors="none", edgecolors="red", linewidths=1.6,
                               zorder=5)
        ax.axhline(RTOL, color="red", ls=":", lw=1.0)
        ax.axhline(1e-12, color="grey", ls="--", lw=0.8)
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xticks(ticks)
        ax.set_xticklabels([str(v) for v in ticks])
        ax.minorticks_off()
        ax.set_title(f"{title}: worst searched float64 error")
        ax.set_ylabel("max relative error\n(capped at 10)")
    axes[-1].set_xlabel("n (workers = partitions)")
    handles = [plt.Line2D([], [], color=colors[f.name], marker=markers[i % len(markers)], label=f.name)
               for i, f in enumerate(FAMILIES)]
    handles += [plt.Line2D([], [], ls="none", marker="o", markersize=11, markerfacecolor="none",
                           markeredgecolor="red", label=f"FAILS: error > rtol = {RTOL:g} (red dotted line)"),
                plt.Line2D([], [], color="grey", ls="--", lw=0.8, label="1e-12")]
    # the legend sits below the panels, so it hides no data
    fig.legend(handles=handles, loc="lower center", ncol=2, fontsize=9, frameon=False)
    fig.tight_layout(rect=(0, 0.13, 1, 1))
    fig.savefig(path, dpi=100)


def splice(names: list[str], quick: bool, seed: int, replot: bool) -> int:
    """Re-measure the families ``names`` and put their rows into the saved results (``--family``)."""
    import json

    global FAMILIES
    unknown = set(names) - {f.name for f in FAMILIES}
    if unknown:
        print(f"unknown families {sorted(unknown)}; known: {[f.name for f in FAMILIES]}", file=sys.stderr)
        return 2
    suffix = "_quick" if quick else ""
    base = os.path.join(HERE, "results", f"decode_numerics{suffix}")
    with open(base + ".json") as fh:
        rows = [r for r in json.load(fh) if r["family"] not in names]
    keep, FAMILIES = FAMILIES, [f for f in FAMILIES if f.name in names]
    try:
        print(HEADER)
        rows += run(quick, seed)
    finally:
        FAMILIES = keep
    order = {f.name: i for i, f in enumerate(FAMILIES)}
    rows.sort(key=lambda r: (r["n"], r["s"], order.get(r["family"], len(order))))
    with open(base + ".txt") as fh:
        text = fh.read()
    head = text[:text.index(HEADER)]
    with open(base + ".txt", "w") as fh:
        fh.write(head + HEADER + "\n" + "\n".join(_fmt_row(r) for r in rows) + "\n")
    with open(base + ".json", "w") as fh:
        json.dump(rows, fh, indent=0, default=float)
    if replot:
        try:
            plot(rows, base + ".png")
        except ImportError:
            print("matplotlib not installed: no plot (pip install gradcodes[plot])", file=sys.stderr)
    return 0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="n <= 100 only")
    ap.add_argument("--smoke", action="store_true",
                    help="tiny sizes (seconds) and no output files: checks that the script still runs")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--no-plot", action="store_true")
    ap.add_argument("--partial", action="store_true",
                    help="only the partial-straggler rows, written to results/decode_numerics_partial.txt")
    ap.add_argument("--family", action="append", default=None,
                    help="re-measure only this family (repeatable) and replace its rows in the saved results "
                         "(the other families' rows, the latency table and their timings are kept)")
    ap.add_argument("--replot", action="store_true",
                    help="only redraw the plot from the saved results/decode_numerics[_quick].json")
    args = ap.parse_args(argv)
    if args.replot:
        import json

        suffix = "_quick" if args.quick else ""
        with open(os.path.join(HERE, "results", f"decode_numerics{suffix}.json")) as fh:
            plot(json.load(fh), os.path.join(HERE, "results", f"decode_numerics{suffix}.png"))
        return 0
    if args.smoke:                                   # (20, 2) only; no file written
        print("\n".join(latency(20, 2, sets=2)))
        print(HEADER)
        for r in run(False, args.seed, smoke=True):
            print(_fmt_row(r))
        partial_rows(False, args.seed, smoke=True)
        return 0
    if args.partial:
        print(HEADER)
        prow = partial_rows(args.quick, args.seed)
        os.makedirs(os.path.join(HERE, "results"), exist_ok=True)
        with open(os.path.join(HERE, "results", "decode_numerics_partial.txt"), "w") as fh:
            fh.write("# PYTHONPATH=. python benchmarks/numerics/decode_numerics.py --partial\n")
            fh.write("# partial_straggler_code, chunk decoder: worst relative error of the decoded sum (float64 / "
                     "float32 messages)\n# over arrival patterns (consec: s consecutive silent workers; random: 60 "
                     "minimal admitted states;\n# searched: every uniform selection of m of the gamma holders), "
                     "cancellation, time per decoding\n# matrix (best of 3) and np.linalg.lstsq time / that time, "
                     "same run\n")
            fh.write(f"# load average (1 min) at the end: {os.getloadavg()[0]:.2f} on {os.cpu_count()} cores\n")
            fh.write(HEADER + "\n" + "\n".join(_fmt_row(r) for r in prow) + "\n")
        return 0
    if args.family:
        return splice(args.family, args.quick, args.seed, not args.no_plot)
    lat = latency(100, 10) if args.quick else latency(100, 10) + [""] + latency()
    print("\n".join(lat) + "\n")
    print(HEADER)
    rows = run(args.quick, args.seed)
    print("# partial-straggler protocol: arrival patterns (consec: s consecutive silent workers; random: minimal "
          "admitted states; searched: every uniform selection of m holders)")
    rows += partial_rows(args.quick, args.seed)
    os.makedirs(os.path.join(HERE, "results"), exist_ok=True)
    suffix = "_quick" if args.quick else ""
    with open(os.path.join(HERE, "results", f"decode_numerics{suffix}.txt"), "w") as fh:
        fh.write("# PYTHONPATH=. python benchmarks/numerics/decode_numerics.py"
                 + (" --quick" if args.quick else "") + "\n")
        fh.write("# worst relative error of the decoded sum (float64 / float32 messages), cancellation factor,\n"
                 "# time per decoding vector (batched) and np.linalg.lstsq time / that time, same run\n")
        fh.write("\n".join(lat) + "\n\n")
        fh.write(HEADER + "\n" + "\n".join(_fmt_row(r) for r in rows) + "\n")
    import json

    with open(os.path.join(HERE, "results", f"decode_numerics{suffix}.json"), "w") as fh:
        json.dump(rows, fh, indent=0, default=float)
    if not args.no_plot:
        try:
            plot(rows, os.path.join(HERE, "results", f"decode_numerics{suffix}.png"))
        except ImportError:
            print("matplotlib not installed: no plot (pip install gradcodes[plot])", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
