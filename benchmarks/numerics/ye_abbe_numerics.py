"""Ye–Abbe codes: worst searched float64 decode error against n, for every node choice and basis.

For each construction and each n (with s = m = 5 by default), the straggler sets searched are the n consecutive
("cyclic window") sets, random sets and a greedy local search (``gradcodes.verify``: swaps that increase the
predicted error); then the sum is decoded *end to end* from float64 worker messages
(``g_j = 1 + 0.1 N(0, 1)``, 256 coordinates per block) for the worst sets found, all consecutive sets and a few
random ones. The table shows the largest relative error ``max|ghat - g| / max|g|`` ("fails" beyond 1e-2).

Rows:

* ``paper (integer, Vandermonde solve)`` — the published numerics: nodes 1..n, polynomial coefficients from the
  recursion, ``B = V^T P`` and a float Vandermonde solve of the received values (as a public implementation does).
* ``integer`` / ``equispaced`` / ``chebyshev`` — the same codes through gradcodes' closed forms (monomial top
  coefficients; Lagrange weights, no Vandermonde inverse).
* ``chebyshev, Chebyshev basis`` — Chebyshev nodes with the top *Chebyshev* coefficients as functionals (an
  orthogonal-polynomial basis): the same code up to a fixed m x m block mixing, so the same conditioning.
* ``random`` — seeded Gaussian generator and functionals.
* ``roots of unity, top, natural order`` — real trigonometric form of roots of unity, worker i at angle 2 pi i/n,
  top frequencies as functionals: the literal analogue of the paper's top coefficients.
* ``roots of unity, spread, natural order`` — same nodes, Fourier functionals spread over the band.
* ``roots of unity, top, stride (default)`` — top frequencies, worker i at angle 2 pi (q i mod n)/n with the stride
  q chosen at construction, cancellation-free closed-form decoder.

Also prints the time of the closed-form decoding matrices against min-norm least squares (same run, ratio).

Run: ``PYTHONPATH=. python benchmarks/numerics/ye_abbe_numerics.py [--quick]``; writes
``benchmarks/numerics/results/ye_abbe_numerics.png`` and ``benchmarks/numerics/results/ye_abbe_numerics.md``.
"""

from __future__ import annotations

import argparse
import os
import time
import warnings

import numpy as np

import gradcodes as gc

FAIL = 1e-2
RESULTS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "results")


def e2e(code, A_of, F_list, rng) -> float:
    """Largest relative end-to-end error over responder sets, float64 messages."""
    m = code.m
    G = 1 + 0.1 * rng.standard_normal((code.k, 256 * m))
    Y = code.encode(G)
    true = G.sum(axis=0)
    worst = 0.0
    with np.errstate(all="ignore"):
        for F in F_list:
            g = A_of(F, Y)
            err = float(np.abs(g - true).max() / np.abs(true).max())
            worst = max(worst, err if np.isfinite(err) else np.inf)
    return worst


def searched_sets(code, rng, samples: int) -> list[np.ndarray]:
    n, s = code.n, code.s
    sets = [np.setdiff1d(np.arange(n), (t + np.arange(s)) % n) for t in range(n)]
    sets += [np.sort(rng.choice(n, n - s, replace=False)) for _ in range(10)]
    try:
        rep = gc.verify(code, samples=samples, stop_on_failure=False, limit=20_000)
        for F in (rep.worst_responders, rep.worst_cancellation_responders, *rep.failures[:3]):
            if F is not None:
                sets.append(np.asarray(F))
    except (ValueError, FloatingPointError):
        pass
    return sets


def library_row(build):
    def run(n, s, m, rng, samples):
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                code = build(n, s, m)
        except ValueError:
            return np.inf
        sets = searched_sets(code, rng, samples)

        def dec(F, Y):
            mask = np.zeros((1, n), dtype=bool)
            mask[0, F] = True
            A = code.decoding_matrices(mask)[0]
            return (A @ Y).reshape(-1)

        return e2e(code, dec, sets, rng)
    return run


