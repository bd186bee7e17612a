"""Song & Choi heterogeneous approximate gradient codes versus the approximate baselines.

Part 1 (always): expected squared error and bias of every scheme at (about) equal computation load, under the
paper's straggler model ``p_i = exp(-psi_i (tau - 1))``, ``psi_i ~ U(0.1, 2)``, ``tau`` in {1.1, 1.5},
``n`` in {10, 100} workers, ``k = n`` partitions. ``n = 10``: exact enumeration of all 2^10 patterns;
``n = 100``: the exact closed form for fixed-weight decoders (Song-Choi, SGC, IS-SGD), seeded Monte Carlo
(mean ± standard error) for the others. Errors are relative, ``E||ghat - g||^2 / ||g||^2``,
for orthonormal (``g_j = e_j``) and aligned (``g_j = g``) partial gradients, and are compared with IS-SGD
(ignore stragglers, unbiased weights) measured in the same run.

Part 2 (always): speed of the evaluator -- vectorised enumeration versus a per-pattern loop over
``code.decoding_matrix`` on the same patterns (ratio, same run).

Part 3 (needs scikit-learn, the ``[examples]`` extra): multinomial logistic regression on scikit-learn's
``digits`` (1797 x 64) trained with the decoded gradient of every scheme; training loss against iterations.

Run from the repository root::

    PYTHONPATH=. python benchmarks/families/heterogeneous.py            # ~20-45 s
    PYTHONPATH=. python benchmarks/families/heterogeneous.py --quick    # smaller Monte Carlo, fewer iterations

Writes ``benchmarks/families/results/heterogeneous_error.png``, ``heterogeneous_convergence.png`` and
``heterogeneous.txt`` (the printed tables).
"""

from __future__ import annotations

import argparse
import os
import sys
import time
import warnings
from collections.abc import Callable
from typing import Any

# One BLAS thread: the batched pseudo-inverses of the least-squares decoders are many small problems, and
# multithreaded BLAS on a shared machine made them 10-40x slower (measured: 35 s vs 0.95 s for 1024 pinvs).
for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import numpy as np  # noqa: E402

import gradcodes as gc  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
D = 2  # baselines' load (partitions per worker); Song-Choi with k = n has average replication 2 - 1/n


def schemes(p: np.ndarray, seed: int) -> dict[str, Callable[[], gc.ApproximateCode]]:
    """Every scheme for straggle probabilities ``p`` (k = n), as zero-argument builders."""
    n = p.size
    out: dict[str, Callable[[], gc.ApproximateCode]] = {
        "Song-Choi NW": lambda: gc.heterogeneous(p, n, "nw"),
        "Song-Choi I": lambda: gc.heterogeneous(p, n, "I", warn=False),
        "Song-Choi II": lambda: gc.heterogeneous(p, n, "II", warn=False),
        "SGC": lambda: gc.stochastic_gc(n, D, p),
        "BGC (optimal)": lambda: gc.bernoulli_gc(n, D, p=p, rng=seed),
        "EHD (group)": lambda: gc.erasurehead(n, D, p=p),
        "OD (optimal)": lambda: gc.optimal_decoding(n, D, p=p, rng=seed),
        "IS-SGD (1/(1-p))": lambda: gc.ignore_stragglers(n, p=p),
    }
    return out


def fmt(rep: gc.ApproxReport) -> str:
    v = float(rep.relative_error)
    if rep.method == "montecarlo":
        return f"{v:.4g} ± {rep.expected_error_stderr / float(rep.gradient_norm2):.1g}"
    return f"{v:.4g}"


def table(rows: list[dict[str, Any]]) -> str:
    from gradcodes._cli.tour import format_table

    return format_table(rows)


