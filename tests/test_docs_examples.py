"""Every ```python block of every docs page (and the README) runs, in order, and prints what the page shows.

The convention (documented in docs/guide.md, "Examples on these pages are tested"):

* a page's ```python blocks run in order in one namespace per page (later blocks see earlier names);
* a block that starts with ``>>>`` is a doctest: each output line under a prompt is checked;
* a ```python block followed directly by a ```text block: the text block is what the python block prints,
  compared with doctest's checker (``...`` matches anything, whitespace is normalized, and numbers need to
  agree only to the precision written);
* a ```python block whose first line is a file name comment (``# train.py``) that the page launches with
  ``mpiexec -n N python -m mpi4py train.py`` is an MPI program: it is written to that file and launched so; one
  that the page launches with ``torchrun --nproc-per-node N train.py`` or ``python train.py`` (a script that
  starts its own processes) likewise;
* a ```console block is a terminal session of the ``gradcodes`` command: each ``$ gradcodes ...`` line runs (through
  ``gradcodes.cli.main``, exit status 0 expected unless the line ends ``# exit N``) and the lines under it, up to
  the next ``$``, are what it prints on stdout, compared like a text block;
* other fences (```bash, ```text not after python, bare ```) are not run.
"""

from __future__ import annotations

import contextlib
import doctest
import io
import os
import re
import subprocess
import sys
from pathlib import Path

import _faults
import pytest
from _pytest.doctest import _get_checker  # pytest's checker: the same NUMBER semantics as our doctests

ROOT = Path(__file__).resolve().parents[1]
PAGES = sorted((ROOT / "docs").glob("*.md")) + [ROOT / "README.md"]
FENCE = re.compile(r"^```([\w{}-]*)[^\n]*\n(.*?)^```[ \t]*$", re.S | re.M)
NUMBER = doctest.register_optionflag("NUMBER")   # returns pytest's flag (registration is idempotent)
FLAGS = doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE | NUMBER


def blocks(text: str) -> list[tuple[str, str, str | None, int]]:
    """``(kind, source, expected_output, line)`` for every python block; kind is "doctest" or "script"."""
    fences = [(m.group(1), m.group(2), m.start(), m.end()) for m in FENCE.finditer(text)]
    out = []
    for i, (lang, body, start, end) in enumerate(fences):
        if lang == "console":
            out.append(("console", body, None, text.count("\n", 0, start) + 1))
            continue
        if lang != "python":
            continue
        line = text.count("\n", 0, start) + 1
        if body.lstrip().startswith(">>>"):
            out.append(("doctest", body, None, line))
            continue
        first = body.lstrip().splitlines()[0] if body.strip() else ""
        named = re.fullmatch(r"#\s*([\w-]+\.py)", first.strip())
        if named and f"python -m mpi4py {named.group(1)}" in text:
            out.append(("mpi", body, None, line))
            continue
        if named and re.search(rf"torchrun (?:--standalone )?--nproc-per-node \d+ {re.escape(named.group(1))}", text):
            out.append(("torchrun", body, None, line))
            continue
        if named and re.search(rf"^python {re.escape(named.group(1))}$", text, flags=re.M):
            out.append(("python-file", body, None, line))
            continue
        expected = None
        if i + 1 < len(fences) and fences[i + 1][0] == "text" and text[end:fences[i + 1][2]].strip() == "":
            expected = fences[i + 1][1]
        out.append(("script", body, expected, line))
    return out


def run_page(path: Path) -> int:
    text = path.read_text(encoding="utf-8")
    ns: dict = {"__name__": f"docs_{path.stem}"}
    checker = _get_checker()
    found = blocks(text)
    for kind, src, expected, line in found:
        where = f"{path.name}:{line}"
        if kind == "doctest":
            test = doctest.DocTestParser().get_doctest(src, ns, where, str(path), line)
            runner = doctest.DocTestRunner(checker=checker, optionflags=FLAGS)
            report = io.StringIO()
            runner.run(test, out=report.write, clear_globs=False)
            assert runner.failures == 0, f"{where}: doctest failed\n{report.getvalue()}"
            continue
        if kind == "mpi":
            run_mpi_program(text, src, where)
            continue
        if kind == "console":
            run_console(src, where, checker)
            continue
        if kind == "torchrun":
            run_torchrun_program(text, src, where)
            continue
        if kind == "python-file":
            run_python_file(src, where)
            continue
        buf = io.StringIO()
        with contextlib.redirect_stdout(buf):
            exec(compile(src, where, "exec"), ns)
        if expected is not None:
            got = buf.getvalue()
            assert checker.check_output(expected, got, FLAGS), (
                f"{where}: printed output differs from the page\n--- page\n{expected}--- got\n{got}")
    return len(found)


