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
