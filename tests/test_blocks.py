"""Proof by blocks (gradcodes._verify.blocks): block structure, the theorem's bound, mutations and bad input."""

import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import gradcodes as gc
from gradcodes._core.numerics import cancellation, residuals
from gradcodes._verify.blocks import Block, BlockDecoder, blocks_of, by_blocks


def _permuted(B, rng):
    P = rng.permutation(B.shape[0])
    Q = rng.permutation(B.shape[1])
    return B[P][:, Q]


def test_blocks_of_a_permuted_block_diagonal_matrix():
    rng = np.random.default_rng(3)
    B = np.kron(np.eye(3), gc.cyclic_repetition(5, 2, rng=1).B)
    code = gc.GradientCode(_permuted(B, rng), s=2)
    blocks = blocks_of(code)
    assert len(blocks) == 3
    assert sorted(len(b.workers) for b in blocks) == [5, 5, 5]
    assert sorted(i for b in blocks for i in b.workers) == list(range(15))
    sup = code.support_matrix
    for b in blocks:                                   # no support outside the block's rows x columns
        outside = np.setdiff1d(np.arange(15), b.partitions)
        assert not sup[np.ix_(list(b.workers), outside)].any()


def test_permuted_copies_are_proven_by_blocks_and_match_the_global_check():
    rng = np.random.default_rng(0)
    B = np.kron(np.eye(2), gc.cyclic_repetition(6, 2, rng=2).B)
    P = rng.permutation(12)
    code = by_blocks(gc.GradientCode(B[P][:, P], s=2))  # same permutation of rows and columns: equal blocks
    rep = gc.verify(code)
    assert rep.exact and rep.patterns_checked == 15     # one block of C(6, 2) = 15 sets
    assert sum(b["same_as"] is not None for b in rep.blocks) == 1
    full = gc.verify(code, limit=10**4)                 # the block decoder is still what is checked
    assert full.exact


@settings(max_examples=8, deadline=None)
@given(st.integers(3, 5), st.integers(1, 2), st.integers(2, 3), st.integers(0, 100))
def test_theorem_bound_holds_for_every_global_set(nb, s, copies, seed):
    s = min(s, nb - 1)
    blocks = [gc.cyclic_repetition(nb, s, rng=seed + c).B for c in range(copies)]
    n = nb * copies
    B = np.zeros((n, n))
    for c, Bb in enumerate(blocks):
        B[c * nb:(c + 1) * nb, c * nb:(c + 1) * nb] = Bb
    code = by_blocks(gc.GradientCode(B, s=s))
    rep = gc.verify(code)
    assert rep.exact
    masks = []
    for S in itertools.combinations(range(n), s):
        m = np.ones(n, dtype=bool)
        m[list(S)] = False
        masks.append(m)
    A = code.decoding_matrices(np.array(masks))
    res = residuals(A, code.B, code.target)
    canc = cancellation(A, code.B, code.k)
    u = np.finfo(float).eps / 2
    ulps = 4 * n * u * canc.max()                      # the residual's own evaluation rounds (order n u canc)
    assert res.max() <= rep.worst_residual + ulps      # part 2: residual = max of the blocks' (real arithmetic)
    assert canc.max() <= rep.worst_cancellation * (1 + 1e-12)          # canc <= sum_b (k_b/k) canc_b
    assert (u * canc + res).max() <= rep.error_estimate + ulps
    assert np.all(A[:, 0, :][~np.array(masks)] == 0)   # stragglers get weight 0


def test_mutation_in_one_block_fails_with_a_real_failing_set():
    B = np.kron(np.eye(3), gc.cyclic_repetition(5, 2, rng=4).B)
    B[7, 8] += 0.5                                      # corrupt the middle block
    code = by_blocks(gc.GradientCode(B, s=2))
    rep = gc.verify(code, stop_on_failure=False)
    assert not rep.exact and rep.verdict == "FAILS" and rep.n_failures > 0
    F = rep.failing_responders
    assert len(F) == 13
    with pytest.raises(gc.DecodingError):
        code.decoding_matrix(F)
    good = by_blocks(gc.GradientCode(np.kron(np.eye(3), gc.cyclic_repetition(5, 2, rng=4).B), s=2))
    assert gc.verify(good).exact


def test_a_block_that_s_stragglers_can_silence_fails():
    B = np.zeros((7, 4))
    B[:5, :3] = 1                                       # 5 workers store partitions 0-2
    B[5:, 3] = 1                                                       # 2 workers store partition 3
    code = gc.GradientCode(B, s=2)
    with pytest.raises(ValueError, match="s=2"):
        by_blocks(code)
    blocks = blocks_of(code)
    subs = [gc.GradientCode(np.ones((5, 3)), s=2) if len(b.workers) == 5 else gc.GradientCode(np.ones((2, 1)), s=1)
            for b in blocks]
    forced = gc.GradientCode(B, s=2, decoders=[BlockDecoder(blocks, subs)], default_decoder="blocks")
    rep = gc.verify(forced)
    assert not rep.exact and rep.verdict == "FAILS"         # sub-codes for other s: checked set by set
    with pytest.raises(gc.DecodingError):
        forced.decoding_matrix(rep.failing_responders)


def test_idle_workers_and_m_greater_than_one():
    Bb = gc.ye_abbe(5, 2, 2).B                          # (5, 2) code with m = 2
    k2 = Bb.shape[1]
    B = np.zeros((11, 2 * k2), dtype=Bb.dtype)
    B[:5, :k2] = Bb
    B[5:10, k2:] = Bb
    code = by_blocks(gc.GradientCode(B, s=2, m=2))       # worker 10 stores nothing
    blocks = blocks_of(code)
    assert [len(b.workers) for b in blocks] == [5, 5, 1] and blocks[2].partitions == ()
    rep = gc.verify(code)
    assert rep.exact and rep.patterns_checked == 10
    G = np.random.default_rng(0).normal(size=(code.k, 6))
    Y = code.encode(G)
    F = [0, 2, 4, 5, 6, 9, 10, 1, 3]
    assert np.allclose(code.decode(F, Y), G.sum(axis=0))


def test_bad_input():
    with pytest.raises(TypeError, match="GradientCode"):
        by_blocks(np.eye(3))
    with pytest.raises(ValueError, match="same length"):
        BlockDecoder([Block((0,), (0,))], [])
