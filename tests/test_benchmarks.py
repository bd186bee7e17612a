"""Every script in benchmarks/ runs in its smoke mode (``--smoke``: tiny sizes, seconds, no output files), so a
benchmark broken by a library change fails the test suite instead of rotting until its next full run.

Each script runs in a subprocess from a copy of benchmarks/ (anything a script writes lands in the copy, never in
the committed results) against the gradcodes this session imports. Scripts that need optional packages (scikit-learn,
matplotlib, mpi4py) skip those parts with a message and still exit 0.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
BENCHMARKS = ROOT / "benchmarks"
SCRIPTS = sorted(p.name for p in BENCHMARKS.glob("*.py"))


@pytest.fixture(scope="module")
def bench_copy(tmp_path_factory: pytest.TempPathFactory) -> Path:
    dest = tmp_path_factory.mktemp("bench") / "benchmarks"
    shutil.copytree(BENCHMARKS, dest, ignore=shutil.ignore_patterns("__pycache__", "*.png"))
    return dest


def test_every_script_is_covered():
    assert len(SCRIPTS) >= 15 and {"coded_reduce.py", "expander_graphs.py"} <= set(SCRIPTS)


@pytest.mark.parametrize("script", SCRIPTS)
def test_benchmark_smoke(script: str, bench_copy: Path) -> None:
    # the gradcodes this test session imports: the checkout, or the installed wheel when run from the sdist
    import gradcodes

    where = str(Path(gradcodes.__file__).resolve().parent.parent)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([where, os.environ.get("PYTHONPATH", "")]),
               MPLBACKEND="Agg", OMP_NUM_THREADS="1")
    res = subprocess.run([sys.executable, str(bench_copy / script), "--smoke"], cwd=bench_copy.parent, env=env,
                         capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, f"{script} --smoke exited {res.returncode}\n{res.stdout[-3000:]}\n{res.stderr[-3000:]}"
    assert "Traceback" not in res.stderr, res.stderr[-3000:]
