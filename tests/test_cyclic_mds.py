"""Cyclic-MDS codes (Raviv et al. 2018): worked examples, exact GF(p) verification, decoders, numerics, bad input."""

from __future__ import annotations

import itertools
import math

import galois
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import gradcodes as gc
from gradcodes._families.cyclic_mds import gf_prime

PHI = (1 + math.sqrt(5)) / 2


# --------------------------------------------------------------------------- worked examples (exact vectors)
EX_N4_S1 = {  # n=4, s=1, textbook window, monic g: c = (-i, 1, 0, 0)
    (0, 1, 2): [1j, 1 + 1j, 1, 0],
    (0, 1, 3): [1 + 1j, 1, 0, 1j],
    (0, 2, 3): [1, 0, 1j, 1 + 1j],
    (1, 2, 3): [0, 1j, 1 + 1j, 1],
}


@pytest.mark.parametrize("decoder", ["barycentric", "product", "spectral", "lstsq"])
@pytest.mark.parametrize("F", sorted(EX_N4_S1))
def test_example_n4_s1(F, decoder):
    code = gc.cyclic_mds(4, 1, placement="textbook", normalize="monic")
    np.testing.assert_allclose(code.B, [[-1j, 1, 0, 0], [0, -1j, 1, 0], [0, 0, -1j, 1], [1, 0, 0, -1j]],
                               atol=1e-15)
    a = code.decoding_matrix(F, decoder=decoder)[0]
    np.testing.assert_allclose(a, EX_N4_S1[F], atol=1e-12)


def test_example_n3_s1():
    code = gc.cyclic_mds(3, 1, placement="textbook", normalize="monic")
    np.testing.assert_allclose(code.B[0], [0.5 - math.sqrt(3) / 2 * 1j, 1, 0], atol=1e-15)
    for r in range(3):   # the other two sets follow by cyclic shift
        F = sorted({r, (r + 1) % 3})
        a = code.decoding_matrix(F, decoder="barycentric")[0]
        expect = np.roll([0.5 + math.sqrt(3) / 2 * 1j, 1, 0], r)
        np.testing.assert_allclose(a, expect, atol=1e-12)


EX_REAL_N5 = {  # n=5, s=2, real, monic: c = (1, φ, 1, 0, 0)
    (0, 1, 2): [1, 1 - PHI, 1, 0, 0],
    (0, 1, 3): [2 - PHI, 2 - PHI, 0, PHI - 1, 0],
    (0, 1, 4): [1 - PHI, 1, 0, 0, 1],
}


@pytest.mark.parametrize("decoder", ["barycentric", "spectral", "lstsq", "nullspace"])
@pytest.mark.parametrize("F", sorted(EX_REAL_N5))
def test_example_n5_s2(F, decoder):
    code = gc.cyclic_mds(5, 2, field="real", normalize="monic")
    assert code.field == "real"
    np.testing.assert_allclose(code.B[0], [1, PHI, 1, 0, 0], atol=1e-14)
    np.testing.assert_allclose(code.decoding_matrix(F, decoder=decoder)[0], EX_REAL_N5[F], atol=1e-12)


def test_example_n4_s1_real():
    code = gc.cyclic_mds(4, 1, field="R", normalize="monic")
    np.testing.assert_allclose(code.B, [[1, 1, 0, 0], [0, 1, 1, 0], [0, 0, 1, 1], [1, 0, 0, 1]], atol=1e-15)
    for F, a in {(0, 1, 2): [1, 0, 1, 0], (0, 1, 3): [0, 1, 0, 1], (0, 2, 3): [1, 0, 1, 0],
                 (1, 2, 3): [0, 1, 0, 1]}.items():
        np.testing.assert_allclose(code.decoding_matrix(F, decoder="barycentric")[0], a, atol=1e-12)


# --------------------------------------------------------------------------- structure
@pytest.mark.parametrize("n,s,field", [(7, 2, "complex"), (9, 4, "real"), (12, 5, "complex"), (12, 3, "real"),
                                       (10, 0, "complex")])
