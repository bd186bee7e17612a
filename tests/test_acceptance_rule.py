"""The one acceptance rule (gradcodes._core.numerics: accepts, error_bounds, judge) and its guarantee:
every "ok" of gc.verify means that decode accepts every covered set in that dtype, whatever the batch size (and,
checked by tests/test_kernel_panel.py in CI, whatever the BLAS kernel and thread count); every failing set is one
that decode refuses."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import gradcodes as gc
import gradcodes._verify.cost
from gradcodes._core.numerics import (
    BORDERLINE,
    FAILS,
    OK,
    accepts,
    error_bounds,
    judge,
    residual_slack,
    tolerance,
)
from gradcodes._runtime.codec import Combiner
from gradcodes._verify import verifier as _verify


def _all_sets(code: gc.GradientCode):
    n, s = code.n, code.s
    for S in itertools.combinations(range(n), s):
        yield [i for i in range(n) if i not in S]


def _decodes(code: gc.GradientCode, F, dtype) -> bool:
    Y = np.ones((code.n, 3), dtype=dtype)
    try:
        code.decode(F, Y)
    except gc.DecodingError:
        return False
    return True


# ---------------------------------------------------------------------------------------------------- the rule
@given(canc=st.floats(1, 1e12), res=st.floats(0, 1e-3), mag=st.floats(0, 1e14), width=st.integers(1, 500),
       terms=st.integers(1, 1000), f32=st.booleans())
@settings(max_examples=200, deadline=None)
def test_the_interval_contains_the_estimate_and_orders_the_verdicts(canc, res, mag, width, terms, f32):
    dt = np.float32 if f32 else np.float64
    lo, est, hi = error_bounds(canc, res, mag, width, dt, terms)
    assert lo <= est <= hi
    tol = tolerance(1e-8, dt)
    v = int(judge(canc, res, mag, width, 1e-8 if not f32 else tol, dt, terms))
    # ok: even the upper end is accepted by decode's rule; fails: even the lower end is refused
    if v == OK:
        assert hi <= tol and bool(accepts(canc, res, 1e-8, dt, terms))
    elif v == FAILS:
        assert lo > tol and not bool(accepts(canc, res, 1e-8, dt, terms))
    else:
        assert v == BORDERLINE and lo <= tol < hi


def test_the_slack_is_higham_gamma_and_vanishes_for_exact_evaluation():
    u = np.finfo(np.float64).eps / 2
    w, mag = 10, 1e6

    def gamma(k):
        return k * u / (1 - k * u)

    assert float(residual_slack(mag, w)) == pytest.approx((gamma(w + 1) + 2 * gamma(w)) * (mag + 1), rel=1e-12)
    assert float(residual_slack(mag, w, exact_eval=True)) == 0.0


# ------------------------------------------------------------------------------------ the reproductions
def test_a_verdict_does_not_depend_on_the_batch_size():
    """cyclic_repetition(30, 4, rng=7) with the plain rows: verify said ok with the default batch and FAILS with
    batch_size=1, and decode refused stragglers (8, 15, 22, 24)."""
    code = gc.cyclic_repetition(30, 4, rng=7, refine=0)
    reports = [gc.verify(code, limit=10**6, batch_size=b, stop_on_failure=False) for b in (None, 1, 7)]
    # under the rigorous bound (worst column, gamma_{t+2}) some sets fail everywhere; before it was "unproven"
    assert len({(r.verdict, r.n_failures, r.n_borderline, tuple(r.failures[:5])) for r in reports}) == 1
    assert all(r.exhaustive and not r for r in reports)
    F = [i for i in range(30) if i not in (8, 15, 22, 24)]
    assert not _decodes(code, F, np.float64)          # refused here: consistent with "not proven"


def test_verify_and_decode_apply_the_same_rule():
    """A row 2^30 times larger than the others: verify said ok over all 51 sets, decode refused 49 of them."""
    B = np.vstack([np.eye(50), np.r_[2.0**30, np.ones(49)][None]])
    code = gc.GradientCode(B, s=1)
    report = gc.verify(code, stop_on_failure=False)
    assert report.verdict in ("inaccurate", "FAILS") and report.failures_exact
    refused = [F for F in _all_sets(code) if not _decodes(code, F, np.float64)]
    assert report.n_failures == len(refused) == 49


def test_verify_by_blocks_honours_the_dtype():
    inner = gc.cyclic_repetition(12, 4, rng=1, refine=0)
    code = gc.by_blocks(gc.GradientCode(np.kron(np.eye(2), inner.B), s=4))
    report = gc.verify(code, dtype=np.float32)
    assert report.dtype == "float32" and not report
    F = [1, 3, 5, 6, 7, 9, 10, 11] + list(range(12, 24))
    assert not _decodes(code, F, np.float32)
    assert gc.verify(code).verdict == "ok"              # in float64 the same code is proven
    assert _decodes(code, F, np.float64)


def test_verify_by_blocks_passes_the_time_budget(monkeypatch):
    seen = {}
    real = _verify.verify

    def spy(code, **kw):
        seen.setdefault("calls", []).append(kw)
        return real(code, **kw)

    monkeypatch.setattr(_verify, "verify", spy)
    code = gc.by_blocks(gc.GradientCode(np.kron(np.eye(2), gc.cyclic_repetition(6, 2, rng=0).B), s=2))
    real(code, dtype=np.float32, time_budget=3.5, search_seconds=0.25)
    kw = seen["calls"][0]
    # one wall clock for the whole code: the first distinct block gets what is left of 3.5 s
    assert kw["dtype"] == np.float32 and 3.0 < kw["time_budget"] <= 3.5 and kw["search_seconds"] == 0.25


def test_coded_reduce_execute_refuses_what_decode_refuses():
    """The issue's pattern: a float32 sum 17% wrong came back without an exception."""
    code = gc.coded_reduce(6, 2, 3, gc.cyclic_repetition(6, 3, rng=34, refine=0))
    F = gc.verify(code, rng=0).worst_cancellation_responders
    G = np.random.default_rng(0).normal(size=(code.k, 64)).astype(np.float32)
    Y = code.encode(G)
    with pytest.raises(gc.DecodingError):
        code.decode(F, Y)
    with pytest.raises(gc.DecodingError, match="float32"):
        code.execute(F, Y)
    G64 = G.astype(np.float64)
    code.rtol = 1e-6                                # float64 messages decode this pattern (rigorous bound 4.2e-8)
    out = code.execute(F, code.encode(G64))
    assert np.allclose(out, G64.sum(axis=0), rtol=1e-6, atol=1e-6)


