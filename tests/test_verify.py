"""The verifier: soundness against corrupted matrices, agreement with a brute-force check, streaming, search."""

import itertools
import math
from fractions import Fraction as Fr
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import gradcodes as gc
from gradcodes._verify.verifier import straggler_batches


def brute_force_failing(B, s, tol=1e-8):
    """Responder sets (|F| = n - s) whose least-squares decode misses the all-ones vector by more than tol."""
    n = B.shape[0]
    bad = []
    for S in itertools.combinations(range(n), s):
        F = [i for i in range(n) if i not in S]
        a = np.linalg.lstsq(B[F].T, np.ones(B.shape[1]), rcond=None)[0]
        if np.abs(a @ B[F] - 1).max() > tol:
            bad.append(tuple(F))
    return bad


@pytest.mark.parametrize("family", ["fractional_repetition", "cyclic_repetition"])
def test_every_single_zeroed_entry_is_caught(family):
    """Zeroing any nonzero entry of B breaks recovery for some set; verify must say so and name a failing set."""
    code = gc.fractional_repetition(6, 2) if family == "fractional_repetition" else gc.cyclic_repetition(6, 2, rng=1)
    for i, j in zip(*np.nonzero(code.B), strict=True):
        B = code.B.copy()
        B[i, j] = 0.0
        report = gc.verify(gc.GradientCode(B, s=2))
        truth = brute_force_failing(B, 2)
        assert truth, "zeroing an entry of a load-optimal code always breaks it"
        assert not report.exact
        assert report.failing_responders in truth
        assert "FAILS" in str(report)


def test_perturbed_entry_in_cyclic_code_is_caught():
    code = gc.cyclic_repetition(7, 3, rng=2)
    B = code.B.copy()
    B[3, 4] *= 1.001
    report = gc.verify(gc.GradientCode(B, s=3))
    assert not report.exact and report.n_failures > 0
    assert report.failing_responders in brute_force_failing(B, 3)
    # without a limit a code this small is enumerated: sampling would check more sets than exist
    report = gc.verify(gc.GradientCode(B, s=3), samples=10)
    assert report.exhaustive and not report.exact
    assert report.failing_responders in brute_force_failing(B, 3)
    # the same kind of corruption caught by the sampled path on a code too large to enumerate under the limit
    big = gc.cyclic_repetition(20, 4, rng=2).B.copy()
    big[3, 4] *= 1.001
    report = gc.verify(gc.GradientCode(big, s=4), limit=10, samples=50)
    assert not report.exhaustive and report.verdict == "FAILS" and not report
    assert "at least" in str(report)


def test_exact_mutation_is_caught_with_no_rounding():
    code = gc.cyclic_repetition(4, 1, H=[[1, 2, 3, -6]], field="rational")
    B = code.B.copy()
    B[1, 2] = Fr(-2, 3) + Fr(1, 10**30)        # invisible in float64, fatal in exact arithmetic
    report = gc.verify(gc.GradientCode(B, s=1))
    assert not report.exact and report.failing_responders is not None
    assert gc.verify(gc.GradientCode(np.vectorize(float)(B).astype(float), s=1)).exact   # float cannot see it


@st.composite
def corrupted_codes(draw):
    n = draw(st.integers(2, 8))
    s = draw(st.integers(1, n - 1))
    code = gc.cyclic_repetition(n, s, rng=draw(st.integers(0, 1000)))
    B = code.B.copy()
    nz = np.argwhere(B != 0)
    i, j = nz[draw(st.integers(0, len(nz) - 1))]
    B[i, j] = draw(st.sampled_from([0.0, B[i, j] * 1.01, B[i, j] + 1.0, -B[i, j]]))
    return B, s


@given(corrupted_codes())
def test_verify_agrees_with_brute_force(case):
    B, s = case
    report = gc.verify(gc.GradientCode(B, s=s), stop_on_failure=False)
    truth = brute_force_failing(B, s, tol=1e-6)
    if truth:
        assert not report.exact                       # never "exact" with a failing set among those checked
        assert report.failing_responders is not None
    if not report.exact:
        # every named failure is a genuine failure (to float64 accuracy: residual or cancellation)
        for F in report.failures:
            a = np.linalg.lstsq(B[list(F)].T, np.ones(B.shape[1]), rcond=None)[0]
            canc = np.abs(a) @ np.abs(B[list(F)]).sum(axis=1) / B.shape[1]
            assert np.abs(a @ B[list(F)] - 1).max() > 1e-9 or canc * 1.1e-16 > 1e-9


