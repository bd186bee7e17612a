"""The core types: validation, encode/decode round trips (float32, float64, exact), decoders and their reports."""

import warnings
from fractions import Fraction as Fr

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import gradcodes as gc
from gradcodes.testing import assert_recovers, partial_gradients, straggler_sets

# ----------------------------------------------------------------------------- strategies


@st.composite
def code_and_responders(draw, families=("fractional_repetition", "cyclic_repetition", "uncoded")):
    family = draw(st.sampled_from(families))
    if family == "uncoded":
        n = draw(st.integers(1, 12))
        code = gc.uncoded(n)
    elif family == "fractional_repetition":
        groups = draw(st.integers(1, 5))
        size = draw(st.integers(1, 5))
        code = gc.fractional_repetition(groups * size, size - 1)
    else:
        n = draw(st.integers(1, 14))
        s = draw(st.integers(0, n - 1))
        code = gc.cyclic_repetition(n, s, rng=draw(st.integers(0, 10**6)))
    # uniform straggler sets and cyclic windows of up to s stragglers; the responders in a random order
    late = set(draw(straggler_sets(code.n, code.s, min_size=0)))
    F = draw(st.permutations([i for i in range(code.n) if i not in late]))
    return code, F


def rel_err(g, G):
    target = G.sum(axis=0)
    return float(np.max(np.abs(g - target)) / max(np.max(np.abs(target)), 1e-300))


# ----------------------------------------------------------------------------- round trips


@given(code_and_responders(), st.data())
def test_decode_encode_roundtrip_float64(cr, data):
    code, F = cr
    G = data.draw(partial_gradients(code, length=st.integers(1, 40)))
    p = G.shape[1]
    try:
        g, info = code.decode(F, code.encode(G), return_info=True, rows="full")
    except gc.DecodingError as exc:
        # Only a random code may refuse, and only where the verifier agrees that this set is not decodable.
        assert code.family == "cyclic_repetition"
        assert not code.error_estimate(F) <= code.rtol or exc.residual > code.rtol
        return
    assert g.dtype == np.float64 and g.shape == (p,)
    # relative to sum_j |g_j| (the scale of the rounding); 1e-12 wherever the code's own estimate allows it, and
    # the estimate is never optimistic
    exact_0_1 = code.family in ("uncoded", "fractional_repetition")
    assert_recovers(code, F, G, rtol=1e-12 if exact_0_1 else max(1e-12, 10 * info.error_estimate))
    assert info.error_estimate <= code.rtol


@given(st.integers(1, 7), st.data())
def test_decode_encode_exact_rational(n, data):
    s = data.draw(st.integers(0, n - 1))
    code = gc.cyclic_repetition(n, s, rng=data.draw(st.integers(0, 1000)), field="rational")
    late = set(data.draw(straggler_sets(n, s, min_size=0)))
    F = data.draw(st.permutations([i for i in range(n) if i not in late]))
    p = data.draw(st.integers(1, 4))
    G = np.array([[Fr(data.draw(st.integers(-50, 50)), data.draw(st.integers(1, 9))) for _ in range(p)]
                  for _ in range(n)], dtype=object)
    g, info = code.decode(F, code.encode(G), return_info=True, rows="full")
    assert list(g) == list(G.sum(axis=0))          # exact equality, no tolerance
    assert info.exact and info.residual == 0 and info.error_estimate == 0


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.complex64, np.complex128])
def test_dtype_is_preserved(dtype):
    code = gc.cyclic_repetition(6, 2, rng=0)
    G = (np.random.default_rng(0).normal(size=(6, 16)) + 1).astype(dtype)
    Y = code.encode(G)
    assert Y.dtype == dtype
    g = code.decode([0, 1, 3, 5], Y)
    assert g.dtype == dtype
    tol = 1e-4 if dtype in (np.float32, np.complex64) else 1e-12
    np.testing.assert_allclose(g, G.sum(axis=0), rtol=tol)


def test_float32_decode_error_matches_estimate():
    code = gc.fractional_repetition(12, 3)
    G = np.random.default_rng(0).normal(1, 0.1, size=(12, 256)).astype(np.float32)
    g, info = code.decode([0, 5, 6, 7, 8, 9, 10, 11, 4], code.encode(G), return_info=True)
    assert info.cancellation == 1.0
    # the bound gamma_{t+2} canc (float32) + gamma64_{t+1} (canc + 1): t = 3 groups read + load 4 roundings
    u32, u64 = 2.0**-24, 2.0**-53
    assert info.error_estimate == pytest.approx(9 * u32 / (1 - 9 * u32) + 2 * 8 * u64 / (1 - 8 * u64), rel=1e-12)
    assert rel_err(g.astype(np.float64), G.astype(np.float64)) < 1e-6


