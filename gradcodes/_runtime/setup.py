"""What every rank of a job checks and sets once, whatever the transport: BLAS threads (:func:`limit_blas`), the
code's digest that all ranks compare (:func:`fingerprint`), the number of messages to wait for and the wait policy's
tracker (:func:`wait_count`, :func:`wait_tracker`), the stop grace (:func:`check_grace`) and a rank's height in its
layout (:func:`height`).
"""

from __future__ import annotations

import hashlib
import math
from typing import Any

import numpy as np

from .. import CodedReduceCode, GradientCode, LinearCode
from .._base.errors import GradcodesValueError
from .._simulate._policies import BackupWorkers, FixedK, WaitPolicy, as_policy
from .layout import Layout

__all__ = ["limit_blas", "fingerprint", "wait_count", "wait_tracker", "GRACE", "check_grace", "height"]

#: the default grace (seconds) of both runtimes: after its last iteration the master waits ``grace`` per tree level
#: below it, plus ``grace``, for the workers' goodbyes; a worker whose compute has not returned ``grace`` per level
#: below it plus ``grace`` after the master's stop message ends its own process (``docs/runtime.md``)
GRACE = 5.0

_BLAS_THREADS: int | None = None


def limit_blas(threads: int | None) -> None:
    """Limit BLAS to ``threads`` threads in this process, once (``None``: leave BLAS alone).

    A rank of an MPI job normally owns one core; a multithreaded BLAS in every rank oversubscribes the cores and
    its spinning threads slow the messages' ``axpy`` passes many times over. Set once per process (threadpoolctl),
    not around every call, so the per-iteration path enters no context.
    """
    global _BLAS_THREADS
    if threads is None or _BLAS_THREADS == threads:
        return
    if isinstance(threads, bool) or not isinstance(threads, (int, np.integer)) or threads < 1:
        raise GradcodesValueError(f"blas_threads must be an integer >= 1 or None, got {threads!r}")
    from threadpoolctl import threadpool_limits

    threadpool_limits(limits=int(threads), user_api="blas")
    _BLAS_THREADS = int(threads)


def fingerprint(code: LinearCode) -> str:
    """A digest of the code's matrix and shape (every rank must run the same code); the matrix's value digest,
    computed on its non-zeros when it is stored sparse (no dense copy of a large code on any rank)."""
    from .._core.code_identity import b_digest

    h = hashlib.sha256(b_digest(code))
    h.update(f"{type(code).__name__}:{code.n}:{code.k}:{code.m}:{getattr(code, 's', None)}".encode())
    return h.hexdigest()[:16]


def wait_count(code: LinearCode, wait_for: int | None) -> int:
    """The number of messages a master (or tree parent) waits for, ``wait_for`` checked against the code."""
    if isinstance(code, CodedReduceCode):
        need = code.branching - code.s
        if wait_for is not None and wait_for != need:
            raise GradcodesValueError(f"wait_for: a CodedReduce parent waits for n - s = {need} children, got "
                                      f"{wait_for}")
        return need
    if isinstance(code, GradientCode):
        need = code.n - code.s
        if wait_for is not None and not need <= wait_for <= code.n:
            raise GradcodesValueError(f"wait_for must be in [n - s, n] = [{need}, {code.n}] for an exact code, got "
                                      f"{wait_for}")
        return need if wait_for is None else int(wait_for)
    if wait_for is None:
        s = getattr(code, "s", None)
        return code.n - s if s is not None else code.n
    if isinstance(wait_for, bool) or not isinstance(wait_for, (int, np.integer)) or not 0 <= wait_for <= code.n:
        raise GradcodesValueError(f"wait_for must be an integer in [0, n={code.n}], got {wait_for!r}")
    return int(wait_for)


def wait_tracker(code: LinearCode, policy: str | WaitPolicy | None, wait_for: int | None,
                 dtype: Any) -> tuple[Any, int | None]:
    """``(tracker, wait_for)`` for a wait policy over the messages of ``code``'s workers.

    The tracker (``add(row) -> bool``, ``reset()``) ends the wait early, None waits for the fixed count; a count
    policy (:class:`~gradcodes.FixedK`, :class:`~gradcodes.BackupWorkers`, ``"all"``) becomes ``wait_for``.
    Default: the earliest decodable set for exact codes (:meth:`gradcodes.LinearCode.decodable`), unless a count
    ``wait_for`` is given.
    """
    if policy is None:
        if wait_for is not None or not isinstance(code, GradientCode):
            return None, wait_for
        policy = "earliest"
    pol = as_policy(policy, code)
    if isinstance(pol, FixedK):
        if pol.k is None and not isinstance(pol, BackupWorkers):
            return None, wait_for                                # "first": n - s (or wait_for)
        if wait_for is not None:
            raise GradcodesValueError("give either wait_for or a count policy, not both")
        return None, pol.need(code)
    return pol.tracker(code, dtype), wait_for


def check_grace(grace: Any) -> float:
    """``grace`` as a positive finite number of seconds."""
    g = float(grace)
    if not g > 0 or math.isinf(g):
        raise GradcodesValueError(f"grace must be a positive number of seconds, got {grace!r}")
    return g


def height(layout: Layout, rank: int) -> int:
    """Levels of the layout below ``rank`` (0 for a leaf; 1 for a flat master)."""
    h = 0
    while kids := layout.children(rank):
        rank, h = kids[0], h + 1
    return h
