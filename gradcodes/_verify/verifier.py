"""The verifier: exact recovery from every set of ``n - s`` responders; its verdict ``ok`` is a proof.

``verify(code)`` checks ``A_F B = E`` for straggler sets ``S`` (``|S| = s``, responders ``F = [n] \\ S``; any
superset of a good ``F`` is good too). A float code passes a set when the error bound of a decode in the messages'
dtype (:func:`gradcodes._core.numerics.error_estimate`: ``gamma_{t+2} canc + ||A_F B - E||_inf + ...`` with ``canc`` the
worst column of ``|A_F| |B|``, a bound for every gradient) is within ``rtol`` on every machine: the upper end
of the acceptance rule's interval (:func:`gradcodes._core.numerics.judge`, which bounds the verifier's own rounding and
the variation of the decoding matrix between BLAS kernels, batch sizes and thread counts) must clear it; a set
whose interval straddles ``rtol`` is *borderline* and makes the report unproven (docs/acceptance.md). A code whose
decoding vectors cancel away every digit fails, it is not "exact"; rational and GF(p) codes are checked with no
rounding at all.

**Three verdicts.** A report is truthy (``bool(report)``, ``report.exact``, ``report.proven``) only for a proof:

* every straggler set was checked (exhaustive enumeration; by default whenever ``C(n, s)`` is within the default
  budget, a count of sets from the fixed cost model of :mod:`gradcodes._verify.cost`, so the verdict is the
  same on every machine under any load), or
* the decoder states a theorem for this code (``Decoder.theorem(code)``, e.g. the 0/1 group decoder of
  fractional repetition: every group of ``>= s + 1`` identical 0/1 rows keeps a responder), which the verifier
  checks on the actual matrix ``B`` and its acceptance rule, and no checked set failed.

Otherwise the verdict is ``unproven`` ("no failure found in N of M sets, not a proof"), or ``FAILS`` /
``inaccurate`` when a checked set fails. A GF(p) check (``field="GF"``) proves the algebra of the construction
over GF(p); it says nothing about rounding in the float code, and its report says so.

The engine (:mod:`gradcodes._verify.engine`: tracker, acceptance rule, enumeration or sampling, progress, Ctrl-C,
time budget) is shared with CodedReduce trees; this module supplies the straggler-set model of a flat code
(:class:`StragglerSets`) and the screening kernel of :mod:`gradcodes._verify.fast` as its fast enumeration.

When enumeration does not fit, the consecutive ("cyclic window") sets, random sets, a restarted coordinate ascent on
the size of the null-space solve (:mod:`gradcodes._verify.search`, which explains why the bad sets of random codes
are rare and how they are found) and greedy swaps look for failing sets.
"""

from __future__ import annotations

import itertools
import math
import os
import time
from collections.abc import Iterator
from fractions import Fraction
from typing import Any

import numpy as np

from .._base.aliases import DTypeLike, FieldLike, RNGLike
from .._base.errors import GradcodesTypeError, GradcodesValueError
from .._base.validate import check_int, check_real, check_rng, check_size
from .._core.code import GradientCode, LinearCode
from .._core.decoders import Decoder
from .._core.numerics import tolerance, unit_roundoff
from . import cost as _cost
from . import fast as _verify_fast
from .bounds import meets_min_load, min_load
from .cost import flat_default_limit
from .engine import Clock, Outcome, PatternModel, Tracker, run
from .fast import NullSpaceScreen, lex_straggler_batches, unrank_lex
from .report import VerifyReport

__all__ = ["verify", "VerifyReport", "straggler_batches", "default_rtol"]

_MAX_FAILURES = 10
#: the compiled (numba) kernel; False selects the pure-numpy screen (same results, slower; tested)
_USE_NUMBA = True
#: below this many sets the numpy screen (about 2.4 microseconds per set at (40, 4), against 0.4 compiled) costs
#: less than loading numba and the cached kernel (about 0.4 s in a fresh process), unless the kernel is loaded
_NUMBA_MIN_SETS = 200_000


def default_rtol(dtype: Any, code_rtol: float) -> float:
    """Default acceptance tolerance for messages of ``dtype``: the code's float64 ``rtol`` carried over to the dtype
    by :func:`gradcodes._core.numerics.tolerance` (the same share of the dtype's digits; 2.4e-4 for float32 at the
    default 1e-8), the tolerance the decoders use.

    >>> default_rtol(np.float64, 1e-8), round(default_rtol(np.float32, 1e-8), 6)
    (1e-08, 0.000238)
    """
    return tolerance(code_rtol, dtype)