def test_full_buffer_ignores_garbage_in_straggler_rows():
    code = gc.cyclic_repetition(7, 2, rng=1)
    G = np.random.default_rng(2).normal(size=(7, 5))
    Y = code.encode(G)
    Y[[2, 4]] = np.nan                              # the stragglers' rows were never written
    np.testing.assert_allclose(code.decode([0, 1, 3, 5, 6], Y), G.sum(axis=0), rtol=1e-10)


def test_responder_rows_in_given_order():
    code = gc.cyclic_repetition(7, 2, rng=1)
    G = np.random.default_rng(2).normal(size=(7, 5))
    Y = code.encode(G)
    order = [6, 0, 3, 5, 1]
    np.testing.assert_allclose(code.decode(order, Y[order]), G.sum(axis=0), rtol=1e-10)


def test_nan_from_a_responder_is_an_error_not_a_nan():
    code = gc.cyclic_repetition(7, 2, rng=1)
    Y = code.encode(np.ones((7, 3)))
    Y[3, 1] = np.inf
    with pytest.raises(ValueError, match=r"responders \[3\] contain NaN or infinite"):
        code.decode([0, 1, 3, 5, 6], Y)


def test_more_responders_than_needed_and_mask():
    code = gc.cyclic_repetition(8, 3, rng=4)
    G = np.random.default_rng(3).normal(size=(8, 6))
    Y = code.encode(G)
    mask = np.ones(8, dtype=bool)
    mask[2] = False
    np.testing.assert_allclose(code.decode(mask, Y), G.sum(axis=0), rtol=1e-11)
    A = code.decoding_matrix(mask)
    assert A[0, 2] == 0


def test_padding_when_m_does_not_divide_p():
    # a tiny exact m = 2 code: worker 0 sends block 0 of g_0 + g_1, worker 1 sends block 1 of it (s = 0)
    B = np.array([[1, 0, 1, 0], [0, 1, 0, 1]], dtype=float)
    code = gc.GradientCode(B, s=0, m=2)
    G = np.arange(10.0).reshape(2, 5)              # p = 5, m = 2 -> q = 3, one zero of padding
    Y = code.encode(G)
    assert Y.shape == (2, 3)
    np.testing.assert_array_equal(code.decode([0, 1], Y, length=5), G.sum(axis=0))
    np.testing.assert_array_equal(code.decode([0, 1], Y), np.append(G.sum(axis=0), 0.0))
    np.testing.assert_array_equal(code.decoding_matrix([0, 1]), np.eye(2))


def test_decode_info_and_residual_reports():
    code = gc.cyclic_repetition(9, 3, rng=0)
    _, info = code.decode([0, 1, 2, 3, 4, 5], np.zeros((9, 2)), return_info=True)
    assert info.responders == (0, 1, 2, 3, 4, 5) and info.decoder == "nullspace"
    assert 0 <= info.residual < 1e-10 and info.cancellation >= 1
    assert info.error_estimate == pytest.approx(np.finfo(float).eps / 2 * info.cancellation + info.residual)
    assert code.residual([0, 1, 2, 3, 4, 5]) == info.residual


@pytest.mark.parametrize("decoder", ["nullspace", "lstsq"])
def test_generic_decoders_agree_on_unique_solutions(decoder):
    code = gc.cyclic_repetition(10, 4, rng=2)
    F = [0, 2, 3, 5, 7, 9]
    ref = np.linalg.lstsq(code.B[F].T, np.ones(10), rcond=None)[0]
    np.testing.assert_allclose(code.decoding_matrix(F, decoder=decoder)[0, F], ref, rtol=1e-9, atol=1e-12)


def test_cache_returns_equal_copies():
    code = gc.cyclic_repetition(6, 2, rng=0, )
    A1 = code.decoding_matrix([0, 1, 2, 3])
    A1[0, 0] = 99.0                                 # the caller's copy, not the cache
    A2 = code.decoding_matrix([0, 1, 2, 3])
    assert A2[0, 0] != 99.0
    nocache = gc.GradientCode(code.B, s=2, cache_size=0)
    np.testing.assert_allclose(nocache.decoding_matrix([0, 1, 2, 3]), A2)


def test_undecodable_set_raises_naming_it():
    B = gc.fractional_repetition(6, 1).B.copy()
    B[0, 0] = 0.0
    code = gc.GradientCode(B, s=1)
    with pytest.raises(gc.DecodingError, match=r"responders \[0, 2, 3, 4, 5\]") as info:
        code.decoding_matrix([0, 2, 3, 4, 5])
    assert info.value.responders == [0, 2, 3, 4, 5]


