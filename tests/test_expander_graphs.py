"""Margulis–Gabber–Galil and bipartite expander codes (Raviv et al. 2018/2020), graph assignment codes with the
closed-form optimal decoder (Glasgow & Wootters 2021): exact test vectors, exact error identities, bad input."""

from __future__ import annotations

import itertools
import math
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import gradcodes as gc

TRIANGLE = [[0, 1, 1], [1, 0, 1], [1, 1, 0]]
K4 = [[0, 1, 1, 1], [1, 0, 1, 1], [1, 1, 0, 1], [1, 1, 1, 0]]


def _exact_sq_error(code, F, decoder):
    """||A_F B - 1||^2 in Fractions (code built with field='rational')."""
    A = code.decoding_matrix(F, decoder=decoder)
    R = A @ code.B - code.target
    return sum((v * v for v in R.flat), Fraction(0))


# ----------------------------------------------------------------------------------------------- Margulis
def test_margulis_graph_test_vector():
    """N = 2: the maps of Gabber & Galil on Z_2 x Z_2 by hand (vertex (x, y) = 2x + y)."""
    A = gc.margulis_gabber_galil_graph(2).toarray()
    # mod 2, 2y = 2x = 0: T1 and T3 fix every vertex (two loops, 4 on the diagonal); T2(x, y) = (x + 1, y) and
    # T4(x, y) = (x, y + 1) and their inverses give each vertex its two torus neighbours twice
    assert A.tolist() == [[4, 2, 2, 0], [2, 4, 0, 2], [2, 0, 4, 2], [0, 2, 2, 4]]
    for N in range(2, 9):
        A = gc.margulis_gabber_galil_graph(N)
        assert A.dtype == np.int64 and (A.sum(axis=1) == 8).all() and (A != A.T).nnz == 0
        assert (A.diagonal() % 2 == 0).all()                         # a loop counts twice


@pytest.mark.parametrize("N", [2, 3, 5, 6, 10])
def test_margulis_matches_networkx_and_expander_code_accepts_it(N):
    """expander_code raised 'graph has a self-loop at 0' on networkx's Margulis–Gabber–Galil multigraph."""
    nx = pytest.importorskip("networkx")
    G = nx.margulis_gabber_galil_graph(N)
    code = gc.expander_code(N * N, 8, graph=G)
    ref = gc.margulis_code(N)
    np.testing.assert_array_equal(code.B, ref.B)
    np.testing.assert_array_equal(ref.adjacency, gc.margulis_gabber_galil_graph(N).toarray())
    assert [G.degree(v) for v in sorted(G)] == ref.adjacency.sum(axis=1).tolist()


def test_margulis_spectral_bound_exact():
    """Every straggler set, exactly: the fixed decoder's error^2 <= (λ/8)^2 n s/(n - s) with λ^2 <= 50."""
    code = gc.margulis_code(3, field="rational")
    n = code.n
    assert all(sum(code.B[:, j]) == 1 for j in range(n)) and all(sum(code.B[i]) == 1 for i in range(n))
    for s in (1, 2, 3):
        bound_sq = Fraction(50, 64) * Fraction(n * s, n - s)
        for S in itertools.combinations(range(n), s):
            F = [i for i in range(n) if i not in S]
            fixed = _exact_sq_error(code, F, "fixed")
            assert fixed <= bound_sq
            assert _exact_sq_error(code, F, "optimal") <= fixed


@pytest.mark.parametrize("N", [2, 3, 4, 7, 10])
def test_margulis_lambda_below_gabber_galil(N):
    ev = np.sort(np.linalg.eigvalsh(gc.margulis_gabber_galil_graph(N).toarray().astype(float)))
    assert ev[-1] == pytest.approx(8)
    assert max(abs(ev[0]), abs(ev[-2])) <= 5 * math.sqrt(2) + 1e-9
    assert gc.margulis_code(N).spectral_lambda == 5 * math.sqrt(2)


