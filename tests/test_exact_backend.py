"""The exact elimination gives the same results on both backends: python-flint (``fmpq_mat.rref``) and object
arrays of Fractions. Every check runs under both (the backend is monkeypatched), and the two are compared."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import gradcodes as gc
from gradcodes._core import fields as _fields

BACKENDS = ["fractions", pytest.param("flint", marks=pytest.mark.skipif(
    not __import__("importlib").util.find_spec("flint"), reason="python-flint is not installed"))]

fractions_ = st.builds(Fraction, st.integers(-6, 6), st.integers(1, 4))


@st.composite
def rational_matrices(draw, max_rows=6, max_cols=8):
    r, c = draw(st.integers(1, max_rows)), draw(st.integers(1, max_cols))
    vals = draw(st.lists(st.one_of(fractions_, st.just(Fraction(0))), min_size=r * c, max_size=r * c))
    M = np.empty((r, c), dtype=object)
    M.reshape(-1)[:] = vals
    return M


def _rref(M, backend):
    old = _fields.EXACT_BACKEND
    _fields.EXACT_BACKEND = backend
    try:
        return _fields.rref(M)
    finally:
        _fields.EXACT_BACKEND = old


@pytest.mark.skipif(not __import__("importlib").util.find_spec("flint"), reason="python-flint is not installed")
@settings(max_examples=60)
@given(rational_matrices())
def test_both_backends_give_the_same_rref(M):
    R0, p0 = _rref(M, "fractions")
    R1, p1 = _rref(M, "flint")
    assert p0 == p1
    assert R0.shape == R1.shape and all(type(x) is Fraction for x in R1.flat)
    assert R0.tolist() == R1.tolist()


@pytest.mark.parametrize("backend", BACKENDS)
@settings(max_examples=30)
@given(M=rational_matrices())
def test_rref_is_a_reduced_row_echelon_form_of_the_row_space(backend, M):
    R, piv = _rref(M, backend)
    rank = len(piv)
    assert piv == sorted(piv) and len(set(piv)) == rank
    for i, c in enumerate(piv):
        assert R[i, c] == 1 and all(R[j, c] == 0 for j in range(R.shape[0]) if j != i)
    assert all(x == 0 for x in R[rank:].flat)
    # same row space: every row of M is a combination of the pivot rows (coefficients = its pivot entries)
    for row in M:
        comb = [sum((row[c] * R[i, k] for i, c in enumerate(piv)), Fraction(0)) for k in range(M.shape[1])]
        assert comb == list(row)


@pytest.mark.parametrize("backend", BACKENDS)
def test_rational_codes_decode_and_verify_identically(backend, monkeypatch):
    monkeypatch.setattr(_fields, "EXACT_BACKEND", backend)
    code = gc.cyclic_repetition(7, 2, field="rational", rng=3)
    G = np.array([[Fraction(i * 3 + j, 2) for j in range(3)] for i in range(7)], dtype=object)
    Y = code.encode(G)
    got = code.decode([0, 2, 3, 5, 6], Y)
    assert got.tolist() == G.sum(axis=0).tolist()
    A = code.decoding_matrix([0, 1, 3, 4, 6], decoder="exact")
    assert (A @ code.B).tolist() == [[Fraction(1)] * 7]
    assert gc.verify(code).exact


def test_the_backend_is_chosen_without_importing_flint(monkeypatch):
    monkeypatch.setattr(_fields, "EXACT_BACKEND", None)
    assert _fields.exact_backend() in ("flint", "fractions")
