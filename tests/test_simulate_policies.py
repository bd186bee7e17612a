"""gc.simulate: the earliest decodable set, worker models (unequal, persistent, traces), approximate codes."""

from __future__ import annotations

import hashlib
import math

import numpy as np
import pytest
from scipy import integrate

import gradcodes as gc
from gradcodes._simulate import (
    BackupWorkers,
    EarliestDecodable,
    FixedK,
    PersistentStragglers,
    ShiftedExponentialWorkers,
    TraceReplay,
)


def _h(x):
    return hashlib.sha256(np.ascontiguousarray(x).tobytes()).hexdigest()[:16]


# Produced by the simulator before the earliest-decodable rule (commit 7a159e4, gradcodes/_simulate.py) with
# return_samples=True, return_responders=True: (mean.hex(), stderr.hex(), sha256(times)[:16],
# sha256(responders)[:16]). The old policy ("first n - s", i.i.d. workers) must reproduce them bit for bit.
OLD = {
    ("labels", "CR"): ("0x1.2d7f184f965a2p+0", "0x1.567691347e700p-7", "672a57feedcf4628", "762111197f4fe3e6"),
    ("labels", "UMW"): ("0x1.21ffd8fc80c2bp+0", "0x1.dd8e7b9021a0ep-11", "617847909f4cb053", "684ad25fdc2bbb80"),
    ("labels", "GC"): ("0x1.d0d736476ea80p+0", "0x1.7cd60b1b3bfe6p-7", "495f1312f85f84bd", "71cb1c29f97dc94e"),
    ("labels", "SGD"): ("0x1.c2f8653085674p-1", "0x1.1316750e257afp-12", "b4f28249f0f685c2", "8d9df360721edcbb"),
    ("labels", "RAR"): ("0x1.687fa2779acf4p-1", "0x1.b161e7370f5aep-8", "4bb8db4668ad7381", "684ad25fdc2bbb80"),
    ("fr", "GC[fractional_repetition]"): ("0x1.eeed91a905085p+0", "0x1.17886dd11deeep-6", "f2ad696c772771c1",
                                          "d1ae0c6b5305d266"),
    ("cyc", "GC[cyclic_repetition]"): ("0x1.d2fb35364a537p+0", "0x1.83e25bfff8d18p-6", "8a797b9d0972342d",
                                       "47c64649be62eafd"),
    ("cyc", "CR[coded_reduce(n=3, L=2, s=1)]"): ("0x1.7af6a17174ce9p+0", "0x1.547f25530b532p-6",
                                                 "2159bff241270e51", "4b7f73f9851421e7"),
}


def _named(code):
    # each scheme's stream is keyed by its label; the tree code's default name said n= when these numbers were made
    code.name = "coded_reduce(n=3, L=2, s=1)"
    return code


def test_old_policy_is_unchanged_bit_for_bit():
    cases = {
        "labels": dict(schemes=["CR", "UMW", "GC", "SGD", "RAR"], branching=4, L=2, s=1, iters=500, rng=3,
                       t_step=1e-3),
        "fr": dict(schemes=[gc.fractional_repetition(12, 3)], iters=400, rng=5, policy="first"),
        "cyc": dict(schemes=[gc.cyclic_repetition(10, 2, rng=0, refine=0), _named(gc.coded_reduce(3, 2, 1))],
                    iters=300, rng=7, t_c=0.01, policy="first"),
    }
    seen = 0
    for name, kw in cases.items():
        res = gc.simulate(**kw, return_samples=True, return_responders=True)
        for label, r in res.schemes.items():
            assert (r.mean.hex(), r.stderr.hex(), _h(r.times), _h(r.responders)) == OLD[(name, label)], label
            seen += 1
    assert seen == len(OLD)


