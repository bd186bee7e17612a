"""The default real Fourier form of adversarial_gc (nodes="unity"): exact construction and decoding for every
responder set, the odd-m functional, the dyadic nodes and scale exponents, and float64 accuracy at n = 100 (the
construction before, Chebyshev nodes with monomial functionals, lost the sum from n ≈ 20: 4.5e-6 at n = 50)."""

from __future__ import annotations

import itertools
from fractions import Fraction

import numpy as np
import pytest

import gradcodes as gc
from gradcodes._families import adversarial_fourier as af
from gradcodes._families.adversarial import _cyclic_placement, _rebuild


def _hetero(n: int, r: int) -> np.ndarray:
    """Partition j on the r + (j mod 3) workers j, j+1, ... (unequal replication and loads)."""
    S = np.zeros((n, n), dtype=np.int64)
    for j in range(n):
        S[(j + np.arange(min(n, r + j % 3))) % n, j] = 1
    return S


@pytest.mark.parametrize("n,r,s,a,m", [(6, 4, 1, 1, 1), (6, 5, 1, 1, 2), (6, 5, 0, 1, 3), (6, 6, 1, 1, 3),
                                       (6, 6, 0, 1, 4), (7, 7, 0, 1, 5)])
def test_exact_recovery_every_responder_set(n, r, s, a, m):
    """Rational arithmetic: A_F B = E exactly for every K-subset F, on a heterogeneous placement whose least
    replicated partitions are tight (r_j = s + 2a + m: for odd m the middle case that needs ρ)."""
    code = gc.adversarial_gc(_hetero(n, r), s, a, m=m, field="rational")
    assert code.functionals == "fourier" and code.node_kind == "unity" and code.m == m
    for F in itertools.combinations(range(n), code.K):
        assert (code.decoding_matrix(list(F)) @ code.B == code.target).all()
    S = code.placement
    for u in range(m):
        assert (code.B[:, u::m][~S] == 0).all()                 # workers use only what they store
    if m <= 2:
        assert gc.verify_adversarial(code).ok


def test_rho_avoids_degenerate_directions():
    """Odd m: the last functional Re(ρ c) must see every tight partition; Λ = i is orthogonal to ρ = 1."""
    rho = af.choose_rho([(Fraction(0), Fraction(1))])
    assert af.gmul(rho, (Fraction(0), Fraction(1)))[0] != 0
    lams = [(Fraction(1), Fraction(0)), (Fraction(0), Fraction(1)), (Fraction(1), Fraction(1))]
    rho = af.choose_rho(lams)
    assert all(af.gmul(rho, L)[0] != 0 for L in lams)
    assert af.choose_rho([]) == (1, 0)


def test_nodes_stride_and_scale_exponents():
    # n = 4: stride 3, angles θ_i/2 = π(2 (3i mod 4) + 1)/8: tan(π/8), tan(7π/8), tan(5π/8), tan(3π/8)
    assert af.stride(4) == 3
    x = af.unity_nodes(4)
    want = [np.sqrt(2) - 1, -(np.sqrt(2) - 1), -(np.sqrt(2) + 1), np.sqrt(2) + 1]
    assert all(v.denominator <= 2 ** 24 and (2 ** 24) % v.denominator == 0 for v in x)
    assert np.allclose([float(v) for v in x], want, atol=2.0 ** -24)
    for n in (5, 12, 37, 100):
        q = af.stride(n)
        assert np.gcd(q, n) == 1 and len(set(af.unity_nodes(n))) == n
    K = 9
    for v, e in zip(x, af.scale_exponents(x, K), strict=True):
        assert 4 ** e <= (1 + v * v) ** (K - 1) < 4 ** (e + 1)          # 2^e within a factor 2 of (1+x^2)^((K-1)/2)


def test_float_weights_match_exact():
    code = gc.adversarial_gc(_cyclic_placement(30, 7), 1, 1, m=4, field="rational")
    Q = [i for i in range(30) if i not in (3, 4, 17)]
    exact = af.weights_exact([code.nodes[i] for i in Q], [code.scale_exponents[i] for i in Q], 4, code.rho)
    flt = af.weights_float(np.array([[float(code.nodes[i]) for i in Q]]),
                           np.array([[code.scale_exponents[i] for i in Q]]), 4, code.rho)[0]
    ex = np.array([[float(v) for v in row] for row in exact])
    assert np.abs(flt - ex).max() <= 1e-13 * np.abs(ex).max()


