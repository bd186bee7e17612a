"""The DDP baseline's evaluation does not hide a late rank's delay (it overlapped it: rank 1 evaluated while rank 2
slept, and rank 1's next recorded step was shorter by the evaluation's duration)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("torch")

ROOT = Path(__file__).resolve().parents[1]


def test_every_ddp_step_waits_for_the_late_rank_after_an_evaluation():
    env = dict(os.environ, PYTHONPATH=str(ROOT), OMP_NUM_THREADS="1")
    cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node", "3",
           str(ROOT / "tests" / "torch_ddp_eval_job.py")]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=180, env=env, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr[-3000:]
    times = json.loads(next(ln for ln in proc.stdout.splitlines() if ln.startswith("TIMES "))[6:])
    # rank 2 sleeps 0.4 s in every step after the barrier, so every step of rank 1 waits for it: a lower bound that
    # load cannot break (without the barrier, steps 1-3 took about 0.0 s: the 0.4 s evaluation had covered it)
    assert len(times) == 4 and min(times) >= 0.3, times
