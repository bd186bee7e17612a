"""The expected-error / bias evaluator for approximate codes under random stragglers."""

from __future__ import annotations

from fractions import Fraction as F
from itertools import product

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import gradcodes as gc

P3 = [F(1, 10), F(1, 5), F(1, 2)]


def brute_force(B, w, p, G):
    """E||ghat - g||^2 and E[ghat] - g by explicit loops over all patterns (fixed-weight decoder)."""
    n, k = len(B), len(B[0])
    err, bias = 0, [0] * len(G[0])
    for resp in product([False, True], repeat=n):
        prob = 1
        for i in range(n):
            prob *= (1 - p[i]) if resp[i] else p[i]
        coeff = [sum(w[i] * B[i][j] for i in range(n) if resp[i]) - 1 for j in range(k)]
        r = [sum(coeff[j] * G[j][c] for j in range(k)) for c in range(len(G[0]))]
        err += prob * sum(x * x for x in r)
        bias = [b + prob * x for b, x in zip(bias, r, strict=True)]
    return err, bias


@settings(max_examples=20, deadline=None)
@given(st.integers(1, 4), st.integers(1, 4), st.data())
def test_enumeration_equals_brute_force_and_closed_form(n, k, data):
    """A random rational code with random fixed weights (biased in general) and random rational G."""
    frac = st.integers(-6, 6).map(lambda a: F(a, 3))
    B = [[data.draw(frac) for _ in range(k)] for _ in range(n)]
    w = [data.draw(frac) for _ in range(n)]
    p = [data.draw(st.integers(1, 9).map(lambda a: F(a, 10))) for _ in range(n)]
    G = [[data.draw(frac) for _ in range(2)] for _ in range(k)]
    code = gc.ApproximateCode(np.array(B, dtype=object), field="rational",
                              decoders=[gc.FixedWeightDecoder("w", np.array(w, dtype=object))],
                              default_decoder="w", straggle_probabilities=np.array(p, dtype=object))
    rep = gc.evaluate_approximate(code, np.array(G, dtype=object), batch_size=3)
    err, bias = brute_force(B, w, p, G)
    assert rep.exact
    assert rep.expected_error == err == rep.closed_form
    assert rep.bias.tolist() == bias
    assert rep.unbiased == all(b == 0 for b in bias)


def test_song_choi_closed_form_formula():
    code = gc.heterogeneous(P3, 3)
    G = np.array([[F(1), F(2)], [F(-3), F(1, 2)], [F(0), F(5)]], dtype=object)
    delta = [q / (1 - q) for q in P3]
    rows = code.B @ G
    expected = sum(d * (r * r).sum() for d, r in zip(delta, rows, strict=True))
    assert gc.closed_form_error(code, G) == expected
    assert gc.evaluate_approximate(code, G).expected_error == expected


def test_float_enumeration_matches_exact():
    code = gc.heterogeneous(P3, 3)
    codef = gc.heterogeneous([float(x) for x in P3], 3)
    ee = gc.evaluate_approximate(code).expected_error
    ef = gc.evaluate_approximate(codef)
    assert not ef.exact and ef.method == "enumerate"
    assert ef.expected_error == pytest.approx(float(ee), rel=1e-12)
    assert ef.unbiased and ef.bias_norm < 1e-14


def test_monte_carlo_agrees_with_enumeration_and_is_seeded():
    rng = np.random.default_rng(3)
    p = rng.uniform(0.05, 0.5, 8)
    code = gc.heterogeneous(p, 9)
    exact = gc.evaluate_approximate(code, method="enumerate")
    mc = gc.evaluate_approximate(code, method="montecarlo", samples=20000, rng=7)
    assert mc.method == "montecarlo" and mc.patterns == 20000 and mc.expected_error_stderr > 0
    assert abs(mc.expected_error - exact.expected_error) < 4 * mc.expected_error_stderr
    assert mc.unbiased  # consistent with zero
    again = gc.evaluate_approximate(code, method="montecarlo", samples=20000, rng=7)
    assert again.expected_error == mc.expected_error
    other = gc.evaluate_approximate(code, method="montecarlo", samples=20000, rng=8)
    assert other.expected_error != mc.expected_error
    # the closed form is reported next to the Monte Carlo estimate
    assert mc.closed_form == pytest.approx(exact.expected_error, rel=1e-12)