def _fr_closed_form(groups, size, points, a, mus):
    """E[max over groups of min within the group] of a*l + Exp(rate mu_i / l): the min of a group is exponential
    with the sum of its rates; E[max] = a l + int_0^inf (1 - prod_g (1 - exp(-r_g t))) dt."""
    rates = np.asarray(mus, dtype=float).reshape(groups, size).sum(axis=1) / points
    val, err = integrate.quad(lambda t: 1 - np.prod(1 - np.exp(-rates * t)), 0, np.inf, epsabs=1e-12)
    assert err < 1e-8
    return a * points + val


def test_fractional_repetition_matches_the_closed_form():
    code = gc.fractional_repetition(12, 3)                # 3 groups of 4
    res = gc.simulate(code, iters=40_000, rng=0, t_c=0.0)["GC[fractional_repetition]"]
    points = 49_920 * 4 / 12
    exact = 5e-5 * points + (1 + 1 / 2 + 1 / 3) * points * 5e-5 / 4      # harmonic form, a*mu = 1
    assert _fr_closed_form(3, 4, points, 5e-5, [2e4] * 12) == pytest.approx(exact, rel=1e-9)
    assert abs(res.mean - exact) < 4 * res.stderr
    assert res.details["policy"] == "earliest decodable" and res.details["mean_messages"] < 12 - 3
    first = gc.simulate(code, iters=40_000, rng=0, t_c=0.0, policy="first")["GC[fractional_repetition]"]
    assert first.mean > 1.4 * res.mean                    # the old rule was much too pessimistic


def test_unequal_workers_closed_form():
    code = gc.fractional_repetition(6, 2)                 # 2 groups of 3
    mus = [1e4, 2e4, 4e4, 5e3, 1e4, 3e4]
    res = gc.simulate(code, a=5e-5, mu=mus, iters=40_000, rng=1, t_c=0.0)["GC[fractional_repetition]"]
    points = 49_920 * 3 / 6
    assert abs(res.mean - _fr_closed_form(2, 3, points, 5e-5, mus)) < 4 * res.stderr


@pytest.mark.parametrize("make", [lambda: gc.fractional_repetition(12, 3), lambda: gc.stable_binary(13, 3),
                                  lambda: gc.grouped_mds(23, 4), lambda: gc.cyclic_mds(12, 3),
                                  lambda: gc.cyclic_repetition(10, 2, rng=0)])
def test_earliest_is_never_later_than_first_n_minus_s_and_decodes(make):
    code = make()
    kw = dict(iters=300, rng=4, t_c=0.01, return_samples=True, return_responders=True)
    early = next(iter(gc.simulate(code, **kw)))
    first = next(iter(gc.simulate(code, policy="first", **kw)))
    assert np.all(early.times <= first.times)                 # the same draws, stopped no later
    G = np.random.default_rng(0).standard_normal((code.k, 7 * code.m))
    Y = code.encode(G)
    for mask in early.responders[:40]:
        assert code.decodable(mask)
        np.testing.assert_allclose(code.decode(mask, Y), G.sum(axis=0), atol=1e-8)


def test_batched_verdicts_agree_with_single_decodes():
    rng = np.random.default_rng(5)
    for code in (gc.cyclic_repetition(9, 3, rng=0), gc.grouped_mds(11, 2), gc.cyclic_mds(8, 2)):
        masks = rng.random((200, code.n)) < 0.7
        for dt in (np.float64, np.float32):
            got = code._decodable_masks(masks, np.dtype(dt))
            want = [code.decodable(m, dtype=dt) for m in masks]
            assert got.tolist() == want


def test_policies():
    code = gc.fractional_repetition(8, 1)
    order = np.array([[0, 2, 4, 6, 1, 3, 5, 7], [7, 6, 5, 4, 3, 2, 1, 0]])
    assert EarliestDecodable().counts(code, order).tolist() == [4, 7]      # one worker of every pair
    assert FixedK().counts(code, order).tolist() == [7, 7]
    assert FixedK(8).counts(code, order).tolist() == [8, 8]
    assert BackupWorkers(2).counts(code, order).tolist() == [6, 6]
    t = BackupWorkers(2).tracker(code)
    assert [t.add(w) for w in range(6)] == [False] * 5 + [True]
    with pytest.raises(ValueError, match="exceeds"):
        FixedK(9).counts(code, order)


