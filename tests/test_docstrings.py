"""Every public callable has its numpydoc sections: Parameters, Returns and Examples.

The walk covers the public functions of ``gradcodes``, ``gradcodes.mpi``, ``gradcodes.torch`` (when torch is
installed) and ``gradcodes.testing`` (when hypothesis is), the public classes there (their docstring documents the
constructor: Parameters when it takes any, and Examples), and the public methods of those classes (each function
once, under the first public class that has it). A function needs Parameters when it takes any argument besides
``self``/``cls``, Returns (or Yields) unless it is annotated to return None, Raises when its own body raises a
gradcodes error (``raise GradcodesValueError(...)``: bad input it checks), and Examples, parsed with
``numpydoc.docscrape`` as the docs build parses them. Deprecated aliases (their docstring starts "Deprecated alias")
and exceptions and warnings (raised by the library, not called by users) are exempt.

:data:`MISSING` is the explicit list of the gaps left, each with the sections it lacks: it may only shrink. The
test fails when a public callable lacks a section the list does not name (a new public function without them),
and when the list names a section the callable now has (remove the entry, so the list keeps shrinking).
"""

from __future__ import annotations

import importlib
import inspect
import re
from collections.abc import Callable, Iterator
from typing import Any

import pytest

numpydoc_docscrape = pytest.importorskip("numpydoc.docscrape")

MODULES = ["gradcodes", "gradcodes.mpi", "gradcodes.torch", "gradcodes.testing"]
OPTIONAL = {"gradcodes.torch": "torch", "gradcodes.testing": "hypothesis"}


def _modules() -> list[Any]:
    out = []
    for name in MODULES:
        if name in OPTIONAL:
            try:
                importlib.import_module(OPTIONAL[name])
            except ImportError:
                continue
        out.append(importlib.import_module(name))
    return out


def _unwrap(member: Any) -> Callable[..., Any] | None:
    if isinstance(member, (classmethod, staticmethod)):
        member = member.__func__
    return member if inspect.isfunction(member) else None


def public_callables() -> Iterator[tuple[str, str, Any]]:
    """``(qualified name, kind, object)``, kind ``"function"``, ``"class"`` or ``"method"``; each object once."""
    seen: set[int] = set()
    classes = []
    for mod in _modules():
        for name in mod.__all__:
            obj = getattr(mod, name)
            if id(obj) in seen:
                continue
            seen.add(id(obj))
            if inspect.isclass(obj):
                classes.append((f"{mod.__name__}.{name}", obj))
                yield f"{mod.__name__}.{name}", "class", obj
            elif callable(obj):
                yield f"{mod.__name__}.{name}", "function", obj
    for qual, cls in classes:
        for klass in cls.__mro__:
            if not klass.__module__.startswith("gradcodes"):
                continue
            for attr, member in vars(klass).items():
                fn = _unwrap(member)
                if attr.startswith("_") or fn is None or id(fn) in seen:
                    continue
                seen.add(id(fn))
                yield f"{qual}.{attr}", "method", fn


def _takes_arguments(fn: Any) -> bool:
    try:
        params = inspect.signature(fn).parameters.values()
    except (TypeError, ValueError):
        return False
    return any(p.name not in ("self", "cls") for p in params)


def _returns_none(fn: Any) -> bool:
    ann = inspect.signature(fn).return_annotation
    return ann is None or ann == "None"


def missing_sections(kind: str, obj: Any) -> set[str]:
    """The numpydoc sections ``obj`` lacks (empty for a deprecated alias)."""
    doc = inspect.getdoc(obj) or ""
    if doc.startswith("Deprecated alias") or (kind == "class" and issubclass(obj, BaseException)):
        return set()        # exceptions and warnings: raised by the library, documented by their docstring
    if kind == "class":
        parsed = numpydoc_docscrape.ClassDoc(obj, config={"show_class_members": False})
        init = obj.__init__ if "__init__" in vars(obj) or not hasattr(obj, "__dataclass_fields__") else None
        needs_params = _takes_arguments(init) if inspect.isfunction(init) else bool(
            getattr(obj, "__dataclass_fields__", None))
    else:
        parsed = numpydoc_docscrape.FunctionDoc(obj, config={})
        needs_params = _takes_arguments(obj)
    gaps = set()
    if needs_params and not (parsed["Parameters"] or parsed["Other Parameters"]
                             or (kind == "class" and parsed["Attributes"])):
        gaps.add("Parameters")
    if kind != "class" and not _returns_none(obj) and not (parsed["Returns"] or parsed["Yields"]):
        gaps.add("Returns")
    if not parsed["Examples"]:
        gaps.add("Examples")
    if kind != "class" and not parsed["Raises"] and _raises_directly(obj):
        gaps.add("Raises")
    return gaps


_RAISE = re.compile(r"^\s*raise (?:Gradcodes\w+|SizeLimitError|CodeFileError|DecodingError|CheckpointError)\b", re.M)


def _raises_directly(fn: Any) -> bool:
    """Whether the function's own body raises a gradcodes error (bad input it checks itself)."""
    try:
        source = inspect.getsource(inspect.unwrap(fn))
    except (OSError, TypeError):
        return False
    return bool(_RAISE.search(source))


# No gaps left: every public callable has its sections (the runtime methods' Examples show the job loop as a
# literal block, run as a real job by tests/test_docstring_jobs.py).
MISSING: dict[str, tuple[str, ...]] = {}

CALLABLES = list(public_callables())


def test_the_walk_reaches_functions_classes_and_methods() -> None:
    names = {q for q, _, _ in CALLABLES}
    assert {"gradcodes.verify", "gradcodes.GradientCode", "gradcodes.LinearCode.decode",
            "gradcodes.mpi.train", "gradcodes.testing.codes"} <= names
    assert len(CALLABLES) > 300


@pytest.mark.parametrize(("name", "kind", "obj"), CALLABLES, ids=[q for q, _, _ in CALLABLES])
def test_numpydoc_sections(name: str, kind: str, obj: Any) -> None:
    gaps = missing_sections(kind, obj)
    allowed = set(MISSING.get(name, ()))
    new = gaps - allowed
    assert not new, f"{name} ({kind}) has no {', '.join(sorted(new))} section in its docstring"
    stale = allowed - gaps
    assert not stale, f"{name} now has {', '.join(sorted(stale))}: remove that from MISSING in {__file__}"


def test_missing_names_only_public_callables() -> None:
    names = {q for q, _, _ in CALLABLES}
    loaded = {mod.__name__ for mod in _modules()}
    absent = tuple(f"{m}." for m in OPTIONAL if m not in loaded)    # entries of a module not installed here
    listed = {m for m in MISSING if not m.startswith(absent)}
    assert listed <= names, f"not public callables (remove them from MISSING): {sorted(listed - names)}"


def test_the_check_finds_a_gap() -> None:
    def undocumented(x: int) -> int:
        """One line only."""
        return x

    def documented(x: int) -> int:
        """Twice ``x``.

        Parameters
        ----------
        x : int

        Returns
        -------
        int

        Examples
        --------
        >>> documented(2)
        4
        """
        return 2 * x

    assert missing_sections("function", undocumented) == {"Parameters", "Returns", "Examples"}
    assert missing_sections("function", documented) == set()
