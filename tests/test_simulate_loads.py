"""gc.simulate with unequal loads and speeds (each worker computes its own row support) and adversarial codes."""

from fractions import Fraction as Fr

import numpy as np
import pytest

import gradcodes as gc


def _order_stat(x, j):
    return np.sort(x)[j - 1]


def test_each_worker_computes_its_own_load_deterministic_closed_form():
    # mu = inf, t_c = 0: the iteration ends when the (n - s)-th worker finishes a_i * (L_i / k) * m
    speeds = [1, 1, 2, 2, 4, 4]
    code = gc.heterogeneous_exact(speeds, 1, 14)
    A, M = 1e-3, 1400.0
    a = [A / c for c in speeds]
    r = next(iter(gc.simulate(code, a=a, mu=float("inf"), t_c=0.0, m_data=M, iters=3, rng=0, policy="first")))
    own = np.array(a) * code.loads * (M / 14)               # 2/1, 2/1, 4/2, ... every worker 0.2 s
    assert r.mean == pytest.approx(_order_stat(own, 5), rel=1e-12) == pytest.approx(0.2)
    assert r.details["loads"] == [2, 2, 4, 4, 8, 8]
    # the old model charged everybody the largest load (8 partitions): 0.4 s at speed 2, 0.8 s at speed 1
    assert r.mean < 0.5 * 0.8


def test_unequal_loads_shifted_exponential_mean():
    # two workers, loads 1 and 3 of k = 3, s = 0 (wait for both): E[max(T_0, T_1)] with T_i = a l_i + Exp(l_i a)
    B = np.array([[1.0, 0, 0], [1.0, 1.0, 1.0]])
    code = gc.GradientCode(B, 0, name="unequal")
    A, M = 1e-3, 300.0
    r = next(iter(gc.simulate(code, a=A, t_c=0.0, m_data=M, iters=40_000, rng=1, policy="first")))
    l0, l1 = 0.1, 0.3                                       # a * l_i (seconds): shift and mean of the exponential
    # E[max] = l1 + E[max(l0 + X0 - l1, X1)] with X_i ~ Exp(mean l_i): integrate P(max > t) numerically
    t = np.linspace(0, 5, 200_001)
    F0 = np.where(t >= l0, 1 - np.exp(-(t - l0) / l0), 0)
    F1 = np.where(t >= l1, 1 - np.exp(-(t - l1) / l1), 0)
    expected = np.trapezoid(1 - F0 * F1, t)
    assert abs(r.mean - expected) < 4 * r.stderr


def test_equal_loads_use_the_scalar_load():
    code = gc.cyclic_repetition(10, 2, rng=0)
    r = next(iter(gc.simulate(code, m_data=1000.0, iters=20, rng=3, policy="first")))
    assert "loads" not in r.details and r.load == 300.0      # (s + 1) / n of the data, as before


def test_adversarial_code_waits_for_n_minus_stragglers_and_sends_1_over_m():
    placement = [[0, 1, 2], [0, 1, 3], [0, 2, 3], [1, 2, 3], [0, 1, 2, 3], [0, 1, 2, 3]]
    code = gc.adversarial_gc(placement, s=1, a=1, nodes=range(6), field="rational")      # K = 3, m = 2
    assert code.s == 3 and code.m == 2
    r = next(iter(gc.simulate(code, a=1e-3, mu=float("inf"), t_c=0.01, m_data=400.0, iters=3, rng=0)))
    assert r.messages == 5 and r.details["s"] == 1                      # n - s = 5 (K + 2a), not K = 3
    own = 1e-3 * code.loads * 100.0                                     # 0.3 s (3 of 4 partitions) or 0.4 s
    # the first five of these, each message t_c / m = 5 ms, received one after the other (single port)
    lo = np.sort(own)
    R = 0.0
    for x in lo[:5]:
        R = max(R, x) + 0.01 / 2
    assert r.mean == pytest.approx(R, rel=1e-12)
    # an explicit policy is honoured (first n - code.s = K messages: erasure decoding only)
    k3 = next(iter(gc.simulate(code, a=1e-3, mu=float("inf"), t_c=0.01, m_data=400.0, iters=3, rng=0,
                               policy="first")))
    assert k3.messages == 3
    # without adversaries the code is an ordinary exact code (default policy: earliest decodable)
    plain = gc.adversarial_gc(placement, s=1, a=0, nodes=range(6), field="rational")
    rp = next(iter(gc.simulate(plain, a=1e-3, mu=float("inf"), t_c=0.01, m_data=400.0, iters=3, rng=0)))
    assert rp.details["policy"] == "earliest decodable"
    assert Fr(1, int(plain.m)) == gc.adversarial_comm_cost(placement, 1, 0)
