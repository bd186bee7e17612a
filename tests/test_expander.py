"""Expander approximate codes (Raviv et al. 2018): Petersen exact errors, the spectral bound, evaluator, bad input."""

from __future__ import annotations

import itertools
import math
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import gradcodes as gc
from gradcodes._core.fields import solve_left
from gradcodes._families.expander import random_regular_graph, spectral_parameter

PETERSEN = [[1, 4, 5], [0, 2, 6], [1, 3, 7], [2, 4, 8], [0, 3, 9], [0, 7, 8], [1, 8, 9], [2, 5, 9], [3, 5, 6],
            [4, 6, 7]]


def _exact_errors_sq(F: list[int]) -> tuple[Fraction, Fraction]:
    """err(F)^2 for the fixed and the optimal decoder of B = A/3, from first principles in Fractions."""
    n, d = 10, 3
    B = [[Fraction(1, d) if j in PETERSEN[i] else Fraction(0) for j in range(n)] for i in range(n)]
    # fixed: u = n/|F| on F
    w = Fraction(n, len(F))
    fixed = [sum(w * B[i][j] for i in F) - 1 for j in range(n)]
    # optimal: B_F has full row rank (A is nonsingular: eigenvalues 3, 1, -2), so u_F = 1 B_F^T (B_F B_F^T)^-1
    BF = np.array([B[i] for i in F], dtype=object)
    G = BF @ BF.T
    rhs = (np.array([[Fraction(1)] * n], dtype=object) @ BF.T)
    u = solve_left(G, rhs)[0]
    opt = [sum(u[a] * BF[a][j] for a in range(len(F))) - 1 for j in range(n)]
    return sum(x * x for x in fixed), sum(x * x for x in opt)


def test_petersen_spectrum():
    code = gc.expander_code(10, 3, graph=PETERSEN)
    assert code.load == 3 and code.degree == 3
    assert abs(code.spectral_lambda - 2) < 1e-12
    assert code.spectral_lambda <= 2 * math.sqrt(2)               # Ramanujan


@pytest.mark.parametrize("s", [1, 2, 3, 4])
def test_petersen_exact_errors_and_bound(s):
    """Every straggler set with s <= 4: float errors equal the exact ones; the bound holds; optimal <= fixed."""
    code = gc.expander_code(10, 3, graph=PETERSEN)
    exact = gc.expander_code(10, 3, graph=PETERSEN, field="rational")
    bound_sq = Fraction(4, 9) * Fraction(10 * s, 10 - s)           # (λ/d)^2 n s / (n - s), exactly
    for S in itertools.combinations(range(10), s):
        F = [i for i in range(10) if i not in S]
        fixed_sq, opt_sq = _exact_errors_sq(F)
        assert fixed_sq <= bound_sq and opt_sq <= fixed_sq
        assert abs(gc.approximation_error(code, F, decoder="fixed") - math.sqrt(fixed_sq)) < 1e-12
        assert abs(gc.approximation_error(code, F, decoder="optimal") - math.sqrt(opt_sq)) < 1e-12
        if s == 2 and S == (0, 1):   # rational code: exact decoders agree with the first-principles values
            assert abs(gc.approximation_error(exact, F, decoder="fixed") - math.sqrt(fixed_sq)) < 1e-15
            assert abs(gc.approximation_error(exact, F, decoder="optimal") - math.sqrt(opt_sq)) < 1e-15


def test_bound_attained_for_complete_graph():
    """K6: λ = 1, d = 5; the fixed decoder meets the bound with equality (Raviv et al. 2018)."""
    A = np.ones((6, 6), dtype=int) - np.eye(6, dtype=int)
    code = gc.expander_code(6, 5, graph=A)
    for s in (1, 2, 3):
        rep = gc.worst_case_error(code, s, decoder="fixed")
        assert rep.exhaustive and abs(rep.worst_lower - code.spectral_bound(s)) < 1e-12


@given(st.integers(6, 16), st.integers(3, 5), st.integers(0, 10**6), st.integers(1, 3))
def test_hypothesis_random_regular_bound(n, d, seed, s):
    if (n * d) % 2 or d >= n:
        return
    code = gc.expander_code(n, d, rng=seed)
    A = code.adjacency
    assert (A == A.T).all() and (A.sum(axis=0) == d).all() and np.trace(A) == 0
    rep = gc.worst_case_error(code, s, decoder="fixed", limit=600, samples=100)
    assert rep.worst_lower <= code.spectral_bound(s) * (1 + 1e-9)
    rep_opt = gc.worst_case_error(code, s, limit=600, samples=100)
    assert rep_opt.worst_lower <= rep.worst_lower * (1 + 1e-9) + 1e-12