def test_exhaustive_counts_and_streaming_batches():
    code = gc.cyclic_repetition(12, 4, rng=0)
    small = gc.verify(code, batch_size=7)
    big = gc.verify(code)
    assert small.patterns_checked == big.patterns_checked == math.comb(12, 4)
    assert small.exhaustive and small.exact
    assert small.worst_residual == pytest.approx(big.worst_residual, rel=1e-6, abs=1e-15)
    sets = np.concatenate(list(straggler_batches(7, 3, 4)))
    assert sets.shape == (35, 3)
    assert [tuple(r) for r in sets] == list(itertools.combinations(range(7), 3))


def test_non_exhaustive_search_reports_it():
    """A code with no set that fails the float64 rule, so the time-limited searches cannot end the run with a
    failure. (cyclic_repetition(30, 6, rng=0) has such a set: whether the 1 s restart search reached it, skipping
    the local search, depended on the machine's speed, and a CI run failed on it.)"""
    code = gc.cyclic_repetition(24, 4, rng=0)
    report = gc.verify(code, samples=200, limit=1000, rng=0)
    assert not report.exhaustive and report.patterns_total == math.comb(24, 4)
    assert report.strategies["consecutive"] == 24 and report.strategies["random"] == 200
    assert report.strategies["restart search"] > 0 and report.strategies["local search"] > 0
    assert report.verdict == "unproven" and not report.exact and not report and not report.proven
    text = " ".join(str(report).split())           # notes wrap at 100 columns: compare the words
    assert "not exhaustive" in text and "not a proof" in text
    # the search never reports a better worst case than the sets it started from (compared on the cancellation,
    # a property of the sets; the error estimate of a good code is residual rounding noise that varies with the
    # batch a set is solved in, 1.9e-10 against 4.9e-10 in one CI run)
    no_search = gc.verify(code, samples=200, search=False, limit=1000, rng=0)
    assert report.worst_cancellation >= no_search.worst_cancellation * (1 - 1e-9)


def test_local_search_finds_a_planted_bad_set():
    """A code that fails on exactly one straggler set; random sampling alone is unlikely to hit it."""
    n, s = 14, 3
    # fractional repetition with groups {0..3}, {4..7}, ... would need 4 | 14; use a custom 0/1 code instead:
    # groups of 4 except one group {0, 1, 2} of size 3, which fails only when all of 0, 1, 2 straggle
    groups = [[0, 1, 2], [3, 4, 5, 6], [7, 8, 9, 10], [11, 12, 13]]
    B = np.zeros((n, 4))
    for g, members in enumerate(groups):
        B[members, g] = 1.0
    report = gc.verify(gc.GradientCode(B, s=s), samples=5)
    assert not report.exact and report.exhaustive          # 364 sets: enumerating is cheaper than sampling
    assert set(range(n)) - set(report.failing_responders) in ({0, 1, 2}, {11, 12, 13})


def test_report_fields_and_str():
    report = gc.verify(gc.fractional_repetition(6, 1))
    assert report.load == 2 and report.load_lower_bound == Fr(2) and report.meets_lower_bound
    assert report.average_load == Fr(2)
    # the bound gamma_{t+2} canc + gamma_{t+1} (canc + 1) for t = 3 groups + load 2: (7 + 2 * 6) u to first order
    assert report.worst_cancellation == 1.0 and report.error_estimate == pytest.approx(19 * 2.0**-53, rel=1e-12)
    row = report.tour_row()
    assert row["result"] == "ok" and row["exhaustive"] == "yes" and row["load / bound"] == "2 / 2"
    assert "RECOVERY" in str(report) and "meets the bound" in str(report)
    assert bool(report)


def test_load_above_bound_is_reported():
    B = np.ones((4, 4))                              # every worker stores everything: load 4 > s + 1 = 2
    report = gc.verify(gc.GradientCode(B, s=1))
    assert report.exact and report.load == 4 and not report.meets_lower_bound


