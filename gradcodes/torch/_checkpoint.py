"""Checkpoint and resume of :func:`gradcodes.torch.train` on the master (``train(..., checkpoint=path)``).

The file is one ``torch.save`` of plain data (tensors, numbers, strings, lists, dicts): the model's ``state_dict``
(parameters and buffers), the optimizer's, the scheduler's and the loss scaler's ``state_dict``, the next step, the
master's random states (torch, numpy's global generator, Python's ``random``), the delay model's entropy, the record
of the steps done, and what identifies the run: the code's digest (``fingerprint``), the number of trainable
parameter entries, their dtype, the buffers' bytes, the batch size, the seed and the dataset's size. It is written
atomically (a temporary file in the same directory, ``fsync``, ``os.replace``, ``fsync`` of the directory: the
verification's ``write_atomic``), so a crash at any moment leaves the previous checkpoint or the new one, never a
mix (and at most a stray ``.ckpt-*`` temporary file).

A checkpoint is untrusted input: its size is bounded before it is read, it is read with
``torch.load(weights_only=True)`` (no code runs), every field is type-checked, and a checkpoint of another run
(a different code, model, dtype, batch size, seed or dataset size) is refused with a
:class:`~gradcodes.GradcodesValueError` naming the file and what differs. Nothing in it chooses the code, the
policy or a decode's acceptance: the command does.
"""

from __future__ import annotations

import io
import os
import random
from pathlib import Path
from typing import Any

from .._base.errors import GradcodesTypeError, GradcodesValueError
from .._verify.checkpoint import write_atomic

__all__ = ["Checkpointer"]

#: the format tag and version written into every checkpoint
FORMAT = "gradcodes.torch.checkpoint"
VERSION = 1
#: the bytes a checkpoint may take beyond ``LIMIT_FACTOR`` times the model's state (parameters and buffers)
LIMIT_SLACK = 64 * 2 ** 20
LIMIT_FACTOR = 8


def _check_plain(obj: Any, where: str) -> None:
    """Refuse, at save time, what ``torch.load(weights_only=True)`` would refuse at resume (a scheduler holding a
    lambda's closure state, an optimizer state of custom objects)."""
    import torch

    if obj is None or isinstance(obj, (bool, int, float, str, torch.Tensor, torch.Size, torch.dtype)):
        return
    if isinstance(obj, dict):
        for k, v in obj.items():
            if not isinstance(k, (str, int)):
                raise GradcodesTypeError(f"checkpoint: {where} has a key of type {type(k).__name__}")
            _check_plain(v, f"{where}[{k!r}]")
        return
    if isinstance(obj, (list, tuple)):
        for i, v in enumerate(obj):
            _check_plain(v, f"{where}[{i}]")
        return
    raise GradcodesTypeError(f"checkpoint: {where} is a {type(obj).__name__}, which a checkpoint read with "
                             "torch.load(weights_only=True) cannot hold (tensors, numbers, strings, lists, dicts)")


def _floats(value: Any, what: str, fail: Any) -> list[float]:
    if not isinstance(value, list) or not all(isinstance(v, float) for v in value):
        raise fail(f"{what} is not a list of floats")
    return list(value)


