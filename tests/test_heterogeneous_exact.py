"""Heterogeneity-aware exact codes (Wang, Guo, Tang, Li & Li 2019): worked example, proofs, bound, bad input."""

import itertools
import math
from fractions import Fraction as Fr

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import gradcodes as gc
from gradcodes._families.heterogeneous_exact import LagrangeDecoder


def spread(n, width=4):
    return [1 + i % width for i in range(n)]


# ------------------------------------------------------------------------------------------------------------
# the worked example (n = 4 workers, two twice as fast, k = 6 partitions, s = 1), every value by hand:
# loads 2, 2, 4, 4 (time 2 = (s+1) k / sum c = 12 / 6); the sequence 0..5 0..5 split into runs 2, 2, 4, 4 gives
# worker 0 {0, 1}, worker 1 {2, 3}, worker 2 {4, 5, 0, 1}, worker 3 {2, 3, 4, 5}; nodes x = 20n + i = 80, ..., 83;
# partition 0 on workers {0, 2}: B_00 = x_2/(x_2 - x_0) = 82/2 = 41, B_20 = x_0/(x_0 - x_2) = 80/(-2) = -40, ...
# ------------------------------------------------------------------------------------------------------------

EXAMPLE_B = [[41, 41, 0, 0, 0, 0],
             [0, 0, Fr(83, 2), Fr(83, 2), 0, 0],
             [-40, -40, 0, 0, 83, 83],
             [0, 0, Fr(-81, 2), Fr(-81, 2), -82, -82]]
# straggler {1}: a_i = 1 - x_i/x_1 = 1 - x_i/81
EXAMPLE_DECODE = {(0, 2, 3): [Fr(1, 81), 0, Fr(-1, 81), Fr(-2, 81)],
                  (1, 2, 3): [0, Fr(-1, 80), Fr(-1, 40), Fr(-3, 80)],    # straggler {0}: 1 - x_i/80
                  (0, 1, 3): [Fr(1, 41), Fr(1, 82), 0, Fr(-1, 82)]}      # straggler {2}: 1 - x_i/82


def test_worked_example_exact():
    code = gc.heterogeneous_exact([1, 1, 2, 2], 1, 6, field="rational")
    assert code.B.tolist() == [[Fr(v) for v in row] for row in EXAMPLE_B]
    assert code.loads.tolist() == [2, 2, 4, 4]
    assert code.time == Fr(2) == gc.min_time_heterogeneous([1, 1, 2, 2], 1, 6)
    assert [sorted(x.tolist()) for x in code.supports] == [[0, 1], [2, 3], [0, 1, 4, 5], [2, 3, 4, 5]]
    for F, expected in EXAMPLE_DECODE.items():
        assert code.decoding_matrix(F)[0].tolist() == [Fr(v) for v in expected]
    report = gc.verify(code)
    assert report.verdict == "exact" and report.exhaustive and report.patterns_checked == 4


def test_worked_example_float_is_the_exact_code_rounded():
    exact = gc.heterogeneous_exact([1, 1, 2, 2], 1, 6, field="rational")
    code = gc.heterogeneous_exact([1, 1, 2, 2], 1, 6)
    assert code.B.dtype == np.float64
    assert code.B.tolist() == [[float(v) for v in row] for row in exact.B]      # one correct rounding each
    G = np.random.default_rng(0).normal(size=(6, 7))
    np.testing.assert_allclose(code.decode([0, 2, 3], code.encode(G)), G.sum(axis=0), rtol=1e-14, atol=1e-14)


# ------------------------------------------------------------------------------------------------------------
# proofs: every n <= 20 and every admissible s, exhaustively (about 12 s in all on one core)
# ------------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("n", range(1, 21))
def test_verify_proves_every_s_exhaustively(n):
    for s in range(n):
        code = gc.heterogeneous_exact(spread(n), s)
        report = gc.verify(code, limit=10**6, time_budget=600)
        assert report.exhaustive and report.verdict in ("ok", "exact"), (n, s, report.verdict)
        assert report.patterns_checked == math.comb(n, s) if s else report.patterns_checked >= 1


