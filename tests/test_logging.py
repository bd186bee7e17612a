"""Diagnostics go through the ``gradcodes`` logger (or stderr right before a process ends itself); the library never
prints to stdout outside the command line and the jobs that print their tables."""

import ast
import logging
import pathlib

import gradcodes
from gradcodes._base.log import get_logger

ROOT = pathlib.Path(gradcodes.__file__).parent
#: modules whose job is to print results on stdout (the command line, the runtimes' benchmark jobs)
PRINTERS = {"cli.py", "_cli/tour.py", "_base/output.py", "_simulate/_cli.py", "mpi/_cli.py", "torch/_job.py"}


def _stdout_prints(path: pathlib.Path) -> list[int]:
    tree = ast.parse(path.read_text(), str(path))
    return [node.lineno for node in ast.walk(tree)
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "print"
            and not any(kw.arg == "file" for kw in node.keywords)]


def test_no_library_module_prints_to_stdout():
    # the torch runtime printed "children [...] did not finish" to stdout, mixed with the user's own output
    found = {}
    for path in sorted(ROOT.rglob("*.py")):
        rel = path.relative_to(ROOT).as_posix()
        if rel not in PRINTERS and (lines := _stdout_prints(path)):
            found[rel] = lines
    assert not found, f"print() to stdout outside the command line: {found}"


def test_loggers_are_children_of_gradcodes(caplog):
    log = get_logger("torch")
    assert log.name == "gradcodes.torch" and log.parent is logging.getLogger("gradcodes")
    assert not logging.getLogger("gradcodes").handlers        # the application decides where diagnostics go
    with caplog.at_level(logging.WARNING, logger="gradcodes"):
        log.warning("rank %d: children %s did not finish", 2, [5])
    assert caplog.records[-1].getMessage() == "rank 2: children [5] did not finish"
    for mod in ("gradcodes.torch._worker", "gradcodes.mpi._worker"):
        src = (ROOT / (mod.split(".", 1)[1].replace(".", "/") + ".py")).read_text()
        assert "get_logger(" in src and "_log.warning(" in src
