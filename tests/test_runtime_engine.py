"""The runtime engine (gradcodes._runtime.engine.Collection) over a simulated transport.

The same protocol object decides every wait of gradcodes.mpi and gradcodes.torch; here it is driven by a transport
whose schedule hypothesis draws: random arrival orders, late workers whose older messages arrive first (stale),
messages delivered twice, lost messages, NaN messages, links that fail, a parent that falls behind (messages of
later iterations arrive first). Property: every iteration the engine returns is decoded to the true sum within the
code's tolerance, from messages of that iteration only; every iteration it gives up on (StragglerTimeout) truly
had no decodable set among the messages that could still arrive, and the error names those ranks.
"""

from __future__ import annotations

import math
import time

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import gradcodes as gc
from gradcodes._runtime.codec import Combiner
from gradcodes._runtime.engine import ABORT, Collection, Lost, StragglerTimeout, age

CODES = {
    "cyclic_repetition": lambda: gc.cyclic_repetition(6, 2, rng=1),
    "fractional_repetition": lambda: gc.fractional_repetition(6, 2),
    "cyclic_mds_real": lambda: gc.cyclic_mds(5, 2, field="real"),
    "ye_abbe_m2": lambda: gc.ye_abbe(6, 2, m=2),
}
P = 12


class SimEndpoint:
    """A parent's receive side over a simulated network: row ``i`` holds at most one message; worker ``i``'s
    messages wait in FIFO order (non-overtaking, as MPI and Gloo guarantee per sender) until the row is free; the
    schedule (a list of draws) picks which free row receives next."""

    def __init__(self, code, draws, fail):
        self.code, self.K = code, code.n
        self.q = -(-P // code.m)
        self.buf = np.zeros((self.K, self.q))
        self.held: list[int | None] = [None] * self.K
        self.fifo: list[list[tuple[int, np.ndarray]]] = [[] for _ in range(self.K)]
        self.draws = list(draws)
        self.fail = dict(fail)                  # worker -> the wait() call at which its link fails
        self.calls = 0
        self.failed: set[int] = set()
        self.delivered = 0

    def send(self, i, t, y):
        self.fifo[i].append((t, y))

    # -- Endpoint
    def age(self, i, t):
        h = self.held[i]
        return None if h is None else age(h, t)

    def finite(self, i):
        return bool(np.isfinite(self.buf[i]).all())

    def drop(self, i):
        self.held[i] = None

    def wait(self, timeout):
        self.calls += 1
        for i, at in self.fail.items():
            if i not in self.failed and self.calls >= at:
                self.failed.add(i)
                self.fifo[i].clear()
                self.held[i] = None
                return Lost(i, "simulated link failure")
        ready = [i for i in range(self.K) if self.held[i] is None and self.fifo[i] and i not in self.failed]
        if not ready:
            time.sleep(min(timeout, 1e-3))
            return None
        i = ready[self.draws.pop() % len(ready)] if self.draws else ready[0]
        t, y = self.fifo[i].pop(0)
        self.buf[i] = y
        self.held[i] = t
        self.delivered += 1
        return i


def _decodable(code, rows):
    return bool(rows) and code.decodable(sorted(rows))


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(name=st.sampled_from(sorted(CODES)), seed=st.integers(0, 2**32 - 1),
       draws=st.lists(st.integers(0, 1000), min_size=0, max_size=200),
       p_late=st.floats(0, 0.5), p_lost=st.floats(0, 0.3), p_dup=st.floats(0, 0.3), p_nan=st.floats(0, 0.2),
       lag=st.booleans(), fail=st.dictionaries(st.integers(0, 5), st.integers(1, 60), max_size=2))
def test_every_decoded_iteration_is_the_true_sum_for_every_schedule(name, seed, draws, p_late, p_lost, p_dup,
                                                                      p_nan, lag, fail):
    code = CODES[name]()
    rng = np.random.default_rng(seed)
    fail = {i: at for i, at in fail.items() if i < code.n}
    ep = SimEndpoint(code, draws, fail)
    col = Collection(list(range(1, code.n + 1)), tracker=gc.EarliestDecodable().tracker(code))
    comb = Combiner(code)
    iters = 6
    grads = [rng.normal(size=(code.k, P)) for _ in range(iters + 1)]
    backlog: list[list[tuple[int, np.ndarray]]] = [[] for _ in range(code.n)]   # a paused worker's messages
    paused_until = [0] * code.n
    lost_at: dict[int, set[int]] = {t: set() for t in range(iters + 1)}
    nan_at: dict[int, set[int]] = {t: set() for t in range(iters + 1)}

    def send_iteration(t):
        Y = code.encode(grads[t])
        for i in range(code.n):
            if rng.random() < p_lost:
                lost_at[t].add(i)
                continue
            y = Y[i].copy()
            if rng.random() < p_nan:
                y[rng.integers(len(y))] = np.nan
                nan_at[t].add(i)
            if t >= paused_until[i] and rng.random() < p_late:    # a slow worker: its messages of this and the
                paused_until[i] = t + 1 + int(rng.integers(2))      # next iterations reach the network later, in
            if t < paused_until[i]:                                # order (they arrive stale)
                backlog[i].append((t, y))
                continue
            ep.send(i, t, y)
            if rng.random() < p_dup:
                ep.send(i, t, y.copy())

    send_iteration(0)
    if lag:
        send_iteration(1)                              # the parent fell behind: iteration 1 already on its way
    for t in range(iters):
        for i in range(code.n):                        # slow workers catch up: their older messages go out now
            if paused_until[i] <= t:
                for tt, y in backlog[i]:
                    ep.send(i, tt, y)
                backlog[i].clear()
        try:
            rows, bad = col.collect(ep, t, deadline=time.monotonic() + 0.05, timeout=0.05)
        except StragglerTimeout as err:
            # legitimate only when the messages of t that could still arrive (not lost, not late, not NaN, link
            # alive) cannot decode; the error names ranks
            could = {i for i in range(code.n) if i not in lost_at[t] and i not in nan_at[t] and i not in ep.failed
                     and all(tt != t for tt, _ in backlog[i])}
            assert not _decodable(code, could), (t, could)
            assert f"iteration {t}" in str(err) and ("missing ranks" in str(err) or "cannot decode" in str(err))
            ep.held = [h if h is None or h > t else None for h in ep.held]
        else:
            assert rows is not None and len(set(rows)) == len(rows)
            assert all(ep.held[i] == t for i in rows)                       # only messages of t are used
            assert all(np.isfinite(ep.buf[i]).all() for i in rows)
            assert not set(rows) & set(bad)
            assert _decodable(code, rows)
            out = np.zeros(code.m * ep.q)
            comb.combine(rows, ep.buf, out)
            truth = grads[t].sum(axis=0)
            np.testing.assert_allclose(out[:P], truth, rtol=1e-9, atol=1e-9 * np.abs(truth).max())
            for i in rows:
                ep.drop(i)
        if t + 1 + lag <= iters:
            send_iteration(t + 1 + lag)


def test_stale_newer_and_nan_messages_are_told_apart():
    code = gc.cyclic_repetition(4, 1, rng=0)
    ep = SimEndpoint(code, [], {})
    col = Collection([1, 2, 3, 4], tracker=gc.EarliestDecodable().tracker(code))
    G = np.arange(code.k * P, dtype=float).reshape(code.k, P)
    Y = code.encode(G)
    ep.send(0, 2, Y[0])                                  # stale
    ep.send(1, 4, Y[1])                                  # newer: kept for iteration 4
    bad_row = Y[2].copy()
    bad_row[0] = np.inf
    ep.send(2, 3, bad_row)                               # NaN/inf: a straggler
    for i in (0, 3):
        ep.send(i, 3, Y[i])
    ep.send(1, 3, Y[1])                                  # behind the newer one: never reaches the parent in time
    with pytest.raises(StragglerTimeout, match=r"iteration 3: .*missing ranks \[2\]"):
        col.collect(ep, 3, deadline=time.monotonic() + 0.05, timeout=0.05)
    assert col.stale == 1 and ep.held[1] == 4
    # the same iteration with the straggler's message arriving: rows 0, 3 and then row 1 (freed) decode
    ep.drop(1)
    rows, bad = col.collect(ep, 3, deadline=time.monotonic() + 1.0)
    assert sorted(rows) == [0, 1, 3] and bad == []


def test_nan_senders_end_the_iteration_at_once_naming_them():
    code = gc.cyclic_repetition(4, 1, rng=0)
    ep = SimEndpoint(code, [], {})
    col = Collection([1, 2, 3, 4], tracker=gc.EarliestDecodable().tracker(code), who="rank 0: ")
    for i in range(2):
        ep.send(i, 0, np.full(ep.q, np.nan))
    start = time.monotonic()
    with pytest.raises(StragglerTimeout, match=r"rank 0: iteration 0: ranks \[1, 2\] sent NaN or infinite values; "
                                               r"the remaining ranks \[3, 4\] cannot decode") as err:
        col.collect(ep, 0, deadline=start + 60)
    assert time.monotonic() - start < 5 and err.value.bad == [1, 2]


def test_a_lost_link_is_a_straggler_from_then_on():
    code = gc.cyclic_repetition(4, 1, rng=0)
    Y = code.encode(np.ones((code.k, P)))
    ep = SimEndpoint(code, [], {3: 1})
    col = Collection([1, 2, 3, 4], tracker=gc.EarliestDecodable().tracker(code))
    for t in range(2):
        for i in range(code.n):
            ep.send(i, t, Y[i])
        rows, _ = col.collect(ep, t, deadline=time.monotonic() + 5)
        assert 3 not in rows and _decodable(code, rows)
        for i in rows:
            ep.drop(i)
    assert set(col.dead) == {3} and "link failed" in col.dead[3]
    ep2 = SimEndpoint(code, [], {2: 1, 3: 1})
    col2 = Collection([1, 2, 3, 4], tracker=gc.EarliestDecodable().tracker(code))
    with pytest.raises(StragglerTimeout, match=r"the links of ranks \[3, 4\] failed"):
        col2.collect(ep2, 0, deadline=time.monotonic() + 60)


def test_abort_and_early_stop():
    code = gc.cyclic_repetition(4, 1, rng=0)

    class Aborting(SimEndpoint):
        def wait(self, timeout):
            return ABORT

    col = Collection([1, 2, 3, 4], need=3)
    assert col.collect(Aborting(code, [], {}), 0, deadline=math.inf) == (None, [])
    ep = SimEndpoint(code, [], {})
    ep.send(0, 0, np.ones(ep.q))
    rows, _ = col.collect(ep, 0, stop_at=time.monotonic() + 0.02)          # whatever arrived by then
    assert rows == [0]


def test_a_collection_needs_a_policy():
    with pytest.raises(gc.GradcodesValueError, match="tracker or a count"):
        Collection([1, 2])


def test_overflow_mode_takes_nan_messages_as_answers_where_the_straggler_mode_drops_them():
    """Mixed precision with a loss scaler: the NaN senders of test_nan_senders_end_the_iteration_at_once_naming_them
    are answers (a partition that overflows does so on every holder: waiting for finite holders would time out);
    the decode is then not finite, for the scaler to skip the step. The straggler mode is unchanged."""
    code = gc.cyclic_repetition(4, 1, rng=0)
    for mode in ("overflow", "straggler"):
        ep = SimEndpoint(code, [], {})
        col = Collection([1, 2, 3, 4], tracker=gc.EarliestDecodable().tracker(code), nonfinite=mode)
        for i in range(code.n):
            ep.send(i, 0, np.full(ep.q, np.nan) if i < 2 else np.ones(ep.q))
        if mode == "straggler":
            with pytest.raises(StragglerTimeout, match=r"ranks \[1, 2\] sent NaN"):
                col.collect(ep, 0, deadline=time.monotonic() + 60)
            continue
        rows, bad = col.collect(ep, 0, deadline=time.monotonic() + 60)
        assert rows[:2] == [0, 1] and _decodable(code, rows) and bad == []
        out = np.zeros(code.m * ep.q)
        with np.errstate(invalid="ignore"):
            Combiner(code).combine(rows, ep.buf, out)
        assert not np.isfinite(out).all()
    with pytest.raises(gc.GradcodesValueError, match="nonfinite must be 'straggler' or 'overflow', got 'skip'"):
        Collection([1, 2], need=1, nonfinite="skip")
    with pytest.raises(gc.GradcodesValueError, match="no row can be bad"):
        Collection([1, 2], need=1, nonfinite="overflow").collect(SimEndpoint(code, [], {}), 0, bad=[0])


# --- bfloat16: its own rule (numpy has no bfloat16, the runtimes used the float16 rule alone) -----------------------
def test_bfloat16_decodes_meet_bfloat16s_own_rule_not_only_float16s():
    from gradcodes._core.numerics import tolerance_for
    from gradcodes._runtime.codec import UnitTracker

    code = gc.cyclic_repetition(6, 2, rng=1)
    rows = [0, 1, 2, 3]
    code.decoding_matrix(rows, dtype=np.float16)          # the float16 rule accepts this set (the old check)
    comb = Combiner(code)
    with pytest.raises(gc.DecodingError, match=r"bfloat16 tolerance 0.062 .*error bound 0.1"):
        comb.check_unit(rows, 2.0 ** -8, "bfloat16")
    assert tolerance_for(1e-8, 2.0 ** -8) == pytest.approx(0.0621, abs=1e-4)
    comb.check_unit([0, 1, 2, 3], 2.0 ** -11, "float16-like")   # the same bound at float16's u: accepted
    frac = gc.fractional_repetition(6, 2)
    Combiner(frac).check_unit([0, 3], 2.0 ** -8, "bfloat16")     # 0/1 decode: no cancellation, accepted
    # the wait goes on past a set the policy would take but bfloat16 cannot trust
    tr = UnitTracker(gc.EarliestDecodable().tracker(code, np.float16), comb, 2.0 ** -8, "bfloat16")
    plain = gc.EarliestDecodable().tracker(code, np.float16)
    assert [plain.add(i) for i in rows][-1] is True
    assert not any(tr.add(i) for i in rows)
    tr.reset()
    assert tr.rows == []
