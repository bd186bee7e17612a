"""Mixed precision of gradcodes.torch.train (issue 36): autocast on the workers, the master's GradScaler, the inf
rule (an overflow message is an answer under a scaler, a straggler's without one) and its guard against a faulty
worker; gradient accumulation (``accumulate_grad_batches``); messages staged through host memory as for CUDA
parameters (forced on the CPU); real ``torchrun`` jobs of tests/torch_amp_job.py (n = 3
workers, Gloo), each against single-process training over the same global batches. Skipped when torch is not
installed.
"""

from __future__ import annotations

import re
from typing import Any

import pytest

torch = pytest.importorskip("torch")
from test_torch import ROOT, _errors, run_job, run_resume_job  # noqa: E402 - after the importorskip

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
    # gradient accumulation, float64: 5 batches per step cross the epoch boundaries (12 batches) mid-step
    {"name": "accumulate_cyclic", "dtype": "float64", "accumulate": 5, "iters": 7, "sched": "epoch"},
    {"name": "accumulate_ye_abbe", "code": "ye_abbe", "dtype": "float64", "accumulate": 3, "iters": 6},
    # float16 and bfloat16 parameters (no autocast): the linear model, batches of 12, no single-process run
    {"name": "float16_3000", "dtype": "float16", "code": "frac", "model": "linear", "iters": 3000, "batch": 12,
     "lr": 0.01, "noref": True},
    {"name": "bfloat16_300", "dtype": "bfloat16", "model": "linear", "iters": 300, "batch": 12, "lr": 0.01,
     "noref": True},
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


def test_overflow_messages_are_answers_through_a_codedreduce_tree():
    """coded_reduce(2, 2, 1) on 7 ranks, float16 autocast, initial scale 2**40, poisoned samples: the inner parents
    take their children's overflow messages as answers too (their sums are then not finite), so the master skips
    every step of the initial descent and every poisoned step, and its scales follow GradScaler's rule on its own
    skipped steps (halve at an overflow, double after 4 finite steps). The boundary steps of the scale differ from
    single-process AMP's (per-partition float16 sums over 20 samples), so they are not compared with it."""
    proc, res, _ = run_job([{"name": "tree", "code": "tree", "autocast": "float16", "scaler": HUGE,
                             "poison": POISON, "iters": 26}], ranks=7, job=AMP_JOB)
    r = _result((proc, res, 0), "tree")
    assert r["iterations"] == 26 and set(range(20)) | set(r["poisoned"]) <= set(r["overflow"]), r
    assert r["poisoned"] and max(r["poisoned"]) >= 20, r
    scale, good = 2.0 ** 40, 0
    for t, s in enumerate(r["loss_scale"]):
        assert s == scale, (t, r)
        if t in r["overflow"]:
            scale, good = scale / 2, 0
        else:
            good += 1
            if good == HUGE["growth_interval"]:
                scale, good = scale * 2, 0


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


def test_gradient_accumulation_equals_single_process_accumulation_over_the_same_batches(amp_job):
    """accumulate_grad_batches=k: each worker sums its messages of k consecutive global batches and sends once per
    step; float64 parameters within 1e-12 of single-process training that accumulates the mean loss / k over the
    same batches, for cyclic_repetition(3, 1) (non-0/1 coefficients, per-partition messages, 5 batches per step)
    and ye_abbe(3, 1, 2) (m = 2). With scheduler_step="epoch" the scheduler steps after the optimizer step that used
    an epoch's last batch: steps 2 (batches 10-14) and 4 (batches 20-24) for 12 batches per epoch. Before: no
    accumulation (train had no such argument)."""
    for name in ("accumulate_cyclic", "accumulate_ye_abbe"):
        r = _result(amp_job, name)
        assert r["params_err"] <= 1e-12 and r["lr"] == r["lr_ref"], r
    r = _result(amp_job, "accumulate_cyclic")
    assert r["lr"] == [0.1, 0.1, 0.1, 0.05, 0.05, 0.025, 0.025], r


