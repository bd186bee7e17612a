"""Why a grouped_random group's worst error had a floor near 1e-11: the float64 matrix itself, not the decoder.

    python benchmarks/verify/residual_floor.py [NG S EXTRA SEED RESPONDER ...]
    python benchmarks/verify/residual_floor.py --smoke      # a (10, 3, 1) group (the test suite); needs mpmath (sympy)

Default: the (33, 25, 1) group with seed 0 at its worst set from the stored certification run (responders
0 1 7 14 18 19 22 31; benchmarks/verify/results/certified_seeds.jsonl). For that responder set it prints, for the
row-space decoder and the null-space decoder with 0, 1 and 2 refinement steps: the residual ``||a_F B_F - 1||_inf``
evaluated in float64 and exactly (rational arithmetic on the float64 numbers), the cancellation factor and the
error estimate ``u canc + residual``; then the same for the exact least weighted-norm solution (50-digit
arithmetic) rounded to float64. When even that has a residual of the same size, no decoder can do better: the
rows of the stored float64 ``B_F`` do not contain the target exactly in their span (the construction's exact rows
do), and any decoding vector of this size picks up the rounding of ``B``. All of this is printed twice: for the
group's rows from one float64 solve each (``cyclic_repetition(..., refine=0)``, the construction before refinement)
and for the refined rows that ``grouped_random`` now uses (``refine=2``: the exact rows for the same ``H``, rounded).
"""

from __future__ import annotations

import sys
from fractions import Fraction

import numpy as np

from gradcodes._core.decoders import NullSpaceDecoder
from gradcodes._core.numerics import cancellation, error_estimate, residuals
from gradcodes._families.grouped_random import REFINE, RowSpaceDecoder, _block_code


def exact_residual(a: np.ndarray, B: np.ndarray, F: list[int]) -> float:
    worst = Fraction(0)
    for j in range(B.shape[1]):
        acc = sum((Fraction(float(a[i])) * Fraction(float(B[i, j])) for i in F), Fraction(0))
        worst = max(worst, abs(acc - 1))
    return float(worst)


def main() -> int:
    argv = sys.argv[1:]
    try:
        import mpmath  # noqa: F401  (the 50-digit reference solution)
    except ImportError:
        print("mpmath is not installed (it comes with sympy: pip install 'gradcodes[test]'): skipped")
        return 0
    if argv == ["--smoke"]:                          # a small group at an arbitrary responder set
        argv = ["10", "3", "1", "0", "0", "1", "2", "4", "5", "7", "8"]
    args = [int(x) for x in argv] or [33, 25, 1, 0, 0, 1, 7, 14, 18, 19, 22, 31]
    for refine in (0, REFINE):
        analyse(*args, refine=refine)
        print()
    ng, s, extra, seed = args[:4]
    plain, refined = (np.asarray(_block_code(ng, s, extra, seed, r).B, dtype=np.float64) for r in (0, REFINE))
    nz = refined != 0
    rel = np.abs(plain[nz] - refined[nz]) / np.abs(refined[nz])
    print(f"rows refine=0 against refine={REFINE} (the exact rows rounded, tests/test_refine.py): max relative "
          f"difference {rel.max():.3g}, {np.count_nonzero(rel):,} of {rel.size:,} non-zeros differ")
    return 0


def analyse(ng: int, s: int, extra: int, seed: int, *responders: int, refine: int) -> None:
    F = list(responders)
    sub = _block_code(ng, s, extra, seed, refine)
    B = np.asarray(sub.B, dtype=np.float64)
    mask = np.zeros((1, ng), dtype=bool)
    mask[0, F] = True
    print(f"group ({ng}, {s}, extra {extra}), seed {seed}, rows refine={refine}, responders {F}")
    print(f"{'decoder':<28} {'residual (float64)':>18} {'residual (exact)':>17} {'canc':>9} {'estimate':>10}")
    decs = [("rowspace", RowSpaceDecoder())] + [(f"nullspace refine={r}", NullSpaceDecoder(refine=r))
                                                for r in (0, 1, 2)]
    for name, dec in decs:
        A = dec.matrices(sub, mask)
        r = float(residuals(A, B, sub.target)[0])
        c = float(cancellation(A, B, sub.k)[0])
        print(f"{name:<28} {r:18.3e} {exact_residual(A[0, 0], B, F):17.3e} {c:9.5g} "
              f"{float(error_estimate(c, r)):10.3e}")
    import mpmath

    mpmath.mp.dps = 50
    w = np.abs(B).sum(axis=1)
    BF = mpmath.matrix([[mpmath.mpf(float(B[i, j])) / mpmath.mpf(float(w[i])) for j in range(ng)] for i in F])
    U, S, V = mpmath.svd_r(BF)
    rank = ng - min(s + extra, ng - 1)
    Sinv = mpmath.diag([1 / S[i] for i in range(rank)])
    b = mpmath.matrix([[1] * ng]) * V[:rank, :].T * Sinv * U[:, :rank].T   # least-norm b with b (B_F / w) = 1
    a = np.zeros(ng)
    a[F] = [float(b[0, t] / mpmath.mpf(float(w[i]))) for t, i in enumerate(F)]
    c = float(cancellation(a[None, None, :], B, sub.k)[0])
    ex = exact_residual(a, B, F)
    print(f"{'exact least-norm, rounded':<28} {float(residuals(a[None, None, :], B, sub.target)[0]):18.3e} "
          f"{ex:17.3e} {c:9.5g} {float(error_estimate(c, ex)):10.3e}")
    print(f"singular values of the row-weighted B_F: {', '.join(f'{float(x):.3g}' for x in S)} "
          f"(numerical rank {rank} of {len(F)} rows; the last is the rounding of B)")


if __name__ == "__main__":
    sys.exit(main())
