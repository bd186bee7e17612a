"""Every code of every registered family, every report and every decoder survives pickling.

Codes are sent to multiprocessing, joblib, Ray or MPI workers by pickling; an unpickled code must decode exactly as
the original (same decoding matrices bit for bit, same decoded sums), and its reports must read the same.
"""

from __future__ import annotations

import pickle
import warnings

import numpy as np
import pytest

import gradcodes as gc
from gradcodes._base.registry import schemes
from gradcodes._core.fields import PrimeField, RationalField, RealField, field_of

SCHEMES = sorted(schemes())


def _roundtrip(obj: object) -> object:
    return pickle.loads(pickle.dumps(obj, protocol=pickle.HIGHEST_PROTOCOL))


def _build(name: str) -> object:
    sc = schemes()[name]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return sc.build(**dict(sc.tour[0]))


def _masks(code: gc.LinearCode, count: int = 6) -> np.ndarray:
    """Responder masks: everyone, and random sets with as many stragglers as the code tolerates (at least 1)."""
    n = code.n
    s = getattr(code, "s", None) or 1
    rng = np.random.default_rng(0)
    masks = np.ones((count, n), dtype=bool)
    for row in masks[1:]:
        row[rng.choice(n, size=min(s, n - 1), replace=False)] = False
    return masks


def _same(a: object, b: object) -> bool:
    """Bit-for-bit equality of decoding results (float, complex, Fraction or GF(p) arrays)."""
    a_arr, b_arr = np.asarray(a), np.asarray(b)
    if a_arr.shape != b_arr.shape or type(a) is not type(b):
        return False
    if a_arr.dtype.kind in "fc":
        return bool(np.array_equal(a_arr, b_arr, equal_nan=True))
    return bool(np.array_equal(a_arr, b_arr))


def _decode_outcome(code: gc.LinearCode, responders: np.ndarray, Y: np.ndarray) -> object:
    try:
        return code.decode(responders, Y)
    except Exception as err:  # an honest refusal must be refused identically after unpickling
        return (type(err).__name__, str(err))


def assert_decodes_identically(code: gc.LinearCode, code2: gc.LinearCode) -> None:
    assert type(code2) is type(code)
    assert (code2.n, code2.k, code2.m, code2.field, code2.name, code2.family) == \
        (code.n, code.k, code.m, code.field, code.name, code.family)
    assert code2.params == code.params
    assert _same(code.B, code2.B)
    assert sorted(code2.decoders) == sorted(code.decoders)
    assert code2.default_decoder == code.default_decoder
    if isinstance(code2.B, np.ndarray):
        assert not code2.B.flags.writeable          # still read-only after unpickling
    masks = _masks(code)
    for name in code.decoders:
        assert _same(code.decoding_matrices(masks, name), code2.decoding_matrices(masks, name)), name
    # the decoded sums of the default decoder, for each responder set (GF(p) codes: the matrices above suffice)
    if code.field.startswith("GF("):
        return
    rng = np.random.default_rng(1)
    if code.exact:
        Y = code.encode(field_of(code.B).const(rng.integers(-5, 6, size=(code.k, 3 * code.m))))
    else:
        Y = code.encode(rng.normal(size=(code.k, 3 * code.m)))
    for mask in masks:
        responders = np.flatnonzero(mask)
        r1, r2 = _decode_outcome(code, responders, Y), _decode_outcome(code2, responders, Y)
        assert _same(r1, r2) if not isinstance(r1, tuple) else r1 == r2


@pytest.mark.parametrize("name", SCHEMES)
def test_every_registered_code_pickles_and_decodes_identically(name: str) -> None:
    code = _build(name)
    assert_decodes_identically(code, _roundtrip(code))


@pytest.mark.parametrize("name", SCHEMES)
def test_every_decoder_pickles(name: str) -> None:
    code = _build(name)
    masks = _masks(code)
    for dec in code.decoders.values():
        dec2 = _roundtrip(dec)
        assert type(dec2) is type(dec) and dec2.name == dec.name
        assert _same(dec.matrices(code, masks), dec2.matrices(code, masks)), dec.name


@pytest.mark.parametrize("name", SCHEMES)
def test_every_report_pickles(name: str) -> None:
    sc = schemes()[name]
    code = _build(name)
    evaluate = sc.evaluate or gc.verify
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        report = evaluate(code)
    report2 = _roundtrip(report)
    assert type(report2) is type(report)
    assert str(report2) == str(report) and repr(report2) == repr(report)


