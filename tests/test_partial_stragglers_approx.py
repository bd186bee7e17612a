"""Approximate recovery of partial-straggler protocols: the least-squares chunk decoder, its closed-form error,
``estimate``, and the deadline comparison of ``simulate_partial`` (gradcodes._families.partial_stragglers_approx)."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import gradcodes as gc

Fr = Fraction


def exact_sq(R):
    return sum((v * v for v in np.asarray(R).flat), Fr(0))


# ---------------------------------------------------------------------------------------------- hand-computed


def test_pseudo_inverse_by_hand():
    # m = 3, gamma = 3 (s = 0): the holders' nodes are -1, 0, 1
    code = gc.partial_straggler_code(4, 0, 3, field="rational")
    rows = [int(r) for r in code.holders[0]]                       # chunk 0's three messages, holders in order
    assert [code.B[r, 0:3].tolist() for r in rows] == [[1, -1, 1], [1, 0, 0], [1, 1, 1]]
    mask = np.zeros((2, code.n), dtype=bool)
    mask[0, rows[2]] = True                                        # one message x = 1: V = [1 1 1], V+ = V^T / 3
    mask[1, [rows[0], rows[2]]] = True                             # x = -1, 1: V V^T = [[3, 1], [1, 3]]
    A = code.decoding_matrices(mask, "chunks_lstsq")
    assert A[0][:, rows[2]].tolist() == [Fr(1, 3)] * 3
    assert A[0][:, [rows[0], rows[1]]].tolist() == [[0, 0]] * 3
    # V^T (V V^T)^{-1} = V^T [[3, -1], [-1, 3]] / 8
    assert A[1][:, [rows[0], rows[2]]].tolist() == [[Fr(1, 4), Fr(1, 4)], [Fr(-1, 2), Fr(1, 2)], [Fr(1, 4), Fr(1, 4)]]
    assert code.squared_error(mask).tolist() == [2 + 3 * 3, 1 + 3 * 3]
    R = A[1] @ code.B - code.target
    assert exact_sq(R) == 10                                       # chunk 0: ||V+ V - I||^2 = 3 - 2; three chunks lost


def test_estimate_by_hand_and_agrees_with_decode():
    code = gc.partial_straggler_code(3, 0, 2, field="rational")
    G = np.array([[Fr(1), Fr(2), Fr(7)], [Fr(3), Fr(4), Fr(0)], [Fr(5), Fr(6), Fr(-1)]], dtype=object)
    Y = code.encode(G)                                             # p = 3, m = 2: blocks of length 2 (one padded)
    got = [code.message(2, 1)]                                     # chunk 0, node 1: y = (1 + 7, 2 + 0)
    g, err = code.estimate(got, Y, length=3, return_error=True)
    assert g.tolist() == [Fr(4), Fr(1), Fr(4)] and err == 5
    assert code.approximation_error(got) == pytest.approx(np.sqrt(5))
    everything = list(range(code.n))
    g, err = code.estimate(everything, Y, length=3, return_error=True)
    assert err == 0 and g.tolist() == code.decode(everything, Y, length=3).tolist() == [9, 12, 6]
    # compact rows in the order of responders, and a Fraction-free float32 path
    order = [code.message(1, 1), code.message(0, 0)]
    assert code.estimate(order, Y[order]).tolist() == code.estimate(sorted(order), Y).tolist()
    fcode = gc.partial_straggler_code(3, 0, 2)
    Yf = fcode.encode(np.asarray(G, dtype=np.float32))
    assert fcode.estimate(got, Yf).dtype == np.float32


# ---------------------------------------------------------------------------------------------- properties


@pytest.mark.parametrize(("n", "s", "m"), [(5, 1, 3), (6, 2, 2), (4, 0, 4)])
def test_closed_form_is_the_least_squares_optimum(n, s, m):
    code = gc.partial_straggler_code(n, s, m, field="rational")
    fcode = gc.partial_straggler_code(n, s, m)
    gen = np.random.default_rng(n * 10 + m)
    masks = gen.random((40, code.n)) < gen.random((40, 1))
    A = code.decoding_matrices(masks, "chunks_lstsq")
    E = code.target
    se = code.squared_error(masks)
    Al = fcode.decoding_matrices(masks, "lstsq")                  # the shared SVD least-squares decoder
    Bf = np.asarray(fcode.B, dtype=float)
    for b in range(masks.shape[0]):
        assert exact_sq(A[b] @ code.B - E) == se[b]                 # exact residual of the rational decoder
        R = Al[b] @ Bf - np.asarray(fcode.target, dtype=float)
        assert float(np.sum(R * R)) == pytest.approx(float(se[b]), abs=1e-9)
        assert (se[b] == 0) == bool(code.squared_error(masks[b]) == 0)


@settings(max_examples=40, deadline=None)
@given(st.integers(3, 7), st.integers(1, 3), st.integers(0, 2), st.randoms(use_true_random=False))
def test_error_falls_as_messages_arrive(n, m, s, rnd):
    if s + m > n:
        s = n - m
    code = gc.partial_straggler_code(n, s, m)
    loads = np.diff(code.offsets)
    progress = np.zeros(code.workers, dtype=np.int64)
    seq = [i for i in range(code.workers) for _ in range(int(loads[i]))]
    rnd.shuffle(seq)                                              # workers finish chunks in a random interleaving
    prev = code.k * m
    assert code.squared_error(code.progress_mask(progress)) == prev
    for w in seq:
        progress[w] += 1
        err = code.squared_error(code.progress_mask(progress))
        assert err <= prev                                         # monotone non-increasing
        assert (err == 0) == code.decodable_progress(progress)    # zero exactly once decodable
        prev = err
    assert prev == 0


@settings(max_examples=25, deadline=None)
@given(st.integers(0, 2**31 - 1))
def test_estimate_is_the_decode_once_decodable(seed):
    code = gc.partial_straggler_code(5, 1, 2, field="rational")
    gen = np.random.default_rng(seed)
    mask = gen.random(code.n) < 0.6
    G = np.array([[Fr(int(v)) for v in row] for row in gen.integers(-9, 10, (code.k, 4))], dtype=object)
    Y = code.encode(G)
    g, err = code.estimate(mask, Y, return_error=True)
    true = G.sum(axis=0)
    if err == 0:
        assert g.tolist() == true.tolist() == code.decode(mask, Y).tolist()
    else:
        with pytest.raises(gc.DecodingError):
            code.decode(mask, Y)


# ---------------------------------------------------------------------------------------------- simulation


def test_deadlines_with_equal_speeds_by_hand():
    # every chunk takes 1 s; m = 1, gamma = 2: at 1 s each chunk has one message (matching order), no load is done
    code = gc.partial_straggler_code(6, 1, 1)
    sim = gc.simulate_partial(code, model=gc.ShiftedExponentialWorkers(1.0, float("inf")), iters=2,
                              deadlines=[0.5, 1.0, 2.0])
    assert sim.partial_error.tolist() == [[1.0, 0.0, 0.0]] * 2
    assert sim.classical_error[:, 0].tolist() == [1.0, 1.0] and sim.classical_error[:, 2].tolist() == [0.0, 0.0]
    assert sim.classical_error[:, 1].tolist() == [1.0, 1.0]
    assert sim.details["classical_code"] == code.classical_code().name


def test_deadlines_use_the_same_draws_and_partial_wins_for_m1():
    code = gc.partial_straggler_code(10, 2, 1)
    kw = dict(model=gc.ShiftedExponentialWorkers(1.0, 1.0), iters=300, rng=5)
    plain = gc.simulate_partial(code, **kw)
    sim = gc.simulate_partial(code, deadlines=[2.0, 4.0, 7.0, 1e9], **kw)
    assert np.array_equal(plain.partial, sim.partial) and np.array_equal(plain.classical, sim.classical)
    # m = 1: the partial master holds every finished worker's chunks uncoded, so it never knows less
    assert np.all(sim.partial_error <= sim.classical_error + 1e-12)
    assert np.all(sim.partial_error[:, -1] == 0) and np.all(sim.classical_error[:, -1] == 0)
    # exact at a deadline iff the iteration time is at most the deadline
    for c, d in enumerate(sim.deadlines):
        assert np.array_equal(sim.partial_error[:, c] == 0, sim.partial <= d)
        assert np.array_equal(sim.classical_error[:, c] == 0, sim.classical <= d)


def test_custom_classical_code():
    code = gc.partial_straggler_code(6, 1, 1)
    rep = gc.cyclic_repetition(6, 1, rng=0)
    sim = gc.simulate_partial(code, iters=50, rng=1, deadlines=[3.0], classical=rep)
    assert sim.details["classical_code"] == rep.name and sim.classical_error.shape == (50, 1)


def test_simulate_stops_a_partial_protocol_at_a_deadline():
    # equal speeds, free messages: chunk t of every worker arrives at t + 1 (chunk_points = m_data / k = 1)
    code = gc.partial_straggler_code(6, 1, 2)
    kw = dict(iters=3, rng=0, t_c=0.0, a=1.0, mu=float("inf"), m_data=6.0)
    r = gc.simulate(code, deadline=1.0, **kw)[f"PS[{code.name}]"]
    assert r.mean == 1.0 and r.error == pytest.approx(np.sqrt(6))          # one of two blocks of 6 chunks
    assert r.details["mse"] == 0.5 and r.details["p_exact"] == 0.0 and r.details["exact"] is False
    r = gc.simulate(code, deadline=5.0, **kw)[f"PS[{code.name}]"]
    assert r.mean == 2.0 and r.error == 0.0 and r.details["p_exact"] == 1.0  # decodes at 2 s, before the deadline
    # with a message cost the stop keeps what the single-port master has received by the deadline
    res = gc.simulate(code, deadline=4.0, iters=400, rng=1, t_c=0.5)[f"PS[{code.name}]"]
    assert res.mean <= 4.0 and 0.0 < res.details["mse"] < 1.0


# ---------------------------------------------------------------------------------------------- bad input


@pytest.mark.parametrize("bad", [[], [0.0], [-1.0], [float("nan")], ["x"], 3.0, "1.0"])
def test_bad_deadlines(bad):
    with pytest.raises(gc.GradcodesError, match="deadlines"):
        gc.simulate_partial(gc.partial_straggler_code(4, 1), iters=2, deadlines=bad)


def test_bad_classical():
    code = gc.partial_straggler_code(6, 1, 1)
    with pytest.raises(gc.GradcodesError, match="classical"):
        gc.simulate_partial(code, iters=2, deadlines=[1.0], classical="ye_abbe")
    with pytest.raises(gc.GradcodesError, match="classical"):
        gc.simulate_partial(code, iters=2, deadlines=[1.0], classical=gc.ye_abbe(7, 1, 1))
    with pytest.raises(gc.GradcodesError, match="classical"):                 # rows use chunks not held
        gc.simulate_partial(code, iters=2, deadlines=[1.0], classical=gc.cyclic_repetition(6, 2, rng=0))
    with pytest.raises(gc.GradcodesError, match="classical"):
        gc.simulate_partial(code, iters=2, classical=gc.ye_abbe(6, 1, 1))
    odd = gc.partial_straggler_code(4, assignment=np.eye(4, dtype=int) + np.roll(np.eye(4, dtype=int), 2, axis=1))
    with pytest.raises(gc.GradcodesError, match="classical"):
        odd.classical_code()


def test_bad_masks_and_lengths():
    code = gc.partial_straggler_code(4, 1)
    with pytest.raises(gc.GradcodesError, match="mask"):
        code.squared_error(np.ones(code.n - 1, dtype=bool))
    with pytest.raises(gc.GradcodesError, match="mask"):
        code.squared_error(np.ones(code.n, dtype=int))
    Y = code.encode(np.ones((4, 3)))
    with pytest.raises(gc.GradcodesError, match="length"):
        code.estimate([0], Y, length=0)
    with pytest.raises(gc.GradcodesError, match="responders"):
        code.estimate([code.n], Y)