def test_cancellation_destroys_accuracy_is_not_exact():
    """A code that decodes in exact arithmetic but only with huge cancellation must not be reported exact."""
    eps = 1e-13
    B = np.array([[1.0, 0.0], [1.0, eps]])          # a = (1 - 1/eps, 1/eps): cancellation ~ 1/eps
    report = gc.verify(gc.GradientCode(B, s=0))
    assert not report.exact
    assert report.worst_cancellation > 1e12
    assert "INACCURATE" in str(report) or "FAILS" in str(report)


@pytest.mark.parametrize(("kwargs", "exc", "words"), [
    ({"limit": -1}, ValueError, "limit must be an integer >= 0"),
    ({"samples": -5}, ValueError, "samples must be an integer >= 0"),
    ({"rtol": 0}, ValueError, "rtol must be a finite real number in (0, 1)"),
    ({"batch_size": 0}, ValueError, "batch_size must be an integer >= 1"),
    ({"decoder": "nope"}, ValueError, "decoder must be one of"),
    ({"field": "GF"}, ValueError, "cannot be rebuilt over another field"),
])
def test_verify_bad_input(kwargs, exc, words):
    with pytest.raises(exc) as info:
        gc.verify(gc.cyclic_repetition(5, 1, rng=0), **kwargs)
    assert words in str(info.value)


def test_verify_rejects_approximate_codes():
    with pytest.raises(TypeError, match="Approximate codes are judged by their error"):
        gc.verify(gc.ApproximateCode(np.eye(3)))



# ------------------------------------------------------------------------------------------------------------
# a verdict that means what it says


def test_sampled_check_is_never_truthy():
    # seed 1 at rtol 1e-5: no set fails exhaustively (test_cli_exit_status_follows_the_verdict; its rigorous worst
    # bound is 6.4e-7, above the default 1e-8), so sampling finds none
    report = gc.verify(gc.cyclic_repetition(30, 6, rng=1), limit=1000, samples=100, rng=0, rtol=1e-5)
    assert report.verdict == "unproven" and report.n_failures == 0
    assert not bool(report) and not report.exact and not report.proven
    assert "UNPROVEN" in str(report) and "not a proof" in str(report)
    assert report.tour_row()["result"] == "unproven"


def test_uncoded_default_checks_the_one_set():
    report = gc.verify(gc.uncoded(5))
    assert report.patterns_checked == report.patterns_total == 1
    assert report.exhaustive and report.verdict == "ok" and bool(report)
    assert "2,001" not in str(report)


def test_theorem_proves_fractional_repetition_without_enumeration():
    report = gc.verify(gc.fractional_repetition(200, 9))           # C(200, 9) ~ 1.2e15 sets
    assert not report.exhaustive and report.theorem and "fractional repetition" in report.theorem
    assert report.verdict == "ok" and bool(report) and "by a theorem" in str(report)
    assert report.tour_row()["exhaustive"] == "theorem"


def test_theorem_is_checked_on_the_matrix():
    """A group decoder on a matrix whose last group is too small for s: no theorem, and the failure is found."""
    from gradcodes._families.repetition import GroupDecoder

    n, s = 40, 4
    B = gc.fractional_repetition(n, s).B.copy()
    bounds = np.array([0, 5, 10, 15, 20, 25, 30, 35, 40])
    dec = GroupDecoder(bounds)
    good = gc.GradientCode(B, s, decoders=[dec], default_decoder="group")
    assert dec.theorem(good, 2.0**-53, 1e-8)
    bad_B = B.copy()
    bad_B[39] = 0.0                                                  # the last group keeps only 4 = s workers
    bad = gc.GradientCode(bad_B, s, decoders=[GroupDecoder(bounds)], default_decoder="group")
    assert dec.theorem(bad, 2.0**-53, 1e-8) is None
    report = gc.verify(bad, limit=0, samples=200)
    assert report.theorem is None and not report
    assert report.verdict in ("FAILS", "unproven")
    assert dec.theorem(good, 1e-3, 1e-8) is None                   # the rule u * 1 <= rtol must hold too


