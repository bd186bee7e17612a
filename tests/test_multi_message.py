"""Uncoded multi-message communication (Ozfatura, Gündüz & Ulukus 2019): the code, its completion rule and the
exact expected iteration time against hand computations, exhaustive enumeration and Monte Carlo."""

from __future__ import annotations

import itertools
import math
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import gradcodes as gc
from gradcodes._families.multi_message import _cdf, _levels


@pytest.mark.parametrize(("n", "r"), [(1, 1), (3, 2), (5, 5), (7, 3)])
def test_is_the_natural_order_partial_straggler_code(n, r):
    code = gc.multi_message_code(n, r)
    assert code == gc.partial_straggler_code(n, r - 1, 1, order="natural")
    assert code.order == tuple(tuple((i + t) % n for t in range(r)) for i in range(n))
    assert (code.k, code.n, code.s, code.m) == (n, n * r, r - 1, 1)
    B = np.asarray(code.B)
    for i in range(n):
        for t in range(r):                          # uncoded: every message is one partial gradient
            np.testing.assert_array_equal(B[code.message(i, t)], np.eye(n)[(i + t) % n])


def test_hand_example_exact():
    # n = 3, r = 2: worker 0 computes 0 then 1, worker 1: 1, 2, worker 2: 2, 0
    code = gc.multi_message_code(3, 2, field="rational")
    assert code.decodable_progress([0, 2, 0]) is False        # partitions 1, 2 only
    assert code.decodable_progress([1, 2, 0]) is True         # + partition 0 from worker 0
    G = [[Fraction(1, 3), Fraction(2)], [Fraction(5), Fraction(-1, 7)], [Fraction(3, 2), Fraction(1)]]
    Y = code.encode(G)
    got = code.decode([code.message(0, 0), code.message(1, 0), code.message(1, 1)], Y)
    assert [Fraction(v) for v in got] == [Fraction(1, 3) + 5 + Fraction(3, 2), 2 - Fraction(1, 7) + 1]
    with pytest.raises(gc.DecodingError):
        code.decode([code.message(1, 0), code.message(1, 1)], Y)


def test_progress_rule_by_hand():
    code = gc.multi_message_code(3, 2)
    # worker 2 sends 2 then 0, worker 1 sends 1: (0, 1, 2) covers 1, 2, 0
    assert code.decodable_progress([0, 1, 2]) is True
    assert code.decodable_progress([0, 0, 2]) is False


def test_expected_time_hand_values():
    t = gc.multi_message_time
    assert t(2, 2, a=0.0) == pytest.approx(5 / 6, abs=1e-10)                     # E[U + min(V, U)], U~Exp(2)
    assert t(2, 2, a=1.0) == pytest.approx(2.5 - 2 / 3 * math.exp(-1), abs=1e-10)
    assert t(1, 1, a=1.0, mu=2.0) == pytest.approx(1.5, abs=1e-12)
    h5 = sum(1 / i for i in range(1, 6))
    assert t(5, 1, a=0.5, mu=2.0) == pytest.approx(0.5 + h5 / 2, abs=1e-10)      # r = 1: the slowest worker
    assert t(5, 1, a=0.5, mu=2.0, protocol="single") == pytest.approx(0.5 + h5 / 2, abs=1e-15)
    assert t(6, 4, a=0.7, mu=float("inf")) == 0.7                                  # deterministic workers
    assert t(2, 2, a=0.0, protocol="single") == 1.0                               # 2 min(X_0, X_1)
    assert t(6, 3, a=1.0, mu=1.0, protocol="single") == pytest.approx(3 * (1 + 1 / 3 + 1 / 4 + 1 / 5 + 1 / 6))
    assert t(6, 3, a=1.0, mu=1.0, protocol="fractional") == pytest.approx(3 + 1.5)


@pytest.mark.parametrize(("n", "r"), [(1, 1), (2, 1), (2, 2), (3, 2), (4, 3), (5, 2), (5, 3)])
def test_cdf_is_the_decoders_rule_exhaustively(n, r):
    # P(T <= x) = sum over every progress state Z of P(Z) [the chunk decoder's rule decodes Z]
    code = gc.multi_message_code(n, r)
    states = np.array(list(itertools.product(range(r + 1), repeat=n)), dtype=np.int64)
    ok = code.decodable_progress(states)
    for a, mu in [(1.0, 1.0), (0.0, 0.5), (0.3, 3.0)]:
        for x in (0.4, 1.1, 1.7, 2.6, 4.0):
            p = _levels(x, r, a, mu)
            want = float(np.sum(np.prod(p[states], axis=1) * ok))
            assert _cdf(x, n, r, a, mu) == pytest.approx(want, abs=1e-13)


