"""BIBD gradient codes (Kadhe, Koyluoglu & Ramchandran 2019): designs, the closed-form decoder, exact errors."""

import itertools
import math
from fractions import Fraction as Fr

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import gradcodes as gc
from gradcodes._families.bibd import BIBDDecoder

# The Fano plane (PG(2, 2)) as the points 0..6 of the normalised vectors of GF(2)^3 in lex order:
# 001, 010, 011, 100, 101, 110, 111; line l contains the points p with p . l = 0 (mod 2).
FANO = [[1, 3, 5], [0, 3, 4], [2, 3, 6], [0, 1, 2], [1, 4, 6], [0, 5, 6], [2, 4, 5]]


def test_fano_worked_example_exact():
    assert gc.block_design("projective_plane", 2) == FANO
    code = gc.bibd_code("projective_plane", 2, field="rational")
    assert (code.v, code.b, code.r, code.block_size, code.lam) == (7, 7, 3, 3, 1)
    N = np.zeros((7, 7), dtype=int)
    for j, blk in enumerate(FANO):
        N[blk, j] = 1
    assert code.B.tolist() == [[Fr(int(x), 3) for x in row] for row in N]
    # every pair of stragglers: u = K r / (r - λ + λ f) = 9 / (2 + 5) on the 5 responders, error^2 = 7 - 5*9/7
    for S in itertools.combinations(range(7), 2):
        F = [i for i in range(7) if i not in S]
        u = code.decoding_matrix(F)[0]
        assert u.tolist() == [Fr(9, 7) if i in F else 0 for i in range(7)]
        R = u @ code.B - np.full(7, Fr(1), dtype=object)
        assert sum(x * x for x in R) == Fr(4, 7) == code.squared_error(2)


@pytest.mark.parametrize(("design", "q", "params"), [
    ("projective_plane", 2, (7, 7, 3, 3, 1)), ("projective_plane", 3, (13, 13, 4, 4, 1)),
    ("projective_plane", 5, (31, 31, 6, 6, 1)), ("projective_plane", 7, (57, 57, 8, 8, 1)),
    ("affine_plane", 2, (4, 6, 3, 2, 1)), ("affine_plane", 3, (9, 12, 4, 3, 1)), ("affine_plane", 5, (25, 30, 6, 5, 1)),
])
def test_named_designs_are_bibds(design, q, params):
    blocks = gc.block_design(design, q)
    v, b, r, K, lam = params
    assert len(blocks) == b and all(len(B) == K for B in blocks)
    N = np.zeros((v, b), dtype=np.int64)
    for j, B in enumerate(blocks):
        N[B, j] = 1
    np.testing.assert_array_equal(N @ N.T, (r - lam) * np.eye(v, dtype=np.int64) + lam)   # Stinson 2004, Chapter 1
    code = gc.bibd_code(design, q)
    assert (code.n, code.k, code.load) == (v, b, r) and np.all(code.replication == K)
    assert code.B.tolist() == (N / K).tolist()                  # every entry 1/K correctly rounded
    assert gc.bibd_code(design, q, field="rational").B.sum(axis=0).tolist() == [Fr(1)] * b


@pytest.mark.parametrize(("design", "q", "s"), [("projective_plane", 3, 3), ("affine_plane", 3, 2),
                                                ("projective_plane", 5, 2)])
def test_error_is_the_same_for_every_straggler_set(design, q, s):
    code = gc.bibd_code(design, q)
    rep = gc.worst_case_error(code, s, limit=10**5)
    assert rep.exhaustive
    expected = code.spectral_bound(s)
    assert rep.worst_lower == pytest.approx(expected, rel=1e-12)
    assert rep.average_error == pytest.approx(expected, rel=1e-12)


def test_closed_form_decoder_is_least_squares():
    code = gc.bibd_code("affine_plane", 3)
    rng = np.random.default_rng(0)
    for _ in range(10):
        mask = rng.random(code.n) < 0.7
        mask[0] = True
        u = code.decoding_matrix(mask)[0]
        v = code.decoding_matrix(mask, decoder="lstsq")[0]
        np.testing.assert_allclose(u, v, rtol=1e-10, atol=1e-12)


