"""Heterogeneity-aware exact codes (Wang, Guo, Tang, Li & Li 2019): worked example, proofs, bound, bad input."""

import itertools
import math
from fractions import Fraction as Fr

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import gradcodes as gc


def spread(n, width=4):
    return [1 + i % width for i in range(n)]


# ------------------------------------------------------------------------------------------------------------
# the worked example (n = 4 workers, two twice as fast, k = 6 partitions, s = 1): loads 2, 2, 4, 4 (time 2 =
# (s+1) k / sum c = 12 / 6); the sequence 0..5 0..5 split into runs 2, 2, 4, 4 gives worker 0 {0, 1}, worker 1
# {2, 3}, worker 2 {4, 5, 0, 1}, worker 3 {2, 3, 4, 5}; run middles M = 1, 3, 6, 10 of 12 give the angles
# θ_i = 2π (M_i - (M_i mod 6)/2 + (2i+1)/32) / 12 and the nodes tan(θ_i/2); the coefficients are recomputed from the
# module docstring's formula with plain integers.
# ------------------------------------------------------------------------------------------------------------


def _by_formula(code):
    """``B_tj = 2^{K-1-e_t} prod_{l not in T_j} (X_t - X_l) / Re(rho G_j)``, ``G_j = prod (-X_l - 2^24 i)``."""
    X = [int(v * 2**24) for v in code.nodes]
    n, K = code.n, code.n - code.s
    r0, r1 = code.rho
    B = [[Fr(0)] * code.k for _ in range(n)]
    for j in range(code.k):
        T = [int(i) for i in np.flatnonzero(code.support_matrix[:, j])]
        gi = (1, 0)
        for l_ in range(n):
            if l_ not in T:
                gi = (gi[0] * -X[l_] + gi[1] * 2**24, -gi[0] * 2**24 - gi[1] * X[l_])
        R = int(r0) * gi[0] - int(r1) * gi[1]
        for t in T:
            p = math.prod(X[t] - X[l_] for l_ in range(n) if l_ not in T)
            B[t][j] = Fr(p, R) * Fr(2) ** (K - 1 - code.scale_exponents[t])
    return B


def test_worked_example_exact():
    code = gc.heterogeneous_exact([1, 1, 2, 2], 1, 6, field="rational")
    assert code.loads.tolist() == [2, 2, 4, 4]
    assert code.time == Fr(2) == gc.min_time_heterogeneous([1, 1, 2, 2], 1, 6)
    assert [sorted(x.tolist()) for x in code.supports] == [[0, 1], [2, 3], [0, 1, 4, 5], [2, 3, 4, 5]]
    mid = [Fr(1), Fr(3), Fr(6), Fr(10)]                             # P_i + L_i / 2
    half = [(m - (m % 6) / 2 + Fr(2 * i + 1, 32)) / 12 for i, m in enumerate(mid)]   # θ_i / (2π) = half-angle / π
    for x, h in zip(code.nodes, half, strict=True):
        assert x.denominator <= 2**24 and abs(float(x) - math.tan(math.pi * h)) < 2**-24
    assert code.scale_exponents == (-1, -1, 9, 1)                # row scales 2^-e_t (module docstring)
    assert code.B.tolist() == _by_formula(code)
    for F in [(0, 2, 3), (1, 2, 3), (0, 1, 3), (0, 1, 2)]:
        a = code.decoding_matrix(F)[0]
        assert a[[i for i in range(4) if i not in F][0]] == 0
        assert (a @ code.B).tolist() == [Fr(1)] * 6             # a B = 1 exactly
    report = gc.verify(code)
    assert report.verdict == "exact" and report.exhaustive and report.patterns_checked == 4


def test_coefficients_are_the_universal_polynomial_construction():
    from gradcodes._families import adversarial_fourier as fourier

    for speeds, s, k in [([1, 2, 3, 1, 2, 3, 5], 3, 9), (spread(12), 5, None), ([Fr(1, 100), 1, 1, 1], 1, 2)]:
        code = gc.heterogeneous_exact(speeds, s, k, field="rational")
        rows, rho = fourier.construct(code.support_matrix.astype(bool), 1, code.n - s, code.nodes,
                                      code.scale_exponents)
        assert code.B.tolist() == rows == _by_formula(code) and rho == code.rho