def test_monte_carlo_bias_test_is_not_scaled_by_the_gradient_norm():
    # bias -0.3 per coordinate, ||bias|| = 3 against Monte Carlo noise sqrt(100 * 0.21 / 200) = 0.32
    code = gc.ignore_stragglers(100, p=0.3, decoder="sum")
    rep = gc.evaluate_approximate(code, method="montecarlo", samples=200, rng=0)
    assert rep.bias_norm == pytest.approx(3.0, rel=0.1) and rep.bias_stderr == pytest.approx(0.32, rel=0.1)
    assert not rep.unbiased


def test_monte_carlo_detects_bias():
    code = gc.ignore_stragglers(30, p=0.3, decoder="sum")
    rep = gc.evaluate_approximate(code, method="montecarlo", samples=4000, rng=1)
    assert not rep.unbiased
    assert rep.bias_norm == pytest.approx(0.3 * np.sqrt(30), rel=0.05)
    # beyond max_enumerate a fixed-weight decoder gets the exact closed form: bias -p, error 30 p
    closed = gc.evaluate_approximate(code)
    assert closed.method == "closed" and not closed.unbiased
    assert closed.bias == pytest.approx([-0.3] * 30) and closed.expected_error == pytest.approx(9.0)
    assert abs(rep.expected_error - closed.expected_error) < 4 * rep.expected_error_stderr


@settings(max_examples=15, deadline=None)
@given(st.lists(st.integers(1, 19).map(lambda a: F(a, 20)), min_size=1, max_size=6), st.integers(0, 4),
       st.sampled_from(["aligned", "orthonormal"]))
def test_closed_method_equals_enumeration(p, extra, gradients):
    code = gc.stochastic_gc(len(p), 1 + extra % len(p), p, k=len(p) + extra)
    a = gc.evaluate_approximate(code, gradients, method="closed")
    b = gc.evaluate_approximate(code, gradients, method="enumerate")
    assert a.exact and b.exact and a.method == "closed"
    assert a.expected_error == b.expected_error and a.bias.tolist() == b.bias.tolist()


def test_closed_method_needs_fixed_weights():
    with pytest.raises(ValueError, match="fixed-weight decoder"):
        gc.evaluate_approximate(gc.erasurehead(4, 2, p=0.2), method="closed")


def test_rescale_decoder_bias_exact():
    # homogeneous p: E[(n/|R|) 1_R] = (1 - p^n) 1, so the bias is -p^n per coordinate
    p = F(1, 3)
    code = gc.ignore_stragglers(4, p=[p] * 4, decoder="rescale")
    rep = gc.evaluate_approximate(code)
    assert rep.exact
    assert rep.bias.tolist() == [-(p ** 4)] * 4
    assert not rep.unbiased


def test_aligned_and_orthonormal_relative_errors():
    code = gc.heterogeneous(P3, 3)
    orth = gc.evaluate_approximate(code)
    al = gc.evaluate_approximate(code, "aligned")
    assert orth.relative_error == orth.expected_error / 3
    assert al.relative_error == al.expected_error / 9


def test_report_rendering():
    code = gc.heterogeneous(P3, 3)
    rep = gc.evaluate_approximate(code)
    s = str(rep)
    assert "1441/3528" in s and "unbiased" in s and "meets" in s
    row = rep.tour_row()
    assert row["result"] == "unbiased" and row["exhaustive"] == "yes"
    assert row["replication / bound"] == "1.67 / 1.67"
    mc = gc.evaluate_approximate(gc.heterogeneous([0.2] * 20, 20), method="montecarlo", samples=500)
    assert "±" in mc.tour_row()["E|err|^2/|g|^2"] and "Monte Carlo" in str(mc)


def test_p_override_and_missing():
    code = gc.bernoulli_gc(5, 2, rng=0)
    with pytest.raises(ValueError, match="straggle_probabilities"):
        gc.evaluate_approximate(code)
    rep = gc.evaluate_approximate(code, p=0.2)
    assert rep.patterns == 32
    with pytest.raises(ValueError, match="length n = 5"):
        gc.evaluate_approximate(code, p=[0.1, 0.2])


