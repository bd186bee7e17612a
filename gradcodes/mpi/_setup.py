"""What every rank of a ``gradcodes.mpi`` job checks and sets once, before its first iteration: BLAS threads
(:func:`limit_blas`), the communicator's size against the code's layout (:func:`check_size`), the same code on
every rank (:func:`check_same_code`); the transport-neutral checks are in :mod:`gradcodes._runtime.setup`.
"""

from __future__ import annotations

from typing import Any

from .. import LinearCode
from .._base.errors import GradcodesValueError
from .._runtime.layout import Layout
from .._runtime.setup import fingerprint, limit_blas, wait_count, wait_tracker

__all__ = ["limit_blas", "check_size", "fingerprint", "check_same_code", "wait_count", "wait_tracker"]


def check_size(layout: Layout, comm: Any, what: str) -> None:
    """Raise a clear error when the job has the wrong number of ranks."""
    size = comm.Get_size()
    if size != layout.size:
        raise GradcodesValueError(f"{what} needs {layout.size} MPI ranks (1 master + {layout.workers} workers), this "
                                  f"job has {size}: run it with  mpiexec -n {layout.size} python -m mpi4py ...")


def check_same_code(code: LinearCode, comm: Any) -> None:
    """Collective (once, at set-up): raise when the ranks built different codes (e.g. random codes without a
    seed)."""
    prints = comm.allgather(fingerprint(code))
    differ = [r for r, f in enumerate(prints) if f != prints[0]]
    if differ:
        raise GradcodesValueError(f"ranks {differ} built a different code than rank 0 ({code.name!r}): every rank "
                                  "must construct the same code (give random constructions a fixed seed)")