def chebyshev_basis_row(n, s, m, rng, samples):
    """Chebyshev nodes, functionals = top Chebyshev coefficients: A2 = R A, B2 = B (I (x) R^-1)."""
    code = gc.ye_abbe(n, s, m, nodes="chebyshev")
    N = n - s
    # kappa'_v = sum_u R[v, u] kappa_u: Chebyshev coefficient of T_(N-m+v) from the top-m monomial coefficients
    R = np.zeros((m, m))
    for u in range(m):
        mono = np.zeros(N)
        mono[N - m + u] = 1.0
        cheb = np.zeros(N)
        c = np.polynomial.chebyshev.poly2cheb(mono)
        cheb[:c.size] = c
        R[:, u] = cheb[N - m:N]
    Rinv = np.linalg.inv(R)
    B2 = (code.B.reshape(n, n, m) @ Rinv).reshape(n, n * m)
    code2 = gc.GradientCode(B2, s, m=m, name="chebyshev-basis")
    sets = searched_sets(code, rng, samples)

    def dec(F, Y):
        mask = np.zeros((1, n), dtype=bool)
        mask[0, F] = True
        A = R @ code.decoding_matrices(mask)[0]
        return (A @ Y).reshape(-1)

    return e2e(code2, dec, sets, rng)


def paper_row(n, s, m, rng, samples):
    """The published numerics: integer nodes, monomial coefficients by the recursion, Vandermonde solve."""
    d = s + m
    N = n - s
    theta = np.arange(1, n + 1, dtype=float)
    with np.errstate(all="ignore"):
        P = np.zeros((N, n * m))
        for j in range(n):
            nh = theta[(j + np.arange(1, n - d + 1)) % n]
            p1 = np.poly(nh)[::-1] if nh.size else np.ones(1)       # ascending coefficients, monic, degree n-d
            p = p1.copy()
            for u in range(m):
                P[:p.size, j * m + u] = p
                c = p[n - d - 1] if n - d - 1 >= 0 else 0.0
                p = np.concatenate([[0.0], p])                      # x * p
                p[:p1.size] -= c * p1
        V = theta[None, :] ** np.arange(N)[:, None]                  # V[t, i] = theta_i^t
        B = V.T @ P
        G = 1 + 0.1 * rng.standard_normal((n * m, 256))
        Y = B @ G
        true = G.reshape(n, m, -1).sum(axis=0).reshape(-1)
        worst = 0.0
        sets = [np.setdiff1d(np.arange(n), (t + np.arange(s)) % n) for t in range(n)]
        sets += [np.sort(rng.choice(n, N, replace=False)) for _ in range(10)]
        for F in sets:
            try:
                coef = np.linalg.solve(V[:, F].T, Y[F])             # interpolate: coefficients of Q
            except np.linalg.LinAlgError:
                return np.inf
            g = coef[n - d:n - s].reshape(-1)
            err = float(np.abs(g - true).max() / np.abs(true).max())
            worst = max(worst, err if np.isfinite(err) else np.inf)
    return worst


ROWS = [
    ("paper (integer, Vandermonde solve)", paper_row),
    ("integer, closed form", library_row(lambda n, s, m: gc.ye_abbe(n, s, m, nodes="integer"))),
    ("equispaced [-1,1]", library_row(lambda n, s, m: gc.ye_abbe(n, s, m, nodes="equispaced"))),
    ("chebyshev (old default)", library_row(lambda n, s, m: gc.ye_abbe(n, s, m, nodes="chebyshev"))),
    ("chebyshev, Chebyshev basis", chebyshev_basis_row),
    ("random Gaussian (seed 0)", library_row(lambda n, s, m: gc.ye_abbe(n, s, m, nodes="random", rng=0))),
    ("roots of unity, top, natural order", library_row(lambda n, s, m: gc.ye_abbe(n, s, m, stride=1))),
    ("roots of unity, spread, natural order",
     library_row(lambda n, s, m: gc.ye_abbe(n, s, m, spacing="auto", stride=1))),
    ("roots of unity, top, stride (default)", library_row(lambda n, s, m: gc.ye_abbe(n, s, m))),
]


