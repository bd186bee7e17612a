"""Approximate baselines (Song & Choi 2025): IS-SGD, SGC, BGC, EHD, OD."""

from __future__ import annotations

from fractions import Fraction as F

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import gradcodes as gc
from gradcodes.testing import assert_unbiased

probs = st.integers(1, 19).map(lambda a: F(a, 20))


# ------------------------------------------------------------------------------------------------------
# IS-SGD
# ------------------------------------------------------------------------------------------------------


def test_is_sgd_unbiased_exact():
    p = [F(1, 10), F(1, 5), F(1, 2), F(1, 3)]
    code = gc.ignore_stragglers(4, p=p)
    assert code.default_decoder == "unbiased" and code.load == 1
    rep = gc.evaluate_approximate(code)
    assert rep.exact and rep.unbiased
    # B = I: E||ghat - g||^2 = sum_i delta_i
    assert rep.expected_error == sum(q / (1 - q) for q in p) == rep.closed_form


def test_is_sgd_decoders():
    code = gc.ignore_stragglers(4)
    assert code.default_decoder == "rescale" and {"rescale", "sum"} <= set(code.decoders)
    assert "unbiased" not in code.decoders
    A = code.decoding_matrix([0, 2, 3])
    np.testing.assert_allclose(A, [[4 / 3, 0, 4 / 3, 4 / 3]])
    with pytest.raises(ValueError, match="'unbiased' needs p"):
        gc.ignore_stragglers(4, decoder="unbiased")


# ------------------------------------------------------------------------------------------------------
# SGC
# ------------------------------------------------------------------------------------------------------


@settings(max_examples=20, deadline=None)
@given(st.integers(1, 5), st.data())
def test_sgc_unbiased_exact(n, data):
    d = data.draw(st.integers(1, n))
    k = data.draw(st.integers(1, 6))
    p = data.draw(st.lists(probs, min_size=n, max_size=n))
    assignment = data.draw(st.sampled_from(["cyclic", "random"]))
    code = gc.stochastic_gc(n, d, p, k=k, assignment=assignment, rng=data.draw(st.integers(0, 9)))
    support = code.B != 0
    assert (support.sum(axis=0) == d).all()  # every partition on d workers
    rep = gc.evaluate_approximate(code)
    assert rep.exact and rep.unbiased and rep.expected_error == rep.closed_form
    assert_unbiased(code, atol=0)                     # exact enumeration of all 2^n response patterns
    # SGC's expected error, directly: worker i's message has weight 1/((1-p_i) d), so
    # E||ghat-g||^2 = sum_i p_i (1-p_i) ||B_i||^2 = sum_i delta_i |S_i| / d^2 for G = I
    delta = [q / (1 - q) for q in p]
    assert rep.expected_error == sum(dl * int(s.sum()) for dl, s in zip(delta, support, strict=True)) / d**2


def test_sgc_cyclic_loads():
    code = gc.stochastic_gc(6, 3, 0.2)
    assert code.loads.tolist() == [3] * 6 and code.load == 3
    np.testing.assert_allclose(code.B[code.B != 0], 1 / (0.8 * 3))


def test_sgc_bad_input():
    with pytest.raises(ValueError, match=r"degree must be an integer in \[1, 4\]"):
        gc.stochastic_gc(4, 5, 0.1)
    with pytest.raises(ValueError, match="assignment"):
        gc.stochastic_gc(4, 2, 0.1, assignment="pbd")
    with pytest.raises(ValueError, match=r"p\[0\]"):
        gc.stochastic_gc(4, 2, [1.2, 0.1, 0.1, 0.1])
    with pytest.raises(ValueError, match="length n = 4"):
        gc.stochastic_gc(4, 2, [0.1, 0.1])


# ------------------------------------------------------------------------------------------------------
# EHD
# ------------------------------------------------------------------------------------------------------


def test_erasurehead_group_decoder_picks_first_responder():
    code = gc.erasurehead(6, 3)
    A = code.decoding_matrix([1, 2, 4])
    assert A.tolist() == [[0, 1, 0, 0, 1, 0]]
    A = code.decoding_matrix([0, 1, 2])  # second group silent: dropped
    assert A.tolist() == [[1, 0, 0, 0, 0, 0]]


