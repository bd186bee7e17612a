"""Verification of CodedReduce trees under their straggler model (every parent loses at most ``s`` children).

Reisizadeh, Prakash, Pedarsani & Avestimehr, "CodedReduce" (2019), Section 4: the master's hierarchical decode
must equal the full gradient sum for every admissible straggler pattern.
"""

from __future__ import annotations

import copy
import math
import os
from collections.abc import Iterator
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import numpy as np

from .._base.aliases import DTypeLike, RNGLike
from .._base.errors import GradcodesTypeError
from .._base.output import count_text, labelled
from .._base.validate import (
    check_int,
    check_real,
    check_rng,
    check_size,
    limits,
)
from .._verify.engine import PatternModel, Tracker, run
from .._verify.report import VerifyReport
from .coded_reduce_alloc import coded_reduce_load
from .coded_reduce_code import VERIFIERS, CodedReduceCode
from .coded_reduce_compose import _allocation, compose

__all__ = ["TreeVerifyReport", "TreePatterns", "verify_tree", "composition_report"]

# ----------------------------------------------------------------------------------------------------------
# the report


@dataclass(repr=False)
class TreeVerifyReport(VerifyReport):
    """Outcome of :func:`verify_tree`: a :class:`gradcodes.VerifyReport` over the tree's straggler patterns.

    The shared attributes mean what they mean for flat codes, with a *pattern* (every parent picks at most ``s``
    straggling children; a straggler silences its subtree) in place of a straggler set: ``n`` is the number of
    workers ``N``, ``s`` the stragglers per parent, ``k`` the number of data units ``P``; ``failures`` lists the
    first failing patterns as text; ``worst_responders`` and ``worst_cancellation_responders`` are the
    responding workers of the worst patterns. ``exact`` (and ``bool(report)``, :attr:`proven`) is True only for a
    proof: every pattern was checked and recovers the sum (exactly for rational codes, to tolerance for float
    ones), and the loads and allocation check out.

    Attributes
    ----------
    distinct_checked : int
        Distinct effective decodings among the checked patterns (patterns that differ only below a straggler,
        or only in children a parent does not need, decode identically).
    worst_pattern, worst_cancellation_pattern : str
        The patterns of the largest residual and cancellation (``{parent: straggling children}``).
    loads_equal : bool
        Every worker stores exactly ``load`` units.
    allocation_ok : bool
        Row ``v`` of ``B`` is exactly worker ``v``'s own share of the CR.Allocate list.
    load, load_fraction, load_lower_bound
        ``r P`` units, ``r``, and the optimum ``r_CR`` (Fraction, a share of the data);
        ``meets_lower_bound`` = ``r == r_CR``.

    Examples
    --------
    >>> import gradcodes as gc
    >>> report = gc.verify(gc.coded_reduce(2, 2, 1))           # every straggler pattern of the tree
    >>> bool(report), report.exhaustive, report.patterns_checked
    (True, True, 27)
    """

    distinct_checked: int = 0
    worst_pattern: str = "-"
    worst_cancellation_pattern: str = "-"
    loads_equal: bool = True
    allocation_ok: bool = True
    load_fraction: Fraction = Fraction(0)

    @property
    def N(self) -> int:
        """Number of workers (the same as ``n``)."""
        return self.n

    @property
    def verdict(self) -> str:
        """As :attr:`gradcodes.VerifyReport.verdict`; a load or allocation mismatch is ``FAILS`` too."""
        if not (self.loads_equal and self.allocation_ok):
            return "FAILS"
        return super().verdict

    def __repr__(self) -> str:
        return (f"<TreeVerifyReport {self.name}: {self.verdict}, {self.patterns_checked:,} of "
                f"{count_text(self.patterns_total)} patterns checked"
                + (f", {'' if self.failures_exact else '>= '}{self.n_failures:,} failing" if self.n_failures else "")
                + ">")

    def tour_row(self) -> dict[str, Any]:
        """The tour's columns.

        Returns
        -------
        dict of str to str or number
            Column name to cell, ``result`` among them.

        Examples
        --------
        >>> import gradcodes as gc
        >>> gc.verify(gc.coded_reduce(2, 2, 1)).tour_row()["result"]
        'ok'
        """
        bound = self.load_lower_bound * (Fraction(self.load) / self.load_fraction)
        return {
            "scheme": self.name, "n": self.n, "s": f"{self.s}/parent", "m": 1,
            "load / bound": f"{self.load} / {bound} units",
            "sets checked": f"{self.patterns_checked:,} tree patterns",
            "exhaustive": "yes" if self.exhaustive else ("theorem" if self.theorem else "no"),
            "result": self.verdict,
            "worst residual": f"{self.worst_residual:.1e}",
            "error est.": f"{self.error_estimate:.1e}",
            "seconds": f"{self.seconds:.2f}",
        }

    def __str__(self) -> str:
        strat = ", ".join(f"{k}: {v:,}" for k, v in self.strategies.items())
        lines = [
            f"verify_tree: {self.name} [{self.field}, dtype={self.dtype}]",
            f"  verdict       : {self._headline()}",
            f"  checked       : {self.patterns_checked:,} of {count_text(self.patterns_total)} ({strat}); "
            f"{self.distinct_checked:,} distinct decodings"
            + (" [stopped at the first failing batch]" if self.stopped_early else "")
            + (" [interrupted]" if self.interrupted else ""),
            f"  worst residual: {self.worst_residual:.3g} at {self.worst_pattern}",
            f"  cancellation  : {self.worst_cancellation:.3g} at {self.worst_cancellation_pattern} "
            f"(error estimate {self.error_estimate:.2e})",
            f"  load          : {self.load} units = {self.load_fraction} of the data per worker; optimum "
            f"r_CR = {self.load_lower_bound}; {'optimal' if self.meets_lower_bound else 'NOT optimal'}; "
            f"equal loads: {self.loads_equal}; allocation matches B: {self.allocation_ok}",
        ]
        if self.failures:
            lines.append(f"  failures      : {self._count_text()} patterns; first: " + "; ".join(self.failures))
        lines += [line for t in self.notes for line in labelled("  note: ", t)]
        lines.append(f"  time          : {self.seconds:.2f} s")
        return "\n".join(lines)