@settings(max_examples=30, deadline=None)
@given(q=st.sampled_from([2, 3, 5]), design=st.sampled_from(["projective_plane", "affine_plane"]), data=st.data())
def test_exact_error_formula(q, design, data):
    code = gc.bibd_code(design, q, field="rational")
    S = data.draw(st.lists(st.integers(0, code.n - 1), max_size=code.n - 1, unique=True))
    F = [i for i in range(code.n) if i not in S]
    u = code.decoding_matrix(F)[0]
    R = u @ code.B - np.full(code.k, Fr(1), dtype=object)
    assert sum(x * x for x in R) == code.squared_error(len(S))
    # the normal equations hold exactly: u is the least-squares decoder
    G = code.B[F] @ R
    assert all(x == 0 for x in G)


def test_adversary_gains_nothing_unlike_on_an_expander():
    bibd = gc.bibd_code("projective_plane", 3)                 # n = 13, load 4
    exp = gc.expander_code(13, 4, rng=0)
    for s in (2, 3, 4):
        rb, re = gc.worst_case_error(bibd, s), gc.worst_case_error(exp, s)
        assert rb.exhaustive and re.exhaustive
        assert rb.worst_lower == pytest.approx(rb.average_error, rel=1e-12)
        assert re.worst_lower > re.average_error * (1 + 1e-3)


def test_user_design_steiner_triple_system():
    sts9 = gc.block_design("affine_plane", 3)                  # STS(9) = AG(2, 3)
    code = gc.bibd_code(sts9)
    assert code.params["design"] == sts9 and code.name.startswith("bibd(")
    assert code == gc.bibd_code("affine_plane", 3).__class__(
        code.B, blocks=sts9, design=(9, 12, 4, 3, 1), s=None, field="real", name=code.name, family="bibd_code",
        params=code.params, decoders=[BIBDDecoder(4, 3, 1)], default_decoder="optimal")


def test_save_load_restores_the_decoder(tmp_path):
    for code in (gc.bibd_code("projective_plane", 3, s=2), gc.bibd_code(FANO, field="rational")):
        path = tmp_path / "b.npz"
        gc.save_code(code, path)
        back = gc.load_code(path)
        assert back == code and back.default_decoder == "optimal" and back.r == code.r


def test_mutation_changes_the_error():
    code = gc.bibd_code("projective_plane", 2, field="rational")
    B = code.B.copy()
    assert B[0, 0] == 0 and B[0, 1] == Fr(1, 3)
    B[0, 0], B[0, 1] = B[0, 1], B[0, 0]                      # move point 0 from block 1 to block 0
    mutant = gc.ApproximateCode(B, field="rational", decoders=[BIBDDecoder(3, 3, 1)], default_decoder="optimal")
    errs = {gc.approximation_error(mutant, [i for i in range(7) if i not in S]) for S in
            itertools.combinations(range(7), 2)}
    assert len(errs) > 1
    with pytest.raises(gc.GradcodesValueError, match="design"):
        gc.bibd_code([sorted(np.flatnonzero(B[:, j]).tolist()) for j in range(7)])


@pytest.mark.parametrize(("args", "kwargs", "exc", "word"), [
    (("projective_plane",), {}, ValueError, "q"),
    (("projective_plane", 4), {}, ValueError, "prime"),
    (("projective_plane", 1), {}, ValueError, "q"),
    (("projective_plane", 2.0), {}, TypeError, "q"),
    (("hexagon", 3), {}, ValueError, "design"),
    ((5,), {}, TypeError, "design"),
    (([],), {}, ValueError, "design"),
    (([[0, 1], [1, 2, 3]],), {}, ValueError, "same size"),
    (([[0, 1], [2, 3]],), {}, ValueError, "pair"),
    (([[0, 1, 2, 3]],), {}, ValueError, "K < v"),
    (([[0, 0, 1]],), {}, ValueError, "distinct"),
    (([[0, -1, 2]],), {}, ValueError, "distinct points >= 0"),
    (([[0, 1.5]],), {}, TypeError, "integer"),
    (([[0, 1], [0, 2], [1, 2]], 3), {}, ValueError, "q applies"),
    (("projective_plane", 3), {"s": 13}, ValueError, "s"),
    (("projective_plane", 3), {"field": "complex"}, ValueError, "field"),
])
def test_bad_input(args, kwargs, exc, word):
    with pytest.raises(exc, match=word) as info:
        gc.bibd_code(*args, **kwargs)
    assert isinstance(info.value, gc.GradcodesError)


