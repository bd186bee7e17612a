"""``gradcodes tour``: expected outcomes per row (exit 0 when every row is as expected, 1 on a surprise), labelled
demonstration rows, and typed ``--json`` output of every command that has it."""

from __future__ import annotations

import json
import re

import numpy as np
import pytest

import gradcodes as gc
from gradcodes._base import registry as _registry
from gradcodes._base.registry import Expect, Scheme
from gradcodes.cli import main

SNAKE = re.compile(r"^([a-z][a-z0-9_]*|[A-Z])$")   # snake_case, or a one-letter symbol of the papers (L, N)
# a number formatted for display: thousands separators or an exponent ("1,140", "0.0e+00", "4.1e-08")
DISPLAY_NUMBER = re.compile(r"^[-+]?\d[\d,]*(\.\d*)?([eE][-+]?\d+)?$")


def _run(argv, capsys):
    rc = main(argv)
    out, err = capsys.readouterr()
    return rc, out, err


def _failing_code(n: int = 4, s: int = 1) -> gc.GradientCode:
    B = gc.fractional_repetition(n, s).B.copy()
    B[0, 0] = 0                                   # worker 0 no longer holds partition 0: straggler sets fail
    return gc.GradientCode(B, s=s, name="broken")


@pytest.fixture
def extra_scheme(monkeypatch):
    """Register a scheme for one test only (the registry is restored afterwards)."""
    def add(scheme: Scheme) -> str:
        monkeypatch.setitem(_registry._SCHEMES, scheme.name, scheme)
        return scheme.name
    return add


def test_demonstration_rows_are_expected_and_exit_0(capsys):
    # Tandon et al.'s random cyclic code at (50, 5) and (100, 10) fails float64 on purpose: the tour says so, and
    # exits 0 (it exited 1 before, on any FAILS or unproven row)
    rc, out, _ = _run(["tour", "--schemes", "cyclic_repetition"], capsys)
    assert rc == 0
    assert out.count("demo [") == 2 and "rtol = 1e-08" in out and "demonstration" in out
    assert "3 rows, 3 as expected" in out
    # titles and footnotes wrap at 100 columns (they were single lines of up to 330 characters); table rows do not
    table = [line for line in out.splitlines() if line.startswith(("scheme ", "-----", "cyclic_repetition "))]
    assert max(len(line) for line in out.splitlines() if line not in table) <= 100
    assert "\n[1] cyclic_repetition {'n': 50, 's': 5}: demonstration:" in out and "\n    " in out


def test_sampled_rows_are_expected(capsys):
    rc, out, _ = _run(["tour", "--schemes", "ye_abbe", "--json"], capsys)
    rows = json.loads(out)
    assert rc == 0 and all(r["as_expected"] for r in rows)
    assert "unproven" in rows[1]["expected"] and "unproven" not in rows[0]["expected"]


def test_unexpected_failure_exits_1(capsys, extra_scheme):
    name = extra_scheme(Scheme("broken_code", lambda n: _failing_code(n), "a code that fails", tour=({"n": 4},)))
    rc, out, _ = _run(["tour", "--schemes", f"uncoded,{name}"], capsys)
    assert rc == 1
    assert "UNEXPECTED: broken_code" in out and "NO [1]" in out and "2 rows, 1 as expected, 1 UNEXPECTED" in out


def test_demonstration_that_stops_failing_exits_1(capsys, extra_scheme):
    demo = Expect(frozenset({"FAILS"}), "should fail", demonstration=True)
    name = extra_scheme(Scheme("fixed_demo", lambda n: gc.uncoded(n), "passes", tour=({"n": 4},), expect=(demo,)))
    rc, out, _ = _run(["tour", "--schemes", name], capsys)
    assert rc == 1 and "gave ok, expected one of FAILS" in out


