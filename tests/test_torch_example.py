"""The worked example ``examples/torch_resnet_digits.py`` (a small ResNet with BatchNorm on the digits, issue 36),
run as its documentation says: ``torchrun --standalone --nproc-per-node 4 examples/torch_resnet_digits.py --quick``.

* the quick run (36 steps, float32, the earliest decodable set) reaches the accuracy the docs state (at least
  0.90), and every rank ends with the master's final parameters and BatchNorm statistics;
* a run killed with ``SIGKILL`` (every process of the job) at a random step and restarted with the same command
  ends bitwise equal to an uninterrupted run (float64, ``--policy all``);
* docs/torch.md's DDP script and gradcodes script differ by exactly the diff the page shows.

Skipped when torch or scikit-learn is not installed.
"""

from __future__ import annotations

import difflib
import os
import random
import re
import sys
from pathlib import Path

import _faults
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("sklearn")
ROOT = Path(__file__).resolve().parent.parent
EXAMPLE = ROOT / "examples" / "torch_resnet_digits.py"
RANKS = 4
QUICK_ACCURACY = 0.90          # the threshold docs/torch.md states for the quick run


def launch(*args: str, timeout: float = 240, kill_at: int | None = None) -> _faults.Run:
    """The example under torchrun (``RANKS`` processes); with ``kill_at``, every process of the job is killed
    (``SIGKILL``) once the master printed the evaluation of that step."""
    env = dict(os.environ, PYTHONPATH=str(ROOT), OMP_NUM_THREADS="1")
    cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node", str(RANKS),
           str(EXAMPLE), "--json", *args]
    if kill_at is None:
        return _faults.run_job(cmd, env=env, timeout=timeout, cwd=ROOT)
    return _faults.run_job(cmd, env=env, timeout=timeout, cwd=ROOT, on_result=_faults.kill_all,
                           when=f"step {kill_at}:")


def test_quick_run_reaches_the_stated_accuracy_and_every_rank_holds_the_final_model():
    run = launch("--quick")
    res = run.res
    assert run.status == 0 and res is not None, run.out[-3000:]
    assert res["steps"] == 36 and res["start"] == 0, res
    assert res["accuracy"] >= QUICK_ACCURACY, res
    # the evaluation callback ran every 6 steps on the master and the cosine schedule reached ~0 at the end
    assert [s for s, _ in res["history"]] == [6, 12, 18, 24, 30, 36], res["history"]
    assert res["lr"][0] == 0.2 and res["lr"][-1] < 1e-3, res["lr"]
    assert len(res["digests"]) == RANKS and len(set(res["digests"])) == 1, res["digests"]
    assert "on every rank: True" in run.out


def test_killed_at_a_random_step_and_restarted_with_the_same_command_ends_bitwise_as_uninterrupted(tmp_path):
    """float64 and ``--policy all`` (every step decodes the same responders, so two uninterrupted runs agree
    bitwise); a checkpoint every 6 steps; the whole job (torchrun and every rank) is SIGKILLed once the master has
    evaluated a random step in 7..24 (it goes on for a few steps before the kill lands), then the same command runs
    again and resumes from the last checkpoint."""
    common = ["--quick", "--dtype", "float64", "--policy", "all", "--eval-every", "1", "--checkpoint-every", "6"]
    ref = launch(*common, "--checkpoint", str(tmp_path / "ref.pt"), "--save", str(tmp_path / "ref_final.pt"))
    assert ref.status == 0 and ref.res is not None, ref.out[-3000:]
    assert ref.res["accuracy"] >= QUICK_ACCURACY, ref.res

    at = random.Random().randint(7, 24)
    cmd = [*common, "--checkpoint", str(tmp_path / "run.pt"), "--save", str(tmp_path / "final.pt")]
    killed = launch(*cmd, kill_at=at)
    assert killed.status == -9 and killed.res is None, (at, killed.status, killed.out[-3000:])
    saved = torch.load(tmp_path / "run.pt", weights_only=True)["step"]
    last = max(int(s) for s in re.findall(r"^step (\d+):", killed.out, flags=re.M))
    assert saved % 6 == 0 and 6 <= saved <= last < 36, (at, saved, last)
    assert not (tmp_path / "final.pt").exists()

    resumed = launch(*cmd)                                              # the same command
    res = resumed.res
    assert resumed.status == 0 and res is not None, (at, resumed.out[-3000:])
    assert res["start"] == saved and res["steps"] == 36 and res["lr"] == ref.res["lr"], (at, res)
    assert len(set(res["digests"])) == 1 and res["digests"][0] == ref.res["digests"][0], (at, res, ref.res)
    want = torch.load(tmp_path / "ref_final.pt", weights_only=True)
    got = torch.load(tmp_path / "final.pt", weights_only=True)
    assert want.keys() == got.keys() and all(torch.equal(got[k], want[k]) for k in want), \
        (at, {k: float((got[k].double() - want[k].double()).abs().max()) for k in want})


def _block(page: str, name: str) -> str:
    m = re.search(rf"```python\n(# {re.escape(name)}\n.*?)```", page, flags=re.S)
    assert m, f"docs/torch.md has no ```python block starting '# {name}'"
    return m.group(1)


def test_the_docs_diff_is_the_difference_between_the_ddp_and_the_gradcodes_scripts():
    page = (ROOT / "docs" / "torch.md").read_text(encoding="utf-8")
    ddp = _block(page, "train_ddp.py").splitlines()[1:]
    coded = _block(page, "train_coded.py").splitlines()[1:]
    m = re.search(r"```diff\n(.*?)```", page, flags=re.S)
    assert m, "docs/torch.md shows no ```diff block"
    shown = [ln for ln in m.group(1).splitlines() if ln.startswith(("+", "-"))]
    want = [ln for ln in difflib.unified_diff(ddp, coded, lineterm="", n=0)
            if ln.startswith(("+", "-")) and not ln.startswith(("---", "+++"))]
    assert shown == want, "\n".join(want)
