"""The verifier: exact recovery from every set of ``n - s`` responders; its verdict ``ok`` is a proof.

``verify(code)`` checks ``A_F B = E`` for straggler sets ``S`` (``|S| = s``, responders ``F = [n] \\ S``; any
superset of a good ``F`` is good too). A float code passes a set when the predicted relative error of a decode in
the messages' dtype, ``u * canc + ||A_F B - E||_inf``, is at most ``rtol`` (so a code whose decoding vectors
cancel away every digit fails, it is not "exact"); rational and GF(p) codes are checked with no rounding at all.

**Three verdicts.** A report is truthy (``bool(report)``, ``report.exact``, ``report.proven``) only for a proof:

* every straggler set was checked (exhaustive enumeration; the default whenever it fits ``time_budget`` seconds
  at the rate measured on the first batch), or
* the decoder states a theorem for this code (``Decoder.theorem(code)``, e.g. the 0/1 group decoder of
  fractional repetition: every group of ``>= s + 1`` identical 0/1 rows keeps a responder), which the verifier
  checks on the actual matrix ``B`` and its acceptance rule, and no checked set failed.

Otherwise the verdict is ``unproven`` ("no failure found in N of M sets, not a proof"), or ``FAILS`` /
``inaccurate`` when a checked set fails. A GF(p) check (``field="GF"``) proves the algebra of the construction
over GF(p); it says nothing about rounding in the float code, and its report says so.

When enumeration does not fit, the consecutive ("cyclic window") sets, random sets, a restarted coordinate ascent on
the size of the null-space solve (:mod:`gradcodes._verify_search`, which explains why the bad sets of random codes
are rare and how they are found) and greedy swaps look for failing sets.
"""

from __future__ import annotations

import itertools
import math
import sys
import time
from collections.abc import Iterator
from fractions import Fraction
from typing import Any

import numpy as np

from ._bounds import meets_min_load, min_load
from ._code import GradientCode, LinearCode
from ._decoders import Decoder, single_threaded_blas
from ._numerics import cancellation, error_estimate, residuals, tolerance, unit_roundoff
from ._typing import DTypeLike, FieldLike, RNGLike, Unset
from ._validate import SEED_UNSET, check_int, check_real, check_rng, check_size, take_rng
from ._verify_fast import NullSpaceScreen, lex_straggler_batches, screen_range
from ._verify_report import VerifyReport, _hms

__all__ = ["verify", "VerifyReport", "straggler_batches", "default_rtol"]

_MAX_FAILURES = 10
#: sets per call of the compiled kernel (the verifier checks for Ctrl-C, progress and the budget in between)
_KERNEL_CHUNK = 1 << 16
#: below this many sets the screening kernel is not worth its set-up (and numba's first-use compilation)
_KERNEL_MIN_SETS = 50_000
#: the compiled (numba) kernel; False selects the pure-numpy screen (same results, slower; tested)
_USE_NUMBA = True


def default_rtol(dtype: Any, code_rtol: float) -> float:
    """Default acceptance tolerance for messages of ``dtype``: the code's float64 ``rtol`` carried over to the dtype
    by :func:`gradcodes._numerics.tolerance` (the same share of the dtype's digits; 2.4e-4 for float32 at the
    default 1e-8), the tolerance the decoders use.

    >>> default_rtol(np.float64, 1e-8), round(default_rtol(np.float32, 1e-8), 6)
    (1e-08, 0.000238)
    """
    return tolerance(code_rtol, dtype)


def _accepts(canc: np.ndarray, res: np.ndarray, rtol: float, dtype: Any) -> np.ndarray:
    """The acceptance rule in the messages' dtype: ``u(dtype) * canc + res <= rtol`` (finite), ``rtol`` already the
    dtype's tolerance. The one place that decides; it is :func:`gradcodes._numerics.accepts` with one term (the
    decoders also count ``sqrt(terms)`` rounded additions, which depend on the message length, not on the code)."""
    est = error_estimate(canc, res, dtype)
    return np.isfinite(est) & (est <= rtol)


