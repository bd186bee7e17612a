"""Computation-load lower bounds."""

from fractions import Fraction as Fr

import pytest
from hypothesis import given
from hypothesis import strategies as st

import gradcodes as gc
from gradcodes._verify.bounds import meets_min_load, min_replication


@pytest.mark.parametrize(("args", "expected"), [
    ((10, 2), Fr(3)), ((10, 0), Fr(1)), ((10, 9), Fr(10)), ((10, 2, 3), Fr(5)), ((10, 2, 3, 4), Fr(2)),
    ((7, 2, 1, 3), Fr(9, 7)), ((1, 0), Fr(1)), ((5, 0, 5), Fr(5)),
])
def test_min_load_values(args, expected):
    assert gc.min_load(*args) == expected
    assert isinstance(gc.min_load(*args), Fr)


@given(st.integers(1, 60), st.data())
def test_repetition_codes_meet_the_bound(n, data):
    s = data.draw(st.integers(0, n - 1))
    code = gc.cyclic_repetition(n, s, rng=0)
    assert code.load == gc.min_load(n, s) == s + 1
    assert meets_min_load(code.load, n, s)
    assert min(code.replication) >= min_replication(n, s)


def test_below_bound_impossible():
    """A partition stored by only s workers fails when exactly those workers straggle."""
    B = gc.cyclic_repetition(6, 2, rng=0).B.copy()
    B[:, 0] = 0.0
    B[[0, 1], 0] = 1.0                               # partition 0 on workers 0 and 1 only, s = 2
    report = gc.verify(gc.GradientCode(B, s=2))
    assert not report.exact
    assert report.failures[0] == (2, 3, 4, 5)        # stragglers {0, 1}: the first set in lexicographic order


@pytest.mark.parametrize(("args", "exc", "words"), [
    ((0, 0), ValueError, "n must be an integer >= 1"),
    ((5, 5), ValueError, "s must be an integer in [0, 4]"),
    # s + m <= n: the range names m, the extra one (it blamed s: "s must be an integer in [0, 2], got 3")
    ((5, 3, 3), ValueError, "m must be an integer in [1, 2]"),
    ((10, 2, 9), ValueError, "m must be an integer in [1, 8], got 9"),
    ((5, 1, 0), ValueError, "m must be an integer in [1, 4]"),
    ((5, 1, 1, 0), ValueError, "k must be an integer >= 1"),
    ((5.5, 1), TypeError, "n must be an integer"),
])
def test_min_load_bad_input(args, exc, words):
    with pytest.raises(exc) as info:
        gc.min_load(*args)
    assert words in str(info.value)


def test_a_report_never_says_a_load_below_the_bound_meets_it():
    """``verify(GradientCode(np.eye(3), s=1))`` printed "load 1 (lower bound 2; meets the bound)"."""
    import numpy as np

    bad = str(gc.verify(gc.GradientCode(np.eye(3), s=1)))
    assert "lower bound 2; below the bound" in bad and "meets" not in bad
    good = str(gc.verify(gc.fractional_repetition(6, 2)))
    assert "lower bound 3; meets the bound" in good
