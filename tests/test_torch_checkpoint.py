"""Single-process units of gradcodes.torch's checkpoint (``train(..., checkpoint=path)``): the round trip of the
model, optimizer, scheduler and random states, the atomic write under a crash, and refusing checkpoints that are
corrupt, too large, unsafe or of another run (the killed-and-resumed torchrun job is in tests/test_torch.py)."""

from __future__ import annotations

import os
import pickle
import random
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

import gradcodes as gc
from gradcodes.torch import FixedDelay, TrainResult

torch = pytest.importorskip("torch")
from gradcodes._verify.checkpoint import write_atomic  # noqa: E402 - after the torch skip
from gradcodes.torch._checkpoint import Checkpointer  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent


def _setup(code=None, width=6, seed=0):
    """A small float64 model with BatchNorm, Adam, StepLR and a checkpointer at ``path`` (set by the caller)."""
    torch.manual_seed(seed)
    model = torch.nn.Sequential(torch.nn.Linear(4, width), torch.nn.BatchNorm1d(width), torch.nn.Linear(width, 2))
    model = model.double()
    opt = torch.optim.Adam(model.parameters(), lr=0.01)
    sched = torch.optim.lr_scheduler.StepLR(opt, 2, gamma=0.5)
    return code or gc.cyclic_repetition(3, 1, rng=0), model, opt, sched


def _ckpt(path, code, model, **kw):
    args = {"batch_size": 12, "seed": 0, "dataset_size": 60, "iterations": 10, **kw}
    return Checkpointer(path, code=code, model=model, **args)


def _steps(model, opt, sched, k):
    for _ in range(k):
        opt.zero_grad()
        model(torch.randn(8, 4, dtype=torch.float64)).square().mean().backward()
        opt.step()
        sched.step()


def _draws():
    return torch.randn(3).tolist(), np.random.random(2).tolist(), random.random()    # noqa: NPY002 - global state


def test_round_trip_restores_model_buffers_optimizer_scheduler_and_random_states(tmp_path):
    code, model, opt, sched = _setup()
    _steps(model, opt, sched, 3)
    res = TrainResult("x", times=[0.1, 0.2, 0.3], lr=[0.01, 0.01, 0.005])
    path = tmp_path / "run.pt"
    _ckpt(path, code, model).save(3, opt, sched, res, None)
    after = _draws()
    _steps(model, opt, sched, 2)                      # the continuation: random inputs, Adam, StepLR, BatchNorm
    want = {k: v.clone() for k, v in model.state_dict().items()}

    _, fresh, opt2, sched2 = _setup(seed=5)          # other weights, a fresh optimizer and scheduler
    res2 = TrainResult("x")
    assert _ckpt(path, code, fresh).load(opt2, sched2, res2, None) == (3, False)
    assert res2.times == [0.1, 0.2, 0.3] and res2.lr == [0.01, 0.01, 0.005]
    assert _draws() == after                          # torch, numpy and Python random states restored
    _steps(fresh, opt2, sched2, 2)
    for k, v in fresh.state_dict().items():           # the same trajectory, bitwise
        assert torch.equal(v, want[k]), k
    assert sched2.last_epoch == 5 and opt2.param_groups[0]["lr"] == 0.01 * 0.25


def test_delay_entropy_is_restored(tmp_path):
    code, model, opt, sched = _setup()
    path = tmp_path / "run.pt"
    _ckpt(path, code, model).save(2, opt, sched, TrainResult("x", times=[0.0, 0.0]), FixedDelay(0.3, count=1))
    fresh = FixedDelay(0.3, count=1)                                     # rng=None: other entropy
    saved = torch.load(path, weights_only=True)["delay_entropy"]
    assert int(saved) != fresh.entropy
    _ckpt(path, code, model).load(opt, sched, TrainResult("x"), fresh)
    assert fresh.entropy == int(saved)