def test_the_mpi_combiner_accepts_in_the_messages_dtype():
    code = gc.cyclic_repetition(12, 4, rng=1, refine=0)
    rows = [1, 3, 5, 6, 7, 9, 10, 11]
    G = np.random.default_rng(1).normal(size=(code.k, 32))
    buf = code.encode(G.astype(np.float32))
    out = np.empty(32, dtype=np.float32)
    tmp = np.empty(32, dtype=np.float32)
    with pytest.raises(gc.DecodingError):
        Combiner(code).combine(rows, buf, out, tmp)
    buf64 = code.encode(G)
    out64, tmp64 = np.empty(32), np.empty(32)
    Combiner(code).combine(rows, buf64, out64, tmp64)
    assert np.allclose(out64, G.sum(axis=0), atol=1e-6)


def test_screened_enumeration_reports_the_reference_worst(monkeypatch):
    """The screen cleared the worst sets and reported 8.3e-15 where the reference gave 2.0e-14."""
    code = gc.cyclic_repetition(40, 4, rng=21, refine=0)
    assert math.comb(40, 4) >= gradcodes._verify.cost._KERNEL_MIN_SETS
    screened = gc.verify(code, limit=10**6, stop_on_failure=False)
    assert screened.strategies == {"exhaustive": math.comb(40, 4)}
    # the reference evaluation of every set
    monkeypatch.setattr(gradcodes._verify.cost, "_KERNEL_MIN_SETS", 10**12)
    reference = gc.verify(code, limit=10**6, stop_on_failure=False)
    assert screened.verdict == reference.verdict
    assert screened.error_estimate == pytest.approx(reference.error_estimate, rel=0.05)
    assert screened.worst_cancellation == pytest.approx(reference.worst_cancellation, rel=1e-6)