def test_agrees_with_monte_carlo():
    n, r, iters = 6, 3, 20_000
    sim = gc.simulate_partial(gc.multi_message_code(n, r), model=gc.ShiftedExponentialWorkers(1.0, 1.0),
                              iters=iters, rng=3)
    se = np.std(sim.partial) / np.sqrt(iters)
    assert abs(np.mean(sim.partial) - gc.multi_message_time(n, r)) < 5 * se
    se = np.std(sim.classical) / np.sqrt(iters)
    assert abs(np.mean(sim.classical) - gc.multi_message_time(n, r, protocol="single")) < 5 * se
    # fractional repetition, earliest decodable set: every group of r workers has one worker done (r X_i)
    X = 1.0 + np.random.default_rng(4).exponential(1.0, size=(iters, n // r, r))
    T = (r * X).min(axis=2).max(axis=1)
    assert abs(T.mean() - gc.multi_message_time(n, r, protocol="fractional")) < 5 * T.std() / np.sqrt(iters)


@settings(max_examples=20, deadline=None)
@given(n=st.integers(1, 7), data=st.data(), a=st.floats(0.0, 2.0), mu=st.floats(0.2, 5.0))
def test_properties(n, data, a, mu):
    r = data.draw(st.integers(1, n))
    multi = gc.multi_message_time(n, r, a=a, mu=mu)
    assert a - 1e-12 <= multi <= gc.multi_message_time(n, r, a=a, mu=mu, protocol="single") + 1e-9
    if r < n:          # one more partition at the end of every worker's order only adds arrivals
        assert gc.multi_message_time(n, r + 1, a=a, mu=mu) <= multi + 1e-9
    if r == 1:
        assert multi == pytest.approx(a + sum(1 / i for i in range(1, n + 1)) / mu, rel=1e-9, abs=1e-9)


@pytest.mark.parametrize(("kwargs", "match"), [
    ({"n": 0, "r": 1}, "n"), ({"n": 3, "r": 0}, "r"), ({"n": 3, "r": 4}, "r"), ({"n": 3, "r": 1.5}, "r"),
    ({"n": 3, "r": 2, "a": -1.0}, "a"), ({"n": 3, "r": 2, "mu": 0.0}, "mu"), ({"n": 3, "r": 2, "mu": -2.0}, "mu"),
    ({"n": 3, "r": 2, "mu": "fast"}, "mu"), ({"n": 3, "r": 2, "protocol": "coded"}, "protocol"),
    ({"n": 5, "r": 2, "protocol": "fractional"}, "r must divide n"),
])
def test_bad_time_arguments(kwargs, match):
    with pytest.raises(gc.GradcodesError, match=match):
        gc.multi_message_time(**kwargs)


@pytest.mark.parametrize(("kwargs", "match"), [
    ({"n": 0, "r": 1}, "n"), ({"n": 3, "r": 4}, "r"), ({"n": 3, "r": True}, "r"),
    ({"n": 3, "r": 2, "field": "complex"}, "field"), ({"n": 3, "r": 2, "rtol": 2.0}, "rtol"),
])
def test_bad_code_arguments(kwargs, match):
    with pytest.raises(gc.GradcodesError, match=match):
        gc.multi_message_code(**kwargs)


@pytest.mark.parametrize(("n", "r"), [(1, 1), (4, 2), (5, 3), (6, 2), (6, 4)])
def test_verified_exactly_and_q_max(n, r):
    code = gc.multi_message_code(n, r, field="rational")
    rep = gc.verify(code)
    assert (rep.verdict, rep.exhaustive, rep.pattern_model) == ("exact", True, "chunk-arrival patterns")
    # every partition sits at every position 0..r-1 exactly once, so the worst undecodable state keeps all but
    # the r(r+1)/2 computations at and after one partition: the lower bound of q_max for m = 1 is attained
    assert code.q_max == 1 + n * r - r * (r + 1) // 2