def test_expected_set_is_generic(capsys, extra_scheme):
    # any set of verdicts, e.g. a future "unproven (borderline)", is accepted when listed
    anything = Expect(frozenset({"FAILS", "ok", "unproven (borderline)"}), "either way")
    name = extra_scheme(Scheme("either", lambda n: _failing_code(n), "x", tour=({"n": 4},), expect=(anything,)))
    rc, out, _ = _run(["tour", "--schemes", name, "--json"], capsys)
    row = json.loads(out)[0]
    assert rc == 0 and row["result"] == "FAILS" and row["as_expected"] is True
    assert row["expected"] == ["FAILS", "ok", "unproven (borderline)"]


def test_register_checks_expectations():
    with pytest.raises(ValueError, match="one entry per tour row"):
        _registry.register(Scheme("bad_expect", gc.uncoded, "x", tour=({"n": 3}, {"n": 4}),
                                  expect=(Expect(frozenset({"ok"})),)))
    with pytest.raises(ValueError, match="non-empty set"):
        Expect("ok")   # type: ignore[arg-type]


def test_every_registered_row_has_a_meaningful_expectation():
    for name, scheme in gc.schemes().items():
        for i in range(len(scheme.tour)):
            exp = scheme.expected(i)
            assert exp.results and exp.reason, (name, i)
            if exp.demonstration:
                assert len(exp.reason) > 20, (name, i)


def _walk(obj, path="$"):
    """Yield (path, key or None, value) over a JSON document."""
    if isinstance(obj, dict):
        for k, v in obj.items():
            yield path, k, v
            yield from _walk(v, f"{path}.{k}")
    elif isinstance(obj, list):
        for i, v in enumerate(obj):
            yield from _walk(v, f"{path}[{i}]")


def _assert_typed(doc, *, label_maps=()):
    """No number written as a display string; snake_case keys (except inside maps keyed by labels)."""
    for path, key, value in _walk(doc):
        if isinstance(value, str):
            assert not DISPLAY_NUMBER.match(value), f"{path}.{key} = {value!r} is a display string"
        if not any(path.endswith(m) for m in label_maps) and not path.endswith(".params"):
            assert SNAKE.match(key), f"{path}: key {key!r} is not snake_case"


def test_tour_json_is_typed(capsys):
    rc, out, _ = _run(["tour", "--quick", "--schemes", "fractional_repetition,coded_reduce,expander_code,bgc",
                       "--json"], capsys)
    rows = json.loads(out)
    assert rc == 0 and [r["scheme"] for r in rows] == ["fractional_repetition", "coded_reduce", "expander_code",
                                                        "bgc"]
    _assert_typed(rows)
    fr, cr, ex, bgc = rows
    assert isinstance(fr["patterns_checked"], int) and fr["patterns_checked"] == 1140
    assert fr["exhaustive"] is True and fr["proven"] is True and fr["result"] == "ok"
    assert isinstance(fr["worst_residual"], float) and isinstance(fr["seconds"], float)
    assert fr["load"] == 4 and fr["load_lower_bound"] == 4 and fr["theorem"] is None
    assert isinstance(cr["patterns_checked"], int) and cr["s"] == 1
    assert ex["result"] in ("proven", "bounded") and isinstance(ex["worst_upper"], float)
    assert isinstance(ex["lower_source"], str) and isinstance(ex["relative_worst_lower"], float)
    assert bgc["result"] == "BIASED" and bgc["demonstration"] is True and bgc["as_expected"] is True
    assert isinstance(bgc["replication"], float) and isinstance(bgc["relative_bias"], float)


