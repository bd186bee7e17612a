"""The iteration-time simulator (CodedReduce models): determinism, closed forms, a reference Monte Carlo, the CLI."""

from __future__ import annotations

import argparse
import math
from fractions import Fraction as Fr

import numpy as np
import pytest

import gradcodes as gc
from gradcodes._simulate import add_simulate_parser, cr_time_bounds

PAPER = {"branching": 12, "L": 2, "s": 5, "m_data": 49_920, "a": 5e-5, "t_c": 0.05}


def H(N: int) -> float:
    return sum(1.0 / i for i in range(1, N + 1))


def test_deterministic_under_seed():
    a = gc.simulate(iters=500, rng=7, return_samples=True)
    b = gc.simulate(iters=500, rng=7, return_samples=True)
    c = gc.simulate(iters=500, rng=8, return_samples=True)
    for name in gc._simulate.SCHEME_NAMES:
        np.testing.assert_array_equal(a[name].times, b[name].times)
        assert not np.array_equal(a[name].times, c[name].times)


def test_scheme_streams_are_independent_of_the_other_schemes():
    alone = gc.simulate("CR", iters=300, rng=3, return_samples=True)["CR"].times
    together = gc.simulate(["UMW", "RAR", "CR"], iters=300, rng=3, return_samples=True)["CR"].times
    np.testing.assert_array_equal(alone, together)


@pytest.mark.parametrize("overlap", [True, False])
def test_no_exponential_part_gives_closed_forms(overlap):
    n, L, s, m, a, t_c, t_step = 4, 3, 1, 10_000.0, 1e-4, 0.02, 0.001
    N = n * (n**L - 1) // (n - 1)
    s_gc = 20
    res = gc.simulate(branching=n, L=L, s=s, s_gc=s_gc, m_data=m, a=a, mu=math.inf, t_c=t_c, t_step=t_step,
                      overlap=overlap, iters=5, rng=0, return_samples=True)
    r = float(gc.coded_reduce_load(n, L, s))
    expect = {
        # every level adds the n - s pipelined receptions; with equal times overlap makes no difference
        "CR": a * r * m + L * (n - s) * t_c,
        "UMW": a * m / N + N * t_c,
        "GC": a * (s_gc + 1) * m / N + (N - s_gc) * t_c,
        "SGD": a * m / N + (N - s_gc) * t_c,
        "RAR": a * m / N + 2 * (N - 1) * (t_c / N + t_step),
    }
    for name, value in expect.items():
        assert np.allclose(res[name].times, value, rtol=1e-12), name
        assert res[name].stderr == 0
    lo, hi = cr_time_bounds(n, L, s, m_data=m, a=a, mu=math.inf, t_c=t_c)
    assert lo == pytest.approx(expect["CR"]) and hi == pytest.approx(expect["CR"])


def test_no_overlap_without_communication():
    # with no exponential part and t_c = 0, both rules give a r m
    res = gc.simulate("CR", branching=3, L=2, s=1, m_data=1500, a=1e-3, mu=math.inf, t_c=0.0, overlap=False, iters=3)
    assert res["CR"].mean == pytest.approx(1e-3 * 1500 * 4 / 15)


def test_order_statistics_closed_forms_s0_and_no_communication():
    """t_c = 0: the master waits for the (N - s)-th order statistic of N shifted exponentials."""
    iters = 20_000
    a, m = 1e-3, 2000.0
    mu = 1 / a
    n, L, s = 3, 2, 1
    N = 12
    for s_gc in (0, 4):
        res = gc.simulate(["GC", "SGD", "UMW"], branching=n, L=L, s=s, s_gc=s_gc, m_data=m, a=a, mu=mu, t_c=0.0,
                          iters=iters, rng=11)
        for name, ell, K in [("GC", (s_gc + 1) * m / N, N - s_gc), ("SGD", m / N, N - s_gc), ("UMW", m / N, N)]:
            expect = a * ell + ell / mu * (H(N) - H(N - K))
            r = res[name]
            assert abs(r.mean - expect) <= 5 * r.stderr + 1e-12, (name, s_gc, r.mean, expect)


def test_ring_all_reduce_closed_form():
    res = gc.simulate("RAR", **PAPER, t_step=0.002, iters=20_000, rng=5)
    N, ell = 156, 49_920 / 156
    expect = 5e-5 * ell + ell * 5e-5 * H(N) + 2 * (N - 1) * (0.05 / N + 0.002)
    assert abs(res["RAR"].mean - expect) <= 5 * res["RAR"].stderr


