"""The verifier: exact recovery from every set of ``n - s`` responders, streamed, batched and honest.

``verify(code)`` checks ``A_F B = E`` for straggler sets ``S`` (``|S| = s``, responders ``F = [n] \\ S``; any
superset of a good ``F`` is good too). Below ``limit`` sets it checks all ``C(n, s)`` of them in batches
(memory independent of ``C(n, s)``); beyond, the consecutive ("cyclic window") sets, random sets and a local
search (swap one straggler for one responder while the error estimate grows) look for the worst set, and the
report says the check was not exhaustive. A float code passes a set when the predicted
relative error of a float64 decode, ``u * canc + ||A_F B - E||_inf``, is at most ``rtol`` (so a code whose
decoding vectors cancel away every digit is reported as failing, not as exact); rational and GF(p) codes are
checked with no rounding at all.
"""

from __future__ import annotations

import dataclasses
import itertools
import math
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import numpy as np

from ._bounds import meets_min_load, min_load
from ._code import GradientCode, LinearCode
from ._decoders import Decoder, single_threaded_blas
from ._numerics import accepts, cancellation, error_estimate, residuals
from ._validate import SEED_UNSET, check_int, check_real, check_rng, check_size, take_rng

__all__ = ["verify", "VerifyReport", "straggler_batches"]

_MAX_FAILURES = 10


@dataclass
class VerifyReport:
    """The result of :func:`verify`.

    Attributes
    ----------
    exact : bool
        Every checked responder set recovers the gradient (within the tolerance for float codes, exactly for
        rational/GF(p) codes). Never True if a checked set failed.
    exhaustive : bool
        All ``C(n, s)`` straggler sets were checked (so ``exact`` is a proof for exact fields, and a full
        numerical check for float codes).
    patterns_checked, patterns_total : int
        Straggler sets checked, and ``C(n, s)``.
    strategies : dict
        How many sets each strategy checked (``exhaustive`` or ``consecutive``/``random``/``search``).
    worst_residual : float
        Largest ``||A_F B - E||_inf`` over the checked sets; ``worst_responders`` is that set.
    worst_cancellation : float
        Largest cancellation factor ``max_u sum_i |A_F[u,i]| ||B_i||_1 / k``; ``worst_cancellation_responders``.
    error_estimate : float
        Largest predicted relative float64 error ``u * canc + residual`` (0 for exact arithmetic).
    failures : list of tuple
        Up to 10 failing responder sets; ``n_failures`` counts all failing sets found.
    load, average_load, load_lower_bound, meets_lower_bound
        Maximum and average partitions per worker, the bound of :func:`gradcodes.min_load`, and whether the
        maximum load equals its ceiling.
    """

    name: str
    n: int
    s: int
    k: int
    m: int
    field: str
    decoder: str
    exact: bool
    exhaustive: bool
    patterns_checked: int
    patterns_total: int
    strategies: dict[str, int]
    worst_residual: float
    worst_responders: tuple[int, ...] | None
    worst_cancellation: float
    worst_cancellation_responders: tuple[int, ...] | None
    error_estimate: float
    failures: list[tuple[int, ...]]
    n_failures: int
    load: int
    average_load: Fraction
    load_lower_bound: Fraction
    meets_lower_bound: bool
    rtol: float
    seconds: float
    stopped_early: bool = False
    notes: list[str] = dataclasses.field(default_factory=list)  # (the attribute `field` shadows the function)

    @property
    def failing_responders(self) -> tuple[int, ...] | None:
        """The first failing responder set found, or None."""
        return self.failures[0] if self.failures else None

    @property
    def verdict(self) -> str:
        """One word: ``exact`` (exact arithmetic), ``ok`` (float decodes within ``rtol``), ``inaccurate`` (every
        residual within ``rtol`` but cancellation pushes the predicted error above it) or ``FAILS``."""
        if self.exact:
            return "exact" if self.field == "rational" or self.field.startswith("GF(") else "ok"
        return "inaccurate" if self.worst_residual <= self.rtol else "FAILS"

    def __bool__(self) -> bool:
        return self.exact

    def __str__(self) -> str:
        if self.exact:
            verdict = "EXACT RECOVERY" if not self.field.startswith(("real", "complex")) else \
                f"RECOVERY to rtol={self.rtol:g}"
        elif self.worst_residual <= self.rtol:
            verdict = f"INACCURATE in float64 (cancellation: predicted error {self.error_estimate:.2g} > rtol)"
        else:
            verdict = "FAILS"
        scope = "all" if self.exhaustive else "searched"
        strat = ", ".join(f"{k}: {v:,}" for k, v in self.strategies.items())
        lines = [
            f"{self.name} (n={self.n}, s={self.s}, k={self.k}, m={self.m}, field={self.field}, "
            f"decoder={self.decoder})",
            f"  verdict            {verdict} for {scope} {self.patterns_checked:,} of {self.patterns_total:,} "
            f"straggler sets ({strat})" + (" [stopped at the first failing batch]" if self.stopped_early else ""),
            f"  worst residual     {self.worst_residual:.3g} at responders {_short(self.worst_responders)}",
            f"  worst cancellation {self.worst_cancellation:.3g} at responders "
            f"{_short(self.worst_cancellation_responders)}",
            f"  error estimate     {self.error_estimate:.3g} (float64, relative)",
            f"  load               {self.load} (average {_frac(self.average_load)}; lower bound "
            f"{_frac(self.load_lower_bound)}; {'meets' if self.meets_lower_bound else 'above'} the bound)",
        ]
        if self.failures:
            lines.append(f"  failing sets       {self.n_failures:,} found; first: responders "
                         f"{_short(self.failures[0])}")
        lines += [f"  note               {note}" for note in self.notes]
        lines.append(f"  time               {self.seconds:.2f} s")
        return "\n".join(lines)

    def tour_row(self) -> dict[str, Any]:
        """The columns of ``gradcodes tour``."""
        return {
            "scheme": self.name, "n": self.n, "s": self.s, "m": self.m,
            "load / bound": f"{self.load} / {_frac(self.load_lower_bound)}",
            "sets checked": f"{self.patterns_checked:,}",
            "exhaustive": "yes" if self.exhaustive else "no",
            "result": self.verdict,
            "worst residual": f"{self.worst_residual:.1e}",
            "error est.": f"{self.error_estimate:.1e}",
            "seconds": f"{self.seconds:.2f}",
        }