@pytest.mark.parametrize("kwargs, exc, match", [
    ({"method": "exhaustive"}, ValueError, "method must be"),
    ({"p": [0.1, 1.0, 0.2]}, ValueError, r"p\[1\]"),
    ({"samples": 1}, ValueError, "samples must be an integer >= 2"),
    ({"samples": 2.5}, TypeError, "samples must be an integer"),
    ({"batch_size": 0}, ValueError, "batch_size"),
    ({"batch_size": 1 << 30}, ValueError, r"batch_size must be an integer in \[1, 1048576\]"),
    ({"max_enumerate": 30}, ValueError, r"max_enumerate must be an integer in \[0, 24\]"),
    ({"rng": "x", "method": "montecarlo"}, TypeError, "rng"),
    ({"decoder": "nope"}, ValueError, "decoder must be one of"),
    ({"decoder": 3}, TypeError, "decoder must be a name or a Decoder"),
    ({"gradients": np.ones((4, 2))}, ValueError, r"shape \(k, length\) = \(3, length\)"),
    ({"gradients": np.ones((3, 0))}, ValueError, r"length >= 1"),
    ({"gradients": "random"}, ValueError, "gradients must be"),
    ({"gradients": np.array([[np.nan], [1.0], [1.0]])}, ValueError, "finite"),
    ({"gradients": np.array([[np.inf], [1], [F(1, 2)]], dtype=object)}, ValueError, "finite"),
    ({"gradients": np.array([[1j], [1.0], [1.0]])}, TypeError, "real"),
    ({"gradients": np.array([["a"], ["b"], ["c"]])}, TypeError, "real"),
    ({"gradients": np.array([[None], [1], [2]], dtype=object)}, TypeError, "real numbers"),
    ({"p": {0.1, 0.2, 0.3}}, TypeError, "p must be a sequence or array"),
])
def test_bad_arguments(kwargs, exc, match):
    code = gc.heterogeneous([0.1, 0.2, 0.5], 3)
    with pytest.raises(exc, match=match):
        gc.evaluate_approximate(code, **kwargs)


def test_enumerate_refuses_huge_n():
    code = gc.heterogeneous([0.1] * 25, 25)
    with pytest.raises(ValueError, match="n <= 24"):
        gc.evaluate_approximate(code, method="enumerate")
    # Fraction enumeration grows ~4x per worker (minutes at n = 16): refused beyond n = 14, with alternatives
    code = gc.heterogeneous([F(1, 3)] * 15, 15)
    with pytest.raises(ValueError, match=r"exact \(Fraction\) enumeration.*n <= 14.*method='closed'"):
        gc.evaluate_approximate(code, method="enumerate")
    assert gc.evaluate_approximate(code, method="enumerate", p=[0.1] * 15).method == "enumerate"  # float p


def test_not_a_code():
    with pytest.raises(TypeError, match="code must be a gradcodes code"):
        gc.evaluate_approximate(np.eye(3), p=0.1)
    with pytest.raises(TypeError, match="code must be a gradcodes code"):
        gc.closed_form_error("heterogeneous")


def test_exactness_follows_the_inputs():
    """A rational code evaluated with float p or float gradients is a float evaluation, not 'exact' floats."""
    code = gc.heterogeneous(P3, 3)
    rep = gc.evaluate_approximate(code, p=0.2)
    assert not rep.exact and isinstance(rep.expected_error, float)
    assert rep.expected_error == pytest.approx(float(gc.evaluate_approximate(code, p=F(1, 5)).expected_error))
    Gf = np.array([[0.5], [0.25], [1.0]], dtype=object)
    rep = gc.evaluate_approximate(code, Gf)
    assert not rep.exact and isinstance(rep.expected_error, float)
    # integer gradients stay exact
    Gi = np.array([[2], [1], [4]])
    rep = gc.evaluate_approximate(code, Gi)
    Gx = np.array([[F(1, 2)], [F(1, 4)], [F(1)]], dtype=object)
    assert rep.exact and rep.expected_error == 16 * gc.evaluate_approximate(code, Gx).expected_error
    assert rep.expected_error == pytest.approx(16 * gc.evaluate_approximate(code, Gf).expected_error, rel=1e-12)
    # a float code with Fraction probabilities is evaluated in float (not in slow object arithmetic)
    rep = gc.evaluate_approximate(gc.bernoulli_gc(4, 2, p=F(1, 3), rng=1))
    assert not rep.exact and isinstance(rep.expected_error, float)


