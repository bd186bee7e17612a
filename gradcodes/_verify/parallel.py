"""Exhaustive verification past one core: rank ranges, local processes, MPI ranks, checkpoints, an exact merge.

The patterns of a model (the ``C(n, s)`` straggler sets of a flat code in lexicographic order, the tree patterns of
a CodedReduce code in their mixed-radix order: :meth:`gradcodes._verify.engine.PatternModel.patterns`) are
numbered by their rank, and the ranks are cut into *chunks* on a fixed grid (:class:`Grid`) that depends on
nothing but the rank. A chunk is computed with no state carried over from other chunks, so its result is a
function of the chunk alone; two computations exist:

* :func:`screen_chunk` (float null-space codes): the screening kernel of :mod:`gradcodes._verify.fast` (which
  decides most sets itself), and the reference evaluation of the sets it hands on and of a sample; grid of
  4,096, 16,384, then 65,536 sets;
* :func:`reference_chunk` (every other model: exact fields, other decoders, trees): the reference evaluation of
  every pattern; chunks of the verifier's batch size (under a time budget the first one is cut into 4, 8, 16,
  ... patterns, so that a slow decoder is noticed after a few patterns: :func:`reference_grid`).

A :class:`Piece` summarises a contiguous range of chunks (patterns checked, worst residual, cancellation and error
estimate with their patterns, failures and borderline patterns with the first few listed, the distinct decodings
of models that count them), and :func:`fold` merges two adjacent pieces exactly: counts add, a worst value is the
larger one and on a tie the earlier (lower-ranked) pattern's, listed patterns are the first ones in rank order.
Folding the pieces in rank order gives bit for bit the report of one core walking the chunks in order, however the
chunks were shared among processes, threads, MPI ranks or interrupted runs; one core walks the same chunks.

With ``stop_on_failure`` a run stops at the end of the first chunk (in rank order) that holds a failing pattern
: chunks after it are discarded,
chunks before it are completed, so the counts are those of the one-core run too.

**Checkpoints.** :class:`Progress` holds the folded prefix of the done ranges and the pieces done out of order; it
is written to a JSON file atomically (:mod:`gradcodes._verify.checkpoint`) at most every
``checkpoint_every`` seconds and at the end, with a digest of the code and of the arguments that change a
chunk's result. A later run with the same path continues from it; a file for another code, other arguments, or a
damaged file is refused with :class:`CheckpointError`. Killing the process loses at most the chunks finished since
the last write.
"""

from __future__ import annotations

import concurrent.futures as cf
import math
import os
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .._base.errors import GradcodesTypeError
from .._core.numerics import unit_roundoff
from .checkpoint import CheckpointError, Saver, digest, read_state, write_state

__all__ = ["CheckpointError", "Grid", "Piece", "Progress", "fold", "chunk_start", "chunk_index", "default_workers",
           "screen_chunk", "reference_chunk", "run_local", "enumerate_screened", "enumerate_reference"]

#: the screened chunk grid: the first two chunks are small (a slow code is noticed early), then 65,536 sets each
_FIRST = (4096, 16384)
_CHUNK = 1 << 16
#: the most sets per chunk whose screened estimate is among the chunk's largest, re-evaluated by the reference
_TOP = 16
#: fewer chunks than this left: one worker (starting processes costs more than it saves)
_MIN_PARALLEL_CHUNKS = 4
#: and at least this many sets (about a second of screening): below, starting workers costs more than it saves
_MIN_PARALLEL_SETS = 1 << 20
#: the same for the reference evaluation (about a second of it on a float code)
_MIN_PARALLEL_REF_SETS = 1 << 15

#: the MPI drivers (``"enumerate"``: ``enumerate_mpi``, ``"share_screen"``), registered by
#: :mod:`gradcodes._verify.mpi_driver` when it is imported: that module builds on this one's grid, pieces and
#: checkpoints, so this one reaches it through this table, not an import (:mod:`gradcodes._verify.engine` imports it)
MPI_DRIVERS: dict[str, Callable[..., Any]] = {}


