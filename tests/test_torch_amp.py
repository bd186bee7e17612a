"""Mixed precision of gradcodes.torch.train (issue 36): autocast on the workers, the master's GradScaler, the inf
rule (an overflow message is an answer under a scaler, a straggler's without one) and its guard against a faulty
worker; real ``torchrun`` jobs of tests/torch_amp_job.py (n = 3 workers, Gloo), each against single-process
training over the same global batches. Skipped when torch is not installed.
"""

from __future__ import annotations

import re
from typing import Any

import pytest

pytest.importorskip("torch")
from test_torch import ROOT, _errors, run_job  # noqa: E402 - after the importorskip

AMP_JOB = ROOT / "tests" / "torch_amp_job.py"
#: 2**40: float16 autocast overflows for the first 20 steps (the scale halves each time)
HUGE = {"init_scale": 2.0 ** 40, "growth_interval": 4}
#: training samples set to 1e5, which float16 cannot hold: every global batch holding one overflows at any scale
POISON = [5, 700]

AMP = [
    # fractional_repetition(3, 2): every worker computes the whole batch, the float16 operations of single-process
    # AMP; cyclic_repetition(3, 1): per-partition messages (non-0/1 coefficients), another summation order
    {"name": "overflow_frac", "code": "frac", "autocast": "float16", "scaler": HUGE, "poison": POISON, "iters": 30},
    {"name": "overflow_cyclic", "autocast": "float16", "scaler": HUGE, "poison": POISON, "iters": 30},
    {"name": "accuracy", "model": "cnn", "autocast": "float16", "scaler": {}, "iters": 100, "evaluate": True},
    {"name": "bf16_autocast", "autocast": "bfloat16", "iters": 12},
]


def _amp_job(scenarios: list[dict], timeout: float = 300) -> Any:
    return run_job(scenarios, timeout=timeout, job=AMP_JOB)


@pytest.fixture(scope="module")
def amp_job():
    return _amp_job(AMP)


def _result(job: Any, name: str) -> dict:
    proc, res, _ = job
    assert name in res, _errors(proc.stderr) or proc.stdout[-3000:]
    return res[name]


def test_huge_initial_scale_skips_exactly_the_steps_single_process_amp_skips(amp_job):
    """Initial scale 2**40 (float16 overflows until the scale is about 2**20) and two poisoned samples (their
    batches overflow at any scale): the scaler skips the same steps with the same scales as single-process AMP with
    the same GradScaler. Before: an overflow message was a faulty worker's (dropped; with every holder of the
    partition overflowing, StragglerTimeout).

    fractional_repetition(3, 2) runs single-process AMP's float16 operations on every worker: bitwise the same
    parameters. cyclic_repetition(3, 1) backpropagates each partition of 40 samples on its own: float16 rounds other
    sums (unit roundoff 2**-11 = 4.9e-4 per rounding of the activations' gradients), so the parameters after the
    10 applied steps are close, not equal: within 1e-3 relative (2 float16 unit roundoffs; measured 2e-5). The
    steps skipped while the scale is far above the largest finite one, and the poisoned batches, overflow on both
    sides whatever the summation order; the boundary steps (the last overflows of each descent) agree on this data,
    which the per-partition sums do not guarantee in general."""
    for name, tol in (("overflow_frac", 0.0), ("overflow_cyclic", 1e-3)):
        r = _result(amp_job, name)
        assert r["overflow"] == r["overflow_ref"] and len(r["overflow"]) >= 20, r
        assert set(range(20)) <= set(r["overflow"]) and max(r["overflow"]) >= 20, r   # a poisoned batch later
        assert r["loss_scale"] == r["loss_scale_ref"] and r["loss_scale"][0] == 2.0 ** 40, r
        assert r["iterations"] == 30 and r["params_err"] <= tol, r
        assert r["nonfinite"] and r["bad"] == [], r          # the overflow messages were answers, not stragglers


def test_autocast_with_gradscaler_trains_the_cnn_to_single_process_amp_accuracy(amp_job):
    """The digits CNN, float16 autocast, the default GradScaler, 100 steps: test accuracy within 0.03 of
    single-process AMP's over the same batches. 0.03 is the spread of single-process AMP's own accuracy over the
    data orders of seeds 0-4 (0.949 to 0.976: benchmarks/runtime/torch_amp_noise.py); the trajectories part where
    a float16 sum overflows in one run and not the other (the boundary of the scale), so they are not compared
    step by step."""
    r = _result(amp_job, "accuracy")
    assert r["iterations"] == 100 and r["accuracy"][0] >= 0.93 and r["accuracy_ref"][0] >= 0.93, r
    assert abs(r["accuracy"][0] - r["accuracy_ref"][0]) <= 0.03, r


def test_bfloat16_autocast_without_a_scaler(amp_job):
    """bfloat16 autocast (no scaler: bfloat16 has float32's range): per-partition bfloat16 roundings (unit
    roundoff 2**-8) against the whole batch's; no step skipped, no scale recorded."""
    r = _result(amp_job, "bf16_autocast")
    assert r["iterations"] == 12 and r["overflow"] == [] and r["loss_scale"] == [], r
    assert r["params_err"] <= 2.0 ** -8, r


def test_a_worker_always_sending_nan_under_a_scaler_ends_the_run_naming_it():
    """Worker 2 (rank 3) sends NaN every step. Under a scaler its messages are overflow signals (answers), so the
    steps it answers in are skipped and the scale halves each time; at a scale of 1 (16 halvings from the default
    2**16) no scale can make the gradient finite, and the master raises naming rank 3, well within the 60 s
    straggler timeout."""
    proc, res, wall = _amp_job([{"name": "nan", "autocast": "float16", "scaler": {}, "fault": "nan", "iters": 400,
                              "timeout": 60.0}])
    assert "nan" not in res and proc.returncode != 0
    m = re.search(r"GradcodesRuntimeError: gradcodes.torch.train: step (\d+): the decoded gradient is not finite at "
                  r"loss scale 1 .* Non-finite messages in the (\d+) overflow steps of the (\d+) steps of this "
                  r"process: rank 3 in (\d+)\.", proc.stderr)
    assert m, _errors(proc.stderr)
    step, overflows, steps, rank3 = map(int, m.groups())
    assert overflows == rank3 == 17 and steps == step + 1, m.groups()
    assert wall < 60, wall
