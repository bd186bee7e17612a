"""Value equality and hashing of codes: same construction -> equal and same hash; pickling and code files keep
equality; any change of B (one bit), s, m, rtol, name, family, params or tree structure breaks it."""

from __future__ import annotations

import pickle
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import gradcodes as gc
from gradcodes.testing import codes


@given(codes(kind=None, max_n=24))
def test_pickle_round_trip_is_equal_with_the_same_hash(code):
    back = pickle.loads(pickle.dumps(code))
    assert back == code and not (back != code)
    assert hash(back) == hash(code)
    assert len({code, back}) == 1


_BUILDS = [(name, dict(args)) for name, sc in sorted(gc.schemes().items()) for args in sc.tour
           if int(args.get("n", 0)) <= 24]


@given(st.sampled_from(_BUILDS))
def test_rebuilding_from_the_same_arguments_gives_an_equal_code(build):
    name, args = build
    a, b = gc.schemes()[name].build(**args), gc.schemes()[name].build(**args)
    assert a is not b and a == b and hash(a) == hash(b)


@given(codes(kind="exact", max_n=24), st.data())
def test_flipping_one_bit_of_B_breaks_equality(code, data):
    B = np.array(code.B, copy=True)                      # real or complex floats (the registry's exact kind)
    raw = B.reshape(-1).view(np.uint8)
    i = data.draw(st.integers(0, raw.size - 1))
    bit = data.draw(st.integers(0, 7))
    kw = dict(m=code.m, name=code.name, family=code.family, params=code.params, rtol=code.rtol)
    same = gc.GradientCode(B.copy(), code.s, **kw)
    raw[i] ^= np.uint8(1 << bit)
    if not np.all(np.isfinite(B)):
        return                                           # the flip made an inf/NaN: not a valid code
    assert gc.GradientCode(B, code.s, **kw) != same


@given(st.integers(2, 8), st.data())
def test_each_field_of_the_identity_matters(n, data):
    rng = np.random.default_rng(data.draw(st.integers(0, 2**32 - 1)))
    B = rng.normal(size=(n, 2 * n))
    base = dict(m=2, name="x", family="f", params={"a": 1}, rtol=1e-8)
    code = gc.GradientCode(B, 1, **base)
    assert code == gc.GradientCode(B.copy(), 1, **base)
    assert hash(code) == hash(gc.GradientCode(B.copy(), 1, **base))
    changes = [dict(base, m=1), dict(base, name="y"), dict(base, family="g"), dict(base, params={"a": 2}),
               dict(base, params={"a": 1.0}), dict(base, rtol=1e-7)]
    for kw in changes:
        assert gc.GradientCode(B, 1, **kw) != code, kw
    assert gc.GradientCode(B, 0, **base) != code
    assert gc.ApproximateCode(B, m=2, name="x", family="f", params={"a": 1}) != code
    assert gc.GradientCode(B.astype(np.float32), 1, **base) != code      # dtype is part of the bits


def test_exact_and_finite_field_codes_compare_by_value():
    import galois

    B = np.array([[Fraction(1, 2), Fraction(1)], [Fraction(1), Fraction(1, 2)]], dtype=object)
    a = gc.GradientCode(B, 0, field="rational")
    assert a == gc.GradientCode(B.copy(), 0, field="rational")
    assert a != gc.GradientCode(np.array([[Fraction(1, 2), Fraction(1)], [Fraction(1), Fraction(1, 3)]],
                                         dtype=object), 0, field="rational")
    g7, g11 = galois.GF(7), galois.GF(11)
    assert gc.GradientCode(g7([[1, 2], [3, 4]]), 0) == gc.GradientCode(g7([[1, 2], [3, 4]]), 0)
    assert gc.GradientCode(g7([[1, 2], [3, 4]]), 0) != gc.GradientCode(g11([[1, 2], [3, 4]]), 0)


def test_tree_structure_is_part_of_the_identity():
    a = gc.coded_reduce(3, 2, 1)
    assert a == gc.coded_reduce(3, 2, 1) and hash(a) == hash(gc.coded_reduce(3, 2, 1))
    assert a != gc.coded_reduce(3, 2, 1, inner=gc.cyclic_repetition(3, 1, field="rational", rng=0))
    assert a != gc.coded_reduce(3, 1, 1) and a != gc.coded_reduce(4, 2, 1)


def test_use_does_not_change_equality_or_hash():
    a, b = gc.cyclic_repetition(8, 2, rng=3), gc.cyclic_repetition(8, 2, rng=3)
    h = hash(a)
    Y = a.encode(np.ones((8, 3)))
    a.decode([0, 1, 2, 3, 4, 5], Y)
    gc.verify(a)
    assert a == b and hash(a) == h


def test_B_is_read_only():
    code = gc.cyclic_repetition(6, 2, rng=0)
    with pytest.raises(ValueError):
        code.B[0, 0] = 1.0


def test_codes_are_not_equal_to_other_objects():
    code = gc.uncoded(3)
    assert code != "uncoded" and (code == 3) is False and code != gc.uncoded(4)