def test_evaluator_exact_average_and_search():
    code = gc.expander_code(12, 4, rng=3)
    rep = gc.worst_case_error(code, 2)
    errs = [gc.approximation_error(code, [i for i in range(12) if i not in S]) for S in
            itertools.combinations(range(12), 2)]
    assert rep.exhaustive and rep.patterns_checked == 66
    assert abs(rep.worst_lower - max(errs)) < 1e-14 and abs(rep.average_error - np.mean(errs)) < 1e-14
    big = gc.expander_code(60, 6, rng=1)
    rep2 = gc.worst_case_error(big, 6, limit=100, samples=50, rng=0)
    assert not rep2.exhaustive and "greedy" in rep2.strategies and rep2.average_stderr > 0
    assert rep2.worst_lower >= rep2.average_error
    assert rep2.worst_lower <= big.spectral_bound(6)
    assert "a lower bound, not the worst case" in str(rep2) and rep2.tour_row()["exhaustive"] == "no"
    assert rep2.worst is None and rep2.result == "bounded" and rep2.upper_source.startswith("theorem: Raviv")


def test_evaluator_works_for_any_code():
    code = gc.ApproximateCode(np.eye(5), name="uncoded")
    rep = gc.worst_case_error(code, 1, decoder="lstsq")
    assert rep.worst_lower == pytest.approx(1.0) and rep.proven and rep.worst == rep.worst_lower
    exact = gc.fractional_repetition(6, 1)
    assert gc.worst_case_error(exact, 1).worst_lower < 1e-14
    with pytest.raises(ValueError, match="s"):
        gc.worst_case_error(code)


def test_decode_end_to_end_error_within_bound():
    code = gc.expander_code(40, 6, rng=0)
    G = np.random.default_rng(0).standard_normal((40, 30))
    F = list(range(5, 40))
    ghat = code.decode(F, code.encode(G))
    err = np.linalg.norm(ghat - G.sum(axis=0))
    assert err <= gc.approximation_error(code, F) * np.linalg.norm(G, 2) * (1 + 1e-9)


def test_random_graph_generator():
    A = random_regular_graph(30, 5, rng=4)
    assert (A.sum(axis=1) == 5).all() and (A == A.T).all() and np.trace(A) == 0
    d, lam = spectral_parameter(A)
    assert d == pytest.approx(5) and lam < 5
    path = np.zeros((3, 3), dtype=int)
    path[0, 1] = path[1, 0] = path[1, 2] = path[2, 1] = 1
    with pytest.raises(ValueError, match="regular"):         # eigenvalue 1 is not a degree: no silent answer
        spectral_parameter(path)
    with pytest.raises(ValueError, match="symmetric"):
        spectral_parameter(np.triu(A))
    with pytest.raises(ValueError, match="even"):
        random_regular_graph(7, 3)
    A = random_regular_graph(1000, 20, rng=0)       # the pairing is O(n d): this took minutes when it was O(n^3 d)
    assert (A.sum(axis=1) == 20).all() and (A == A.T).all() and np.trace(A) == 0
    for n, d in ((8, 7), (2, 1), (1, 0), (9, 8)):  # complete graphs (exact fallback only) and trivial cases
        A = random_regular_graph(n, d, rng=1)
        np.testing.assert_array_equal(A, np.ones((n, n), dtype=int) - np.eye(n, dtype=int))


# --------------------------------------------------------------------------- bad input
@pytest.mark.parametrize("n,degree", [(10, 10), (10, 11), (10, 0)])
def test_degree_out_of_range(n, degree):
    with pytest.raises(ValueError, match="degree"):
        gc.expander_code(n, degree)


def test_irregular_graph_rejected():
    A = np.zeros((6, 6), dtype=int)
    for i in range(6):
        A[i, (i + 1) % 6] = A[(i + 1) % 6, i] = 1
    A[0, 3] = A[3, 0] = 1
    with pytest.raises(ValueError, match="irregular"):
        gc.expander_code(6, 2, graph=A)


