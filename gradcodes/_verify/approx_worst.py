r"""The error of approximate gradient codes, shared by every :class:`~gradcodes.ApproximateCode` family: the error
``||A_F B - E||_2`` of one responder set (:func:`approximation_error`), the worst over the sets of ``n - s``
responders (:func:`worst_case_error`: every set when they are few, else a lower bound found by the family's
structured adversaries, random sets and a greedy swap search, next to a certified upper bound from
``gradcodes/_verify/approx_adversaries.py``), and the two decoders of approximate codes: *optimal* (least squares
on the responders, minimum norm; exact
for rational codes) and *fixed* (``u_F = (n/|F|) 1_F``, no solve). Raviv, Tamo, Tandon & Dimakis (2018) define
both decoders for expander codes; Glasgow & Wootters (2021) study the optimal one.
"""

from __future__ import annotations

import itertools
import math
import time
from fractions import Fraction
from typing import Any

import numpy as np

from .._base.aliases import Responders, RNGLike
from .._base.errors import GradcodesTypeError, GradcodesValueError
from .._base.validate import check_int, check_real, check_rng, check_size
from .._core.code import LinearCode
from .._core.decoders import Decoder, min_norm_solve
from .._core.fields import RationalField, solve_left
from .approx_adversaries import structured_sets, upper_bound
from .approx_report import ApproximationReport
from .engine import Clock
from .search import swap_neighbours
from .verifier import random_straggler_sets

__all__ = ["OptimalDecoder", "FixedDecoder", "approximation_error", "worst_case_error", "ApproximationReport"]