def test_s0_tree_matches_uncoded_load():
    res = gc.simulate("CR", branching=3, L=2, s=0, iters=2000, rng=1, mu=math.inf, m_data=1200, a=1e-3, t_c=0.01)
    assert res["CR"].load == pytest.approx(1200 / 12)
    assert res["CR"].mean == pytest.approx(1e-3 * 100 + 2 * 3 * 0.01)


# reference table (an independent 2000-trial Monte Carlo of the same model); reproduced within Monte Carlo error
REF_TABLE = {"CR": 1.134, "UMW": 7.816, "GC": 5.613, "SGD": 4.566, "RAR": 0.205}


def test_reference_table_reproduced():
    res = gc.simulate(**PAPER, iters=4000, rng=2026)
    assert res["GC"].details["s"] == 65
    assert res["CR"].load == pytest.approx(8320) and res["GC"].load == pytest.approx(21_120)
    for name, value in REF_TABLE.items():
        r = res[name]
        # the reference rounds to 3 decimals and used 2000 trials (s.e. about 0.001 for CR)
        assert abs(r.mean - value) <= 4 * r.stderr + 0.0015 + 0.001 * (name == "CR"), (name, r.mean)
    res2 = gc.simulate("CR", **PAPER, overlap=False, iters=4000, rng=1)
    assert abs(res2["CR"].mean - 1.240) <= 4 * res2["CR"].stderr + 0.0025
    assert res.speedup()["UMW"] == pytest.approx(res["UMW"].mean / res["CR"].mean)
    assert "CR speedup" in res.table("CR")


def test_cr_bounds_hold_per_sample():
    res = gc.simulate("CR", **PAPER, iters=3000, rng=4, return_samples=True)
    lo, hi = cr_time_bounds(12, 2, 5, m_data=49_920, a=5e-5, t_c=0.05)
    assert res["CR"].times.min() >= lo - 1e-12
    assert res["CR"].mean <= hi


def test_responders_decode_exactly_through_the_code():
    code = gc.coded_reduce(3, 2, 1, field="rational")
    res = gc.simulate([code], iters=50, rng=0, return_responders=True)
    (r,) = list(res)
    assert r.name.startswith("CR") and r.workers == 12 and r.details["r"] == Fr(4, 15)
    assert np.all(r.responders.sum(axis=1) == 2 + 4)          # (n - s) + (n - s)^2 used messages
    G = np.array([[Fr(u + 1)] for u in range(code.P)], dtype=object)
    Y = code.encode(G)
    for mask in r.responders[:10]:
        assert code.decode(mask, Y)[0] == G.sum()
        np.testing.assert_array_equal(code.used(mask), mask)   # the simulator's parents use n - s children


def test_any_gradient_code_as_master_worker_scheme():
    code = gc.cyclic_repetition(10, 3, rng=0)
    res = gc.simulate([code, "UMW"], branching=3, L=2, s=1, iters=200, rng=0, return_responders=True)
    r = res[f"GC[{code.name}]"]
    assert r.workers == 10 and r.messages == 7 and r.load == pytest.approx(4 / 10 * 49_920)
    assert np.all(r.responders.sum(axis=1) == 7)
    G = np.random.default_rng(0).normal(size=(10, 4))
    np.testing.assert_allclose(code.decode(r.responders[0], code.encode(G)), G.sum(axis=0))


def test_vectorised_size_and_chunking_consistency(monkeypatch):
    # 10,000 iterations of the N = 156 tree are one vectorised pass; big trees are chunked over iterations
    kw = dict(branching=12, L=3, s=5, m_data=49_920, a=5e-5, t_c=0.05)
    res = gc.simulate("CR", **kw, iters=1200, rng=0, return_samples=True)["CR"]
    assert res.workers == 12 + 144 + 1728
    lo, hi = cr_time_bounds(12, 3, 5, m_data=49_920, a=5e-5, t_c=0.05)
    assert res.times.min() >= lo - 1e-12 and res.mean <= hi
    import gradcodes._simulate._models as sim

    monkeypatch.setattr(sim, "_CHUNK_ELEMENTS", 20_000)            # about 10 iterations per chunk
    chunked = gc.simulate("CR", **kw, iters=1200, rng=0)["CR"]
    assert abs(chunked.mean - res.mean) <= 5 * math.hypot(chunked.stderr, res.stderr)
    det = gc.simulate(["CR", "RAR"], **kw, mu=math.inf, iters=30, rng=0, return_samples=True)
    np.testing.assert_allclose(det["CR"].times, lo, rtol=1e-12)   # deterministic: the lower bound, every chunk
    np.testing.assert_allclose(det["RAR"].times, 5e-5 * 49_920 / 1884 + 2 * 1883 * 0.05 / 1884, rtol=1e-12)