def straggler_batches(n: int, s: int, batch: int) -> Iterator[np.ndarray]:
    """All ``C(n, s)`` straggler sets in lexicographic order, as (b, s) int arrays of at most ``batch`` rows.

    Memory is O(batch * s) whatever ``C(n, s)`` (vectorised unranking, see :mod:`gradcodes._verify_fast`).

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


def swap_neighbours(S: np.ndarray, n: int, rng: np.random.Generator, limit: int) -> np.ndarray:
    """The straggler sets one swap away from ``S`` (one straggler for one responder), at most ``limit`` of them
    drawn at random; a sorted (count, s) int array. The move of every local search for a worst set."""
    s = S.size
    outside = np.setdiff1d(np.arange(n), S)
    pairs = np.array(list(itertools.product(range(s), range(outside.size))))
    if pairs.shape[0] > limit:
        pairs = pairs[rng.choice(pairs.shape[0], limit, replace=False)]
    cand = np.repeat(S[None], pairs.shape[0], axis=0)
    cand[np.arange(pairs.shape[0]), pairs[:, 0]] = outside[pairs[:, 1]]
    cand.sort(axis=1)
    return cand


class _Tracker:
    """Accumulates worst cases and failures over batches of straggler sets (the reference evaluation)."""

    def __init__(self, code: LinearCode, dec: Decoder, rtol: float, dtype: Any = np.float64) -> None:
        self.code, self.dec, self.rtol, self.dtype = code, dec, rtol, dtype
        self.checked = 0
        self.worst_res, self.worst_canc = -1.0, -1.0
        self.worst_res_S: tuple[int, ...] | None = None
        self.worst_canc_S: tuple[int, ...] | None = None
        self.worst_est = 0.0
        self.failures: list[tuple[int, ...]] = []
        self.n_failures = 0
        self.exact = code.exact
        self.Bf = code.float_B() if code.field == "rational" else None

    def evaluate(self, S: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(residual, cancellation, failed) per straggler set in ``S`` (b, s)."""
        code = self.code
        mask = _masks(code.n, S)
        A = self.dec.matrices(code, mask)
        if self.exact:
            return self._evaluate_exact(A, mask)
        res = residuals(A, code.B, code.target)
        canc = cancellation(A, code.B, code.k)
        idx = np.broadcast_to(S[:, None, :], (S.shape[0], A.shape[1], S.shape[1]))
        off = np.abs(np.take_along_axis(A, idx, axis=2)).reshape(S.shape[0], -1).max(axis=1, initial=0)
        failed = ~_accepts(canc, res, self.rtol, self.dtype) | (off > 0)
        return res, canc, failed

    def _evaluate_exact(self, A: Any, mask: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        code = self.code
        b = A.shape[0]
        res = np.zeros(b)
        canc = np.full(b, np.nan)
        failed = np.zeros(b, dtype=bool)
        gf = code.field.startswith("GF(")
        for i in range(b):
            R = A[i] @ code.B - code.target
            off = np.asarray(A[i][:, ~mask[i]] != 0).any()
            bad = bool(np.asarray(R != 0).any()) or bool(off)
            failed[i] = bad
            if bad:
                res[i] = 1.0 if gf else max(abs(float(v)) for v in R.flat) or 1.0
        if not gf:
            assert self.Bf is not None                    # set for every non-GF exact code
            Af = np.vectorize(float, otypes=[np.float64])(A)
            canc = cancellation(Af, self.Bf, code.k)
        return res, canc, failed

    def _resp(self, S_row: np.ndarray) -> tuple[int, ...]:
        return tuple(int(i) for i in np.setdiff1d(np.arange(self.code.n), S_row))

    def record(self, S: np.ndarray, res: np.ndarray, canc: np.ndarray, failed: np.ndarray,
               count: bool = True) -> np.ndarray:
        """Fold evaluated sets into the worst cases and failures; returns the per-set estimate (inf = failed)."""
        if count:
            self.checked += S.shape[0]
        if res.size:
            i = int(np.argmax(res))
            if res[i] > self.worst_res:
                self.worst_res, self.worst_res_S = float(res[i]), self._resp(S[i])
            if np.isfinite(canc).any():
                j = int(np.nanargmax(canc))
                if canc[j] > self.worst_canc:
                    self.worst_canc, self.worst_canc_S = float(canc[j]), self._resp(S[j])
        est = np.zeros_like(res) if self.exact else error_estimate(canc, res, self.dtype)
        if est.size:
            self.worst_est = max(self.worst_est, float(np.nanmax(est)))
        bad = np.flatnonzero(failed)
        self.n_failures += bad.size
        for r in bad[: max(0, _MAX_FAILURES - len(self.failures))]:
            self.failures.append(self._resp(S[int(r)]))
        return np.where(failed, np.inf, est)

    def add(self, S: np.ndarray) -> np.ndarray:
        return self.record(S, *self.evaluate(S))


class _Interrupted(Exception):
    pass


class _Clock:
    """Progress on stderr for long runs (tqdm on a terminal, a line every 10 s otherwise) and the time budget."""

    def __init__(self, total: int, enabled: bool | None, desc: str) -> None:
        self.total, self.enabled, self.desc = total, enabled, desc
        self.start = time.perf_counter()
        self.done = 0
        self.bar: Any = None
        self.last = self.start

    def rate(self) -> float:
        dt = time.perf_counter() - self.start
        return self.done / dt if dt > 0 else float("inf")

    def predicted(self) -> float:
        """Predicted seconds for the remaining sets at the rate so far."""
        r = self.rate()
        return (self.total - self.done) / r if r > 0 else float("inf")

    def update(self, k: int) -> None:
        self.done += k
        if self.enabled is None and self.done and time.perf_counter() - self.start > 1.0:
            self.enabled = self.predicted() > 10.0
            if self.enabled:
                print(f"{self.desc}: {self.total:,} sets, about {_hms(self.predicted())} at "
                      f"{self.rate():,.0f} sets/s (Ctrl-C keeps the partial report)", file=sys.stderr, flush=True)
        if not self.enabled:
            return
        if self.bar is None and sys.stderr.isatty():
            try:
                from tqdm.auto import tqdm

                self.bar = tqdm(total=self.total, desc=self.desc, unit="sets", unit_scale=True, leave=False,
                                file=sys.stderr, initial=self.done - k)
            except ImportError:  # pragma: no cover - tqdm is a dependency
                self.bar = False
        if self.bar:
            self.bar.update(k)
        elif time.perf_counter() - self.last > 10.0:
            self.last = time.perf_counter()
            print(f"{self.desc}: {self.done:,} of {self.total:,} sets, {_hms(self.predicted())} left",
                  file=sys.stderr, flush=True)

    def close(self) -> None:
        if self.bar:
            self.bar.close()


def verify(code: LinearCode, *, limit: int | None = None, samples: int = 2000, search: bool = True,
           rng: RNGLike = None, rtol: float | None = None, decoder: str | Decoder | None = None,
           field: FieldLike | None = None, stop_on_failure: bool = True, batch_size: int | None = None,
           progress: bool | None = None, dtype: DTypeLike = np.float64, time_budget: float = 10.0,
           search_seconds: float = 1.0, seed: RNGLike | Unset = SEED_UNSET) -> VerifyReport:
    """Check that every set of ``n - s`` responders recovers the gradient; ``ok`` only for a proof.

    Parameters
    ----------
    code : GradientCode
        The code to check.
    limit : int, optional
        Enumerate all ``C(n, s)`` straggler sets when there are at most this many (memory does not grow with
        it; a time estimate is printed on stderr for long runs). Default: enumerate whenever the run fits
        ``time_budget`` at the rate measured on the first batch.
    samples : int, default 2000
        Random straggler sets checked when not exhaustive.
    search : bool, default True
        When not exhaustive, search for failing sets: coordinate ascent on the size of the s x s null-space
        solve from random starts (null-space codes; ``search_seconds``), then greedy swaps from the worst sets.
    rng : None, int, numpy.random.SeedSequence or numpy.random.Generator, optional
        Random state of the random sets and the search (exhaustive checks use none), as scientific Python's
        SPEC 7 recommends: None for fresh entropy, an int, a SeedSequence or a Generator. ``seed=`` is a
        deprecated alias.
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
    time_budget : float, default 10
        Seconds the default mode may spend on exhaustive enumeration (ignored when ``limit`` is given); 0 never
        enumerates more than ``samples`` would check.
    search_seconds : float, default 1
        Seconds the restarted search may spend (when not exhaustive).

    Returns
    -------
    VerifyReport
        Truthy only for a proof. Ctrl-C during the run returns the partial report, marked interrupted. (Tree
        codes verify under their own straggler model: :func:`gradcodes.verify_tree`.)

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

    Sampling is never a proof:

    >>> gc.verify(gc.cyclic_repetition(30, 6, rng=0), limit=1000, samples=100, rng=0).verdict
    'unproven'
    """
    rng = take_rng(rng, seed)
    hook = getattr(code, "_verify_hook", None)
    if hook is not None:  # code types with their own straggler model (CodedReduce trees) verify themselves
        return hook(limit=limit, samples=samples, search=search, rng=rng, rtol=rtol, decoder=decoder,
                    field=field, stop_on_failure=stop_on_failure, batch_size=batch_size, progress=progress,
                    dtype=dtype, time_budget=time_budget)
    if field is not None:
        code = code.in_field(field)
    if not isinstance(code, GradientCode):
        raise TypeError(f"verify() checks exact gradient codes (GradientCode); got {type(code).__name__}. "
                        f"Approximate codes are judged by their error, not by exact recovery: use "
                        f"gradcodes.evaluate_approximate(code) (command line: gradcodes evaluate).")
    try:
        dt = np.dtype(dtype)
    except TypeError as exc:
        raise ValueError(f"dtype must be a numpy float or complex dtype, got {dtype!r}") from exc
    if dt.kind not in "fc":
        raise ValueError(f"dtype must be a numpy float or complex dtype, got {dt}")
    rtol = check_real("rtol", default_rtol(dt, code.rtol) if rtol is None else rtol, 0, 1, open_lo=True,
                      open_hi=True)
    samples = check_int("samples", samples, 0)
    time_budget = check_real("time_budget", time_budget, 0)
    search_seconds = check_real("search_seconds", search_seconds, 0)
    check_size("the sampled straggler sets times n", samples * code.n, "work")
    rng = check_rng(rng)
    dec = code._decoder(decoder)
    by_blocks = getattr(dec, "verify_by_blocks", None)   # block decoders: proof by blocks (gradcodes._blocks)
    if by_blocks is not None:
        return by_blocks(code, limit=limit, samples=samples, search=search, rng=rng, rtol=rtol,
                         stop_on_failure=stop_on_failure, batch_size=batch_size, progress=progress)
    n, s = code.n, code.s
    total = math.comb(n, s)
    if limit is not None:
        limit = check_int("limit", limit, 0)
    if batch_size is None:
        per_set = 8 * (n * code.m * 4 + code.k * code.m * code.m + n * n)
        batch_size = int(min(8192, max(256, 2**23 // per_set)))        # ~8 MB of work arrays: cache friendly
        if code.exact:
            batch_size = 64
    batch_size = check_int("batch_size", batch_size, 1)
    start = time.perf_counter()
    tracker = _Tracker(code, dec, rtol, dt)
    strategies: dict[str, int] = {}
    notes: list[str] = []
    interrupted = stopped = False
    # sampling would check about this many sets: enumerating is then cheaper and a proof
    sampled_size = n + samples + (2000 if search else 0)
    if limit is None:
        # time_budget=0 never enumerates (deterministically: a fast machine would otherwise finish small codes
        # before the first rate check)
        mode = "exhaustive" if total <= sampled_size else ("budget" if time_budget > 0 else "sample")
        if mode == "sample":
            notes.append(f"not exhaustive: time_budget = 0 skips enumerating C({n},{s}) = {total:,} sets; pass "
                         f"limit={total} or a positive time_budget for a full check")
    else:
        mode = "exhaustive" if total <= max(limit, sampled_size) else "sample"
    exhaustive = False
    # a theorem of the decoder (checked on B) proves the code without enumeration; the sets are still sampled
    theorem = _theorem(code, dec, rtol, dt) if mode != "exhaustive" else None
    try:
        if mode in ("exhaustive", "budget"):
            done, stopped, finished = _enumerate(tracker, code, dec, batch_size, stop_on_failure, progress,
                                                 None if mode == "exhaustive" else time_budget, start)
            strategies["exhaustive" if finished else "lexicographic prefix"] = done
            exhaustive = finished and not stopped
            if not finished and not stopped:
                notes.append(f"not exhaustive: C({n},{s}) = {total:,} sets would take about "
                             f"{_hms(total / max(done, 1) * (time.perf_counter() - start))} (> time_budget = "
                             f"{time_budget:g} s); pass limit={total} for a full check")
                mode = "sample"
        if mode == "sample" and not (stop_on_failure and tracker.n_failures):
            if limit is not None:
                notes.append(f"not exhaustive: C({n},{s}) = {total:,} > limit = {limit:,}; pass limit={total} "
                             f"for a full check")
            with single_threaded_blas():
                stopped = _sample_and_search(tracker, code, dec, n, s, samples, search and theorem is None, rng,
                                             batch_size, stop_on_failure, strategies, search_seconds)
    except (KeyboardInterrupt, _Interrupted):
        interrupted = True
        exhaustive = False
        if not strategies:
            strategies["lexicographic prefix"] = tracker.checked
        notes.append(f"interrupted (Ctrl-C) after {tracker.checked:,} sets: partial report, not a proof")
    if theorem is not None and (exhaustive or interrupted or tracker.n_failures):
        theorem = None
    if code.exact:
        notes.append(f"exact arithmetic over {code.field}: no rounding")
    if code.field.startswith("GF("):
        notes.append(f"a {code.field} check proves the construction's algebra; the float code's rounding "
                     f"(cancellation) is not covered: verify the float code for that")
    proven = tracker.n_failures == 0 and (exhaustive or theorem is not None)
    bound = min_load(n, s, code.m, code.k) if s + code.m <= n else Fraction(code.k * (s + code.m), n)
    loads = code.loads
    return VerifyReport(
        name=code.name, n=n, s=s, k=code.k, m=code.m, field=code.field, decoder=dec.name,
        exact=proven, exhaustive=exhaustive,
        patterns_checked=tracker.checked, patterns_total=total, strategies=strategies,
        worst_residual=max(tracker.worst_res, 0.0), worst_responders=tracker.worst_res_S,
        worst_cancellation=max(tracker.worst_canc, 0.0) if tracker.worst_canc_S else float("nan"),
        worst_cancellation_responders=tracker.worst_canc_S, error_estimate=tracker.worst_est,
        failures=tracker.failures, n_failures=tracker.n_failures, load=int(loads.max()),
        average_load=Fraction(int(loads.sum()), n), load_lower_bound=bound,
        meets_lower_bound=s + code.m <= n and meets_min_load(int(loads.max()), n, s, code.m, code.k),
        rtol=rtol, seconds=time.perf_counter() - start, stopped_early=stopped, notes=notes, theorem=theorem,
        interrupted=interrupted, dtype=str(dt))


def _theorem(code: LinearCode, dec: Decoder, rtol: float, dtype: np.dtype) -> str | None:
    """The decoder's theorem for this code, if it states one (``Decoder.theorem(code, u, rtol)``)."""
    fn = getattr(dec, "theorem", None)
    if fn is None:
        return None
    return fn(code, unit_roundoff(dtype), rtol)


def _enumerate(tracker: _Tracker, code: GradientCode, dec: Decoder, batch_size: int, stop_on_failure: bool,
               progress: bool | None, budget: float | None, t0: float) -> tuple[int, bool, bool]:
    """Lexicographic enumeration; returns ``(sets checked, stopped at a failure, finished)``.

    With ``budget`` (seconds), gives up as soon as the rate measured so far predicts more than ``budget``.
    """
    n, s = code.n, code.s
    total = math.comb(n, s)
    clock = _Clock(total, progress if progress is not None else (False if budget is not None else None),
                   f"verify {code.name}")
    screen = None
    if (not code.exact and total >= _KERNEL_MIN_SETS and NullSpaceScreen.applies(code, dec)):
        screen = NullSpaceScreen(code, unit_roundoff(tracker.dtype), tracker.rtol)
    stopped = False
    checked0 = tracker.checked
    try:
        with single_threaded_blas():
            if screen is not None:
                stopped = _enumerate_screened(tracker, screen, code, stop_on_failure, clock, budget, t0)
            else:
                for S in lex_straggler_batches(n, s, batch_size):
                    tracker.add(S)
                    clock.update(S.shape[0])
                    if stop_on_failure and tracker.n_failures:
                        stopped = tracker.checked - checked0 < total
                        break
                    if budget is not None and _over_budget(clock, budget, t0):
                        break
    finally:
        clock.close()
    done = tracker.checked - checked0
    return done, stopped, done == total


def _over_budget(clock: _Clock, budget: float, t0: float) -> bool:
    """True when the rate measured so far predicts that the whole enumeration exceeds ``budget`` seconds (the
    one-off compilation of the kernel is not counted: ``clock`` starts after it)."""
    elapsed = time.perf_counter() - clock.start
    return elapsed > 0.05 and elapsed + clock.predicted() > budget


def _enumerate_screened(tracker: _Tracker, screen: NullSpaceScreen, code: GradientCode, stop_on_failure: bool,
                        clock: _Clock, budget: float | None, t0: float) -> bool:
    """Enumeration through the screening kernel: sets it cannot clear go to the reference evaluation; the worst
    cancellation set of every chunk and every suspect are re-evaluated by the reference, so reported values
    and failures are the reference's."""
    n, s = code.n, code.s
    total = math.comb(n, s)
    use_numba = _USE_NUMBA
    first = np.arange(s, dtype=np.int64)
    screen_range(screen, n, first, 1, use_numba)                  # compile (or load) the kernel off the clock
    screen.best[:] = 0.0
    clock.start = time.perf_counter()
    rank = 0
    chunk = 4096
    while rank < total:
        count = min(chunk, total - rank)
        S, canc, res, suspect = screen_range(screen, n, first, count, use_numba)
        tracker.checked += count
        ref = np.flatnonzero(suspect)
        j = int(np.argmax(canc))                                  # exact values are positive (bounds negative)
        if canc[j] > tracker.worst_canc:
            ref = np.union1d(ref, [j])
        if ref.size:
            Sr = S[ref]
            tracker.record(Sr, *tracker.evaluate(Sr), count=False)
        # sets cleared by the screen: est <= rtol / 16; their (algebraic) residuals bound the reference's
        tracker.worst_est = max(tracker.worst_est, float(error_estimate(max(float(canc[j]), 0.0), 0.0,
                                                                        tracker.dtype)))
        clock.update(count)
        rank += count
        if stop_on_failure and tracker.n_failures:
            return rank < total
        if budget is not None and _over_budget(clock, budget, t0):
            return False
        if rank < total:
            first = S[-1].copy()
            _next_combination(first, n)
        chunk = min(_KERNEL_CHUNK, chunk * 4)
    return False


def _next_combination(c: np.ndarray, n: int) -> None:
    s = c.size
    i = s - 1
    while i >= 0 and c[i] == n - s + i:
        i -= 1
    c[i] += 1
    c[i + 1:] = c[i] + 1 + np.arange(s - i - 1)


def _sample_and_search(tracker: _Tracker, code: LinearCode, dec: Decoder, n: int, s: int, samples: int,
                       search: bool, rng: np.random.Generator, batch_size: int, stop_on_failure: bool,
                       strategies: dict[str, int], search_seconds: float) -> bool:
    from ._verify_search import local_search, restart_search

    parts = []
    cons = np.unique(np.sort(_consecutive(n, s), axis=1), axis=0)
    parts.append((cons, tracker.add(cons)))
    strategies["consecutive"] = cons.shape[0]
    if samples and not (stop_on_failure and tracker.n_failures):
        rnd = random_straggler_sets(n, s, samples, rng)
        ests = [tracker.add(rnd[lo:lo + batch_size]) for lo in range(0, samples, batch_size)]
        parts.append((rnd, np.concatenate(ests)))
        strategies["random"] = samples
    if search and s and not (stop_on_failure and tracker.n_failures):
        got = restart_search(tracker, code, rng, seconds=search_seconds)
        if got is not None:
            parts.append(got)
            strategies["restart search"] = got[0].shape[0]
    if search and s and not (stop_on_failure and tracker.n_failures):
        strategies["local search"] = local_search(tracker, parts, rng, batch_size)
    return bool(stop_on_failure and tracker.n_failures)