def run_console(src: str, where: str, checker: doctest.OutputChecker) -> None:
    """Run each ``$ gradcodes ...`` command of a console block and compare its stdout with the lines under it."""
    import shlex

    from gradcodes.cli import main

    sessions: list[tuple[str, list[str]]] = []
    for line in src.splitlines():
        if line.startswith("$ "):
            sessions.append((line[2:], []))
        else:
            assert sessions, f"{where}: a console block must start with a '$ gradcodes ...' line"
            sessions[-1][1].append(line)
    assert sessions, f"{where}: an empty console block"
    for command, shown in sessions:
        status = 0
        if (m := re.search(r"\s+#\s*exit (\d+)\s*$", command)):
            status, command = int(m.group(1)), command[:m.start()]
        argv = shlex.split(command)
        assert argv[0] == "gradcodes", f"{where}: console blocks run the gradcodes command only, got {argv[0]!r}"
        buf = io.StringIO()
        with contextlib.redirect_stdout(buf), contextlib.redirect_stderr(io.StringIO()):
            got_status = main(argv[1:])
        assert got_status == status, f"{where}: `{command}` exited {got_status}, the page says {status}"
        expected, got = "\n".join(shown).strip() + "\n", buf.getvalue()
        assert checker.check_output(expected, got, FLAGS), (
            f"{where}: `{command}` printed other output than the page\n--- page\n{expected}--- got\n{got}")


def run_mpi_program(page: str, src: str, where: str) -> None:
    """Write the program to its file (in the current directory) and launch it as the page says."""
    name = src.lstrip().splitlines()[0].lstrip("#").strip()
    launch = re.search(rf"mpiexec -n (\d+) python -m mpi4py {re.escape(name)}", page)
    assert launch, f"{where}: the page never shows how {name} is launched (mpiexec -n N python -m mpi4py {name})"
    mpiexec = Path(sys.executable).with_name("mpiexec")
    if not mpiexec.exists():
        pytest.skip("no mpiexec next to the interpreter (pip install -e '.[mpi-local]')")
    Path(name).write_text(src, encoding="utf-8")
    env = dict(os.environ, OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1")
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), env.get("PYTHONPATH", "")])
    proc = subprocess.run([str(mpiexec), "-n", launch.group(1), sys.executable, "-m", "mpi4py", name],
                          capture_output=True, text=True, timeout=300, env=env)
    assert proc.returncode == 0, f"{where}: {name} failed under mpiexec\n{proc.stdout}\n{proc.stderr}"


def run_torchrun_program(page: str, src: str, where: str) -> None:
    """Write the program to its file and launch it with ``torchrun`` (Gloo on localhost) as the page says."""
    name = src.lstrip().splitlines()[0].lstrip("#").strip()
    launch = re.search(rf"torchrun (?:--standalone )?--nproc-per-node (\d+) {re.escape(name)}", page)
    assert launch, f"{where}: the page never shows how {name} is launched (torchrun --nproc-per-node N {name})"
    Path(name).write_text(src, encoding="utf-8")
    env = dict(os.environ, OMP_NUM_THREADS="1")
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), env.get("PYTHONPATH", "")])
    proc = subprocess.run([sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node",
                           launch.group(1), name],
                          capture_output=True, text=True, timeout=300, env=env)
    finished = "training accuracy" in proc.stdout or "training accuracy" not in src
    assert proc.returncode == 0 or (finished and _faults.torch_teardown_abort(proc.stdout + proc.stderr)), \
        f"{where}: {name} failed under torchrun\n{proc.stdout}\n{proc.stderr}"



