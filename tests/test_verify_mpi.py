"""gc.verify(code, comm=...) on real MPI jobs: every rank's report equals the one-core report (exact merge),
including failing codes (with and without stop_on_failure), borderline codes, blocks, exact codes, decoders
without a screen and trees; and a checkpoint written by an MPI run resumes on one core to the same report."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from test_verify_scale import PANEL, REF_OPTIONS, REF_PANEL, fields, ref_fields

import gradcodes as gc
import gradcodes._verify.cost
import gradcodes._verify.parallel as P

HERE = os.path.dirname(os.path.abspath(__file__))
JOB = os.path.join(HERE, "mpi_verify_job.py")
MPIEXEC = next((c for c in (os.path.join(os.path.dirname(sys.executable), n) for n in ("mpiexec", "mpirun"))
                if os.path.exists(c)), None)
try:
    import mpi4py  # noqa: F401
except ImportError:
    MPIEXEC = None
pytestmark = pytest.mark.skipif(MPIEXEC is None, reason="no mpiexec/mpi4py in this environment: "
                                                        "pip install -e '.[test,mpi-local]'")


def _run(ranks: int, name: str, stop: bool, tmp: str, checkpoint: str | None = None) -> list[dict]:
    env = dict(os.environ, OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1",
               PYTHONPATH=os.pathsep.join([os.path.dirname(HERE), os.environ.get("PYTHONPATH", "")]))
    cmd = [MPIEXEC, "-n", str(ranks), sys.executable, "-m", "mpi4py", JOB, name, "1" if stop else "0", f"{tmp}/out"]
    proc = subprocess.run(cmd + ([checkpoint] if checkpoint else []), capture_output=True, text=True, timeout=240,
                          env=env)
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = []
    for r in range(ranks):
        with open(f"{tmp}/out.{r}") as f:
            out.append(json.load(f))
    return out


def _one_core(name: str, stop: bool) -> dict:
    if name in REF_PANEL:
        build, opts = REF_PANEL[name]
        got = ref_fields(gc.verify(build(), stop_on_failure=stop, workers=1, **{**REF_OPTIONS, **opts}))
    else:
        build, dtype = PANEL[name]
        got = fields(gc.verify(build(), dtype=dtype, stop_on_failure=stop, limit=10**6, workers=1))
    return json.loads(json.dumps(got))


@pytest.fixture
def small_grid(monkeypatch):
    monkeypatch.setattr(gradcodes._verify.cost, "_KERNEL_MIN_SETS", 0)
    monkeypatch.setattr(P, "_FIRST", (96, 160))
    monkeypatch.setattr(P, "_CHUNK", 256)


@pytest.mark.parametrize("name,stop,ranks", [("fails (25, 5)", False, 3), ("fails (25, 5)", True, 2),
                                             ("failing", True, 3), ("borderline", False, 2), ("blocks", False, 2),
                                             ("good", False, 4), ("tree failing", True, 3),
                                             ("tree rational failing", False, 2), ("rational failing", True, 2),
                                             ("lstsq planted", False, 3), ("tree ok", False, 2),
                                             ("lstsq time budget", True, 2)])
def test_every_rank_reports_the_one_core_report(small_grid, tmp_path, name, stop, ranks):
    want = _one_core(name, stop)
    for got in _run(ranks, name, stop, str(tmp_path)):
        assert got == want


def test_an_mpi_checkpoint_resumes_on_one_core(small_grid, tmp_path):
    path = str(tmp_path / "mpi.ckpt")
    got = _run(2, "borderline", False, str(tmp_path), path)
    build, dtype = PANEL["borderline"]
    again = gc.verify(build(), dtype=dtype, stop_on_failure=False, limit=10**6, workers=1, checkpoint=path)
    assert json.loads(json.dumps(fields(again))) == got[0] == _one_core("borderline", False)


def test_an_mpi_tree_checkpoint_resumes_on_one_core(small_grid, tmp_path):
    path = str(tmp_path / "tree.ckpt")
    got = _run(2, "tree failing", False, str(tmp_path), path)
    build, _ = REF_PANEL["tree failing"]
    again = gc.verify(build(), stop_on_failure=False, workers=1, checkpoint=path, **REF_OPTIONS)
    assert json.loads(json.dumps(ref_fields(again))) == got[0] == _one_core("tree failing", False)


def test_a_bad_checkpoint_stops_every_rank_with_the_error(small_grid, tmp_path):
    path = tmp_path / "bad.ckpt"
    path.write_text("{not json")
    env = dict(os.environ, OMP_NUM_THREADS="1", PYTHONPATH=os.path.dirname(HERE))
    cmd = [MPIEXEC, "-n", "2", sys.executable, "-m", "mpi4py", JOB, "good", "0", f"{tmp_path}/out", str(path)]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=240, env=env)
    assert proc.returncode != 0 and proc.stderr.count("CheckpointError") >= 2, proc.stderr[-3000:]
