"""End-to-end tests of ``gradcodes.mpi.allreduce_train``, the data-parallel baseline as users run it
(``Allreduce`` among the workers, a local step on every worker, the master only observing), on real MPI jobs
spawned with the environment's own ``mpiexec`` (skipped only when there is none, as tests/test_mpi.py)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

import pytest
from test_mpi import MPIEXEC, _env, needs_mpi

HERE = os.path.dirname(os.path.abspath(__file__))
JOB = os.path.join(HERE, "mpi_allreduce_job.py")
RANKS = 4                                            # the master and 3 workers


def run_job(cfg: dict, *, ok: bool = True, timeout: float = 120) -> tuple[subprocess.CompletedProcess, dict | None,
                                                                           float]:
    cmd = [MPIEXEC, "-n", str(RANKS), sys.executable, "-m", "mpi4py", JOB, json.dumps(cfg)]
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=_env())
    wall = time.perf_counter() - t0
    res = next((json.loads(line[7:]) for line in proc.stdout.splitlines() if line.startswith("RESULT ")), None)
    if ok:
        assert proc.returncode == 0, f"job failed ({proc.returncode}):\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"
        assert res is not None, proc.stdout[-3000:]
    return proc, res, wall


@needs_mpi
@pytest.mark.parametrize("cfg", [{}, {"functional": True}, {"blocking": False}],
                         ids=["blocking", "step-returns-new", "nonblocking"])
def test_allreduce_baseline_is_single_process_training_and_the_master_only_observes(cfg):
    """float64 least squares, 12 iterations: the final parameters and every iteration's loss equal training in one
    process to 1e-12; every worker ends with the master's parameters (bitwise); between its first and last
    iteration the master only posts receives of worker 1's records (no parameter send, no collective); every
    worker's Allreduce runs on the workers' communicator (3 ranks, not the 4 of the job), once per iteration."""
    iters = 12
    p = 400                                          # parameters: 3200 bytes; all records: 12 * 32 = 384 bytes
    slow = [{"kind": "fixed", "seconds": 0.01, "workers": [0, 1, 2]}]   # 10 ms iterations: a batch of records each
    _, res, _ = run_job({"iters": iters, "p": p, "delays": slow, **cfg})
    assert res["param_error"] <= 1e-12 and res["loss_error"] <= 1e-12
    assert res["iterations"] == iters and res["workers"] == RANKS - 1 and res["marks"] == iters
    assert res["times_positive"] and res["wait_le_time"]
    assert res["worker_sums"] == [res["master_sum"]] * (RANKS - 1)
    assert res["master_during"], "worker 1 sent every record in one message?"
    for name, nbytes, _size in res["master_during"]:
        assert name == "Irecv" and nbytes <= 32 * iters, (name, nbytes)
    setup = {"bcast", "Bcast", "Dup", "Split"}                       # once, before the first iteration
    for name, _nbytes, _size in res["master_all"]:
        assert name in setup | {"Irecv", "recv", "Free", "ITER"}, name
        assert name not in ("Isend", "Send", "send") and "llreduce" not in name
    big = [e for e in res["master_all"] if e[1] >= p * 8]
    assert [e[0] for e in big] == ["Bcast", "Irecv"]                 # the initial and the final parameters
    for calls in res["worker_allreduce"]:
        assert len(calls) == iters
        assert all(size == RANKS - 1 for _, _, size in calls)


@needs_mpi
def test_allreduce_baseline_nonblocking_names_the_hung_worker():
    """``blocking=False`` with worker 1 (rank 2) hung from the first iteration: the master raises
    StragglerTimeout after ``timeout`` naming rank 2, and the job ends (python -m mpi4py aborts it)."""
    proc, res, wall = run_job({"iters": 5, "blocking": False, "timeout": 2.0,
                               "delays": [{"kind": "hang", "workers": [1]}]}, ok=False)
    out = proc.stdout + proc.stderr
    assert proc.returncode != 0 and res is None
    assert "StragglerTimeout" in out and "ranks [2] did not finish their gradient" in out, out[-3000:]
    assert wall < 60


@needs_mpi
def test_allreduce_baseline_with_a_late_worker_waits_for_it():
    """A collective cannot skip a straggler: with worker 2 late 0.2 s in every iteration, every iteration takes at
    least about 0.2 s on worker 1's clock, most of it inside Allreduce (the recorded ``wait``)."""
    _, res, _ = run_job({"iters": 4, "delays": [{"kind": "fixed", "seconds": 0.2, "workers": [2]}]})
    assert min(res["times"]) >= 0.18 and min(res["waits"]) >= 0.15     # clocks: workers leave Allreduce at once