@pytest.mark.parametrize(("speeds", "s", "k"), [([1, 2, 3, 5, 8], 2, 7), ([3, 1, 1, 1, 1, 2, 9], 3, None),
                                                ([Fr(1, 3), Fr(1, 2), 1, 1, 2, 2], 4, 5)])
def test_verify_proves_rational_codes_exactly(speeds, s, k):
    code = gc.heterogeneous_exact(speeds, s, k, field="rational")
    report = gc.verify(code)
    assert report.verdict == "exact" and report.exhaustive


@pytest.mark.parametrize("s", [1, 2, 3])
def test_decodes_within_1e10_in_float64_at_n100(s):
    n = 100
    code = gc.heterogeneous_exact(spread(n), s)
    if s <= 2:                                                        # C(100, 2) = 4,950 sets: a proof
        report = gc.verify(code, limit=10**6, time_budget=600)
        assert report.exhaustive and report.verdict == "ok"
        assert report.error_estimate <= 1e-10
    rng = np.random.default_rng(s)
    G = rng.normal(size=(n, 64))
    Y = code.encode(G)
    truth = np.array([math.fsum(col) for col in G.T])
    for _ in range(20):
        S = rng.choice(n, s, replace=False)
        F = np.setdiff1d(np.arange(n), S)
        err = np.abs(code.decode(F, Y) - truth).max() / np.abs(G).sum(axis=0).max()
        assert err <= 1e-10


# ------------------------------------------------------------------------------------------------------------
# properties in exact arithmetic
# ------------------------------------------------------------------------------------------------------------

speeds_st = st.lists(st.fractions(min_value=Fr(1, 6), max_value=8, max_denominator=6), min_size=1, max_size=7)


@settings(max_examples=60, deadline=None)
@given(speeds=speeds_st, data=st.data())
def test_exact_recovery_loads_and_bound(speeds, data):
    n = len(speeds)
    s = data.draw(st.integers(0, n - 1))
    k = data.draw(st.integers(1, 9))
    code = gc.heterogeneous_exact(speeds, s, k, field="rational")
    L = code.loads
    assert int(L.sum()) == (s + 1) * k and int(L.max()) <= k
    assert np.all(code.replication == s + 1)                              # s + 1 distinct holders per partition
    time = max(Fr(int(li)) / c for li, c in zip(L, speeds, strict=True))
    assert time == code.time == gc.min_time_heterogeneous(speeds, s, k)   # meets its bound exactly
    assert gc.min_time_heterogeneous(speeds, s, k, integral=False) <= time
    S = data.draw(st.lists(st.integers(0, n - 1), max_size=s, unique=True))
    F = [i for i in range(n) if i not in S]
    a = code.decoding_matrix(F)[0]
    assert all(a[i] == 0 for i in S)
    assert (a @ code.B).tolist() == [Fr(1)] * k                            # a B = 1 exactly


def _brute_force_time(speeds, s, k):
    best = None
    for L in itertools.product(range(k + 1), repeat=len(speeds)):
        if sum(L) >= (s + 1) * k:
            t = max(Fr(li) / c for li, c in zip(L, speeds, strict=True))
            best = t if best is None else min(best, t)
    return best


@pytest.mark.parametrize(("speeds", "s", "k"), [([1, 2, 4], 1, 5), ([1, 1, 1, 4], 1, 3), ([Fr(3, 2), 1, 5], 0, 4),
                                                ([2, 3, 5, 7], 2, 3), ([1, 1, 1, 1], 3, 2), ([7, 1, 2], 1, 4)])
def test_integral_bound_is_the_brute_force_optimum(speeds, s, k):
    assert gc.min_time_heterogeneous(speeds, s, k) == _brute_force_time(speeds, s, k)