def _masks_of_ranks(code: CodedReduceCode, opts: np.ndarray, lo: int, hi: int) -> np.ndarray:
    """The responder masks of pattern ranks ``[lo, hi)``: the rank's mixed-radix digits (parent 0 the most
    significant) pick each parent's straggler set among ``opts`` (:meth:`CodedReduceCode.straggler_options`)."""
    S1 = opts.shape[0]
    par = code.parents
    idx = np.arange(lo, hi, dtype=np.int64)
    digits = np.empty((idx.size, par), dtype=np.int64)
    rest = idx.copy()
    for j in range(par - 1, -1, -1):
        digits[:, j] = rest % S1
        rest //= S1
    return ~opts[digits].reshape(idx.size, code.N)


def _exhaustive_masks(code: CodedReduceCode, batch: int) -> Iterator[np.ndarray]:
    opts = code.straggler_options()
    total = code.patterns_total()
    for lo in range(0, total, batch):
        yield _masks_of_ranks(code, opts, lo, min(total, lo + batch))


def _special_masks(code: CodedReduceCode) -> np.ndarray:
    """Structured patterns: no stragglers, and the same s consecutive (cyclically) children at every parent."""
    n, s = code.branching, code.s
    rows = [np.ones(code.N, dtype=bool)]
    for t in range(n if s else 0):
        kid = np.ones(n, dtype=bool)
        kid[[(t + j) % n for j in range(s)]] = False
        rows.append(np.tile(kid, code.parents))
    return np.array(rows)