def test_trace_replay_reproduces_its_own_iteration_times():
    rng = np.random.default_rng(2)
    trace = 0.05 + rng.exponential(0.02, size=(200, 8))
    trace[:, 3] *= 3                                       # one slow worker
    res = gc.simulate(gc.uncoded(8), model=TraceReplay(trace), t_c=0.0, iters=200, return_samples=True)
    r = next(iter(res))
    np.testing.assert_array_equal(r.times, trace.max(axis=1))    # wait for all: each iteration's slowest worker
    assert r.mean == pytest.approx(trace.max(axis=1).mean(), rel=0.05)
    # a coded master replaying the same trace: the earliest decodable set of every row
    fr = gc.fractional_repetition(8, 1)
    t = next(iter(gc.simulate(fr, model=TraceReplay(trace), t_c=0.0, iters=200, return_samples=True))).times
    np.testing.assert_array_equal(t, trace.reshape(200, 4, 2).min(axis=2).max(axis=1))


def test_persistent_stragglers_are_correlated_in_time():
    m = PersistentStragglers(0.05, 0.2, 5.0, base=ShiftedExponentialWorkers(1e-3, math.inf))
    slow = m.states(np.random.default_rng(0), 20_000, 4)
    assert abs(slow.mean() - 0.05 / 0.25) < 0.02            # stationary share
    stay = (slow[1:] & slow[:-1]).sum() / slow[:-1].sum()
    assert abs(stay - 0.8) < 0.03                          # P(slow -> slow) = 1 - p_recover
    code = gc.fractional_repetition(12, 3)
    res = next(iter(gc.simulate(code, model=PersistentStragglers(0.05, 0.2, 5.0), iters=4000, rng=0,
                                return_samples=True)))
    iid = next(iter(gc.simulate(code, iters=4000, rng=0, return_samples=True)))
    assert res.mean > iid.mean and "persistent" in res.details["model"]


def test_approximate_codes_report_expected_error():
    code = gc.ApproximateCode(np.eye(6), name="ignore", s=2)
    r = gc.simulate(code, iters=500, rng=0, return_responders=True)["AC[ignore]"]
    assert r.responders.sum(axis=1).tolist() == [4] * 500           # first n - s
    assert r.error == pytest.approx(math.sqrt(2))                    # ||a_F B - 1|| with two rows missing
    d = gc.simulate(code, iters=500, rng=0, deadline=0.5, return_responders=True)["AC[ignore]"]
    assert d.mean <= 0.5 + 1e-12 and d.error >= r.error


@pytest.mark.parametrize(("kwargs", "exc", "match"), [
    ({"policy": "fastest"}, ValueError, "policy must be"),
    ({"policy": 3}, TypeError, "policy must be"),
    ({"mu": [1.0, 2.0]}, ValueError, "one entry per worker"),
    ({"a": [1e-5] * 11 + [-1.0]}, ValueError, ">= 0"),
    ({"model": "markov"}, TypeError, "WorkerModel"),
    ({"deadline": 1.0}, ValueError, "only approximate codes"),
    ({"model": TraceReplay(np.ones((3, 5)))}, ValueError, "trace has 5 workers"),
])
def test_bad_input(kwargs, exc, match):
    with pytest.raises(exc, match=match):
        gc.simulate(gc.fractional_repetition(12, 3), iters=10, rng=0, **kwargs)


def test_worker_model_bad_input():
    with pytest.raises(ValueError, match="p_slow"):
        PersistentStragglers(0.0, 0.5, 2.0)
    with pytest.raises(ValueError, match="slowdown"):
        PersistentStragglers(0.1, 0.5, 0.5)
    with pytest.raises(ValueError, match="2-D"):
        TraceReplay([1.0, 2.0])
    with pytest.raises(ValueError, match="CR uses scalar"):
        gc.simulate("CR", model=PersistentStragglers(0.1, 0.5, 2.0), iters=10, rng=0)