def error_part(samples: int, lsq_samples: int, log: Callable[[str], None],
               ns: tuple[int, ...] = (10, 100)) -> dict[tuple[int, float], dict]:
    results: dict[tuple[int, float], dict] = {}
    for n in ns:
        for tau in (1.1, 1.5):
            p = gc.exponential_straggle_probabilities(n, tau, rng=n)
            opt = 1 / ((1 - p) / p).sum()  # Song-Choi's aligned optimum / ||g||^2 = k^2/sum(delta^-1) / k^2
            rows = []
            res = {}
            for name, build in schemes(p, seed=1).items():
                t0 = time.perf_counter()
                code = build()
                lsq = code.default_decoder == "optimal"
                kw = {"samples": lsq_samples if lsq else samples, "rng": 0}
                orth = gc.evaluate_approximate(code, "orthonormal", **kw)
                al = gc.evaluate_approximate(code, "aligned", **kw)
                res[name] = (orth, al, code)
                rows.append({
                    "scheme": name, "load": code.load, "replication": f"{float(orth.replication):.3f}",
                    "min coef": f"{float(np.min(np.asarray(code.B, dtype=float))):.3g}",
                    "E|e|^2/|g|^2 orthonormal": fmt(orth), "aligned": fmt(al),
                    "|bias|/|g| (orth.)": f"{float(orth.bias_norm) / np.sqrt(float(orth.gradient_norm2)):.2g}",
                    "unbiased": "yes" if orth.unbiased and al.unbiased else "NO",
                    "method": {"enumerate": "enumerate", "closed": "closed form"}.get(orth.method,
                                                                                      f"MC {orth.patterns}"),
                    "seconds": f"{time.perf_counter() - t0:.2f}",
                })
            base_o = float(res["IS-SGD (1/(1-p))"][0].relative_error)
            base_a = float(res["IS-SGD (1/(1-p))"][1].relative_error)
            for row, (o, a, _) in zip(rows, res.values(), strict=True):
                row["vs IS-SGD (orth., aligned)"] = (f"{float(o.relative_error) / base_o:.3f}, "
                                                     f"{float(a.relative_error) / base_a:.3f}")
            log(f"\n## n = {n} workers, k = {n} partitions, tau = {tau}: p in [{p.min():.3f}, {p.max():.3f}], "
                f"mean {p.mean():.3f}; Song-Choi aligned optimum 1/sum(delta^-1) = {opt:.4g}")
            log(table(rows))
            nw_al = float(res["Song-Choi NW"][1].relative_error)
            assert abs(nw_al - opt) <= 1e-9 * opt  # the NW code attains the optimum k^2 / sum(delta^-1)
            results[(n, tau)] = res
    return results


def speed_part(log: Callable[[str], None]) -> None:
    n = 12
    p = gc.exponential_straggle_probabilities(n, 1.5, rng=3)
    rows = []
    for name, code in (("Song-Choi NW (fixed weights)", gc.heterogeneous(p, n)),
                       ("OD (least squares)", gc.optimal_decoding(n, 3, p=p, rng=0))):
        t0 = time.perf_counter()
        rep = gc.evaluate_approximate(code, method="enumerate")
        t_vec = time.perf_counter() - t0
        # reference: the same 2^n patterns, one decoding_matrix call each (no cache reuse: distinct sets)
        masks = ((np.arange(1 << n)[:, None] >> np.arange(n)) & 1).astype(bool)
        probs = np.where(masks, 1 - p, p).prod(axis=1)
        B = np.asarray(code.B, dtype=float)
        t0 = time.perf_counter()
        err = 0.0
        for m, pr in zip(masks, probs, strict=True):
            A = code.decoding_matrix(np.flatnonzero(m))
            r = A @ B - 1.0
            err += pr * float((r * r).sum())
        t_loop = time.perf_counter() - t0
        assert abs(err - rep.expected_error) <= 1e-9 * max(1.0, err)
        rows.append({"code": name, "patterns": f"{1 << n:,}", "vectorised s": f"{t_vec:.3f}",
                     "per-pattern loop s": f"{t_loop:.3f}", "speed-up": f"{t_loop / t_vec:.1f}x",
                     "same E|e|^2": "yes"})
    log("\n## Evaluator speed: batched enumeration vs a per-pattern decoding_matrix loop (same run)")
    log(table(rows))


# ------------------------------------------------------------------------------------------------------------
# training
# ------------------------------------------------------------------------------------------------------------