@pytest.mark.parametrize(("kwargs", "exc", "match"), [
    ({"schemes": "XYZ"}, ValueError, "unknown scheme"),
    ({"schemes": []}, ValueError, "must not be empty"),
    ({"schemes": ["CR", "cr"]}, ValueError, "given twice"),
    ({"t_c": -1.0}, ValueError, "t_c"),
    ({"iters": 0}, ValueError, "iters"),
    ({"mu": 0.0}, ValueError, "mu"),
    ({"a": 0.0}, ValueError, "mu must be given"),
    ({"s": 12}, ValueError, "s must be"),
    ({"L": 0}, ValueError, "L must be"),
    ({"m_data": 0}, ValueError, "m_data"),
    ({"a": float("nan")}, ValueError, "a must be finite"),
    ({"iters": 2.5}, TypeError, "iters"),
    ({"s_gc": 156}, ValueError, "s_gc"),
    ({"schemes": [gc.LinearCode(np.eye(3))]}, TypeError, "LinearCode cannot be simulated"),
])
def test_bad_input(kwargs, exc, match):
    with pytest.raises(exc, match=match):
        gc.simulate(**{"iters": 10, **kwargs})


def test_cli_subcommand(capsys):
    parser = argparse.ArgumentParser(prog="gradcodes")
    sub = parser.add_subparsers(dest="command")
    add_simulate_parser(sub)
    args = parser.parse_args(["simulate", "--iters", "300", "--schemes", "CR,RAR", "--t-step", "0.001"])
    assert args.func(args) == 0
    out = capsys.readouterr().out
    assert "CR" in out and "RAR" in out and "t_step=0.001" in out and "N=156" in out


@pytest.mark.parametrize(("argv", "shape"), [
    ([], (12, 2, 156)), (["-n", "156"], (12, 2, 156)), (["-n", "12", "-s", "1"], (3, 2, 12)),
    (["-n", "12", "--branching", "3", "-s", "1"], (3, 2, 12)), (["-n", "14", "-L", "3", "-s", "1"], (2, 3, 14)),
    (["--branching", "3", "-L", "2", "-s", "1"], (3, 2, 12)),
])
def test_cli_n_is_the_number_of_workers(capsys, argv, shape):
    """``gradcodes simulate -n 12`` simulated a 156-worker tree (``-n`` was short for ``--branching``): ``-n`` is
    the number of workers N, as everywhere; with -L (default 2) or --branching the other follows."""
    from gradcodes.cli import main

    assert main(["simulate", "--iters", "50", "--schemes", "CR", *argv]) == 0
    header = capsys.readouterr().out.splitlines()[0]
    b, L, N = shape
    assert header.startswith(f"tree branching={b} L={L} ") and f"(N={N} workers)" in header


def test_cli_alpha_reaches_the_simulator(capsys):
    """The note told command-line users to "pass alpha=..." but `gradcodes simulate` had no --alpha."""
    from gradcodes.cli import main

    assert main(["simulate", "--iters", "300", "--schemes", "CR,RAR", "--alpha", "0.0059", "--json"]) == 0
    import json

    doc = json.loads(capsys.readouterr().out)
    ref = gc.simulate(["CR", "RAR"], iters=300, rng=0, alpha=0.0059)
    assert doc["params"]["alpha"] == 0.0059 and doc["schemes"]["RAR"]["mean"] == ref["RAR"].mean
    assert main(["simulate", "--iters", "50", "--schemes", "CR,RAR"]) == 0
    assert "--alpha on the command line" in capsys.readouterr().out


def test_cli_n_that_is_no_tree(capsys):
    from gradcodes.cli import main

    assert main(["simulate", "--iters", "50", "--schemes", "CR", "-n", "13"]) == 2
    assert "n=13 workers is not a tree of depth L=2" in capsys.readouterr().err


def test_params_name_the_branching():
    res = gc.simulate("CR", branching=3, L=2, s=1, iters=20, rng=0)
    assert (res.params["branching"], res.params["L"], res.params["N"]) == (3, 2, 12) and "n" not in res.params
    assert res["CR"].details["branching"] == 3


def test_communication_factor_of_a_code_divides_the_message_time():
    """A Ye–Abbe code (m = 3) sends a third of a gradient: deterministic time a l + (n - s) t_c / m."""
    ya, cyc = gc.ye_abbe(10, 2, 3), gc.cyclic_repetition(10, 2, rng=0)
    res = gc.simulate([ya, cyc], mu=math.inf, m_data=1000, a=1e-3, t_c=0.3, iters=2)
    assert res[f"GC[{ya.name}]"].mean == pytest.approx(1e-3 * 500 + 8 * 0.1)
    assert res[f"GC[{cyc.name}]"].mean == pytest.approx(1e-3 * 300 + 8 * 0.3)
    assert res[f"GC[{ya.name}]"].details["m"] == 3


