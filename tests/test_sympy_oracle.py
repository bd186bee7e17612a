"""Our exact linear algebra over Q (``_fields.rref``, ``solve_left``, ``left_nullspace``) against sympy, an
independent implementation: ranks, pivots, null spaces and solves agree on random rational matrices, including
rank-deficient ones."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gradcodes._core.fields import left_nullspace, rref, solve_left

sympy = pytest.importorskip("sympy")


@st.composite
def rational_matrices(draw, max_side: int = 5):
    r = draw(st.integers(1, max_side))
    c = draw(st.integers(1, max_side))
    entry = st.fractions(min_value=-3, max_value=3, max_denominator=4)
    rows = draw(st.lists(st.lists(entry, min_size=c, max_size=c), min_size=r, max_size=r))
    # rank deficiency on purpose: sometimes a row is a combination of two others
    if r >= 3 and draw(st.booleans()):
        a, b = draw(st.fractions(-2, 2, max_denominator=3)), draw(st.fractions(-2, 2, max_denominator=3))
        rows[-1] = [a * x + b * y for x, y in zip(rows[0], rows[1], strict=True)]
    M = np.empty((r, c), dtype=object)
    for i in range(r):
        for j in range(c):
            M[i, j] = Fraction(rows[i][j])
    return M


def to_sympy(M: np.ndarray):
    return sympy.Matrix([[sympy.Rational(x.numerator, x.denominator) for x in row] for row in M])


def to_fr(x) -> Fraction:
    x = sympy.nsimplify(x)
    return Fraction(int(x.p), int(x.q))


@settings(max_examples=40, deadline=None)
@given(rational_matrices())
def test_rref_and_rank_match_sympy(M):
    R, pivots = rref(M)
    S, spivots = to_sympy(M).rref()
    assert list(pivots) == list(spivots)
    assert len(pivots) == to_sympy(M).rank()
    assert all(R[i, j] == to_fr(S[i, j]) for i in range(M.shape[0]) for j in range(M.shape[1]))


@settings(max_examples=40, deadline=None)
@given(rational_matrices())
def test_left_nullspace_matches_sympy(M):
    K = left_nullspace(M)                          # columns x with x^T M = 0
    S = to_sympy(M)
    assert K.shape[1] == len(S.T.nullspace())      # the same dimension as sympy's
    if K.shape[1]:
        assert to_sympy(K.T) * S == sympy.zeros(K.shape[1], M.shape[1])
        assert to_sympy(K).rank() == K.shape[1]    # a basis, not just vectors in the space


@settings(max_examples=40, deadline=None)
@given(rational_matrices(), st.data())
def test_solve_left_matches_sympy(M, data):
    """``X M = T``: solvable exactly when sympy's rank test says so, and then our X solves it."""
    c = M.shape[1]
    t = data.draw(st.lists(st.fractions(-3, 3, max_denominator=4), min_size=c, max_size=c))
    T = np.empty((1, c), dtype=object)
    T[0] = [Fraction(v) for v in t]
    X = solve_left(M, T)
    S, St = to_sympy(M), to_sympy(T)
    solvable = S.rank() == S.col_join(St).rank()
    assert (X is not None) == solvable
    if X is not None:
        assert to_sympy(X) * S == St