def test_exact_undecodable_set_raises():
    code = gc.GradientCode([[1, 0], [Fr(1, 2), 0]], s=1)   # partition 1 is stored nowhere
    with pytest.raises(gc.DecodingError, match="exact rational arithmetic"):
        code.decoding_matrix([0])


def test_exact_code_decodes_float_data():
    code = gc.cyclic_repetition(4, 1, H=[[1, 2, 3, -6]], field="rational")
    G = np.random.default_rng(0).normal(size=(4, 3))
    np.testing.assert_allclose(code.decode([1, 2, 3], code.encode(G)), G.sum(axis=0), rtol=1e-13)


def test_sympy_rationals_accepted():
    sympy = pytest.importorskip("sympy")
    code = gc.GradientCode([[1, -1, 0], [0, 1, sympy.Rational(1, 2)], [2, 0, 1]], s=1)
    assert code.field == "rational" and code.B[1, 2] == Fr(1, 2)
    with pytest.raises(TypeError, match="rational entries"):
        gc.GradientCode([[sympy.sqrt(2), 1]], s=0, field="rational")


def test_properties_and_repr():
    code = gc.cyclic_repetition(5, 1, rng=0)
    assert (code.n, code.s, code.k, code.m, code.field, code.load) == (5, 1, 5, 1, "real", 2)
    assert repr(code) == "GradientCode(name='cyclic_repetition', n=5, s=1, k=5, m=1, field='real', load=2)"
    assert not code.B.flags.writeable
    np.testing.assert_array_equal(code.target, np.ones((1, 5)))


def test_approximate_code_any_responders():
    code = gc.ApproximateCode(np.eye(4) / 2 + np.roll(np.eye(4), 1, axis=1) / 2, s=1, name="ring")
    assert code.approximation_error([0, 2]) == pytest.approx(0.0, abs=1e-12)
    best = np.linalg.lstsq(code.B[[0, 1]].T, np.ones(4), rcond=None)[0]       # optimal decoding
    expected = np.linalg.norm(best @ code.B[[0, 1]] - 1)
    assert expected > 0.5
    assert code.approximation_error([0, 1], decoder="lstsq") == pytest.approx(expected, rel=1e-12)
    A = code.decoding_matrix([])                    # nobody responded: the estimate is 0
    assert np.all(A == 0)
    with pytest.raises(ValueError, match=r"straggle_probabilities\[1\] = 1.0 must lie in the open interval \(0, 1\)"):
        gc.ApproximateCode(np.eye(2), straggle_probabilities=[0.5, 1.0])
    with pytest.raises(ValueError, match="length n=2"):
        gc.ApproximateCode(np.eye(2), straggle_probabilities=[0.5])


# ----------------------------------------------------------------------------- bad input


@pytest.mark.parametrize(("kwargs", "exc", "words"), [
    ({"B": [[1, 0], [0, 1]], "s": 2}, ValueError, "s must be an integer in [0, 1]"),
    ({"B": [[1, 0], [0, 1]], "s": -1}, ValueError, "s must be an integer in [0, 1]"),
    ({"B": [[1, 0], [0, 1]], "s": 0.5}, TypeError, "s must be an integer"),
    ({"B": [[1, np.nan], [0, 1]], "s": 0}, ValueError, "finite"),
    ({"B": [[1, np.inf], [0, 1]], "s": 0}, ValueError, "finite"),
    ({"B": [1, 0, 1], "s": 0}, ValueError, "2-D matrix"),
    ({"B": np.zeros((0, 3)), "s": 0}, ValueError, "non-empty"),
    ({"B": [["a", "b"]], "s": 0}, TypeError, "numbers"),
    ({"B": np.eye(3), "s": 0, "m": 2}, ValueError, "not a multiple of m=2"),
    ({"B": np.eye(3), "s": 0, "m": 0}, ValueError, "m must be an integer >= 1"),
    ({"B": np.eye(3), "s": 0, "field": "quaternion"}, ValueError, "field must be one of"),
    ({"B": np.eye(3) * 1j, "s": 0, "field": "real"}, ValueError, "complex entries"),
    ({"B": np.eye(3), "s": 0, "rtol": 2.0}, ValueError, "rtol must be a finite real number in (0, 1)"),
    ({"B": np.eye(3), "s": 0, "default_decoder": "magic"}, ValueError, "default_decoder must be one of"),
])
def test_constructor_bad_input(kwargs, exc, words):
    with pytest.raises(exc) as info:
        gc.GradientCode(**kwargs)
    assert words in str(info.value)


