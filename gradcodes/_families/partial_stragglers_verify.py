"""Verification of partial-straggler protocols over every chunk-arrival pattern the protocol admits.

Ramamoorthy, Meng & Girimaji (NeurIPS 2024): a worker's messages arrive in its processing order, so an
arrival pattern is a *progress state* ``t`` (worker ``i`` has sent its first ``t_i`` messages, ``0 <= t_i <=
gamma_i``), and the protocol promises exact recovery for every state in which each chunk has been processed by at
least ``m`` workers. The verifier's engine (:mod:`gradcodes._verify.engine`) checks ``A_t B = E`` for these
states: exactly (integers, never rounded) for rational codes, by the acceptance rule for float codes.
"""

from __future__ import annotations

from collections.abc import Iterator
from fractions import Fraction
from typing import Any

import numpy as np

from .._base.aliases import DTypeLike, RNGLike
from .._base.errors import GradcodesTypeError
from .._base.validate import check_int, check_real, check_rng, check_size
from .._verify.engine import PatternModel, Tracker, run
from .._verify.report import VerifyReport
from .partial_stragglers import VERIFIERS, PartialStragglerCode

__all__ = ["ProgressPatterns", "verify_partial", "chunk_proof"]

#: progress spaces up to this size are counted (and enumerated) exactly
_COUNT_LIMIT = 1 << 20
#: admitted states kept from the counting pass (so the enumeration does not walk the progress space again)
_KEEP_LIMIT = 1 << 16
#: the proof by chunks checks at most this many (chunk, m holders) selections
_PROOF_LIMIT = 200_000


def chunk_proof(code: PartialStragglerCode) -> tuple[str | None, list[str]]:
    """Exact proof over every arrival pattern at once, for rational codes: ``(theorem, failures)``.

    :class:`~gradcodes.ChunkDecoder` is block diagonal by chunk: the rows it uses for chunk ``j`` (the first ``m``
    arrived messages about ``j``) carry only chunk ``j``'s columns of ``B``, and its weights on them depend on that
    selection alone, so ``A_t B = E`` for a state ``t`` exactly when every chunk's ``m x m`` block is the identity
    for the selection ``t`` makes. Checking every ``m``-subset of every chunk's holders (each is the selection of
    some admitted state) therefore proves every admitted state. Returns ``(None, [])`` when the code is not exact
    or there are more than ``_PROOF_LIMIT`` selections.
    """
    from itertools import combinations
    from math import comb

    if not code.exact:
        return None, []
    m = code.m
    total = sum(comb(int(rows.size), m) for rows in code.holders)
    if total > _PROOF_LIMIT:
        return None, []
    dec = code.decoders["chunks"]
    B = code.B
    fails: list[str] = []
    for j, rows in enumerate(code.holders):
        subsets = list(combinations(range(rows.size), m))
        mask = np.zeros((len(subsets), code.n), dtype=bool)
        for r, sub in enumerate(subsets):
            mask[r, rows[list(sub)]] = True
        A = dec.matrices(code, mask)
        cols = slice(j * m, (j + 1) * m)
        for r, sub in enumerate(subsets):
            block = A[r][:, rows].dot(B[rows, cols])
            if not all(block[u, v] == (1 if u == v else 0) for u in range(m) for v in range(m)):
                fails.append(f"chunk {j}: messages {rows[list(sub)].tolist()}")
    if fails:
        return None, fails
    return (f"by chunks: the chunk decoder is block diagonal by chunk, and all {total:,} selections of m={m} "
            f"messages about a chunk recover it exactly (rational arithmetic)"), []


def _unrank(radix: np.ndarray, idx: np.ndarray) -> np.ndarray:
    """Mixed-radix digits (last worker fastest) of the ranks ``idx``: progress vectors (b, workers)."""
    out = np.empty((idx.size, radix.size), dtype=np.int64)
    rest = idx.copy()
    for w in range(radix.size - 1, -1, -1):
        out[:, w] = rest % radix[w]
        rest //= radix[w]
    return out


