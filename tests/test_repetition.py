"""Tandon et al. repetition codes: worked examples as exact test vectors, and their properties."""

from fractions import Fraction as Fr

import numpy as np
import pytest

import gradcodes as gc


def frac_matrix(rows):
    return [[Fr(x) for x in row] for row in rows]


def as_fracs(a):
    return [Fr(x) for x in np.asarray(a).ravel()]


# Cyclic repetition (Tandon et al. 2017): (n, s, H, B, {responders: a_F restricted to responders})
CYCLIC_EXAMPLES = [
    pytest.param(3, 1, [[1, 1, -2]], [[1, -1, 0], [0, 1, Fr(1, 2)], [2, 0, 1]],
                 {(0, 1): [1, 2], (0, 2): [-1, 1], (1, 2): [1, Fr(1, 2)]}, id="n3s1"),
    pytest.param(4, 1, [[1, 2, 3, -6]],
                 [[1, Fr(-1, 2), 0, 0], [0, 1, Fr(-2, 3), 0], [0, 0, 1, Fr(1, 2)], [6, 0, 0, 1]],
                 {(0, 1, 2): [1, Fr(3, 2), 2], (0, 1, 3): [-5, Fr(-3, 2), 1], (0, 2, 3): [-2, 1, Fr(1, 2)],
                  (1, 2, 3): [1, Fr(5, 3), Fr(1, 6)]}, id="n4s1"),
]


@pytest.mark.parametrize(("n", "s", "H", "B", "decoders"), CYCLIC_EXAMPLES)
def test_cyclic_repetition_worked_examples_exact(n, s, H, B, decoders):
    code = gc.cyclic_repetition(n, s, H=H, field="rational")
    assert code.field == "rational"
    assert code.B.tolist() == frac_matrix(B)
    for F, expected in decoders.items():
        a = code.decoding_matrix(F)
        assert a.shape == (1, n)
        assert [a[0, i] for i in F] == [Fr(x) for x in expected]
        assert all(a[0, i] == 0 for i in range(n) if i not in F)
    report = gc.verify(code)
    assert report.exact and report.exhaustive and report.patterns_checked == n
    assert report.load == s + 1 and report.meets_lower_bound


def test_cyclic_repetition_float_matches_exact_example():
    code = gc.cyclic_repetition(4, 1, H=[[1, 2, 3, -6]])
    np.testing.assert_allclose(code.decoding_matrix([0, 1, 3])[0], [-5, -1.5, 0, 1], rtol=1e-13)


def test_fractional_repetition_worked_example():
    code = gc.fractional_repetition(4, 1, field="rational")
    assert code.B.tolist() == frac_matrix([[1, 1, 0, 0], [1, 1, 0, 0], [0, 0, 1, 1], [0, 0, 1, 1]])
    assert as_fracs(code.decoding_matrix([0, 2, 3])) == [1, 0, 1, 0]     # straggler {1}
    assert as_fracs(code.decoding_matrix([0, 1, 3])) == [1, 0, 0, 1]     # straggler {2}
    # min-norm option: weight 1/|F ∩ group| on each responder
    assert as_fracs(code.decoding_matrix([0, 1, 3], decoder="group-mean")) == [Fr(1, 2), Fr(1, 2), 0, 1]


@pytest.mark.parametrize(("n", "s", "k"), [(6, 2, None), (6, 1, 9), (12, 3, 24), (5, 4, None), (7, 0, 14)])
def test_fractional_repetition_structure(n, s, k):
    code = gc.fractional_repetition(n, s, k)
    kk = n if k is None else k
    assert code.B.shape == (n, kk)
    assert set(np.unique(code.B)) <= {0.0, 1.0}
    assert np.all(code.replication == s + 1)
    assert code.load == kk * (s + 1) // n
    report = gc.verify(code, limit=10**6)
    assert report.exact and report.exhaustive
    assert report.worst_residual == 0.0 and report.worst_cancellation == 1.0
    assert report.meets_lower_bound