def default_workers() -> int:
    """The cores this process may run on (``os.sched_getaffinity``; ``os.cpu_count`` where it does not exist)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # pragma: no cover - not Linux
        return max(1, os.cpu_count() or 1)


@dataclass(frozen=True)
class Grid:
    """A chunk grid: chunks of ``first[0]``, ``first[1]``, ... patterns, then ``size`` patterns each."""

    first: tuple[int, ...]
    size: int

    def start(self, i: int) -> int:
        """First rank of chunk ``i``."""
        if i <= len(self.first):
            return sum(self.first[:i])
        return sum(self.first) + (i - len(self.first)) * self.size

    def index(self, rank: int) -> int:
        """The chunk holding ``rank`` (inverse of :meth:`start`)."""
        acc = 0
        for i, c in enumerate(self.first):
            if rank < acc + c:
                return i
            acc += c
        return len(self.first) + (rank - acc) // self.size

    def key(self) -> list[int]:
        return [*self.first, self.size]


def screened_grid() -> Grid:
    """The grid of :func:`screen_chunk` (read when a run starts: tests shrink it)."""
    return Grid(tuple(_FIRST), _CHUNK)


def reference_grid(batch: int, budget: bool) -> Grid:
    """The grid of :func:`reference_chunk`: chunks of ``batch`` patterns (the verifier's batch size); under a time
    budget the first batch is cut into pieces of 4, 8, 16, ... patterns, so that a slow decoder is noticed after a
    few patterns (the pieces the one-core engine always used: reports are unchanged).

    >>> reference_grid(100, True), reference_grid(100, False)
    (Grid(first=(4, 8, 16, 32, 40), size=100), Grid(first=(), size=100))
    """
    first: list[int] = []
    piece, acc = 4, 0
    while budget and acc < batch:
        first.append(min(piece, batch - acc))
        acc += first[-1]
        piece *= 2
    return Grid(tuple(first), batch)


def chunk_start(i: int) -> int:
    """First rank of chunk ``i`` of the screened grid.

    >>> [chunk_start(i) for i in range(4)]
    [0, 4096, 20480, 86016]
    """
    return screened_grid().start(i)


def chunk_index(rank: int) -> int:
    """The chunk of the screened grid holding ``rank`` (inverse of :func:`chunk_start`).

    >>> [chunk_index(r) for r in (0, 4095, 4096, 20480, 86015, 86016)]
    [0, 0, 1, 2, 2, 3]
    """
    return screened_grid().index(rank)


@dataclass
class Piece:
    """What the patterns of ranks ``[lo, hi)`` gave: the tracker's fields (:class:`gradcodes._verify.engine.Tracker`)
    restricted to them; ``distinct``: keys of the distinct decodings met, for models that count them (trees)."""

    lo: int
    hi: int
    checked: int = 0
    worst_res: float = -1.0
    worst_res_P: list[int] | None = None
    worst_canc: float = -1.0
    worst_canc_P: list[int] | None = None
    worst_est: float = 0.0
    worst_hi: float = 0.0
    worst_res_hi: float = 0.0
    worst_res_lo: float = 0.0
    n_failures: int = 0
    failures: list[Any] = field(default_factory=list)
    n_borderline: int = 0
    borderline: list[Any] = field(default_factory=list)
    distinct: set[str] | None = None

    @classmethod
    def of(cls, tracker: Any, lo: int, hi: int) -> Piece:
        """The tracker's contents as the piece of ``[lo, hi)``."""
        def lst(P: Any) -> list[int] | None:
            return None if P is None else [int(v) for v in np.asarray(P).ravel()]

        return cls(lo, hi, tracker.checked, tracker.worst_res, lst(tracker.worst_res_P), tracker.worst_canc,
                   lst(tracker.worst_canc_P), tracker.worst_est, tracker.worst_hi, tracker.worst_res_hi,
                   tracker.worst_res_lo, tracker.n_failures, list(tracker.failures), tracker.n_borderline,
                   list(tracker.borderline), tracker.model.distinct_keys())

    def to_json(self) -> dict[str, Any]:
        d = dict(self.__dict__)
        d["failures"] = [_label_json(x) for x in self.failures]
        d["borderline"] = [_label_json(x) for x in self.borderline]
        d["distinct"] = None if self.distinct is None else sorted(self.distinct)
        return d

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> Piece:
        p = cls(**d)
        p.failures = [_label_from_json(x) for x in p.failures]
        p.borderline = [_label_from_json(x) for x in p.borderline]
        if p.distinct is not None:
            if not all(isinstance(x, str) for x in p.distinct):
                raise GradcodesTypeError("distinct")
            p.distinct = set(p.distinct)
        for name in ("lo", "hi", "checked", "n_failures", "n_borderline"):
            if not isinstance(getattr(p, name), int):
                raise GradcodesTypeError(name)
        for name in ("worst_res", "worst_canc", "worst_est", "worst_hi", "worst_res_hi", "worst_res_lo"):
            setattr(p, name, float(getattr(p, name)))
        return p


def _label_json(x: Any) -> Any:
    """A listed pattern as JSON: a responder tuple as a list, a tree pattern's text as is."""
    return x if isinstance(x, str) else [int(v) for v in x]


def _label_from_json(x: Any) -> Any:
    if isinstance(x, str):
        return x
    return tuple(int(v) for v in x)


def fold(dst: Any, src: Any, max_failures: int) -> None:
    """Merge ``src`` (a :class:`Piece` of later ranks) into ``dst`` (a Piece or a Tracker) exactly as one tracker
    walking both in rank order would have recorded them (strict ``>``: ties keep the earlier pattern; the distinct
    decodings are a union, held by a tracker's model)."""
    dst.checked += src.checked
    if src.worst_res > dst.worst_res:
        dst.worst_res = src.worst_res
        dst.worst_res_P = _like(dst.worst_res_P, src.worst_res_P, dst)
    if src.worst_canc > dst.worst_canc:
        dst.worst_canc = src.worst_canc
        dst.worst_canc_P = _like(dst.worst_canc_P, src.worst_canc_P, dst)
    dst.worst_est = max(dst.worst_est, src.worst_est)
    dst.worst_hi = max(dst.worst_hi, src.worst_hi)
    dst.worst_res_hi = max(dst.worst_res_hi, src.worst_res_hi)
    dst.worst_res_lo = max(dst.worst_res_lo, src.worst_res_lo)
    dst.n_failures += src.n_failures
    dst.failures.extend(src.failures[: max(0, max_failures - len(dst.failures))])
    dst.n_borderline += src.n_borderline
    dst.borderline.extend(src.borderline[: max(0, max_failures - len(dst.borderline))])
    if isinstance(dst, Piece):
        dst.hi = src.hi
        if src.distinct is not None:
            if dst.distinct is None:
                dst.distinct = set(src.distinct)          # a copy: dst owns its set and grows it in place
            else:
                dst.distinct.update(src.distinct)
    elif src.distinct:
        dst.model.add_distinct(src.distinct)


def _like(old: Any, new: list[int] | None, dst: Any) -> Any:
    if new is None or isinstance(dst, Piece):
        return new
    return np.asarray(new, dtype=getattr(dst.model, "pattern_dtype", np.int64))


# ---------------------------------------------------------------------------------------------------------------
# one chunk


def screen_chunk(template: Any, screen: Any, lo: int, hi: int, use_numba: bool) -> Piece:
    """Screen the straggler sets of ranks ``[lo, hi)`` (one grid chunk) and re-evaluate, with the reference rule,
    the sets the kernel hands on, the chunk's largest cancellation, its ``_TOP`` largest screened error estimates
    and its first failing sets; returns the chunk's :class:`Piece`. Sets the kernel clears count as checked, sets
    it proves failing as failures. Nothing outside the chunk is read, so the result does not depend on which
    thread or rank runs it, nor on the chunks before it.

    The re-evaluated sample also checks the kernel: a cleared or failing set that the reference judges otherwise
    sends the whole chunk through the reference evaluation (and is counted in :data:`SCREEN_DISAGREEMENTS`)."""
    from .._core.numerics import BORDERLINE, FAILS, OK
    from .fast import BORDER, CLEAR, FAIL, REFER, screen_range, unrank_lex

    code = template.code
    n, s = code.n, code.s
    first = unrank_lex(n, s, np.array([lo], dtype=np.int64))[0]
    count = hi - lo
    S, canc, res, up, rup, verdict = screen_range(screen, n, first, count, use_numba, best=np.zeros(1))
    pick = verdict == REFER                                    # sets for the reference evaluation
    j = int(np.argmax(canc))                                   # exact values are positive (bounds negative)
    if canc[j] > 0:
        pick[j] = True
    u_t = unit_roundoff(template.dtype) * math.sqrt(n - s + template.load)
    approx = u_t * np.abs(canc) + res
    decided = np.flatnonzero(verdict != REFER)
    if decided.size > _TOP:
        decided = decided[np.argpartition(approx[decided], -_TOP)[-_TOP:]]
    pick[decided] = True
    for kind in (FAIL, BORDER):                                # the failing and borderline sets listed are the
        pick[np.flatnonzero(verdict == kind)[:template.max_failures]] = True   # first ones
    ref = np.flatnonzero(pick)                                 # sorted, each set once
    tr = template.plain()
    tr.checked = count
    rest = ~pick
    if rest.any():                        # sets decided by the kernel alone: its upper bounds hold for them
        tr.worst_hi = float(up[rest].max())
        tr.worst_res_hi = float(rup[rest].max())
    if ref.size:
        Sr = S[ref]
        ev = tr.evaluate(Sr)
        vk = verdict[ref]
        if np.any((vk == CLEAR) & (ev.verdict != OK)) or np.any((vk == FAIL) & (ev.verdict != FAILS)) \
                or np.any((vk == BORDER) & (ev.verdict != BORDERLINE)):
            global SCREEN_DISAGREEMENTS
            SCREEN_DISAGREEMENTS += 1
            return reference_chunk(template, lo, hi)
        tr.record(Sr, ev, count=False)
    tr.n_failures += int(np.count_nonzero(rest & (verdict == FAIL)))
    tr.n_borderline += int(np.count_nonzero(rest & (verdict == BORDER)))
    return Piece.of(tr, lo, hi)


#: chunks in which the reference evaluation contradicted the screening kernel on a set it re-evaluated (each such
#: chunk was then evaluated by the reference alone); the tests require zero
SCREEN_DISAGREEMENTS = 0


def reference_chunk(template: Any, lo: int, hi: int) -> Piece:
    """Every pattern of ranks ``[lo, hi)`` (one grid chunk, at most a batch) through the reference evaluation, as
    one batch. A fresh tracker and a fresh copy of the model's per-run state (``PatternModel.fresh``): the result
    is a function of the chunk alone."""
    model = template.model.fresh()
    tr = template.blank(model)
    tr.add(model.patterns(lo, hi))
    return Piece.of(tr, lo, hi)


# ---------------------------------------------------------------------------------------------------------------
# progress: the folded prefix, the pieces done out of order, the checkpoint file


class Progress:
    """Done ranges of one enumeration: the folded prefix ``[0, prefix.hi)``, pieces done beyond it, and where a
    ``stop_on_failure`` run stops (the end of the first failing chunk known so far)."""

    def __init__(self, total: int, max_failures: int, stop_on_failure: bool, grid: Grid | None = None) -> None:
        self.total, self.max_failures, self.stop_on_failure = total, max_failures, stop_on_failure
        self.grid = screened_grid() if grid is None else grid
        self.prefix = Piece(0, 0)
        self.pending: dict[int, Piece] = {}
        self.stop_at: int | None = None

    @property
    def end(self) -> int:
        """Where the run ends: ``total`` or the stop point."""
        return self.total if self.stop_at is None else self.stop_at

    def add(self, piece: Piece) -> None:
        if piece.lo >= self.end or piece.lo < self.prefix.hi or piece.lo in self.pending:
            return                                # past the stop point, or done already
        if self.stop_on_failure and piece.n_failures:
            self.stop_at = piece.hi if self.stop_at is None else min(self.stop_at, piece.hi)
            self.pending = {lo: p for lo, p in self.pending.items() if lo < self.stop_at}
        self.pending[piece.lo] = piece
        while self.prefix.hi in self.pending:
            fold(self.prefix, self.pending.pop(self.prefix.hi), self.max_failures)

    def done(self) -> bool:
        return self.prefix.hi >= self.end

    def stopped(self) -> bool:
        """The run ended at a failing pattern before the last pattern (``stop_on_failure``)."""
        return bool(self.stop_at is not None and self.done() and self.prefix.checked < self.total)

    def todo(self) -> Iterator[tuple[int, int]]:
        """Chunks not done yet, in rank order (re-reads the state: a stop point found meanwhile ends it)."""
        lo = self.prefix.hi
        while lo < self.end:
            lo = max(lo, self.prefix.hi)          # pieces done before this one may have been folded meanwhile
            if lo >= self.end:
                return
            p = self.pending.get(lo)
            if p is not None:
                lo = p.hi
                continue
            stop = self.grid.start(self.grid.index(lo) + 1)
            yield lo, min(stop, self.total)
            lo = stop

    def result(self) -> Piece:
        """The pieces folded in rank order (the prefix, then the pieces beyond a gap: a partial run)."""
        out = Piece(0, 0)
        fold(out, self.prefix, self.max_failures)
        for lo in sorted(self.pending):
            if lo < self.end:
                fold(out, self.pending[lo], self.max_failures)
        return out

    # checkpoint file ------------------------------------------------------------------------------------------

    def save(self, path: str, key: str) -> None:
        """Write the state to ``path`` atomically (:func:`gradcodes._verify.checkpoint.write_state`)."""
        write_state(path, {"key": key, "total": self.total, "stop_at": self.stop_at, "prefix": self.prefix.to_json(),
                           "pending": [p.to_json() for _, p in sorted(self.pending.items())]})

    def load(self, path: str, key: str) -> bool:
        """Continue from ``path`` if it exists (False when it does not); refuses a file for another run."""
        state = read_state(path, key, self.total)
        if state is None:
            return False
        try:
            prefix = Piece.from_json(state["prefix"])
            pending = [Piece.from_json(p) for p in state["pending"]]
            stop_at = state["stop_at"]
            if stop_at is not None and not isinstance(stop_at, int):
                raise GradcodesTypeError("stop_at")
        except (KeyError, TypeError, ValueError) as exc:
            raise CheckpointError(f"checkpoint {path!r} is damaged ({exc}); delete it to start over") from exc
        if prefix.lo != 0 or any(not (0 <= p.lo < p.hi <= self.total) for p in [*pending]) \
                or not 0 <= prefix.hi <= self.total:
            raise CheckpointError(f"checkpoint {path!r} is damaged (ranges outside 0..{self.total}); delete it")
        self.prefix, self.stop_at = prefix, stop_at
        self.pending = {p.lo: p for p in pending}
        return True


# ---------------------------------------------------------------------------------------------------------------
# all local cores


class _Inline(cf.Executor):
    """The executor of a one-worker run: ``submit`` computes the chunk at once, in this process (an exception,
    Ctrl-C included, propagates from ``submit``)."""

    def submit(self, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> cf.Future[Any]:
        fut: cf.Future[Any] = cf.Future()
        fut.set_result(fn(*args, **kwargs))
        return fut


def _enough_work(progress: Progress, min_sets: int) -> bool:
    """At least ``_MIN_PARALLEL_CHUNKS`` chunks and ``min_sets`` patterns left: worth starting workers (about
    0.1-0.3 s each; the report is the same either way)."""
    chunks, sets = 0, 0
    for lo, hi in progress.todo():
        chunks, sets = chunks + 1, sets + hi - lo
        if chunks >= _MIN_PARALLEL_CHUNKS and sets >= min_sets:
            return True
    return False


def run_local(progress: Progress, compute: Callable[[int, int], Piece], workers: int, clock: Any,
              budget: float | None, saver: Saver, min_sets: int = _MIN_PARALLEL_SETS) -> bool:
    """Run the chunks not done on ``workers`` forked processes (or threads: :func:`_pool`; in this process for one
    worker or less work than ``min_sets`` patterns), folding the pieces in rank order; returns False when the time
    budget ran out (the pieces done are kept). Ctrl-C stops handing out chunks, keeps what finished, writes the
    checkpoint and re-raises.

    The parent process only hands out chunk bounds and folds the pieces (a few microseconds per chunk): the
    workers' cores do the work. Up to two chunks per worker are queued, so no worker waits for its next chunk.
    """
    if workers > 1 and not _enough_work(progress, min_sets):
        workers = 1
    pool: cf.Executor = _Inline() if workers <= 1 else _pool(workers, compute)
    fn: Callable[[int, int], Piece] = _forked_compute if isinstance(pool, cf.ProcessPoolExecutor) else compute
    ahead = 1 if workers <= 1 else 2 * workers
    todo = progress.todo()
    running: dict[cf.Future[Piece], int] = {}
    over = False
    try:
        def fill() -> None:
            for lo, hi in todo:
                running[pool.submit(fn, lo, hi)] = lo
                if len(running) >= ahead:
                    return

        fill()
        while running:
            finished, _ = cf.wait(list(running), return_when=cf.FIRST_COMPLETED)
            for fut in sorted(finished, key=lambda f: running[f]):
                del running[fut]
                piece = fut.result()
                progress.add(piece)
                clock.update(piece.checked)
            saver.maybe(progress)
            if budget is not None and clock.over_budget(budget):
                over = True
                break
            if progress.stop_at is not None:         # ranges past the first failing chunk are not needed
                for fut, lo in list(running.items()):
                    if lo >= progress.stop_at and fut.cancel():
                        del running[fut]
            fill()
    finally:
        for fut in running:
            fut.cancel()
        pool.shutdown(wait=True, cancel_futures=True)
        for fut in running:                          # finished while shutting down: keep them
            if fut.done() and not fut.cancelled() and fut.exception() is None:
                progress.add(fut.result())
        saver.final(progress)
        global _FORKED
        _FORKED = None
    return not over


#: local workers are forked processes where ``fork`` exists (the reference evaluation is numpy code that holds the
#: GIL between its calls, and it dominates codes with many sets near the tolerance and unscreened models); else
#: threads
_USE_PROCESSES = True
_FORKED: Callable[[int, int], Piece] | None = None


def _forked_compute(lo: int, hi: int) -> Piece:
    assert _FORKED is not None
    return _FORKED(lo, hi)


def _worker_init(parent: int) -> None:
    """In each forked worker: Ctrl-C is the parent's (it stops handing out chunks); a worker whose parent dies
    (a killed run) dies too instead of waiting for work forever (Linux ``PR_SET_PDEATHSIG``)."""
    import signal

    signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, int(signal.SIGKILL), 0, 0, 0)      # PR_SET_PDEATHSIG
    except (OSError, AttributeError):  # pragma: no cover - not Linux
        pass
    if os.getppid() != parent:                           # the parent died before prctl took effect
        os._exit(1)


def _pool(workers: int, compute: Callable[[int, int], Piece]) -> cf.Executor:
    """Forked processes that inherit ``compute`` (the code, its screen and decoder: nothing is pickled but the
    chunk bounds and the pieces), or threads where fork does not exist or ``_USE_PROCESSES`` is False."""
    global _FORKED
    import multiprocessing as mp

    if _USE_PROCESSES and "fork" in mp.get_all_start_methods():
        _FORKED = compute
        return cf.ProcessPoolExecutor(max_workers=workers, mp_context=mp.get_context("fork"),
                                      initializer=_worker_init, initargs=(os.getpid(),))
    return cf.ThreadPoolExecutor(max_workers=workers, thread_name_prefix="gradcodes-verify")


def check_workers(workers: int | None) -> int:
    """``workers=None`` means every core this process may use; else a positive int."""
    from .._base.validate import check_int

    return default_workers() if workers is None else check_int("workers", workers, 1)


# ---------------------------------------------------------------------------------------------------------------
# the two enumerations


def enumerate_chunks(tracker: Any, compute: Callable[[int, int], Piece], stop_on_failure: bool, clock: Any,
                     budget: float | None, *, grid: Grid, key: str, min_sets: int, workers: int = 1,
                     checkpoint: str | None = None, checkpoint_every: float = 60.0, comm: Any = None,
                     prepare: Callable[[Any], None] | None = None) -> bool:
    """Every chunk of ``grid`` over ``tracker.model.total`` patterns through ``compute``, on ``workers`` local
    processes or the ranks of ``comm``, continued from and saved to ``checkpoint`` (whose digest must be ``key``);
    ``prepare(comm or None)`` runs first on every rank (set-up shared by the chunks). The merged result lands in
    ``tracker``; returns whether the run stopped at a failing pattern before the last one."""
    model = tracker.model
    total = model.total
    if isinstance(getattr(model, "scale", None), dict):
        model.scale["used"] = True
    if comm is not None and comm.Get_size() > 1:
        return MPI_DRIVERS["enumerate"](tracker, compute, stop_on_failure, clock, budget, comm, grid=grid, key=key,
                             checkpoint=checkpoint, checkpoint_every=checkpoint_every, prepare=prepare)
    progress = Progress(total, tracker.max_failures, stop_on_failure, grid)
    if checkpoint is not None:
        progress.load(checkpoint, key)
    saver = Saver(checkpoint, key, checkpoint_every)
    if prepare is not None:
        prepare(None)
    if workers > 1 and getattr(model, "ranked", False) and total:
        # one pattern through the reference evaluation before the workers fork: its lazy imports and the
        # decoder's memoised set-up happen once, here, not once per worker while the cores should be working
        tracker.blank(model.fresh()).evaluate(model.patterns(0, 1))
    clock.total = max(1, total - progress.result().checked)
    clock.start = time.perf_counter()
    try:
        run_local(progress, compute, workers, clock, budget, saver, min_sets)
    finally:
        fold(tracker, progress.result(), tracker.max_failures)
    return progress.stopped()


def enumerate_screened(tracker: Any, screen: Any, stop_on_failure: bool, clock: Any, budget: float | None,
                       use_numba: bool, workers: int = 1, checkpoint: str | None = None,
                       checkpoint_every: float = 60.0, comm: Any = None) -> bool:
    """The screened exhaustive enumeration of a flat code (:func:`screen_chunk` on the screened grid)."""
    from .fast import screen_range

    code = tracker.code
    n, s = code.n, code.s

    def prepare(comm: Any) -> None:
        if comm is not None:                            # every rank screens with rank 0's arrays
            MPI_DRIVERS["share_screen"](comm, screen)
        screen_range(screen, n, np.arange(s, dtype=np.int64), 1, use_numba, best=np.zeros(1))  # compile first

    # the reference evaluation of the selected sets reads the code's memoised basis (computed above, by the screen)
    return enumerate_chunks(tracker, lambda lo, hi: screen_chunk(tracker, screen, lo, hi, use_numba),
                            stop_on_failure, clock, budget, grid=screened_grid(), key=run_key(tracker, stop_on_failure),
                            min_sets=_MIN_PARALLEL_SETS, workers=workers, checkpoint=checkpoint,
                            checkpoint_every=checkpoint_every, comm=comm, prepare=prepare)


def enumerate_reference(tracker: Any, batch: int, stop_on_failure: bool, clock: Any, budget: float | None,
                        workers: int = 1, checkpoint: str | None = None, checkpoint_every: float = 60.0,
                        comm: Any = None) -> bool:
    """The exhaustive enumeration of any ranked pattern model through the reference evaluation
    (:func:`reference_chunk` on the reference grid): exact fields, decoders without a screen, trees. The chunks
    are the batches the one-core engine has always checked, so the report is the one-core report."""
    grid = reference_grid(batch, budget is not None)
    key = run_key(tracker, stop_on_failure, evaluation="reference", grid=grid.key(),
                  model=type(tracker.model).__name__, total=int(tracker.model.total))
    return enumerate_chunks(tracker, lambda lo, hi: reference_chunk(tracker, lo, hi),
                            stop_on_failure, clock, budget, grid=grid, key=key, min_sets=_MIN_PARALLEL_REF_SETS,
                            workers=workers, checkpoint=checkpoint, checkpoint_every=checkpoint_every, comm=comm)


def run_key(tracker: Any, stop_on_failure: bool, **extra: Any) -> str:
    """The digest a checkpoint must carry: the code and every argument that changes a chunk's result."""
    dec = getattr(tracker.model, "dec", None)
    if not extra:
        extra = {"grid": [*_FIRST, _CHUNK, _TOP]}
    return digest(tracker.code, rtol=repr(float(tracker.rtol)), dtype=str(tracker.dtype), load=tracker.load,
                  decoder=getattr(dec, "name", None), stop_on_failure=bool(stop_on_failure),
                  max_failures=tracker.max_failures, **extra)
