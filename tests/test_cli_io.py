"""Command line and .npz round trips."""

import subprocess
import sys
from fractions import Fraction as Fr

import numpy as np
import pytest

import gradcodes as gc
from gradcodes.cli import main


def test_tour_quick_lists_every_scheme(capsys):
    assert main(["tour", "--quick"]) == 0
    out = capsys.readouterr().out
    for name, scheme in gc.schemes().items():
        assert name in out, f"tour is missing {name}"
        assert scheme.tour, f"{name} registers no tour sizes"
    assert "FAILS" not in out


def test_bound_and_schemes(capsys):
    assert main(["bound", "-n", "7", "-s", "2", "-k", "3"]) == 0
    assert "9/7" in capsys.readouterr().out
    assert main(["schemes"]) == 0
    assert "cyclic_repetition" in capsys.readouterr().out


@pytest.mark.parametrize("columns", [80, 100, 200])
def test_schemes_table_fits_the_terminal(capsys, monkeypatch, columns):
    """``gradcodes schemes`` printed 200-character lines (the longest summary): the summaries wrap to the terminal's
    width and no word of any summary is lost."""
    monkeypatch.setenv("COLUMNS", str(columns))
    assert main(["schemes"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert max(len(line) for line in lines) <= columns
    start = lines[0].index("summary")
    text = " ".join(line[start:].strip() for line in lines[2:])
    for scheme in gc.schemes().values():
        assert scheme.summary in text, scheme.name


def test_build_verify_roundtrip(tmp_path, capsys):
    path = tmp_path / "code.npz"
    assert main(["build", "cyclic_repetition", "-n", "9", "-s", "2", "--seed", "4", "-o", str(path)]) == 0
    assert main(["verify", str(path)]) == 0
    out = capsys.readouterr().out
    assert "RECOVERY" in out and "36 of 36" in out
    np.testing.assert_array_equal(gc.load_code(path).B, gc.cyclic_repetition(9, 2, rng=4).B)


def test_cli_errors_are_clear(tmp_path, capsys):
    assert main(["build", "fractional_repetition", "-n", "7", "-s", "1", "-o", str(tmp_path / "x.npz")]) == 2
    assert "(s + 1) | n" in capsys.readouterr().err
    assert main(["verify", "no_such_scheme", "-n", "4", "-s", "1"]) == 2
    assert "unknown scheme" in capsys.readouterr().err
    assert main(["build", "uncoded", "-n", "4", "-s", "1", "-o", str(tmp_path / "y.npz")]) == 2
    assert "does not take s" in capsys.readouterr().err


def test_verify_failing_code_exit_status(tmp_path, capsys):
    B = gc.fractional_repetition(4, 1).B.copy()
    B[0, 0] = 0
    path = tmp_path / "bad.npz"
    gc.save_code(gc.GradientCode(B, s=1), path)
    assert main(["verify", str(path)]) == 1
    assert "FAILS" in capsys.readouterr().out


def test_python_dash_m_entry_point():
    out = subprocess.run([sys.executable, "-m", "gradcodes", "bound", "-n", "10", "-s", "3"],
                         capture_output=True, text=True, check=True).stdout
    assert "= 4" in out


@pytest.mark.parametrize("code", [
    gc.fractional_repetition(6, 2),
    gc.cyclic_repetition(5, 1, H=[[1, 2, 3, 4, -10]], field="rational"),
    gc.cyclic_repetition(7, 3, rng=2),
    gc.uncoded(3, k=6),
    gc.ApproximateCode(np.eye(3) / 2, straggle_probabilities=[0.1, 0.2, 0.3], name="halves"),
    gc.ApproximateCode(np.eye(2, dtype=object) * Fr(1, 3), straggle_probabilities=[Fr(1, 2), Fr(1, 3)]),
])
def test_save_load_roundtrip(tmp_path, code):
    path = tmp_path / "c.npz"
    gc.save_code(code, path)
    back = gc.load_code(path)
    assert type(back) is type(code)
    assert (back.name, back.family, back.field, back.m, back.n, back.k) == \
        (code.name, code.family, code.field, code.m, code.n, code.k)
    assert np.all(np.asarray(back.B == code.B))
    assert back.default_decoder == code.default_decoder
    assert getattr(back, "s", None) == getattr(code, "s", None)
    if isinstance(code, gc.ApproximateCode):
        assert list(back.straggle_probabilities) == list(code.straggle_probabilities)


def test_load_rejects_foreign_files(tmp_path):
    path = tmp_path / "foreign.npz"
    np.savez(path, x=np.zeros(3))
    with pytest.raises(gc.CodeFileError, match="not a gradcodes code file"):
        gc.load_code(path)


def test_load_keeps_the_saved_matrix_and_warns_on_any_change(tmp_path):
    # the family decoders are attached only to the matrix they were derived from: even a rounding-level change
    # keeps the saved B (bit for bit) with the generic decoders (it used to be replaced by the rebuild's B)
    code = gc.fractional_repetition(6, 1)
    path = tmp_path / "c.npz"
    gc.save_code(code, path)
    assert gc.load_code(path).default_decoder == "group"
    data = dict(np.load(path))
    for name, B in [("rounded", np.where(data["B"] != 0, np.nextafter(data["B"], np.inf), 0.0)),
                    ("edited", np.where(np.arange(6)[:, None] == 0, 2.0, data["B"]))]:
        np.savez(tmp_path / f"{name}.npz", **{**data, "B": B})
        with pytest.warns(RuntimeWarning, match="generic decoders only"):
            back = gc.load_code(tmp_path / f"{name}.npz")
        assert back.default_decoder == "nullspace"
        assert back.B.dtype == B.dtype and back.B.tobytes() == B.tobytes()
def test_a_closed_pipe_ends_the_command_quietly(monkeypatch, capsys):
    """``gradcodes ... | head`` printed "error: [Errno 32] Broken pipe" and exited 2."""
    import io

    from gradcodes import cli

    class Closed(io.StringIO):
        def write(self, s):
            raise BrokenPipeError(32, "Broken pipe")

    monkeypatch.setattr("sys.stdout", Closed())
    assert cli.main(["schemes"]) == 141
    assert capsys.readouterr().err == ""


def test_json_errors_are_json_on_stdout(capsys):
    """With ``--json`` an error was plain text only: a script parsing stdout got nothing."""
    import json

    from gradcodes import cli

    assert cli.main(["bound", "-n", "3", "-s", "5", "--json"]) == 2
    out, err = capsys.readouterr()
    doc = json.loads(out)
    assert doc["error"] == "GradcodesValueError" and "s must be an integer in [0, 2]" in doc["message"]
    assert "gradcodes: error: s must be" in err
    assert cli.main(["bound", "-n", "3", "-s", "5"]) == 2
    assert capsys.readouterr().out == ""


def test_recommend_subcommand(tmp_path, capsys):
    path = tmp_path / "rec.npz"
    assert main(["recommend", "-n", "13", "-s", "3", "-o", str(path)]) == 0      # proven to meet rtol: exit 0
    out = capsys.readouterr().out
    assert "-> ye_abbe (load 4" in out and "not considered: complex messages" in out and str(path) in out
    code = gc.load_code(path)
    assert code == gc.recommend(13, 3) and code.field == "real"
    assert main(["recommend", "-n", "13", "-s", "3", "--field", "any", "--json"]) == 0
    import json

    doc = json.loads(capsys.readouterr().out)
    assert doc["code"] == "cyclic_mds[complex]" and doc["recommendation"]["meets_rtol"] is True
    # a budget no code can meet within: the best is printed, and the exit status says it is not proven to meet rtol
    assert main(["recommend", "-n", "101", "-s", "9", "--max-load", "10", "--quick"]) == 1
    assert "no candidate within the budget" in capsys.readouterr().out
    assert main(["recommend", "-n", "10", "-s", "3", "--max-load", "3"]) == 2
    assert "max_load" in capsys.readouterr().err


def test_decode_subcommand(tmp_path, capsys):
    code = gc.fractional_repetition(6, 2)
    assert main(["decode", "fractional_repetition", "-n", "6", "-s", "2", "--responders", "0,3",
                 "--dtype", "float32", "--json"]) == 0
    import json

    doc = json.loads(capsys.readouterr().out)
    assert doc["decodable"] and doc["a"] == [[1.0, 1.0]] and doc["dtype"] == "float32"
    assert 0 < doc["error_estimate"] < 1e-6                               # float32's bound, not float64's
    assert main(["decode", "fractional_repetition", "-n", "6", "-s", "2", "--responders", "0,1"]) == 1
    assert "not decodable" in capsys.readouterr().out
    # messages from a file: the decoded sum equals the true sum of the partitions' gradients
    g = np.random.default_rng(1).standard_normal((6, 4))
    F = [1, 2, 4, 5]
    np.save(tmp_path / "y.npy", code.encode(g)[F])
    assert main(["decode", "fractional_repetition", "-n", "6", "-s", "2", "--responders", "1,2,4,5",
                 "--messages", str(tmp_path / "y.npy"), "-o", str(tmp_path / "sum.npy")]) == 0
    np.testing.assert_allclose(np.load(tmp_path / "sum.npy"), g.sum(axis=0), rtol=1e-13)
    # untrusted input: a pickled object array is refused, a wrong row count named
    np.save(tmp_path / "obj.npy", np.array([object()] * 4, dtype=object), allow_pickle=True)
    assert main(["decode", "fractional_repetition", "-n", "6", "-s", "2", "--responders", "1,2,4,5",
                 "--messages", str(tmp_path / "obj.npy")]) == 2
    assert "cannot read the messages" in capsys.readouterr().err
    assert main(["decode", "fractional_repetition", "-n", "6", "-s", "2", "--responders", "1,2",
                 "--messages", str(tmp_path / "y.npy")]) == 2
    assert "one row per responder (2 rows)" in capsys.readouterr().err
    assert main(["decode", "fractional_repetition", "-n", "6", "-s", "2", "--responders", "a,b"]) == 2
    assert main(["decode", "fractional_repetition", "-n", "6", "-s", "2", "--responders", "0,9"]) == 2


def test_decode_output_needs_messages_and_dtype_must_match(tmp_path, capsys):
    """``decode -o x.npy`` without --messages wrote an array of zeros and said "wrote the decoded sum"; an explicit
    --dtype different from the messages' was silently replaced by theirs; --messages without -o threw the sum away."""
    code = gc.fractional_repetition(6, 2)
    base = ["decode", "fractional_repetition", "-n", "6", "-s", "2", "--responders", "1,2,4,5"]
    assert main([*base, "-o", str(tmp_path / "x.npy")]) == 2
    assert "without --messages there is no sum to save" in capsys.readouterr().err
    assert not (tmp_path / "x.npy").exists()
    g = np.random.default_rng(2).standard_normal((6, 8)).astype(np.float32)
    np.save(tmp_path / "y.npy", code.encode(g)[[1, 2, 4, 5]])
    assert main([*base, "--messages", str(tmp_path / "y.npy"), "--dtype", "float64"]) == 2
    assert "--dtype float64 but the messages are float32" in capsys.readouterr().err
    assert main([*base, "--messages", str(tmp_path / "y.npy")]) == 0
    out = capsys.readouterr().out
    assert "decoded sum: shape (8,), float32, [" in out and " ..." in out
    assert main([*base, "--messages", str(tmp_path / "y.npy"), "--json"]) == 0
    import json

    doc = json.loads(capsys.readouterr().out)
    assert doc["sum_shape"] == [8] and doc["dtype"] == "float32" and doc["approximate"] is False


def test_decode_says_when_the_code_is_approximate(tmp_path, capsys):
    """An expander code's decode (relative error bound 0.18) read "decodable", as for an exact code."""
    gc.save_code(gc.expander_code(10, 3, rng=0), tmp_path / "exp.npz")
    assert main(["decode", str(tmp_path / "exp.npz"), "--responders", "0,1,2,3,4,5,6,7"]) == 0
    out = capsys.readouterr().out
    assert "approximate decode (an estimate of the sum" in out and ": decodable" not in out
    assert main(["decode", str(tmp_path / "exp.npz"), "--responders", "0,1,2,3,4,5,6,7", "--json"]) == 0
    import json

    assert json.loads(capsys.readouterr().out)["approximate"] is True
