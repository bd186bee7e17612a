"""``limit=`` is the most patterns enumerated, exactly (issue 37): all of them when there are at most ``limit``,
none otherwise (the sampled check: structured sets, ``samples`` random ones and the search). The former rule,
``max(limit, what sampling checks)``, enumerated 1,140 sets of a (20, 3) code at ``limit=0``."""

import math

import pytest

import gradcodes as gc

CODE = gc.cyclic_repetition(20, 3, rng=0)                  # C(20, 3) = 1,140 straggler sets
TOTAL = math.comb(20, 3)


@pytest.mark.parametrize("limit", [0, 1, 10, TOTAL - 1])
def test_a_limit_below_the_count_enumerates_nothing(limit):
    # the sampled check (20 + 2,000 sets) checks more than C(20, 3): the former rule enumerated instead
    rep = gc.verify(CODE, limit=limit, search=False, rng=0)
    assert not rep.exhaustive and rep.verdict == "unproven" and not rep
    assert "exhaustive" not in rep.strategies and "lexicographic prefix" not in rep.strategies
    assert rep.strategies == {"consecutive": 20, "random": 2000}
    assert rep.patterns_checked == 2020
    assert any(f"> limit = {limit:,}" in note for note in rep.notes)


@pytest.mark.parametrize("limit", [TOTAL, TOTAL + 1, 10**9])
def test_a_limit_at_or_above_the_count_enumerates_every_set(limit):
    rep = gc.verify(CODE, limit=limit, samples=50, search=False, rng=0)
    assert rep.exhaustive and rep.verdict == "ok" and rep
    assert rep.patterns_checked == TOTAL and rep.strategies == {"exhaustive": TOTAL}


def test_limit_zero_with_the_default_search_enumerates_nothing():
    rep = gc.verify(CODE, limit=0, rng=0)
    assert not rep.exhaustive and "exhaustive" not in rep.strategies and "random" in rep.strategies


def test_limit_zero_with_no_samples_checks_only_the_structured_sets():
    rep = gc.verify(CODE, limit=0, samples=0, search=False)
    assert rep.patterns_checked == 20 and rep.strategies == {"consecutive": 20}


def test_limit_zero_leaves_a_theorem_its_proof():
    rep = gc.verify(gc.fractional_repetition(6, 1), limit=0, samples=10, rng=0)
    assert rep and not rep.exhaustive and rep.theorem


def test_limit_zero_still_finds_a_failure_the_sampled_check_reaches():
    B = CODE.B.copy()
    B[:, 0] = 0.0                                          # partition 0 stored by nobody: every set fails
    rep = gc.verify(gc.GradientCode(B, s=3), limit=0, samples=10, search=False, rng=0)
    assert rep.verdict == "FAILS" and not rep.exhaustive


def test_the_default_still_enumerates_a_code_smaller_than_the_sampled_check():
    rep = gc.verify(CODE, rng=0)
    assert rep.exhaustive and rep.patterns_checked == TOTAL


def test_tree_limit_is_exact_too():
    code = gc.coded_reduce(3, 2, 1)                        # 256 patterns
    below = gc.verify_tree(code, limit=255, samples=5, search=False, rng=0)
    assert not below.exhaustive and below.patterns_checked < 256
    assert below and "composition" in below.theorem           # proven by composing the inner code's proof
    at = gc.verify_tree(code, limit=256, samples=5, search=False, rng=0)
    assert at.exhaustive and at.patterns_checked == 256 and at


def test_partial_straggler_limit_is_exact_too():
    code = gc.partial_straggler_code(4, 1, 2, field="rational")     # 42 chunk-arrival patterns
    assert not gc.verify(code, limit=41, samples=5, rng=0).exhaustive
    assert gc.verify(code, limit=42, samples=5, rng=0).exhaustive
