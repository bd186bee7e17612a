"""Checkpoint files of the exhaustive verification (:mod:`gradcodes._verify.parallel`).

A checkpoint is one JSON document ``{"sha256": ..., "state": {...}}``: the state (format name and version, the
run's key, the number of patterns, the stop point, the folded prefix and the pieces done out of order) and the
SHA-256 of its canonical JSON text, so that a file damaged or edited by hand is recognised. It is written
atomically (a temporary file in the same directory, flushed to disk, renamed over the path, the directory
flushed), so a run killed at any moment (SIGKILL included) leaves either the previous checkpoint or the new one.

The *key* (:func:`digest`) is a SHA-256 of the code's encoding matrix, ``s``, ``m``, field and of every argument
that changes a chunk's result; a file with another key is refused, as is a damaged file
(:class:`CheckpointError`).
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
import time
from typing import Any

import numpy as np

from .._base.errors import GradcodesValueError

__all__ = ["CheckpointError", "digest", "write_atomic", "write_state", "read_state", "Saver"]

_FORMAT = "gradcodes-verify-checkpoint"
_VERSION = 1


class CheckpointError(GradcodesValueError):
    """A verification checkpoint that cannot be used: another code, other arguments, or a damaged file (a
    :class:`ValueError` and a :class:`gradcodes.GradcodesError`)."""


def digest(code: Any, **args: Any) -> str:
    """SHA-256 of the code's encoding matrix (values, shape, dtype), its ``s`` and ``m``, and ``args``."""
    h = hashlib.sha256()
    B = np.ascontiguousarray(np.asarray(code.B))
    h.update(repr((B.shape, str(B.dtype), int(code.s), int(code.m), str(code.field))).encode())
    h.update(B.tobytes() if B.dtype != object else repr(B.tolist()).encode())
    h.update(json.dumps(args, sort_keys=True, default=str).encode())
    return h.hexdigest()


def write_atomic(path: str | os.PathLike[str], data: bytes) -> None:
    """Write ``data`` to ``path`` atomically: a temporary file in the same directory, flushed and ``fsync``-ed,
    ``os.replace`` over ``path``, then an ``fsync`` of the directory. A process killed at any moment (SIGKILL
    included) leaves either the previous file or the new one; a failed write removes its temporary file. The
    verification's checkpoints and :mod:`gradcodes.torch`'s (``gradcodes/torch/_checkpoint.py``) use it."""
    d = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(prefix=".ckpt-", dir=d)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
    try:
        dfd = os.open(d, os.O_RDONLY)
        try:
            os.fsync(dfd)
        finally:
            os.close(dfd)
    except OSError:  # pragma: no cover - directories cannot be fsynced on some systems
        pass


def write_state(path: str, state: dict[str, Any]) -> None:
    """Write ``state`` (with the format name and version added) to ``path`` atomically, with its checksum."""
    state = {"format": _FORMAT, "version": _VERSION, **state}
    body = json.dumps(state, sort_keys=True)
    text = json.dumps({"sha256": hashlib.sha256(body.encode()).hexdigest(), "state": state}, sort_keys=True)
    write_atomic(path, text.encode())


def read_state(path: str, key: str, total: int) -> dict[str, Any] | None:
    """The state saved in ``path`` (None when there is no such file), checked: intact, this format and version,
    this run's ``key`` and ``total``; :class:`CheckpointError` otherwise."""
    if not os.path.exists(path):
        return None
    try:
        with open(path) as f:
            text = f.read(1 << 26)
        outer = json.loads(text)
        state = outer["state"]
        body = json.dumps(state, sort_keys=True)
        intact = hashlib.sha256(body.encode()).hexdigest() == outer["sha256"]
    except (OSError, ValueError, KeyError, TypeError, UnicodeDecodeError) as exc:
        raise CheckpointError(f"checkpoint {path!r} is damaged or not a gradcodes verify checkpoint ({exc}); "
                              f"delete it to start over") from exc
    if not intact or not isinstance(state, dict) or state.get("format") != _FORMAT:
        raise CheckpointError(f"checkpoint {path!r} is damaged (its checksum does not match its contents); "
                              f"delete it to start over")
    if state.get("version") != _VERSION:
        raise CheckpointError(f"checkpoint {path!r} has format version {state.get('version')!r}, this "
                              f"gradcodes reads version {_VERSION}")
    if state.get("key") != key or state.get("total") != total:
        raise CheckpointError(f"checkpoint {path!r} belongs to another run: the code or the arguments "
                              f"(rtol, dtype, decoder, stop_on_failure; for codes enumerated without the "
                              f"screen also batch_size and whether a limit or a time budget decided the "
                              f"enumeration) differ; use another path or delete it")
    return state


class Saver:
    """Writes a progress's checkpoint (``progress.save(path, key)``) at most every ``every`` seconds, and on
    :meth:`final`."""

    def __init__(self, path: str | None, key: str, every: float) -> None:
        self.path, self.key, self.every = path, key, every
        self.last = time.monotonic()

    def maybe(self, progress: Any) -> None:
        if self.path is not None and time.monotonic() - self.last >= self.every:
            progress.save(self.path, self.key)
            self.last = time.monotonic()

    def final(self, progress: Any) -> None:
        if self.path is not None:
            progress.save(self.path, self.key)
            self.last = time.monotonic()