def test_expander_code_multigraph_save_load(tmp_path):
    nx = pytest.importorskip("networkx")
    code = gc.expander_code(9, 8, graph=nx.margulis_gabber_galil_graph(3))
    gc.save_code(code, tmp_path / "m.npz")
    back = gc.load_code(tmp_path / "m.npz")
    np.testing.assert_array_equal(back.B, code.B)
    assert set(back.decoders) >= {"optimal", "fixed"}


def test_simple_graph_loop_still_rejected():
    class Loop:
        def nodes(self):
            return [0, 1]

        def edges(self):
            return [(0, 0), (0, 1)]

    with pytest.raises(ValueError, match="self-loop at 0"):
        gc.expander_code(2, 1, graph=Loop())


# ----------------------------------------------------------------------------------------------- bipartite
def test_bipartite_degrees_and_determinism():
    code = gc.bipartite_expander_code(30, 20, 4, rng=3)
    H = code.biadjacency
    assert (H.sum(axis=1) == 4).all() and (H.sum(axis=0) == 6).all() and set(np.unique(H)) == {0, 1}
    np.testing.assert_array_equal(code.B, H / 6)
    np.testing.assert_array_equal(code.B, gc.bipartite_expander_code(30, 20, 4, rng=3).B)
    assert not np.array_equal(code.B, gc.bipartite_expander_code(30, 20, 4, rng=4).B)
    assert code.load == 4 and code.partition_degree == 6


def test_bipartite_test_vector_and_bound():
    """A hand-made graph: 4 workers, 2 partitions, every worker holds both: B = H/4, σ_2 = 0, error 0."""
    code = gc.bipartite_expander_code(4, 2, 2, graph=np.ones((4, 2), dtype=int), field="rational")
    assert code.B.tolist() == [[Fraction(1, 4)] * 2] * 4
    assert _exact_sq_error(code, [0, 2], "fixed") == 0
    code = gc.bipartite_expander_code(12, 8, 4, rng=1)
    for s in (1, 2, 3):
        rep = gc.worst_case_error(code, s, decoder="fixed")
        assert rep.exhaustive and rep.worst_lower <= code.spectral_bound(s) * (1 + 1e-12)


@pytest.mark.parametrize("kwargs,match", [
    (dict(n=5, k=4, degree=2), "multiple of k"),
    (dict(n=4, k=2, degree=3), "degree"),
    (dict(n=4, k=2, degree=1, graph=np.ones((4, 3))), r"shape \(n, k\)"),
    (dict(n=4, k=2, degree=1, graph=2 * np.ones((4, 2))), "0 and 1"),
    (dict(n=4, k=2, degree=1, graph=np.ones((4, 2))), "worker degree 1"),
    (dict(n=4, k=2, degree=1, graph="margulis"), "'random'"),
    (dict(n=4, k=2, degree=1, field="GF"), "field"),
])
def test_bipartite_bad_input(kwargs, match):
    with pytest.raises(gc.GradcodesValueError, match=match):
        gc.bipartite_expander_code(**kwargs)


# ----------------------------------------------------------------------------------------------- graph assignment
def test_graph_assignment_triangle_worked_example():
    """Glasgow & Wootters' closed form on the triangle, every responder set, exactly."""
    code = gc.graph_assignment_code(3, 2, graph=TRIANGLE, field="rational")
    assert code.n == 3 and code.load == 2 and code.edges.tolist() == [[0, 1], [0, 2], [1, 2]]
    expected = {(0, 1, 2): 0, (0, 1): Fraction(1, 3), (0, 2): Fraction(1, 3), (1, 2): Fraction(1, 3),
                (0,): 1, (1,): 1, (2,): 1}                    # one edge: L = R = 1 plus an isolated vertex
    for F, err in expected.items():
        assert gc.graph_assignment_error(code, F) == err
        assert _exact_sq_error(code, list(F), "components") == err
        assert _exact_sq_error(code, list(F), "optimal") == err
    A = code.decoding_matrix([0, 1], decoder="components")    # path 1-0-2: α = (2/3, 4/3, 4/3) ... u = (4/3, 4/3)
    assert A.tolist() == [[Fraction(4, 3), Fraction(4, 3), 0]]


