"""The reproducible kernels of the constructors (gradcodes/_detlinalg.py) against exact oracles."""

from __future__ import annotations

import math
from fractions import Fraction

import mpmath
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from gradcodes._core import detlinalg as det


def _exact_solve(A: np.ndarray, b: np.ndarray) -> list[Fraction]:
    """Gauss-Jordan elimination in Fractions (the oracle)."""
    s = len(A)
    M = [[Fraction(float(x)) for x in row] + [Fraction(float(b[i]))] for i, row in enumerate(A)]
    for k in range(s):
        p = next(i for i in range(k, s) if M[i][k] != 0)
        M[k], M[p] = M[p], M[k]
        for i in range(s):
            if i != k and M[i][k] != 0:
                f = M[i][k] / M[k][k]
                M[i] = [x - f * y for x, y in zip(M[i], M[k], strict=True)]
    return [M[i][s] / M[i][i] for i in range(s)]


@given(st.integers(1, 7), st.integers(0, 2**32 - 1))
def test_refined_solve_is_the_exact_solution_rounded(s, seed):
    rng = np.random.default_rng(seed)
    A = rng.standard_normal((3, s, s)) + 3 * np.eye(s)             # well conditioned
    b = rng.standard_normal((3, s, 2))
    X = det.solve(A, b, refine=2)
    for t in range(3):
        for c in range(2):
            exact = _exact_solve(A[t], b[t, :, c])
            for i in range(s):
                # within one unit in the last place of the exact solution of the given (float) system
                assert abs(Fraction(float(X[t, i, c])) - exact[i]) <= Fraction(math.ulp(float(exact[i])))


def test_solve_pivots_and_reports_singular_systems_as_non_finite():
    A = np.array([[[0.0, 1.0], [1.0, 0.0]], [[1.0, 2.0], [2.0, 4.0]]])
    X = det.solve(A, np.array([[[2.0], [3.0]], [[1.0], [1.0]]]))
    assert X[0, :, 0].tolist() == [3.0, 2.0]                       # needs the row exchange
    assert not np.isfinite(X[1]).all()


def test_matmul_sums_in_index_order():
    A = np.array([[1e16, 1.0, -1e16]])
    B = np.array([[1.0], [1.0], [1.0]])
    # ((1e16 + 1) - 1e16) in index order is 0 (1e16 + 1 rounds to 1e16); a reordered sum gives 1
    assert det.matmul(A, B)[0, 0] == ((1e16 + 1.0) - 1e16)


@pytest.mark.parametrize("den", [1, 2, 3, 7, 12, 40, 101])
def test_cos_pi_and_sin_pi_are_correctly_rounded(den):
    num = np.arange(-3 * den, 3 * den + 1)
    c, s = det.cos_pi(num, den), det.sin_pi(num, den)
    with mpmath.workprec(200):
        for j, cj, sj in zip(num.tolist(), c.tolist(), s.tolist(), strict=True):
            assert cj == float(mpmath.cospi(mpmath.mpf(j) / den))
            assert sj == float(mpmath.sinpi(mpmath.mpf(j) / den))


@given(st.floats(-745.0, 709.0))
def test_exp_within_two_ulps(x):
    y = float(det.exp(np.array([x]))[0])
    with mpmath.workprec(200):
        exact = mpmath.exp(x)
        assert abs(mpmath.mpf(y) - exact) <= 2 * mpmath.mpf(math.ulp(float(exact)))


def test_exp_special_values():
    got = det.exp(np.array([0.0, -np.inf, np.inf, np.nan, -1e300, 1e300, 710.0, -746.0]))
    assert got[0] == 1.0 and got[1] == 0.0 and got[2] == np.inf and np.isnan(got[3])
    assert got[4] == 0.0 and got[5] == np.inf and got[6] == np.inf and got[7] == 0.0
