"""The decoder contract, checked for every decoder of every exact family in one place.

One batch mixing 0, 1, s - 1 and s stragglers must give decoding matrices of shape (b, m, n), exactly zero on the
stragglers, each of which recovers the gradient (exactly in exact fields, to 1e-12 otherwise). A new family adds
one line to ``CODES``.
"""

import numpy as np
import pytest

import gradcodes as gc

CODES = {
    "uncoded": lambda: gc.uncoded(7),
    "fractional_repetition": lambda: gc.fractional_repetition(12, 3),
    "fractional_repetition-exact": lambda: gc.fractional_repetition(6, 2, field="rational"),
    "cyclic_repetition": lambda: gc.cyclic_repetition(12, 3, rng=0),
    "cyclic_repetition-exact": lambda: gc.cyclic_repetition(6, 2, rng=1, field="rational"),
    "cyclic_mds-complex": lambda: gc.cyclic_mds(12, 3),
    "cyclic_mds-real": lambda: gc.cyclic_mds(13, 4, "real"),
    "cyclic_mds-cyclic-FR": lambda: gc.cyclic_mds(12, 3, "real"),
    "cyclic_mds-textbook": lambda: gc.cyclic_mds(12, 3, placement="textbook"),
    "cyclic_mds-GF(13)": lambda: gc.cyclic_mds(12, 3).in_field("GF"),
    "stable_binary": lambda: gc.stable_binary(13, 3),
    "grouped_mds": lambda: gc.grouped_mds(23, 4),
    "grouped_mds-complex": lambda: gc.grouped_mds(8, 4),
    "ye_abbe-m2": lambda: gc.ye_abbe(12, 3, 2),
    "ye_abbe-m3-exact": lambda: gc.ye_abbe(7, 2, 3, nodes="integer", field="rational"),
}


@pytest.mark.parametrize("name", list(CODES))
def test_batched_mixed_straggler_counts(name):
    code = CODES[name]()
    n, s, m = code.n, code.s, code.m
    rng = np.random.default_rng(0)
    counts = [0, min(1, s), max(s - 1, 0), s, s, s]
    mask = np.ones((len(counts), n), dtype=bool)
    for row, t in zip(mask, counts, strict=True):
        row[rng.choice(n, t, replace=False)] = False
    for dec in code.decoders:
        A = code.decoding_matrices(mask, dec)
        assert A.shape == (len(counts), m, n), dec
        assert all((np.asarray(A[i][:, ~mask[i]]) == 0).all() for i in range(len(counts))), dec
        for i in range(len(counts)):
            R = A[i] @ code.B - code.target
            if code.exact:
                assert (np.asarray(R) == 0).all(), dec
            else:
                assert np.abs(R).max() < 1e-12, dec