def _short(F: tuple[int, ...] | None, width: int = 12) -> str:
    if F is None:
        return "-"
    if len(F) <= width:
        return str(list(F))
    return f"[{', '.join(map(str, F[:width]))}, ... ({len(F)} workers)]"


def _frac(x: Fraction) -> str:
    return str(x.numerator) if x.denominator == 1 else f"{x} ≈ {float(x):.3g}"


def straggler_batches(n: int, s: int, batch: int) -> Iterator[np.ndarray]:
    """All ``C(n, s)`` straggler sets in lexicographic order, as (b, s) int arrays of at most ``batch`` rows.

    Memory is O(batch * s) whatever ``C(n, s)``.

    >>> [b.tolist() for b in straggler_batches(4, 2, 4)]
    [[[0, 1], [0, 2], [0, 3], [1, 2]], [[1, 3], [2, 3]]]
    """
    combos = itertools.combinations(range(n), s)
    if s == 0:
        yield np.zeros((1, 0), dtype=np.int64)
        return
    while True:
        flat = np.fromiter(itertools.chain.from_iterable(itertools.islice(combos, batch)), dtype=np.int64)
        if flat.size == 0:
            return
        yield flat.reshape(-1, s)


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
    """Accumulates worst cases and failures over batches of straggler sets."""

    def __init__(self, code: LinearCode, dec: Decoder, rtol: float) -> None:
        self.code, self.dec, self.rtol = code, dec, rtol
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
        failed = ~accepts(canc, res, self.rtol) | (off > 0)
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
            Af = np.vectorize(float, otypes=[np.float64])(A)
            assert self.Bf is not None          # set for rational codes, the only non-GF exact field
            canc = cancellation(Af, self.Bf, code.k)
        return res, canc, failed

    def add(self, S: np.ndarray) -> np.ndarray:
        res, canc, failed = self.evaluate(S)
        self.checked += S.shape[0]
        resp = lambda row: tuple(int(i) for i in np.setdiff1d(np.arange(self.code.n), S[row]))  # noqa: E731
        if res.size:
            i = int(np.argmax(res))
            if res[i] > self.worst_res:
                self.worst_res, self.worst_res_S = float(res[i]), resp(i)
            if np.isfinite(canc).any():
                j = int(np.nanargmax(canc))
                if canc[j] > self.worst_canc:
                    self.worst_canc, self.worst_canc_S = float(canc[j]), resp(j)
        est = np.zeros_like(res) if self.exact else error_estimate(canc, res)
        if est.size:
            self.worst_est = max(self.worst_est, float(np.nanmax(est)))
        bad = np.flatnonzero(failed)
        self.n_failures += bad.size
        for r in bad[: max(0, _MAX_FAILURES - len(self.failures))]:
            self.failures.append(resp(int(r)))
        return np.where(failed, np.inf, est)