def test_fractional_bound():
    c = [1, 2, 3]
    assert gc.min_time_heterogeneous(c, 1, 6, integral=False) == Fr(2 * 6, 6)          # uncapped: (s+1)k/sum c
    assert gc.min_time_heterogeneous([1, 1, 1, 4], 1, 3, integral=False) == 1           # the fast worker capped
    assert gc.min_time_heterogeneous([1, 2, 4], 1, 5, integral=False) == Fr(5, 3)


def test_equal_speeds_give_cyclic_repetition_supports():
    n, s = 9, 3
    code = gc.heterogeneous_exact([1] * n, s)
    assert code.load == s + 1 and code.time == s + 1
    for i, supp in enumerate(code.supports):
        assert sorted(supp.tolist()) == sorted(((i * (s + 1) + np.arange(s + 1)) % n).tolist())


def test_decoder_is_the_product_formula_and_deterministic():
    code = gc.heterogeneous_exact(spread(12), 4)
    x = [20 * 12 + i for i in range(12)]                                 # nodes 20n + i (weights <= 2^100)
    patterns = [(1, 5, 6, 11), (), (3,), (0, 11), (2, 3, 4, 7)]          # sizes differ within one batch
    mask = np.ones((len(patterns), 12), dtype=bool)
    for r, S in enumerate(patterns):
        mask[r, list(S)] = False
    A = LagrangeDecoder(code.nodes).matrices(code, mask)[:, 0]
    for r, S in enumerate(patterns):
        expected = []
        for i in range(12):
            v = 1.0
            for lo in S:                                   # the documented order: stragglers ascending
                v *= float(x[lo] - x[i]) / float(x[lo])
            expected.append(0.0 if i in S else v)
        np.testing.assert_array_equal(A[r], expected)     # bit for bit
        exact = [0 if i in S else np.prod([Fr(x[lo] - x[i], x[lo]) for lo in S]) for i in range(12)]
        np.testing.assert_allclose(A[r], [float(v) for v in exact], rtol=4 * np.finfo(float).eps, atol=0)
        assert np.abs(A[r]).max() <= 1


def test_mutation_breaks_the_proof():
    code = gc.heterogeneous_exact(spread(8), 2, field="rational")
    B = code.B.copy()
    i, j = np.argwhere(B != 0)[3]
    B[i, j] += Fr(1, 1000)
    mutant = gc.GradientCode(B, 2, field="rational", decoders=[LagrangeDecoder(code.nodes, exact=True)],
                             default_decoder="lagrange")
    assert gc.verify(mutant).verdict == "FAILS"


def test_save_load_restores_the_family_decoder(tmp_path):
    code = gc.heterogeneous_exact([1, Fr(5, 2), 3, 0.75, 2], 2, 8)
    path = tmp_path / "het.npz"
    gc.save_code(code, path)
    back = gc.load_code(path)
    assert back == code and back.default_decoder == "lagrange" and back.time == code.time
    assert back.params["speeds"] == ["1", "5/2", "3", "3/4", "2"]


def test_registry_builder():
    sch = gc.schemes()["heterogeneous_exact"]
    for row in sch.tour:
        code = sch.build(**row)
        assert code.family == "heterogeneous_exact"
    assert sch.build(n=8, s=1, spread=2).speeds == [Fr(v) for v in spread(8, 2)]