def fmt(x: float) -> str:
    return "fails" if not np.isfinite(x) or x > FAIL else f"{x:.1e}"


def timing(n: int, s: int, m: int, reps: int = 200) -> tuple[float, float]:
    code = gc.ye_abbe(n, s, m)
    rng = np.random.default_rng(0)
    mask = np.ones((reps, n), dtype=bool)
    for r in range(reps):
        mask[r, rng.choice(n, s, replace=False)] = False
    t0 = time.perf_counter()
    code.decoding_matrices(mask, "lagrange")
    t1 = time.perf_counter()
    code.decoding_matrices(mask[: max(1, reps // 10)], "lstsq")
    t2 = time.perf_counter()
    return (t1 - t0) / reps, (t2 - t1) / max(1, reps // 10)


def read_table(path: str) -> tuple[dict[str, list[float]], list[int], int, int]:
    """The table written by :func:`main` (``fails`` -> inf), its n values, s and m."""
    lines = [ln for ln in open(path).read().splitlines() if ln.startswith("|")]
    head = [c.strip() for c in lines[0].strip("|").split("|")]
    sm = head[0][head[0].index("(") + 1:head[0].index(")")]
    s, m = (int(part.split("=")[1]) for part in sm.split(","))
    ns = [int(c.split("=")[1]) for c in head[1:]]
    table = {}
    for ln in lines[2:]:
        cells = [c.strip() for c in ln.strip("|").split("|")]
        table[cells[0]] = [np.inf if c == "fails" else float(c) for c in cells[1:]]
    return table, ns, s, m


def plot(table: dict[str, list[float]], ns: list[int], s: int, m: int, path: str) -> None:
    """Errors per construction; a construction's failures (error > FAIL, or no decode) are drawn as red crosses on
    the "fails" band at the top, never dropped; the legend sits below the axes so that it hides no point."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:  # pragma: no cover - matplotlib is an optional extra
        print("matplotlib not installed: no plot")
        return
    fig, ax = plt.subplots(figsize=(7.5, 6.4))
    fail_y = 0.3
    failed_any = False
    for label, errs in table.items():
        y = [e if np.isfinite(e) and e <= FAIL else np.nan for e in errs]
        (line,) = ax.semilogy(ns, y, marker="o", label=label)
        bad = [n for n, e in zip(ns, errs, strict=True) if not (np.isfinite(e) and e <= FAIL)]
        if bad:
            failed_any = True
            ax.semilogy(bad, [fail_y] * len(bad), ls="none", marker="x", ms=7, mew=1.8, color="red")
            ax.semilogy(bad[:1], [fail_y], ls="none", marker="o", mfc="none", ms=11, color=line.get_color())
    ax.axhspan(FAIL, 1, color="red", alpha=0.08)
    ax.axhline(FAIL, color="red", lw=0.8)
    ax.text(ns[-1], fail_y * 1.4, f"FAILS (error > {FAIL:g} or no decode): red x; ring = first failure",
            fontsize=7, color="red", ha="right")
    ax.axhline(1e-10, color="k", lw=0.8, ls="--")
    ax.text(ns[0], 1.5e-10, "1e-10", fontsize=8)
    ax.set_xlabel("n (workers)")
    ax.set_ylabel("worst searched relative error (float64)")
    ax.set_title(f"Ye-Abbe decode error vs n, s = {s}, m = {m}")
    ax.set_ylim(1e-16, 1)
    handles, labels = ax.get_legend_handles_labels()
    if failed_any:
        from matplotlib.lines import Line2D

        handles.append(Line2D([], [], ls="none", marker="x", color="red", mew=1.8))
        labels.append(f"FAILS (error > {FAIL:g})")
    fig.legend(handles, labels, fontsize=7, loc="lower center", ncol=2, frameon=False)
    ax.grid(True, which="major", alpha=0.3)
    fig.tight_layout(rect=(0, 0.2, 1, 1))
    fig.savefig(path, dpi=120)
    print(f"wrote {path}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="n up to 50 only")
    ap.add_argument("--smoke", action="store_true",
                    help="tiny sizes (seconds) and no output files: checks that the script still runs")
    ap.add_argument("-s", type=int, default=5)
    ap.add_argument("-m", type=int, default=5)
    ap.add_argument("--samples", type=int, default=300, help="random sets per verify (plus consecutive + search)")
    ap.add_argument("--replot", action="store_true", help="redraw the plot from the saved table (no new run)")
    args = ap.parse_args()
    global RESULTS
    if args.smoke:                                   # n = 12 only, few samples, files in a throwaway directory
        import tempfile

        RESULTS = tempfile.mkdtemp(prefix="ye_abbe_smoke_")
        args.quick, args.samples = True, 20
    if args.replot:
        md = os.path.join(RESULTS, "ye_abbe_numerics.md")
        table, ns, s, m = read_table(md)
        plot(table, ns, s, m, os.path.join(RESULTS, "ye_abbe_numerics.png"))
        return
    s, m = args.s, args.m
    ns = [n for n in (12, 15, 20, 25, 30, 40, 50, 70, 100, 150, 200) if n >= s + m and (not args.quick or n <= 50)]
    ns = ns[:1] if args.smoke else ns
    table: dict[str, list[float]] = {}
    t0 = time.perf_counter()
    for label, fn in ROWS:
        errs = []
        for n in ns:
            if errs and not (errs[-1] <= FAIL):      # once a construction fails it fails for larger n
                errs.append(np.inf)
                continue
            errs.append(fn(n, s, m, np.random.default_rng(n), args.samples))
        table[label] = errs
    width = max(len(r) for r in table)
    print(f"Ye-Abbe worst searched float64 decode error (relative, end to end), s = {s}, m = {m}")
    print(" " * width + "  " + "  ".join(f"{'n=' + str(n):>8}" for n in ns))
    for label, errs in table.items():
        print(label.ljust(width) + "  " + "  ".join(f"{fmt(e):>8}" for e in errs))
    reach = {label: max([n for n, e in zip(ns, errs, strict=True) if e <= 1e-10], default=0)
             for label, errs in table.items()}
    print("\nlargest n with worst searched error <= 1e-10:")
    for label, r in reach.items():
        print(f"  {label.ljust(width)}  {r if r else '-'}")
    print(f"\n({time.perf_counter() - t0:.1f} s)")
    tn = (ns[0], s, m) if args.smoke else (100, s, m) if 100 >= s + m else (s + m + 5, s, m)
    t_cf, t_ls = timing(*tn)
    print(f"decoding matrix at (n, s, m) = {tn}: closed form {t_cf * 1e6:.0f} us, lstsq {t_ls * 1e6:.0f} us per set "
          f"(lstsq / closed form = {t_ls / t_cf:.1f}x, same run)")
    os.makedirs(RESULTS, exist_ok=True)
    suffix = "" if (s, m) == (5, 5) and not args.quick else f"_s{s}_m{m}{'_quick' if args.quick else ''}"
    with open(os.path.join(RESULTS, f"ye_abbe_numerics{suffix}.md"), "w") as fh:
        fh.write(f"| construction (s = {s}, m = {m}) | " + " | ".join(f"n={n}" for n in ns) + " |\n")
        fh.write("|---|" + "---|" * len(ns) + "\n")
        for label, errs in table.items():
            fh.write(f"| {label} | " + " | ".join(fmt(e) for e in errs) + " |\n")
    plot(table, ns, s, m, os.path.join(RESULTS, f"ye_abbe_numerics{suffix}.png"))



if __name__ == "__main__":
    main()
