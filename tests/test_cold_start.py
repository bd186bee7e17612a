"""Cold start: ``import gradcodes`` loads none of the heavy optional or compiled packages (they are imported on
first use), so a short script pays only for what it uses. The time itself is measured by
benchmarks/speed/cold_start.py, not here (no timed unit tests)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import gradcodes

HEAVY = ("scipy", "numba", "llvmlite", "galois", "torch", "mpi4py", "hypothesis", "mpmath", "sympy")


def _loaded_after(code: str) -> set[str]:
    where = str(Path(gradcodes.__file__).resolve().parent.parent)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([where, os.environ.get("PYTHONPATH", "")]))
    probe = f"{code}\nimport sys\nprint(' '.join(sorted({{m.split('.')[0] for m in sys.modules}})))"
    out = subprocess.run([sys.executable, "-c", probe], env=env, capture_output=True, text=True, check=True)
    return set(out.stdout.split())


def test_import_gradcodes_loads_no_heavy_package():
    loaded = _loaded_after("import gradcodes")
    assert "gradcodes" in loaded and "numpy" in loaded
    assert not loaded & set(HEAVY), sorted(loaded & set(HEAVY))


def test_small_verify_needs_neither_scipy_nor_numba():
    # the first verify of a small code runs the numpy screen, not the compiled kernel (whose load costs more than
    # the whole verification), and the null-space basis comes from numpy's SVD
    loaded = _loaded_after("import gradcodes as gc\n"
                           "assert gc.verify(gc.cyclic_repetition(40, 4, rng=21), stop_on_failure=False)"
                           ".patterns_checked == 91390")
    assert not loaded & {"scipy", "numba", "llvmlite"}, sorted(loaded & {"scipy", "numba", "llvmlite"})