@pytest.mark.parametrize(("responders", "exc", "words"), [
    ([0, 1], ValueError, "at least 3 distinct workers"),
    ([0, 1, 1], ValueError, "must not repeat a worker; duplicated: [1]"),
    ([0, 1, 5], ValueError, "worker indices in [0, 4]"),
    ([0, 1, -1], ValueError, "worker indices in [0, 4]"),
    ([0, 1, 2.0], TypeError, "integer worker indices"),
    (3, TypeError, "iterable of worker indices"),
    (np.ones(4, dtype=bool), ValueError, "shape (5,)"),
])
def test_responders_bad_input(responders, exc, words):
    code = gc.cyclic_repetition(5, 2, rng=0)
    with pytest.raises(exc) as info:
        code.decoding_matrix(responders)
    assert words in str(info.value)


@pytest.mark.parametrize(("messages", "exc", "words"), [
    (np.zeros((4, 3)), ValueError, "n=5 rows (full buffer) or one row per responder (3)"),
    (np.zeros(15), ValueError, "must be 2-D"),
    (np.zeros((5, 3), dtype=bool), TypeError, "float or complex dtype"),
    (np.array([["a"] * 3] * 5), TypeError, "float or complex dtype"),
    ("abc", TypeError, "2-D numpy array"),
    (np.zeros((5, 3), dtype=object), TypeError, "needs a code over the rational field"),
])
def test_messages_bad_input(messages, exc, words):
    code = gc.cyclic_repetition(5, 2, rng=0)
    with pytest.raises(exc) as info:
        code.decode([0, 1, 2], messages)
    assert words in str(info.value)


def test_partials_bad_input():
    code = gc.cyclic_repetition(5, 2, rng=0)
    with pytest.raises(ValueError, match="k=5 rows"):
        code.encode(np.zeros((4, 3)))
    with pytest.raises(ValueError, match="at least one coordinate"):
        code.encode(np.zeros((5, 0)))
    with pytest.raises(ValueError, match=r"length must be an integer in \[1, 3\]"):
        code.decode([0, 1, 2], code.encode(np.zeros((5, 3))), length=4)
    with pytest.raises(ValueError, match="decoder must be one of"):
        code.decoding_matrix([0, 1, 2], decoder="fft")


@pytest.mark.parametrize(("p", "exc", "words"), [
    (0.2, TypeError, "sequence of n=2 probabilities"),
    (["a", 0.2], TypeError, "straggle_probabilities[0] = 'a' is not a number"),
    ([None, 0.2], TypeError, "must be a real number"),
    ([0.0, 0.2], ValueError, "open interval (0, 1)"),
])
def test_straggle_probabilities_bad_input(p, exc, words):
    with pytest.raises(exc) as info:
        gc.ApproximateCode(np.eye(2), straggle_probabilities=p)
    assert words in str(info.value)


def test_straggle_probabilities_exact_and_float():
    exact = gc.ApproximateCode(np.eye(2), straggle_probabilities=["1/10", Fr(1, 5)]).straggle_probabilities
    assert exact.tolist() == [Fr(1, 10), Fr(1, 5)]
    floats = gc.ApproximateCode(np.eye(2), straggle_probabilities=[0.1, Fr(1, 5)]).straggle_probabilities
    assert floats.dtype == np.float64 and floats.tolist() == [0.1, 0.2]


def test_garbage_straggler_rows_raise_no_warning():
    code = gc.cyclic_repetition(6, 1, rng=0)
    Y = code.encode(np.eye(6))
    Y[5] = np.inf
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        np.testing.assert_allclose(code.decode([0, 1, 2, 3, 4], Y), np.ones(6), rtol=1e-12)


def test_float32_data_with_a_matrix_beyond_float32_is_an_error():
    code = gc.GradientCode(np.array([[1e39, 0.0], [0.0, 1.0]]), s=0)
    with pytest.raises(ValueError, match="does not fit float32"):
        code.encode(np.ones((2, 3), dtype=np.float32))
    np.testing.assert_allclose(code.decode([0, 1], code.encode(np.ones((2, 3)))), 2 * np.ones(3))


def test_a_hand_made_matrix_that_cannot_tolerate_s_warns():
    # GradientCode(np.eye(3), s=1) was accepted without a word: partition j on c <= s workers is lost when they
    # straggle. The constructor warns (the object stays valid: verifier tests build such codes on purpose) and
    # verify reports FAILS.
    with pytest.warns(UserWarning, match=r"partition 0 is held by 1 worker\(s\).*s at most 0"):
        code = gc.GradientCode(np.eye(3), s=1)
    assert gc.verify(code).verdict == "FAILS"
    with pytest.warns(UserWarning, match="partition 1 is stored on no worker"):
        gc.GradientCode(np.array([[1.0, 0, 1], [1, 0, 1]]), s=0)
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        gc.GradientCode(np.eye(3), s=0)                       # enough holders: silent
        gc.GradientCode(np.ones((3, 3)) / 3, s=2)
        gc.fractional_repetition(6, 2)                        # families are not re-checked