def _cycle(k):
    return [[1 if (i - j) % k in (1, k - 1) else 0 for j in range(k)] for i in range(k)]


@pytest.mark.parametrize("k, dead, want", [
    (6, [], 0),                                   # even cycle: bipartite, |L| = |R| = 3
    (6, [(0, 1)], 0),                             # path on 6 vertices: 3 / 3
    (6, [(0, 1), (1, 2)], Fraction(6, 5)),        # vertex 1 isolated (1) + path on 5 vertices: (3-2)^2/5
    (6, [(0, 1), (3, 4)], Fraction(2, 3)),        # two paths on 3 vertices: 2 * (2-1)^2/3
    (6, [(0, 1), (2, 3), (4, 5)], 0),             # three single edges: L = R = 1 each
    (5, [], 0),                                   # odd cycle: α = 1 everywhere (Lemma: odd cycle)
    (5, [(0, 1)], Fraction(1, 5)),                # path on 5 vertices: (3-2)^2/5
    (5, [(0, 1), (2, 3)], Fraction(1, 3)),        # edge 1-2 (L = R = 1: 0) and path 3-4-0 ((2-1)^2/3)
    (5, [(0, 1), (1, 2), (3, 4)], Fraction(1)),   # vertex 1 isolated (1), edges 2-3 and 4-0 (0 each)
])
def test_graph_assignment_cycle_vectors(k, dead, want):
    """Glasgow & Wootters' characterisation (2021, §IV: α_u + α_v = 2 on every surviving edge; α = 1 on a
    component with an odd cycle; 1 ∓ (|L|-|R|)/|C| on a bipartite one; 0 on an isolated partition) on cycles,
    hand-computed, exactly; the components decoder and exact least squares agree."""
    code = gc.graph_assignment_code(k, 2, graph=_cycle(k), field="rational")
    edges = [tuple(sorted(e)) for e in code.edges.tolist()]
    alive = [i for i, e in enumerate(edges) if e not in {tuple(sorted(d)) for d in dead}]
    assert len(alive) == k - len(dead)
    assert gc.graph_assignment_error(code, alive) == want
    assert _exact_sq_error(code, alive, "components") == want
    assert _exact_sq_error(code, alive, "optimal") == want


@pytest.mark.parametrize("graph,k,d", [(K4, 4, 3), ("margulis", 4, 8), ("margulis", 9, 8)])
def test_components_decoder_is_optimal_exactly(graph, k, d):
    """Every responder set (K4: all 2^6; Margulis: 300 random ones): the closed-form decoder's exact error equals
    the exact least-squares optimum and the component formula."""
    code = gc.graph_assignment_code(k, d, graph=graph, field="rational")
    n = code.n
    rng = np.random.default_rng(0)
    sets = (itertools.chain.from_iterable(itertools.combinations(range(n), r) for r in range(1, n + 1))
            if n <= 6 else (tuple(np.flatnonzero(rng.random(n) < p)) for p in rng.random(60)))
    for F in sets:
        if not F:
            continue
        formula = gc.graph_assignment_error(code, F)
        assert _exact_sq_error(code, list(F), "components") == formula
        if n <= 16:
            assert _exact_sq_error(code, list(F), "optimal") == formula