class ProgressPatterns(PatternModel):
    """The protocol's arrival patterns: progress states in which every chunk has ``m`` messages (rows: progress
    vectors of the workers). States that use the same messages decode identically and are measured once."""

    noun = "chunk-arrival patterns"

    def __init__(self, code: PartialStragglerCode) -> None:
        self.code = code
        self.loads = np.diff(code.offsets)
        self.radix = self.loads + 1
        self.space = 1
        for r in self.radix.tolist():
            self.space *= int(r)
        self.counted = self.space <= _COUNT_LIMIT
        self._admitted: np.ndarray | None = None
        self.total = self._count() if self.counted else self.space
        self.seen: set[bytes] = set()
        # one-off set-up before the engine's clock starts (numpy's lazy imports on the first np.unique, the first
        # Vandermonde inverse): timed with the first 4 patterns, it predicted a minute for 4,500 states that take
        # 0.05 s, so a fresh process reported "unproven" where a warm one proved the code
        self.decode(self.loads[None, :].copy())
        self.seen.clear()

    def _all(self, batch: int) -> Iterator[np.ndarray]:
        for lo in range(0, self.space, batch):
            P = _unrank(self.radix, np.arange(lo, min(self.space, lo + batch), dtype=np.int64))
            yield P[self.code.decodable_progress(P)]

    def _count(self) -> int:
        """Count the admitted states, keeping them (in enumeration order) when there are at most ``_KEEP_LIMIT``."""
        kept: list[np.ndarray] | None = []
        total = 0
        for P in self._all(1 << 16):
            total += int(P.shape[0])
            if kept is not None:
                kept = kept + [P] if total <= _KEEP_LIMIT else None
        if kept is not None:
            self._admitted = np.concatenate(kept) if kept else np.empty((0, self.radix.size), dtype=np.int64)
        return total

    def batches(self, batch: int) -> Iterator[np.ndarray]:
        if self._admitted is not None:
            for lo in range(0, self._admitted.shape[0], batch):
                yield self._admitted[lo:lo + batch]
            return
        for P in self._all(batch):
            if P.shape[0]:
                yield P

    def structured(self, batch: int) -> Iterator[tuple[str, np.ndarray]]:
        # the classical protocol's states (n - s workers finished, the others silent) and every worker finished
        code = self.code
        full = np.broadcast_to(self.loads, (1, code.workers)).copy()
        rows = [full]
        for w in range(code.workers):
            P = full.copy()
            P[0, w] = 0
            rows.append(P)
        P = np.concatenate(rows)
        yield "structured", P[code.decodable_progress(P)]

    def random(self, count: int, rng: np.random.Generator) -> np.ndarray:
        """Uniform progress states, each completed by one more chunk of a random unfinished worker until it decodes
        (so the minimal, hardest states are well represented)."""
        code = self.code
        P = (rng.random((count, code.workers)) * self.radix).astype(np.int64)
        while True:
            todo = np.flatnonzero(~np.asarray(code.decodable_progress(P), dtype=bool).reshape(-1))
            if not todo.size:
                return P
            room = P[todo] < self.loads
            pick = np.argmax(rng.random(room.shape) * room, axis=1)
            P[todo, pick] += 1

    def decode(self, P: np.ndarray) -> tuple[Any, np.ndarray, np.ndarray]:
        code = self.code
        mask = code.progress_mask(P)
        used = code.used_messages(mask)
        uniq, first, inv = np.unique(used, axis=0, return_index=True, return_inverse=True)
        for row in uniq:
            self.seen.add(np.packbits(row).tobytes())
        A = code.decoders["chunks"].matrices(code, mask[first])
        bad = ~np.asarray(code.decodable_progress(P), dtype=bool).reshape(-1)
        return A, bad, inv.reshape(-1)

    def responders(self, p: np.ndarray) -> tuple[int, ...]:
        return tuple(int(i) for i in np.flatnonzero(self.code.progress_mask(p)))

    def label(self, p: np.ndarray) -> str:
        return "progress " + str([int(v) for v in p])