def test_a_crash_while_writing_leaves_the_previous_checkpoint_readable(tmp_path):
    """A process SIGKILLed inside the write of its second checkpoint (after the temporary file is written, before
    it replaces the first): the file still holds the first checkpoint, whole; the next write succeeds."""
    path = tmp_path / "run.pt"
    script = textwrap.dedent(f"""
        import os, signal, sys, torch
        sys.path.insert(0, {str(ROOT / 'tests')!r})
        from test_torch_checkpoint import _ckpt, _setup, _steps
        from gradcodes.torch import TrainResult
        code, model, opt, sched = _setup()
        ckpt = _ckpt({str(path)!r}, code, model)
        ckpt.save(3, opt, sched, TrainResult("x", times=[0.0] * 3), None)
        _steps(model, opt, sched, 1)
        def crash(fd):
            os.kill(os.getpid(), signal.SIGKILL)
        import gradcodes._verify.checkpoint as vc
        vc.os.fsync = crash          # dies with the new checkpoint's bytes in the temporary file
        ckpt.save(4, opt, sched, TrainResult("x", times=[0.0] * 4), None)
        print("NOT KILLED")
    """)
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env, timeout=120)
    assert proc.returncode == -9 and "NOT KILLED" not in proc.stdout, proc.stderr[-2000:]
    stray = sorted(p.name for p in tmp_path.iterdir() if p.name != "run.pt")
    assert len(stray) == 1 and stray[0].startswith(".ckpt-"), stray           # the interrupted write's file
    code, model, opt, sched = _setup()
    ckpt = _ckpt(path, code, model)
    assert ckpt.load(opt, sched, TrainResult("x"), None) == (3, False)
    ckpt.save(5, opt, sched, TrainResult("x", times=[0.0] * 5), None)
    assert ckpt.load(opt, sched, TrainResult("x"), None) == (5, False)


def test_write_atomic_failure_keeps_the_old_file_and_removes_the_temporary(tmp_path, monkeypatch):
    path = tmp_path / "f.bin"
    write_atomic(path, b"old")

    def boom(src, dst):
        raise OSError("disk full")

    monkeypatch.setattr(os, "replace", boom)
    with pytest.raises(OSError, match="disk full"):
        write_atomic(path, b"new")
    assert path.read_bytes() == b"old" and sorted(p.name for p in tmp_path.iterdir()) == ["f.bin"]


def test_checkpoint_of_a_different_code_or_model_is_refused_naming_the_file_and_what_differs(tmp_path):
    code, model, opt, sched = _setup()
    path = tmp_path / "run.pt"
    _ckpt(path, code, model).save(2, opt, sched, TrainResult("x", times=[0.0, 0.0]), None)
    other = gc.fractional_repetition(3, 2)
    _, m2, o2, s2 = _setup(code=other)
    with pytest.raises(gc.GradcodesValueError, match=r"run\.pt.*code digest .* \(the file's code"):
        _ckpt(path, other, m2).load(o2, s2, TrainResult("x"), None)
    _, wide, o3, s3 = _setup(width=7)
    with pytest.raises(gc.GradcodesValueError, match=r"run\.pt.*number of trainable parameter entries 56 in the "
                                                     r"file, 65 in this run"):
        _ckpt(path, code, wide).load(o3, s3, TrainResult("x"), None)
    with pytest.raises(gc.GradcodesValueError, match=r"seed 0 in the file, 1 in this run"):
        _ckpt(path, code, model, seed=1).load(opt, sched, TrainResult("x"), None)
    with pytest.raises(gc.GradcodesValueError, match=r"has step 2, not in \[0, iterations=1\]"):
        _ckpt(path, code, model, iterations=1).load(opt, sched, TrainResult("x"), None)
    with pytest.raises(gc.GradcodesValueError, match=r"written with a scheduler, this run has none"):
        _ckpt(path, code, model).load(opt, None, TrainResult("x"), None)
    assert _ckpt(path, code, model).load(opt, sched, TrainResult("x"), None) == (2, False)