def check_dtype_rtol(dtype: Any, rtol: float | None, code_rtol: float) -> tuple[np.dtype, float]:
    """The checked message dtype (a numpy float or complex dtype) and acceptance tolerance (``0 < rtol < 1``;
    default :func:`default_rtol`) of a verification."""
    try:
        dt = np.dtype(dtype)
    except TypeError as exc:
        raise GradcodesValueError(f"dtype must be a numpy float or complex dtype, got {dtype!r}") from exc
    if dt.kind not in "fc":
        raise GradcodesValueError(f"dtype must be a numpy float or complex dtype, got {dt}")
    return dt, check_real("rtol", default_rtol(dt, code_rtol) if rtol is None else rtol, 0, 1, open_lo=True,
                          open_hi=True)


def straggler_batches(n: int, s: int, batch: int) -> Iterator[np.ndarray]:
    """All ``C(n, s)`` straggler sets in lexicographic order, as (b, s) int arrays of at most ``batch`` rows.

    Memory is O(batch * s) whatever ``C(n, s)`` (vectorised unranking, see :mod:`gradcodes._verify.fast`).

    >>> [b.tolist() for b in straggler_batches(4, 2, 4)]
    [[[0, 1], [0, 2], [0, 3], [1, 2]], [[1, 3], [2, 3]]]
    """
    return lex_straggler_batches(n, s, batch)


def _masks(n: int, S: np.ndarray) -> np.ndarray:
    mask = np.ones((S.shape[0], n), dtype=bool)
    np.put_along_axis(mask, S, False, axis=1)
    return mask


def _consecutive(n: int, s: int) -> np.ndarray:
    return (np.arange(n)[:, None] + np.arange(s)[None, :]) % n


def random_straggler_sets(n: int, s: int, count: int, rng: np.random.Generator) -> np.ndarray:
    """``count`` uniformly random straggler sets of size ``s`` as a sorted (count, s) int array."""
    return np.sort(np.argsort(rng.random((count, n)), axis=1)[:, :s], axis=1)


class StragglerSets(PatternModel):
    """The straggler model of a flat code: every set of ``s`` of the ``n`` workers (rows: sorted int sets)."""

    noun = "straggler sets"
    ranked = True

    def __init__(self, code: GradientCode, dec: Decoder, search_seconds: float | None = None) -> None:
        self.code, self.dec, self.search_seconds = code, dec, search_seconds
        self.total = math.comb(code.n, code.s)
        #: how the exhaustive enumeration runs (workers, checkpoint, checkpoint_every, comm)
        self.scale: dict[str, Any] = {}
        self._table: np.ndarray | None = None
        self._combos: tuple[int, Iterator[tuple[int, ...]]] | None = None

    def batches(self, batch: int) -> Iterator[np.ndarray]:
        return lex_straggler_batches(self.code.n, self.code.s, batch)

    def patterns(self, lo: int, hi: int) -> np.ndarray:
        """The straggler sets of lexicographic ranks ``[lo, hi)``.

        Ranks are unranked with an int64 table when ``C(n, s)`` fits; beyond (a limited enumeration of a code with
        more sets than int64 counts), the sets come from :func:`itertools.combinations`, continued from the last
        chunk when the chunks are consecutive."""
        n, s = self.code.n, self.code.s
        if self.total >= _verify_fast._INT_LIMIT:
            if self._combos is None or self._combos[0] != lo:
                self._combos = (lo, itertools.islice(itertools.combinations(range(n), s), lo, None))
            it = self._combos[1]
            flat = np.fromiter(itertools.chain.from_iterable(itertools.islice(it, hi - lo)), dtype=np.int64)
            self._combos = (hi, it)
            return flat.reshape(-1, s)
        if self._table is None:
            self._table = _verify_fast._binom_table(n, s)
        return unrank_lex(n, s, np.arange(lo, hi, dtype=np.int64), self._table)

    def structured(self, batch: int) -> Iterator[tuple[str, np.ndarray]]:
        n, s = self.code.n, self.code.s
        yield "consecutive", np.unique(np.sort(_consecutive(n, s), axis=1), axis=0)

    def random(self, count: int, rng: np.random.Generator) -> np.ndarray:
        return random_straggler_sets(self.code.n, self.code.s, count, rng)

    def decode(self, P: np.ndarray) -> tuple[Any, np.ndarray, None]:
        code = self.code
        mask = _masks(code.n, P)
        A = self.dec.matrices(code, mask)
        idx = np.broadcast_to(P[:, None, :], (P.shape[0], A.shape[1], P.shape[1]))
        nz = np.asarray(np.take_along_axis(A, idx, axis=2) != 0, dtype=bool)
        off = np.asarray(nz.reshape(P.shape[0], -1).any(axis=1), dtype=bool)
        return A, off, None

    def responders(self, p: np.ndarray) -> tuple[int, ...]:
        out = set(range(self.code.n))
        out.difference_update(int(i) for i in p)
        return tuple(sorted(out))

    def fast_enumerate(self, tracker: Tracker, clock: Clock, stop_on_failure: bool,
                       budget: float | None) -> bool | None:
        code = self.code
        if code.exact or self.total < _cost._KERNEL_MIN_SETS or not NullSpaceScreen.applies(code, self.dec):
            return None
        screen = NullSpaceScreen(code, unit_roundoff(tracker.dtype), tracker.rtol, tracker.load)
        return _enumerate_screened(tracker, screen, code, stop_on_failure, clock, budget, self.scale)

    def search(self, tracker: Tracker, parts: list[tuple[np.ndarray, np.ndarray]], rng: np.random.Generator,
               batch: int) -> dict[str, int]:
        from .search import local_search, restart_search

        got: dict[str, int] = {}
        if self.code.s == 0:
            return got
        found = restart_search(tracker, self.code, rng, seconds=self.search_seconds)
        if found is not None:
            parts.append(found)
            got["restart search"] = found[0].shape[0]
        if not (tracker.stop_on_failure and tracker.n_failures):
            got["local search"] = local_search(tracker, parts, rng, batch)
        return got


