"""The job examples of the runtime docstrings run as real jobs, so they cannot rot.

The Examples of :class:`gradcodes.mpi.Master`, :class:`~gradcodes.mpi.Worker`, :class:`~gradcodes.mpi.PartialMaster`,
:class:`~gradcodes.mpi.PartialWorker`, :class:`gradcodes.torch.Master`, :class:`~gradcodes.torch.Worker`, their
methods, and :func:`gradcodes.torch.ddp_train` show what runs inside a live job as literal blocks (a doctest cannot
start ranks). ``tests/docstring_job.py`` reads those blocks from the docstrings on every rank and runs them: one
``mpiexec -n 5`` job for the MPI classes, one ``torchrun --nproc-per-node 4`` job for the torch ones (about 2 and
12 s on the 2-core test machine).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from docstring_job import literal_blocks, programs
from test_mpi import MPIEXEC, _env

import gradcodes.mpi as gm

ROOT = Path(__file__).resolve().parent.parent
JOB = ROOT / "tests" / "docstring_job.py"

MPI_PROGRAMS = {
    gm.Master: ["Master", "Master.broadcast", "Master.writable_params", "Master.aggregate", "Master.stop"],
    gm.Worker: ["Worker", "Worker.step", "Worker.run"],
    gm.PartialMaster: ["PartialMaster", "PartialMaster.broadcast", "PartialMaster.aggregate", "PartialMaster.stop"],
    gm.PartialWorker: ["PartialWorker", "PartialWorker.run"],
}
TORCH_PROGRAMS = {"Master": ["Master", "Master.broadcast", "Master.aggregate", "Master.stop"],
                  "Worker": ["Worker", "Worker.run"]}


def _ran(stdout: str) -> list[list[str]]:
    """Every rank's ``RAN [...]`` list (found anywhere: the ranks share one pipe)."""
    return [json.loads(found) for found in re.findall(r"RAN (\[[^\]]*\])", stdout)]


def test_the_extractor_finds_every_job_example() -> None:
    for cls, names in MPI_PROGRAMS.items():
        assert [name for name, _ in programs(cls)] == names
    source = dict(programs(gm.Master))["Master.stop"]
    assert "code = gc.cyclic_repetition(4, 1, rng=0)" in source          # the class's >>> lines define code
    assert source.rstrip().endswith("assert failures == master.failures")  # then the literal block, dedented
    assert literal_blocks("Intro.\n\nExamples\n--------\nRun it::\n\n    x = 1\n    y = 2\n\nAfter.\n") == \
        ["x = 1\ny = 2"]


def test_the_extractor_finds_every_torch_job_example() -> None:
    pytest.importorskip("torch")
    import gradcodes.torch as gt

    for cls in (gt.Master, gt.Worker):
        assert [name for name, _ in programs(cls)] == TORCH_PROGRAMS[cls.__name__]
    assert literal_blocks(gt.ddp_train.__doc__ or "")


@pytest.mark.skipif(MPIEXEC is None, reason="no mpiexec/mpi4py in this environment: pip install -e '.[test,mpi-local]'")
def test_mpi_docstring_examples_run_as_a_five_rank_job() -> None:
    cmd = [MPIEXEC, "-n", "5", sys.executable, "-m", "mpi4py", str(JOB), "mpi"]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=120, env=_env(), cwd=ROOT)
    assert proc.returncode == 0, f"{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"
    ran = _ran(proc.stdout)
    assert len(ran) == 5, proc.stdout[-3000:]
    done = {name for names in ran for name in names}
    assert done == {name for names in MPI_PROGRAMS.values() for name in names}


def test_torch_docstring_examples_run_as_a_four_rank_job() -> None:
    pytest.importorskip("torch")
    env = dict(os.environ, PYTHONPATH=str(ROOT), OMP_NUM_THREADS="1")
    cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node", "4", str(JOB), "torch"]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=180, env=env, cwd=ROOT)
    assert proc.returncode == 0, f"{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"
    ran = _ran(proc.stdout)
    assert len(ran) == 4, proc.stdout[-3000:]
    done = {name for names in ran for name in names}
    assert done == {name for names in TORCH_PROGRAMS.values() for name in names} | {"ddp_train"}
    assert "DDP allreduce 5" in proc.stdout                 # rank 1's result of the ddp_train example
