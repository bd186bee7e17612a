"""The exception hierarchy: every error gradcodes raises is a ``gradcodes.GradcodesError`` and keeps the builtin
base callers caught before (ValueError, TypeError, RuntimeError); NaN messages raise a DecodingError."""

from __future__ import annotations

import ast
import pickle
from pathlib import Path

import numpy as np
import pytest

import gradcodes as gc
from gradcodes._base import validate as _validate

ROOT = Path(gc.__file__).resolve().parent


@pytest.mark.parametrize(("exc", "builtin"), [
    (gc.GradcodesValueError, ValueError), (gc.GradcodesTypeError, TypeError),
    (gc.GradcodesRuntimeError, RuntimeError), (gc.DecodingError, ValueError),
    (gc.NonFiniteMessageError, ValueError), (gc.CodeFileError, ValueError), (gc.SizeLimitError, ValueError),
])
def test_every_error_has_the_common_base_and_its_builtin_base(exc, builtin):
    assert issubclass(exc, gc.GradcodesError) and issubclass(exc, builtin)


def test_every_exported_exception_is_a_gradcodes_error():
    exported = [getattr(gc, name) for name in gc.__all__]
    errors = [e for e in exported if isinstance(e, type) and issubclass(e, BaseException)
              and not issubclass(e, Warning)]
    assert len(errors) >= 8
    assert all(issubclass(e, gc.GradcodesError) for e in errors), [e for e in errors
                                                                   if not issubclass(e, gc.GradcodesError)]


def test_straggler_timeout_is_a_gradcodes_runtime_error():
    from gradcodes._runtime.engine import StragglerTimeout

    err = StragglerTimeout("late", missing=[1])
    assert isinstance(err, gc.GradcodesError) and isinstance(err, RuntimeError) and err.missing == [1]


@pytest.mark.parametrize(("call", "builtin"), [
    (lambda: _validate.check_int("n", 2.5), TypeError),
    (lambda: _validate.check_int("n", -1, 0), ValueError),
    (lambda: _validate.check_real("rtol", float("nan"), 0), ValueError),
    (lambda: _validate.check_choice("rows", "x", ["full"]), ValueError),
    (lambda: _validate.check_responders([0, 0], 3), ValueError),
    (lambda: _validate.check_rng(-1), ValueError),
    (lambda: _validate.check_rng("seed"), TypeError),
    (lambda: gc.cyclic_repetition(4, 4), ValueError),
    (lambda: gc.cyclic_repetition(4.0, 1), TypeError),
    (lambda: gc.fractional_repetition(6, 2).decode([0], np.ones((6, 2))), ValueError),
    (lambda: gc.verify("not a code"), TypeError),
    (lambda: gc.load_code(ROOT / "__init__.py"), ValueError),
])
def test_argument_errors_are_catchable_as_gradcodes_error(call, builtin):
    with pytest.raises(gc.GradcodesError) as info:
        call()
    assert isinstance(info.value, builtin)


def test_nan_messages_raise_a_decoding_error_naming_the_responders():
    code = gc.cyclic_repetition(6, 2, rng=0)
    Y = code.encode(np.random.default_rng(1).normal(size=(6, 4)))
    Y[3, 1] = np.nan
    with pytest.raises(gc.DecodingError) as info:
        code.decode([0, 1, 3, 4], Y)
    assert type(info.value) is gc.NonFiniteMessageError and info.value.responders == [3]
    Y[3, 1] = np.inf
    with pytest.raises(gc.NonFiniteMessageError):
        code.decode([0, 1, 3, 4], Y)


def test_nan_messages_in_a_tree_execute_raise_a_decoding_error():
    code = gc.coded_reduce(3, 2, 1)
    Y = code.encode(np.ones((code.k, 2)))
    Y[:, 0] = np.nan
    with pytest.raises(gc.NonFiniteMessageError) as info:
        code.execute(range(code.n), Y)
    assert info.value.responders


