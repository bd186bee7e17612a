"""The exhaustive enumeration shared among MPI ranks, with dynamic load balancing and an exact merge.

Imported by :mod:`gradcodes._verify.engine`, which registers its drivers with :mod:`gradcodes._verify.parallel`
(mpi4py itself is imported only when :func:`gradcodes.verify` is given a communicator of more than one rank, never
by ``import gradcodes``). Every rank calls ``verify`` with the same arguments. Rank 0 is the *master* and
works too: it hands out *tasks* (runs of consecutive chunks of the grid of :mod:`gradcodes._verify.parallel`: the
screened chunks of a float null-space code, or the reference chunks of every other model, exact codes and trees
included) on request, two per rank ahead so that no rank waits for its next task, and between its own chunks
answers the requests that arrived. Slow ranges (sets that go to the reference evaluation) therefore only delay the
rank that holds them. The results come back as one :class:`~gradcodes._verify.parallel.Piece` per chunk and are
folded in rank order, so the report is the one-core report whatever the number of ranks and the order of arrival.

With ``stop_on_failure`` the master, on the first failing chunk, tells every rank to drop chunks past it and hands
out no more of them; chunks before it are still completed (they decide the counts of the one-core report).

The screening kernel's arrays are rank 0's (broadcast), so the screen is the same on every rank; the reference
evaluation runs on each rank's own BLAS, which on a cluster of identical nodes gives the same bits (on mixed
CPUs the worst values may differ in their last bits, never a verdict: the acceptance rule judges an interval that
holds every machine's estimate, :func:`gradcodes._core.numerics.judge`).
"""

from __future__ import annotations

import time
from typing import Any

from .parallel import MPI_DRIVERS, CheckpointError, Grid, Piece, Progress, Saver, fold

__all__ = ["enumerate_mpi", "share_screen"]

_TASK, _RESULT, _STOP = 2201, 2202, 2203
#: grid chunks per task (the unit of load balancing)
TASK_CHUNKS = 4


def share_screen(comm: Any, screen: Any) -> None:
    """Every rank screens with rank 0's arrays (collective)."""
    state = comm.bcast({f: getattr(screen, f) for f in screen.FIELDS} if comm.Get_rank() == 0 else None, root=0)
    for f, v in state.items():
        setattr(screen, f, v)


def enumerate_mpi(tracker: Any, compute: Any, stop_on_failure: bool, clock: Any, budget: float | None, comm: Any,
                  *, grid: Grid, key: str, checkpoint: str | None = None, checkpoint_every: float = 60.0,
                  prepare: Any = None) -> bool:
    """:func:`gradcodes._verify.parallel.enumerate_chunks` on the ranks of ``comm`` (collective): every rank
    computes chunks with ``compute`` (after ``prepare(comm)``) and gets the merged result in ``tracker``."""
    comm = comm.Dup()                                  # our messages never meet the caller's
    try:
        rank = comm.Get_rank()
        if prepare is not None:
            prepare(comm)
        total = tracker.model.total
        if checkpoint is not None:                     # a bad checkpoint stops every rank with the same error
            err = None
            if rank == 0:
                try:
                    Progress(total, tracker.max_failures, stop_on_failure, grid).load(checkpoint, key)
                except CheckpointError as exc:
                    err = str(exc)
            err = comm.bcast(err, root=0)
            if err is not None:
                raise CheckpointError(err)
        comm.Barrier()
        if rank == 0:
            try:
                out = _master(comm, tracker, compute, total, stop_on_failure, clock, budget, checkpoint,
                              checkpoint_every, grid, key)
            except BaseException:
                comm.Abort(1)                          # a rank that dies alone would leave the others waiting
                raise
        else:
            _worker(comm, compute, stop_on_failure)
            out = None
        result, stopped = comm.bcast(out, root=0)
    finally:
        comm.Free()
    fold(tracker, result, tracker.max_failures)
    return bool(stopped)


