"""Every constructor and function checks the size it is asked for before it allocates or loops."""

import numpy as np
import pytest

import gradcodes as gc

# the calls of the bug report: > 30 s, > 100 s, or MemoryError ("Unable to allocate 6.94 EiB") before the checks
HUGE = [
    lambda: gc.coded_reduce_load(3, 10**5, 1),
    lambda: gc.coded_reduce(3, 10**9, 1),
    lambda: gc.simulate(L=10**9),
    lambda: gc.simulate(iters=10**9),
    lambda: gc.ye_abbe(10**9, 2, 2),
    lambda: gc.grouped_mds(10**9, 3),
    lambda: gc.recommend(2**63, 3),
    lambda: gc.recommend(10, 3, samples=2**63),
    lambda: gc.uncoded(10**9),
    lambda: gc.uncoded(4, k=10**9),
    lambda: gc.fractional_repetition(10**9, 1),
    lambda: gc.fractional_repetition(4, 1, k=2**63),
    lambda: gc.cyclic_repetition(10**9, 1),
    lambda: gc.cyclic_repetition(4, 1, k=10**9),
    lambda: gc.cyclic_repetition(5000, 4000),
    lambda: gc.cyclic_mds(10**9, 1),
    lambda: gc.stable_binary(10**9, 1),
    lambda: gc.stable_binary(4, 1, k=2**63),
    lambda: gc.expander_code(10**9, 3),
    lambda: gc.random_regular_graph(10**9, 3),
    lambda: gc.heterogeneous([0.1, 0.2, 0.3], 10**9),
    lambda: gc.song_choi_allocation([0.1, 0.2, 0.3], 2**63),      # returned an empty allocation
    lambda: gc.ignore_stragglers(10**9),
    lambda: gc.stochastic_gc(10**9, 2, 0.1),
    lambda: gc.stochastic_gc(4, 2, 0.1, k=10**9),
    lambda: gc.bernoulli_gc(10**9, 2),
    lambda: gc.erasurehead(10**9, 2),
    lambda: gc.optimal_decoding(10**9, 2),
    lambda: gc.straggle_probabilities(0.1, n=10**9),
    lambda: gc.exponential_straggle_probabilities(10**9, 1.5),
    lambda: gc.ye_abbe(3000, 2, 2, field="rational", nodes="integer"),
]


@pytest.mark.parametrize("call", HUGE)
def test_huge_sizes_are_refused_up_front(call):
    with pytest.raises(gc.SizeLimitError, match=r"exceeds the bound|more than the bound"):
        call()


def test_message_names_the_size_the_bound_and_the_override():
    with pytest.raises(gc.SizeLimitError) as info:
        gc.cyclic_repetition(10**5, 1)          # dense (uncoded(10**5) is now stored sparse: 10**5 non-zeros)
    msg = str(info.value)
    assert "100,000 x 100,000" in msg and "10,000,000,000" in msg and "100,000,000" in msg
    assert "gradcodes.limits.entries" in msg
    assert issubclass(gc.SizeLimitError, ValueError)


def test_limits_can_be_raised_and_lowered():
    with gc.limits.raised(entries=10), pytest.raises(gc.SizeLimitError, match="bound 10 "):
        gc.uncoded(4)
    assert gc.uncoded(4).n == 4
    old = gc.limits.work
    try:
        gc.limits.work = 10
        with pytest.raises(gc.SizeLimitError, match="gradcodes.limits.work"):
            gc.coded_reduce_load(3, 3, 1)
    finally:
        gc.limits.work = old
    assert gc.coded_reduce_load(3, 3, 1) > 0
    with pytest.raises(ValueError, match="limits.entries"):
        gc.limits.entries = 0
    with pytest.raises(AttributeError, match="no bound"):
        gc.limits.memory = 5


def test_tree_sizes_without_huge_powers():
    with pytest.raises(gc.SizeLimitError, match=r"about 10\^"):
        gc.coded_reduce_load(10, 10**6, 1)
    assert gc.coded_reduce_load(3, 2, 1) == gc.coded_reduce_load(3, 2, 1)


def test_song_choi_allocation_large_k_is_not_empty():
    alpha, Y = gc.song_choi_allocation([0.1, 0.2, 0.3], 1000)
    assert alpha.shape == (3, 1000) and np.isclose(alpha.sum(), Y.sum())


def test_integer_01_mask_is_not_read_as_indices():
    code = gc.fractional_repetition(4, 1)
    with pytest.raises(TypeError, match="0/1 mask"):
        code.decoding_matrix(np.array([1, 0, 1, 1]))
    with pytest.raises(TypeError, match="0/1 mask"):
        code.decoding_matrix([1, 1, 0, 1])
    assert code.decoding_matrix(np.array([1, 0, 1, 1], dtype=bool)).shape == (1, 4)