def test_fixed_weight_decoder_validation():
    with pytest.raises(ValueError, match="finite"):
        gc.FixedWeightDecoder("w", [1.0, np.nan])
    with pytest.raises(TypeError, match="real numbers"):
        gc.FixedWeightDecoder("w", ["a", "b"])
    with pytest.raises(TypeError, match="name"):
        gc.FixedWeightDecoder(3, [1.0, 2.0])
    dec = gc.FixedWeightDecoder("w", np.array([1, F(1, 2)], dtype=object))
    assert dec.exact and dec.weights.tolist() == [F(1), F(1, 2)]
    code = gc.ApproximateCode(np.ones((2, 4)), m=2, decoders=[gc.FixedWeightDecoder("w", [1.0, 1.0])],
                              default_decoder="w")
    with pytest.raises(ValueError, match="needs m = 1"):
        code.decoding_matrix([0, 1])


def test_closed_form_needs_fixed_weights():
    code = gc.ignore_stragglers(3, p=0.2, decoder="rescale")
    with pytest.raises(ValueError, match="fixed weights"):
        gc.closed_form_error(code)
    assert gc.evaluate_approximate(code).closed_form is None


def test_min_load_report_for_baselines():
    p = [F(1, 5)] * 4
    rep = gc.evaluate_approximate(gc.stochastic_gc(4, 2, p))
    assert rep.replication == 2 and rep.load_lower_bound == F(7, 4) and not rep.meets_lower_bound


# ------------------------------------------------------------------------------------------------------
# mutation, CLI, tour, files
# ------------------------------------------------------------------------------------------------------


def test_corrupted_matrix_is_reported_biased():
    """Mutation test: perturbing one coefficient of an unbiased code makes its column sum != 1."""
    code = gc.heterogeneous(P3, 3)
    B = code.B.copy()
    B[1, 2] += F(1, 100)
    bad = gc.ApproximateCode(B, decoders=[code.decoders["weighted"]], default_decoder="weighted",
                             straggle_probabilities=code.straggle_probabilities)
    rep = gc.evaluate_approximate(bad)
    assert not rep.unbiased
    # E[ghat] - g = (column sums of alpha - 1) with g_j = e_j: only column 2 is off, by exactly 1/100
    assert rep.bias.tolist() == [0, 0, F(1, 100)]
    assert rep.expected_error == rep.closed_form != gc.evaluate_approximate(code).expected_error


def test_cli_evaluate(capsys):
    from gradcodes.cli import main

    assert main(["evaluate", "heterogeneous", "--param", "p=1/10,1/5,1/2", "-k", "3"]) == 0
    out = capsys.readouterr().out
    assert "1441/3528" in out and "unbiased" in out and "meets it" in out
    assert main(["evaluate", "ehd", "-n", "20", "--samples", "500", "--mc-seed", "3"]) == 0
    assert "Monte Carlo, 500 samples, seed 3" in capsys.readouterr().out
    assert main(["evaluate", "ehd", "-n", "7"]) == 2
    assert "must divide n" in capsys.readouterr().err
    assert main(["evaluate", "sgc", "-n", "40", "--method", "closed"]) == 0
    assert "(closed form)" in capsys.readouterr().out


def test_cli_build_then_evaluate(tmp_path, capsys):
    from gradcodes.cli import main

    path = str(tmp_path / "h.npz")
    assert main(["build", "heterogeneous", "--param", "p=1/10,1/5,1/2", "-k", "3", "-o", path]) == 0
    assert main(["evaluate", path, "--gradients", "aligned"]) == 0
    assert "= 9/14 (all 8 patterns, exact)" in capsys.readouterr().out


def test_tour_rows_for_approximate_schemes():
    import io

    from gradcodes._cli.tour import tour

    rows = tour(["heterogeneous", "is_sgd", "sgc", "ehd", "bgc", "od"], quick=True, out=io.StringIO())
    by = {r["scheme"]: r for r in rows}
    assert by["heterogeneous"]["result"] == "unbiased"
    # typed rows (the display table keeps "1.67 / 1.67"; the rows were display strings before)
    assert by["heterogeneous"]["replication"] == pytest.approx(5 / 3)
    assert by["heterogeneous"]["replication_lower_bound"] == pytest.approx(5 / 3)
    assert by["sgc"]["result"] == "unbiased" and by["is_sgd"]["result"] == "unbiased"
    assert by["ehd"]["result"] == "BIASED" and by["od"]["result"] == "BIASED"
    assert all(r["result"] != "FAILS" for r in rows)


