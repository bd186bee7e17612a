"""The package's layout: rooms by concern, no import circle between modules or rooms, no upward import.

The rooms and their order (lowest first) are written once, in the map at the top of ``docs/design.md`` (the table
between ``<!-- rooms -->`` and ``<!-- /rooms -->``); a room may import only the rooms above it in that table. The
import graph is read with :mod:`ast`: module-level and function-level (deferred) imports count, relative imports are
resolved, imports under ``if TYPE_CHECKING:`` do not count (they never run).
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterable
from pathlib import Path

import pytest

import gradcodes

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = Path(gradcodes.__file__).resolve().parent
DESIGN = ROOT / "docs" / "design.md"


# ------------------------------------------------------------------------------------------------------ the checker


def modules(package_dir: Path, name: str = "gradcodes") -> dict[str, tuple[Path, bool]]:
    """Every module of the package at ``package_dir``: dotted name -> (file, is a package's ``__init__``)."""
    out = {}
    for p in sorted(package_dir.rglob("*.py")):
        parts = [name, *p.relative_to(package_dir).with_suffix("").parts]
        is_pkg = parts[-1] == "__init__"
        if is_pkg:
            parts = parts[:-1]
        out[".".join(parts)] = (p, is_pkg)
    return out


def _type_checking_nodes(tree: ast.AST) -> set[int]:
    skip: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If):
            t = node.test
            if (isinstance(t, ast.Name) and t.id == "TYPE_CHECKING") or (
                    isinstance(t, ast.Attribute) and t.attr == "TYPE_CHECKING"):
                for child in node.body:
                    skip.update(id(n) for n in ast.walk(child))
    return skip


def import_graph(package_dir: Path, name: str = "gradcodes") -> dict[str, dict[str, int]]:
    """The package's import graph: module -> {imported module of the package: line of the first such import}.

    ``from X import y`` is an import of ``X.y`` when that is a module, of ``X`` otherwise; ``import X.Y`` of the
    longest module that the dotted name starts with. A module importing a package's submodule does not count as
    importing the package's ``__init__`` (Python runs it, but it is the package's own business)."""
    mods = modules(package_dir, name)

    def known(dotted: str) -> str | None:
        parts = dotted.split(".")
        while parts and ".".join(parts) not in mods:
            parts.pop()
        return ".".join(parts) if parts else None

    graph: dict[str, dict[str, int]] = {}
    for mod, (path, is_pkg) in mods.items():
        tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
        skip = _type_checking_nodes(tree)
        here = mod.split(".") if is_pkg else mod.split(".")[:-1]
        edges: dict[str, int] = {}
        for node in ast.walk(tree):
            if id(node) in skip:
                continue
            targets: list[str] = []
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                if node.level:
                    base = here[: len(here) - (node.level - 1)]
                    src = ".".join(base + ([node.module] if node.module else []))
                else:
                    src = node.module or ""
                targets = [f"{src}.{a.name}" if f"{src}.{a.name}" in mods else src for a in node.names]
            for t in targets:
                if t.split(".")[0] != name:
                    continue
                target = known(t)
                if target is not None and target != mod:
                    edges.setdefault(target, node.lineno)
        graph[mod] = edges
    return graph


def circles(graph: dict[str, Iterable[str]]) -> list[list[str]]:
    """The strongly connected components of more than one node (Tarjan), each sorted: every import circle."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    out: list[list[str]] = []
    counter = 0

    def visit(v: str) -> None:
        nonlocal counter
        index[v] = low[v] = counter
        counter += 1
        stack.append(v)
        on.add(v)
        for w in graph.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def read_rooms(text: str) -> list[tuple[str, list[str]]]:
    """The map's rooms, lowest first: (room, the module names it holds) from the table between the markers; the
    first cell names the room's modules in backticks (a package holds its submodules, except the root package)."""
    m = re.search(r"<!-- rooms -->(.*?)<!-- /rooms -->", text, re.S)
    assert m, "docs/design.md has no map of rooms (<!-- rooms --> ... <!-- /rooms -->)"
    rooms = []
    for line in m.group(1).splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) < 2 or not cells[0].startswith("`"):
            continue
        names = re.findall(r"`([\w.]+)`", cells[0])
        rooms.append((names[0], names))
    return rooms


def room_of(module: str, rooms: list[tuple[str, list[str]]], root: str = "gradcodes") -> str | None:
    best, best_len = None, -1
    for room, names in rooms:
        for n in names:
            if (module == n or (n != root and module.startswith(n + "."))) and len(n) > best_len:
                best, best_len = room, len(n)
    return best


