"""Verification of CodedReduce trees under their straggler model (every parent loses at most ``s`` children).

Reisizadeh, Prakash, Pedarsani & Avestimehr, "CodedReduce" (2019), Section 4: the master's hierarchical decode
must equal the full gradient sum for every admissible straggler pattern.
"""

from __future__ import annotations

import dataclasses
import math
import time
from collections.abc import Iterator
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import numpy as np

from .._numerics import DEFAULT_RTOL, error_estimate, unit_roundoff
from .._typing import DTypeLike, RNGLike, Unset
from .._validate import SEED_UNSET, check_int, check_real, check_rng, check_size, take_rng
from .coded_reduce_alloc import coded_reduce_load
from .coded_reduce_code import CodedReduceCode

__all__ = ["TreeVerifyReport", "verify_tree"]

# ----------------------------------------------------------------------------------------------------------
# the verifier


@dataclass
class TreeVerifyReport:
    """Outcome of :func:`verify_tree`.

    Attributes
    ----------
    exact : bool
        True only for a proof: *every* pattern was checked (``exhaustive``) and recovers the sum (exactly for
        rational codes, to tolerance for float ones), and the loads and allocation check out. ``bool(report)``
        and :attr:`proven` are the same. A sampled check that found no failure has verdict ``"unproven"``.
    exhaustive : bool
        All ``patterns_total`` patterns were checked.
    patterns_checked, patterns_total : int
        Straggler patterns checked / in the model (every parent picks at most ``s`` straggling children).
    distinct_checked : int
        Distinct effective decodings among the checked patterns (patterns that differ only below a straggler,
        or only in children a parent does not need, decode identically).
    worst_residual : float
        Largest ``max |A B - 1|`` found (0 in exact arithmetic when all pass).
    worst_pattern : str
        The pattern attaining it (``{parent: straggling children}``).
    worst_cancellation : float
        Largest cancellation factor ``sum_v |A_v| ||B_v||_1 / P`` found (>= 1), with its pattern in
        ``worst_cancellation_pattern``; float decodes lose about ``u * canc`` relative accuracy.
    error_estimate : float
        ``u * worst_cancellation + worst_residual`` (float64 ``u``).
    failures : list of str
        The first failing patterns; ``n_failures`` counts the failing patterns found (exact when
        ``exhaustive``, a lower bound otherwise).
    loads_equal : bool
        Every worker stores exactly ``load`` units.
    allocation_ok : bool
        Row ``v`` of ``B`` is exactly worker ``v``'s own share of the CR.Allocate list.
    load, load_fraction, load_lower_bound
        ``r P`` units, ``r``, and the optimum ``r_CR`` (Fraction); ``meets_lower_bound`` = ``r == r_CR``.
    seconds : float
    """

    name: str
    exact: bool
    exhaustive: bool
    patterns_checked: int
    patterns_total: int
    distinct_checked: int
    worst_residual: float
    worst_pattern: str
    worst_cancellation: float
    worst_cancellation_pattern: str
    error_estimate: float
    failures: list[str]
    loads_equal: bool
    allocation_ok: bool
    load: int
    load_fraction: Fraction
    load_lower_bound: Fraction
    meets_lower_bound: bool
    field: str
    seconds: float
    N: int = 0
    s: int = 0
    rtol: float = DEFAULT_RTOL
    notes: list[str] = dataclasses.field(default_factory=list)  # (the attribute `field` shadows it)
    n_failures: int = 0
    dtype: str = "float64"

    @property
    def proven(self) -> bool:
        """True only for a proof (every pattern checked, none failed, loads and allocation correct)."""
        return self.exact

    def __repr__(self) -> str:
        return (f"<TreeVerifyReport {self.name}: {self.verdict}, {self.patterns_checked:,} of "
                f"{self.patterns_total:,} patterns checked>")

    @property
    def verdict(self) -> str:
        """One word, as :attr:`gradcodes.VerifyReport.verdict`: ``exact`` (exact arithmetic), ``ok`` (float
        decodes within ``rtol``), both proofs; ``unproven`` (sampled, no failure found: not a proof);
        ``inaccurate`` (residuals within ``rtol`` but cancellation pushes the predicted
        error above it) or ``FAILS`` (including a load/allocation mismatch)."""
        if self.exact:
            return "exact" if self.field == "rational" else "ok"
        if not self.failures and self.loads_equal and self.allocation_ok and not self.exhaustive:
            return "unproven"
        if self.loads_equal and self.allocation_ok and self.worst_residual <= self.rtol:
            return "inaccurate"
        return "FAILS"

    def __bool__(self) -> bool:
        return self.exact

    def tour_row(self) -> dict[str, Any]:
        """The tour's columns."""
        bound = self.load_lower_bound * (Fraction(self.load) / self.load_fraction)
        return {
            "scheme": self.name, "n": self.N, "s": f"{self.s}/parent", "m": 1,
            "load / bound": f"{self.load} / {bound} units",
            "sets checked": f"{self.patterns_checked:,} tree patterns",
            "exhaustive": "yes" if self.exhaustive else "no",
            "result": self.verdict,
            "worst residual": f"{self.worst_residual:.1e}",
            "error est.": f"{self.error_estimate:.1e}",
            "seconds": f"{self.seconds:.2f}",
        }

    def __str__(self) -> str:
        mode = "exhaustive" if self.exhaustive else "sampled + worst-case search"
        lines = [
            f"verify_tree: {self.name} [{self.field}]",
            f"  recovery      : {self.verdict.upper()} ({mode}: {self.patterns_checked} of "
            f"{self.patterns_total} straggler patterns, {self.distinct_checked} distinct decodings)",
            f"  worst residual: {self.worst_residual:.3g} at {self.worst_pattern}",
            f"  cancellation  : {self.worst_cancellation:.3g} at {self.worst_cancellation_pattern} "
            f"(float64 error estimate {self.error_estimate:.2e})",
            f"  load          : {self.load} units = {self.load_fraction} of the data per worker; optimum "
            f"r_CR = {self.load_lower_bound}; {'optimal' if self.meets_lower_bound else 'NOT optimal'}; "
            f"equal loads: {self.loads_equal}; allocation matches B: {self.allocation_ok}",
        ]
        if self.failures:
            lines.append(f"  failures      : {'' if self.exhaustive else 'at least '}{self.n_failures:,} of "
                         f"{self.patterns_total:,} patterns; first: " + "; ".join(self.failures))
        lines += ["  note: " + t for t in self.notes]
        lines.append(f"  time          : {self.seconds:.2f} s")
        return "\n".join(lines)