def test_disconnected_graph_rejected():
    A = np.zeros((8, 8), dtype=int)
    for base in (0, 4):          # two disjoint 4-cycles: 2-regular, disconnected
        for i in range(4):
            u, v = base + i, base + (i + 1) % 4
            A[u, v] = A[v, u] = 1
    with pytest.raises(ValueError, match="disconnected"):
        gc.expander_code(8, 2, graph=A)
    code = gc.expander_code(8, 2, graph=A, require_connected=False)
    assert code.spectral_lambda == pytest.approx(2)


@pytest.mark.parametrize("graph,match", [
    (np.array([[0, 1], [0, 0]]), "symmetric"),
    (np.array([[1, 1], [1, 1]]), "self-loop"),
    (np.array([[0, 2], [2, 0]]), "0 and 1"),
    (np.ones((3, 4)), "square"),
    ("margulis", "random"),
    ([[1], [0], [0]], "symmetric"),
])
def test_bad_graphs(graph, match):
    n = 2 if not isinstance(graph, (str, list)) and np.asarray(graph).shape[0] == 2 else 3
    with pytest.raises(ValueError, match=match):
        gc.expander_code(n, 1, graph=graph)


@pytest.mark.parametrize("graph,err,match", [
    ([[1.5, 4, 5], *PETERSEN[1:]], TypeError, "integer vertices"),     # was truncated to vertex 1
    ([["a", 4, 5], *PETERSEN[1:]], TypeError, "integer vertices"),
    ([[1, 1, 4, 5], *PETERSEN[1:]], ValueError, "repeats vertex 1"),   # a multiple edge, was merged silently
    (None, TypeError, "graph must be"),
    (3, TypeError, "graph must be"),
])
def test_bad_neighbour_lists_and_types(graph, err, match):
    with pytest.raises(err, match=match):
        gc.expander_code(10, 3, graph=graph)


@pytest.mark.parametrize("seed", [None, "generator"])
def test_save_load_without_int_seed_keeps_the_graph(tmp_path, seed):
    """Without an int seed the graph cannot be redrawn: it is saved, so the loaded code keeps its decoders."""
    code = gc.expander_code(12, 3, rng=np.random.default_rng(5) if seed else None)
    gc.save_code(code, tmp_path / "e.npz")
    back = gc.load_code(tmp_path / "e.npz")
    np.testing.assert_array_equal(back.B, code.B)
    assert "optimal" in back.decoders and back.spectral_lambda == pytest.approx(code.spectral_lambda)


def test_wrong_vertex_count():
    with pytest.raises(ValueError, match="vertices"):
        gc.expander_code(11, 3, graph=PETERSEN)


def test_registered_for_tour():
    sch = gc.schemes()["expander_code"]
    assert sch.kind == "adversarial"
    row = sch.evaluate(sch.build(**sch.tour[0])).tour_row()
    assert row["exhaustive"] == "yes" and row["result"] == "proven" and row["worst |err|^2/|g|^2"].startswith("= ")


def test_cli_build_and_load(tmp_path):
    from gradcodes.cli import main

    path = tmp_path / "e.npz"
    assert main(["build", "expander_code", "-n", "10", "-s", "2", "--param", "degree=3", "--seed", "1",
                 "-o", str(path)]) == 0
    back = gc.load_code(path)
    np.testing.assert_array_equal(back.B, gc.expander_code(10, 3, rng=1).B)
    assert "optimal" in back.decoders and "fixed" in back.decoders


def test_networkx_like_graph_and_seed_reproducibility():
    class Graph:                                     # the networkx interface used: nodes() and edges()
        def __init__(self, adj):
            self.adj = adj

        def nodes(self):
            return list(range(len(self.adj)))

        def edges(self):
            return [(u, v) for u, nb in enumerate(self.adj) for v in nb if u < v]

    code = gc.expander_code(10, 3, graph=Graph(PETERSEN))
    np.testing.assert_array_equal(code.adjacency, gc.expander_code(10, 3, graph=PETERSEN).adjacency)
    np.testing.assert_array_equal(gc.expander_code(30, 4, rng=7).B, gc.expander_code(30, 4, rng=7).B)
    assert not np.array_equal(gc.expander_code(30, 4, rng=7).B, gc.expander_code(30, 4, rng=8).B)
