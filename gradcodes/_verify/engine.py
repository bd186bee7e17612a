"""The verifier's engine, shared by every straggler-pattern model (flat codes and CodedReduce trees).

A *pattern model* says which straggler patterns exist and how to enumerate and sample them, and gives the decoding
matrix of a pattern (:class:`PatternModel`). Everything else is here, once: the measurement of a decoding matrix
(residual ``||A B - E||_inf``, cancellation factor, magnitude and width; exact integer arithmetic for rational
codes), its verdict by the one acceptance rule (:func:`gradcodes._core.numerics.judge`: ok, borderline or fails on
every machine), the tracker of worst cases and failures (:class:`Tracker`), and the driver
(:func:`run`) that chooses between enumeration and sampling (``limit``, the default count budget of
:mod:`gradcodes._verify.cost` or ``time_budget``), prints progress for long
runs, keeps the partial result on Ctrl-C, and runs the model's structured patterns, random patterns and search.
A verdict ``ok`` needs every pattern checked (or a theorem the front end checks); the driver reports whether the
enumeration finished.

Patterns are rows of an int or bool array (straggler sets for flat codes, responder masks for trees).
"""

from __future__ import annotations

import copy
import math
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any, NamedTuple

import numpy as np

from .._base.output import count_text
from .._core.decoders import single_threaded_blas
from .._core.numerics import (
    BORDERLINE,
    FAILS,
    OK,
    cancellation,
    error_bounds,
    judge,
    magnitude,
    residual_slack,
    residual_upper,
    residuals,
    widths,
)
from . import mpi_driver as _mpi_driver  # noqa: F401  (registers the MPI drivers with .parallel)
from .report import _hms

__all__ = ["PatternModel", "Tracker", "Evaluation", "Outcome", "run", "Clock", "shared_clock"]

#: no enumeration of this many patterns could finish (and counts beyond it overflow float rates)
_HOPELESS = 2**62
_SCALE_KEYS = ("workers", "checkpoint", "checkpoint_every", "comm")


class PatternModel:
    """The straggler-pattern model of a code: what the engine needs to know, nothing else.

    Subclasses set ``code`` (a :class:`~gradcodes.LinearCode`: its ``B``, ``target``, ``k`` and field are used to
    measure decoding matrices), ``total`` (the number of patterns) and ``noun`` (how a pattern is called in
    reports), and implement :meth:`batches`, :meth:`random`, :meth:`decode` and :meth:`responders`.

    A model whose patterns are numbered (``ranked = True``, :meth:`patterns`: the patterns of ranks ``[lo, hi)`` in
    the order of :meth:`batches`) is enumerated chunk by chunk on a fixed grid of ranks
    (:mod:`gradcodes._verify.parallel`): on one core, on local processes, on MPI ranks and from checkpoints,
    always with the same report; ``scale`` holds those options (``workers``, ``checkpoint``,
    ``checkpoint_every``, ``comm``). Per-run state that a report counts (a tree's distinct decodings) must then
    be mergeable: :meth:`fresh`, :meth:`distinct_keys` and :meth:`add_distinct`.
    """

    code: Any
    total: int
    noun = "straggler patterns"
    #: :meth:`patterns` exists (chunked enumeration past one core)
    ranked = False
    #: dtype of a pattern row (int straggler sets, bool responder masks)
    pattern_dtype: Any = np.int64
    #: the enumeration's ``workers``, ``checkpoint``, ``checkpoint_every``, ``comm`` (set by the front end)
    scale: dict[str, Any] | None = None

    def patterns(self, lo: int, hi: int) -> np.ndarray:
        """The patterns of ranks ``[lo, hi)`` (``ranked`` models)."""
        raise NotImplementedError

    def fresh(self) -> PatternModel:
        """The model with its per-run state (counted in reports) empty: a chunk's own (default: ``self``)."""
        return self

    def distinct_keys(self) -> set[str] | None:
        """Keys of the distinct decodings met so far (None: the model does not count them)."""
        return None

    def add_distinct(self, keys: set[str]) -> None:
        """Merge distinct-decoding keys met elsewhere (another chunk, process or rank)."""

    def batches(self, batch: int) -> Iterator[np.ndarray]:
        """Every pattern once, in a fixed order, in arrays of at most ``batch`` rows."""
        raise NotImplementedError

    def structured(self, batch: int) -> Iterator[tuple[str, np.ndarray]]:
        """Patterns worth checking first when not enumerating, as ``(strategy name, patterns)`` pieces."""
        return iter(())

    def random(self, count: int, rng: np.random.Generator) -> np.ndarray:
        """``count`` random patterns."""
        raise NotImplementedError

    def decode(self, P: np.ndarray) -> tuple[Any, np.ndarray, np.ndarray | None]:
        """``(A, bad, inv)``: decoding matrices ``A`` (d, m, n) of the *distinct* decodings, ``inv`` (b,) the row of
        ``A`` of each pattern (None: one row per pattern), and ``bad`` (b,) the patterns the decoder cannot serve
        (it needs a non-responder, or no decoding exists)."""
        raise NotImplementedError

    def responders(self, p: np.ndarray) -> tuple[int, ...]:
        """The responding workers of one pattern."""
        raise NotImplementedError

    def label(self, p: np.ndarray) -> Any:
        """How a failing pattern is listed in the report (default: its responders)."""
        return self.responders(p)

    def fast_enumerate(self, tracker: Tracker, clock: Clock, stop_on_failure: bool,
                       budget: float | None) -> bool | None:
        """An optional faster enumeration (it must record exactly what the reference evaluation would decide);
        returns whether it stopped at a failure, or None when it does not apply."""
        return None

    def search(self, tracker: Tracker, parts: list[tuple[np.ndarray, np.ndarray]], rng: np.random.Generator,
               batch: int) -> dict[str, int]:
        """Search for bad patterns from the checked ones (``parts``: patterns and estimates); returns the
        patterns checked per strategy."""
        return {}