class _Tracker(Tracker):
    """The engine's tracker on a flat code's straggler sets (``_Tracker(code, decoder, rtol)``)."""

    def __init__(self, code: GradientCode, dec: Decoder, rtol: float, dtype: Any = np.float64,
                 search_seconds: float | None = None) -> None:
        super().__init__(StragglerSets(code, dec, search_seconds), rtol, dtype, _MAX_FAILURES)




def _enumerate_screened(tracker: Tracker, screen: NullSpaceScreen, code: GradientCode, stop_on_failure: bool,
                        clock: Clock, budget: float | None, scale: dict[str, Any] | None = None) -> bool:
    """Enumeration through the screening kernel, chunk by chunk on a fixed grid of ranks
    (:mod:`gradcodes._verify.parallel`): sets it cannot decide go to the reference evaluation; so do each chunk's
    worst-cancellation set, its largest screened estimates and its first failing and borderline sets, so the
    reported worst values and the sets listed are the reference's, whatever the number of threads or ranks
    (``scale``: ``workers``, ``checkpoint``, ``checkpoint_every``, ``comm``)."""
    from .parallel import enumerate_screened

    total = math.comb(code.n, code.s)        # small enumerations skip loading the compiled kernel (cold start)
    use_numba = _USE_NUMBA and (total >= _NUMBA_MIN_SETS or _verify_fast._KERNEL is not None)
    keys = ("workers", "checkpoint", "checkpoint_every", "comm")
    scale = scale or {}
    return enumerate_screened(tracker, screen, stop_on_failure, clock, budget, use_numba,
                              **{k: scale[k] for k in keys if k in scale})


