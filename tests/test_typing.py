"""Public signatures are typed precisely: the parameters whose type is known never say ``Any`` or ``object``.

``mypy gradcodes tests/typing_usage.py`` (CI) checks that the annotations are consistent and that a user's code
type-checks against them; this test checks that the public API does not fall back to ``Any`` where the type is
known (random state, responders, probabilities, dtypes, codes, matrices, data)."""

from __future__ import annotations

import inspect

import gradcodes as gc
import gradcodes.mpi as gm
import gradcodes.testing as gt

#: parameter names whose type is known; ``comm`` (mpi4py has no types) and JSON-like params are not listed
KNOWN = {"rng", "seed", "responders", "p", "straggle_probabilities", "dtype", "code", "B", "H", "partials",
         "messages", "G", "gradients", "field", "decoder", "delay", "nodes", "spacing", "schemes", "weights", "d",
         "mask", "row_sums"}


def _callables():
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


def test_known_parameters_are_not_typed_any():
    loose = []
    for qual, fn in _callables():
        try:
            params = inspect.signature(fn).parameters.values()
        except (TypeError, ValueError):
            continue
        for prm in params:
            ann = prm.annotation
            if prm.name in KNOWN and (ann is inspect.Parameter.empty or "Any" in str(ann) or str(ann) == "object"):
                loose.append(f"{qual}({prm.name}: {ann})")
    assert not loose, ("type these precisely (gradcodes._base.aliases has the aliases):\n"
                       + "\n".join(sorted(set(loose))))


def test_rng_is_typed_as_spec7_everywhere():
    for qual, fn in _callables():
        try:
            params = inspect.signature(fn).parameters
        except (TypeError, ValueError):
            continue
        if "rng" in params:
            assert str(params["rng"].annotation) == "RNGLike", qual


def test_typing_usage_passes_mypy_strict():
    """``mypy --strict`` accepts tests/typing_usage.py: public results have public, precise types (a recommended
    or loaded GradientCode is accepted where a GradientCode is expected). Errors inside gradcodes itself under
    --strict are the package's own matter (``mypy gradcodes`` runs with the project settings)."""
    import subprocess
    import sys
    from pathlib import Path

    import pytest

    pytest.importorskip("mypy")
    here = Path(__file__).resolve().parent
    usage = here / "typing_usage.py"
    cmd = [sys.executable, "-m", "mypy", "--strict", "--no-error-summary", "--cache-dir",
           str(here.parent / ".mypy_cache"), str(usage)]
    out = subprocess.run(cmd, capture_output=True, text=True, cwd=here.parent, timeout=600).stdout
    mine = [line for line in out.splitlines() if line.startswith(("tests/typing_usage.py", str(usage)))]
    assert not mine, "\n".join(mine)