def layout_problems(graph: dict[str, dict[str, int]], rooms: list[tuple[str, list[str]]]) -> list[str]:
    """Every breach of the layout: circles between modules, modules in no room, imports of a higher room (which
    also rules out circles between rooms)."""
    problems = [f"import circle between modules: {' <-> '.join(c)}" for c in circles(graph)]
    order = {room: i for i, (room, _) in enumerate(rooms)}
    for mod in sorted(graph):
        r = room_of(mod, rooms)
        if r is None:
            problems.append(f"{mod} is in no room of the map")
            continue
        for target, line in sorted(graph[mod].items()):
            t = room_of(target, rooms)
            if t is not None and order[t] > order[r]:
                problems.append(f"upward import: {mod} (room {r}) imports {target} (room {t}), line {line}")
    room_graph: dict[str, set[str]] = {}
    for mod, edges in graph.items():
        for target in edges:
            a, b = room_of(mod, rooms), room_of(target, rooms)
            if a is not None and b is not None and a != b:
                room_graph.setdefault(a, set()).add(b)
    problems += [f"import circle between rooms: {' <-> '.join(c)}" for c in circles(room_graph)]
    return problems


def rooms_of_design() -> list[tuple[str, list[str]]]:
    return read_rooms(DESIGN.read_text(encoding="utf-8"))


# ---------------------------------------------------------------------------------------------- the real package


def test_no_circle_no_upward_import():
    problems = layout_problems(import_graph(PACKAGE), rooms_of_design())
    assert not problems, "\n".join(problems)


def test_map_matches_packages():
    """Every room of the map exists as a package (or module) and every package directly under gradcodes/ is in it."""
    rooms = rooms_of_design()
    assert rooms[0][0] == "gradcodes._base"
    mods = modules(PACKAGE)
    listed = {n for _, names in rooms for n in names}
    for name in listed:
        assert name in mods, f"the map names {name}, which is not a module or package of gradcodes"
    packages = {f"gradcodes.{p.parent.name}" for p in PACKAGE.glob("*/__init__.py")}
    assert packages <= listed, f"packages missing from the map in docs/design.md: {sorted(packages - listed)}"
    for mod in mods:
        assert room_of(mod, rooms) is not None, f"{mod} is in no room"


def test_no_module_shadows_a_package():
    """No ``x.py`` beside a package ``x/`` (``gradcodes._verify`` is the package, not an old module)."""
    for init in PACKAGE.rglob("__init__.py"):
        assert not init.parent.with_suffix(".py").exists(), init.parent


def test_top_level_holds_only_the_public_modules():
    assert sorted(p.name for p in PACKAGE.glob("*.py")) == ["__init__.py", "__main__.py", "cli.py"]


# ------------------------------------------------------------------------------------------- the checker itself


def _write(root: Path, files: dict[str, str]) -> Path:
    for rel, text in files.items():
        p = root / "pkg" / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text)
    return root / "pkg"


SYNTHETIC_ROOMS = [("pkg.low", ["pkg.low"]), ("pkg.high", ["pkg.high"]), ("pkg", ["pkg"])]


def test_checker_accepts_a_clean_package(tmp_path):
    pkg = _write(tmp_path, {
        "__init__.py": "from .high.b import g\n",
        "low/__init__.py": "",
        "low/a.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from ..high.b import g\ndef f(): pass\n",
        "high/__init__.py": "",
        "high/b.py": "from ..low.a import f\ndef g():\n    from ..low import a\n    return a.f\n",
    })
    assert layout_problems(import_graph(pkg, "pkg"), SYNTHETIC_ROOMS) == []


def test_checker_fails_on_a_deferred_circle(tmp_path):
    """A circle closed by a function-level import (relative, two levels up) is found."""
    pkg = _write(tmp_path, {
        "__init__.py": "",
        "low/__init__.py": "",
        "low/a.py": "from .c import h\ndef f(): pass\n",
        "low/c.py": "def h():\n    from ..low.a import f\n    return f\n",
        "high/__init__.py": "",
    })
    problems = layout_problems(import_graph(pkg, "pkg"), SYNTHETIC_ROOMS)
    assert problems == ["import circle between modules: pkg.low.a <-> pkg.low.c"]


def test_checker_fails_on_an_upward_import_and_a_circle_between_rooms(tmp_path):
    pkg = _write(tmp_path, {
        "__init__.py": "",
        "low/__init__.py": "",
        "low/a.py": "import pkg.high.b\n",
        "high/__init__.py": "",
        "high/b.py": "from pkg.low import a\n",
    })
    problems = layout_problems(import_graph(pkg, "pkg"), SYNTHETIC_ROOMS)
    assert "upward import: pkg.low.a (room pkg.low) imports pkg.high.b (room pkg.high), line 1" in problems
    assert "import circle between rooms: pkg.high <-> pkg.low" in problems
    assert "import circle between modules: pkg.high.b <-> pkg.low.a" in problems


@pytest.mark.parametrize("edge", [("gradcodes._core.numerics", "gradcodes._core.code"),
                                  ("gradcodes._base.errors", "gradcodes._verify.verifier")])
def test_checker_fails_on_the_real_graph_with_one_injected_edge(edge):
    graph = import_graph(PACKAGE)
    rooms = rooms_of_design()
    assert layout_problems(graph, rooms) == []
    src, dst = edge
    graph[src][dst] = 1
    problems = layout_problems(graph, rooms)
    assert any(p.startswith("import circle between modules:") and src in p and dst in p for p in problems), problems
    if room_of(src, rooms) != room_of(dst, rooms):
        assert any(p.startswith(f"upward import: {src}") for p in problems), problems