@pytest.mark.parametrize("build", [
    lambda: gc.heterogeneous(P3, 3, "II"),
    lambda: gc.heterogeneous([0.1, 0.3, 0.6, 0.2], 5),
    lambda: gc.stochastic_gc(4, 2, [F(1, 3)] * 4, assignment="random", rng=5),
    lambda: gc.ignore_stragglers(3, p=P3),
    lambda: gc.erasurehead(4, 2, p=0.3, decoder="unbiased"),
    lambda: gc.bernoulli_gc(6, 2, p=0.2, rng=3),
    lambda: gc.optimal_decoding(6, 3, p=0.2, rng=3),
])
def test_save_load_roundtrip(tmp_path, build):
    code = build()
    path = str(tmp_path / "c.npz")
    gc.save_code(code, path)
    back = gc.load_code(path)
    assert back.family == code.family and back.default_decoder == code.default_decoder
    assert (np.asarray(back.B) == np.asarray(code.B)).all()
    a = gc.evaluate_approximate(code, method="enumerate")
    b = gc.evaluate_approximate(back, method="enumerate")
    assert a.expected_error == b.expected_error and a.exact == b.exact


def test_auto_method_choice():
    p = [F(1, 3)] * 14
    assert gc.evaluate_approximate(gc.heterogeneous(p, 14)).method == "closed"  # exact closed form, n > 12
    rep = gc.evaluate_approximate(gc.erasurehead(14, 2, p=p))
    assert rep.method == "enumerate" and not rep.exact  # no closed form: float enumeration
    # homogeneous p: each group is silent with probability (1/3)^2, losing its 2 partitions (see test_baselines)
    assert rep.expected_error == pytest.approx(7 * 2 / 9, rel=1e-12)
    assert gc.evaluate_approximate(gc.erasurehead(18, 2, p=0.3), samples=300).method == "montecarlo"


def test_monte_carlo_standard_error_without_cancellation():
    """Per-pattern errors ~3e8 varying by ~0.2: sum-of-squares variance cancels to 0 (the old code reported
    ± 0.0); shifted sums give the true standard error sqrt(3 (2e-9 1e8)^2 / 4 / N)."""
    code = gc.ApproximateCode(1e-9 * np.eye(3), decoders=[gc.FixedWeightDecoder("w", np.ones(3))],
                              default_decoder="w", straggle_probabilities=[0.5] * 3)
    G = 1e4 * np.eye(3)
    mc = gc.evaluate_approximate(code, G, method="montecarlo", samples=20000, rng=0)
    assert mc.expected_error_stderr == pytest.approx(np.sqrt(3 * 0.2**2 / 4 / 20000), rel=0.05)
    exact = gc.evaluate_approximate(code, G, method="enumerate").expected_error
    assert abs(mc.expected_error - exact) < 4 * mc.expected_error_stderr


def test_exponential_straggle_probabilities_model():
    """p_i = P(1 + Exp(psi_i) > tau) = exp(-psi_i (tau - 1)) with psi_i ~ U(lo, hi) drawn from the seed."""
    p = gc.exponential_straggle_probabilities(6, 1.5, psi=np.array([0.1, 2.0]), rng=4)
    psi = np.random.default_rng(4).uniform(0.1, 2.0, size=6)
    np.testing.assert_allclose(p, np.exp(-psi * 0.5), rtol=1e-15)
    # Monte Carlo check of the straggler semantics for one rate
    t = 1 + np.random.default_rng(0).exponential(1 / psi[0], size=200_000)
    assert abs((t > 1.5).mean() - p[0]) < 4 * np.sqrt(p[0] * (1 - p[0]) / t.size)
    for bad, exc in (((1,), ValueError), ("ab", ValueError), ((2.0, 1.0), ValueError), ((0.0, 1.0), ValueError)):
        with pytest.raises(exc, match="psi"):
            gc.exponential_straggle_probabilities(3, 1.5, psi=bad)
    with pytest.raises(ValueError, match=r"tau must be a finite real number in \(1.0, inf\)"):
        gc.exponential_straggle_probabilities(3, 1.0)