def verify(code: LinearCode, *, limit: int | None = None, samples: int = 2000, search: bool = True,
           rng: Any = None, rtol: float | None = None, decoder: str | Decoder | None = None,
           field: Any = None, stop_on_failure: bool = True, batch_size: int | None = None,
           progress: bool | None = None, seed: Any = SEED_UNSET) -> VerifyReport:
    """Check that every set of ``n - s`` responders recovers the gradient.

    Parameters
    ----------
    code : GradientCode
        The code to check.
    limit : int, optional
        Check all ``C(n, s)`` straggler sets when there are at most this many (default 200,000 for float codes,
        2,000 for exact ones; raise it for a full proof on larger codes: memory does not grow with it).
    samples : int, default 2000
        Random straggler sets checked when not exhaustive.
    search : bool, default True
        When not exhaustive, run a local search for the worst set (greedy swaps from the worst sets found).
    rng : None, int, numpy.random.SeedSequence or numpy.random.Generator, optional
        Random state of the random sets and the search (exhaustive checks use none), as scientific Python's
        SPEC 7 recommends: None for fresh entropy, an int, a SeedSequence or a Generator. ``seed=`` is a
        deprecated alias.
    rtol : float, optional
        Default: the code's ``rtol`` (1e-8). Float codes pass a set when
        ``u * canc + ||A_F B - E||_inf <= rtol`` (predicted float64 relative error).
    decoder : str or Decoder, optional
        The decoder to check (default: the code's default decoder).
    field : galois field class or "GF", optional
        Verify the same construction over a finite field instead (families that provide a field builder),
        with no rounding at all.
    stop_on_failure : bool, default True
        Stop after the first batch that contains a failing set.
    batch_size : int, optional
        Straggler sets per batch (default: chosen so a batch takes a few tens of MB).
    progress : bool, optional
        Show a tqdm progress bar (default: only on a terminal and for more than 200,000 sets).

    Returns
    -------
    VerifyReport
        (A code type with its own straggler model defines a method ``_verify_hook(**options)`` and ``verify``
        returns what it returns, e.g. :class:`~gradcodes.TreeVerifyReport` for CodedReduce trees.)

    Examples
    --------
    >>> import gradcodes as gc
    >>> report = gc.verify(gc.cyclic_repetition(10, 3, rng=1))
    >>> report.exact, report.exhaustive, report.patterns_checked
    (True, True, 120)
    >>> report.meets_lower_bound
    True

    A corrupted matrix is rejected, naming a failing responder set:

    >>> import numpy as np
    >>> B = gc.fractional_repetition(6, 1).B.copy()
    >>> B[0, 0] = 0.0
    >>> bad = gc.verify(gc.GradientCode(B, s=1))
    >>> bad.exact, bad.failing_responders
    (False, (0, 2, 3, 4, 5))
    """
    rng = take_rng(rng, seed)
    hook = getattr(code, "_verify_hook", None)
    if hook is not None:  # code types with their own straggler model (CodedReduce trees) verify themselves
        return hook(limit=limit, samples=samples, search=search, rng=rng, rtol=rtol, decoder=decoder,
                    field=field, stop_on_failure=stop_on_failure, batch_size=batch_size, progress=progress)
    if field is not None:
        code = code.in_field(field)
    if not isinstance(code, GradientCode):
        raise TypeError(f"verify() checks exact gradient codes (GradientCode); got {type(code).__name__}. "
                        f"Approximate codes are judged by their error, not by exact recovery: use "
                        f"gradcodes.evaluate_approximate(code) (command line: gradcodes evaluate).")
    rtol = check_real("rtol", code.rtol if rtol is None else rtol, 0, 1, open_lo=True, open_hi=True)
    samples = check_int("samples", samples, 0)
    check_size("the sampled straggler sets times n", samples * code.n, "work")
    rng = check_rng(rng)
    dec = code._decoder(decoder)
    by_blocks = getattr(dec, "verify_by_blocks", None)   # block decoders: proof by blocks (gradcodes._blocks)
    if by_blocks is not None:
        return by_blocks(code, limit=limit, samples=samples, search=search, rng=rng, rtol=rtol,
                         stop_on_failure=stop_on_failure, batch_size=batch_size, progress=progress)
    n, s = code.n, code.s
    total = math.comb(n, s)
    if limit is None:
        limit = 2_000 if code.exact else 200_000
    limit = check_int("limit", limit, 0)
    if batch_size is None:
        per_set = 8 * (n * code.m * 4 + code.k * code.m * code.m + n * n)
        batch_size = int(min(8192, max(256, 2**23 // per_set)))        # ~8 MB of work arrays: cache friendly
        if code.exact:
            batch_size = 64
    batch_size = check_int("batch_size", batch_size, 1)
    start = time.perf_counter()
    tracker = _Tracker(code, dec, rtol)
    exhaustive = total <= limit
    strategies: dict[str, int] = {}
    stopped = False
    notes: list[str] = []
    if progress is None:
        progress = sys.stderr.isatty() and (total if exhaustive else samples) > 200_000
    if exhaustive:
        bar = _progress(total, progress, f"verify {code.name}")
        with single_threaded_blas():                             # small products: see single_threaded_blas
            for S in straggler_batches(n, s, batch_size):
                tracker.add(S)
                if bar is not None:
                    bar.update(S.shape[0])
                if stop_on_failure and tracker.n_failures:
                    stopped = tracker.checked < total
                    break
        if bar is not None:
            bar.close()
        strategies["exhaustive"] = tracker.checked
    else:
        est_parts = []
        cons = np.unique(np.sort(_consecutive(n, s), axis=1), axis=0)
        est_parts.append((cons, tracker.add(cons)))
        strategies["consecutive"] = cons.shape[0]
        if samples and not (stop_on_failure and tracker.n_failures):
            rnd = random_straggler_sets(n, s, samples, rng)
            ests = [tracker.add(rnd[lo:lo + batch_size]) for lo in range(0, samples, batch_size)]
            est_parts.append((rnd, np.concatenate(ests)))
            strategies["random"] = samples
        if search and s and not (stop_on_failure and tracker.n_failures):
            strategies["search"] = _local_search(tracker, est_parts, rng, batch_size)
        stopped = bool(stop_on_failure and tracker.n_failures)
        notes.append(f"not exhaustive: C({n},{s}) = {total:,} > limit = {limit:,}; pass limit={total} "
                     f"for a full check")
    if code.exact:
        notes.append(f"exact arithmetic over {code.field}: no rounding")
    bound = min_load(n, s, code.m, code.k) if s + code.m <= n else Fraction(code.k * (s + code.m), n)
    loads = code.loads
    return VerifyReport(
        name=code.name, n=n, s=s, k=code.k, m=code.m, field=code.field, decoder=dec.name,
        exact=tracker.n_failures == 0, exhaustive=exhaustive and not stopped,
        patterns_checked=tracker.checked, patterns_total=total, strategies=strategies,
        worst_residual=max(tracker.worst_res, 0.0), worst_responders=tracker.worst_res_S,
        worst_cancellation=max(tracker.worst_canc, 0.0) if tracker.worst_canc_S else float("nan"),
        worst_cancellation_responders=tracker.worst_canc_S, error_estimate=tracker.worst_est,
        failures=tracker.failures, n_failures=tracker.n_failures, load=int(loads.max()),
        average_load=Fraction(int(loads.sum()), n), load_lower_bound=bound,
        meets_lower_bound=s + code.m <= n and meets_min_load(int(loads.max()), n, s, code.m, code.k),
        rtol=rtol, seconds=time.perf_counter() - start, stopped_early=stopped, notes=notes)


def _local_search(tracker: _Tracker, parts: list[tuple[np.ndarray, np.ndarray]], rng: np.random.Generator,
                  batch_size: int, starts: int = 3, steps: int = 15, neighbours: int = 256) -> int:
    """Greedy swaps (one straggler for one responder) from the worst sets found; returns sets evaluated."""
    n = tracker.code.n
    S_all = np.concatenate([p[0] for p in parts])
    e_all = np.concatenate([p[1] for p in parts])
    order = np.argsort(-np.nan_to_num(e_all, nan=np.inf))[:starts]
    evaluated = 0
    for idx in order:
        cur, cur_e = S_all[idx].copy(), e_all[idx]
        for _ in range(steps):
            cand = swap_neighbours(cur, n, rng, neighbours)
            e = np.concatenate([tracker.add(cand[lo:lo + batch_size]) for lo in range(0, len(cand), batch_size)])
            evaluated += len(cand)
            best = int(np.argmax(e))
            if tracker.n_failures or not e[best] > cur_e:
                break
            cur, cur_e = cand[best], e[best]
        if tracker.n_failures:
            break
    return evaluated


def _progress(total: int, enabled: bool, desc: str) -> Any:
    if not enabled:
        return None
    try:
        from tqdm.auto import tqdm
    except ImportError:  # pragma: no cover - tqdm is a dependency
        return None
    return tqdm(total=total, desc=desc, unit="sets", unit_scale=True, leave=False)