def test_fractional_repetition_decodes_with_plain_sums():
    code = gc.fractional_repetition(9, 2)
    G = np.random.default_rng(0).normal(size=(9, 33)).astype(np.float32)
    Y = code.encode(G)
    F = [1, 2, 3, 7, 8, 0, 4]
    g = code.decode(F, Y)
    # a plain sum of one message per group, in float32
    expected = Y[0] + Y[3] + Y[7]
    assert g.dtype == np.float32
    np.testing.assert_array_equal(g, expected)


@pytest.mark.parametrize(("n", "s"), [(1, 0), (2, 1), (7, 3), (12, 5), (15, 14)])
def test_cyclic_repetition_support_and_load(n, s):
    code = gc.cyclic_repetition(n, s, rng=7)
    for i, supp in enumerate(code.supports):
        assert sorted(supp.tolist()) == sorted(((i + np.arange(s + 1)) % n).tolist())
    assert code.load == s + 1 and np.all(code.replication == s + 1)
    assert gc.verify(code).exact


def test_cyclic_repetition_seed_is_reproducible():
    a, b = gc.cyclic_repetition(10, 3, rng=5), gc.cyclic_repetition(10, 3, rng=5)
    np.testing.assert_array_equal(a.B, b.B)
    assert not np.array_equal(a.B, gc.cyclic_repetition(10, 3, rng=6).B)


def test_cyclic_repetition_random_exact_field():
    code = gc.cyclic_repetition(6, 2, rng=3, field="rational")
    report = gc.verify(code)
    assert report.exact and report.exhaustive and report.field == "rational"


def test_grouped_partitions_k_multiple_of_n():
    code = gc.cyclic_repetition(5, 2, k=10, rng=0)
    assert code.k == 10 and code.load == 6
    G = np.random.default_rng(1).normal(size=(10, 4))
    np.testing.assert_allclose(code.decode([0, 2, 4], code.encode(G)), G.sum(axis=0), rtol=1e-12)
    assert gc.verify(code).exact


def test_uncoded():
    code = gc.uncoded(5)
    assert code.s == 0 and code.load == 1
    np.testing.assert_array_equal(code.B, np.eye(5))
    G = np.arange(10.0).reshape(5, 2)
    np.testing.assert_array_equal(code.decode(range(5), code.encode(G)), G.sum(axis=0))


@pytest.mark.parametrize(("call", "exc", "words"), [
    (lambda: gc.fractional_repetition(7, 1), ValueError, "(s + 1) | n"),
    (lambda: gc.fractional_repetition(6, 1, k=4), ValueError, "k must be a positive multiple of 3"),
    (lambda: gc.fractional_repetition(0, 0), ValueError, "n must be an integer >= 1"),
    (lambda: gc.fractional_repetition(4, 4), ValueError, "s must be an integer in [0, 3]"),
    (lambda: gc.fractional_repetition(4, -1), ValueError, "s must be an integer in [0, 3]"),
    (lambda: gc.fractional_repetition(4.0, 1), TypeError, "n must be an integer"),
    (lambda: gc.fractional_repetition(4, 1.5), TypeError, "s must be an integer"),
    (lambda: gc.fractional_repetition(4, True), TypeError, "s must be an integer"),
    (lambda: gc.fractional_repetition(4, 1, field="complex"), ValueError, "field must be one of"),
    (lambda: gc.cyclic_repetition(5, 2, k=7), ValueError, "k must be a positive multiple of 5"),
    (lambda: gc.cyclic_repetition(3, 1, H=[[1, 1, 1]]), ValueError, "H @ 1 = 0"),
    (lambda: gc.cyclic_repetition(3, 1, H=[[1, -1]]), ValueError, "H must have shape (s, n) = (1, 3)"),
    (lambda: gc.cyclic_repetition(3, 1, H=[[1, 0, -1]]), ValueError, "singular"),
    (lambda: gc.cyclic_repetition(3, 1, H=[[1, 0, -1]], field="rational"), ValueError, "singular"),
    (lambda: gc.cyclic_repetition(3, 1, H=[[1, np.nan, -1]]), ValueError, "finite"),
    (lambda: gc.cyclic_repetition(3, 1, rng=-1), ValueError, "non-negative integer seed"),
])
def test_bad_input(call, exc, words):
    with pytest.raises(exc, match=None) as info:
        call()
    assert words in str(info.value)