def test_failure_counts_are_exact_or_at_least():
    code = gc.cyclic_repetition(7, 3, rng=2)
    B = code.B.copy()
    B[3, 4] *= 1.001
    full = gc.verify(gc.GradientCode(B, s=3), stop_on_failure=False)
    truth = len(brute_force_failing(B, 3))
    assert full.failures_exact and full.n_failures == truth < 35
    assert f"FAILS for {truth} of 35 straggler sets" in str(full)
    assert "for all" not in str(full)
    early = gc.verify(gc.GradientCode(B, s=3), batch_size=4)          # stops at the first failing batch
    assert early.stopped_early and not early.failures_exact
    assert "at least" in str(early) and ">=" in repr(early)


def test_repr_is_short_and_str_is_full():
    report = gc.verify(gc.cyclic_repetition(12, 4, rng=0))
    assert len(repr(report)) < 150 and repr(report).startswith("<VerifyReport")
    assert "worst cancellation" in str(report) and "load" in str(report)


def test_gf_report_says_it_proves_the_algebra_only(capsys):
    from gradcodes.cli import main

    report = gc.verify(gc.cyclic_mds(8, 2), field="GF")
    assert report.field.startswith("GF(") and report.verdict == "exact"
    assert "proves the algebra" in str(report) and "NOT the float code" in str(report)
    assert main(["verify", "cyclic_mds", "-n", "8", "-s", "2", "--gf"]) == 0
    out = capsys.readouterr().out
    assert "proves the algebra" in out and "RECOVERY PROVEN" in out   # the float code's own proof is printed too


def test_cli_exit_status_follows_the_verdict(capsys):
    from gradcodes.cli import main

    assert main(["verify", "cyclic_repetition", "-n", "9", "-s", "2"]) == 0
    # seed 2: a code with no failing or inaccurate set (exhaustively, below), so a sampled check can only be UNPROVEN;
    # without --seed the code was random and a search could (rarely) find a failing set: a flaky test, now fixed
    # (seed 2, s = 3 at the default rtol: cyclic_repetition(30, 6) fails somewhere for every seed tried under the
    # rigorous bound, and the CLI's --rtol is for code files)
    full = gc.verify(gc.cyclic_repetition(30, 3, rng=2), limit=4060, stop_on_failure=False)
    assert full.exhaustive and full.n_failures == 0 and full.n_borderline == 0
    capsys.readouterr()
    assert main(["verify", "cyclic_repetition", "-n", "30", "-s", "3", "--seed", "2", "--limit", "100",
                 "--samples", "50"]) == 1
    assert "UNPROVEN" in capsys.readouterr().out


def test_float32_messages_use_float32_roundoff():
    """cyclic_repetition(20, 3) loses ~5e-3 in float32 (measured end to end): ok in float64, not in float32."""
    code = gc.cyclic_repetition(20, 3, rng=0)
    assert gc.verify(code).verdict == "ok"
    r32 = gc.verify(code, dtype=np.float32)
    assert r32.dtype == "float32" and r32.rtol == pytest.approx(2.38e-4, rel=1e-2)
    assert r32.verdict in ("inaccurate", "FAILS") and not r32
    # the predicted float32 error of the worst set bounds what a float32 decode really loses there
    F = list(r32.worst_cancellation_responders)
    rng = np.random.default_rng(0)
    G = rng.standard_normal((code.k, 200)).astype(np.float32)
    Y = (code.B.astype(np.float64) @ G.astype(np.float64)).astype(np.float32)
    a = code.decoding_matrix(F)[0].astype(np.float32)
    got = a[F] @ Y[F]
    exact = G.astype(np.float64).sum(axis=0)
    err = np.abs(got - exact).max() / np.abs(exact).max()
    assert 1e-6 < err <= 10 * r32.error_estimate      # a real float32 loss, predicted within 10x


def test_ctrl_c_keeps_the_partial_report(monkeypatch):
    import gradcodes._verify.verifier as V

    calls = {"n": 0}
    real_add = V._Tracker.add

    def add(self, S):
        calls["n"] += 1
        if calls["n"] == 3:
            raise KeyboardInterrupt
        return real_add(self, S)

    monkeypatch.setattr(V._Tracker, "add", add)
    report = gc.verify(gc.cyclic_repetition(12, 4, rng=0), batch_size=50)
    assert report.interrupted and report.patterns_checked == 100
    assert report.verdict == "unproven" and not report and "interrupted" in str(report)


