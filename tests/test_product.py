"""Product gradient codes (Sakorikar & Wang 2021): B = B_1 ⊗ B_2, exact identities on product responder sets,
the worst-case bound from the factors, validation, save/load."""

from __future__ import annotations

import itertools
import math
from fractions import Fraction

import numpy as np
import pytest

import gradcodes as gc
from gradcodes._verify.approx_worst import OptimalDecoder


def exact_sq_error(code: gc.LinearCode, alive: list[int]) -> Fraction:
    """||u B - 1||^2 of the exact least-squares decoder on ``alive``, in Fractions."""
    mask = np.zeros((1, code.n), dtype=bool)
    mask[0, alive] = True
    u = OptimalDecoder().matrices(code, mask)[0, 0]
    r = u @ code.B - 1
    return sum((x * x for x in r), Fraction(0))


FANO = gc.bibd_code("projective_plane", 2, field="rational")
AG2 = gc.bibd_code("affine_plane", 2, field="rational")          # v = 4, b = 6, r = 3, K = 2, λ = 1


def test_structure_is_the_kronecker_product() -> None:
    code = gc.product_code(FANO, AG2)
    assert (code.n, code.k, code.load) == (28, 42, 9)
    B1, B2 = np.asarray(FANO.B), np.asarray(AG2.B)
    for i1, i2, j1, j2 in [(0, 0, 1, 0), (3, 2, 4, 5), (6, 3, 5, 2), (2, 1, 0, 3)]:
        assert code.B[i1 * 4 + i2, j1 * 6 + j2] == B1[i1, j1] * B2[i2, j2]
        assert code.factor_workers(i1 * 4 + i2) == (i1, i2)
    assert all(x == 1 for x in code.B.sum(axis=0))                # columns still sum to 1


@pytest.mark.parametrize("F1, F2", [
    ([0, 1, 2, 3, 4], [1, 2, 3, 4, 5, 6]),        # e1 = 4/7 (2 stragglers), e2 = 1/4 (1 straggler)
    ([0, 1, 2, 3, 4, 5, 6], [0, 1, 2]),           # e1 = 0
    ([2, 5], [0, 3, 6]),
    ([0], [4]),
])
def test_product_set_error_is_the_kronecker_formula(F1: list[int], F2: list[int]) -> None:
    code = gc.product_code(FANO, FANO)
    alive = [a * 7 + b for a in F1 for b in F2]
    e1, e2 = FANO.squared_error(7 - len(F1)), FANO.squared_error(7 - len(F2))
    assert exact_sq_error(FANO, F1) == e1 and exact_sq_error(FANO, F2) == e2
    assert exact_sq_error(code, alive) == 49 - (7 - e1) * (7 - e2)


def test_worked_vector_157_over_28() -> None:
    code = gc.product_code(FANO, FANO)
    alive = [7 * a + b for a in range(5) for b in range(1, 7)]
    assert exact_sq_error(code, alive) == Fraction(157, 28)        # 49 - (45/7)(27/4)


def test_bound_holds_on_every_set_of_two_stragglers() -> None:
    code = gc.product_code(gc.bibd_code("projective_plane", 2), gc.bibd_code("affine_plane", 2))
    bound = code.spectral_bound(2)
    assert bound ** 2 == pytest.approx(min(6 * float(FANO.squared_error(2)), 7 * float(AG2.squared_error(2))))
    rep = gc.worst_case_error(code, 2)
    assert rep.exhaustive and rep.worst_lower <= bound + 1e-12
    assert rep.worst_lower > 0


def test_product_of_exact_codes_tolerates_the_larger_s() -> None:
    a = gc.cyclic_repetition(4, 2, field="rational")
    b = gc.fractional_repetition(2, 1, field="rational")
    code = gc.product_code(a, b)
    assert code.spectral_bound(2) == 0.0
    for S in itertools.combinations(range(code.n), 2):
        alive = [i for i in range(code.n) if i not in S]
        assert exact_sq_error(code, alive) == 0


def test_float_and_sparse_factors_match_the_exact_product() -> None:
    exact = gc.product_code(FANO, AG2)
    flt = gc.product_code(gc.bibd_code("projective_plane", 2), gc.bibd_code("affine_plane", 2))
    assert flt.field == "real" and not flt.exact
    assert np.array_equal(flt.float_B(), np.array(exact.B, dtype=np.float64))
    sparse = gc.product_code(gc.bibd_code("projective_plane", 7), gc.bibd_code("projective_plane", 3))
    assert sparse.n == 57 * 13 and sparse.load == 32


def test_validation() -> None:
    with pytest.raises(gc.GradcodesError, match="first must be a gradient code"):
        gc.product_code(np.eye(3), FANO)  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        gc.product_code(FANO, "fano")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="both be exact"):
        gc.product_code(FANO, gc.bibd_code("projective_plane", 2))
    with pytest.raises(ValueError, match="m = 1"):
        gc.product_code(gc.GradientCode(np.array([[1.0, 0, 1, 0], [0, 1, 0, 1]]), s=0, m=2),
                        gc.bibd_code("projective_plane", 2))
    with pytest.raises(ValueError, match="s must"):
        gc.product_code(FANO, FANO, s=49)


def test_save_load_keeps_the_decoder(tmp_path) -> None:
    code = gc.product_code(gc.bibd_code("projective_plane", 2), gc.bibd_code("affine_plane", 3), s=3)
    path = tmp_path / "p.npz"
    gc.save_code(code, path)
    back = gc.load_code(path)
    assert isinstance(back, gc.ProductCode) and back.default_decoder == "optimal" and back.s == 3
    assert np.array_equal(back.float_B(), code.float_B())


def test_sparse_factor_gives_the_same_matrix_as_dense() -> None:
    from scipy import sparse

    dense = gc.bibd_code("affine_plane", 3)
    as_sparse = gc.ApproximateCode(sparse.csr_array(dense.float_B()))
    fano = gc.bibd_code("projective_plane", 2)
    a, b = gc.product_code(as_sparse, fano), gc.product_code(dense, fano)
    assert np.array_equal(a.float_B(), b.float_B())
    assert a.default_decoder == "optimal"
    # a plain matrix has no bound of its own: only the role "Fano straggles, the matrix (columns sum to 1) is whole"
    assert a.spectral_bound(1) == pytest.approx(math.sqrt(12 * 0.25))     # k_1 e_Fano(1) = 12 * 1/4
    assert b.spectral_bound(1) ** 2 == pytest.approx(min(7 * float(dense.squared_error(1)),
                                                         12 * float(gc.bibd_code("projective_plane", 2,
                                                                                 field="rational").squared_error(1))))
