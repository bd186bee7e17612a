"""CodedReduce trees proven by composition of their inner code's proof (issue 37; Reisizadeh et al. 2019): the
composed bounds hold on every pattern of small trees (checked against brute-force enumeration of every pattern
with at most s stragglers per parent), the worst-cancellation patterns built from the inner code reach the
enumeration's worst exactly, and the 33,824-worker Ye-Abbe tree gets a verdict in seconds (it raised
SizeLimitError)."""

import time

import numpy as np
import pytest

import gradcodes as gc
from gradcodes._families.coded_reduce_compose import composed_bounds, worst_patterns
from gradcodes._families.coded_reduce_verify import composition_report
from gradcodes._verify.engine import Tracker

SMALL = [(3, 2, 1), (5, 2, 1), (4, 2, 2)]                 # 256, 46,656 and 161,051 patterns: Ye-Abbe inner codes


def _cancellations(code, masks):
    from gradcodes._families.coded_reduce_verify import TreePatterns

    tr = Tracker(TreePatterns(code, 0), 1e-8, np.float64, 1, load=int(code.load) + 2 * code.L)
    return tr.evaluate(masks).canc


@pytest.mark.parametrize("args", SMALL)
def test_composed_bounds_hold_on_every_pattern(args):
    code = gc.coded_reduce(*args)
    brute = gc.verify_tree(code, limit=10**6, stop_on_failure=False)
    assert brute.exhaustive and brute.patterns_checked == code.patterns_total()
    inner = gc.verify(code.inner, stop_on_failure=False)
    b = composed_bounds(code, inner.worst_cancellation, inner.worst_residual_bound, np.float64)
    assert brute.worst_cancellation <= b["canc"] and brute.worst_residual <= b["residual_hi"]
    assert brute.error_bound <= b["bound"]
    comp = composition_report(code, 1e-8, np.dtype(np.float64))
    assert comp.verdict == brute.verdict == "ok" and comp.theorem and "composition" in comp.theorem
    assert comp.error_bound == b["bound"] and not comp.exhaustive and comp.patterns_checked == 0


@pytest.mark.parametrize("args", SMALL)
def test_the_worst_patterns_reach_the_enumerated_worst_cancellation(args):
    code = gc.coded_reduce(*args)
    brute = gc.verify_tree(code, limit=10**6, stop_on_failure=False)
    found = float(_cancellations(code, worst_patterns(code)).max())
    assert found == pytest.approx(brute.worst_cancellation, rel=1e-9)


def test_an_exact_tree_is_exact_by_composition():
    code = gc.coded_reduce(3, 2, 1, field="rational")
    comp = composition_report(code, 1e-8, np.dtype(np.float64))
    assert comp.verdict == "exact" and comp.theorem
    assert gc.verify_tree(code).verdict == "exact"


def test_verify_composes_when_the_patterns_exceed_the_limit():
    code = gc.coded_reduce(5, 2, 1)
    rep = gc.verify(code, limit=0)                           # the former rule: sampled, unproven
    assert rep.verdict == "ok" and rep and rep.theorem and not rep.exhaustive
    big = gc.coded_reduce(7, 3, 2)                          # 29^57 patterns: proven by composition by default
    rep = gc.verify(big)
    assert rep and "composition" in rep.theorem and rep.error_bound <= 1e-8


def test_a_matrix_that_is_not_cr_allocate_gets_no_composed_proof():
    code = gc.coded_reduce(5, 2, 1)
    B = np.array(code.B)
    v = code.N - 1
    B[v, np.flatnonzero(B[v])[0]] *= 1.001
    bad = gc.CodedReduceCode(B, branching=5, L=2, s=1, inner=code.inner, P=code.P, lists=code._lists)
    assert composition_report(bad, 1e-8, np.dtype(np.float64)) is None
    assert not gc.verify(bad, limit=0, samples=20, rng=0)


def test_the_33824_worker_ye_abbe_tree_gets_a_verdict_in_seconds():
    """Issue 37: gc.verify(gc.coded_reduce(32, 3, 4)) raised SizeLimitError. The composed bound (cancellation <=
    180^3) exceeds rtol, and the patterns that align every parent's worst set fail the acceptance rule on every
    machine: the tree is inaccurate at rtol = 1e-8, with a counterexample."""
    code = gc.coded_reduce(32, 3, 4)
    start = time.perf_counter()
    rep = gc.verify(code)
    seconds = time.perf_counter() - start
    assert rep.verdict == "inaccurate" and not rep and rep.n_failures > 0
    assert rep.worst_cancellation > 1e6 and rep.error_estimate > 1e-8
    assert any("composed bounds" in note for note in rep.notes)
    assert "~5.156e4880" in str(rep)
    assert seconds < 60                                       # under 10 s on an idle machine (CHANGELOG)


def test_a_dense_tree_with_a_group_decoded_inner_code_is_proven_by_composition():
    code = gc.coded_reduce(6, 3, 2)                          # fractional repetition inner code, 29^43 patterns
    rep = gc.verify(code)
    assert rep and "composition" in rep.theorem and rep.worst_cancellation == pytest.approx(1.0, rel=1e-5)


def test_tour_row_says_theorem_for_a_composition_proof():
    """The tour showed the (12, 2, 5) tree as "0 tree patterns, exhaustive no, ok": a proof by the composition
    theorem reads "theorem" in the exhaustive column, as for the flat codes proven by a theorem."""
    rep = gc.verify(gc.coded_reduce(12, 2, 5))
    assert rep and not rep.exhaustive and rep.theorem.startswith("CodedReduce composition")
    assert rep.tour_row()["exhaustive"] == "theorem"
    assert gc.verify(gc.coded_reduce(3, 2, 1)).tour_row()["exhaustive"] == "yes"
