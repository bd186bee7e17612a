"""The heterogeneity-aware code robust to misestimated speeds: exact worst case against enumeration, proofs."""

import itertools
import math
from fractions import Fraction as Fr

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import gradcodes as gc
from gradcodes._families.heterogeneous_robust import _worst


def _brute_worst(t, s, tol, e, rho):
    """Enumerate every straggler set S (|S| = s) and slowed set E (|E| = e): the (n - tol)-th smallest time."""
    n = len(t)
    worst = Fr(0)
    for S in itertools.combinations(range(n), s):
        rest = [i for i in range(n) if i not in S]
        for E in itertools.combinations(rest, min(e, len(rest))):
            times = sorted(rho * t[i] if i in E else t[i] for i in rest)
            worst = max(worst, times[n - tol - 1])
    return worst


# ------------------------------------------------------------------------------------------------------------
# the worked example: six workers (speeds 1, 1, 2, 2, 4, 4), k = 14, s = 1, one worker up to 2x slower.
# Non-robust loads 2, 2, 4, 4, 8, 8 (every worker needs 2): the adversary slows a worker the master needs, 4.
# Extra tolerance 1: loads 3, 3, 6, 6, 12, 12 (time 3); one straggler and one slowed worker are both skipped: 3.
# ------------------------------------------------------------------------------------------------------------


def test_worked_example():
    speeds = [1, 1, 2, 2, 4, 4]
    assert gc.worst_time_heterogeneous(speeds, 1, 14, misestimated=1, slowdown=2, extra=0) == 4
    assert gc.worst_time_heterogeneous(speeds, 1, 14, misestimated=1, slowdown=2, extra=1) == 3
    code = gc.robust_heterogeneous_exact(speeds, 1, 14, misestimated=1, slowdown=2, field="rational")
    assert (code.extra, code.s, code.worst_time, code.time) == (1, 2, 3, 3)
    assert code.loads.tolist() == [3, 3, 6, 6, 12, 12]
    assert code.B.tolist() == gc.heterogeneous_exact(speeds, 2, 14, field="rational").B.tolist()
    report = gc.verify(code)
    assert report.verdict == "exact" and report.exhaustive and report.patterns_checked == math.comb(6, 2)
    # a slowdown of 5/4 costs less than the extra load: the non-robust code is kept
    assert gc.robust_heterogeneous_exact(speeds, 1, 14, misestimated=1, slowdown=Fr(5, 4)).extra == 0


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(1, 6), min_size=2, max_size=7), st.data())
def test_worst_time_matches_enumeration(speeds, data):
    n = len(speeds)
    s = data.draw(st.integers(0, n - 1))
    tol = data.draw(st.integers(s, n - 1))
    e = data.draw(st.integers(0, n))
    rho = Fr(data.draw(st.integers(2, 12)), 2)
    k = data.draw(st.integers(1, 8))
    c = [Fr(v) for v in speeds]
    L = gc.heterogeneous_loads(c, tol, k).tolist()
    t = [Fr(li) / ci for li, ci in zip(L, c, strict=True)]
    assert _worst(t, s, tol, e, rho) == _brute_worst(t, s, tol, e, rho)


@settings(max_examples=30, deadline=None)
@given(st.lists(st.integers(1, 5), min_size=2, max_size=8), st.data())
def test_the_choice_is_the_best_extra_and_accurate_speeds_change_nothing(speeds, data):
    n = len(speeds)
    s = data.draw(st.integers(0, n - 1))
    e = data.draw(st.integers(0, n))
    rho = Fr(data.draw(st.integers(2, 8)), 2)
    code = gc.robust_heterogeneous_exact(speeds, s, misestimated=e, slowdown=rho)
    worst = [gc.worst_time_heterogeneous(speeds, s, misestimated=e, slowdown=rho, extra=x)
             for x in range(min(e, n - 1 - s) + 1)]
    assert code.worst_time == min(worst) and code.extra == worst.index(min(worst))
    assert code.s == s + code.extra and code.stragglers == s
    plain = gc.heterogeneous_exact(speeds, s)
    for same in (gc.robust_heterogeneous_exact(speeds, s, misestimated=0, slowdown=rho),
                 gc.robust_heterogeneous_exact(speeds, s, misestimated=e, slowdown=1)):
        assert same.extra == 0 and np.array_equal(same.B, plain.B)
        assert same.worst_time == plain.time            # no misestimation: the time of the non-robust code


@pytest.mark.parametrize("n", [4, 7, 10, 13])
def test_verify_proves_it(n):
    speeds = [1 + i % 4 for i in range(n)]
    for s in range(0, n - 1, 2):
        code = gc.robust_heterogeneous_exact(speeds, s, misestimated=2, slowdown=3)
        report = gc.verify(code, limit=10**5, time_budget=60)
        assert report.exhaustive and report.verdict in ("ok", "exact"), (n, s, code.extra)


def test_verify_over_gf_p():
    code = gc.robust_heterogeneous_exact([1, 2, 3, 1, 2, 3, 4], 1, 9, misestimated=2, slowdown="5/2")
    assert code.extra > 0 and gc.verify(code, field="GF").verdict == "exact"


def test_save_load_registry(tmp_path):
    code = gc.robust_heterogeneous_exact([1, 2, 3, 1, 2, 3, 4], 1, 9, misestimated=2, slowdown="5/2")
    gc.save_code(code, tmp_path / "c.npz")
    back = gc.load_code(tmp_path / "c.npz")
    assert back == code and back.extra == code.extra and back.worst_time == code.worst_time
    assert back.params["slowdown"] == "5/2"
    sch = gc.schemes()["robust_heterogeneous_exact"]
    for row in sch.tour:
        assert sch.build(**row).family == "robust_heterogeneous_exact"


@pytest.mark.parametrize(("kwargs", "exc", "word"), [
    ({"misestimated": -1}, ValueError, "misestimated"),
    ({"misestimated": 5}, ValueError, "misestimated"),
    ({"misestimated": 1.5}, TypeError, "misestimated"),
    ({"slowdown": Fr(1, 2)}, ValueError, "slowdown"),
    ({"slowdown": float("inf")}, ValueError, "slowdown"),
    ({"slowdown": float("nan")}, ValueError, "slowdown"),
    ({"slowdown": "x"}, ValueError, "slowdown"),
    ({"slowdown": [2]}, TypeError, "slowdown"),
    ({"slowdown": True}, TypeError, "slowdown"),
    ({"field": "complex"}, ValueError, "field"),
])
def test_bad_input(kwargs, exc, word):
    with pytest.raises(exc, match=word) as info:
        gc.robust_heterogeneous_exact([1, 2, 3, 4], 1, **kwargs)
    assert isinstance(info.value, gc.GradcodesError)


def test_bad_extra():
    with pytest.raises(gc.GradcodesValueError, match="extra"):
        gc.worst_time_heterogeneous([1, 2, 3, 4], 1, extra=3)