def test_unbalanced_design_names_the_point():
    with pytest.raises(gc.GradcodesValueError, match="point"):
        gc.bibd_code([[0, 1], [0, 2], [1, 2], [0, 3]])


def test_huge_plane_is_refused_before_work():
    with pytest.raises(gc.SizeLimitError):
        gc.bibd_code("projective_plane", 100003)


def test_registry_rows_within_their_bound():
    sch = gc.schemes()["bibd_code"]
    assert sch.kind == "adversarial"
    for row in sch.tour:
        rep = sch.evaluate(sch.build(**row))
        assert rep.proven and rep.bound_holds and rep.result == "proven"
        assert math.isclose(rep.worst_lower, rep.worst_upper, rel_tol=1e-9)


# ------------------------------------------------------------------------------------------------------------
# stochastic gradient coding on a design (Bitar, Wootters & El Rouayheb 2020)
# ------------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("q", [2, 3])
def test_stochastic_bibd_error_formula_exact(q):
    p = Fr(1, 5)
    code = gc.stochastic_bibd("projective_plane", q, p=p)
    v, K, lam = q * q + q + 1, q + 1, 1
    rng = np.random.default_rng(q)
    G = np.array([[Fr(int(x)) for x in row] for row in rng.integers(-3, 4, size=(v, 3))], dtype=object)
    sq = sum(sum(x * x for x in row) for row in G)
    tot = G.sum(axis=0)
    expected = p / ((1 - p) * K * K) * ((K - lam) * sq + lam * sum(x * x for x in tot))
    assert gc.closed_form_error(code, G) == expected
    assert code.straggle_probabilities.tolist() == [p] * v
    # unbiased: E[u] B = 1 (every worker responds with probability 1 - p, weight 1)
    assert ((1 - p) * code.B.sum(axis=0)).tolist() == [Fr(1)] * v


def test_stochastic_bibd_equals_sgc_in_expectation_on_orthonormal_gradients():
    code = gc.stochastic_bibd("projective_plane", 3, p=Fr(1, 10))
    sgc = gc.stochastic_gc(13, 4, p=Fr(1, 10))
    assert gc.closed_form_error(code) == gc.closed_form_error(sgc)        # only the pair overlaps differ


def test_stochastic_bibd_save_load_and_bad_input(tmp_path):
    code = gc.stochastic_bibd("affine_plane", 3, p=0.2)
    gc.save_code(code, tmp_path / "s.npz")
    assert gc.load_code(tmp_path / "s.npz") == code
    with pytest.raises(gc.GradcodesValueError, match="p"):
        gc.stochastic_bibd("projective_plane", 3, p=1.5)
    with pytest.raises(gc.GradcodesValueError, match="q"):
        gc.stochastic_bibd("projective_plane", p=0.1)


@pytest.mark.parametrize("design, q, p, s, want", [
    ("projective_plane", 2, Fr(1, 4), 2, Fr(47, 81)),      # w = 4/9, f = 5: (16*35 - 1080 + 567)/81
    ("projective_plane", 2, Fr(1, 4), 0, Fr(7, 9)),         # no stragglers: every partition 4/3, 7 (1/3)^2
    ("affine_plane", 2, Fr(1, 3), 1, None),
])
def test_stochastic_bibd_sum_error_depends_only_on_s(design, q, p, s, want):
    """The sum decoder's ||u B - 1||^2 = w^2 (f r + f(f-1) λ) - 2 w f r + b on every set of f = n - s responders
    (w = 1/((1-p)K)): the same for all sets, exactly."""
    code = gc.stochastic_bibd(design, q, p=p)
    bibd = gc.bibd_code(design, q)
    v, b, r, K, lam = bibd.v, bibd.b, bibd.r, bibd.block_size, bibd.lam
    f = v - s
    w = 1 / ((1 - p) * K)
    formula = w * w * (f * r + f * (f - 1) * lam) - 2 * w * f * r + b
    if want is not None:
        assert formula == want
    for S in itertools.combinations(range(v), s):
        alive = np.ones(v, dtype=bool)
        alive[list(S)] = False
        resid = code.B[alive].sum(axis=0) - 1
        assert sum(x * x for x in resid) == formula