def test_structure_load_and_support(n, s, field):
    code = gc.cyclic_mds(n, s, field)
    assert code.load == s + 1 and (code.loads == s + 1).all()
    for i, sup in enumerate(code.supports):
        assert sorted(sup.tolist()) == sorted(((i + np.arange(s + 1)) % n).tolist())
    if field == "real":
        assert code.field == "real" and code.B.dtype == np.float64
    assert abs(code.B[0].sum() - 1) < 1e-12          # normalize="sum"


@pytest.mark.parametrize("n,s", [(20, 5), (41, 10), (100, 25)])
def test_centered_codeword_is_nonnegative_with_unit_l1(n, s):
    c = gc.cyclic_mds(n, s, "real").B[0]
    assert c.min() > -1e-15 and abs(np.abs(c).sum() - 1) < 1e-12
    chat = np.fft.ifft(c) * n                          # c(ω^f): exact zeros on the window
    z0 = (n - s) // 2
    assert np.abs(chat[z0 + 1:z0 + s + 1]).max() < 1e-14


def test_textbook_codeword_grows_centered_does_not():
    tb = gc.cyclic_mds(100, 10, placement="textbook").B[0]
    ce = gc.cyclic_mds(100, 10).B[0]
    assert np.abs(tb).sum() > 1e7                      # numerics.md: ||c||_1 = 3e8 at (100, 10)
    assert 1 <= np.abs(ce).sum() < 1.01                # n - s even: complex, nearly nonnegative up to a phase ramp


def _exact_generator(n: int, s: int, m: int) -> list:
    """Coefficients of ∏_{f=m}^{m+s-1} (x - ω^f) multiplied out in 120-digit arithmetic (mpmath).

    Σc cancels 66 digits at (500, 125), textbook window.
    """
    mp = pytest.importorskip("mpmath")
    with mp.workdps(120):
        c = [mp.mpc(1)]
        for f in range(m, m + s):
            r = mp.expjpi(mp.mpf(2 * f) / n)
            c = [(c[t - 1] if t else 0) - r * (c[t] if t < len(c) else 0) for t in range(len(c) + 1)]
        g1 = mp.fsum(c)
        return [complex(v) for v in c], complex(g1)


@pytest.mark.parametrize("n,s,placement", [(20, 5, "textbook"), (100, 10, "textbook"), (200, 50, "textbook"),
                                           (500, 125, "textbook"), (100, 25, "centered"), (128, 125, "centered")])