@pytest.mark.parametrize("argv, label_maps", [
    (["verify", "cyclic_repetition", "-n", "8", "-s", "2", "--json"], ()),
    (["verify", "cyclic_mds", "-n", "7", "-s", "2", "--gf", "--json"], ()),
    (["bound", "-n", "7", "-s", "2", "-k", "3", "--json"], ()),
    (["simulate", "--iters", "20", "--schemes", "CR,UMW", "--json"], (".schemes",)),
    (["evaluate", "sgc", "-n", "8", "--json"], ()),
    (["schemes", "--json"], ()),
])
def test_every_json_command_is_typed(argv, label_maps, capsys):
    rc, out, _ = _run(argv, capsys)
    assert rc == 0
    _assert_typed(json.loads(out), label_maps=label_maps)


def test_build_json_and_typed_fractions(tmp_path, capsys):
    rc, out, _ = _run(["build", "cyclic_repetition", "-n", "6", "-s", "1", "-o", str(tmp_path / "c.npz"),
                       "--json"], capsys)
    doc = json.loads(out)
    assert rc == 0 and doc["n"] == 6 and doc["s"] == 1 and doc["load"] == 2 and doc["path"].endswith("c.npz")
    _assert_typed(doc)
    rc, out, _ = _run(["bound", "-n", "7", "-s", "2", "-k", "3", "--json"], capsys)
    doc = json.loads(out)
    assert doc["min_load"] == pytest.approx(9 / 7) and doc["min_load_exact"] == "9/7"
    rc, out, _ = _run(["verify", "fractional_repetition", "-n", "6", "-s", "1", "--json"], capsys)
    doc = json.loads(out)
    assert doc["load_lower_bound"] == 2 and isinstance(doc["load_lower_bound"], int)
    assert np.isclose(doc["average_load"], 2)


def test_ctrl_c_during_a_check_stops_the_tour_with_status_130(capsys, monkeypatch):
    """Ctrl-C reached one verify, which returned its partial report marked interrupted: the tour marked the row
    unproven and carried on (it once ended "62 rows, 62 as expected", exit 0)."""
    import gradcodes._cli.tour as tour_mod

    real = tour_mod.verify

    def interrupted(code, **kw):
        report = real(code, **kw)
        report.interrupted = True
        return report

    monkeypatch.setattr(tour_mod, "verify", interrupted)
    rc, out, err = _run(["tour", "--quick"], capsys)
    assert rc == 130 and "gradcodes: interrupted" in err and "as expected" not in out


def test_tour_prints_no_sampled_value_as_a_worst_case(capsys):
    # issue 37: the graph assignment row (k = 40, d = 6, s = 12) printed "approx: worst 8.1e-16" from sampled sets;
    # straggling the edges at two vertices gives sqrt(2). Every approximate row is now proven ("= x": every set or
    # a theorem) or a lower bound found by search (">= x") next to its certified upper bound and their sources.
    rc, out, _ = _run(["tour", "--schemes", "graph_assignment_code,bibd_code"], capsys)
    assert rc == 0 and "approx: worst" not in out and "|err|^2/|g|^2" in out
    lines = [ln for ln in out.splitlines() if ln.startswith(("graph_assignment_code", "bibd_code"))]
    assert len(lines) == 5
    for ln in lines:
        if " no " in ln and "theorem: Kadhe" not in ln:                   # searched: a lower bound, labelled
            assert ">= " in ln and "search: " in ln and "<= " in ln and "proven" not in ln
        else:
            assert "= " in ln and ">= " not in ln and "proven" in ln
    big = next(ln for ln in lines if ln.startswith("graph_assignment_code  120"))
    assert ">= 0.05 " in big and "<= 0.1 " in big and "theorem: Glasgow & Wootters 2021" in big   # sqrt(2)^2 / 40
    rc, out, _ = _run(["tour", "--schemes", "graph_assignment_code", "--json"], capsys)
    rows = json.loads(out)
    assert [r["proven"] for r in rows] == [True, False]
    assert rows[1]["lower_source"].startswith("search: ") and rows[1]["worst_lower"] ** 2 == pytest.approx(2.0)
    assert rows[1]["relative_worst_upper"] == pytest.approx(0.1) and rows[1]["result"] == "bounded"