class Evaluation(NamedTuple):
    """The measurement of a batch of patterns: residual (inf where the decoder cannot serve), cancellation factor,
    verdict (:data:`~gradcodes._core.numerics.OK`, ``BORDERLINE`` or ``FAILS`` per pattern), the error estimate of a
    decode and the upper end of its machine-independent interval (:func:`gradcodes._core.numerics.error_bounds`)."""

    res: np.ndarray
    canc: np.ndarray
    verdict: np.ndarray
    est: np.ndarray
    hi: np.ndarray
    res_lo: np.ndarray


class Tracker:
    """Accumulates worst cases, failures and borderline patterns over batches (the reference evaluation).

    ``load`` is the encoding load counted in the terms of a decode (:func:`gradcodes._core.numerics.decode_terms`);
    default: the code's load.
    """

    def __init__(self, model: PatternModel, rtol: float, dtype: Any = np.float64, max_failures: int = 10,
                 load: int | None = None) -> None:
        self.model, self.rtol, self.dtype, self.max_failures = model, rtol, np.dtype(dtype), max_failures
        code = model.code
        self.code = code
        self.checked = 0
        self.worst_res, self.worst_canc = -1.0, -1.0
        self.worst_res_P: np.ndarray | None = None
        self.worst_canc_P: np.ndarray | None = None
        self.worst_est = 0.0
        self.worst_hi = 0.0
        self.worst_res_hi = 0.0
        self.worst_res_lo = 0.0
        self.failures: list[Any] = []
        self.n_failures = 0
        self.borderline: list[Any] = []
        self.n_borderline = 0
        self.stop_on_failure = False
        self.exact = code.exact
        self.Bf = code.float_B() if code.field == "rational" else None
        self.load = int(code.load) if load is None else int(load)
        self._B_integral: bool | None = None

    def plain(self) -> Tracker:
        """A new :class:`Tracker` (this class, not a subclass) with this one's model and settings and no caches: what
        a chunk of :mod:`gradcodes._verify.parallel` fills (that module builds on no tracker class)."""
        return Tracker(self.model, self.rtol, self.dtype, self.max_failures, self.load)

    def blank(self, model: PatternModel | None = None) -> Tracker:
        """An empty tracker with the same settings and caches (on ``model``, default the same model)."""
        t = copy.copy(self)
        t.model = self.model if model is None else model
        t.checked, t.n_failures, t.n_borderline = 0, 0, 0
        t.worst_res, t.worst_canc = -1.0, -1.0
        t.worst_res_P = t.worst_canc_P = None
        t.worst_est = t.worst_hi = t.worst_res_hi = t.worst_res_lo = 0.0
        t.failures, t.borderline = [], []
        return t

    @property
    def worst_res_S(self) -> tuple[int, ...] | None:
        """Responders of the worst-residual pattern."""
        return None if self.worst_res_P is None else self.model.responders(self.worst_res_P)

    @property
    def worst_canc_S(self) -> tuple[int, ...] | None:
        """Responders of the worst-cancellation pattern."""
        return None if self.worst_canc_P is None else self.model.responders(self.worst_canc_P)

    def _exact_eval(self, A: np.ndarray, mag: np.ndarray) -> np.ndarray:
        """Where the residual is computed without rounding on every machine: a deterministic decoder, integer
        ``A`` and ``B``, ``mag < 2^53``."""
        dec = getattr(self.model, "dec", None)
        if not getattr(dec, "deterministic", False) or A.dtype.kind != "f":
            return np.zeros(A.shape[0], dtype=bool)
        if self._B_integral is None:
            B = self.code._csr_parts()[2] if self.code.sparse else np.asarray(self.code.B)
            self._B_integral = bool(B.dtype.kind == "f" and np.all(np.isfinite(B)) and np.all(B == np.round(B)))
        if not self._B_integral:
            return np.zeros(A.shape[0], dtype=bool)
        with np.errstate(invalid="ignore"):
            integral = np.all((A == np.round(A)).reshape(A.shape[0], -1), axis=1)
        return integral & (mag < 2.0 ** 53)

    def evaluate(self, P: np.ndarray) -> Evaluation:
        """Measure and judge every pattern of ``P`` (see :class:`Evaluation`)."""
        A, bad, inv = self.model.decode(P)
        code = self.code
        if self.exact:
            res, canc = self._measure_exact(A)
            if inv is not None:
                res, canc = res[inv], canc[inv]
            res = np.where(bad, np.inf, res)
            verdict = np.where(bad | (res != 0), FAILS, OK).astype(np.int8)
            zero = np.zeros_like(res)
            return Evaluation(res, canc, verdict, zero, zero, res)
        Bm = code._scipy_B() if code.sparse else code.B      # a code stored sparse: products on its non-zeros
        res = residuals(A, Bm, code.target)
        canc = cancellation(A, Bm, code.k)
        mag = magnitude(A, Bm)
        width = widths(A)
        exact_eval = self._exact_eval(A, mag)
        if inv is not None:
            res, canc, mag, width, exact_eval = res[inv], canc[inv], mag[inv], width[inv], exact_eval[inv]
        res = np.where(bad, np.inf, res)
        terms = width + self.load
        verdict = judge(canc, res, mag, width, self.rtol, self.dtype, terms, exact_eval)
        verdict[bad] = FAILS
        _, est, hi = error_bounds(canc, res, mag, width, self.dtype, terms, exact_eval)
        delta = residual_slack(mag, width, exact_eval)
        self.worst_res_hi = max(self.worst_res_hi, float(np.max(residual_upper(res, mag, width, exact_eval),
                                                                initial=0.0)))
        return Evaluation(res, canc, verdict, est, hi, np.maximum(res - delta, 0.0))

    def _measure_exact(self, A: Any) -> tuple[np.ndarray, np.ndarray]:
        code = self.code
        d = A.shape[0]
        if code.field == "rational":
            res, Af = rational_residuals(A, code.B, code.target)
            assert self.Bf is not None
            return res, cancellation(Af, self.Bf, code.k)
        res = np.zeros(d)                                       # GF(p): no magnitudes, no cancellation
        for i in range(d):
            if bool(np.asarray(A[i] @ code.B - code.target != 0).any()):
                res[i] = 1.0
        return res, np.full(d, np.nan)

    def record(self, P: np.ndarray, ev: Evaluation, count: bool = True) -> np.ndarray:
        """Fold evaluated patterns into the worst cases, failures and borderline patterns; returns the per-pattern
        estimate (inf = failed)."""
        res, canc, verdict = ev.res, ev.canc, ev.verdict
        if count:
            self.checked += P.shape[0]
        if res.size:
            i = int(np.argmax(res))
            if res[i] > self.worst_res:
                self.worst_res, self.worst_res_P = float(res[i]), P[i].copy()
            if np.isfinite(canc).any():
                j = int(np.nanargmax(canc))
                if canc[j] > self.worst_canc:
                    self.worst_canc, self.worst_canc_P = float(canc[j]), P[j].copy()
            self.worst_est = max(self.worst_est, float(np.nanmax(ev.est)))
            self.worst_hi = max(self.worst_hi, float(np.nanmax(ev.hi)))
            self.worst_res_lo = max(self.worst_res_lo, float(np.nanmax(ev.res_lo)))
        bad = np.flatnonzero(verdict == FAILS)
        self.n_failures += bad.size
        for r in bad[: max(0, self.max_failures - len(self.failures))]:
            self.failures.append(self.model.label(P[int(r)]))
        border = np.flatnonzero(verdict == BORDERLINE)
        self.n_borderline += border.size
        for r in border[: max(0, self.max_failures - len(self.borderline))]:
            self.borderline.append(self.model.label(P[int(r)]))
        return np.where(verdict == FAILS, np.inf, ev.est)

    def add(self, P: np.ndarray) -> np.ndarray:
        return self.record(P, self.evaluate(P))