def test_time_budget_decides_between_enumeration_and_sampling():
    code = gc.cyclic_repetition(20, 5, rng=0)                        # 15,504 sets; rigorous bound 3.3e-7
    quick = gc.verify(code, time_budget=0, rtol=1e-5)
    assert not quick.exhaustive and quick.verdict == "unproven" and "time_budget" in str(quick)
    full = gc.verify(code, time_budget=600, rtol=1e-5)
    assert full.exhaustive and full.patterns_checked == math.comb(20, 5)


def test_search_finds_the_bad_set_of_a_random_cyclic_code():
    """cyclic_repetition(40, 5, rng=1) fails float64 on a few of its 658,008 sets; the restarted search finds one
    (deterministic: the search stops at the first failure, long before its time limit)."""
    report = gc.verify(gc.cyclic_repetition(40, 5, rng=1), limit=0, samples=100, search_seconds=120, rng=0)
    assert report.verdict in ("FAILS", "inaccurate") and report.strategies["restart search"] < 400


@pytest.mark.parametrize(("n", "s"), [(9, 4), (12, 1), (10, 3), (6, 6)])
def test_vectorised_enumeration_is_lexicographic(n, s):
    from gradcodes._verify.fast import lex_rank, lex_straggler_batches

    got = [tuple(r) for b in lex_straggler_batches(n, s, 17) for r in b.tolist()]
    assert got == list(itertools.combinations(range(n), s))
    start = math.comb(n, s) // 3
    tail = [tuple(r) for b in lex_straggler_batches(n, s, 5, start=start) for r in b.tolist()]
    assert tail == got[start:]
    assert all(lex_rank(n, np.array(S)) == i for i, S in enumerate(got))


# ------------------------------------------------------------------------------------------------------------
# the screening kernel agrees with the reference evaluation (today's algorithm, kept here)


def reference_verify(code, rtol=1e-8):
    """The verifier before the screening kernel: every set through the decoder and the batched residual."""
    from gradcodes._verify.verifier import _Tracker

    tr = _Tracker(code, code._decoder(None), rtol)
    sets = np.array(list(itertools.combinations(range(code.n), code.s)))
    for lo in range(0, len(sets), 512):
        tr.add(sets[lo:lo + 512])
    return tr


def planted(n, s, seed):
    code = gc.cyclic_repetition(n, s, rng=seed)
    B = code.B.copy()
    B[seed % n, (seed + 1) % n] *= 1.0 + 1e-9                       # sets near and over the threshold
    return gc.GradientCode(B, s=s)


@pytest.mark.parametrize("use_numba", [True, False])
@pytest.mark.parametrize("case", ["good", "planted", "failing"])
def test_screened_enumeration_matches_the_reference(monkeypatch, use_numba, case):
    import gradcodes._verify.cost
    import gradcodes._verify.verifier as V

    monkeypatch.setattr(gradcodes._verify.cost, "_KERNEL_MIN_SETS", 0)
    monkeypatch.setattr(V, "_USE_NUMBA", use_numba)
    code = {"good": lambda: gc.cyclic_repetition(16, 4, rng=3), "planted": lambda: planted(16, 4, 5),
            "failing": lambda: gc.cyclic_repetition(18, 5, rng=0)}[case]()
    import gradcodes._verify.parallel as P

    before = P.SCREEN_DISAGREEMENTS
    new = gc.verify(code, stop_on_failure=False, limit=10**6, workers=1)
    ref = reference_verify(code)
    assert P.SCREEN_DISAGREEMENTS == before          # the reference never contradicted the screen
    assert new.n_borderline == ref.n_borderline and new.borderline == ref.borderline
    assert new.exhaustive and new.patterns_checked == ref.checked == math.comb(code.n, code.s)
    assert new.n_failures == ref.n_failures and new.failures == ref.failures
    assert new.worst_cancellation_responders == ref.worst_canc_S
    assert new.worst_cancellation == pytest.approx(ref.worst_canc, rel=1e-6)
    if ref.worst_res > 1e-9:                      # a meaningful residual (not rounding noise): same set, same value
        assert new.worst_responders == ref.worst_res_S
        assert new.worst_residual == pytest.approx(ref.worst_res, rel=1e-6)
        assert new.error_estimate == pytest.approx(ref.worst_est, rel=1e-6)
    else:   # rounding noise (it changes with the BLAS blocking of the batch): far below rtol on both sides
        assert new.worst_residual <= 1e-8 / 16 and ref.worst_res <= 1e-8 / 16
        assert ref.worst_est / 4 <= new.error_estimate <= 4 * ref.worst_est