class OptimalDecoder(Decoder):
    """Optimal decoding ``argmin_{supp u ⊆ F} ||u B - E||_2``: minimum-norm least squares (exact for rational codes).

    Float codes: batched SVD with the right-hand side projected first (``gelsd``-like). Rational codes: the normal
    equations ``u_F (B_F B_F^T) = E B_F^T`` solved exactly (one solution when ``B_F`` has dependent rows; the error
    ``||u B - E||`` is the same for every least-squares solution).
    """

    name = "optimal"
    description = "least squares on the responders (minimum norm)"
    least_squares = True

    def matrices(self, code: LinearCode, mask: np.ndarray) -> Any:
        b, n = mask.shape
        if code.exact:
            out = RationalField().zeros((b, code.m, n))
            for i in range(b):
                F = np.flatnonzero(mask[i])
                if F.size == 0:
                    continue
                BF = code.B[F]
                X = solve_left(BF @ BF.T, code.target @ BF.T)
                if X is not None:
                    out[i][:, F] = X
            return out
        B = code.B
        E = code.target
        out = np.zeros((b, code.m, n), dtype=np.result_type(B.dtype, np.float64))
        step = max(1, min(256, (1 << 22) // B.size))            # (step, k m, n) work array: <= 32 MB
        for lo in range(0, b, step):
            mk = mask[lo:lo + step]
            Bt = B.T[None, :, :] * mk[:, None, :]
            X = min_norm_solve(Bt, np.broadcast_to(E.T.astype(Bt.dtype), (mk.shape[0], *E.T.shape)))
            out[lo:lo + mk.shape[0]] = np.swapaxes(X, 1, 2) * mk[:, None, :]
        return out


class FixedDecoder(Decoder):
    """Fixed decoding ``u_F = (n / |F|) 1_F`` (no solve; unbiased for uniformly random stragglers)."""

    name = "fixed"
    description = "u_F = (n/|F|) 1_F"

    def matrices(self, code: LinearCode, mask: np.ndarray) -> Any:
        b, n = mask.shape
        cnt = mask.sum(axis=1)
        if code.m != 1:
            raise GradcodesValueError("the fixed decoder is defined for m = 1")
        if code.exact:
            out = RationalField().zeros((b, 1, n))
            for i in range(b):
                if cnt[i]:
                    out[i, 0, mask[i]] = Fraction(n, int(cnt[i]))
            return out
        w = np.where(cnt > 0, n / np.maximum(cnt, 1), 0.0)
        return (mask * w[:, None]).astype(np.float64)[:, None, :]


def _errors(code: LinearCode, mask: np.ndarray, dec: Decoder) -> np.ndarray:
    """``||A_F B - E||`` (2-norm, Frobenius for m > 1) for a batch of responder masks."""
    A = dec.matrices(code, mask)
    if code.exact:
        out = np.empty(mask.shape[0])
        for i in range(mask.shape[0]):
            R = A[i] @ code.B - code.target
            out[i] = math.sqrt(float(sum(v * v for v in R.flat)))
        return out
    b = mask.shape[0]
    R = (A.reshape(b * code.m, code.n) @ code.B).reshape(b, code.m, -1) - code.target
    return np.sqrt((np.abs(R) ** 2).sum(axis=(1, 2)))


def approximation_error(code: LinearCode, responders: Responders, decoder: str | Decoder | None = None) -> float:
    """``||A_F B - E||_2`` for one responder set: the error of the decoded sum per unit of ``||G||_2``.

    Works for any code (approximate or exact; an exact code gives its residual in the 2-norm).

    Parameters
    ----------
    code : LinearCode
        Usually an :class:`~gradcodes.ApproximateCode`.
    responders : iterable of int or bool mask
        The workers whose messages arrived.
    decoder : str or Decoder, optional
        Default: the code's default decoder.

    Returns
    -------
    float
        ``||A_F B - E||_2`` (0 for a set from which the code decodes exactly).

    Raises
    ------
    GradcodesTypeError
        If ``code`` is not a gradcodes code.

    Examples
    --------
    >>> import numpy as np, gradcodes as gc
    >>> gc.approximation_error(gc.ApproximateCode(np.eye(4)), [0, 1, 2], decoder="lstsq")
    1.0
    """
    if not isinstance(code, LinearCode):
        raise GradcodesTypeError(f"code must be a gradcodes code, got {type(code).__name__}")
    F, mask = code._mask(responders)
    return float(_errors(code, mask[None], code._decoder(decoder))[0])


#: the default search's work, in units of one set's cost (see ``_set_cost``): a few seconds of one core
DEFAULT_WORK = 5e8
_HOPELESS = 1 << 62
_POLISH_STARTS = 2


def _set_cost(code: LinearCode, dec: Decoder) -> float:
    """A machine-independent cost of one set's error: ``n k m min(n, k m)`` for a solve, ``n k m`` otherwise."""
    km = code.k * code.m
    solve = isinstance(dec, OptimalDecoder) or dec.name in ("lstsq", "nullspace")
    return float(code.n * km * (min(code.n, km) if solve else 1) + code.n * km)


def _default_counts(code: LinearCode, dec: Decoder, samples: int | None, structured: int | None,
                    neighbours: int | None, search_steps: int) -> tuple[int, int, int]:
    """``(samples, structured, neighbours)``: the given ones, the others from the fixed cost model (no clock)."""
    sets = DEFAULT_WORK / _set_cost(code, dec)
    if samples is None:
        samples = int(min(1000, max(50, sets / 2)))
    if structured is None:
        structured = int(min(256, max(32, sets / 4)))
    if neighbours is None:
        neighbours = int(min(64, max(8, sets / (4 * _POLISH_STARTS * max(1, search_steps)))))
    return samples, structured, neighbours


def worst_case_error(code: LinearCode, s: int | None = None, *, decoder: str | Decoder | None = None,
                     limit: int = 20_000, samples: int | None = None, search: bool = True, rng: RNGLike = None,
                     batch_size: int = 256, search_steps: int = 10, neighbours: int | None = None,
                     structured: int | None = None, time_budget: float | None = None,
                     progress: bool | None = None) -> ApproximationReport:
    """The worst error of a code over the sets of ``s`` stragglers: proven, or a lower and an upper bound.

    When ``C(n, s) <= limit`` every set is evaluated: the worst case and the mean are exact (``proven``). Otherwise
    the worst case is bounded from below by the largest error among the sets evaluated: the structured adversaries
    of the code's family (all the holders of a few partitions, neighbourhoods, the heaviest rows:
    ``gradcodes/_verify/approx_adversaries.py``), ``samples`` uniformly random sets (which also give the mean and
    its standard error) and a greedy swap search from the best ``2`` sets (swap one straggler for one responder
    while the error grows). From above it is bounded by the family's theorem when one applies to the decoder (e.g.
    the spectral bound of expander codes, Raviv et al. 2018; the closed form of BIBD codes, Kadhe et al. 2019,
    which every set attains, so the worst case is then proven), or by the trivial ``||E||_F`` of least-squares
    decoders. ``lower_source`` and ``upper_source`` say how each bound was obtained. Works for any code (exact
    codes measure their residuals).

    Parameters
    ----------
    code : LinearCode
    s : int, optional
        Number of stragglers, ``0 <= s <= n - 1`` (default: the code's ``s``).
    decoder : str or Decoder, optional
        Default: the code's default decoder.
    limit : int
        Evaluate every set when there are at most this many (``>= 0``).
    samples, structured : int, optional
        Random sets (``>= 1``) and structured sets (``>= 0``) of the search. Default: from a fixed cost model
        (a few seconds of one core: ``samples`` 50 to 1000, ``structured`` 32 to 256; the same sets on every machine).
    search : bool
        Run the greedy swap search after the structured and random sets.
    rng : None, int, numpy.random.SeedSequence or numpy.random.Generator
        Random state of the random sets and the swaps (SPEC 7). An int gives the
        same report on every run (all but ``seconds``).
    batch_size : int
        Sets per batch (``>= 1``).
    search_steps, neighbours : int
        Greedy search: at most ``search_steps`` moves (``>= 0``) per start, each trying ``neighbours`` random swaps
        (``>= 1``; default from the cost model, 8 to 64).
    time_budget : float, optional
        Seconds (``>= 0``, the clock of :func:`gradcodes.verify`): beyond ``limit`` every set is still evaluated when
        the rate measured on the first batches predicts that they fit; every phase stops when the budget runs out
        and the bounds found so far are returned, labelled in ``lower_source`` and ``notes``
        (``budget_exhausted``). The result then depends on the machine's speed.
    progress : bool, optional
        Progress on stderr (tqdm on a terminal, a line every 10 s otherwise); default: when the run is predicted
        to take more than 10 s.

    Returns
    -------
    ApproximationReport
        ``worst_lower`` / ``lower_source``, ``worst_upper`` / ``upper_source``, ``proven`` (and ``worst``, the
        proven value or None), the worst set found, the mean error and the sets evaluated per strategy.

    Raises
    ------
    GradcodesTypeError
        ``code`` is not a gradcodes code.
    GradcodesValueError
        ``s`` outside ``[0, n - 1]``, or another argument outside its valid range (named in the message).

    Examples
    --------
    >>> import gradcodes as gc
    >>> r = gc.worst_case_error(gc.expander_code(12, 3, s=3, rng=0))       # C(12, 3) = 220 sets: all of them
    >>> r.proven, r.patterns_checked, round(r.worst, 3), r.lower_source
    (True, 220, 1.134, 'exhaustive (all 220 sets)')
    >>> big = gc.worst_case_error(gc.graph_assignment_code(40, 6, s=12, rng=0), rng=1)
    >>> big.proven, round(big.worst_lower ** 2, 9), big.worst_upper ** 2     # >= 2 found (two isolated partitions)
    (False, 2.0, 4.0)
    """
    if not isinstance(code, LinearCode):
        raise GradcodesTypeError(f"code must be a gradcodes code, got {type(code).__name__}")
    n = code.n
    if s is None:
        s = getattr(code, "s", None)
        if s is None:
            raise GradcodesValueError("s (the number of stragglers) is required: the code does not declare one")
    s = check_int("s", s, 0, n - 1)
    limit = check_int("limit", limit, 0)
    if samples is not None:
        samples = check_int("samples", samples, 1)
    if structured is not None:
        structured = check_int("structured", structured, 0)
    if neighbours is not None:
        neighbours = check_int("neighbours", neighbours, 1)
    batch_size = check_int("batch_size", batch_size, 1)
    search_steps = check_int("search_steps", search_steps, 0)
    budget = None if time_budget is None else check_real("time_budget", time_budget, 0)
    if progress is not None and not isinstance(progress, bool):
        raise GradcodesTypeError(f"progress must be a bool or None, got {type(progress).__name__}")
    rng = check_rng(rng)
    dec = code._decoder(decoder)
    samples, structured, neighbours = _default_counts(code, dec, samples, structured, neighbours, search_steps)
    total = math.comb(n, s)
    planned = structured + samples + (_POLISH_STARTS * search_steps * neighbours if search else 0)
    check_size("the straggler sets evaluated (min(limit, C(n, s)) + structured + samples + 2 search_steps * "
               "neighbours) times n", (min(limit, total) + planned) * n, "work")
    return _Search(code, s, dec, rng, batch_size, budget, progress).run(
        limit, samples, structured, search, search_steps, neighbours)


class _Search:
    """The phases of ``worst_case_error`` and what they found (the best sets, sums for the mean, the clock)."""

    def __init__(self, code: LinearCode, s: int, dec: Decoder, rng: np.random.Generator, batch: int,
                 budget: float | None, progress: bool | None) -> None:
        self.code, self.s, self.dec, self.rng, self.batch = code, s, dec, rng, batch
        self.n = code.n
        self.total = math.comb(code.n, s)
        self.budget, self.progress = budget, progress
        self.start = time.perf_counter()
        self.deadline = None if budget is None else self.start + budget
        self.worst, self.worst_S = -1.0, np.zeros(s, dtype=np.int64)
        self.strategies: dict[str, int] = {}
        self.notes: list[str] = []
        self.count = 0
        self.ran_out = False
        self.desc = f"worst_case_error({code.name}, s={s})"

    def errors(self, S: np.ndarray) -> np.ndarray:
        mask = np.ones((S.shape[0], self.n), dtype=bool)
        if self.s:
            np.put_along_axis(mask, S, False, axis=1)
        e = _errors(self.code, mask, self.dec)
        self.count += S.shape[0]
        i = int(np.argmax(e)) if e.size else 0
        if e.size and e[i] > self.worst:
            self.worst, self.worst_S = float(e[i]), S[i].copy()
        return e

    def affordable(self, piece: int) -> int:
        """``piece``, or fewer sets when the rate so far predicts that ``piece`` would overrun the time budget."""
        if self.deadline is None or not self.count:
            return piece
        per = (time.perf_counter() - self.start) / self.count
        return max(1, min(piece, int((self.deadline - time.perf_counter()) / per))) if per > 0 else piece

    def late(self) -> bool:
        if self.deadline is not None and time.perf_counter() > self.deadline:
            self.ran_out = True
            return True
        return False

    def evaluate(self, S: np.ndarray, clock: Clock, what: str) -> np.ndarray:
        """Errors of the sets ``S`` in batches, stopping when the time budget runs out (fewer errors then)."""
        out = []
        lo = 0
        piece = 4 if self.budget is not None else self.batch   # under a budget: 4, 8, 16, ... sets, then batches
        while lo < S.shape[0]:
            if self.late():
                self.notes.append(f"time_budget = {self.budget:g} s ran out during the {what} sets")
                break
            take = self.affordable(piece)
            out.append(self.errors(S[lo:lo + take]))
            lo += take
            piece = min(self.batch, 2 * piece)
            clock.update(out[-1].size)
        done = int(sum(e.size for e in out))
        if done:
            self.strategies[what] = self.strategies.get(what, 0) + done
        return np.concatenate(out) if out else np.empty(0)

    def enumerate(self, limit: int) -> tuple[bool, float, float]:
        """Every set in lexicographic order (or its prefix, when the budget rule gives up): ``(finished, sum e,
        sum e^2)``."""
        n, s, total = self.n, self.s, self.total
        over = self.budget is not None and total > limit
        clock = Clock(total, self.progress if self.progress is not None else (False if over else None), self.desc,
                      "straggler sets")
        combos = itertools.combinations(range(n), s)
        tot = tot2 = 0.0
        done = 0
        piece = 4 if self.budget is not None else self.batch
        try:
            while True:
                chunk = list(itertools.islice(combos, piece))
                piece = min(self.batch, 2 * piece)
                if not chunk:
                    return True, tot, tot2
                if self.late() or (over and self.budget is not None and clock.over_budget(self.budget)):
                    self.notes.append(f"not exhaustive: {total:,} sets would take about "
                                      f"{total / max(done, 1) * (time.perf_counter() - self.start):.3g} s "
                                      f"(> time_budget = {self.budget:g} s); pass limit={total} for every set")
                    self.strategies["lexicographic prefix"] = done
                    return False, tot, tot2
                e = self.errors(np.array(chunk, dtype=np.int64).reshape(len(chunk), s))
                tot += float(e.sum())
                tot2 += float((e * e).sum())
                done += len(chunk)
                clock.update(len(chunk))
        finally:
            clock.close()

    def run(self, limit: int, samples: int, structured: int, search: bool, search_steps: int,
            neighbours: int) -> ApproximationReport:
        total = self.total
        mode = ("exhaustive" if total <= limit else
                "budget" if self.budget is not None and self.budget > 0 and total < _HOPELESS else "search")
        finished = False
        if mode != "search":
            finished, tot, tot2 = self.enumerate(limit)
        if finished:
            self.strategies["exhaustive"] = total
            avg, mse, stderr = tot / total, tot2 / total, 0.0
        else:
            if mode == "search" and total >= _HOPELESS:
                self.notes.append(f"not exhaustive: {total:.3g} sets are far too many to enumerate")
            elif mode == "search":
                self.notes.append(f"not exhaustive: {total:,} sets > limit = {limit:,}; pass limit={total} (or a "
                                  f"time_budget) to evaluate every set")
            avg, mse, stderr = self.sample(samples, structured, search, search_steps, neighbours)
        return self.report(finished, avg, mse, stderr)

    def sample(self, samples: int, structured: int, search: bool, search_steps: int,
               neighbours: int) -> tuple[float, float, float]:
        n, s = self.n, self.s
        R = random_straggler_sets(n, s, samples, self.rng)      # drawn first: the same draws whatever the budget
        plan = structured + samples + (_POLISH_STARTS * search_steps * neighbours if search and s else 0)
        auto = None if self.budget is None or self.budget > 10 else False      # a short budget: no forecast line
        clock = Clock(plan, self.progress if self.progress is not None else auto, self.desc + " search",
                      "straggler sets")
        pool: list[tuple[float, tuple[int, ...]]] = []
        try:
            if structured and s:
                S, names = structured_sets(self.code, s, structured)
                e = self.evaluate(S, clock, "structured")
                pool += [(float(v), tuple(S[i].tolist())) for i, v in enumerate(e)]
                self.strategies.pop("structured", None)
                for name in names[:e.size]:                        # the budget may cut the last ones
                    key = f"structured:{name}"
                    self.strategies[key] = self.strategies.get(key, 0) + 1
            e = self.evaluate(R, clock, "random")
            pool += [(float(v), tuple(R[i].tolist())) for i, v in enumerate(e)]
            if e.size:
                avg, mse = float(e.mean()), float((e * e).mean())
                stderr = float(e.std(ddof=1) / math.sqrt(e.size)) if e.size > 1 else 0.0
            else:
                avg = mse = stderr = math.nan
                self.notes.append("no random set was evaluated: the mean error is unknown")
            if search and s and search_steps and not self.ran_out:
                self.polish(pool, clock, search_steps, neighbours)
        finally:
            clock.close()
        return avg, mse, stderr

    def polish(self, pool: list[tuple[float, tuple[int, ...]]], clock: Clock, steps: int, neighbours: int) -> None:
        """Greedy swaps from the best distinct sets found so far (best first, ties by the set)."""
        starts: list[tuple[float, tuple[int, ...]]] = []
        for v, S in sorted(pool, key=lambda t: (-t[0], t[1])):
            if S not in {x[1] for x in starts}:
                starts.append((v, S))
            if len(starts) == _POLISH_STARTS:
                break
        for cur_e, S in starts:
            cur = np.array(S, dtype=np.int64)
            for _ in range(steps):
                cand = swap_neighbours(cur, self.n, self.rng, neighbours)
                ce = self.evaluate(cand, clock, "greedy")
                if ce.size == 0:
                    return
                j = int(np.argmax(ce))
                if not ce[j] > cur_e:
                    break
                cur, cur_e = cand[j], float(ce[j])

    def report(self, finished: bool, avg: float, mse: float, stderr: float) -> ApproximationReport:
        code, s = self.code, self.s
        ub = upper_bound(code, s, self.dec)
        worst = max(self.worst, 0.0)
        if finished:
            lower_src = upper_src = f"exhaustive (all {self.total:,} sets)"
            upper, proven = worst, True
            if ub is not None and worst > ub.value * (1 + 1e-9) + 1e-12:
                self.notes.append(f"the family's bound {ub.value:.6g} ({ub.source}) is VIOLATED by the enumeration")
        else:
            parts = [k.split(":")[0] for k in self.strategies]
            lower_src = (f"search: {'+'.join(dict.fromkeys(parts))} ({self.count:,} sets)" if parts
                         else "no set evaluated")
            if self.ran_out:
                lower_src += f"; time_budget = {self.budget:g} s ran out"
            upper, upper_src = (math.inf, "none: no certified bound for this family and decoder") if ub is None \
                else (ub.value, ub.source)
            proven = False
            if ub is not None and ub.attained and worst <= ub.value * (1 + 1e-9) + 1e-12:
                worst, lower_src, proven = ub.value, ub.source, True
        responders = tuple(int(i) for i in np.setdiff1d(np.arange(self.n), self.worst_S))
        return ApproximationReport(
            name=code.name, n=self.n, s=s, decoder=self.dec.name, exhaustive=finished, patterns_checked=self.count,
            patterns_total=self.total, worst_lower=worst, lower_source=lower_src, worst_responders=responders,
            worst_upper=upper, upper_source=upper_src, proven=proven, average_error=avg, average_stderr=stderr,
            mean_squared_error=mse, norm2=float(code.k * code.m), load=code.load,
            seconds=time.perf_counter() - self.start, strategies=self.strategies, notes=self.notes,
            budget_exhausted=self.ran_out)