def verify_partial(code: PartialStragglerCode, *, limit: int | None = None, samples: int = 2_000,
                   rng: RNGLike = None, rtol: float | None = None, batch_size: int = 4096, max_failures: int = 5,
                   dtype: DTypeLike = np.float64, stop_on_failure: bool = True, progress: bool | None = None,
                   time_budget: float | None = None) -> VerifyReport:
    """Verify a partial-straggler protocol over every chunk-arrival pattern it admits.

    An arrival pattern is a progress state ``t`` (worker ``i`` has sent the messages of its first ``t_i`` chunks,
    in its processing order); the protocol (Ramamoorthy, Meng & Girimaji 2024) promises exact recovery
    whenever every chunk has been processed by at least ``m`` workers. For every such state the decoding matrix
    of :class:`~gradcodes.ChunkDecoder` is computed and ``A_t B = E`` is checked, exactly (integer arithmetic) for
    rational codes, by the acceptance rule of :func:`gradcodes.verify` in ``dtype`` for float codes. Every state
    is checked when the progress space (``prod_i (gamma_i + 1)`` states, of which the admitted ones are counted
    exactly up to ``2^20``) fits ``limit``, the default budget (a count of patterns from a fixed cost model of
    the verifier, never a clock) or, when given, ``time_budget``; otherwise the structured
    states (every worker finished; one worker silent), and ``samples`` random admitted states, which alone is
    never a proof; rational codes are then proven *by chunks* (``chunk_proof``: the decoder is block diagonal by
    chunk, so checking every selection of ``m`` messages about every chunk covers every state).
    ``gc.verify(code)`` dispatches here.

    Parameters
    ----------
    code : PartialStragglerCode
    limit : int, optional
        Largest number of patterns checked exhaustively (default: ``floor(10 s / c)``, ``c`` the microseconds
        per pattern the verifier's fixed cost model predicts for the reference path).
    samples : int, default 2000
        Random patterns when not exhaustive.
    rng : None, int, numpy.random.SeedSequence or numpy.random.Generator, optional
        Random state of the sampling (SPEC 7).
    rtol : float in (0, 1), optional
        Float codes: accepted predicted relative error (default: the code's ``rtol`` carried over to ``dtype``).
    batch_size : int, default 4096
        Patterns per batch.
    max_failures : int, default 5
        Failing patterns kept in the report.
    dtype : numpy dtype, default float64
        Dtype of the messages (the acceptance rule uses its unit roundoff).
    stop_on_failure : bool, default True
        Stop after the first batch with a failing pattern.
    progress : bool, optional
        Progress on stderr (default: for long runs).
    time_budget : float >= 0, optional
        A wall-clock budget instead of the default count when ``limit`` is None: seconds the enumeration may take
        at the rate measured on the first batches (the verdict then depends on the machine's speed and load).

    Returns
    -------
    VerifyReport
        ``pattern_model == "chunk-arrival patterns"``; ``n`` is the number of workers, ``load`` the largest number
        of chunks per worker and ``load_lower_bound`` the classical ``(s + m) k / n`` of the same assignment class.

    Raises
    ------
    GradcodesTypeError
        If ``code`` is not a :class:`PartialStragglerCode`.

    Examples
    --------
    >>> import gradcodes as gc
    >>> rep = gc.verify(gc.partial_straggler_code(4, 1, 2, field="rational"))
    >>> rep.verdict, rep.exhaustive, rep.patterns_checked, rep.pattern_model
    ('exact', True, 42, 'chunk-arrival patterns')

    Beyond enumeration, rational codes are proven by chunks:

    >>> rep = gc.verify(gc.partial_straggler_code(20, 3, 2, field="rational"), samples=50, rng=0)
    >>> rep.verdict, rep.exhaustive, rep.theorem.split(":")[0]
    ('exact', False, 'by chunks')
    """
    from .._verify.cost import default_limit, pattern_cost_us
    from .._verify.verifier import borderline_note, check_dtype_rtol

    if not isinstance(code, PartialStragglerCode):
        raise GradcodesTypeError(f"verify_partial takes a PartialStragglerCode, got {type(code).__name__}")
    if limit is not None:
        limit = check_int("limit", limit, 0)
    samples = check_int("samples", samples, 0)
    batch = check_int("batch_size", batch_size, 1)
    max_failures = check_int("max_failures", max_failures, 0)
    time_budget = None if time_budget is None else check_real("time_budget", time_budget, 0)
    check_size("the sampled patterns times the messages", samples * code.n, "work")
    check_size("batch_size * messages (one batch of masks)", batch * code.n, "entries")
    dt, rtol = check_dtype_rtol(dtype, rtol, code.rtol)
    gen = check_rng(rng)
    model = ProgressPatterns(code)
    tr = Tracker(model, rtol, dt, max_failures)
    sampled = 1 + code.workers + samples
    # a progress space too large to count is sampled: its enumeration would walk mostly inadmissible states
    out = run(tr, limit=limit if model.counted else 0, samples=samples, search=False, rng=gen, batch=batch,
              stop_on_failure=stop_on_failure, progress=progress, time_budget=time_budget if model.counted else 0,
              sampled_size=sampled if model.counted else 0, desc=f"verify {code.name}",
              set_budget=default_limit(pattern_cost_us("rational" if code.exact else "reference", n=code.n,
                                                       s=code.s, k=code.k, m=code.m)))
    notes = list(out.notes) if model.counted else [
        f"not exhaustive: {model.space:,} progress states are too many to enumerate (admitted ones not counted; "
        f"patterns_total counts them all)"]
    if code.exact:
        notes.append("exact rational arithmetic: no rounding")
    notes.append(f"q_max = {code.q_max}: any {code.q_max} processed chunks decode (of {int(model.loads.sum())})")
    if tr.n_borderline:
        notes.append(borderline_note(tr))
    theorem = None
    if not out.exhaustive and not tr.n_failures:
        theorem, chunk_fails = chunk_proof(code)
        if chunk_fails:
            tr.n_failures += len(chunk_fails)
            tr.failures.extend(chunk_fails[: max(0, max_failures - len(tr.failures))])
            tr.worst_res = max(tr.worst_res, 1.0)
    ok = (out.exhaustive or theorem is not None) and not tr.n_failures and not tr.n_borderline and tr.checked > 0
    loads = model.loads
    bound = Fraction((code.s + code.m) * code.k, code.workers)
    return VerifyReport(
        name=code.name, n=code.workers, s=code.s, k=code.k, m=code.m, field=code.field, decoder="chunks",
        exact=bool(ok), exhaustive=out.exhaustive, patterns_checked=tr.checked, patterns_total=model.total,
        strategies=out.strategies, worst_residual=max(tr.worst_res, 0.0), worst_responders=tr.worst_res_S,
        worst_cancellation=max(tr.worst_canc, 0.0), worst_cancellation_responders=tr.worst_canc_S,
        error_estimate=tr.worst_est, failures=tr.failures, n_failures=tr.n_failures, load=int(loads.max()),
        average_load=Fraction(int(loads.sum()), code.workers), load_lower_bound=bound,
        meets_lower_bound=int(loads.max()) == -(-bound.numerator // bound.denominator), rtol=rtol,
        seconds=out.seconds, stopped_early=out.stopped, notes=notes, interrupted=out.interrupted, dtype=str(dt),
        pattern_model="chunk-arrival patterns", borderline=tr.borderline, n_borderline=tr.n_borderline,
        worst_residual_bound=max(tr.worst_res_hi, 0.0), worst_residual_lower=None if code.exact else tr.worst_res_lo,
        error_bound=tr.worst_hi, theorem=theorem)


VERIFIERS["verify"] = verify_partial
