"""Decode inputs, dtype-aware acceptance, an honest error estimate, and the new apply path against the old one."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

import gradcodes as gc
from gradcodes._core.decoders import NullSpaceDecoder
from gradcodes._core.numerics import tolerance
from gradcodes.testing import responder_sets


def small_codes():
    out = []
    for name, scheme in gc.schemes().items():
        params = dict(scheme.tour[0]) if scheme.tour else {}
        out.append(pytest.param(scheme.build, params, id=name))
    out.append(pytest.param(gc.ye_abbe, {"n": 12, "s": 3, "m": 2}, id="ye_abbe-12-3-2"))
    out.append(pytest.param(gc.cyclic_repetition, {"n": 12, "s": 3}, id="cyclic_repetition-12-3"))
    return out


def old_decode(code, F, Y):
    """The decode before the apply kernels: the dense product of the decoding matrix with the gathered rows."""
    A = code.decoding_matrix(F)
    if code.field == "rational":
        A = np.vectorize(float, otypes=[np.float64])(A)
    return (A[:, F] @ Y[F]).reshape(-1)


def responder_set(code, rng):
    if hasattr(code, "reachable"):                     # trees: stragglers among the leaves keep every parent alive
        return np.arange(code.n)
    s = code.s if getattr(code, "s", None) is not None else 1
    return np.sort(rng.choice(code.n, code.n - s, replace=False))


@pytest.mark.parametrize("build, params", small_codes())
@pytest.mark.parametrize("path", ["numpy", "compiled"])
def test_new_paths_equal_old_on_every_family(build, params, path, monkeypatch):
    """Both the numpy paths and the compiled kernels (forced on for these small messages) of encode and decode give
    the old dense results."""
    import gradcodes._core.apply as ap
    import gradcodes._core.code_encode as E

    if path == "compiled":
        monkeypatch.setattr(ap, "_KERNEL_MIN_WORK", 0)
    else:
        monkeypatch.setattr(ap, "_USE_NUMBA", False)
        monkeypatch.setattr(E, "_USE_NUMBA", False)
    code = build(**params)
    if code.field.startswith("GF("):
        pytest.skip("GF(p) codes do not decode float data")
    rng = np.random.default_rng(0)
    G = rng.normal(1.0, 0.1, size=(code.k, 33))
    Y = code.encode(G)
    F = responder_set(code, rng)
    try:
        old = old_decode(code, F, Y)
    except gc.DecodingError:
        with pytest.raises(gc.DecodingError):
            code.decode(F, Y)
        return
    new_full = code.decode(F, Y)
    order = rng.permutation(F)
    new_compact = code.decode(order, Y[order], rows="compact")
    scale = np.abs(old).max() + 1
    np.testing.assert_allclose(new_full, old, rtol=0, atol=1e-12 * scale)
    np.testing.assert_allclose(new_compact, old, rtol=0, atol=1e-12 * scale)
    if code.s is not None and code.s > 0 and not hasattr(code, "reachable"):
        # a full responder set given as a mask and as a permutation with compact rows
        perm = rng.permutation(code.n)
        mask = np.ones(code.n, dtype=bool)
        np.testing.assert_allclose(code.decode(perm, Y[perm], rows="compact"), code.decode(mask, Y),
                                   rtol=0, atol=1e-12 * scale)


@pytest.mark.parametrize("code", [gc.ye_abbe(12, 3, 2), gc.cyclic_repetition(12, 3, rng=0), gc.coded_reduce(3, 2, 1)],
                         ids=["ye_abbe", "cyclic_repetition", "coded_reduce"])
def test_all_n_responders_in_any_order(code):
    rng = np.random.default_rng(5)
    G = rng.normal(size=(code.k, 9))
    Y = code.encode(G)
    o = rng.permutation(code.n)
    while np.all(np.diff(o) > 0):
        o = rng.permutation(code.n)
    target = G.sum(axis=0)
    np.testing.assert_allclose(code.decode(list(o), Y[o], rows="compact", length=9), target, atol=1e-9)
    np.testing.assert_allclose(code.decode(list(o), Y, rows="full", length=9), target, atol=1e-9)
    with pytest.raises(ValueError, match="rows='full' or rows='compact'"):
        code.decode(list(o), Y[o])                   # n rows and a non-sorted full set: ambiguous, refused
    np.testing.assert_allclose(code.decode(sorted(o), Y, length=9), target, atol=1e-9)


def test_compact_rows_in_order_for_partial_sets():
    code = gc.ye_abbe(12, 3, 2)
    G = np.random.default_rng(1).normal(size=(12, 8))
    Y = code.encode(G)
    order = [11, 3, 0, 7, 5, 2, 9, 1, 4]
    np.testing.assert_allclose(code.decode(order, Y[order], length=8), G.sum(axis=0), atol=1e-9)
    np.testing.assert_allclose(code.decode(np.array(order), Y[order], length=8), G.sum(axis=0), atol=1e-9)
    mask = [i in order for i in range(12)]                  # a list of Python bools is a mask
    np.testing.assert_allclose(code.decode(mask, Y, length=8), G.sum(axis=0), atol=1e-9)


@pytest.mark.parametrize("responders, exc, words", [
    ([1, 1, 0, 1, 1, 1, 1], TypeError, "looks like a 0/1 mask"),
    (np.array([1, 0, 1, 1, 1, 1, 1]), TypeError, "looks like a 0/1 mask"),
    ([0, 1, 1, 3, 4], ValueError, "duplicated: [1]"),
    ([0, 1, 2, 3, 7], ValueError, "[0, 6]"),
    ([0, 1, 2, 3, -1], ValueError, "[0, 6]"),
    (np.ones(6, dtype=bool), ValueError, "shape (7,)"),
    ([True] * 6, ValueError, "length n=7"),
    (np.array([[0, 1, 2, 3, 4]]), ValueError, "1-D sequence"),
    ("01234", TypeError, "responders must be"),
    (3, TypeError, "responders must be"),
    ([0, 1, 2, 3.0, 4], TypeError, "integer worker indices"),
    ([0, 1, 2], ValueError, "at least 5"),
])
def test_bad_responders(responders, exc, words):
    code = gc.cyclic_repetition(7, 2, rng=0)
    Y = code.encode(np.ones((7, 3)))
    with pytest.raises(exc) as info:
        code.decode(responders, Y)
    assert words in str(info.value)


def test_bad_rows_argument_and_sets():
    code = gc.cyclic_repetition(7, 2, rng=0)
    Y = code.encode(np.ones((7, 3)))
    with pytest.raises(ValueError, match="rows must be one of"):
        code.decode([0, 1, 2, 3, 4], Y, rows="sparse")
    with pytest.raises(ValueError, match="rows='full' must have n=7 rows"):
        code.decode([0, 1, 2, 3, 4], Y[:5], rows="full")
    with pytest.raises(ValueError, match="rows='compact' must have one row per responder"):
        code.decode([0, 1, 2, 3, 4], Y, rows="compact")
    with pytest.raises(ValueError, match="a set, which has no order"):
        code.decode({4, 0, 1, 2, 3, 6}, Y[:6])
    np.testing.assert_allclose(code.decode({4, 0, 1, 2, 3}, Y), 7.0)


def test_zero_coefficients_are_never_read():
    code = gc.fractional_repetition(12, 3)                   # 0/1 decoder: one worker per group
    G = np.random.default_rng(0).normal(size=(12, 5)).astype(np.float32)
    Y = code.encode(G)
    A = code.decoding_matrix(np.arange(12))
    unused = np.flatnonzero(A[0] == 0)
    assert unused.size == 9
    Y[unused] = np.nan                                      # responders whose coefficient is zero
    g = code.decode(np.arange(12), Y)
    assert g.dtype == np.float32
    np.testing.assert_allclose(g, G.sum(axis=0), rtol=1e-5)
    used = np.flatnonzero(A[0])
    Y[used[0], 2] = np.inf
    with pytest.raises(ValueError, match=rf"responders \[{used[0]}\] contain NaN or infinite"):
        code.decode(np.arange(12), Y)


# ----------------------------------------------------------------------------- dtype-aware acceptance


def worst_cancellation_set(code):
    rep = gc.verify(code, stop_on_failure=False)
    return list(rep.worst_cancellation_responders)


@pytest.mark.parametrize("build", [lambda: gc.cyclic_repetition(20, 3, rng=0),
                                   lambda: gc.cyclic_repetition(30, 4, rng=3)], ids=["cr-20-3", "cr-30-4"])
def test_float32_cancellation_raises_and_float64_decodes(build):
    code = build()
    code.rtol = 1e-5          # the worst sets' rigorous float64 bounds are 1e-7 to 3e-7: above the default 1e-8
    F = worst_cancellation_set(code)
    G = np.random.default_rng(0).normal(1.0, 0.1, size=(code.k, 64))
    g64 = code.decode(F, code.encode(G))                    # float64 is within rtol
    np.testing.assert_allclose(g64, G.sum(axis=0), rtol=1e-6)
    G32 = G.astype(np.float32)
    est32 = code.error_estimate(F, dtype=np.float32)
    if est32 <= tolerance(code.rtol, np.float32):
        pytest.skip("this draw of the code has no float32 cancellation")
    with pytest.raises(gc.DecodingError) as info:
        code.decode(F, code.encode(G32))
    msg = str(info.value)
    assert "cancellation" in msg and "float64 messages decode within rtol" in msg and "stable_binary" in msg
    assert "float32 tolerance" in msg


def test_float32_refusal_is_honest():
    """Every float32 decode that is refused would have been off by more than a tenth of the tolerance."""
    code = gc.cyclic_repetition(20, 3, rng=0)           # fixed: a random code made this test flaky
    rep = gc.verify(code, stop_on_failure=False)
    F = list(rep.worst_cancellation_responders)
    G = np.random.default_rng(1).normal(1.0, 0.1, size=(code.k, 256)).astype(np.float32)
    A = code.decoding_matrix(F).astype(np.float32)          # the old, unchecked decode
    g_old = A @ code.encode(G)
    err = np.abs(g_old.astype(np.float64) - G.astype(np.float64).sum(axis=0)).max() / code.k
    with pytest.raises(gc.DecodingError):
        code.decode(F, code.encode(G))
    assert err > 2.3e-5


def test_nullspace_decoder_validates_arguments():
    for bad, exc in [(-1, ValueError), (float("nan"), ValueError), ("3", TypeError), (0.0, ValueError)]:
        with pytest.raises(exc, match="rtol"):
            NullSpaceDecoder(rtol=bad)
    with pytest.raises(ValueError, match="refine"):
        NullSpaceDecoder(refine=-1)
    with pytest.raises(TypeError, match="refine"):
        NullSpaceDecoder(refine=1.5)


# ----------------------------------------------------------------------------- honest error estimate

HONEST_CODES = [gc.cyclic_repetition(20, 3), gc.cyclic_repetition(12, 3, rng=4), gc.fractional_repetition(20, 4),
                gc.stable_binary(13, 3), gc.cyclic_mds(12, 3, field="real"), gc.ye_abbe(10, 2, 3), gc.uncoded(60),
                gc.grouped_mds(23, 4)]


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.sampled_from(range(len(HONEST_CODES))), st.sampled_from([np.float32, np.float64]),
       st.floats(0.0, 1.0), st.booleans(), st.integers(0, 2**31), st.data())
def test_error_estimate_never_optimistic_by_10x(ci, dtype, where, zero_mean, seed, data):
    """Measured relative error <= 10 x the reported estimate, over magnitudes from subnormal to huge, for uniform
    responder sets and the complements of cyclic windows (gradcodes.testing.responder_sets)."""
    code = HONEST_CODES[ci]
    rng = np.random.default_rng(seed)
    fi = np.finfo(dtype)
    lo, hi = np.log10(float(fi.smallest_subnormal)) + 2, np.log10(float(fi.max)) - 4
    scale = 10.0 ** (lo + where * (hi - lo))
    G64 = rng.normal(0.0 if zero_mean else 1.0, 1.0 if zero_mean else 0.1, size=(code.k, 64)) * scale
    G = G64.astype(dtype)
    F = list(data.draw(responder_sets(code.n, code.s)))
    with np.errstate(over="ignore", under="ignore"):
        Y = code.encode(G)
    assume(np.all(np.isfinite(Y)))
    try:
        g, info = code.decode(F, Y, return_info=True, length=64)
    except gc.DecodingError:
        return                                             # refused: never a quietly wrong sum
    Gl = G.astype(np.longdouble)
    ref = Gl.sum(axis=0)
    denom = np.abs(Gl).sum(axis=0).max()
    if denom == 0:
        assert np.all(g == 0)
        return
    err = float(np.abs(g.astype(np.longdouble) - ref).max() / denom)
    assert err <= 10 * info.error_estimate, (err, info)


def test_subnormal_estimate_counts_absolute_rounding():
    code = gc.cyclic_repetition(20, 3, rng=0)          # a fixed code whose set 3..19 decodes normal float32 data
    G = (np.random.default_rng(0).normal(1.0, 0.1, size=(20, 64)) * 1e-41).astype(np.float32)   # subnormal
    F = list(range(3, 20))
    try:
        g, info = code.decode(F, code.encode(G), return_info=True)
    except gc.DecodingError as exc:
        assert "underflow" in str(exc)
        return
    err = np.abs(g.astype(np.float64) - G.astype(np.float64).sum(axis=0)).max() / np.abs(G).sum(axis=0).max()
    assert info.error_estimate >= err / 10
