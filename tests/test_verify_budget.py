"""The verifier's default budget is a count of patterns from a fixed cost model (gradcodes._verify.cost), never a
clock: the same call gives the same verdict and counts on a stalled (loaded, suspended) process as on an idle one.

A *stalled* process is simulated by a clock that jumps 1000 s at every reading (``time.perf_counter``, which the
verifier's wall-clock budgets read): a wall-clock rule then sees a rate of a few sets per hour. No test asserts
on speed.
"""

import math
import time

import pytest

import gradcodes as gc
from gradcodes.cli import build_parser, main


@pytest.fixture
def stall(monkeypatch):
    """Call ``stall()`` to make every later ``time.perf_counter()`` reading 1000 s after the previous one."""
    real = time.perf_counter
    readings = [0]

    def stalled() -> float:
        readings[0] += 1
        return real() + 1000.0 * readings[0]

    def start() -> list[int]:
        monkeypatch.setattr(time, "perf_counter", stalled)
        return readings

    return start


def _summary(rep):
    return (rep.verdict, rep.exhaustive, rep.patterns_checked, dict(rep.strategies), rep.n_failures,
            rep.n_borderline, rep.worst_cancellation_responders)


def test_the_default_verdict_of_45_3_is_the_same_on_a_stalled_process(stall):
    """Issue 33: gc.verify(gc.cyclic_repetition(45, 3, rng=4)) answered "unproven ... about 8 min" on a loaded
    machine (its 14,190 sets take a fraction of a second): the default budget was seconds at the rate of the first
    batch."""
    code = gc.cyclic_repetition(45, 3, rng=4)
    idle = gc.verify(code)
    readings = stall()
    busy = gc.verify(code)
    assert readings[0] > 0                                   # the clock was read, and it said "stalled"
    assert _summary(busy) == _summary(idle)
    # every set checked; "unproven" (4 borderline sets) under the rigorous acceptance bound, "ok" before it
    assert busy.verdict == "unproven" and busy.exhaustive and busy.patterns_checked == math.comb(45, 3)


def test_a_sampled_default_run_and_its_search_are_the_same_on_a_stalled_process(stall):
    """Beyond the default budget the sets are sampled and searched; the restarted search is bounded by a count of
    moves by default (gradcodes._verify.cost.search_moves), so the sets it checks do not depend on the clock
    either."""
    code = gc.cyclic_repetition(40, 8, rng=0)                # C(40, 8) = 76,904,685 sets: sampled
    idle = gc.verify(code, samples=100, rng=0)
    stall()
    busy = gc.verify(code, samples=100, rng=0)
    assert not idle.exhaustive and "restart search" in idle.strategies
    assert _summary(busy) == _summary(idle)
    assert any("default budget" in note for note in idle.notes)


def test_a_tree_default_verdict_is_the_same_on_a_stalled_process(stall):
    code = gc.coded_reduce(5, 2, 1)                          # 6^6 = 46,656 patterns: more than sampling checks
    idle = gc.verify(code, rng=0)
    stall()
    busy = gc.verify(code, rng=0)
    assert _summary(busy) == _summary(idle)
    assert idle.exhaustive and idle.patterns_checked == 46_656


def test_the_cli_default_verdict_is_the_same_on_a_stalled_process(stall, capsys):
    assert build_parser().parse_args(["verify", "cyclic_repetition"]).time_budget is None
    args = ["verify", "cyclic_repetition", "-n", "45", "-s", "3", "--seed", "4", "--workers", "1"]
    assert main(args) == 1                                   # unproven (every set checked, 4 borderline)
    stall()
    assert main(args) == 1
    capsys.readouterr()


def test_the_default_budget_is_the_cost_models_count(monkeypatch):
    """The default enumerates exactly when C(n, s) is within flat_default_limit; a costlier model (here: every set
    predicted at 1 s) turns the same call into sampling, with a note that names the count."""
    from gradcodes._verify import cost as _verify_cost

    code = gc.cyclic_repetition(45, 3, rng=4)
    dec = code._decoder(None)
    assert _verify_cost.flat_path(code, dec, math.comb(45, 3)) == "reference"
    assert _verify_cost.flat_default_limit(code, dec) >= math.comb(45, 3)
    monkeypatch.setitem(_verify_cost.COSTS, "reference", (1e6, 0.0))
    assert _verify_cost.flat_default_limit(code, dec) == 10
    rep = gc.verify(code, samples=50, search=False, rng=0)
    assert not rep.exhaustive and rep.verdict == "unproven"
    assert any("default budget of 10 " in note for note in rep.notes)
    assert gc.verify(code, time_budget=600).exhaustive       # a wall-clock budget only when asked for

