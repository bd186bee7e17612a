"""cyclic_repetition(..., refine=k): rows equal to the exact construction, rounded; Dot2 against a rational oracle."""

from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import gradcodes as gc
from gradcodes._families._refine import dot2, exact_last_column
from gradcodes._families.grouped_random import REBUILDERS, _block_code


def _ulps(approx: np.ndarray, exact: np.ndarray) -> float:
    return float((np.abs(approx - exact) / np.spacing(np.abs(exact))).max())


@pytest.mark.parametrize(("n", "s", "seed"), [(9, 4, 0), (14, 7, 1), (16, 9, 2), (20, 12, 5)])
def test_refined_rows_are_the_exact_rows_rounded(n, s, seed):
    # oracle: the same draw of H built in rational arithmetic (last column -row sum exactly), then rounded once
    exact = gc.cyclic_repetition(n, s, rng=seed, field="rational").B.astype(float)
    refined = gc.cyclic_repetition(n, s, rng=seed, refine=2).B
    assert _ulps(refined, exact) <= 1.0
    # the plain float64 construction is farther off (this is what the refinement fixes)
    plain = gc.cyclic_repetition(n, s, rng=seed, refine=0).B
    assert _ulps(plain, exact) > _ulps(refined, exact)
    assert np.array_equal(refined != 0, plain != 0)              # same support, same draw


def test_refine_two_is_the_default_and_is_recorded():
    a = gc.cyclic_repetition(12, 4, rng=3)
    b = gc.cyclic_repetition(12, 4, rng=3, refine=2)
    assert np.array_equal(a.B, b.B) and a.params["refine"] == 2
    # refine=0 (the construction of earlier releases) is recorded too, so a file says how its B was built
    assert gc.cyclic_repetition(12, 4, rng=3, refine=0).params["refine"] == 0
    assert gc.cyclic_repetition(3, 1, H=[[1, 1, -2]], field="rational").params["refine"] == 0


def test_refined_code_decodes_and_verifies():
    code = gc.cyclic_repetition(12, 4, rng=1, refine=2)
    assert code.params["refine"] == 2
    rep = gc.verify(code)
    assert rep.verdict == "ok"
    G = np.random.default_rng(0).normal(size=(12, 5))
    F = [0, 2, 3, 5, 6, 8, 10, 11]
    np.testing.assert_allclose(code.decode(F, code.encode(G)[F]), G.sum(axis=0), rtol=1e-11)


def test_refined_worst_residual_is_smaller_on_a_large_group():
    # the (33, 26) group of grouped_random(100, 25): over 20,000 random sets of 8 responders the refined rows give a
    # smaller worst residual than the plain float64 rows (same H, same decoder, same sets)
    from gradcodes._verify.verifier import _Tracker, random_straggler_sets

    S = random_straggler_sets(33, 25, 20_000, np.random.default_rng(7))
    worst = []
    for refine in (0, 2):
        sub = _block_code(33, 25, 1, 0, refine)
        tr = _Tracker(sub, sub._decoder(None), sub.rtol)
        tr.add(S)
        worst.append(tr.worst_res)
    assert worst[1] < worst[0]


def test_refine_with_a_given_H_solves_that_H():
    # a given float H is taken exactly as it is (its row sums are zero only to rounding): oracle = sympy's exact
    # solves of H_J x = -h_i on the same binary fractions
    import sympy

    H = np.random.default_rng(4).normal(size=(3, 7))
    H[:, -1] -= H.sum(axis=1)
    code = gc.cyclic_repetition(7, 3, H=H, refine=1)
    HQ = sympy.Matrix([[sympy.Rational(Fraction(float(x)).numerator, Fraction(float(x)).denominator) for x in r]
                       for r in H])
    exact = np.zeros((7, 7))
    for i in range(7):
        J = [(i + t) % 7 for t in range(1, 4)]
        x = -HQ[:, J].LUsolve(HQ[:, i])
        exact[i, i] = 1.0
        exact[i, J] = [float(v) for v in x]
    assert _ulps(code.B, exact) <= 1.0


def test_refine_bad_input():
    with pytest.raises(ValueError, match="refine"):
        gc.cyclic_repetition(10, 3, rng=0, refine=-1)
    with pytest.raises(ValueError, match="refine"):
        gc.cyclic_repetition(10, 3, rng=0, refine=11)
    with pytest.raises(ValueError, match="refine"):
        gc.cyclic_repetition(10, 3, rng=0, refine=1, field="rational")
    with pytest.raises(ValueError, match="refine"):
        gc.grouped_random(10, 2, refine=-1)
    # entries so large that the exact splitting of products overflows: a clear error, not NaN rows
    with pytest.raises(ValueError, match="refine"):
        gc.cyclic_repetition(3, 1, H=[[1e301, 1e301, -2e301]], refine=1)
    assert np.isfinite(gc.cyclic_repetition(3, 1, H=[[1e301, 1e301, -2e301]], refine=0).B).all()


def test_exact_last_column():
    Hf = np.random.default_rng(0).normal(size=(4, 9)) * np.array([1e8, 1, 1e-8, 1])[:, None]
    hi, lo = exact_last_column(Hf)
    for row, h, low in zip(Hf, hi, lo, strict=True):
        total = -sum((Fraction(float(x)) for x in row), Fraction(0))
        assert h == float(total)                                    # correctly rounded
        assert abs(Fraction(float(h)) + Fraction(float(low)) - total) <= abs(total) * Fraction(2) ** -104


finite = st.floats(min_value=-1e6, max_value=1e6, allow_nan=False, allow_infinity=False, allow_subnormal=False)


@settings(max_examples=200, deadline=None)
@given(hnp.arrays(np.float64, st.integers(1, 30), elements=finite), st.data())
def test_dot2_is_as_accurate_as_twice_the_precision(a, data):
    b = data.draw(hnp.arrays(np.float64, a.shape, elements=finite))
    got = float(dot2(a[None, :], b[None, :])[0])
    exact = sum((Fraction(float(x)) * Fraction(float(y)) for x, y in zip(a, b, strict=True)), Fraction(0))
    u = Fraction(2) ** -53
    n = a.size
    gamma = n * u / (1 - n * u)
    bound = u * abs(exact) + gamma**2 * sum((abs(Fraction(float(x)) * Fraction(float(y))) for x, y in zip(a, b,
                                                                                                       strict=True)),
                                            Fraction(0))
    # Ogita, Rump & Oishi (2005), Proposition 5.5; plus the products' underflow, excluded by the element range
    assert abs(Fraction(got) - exact) <= bound + Fraction(2) ** -1000


def test_old_files_rebuild_without_refinement():
    code = gc.grouped_random(13, 4, candidates=1, refine=0)
    params = {k: v for k, v in code.params.items() if k != "refine"}  # what an earlier version wrote
    again = REBUILDERS["grouped_random"](**params)
    assert np.array_equal(again.B, code.B) and again.params["refine"] == 0
    assert not np.array_equal(again.B, gc.grouped_random(13, 4, block_seeds={7: 0, 6: None}).B)   # default: 2


def test_refinement_in_chunks_is_the_same(monkeypatch):
    # rows are refined in bounded-memory chunks; chunks of a few rows give bitwise the same matrix
    import gradcodes._families._refine as refine_mod

    whole = gc.cyclic_repetition(60, 20, rng=2, refine=2).B
    monkeypatch.setattr(refine_mod, "_CHUNK_ENTRIES", 7 * 20 * 21)
    assert np.array_equal(gc.cyclic_repetition(60, 20, rng=2, refine=2).B, whole)
