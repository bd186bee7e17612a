"""gradcodes.testing: the strategies draw what they promise, and the assertions fail with the responder set."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import gradcodes as gc
from gradcodes.testing import (
    assert_recovers,
    assert_unbiased,
    codes,
    partial_gradients,
    responder_sets,
    straggler_sets,
    verifier_flagged,
    windows,
)


def test_import_gradcodes_does_not_import_hypothesis():
    code = "import sys, gradcodes; print('hypothesis' in sys.modules)"
    assert subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          check=True).stdout.strip() == "False"


@settings(max_examples=25, deadline=None)
@given(st.data())
def test_every_registered_exact_code_recovers_from_adversarial_responders(data):
    """The project's own property test over the registry, written with the public helpers."""
    code = data.draw(codes("exact", max_n=25))
    R = data.draw(responder_sets(code.n, code.s))
    dtype = data.draw(st.sampled_from([np.float32, np.float64]))
    G = data.draw(partial_gradients(code, dtype=dtype))
    assert len(R) == code.n - code.s
    if dtype == np.float32 and not code.decodable(R, dtype=np.float32):
        # a float32 decode with too much cancellation for float32 messages refuses; it never returns a wrong sum
        with pytest.raises(gc.DecodingError):
            code.decode(R, code.encode(G)[list(R)])
        return
    assert_recovers(code, R, G)


@settings(max_examples=20, deadline=None)
@given(windows(10, 3))
def test_windows_are_consecutive(S):
    assert len(S) == 3 and any(set(S) == {(t + i) % 10 for i in range(3)} for t in range(10))


def test_straggler_sets_include_the_verifier_flagged_sets():
    code = gc.cyclic_repetition(8, 2, rng=0)
    flagged = verifier_flagged(code)
    assert flagged and all(len(S) == 2 for S in flagged)
    seen = set()

    @settings(max_examples=60, deadline=None, derandomize=True)
    @given(straggler_sets(8, 2, code=code))
    def collect(S):
        seen.add(S)
    collect()
    assert set(flagged) & seen


def test_verifier_flagged_includes_failing_sets():
    # a failing code: verifier_flagged must return its failing straggler sets (it once iterated over the integers
    # of the first failing set and raised TypeError)
    code = gc.GradientCode(np.eye(4), s=1)               # uncoded data claimed to tolerate a straggler
    rep = gc.verify(code, stop_on_failure=False)
    assert rep.failures
    flagged = verifier_flagged(code)
    every = set(range(code.n))
    assert tuple(sorted(every - set(rep.failures[0]))) in flagged


def test_assert_recovers_fails_naming_the_responders():
    code = gc.cyclic_repetition(8, 2, rng=0)
    with pytest.raises(AssertionError, match=r"responders \(0, 1, 2, 3, 4\)"):
        assert_recovers(code, [0, 1, 2, 3, 4])         # three stragglers for a code tolerating two


def test_assert_recovers_fails_on_a_wrong_code():
    bad = gc.GradientCode([[1.0, 0.0], [1.0, 0.0]], s=0)      # partition 1 is stored nowhere
    with pytest.raises(AssertionError, match=r"responders \(0, 1\)"):
        assert_recovers(bad, [0, 1], np.ones((2, 2)))


def test_assert_unbiased():
    p = [0.1, 0.2, 0.5]
    assert_unbiased(gc.heterogeneous(p, k=3), p)
    with pytest.raises(AssertionError, match="biased"):
        assert_unbiased(gc.bernoulli_gc(6, 2, p=0.2), 0.2)   # least-squares BGC is biased (Song & Choi 2025)


def test_assert_recovers_takes_responders_in_any_order():
    """All n responders in a non-sorted order: the messages are the full buffer, never read as compact rows (this
    raised "no decode ... pass rows=" before assert_recovers said which layout it encodes)."""
    code = gc.cyclic_repetition(6, 2, rng=0)
    assert_recovers(code, [5, 3, 1, 0, 2, 4])
    assert_recovers(code, [4, 0, 2, 1])
