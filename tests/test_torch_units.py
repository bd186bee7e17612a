"""Single-process units of gradcodes.torch: the sampler, the loss weighting, FlatParams, the job's argument
parsing and bad input (the multi-process behaviour is in tests/test_torch.py)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import gradcodes as gc
from gradcodes.torch import CodedSampler, FlatParams, coded_loss, loss_weights

torch = pytest.importorskip("torch")


@settings(max_examples=25, deadline=None)
@given(st.sampled_from([(4, 1), (6, 2), (5, 1)]), st.integers(0, 3), st.integers(0, 1000))
def test_sampler_splits_each_global_batch_by_partition(ns, epoch, seed):
    n, s = ns
    code = gc.cyclic_repetition(n, s, rng=0)
    per_worker = []
    for i in range(n):
        sm = CodedSampler(100, code, i, batch_size=2 * n, seed=seed)
        sm.set_epoch(epoch)
        per_worker.append(list(sm))
        assert sm.partition_ids.tolist() == np.repeat(code.supports[i], 2).tolist()
    ref = CodedSampler(100, code, None, batch_size=2 * n, seed=seed)
    ref.set_epoch(epoch)
    for b, batch in enumerate(ref):
        assert batch == ref.global_batch(b).tolist()
        for i in range(n):                               # worker i's samples are its partitions' slices
            want = [x for j in code.supports[i] for x in batch[2 * j:2 * j + 2]]
            assert per_worker[i][b] == want
    again = CodedSampler(100, code, None, batch_size=2 * n, seed=seed)
    again.set_epoch(epoch)
    assert list(again) == list(ref)                      # deterministic across ranks


def test_sampler_bad_input_names_the_parameter():
    code = gc.cyclic_repetition(4, 1, rng=0)
    with pytest.raises(ValueError, match="batch_size must be a multiple"):
        CodedSampler(100, code, 0, batch_size=10)
    with pytest.raises(ValueError, match="worker"):
        CodedSampler(100, code, 4, batch_size=8)
    with pytest.raises(ValueError, match="batch_size"):
        CodedSampler(10, code, 0, batch_size=16)


@pytest.mark.parametrize("make", [lambda: gc.cyclic_repetition(5, 2, rng=1), lambda: gc.fractional_repetition(6, 2)])
def test_weighted_loss_gradient_is_the_encoded_message(make):
    """grad of sum_r B[i, part(r)] l_r / N equals row i of code.encode(partition gradients) (float64)."""
    code = make()
    N = 4 * code.k
    g = torch.Generator().manual_seed(0)
    X, y = torch.randn(N, 3, dtype=torch.float64, generator=g), torch.randn(N, dtype=torch.float64, generator=g)
    w = torch.randn(3, dtype=torch.float64, generator=g, requires_grad=True)
    parts = []
    for j in range(code.k):
        w.grad = None
        (((X[4 * j:4 * j + 4] @ w - y[4 * j:4 * j + 4]) ** 2).sum() / N).backward()
        parts.append(w.grad.clone())
    Y = code.encode(torch.stack(parts))
    for i in range(code.n):
        sm = CodedSampler(N, code, i, batch_size=N, shuffle=False)
        idx = next(iter(sm))
        w.grad = None
        coded_loss((X[idx] @ w - y[idx]) ** 2, loss_weights(code, i, sm.partition_ids, N,
                                                             dtype=torch.float64)).backward()
        torch.testing.assert_close(w.grad, Y[i], rtol=1e-12, atol=1e-14)


def test_loss_weights_refuses_m_above_one():
    with pytest.raises(ValueError, match="m = 2"):
        loss_weights(gc.ye_abbe(3, 1, 2), 0, [0, 1, 2], 3)


def test_flat_params_round_trip_and_grad_views():
    model = torch.nn.Sequential(torch.nn.Linear(3, 2), torch.nn.Linear(2, 1))
    flat = FlatParams(list(model.parameters()))
    assert flat.size == sum(p.numel() for p in model.parameters())
    vec = torch.arange(flat.size, dtype=torch.float32)
    flat.write(vec)
    out = torch.empty(flat.size)
    flat.read(out)
    torch.testing.assert_close(out, vec)
    g = torch.zeros(flat.size)
    flat.set_grads(g)
    g[0] = 5.0
    assert float(next(model.parameters()).grad.reshape(-1)[0]) == 5.0    # a view, not a copy


def test_job_parses_delays_and_schemes():
    from gradcodes.mpi import FixedDelay, NoDelay, ShiftedExponential
    from gradcodes.torch._job import build_scheme, parse_delay, parser

    assert isinstance(parse_delay("none", n=4, s=1, data=240), NoDelay)
    assert isinstance(parse_delay("fixed:0.3", n=4, s=1, data=240), FixedDelay)
    assert parse_delay("slow:0.3", n=4, s=1, data=240).workers == frozenset({3})
    assert isinstance(parse_delay("shiftexp:0.001", n=4, s=1, data=240), ShiftedExponential)
    with pytest.raises(ValueError, match="--delay"):
        parse_delay("sometimes", n=4, s=1, data=240)
    assert build_scheme("ddp", 4, 1)[0] is None
    assert build_scheme("all", 4, 1)[1] == "all"
    with pytest.raises(ValueError, match="unknown scheme"):
        build_scheme("nope", 4, 1)
    args = parser().parse_args(["--stragglers", "2", "--comm-factor", "3"])
    assert (args.stragglers, args.comm_factor) == (2, 3)
