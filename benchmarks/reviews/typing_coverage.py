"""Typing coverage of the public API: parameters and returns typed ``Any``, ``object`` or unannotated.

Over ``gradcodes.__all__``, ``gradcodes.testing`` and ``gradcodes.mpi`` (for classes: ``__init__`` and the public
methods along the MRO inside gradcodes, so ``LinearCode``'s methods in its private mixins count). Prints each loose
annotation and the count. To compare with an earlier version::

    git worktree add /tmp/old REV && PYTHONPATH=/tmp/old python benchmarks/reviews/typing_coverage.py
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Iterator

import gradcodes as gc
import gradcodes.mpi as gm
import gradcodes.testing as gt


def public_callables() -> Iterator[tuple[str, Callable[..., object]]]:
    for mod in (gc, gt, gm):
        for name in mod.__all__:
            obj = getattr(mod, name)
            if inspect.isclass(obj):
                for klass in obj.__mro__:
                    if not klass.__module__.startswith("gradcodes"):
                        continue
                    for meth, fn in vars(klass).items():
                        if callable(fn) and (meth == "__init__" or not meth.startswith("_")):
                            yield f"{mod.__name__}.{name}.{meth}", fn
            elif callable(obj):
                yield f"{mod.__name__}.{name}", obj


def loose_annotations() -> list[str]:
    rows = set()
    for qual, fn in public_callables():
        try:
            sig = inspect.signature(fn)
        except (TypeError, ValueError):
            continue
        for prm in sig.parameters.values():
            if prm.name in ("self", "cls") or prm.kind in (prm.VAR_KEYWORD, prm.VAR_POSITIONAL):
                continue
            ann = prm.annotation
            if ann is inspect.Parameter.empty or "Any" in str(ann) or str(ann) == "object":
                rows.add(f"{qual}({prm.name}: {ann})")
        ret = sig.return_annotation
        if ret is inspect.Signature.empty or "Any" in str(ret):
            rows.add(f"{qual} -> {ret}")
    return sorted(rows)


def main() -> None:
    import argparse

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--smoke", action="store_true", help="the same run (it takes about a second)")
    ap.parse_args()
    rows = loose_annotations()
    print("\n".join(rows))
    print(f"{len(rows)} public parameters/returns typed Any, object or unannotated")


if __name__ == "__main__":
    main()