@pytest.mark.parametrize("build", [
    lambda: gc.cyclic_mds(10, 3),
    lambda: gc.ye_abbe(8, 2, 3),
    lambda: gc.ye_abbe(5, 1, 2, nodes="integer", field="rational"),
])
def test_codes_rebuilt_over_gf_p_pickle(build) -> None:
    code = build()
    gcode = code.in_field("GF")
    assert gcode.field.startswith("GF(")
    assert_decodes_identically(gcode, _roundtrip(gcode))
    # the builder itself survives: the unpickled real code rebuilds the same GF(p) code
    again = _roundtrip(code).in_field("GF")
    assert again.field == gcode.field and _same(again.B, gcode.B)


def test_other_constructor_variants_pickle() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        codes = [
            gc.ye_abbe(7, 2, 2, nodes="random", rng=1),
            gc.ye_abbe(7, 2, 2, nodes="random", rng=1, field="rational"),
            gc.ye_abbe(6, 1, 2, nodes="chebyshev"),
            gc.ye_abbe(9, 2, 2, spacing="auto", stride=1),
            gc.ye_abbe(6, 1, 2, k=12),
            gc.cyclic_mds(8, 2, placement="textbook"),
            gc.expander_code(10, 3, field="rational", rng=0),
            gc.heterogeneous([0.1, 0.2, 0.3, 0.4], 4),
            gc.stable_binary(10, 2),
        ]
    for code in codes:
        assert_decodes_identically(code, _roundtrip(code))


def test_family_attributes_survive_pickling() -> None:
    code = gc.ye_abbe(10, 2, 3)
    code2 = _roundtrip(code)
    assert (code2.stride, code2.functional_frequencies, code2.notes, code2.cancellation_bound) == \
        (code.stride, code.functional_frequencies, code.notes, code.cancellation_bound)
    ex = gc.expander_code(10, 3, rng=0)
    ex2 = _roundtrip(ex)
    assert ex2.spectral_bound(2) == ex.spectral_bound(2) and np.array_equal(ex2.adjacency, ex.adjacency)
    het = gc.heterogeneous([0.1, 0.2, 0.3], 3)
    het2 = _roundtrip(het)
    assert np.array_equal(het2.row_sums, het.row_sums) and het2.objective == het.objective


def test_other_reports_pickle() -> None:
    code = gc.cyclic_repetition(6, 2, rng=0)
    G = np.random.default_rng(0).normal(size=(6, 4))
    _, info = code.decode([0, 2, 3, 5], code.encode(G), return_info=True)
    assert _roundtrip(info) == info
    rec = gc.recommend(8, 2)
    rec2 = _roundtrip(rec)
    assert str(rec2.recommendation) == str(rec.recommendation)
    ex = gc.expander_code(10, 3, rng=0)
    rep = gc.approximation_error(ex, [0, 1, 2, 3, 4, 5, 6, 7])
    assert _roundtrip(rep) == rep
    wc = gc.worst_case_error(ex, 2)
    assert str(_roundtrip(wc)) == str(wc)
    sim = gc.simulate(branching=4, L=2, s=1, iters=50, rng=0)
    assert str(_roundtrip(sim)) == str(sim)


@pytest.mark.parametrize("field", [RealField(), RationalField(), PrimeField(__import__("galois").GF(13))])
def test_field_objects_pickle(field) -> None:
    assert _roundtrip(field) == field


def test_pickles_from_before_the_core_split_still_load() -> None:
    """DecodingError and DecodeInfo lived in ``gradcodes._core.code`` before it was split by responsibility; pickles
    naming that path must still load (protocol 0 spells the module path out, so it can be rewritten here)."""
    code = gc.cyclic_repetition(6, 2, rng=0)
    Y = code.encode(np.arange(24.0).reshape(6, 4))
    _, info = code.decode([0, 1, 2, 3], Y[[0, 1, 2, 3]], return_info=True)
    err = gc.DecodingError("cannot decode", np.array([1, 2]), 0.5)
    for obj in (info, err):
        # (the errors now pickle under their public module, gradcodes; old pickles name the private path)
        old = (pickle.dumps(obj, protocol=0).replace(b"gradcodes._core.acceptance", b"gradcodes._core.code")
               .replace(b"cgradcodes\nDecodingError", b"cgradcodes._core.code\nDecodingError"))
        assert b"gradcodes._core.code\n" in old
        back = pickle.loads(old)
        assert type(back) is type(obj)
        assert repr(back) == repr(obj)
    for cls in (gc.LinearCode, gc.GradientCode, gc.ApproximateCode):
        assert cls.__module__ == "gradcodes._core.code"      # codes' pickles name the same path as before the split