def test_restart_search_respects_its_time_budget_per_move(monkeypatch):
    """With seconds=0 a restart makes no move: one score of its start, then the reference evaluation. (A climb used
    to finish all its sweeps first: at (500, 125) one restart was ~280,000 solves of size 125, and
    recommend(500, 125) took minutes instead of seconds.)"""
    import gradcodes._verify.fast as vf
    from gradcodes._verify.search import restart_search
    from gradcodes._verify.verifier import _Tracker

    calls = []
    real = vf._solve_small
    monkeypatch.setattr(vf, "_solve_small", lambda A, b: calls.append(A.shape[0]) or real(A, b))
    code = gc.cyclic_repetition(30, 6, rng=0)
    tracker = _Tracker(code, code._decoder(None), 1e-8)
    got = restart_search(tracker, code, np.random.default_rng(0), seconds=0.0)
    assert got is not None and got[0].shape == (1, 6)
    assert calls == [1]                        # the start's score only; no move of 24 candidate sets


# ------------------------------------------------------------------------------------------------------------
# one engine: trees supply only their pattern model and get the same budget, Ctrl-C and report semantics


def test_trees_share_the_engine(monkeypatch):
    from gradcodes._verify.engine import Tracker

    code = gc.coded_reduce(4, 2, 1)                               # 5^5 = 3,125 tree patterns
    quick = gc.verify(code, time_budget=0, samples=50, search=False, rng=0)
    assert isinstance(quick, gc.VerifyReport) and isinstance(quick, gc.TreeVerifyReport)
    assert not quick.exhaustive and quick.verdict == "unproven" and not quick and "time_budget" in str(quick)
    full = gc.verify(code, time_budget=600)
    assert full.exhaustive and full.verdict == "ok" and bool(full)
    assert full.patterns_checked == full.patterns_total == code.patterns_total() == 3125
    assert full.pattern_model == "tree patterns" and "3,125 tree patterns" in str(full)
    calls = {"n": 0}
    real_add = Tracker.add

    def add(self, P):
        calls["n"] += 1
        if calls["n"] == 3:
            raise KeyboardInterrupt
        return real_add(self, P)

    monkeypatch.setattr(Tracker, "add", add)
    part = gc.verify_tree(code, limit=10**6, batch_size=100)
    assert part.interrupted and part.patterns_checked == 200 and part.verdict == "unproven" and not part


def test_trees_and_flat_codes_use_one_acceptance_rule():
    """A float32 check of a tree uses the same dtype rule (and default tolerance) as a flat code."""
    code = gc.coded_reduce(3, 2, 1)
    r64, r32 = gc.verify_tree(code), gc.verify_tree(code, dtype=np.float32)
    assert r64.rtol == 1e-8 and r32.rtol == pytest.approx(gc._verify.verifier.default_rtol(np.float32, 1e-8))
    assert r32.dtype == "float32" and r32.error_estimate >= r64.error_estimate
    flat = gc.verify(code.inner, dtype=np.float32)
    assert flat.rtol == r32.rtol


def test_rational_codes_are_checked_with_integers_on_both_models():
    from fractions import Fraction as Fr

    B = gc.cyclic_repetition(6, 2, field="rational").B.copy()
    B[0, np.flatnonzero(B[0] != 0)[0]] += Fr(1, 10**12)            # wrong by far less than float64 rounding
    rep = gc.verify(gc.GradientCode(B, s=2), stop_on_failure=False)
    assert rep.verdict == "FAILS" and rep.exhaustive and rep.n_failures > 0 and rep.worst_residual > 0


def test_theorem_is_found_without_the_search():
    """search=False still proves a code by its decoder's theorem (the theorem is not part of the search)."""
    report = gc.verify(gc.fractional_repetition(40, 9), search=False, samples=50, rng=0, time_budget=0)
    assert report.verdict == "ok" and report.theorem and not report.exhaustive