def verify(code: LinearCode, *, limit: int | None = None, samples: int = 2000, search: bool = True,
           rng: RNGLike = None, rtol: float | None = None, decoder: str | Decoder | None = None,
           field: FieldLike | None = None, stop_on_failure: bool = True, batch_size: int | None = None,
           progress: bool | None = None, dtype: DTypeLike = np.float64, time_budget: float | None = None,
           search_seconds: float | None = None, workers: int | None = None,
           checkpoint: str | os.PathLike[str] | None = None, checkpoint_every: float = 60.0,
           comm: Any = None) -> VerifyReport:
    """Check that every set of ``n - s`` responders recovers the gradient; ``ok`` only for a proof.

    Parameters
    ----------
    code : GradientCode
        The code to check.
    limit : int, optional
        The most straggler sets enumerated. All ``C(n, s)`` sets are enumerated (a proof when none fails) when
        there are at most ``limit``; otherwise none is, and the sampled check runs instead: the consecutive sets,
        ``samples`` random sets and, with ``search``, the search (not a proof, unless the decoder states a theorem
        for the code). ``limit=0`` never enumerates, however small the code. Memory does not grow with it; a time
        estimate is printed on stderr for long runs. A code proven by blocks (:func:`gradcodes.by_blocks`) shares
        its budget (``limit``, the default one or ``time_budget``) among its distinct blocks, in order: each block
        is enumerated when it fits what is left, else sampled (the report says which). Default (``limit=None``,
        ``time_budget=None``): enumerate when ``C(n, s)`` is at most the default budget, ``floor(10 s / c)``
        sets, where ``c`` is the microseconds per set that the fixed cost model of the verifier's cost model
        predicts from ``n``, ``s``, ``k``, ``m``, the non-zeros of ``B``, the field and the decoder (constants
        measured on one core of a 2-core x86-64 machine), or at most as many sets as the sampled check would
        check (``n + samples``, plus 2000 with ``search``). It never depends on a clock, the machine's load or
        ``workers``: the same call gives the same verdict and the same counts everywhere.
    samples : int, default 2000
        Random straggler sets checked when not exhaustive.
    search : bool, default True
        When not exhaustive, search for failing sets: coordinate ascent on the size of the s x s null-space
        solve from random starts (null-space codes; ``search_seconds``), then greedy swaps from the worst sets.
    rng : None, int, numpy.random.SeedSequence or numpy.random.Generator, optional
        Random state of the random sets and the search (exhaustive checks use none), as scientific Python's
        SPEC 7 recommends: None for fresh entropy, an int, a SeedSequence or a Generator.
    rtol : float, optional
        Accepted predicted relative error. Default: :func:`default_rtol` (the code's ``rtol``, 1e-8, for
        float64 messages; the same share of digits for other dtypes, 2.4e-4 for float32).
    decoder : str or Decoder, optional
        The decoder to check (default: the code's default decoder).
    field : galois field class or "GF", optional
        Verify the same construction over a finite field instead, with no rounding at all. This proves the
        algebra only, not the float code's acceptance rule (the report says so).
    stop_on_failure : bool, default True
        Stop after the first batch that contains a failing set (then failing-set counts are lower bounds).
    batch_size : int, optional
        Straggler sets per batch of the reference evaluation.
    progress : bool, optional
        Progress on stderr (default: for runs predicted to take more than 10 s).
    dtype : numpy dtype, default float64
        Dtype of the messages the decodes will run in: the acceptance rule uses its unit roundoff.
    time_budget : float, optional
        A wall-clock budget instead of the default count (ignored when ``limit`` is given): enumerate while the
        rate measured on the first batches predicts that all ``C(n, s)`` sets fit this many seconds, else check a
        lexicographic prefix and sample. The verdict then depends on the machine's speed and load; 0 never
        enumerates more than ``samples`` would check. Default None: the count budget of ``limit``.
    search_seconds : float, optional
        A wall-clock budget in seconds for the restarted search (when not exhaustive). Default None: a fixed
        count of moves from the same cost model (``benchmarks/verify/verify_cost_model.py``, about 1 s of one
        core), so the sets searched, and the verdict, are the same on every machine for a given ``rng``.
    workers : int, optional
        Local processes of the exhaustive enumeration (default: every core this process may use,
        ``os.sched_getaffinity``; started only for enough work, and threads where ``fork`` does not exist). The
        report is the same for every value (the same sets, checked in the same order), for every code: float, exact
        (rational, GF(p)), any decoder, trees and blocks.
    checkpoint : path, optional
        A file where the exhaustive enumeration saves its progress (atomically, at most every
        ``checkpoint_every`` seconds and at the end); a run given an existing checkpoint continues from it and
        reports what the uninterrupted run would have. A checkpoint of another code or other arguments, or a
        damaged file, raises :class:`~gradcodes.CheckpointError`.
    checkpoint_every : float, default 60
        Seconds between checkpoint writes (the most work a killed run loses).
    comm : mpi4py communicator, optional
        Share the enumeration among the ranks of ``comm`` (every rank calls ``verify`` with the same arguments
        and gets the same report): rank 0 hands out rank ranges on request and merges the results exactly.

    Returns
    -------
    VerifyReport
        Truthy only for a proof. Ctrl-C during the run returns the partial report, marked interrupted. (Tree
        codes verify under their own straggler model: :func:`gradcodes.verify_tree`.)

    Raises
    ------
    GradcodesTypeError
        ``code`` is not an exact gradient code (approximate codes: :func:`gradcodes.evaluate_approximate`), or an
        argument has the wrong type.
    GradcodesValueError
        An argument outside its valid range (``limit``, ``samples``, ``rtol``, ``dtype``, ...; named in the
        message).
    SizeLimitError
        A batch of the enumeration would exceed a bound of :data:`gradcodes.limits`.

    Examples
    --------
    >>> import gradcodes as gc
    >>> report = gc.verify(gc.cyclic_repetition(10, 3, rng=1))
    >>> report.verdict, report.exhaustive, report.patterns_checked, bool(report)
    ('ok', True, 120, True)

    A corrupted matrix is rejected, naming a failing responder set:

    >>> import numpy as np
    >>> B = gc.fractional_repetition(6, 1).B.copy()
    >>> B[0, 0] = 0.0
    >>> bad = gc.verify(gc.GradientCode(B, s=1))
    >>> bad.verdict, bad.failing_responders
    ('FAILS', (0, 2, 3, 4, 5))

    Local processes (``workers``) share the enumeration; the report is the same on any number of them:

    >>> code = gc.cyclic_repetition(30, 5, rng=2)
    >>> one, two = gc.verify(code, workers=1), gc.verify(code, workers=2)
    >>> (one.verdict, one.worst_cancellation_responders) == (two.verdict, two.worst_cancellation_responders)
    True

    Sampling is never a proof:

    >>> gc.verify(gc.cyclic_repetition(30, 3, rng=2), limit=100, samples=50, rng=0).verdict
    'unproven'
    """
    scale = _scale_options(workers, checkpoint, checkpoint_every, comm)        # checked before any work
    hook = getattr(code, "_verify_hook", None)
    if hook is not None:  # code types with their own straggler model (CodedReduce trees) verify themselves
        return hook(limit=limit, samples=samples, search=search, rng=rng, rtol=rtol, decoder=decoder,
                    field=field, stop_on_failure=stop_on_failure, batch_size=batch_size, progress=progress,
                    dtype=dtype, time_budget=time_budget, workers=workers, checkpoint=checkpoint,
                    checkpoint_every=checkpoint_every, comm=comm)
    if field is not None:
        code = code.in_field(field)
    if not isinstance(code, GradientCode):
        raise GradcodesTypeError(f"verify() checks exact gradient codes (GradientCode); got {type(code).__name__}. "
                                 f"Approximate codes are judged by their error, not by exact recovery: use "
                                 f"gradcodes.evaluate_approximate(code) (command line: gradcodes evaluate).")
    dt, rtol = check_dtype_rtol(dtype, rtol, code.rtol)
    samples = check_int("samples", samples, 0)
    time_budget = None if time_budget is None else check_real("time_budget", time_budget, 0)
    search_seconds = None if search_seconds is None else check_real("search_seconds", search_seconds, 0)
    check_size("the sampled straggler sets times n", samples * code.n, "work")
    rng = check_rng(rng)
    dec = code._decoder(decoder)
    by_blocks = getattr(dec, "verify_by_blocks", None)   # block decoders: proof by blocks (gradcodes._verify.blocks)
    if by_blocks is not None:
        return by_blocks(code, limit=limit, samples=samples, search=search, rng=rng, rtol=rtol,
                         stop_on_failure=stop_on_failure, batch_size=batch_size, progress=progress, dtype=dt,
                         time_budget=time_budget, search_seconds=search_seconds, workers=workers,
                         checkpoint=checkpoint, checkpoint_every=checkpoint_every, comm=comm)
    n, s = code.n, code.s
    total = math.comb(n, s)
    if limit is not None:
        limit = check_int("limit", limit, 0)
    if code.sparse and limit is None:
        # a code stored sparse (a large one): a theorem of the decoder, checked on the non-zeros, proves it
        # without enumerating or sampling straggler sets
        theorem_report = _theorem_report(code, dec, rtol, dt)
        if theorem_report is not None:
            return theorem_report
    if batch_size is None:
        per_set = 8 * (n * code.m * 4 + code.k * code.m * code.m + n * n)
        batch_size = int(min(8192, max(256, 2**23 // per_set)))        # ~8 MB of work arrays: cache friendly
        if code.exact:
            batch_size = 64
    batch_size = check_int("batch_size", batch_size, 1)
    start = time.perf_counter()
    tracker = _Tracker(code, dec, rtol, dt, search_seconds)
    # a partition on at most s workers fails exactly; decided without decoding when the sets are too many to
    # enumerate at once (a matrix of zeros would otherwise spend its time budget setting up a decoder)
    silenced = _silenced_partition(code) if total > n + samples + 2000 and limit is None else None
    if silenced is not None:          # a partition on at most s workers: those stragglers fail exactly, no decode
        j, S = silenced
        tracker.failures.append(tuple(i for i in range(n) if i not in set(S)))
        tracker.n_failures = 1
        out = Outcome(strategies={"structure": 0}, notes=[
            f"partition {j} is stored by only {int(code.replication[j])} <= s = {s} workers: straggling together "
            f"they silence it, so no decoder recovers it from those responders (exact; no set was decoded)"])
        tracker.worst_res = tracker.worst_res_lo = 1.0
    assert isinstance(tracker.model, StragglerSets)
    tracker.model.scale = scale
    if comm is not None and comm.Get_size() > 1:     # every rank samples and searches the same sets
        rng = np.random.default_rng(comm.bcast(int(rng.integers(2**63)) if comm.Get_rank() == 0 else None, root=0))
    # a theorem of the decoder (checked on B) proves the code without enumeration; the sets are still sampled,
    # without the search
    theorems: list[str | None] = [None]

    def before_sampling() -> bool:
        theorems[0] = _theorem(code, dec, rtol, dt)
        return theorems[0] is None

    # sampling would check about this many sets: enumerating is then cheaper and a proof
    if silenced is None:
        out = run(tracker, limit=limit, samples=samples, search=search, rng=rng, batch=batch_size,
                  stop_on_failure=stop_on_failure, progress=progress, time_budget=time_budget,
                  sampled_size=n + samples + (2000 if search else 0), desc=f"verify {code.name}",
                  before_sampling=before_sampling,
                  set_budget=flat_default_limit(code, dec) if limit is None and time_budget is None else None)
    theorem, exhaustive, interrupted, stopped = theorems[0], out.exhaustive, out.interrupted, out.stopped
    strategies, notes = out.strategies, out.notes
    if theorem is not None and (exhaustive or interrupted or tracker.n_failures):
        theorem = None
    scale = tracker.model.scale
    if (scale["checkpoint"] is not None or (comm is not None and comm.Get_size() > 1)) and not scale.get("used"):
        notes.append("checkpoint / comm not used: they serve the exhaustive enumeration (this run was sampled)")
    if code.exact:
        notes.append(f"exact arithmetic over {code.field}: no rounding")
    if code.field.startswith("GF("):
        notes.append(f"a {code.field} check proves the construction's algebra; the float code's rounding "
                     f"(cancellation) is not covered: verify the float code for that")
    if tracker.n_borderline:
        notes.append(borderline_note(tracker))
    proven = tracker.n_failures == 0 and tracker.n_borderline == 0 and (exhaustive or theorem is not None)
    bound = min_load(n, s, code.m, code.k) if s + code.m <= n else Fraction(code.k * (s + code.m), n)
    loads = code.loads
    return VerifyReport(
        name=code.name, n=n, s=s, k=code.k, m=code.m, field=code.field, decoder=dec.name,
        exact=proven, exhaustive=exhaustive,
        patterns_checked=tracker.checked, patterns_total=total, strategies=strategies,
        worst_residual=max(tracker.worst_res, 0.0), worst_responders=tracker.worst_res_S,
        worst_cancellation=max(tracker.worst_canc, 0.0) if tracker.worst_canc_S else float("nan"),
        worst_cancellation_responders=tracker.worst_canc_S, error_estimate=tracker.worst_est,
        failures=tracker.failures, n_failures=tracker.n_failures, borderline=tracker.borderline,
        n_borderline=tracker.n_borderline, worst_residual_bound=max(tracker.worst_res_hi, 0.0),
        worst_residual_lower=None if code.exact else tracker.worst_res_lo, error_bound=tracker.worst_hi,
        load=int(loads.max()),
        average_load=Fraction(int(loads.sum()), n), load_lower_bound=bound,
        meets_lower_bound=s + code.m <= n and meets_min_load(int(loads.max()), n, s, code.m, code.k),
        rtol=rtol, seconds=time.perf_counter() - start, stopped_early=stopped, notes=notes, theorem=theorem,
        interrupted=interrupted, dtype=str(dt))


def _theorem_report(code: GradientCode, dec: Decoder, rtol: float, dt: np.dtype) -> VerifyReport | None:
    """The report of a proof by the decoder's theorem alone (no straggler set enumerated or sampled), or None when
    the decoder states no theorem for this code. The residual, cancellation and error estimate are those of one
    responder set (the last ``n - s`` workers), which the theorem shows are the same for every set."""
    start = time.perf_counter()
    theorem = _theorem(code, dec, rtol, dt)
    if theorem is None:
        return None
    from .._core.numerics import error_estimate

    n, s = code.n, code.s
    F = np.arange(s, n)
    mask = np.zeros(n, dtype=bool)
    mask[F] = True
    A, res, canc = code._raw_decoding_matrix(F, mask, dec)
    est = float(error_estimate(canc, res, dt, code._terms(A)))
    loads = code.loads
    Ft = tuple(int(i) for i in F)
    return VerifyReport(
        name=code.name, n=n, s=s, k=code.k, m=code.m, field=code.field, decoder=dec.name, exact=est <= rtol,
        exhaustive=False, patterns_checked=0, patterns_total=math.comb(n, s), strategies={"theorem": 0},
        worst_residual=res, worst_responders=Ft, worst_cancellation=canc, worst_cancellation_responders=Ft,
        error_estimate=est, failures=[], n_failures=0, load=int(loads.max()),
        average_load=Fraction(int(loads.sum()), n),
        load_lower_bound=min_load(n, s, code.m, code.k) if s + code.m <= n else Fraction(code.k * (s + code.m), n),
        meets_lower_bound=s + code.m <= n and meets_min_load(int(loads.max()), n, s, code.m, code.k),
        rtol=rtol, seconds=time.perf_counter() - start, theorem=theorem, dtype=str(dt), error_bound=est,
        notes=["proof by the decoder's theorem, checked on the stored non-zeros of B; no straggler set was "
               "enumerated or sampled (the code is stored sparse)"])


def _silenced_partition(code: GradientCode) -> tuple[int, list[int]] | None:
    """``(j, S)``: a partition ``j`` stored by at most ``s`` workers and a straggler set ``S`` (its holders, padded
    with the lowest other workers) that leaves it undecodable; None when every partition has ``s + 1`` holders."""
    rep = np.asarray(code.replication)
    if rep.size == 0 or int(rep.min()) > code.s:
        return None
    j = int(np.argmin(rep))
    holders = [int(i) for i in np.flatnonzero(code.support_matrix[:, j])]
    others = [i for i in range(code.n) if i not in set(holders)]
    return j, sorted(holders + others[: code.s - len(holders)])
def _scale_options(workers: int | None, checkpoint: Any, checkpoint_every: float, comm: Any) -> dict[str, Any]:
    from .parallel import check_workers

    if comm is not None and not all(callable(getattr(comm, a, None)) for a in ("Get_size", "Get_rank", "Dup")):
        raise GradcodesTypeError(f"comm must be an mpi4py communicator (e.g. mpi4py.MPI.COMM_WORLD) or None, got "
                         f"{comm!r}")
    return {"workers": check_workers(workers), "checkpoint": None if checkpoint is None else os.fspath(checkpoint),
            "checkpoint_every": check_real("checkpoint_every", checkpoint_every, 0), "comm": comm}


def borderline_note(tracker: Tracker) -> str:
    """The report's note on borderline sets (the acceptance rule's interval straddles the tolerance)."""
    return (f"{tracker.n_borderline:,} {tracker.model.noun} are borderline: their error estimate is within the "
            f"rounding allowance of the tolerance {tracker.rtol:.3g} ({tracker.dtype}), so a decode may be accepted "
            f"on one BLAS kernel, batch size or thread count and refused on another (the acceptance rule; "
            f"GradientCode.error_estimate gives one set's estimate)")


def _theorem(code: LinearCode, dec: Decoder, rtol: float, dtype: np.dtype) -> str | None:
    """The decoder's theorem for this code, if it states one (``Decoder.theorem(code, u, rtol)``)."""
    fn = getattr(dec, "theorem", None)
    if fn is None:
        return None
    return fn(code, unit_roundoff(dtype), rtol)


