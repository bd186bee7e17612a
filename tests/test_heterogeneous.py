"""Song & Choi heterogeneous approximate gradient codes (Song & Choi 2025)."""

from __future__ import annotations

import warnings
from fractions import Fraction as F

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import gradcodes as gc
from gradcodes._families.heterogeneous import song_choi_allocation
from gradcodes.testing import assert_unbiased

P3 = [F(1, 10), F(1, 5), F(1, 2)]


def fr(rows):
    return [[F(x) for x in row] for row in rows]


# ------------------------------------------------------------------------------------------------------
# a worked example (n = k = 3), exactly
# ------------------------------------------------------------------------------------------------------

WORKED = {
    "I": fr([["13/14", 1, 0], ["-1/7", 0, 1], ["3/14", 0, 0]]),
    "II": fr([[1, "13/14", 0], [0, "1/14", "11/14"], [0, 0, "3/14"]]),
    "nw": fr([[1, "13/14", 0], [0, "1/14", "11/14"], [0, 0, "3/14"]]),
}
# E||ghat - g||^2 with g_j = e_j
WORKED_MSE = {"I": F(32, 63), "II": F(1441, 3528), "nw": F(1441, 3528)}


def test_worked_example_row_sums():
    Y = gc.optimal_row_sums(P3, 3)
    assert Y.tolist() == [F(27, 14), F(6, 7), F(3, 14)]
    delta = [p / (1 - p) for p in P3]
    assert delta == [F(1, 9), F(1, 4), F(1)]
    assert sum(Y) == 3


@pytest.mark.parametrize("scheme", ["I", "II", "nw"])
def test_worked_example_matrices_and_error(scheme):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", gc.NegativeCoefficientWarning)
        code = gc.heterogeneous(P3, 3, scheme=scheme)
    assert code.field == "rational"
    assert code.B.tolist() == WORKED[scheme]
    assert all(isinstance(x, F) for x in code.B.ravel())
    rep = gc.evaluate_approximate(code)
    assert rep.exact and rep.method == "enumerate" and rep.patterns == 8
    assert rep.expected_error == WORKED_MSE[scheme]
    assert rep.closed_form == WORKED_MSE[scheme]
    assert rep.unbiased and rep.bias_norm == 0
    assert rep.nnz == 5 and rep.replication == F(5, 3) == gc.min_load_heterogeneous(3, 3)
    assert rep.meets_lower_bound


@pytest.mark.parametrize("scheme", ["II", "nw"])
def test_worked_example_aligned_gradients(scheme):
    code = gc.heterogeneous(P3, 3, scheme=scheme)
    # all g_j = g: MSE = (9/14)||g||^2, the optimum k^2 / sum(delta^-1) = 9/14
    assert gc.evaluate_approximate(code, "aligned").expected_error == F(9, 14)
    assert code.objective == F(9, 14)


def test_worked_example_scheme_one_objective_uses_abs():
    with pytest.warns(gc.NegativeCoefficientWarning, match="negative coefficients"):
        code = gc.heterogeneous(P3, 3, scheme="I")
    # sum_i delta_i (sum_j |alpha_ij|)^2 = (1/9)(27/14)^2 + (1/4)(8/7)^2 + (3/14)^2
    assert code.objective == F(1, 9) * F(27, 14) ** 2 + F(1, 4) * F(8, 7) ** 2 + F(3, 14) ** 2
    # aligned gradients only see the row sums, so Scheme I still attains 9/14 there
    assert gc.evaluate_approximate(code, "aligned").expected_error == F(9, 14)


def test_worked_example_decoding():
    code = gc.heterogeneous(P3, 3)
    assert code.decoders["weighted"].weights.tolist() == [F(10, 9), F(5, 4), F(2)]
    G = np.array([[F(3), F(-1)], [F(1, 2), F(2)], [F(5), F(7, 3)]], dtype=object)
    g0, g1, g2 = G
    # worker 2 straggles: ghat = (10/9)(g0 + 13/14 g1) + (5/4)(1/14 g1 + 11/14 g2)
    expected = F(10, 9) * (g0 + F(13, 14) * g1) + F(5, 4) * (F(1, 14) * g1 + F(11, 14) * g2)
    got = code.decode([0, 1], code.encode(G))
    assert list(got) == list(expected)
    A = code.decoding_matrix([0, 1])
    assert A.tolist() == [[F(10, 9), F(5, 4), F(0)]]