def training_part(iters: int, runs: int, outdir: str, log: Callable[[str], None], lr: float = 1.0,
                  biased: frozenset[str] = frozenset()) -> dict | None:
    try:
        from sklearn.datasets import load_digits
    except ImportError:
        log("\n## Training: skipped (scikit-learn is not installed; `pip install gradcodes[examples]`)")
        return None
    data = load_digits()
    X = np.hstack([data.data / 16.0, np.ones((data.data.shape[0], 1))])  # (N, 65) with bias
    Y = np.eye(10)[data.target]
    N, dim = X.shape
    lam = 1e-3
    n = 10
    rng0 = np.random.default_rng(0)
    order = rng0.permutation(N)
    parts = np.array_split(order, n)  # k = n partitions

    def loss_and_partials(W: np.ndarray) -> tuple[float, np.ndarray]:
        Z = X @ W
        Z -= Z.max(axis=1, keepdims=True)
        P = np.exp(Z)
        P /= P.sum(axis=1, keepdims=True)
        loss = -np.log(P[np.arange(N), data.target] + 1e-300).mean() + 0.5 * lam * (W * W).sum()
        R = P - Y
        G = np.stack([(X[idx].T @ R[idx]).ravel() for idx in parts])  # (k, dim*10): sums per partition
        return float(loss), G

    def step_grad(G: np.ndarray, W: np.ndarray, ghat: np.ndarray) -> np.ndarray:
        return ghat.reshape(W.shape) / N + lam * W

    curves: dict[tuple[float, str], np.ndarray] = {}
    for tau in (1.1, 1.5):
        p = gc.exponential_straggle_probabilities(n, tau, rng=n)
        codes = {name: build() for name, build in schemes(p, seed=1).items()}
        names = ["GD (no stragglers)", *codes]
        all_losses = {name: np.zeros((runs, iters + 1)) for name in names}
        for run in range(runs):
            masks = np.random.default_rng(100 + run).random((iters, n)) >= p  # common random numbers
            for name in names:
                W = np.zeros((dim, 10))
                code = codes.get(name)
                losses = all_losses[name][run]
                for t in range(iters):
                    loss, G = loss_and_partials(W)
                    losses[t] = loss
                    if code is None:
                        ghat = G.sum(axis=0)
                    else:
                        ghat = code.decode(np.flatnonzero(masks[t]), code.encode(G))
                    W = W - lr * step_grad(G, W, ghat)
                losses[iters] = loss_and_partials(W)[0]
        for name in names:
            curves[(tau, name)] = all_losses[name].mean(axis=0)
        rows = []
        for name in names:
            c = curves[(tau, name)]
            rows.append({"scheme": name, "loss @0": f"{c[0]:.3f}", f"loss @{iters // 4}": f"{c[iters // 4]:.3f}",
                         f"loss @{iters // 2}": f"{c[iters // 2]:.3f}", f"loss @{iters}": f"{c[iters]:.4f}",
                         "final / GD final": f"{c[iters] / curves[(tau, names[0])][iters]:.3f}"})
        log(f"\n## Training: softmax regression on digits (N = {N}), n = k = {n}, tau = {tau}, "
            f"step {lr}, L2 {lam}, {iters} iterations, mean of {runs} runs (same straggler draws for all schemes)")
        log(table(rows))
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        log("(matplotlib missing: no convergence plot)")
        return curves
    fig, axes = plt.subplots(1, 2, figsize=(12, 4.5), sharey=True)
    for ax, tau in zip(axes, (1.1, 1.5), strict=True):
        for (t, name), c in curves.items():
            if t == tau:
                # biased schemes (E[ghat] != g) are drawn dotted and say so in the legend
                ax.plot(c, label=f"{name} (BIASED)" if name in biased else name,
                        lw=2.2 if name.startswith(("Song-Choi NW", "GD")) else 1.2,
                        ls="--" if name.startswith("GD") else (":" if name in biased else "-"))
        ax.set_yscale("log")
        ax.set_xlabel("iteration")
        ax.set_title(f"digits softmax regression, n = k = {n}, tau = {tau}")
        ax.grid(alpha=0.3)
    axes[0].set_ylabel("training loss")
    # the legend sits to the right of the panels, so it hides no curve
    axes[1].legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.02, 1.0), borderaxespad=0)
    fig.tight_layout()
    path = os.path.join(outdir, "heterogeneous_convergence.png")
    fig.savefig(path, dpi=110)
    plt.close(fig)
    log(f"wrote {os.path.relpath(path)}")
    return curves