def test_decoding_errors_pickle_with_their_fields():
    err = gc.NonFiniteMessageError("bad messages", [2, 5], 0.5)
    back = pickle.loads(pickle.dumps(err))
    assert type(back) is gc.NonFiniteMessageError and back.responders == [2, 5] and back.residual == 0.5
    assert str(back) == "bad messages"


def _builtin_raises(path: Path) -> list[str]:
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Raise) and isinstance(node.exc, ast.Call) and isinstance(node.exc.func, ast.Name):
            if node.exc.func.id in {"ValueError", "TypeError", "RuntimeError"}:
                found.append(f"{path.relative_to(ROOT)}:{node.lineno} {node.exc.func.id}")
    return found


def test_the_library_raises_no_bare_builtin_errors():
    # every module, the simulator and the runtimes included, raises gradcodes' errors
    files = list(ROOT.rglob("*.py"))
    assert len(files) > 40
    bad = [hit for p in files for hit in _builtin_raises(p)]
    assert not bad, bad


_PRIVATE = r"gradcodes\.(?:\w+\.)*_\w+"


def _message_strings(path: Path) -> list[tuple[int, str]]:
    """The string literals of a module that are not docstrings: what it can print, raise, log or put in a report."""
    import re

    tree = ast.parse(path.read_text(encoding="utf-8"))
    docstrings = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                docstrings.add(id(first.value))
    return [(node.lineno, node.value) for node in ast.walk(tree)
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docstrings
            and re.search(_PRIVATE, node.value)]


def test_no_message_names_a_private_module():
    """Reports, notes and errors named private modules ("... (gradcodes._core.numerics.error_bounds)", "theorem in
    gradcodes._verify.blocks") that a user cannot import or look up in the API reference: every string the package
    can show names public objects only (docstrings of private modules may name their neighbours)."""
    bad = [f"{p.relative_to(ROOT.parent)}:{line}: {text[:80]!r}"
           for p in sorted(ROOT.rglob("*.py")) for line, text in _message_strings(p)]
    assert not bad, bad


def test_message_scan_finds_a_private_name(tmp_path):
    path = tmp_path / "m.py"
    path.write_text('"""Doc naming gradcodes._core.x is fine."""\n'
                    'def f():\n    """So is gradcodes._verify.y here."""\n'
                    '    raise ValueError(f"bad {1} (gradcodes._verify.cost)")\n', encoding="utf-8")
    assert [line for line, _ in _message_strings(path)] == [4]


def test_borderline_note_names_public_objects():
    code = gc.cyclic_repetition(12, 2, rng=0)
    from gradcodes._verify.verifier import borderline_note

    class _Model:
        noun = "straggler sets"

    class _Tracker:
        n_borderline, model, rtol, dtype, borderline = 3, _Model(), 1e-8, np.dtype(np.float64), [(0, 1)]

    note = borderline_note(_Tracker())  # type: ignore[arg-type]
    assert "GradientCode.error_estimate" in note and "gradcodes._" not in note
    assert hasattr(code, "error_estimate")


def test_errors_show_their_public_names():
    """Tracebacks and reprs named private modules (``gradcodes._errors.GradcodesValueError``): every error class now
    reports the public module it is imported from, and pickles under it."""
    import importlib
    import pickle

    names = ["GradcodesError", "GradcodesValueError", "GradcodesTypeError", "GradcodesRuntimeError", "DecodingError",
             "NonFiniteMessageError", "CodeFileError", "SizeLimitError"]
    for name in names:
        cls = getattr(gc, name)
        assert cls.__module__ == "gradcodes" and str(cls) == f"<class 'gradcodes.{name}'>"
    from gradcodes.mpi import StragglerTimeout

    assert StragglerTimeout.__module__ == "gradcodes.mpi"
    assert importlib.import_module(StragglerTimeout.__module__).StragglerTimeout is StragglerTimeout
    err = pickle.loads(pickle.dumps(StragglerTimeout("late", missing=[2], bad=[3])))
    assert type(err) is StragglerTimeout and (err.missing, err.bad) == ([2], [3])