# ------------------------------------------------------------------------------------------------------------
# bad input
# ------------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(("args", "kwargs", "exc", "word"), [
    (([], 0), {}, ValueError, "speeds"),
    (([1, 0, 2], 1), {}, ValueError, r"speeds\[1\]"),
    (([1, -2], 1), {}, ValueError, r"speeds\[1\]"),
    (([1, float("nan")], 1), {}, ValueError, r"speeds\[1\]"),
    (([1, float("inf")], 1), {}, ValueError, r"speeds\[1\]"),
    (([1, True], 1), {}, TypeError, r"speeds\[1\]"),
    (([1, 2j], 1), {}, TypeError, r"speeds\[1\]"),
    ((["1", "x"], 1), {}, ValueError, r"speeds\[1\]"),
    ((5, 1), {}, TypeError, "speeds"),
    ((np.ones((2, 2)), 1), {}, ValueError, "speeds"),
    (([1, 2, 3], 3), {}, ValueError, "s"),
    (([1, 2, 3], -1), {}, ValueError, "s"),
    (([1, 2, 3], 1.5), {}, TypeError, "s"),
    (([1, 2, 3], 1, 0), {}, ValueError, "k"),
    (([1, 2, 3], 1), {"field": "complex"}, ValueError, "field"),
])
def test_bad_input(args, kwargs, exc, word):
    with pytest.raises(exc, match=word) as info:
        gc.heterogeneous_exact(*args, **kwargs)
    assert isinstance(info.value, gc.GradcodesError)


def test_bad_input_of_the_bound():
    with pytest.raises(gc.GradcodesTypeError, match="integral"):
        gc.min_time_heterogeneous([1, 2], 1, integral="yes")
    with pytest.raises(gc.GradcodesValueError, match="s"):
        gc.heterogeneous_loads([1, 2], 2)


def test_huge_sizes_are_refused_before_work():
    with pytest.raises(gc.SizeLimitError):
        gc.heterogeneous_exact([1, 2, 3], 1, 10**12)


@pytest.mark.parametrize(("speeds", "s", "k"), [([1, 2, 3, 1, 2, 3, 5], 3, 9), (spread(12), 5, None),
                                                ([Fr(1, 2), 1, 3], 2, 4)])
def test_verify_over_gf_p(speeds, s, k):
    code = gc.heterogeneous_exact(speeds, s, k)
    report = gc.verify(code, field="GF")
    assert report.verdict == "exact" and report.exhaustive
    p = int(report.field[3:-1])
    assert p > int(code.nodes.max()) == 21 * code.n - 1            # nodes 20n .. 21n - 1
    gf = code.in_field("GF")
    assert gf.loads.tolist() == code.loads.tolist()


def test_gf_field_bad_input():
    import galois

    code = gc.heterogeneous_exact([1, 2, 3], 1)
    with pytest.raises(gc.GradcodesValueError, match="p > 62"):
        code.in_field(galois.GF(5))
    with pytest.raises(gc.GradcodesValueError, match="field"):
        code.in_field("GF(7)")
    with pytest.raises(gc.GradcodesTypeError, match="field"):
        code.in_field(7)


def test_nodes_far_from_zero_lower_the_cancellation():
    # nodes 20n + i instead of n + i: the worst cancellation max_j sum_i |a_i| |B_ij| over every third consecutive
    # straggler window at (40, 6) is 529 (it was 3462 with the nodes n + i); at (100, 10) 9.9e4 instead of 2.8e6
    n, s = 40, 6
    code = gc.heterogeneous_exact(spread(n), s)
    assert code.nodes.tolist() == list(range(20 * n, 21 * n))
    B = np.abs(np.asarray(code.B))
    worst = max(float((np.abs(code.decoding_matrix([i for i in range(n) if not t <= i < t + s])[0]) @ B).max())
                for t in range(0, n - s + 1, 3))
    assert 500 < worst < 560


def test_weights_over_2_to_the_100_fall_back_to_the_near_nodes():
    big = gc.heterogeneous_exact(spread(24), 20, field="rational")      # far nodes would give weights > 2^100
    assert big.nodes.tolist() == list(range(24, 48)) and max(abs(v) for v in big.B.ravel()) <= Fr(2) ** 100
    F = list(range(4, 24))
    assert (big.decoding_matrix(F) @ big.B == big.target).all()         # exact recovery, in Fractions
    assert np.isfinite(gc.heterogeneous_exact(spread(24), 20).B.astype(np.float32)).all()