def test_no_warning_for_nonnegative_schemes():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        gc.heterogeneous(P3, 3, scheme="nw")
        gc.heterogeneous(P3, 3, scheme="II")  # identical to NW here, no negative entry
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        gc.heterogeneous(P3, 3, scheme="I", warn=False)


def test_scheme_two_negative_when_k_is_n_minus_one():
    p = [F(1, 10), F(1, 5), F(1, 2), F(3, 10)]
    with pytest.warns(gc.NegativeCoefficientWarning):
        code = gc.heterogeneous(p, 3, scheme="II")
    assert code.B.min() < 0
    assert (code.B.sum(axis=0) == 1).all()


def test_negative_coefficients_hurt_non_aligned_gradients():
    """Scheme I/II with negative entries have larger error than NW for generic G."""
    p = [F(1, 10), F(1, 5), F(1, 2)]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", gc.NegativeCoefficientWarning)
        e1 = gc.evaluate_approximate(gc.heterogeneous(p, 3, "I")).expected_error
    enw = gc.evaluate_approximate(gc.heterogeneous(p, 3, "nw")).expected_error
    assert e1 > enw


# ------------------------------------------------------------------------------------------------------
# property tests (exact rationals)
# ------------------------------------------------------------------------------------------------------

probs = st.integers(1, 99).map(lambda a: F(a, 100))


@st.composite
def instances(draw, min_extra=-1):
    n = draw(st.integers(1, 6))
    p = draw(st.lists(probs, min_size=n, max_size=n))
    k = draw(st.integers(max(1, n + min_extra), n + 6))
    return p, k


def _prefix_integer_count(Y):
    acc, c = F(0), 0
    for y in Y[:-1]:
        acc += y
        c += acc.denominator == 1
    return c


@settings(max_examples=60, deadline=None)
@given(instances(), st.sampled_from(["nw", "I", "II"]))
def test_unbiased_optimal_minimum_load(inst, scheme):
    p, k = inst
    n = len(p)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", gc.NegativeCoefficientWarning)
        code = gc.heterogeneous(p, k, scheme=scheme)
    B = code.B
    Y = gc.optimal_row_sums(p, k)
    assert all(isinstance(x, F) for x in B.ravel())
    assert (B.sum(axis=0) == 1).all()  # unbiased, exactly
    assert (B.sum(axis=1) == Y).all()  # optimal row sums, exactly
    nnz = int(np.count_nonzero(B != 0))
    assert nnz <= n + k - 1
    assert F(nnz, k) <= gc.min_load_heterogeneous(n, k)
    if scheme == "nw":
        assert B.min() >= 0 and B.max() <= 1
        # NW has exactly n + k - 1 - (#integer interior prefix sums of Y) nonzeros
        assert nnz == n + k - 1 - _prefix_integer_count(list(Y))
        assert code.objective == F(k * k) / sum((1 - q) / q for q in p)
        # contiguous supports, chained: each worker's first partition is the previous worker's last (or next)
        last = -1
        for row in B:
            idx = np.flatnonzero(row != 0)
            assert (np.diff(idx) == 1).all()
            assert idx[0] in (last, last + 1)
            last = idx[-1]


@settings(max_examples=25, deadline=None)
@given(instances())
def test_enumeration_matches_closed_form(inst):
    p, k = inst
    if len(p) > 5:
        p = p[:5]
        k = max(k, len(p) - 1)
    code = gc.heterogeneous(p, k)
    rep = gc.evaluate_approximate(code)
    delta = [q / (1 - q) for q in p]
    direct = sum(d * sum(a * a for a in row) for d, row in zip(delta, code.B, strict=True))
    assert rep.exact and rep.expected_error == rep.closed_form == direct
    assert rep.unbiased and rep.bias_norm == 0
    assert_unbiased(code, atol=0)                     # exact enumeration of all 2^n response patterns