def test_float64_accuracy_at_n_100():
    """n = 100, s = a = 1, m = 2 (cyclic placement, r = 5): every decode within 1e-12, adversary corrected. The
    Chebyshev/monomial construction it replaces decoded this family to 4.5e-6 at n = 50 and failed at n = 100."""
    code = gc.adversarial_gc(_cyclic_placement(100, 5), 1, 1, m=2)
    rng = np.random.default_rng(0)
    G = 1 + 0.1 * rng.standard_normal((200, 8))
    Y = code.B @ G
    true = code.target @ G
    sets = [(t + np.arange(3)) % 100 for t in range(0, 100, 7)] + [rng.choice(100, 3, replace=False)
                                                                    for _ in range(20)]
    mask = np.ones((len(sets), 100), dtype=bool)
    for row, S in enumerate(sets):
        mask[row, S] = False
    A = code.decoding_matrices(mask)
    assert max(np.abs(A[b] @ Y - true).max() for b in range(len(sets))) <= 1e-12 * np.abs(true).max()
    R = [i for i in range(100) if i != 41]
    Yr = Y[R].copy()
    Yr[10] += 1.0                                                   # worker 10 lies
    res = gc.decode_adversarial(code, R, Yr)
    assert res.adversarial == (10,)
    assert np.abs(res.gradient - true.ravel()).max() <= 1e-12 * np.abs(true).max()


def test_old_files_rebuild_with_chebyshev_nodes_and_bad_nodes():
    P = _cyclic_placement(6, 4).tolist()
    old = _rebuild(P, 1, 1, 1, nodes=None)                          # params written before the unity default
    assert old == gc.adversarial_gc(np.array(P), 1, 1, m=1, nodes="chebyshev") and old.functionals == "monomial"
    assert _rebuild(P, 1, 1, 1, nodes="unity") == gc.adversarial_gc(np.array(P), 1, 1, m=1)
    with pytest.raises(gc.GradcodesValueError, match="'unity', 'spread', 'chebyshev'"):
        gc.adversarial_gc(P, 1, 1, nodes="roots")


def _random_placement(n: int, r: int) -> np.ndarray:
    """benchmarks/numerics/adversarial_numerics.py's random placement: partition j on r + U{0..3} random workers (seed
    0)."""
    S = np.zeros((n, n), dtype=np.int64)
    rng = np.random.default_rng(0)
    for j in range(n):
        S[rng.permutation(n)[:min(n, r + int(rng.integers(0, 4)))], j] = 1
    return S


def _chord_score(S: np.ndarray, ang: np.ndarray) -> float:
    """Largest over partitions and holders of sum_l -log|z_i - z_l| (straightforward float64 reference)."""
    n = S.shape[0]
    worst = -np.inf
    for j in range(S.shape[1]):
        A = ang[np.flatnonzero(S[:, j])]
        D = (A[:, None] - A[None, :]) % n
        with np.errstate(divide="ignore"):
            L = np.where(D > 0, -np.log(2 * np.sin(np.pi * D / n)), 0.0)
        worst = max(worst, float(L.sum(axis=1).max()))
    return worst


def test_spread_angles_is_a_deterministic_permutation_that_lowers_the_worst_bunching():
    S = _random_placement(40, 9).astype(bool)
    ang = af.spread_angles(S)
    assert sorted(ang.tolist()) == list(range(40))
    assert np.array_equal(ang, af.spread_angles(S.copy()))
    stride = af.stride_angles(40)
    assert _chord_score(S, ang) < _chord_score(S, stride) - 1.0       # e^1: the largest column entry shrinks
    assert np.array_equal(af.spread_angles(S, sweeps=0), stride)       # the search starts from the stride
    # a pass changes nothing on a placement that is already as spread as it gets: every worker stores everything
    assert np.array_equal(af.spread_angles(np.ones((7, 3), dtype=bool)), af.stride_angles(7))


def test_spread_nodes_decode_exactly_and_rebuild():
    S = _random_placement(9, 5)
    code = gc.adversarial_gc(S, 1, 1, nodes="spread", field="rational")
    assert code.node_kind == "spread" and code.functionals == "fourier" and code.params["nodes"] == "spread"
    for F in itertools.combinations(range(9), code.K):
        assert (code.decoding_matrix(list(F)) @ code.B == code.target).all()
    assert (code.B[:, 0::code.m][~code.placement] == 0).all()
    flt = gc.adversarial_gc(S, 1, 1, nodes="spread")
    assert _rebuild(**flt.params) == flt
    assert gc.verify_adversarial(flt).ok


def test_spread_nodes_decode_a_random_placement_within_1e_10_where_the_stride_does_not():
    """n = 50, (s, a, m) = (5, 2, 5) on benchmarks/numerics/adversarial_numerics.py's random placement (r_j = 14..17):
    the stride bunches some partition's holders on the circle; the assigned angles spread them."""
    S = _random_placement(50, 14)
    rng = np.random.default_rng(1)
    sets = [(t + np.arange(9)) % 50 for t in range(50)] + [rng.choice(50, 9, replace=False) for _ in range(30)]
    mask = np.ones((len(sets), 50), dtype=bool)
    for row, Z in enumerate(sets):
        mask[row, Z] = False
    errs = {}
    for nodes in ("unity", "spread"):
        code = gc.adversarial_gc(S, 5, 2, m=5, nodes=nodes)
        G = 1 + 0.1 * np.random.default_rng(2).standard_normal((code.k * code.m, 16))
        Y, true = code.B @ G, code.target @ G
        A = code.decoding_matrices(mask)
        errs[nodes] = max(np.abs(A[b] @ Y - true).max() for b in range(len(sets))) / np.abs(true).max()
    assert errs["spread"] < 1e-10 and errs["spread"] * 4 < errs["unity"], errs