def _targeted_masks(code: CodedReduceCode, batch: int) -> Iterator[np.ndarray]:
    """One pattern per worker that forces the worker's message into use (all other parents: no stragglers).

    Along the worker's path, every ancestor loses the ``s`` children cyclically *preceding* the path child
    ``t`` (``t-1, ..., t-s mod n``); then ``t`` is among the ``n - s`` smallest-index responders, and decoders
    that prefer small indices (e.g. fractional repetition's one-per-group rule) must use it. Random patterns
    almost never reach such workers (for n = 12, s = 5 a leaf may need 3 + 4 specific stragglers), so a
    corrupted share there would go unnoticed without these. Yields (b, N) masks.
    """
    n, s = code.branching, code.s
    for lo in range(0, code.N, batch):
        hi = min(code.N, lo + batch)
        out = np.ones((hi - lo, code.N), dtype=bool)
        for v in range(lo, hi):
            w = v
            while True:
                par, child = divmod(w, n)       # parent number (0 = master, i + 1 = worker i), child index
                for j in range(1, s + 1):
                    out[v - lo, par * n + (child - j) % n] = False
                if par == 0:
                    break
                w = par - 1
        yield out


class TreePatterns(PatternModel):
    """The tree's straggler-pattern model: every parent picks at most ``s`` straggling children (rows: responder
    masks of the ``N`` workers). Patterns with the same used workers decode identically and are measured once."""

    noun = "tree patterns"
    ranked = True
    pattern_dtype = bool

    def __init__(self, code: CodedReduceCode, search_budget: int = 0) -> None:
        self.code, self.search_budget = code, search_budget
        self.total = code.patterns_total()
        self.seen: set[bytes] = set()
        #: how the exhaustive enumeration runs (workers, checkpoint, checkpoint_every, comm)
        self.scale: dict[str, Any] = {}
        self._opts: np.ndarray | None = None

    def batches(self, batch: int) -> Iterator[np.ndarray]:
        return _exhaustive_masks(self.code, batch)

    def patterns(self, lo: int, hi: int) -> np.ndarray:
        """The responder masks of pattern ranks ``[lo, hi)`` (the order of :meth:`batches`)."""
        if self._opts is None:
            self._opts = self.code.straggler_options()
        return _masks_of_ranks(self.code, self._opts, lo, hi)

    def fresh(self) -> TreePatterns:
        """A copy with no distinct decodings met yet (a chunk's own count)."""
        other = copy.copy(self)
        other.seen = set()
        return other

    def distinct_keys(self) -> set[str]:
        return {key.hex() for key in self.seen}

    def add_distinct(self, keys: set[str]) -> None:
        self.seen.update(bytes.fromhex(key) for key in keys)

    def structured(self, batch: int) -> Iterator[tuple[str, np.ndarray]]:
        yield "structured", _special_masks(self.code)
        for masks in _targeted_masks(self.code, batch):
            yield "targeted", masks

    def random(self, count: int, rng: np.random.Generator) -> np.ndarray:
        return self.code.random_patterns(count, rng)

    def decode(self, P: np.ndarray) -> tuple[Any, np.ndarray, np.ndarray]:
        W, used, bad, _ = self.code._tree_weights(P)
        uniq, first, inv = np.unique(used, axis=0, return_index=True, return_inverse=True)
        for row in uniq:
            self.seen.add(np.packbits(row).tobytes())
        return W[first][:, None, :], bad >= 0, inv.reshape(-1)

    def responders(self, p: np.ndarray) -> tuple[int, ...]:
        return tuple(int(i) for i in np.flatnonzero(p))

    def label(self, p: np.ndarray) -> str:
        return self.code.pattern_text(p)

    def search(self, tracker: Tracker, parts: list[tuple[np.ndarray, np.ndarray]], rng: np.random.Generator,
               batch: int) -> dict[str, int]:
        return {"search": _search(self.code, tracker, rng, budget=self.search_budget)}