def test_worked_example_float_is_the_exact_code_rounded():
    exact = gc.heterogeneous_exact([1, 1, 2, 2], 1, 6, field="rational")
    code = gc.heterogeneous_exact([1, 1, 2, 2], 1, 6)
    assert code.B.dtype == np.float64
    assert code.B.tolist() == [[float(v) for v in row] for row in exact.B]      # one correct rounding each
    G = np.random.default_rng(0).normal(size=(6, 7))
    np.testing.assert_allclose(code.decode([0, 2, 3], code.encode(G)), G.sum(axis=0), rtol=1e-14, atol=1e-14)


def test_float_rounding_of_large_weights_is_correct():
    exact = gc.heterogeneous_exact(spread(40), 30, field="rational")     # exponents far from 0 both ways
    code = gc.heterogeneous_exact(spread(40), 30)
    assert code.B.tolist() == [[float(v) for v in row] for row in exact.B]


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


def test_decoder_is_the_exact_weights_rounded_and_deterministic():
    n = 12
    code = gc.heterogeneous_exact(spread(n), 4)
    exact = gc.heterogeneous_exact(spread(n), 4, field="rational")
    patterns = [(1, 5, 6, 11), (), (3,), (0, 11), (2, 3, 4, 7)]          # sizes differ within one batch
    mask = np.ones((len(patterns), n), dtype=bool)
    for r, S in enumerate(patterns):
        mask[r, list(S)] = False
    A = code.decoders["lagrange"].matrices(code, mask)[:, 0]
    for r, S in enumerate(patterns):
        alone = code.decoders["lagrange"].matrices(code, mask[r:r + 1])[0, 0]
        np.testing.assert_array_equal(A[r], alone)                      # bit for bit, batched or not
        F = [i for i in range(n) if i not in S]
        a = exact.decoding_matrix(F)[0]
        assert (a @ exact.B).tolist() == [Fr(1)] * n
        assert all(a[i] == 0 for i in S) and all(A[r][i] == 0 for i in S)
        np.testing.assert_allclose(A[r], [float(v) for v in a], rtol=64 * np.finfo(float).eps, atol=0)


def test_decoder_weights_are_the_interpolation_weights():
    # the O(n s) closed form equals the O(K^2) Lagrange-interpolation weights of adversarial_fourier, exactly
    from gradcodes._families import adversarial_fourier as fourier

    for speeds, s, k in [([1, 2, 3, 1, 2, 3, 5], 3, 9), ([Fr(1, 100), 1, 1, 1], 1, 2), ([1] * 9, 3, None)]:
        code = gc.heterogeneous_exact(speeds, s, k, field="rational")
        n = code.n
        for S in itertools.islice(itertools.chain.from_iterable(itertools.combinations(range(n), r)
                                                                for r in range(s + 1)), 40):
            F = [i for i in range(n) if i not in S]
            Q = F[:n - s]
            w = fourier.weights_exact([code.nodes[i] for i in Q], [code.scale_exponents[i] for i in Q], 1, code.rho)
            ref = [Fr(0)] * n
            for c, i in enumerate(Q):
                ref[i] = w[0][c]
            assert code.decoding_matrix(F)[0].tolist() == ref


def test_mutation_breaks_the_proof():
    code = gc.heterogeneous_exact(spread(8), 2, field="rational")
    B = code.B.copy()
    i, j = np.argwhere(B != 0)[3]
    B[i, j] += Fr(1, 1000)
    mutant = gc.GradientCode(B, 2, field="rational", decoders=[code.decoders["lagrange"]],
                             default_decoder="lagrange")
    assert gc.verify(mutant).verdict == "FAILS"


def test_save_load_restores_the_family_decoder(tmp_path):
    code = gc.heterogeneous_exact([1, Fr(5, 2), 3, 0.75, 2], 2, 8)
    path = tmp_path / "het.npz"
    gc.save_code(code, path)
    back = gc.load_code(path)
    assert back == code and back.default_decoder == "lagrange" and back.time == code.time
    assert back.params["speeds"] == ["1", "5/2", "3", "3/4", "2"]


