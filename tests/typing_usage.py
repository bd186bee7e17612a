"""Checked by mypy in CI (``mypy gradcodes tests/typing_usage.py``), never run: the public signatures carry precise
types, so a user's type checker sees arrays, reports and codes rather than ``Any``."""

from __future__ import annotations

from fractions import Fraction
from typing import Any

import numpy as np
from numpy.typing import NDArray
from typing_extensions import assert_type

import gradcodes as gc
from gradcodes.mpi import FixedDelay, ShiftedExponential


def _usage() -> None:
    code = gc.cyclic_repetition(6, 2, rng=np.random.default_rng(0))
    assert_type(code, gc.GradientCode)
    G = np.ones((code.k, 4), dtype=np.float32)
    Y = code.encode(G)
    assert_type(Y, NDArray[Any])                  # an ndarray of the data's dtype (float32 stays float32)
    g = code.decode([0, 1, 2, 3], Y[:4])
    g2, info = code.decode(np.array([True] * 6), Y, return_info=True)
    assert_type(info, gc.DecodeInfo)
    assert_type(code.decoding_matrix({0, 1, 2, 3}), NDArray[Any])
    exact = gc.GradientCode([[Fraction(1), Fraction(-1), 0], [0, 1, Fraction(1, 2)], [2, 0, 1]], s=1)
    assert_type(exact.field, str)
    gc.verify(code, rng=np.random.SeedSequence(1), dtype=np.float32)
    gc.stochastic_gc(6, 2, [Fraction(1, 10)] * 6, rng=3)
    gc.simulate([code, "UMW"], iters=10, rng=None)
    ShiftedExponential(1e-3, m_data=100, rng=np.random.SeedSequence(2))
    FixedDelay(0.1, count=1, rng=4)
    del g, g2


def _needs_gradient_code(code: gc.GradientCode) -> int:
    return code.s


def _results_are_typed(path: str) -> None:
    """Every public function returns a public, precise type: a GradientCode result is accepted where one is
    expected (``mypy --strict`` rejects a LinearCode there)."""
    rec = gc.recommend(10, 2)
    assert_type(rec, gc.GradientCode)
    _needs_gradient_code(rec)
    loaded = gc.load_code(path, kind=gc.GradientCode)
    assert_type(loaded, gc.GradientCode)
    _needs_gradient_code(loaded)
    assert_type(gc.load_code(path), gc.LinearCode)
    assert_type(gc.load_code(path, kind=gc.CodedReduceCode), gc.CodedReduceCode)
    _needs_gradient_code(gc.cyclic_repetition(6, 2, rng=0))
    report = gc.worst_case_error(gc.expander_code(10, 3, rng=0), 2)
    assert_type(report, gc.ApproximationReport)
    sim = gc.simulate(["CR", "UMW"], iters=10, rng=0)
    assert_type(sim, gc.SimulationResult)
    assert_type(sim["CR"], gc.SchemeResult)
    assert_type(gc.coded_reduce(3, 2, 1), gc.CodedReduceCode)
    assert_type(gc.coded_reduce(branching=3, L=2, s=1).branching, int)
    try:
        gc.verify(rec)
    except gc.GradcodesError as exc:
        assert_type(exc, gc.GradcodesError)
    assert_type(hash(rec), int)
    assert_type(rec == loaded, bool)
