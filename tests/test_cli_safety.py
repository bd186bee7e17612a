"""The command line: exit codes, --json, --version, every constructor parameter, and no traceback for user errors."""

import json
import subprocess
import sys

import numpy as np
import pytest

import gradcodes as gc
from gradcodes.cli import main


def _run(argv, capsys):
    rc = main(argv)
    out, err = capsys.readouterr()
    return rc, out, err


def test_version(capsys):
    rc, out, _ = _run(["--version"], capsys)
    assert rc == 0 and out.strip() == f"gradcodes {gc.__version__}"


BAD_ARGS = [
    [],
    ["nope"],
    ["tour", "--schemes", "no_such_scheme"],
    ["tour", "--bogus"],
    ["build", "cyclic_repetition", "-n", "5", "-s", "1"],                 # no -o
    ["build", "cyclic_repetition", "-o", "{tmp}/a.npz"],                  # no -n -s: used to leak '<lambda>() missing'
    ["build", "cyclic_repetition", "-n", "x", "-s", "1", "-o", "{tmp}/a.npz"],
    ["build", "cyclic_repetition", "-n", "5", "-s", "9", "-o", "{tmp}/a.npz"],
    ["build", "cyclic_repetition", "-n", "-5", "-s", "1", "-o", "{tmp}/a.npz"],
    ["build", "cyclic_repetition", "-n", "5", "-s", "1", "--param", "bogus=1", "-o", "{tmp}/a.npz"],
    ["build", "cyclic_repetition", "-n", "5", "-s", "1", "--param", "novalue", "-o", "{tmp}/a.npz"],
    ["build", "cyclic_mds", "-n", "7", "-s", "2", "--param", "placement=nowhere", "-o", "{tmp}/a.npz"],
    ["build", "cyclic_repetition", "-n", "5", "-s", "1", "-o", "{tmp}/no/such/dir/a.npz"],
    ["build", "uncoded", "-n", "1000000000", "-o", "{tmp}/a.npz"],
    ["build", "no_such_scheme", "-n", "5", "-o", "{tmp}/a.npz"],
    ["verify"],
    ["verify", "cyclic_repetition"],
    ["verify", "cyclic_repetition", "-n", "5", "-s", "1", "--limit", "-3"],
    ["verify", "cyclic_repetition", "-n", "5", "-s", "1", "--decoder", "nope"],
    ["verify", "cyclic_repetition", "-n", "5", "-s", "1", "--samples", "nan"],
    ["bound"],
    ["bound", "-n", "5"],
    ["bound", "-n", "5", "-s", "7"],
    ["bound", "-n", "0", "-s", "0"],
    ["evaluate"],
    ["evaluate", "sgc", "-n", "10", "--p", "2"],
    ["evaluate", "sgc", "-n", "10", "--samples", "-1"],
    ["evaluate", "sgc", "-n", "10", "--method", "magic"],
    ["simulate", "--iters", "1"],
    ["simulate", "-L", "1000000000"],
    ["simulate", "--schemes", "XYZ"],
    ["simulate", "-n", "1"],
    ["schemes", "extra"],
    ["tour", "--schemes", ""],                     # ran every scheme
    ["tour", "--schemes", " , "],
]


@pytest.mark.parametrize("argv", BAD_ARGS, ids=lambda a: " ".join(a) or "(none)")
def test_bad_arguments_exit_2_without_traceback(argv, tmp_path, capsys):
    rc, out, err = _run([a.replace("{tmp}", str(tmp_path)) for a in argv], capsys)
    assert rc == 2, (rc, out, err)
    assert "Traceback" not in err and err.strip()
    assert "<lambda>" not in err