def _exhaustive_masks(code: CodedReduceCode, batch: int) -> Iterator[np.ndarray]:
    opts = code.straggler_options()
    S1 = opts.shape[0]
    total = code.patterns_total()
    par = code.parents
    for lo in range(0, total, batch):
        idx = np.arange(lo, min(total, lo + batch), dtype=np.int64)
        digits = np.empty((idx.size, par), dtype=np.int64)
        rest = idx.copy()
        for j in range(par - 1, -1, -1):
            digits[:, j] = rest % S1
            rest //= S1
        yield ~opts[digits].reshape(idx.size, code.N)


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


class _Tracker:
    def __init__(self, code: CodedReduceCode, rtol: float, max_failures: int, dtype: Any = np.float64) -> None:
        self.code = code
        self.dtype = dtype
        self.rtol = rtol
        self.max_failures = max_failures
        self.failures: list[str] = []
        self.n_failures = 0
        self.checked = 0
        self.worst_res = 0.0
        self.worst_res_mask: np.ndarray | None = None
        self.worst_canc = 0.0
        self.worst_canc_mask: np.ndarray | None = None
        self.seen: set[bytes] = set()
        Bf = code.float_B() if code.field != "complex" else np.asarray(code.B)
        self.row_l1 = np.abs(Bf).sum(axis=1)
        self.Bf = Bf
        self.exactB = code.B if code.exact else None

    def _exact_residuals(self, W: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Exact ``max |W B - 1|`` per row for Fraction matrices, computed with integers.

        ``B = B_int / d_B`` and each row ``W_i = W_int,i / d_i`` (``d`` = lcm of the denominators); then
        ``W_i B = 1`` iff ``W_int,i B_int = d_i d_B`` entrywise. The product runs in int64 when the sizes
        provably fit, else in Python integers (object arrays); never in Fractions.
        """
        if not hasattr(self, "_Bint"):
            num = np.frompyfunc(lambda v: v.numerator, 1, 1)(self.code.B)
            den = np.frompyfunc(lambda v: v.denominator, 1, 1)(self.code.B)
            dB = 1
            for d in set(den.flat):
                dB = math.lcm(dB, int(d))
            self._Bint = num * (dB // den)           # object array of Python ints
            self._dB = dB
        num = np.frompyfunc(lambda v: Fraction(v).numerator, 1, 1)(W)
        den = np.frompyfunc(lambda v: Fraction(v).denominator, 1, 1)(W)
        dW = np.array([math.lcm(*map(int, set(row))) for row in den], dtype=object)
        Wint = num * (dW[:, None] // den)
        Wf = (num.astype(np.float64) / den.astype(np.float64)) if W.size else np.zeros(W.shape)
        bound = (float(np.max(np.abs(Wint.astype(np.float64)), initial=0)) *
                 float(np.max(np.abs(self._Bint.astype(np.float64)), initial=0)) * self.code.N)
        fits = bound < 2.0**62 and float(max(dW, default=1)) * self._dB < 2.0**62
        if fits:
            R = Wint.astype(np.int64) @ self._Bint.astype(np.int64)
            target = dW.astype(np.int64)[:, None] * np.int64(self._dB)
        else:
            R = Wint @ self._Bint
            target = dW[:, None] * self._dB
        ok = np.all(R == target, axis=1)
        res = np.zeros(W.shape[0])
        for i in np.flatnonzero(~ok):
            row = R[i]
            res[i] = float(max(abs(Fraction(int(x), int(dW[i]) * self._dB) - 1) for x in row))
        return res, Wf

    def check(self, masks: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Residual and cancellation of each mask (b,); records the worst and the failures."""
        code = self.code
        W, used, bad, _ = code._tree_weights(masks)
        b = masks.shape[0]
        self.checked += b
        # distinct decodings: identical used-sets give identical decoding vectors
        uniq, first, inv = np.unique(used, axis=0, return_index=True, return_inverse=True)
        inv = inv.reshape(-1)
        for row in uniq:
            self.seen.add(np.packbits(row).tobytes())
        Wu = W[first]
        if code.exact:
            res_u, Wf = self._exact_residuals(Wu)
        else:
            Wf = Wu
            res_u = np.abs(Wu @ self.Bf - 1).max(axis=1)
        canc_u = (np.abs(Wf) @ self.row_l1) / code.P
        res = res_u[inv]
        canc = canc_u[inv]
        res[bad >= 0] = np.inf
        if code.exact:
            fail = res != 0
        else:
            fail = ~(np.isfinite(est := error_estimate(canc, res, self.dtype)) & (est <= self.rtol))
        self.n_failures += int(fail.sum())
        for i in np.flatnonzero(fail)[: max(0, self.max_failures - len(self.failures))]:
            self.failures.append(code.pattern_text(masks[i]))
        i = int(np.argmax(res))
        if res[i] > self.worst_res or self.worst_res_mask is None:
            self.worst_res, self.worst_res_mask = float(res[i]), masks[i].copy()
        j = int(np.argmax(canc))
        if canc[j] > self.worst_canc or self.worst_canc_mask is None:
            self.worst_canc, self.worst_canc_mask = float(canc[j]), masks[j].copy()
        return res, canc


def verify_tree(code: CodedReduceCode, *, limit: int = 100_000, samples: int = 2_000, search: bool = True,
                rng: RNGLike = None, rtol: float | None = None, batch: int = 4096, max_failures: int = 5,
                search_budget: int | None = None, dtype: DTypeLike = np.float64, seed: RNGLike | Unset = SEED_UNSET
                ) -> TreeVerifyReport:
    """Verify a CodedReduce code under its straggler model (at most ``s`` straggling children per parent).

    A straggler pattern lets every parent (the master and every internal worker) pick at most ``s`` straggling
    children; a straggler silences its subtree. For each pattern the hierarchical decoding vector ``A`` is
    computed (:class:`TreeDecoder`) and ``A B = 1`` is checked: exactly (with integers, never rounded) for
    rational codes; float codes pass a pattern when the predicted float64 relative error
    ``u * canc + ||A B - 1||_inf <= rtol`` (as :func:`gradcodes.verify`). ``gc.verify(code)``
    dispatches here for tree codes.

    * If there are at most ``limit`` patterns, all of them are checked (the n=3, L=2, s=1 tree has 256).
    * Otherwise: the structured patterns (no stragglers; the same ``s`` cyclically consecutive children at
      every parent), one *targeted* pattern per worker that forces that worker's message into use (its
      ancestors each lose the ``s`` siblings preceding the path), ``samples`` uniformly random patterns, and
      with ``search=True`` a worst-case search (coordinate ascent: each parent whose output reaches the master
      in turn tries every straggler set given the others, keeping the one that maximises the residual, then
      the cancellation factor; at most ``search_budget`` patterns). Only the exhaustive mode is a proof: the
      sampled mode reports ``"unproven"`` (falsy) when it finds no failure.

    The load is checked too: every worker stores exactly ``r P`` units, ``B`` matches the CR.Allocate lists,
    and ``r`` is compared with the optimum :func:`coded_reduce_load`.

    Parameters
    ----------
    code : CodedReduceCode
    limit : int
        Largest number of patterns checked exhaustively.
    samples : int
        Random patterns when not exhaustive.
    search : bool
        Run the worst-case search when not exhaustive.
    rng : None, int, numpy.random.SeedSequence or numpy.random.Generator, optional
        Random state of the sampling (SPEC 7: None for fresh entropy, an int, a SeedSequence or a
        Generator; ``seed=`` is a deprecated alias).
    rtol : float, optional
        Float codes: accepted predicted relative error, in (0, 1) (default: the code's ``rtol``, 1e-8).
    batch : int
        Patterns per batch.
    max_failures : int
        Failing patterns kept in the report.
    search_budget : int, optional
        Patterns the worst-case search may check (default 20,000 for float codes, 2,000 for exact ones).
    dtype : numpy dtype, default float64
        Dtype of the messages: the acceptance rule uses its unit roundoff.

    Returns
    -------
    TreeVerifyReport

    Examples
    --------
    >>> import gradcodes as gc
    >>> rep = gc.verify_tree(gc.coded_reduce(3, 2, 1, field="rational"))
    >>> rep.exact, rep.exhaustive, rep.patterns_checked, rep.load_fraction
    (True, True, 256, Fraction(4, 15))
    """
    rng = take_rng(rng, seed)
    if not isinstance(code, CodedReduceCode):
        raise TypeError(f"verify_tree takes a CodedReduceCode, got {type(code).__name__}")
    limit = check_int("limit", limit, 0)
    samples = check_int("samples", samples, 0)
    batch = check_int("batch", batch, 1)
    if search_budget is None:
        search_budget = 2_000 if code.exact else 20_000
    search_budget = check_int("search_budget", search_budget, 0)
    check_size("the sampled and searched patterns times N workers", (samples + search_budget) * code.N, "work")
    check_size("batch * N (one batch of masks)", batch * code.N, "entries")
    t0 = time.perf_counter()
    rtol = check_real("rtol", code.rtol if rtol is None else rtol, 0, 1, open_lo=True, open_hi=True)
    tr = _Tracker(code, rtol, check_int("max_failures", max_failures, 0), np.dtype(dtype))
    total = code.patterns_total()
    exhaustive = total <= limit
    notes: list[str] = []
    if exhaustive:
        for masks in _exhaustive_masks(code, batch):
            tr.check(masks)
    else:
        tr.check(_special_masks(code))
        for masks in _targeted_masks(code, batch):
            tr.check(masks)
        rng = check_rng(rng)
        for lo in range(0, samples, batch):
            tr.check(code.random_patterns(min(batch, samples - lo), rng))
        if search:
            _search(code, tr, rng, budget=search_budget)
    # loads and allocation
    loads = np.asarray(code.loads)
    loads_equal = bool(np.all(loads == loads[0]))
    allocation_ok = True
    if code._lists is not None:
        own_len = int(code.r * code.P)
        n_leaf = code.branching**code.L
        for v in range(code.N):
            u, c = code._lists[0][v], code._lists[1][v]
            if v < code.N - n_leaf:
                u, c = u[:own_len], c[:own_len]
            row = np.asarray(code.B[v])
            expect_support = np.zeros(code.P, dtype=bool)
            expect_support[u] = True
            if not (np.array_equal(np.asarray(row != 0), expect_support) and
                    all(row[ui] == ci for ui, ci in zip(u, c, strict=True))):
                allocation_ok = False
                notes.append(f"row {v} of B does not match worker {v}'s allocation list")
                break
    else:
        notes.append("no allocation lists (code built from a matrix): allocation not checked")
    frac = Fraction(int(code.load), code.P)
    opt = coded_reduce_load(code.branching, code.L, code.s)
    ok = exhaustive and not tr.n_failures and tr.checked > 0 and loads_equal and allocation_ok and int(loads[0]) == int(
        code.r * code.P)
    u_round = unit_roundoff(dtype)
    res_txt = code.pattern_text(tr.worst_res_mask) if tr.worst_res_mask is not None else "-"
    canc_txt = code.pattern_text(tr.worst_canc_mask) if tr.worst_canc_mask is not None else "-"
    return TreeVerifyReport(
        name=code.name, exact=bool(ok), exhaustive=exhaustive, patterns_checked=tr.checked,
        patterns_total=total, distinct_checked=len(tr.seen), worst_residual=tr.worst_res,
        worst_pattern=res_txt, worst_cancellation=tr.worst_canc, worst_cancellation_pattern=canc_txt,
        error_estimate=float(u_round * tr.worst_canc + (tr.worst_res if np.isfinite(tr.worst_res) else np.inf)),
        failures=tr.failures, loads_equal=loads_equal, allocation_ok=allocation_ok, load=int(code.load),
        load_fraction=frac, load_lower_bound=opt, meets_lower_bound=frac == opt, field=code.field,
        seconds=time.perf_counter() - t0, dtype=str(np.dtype(dtype)), N=code.N, s=code.s, rtol=rtol, notes=notes,
        n_failures=tr.n_failures)


def _search(code: CodedReduceCode, tr: _Tracker, rng: np.random.Generator, budget: int,
            sweeps: int = 2, max_options: int = 512) -> None:
    """Coordinate ascent over the parents' straggler sets, from the worst patterns found so far.

    Only parents whose output reaches the master matter, so each step re-tries one *used* parent's straggler
    set (all sets if there are at most ``max_options``, else a random sample plus the current one), keeping the
    best; it stops after ``sweeps`` sweeps without improvement or when ``budget`` patterns have been checked.
    """
    n = code.branching
    if code.exact:          # exact decodes are slow: a lighter search (it steers by cancellation anyway)
        max_options = min(max_options, 128)
    total_opts = sum(math.comb(n, j) for j in range(code.s + 1))
    opts = ~code.straggler_options() if total_opts <= max_options else None
    spent = 0
    for key in ("res", "canc"):
        start = tr.worst_res_mask if key == "res" else tr.worst_canc_mask
        if start is None:
            continue
        cur = start.copy()
        for _ in range(sweeps):
            improved = False
            used = code._tree_weights(cur[None])[1][0]
            parents = [0] + [int(v) + 1 for v in np.flatnonzero(used) if v + 1 < code.parents]
            for p in parents:
                if spent >= budget:
                    return
                if opts is not None:
                    cand_rows = opts
                else:
                    cand_rows = code.random_patterns(max_options, rng).reshape(max_options, code.parents, n)[:, 0]
                    cand_rows = np.vstack([cur[p * n:(p + 1) * n], cand_rows])
                cands = np.repeat(cur[None], cand_rows.shape[0], axis=0)
                cands[:, p * n:(p + 1) * n] = cand_rows
                res, canc = tr.check(cands)
                spent += cands.shape[0]
                score = canc if (key == "canc" or code.exact) else res   # exact residuals are 0 unless failing
                best = int(np.argmax(score))
                here = np.flatnonzero((cands == cur).all(axis=1))
                if score[best] > (score[here].max() if here.size else -np.inf):
                    cur = cands[best].copy()
                    improved = True
            if not improved:
                break