def test_a_killed_accumulating_run_resumes_at_k_batches_per_step_bitwise(tmp_path):
    """accumulate_grad_batches=5, an epoch scheduler and a map-style dataset (tests/torch_resume_job.py: Adam, a
    noise hook drawing from the master's random state): the master SIGKILLs itself after step 4, the same command
    resumes from the checkpoint of step 4, whose data position is batch 20 (epoch 1, batch 8), and the final
    parameters are bitwise those of an uninterrupted run."""
    base = {"iters": 7, "every": 2, "accumulate": 5, "sched_step": "epoch", "marker": str(tmp_path / "killed")}
    _, ref = run_resume_job({**base, "ckpt": str(tmp_path / "ref.pt"), "out": str(tmp_path / "ref_final.pt")})
    assert ref is not None and ref["steps"] == 7, ref
    cfg = {**base, "ckpt": str(tmp_path / "run.pt"), "out": str(tmp_path / "final.pt"), "kill_at": 4}
    killed, res = run_resume_job(cfg)
    assert killed.returncode != 0 and res is None and "KILLED_AFTER 4" in killed.stdout, killed.stderr[-3000:]
    assert torch.load(tmp_path / "run.pt", weights_only=True)["step"] == 4
    proc, res = run_resume_job(cfg)
    assert res is not None and res["start"] == 4 and res["infos"] == 3, _errors(proc.stderr) or res
    want = torch.load(tmp_path / "ref_final.pt", weights_only=True)
    got = torch.load(tmp_path / "final.pt", weights_only=True)
    assert all(torch.equal(got[k], want[k]) for k in want), {k: float((got[k] - want[k]).abs().max()) for k in want}


def test_float16_parameters_run_3000_iterations_and_bfloat16_parameters_train(amp_job):
    """Issue 36: float16 failed after 2,048 iterations (its iteration counter rounded) and bfloat16 at set-up. Both
    finish here with finite parameters that classify the test digits (float16: 3,000 steps of 12 samples, 24 epochs;
    bfloat16: 300 steps, 2.4 epochs; measured 0.97 and 0.89)."""
    f16, bf16 = _result(amp_job, "float16_3000"), _result(amp_job, "bfloat16_300")
    assert f16["iterations"] == 3000 and f16["finite"] and f16["final_accuracy"] >= 0.9, f16
    assert bf16["iterations"] == 300 and bf16["finite"] and bf16["final_accuracy"] >= 0.8, bf16


def test_messages_staged_through_host_vectors_as_for_cuda_parameters_train_exactly():
    """CUDA parameters go over Gloo through host buffers, one copy per message (FlatParams' device vector); no GPU
    here, so the staging is forced for CPU parameters (tests/torch_job.py ``"stage"``): float64 decoded gradients
    and parameters within 1e-12 of single-process training (cyclic, a hung worker, BatchNorm buffers, every rank's
    final model), ye_abbe m = 2 in float32 within 1e-6. CUDA itself was not run (benchmarks/runtime/
    torch_cuda_check.py is the check for a GPU session)."""
    proc, res, _ = run_job([
        {"name": "staged_cyclic", "stage": True, "model": "linear", "iters": 6, "final": True},
        {"name": "staged_hang", "stage": True, "fault": "hang", "model": "linear", "iters": 4},
        {"name": "staged_bn", "stage": True, "model": "bn", "iters": 4, "final": True},
        {"name": "staged_ye_abbe", "stage": True, "code": "ye_abbe", "dtype": "float32", "iters": 4}])
    for name in ("staged_cyclic", "staged_hang", "staged_bn"):
        r = _result((proc, res, 0), name)
        assert r["grad_err"] <= 1e-12 and r["params_err"] <= 1e-12 and r["buffers_err"] <= 1e-12, r
    assert res["staged_cyclic"]["final_same"] == res["staged_bn"]["final_same"] == [True] * 4
    assert 0 not in res["staged_hang"]["responders"]
    r = _result((proc, res, 0), "staged_ye_abbe")
    assert r["grad_err"] <= 1e-6 and r["params_err"] <= 1e-6, r


def test_cuda_check_script_runs_its_job_with_staged_cpu_parameters(tmp_path):
    """benchmarks/runtime/torch_cuda_check.py --cpu-staged: the GPU session's script, run end to end on the CPU
    (its torchrun job, its comparison and its bounds); without CUDA the plain command says it skipped."""
    import os
    import subprocess
    import sys

    env = dict(os.environ, PYTHONPATH=str(ROOT), OMP_NUM_THREADS="1")
    script = str(ROOT / "benchmarks" / "runtime" / "torch_cuda_check.py")
    res = subprocess.run([sys.executable, script, "--cpu-staged", "--smoke"], capture_output=True, text=True,
                         timeout=300, env=env, cwd=tmp_path)
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-3000:]
    assert res.stdout.count(": ok);") == 2 and "not a CUDA measurement" in res.stdout, res.stdout
    if not torch.cuda.is_available():
        res = subprocess.run([sys.executable, script, "--smoke"], capture_output=True, text=True, timeout=60,
                             env=env, cwd=tmp_path)
        assert res.returncode == 0 and res.stdout.startswith("skipped: no CUDA"), res.stdout + res.stderr