def test_alpha_beta_allreduce_closed_forms():
    n, L, s, m, a, t_c, alpha = 4, 2, 1, 10_000.0, 1e-4, 0.02, 0.004
    N = 20
    res = gc.simulate(["RAR", "TAR"], branching=n, L=L, s=s, m_data=m, a=a, mu=math.inf, t_c=t_c, alpha=alpha, iters=3,
                      rng=0, return_samples=True)
    step = alpha + (t_c - alpha) / N                  # a ring step carries 1/N of a gradient
    np.testing.assert_allclose(res["RAR"].times, a * m / N + 2 * (N - 1) * step, rtol=1e-12)
    np.testing.assert_allclose(res["TAR"].times, a * m / N + 2 * math.ceil(math.log2(N)) * t_c, rtol=1e-12)
    # alpha = 0 is the bandwidth-only ring of the CodedReduce paper's comparison, bit for bit
    zero = gc.simulate("RAR", iters=50, rng=1, return_samples=True)["RAR"].times
    same = gc.simulate("RAR", iters=50, rng=1, alpha=0.0, return_samples=True)["RAR"].times
    np.testing.assert_array_equal(zero, same)
    # RAR grows linearly in alpha: 2 (N - 1)(1 - 1/N) per second of latency, with the same draws
    r1 = gc.simulate("RAR", iters=50, rng=1, alpha=0.01, return_samples=True)["RAR"].times
    np.testing.assert_allclose(r1 - zero, 2 * 155 * (1 - 1 / 156) * 0.01, rtol=1e-9)
    with pytest.raises(ValueError, match="alpha"):
        gc.simulate("RAR", t_c=0.01, alpha=0.02, iters=5, rng=0)


# ------------------------------------------------------------------------------------------------ training
def test_adaptive_k_reaches_the_wait_for_all_loss_in_half_the_time():
    """Shifted-exponential delays, 8 workers: wait-for-all SGD for 1500 updates sets the target (its final error,
    mean of the last 50); adaptive k (Kas Hanna et al. 2020) reaches it within half of wait-for-all's time."""
    for seed in (0, 1):
        kw = dict(n=8, rng=seed, lr=0.1, batch_size=4)
        full = gc.simulate_training(FixedK(8), updates=1500, **kw)
        adaptive = gc.simulate_training(gc.AdaptiveK(1, 1, 10), time_budget=full.time[-1], updates=100_000, **kw)
        assert adaptive.time_to(full.final(), window=50) <= 0.5 * full.time[-1]
        assert adaptive.details["switches"]                       # k did grow
        fixed1 = gc.simulate_training(FixedK(1), time_budget=full.time[-1], updates=100_000, **kw)
        assert fixed1.final() > full.final()                      # k = 1 alone stalls at a higher floor


def test_k_async_beats_k_sync_early_and_pays_in_staleness():
    """Dutta et al. (AISTATS 2018): with exponential delays K-async SGD reaches a given error sooner in wall-clock
    time than K-sync SGD (each update waits for K of the n running workers, not the K-th order statistic of n fresh
    ones), at the cost of stale gradients and a higher error floor."""
    for seed in (0, 1, 2):
        kw = dict(n=8, rng=seed, lr=0.1, batch_size=4, time_budget=5.0, updates=100_000)
        sync = gc.simulate_training(FixedK(2), **kw)
        asyn = gc.simulate_training(gc.KAsync(2), **kw)
        for level in (1.0, 0.1):
            assert asyn.time_to(level, window=20) < sync.time_to(level, window=20)
        assert asyn.staleness is not None and asyn.staleness.mean() > 1
        assert sync.final(200) < asyn.final(200)


def test_training_with_a_code_uses_its_policy():
    code = gc.fractional_repetition(8, 1)
    early = gc.simulate_training(EarliestDecodable(), code=code, updates=300, rng=0)
    first = gc.simulate_training(FixedK(), code=code, updates=300, rng=0)
    np.testing.assert_array_equal(early.error, first.error)       # the same exact gradients
    assert early.time[-1] < first.time[-1] and early.used.mean() < first.used.mean() == 7