@settings(max_examples=30, deadline=None)
@given(st.lists(st.floats(0.01, 0.99), min_size=1, max_size=12), st.integers(0, 8),
       st.sampled_from(["nw", "I", "II"]))
def test_float_matches_exact(pf, extra, scheme):
    n = len(pf)
    k = max(1, n - 1 + extra)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", gc.NegativeCoefficientWarning)
        cf = gc.heterogeneous(pf, k, scheme)
        ce = gc.heterogeneous([F(x) for x in pf], k, scheme)
    assert cf.field == "real" and cf.B.dtype == np.float64
    np.testing.assert_allclose(cf.B, ce.B.astype(float), atol=1e-12 * k)
    np.testing.assert_allclose(cf.B.sum(axis=0), 1.0, atol=1e-12 * k)


def test_homogeneous_probabilities_give_fractional_repetition_savings():
    # equal p, n | k: Y_i = k/n is an integer, NW splits into disjoint blocks (replication 1)
    code = gc.heterogeneous([F(1, 4)] * 3, 6)
    assert code.B.tolist() == fr([[1, 1, 0, 0, 0, 0], [0, 0, 1, 1, 0, 0], [0, 0, 0, 0, 1, 1]])
    code = gc.heterogeneous([0.25] * 3, 6)
    assert np.count_nonzero(code.B) == 6


def test_single_worker():
    code = gc.heterogeneous([F(1, 3)], 4)
    assert code.B.tolist() == [[F(1)] * 4]
    rep = gc.evaluate_approximate(code)
    assert rep.expected_error == F(1, 2) * 4  # delta = 1/2, ||sum_j e_j||^2 = 4


def test_float_probabilities_stay_float_and_decode():
    rng = np.random.default_rng(0)
    p = rng.uniform(0.05, 0.6, size=7)
    code = gc.heterogeneous(p, 9)
    G = rng.standard_normal((9, 5)).astype(np.float32)
    msgs = code.encode(G)
    assert msgs.dtype == np.float32
    R = [0, 2, 3, 6]
    ghat = code.decode(R, msgs)
    w = 1 / (1 - p)
    expected = (w[R, None] * (code.B[R] @ G.astype(np.float64))).sum(axis=0)
    np.testing.assert_allclose(ghat, expected, rtol=1e-5, atol=1e-5)


# ------------------------------------------------------------------------------------------------------
# bad input
# ------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("p", [[0.1, 0.0, 0.3], [0.1, 1.0], [-0.2, 0.5], [0.5, 1.5], [0.2, float("nan")],
                               [F(0), F(1, 2)], [F(1), F(1, 2)]])
def test_probabilities_outside_open_interval(p):
    with pytest.raises(ValueError, match=r"p\[\d\].*\(0, 1\)"):
        gc.heterogeneous(p, 3)


@pytest.mark.parametrize("p", [[], [[0.1, 0.2], [0.3, 0.4]]])
def test_probabilities_wrong_shape(p):
    with pytest.raises(ValueError, match="p must"):
        gc.heterogeneous(p, 3)


@pytest.mark.parametrize("p", [[True, 0.5], [0.2, 1j], b"0.1", [None, 0.5]])
def test_probabilities_wrong_type(p):
    with pytest.raises(TypeError, match="p"):
        gc.heterogeneous(p, 3)


def test_probabilities_as_strings_are_exact():
    code = gc.heterogeneous("1/10, 1/5, 0.5", 3)
    assert code.field == "rational" and code.straggle_probabilities.tolist() == P3
    assert gc.heterogeneous(["1/10", "1/5", "1/2"], 3).B.tolist() == WORKED["nw"]
    with pytest.raises(ValueError, match=r"p\[1\] = 'a' is not a number"):
        gc.heterogeneous([0.1, "a"], 3)


def test_scalar_probability_needs_n():
    with pytest.raises(ValueError, match="scalar"):
        gc.heterogeneous(0.3, 3)


