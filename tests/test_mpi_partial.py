"""End-to-end tests of the partial-straggler runtime (several messages per worker and iteration) on real MPI jobs
spawned with the environment's own ``mpiexec`` (skipped only when there is none, as tests/test_mpi.py)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from test_mpi import MPIEXEC, _env, needs_mpi

HERE = os.path.dirname(os.path.abspath(__file__))
JOB = os.path.join(HERE, "mpi_partial_job.py")


def run_job(ranks: int, cfg: dict, timeout: float = 120) -> dict:
    cmd = [MPIEXEC, "-n", str(ranks), sys.executable, "-m", "mpi4py", JOB, json.dumps(cfg)]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=_env())
    assert proc.returncode == 0, f"job failed ({proc.returncode}):\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"
    for line in proc.stdout.splitlines():
        if line.startswith("RESULT "):
            return json.loads(line[7:])
    raise AssertionError(proc.stdout[-3000:])


@needs_mpi
@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_partial_straggler_message_is_used_and_decode_is_exact(dtype):
    """n = 4, s = 1 (two chunks per worker): worker 2 hangs, worker 3 takes 1.5 s per iteration. Chunk 3 is held
    by worker 2 (second) and worker 3 (first), so the master decodes from worker 3's *first* message (a partial
    straggler) at about 0.75 s instead of waiting for its whole load, as the classical protocol must."""
    res = run_job(5, {"n": 4, "s": 1, "p": 37, "iters": 3, "dtype": dtype, "slow": [3, 1.5], "hang": [2]})
    off = res["offsets"]
    assert res["order"][3] == [3, 0] and res["order"][2] == [2, 3]
    for used, arrived in zip(res["used"], res["arrived"], strict=True):
        assert off[3] + 0 in used                   # worker 3's first chunk
        assert off[3] + 1 not in used               # not its second
        assert arrived[2] == 0 and arrived[3] == 1  # the hung worker sent nothing; worker 3 one of two
    assert len(res["errors"]) == 3


@needs_mpi
def test_master_does_not_wait_for_the_partial_stragglers_whole_load():
    """Worker 3 needs 3 s per iteration (its first chunk done at 1.5 s): the master decodes long before 3 s, which
    a protocol waiting for whole loads (or a worker sending only at the end) cannot. The margin (1.2 s) is for
    loaded machines."""
    res = run_job(5, {"n": 4, "s": 1, "p": 16, "iters": 2, "slow": [3, 3.0], "hang": [2]})
    assert max(res["waits"]) < 2.7, res["waits"]


@needs_mpi
def test_communication_factor_two_with_a_hung_worker():
    """m = 2: every chunk needs two messages; each message has half the gradient's length."""
    res = run_job(6, {"n": 5, "s": 1, "m": 2, "p": 41, "iters": 4, "hang": [1]})
    for arrived in res["arrived"]:
        assert arrived[1] == 0
    assert len(res["errors"]) == 4


@needs_mpi
def test_nan_messages_are_named_not_decoded():
    """The partial-straggler master returned the NaN sum of NaN chunk messages as the gradient; now the decode's
    one finiteness check fails and the error names the senders of the non-finite messages it used."""
    res = run_job(4, {"n": 3, "s": 1, "m": 1, "p": 20, "iters": 2, "nan": True})
    assert res["kind"] == "NonFiniteMessageError" and res["nonfinite"]
    assert set(res["nonfinite"]) <= {0, 1, 2}


@needs_mpi
def test_deadline_returns_the_least_squares_estimate():
    """Two of four workers hang (more than s = 1): no iteration can decode exactly. With a deadline the master
    stops at it and returns the estimate from the chunk messages that arrived (workers 2 and 3 hold chunks 2, 3
    and 3, 0: chunk 1 is unknown, squared error m - c_1 = 1), equal to ``code.estimate`` of the same messages."""
    res = run_job(5, {"n": 4, "s": 1, "p": 23, "iters": 3, "hang": [0, 1], "deadline": 0.4})
    assert res["sq"] == [1, 1, 1]
    for arrived in res["arrived"]:
        assert arrived[0] == arrived[1] == 0 and arrived[2] == arrived[3] == 2
    assert max(res["errors"]) < 1e-12
    assert min(res["waits"]) > 0.3                  # it waited for the deadline (the hung workers never answer)