def _master(comm: Any, tracker: Any, compute: Any, total: int, stop_on_failure: bool, clock: Any,
            budget: float | None, checkpoint: str | None, checkpoint_every: float, grid: Grid,
            key: str) -> tuple[Piece, bool]:
    size = comm.Get_size()
    progress = Progress(total, tracker.max_failures, stop_on_failure, grid)
    if checkpoint is not None:
        progress.load(checkpoint, key)
    saver = Saver(checkpoint, key, checkpoint_every)
    todo = progress.todo()
    clock.total = max(1, total - progress.result().checked)
    clock.start = time.perf_counter()
    halted = [False]                                   # budget spent: hand out nothing more
    outstanding = dict.fromkeys(range(1, size), 0)
    ended: set[int] = set()
    stops_sent = dict.fromkeys(range(1, size), 0)
    requests: list[Any] = []

    last_chunk = grid.index(total - 1) if total else 0
    handed = [0]                                       # the end of the last chunk handed out (or taken by rank 0)

    def next_task() -> list[tuple[int, int]] | None:
        # guided sizes: TASK_CHUNKS chunks while plenty are left, then fewer, down to one near the end, so that no
        # rank is left computing a large task (two ahead) while the others have nothing
        if halted[0]:
            return None
        left = last_chunk - grid.index(min(handed[0], total - 1)) + 1 if total else 0
        want = max(1, min(TASK_CHUNKS, left // (2 * size)))
        task = []
        for chunk in todo:
            task.append(chunk)
            handed[0] = chunk[1]
            if len(task) == want:
                break
        return task or None

    def hand_out(r: int) -> None:
        task = next_task()
        if task is None:
            comm.send(("end", stops_sent[r]), dest=r, tag=_TASK)
            ended.add(r)
        else:
            comm.send(("task", task), dest=r, tag=_TASK)
            outstanding[r] += 1

    def take(pieces: list[Piece]) -> None:
        before = progress.stop_at
        for p in pieces:
            progress.add(p)
            clock.update(p.checked)
        if progress.stop_at is not None and before is None:
            for r in range(1, size):
                if r not in ended:
                    requests.append(comm.isend(progress.stop_at, dest=r, tag=_STOP))
                    stops_sent[r] += 1
        saver.maybe(progress)
        if budget is not None and clock.over_budget(budget):
            halted[0] = True

    def service(block: bool) -> None:
        from mpi4py import MPI

        status = MPI.Status()
        while block or comm.Iprobe(source=MPI.ANY_SOURCE, tag=_RESULT, status=status):
            pieces = comm.recv(source=MPI.ANY_SOURCE, tag=_RESULT, status=status)
            r = status.Get_source()
            outstanding[r] -= 1
            take(pieces)
            if r not in ended:
                hand_out(r)
            if block:
                return

    try:
        for r in range(1, size):
            for _ in range(2):
                if r not in ended:
                    hand_out(r)
        while True:
            task = next_task()
            if task is None:
                break
            for lo, hi in task:
                if lo >= progress.end:
                    break
                p = compute(lo, hi)
                take([p])
                service(False)
                if stop_on_failure and p.n_failures:
                    break
        while any(outstanding.values()) or len(ended) < size - 1:
            idle = [r for r in range(1, size) if r not in ended and not outstanding[r]]
            for r in idle:
                hand_out(r)
            if any(outstanding.values()):
                service(True)
    finally:
        saver.final(progress)
    from mpi4py import MPI

    MPI.Request.Waitall(requests)
    return progress.result(), progress.stopped()


def _worker(comm: Any, compute: Any, stop_on_failure: bool) -> None:
    stop_at: int | None = None
    got_stops = 0
    sending: Any = None                                # the previous task's results, in flight
    while True:
        kind, body = comm.recv(source=0, tag=_TASK)
        if kind == "end":
            for _ in range(body - got_stops):          # stop notices not read yet: drain them
                comm.recv(source=0, tag=_STOP)
            if sending is not None:
                sending.wait()
            return
        pieces = []
        for lo, hi in body:
            while comm.Iprobe(source=0, tag=_STOP):
                at = comm.recv(source=0, tag=_STOP)
                got_stops += 1
                stop_at = at if stop_at is None else min(stop_at, at)
            if stop_at is not None and lo >= stop_at:
                break
            p = compute(lo, hi)
            pieces.append(p)
            if stop_on_failure and p.n_failures:
                break
        # non-blocking: a blocking send of a large message waits until the master, which computes too, posts its
        # receive between two of its own chunks; the next task goes on meanwhile
        if sending is not None:
            sending.wait()
        sending = comm.isend(pieces, dest=0, tag=_RESULT)


MPI_DRIVERS.update(enumerate=enumerate_mpi, share_screen=share_screen)