def run_python_file(src: str, where: str) -> None:
    """Write the program to its file and run it with ``python`` as the page says (it starts its own processes)."""
    name = src.lstrip().splitlines()[0].lstrip("#").strip()
    Path(name).write_text(src, encoding="utf-8")
    env = dict(os.environ, OMP_NUM_THREADS="1")
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), env.get("PYTHONPATH", "")])
    proc = subprocess.run([sys.executable, name], capture_output=True, text=True, timeout=300, env=env)
    assert proc.returncode == 0, f"{where}: python {name} failed\n{proc.stdout}\n{proc.stderr}"


@pytest.mark.parametrize("path", PAGES, ids=[p.name for p in PAGES])
def test_page_examples_run_and_match(path, tmp_path, monkeypatch):
    if any("gradcodes.mpi" in src for _, src, _, _ in blocks(path.read_text(encoding="utf-8"))):
        pytest.importorskip("mpi4py")    # the `mpi-local` extra, installed by the CI test command
    if any("import torch" in src for _, src, _, _ in blocks(path.read_text(encoding="utf-8"))):
        pytest.importorskip("torch")     # the `torch` extra, installed by the CI test command
    monkeypatch.chdir(tmp_path)          # examples that write files write them here
    run_page(path)


def test_output_convention_is_enforced():
    """The checker fails a page whose shown output is wrong (mutation test of the collector itself)."""
    page = "```python\nprint(1 + 1)\n```\n\n```text\n3\n```\n"
    (kind, src, expected, _), = blocks(page)
    assert (kind, expected) == ("script", "3\n")
    assert not _get_checker().check_output(expected, "2\n", FLAGS)
    assert blocks("```python\n>>> 1 + 1\n2\n```\n")[0][0] == "doctest"
    checker = _get_checker()
    run_console("$ gradcodes bound -n 7 -s 2\nmin load = k(s+m)/n = 7*(2+1)/7 = 3\n", "page:1", checker)
    with pytest.raises(AssertionError, match="other output"):
        run_console("$ gradcodes bound -n 7 -s 2\nmin load = 4\n", "page:1", checker)
    with pytest.raises(AssertionError, match="exited 2"):
        run_console("$ gradcodes bound -n 7 -s 9\n", "page:1", checker)
    run_console("$ gradcodes bound -n 7 -s 9  # exit 2\n", "page:1", checker)
    launched = "```python\n# job.py\nprint(1)\n```\n\n```bash\npython job.py\n```\n"
    assert blocks(launched)[0][0] == "python-file"
    assert blocks(launched.replace("python job.py", "python -m mpi4py job.py"))[0][0] == "mpi"
    assert blocks(launched.replace("python job.py", "python other.py"))[0][0] == "script"


def _cells(row: str) -> int:
    return len(re.split(r"(?<!\\)\|", row.strip().strip("|")))


@pytest.mark.parametrize("path", PAGES, ids=[p.name for p in PAGES])
def test_markdown_tables_render(path):
    """Every table row has its header's cell count (an unescaped ``|`` in code splits a cell) and no blank line
    splits a table in two."""
    lines = path.read_text(encoding="utf-8").splitlines()
    fence, header, problems = False, None, []
    for i, line in enumerate(lines, 1):
        if line.startswith("```"):
            fence = not fence
        if fence or not line.startswith("|"):
            header = None
            continue
        if header is None:
            header = _cells(line)
            if i > 2 and not lines[i - 2].strip() and lines[i - 3].startswith("|"):
                problems.append(f"{path.name}:{i}: a blank line splits a table")
        elif _cells(line) != header:
            problems.append(f"{path.name}:{i}: {_cells(line)} cells, header has {header}")
    assert not problems, "\n".join(problems)


def test_users_pytest_file_passes(tmp_path):
    """The user's test file shown on docs/testing.md passes under pytest, as a user would run it."""
    import subprocess
    import sys

    src = next(s for _, s, _, _ in blocks((ROOT / "docs" / "testing.md").read_text(encoding="utf-8"))
               if s.startswith("# test_my_codes.py"))
    (tmp_path / "test_my_codes.py").write_text(src, encoding="utf-8")
    run = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "test_my_codes.py"],
                         cwd=tmp_path, capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stdout + run.stderr
    assert "2 passed" in run.stdout