def _bad_files(tmp_path):
    files = {}
    (tmp_path / "text.npz").write_text("hello")
    files["text"] = tmp_path / "text.npz"
    np.save(tmp_path / "plain.npy", np.eye(3))
    files["npy"] = tmp_path / "plain.npy"
    gc.save_code(gc.fractional_repetition(6, 1), tmp_path / "good.npz")
    raw = (tmp_path / "good.npz").read_bytes()
    (tmp_path / "cut.npz").write_bytes(raw[: len(raw) // 2])
    files["truncated"] = tmp_path / "cut.npz"
    np.savez(tmp_path / "pickle.npz", meta=np.array("{}"), B=np.array([[object()]], dtype=object))
    files["pickle"] = tmp_path / "pickle.npz"
    np.savez(tmp_path / "foreign.npz", x=np.zeros(3))
    files["foreign"] = tmp_path / "foreign.npz"
    files["missing"] = tmp_path / "missing.npz"
    files["directory"] = tmp_path
    return files


@pytest.mark.parametrize("command", ["verify", "evaluate"])
def test_bad_files_exit_2(command, tmp_path, capsys):
    for what, path in _bad_files(tmp_path).items():
        rc, out, err = _run([command, str(path)], capsys)
        assert rc == 2, (what, rc, out, err)
        assert err.startswith("gradcodes: error:") and "Traceback" not in err, (what, err)
        assert "allow_pickle" not in err


def test_no_traceback_from_the_console_script(tmp_path):
    (tmp_path / "bad.npz").write_bytes(b"\x00" * 100)
    for argv in (["verify", str(tmp_path / "bad.npz")], ["build", "cyclic_repetition", "-o", "x.npz"]):
        res = subprocess.run([sys.executable, "-m", "gradcodes", *argv], capture_output=True, text=True)
        assert res.returncode == 2 and "Traceback" not in res.stderr and res.stderr.startswith("gradcodes: error")


def test_json_outputs(tmp_path, capsys):
    rc, out, _ = _run(["verify", "fractional_repetition", "-n", "6", "-s", "1", "--json"], capsys)
    rep = json.loads(out)
    assert rc == 0 and rep["ok"] is True and rep["n"] == 6 and rep["patterns_total"] == 6
    rc, out, _ = _run(["bound", "-n", "7", "-s", "2", "-k", "3", "--json"], capsys)
    assert rc == 0 and json.loads(out)["min_load_exact"] == "9/7"   # min_load itself is a number (typed JSON)
    rc, out, _ = _run(["simulate", "--iters", "20", "--schemes", "CR,UMW", "--json"], capsys)
    sim = json.loads(out)
    assert rc == 0 and set(sim["schemes"]) == {"CR", "UMW"} and sim["schemes"]["CR"]["iters"] == 20
    rc, out, _ = _run(["evaluate", "sgc", "-n", "8", "--json"], capsys)
    assert rc == 0 and json.loads(out)["n"] == 8
    rc, out, err = _run(["tour", "--quick", "--schemes", "uncoded,fractional_repetition", "--json"], capsys)
    rows = json.loads(out)                       # progress lines went to stderr, not into the JSON
    assert rc == 0 and [r["scheme"] for r in rows] == ["uncoded", "fractional_repetition"]
    assert "uncoded" in err


def test_tour_progress_on_stderr(capsys):
    rc, out, err = _run(["tour", "--quick", "--schemes", "uncoded"], capsys)
    assert rc == 0 and "uncoded {'n': 20}" in err and "uncoded {'n': 20}" not in out and "uncoded" in out


def test_json_non_finite_numbers_are_null(capsys):
    """``--json`` wrote an infinite bound as the string "inf" (a field that is a number in one report and a string in
    the next): a non-finite float is ``null``, as JSON.stringify, pandas and pydantic write it, and the output is
    strict JSON (no NaN or Infinity constants)."""
    import argparse
    from dataclasses import dataclass

    from gradcodes._base.output import emit

    @dataclass
    class _Report:
        bound: float
        values: tuple
        z: complex

    def strict(name):
        raise AssertionError(f"non-standard JSON constant {name}")

    emit(argparse.Namespace(json=True), _Report(float("inf"), (float("nan"), -np.inf, np.float32(2.5)),
                                                complex(np.inf, 1.0)))
    doc = json.loads(capsys.readouterr().out, parse_constant=strict)
    assert doc == {"bound": None, "values": [None, None, 2.5], "z": {"real": None, "imag": 1.0}}


def test_failing_code_exit_1_and_json(tmp_path, capsys):
    B = gc.fractional_repetition(4, 1).B.copy()
    B[0, 0] = 0
    gc.save_code(gc.GradientCode(B, s=1), tmp_path / "bad.npz")
    rc, out, _ = _run(["verify", str(tmp_path / "bad.npz"), "--json"], capsys)
    assert rc == 1 and json.loads(out)["ok"] is False


def test_every_constructor_parameter_is_reachable(tmp_path, capsys):
    path = tmp_path / "t.npz"
    rc, _, err = _run(["build", "cyclic_mds", "-n", "7", "-s", "2", "--param", "placement=textbook", "-o",
                       str(path)], capsys)
    assert rc == 0, err
    assert gc.load_code(path).name == "cyclic_mds[complex, textbook]"
    rc, _, err = _run(["build", "cyclic_repetition", "-n", "3", "-s", "1", "--param", "H=[[1, 1, -2]]",
                       "--param", "field=rational", "-o", str(path)], capsys)
    assert rc == 0, err
    assert gc.load_code(path).field == "rational"
    rc, _, err = _run(["build", "expander_code", "-n", "8", "--param", "degree=3", "--param",
                       "require_connected=False", "-o", str(path)], capsys)
    assert rc == 0, err


def test_python_names_are_scheme_names(tmp_path, capsys):
    for python_name, short in gc.cli.ALIASES.items():
        assert short in gc.schemes() and callable(getattr(gc, python_name))
    rc, _, err = _run(["build", "stochastic_gc", "-n", "6", "-o", str(tmp_path / "a.npz")], capsys)
    assert rc == 0, err
    assert gc.load_code(tmp_path / "a.npz").family == "stochastic_gc"
    rc, out, _ = _run(["schemes"], capsys)
    assert "sgc (stochastic_gc)" in out


def test_options_given_twice_or_not_applying_are_refused(tmp_path, capsys):
    """``verify code.npz -n 12`` ignored -n, ``--param n=12`` beside ``-n 10`` quietly won, and ``--seed 5 --param
    rng=3`` quietly used 5: each is a usage error naming the options; ``--param rng=3`` alone is ``--seed 3``."""
    path = tmp_path / "c.npz"
    gc.save_code(gc.cyclic_repetition(10, 2, rng=0), path)
    for extra in (["-n", "12"], ["-s", "1"], ["--seed", "3"], ["--param", "refine=0"]):
        rc, out, err = _run(["verify", str(path), *extra], capsys)
        assert rc == 2 and "is a saved code" in err and extra[0] in err and not out
    rc, _, err = _run(["build", "cyclic_repetition", "-n", "10", "-s", "2", "--param", "n=12", "-o",
                       str(tmp_path / "x.npz")], capsys)
    assert rc == 2 and "n given twice" in err and not (tmp_path / "x.npz").exists()
    rc, _, err = _run(["build", "cyclic_repetition", "-n", "10", "-s", "2", "--seed", "5", "--param", "rng=3", "-o",
                       str(tmp_path / "x.npz")], capsys)
    assert rc == 2 and "rng given twice" in err
    rc, _, _ = _run(["build", "cyclic_repetition", "-n", "10", "-s", "2", "--param", "rng=3", "-o",
                     str(tmp_path / "x.npz")], capsys)
    assert rc == 0 and gc.load_code(tmp_path / "x.npz") == gc.cyclic_repetition(10, 2, rng=3)
