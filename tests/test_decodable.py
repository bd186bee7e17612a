"""code.decodable / code.decodability: the decode's own verdict, for every responder set of small codes."""

import itertools
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import gradcodes as gc
from gradcodes import DecodingError

CODES = {
    "uncoded": lambda: gc.uncoded(4),
    "fr": lambda: gc.fractional_repetition(8, 3),
    "fr_rational": lambda: gc.fractional_repetition(6, 2, field="rational"),
    "cyclic": lambda: gc.cyclic_repetition(7, 2, rng=0),
    "cyclic_mds": lambda: gc.cyclic_mds(7, 2),
    "stable_binary": lambda: gc.stable_binary(9, 2),
    "grouped_mds": lambda: gc.grouped_mds(9, 2),
    "grouped_random": lambda: gc.grouped_random(9, 2, rng=0),
    "ye_abbe": lambda: gc.ye_abbe(6, 1, m=2),
    "rational": lambda: gc.GradientCode([[1, -1, 0], [0, 1, Fraction(1, 2)], [2, 0, 1]], s=1),
    "tree": lambda: gc.coded_reduce(2, 2, 1),
    "approximate": lambda: gc.ApproximateCode(np.kron(np.eye(3), np.ones((2, 1))), name="blocks"),
}


def _decode_accepts(code, F, dtype):
    """The reference: decoding_matrix returns (True) or refuses the set (False)."""
    try:
        code.decoding_matrix(F, dtype=dtype)
    except (DecodingError, ValueError):
        return False
    if isinstance(code, gc.GradientCode) or isinstance(code, gc.CodedReduceCode):
        return True
    # approximate codes decode anything: "decodable" means exact recovery
    return code.residual(F) <= 1e-8


@pytest.mark.parametrize("name", sorted(CODES))
def test_decodable_agrees_with_decoding_matrix_on_every_set(name):
    code = CODES[name]()
    dtypes = [np.float64] if code.field.startswith("GF") else [np.float64, np.float32]
    n = code.n
    counts = {True: 0, False: 0}
    for r in range(n + 1):
        for F in itertools.combinations(range(n), r):
            for dt in dtypes:
                want = bool(F) and _decode_accepts(code, list(F), dt)
                assert code.decodable(list(F), dtype=dt) is want, (F, dt)
                counts[want] += 1
    assert counts[True] and counts[False]


@pytest.mark.parametrize("name", sorted(CODES))
def test_tracker_agrees_with_decodable_along_random_orders(name):
    code = CODES[name]()
    rng = np.random.default_rng(1)
    for dt in (np.float64, np.float32):
        t = code.decodability(dtype=dt)
        for _ in range(20):
            t.reset()
            for i, w in enumerate(rng.permutation(code.n)):
                assert t.add(int(w)) is code.decodable(t.responders, dtype=dt)
                assert t.responders[-1] == w and t.mask.sum() == i + 1


def test_fractional_repetition_one_per_group_decodes_fewer_than_n_minus_s():
    code = gc.fractional_repetition(12, 3)                 # 3 groups of 4
    G = np.random.default_rng(0).standard_normal((12, 5)).astype(np.float32)
    Y = code.encode(G)
    F = [1, 6, 11]
    assert code.decodable(F, dtype=np.float32)
    got = code.decode(F, Y[F])
    assert got.dtype == np.float32
    np.testing.assert_allclose(got, G.sum(axis=0), rtol=1e-5)
    with pytest.raises(ValueError, match="at least 9 distinct workers"):
        code.decode([1, 6], Y[[1, 6]])                     # group 2 missing: still the old size error


def test_group_fast_path_is_the_general_rule():
    # the fast path must give what the decoder + acceptance give: compare with the fast path switched off
    code = gc.fractional_repetition(8, 3)
    assert code._group_bounds() is not None
    slow = gc.fractional_repetition(8, 3)
    slow._memo["decodable_groups"] = None
    for r in range(9):
        for F in itertools.combinations(range(8), r):
            for dt in (np.float64, np.float32):
                assert code.decodable(F, dtype=dt) is slow.decodable(F, dtype=dt)


@settings(max_examples=60, deadline=None)
@given(st.integers(2, 5), st.integers(0, 3), st.data())
def test_decodable_is_monotone_for_group_codes(groups, s, data):
    code = gc.fractional_repetition(groups * (s + 1), s)
    F = data.draw(st.sets(st.integers(0, code.n - 1)))
    extra = data.draw(st.sets(st.integers(0, code.n - 1)))
    if code.decodable(sorted(F)):
        assert code.decodable(sorted(F | extra))
    # exactly one per group suffices
    pick = [g * (s + 1) + data.draw(st.integers(0, s)) for g in range(groups)]
    assert code.decodable(pick)


@pytest.mark.parametrize(("args", "exc", "words"), [
    (([0, 0],), ValueError, "duplicated"),
    (([0, 9],), ValueError, "[0, 7]"),
    (([0, 1],), TypeError, "dtype"),
])
def test_decodable_bad_input(args, exc, words):
    code = gc.fractional_repetition(8, 3)
    kwargs = {"dtype": np.int64} if exc is TypeError else {}
    with pytest.raises(exc) as info:
        code.decodable(*args, **kwargs)
    assert words in str(info.value)


def test_tracker_bad_input():
    t = gc.fractional_repetition(8, 3).decodability()
    t.add(3)
    with pytest.raises(ValueError, match="already added"):
        t.add(3)
    with pytest.raises(ValueError, match="worker"):
        t.add(8)


@pytest.mark.parametrize("make", [lambda: gc.cyclic_repetition(8, 2, rng=0), lambda: gc.fractional_repetition(6, 2)])
def test_tracker_follows_a_changed_rtol(make):
    """The tracker's verdicts are kept with the code per dtype *and* rtol: after ``code.rtol`` is tightened below
    what the decode can meet, the same tracker (and a new one) refuse the set, as ``code.decodable`` does, and
    loosening it back restores the verdict (a cache keyed by dtype alone kept answering True)."""
    code = make()
    F = [0, 1, 2, 3, 4, 5] if code.n == 8 else [0, 2, 4]
    tracker = code.decodability()
    assert [tracker.add(w) for w in F][-1] is True
    for rtol, want in ((1e-16, False), (1e-8, True)):
        code.rtol = rtol
        assert code.decodable(F) is want
        tracker.reset()
        assert bool([tracker.add(w) for w in F][-1]) is want
        fresh = code.decodability()
        assert bool([fresh.add(w) for w in F][-1]) is want
