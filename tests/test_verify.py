"""The verifier: soundness against corrupted matrices, agreement with a brute-force check, streaming, search."""

import itertools
import math
from fractions import Fraction as Fr

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import gradcodes as gc
from gradcodes._verify import straggler_batches


def brute_force_failing(B, s, tol=1e-8):
    """Responder sets (|F| = n - s) whose least-squares decode misses the all-ones vector by more than tol."""
    n = B.shape[0]
    bad = []
    for S in itertools.combinations(range(n), s):
        F = [i for i in range(n) if i not in S]
        a = np.linalg.lstsq(B[F].T, np.ones(B.shape[1]), rcond=None)[0]
        if np.abs(a @ B[F] - 1).max() > tol:
            bad.append(tuple(F))
    return bad


@pytest.mark.parametrize("family", ["fractional_repetition", "cyclic_repetition"])
def test_every_single_zeroed_entry_is_caught(family):
    """Zeroing any nonzero entry of B breaks recovery for some set; verify must say so and name a failing set."""
    code = gc.fractional_repetition(6, 2) if family == "fractional_repetition" else gc.cyclic_repetition(6, 2, seed=1)
    for i, j in zip(*np.nonzero(code.B), strict=True):
        B = code.B.copy()
        B[i, j] = 0.0
        report = gc.verify(gc.GradientCode(B, s=2))
        truth = brute_force_failing(B, 2)
        assert truth, "zeroing an entry of a load-optimal code always breaks it"
        assert not report.exact
        assert report.failing_responders in truth
        assert "FAILS" in str(report)


def test_perturbed_entry_in_cyclic_code_is_caught():
    code = gc.cyclic_repetition(7, 3, seed=2)
    B = code.B.copy()
    B[3, 4] *= 1.001
    report = gc.verify(gc.GradientCode(B, s=3))
    assert not report.exact and report.n_failures > 0
    assert report.failing_responders in brute_force_failing(B, 3)
    # the same corruption caught from the search path (not exhaustive) as well
    report = gc.verify(gc.GradientCode(B, s=3), limit=10)
    assert not report.exhaustive and not report.exact
    assert report.failing_responders in brute_force_failing(B, 3)


def test_exact_mutation_is_caught_with_no_rounding():
    code = gc.cyclic_repetition(4, 1, H=[[1, 2, 3, -6]], field="rational")
    B = code.B.copy()
    B[1, 2] = Fr(-2, 3) + Fr(1, 10**30)        # invisible in float64, fatal in exact arithmetic
    report = gc.verify(gc.GradientCode(B, s=1))
    assert not report.exact and report.failing_responders is not None
    assert gc.verify(gc.GradientCode(np.vectorize(float)(B).astype(float), s=1)).exact   # float cannot see it


@st.composite
def corrupted_codes(draw):
    n = draw(st.integers(2, 8))
    s = draw(st.integers(1, n - 1))
    code = gc.cyclic_repetition(n, s, seed=draw(st.integers(0, 1000)))
    B = code.B.copy()
    nz = np.argwhere(B != 0)
    i, j = nz[draw(st.integers(0, len(nz) - 1))]
    B[i, j] = draw(st.sampled_from([0.0, B[i, j] * 1.01, B[i, j] + 1.0, -B[i, j]]))
    return B, s


@given(corrupted_codes())
def test_verify_agrees_with_brute_force(case):
    B, s = case
    report = gc.verify(gc.GradientCode(B, s=s), stop_on_failure=False)
    truth = brute_force_failing(B, s, tol=1e-6)
    if truth:
        assert not report.exact                       # never "exact" with a failing set among those checked
        assert report.failing_responders is not None
    if not report.exact:
        # every named failure is a genuine failure (to float64 accuracy: residual or cancellation)
        for F in report.failures:
            a = np.linalg.lstsq(B[list(F)].T, np.ones(B.shape[1]), rcond=None)[0]
            canc = np.abs(a) @ np.abs(B[list(F)]).sum(axis=1) / B.shape[1]
            assert np.abs(a @ B[list(F)] - 1).max() > 1e-9 or canc * 1.1e-16 > 1e-9