def test_a_file_saved_by_the_old_construction_loads_its_own_matrix(tmp_path):
    # the worked example as saved before the Fourier form (Lagrange weights over the nodes 20n + i): same params,
    # another B; it loads its own matrix with the generic decoders and a warning, as any edited file does
    old_B = [[41, 41, 0, 0, 0, 0], [0, 0, 41.5, 41.5, 0, 0], [-40, -40, 0, 0, 83, 83], [0, 0, -40.5, -40.5, -82, -82]]
    new = gc.heterogeneous_exact([1, 1, 2, 2], 1, 6)
    old = gc.GradientCode(np.array(old_B, dtype=float), 1, name=new.name, family=new.family, params=new.params)
    path = tmp_path / "old.npz"
    gc.save_code(old, path)
    with pytest.warns(RuntimeWarning, match="differs"):
        back = gc.load_code(path)
    assert np.array_equal(back.B, old.B) and "lagrange" not in back.decoders
    np.testing.assert_allclose(back.decode([0, 2, 3], back.encode(np.eye(6))), np.ones(6), rtol=1e-12)


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
    X = [int(v * 2**24) for v in code.nodes]                       # p divides no node difference, no denominator
    assert p % 2 and all((a - b) % p for a, b in itertools.combinations(X, 2))
    assert all(Fr(v).denominator % p for v in gc.heterogeneous_exact(speeds, s, k, field="rational").B.ravel())
    gf = code.in_field("GF")
    assert gf.loads.tolist() == code.loads.tolist()


def test_gf_field_bad_input():
    import galois

    code = gc.heterogeneous_exact([1, 2, 3], 1)
    with pytest.raises(gc.GradcodesValueError, match="coprime"):
        code.in_field(galois.GF(2))
    with pytest.raises(gc.GradcodesValueError, match="field"):
        code.in_field("GF(7)")
    with pytest.raises(gc.GradcodesTypeError, match="field"):
        code.in_field(7)


def _worst_window_error(code):
    """Worst float64 relative error of the decoded sum over every window of s consecutive stragglers."""
    n, s = code.n, code.s
    G = 1 + 0.1 * np.random.default_rng(0).standard_normal((code.k, 64))
    Y, truth = code.encode(G), G.sum(axis=0)
    mask = np.ones((n, n), dtype=bool)
    for t in range(n):
        mask[t, (t + np.arange(s)) % n] = False
    A = code.decoding_matrices(mask)[:, 0, :]
    return float((np.abs(A @ Y - truth).max(axis=1) / np.abs(truth).max()).max())


def test_clustered_stragglers_decode_accurately_in_float64():
    # the old real integer nodes 20n + i (extrapolation to 0): 2.3e-2 at (100, 25) and 1.9e-11 at (50, 12), the worst
    # case growing like 4^s; the Cayley nodes and the top Fourier functional grow like ~1.9^s
    assert _worst_window_error(gc.heterogeneous_exact(spread(60), 15)) <= 1e-10        # old: 5.9e-10
    assert _worst_window_error(gc.heterogeneous_exact(spread(100), 20)) <= 1e-10       # old: 6.0e-5
    assert _worst_window_error(gc.heterogeneous_exact(spread(100), 25)) <= 1e-8        # old: 2.3e-2


def test_b_fits_float32_at_large_s():
    big = gc.heterogeneous_exact(spread(24), 20, field="rational")
    F = list(range(4, 24))
    assert (big.decoding_matrix(F) @ big.B == big.target).all()         # exact recovery, in Fractions
    assert np.isfinite(gc.heterogeneous_exact(spread(24), 20).B.astype(np.float32)).all()


@pytest.mark.parametrize(("n", "s"), [(12, 2), (20, 4), (100, 24), (100, 9)])
def test_equal_speeds_with_s_plus_1_dividing_n_is_fractional_repetitions_placement(n, s):
    """docs/heterogeneous_exact.md: with equal speeds, k = n and (s + 1) | n, workers i and i' with
    i (s + 1) = i' (s + 1) (mod n) store the same s + 1 partitions, and the support sets are exactly those of
    fractional repetition (which decodes them with 0/1 coefficients)."""
    code = gc.heterogeneous_exact([1] * n, s)
    sup = [tuple(int(j) for j in row) for row in code.supports]
    assert set(sup) == {tuple(int(j) for j in row) for row in gc.fractional_repetition(n, s).supports}
    for i in range(n):
        for i2 in range(n):
            assert (sup[i] == sup[i2]) == (i * (s + 1) % n == i2 * (s + 1) % n)