def test_blocks_with_more_than_half_stragglers_enumerate_without_overflow():
    """verify crashed with OverflowError on grouped_mds(1000, 100): its blocks of 111 workers have s = 100 > 111 / 2,
    so the int64 binomial table of the unranking overflowed in its middle rows (C(111, 55)) although C(111, 100)
    fits. Now the table saturates, the sets come out as itertools orders them, and the verdict is reached."""
    import itertools

    from gradcodes._verify.fast import unrank_lex

    n, s = 70, 60
    total = math.comb(n, s)
    got = unrank_lex(n, s, np.array([0, 1, 2, total - 1], dtype=np.int64))
    first = [list(c) for c in itertools.islice(itertools.combinations(range(n), s), 3)]
    assert got[:3].tolist() == first and got[3].tolist() == list(range(n - s, n))
    report = gc.verify(gc.grouped_mds(1000, 100))
    assert report.n_failures > 0 and not report        # complex MDS blocks of 111 workers, 100 stragglers: FAILS


# ------------------------------------------------------------------------------------------------------------
# the screen decides sets on its own (cleared, failing, borderline): every decision is the reference's


def _screen_cases():
    from gradcodes._core.decoders import NullSpaceDecoder

    scaled = gc.cyclic_repetition(16, 4, rng=3)
    return {
        "cyclic_repetition(16, 4, rng=3)": (gc.cyclic_repetition(16, 4, rng=3), None),
        "cyclic_repetition(18, 5, rng=0)": (gc.cyclic_repetition(18, 5, rng=0), None),
        "cyclic_repetition(30, 4, rng=7, refine=0)": (gc.cyclic_repetition(30, 4, rng=7, refine=0), None),
        "cyclic_repetition(25, 5, rng=13, refine=0)": (gc.cyclic_repetition(25, 5, rng=13, refine=0), None),
        "rows scaled by 0.5..3": (gc.GradientCode(scaled.B * np.linspace(0.5, 3.0, 16)[:, None], s=4), None),
        "ye_abbe(12, 3, 2), null-space decoder (m = 2)": (gc.ye_abbe(12, 3, 2), NullSpaceDecoder()),
    }


def _screen_vs_reference(code, dec, rtol, dtype, use_numba):
    from gradcodes._core.numerics import BORDERLINE, FAILS, OK, unit_roundoff
    from gradcodes._verify.fast import BORDER, CLEAR, FAIL, NullSpaceScreen, screen_range
    from gradcodes._verify.verifier import _Tracker

    dec = dec or code._decoder(None)
    assert NullSpaceScreen.applies(code, dec)
    tr = _Tracker(code, dec, rtol, dtype)
    screen = NullSpaceScreen(code, unit_roundoff(dtype), rtol, tr.load)
    total = math.comb(code.n, code.s)
    S, canc, res, hi, rhi, verdict = screen_range(screen, code.n, np.arange(code.s, dtype=np.int64), total,
                                                  use_numba, best=np.zeros(1))
    ev = tr.evaluate(S)
    for kind, want in ((CLEAR, OK), (FAIL, FAILS), (BORDER, BORDERLINE)):
        wrong = np.flatnonzero((verdict == kind) & (ev.verdict != want))
        assert wrong.size == 0, f"screen verdict {kind} but reference {ev.verdict[wrong[0]]} at {S[wrong[0]]}"
    decided = verdict != 1
    # the upper bound of a decided set is at least the reference's upper end
    exact = decided & (canc > 0)
    assert np.all(hi[exact] >= ev.hi[exact])
    return verdict, ev.verdict


@pytest.mark.parametrize("use_numba", [True, False])
@pytest.mark.parametrize("name", list(_screen_cases()))
def test_every_screen_decision_is_the_reference_verdict(name, use_numba):
    """The kernel clears, fails and marks borderline only sets the reference judges the same way, at the default
    tolerance and at tolerances that put many sets near the line (fails, borderline, float32)."""
    from gradcodes._core.numerics import OK

    code, dec = _screen_cases()[name]
    decided = 0
    for rtol, dtype in ((1e-8, np.float64), (3e-11, np.float64), (2.4e-4, np.float32)):
        verdict, ref = _screen_vs_reference(code, dec, rtol, dtype, use_numba)
        decided += int(np.count_nonzero(verdict != 1))
        if np.all(ref == OK):
            continue
        # the band handed on is narrow: most sets that are not ok are decided by the kernel alone
        assert np.count_nonzero(verdict == 1) <= max(8, 0.25 * np.count_nonzero(ref != OK))
    assert decided > 0