def test_exhaustive_counts_and_streaming_batches():
    code = gc.cyclic_repetition(12, 4, seed=0)
    small = gc.verify(code, batch_size=7)
    big = gc.verify(code)
    assert small.patterns_checked == big.patterns_checked == math.comb(12, 4)
    assert small.exhaustive and small.exact
    assert small.worst_residual == pytest.approx(big.worst_residual, rel=1e-6, abs=1e-15)
    sets = np.concatenate(list(straggler_batches(7, 3, 4)))
    assert sets.shape == (35, 3)
    assert [tuple(r) for r in sets] == list(itertools.combinations(range(7), 3))


def test_non_exhaustive_search_reports_it():
    code = gc.cyclic_repetition(30, 6, seed=0)
    report = gc.verify(code, samples=200)
    assert not report.exhaustive and report.patterns_total == math.comb(30, 6)
    assert report.strategies["consecutive"] == 30 and report.strategies["random"] == 200
    assert report.strategies["search"] > 0
    assert report.exact
    assert "not exhaustive" in str(report)
    # the search never reports a better worst case than the sets it started from
    no_search = gc.verify(code, samples=200, search=False)
    assert report.error_estimate >= no_search.error_estimate


def test_local_search_finds_a_planted_bad_set():
    """A code that fails on exactly one straggler set; random sampling alone is unlikely to hit it."""
    n, s = 14, 3
    # fractional repetition with groups {0..3}, {4..7}, ... would need 4 | 14; use a custom 0/1 code instead:
    # groups of 4 except one group {0, 1, 2} of size 3, which fails only when all of 0, 1, 2 straggle
    groups = [[0, 1, 2], [3, 4, 5, 6], [7, 8, 9, 10], [11, 12, 13]]
    B = np.zeros((n, 4))
    for g, members in enumerate(groups):
        B[members, g] = 1.0
    report = gc.verify(gc.GradientCode(B, s=s), limit=0, samples=5)
    assert not report.exact
    assert set(range(n)) - set(report.failing_responders) in ({0, 1, 2}, {11, 12, 13})


def test_report_fields_and_str():
    report = gc.verify(gc.fractional_repetition(6, 1))
    assert report.load == 2 and report.load_lower_bound == Fr(2) and report.meets_lower_bound
    assert report.average_load == Fr(2)
    assert report.worst_cancellation == 1.0 and report.error_estimate < 1e-15
    row = report.tour_row()
    assert row["result"] == "ok" and row["exhaustive"] == "yes" and row["load / bound"] == "2 / 2"
    assert "RECOVERY" in str(report) and "meets the bound" in str(report)
    assert bool(report)


def test_load_above_bound_is_reported():
    B = np.ones((4, 4))                              # every worker stores everything: load 4 > s + 1 = 2
    report = gc.verify(gc.GradientCode(B, s=1))
    assert report.exact and report.load == 4 and not report.meets_lower_bound


def test_cancellation_destroys_accuracy_is_not_exact():
    """A code that decodes in exact arithmetic but only with huge cancellation must not be reported exact."""
    eps = 1e-13
    B = np.array([[1.0, 0.0], [1.0, eps]])          # a = (1 - 1/eps, 1/eps): cancellation ~ 1/eps
    report = gc.verify(gc.GradientCode(B, s=0))
    assert not report.exact
    assert report.worst_cancellation > 1e12
    assert "INACCURATE" in str(report) or "FAILS" in str(report)


@pytest.mark.parametrize(("kwargs", "exc", "words"), [
    ({"limit": -1}, ValueError, "limit must be an integer >= 0"),
    ({"samples": -5}, ValueError, "samples must be an integer >= 0"),
    ({"rtol": 0}, ValueError, "rtol must be a finite real number in (0, 1)"),
    ({"batch_size": 0}, ValueError, "batch_size must be an integer >= 1"),
    ({"decoder": "nope"}, ValueError, "decoder must be one of"),
    ({"field": "GF"}, ValueError, "cannot be rebuilt over another field"),
])
def test_verify_bad_input(kwargs, exc, words):
    with pytest.raises(exc) as info:
        gc.verify(gc.cyclic_repetition(5, 1, seed=0), **kwargs)
    assert words in str(info.value)


def test_verify_rejects_approximate_codes():
    with pytest.raises(TypeError, match="Approximate codes are judged by their error"):
        gc.verify(gc.ApproximateCode(np.eye(3)))