@settings(max_examples=30, deadline=None)
@given(st.integers(4, 14), st.integers(2, 4), st.integers(0, 10**6), st.integers(0, 10**6))
def test_hypothesis_components_vs_least_squares(k, d, seed, mseed):
    if (k * d) % 2 or d >= k:
        return
    code = gc.graph_assignment_code(k, d, rng=seed)
    mask = np.random.default_rng(mseed).random(code.n) < 0.6
    if not mask.any():
        return
    F = np.flatnonzero(mask)
    A = code.decoding_matrix(F, decoder="components")
    assert (A[0, ~mask] == 0).all()
    exact = gc.graph_assignment_error(code, F)
    assert gc.approximation_error(code, F, decoder="components") == pytest.approx(math.sqrt(exact), abs=1e-12)
    assert gc.approximation_error(code, F, decoder="optimal") == pytest.approx(math.sqrt(exact), abs=1e-9)
    assert exact <= _fixed_sq(code, F)


def _fixed_sq(code, F):
    e = gc.approximation_error(code, F, decoder="fixed")
    return Fraction(e * e) + Fraction(1, 10**9)


def test_graph_assignment_loops_and_multi_edges():
    """Margulis N=2 as assignment: loops (one worker holds one partition twice) and repeated edges."""
    code = gc.graph_assignment_code(4, 8, graph="margulis", field="rational")
    assert code.n == 16
    loops = [e for e, (a, b) in enumerate(code.edges.tolist()) if a == b]
    assert len(loops) == 8 and all(code.B[e, code.edges[e, 0]] == Fraction(2, 8) for e in loops)
    # only a loop survives: its component is non-bipartite (α = 1 there), the other 3 partitions are isolated
    assert gc.graph_assignment_error(code, [loops[0]]) == 3
    assert _exact_sq_error(code, [loops[0]], "components") == 3


def test_graph_assignment_bad_input():
    with pytest.raises(gc.GradcodesValueError, match="k = N"):
        gc.graph_assignment_code(5, 8, graph="margulis")
    with pytest.raises(gc.GradcodesValueError, match="symmetric"):
        gc.graph_assignment_code(3, 1, graph=[[0, 1, 0], [0, 0, 1], [1, 0, 0]])
    with pytest.raises(gc.GradcodesValueError, match="even diagonal"):
        gc.graph_assignment_code(2, 1, graph=[[1, 0], [0, 1]])
    with pytest.raises(gc.GradcodesValueError, match="2-regular"):
        gc.graph_assignment_code(3, 2, graph=[[0, 1, 1], [1, 0, 0], [1, 0, 0]])
    with pytest.raises(gc.GradcodesValueError, match=r"\[1, 2\]"):
        gc.graph_assignment_code(3, 5)
    with pytest.raises(gc.GradcodesValueError, match="degree"):
        gc.graph_assignment_code(5, 3, rng=0)
    with pytest.raises(gc.GradcodesValueError, match="k"):
        gc.graph_assignment_code(1, 1)
    with pytest.raises(gc.GradcodesTypeError, match="graph assignment code"):
        gc.graph_assignment_error(gc.margulis_code(2), [0])


# ----------------------------------------------------------------------------------------------- io, registry
@pytest.mark.parametrize("build", [
    lambda: gc.margulis_code(3, s=2),
    lambda: gc.bipartite_expander_code(12, 8, 4, rng=1),
    lambda: gc.bipartite_expander_code(12, 8, 4, rng=np.random.default_rng(1)),
    lambda: gc.graph_assignment_code(10, 3, rng=2),
    lambda: gc.graph_assignment_code(10, 3, rng=np.random.default_rng(2)),
    lambda: gc.graph_assignment_code(9, 8, graph="margulis"),
])
def test_save_load_keeps_family_decoders(tmp_path, build):
    code = build()
    gc.save_code(code, tmp_path / "c.npz")
    back = gc.load_code(tmp_path / "c.npz")
    assert back == code and set(back.decoders) == set(code.decoders)


@pytest.mark.parametrize("name", ["margulis_code", "bipartite_expander_code", "graph_assignment_code"])
def test_registered(name):
    sch = gc.schemes()[name]
    assert sch.kind == "adversarial"
    row = sch.evaluate(sch.build(**sch.tour[0])).tour_row()
    assert row["result"] in ("proven", "bounded")