def verify_tree(code: CodedReduceCode, *, limit: int | None = None, samples: int = 2_000, search: bool = True,
                rng: RNGLike = None, rtol: float | None = None, batch_size: int = 4096, max_failures: int = 5,
                search_budget: int | None = None, dtype: DTypeLike = np.float64, stop_on_failure: bool = True,
                progress: bool | None = None, time_budget: float | None = None,
                workers: int | None = None, checkpoint: str | os.PathLike[str] | None = None,
                checkpoint_every: float = 60.0, comm: Any = None) -> TreeVerifyReport:
    """Verify a CodedReduce code under its straggler model (at most ``s`` straggling children per parent).

    A straggler pattern lets every parent (the master and every internal worker) pick at most ``s`` straggling
    children; a straggler silences its subtree. For each pattern the hierarchical decoding vector ``A`` is
    computed (:class:`TreeDecoder`) and ``A B = 1`` is checked: exactly (with integers, never rounded) for
    rational codes; float codes are judged by the acceptance rule in ``dtype`` (docs/acceptance.md:
    ok, borderline or fails on every machine). The tree supplies only this pattern model; enumeration, sampling,
    the acceptance rule, progress, Ctrl-C and the time budget are :func:`gradcodes.verify`'s engine, and
    ``gc.verify(code)`` dispatches here for tree codes.

    * Every pattern is checked when there are at most ``limit``, or, with ``limit=None``, when there are at most
      the default budget: ``floor(10 s / c)`` patterns, ``c`` the microseconds per pattern that the verifier's fixed
      cost model predicts from ``N`` and ``P`` (never a clock: the same verdict on
      every machine); or, when ``time_budget`` seconds are given, when the enumeration fits them at the rate
      measured on the first batches (the n=3, L=2, s=1 tree has 256).
    * Otherwise: the structured patterns (no stragglers; the same ``s`` cyclically consecutive children at
      every parent), one *targeted* pattern per worker that forces that worker's message into use (its
      ancestors each lose the ``s`` siblings preceding the path), ``samples`` uniformly random patterns, and
      with ``search=True`` a worst-case search (coordinate ascent: each parent whose output reaches the master
      in turn tries every straggler set given the others, keeping the one that maximises the residual, then
      the cancellation factor; at most ``search_budget`` patterns). The sampled patterns alone are no proof.
    * **Composition** (``gradcodes/_families/coded_reduce_compose.py``, Reisizadeh et al. 2019): when the
      patterns are more than the count above (``limit``, or the default budget; with ``time_budget``, when they
      are past ``2^62`` or the code is stored sparse), the inner code's proof over all its sets is composed along
      the tree: when ``B`` is CR.Allocate's matrix of the inner code and the composed acceptance bound (inner
      cancellation ``C``: ``C^L``; inner residual ``rho``: ``rho (1 + C + ... + C^{L-1})``) is within ``rtol``,
      every pattern with at most ``s`` stragglers per parent is proven (exactly, for rational codes). With
      ``limit=None`` that report is returned without sampling; with a ``limit`` the sampled check runs too and
      the report is a proof when it finds no failure. When the bound exceeds ``rtol``, the patterns that reach
      it are built and checked: a failing one is returned as the counterexample (``"inaccurate"`` or
      ``"FAILS"``); otherwise the sampled check runs and the report is ``"unproven"``.

    The load is checked too: every worker stores exactly ``r P`` units, ``B`` matches the CR.Allocate lists,
    and ``r`` is compared with the optimum :func:`coded_reduce_load`.

    Parameters
    ----------
    code : CodedReduceCode
    limit : int, optional
        Largest number of patterns checked exhaustively (default: the cost model's count, see above).
    samples : int
        Random patterns when not exhaustive.
    search : bool
        Run the worst-case search when not exhaustive.
    rng : None, int, numpy.random.SeedSequence or numpy.random.Generator, optional
        Random state of the sampling (SPEC 7: None for fresh entropy, an int, a SeedSequence or a
        Generator).
    rtol : float, optional
        Float codes: accepted predicted relative error, in (0, 1) (default: the code's ``rtol``, 1e-8, carried
        over to ``dtype`` as :func:`gradcodes.verify` does).
    batch_size : int, default 4096
        Patterns per batch (as in :func:`gradcodes.verify`).
    max_failures : int
        Failing patterns kept in the report.
    search_budget : int, optional
        Patterns the worst-case search may check (default 20,000 for float codes, 2,000 for exact ones).
    dtype : numpy dtype, default float64
        Dtype of the messages: the acceptance rule uses its unit roundoff.
    stop_on_failure : bool, default True
        Stop after the first batch with a failing pattern (failure counts are then lower bounds), as
        :func:`gradcodes.verify` does; False counts every failing pattern of the run.
    progress : bool, optional
        Progress on stderr (default: for runs predicted to take more than 10 s).
    time_budget : float, optional
        A wall-clock budget instead of the default count, when ``limit`` is None: seconds the enumeration may take
        at the rate measured on the first batches (0: never enumerate beyond what sampling checks). The verdict
        then depends on the machine's speed and load.
    workers, checkpoint, checkpoint_every, comm
        The exhaustive enumeration on local processes, MPI ranks, from and to a checkpoint file, as in
        :func:`gradcodes.verify` (the patterns are numbered in mixed radix, one digit per parent, and cut into
        chunks of consecutive ranks); the report is the same for every choice.

    Returns
    -------
    TreeVerifyReport
        Truthy only for a proof. Ctrl-C returns the partial report, marked interrupted.

    Raises
    ------
    GradcodesTypeError
        If ``code`` is not a :class:`CodedReduceCode`.

    Examples
    --------
    >>> import gradcodes as gc
    >>> rep = gc.verify_tree(gc.coded_reduce(3, 2, 1, field="rational"))
    >>> rep.exact, rep.exhaustive, rep.patterns_checked, rep.load_fraction
    (True, True, 256, Fraction(4, 15))
    """
    from .._verify.cost import default_limit, pattern_cost_us
    from .._verify.verifier import _scale_options, borderline_note, check_dtype_rtol

    scale = _scale_options(workers, checkpoint, checkpoint_every, comm)        # checked before any work
    if not isinstance(code, CodedReduceCode):
        raise GradcodesTypeError(f"verify_tree takes a CodedReduceCode, got {type(code).__name__}")
    if limit is not None:
        limit = check_int("limit", limit, 0)
    samples = check_int("samples", samples, 0)
    batch = check_int("batch_size", batch_size, 1)
    if search_budget is None:
        search_budget = 2_000 if code.exact else 20_000
    search_budget = check_int("search_budget", search_budget, 0)
    max_failures = check_int("max_failures", max_failures, 0)
    time_budget = None if time_budget is None else check_real("time_budget", time_budget, 0)
    check_size("the sampled and searched patterns times N workers", (samples + search_budget) * code.N, "work")
    dt, rtol = check_dtype_rtol(dtype, rtol, code.rtol)
    rng = check_rng(rng)
    if code.sparse and limit is None:
        proof = _theorem_report(code, rtol, dt)        # large trees: a proof by composition, no enumeration
        if proof is not None:
            return proof
    set_budget = default_limit(pattern_cost_us("tree_rational" if code.exact else "tree", n=code.N, s=code.s,
                                               k=code.P, complex_=code.field == "complex"))
    sampled_size = 1 + code.branching + code.N + samples + (search_budget if search else 0)
    total = code.patterns_total()
    if time_budget is None:
        compose = total > (limit if limit is not None else max(set_budget, sampled_size))
    else:
        compose = code.sparse or total >= 2**62
    composed = None
    if compose:       # too many patterns to enumerate: the inner code's proof, composed along the tree
        composed = composition_report(code, rtol, dt, max_failures)
        # a counterexample settles it; a proof does too, unless a limit asks for the sampled check as well (as a
        # flat code's theorem is checked alongside its sampled sets)
        if composed is not None and (composed.n_failures or (composed.exact and limit is None)):
            return composed
    # one batch of masks within gradcodes.limits.entries (the verdict does not depend on the batch size)
    batch = min(batch, max(1, limits.entries // code.N))
    check_size("batch_size * N (one batch of masks)", batch * code.N, "entries")
    model = TreePatterns(code, search_budget)
    model.scale = scale
    if comm is not None and comm.Get_size() > 1:     # every rank samples and searches the same patterns
        rng = np.random.default_rng(comm.bcast(int(rng.integers(2**63)) if comm.Get_rank() == 0 else None, root=0))
    tr = Tracker(model, rtol, dt, max_failures, load=int(code.load) + 2 * code.L)   # CodedReduceCode._terms
    out = run(tr, limit=limit, samples=samples, search=search, rng=rng, batch=batch,
              stop_on_failure=stop_on_failure, progress=progress, time_budget=time_budget,
              sampled_size=sampled_size, desc=f"verify_tree {code.name}", set_budget=set_budget)
    notes = out.notes
    if composed is not None:
        notes.extend(f"composition: {note}" for note in composed.notes)
    if (scale["checkpoint"] is not None or (comm is not None and comm.Get_size() > 1)) and not scale.get("used"):
        notes.append("checkpoint / comm not used: they serve the exhaustive enumeration (this run was sampled)")
    loads, loads_equal, allocation_ok = _allocation(code, notes)
    if code.exact:
        notes.append(f"exact arithmetic over {code.field}: no rounding")
    frac = Fraction(int(code.load), code.P)
    opt = coded_reduce_load(code.branching, code.L, code.s)
    if tr.n_borderline:
        notes.append(borderline_note(tr))
    ok = (out.exhaustive and not tr.n_failures and not tr.n_borderline and tr.checked > 0 and loads_equal
          and allocation_ok)
    theorem, est, bound = None, tr.worst_est, tr.worst_hi
    if composed is not None and composed.exact and not (tr.n_failures or tr.n_borderline or out.interrupted):
        ok, theorem = True, composed.theorem       # the composition proves what the sampled sets did not break
        est, bound = max(est, composed.error_estimate), max(bound, composed.error_bound)
    res_txt = code.pattern_text(tr.worst_res_P) if tr.worst_res_P is not None else "-"
    canc_txt = code.pattern_text(tr.worst_canc_P) if tr.worst_canc_P is not None else "-"
    return TreeVerifyReport(
        name=code.name, n=code.N, s=code.s, k=code.P, m=1, field=code.field, decoder="tree", exact=bool(ok),
        exhaustive=out.exhaustive, patterns_checked=tr.checked, patterns_total=model.total,
        strategies=out.strategies, worst_residual=max(tr.worst_res, 0.0), worst_responders=tr.worst_res_S,
        worst_cancellation=max(tr.worst_canc, 0.0), worst_cancellation_responders=tr.worst_canc_S,
        error_estimate=est, failures=tr.failures, n_failures=tr.n_failures, load=int(code.load),
        average_load=Fraction(int(loads.sum()), code.N), load_lower_bound=opt, meets_lower_bound=frac == opt,
        borderline=tr.borderline, n_borderline=tr.n_borderline, worst_residual_bound=max(tr.worst_res_hi, 0.0),
        worst_residual_lower=None if code.exact else tr.worst_res_lo, error_bound=bound, theorem=theorem,
        rtol=rtol, seconds=out.seconds, stopped_early=out.stopped, notes=notes, interrupted=out.interrupted,
        dtype=str(dt), pattern_model="tree patterns", distinct_checked=len(model.seen), worst_pattern=res_txt,
        worst_cancellation_pattern=canc_txt, loads_equal=loads_equal, allocation_ok=allocation_ok,
        load_fraction=frac)


def composition_report(code: CodedReduceCode, rtol: float, dtype: np.dtype,
                       max_failures: int = 5) -> TreeVerifyReport | None:
    """The report of a proof by composition (:func:`gradcodes._families.coded_reduce_compose.compose`: the inner
    code's proof composed along the tree), or of the patterns that reach the composed bound when it is no proof;
    None when the composition's conditions do not hold."""
    import time

    start = time.perf_counter()
    tr = Tracker(TreePatterns(code, 0), rtol, dtype, max_failures, load=int(code.load) + 2 * code.L)
    c = compose(code, rtol, dtype, tr)
    if c is None:
        return None
    b, proven = c.bounds, c.proven
    frac = Fraction(int(code.load), code.P)
    opt = coded_reduce_load(code.branching, code.L, code.s)
    return TreeVerifyReport(
        name=code.name, n=code.N, s=code.s, k=code.P, m=1, field=code.field, decoder="tree",
        exact=bool(proven and not tr.n_failures), exhaustive=False, patterns_checked=tr.checked,
        patterns_total=TreePatterns(code, 0).total, strategies={"composition": 0, **c.checked},
        worst_residual=b["residual"] if proven else max(tr.worst_res, 0.0), worst_responders=tr.worst_res_S,
        worst_cancellation=max(tr.worst_canc, 0.0) if tr.worst_canc_P is not None else b["canc"],
        worst_cancellation_responders=tr.worst_canc_S,
        error_estimate=b["estimate"] if proven else max(tr.worst_est, 0.0), failures=tr.failures,
        n_failures=tr.n_failures, borderline=tr.borderline, n_borderline=tr.n_borderline, load=int(code.load),
        average_load=Fraction(int(c.loads.sum()), code.N), load_lower_bound=opt, meets_lower_bound=frac == opt,
        worst_residual_bound=b["residual_hi"], worst_residual_lower=None if code.exact else tr.worst_res_lo,
        error_bound=b["bound"], rtol=rtol, seconds=time.perf_counter() - start, theorem=c.theorem,
        notes=c.notes, dtype=str(dtype), pattern_model="tree patterns",
        worst_pattern=code.pattern_text(tr.worst_res_P) if tr.worst_res_P is not None else "-",
        worst_cancellation_pattern=code.pattern_text(tr.worst_canc_P) if tr.worst_canc_P is not None else "-",
        loads_equal=c.loads_equal, allocation_ok=c.allocation_ok, load_fraction=frac)


def tree_theorem(code: CodedReduceCode, rtol: float, dtype: Any = np.float64) -> str | None:
    """A proof for every straggler pattern of a tree whose inner code is proven by a 0/1 theorem, or None.

    Conditions, checked: the inner code's default decoder states a theorem for it (fractional repetition: 0/1
    weights, residual 0, cancellation 1; Tandon et al. 2017, Section 3) and has 0/1 entries; ``B`` is exactly the
    CR.Allocate matrix built from it (every entry 1, every load ``r P``). Then, by induction from the leaves
    (Reisizadeh et al., CodedReduce, the correctness of CR.Execute), every parent with at most ``s`` straggling
    children recovers its whole list from its first ``n - s`` responding children, since ``sum_t a_F[t]
    B_inner[t, kappa] = 1`` exactly for every chunk ``kappa``; the flattened decoding vector is a product of 0/1
    weights, so ``A B = 1`` holds with integer sums (residual 0, no rounding) and, all terms being non-negative,
    cancellation factor exactly 1. A pattern uses ``t = (n-s) + ... + (n-s)^L`` messages; the rule's bound with
    ``t + load + 2 L`` terms (:meth:`CodedReduceCode._terms`) must be at most ``rtol``.
    """
    from .._core.numerics import error_estimate, unit_roundoff

    inner = code.inner
    dec = inner.decoders[inner.default_decoder]
    fn = getattr(dec, "theorem", None)
    if fn is None or inner.exact or code.exact or code.m != 1:
        return None
    stmt = fn(inner, unit_roundoff(dtype), rtol)
    if stmt is None or not np.all((np.asarray(inner.B) == 0) | (np.asarray(inner.B) == 1)):
        return None
    notes: list[str] = []
    _, loads_equal, allocation_ok = _allocation(code, notes)
    if not (loads_equal and allocation_ok and code._lists is not None):
        return None
    if not np.all(code._csr_parts()[2] == 1):
        return None
    K = code.branching - code.s
    terms = sum(K**lev for lev in range(1, code.L + 1)) + int(code.load) + 2 * code.L    # CodedReduceCode._terms
    if not float(error_estimate(1.0, 0.0, dtype, terms)) <= rtol:
        return None
    return (f"CodedReduce composition: every parent decodes its first branching - s = {K} responding children by the "
            f"inner code's theorem ({stmt}); B is the CR.Allocate matrix of that 0/1 code, so every pattern's "
            f"flattened 0/1 decoding vector recovers the sum exactly (residual 0, cancellation 1)")


def _theorem_report(code: CodedReduceCode, rtol: float, dt: np.dtype) -> TreeVerifyReport | None:
    """The report of a proof by :func:`tree_theorem` alone (no pattern enumerated or sampled), or None."""
    import time

    from .._core.numerics import error_estimate

    start = time.perf_counter()
    stmt = tree_theorem(code, rtol, dt)
    if stmt is None:
        return None
    K = code.branching - code.s
    terms = sum(K**lev for lev in range(1, code.L + 1)) + int(code.load) + 2 * code.L    # CodedReduceCode._terms
    est = float(error_estimate(1.0, 0.0, dt, terms))
    frac = Fraction(int(code.load), code.P)
    opt = coded_reduce_load(code.branching, code.L, code.s)
    loads = np.asarray(code.loads)
    return TreeVerifyReport(
        name=code.name, n=code.N, s=code.s, k=code.P, m=1, field=code.field, decoder="tree", exact=True,
        exhaustive=False, patterns_checked=0, patterns_total=TreePatterns(code, 0).total, strategies={"theorem": 0},
        worst_residual=0.0, worst_responders=None, worst_cancellation=1.0, worst_cancellation_responders=None,
        error_estimate=est, failures=[], n_failures=0, load=int(code.load),
        average_load=Fraction(int(loads.sum()), code.N), load_lower_bound=opt, meets_lower_bound=frac == opt,
        rtol=rtol, seconds=time.perf_counter() - start, theorem=stmt, dtype=str(dt), pattern_model="tree patterns",
        error_bound=est, load_fraction=frac,
        notes=["proof by composition of the per-parent proofs, checked on the stored non-zeros of B; no pattern "
               "was enumerated or sampled (the code is stored sparse)"])


def _search(code: CodedReduceCode, tr: Tracker, rng: np.random.Generator, budget: int,
            sweeps: int = 2, max_options: int = 512) -> int:
    """Coordinate ascent over the parents' straggler sets, from the worst patterns found so far.

    Only parents whose output reaches the master matter, so each step re-tries one *used* parent's straggler
    set (all sets if there are at most ``max_options``, else a random sample plus the current one), keeping the
    best; it stops after ``sweeps`` sweeps without improvement or when ``budget`` patterns have been checked.
    Returns the number of patterns checked.
    """
    n = code.branching
    if code.exact:          # exact decodes are slow: a lighter search (it steers by cancellation anyway)
        max_options = min(max_options, 128)
    total_opts = sum(math.comb(n, j) for j in range(code.s + 1))
    opts = ~code.straggler_options() if total_opts <= max_options else None
    spent = 0
    for key in ("res", "canc"):
        start = tr.worst_res_P if key == "res" else tr.worst_canc_P
        if start is None:
            continue
        cur = start.copy()
        for _ in range(sweeps):
            improved = False
            used = code._tree_weights(cur[None])[1][0]
            parents = [0] + [int(v) + 1 for v in np.flatnonzero(used) if v + 1 < code.parents]
            for p in parents:
                if spent >= budget or (tr.stop_on_failure and tr.n_failures):
                    return spent
                if opts is not None:
                    cand_rows = opts
                else:
                    cand_rows = code.random_patterns(max_options, rng).reshape(max_options, code.parents, n)[:, 0]
                    cand_rows = np.vstack([cur[p * n:(p + 1) * n], cand_rows])
                cands = np.repeat(cur[None], cand_rows.shape[0], axis=0)
                cands[:, p * n:(p + 1) * n] = cand_rows
                ev = tr.evaluate(cands)
                tr.record(cands, ev)
                res, canc = ev.res, ev.canc
                spent += cands.shape[0]
                score = canc if (key == "canc" or code.exact) else res   # exact residuals are 0 unless failing
                best = int(np.argmax(score))
                here = np.flatnonzero((cands == cur).all(axis=1))
                if score[best] > (score[here].max() if here.size else -np.inf):
                    cur = cands[best].copy()
                    improved = True
            if not improved:
                break
    return spent


VERIFIERS["verify"] = verify_tree