def test_a_fractional_repetition_theorem_counts_the_decode_terms():
    code = gc.fractional_repetition(60, 5)
    report = gc.verify(code, time_budget=0, samples=10)
    assert report.theorem is not None and report.verdict == "ok"
    # float32: u * sqrt(groups + load) stays far below the float32 tolerance
    assert gc.verify(code, dtype=np.float32, time_budget=0, samples=10).verdict == "ok"


# ---------------------------------------------------------------------------- the guarantee on a panel of codes
def _panel():
    inner = gc.cyclic_repetition(12, 4, rng=1, refine=0)
    yield gc.cyclic_repetition(12, 4, rng=1, refine=0), np.float64
    yield inner, np.float32
    yield gc.cyclic_repetition(14, 3, rng=5, refine=0), np.float32
    yield gc.fractional_repetition(12, 3), np.float32
    yield gc.stable_binary(11, 3), np.float32
    yield gc.cyclic_mds(10, 3), np.float64
    yield gc.by_blocks(gc.GradientCode(np.kron(np.eye(2), gc.cyclic_repetition(6, 2, rng=3, refine=0).B), s=2)), \
        np.float32
    yield gc.GradientCode(np.vstack([np.eye(8), np.r_[2.0**30, np.ones(7)][None]]), s=1), np.float64


@pytest.mark.parametrize("k", range(8))
def test_ok_means_decode_accepts_every_set_and_failures_are_refused(k):
    code, dt = list(_panel())[k]
    report = gc.verify(code, dtype=dt, stop_on_failure=False, limit=10**5)
    assert report.exhaustive or report.theorem or report.strategies.get("blocks")
    verdicts = {tuple(F): _decodes(code, F, dt) for F in _all_sets(code)}
    if report.verdict == "ok":
        assert all(verdicts.values())
    for F in report.failures:
        assert not verdicts[tuple(F)]
    if report.failures_exact and not report.n_borderline:
        assert report.n_failures == sum(not ok for ok in verdicts.values())


# ------------------------------------------------------------------------------------- time budget and structure
class _SlowDecoder(gc.Decoder):
    """The null-space decoder, 20 ms per pattern."""

    name = "slow"

    def matrices(self, code, mask):
        import time

        time.sleep(0.02 * mask.shape[0])
        return code.decoders["nullspace"].matrices(code, mask)


def test_the_first_batch_respects_the_time_budget():
    import time

    code = gc.GradientCode(gc.cyclic_repetition(40, 3, rng=0).B, s=3, decoders=[_SlowDecoder()],
                           default_decoder="slow")
    t0 = time.perf_counter()
    report = gc.verify(code, time_budget=0.5, samples=0, search=False)
    # the first batch would be ~800 sets (16 s) before the budget was looked at; now a few pieces of 4, 8, ...
    assert time.perf_counter() - t0 < 5.0
    assert not report.exhaustive and any("time_budget" in note for note in report.notes)


def test_a_partition_on_at_most_s_workers_fails_without_decoding():
    code = gc.GradientCode(np.zeros((2000, 2000)), s=2)           # the file-borne zero matrix of the issue
    report = gc.verify(code, time_budget=1)
    assert report.verdict == "FAILS" and report.strategies == {"structure": 0}
    F = report.failures[0]
    assert len(F) == 1998 and not np.any(code.B[list(F)][:, 0])
    B = gc.fractional_repetition(60, 4).B.copy()
    B[:5, 0] = 0.0                                                  # partition 0 now on no worker
    bad = gc.verify(gc.GradientCode(B, s=4))
    assert bad.verdict == "FAILS" and bad.failures and not _decodes(gc.GradientCode(B, s=4), list(bad.failures[0]),
                                                                    np.float64)