def test_training_bad_input():
    with pytest.raises(TypeError, match="WaitPolicy"):
        gc.simulate_training("fastest", rng=0)
    with pytest.raises(TypeError, match="needs a code"):
        gc.simulate_training(EarliestDecodable(), updates=3, rng=0)
    with pytest.raises(ValueError, match="K must be"):
        gc.KAsync(0)
    with pytest.raises(ValueError, match="not synchronous"):
        gc.simulate(gc.fractional_repetition(4, 1), policy=gc.KAsync(2), iters=5, rng=0)


def test_runtime_delay_injection_uses_the_same_worker_models():
    from gradcodes.mpi import ModelDelay

    model = PersistentStragglers(0.1, 0.3, 4.0, base=ShiftedExponentialWorkers([1e-3] * 3 + [2e-3] * 3))
    d1 = ModelDelay(model, m_data=600, horizon=400, rng=5)
    d2 = ModelDelay(model, m_data=600, horizon=400, rng=5)           # another rank, same arguments
    T = np.array([[d1.delay(w, t, workers=6, load_fraction=0.5) for w in range(6)] for t in range(400)])
    np.testing.assert_array_equal(T, [[d2.delay(w, t, workers=6, load_fraction=0.5) for w in range(6)]
                                      for t in range(400)])
    assert np.all(T >= np.array([0.3] * 3 + [0.6] * 3))                 # a_i * l, l = 300 points
    slow = T > 4 * np.array([0.3] * 3 + [0.6] * 3)                       # slow state: at least slowdown * a_i l
    assert 0 < slow.mean() < 0.5
    trace = TraceReplay(T)
    replay = ModelDelay(trace, m_data=600)
    assert replay.delay(4, 401, workers=6, load_fraction=0.5) == T[1, 4]
    with pytest.raises(ValueError, match="base="):
        ModelDelay(PersistentStragglers(0.1, 0.3, 4.0), m_data=10)


@pytest.mark.parametrize("policy", [gc.FixedK(3), gc.FixedK(), gc.BackupWorkers(2), gc.AdaptiveK(2, 3, 5),
                                    gc.KAsync(4), gc.EarliestDecodable(), gc.EarliestDecodable("float32")])
def test_a_policys_repr_is_the_call_that_builds_it_and_str_its_label(policy):
    """``repr(gc.FixedK(3))`` was ``first 3``: a label, not the call."""
    again = eval(repr(policy), {k: getattr(gc, k) for k in dir(gc) if not k.startswith("_")})
    assert type(again) is type(policy) and repr(again) == repr(policy) and str(again) == str(policy)
    assert repr(policy).startswith(type(policy).__name__ + "(") and str(policy) == policy.name


def test_values_repr_as_the_call_that_builds_them():
    """One repr style (issue 38): policies, worker models and decoders print the call that builds them, with the
    arguments that differ from the defaults; eval of the repr gives an equal object where the arguments are
    scalars."""
    import gradcodes as gc

    cases = [gc.FixedK(3), gc.BackupWorkers(2), gc.ShiftedExponentialWorkers(1.0, 2.0),
             gc.ShiftedExponentialWorkers(1e-3), gc.PersistentStragglers(0.1, 0.5, 3.0),
             gc.NullSpaceDecoder(rtol=1e-6), gc.NullSpaceDecoder(), gc.LeastSquaresDecoder()]
    for obj in cases:
        text = repr(obj)
        again = eval(text, {k: getattr(gc, k) for k in gc.__all__})
        assert type(again) is type(obj) and repr(again) == text
    assert repr(gc.ShiftedExponentialWorkers(1e-3)) == "ShiftedExponentialWorkers(a=0.001)"
    assert repr(gc.NullSpaceDecoder(refine=2)) == "NullSpaceDecoder(refine=2)"
    assert repr(TraceReplay(np.ones((10, 3)))) == "TraceReplay(times=array(shape=(10, 3)))"