class Checkpointer:
    """The master's checkpoint of one :func:`gradcodes.torch.train` run: what identifies the run, :meth:`save`
    and :meth:`load`.

    Parameters
    ----------
    path : str or os.PathLike
        The checkpoint file (its directory must exist).
    code : LinearCode
    model : torch.nn.Module
    batch_size, seed, dataset_size, iterations : int
        The run's (a checkpoint of another batch size, seed or dataset size is refused).
    scheduler_step : str
        ``"step"`` or ``"epoch"`` (checked with the scheduler's presence).
    accumulate_grad_batches : int
        Global batches per step (the data position is this many batches per step: a checkpoint of another value
        is refused).
    """

    def __init__(self, path: Any, *, code: Any, model: Any, batch_size: int, seed: int, dataset_size: int,
                 iterations: int, scheduler_step: str = "step", accumulate_grad_batches: int = 1) -> None:
        from .._runtime.setup import fingerprint

        self.path = Path(os.fspath(path))
        self.model = model
        trainable = [p for p in model.parameters() if p.requires_grad]
        self.ident = {
            "code": fingerprint(code),
            "params": sum(int(p.numel()) for p in trainable),
            "dtype": str(trainable[0].dtype) if trainable else "none",
            "buffers": sum(int(b.numel()) * b.element_size() for b in model.buffers()),
            "batch_size": int(batch_size),
            "seed": int(seed),
            "dataset_size": int(dataset_size),
            "scheduler_step": str(scheduler_step),
            "accumulate_grad_batches": int(accumulate_grad_batches),
        }
        self.code_name = str(getattr(code, "name", type(code).__name__))
        self.iterations = int(iterations)
        state_bytes = sum(int(t.numel()) * t.element_size() for t in model.state_dict().values()
                          if hasattr(t, "element_size"))
        #: the largest file :meth:`load` reads
        self.limit = LIMIT_FACTOR * state_bytes + LIMIT_SLACK

    # ---- save ----
    def state(self, step: int, opt: Any, sched: Any, result: Any, delay: Any, stopped: bool = False,
              scaler: Any = None) -> dict:
        """The checkpoint's content after ``step`` steps."""
        import numpy as np
        import torch

        nps: Any = np.random.get_state()     # noqa: NPY002 - the user's global generator is saved
        py = random.getstate()
        rng: dict[str, Any] = {
            "torch": torch.get_rng_state(),
            "numpy": {"keys": torch.from_numpy(np.asarray(nps[1], dtype=np.int64)), "pos": int(nps[2]),
                      "has_gauss": int(nps[3]), "gauss": float(nps[4])},
            "python": {"version": int(py[0]), "state": torch.tensor(py[1], dtype=torch.int64)},
        }
        if torch.cuda.is_available() and torch.cuda.is_initialized():
            rng["cuda"] = list(torch.cuda.get_rng_state_all())
        entropy = getattr(delay, "entropy", None)
        st = {
            "format": FORMAT, "version": VERSION, **self.ident, "code_name": self.code_name,
            "step": int(step), "stopped": bool(stopped),
            "model": {k: v.detach().clone() for k, v in self.model.state_dict().items()},
            "optimizer": opt.state_dict(),
            "scheduler": sched.state_dict() if sched is not None else None,
            "scaler": scaler.state_dict() if scaler is not None else None,
            "rng": rng,
            "delay_entropy": str(entropy) if isinstance(entropy, int) else None,
            "result": {"times": [float(v) for v in result.times], "accuracy": [float(v) for v in result.accuracy],
                       "lr": [float(v) for v in result.lr], "grad_norm": [float(v) for v in result.grad_norm],
                       "loss_scale": [float(v) for v in result.loss_scale],
                       "overflow": [int(v) for v in result.overflow]},
        }
        _check_plain(st, "the state")
        return st

    def save(self, step: int, opt: Any, sched: Any, result: Any, delay: Any, stopped: bool = False,
             scaler: Any = None) -> None:
        """Write the checkpoint after ``step`` steps, atomically (:func:`write_atomic`)."""
        import torch

        buf = io.BytesIO()
        torch.save(self.state(step, opt, sched, result, delay, stopped, scaler), buf)
        write_atomic(self.path, buf.getvalue())

    # ---- load ----
    def _fail(self, what: str) -> GradcodesValueError:
        return GradcodesValueError(f"checkpoint {str(self.path)!r}: {what}; delete or move the file to start "
                                   "afresh, or run the command that wrote it")

    def read(self) -> dict | None:
        """The checkpoint's content, checked against this run (None when there is no file)."""
        import torch

        try:
            with open(self.path, "rb") as f:
                data = f.read(self.limit + 1)
        except FileNotFoundError:
            return None
        except OSError as exc:
            raise self._fail(f"cannot be read ({exc})") from exc
        if len(data) > self.limit:
            raise self._fail(f"is larger than {self.limit} bytes, the bound for this model's checkpoint "
                             f"({LIMIT_FACTOR} times its state plus {LIMIT_SLACK >> 20} MiB)")
        try:
            st = torch.load(io.BytesIO(data), weights_only=True, map_location="cpu")
        except Exception as exc:
            raise self._fail(f"is not a readable gradcodes.torch checkpoint (corrupt or truncated: "
                             f"{type(exc).__name__}: {str(exc)[:200]})") from exc
        if not isinstance(st, dict) or st.get("format") != FORMAT:
            raise self._fail("is not a gradcodes.torch checkpoint (no format tag)")
        if st.get("version") != VERSION:
            raise self._fail(f"has format version {st.get('version')!r}, this gradcodes reads {VERSION}")
        labels = {"code": "code digest", "params": "number of trainable parameter entries", "dtype": "parameter dtype",
                  "buffers": "buffer bytes", "batch_size": "batch_size", "seed": "seed",
                  "dataset_size": "dataset size", "scheduler_step": "scheduler_step",
                  "accumulate_grad_batches": "accumulate_grad_batches"}
        older = {"accumulate_grad_batches": 1}         # the value of a key that files written before it lack
        diff = [f"{labels[k]} {st.get(k, older.get(k))!r} in the file, {v!r} in this run"
                for k, v in self.ident.items() if st.get(k, older.get(k)) != v]
        if diff:
            if st.get("code") != self.ident["code"]:
                diff[0] += f" (the file's code: {st.get('code_name')!r}, this run's: {self.code_name!r})"
            raise self._fail("is of a different run: " + "; ".join(diff))
        step = st.get("step")
        if not isinstance(step, int) or isinstance(step, bool) or not 0 <= step <= self.iterations:
            raise self._fail(f"has step {step!r}, not in [0, iterations={self.iterations}]")
        for key, kind in (("model", dict), ("optimizer", dict), ("rng", dict), ("result", dict), ("stopped", bool)):
            if not isinstance(st.get(key), kind):
                raise self._fail(f"has no valid {key!r} entry")
        return st

    def load(self, opt: Any, sched: Any, result: Any, delay: Any, scaler: Any = None) -> tuple[int, bool] | None:
        """Resume from the checkpoint, if there is one: load the model, optimizer, scheduler, loss scaler, random
        states, delay entropy and the record of the steps done into the objects given. Returns ``(step, stopped)``
        (the next step, and whether a callback had stopped the run), or None when there is no file."""
        import numpy as np
        import torch

        st = self.read()
        if st is None:
            return None
        if (st["scheduler"] is None) != (sched is None):
            raise self._fail("was written " + ("without" if st["scheduler"] is None else "with")
                             + " a scheduler, this run has " + ("one" if sched is not None else "none"))
        if (st.get("scaler") is None) != (scaler is None):
            raise self._fail("was written " + ("without" if st.get("scaler") is None else "with")
                             + " a grad_scaler, this run has " + ("one" if scaler is not None else "none"))
        try:
            self.model.load_state_dict(st["model"], strict=True)
            opt.load_state_dict(st["optimizer"])
            if sched is not None:
                sched.load_state_dict(st["scheduler"])
            if scaler is not None:
                scaler.load_state_dict(st["scaler"])
        except Exception as exc:
            raise self._fail(f"does not fit this model, optimizer or scheduler ({type(exc).__name__}: "
                             f"{str(exc)[:300]})") from exc
        rec = st["result"]
        times = _floats(rec.get("times"), "result.times", self._fail)
        if len(times) != st["step"]:
            raise self._fail(f"records {len(times)} step times for step {st['step']}")
        result.times[:0] = times
        result.accuracy[:0] = _floats(rec.get("accuracy"), "result.accuracy", self._fail)
        result.lr[:0] = _floats(rec.get("lr"), "result.lr", self._fail)
        result.grad_norm[:0] = _floats(rec.get("grad_norm"), "result.grad_norm", self._fail)
        result.loss_scale[:0] = _floats(rec.get("loss_scale", []), "result.loss_scale", self._fail)
        overflow = rec.get("overflow", [])
        if not isinstance(overflow, list) or not all(isinstance(v, int) and 0 <= v < st["step"] for v in overflow):
            raise self._fail("result.overflow is not a list of steps before the checkpoint's")
        result.overflow[:0] = overflow
        rng = st["rng"]
        try:
            torch.set_rng_state(rng["torch"])
            n = rng["numpy"]
            np.random.set_state((  # noqa: NPY002 - the user's global generator is restored
                "MT19937", n["keys"].numpy().astype(np.uint32), int(n["pos"]), int(n["has_gauss"]), float(n["gauss"])))
            p = rng["python"]
            random.setstate((int(p["version"]), tuple(int(v) for v in p["state"].tolist()), None))
            if "cuda" in rng and torch.cuda.is_available() and len(rng["cuda"]) == torch.cuda.device_count():
                torch.cuda.set_rng_state_all(rng["cuda"])
        except Exception as exc:
            raise self._fail(f"has an invalid random state ({type(exc).__name__}: {str(exc)[:200]})") from exc
        entropy = st.get("delay_entropy")
        if isinstance(entropy, str) and isinstance(getattr(delay, "entropy", None), int):
            try:
                delay.entropy = int(entropy)
            except ValueError as exc:
                raise self._fail("has an invalid delay entropy") from exc
            if isinstance(getattr(delay, "_cache", None), dict):
                delay._cache = {}          # ModelDelay's draws, keyed by the entropy
        return st["step"], st["stopped"]