@settings(max_examples=15, deadline=None)
@given(st.sampled_from([(4, 2), (6, 3), (6, 2), (3, 1), (4, 4)]), st.integers(0, 3), st.data())
def test_erasurehead_exact_error(nd, extra, data):
    n, d = nd
    G = n // d
    k = G + extra
    p = data.draw(st.lists(probs, min_size=n, max_size=n))
    code = gc.erasurehead(n, d, k=k, p=p)
    blocks = np.array_split(np.arange(k), G)
    silent = [np.prod([p[i] for i in range(g * d, (g + 1) * d)]) for g in range(G)]
    # weight 1: a group's block is lost with probability P_g = prod p_i (bias -P_g per coordinate)
    rep = gc.evaluate_approximate(code)
    assert rep.exact
    assert rep.expected_error == sum(P * len(b) for P, b in zip(silent, blocks, strict=True))
    assert rep.bias.tolist() == [-silent[g] for g in range(G) for _ in blocks[g]]
    # unbiased weights 1/(1-P_g): error sum_g |block_g| P_g/(1-P_g)
    rep = gc.evaluate_approximate(code, decoder="unbiased")
    assert rep.unbiased
    assert rep.expected_error == sum(P / (1 - P) * len(b) for P, b in zip(silent, blocks, strict=True))


def test_erasurehead_bad_input():
    with pytest.raises(ValueError, match="must divide n"):
        gc.erasurehead(6, 4)
    with pytest.raises(ValueError, match="'unbiased' needs p"):
        gc.erasurehead(6, 3, decoder="unbiased")
    with pytest.raises(ValueError, match="k must be an integer >= 3"):
        gc.erasurehead(6, 2, k=2)


# ------------------------------------------------------------------------------------------------------
# random regular graphs and OD
# ------------------------------------------------------------------------------------------------------


@settings(max_examples=30, deadline=None)
@given(st.integers(2, 30), st.data())
def test_random_regular_graph(n, data):
    d = data.draw(st.integers(0, n - 1))
    if (n * d) % 2:
        with pytest.raises(ValueError, match="n\\*d even"):
            gc.random_regular_graph(n, d)
        return
    seed = data.draw(st.integers(0, 100))
    A = gc.random_regular_graph(n, d, rng=seed)
    assert A.shape == (n, n) and set(np.unique(A)) <= {0, 1}
    assert (A == A.T).all() and np.trace(A) == 0
    assert (A.sum(axis=1) == d).all()
    assert (gc.random_regular_graph(n, d, rng=seed) == A).all()


def test_random_regular_graph_is_randomised():
    graphs = {gc.random_regular_graph(20, 3, rng=s).tobytes() for s in range(5)}
    assert len(graphs) == 5


def test_od_optimal_decoder_is_least_squares():
    code = gc.optimal_decoding(12, 3, rng=2)
    assert (np.abs(code.B.sum(axis=0) - 1) < 1e-15).all() and code.load == 3
    rng = np.random.default_rng(0)
    mask = rng.random((40, 12)) < 0.7
    mask[0] = True
    mask[1] = False
    A = code.decoders["optimal"].matrices(code, mask)[:, 0, :]
    Af = code.decoders["fixed"].matrices(code, mask)[:, 0, :]
    for a, af, m in zip(A, Af, mask, strict=True):
        assert (a[~m] == 0).all()
        if m.any():
            ref = np.linalg.lstsq(code.B[m].T, np.ones(12), rcond=None)[0]
            np.testing.assert_allclose(code.B[m].T @ a[m], code.B[m].T @ ref, atol=1e-10)
            np.testing.assert_allclose(np.linalg.norm(a), np.linalg.norm(ref), rtol=1e-8)
        # optimal is never worse than fixed
        assert np.linalg.norm(a @ code.B - 1) <= np.linalg.norm(af @ code.B - 1) + 1e-12
    np.testing.assert_allclose(A[0] @ code.B, 1.0, atol=1e-12)  # everyone responds: exact
    assert (A[1] == 0).all()