def test_corrupt_truncated_oversized_and_unsafe_files_are_refused(tmp_path):
    code, model, opt, sched = _setup()
    path = tmp_path / "run.pt"
    ckpt = _ckpt(path, code, model)
    ckpt.save(2, opt, sched, TrainResult("x", times=[0.0, 0.0]), None)
    whole = path.read_bytes()
    for bad in (whole[:len(whole) // 2], b"\x00" * 100, b"garbage"):
        path.write_bytes(bad)
        with pytest.raises(gc.GradcodesValueError, match=r"run\.pt.*not a readable gradcodes\.torch checkpoint"):
            ckpt.load(opt, sched, TrainResult("x"), None)
    path.write_bytes(b"\x00" * (ckpt.limit + 1))
    with pytest.raises(gc.GradcodesValueError, match=r"run\.pt.*larger than \d+ bytes"):
        ckpt.load(opt, sched, TrainResult("x"), None)

    class Evil:
        def __reduce__(self):
            return (os.system, (f"touch {tmp_path / 'pwned'}",))

    torch.save({"format": "gradcodes.torch.checkpoint", "x": Evil()}, path)
    with pytest.raises(gc.GradcodesValueError, match="not a readable"):
        ckpt.load(opt, sched, TrainResult("x"), None)
    assert not (tmp_path / "pwned").exists()
    path.write_bytes(pickle.dumps({"format": "other"}, protocol=2))
    with pytest.raises(gc.GradcodesValueError, match="not a"):
        ckpt.load(opt, sched, TrainResult("x"), None)
    st = torch.load(io_bytes(whole), weights_only=True)
    st["step"] = "2"
    torch.save(st, path)
    with pytest.raises(gc.GradcodesValueError, match=r"has step '2'"):
        ckpt.load(opt, sched, TrainResult("x"), None)


def io_bytes(data):
    import io

    return io.BytesIO(data)


def test_state_that_weights_only_cannot_load_is_refused_at_save(tmp_path):
    code, model, opt, _ = _setup()
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda e: 0.5 ** e)
    sched.state_dict = lambda: {"fn": object()}
    with pytest.raises(gc.GradcodesTypeError, match=r"\['scheduler'\]\['fn'\] is a object"):
        _ckpt(tmp_path / "run.pt", code, model).save(1, opt, sched, TrainResult("x", times=[0.0]), None)
    assert not (tmp_path / "run.pt").exists()


def test_loader_feed_starts_its_first_pass_at_a_resumed_step():
    from torch.utils.data import TensorDataset

    from gradcodes.torch import CodedSampler, LoaderFeed

    code = gc.cyclic_repetition(4, 1, rng=0)
    data = TensorDataset(torch.arange(40.0), torch.arange(40))
    feed = LoaderFeed(data, CodedSampler(40, code, 1, batch_size=8, seed=3))
    feed.start(7)                                       # epoch 1 (5 batches per epoch), its batch 2
    assert (feed._epoch, feed._next) == (1, 2)
    ref = LoaderFeed(data, CodedSampler(40, code, 1, batch_size=8, seed=3))
    assert torch.equal(feed.get(7)[1], ref.get(7)[1]) and (feed._epoch, feed._next) == (1, 3)


def test_loss_scaler_state_and_overflow_records_round_trip_and_a_missing_scaler_is_refused(tmp_path):
    """train(grad_scaler=...): the scaler's scale and growth tracker, the skipped steps and the scales are restored;
    a checkpoint written with a scaler is refused by a run without one, and the reverse."""
    code, model, opt, sched = _setup()
    scaler = torch.amp.GradScaler("cpu", init_scale=2.0 ** 10, growth_interval=3)
    scaler.scale(torch.zeros(()))
    scaler.update(2.0 ** 7)                                     # a state that differs from a fresh scaler's
    res = TrainResult("x", times=[0.0] * 4, loss_scale=[1024.0, 512.0, 512.0, 512.0], overflow=[0])
    path = tmp_path / "amp.pt"
    _ckpt(path, code, model).save(4, opt, sched, res, None, scaler=scaler)
    fresh = torch.amp.GradScaler("cpu", init_scale=2.0 ** 10, growth_interval=3)
    got = TrainResult("x")
    assert _ckpt(path, code, model).load(opt, sched, got, None, fresh) == (4, False)
    fresh.scale(torch.zeros(()))
    assert fresh.get_scale() == 2.0 ** 7 and fresh.state_dict() == scaler.state_dict()
    assert got.loss_scale == res.loss_scale and got.overflow == [0]
    with pytest.raises(gc.GradcodesValueError, match="written with a grad_scaler, this run has none"):
        _ckpt(path, code, model).load(opt, sched, TrainResult("x"), None)
    plain = tmp_path / "plain.pt"
    _ckpt(plain, code, model).save(1, opt, sched, TrainResult("x", times=[0.0]), None)
    with pytest.raises(gc.GradcodesValueError, match="written without a grad_scaler, this run has one"):
        _ckpt(plain, code, model).load(opt, sched, TrainResult("x"), None, fresh)


def test_a_checkpoint_of_another_accumulation_is_refused():
    """The data position is accumulate_grad_batches batches per step: resuming with another value would read other
    batches. Files written before the key existed count as 1."""
    import tempfile

    code, model, opt, sched = _setup()
    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / "acc.pt"
        _ckpt(path, code, model, accumulate_grad_batches=4).save(1, opt, sched, TrainResult("x", times=[0.0]), None)
        with pytest.raises(gc.GradcodesValueError, match="accumulate_grad_batches 4 in the file, 1 in this run"):
            _ckpt(path, code, model).load(opt, sched, TrainResult("x"), None)
        st = torch.load(path, weights_only=True)
        del st["accumulate_grad_batches"]
        torch.save(st, path)
        assert _ckpt(path, code, model).load(opt, sched, TrainResult("x"), None) == (1, False)
