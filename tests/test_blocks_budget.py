"""Block codes honour the verifier's budget (issue 37): the distinct blocks share one budget (``limit``, the
default count of the cost model or ``time_budget``) and one progress clock, and each is enumerated when it fits
what is left, so ``gc.verify(gc.recommend(...))`` proves what ``recommend`` certified."""

import math

import numpy as np
import scipy.linalg

import gradcodes as gc
from gradcodes._verify import cost, engine


def _two_blocks(n, s):
    """Two distinct (n, s) cyclic-repetition blocks side by side, decoded (and proven) block by block."""
    B = scipy.linalg.block_diag(gc.cyclic_repetition(n, s, rng=0).B, gc.cyclic_repetition(n, s, rng=1).B)
    return gc.by_blocks(gc.GradientCode(B, s=s))


def _enumerated(rep):
    return [row["report"].exhaustive for row in rep.blocks if row["report"] is not None and row["same_as"] is None]


def test_verify_proves_what_recommend_certified():
    """The issue's case: recommend certified grouped_random (44, 14) at load 16; verify checked 2,530 of its
    block's 319,770 sets and said UNPROVEN, with or without time_budget=60."""
    code = gc.recommend(44, 14, max_load=16)
    assert code.family == "grouped_random" and "proven" in str(code.recommendation).splitlines()[0]
    for kw in ({}, {"time_budget": 60}):
        rep = gc.verify(code, **kw)
        assert rep.verdict == "ok" and rep, kw
        assert rep.patterns_checked == math.comb(22, 14) and _enumerated(rep) == [True]


def test_verify_proves_a_smaller_recommended_block_code():
    code = gc.recommend(30, 10, max_load=12)
    rep = gc.verify(code)
    assert rep and all(_enumerated(rep)) and rep.patterns_checked == sum(
        math.comb(len(row["workers"]), 10) for row in rep.blocks if row["same_as"] is None and row["report"])


def test_limit_counts_the_distinct_blocks_together():
    code = _two_blocks(12, 4)                              # two distinct blocks of C(12, 4) = 495 sets
    full = gc.verify(code, limit=990, rng=0)
    assert full and _enumerated(full) == [True, True] and full.patterns_checked == 990
    half = gc.verify(code, limit=989, rng=0)                # the first block fits, the second does not
    assert _enumerated(half) == [True, False] and half.verdict == "unproven" and half.n_failures == 0
    assert any("block 1 (12 workers): its 495 sets exceed what is left of limit = 989" in n for n in half.notes)
    assert any("pass limit=990" in n for n in half.notes)
    none = gc.verify(code, limit=0, rng=0)
    assert _enumerated(none) == [False, False] and not none


def test_the_default_budget_is_shared_by_the_blocks(monkeypatch):
    code = _two_blocks(18, 5)                  # 2 x C(18, 5) = 2 x 8,568 sets, predicted about 0.022 s each
    both = gc.verify(code, rng=0)
    assert both and _enumerated(both) == [True, True]
    monkeypatch.setattr(cost, "DEFAULT_SECONDS", 0.03)      # room for one block's predicted time, not two
    one = gc.verify(code, rng=0, samples=100)
    assert _enumerated(one) == [True, False] and one.verdict == "unproven" and not one and one.n_failures == 0
    assert any("default budget" in n and "block 1" in n for n in one.notes)


def test_a_time_budget_too_small_is_unproven_not_wrong():
    code = gc.recommend(44, 14, max_load=16)
    rep = gc.verify(code, time_budget=0, samples=50, rng=0)
    assert rep.verdict == "unproven" and not rep and rep.n_failures == 0 and _enumerated(rep) == [False]
    assert any("searched, not enumerated" in n for n in rep.notes)


def test_one_progress_clock_counts_every_enumerated_block(monkeypatch):
    made = []

    class Spy(engine.Clock):
        def __init__(self, *a, **kw):
            super().__init__(*a, **kw)
            made.append(self)

    monkeypatch.setattr(engine, "Clock", Spy)
    rep = gc.verify(_two_blocks(12, 4), limit=990, progress=False)
    assert rep
    shared = [c for c in made if c.desc.endswith("(blocks)")]
    assert len(shared) == 1 and shared[0].total == 990 and shared[0].done == 990
    children = [c for c in made if c.parent is shared[0]]
    assert len(children) == 2 and sum(c.done for c in children) == 990


def test_the_rate_leaves_out_the_first_piece():
    """A first piece that pays a one-off set-up must not predict hours for a check of a second: the cause of
    time_budget=60 giving up on 319,770 sets after 0.05 s."""
    clock = engine.Clock(1_000_000, False, "t")
    clock.start -= 1.0                                     # the first piece took a second (set-up)
    clock.update(4)
    clock._first = (clock._first[0] - 0.01, 4)              # then 100,000 sets in 10 ms
    clock.update(100_000)
    assert clock.rate() > 1e6 and not clock.over_budget(60.0)
    assert np.isfinite(clock.predicted())
