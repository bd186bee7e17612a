"""The acceptance bound against the error that a worst-case gradient reaches, and against the former estimate.

    python benchmarks/numerics/acceptance_bound.py          # the panel, 20 straggler sets per code and dtype
    python benchmarks/numerics/acceptance_bound.py --smoke  # two codes, 3 sets, writes nothing (the test suite runs it)

For every code of the panel, dtype (float32, float64) and random set of ``s`` stragglers (seeded), the partial
gradients are concentrated in the partition of the worst column of ``|A_F| |B|`` (random signs, magnitudes in
[1, 2), 512 coordinates; every other partition 2^-30 of that), encoded and decoded in the dtype, and the error
``max |g_hat - sum_j g_j| / max sum_j |g_j|`` (the exact sum by ``math.fsum``) is compared with

* the acceptance rule's bound (``DecodeInfo.error_estimate``: ``gamma_{t+2} canc + residual + ...``, ``canc`` the
  worst column; ``gradcodes._numerics.error_estimate``): ``err / bound`` must be at most 1 and says how tight it is;
* the former estimate ``u canc_mean sqrt(t) + residual`` (``canc_mean = max_u sum_i |A_ui| ||B_i||_1 / k``, the
  mean column): ``err / former`` above 1 is a decode the former rule called more accurate than it was.

Sets the rule refuses in that dtype are counted (``refused``) and not decoded. Columns: the median and largest
``err / bound`` and ``err / former`` over the accepted sets. Results:
``benchmarks/numerics/results/acceptance_bound.txt``.
"""

from __future__ import annotations

import argparse
import math
import os
import sys
from pathlib import Path

import numpy as np

import gradcodes as gc
from gradcodes._base.registry import get_scheme
from gradcodes._core.numerics import decode_terms, residuals, unit_roundoff

PANEL = {
    "cyclic_repetition(12, 2, rng=5)": lambda: gc.cyclic_repetition(12, 2, rng=5),
    "cyclic_repetition(20, 4, rng=3)": lambda: gc.cyclic_repetition(20, 4, rng=3),
    "cyclic_repetition(30, 4, rng=3)": lambda: gc.cyclic_repetition(30, 4, rng=3),
    "cyclic_mds(21, 4, real)": lambda: gc.cyclic_mds(21, 4, field="real"),
    "ye_abbe(20, 3, 2)": lambda: gc.ye_abbe(20, 3, 2),
    "heterogeneous_exact (tour: n=20, s=3, k=40)": lambda: get_scheme("heterogeneous_exact").build(n=20, s=3, k=40),
    "fractional_repetition(12, 3)": lambda: gc.fractional_repetition(12, 3),
    "stable_binary(20, 3)": lambda: gc.stable_binary(20, 3),
}
SMOKE = ("cyclic_repetition(12, 2, rng=5)", "fractional_repetition(12, 3)")


def _decoding_matrix(code: gc.GradientCode, F: np.ndarray) -> np.ndarray:
    mask = np.isin(np.arange(code.n), F)
    return np.asarray(code._raw_decoding_matrix(F, mask, code._decoder(None))[0], dtype=np.float64)


def _one(code: gc.GradientCode, F: np.ndarray, dtype: type, rng: np.random.Generator,
         q: int = 512) -> tuple[float, float, float] | None:
    """``(err, bound, former)`` of one decode with the gradient in the worst column, or None when refused."""
    if not code.decodable(F, dtype=dtype):
        return None
    A = _decoding_matrix(code, F)
    absB = np.abs(np.asarray(code.float_B(), dtype=np.float64))
    M = np.abs(A) @ absB
    worst = int(np.argmax(M.max(axis=0))) // code.m
    G = rng.normal(size=(code.k, code.m * q)) * 2.0**-30
    G[worst] = rng.choice([-1.0, 1.0], size=code.m * q) * (1 + rng.random(code.m * q))
    G = G.astype(dtype)
    g, info = code.decode(F, code.encode(G), return_info=True)
    G64 = G.astype(np.float64)
    exact = np.array([math.fsum(col) for col in G64.T])
    err = float(np.abs(g.astype(np.float64) - exact).max() / np.abs(G64).sum(axis=0).max())
    canc_mean = float((np.abs(A) @ absB.sum(axis=1)).max() / code.k)
    res = float(residuals(A[None], np.asarray(code.float_B(), dtype=np.float64), code.target)[0])
    t = decode_terms(A, int(code.load))
    former = unit_roundoff(dtype) * canc_mean * math.sqrt(t) + res
    return err, float(info.error_estimate), former


def run(names: list[str], sets: int) -> list[str]:
    lines = [f"{'code':44s} {'dtype':8s} {'sets':>4s} {'refused':>7s} {'err/bound med':>13s} {'max':>7s} "
             f"{'err/former med':>14s} {'max':>7s}"]
    for name in names:
        code = PANEL[name]()
        for dtype in (np.float32, np.float64):
            rng = np.random.default_rng(0)
            rows, refused = [], 0
            for _ in range(sets):
                S = rng.choice(code.n, size=code.s, replace=False)
                F = np.setdiff1d(np.arange(code.n), S)
                got = _one(code, F, dtype, rng)
                if got is None:
                    refused += 1
                    continue
                err, bound, former = got
                assert err <= bound, (name, dtype, F.tolist(), err, bound)      # the bound holds
                rows.append((err / bound, err / former))
            if rows:
                r = np.array(rows)
                lines.append(f"{name:44s} {np.dtype(dtype).name:8s} {sets:4d} {refused:7d} {np.median(r[:, 0]):13.3f} "
                             f"{r[:, 0].max():7.3f} {np.median(r[:, 1]):14.3f} {r[:, 1].max():7.3f}")
            else:
                lines.append(f"{name:44s} {np.dtype(dtype).name:8s} {sets:4d} {refused:7d} {'-':>13s} {'-':>7s} "
                             f"{'-':>14s} {'-':>7s}")
    return lines


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--smoke", action="store_true", help="two codes, 3 sets each, no output file")
    ap.add_argument("--sets", type=int, default=20, help="random straggler sets per code and dtype (default 20)")
    a = ap.parse_args(argv)
    names = list(SMOKE) if a.smoke else list(PANEL)
    lines = run(names, 3 if a.smoke else a.sets)
    head = [f"# python benchmarks/numerics/acceptance_bound.py --sets {a.sets}; load average {os.getloadavg()[0]:.1f}",
            "# err: decode error with the gradient in the worst column's partition, relative to max sum_j |g_j|;",
            "# bound: the acceptance rule's (worst column, gamma_{t+2}); former: u canc_mean sqrt(t) + residual"]
    text = "\n".join(head + lines)
    print(text)
    if not a.smoke:
        out = Path(__file__).resolve().parent / "results" / "acceptance_bound.txt"
        out.write_text(text + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