def test_distinct_codes_with_equal_names_get_distinct_labels():
    c1, c2 = gc.cyclic_repetition(10, 2, rng=0), gc.cyclic_repetition(12, 2, rng=0)
    res = gc.simulate([c1, c2], iters=20, rng=0)
    assert [r.workers for r in res] == [10, 12] and list(res.schemes)[1].endswith("#2")
    with pytest.raises(ValueError, match="given twice"):
        gc.simulate([c1, c1], iters=20)


def test_seed_forms():
    a = gc.simulate("CR", iters=50, rng=np.random.default_rng(3), return_samples=True)["CR"].times
    b = gc.simulate("CR", iters=50, rng=np.random.default_rng(3), return_samples=True)["CR"].times
    np.testing.assert_array_equal(a, b)
    c = gc.simulate("CR", iters=50, rng=np.random.SeedSequence(3), return_samples=True)["CR"].times
    np.testing.assert_array_equal(c, gc.simulate("CR", iters=50, rng=np.random.SeedSequence(3),
                                                 return_samples=True)["CR"].times)
    for bad in ("x", 1.5, True):
        with pytest.raises(TypeError, match="rng must be"):
            gc.simulate("CR", iters=10, rng=bad)
    with pytest.raises(ValueError, match="non-negative integer seed"):
        gc.simulate("CR", iters=10, rng=-1)


def test_result_and_bounds_errors():
    with pytest.raises(ValueError, match="iters must be"):
        gc.simulate("CR", iters=1)                            # no standard error from one sample
    with pytest.raises(ValueError, match="reference must be one of"):
        gc.simulate("UMW", iters=10, rng=0).speedup()
    with pytest.raises(ValueError, match="mu must be given"):
        cr_time_bounds(12, 2, 5, m_data=1000, a=0, t_c=0.05)
    with pytest.raises(ValueError, match="m_data"):
        cr_time_bounds(12, 2, 5, m_data=-1, a=1e-3, t_c=0.05)


def test_result_lookup_any_case():
    res = gc.simulate(["cr", "umw"], iters=20, rng=0)
    assert res["cr"] is res["CR"] and set(res.speedup("cr")) == {"UMW"}
    with pytest.raises(KeyError, match="simulated"):
        res["GC"]


def test_default_table_says_why_ring_allreduce_is_fast():
    # gc.simulate() showed CR 5x slower than ring all-reduce without a word: RAR is charged no latency by default
    import gradcodes as gc

    text = str(gc.simulate(iters=50, rng=0))
    assert "note: RAR" in text and "alpha = 0" in text
    slow = gc.simulate(iters=50, rng=0, alpha=0.0059)
    assert "note: RAR" not in str(slow) and slow["RAR"].mean > slow["CR"].mean


def test_a_time_budget_picks_the_iterations_and_keeps_the_draws():
    """simulate(time_budget=) runs as many iterations as fit; the result is simulate(iters=that number) with the
    same seed, so it is reproducible without a clock. A zero budget stops after the first measuring run (64)."""
    got = gc.simulate(["CR", "GC", "RAR"], iters=100_000, time_budget=0, rng=3, return_samples=True)
    assert got.params["iters"] == 64 and got.params["iters_requested"] == 100_000
    again = gc.simulate(["CR", "GC", "RAR"], iters=64, rng=3, return_samples=True)
    for label in ("CR", "GC", "RAR"):
        np.testing.assert_array_equal(got[label].times, again[label].times)
    small = gc.simulate("CR", iters=40, time_budget=60, rng=3)             # fewer than a measuring run: all of them
    assert small.params["iters"] == 40 and small["CR"].mean == gc.simulate("CR", iters=40, rng=3)["CR"].mean


def test_a_time_budget_is_validated_and_progress_is_one_line(capsys):
    with pytest.raises(gc.GradcodesValueError, match="time_budget"):
        gc.simulate("CR", iters=10, time_budget=-1)
    with pytest.raises(gc.GradcodesTypeError, match="progress"):
        gc.simulate("CR", iters=10, progress="yes")
    with pytest.raises(gc.GradcodesTypeError, match="progress"):       # one check, before either path
        gc.simulate("CR", iters=10, time_budget=5, progress=1)
    res = gc.simulate("CR", iters=200, progress=True, rng=0)
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("simulate: 200 iterations")
    assert res.params["iters"] == 200