def test_od_bad_input():
    with pytest.raises(ValueError, match="n\\*d even"):
        gc.optimal_decoding(5, 3)
    with pytest.raises(ValueError, match=r"degree must be an integer in \[1, 4\]"):
        gc.optimal_decoding(5, 5)


# ------------------------------------------------------------------------------------------------------
# BGC
# ------------------------------------------------------------------------------------------------------


def test_bgc_reproducible_and_optimal_beats_sum():
    a = gc.bernoulli_gc(10, 3, rng=4, p=0.2)
    b = gc.bernoulli_gc(10, 3, rng=4, p=0.2)
    assert (a.B == b.B).all()
    assert abs(a.B.sum() / 10 - 3) < 2  # about d partitions per worker
    opt = gc.evaluate_approximate(a)
    s = gc.evaluate_approximate(a, decoder="sum")
    assert opt.expected_error < s.expected_error


def test_bgc_bad_input():
    with pytest.raises(ValueError, match="degree .expected load."):
        gc.bernoulli_gc(5, 0)
    with pytest.raises(ValueError, match="degree .expected load."):
        gc.bernoulli_gc(5, 6)
    with pytest.raises(TypeError, match="rng must be"):
        gc.bernoulli_gc(5, 2, rng="x")
    with pytest.raises(ValueError, match="decoder must be one of"):
        gc.bernoulli_gc(5, 2, decoder="lsq")


def test_bgc_d_types():
    with pytest.raises(TypeError, match="degree .expected load. must be a real number"):
        gc.bernoulli_gc(5, "2")
    with pytest.raises(ValueError, match="degree .expected load."):
        gc.bernoulli_gc(5, float("nan"))


def test_single_worker_baselines_exact():
    """n = 1: the lone worker holds everything; with p = 1/3 and unbiased weight 3/2 the error is delta = 1/2."""
    p = [F(1, 3)]
    assert gc.evaluate_approximate(gc.ignore_stragglers(1, p=p)).expected_error == F(1, 2)
    assert gc.evaluate_approximate(gc.stochastic_gc(1, 1, p)).expected_error == F(1, 2)
    assert gc.evaluate_approximate(gc.erasurehead(1, 1, p=p, decoder="unbiased")).expected_error == F(1, 2)
    # the weight-1 group decoder loses the gradient with probability 1/3: bias -1/3, error 1/3
    rep = gc.evaluate_approximate(gc.erasurehead(1, 1, p=p))
    assert rep.expected_error == F(1, 3) and rep.bias.tolist() == [F(-1, 3)]


def test_rescale_bias_with_unequal_probabilities():
    """IS-SGD's (n/|R|) 1_R is biased for unequal p (the docstring's claim), by an exactly computable amount."""
    p = [F(1, 2), F(1, 4)]
    rep = gc.evaluate_approximate(gc.ignore_stragglers(2, p=p, decoder="rescale"))
    # E[a_0] = P(both) * 1 + P(only 0) * 2 = (1/2)(3/4) + (1/2)(1/4)(2) = 5/8; E[a_1] = (3/8) + (3/4)(1/2)(2) = 9/8
    assert rep.bias.tolist() == [F(5, 8) - 1, F(9, 8) - 1]


@pytest.mark.parametrize("build", [
    lambda dec: gc.ignore_stragglers(3, p=0.2, decoder=dec),
    lambda dec: gc.bernoulli_gc(3, 1, decoder=dec),
    lambda dec: gc.erasurehead(4, 2, decoder=dec),
    lambda dec: gc.optimal_decoding(4, 2, decoder=dec),
])
def test_decoder_name_validation(build):
    with pytest.raises(TypeError, match="decoder must be a str"):
        build(["optimal"])
    with pytest.raises(ValueError, match="decoder must be one of"):
        build("nope")


def test_bgc_entries_are_bernoulli():
    """B_ij ~ Bernoulli(d/k) i.i.d.: over 40 000 entries the frequency is within 4 standard errors of d/k."""
    B = gc.bernoulli_gc(200, 3, rng=11).B
    q = 3 / 200
    assert set(np.unique(B)) <= {0.0, 1.0}
    assert abs(B.mean() - q) < 4 * np.sqrt(q * (1 - q) / B.size)
    assert not (gc.bernoulli_gc(200, 3, rng=12).B == B).all()