@pytest.mark.parametrize("scheme", ["nw", "I", "II"])
def test_k_too_small(scheme):
    with pytest.raises(ValueError, match=r"k must be >= n - 1 = 3 partitions for n = 4 workers.*got k = 2"):
        gc.heterogeneous([0.1, 0.2, 0.3, 0.4], 2, scheme=scheme)


@pytest.mark.parametrize("k, exc", [(0, ValueError), (-3, ValueError), (2.5, TypeError), ("3", TypeError),
                                    (True, TypeError)])
def test_bad_k(k, exc):
    with pytest.raises(exc, match="k"):
        gc.heterogeneous([0.1, 0.2], k)


def test_bad_scheme():
    with pytest.raises(ValueError, match="scheme must be one of"):
        gc.heterogeneous([0.1, 0.2], 2, scheme="III")


def test_min_load_heterogeneous():
    assert gc.min_load_heterogeneous(3, 3) == F(5, 3)
    assert gc.min_load_heterogeneous(100, 100) == F(199, 100)
    assert gc.min_load_heterogeneous(1, 7) == 1
    with pytest.raises(ValueError, match="k must be an integer >= 1"):
        gc.min_load_heterogeneous(3, 0)
    with pytest.raises(TypeError, match="n must be an integer"):
        gc.min_load_heterogeneous(2.0, 3)


def test_allocation_helper_matches_code():
    alpha, Y = song_choi_allocation(P3, 3, "nw")
    assert alpha.tolist() == WORKED["nw"]
    assert Y.tolist() == [F(27, 14), F(6, 7), F(3, 14)]


def test_extreme_probabilities_do_not_overflow():
    """1/p overflows for p ~ 1e-310; the row sums are computed scaled, so no NaN (the old code returned NaN)."""
    Y = gc.optimal_row_sums([1e-320, 0.5, 0.3], 3)
    assert np.isfinite(Y).all() and Y.sum() == pytest.approx(3) and Y[0] == pytest.approx(3)
    code = gc.heterogeneous([1e-310, 1e-300, 0.5], 4)
    np.testing.assert_allclose(code.B.sum(axis=0), 1.0)
    assert (code.B >= 0).all() and np.isfinite(code.B).all()
    code = gc.heterogeneous([0.5, 1 - 2.0**-52, 0.25], 3)  # a worker that almost always straggles
    np.testing.assert_allclose(code.B.sum(axis=0), 1.0)


@pytest.mark.parametrize("p", [{0.1, 0.2}, {0: 0.1, 1: 0.2}, (x for x in [0.1, 0.2])])
def test_probabilities_not_a_sequence(p):
    with pytest.raises(TypeError, match="p must be a sequence or array"):
        gc.heterogeneous(p, 2)


def test_warn_must_be_bool():
    with pytest.raises(TypeError, match="warn must be a bool"):
        gc.heterogeneous([0.1, 0.2], 2, warn="no")


@pytest.mark.parametrize("n, k", [(2, 1), (3, 2), (4, 4), (5, 8)])
def test_scheme_supports_are_the_papers(n, k):
    """Scheme I: partition 0 on every worker plus e_i exclusive partitions; Scheme II: a chain of blocks of
    b_i = e_i + 1 partitions, consecutive blocks sharing one (Song & Choi 2025)."""
    p = [F(i + 2, 3 * i + 7) for i in range(n)]  # generic here: no coefficient happens to vanish
    e = [k - n + 1] + [1] * (n - 2) + [0] if n > 1 else [k]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", gc.NegativeCoefficientWarning)
        one = gc.heterogeneous(p, k, "I").B != 0
        two = gc.heterogeneous(p, k, "II").B != 0
    want = np.zeros((n, k), dtype=bool)
    want[:, 0] = True
    start = 1
    for i in range(n):
        want[i, start:start + e[i]] = True
        start += e[i]
    assert (one == want).all()
    want[...] = False
    start = 0
    for i in range(n):
        want[i, start:start + e[i] + 1] = True
        start += e[i]
    assert (two == want).all()