@settings(max_examples=25, deadline=None)
@given(n=st.integers(6, 18), s=st.integers(1, 4), seed=st.integers(0, 10**6), e=st.floats(-13.0, -6.0))
def test_screen_decisions_on_random_codes_and_tolerances(n, s, seed, e):
    code = gc.cyclic_repetition(n, min(s, n - 2), rng=seed)
    _screen_vs_reference(code, None, 10.0 ** e, np.float64, True)


def test_a_wrong_screen_verdict_sends_the_chunk_to_the_reference(monkeypatch):
    """Mutation: a kernel that clears every set is contradicted by the reference on the sets it re-evaluates
    (the chunk's largest cancellation), so the chunk is evaluated by the reference and the report is the
    reference's."""
    import gradcodes._verify.cost
    import gradcodes._verify.fast as vf
    import gradcodes._verify.parallel as P

    monkeypatch.setattr(gradcodes._verify.cost, "_KERNEL_MIN_SETS", 0)
    real = vf.screen_range

    def lenient(*args, **kwargs):
        out = real(*args, **kwargs)
        out[5][:] = vf.CLEAR
        return out

    monkeypatch.setattr(vf, "screen_range", lenient)
    code = gc.cyclic_repetition(30, 4, rng=7, refine=0)            # 7 failing sets
    before = P.SCREEN_DISAGREEMENTS
    rep = gc.verify(code, stop_on_failure=False, limit=10**6, workers=1)
    ref = reference_verify(code)
    assert P.SCREEN_DISAGREEMENTS > before
    assert rep.n_failures == ref.n_failures > 0 and rep.failures == ref.failures
    assert rep.n_borderline == ref.n_borderline


def test_report_names_the_stragglers_of_a_long_responder_set():
    """``failing sets ...; first: responders [2, 4, 5, ..., 14, ... (45 workers)]`` hid the five stragglers that
    tell one set from another, so a failing set could not be reproduced from the text: a long responder set whose
    complement is short is written as the workers left out."""
    rep = gc.verify(gc.fractional_repetition(20, 3))
    F = rep.worst_responders
    missing = sorted(set(range(20)) - set(F))
    assert f"at responders all but {missing} ({len(F)} of 20 workers)" in str(rep)
    short = gc.verify(gc.fractional_repetition(8, 1))
    assert f"at responders {list(short.worst_responders)}" in str(short)            # short lists stay lists


def test_guide_claim_on_the_random_cyclic_code_at_50_5():
    """docs/guide.md said the default check of cyclic_repetition(50, 5, rng=0) enumerates every set and reports
    FAILS; it stops at the first failing batch (4,096 sets, INACCURATE, "at least 3"). The guide's numbers are these."""
    code = gc.cyclic_repetition(50, 5, rng=0)
    first = gc.verify(code)
    assert (first.verdict, first.patterns_checked, first.n_failures) == ("inaccurate", 4096, 3)
    full = gc.verify(code, stop_on_failure=False)
    assert full.exhaustive and (full.verdict, full.n_failures) == ("inaccurate", 1713)
    guide = (Path(__file__).resolve().parents[1] / "docs" / "guide.md").read_text(encoding="utf-8")
    assert "fails float64 on 1,713 of its 2,118,760" in guide and "after 4,096 sets" in guide


def test_sampled_report_never_checks_more_sets_than_exist():
    """``verify(limit=0, samples=10)`` of a 45-set code printed "checked 468 of 45": the random sets and search
    moves repeat sets, and the report now says evaluations."""
    rep = gc.verify(gc.cyclic_repetition(10, 2, rng=0), limit=0, samples=10, rng=0)
    assert rep.patterns_checked > rep.patterns_total == 45 and not rep.exhaustive
    text = str(rep)
    assert f"{rep.patterns_checked:,} evaluations (sampled and searched sets repeat) of 45" in text
    assert f"{rep.patterns_checked:,} of 45" not in text
    small = gc.verify(gc.cyclic_repetition(10, 2, rng=0), limit=0, samples=5, search=False, rng=0)
    assert small.patterns_checked <= 45 and f"checked            {small.patterns_checked:,} of 45" in str(small)