def biased_schemes(results: dict) -> frozenset[str]:
    """The schemes whose estimate is biased in some setting (``ApproxReport.unbiased`` false)."""
    return frozenset(nm for res in results.values() for nm, reps in res.items()
                     if not all(rep.unbiased for rep in reps[:2]))  # (orthonormal, aligned, code)


def plot_errors(results: dict, outdir: str, log: Callable[[str], None]) -> None:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        log("(matplotlib missing: no error plot)")
        return
    keys = sorted(results)
    names = list(results[keys[0]])
    biased = biased_schemes(results)
    fig, axes = plt.subplots(1, 2, figsize=(13, 4.8))
    width = 0.8 / len(keys)
    for ax, which, title in ((axes[0], 0, "orthonormal partial gradients"), (axes[1], 1, "aligned partial gradients")):
        for t, key in enumerate(keys):
            vals = [float(results[key][nm][which].relative_error) for nm in names]
            bars = ax.bar(np.arange(len(names)) + t * width, vals, width, label=f"n = {key[0]}, tau = {key[1]}",
                          color=f"C{t}")
            for bar, nm in zip(bars, names, strict=True):
                if nm in biased:                  # biased schemes are hatched and labelled
                    bar.set_hatch("///")
                    bar.set_edgecolor("black")
        ax.set_xticks(np.arange(len(names)) + 0.4 - width / 2)
        ax.set_xticklabels([f"{nm} (BIASED)" if nm in biased else nm for nm in names], rotation=35, ha="right",
                           fontsize=8)
        ax.set_yscale("log")
        ax.set_ylabel("E||ghat - g||^2 / ||g||^2")
        ax.set_title(title)
        ax.grid(axis="y", alpha=0.3)
    handles, labels = axes[0].get_legend_handles_labels()
    handles.append(plt.Rectangle((0, 0), 1, 1, facecolor="white", edgecolor="black", hatch="///"))
    labels.append("hatched: BIASED (E[ghat] != g)")
    # the legend sits below the panels, so it hides no bar
    fig.legend(handles, labels, loc="lower center", ncol=len(labels), fontsize=8, frameon=False)
    fig.tight_layout(rect=(0, 0.06, 1, 1))
    path = os.path.join(outdir, "heterogeneous_error.png")
    fig.savefig(path, dpi=110)
    plt.close(fig)
    log(f"wrote {os.path.relpath(path)}")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="fewer Monte Carlo samples and iterations")
    ap.add_argument("--smoke", action="store_true",
                    help="tiny sizes (seconds) and no output files: checks that the script still runs")
    ap.add_argument("--out", default=os.path.join(HERE, "results"), help="output directory")
    ap.add_argument("--no-train", action="store_true", help="skip the training run")
    ap.add_argument("--lr", type=float, default=1.0, help="step size of the training run")
    args = ap.parse_args(argv)
    if args.smoke:                                   # n = 10 only, 3 training steps, files in a throwaway directory
        import tempfile

        args.out = tempfile.mkdtemp(prefix="heterogeneous_smoke_")
    os.makedirs(args.out, exist_ok=True)
    lines: list[str] = []

    def log(s: str) -> None:
        print(s, flush=True)
        lines.append(s)

    t0 = time.perf_counter()
    samples, lsq_samples = (200, 50) if args.smoke else (4000, 500) if args.quick else (20000, 2000)
    log("# Heterogeneous stragglers: Song & Choi vs approximate baselines "
        "(gradcodes benchmarks/families/heterogeneous.py)")
    log(f"# baselines at load d = {D}; Song-Choi with k = n (average replication 2 - 1/n, the minimum "
        f"1 + (n-1)/k); p_i = exp(-psi_i (tau - 1)), psi_i ~ U(0.1, 2) seeded")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", gc.NegativeCoefficientWarning)
        results = error_part(samples, lsq_samples, log, (10,) if args.smoke else (10, 100))
        plot_errors(results, args.out, log)
        speed_part(log)
        if not args.no_train:
            training_part(3 if args.smoke else 60 if args.quick else 200, 1 if args.quick or args.smoke else 3,
                          args.out, log, args.lr,
                          biased_schemes(results))
    log(f"\ntotal {time.perf_counter() - t0:.1f} s")
    with open(os.path.join(args.out, "heterogeneous.txt"), "w") as fh:
        fh.write("\n".join(lines) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