@pytest.mark.parametrize("normalize", ["sum", "monic"])
def test_codeword_matches_high_precision(n, s, placement, normalize):
    """Both normalisations, to ~1e-13 relative, even where ||c||_1 / |c(1)| = 3e66 (textbook (500, 125)): the scale
    must not come from summing the computed coefficients (that sum is pure rounding there)."""
    g, g1 = _exact_generator(n, s, 1 if placement == "textbook" else (n - s) // 2 + 1)
    expect = np.array(g) / (g1 if normalize == "sum" else 1)
    code = gc.cyclic_mds(n, s, placement=placement, normalize=normalize)
    c = code.B[0]
    assert np.abs(c[s + 1:]).max(initial=0) == 0
    assert np.abs(c[: s + 1] - expect).max() <= 1e-12 * np.abs(expect).max()
    assert code._cyclic["c1"] == pytest.approx(1 if normalize == "sum" else g1, rel=1e-12)


def test_codeword_overflow_is_an_error():
    with pytest.raises(ValueError, match="overflows float64.*centered"):
        gc.cyclic_mds(2600, 650, placement="textbook")      # coefficients ~1e351 with Σc = 1


# --------------------------------------------------------------------------- exact verification over GF(p)
@given(st.integers(2, 11).flatmap(lambda n: st.tuples(st.just(n), st.integers(0, n - 1))),
       st.sampled_from(["complex", "real"]), st.sampled_from(["centered", "textbook"]))
def test_hypothesis_exact_recovery_over_gf(ns, field, placement):
    n, s = ns
    if field == "real" and placement == "textbook":
        return
    try:
        code = gc.cyclic_mds(n, s, field, placement=placement)
    except ValueError:
        assert field == "real" and (n - s) % 2 == 0 and n % (s + 1)
        return
    rep = gc.verify(code, field="GF", limit=10**6)
    assert rep.exact and rep.exhaustive and rep.patterns_checked == math.comb(n, s)
    assert rep.field == f"GF({gf_prime(n)})"


def test_gf_builder_given_field_and_primes():
    code = gc.cyclic_mds(8, 3)
    rep = gc.verify(code, field=galois.GF(17))
    assert rep.exact and rep.exhaustive and rep.field == "GF(17)"
    gfc = code.in_field(galois.GF(97))              # 97 ≡ 1 mod 8: a different prime works too
    assert gc.verify(gfc).exact
    assert gf_prime(16) == 17 and gf_prime(12) == 13
    with pytest.raises(ValueError, match="n must be"):
        gf_prime(0)                                   # used to loop forever (p += 0)
    with pytest.raises(TypeError, match="n must be"):
        gf_prime(2.0)
    p = gf_prime(500)
    assert p % 500 == 1 and galois.is_prime(p) and not any(galois.is_prime(q) for q in range(501, p, 500))


def test_gf_bad_field():
    code = gc.cyclic_mds(10, 3)
    with pytest.raises(ValueError, match="p ≡ 1"):
        code.in_field(galois.GF(13))
    with pytest.raises(ValueError, match="GF"):
        code.in_field("GF(11)")


def test_gf_closed_form_matches_exact_elimination():
    """The GF barycentric decoder and the generic exact elimination give the same (unique, MDS) vector."""
    gfc = gc.cyclic_mds(7, 3).in_field("GF")
    for S in itertools.combinations(range(7), 3):
        F = [i for i in range(7) if i not in S]
        a1 = gfc.decoding_matrix(F, decoder="barycentric")
        a2 = gfc.decoding_matrix(F, decoder="exact")
        assert np.array_equal(np.asarray(a1), np.asarray(a2))


def test_gf_mutation_rejected_with_failing_set():
    """A corrupted codeword over GF(p) is rejected, naming a failing responder set."""
    gfc = gc.cyclic_mds(6, 2).in_field("GF")
    B = gfc.B.copy()
    B[0, 1] += type(B)(1)
    bad = gc.verify(gc.GradientCode(B, 2))
    assert not bad.exact and bad.failing_responders is not None and len(bad.failing_responders) == 4


# --------------------------------------------------------------------------- float decoders
@pytest.mark.parametrize("n,s,field", [(10, 3, "complex"), (9, 4, "real"), (12, 5, "complex"), (6, 2, "real"),
                                       (13, 6, "real")])
def test_all_decoders_exhaustive(n, s, field):
    code = gc.cyclic_mds(n, s, field)
    for name in code.decoders:
        rep = gc.verify(code, decoder=name)
        assert rep.exact and rep.exhaustive, (name, str(rep))


def test_real_cyclic_fr_residue_decoder_is_01():
    code = gc.cyclic_mds(12, 2, "real")            # n - s even, (s+1) | n: cyclic fractional repetition
    assert code.default_decoder == "residue" and code.load == 3
    for S in itertools.combinations(range(12), 2):
        F = [i for i in range(12) if i not in S]
        a = code.decoding_matrix(F)[0]
        assert set(np.round(a, 12).tolist()) == {0.0, 3.0}     # weight 1/c_0 = s + 1 on one residue class
    assert gc.verify(code).exact


def test_decoders_agree_when_well_conditioned():
    code = gc.cyclic_mds(30, 4)
    rng = np.random.default_rng(0)
    mask = np.ones((20, 30), dtype=bool)
    for row in mask:
        row[rng.choice(30, 4, replace=False)] = False
    A = {d: code.decoding_matrices(mask, d) for d in ("spectral", "barycentric", "lstsq")}
    np.testing.assert_allclose(A["spectral"], A["lstsq"], atol=1e-10)
    np.testing.assert_allclose(A["barycentric"], A["lstsq"], atol=1e-10)


def test_textbook_product_equals_barycentric():
    code = gc.cyclic_mds(16, 5, placement="textbook")
    mask = np.ones((3, 16), dtype=bool)
    mask[0, [0, 1, 2, 3, 4]] = mask[1, [0, 3, 6, 9, 12]] = mask[2, [2, 5, 7, 11, 15]] = False
    np.testing.assert_allclose(code.decoding_matrices(mask, "product"), code.decoding_matrices(mask, "barycentric"),
                               rtol=1e-9, atol=1e-9)


def test_spectral_matches_lstsq_accuracy_at_scale():
    """numerics.md §4.2: min-norm decoding survives random stragglers at (500, 125) where the closed form fails."""
    code = gc.cyclic_mds(500, 125)
    rng = np.random.default_rng(1)
    F = np.sort(rng.choice(500, 375, replace=False))
    _, info = code.decode(F, np.ones((500, 4)), return_info=True)
    assert info.decoder == "spectral" and info.residual < 1e-12 and info.cancellation < 10
    mask = np.zeros((1, 500), dtype=bool)
    mask[0, F] = True
    exact_form = code.decoding_matrices(mask, "barycentric")    # the unique exact vector cancels enormously
    assert np.abs(exact_form).sum() / 500 > 1e6


def test_decode_end_to_end_float32_stays_float32():
    code = gc.cyclic_mds(21, 4, "real")
    G = (1 + 0.1 * np.random.default_rng(2).standard_normal((21, 64))).astype(np.float32)
    Y = code.encode(G)
    assert Y.dtype == np.float32
    g, info = code.decode([i for i in range(21) if i not in (3, 4, 9, 17)], Y, return_info=True)
    assert g.dtype == np.float32
    np.testing.assert_allclose(g, G.astype(np.float64).sum(axis=0), rtol=1e-5)
    assert info.error_estimate < 2e-5                     # the rigorous bound (1.1e-5); the error is below 1e-5


def test_complex_messages_for_complex_code():
    code = gc.cyclic_mds(10, 3)
    G = np.random.default_rng(3).standard_normal((10, 8))
    Y = code.encode(G)
    assert Y.dtype == np.complex128
    g = code.decode([0, 1, 2, 4, 5, 7, 9], Y)
    np.testing.assert_allclose(g.real, G.sum(axis=0), atol=1e-12)
    np.testing.assert_allclose(g.imag, 0, atol=1e-12)


# --------------------------------------------------------------------------- bad input
def test_invalid_real_field_names_alternatives():
    with pytest.raises(ValueError) as exc:
        gc.cyclic_mds(10, 2, "real")
    msg = str(exc.value)
    assert "n - s odd" in msg and "(s + 1) | n" in msg and "field='complex'" in msg and "cyclic_repetition" in msg


@pytest.mark.parametrize("kwargs,err", [({"n": 0, "s": 0}, ValueError), ({"n": 5, "s": 5}, ValueError),
                                        ({"n": 5, "s": -1}, ValueError), ({"n": 5.0, "s": 1}, TypeError),
                                        ({"n": 5, "s": 1, "field": "GF"}, ValueError),
                                        ({"n": 5, "s": 1, "field": ["real"]}, ValueError),
                                        ({"n": 5, "s": 1, "placement": "left"}, ValueError),
                                        ({"n": 5, "s": 1, "normalize": "max"}, ValueError)])
def test_bad_arguments(kwargs, err):
    with pytest.raises(err):
        gc.cyclic_mds(**kwargs)


def test_textbook_real_rejected():
    with pytest.raises(ValueError, match="centered"):
        gc.cyclic_mds(9, 4, "real", placement="textbook")


def test_too_few_responders_rejected():
    code = gc.cyclic_mds(8, 3)
    with pytest.raises(ValueError, match="at least 5"):
        code.decoding_matrix([0, 1, 2, 3])


def test_registered_and_save_load(tmp_path):
    assert "cyclic_mds" in gc.schemes()
    code = gc.cyclic_mds(9, 2, "real")
    gc.save_code(code, tmp_path / "c.npz")
    back = gc.load_code(tmp_path / "c.npz")
    np.testing.assert_array_equal(back.B, code.B)
    assert "spectral" in back.decoders


def test_cli_build_verify_and_clear_error(tmp_path, capsys):
    from gradcodes.cli import main

    path = tmp_path / "c.npz"
    assert main(["build", "cyclic_mds", "-n", "9", "-s", "4", "--param", "field=real", "-o", str(path)]) == 0
    assert main(["verify", str(path)]) == 0
    assert "126 of 126" in capsys.readouterr().out
    assert main(["verify", "cyclic_mds", "-n", "10", "-s", "2", "--param", "field=real"]) == 2
    assert "n - s odd" in capsys.readouterr().err