def rational_residuals(A: Any, B: Any, E: Any) -> tuple[np.ndarray, np.ndarray]:
    """Exact ``max |A_b B - E|`` per matrix of a batch of Fraction matrices, with integers; and ``A`` in float64.

    ``B = B_int / d_B`` and each row ``a`` of ``A`` is ``a_int / d_a`` (``d`` = lcm of the denominators); then
    ``a B = e`` iff ``a_int B_int = d_a d_B e`` entrywise. The product runs in int64 when the sizes provably fit,
    else in Python integers (object arrays); never in Fractions.
    """
    d, m, n = A.shape
    W = np.asarray(A, dtype=object).reshape(d * m, n)
    numer = np.frompyfunc(lambda v: Fraction(v).numerator, 1, 1)
    denom = np.frompyfunc(lambda v: Fraction(v).denominator, 1, 1)
    Bo = np.asarray(B, dtype=object)
    denB = denom(Bo)
    dB = 1
    for x in set(denB.flat):
        dB = math.lcm(dB, int(x))
    Bint = numer(Bo) * (dB // denB)
    Eint = np.asarray(numer(np.asarray(E, dtype=object)), dtype=object)
    num, den = numer(W), denom(W)
    dW = np.array([math.lcm(*map(int, set(row))) if row.size else 1 for row in den], dtype=object)
    Wint = num * (dW[:, None] // den) if W.size else np.zeros((d * m, n), dtype=object)
    Wf = np.frompyfunc(float, 1, 1)(W).astype(np.float64) if W.size else np.zeros(W.shape)

    def bits(M: Any) -> int:
        return max((abs(int(v)).bit_length() for v in np.asarray(M, dtype=object).flat), default=0)

    Et = np.tile(Eint, (d, 1))
    fits = bits(Wint) + bits(Bint) + n.bit_length() < 62 and bits(dW) + dB.bit_length() < 62
    if fits:
        R = Wint.astype(np.int64) @ Bint.astype(np.int64)
        target = (dW.astype(np.int64)[:, None] * np.int64(dB)) * Et.astype(np.int64)
    else:
        R = Wint @ Bint
        target = (dW[:, None] * dB) * Et
    ok = np.all(R == target, axis=1)
    res = np.zeros(d * m)
    for i in np.flatnonzero(~ok):
        res[i] = float(max(abs(Fraction(int(x), int(dW[i]) * dB) - int(e)) for x, e in zip(R[i], Et[i],
                                                                                         strict=True)))
    return res.reshape(d, m).max(axis=1), Wf.reshape(d, m, n)


class Interrupted(Exception):
    """Raised to stop a run as Ctrl-C does (tests, callbacks)."""


class Clock:
    """Progress on stderr for long runs (tqdm on a terminal, a line every 10 s otherwise) and the time budget.

    A clock made while another is *shared* (:func:`shared_clock`: one run made of several enumerations, e.g. the
    distinct blocks of a proof by blocks) counts for that one: its own rate serves its time budget, and the
    progress shown is the shared clock's, over every enumeration of the run.
    """

    def __init__(self, total: int, enabled: bool | None, desc: str, noun: str = "sets") -> None:
        self.total, self.enabled, self.desc, self.noun = total, enabled, desc, noun
        self.start = time.perf_counter()
        self.done = 0
        self.bar: Any = None
        self.last = self.start
        self.parent: Clock | None = _SHARED_CLOCK.get()
        #: time and count at the first update: the rate after it leaves out one-off set-up (decoder caches,
        #: loading a compiled kernel) that the first piece pays
        self._first: tuple[float, int] | None = None

    def rate(self) -> float:
        now = time.perf_counter()
        if self._first is not None and self.done > self._first[1] and now > self._first[0]:
            return (self.done - self._first[1]) / (now - self._first[0])
        dt = now - self.start
        return self.done / dt if dt > 0 else float("inf")

    def predicted(self) -> float:
        """Predicted seconds for the remaining patterns at the rate so far."""
        r = self.rate()
        return (self.total - self.done) / r if r > 0 else float("inf")

    def over_budget(self, budget: float) -> bool:
        """True when the rate so far predicts that the whole enumeration exceeds ``budget`` seconds (one-off
        set-up such as compiling a kernel is not counted: restart ``start`` after it). The rate is measured after
        the first piece when there is one (its set-up would otherwise predict hours for a check of a second), and no
        verdict comes before ``min(1 s, budget / 10)`` (at least 0.05 s) of work: a few pieces of a fast
        enumeration say little about its rate."""
        elapsed = time.perf_counter() - self.start
        return elapsed > max(0.05, min(1.0, budget / 10)) and elapsed + self.predicted() > budget

    def update(self, k: int) -> None:
        self.done += k
        if self._first is None:
            self._first = (time.perf_counter(), self.done)
        if self.parent is not None:
            self.parent.update(k)
            return
        if self.enabled is None and self.done and time.perf_counter() - self.start > 1.0:
            self.enabled = self.predicted() > 10.0
            if self.enabled:
                print(f"{self.desc}: {count_text(self.total)} {self.noun}, about {_hms(self.predicted())} at "
                      f"{self.rate():,.0f} {self.noun}/s (Ctrl-C keeps the partial report)", file=sys.stderr,
                      flush=True)
        if not self.enabled:
            return
        if self.bar is None and sys.stderr.isatty():
            try:
                from tqdm.auto import tqdm

                self.bar = tqdm(total=self.total, desc=self.desc, unit=self.noun.split()[-1], unit_scale=True,
                                leave=False, file=sys.stderr, initial=self.done - k)
            except ImportError:  # pragma: no cover - tqdm is a dependency
                self.bar = False
        if self.bar:
            self.bar.update(k)
        elif time.perf_counter() - self.last > 10.0:
            self.last = time.perf_counter()
            print(f"{self.desc}: {self.done:,} of {self.total:,} {self.noun}, {_hms(self.predicted())} left",
                  file=sys.stderr, flush=True)

    def close(self) -> None:
        if self.bar:
            self.bar.close()


def _plain(total: int) -> str:
    """A count as a ``limit=`` value (digits), or its :func:`count_text` when it has too many digits to print."""
    return str(total) if total < 10**30 else count_text(total)


_SHARED_CLOCK: ContextVar[Clock | None] = ContextVar("gradcodes_shared_clock", default=None)


@contextmanager
def shared_clock(clock: Clock) -> Iterator[Clock]:
    """Make ``clock`` the progress of every enumeration started inside the ``with`` block (see :class:`Clock`)."""
    token = _SHARED_CLOCK.set(clock)
    try:
        yield clock
    finally:
        _SHARED_CLOCK.reset(token)
        clock.close()


@dataclass
class Outcome:
    """What :func:`run` did: the tracker's contents plus how the patterns were chosen."""

    exhaustive: bool = False
    stopped: bool = False
    interrupted: bool = False
    strategies: dict[str, int] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    seconds: float = 0.0


def run(tracker: Tracker, *, limit: int | None, samples: int, search: bool, rng: np.random.Generator,
        batch: int, stop_on_failure: bool, progress: bool | None, time_budget: float | None, sampled_size: int,
        desc: str, before_sampling: Callable[[], bool] | None = None, set_budget: int | None = None) -> Outcome:
    """Check patterns of ``tracker.model`` and return how (the tracker holds the results).

    Mode, with ``limit=None``: every pattern is enumerated when there are at most ``sampled_size`` (what
    sampling would check anyway) or at most ``set_budget`` (the default budget, a count of patterns from the fixed
    cost model of :mod:`gradcodes._verify.cost`: the decision never depends on a clock); only when the caller
    gives ``time_budget`` seconds (``set_budget`` is then ignored) does a wall-clock rule decide: enumerate
    while the rate measured on the first batches predicts that the whole enumeration fits (0: never). A ``limit``
    is the most patterns enumerated, exactly: every pattern is enumerated when there are at most ``limit`` (0:
    never, however few), whatever ``time_budget`` and ``sampled_size`` say. Otherwise (or when
    a time budget runs out) the model's structured patterns, ``samples`` random ones and, with ``search``, the
    model's search are checked. ``before_sampling()`` runs first in that case and returns whether to search.
    Ctrl-C keeps what was checked (``interrupted``; never a proof).
    """
    model = tracker.model
    total = model.total
    tracker.stop_on_failure = stop_on_failure
    out = Outcome()
    start = time.perf_counter()
    noun = model.noun
    if limit is None and time_budget is None:
        budget = 0 if set_budget is None else set_budget
        mode = "exhaustive" if total <= max(budget, sampled_size) else "sample"
        if mode == "sample":
            from .cost import limit_note

            out.notes.append(limit_note(total, noun, budget))
    elif limit is None:
        assert time_budget is not None
        # time_budget=0 never enumerates (deterministically: a fast machine would otherwise finish small codes
        # before the first rate check); beyond 2^62 patterns no enumeration could finish
        mode = "exhaustive" if total <= sampled_size else (
            "budget" if time_budget > 0 and total < _HOPELESS else "sample")
        if mode == "sample" and total >= _HOPELESS:
            out.notes.append(f"not exhaustive: {count_text(total)} {noun} are far too many to enumerate")
        elif mode == "sample":
            out.notes.append(f"not exhaustive: time_budget = 0 skips enumerating {count_text(total)} {noun}; pass "
                             f"limit={count_text(total).replace(',', '')} or a positive time_budget for a full check")
    else:
        mode = "exhaustive" if total <= limit else "sample"
    try:
        if mode in ("exhaustive", "budget"):
            done, out.stopped, finished = _enumerate(tracker, batch, stop_on_failure, progress,
                                                     None if mode == "exhaustive" else time_budget, desc)
            out.strategies["exhaustive" if finished else "lexicographic prefix"] = done
            out.exhaustive = finished and not out.stopped
            if not finished and not out.stopped:
                out.notes.append(f"not exhaustive: {count_text(total)} {noun} would take about "
                                 f"{_hms(total / max(done, 1) * (time.perf_counter() - start))} (> time_budget = "
                                 f"{time_budget:g} s); pass limit={total} for a full check")
                mode = "sample"
        if mode == "sample" and not (stop_on_failure and tracker.n_failures):
            if limit is not None:
                out.notes.append(f"not exhaustive: {count_text(total)} {noun} > limit = {limit:,}; pass "
                                 f"limit={_plain(total)} for a full check")
            searchable = before_sampling() if before_sampling is not None else True
            do_search = search and searchable
            with single_threaded_blas():
                out.stopped = _sample(tracker, samples, do_search, rng, batch, stop_on_failure, out.strategies)
    except (KeyboardInterrupt, Interrupted):
        out.interrupted = True
        out.exhaustive = False
        if not out.strategies:
            out.strategies["lexicographic prefix"] = tracker.checked
        out.notes.append(f"interrupted (Ctrl-C) after {tracker.checked:,} {noun}: partial report, not a proof")
    out.seconds = time.perf_counter() - start
    return out


def _enumerate(tracker: Tracker, batch: int, stop_on_failure: bool, progress: bool | None,
               budget: float | None, desc: str) -> tuple[int, bool, bool]:
    """Enumeration in the model's order; returns ``(patterns checked, stopped at a failure, finished)``.

    The model's fast enumeration when it has one; else, for a ranked model, the chunked reference enumeration of
    :mod:`gradcodes._verify.parallel` (local processes, MPI ranks, checkpoints: ``model.scale``; its chunks are
    the batches and pieces below); else batches in the model's order. With ``budget`` (seconds), gives
    up as soon as the rate measured so far predicts more than ``budget``; the first batches are split into pieces
    of 4, 8, 16, ... patterns, so a slow decoder is noticed after a few patterns, not after a whole batch.
    """
    model = tracker.model
    total = model.total
    clock = Clock(total, progress if progress is not None else (False if budget is not None else None), desc,
                  model.noun)
    stopped = False
    checked0 = tracker.checked
    try:
        with single_threaded_blas():
            fast = model.fast_enumerate(tracker, clock, stop_on_failure, budget)
            if fast is None and model.ranked and total < _HOPELESS:
                from .parallel import enumerate_reference

                scale = model.scale or {}
                fast = enumerate_reference(tracker, batch, stop_on_failure, clock, budget,
                                           **{k: scale[k] for k in _SCALE_KEYS if k in scale})
            if fast is not None:
                stopped = fast
            else:
                piece = 4 if budget is not None else batch
                for Q in model.batches(batch):
                    lo = 0
                    while lo < Q.shape[0]:
                        P = Q[lo:lo + piece]
                        lo += P.shape[0]
                        piece = min(batch, 2 * piece)
                        tracker.add(P)
                        clock.update(P.shape[0])
                        if stop_on_failure and tracker.n_failures:
                            stopped = tracker.checked - checked0 < total
                            break
                        if budget is not None and clock.over_budget(budget):
                            break
                    else:
                        continue
                    break
    finally:
        clock.close()
    done = tracker.checked - checked0
    return done, stopped, done == total


def _sample(tracker: Tracker, samples: int, search: bool, rng: np.random.Generator, batch: int,
            stop_on_failure: bool, strategies: dict[str, int]) -> bool:
    model = tracker.model

    def stop() -> bool:
        return bool(stop_on_failure and tracker.n_failures)

    parts: list[tuple[np.ndarray, np.ndarray]] = []
    for name, P in model.structured(batch):
        parts.append((P, tracker.add(P)))
        strategies[name] = strategies.get(name, 0) + P.shape[0]
        if stop():
            return True
    if samples:
        R = model.random(samples, rng)
        parts.append((R, np.concatenate([tracker.add(R[lo:lo + batch]) for lo in range(0, samples, batch)])))
        strategies["random"] = samples
    if search and not stop():
        strategies.update(model.search(tracker, parts, rng, batch))
    return stop()
