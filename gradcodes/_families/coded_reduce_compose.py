r"""Proof of a CodedReduce tree by composition of its inner code's proof (any field), and the tree's worst patterns.

**Theorem (composition).** Let a CodedReduce tree (branching ``n``, ``L`` levels of workers, at most ``s``
stragglers per parent; Reisizadeh, Prakash, Pedarsani & Avestimehr, *CodedReduce*, 2019, Section 4: CR.Allocate and
CR.Execute) have ``B`` equal to the CR.Allocate matrix of its inner ``(n, s)`` code ``B_in`` (``m = 1``), and let
every parent decode its first ``n - s`` responding children with the inner decoding vector ``a_F``. Let ``C`` bound
the inner cancellation factor ``max_kappa sum_t |a_F[t]| |B_in[t, kappa]|`` and ``rho`` the inner residual
``||a_F B_in - 1||_inf`` over every set ``F`` of ``n - s`` children. Then for every straggler pattern with at
most ``s`` stragglers per parent the flattened decoding vector ``A`` (the product of the inner coefficients along
each root-to-worker path) satisfies

* ``canc(A) <= C^L`` and ``||A B - 1||_inf <= rho (1 + C + ... + C^{L-1})``;
* in exact arithmetic (``rho = 0``, a rational inner code proven exactly): ``A B = 1`` exactly.

*Proof.* Write the message a node ``v`` sends up as ``sum_u mu_v(u) c_v(u) g_u`` over the units ``u`` of its
CR.Allocate list with coefficients ``c_v(u)``. A leaf sends its whole list (``mu = 1``); an internal node sends its
own share (``mu = 1``) plus ``sum_t a_F[t] msg_t``, and a unit of its chunk ``kappa`` reaches child ``t`` with
coefficient ``c_v(u) B_in[t, kappa]``, so ``mu_v(u) = sum_t a_F[t] B_in[t, kappa] mu_t(u)``. Hence
``|mu_v(u) - 1| <= |sum_t a_F[t] B_in[t, kappa] (mu_t(u) - 1)| + |sum_t a_F[t] B_in[t, kappa] - 1|
<= C max_t |mu_t(u) - 1| + rho``, and by induction from the leaves the master (which owns nothing) has
``|mu(u) - 1| <= rho (1 + C + ... + C^{L-1})``: that is the residual of ``A B = 1``, unit ``u`` being column
``u``. In the same way ``sum_w |A_w| |B_wu| / |c_v(u)|`` over the subtree of ``v`` is 1 at a leaf or an own unit and
at most ``C`` times the children's largest value otherwise, hence at most ``C^L`` at the master. ∎ (This is the
induction of CR.Execute's correctness, with the inner residual and cancellation carried along.)

**The floating-point bound.** The verifier's acceptance rule judges a pattern by the upper end of the interval of
:func:`gradcodes._core.numerics.error_bounds` at its measured cancellation, residual, magnitude (``= canc`` for
``m = 1``) and width, with ``width + load + 2 L`` terms (:meth:`CodedReduceCode._terms`); the interval is
increasing in each. So the proof evaluates it once at upper bounds valid for every pattern and every machine:
``C`` the inner code's worst cancellation over all ``C(n, s)`` sets (exhaustive, or a decoder's theorem) times
``1 + CANC_ALLOWANCE`` (another machine's decoding vectors), ``rho`` the largest residual any machine computes for
an inner set (the verifier's residual bound), the width ``(n - s) + ... + (n - s)^L`` (the used workers), and the
roundings of the products along a path (``A`` and the coefficients of ``B``, ``L`` factors each: relative
``gamma_{2L+2}``) and of the measurement itself (``gamma_{w+1}`` on the cancellation, the residual's slack on the
residual). When that bound is within ``rtol`` every pattern is accepted on every machine: a proof, with no pattern
enumerated.

**Worst patterns.** When the bound exceeds ``rtol`` the tree may still be accurate (the bound is reached only when
every parent's worst set aligns), so the patterns that reach it are built and checked: for a unit ``u``, bottom-up
over the parents whose lists hold it, each parent picks the straggler set maximising
``sum_t |a_F[t]| |B_in[t, kappa]| R_t`` (``R_t``: the child's own best value), which maximises the cancellation of
column ``u`` over all patterns (the subtrees are disjoint, so the choices are independent); plus every parent losing
the inner code's worst-residual set. A pattern they find that fails the rule is a counterexample on every machine.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

import numpy as np

from .._core.numerics import CANC_ALLOWANCE, error_bounds, error_estimate, residual_slack, unit_roundoff
from .._verify.engine import Tracker
from .coded_reduce_alloc import _allocate
from .coded_reduce_code import CodedReduceCode

__all__ = ["composed_bounds", "worst_patterns", "Composition", "compose"]

#: inner codes with more straggler sets than this get no worst-pattern search (a table of all their decodes)
WITNESS_SETS = 200_000
#: units whose worst pattern is built on a large tree (all units when there are at most this many)
WITNESS_UNITS = 16


def _gamma(k: float) -> float:
    u = unit_roundoff(np.float64)
    return k * u / (1.0 - k * u)


def _allocation_matches(code: CodedReduceCode) -> bool:
    """``code``'s allocation lists are CR.Allocate's for its inner code (recomputed and compared exactly)."""
    if code._lists is None:
        return False
    inner = code.inner
    Bi = np.asarray(inner.B, dtype=object) if inner.field == "rational" else np.asarray(inner.B)
    zero: Any = Fraction(0) if inner.field == "rational" else Bi.dtype.type(0)
    supports = [np.flatnonzero(np.asarray(row != 0)) for row in Bi]
    units, coefs = _allocate(code.branching, code.L, code.P, code.r, Bi, supports, zero)
    mine_u, mine_c = code._lists
    return len(units) == len(mine_u) and all(
        np.array_equal(a, b) and np.array_equal(c, d) for a, b, c, d in zip(units, mine_u, coefs, mine_c, strict=True))


def composed_bounds(code: CodedReduceCode, canc_in: float, res_in: float, dtype: Any) -> dict[str, float]:
    """The composition's bounds for every pattern (module docstring), from the inner code's worst cancellation
    ``canc_in`` and residual bound ``res_in`` over all its sets: ``canc`` and ``residual`` (real arithmetic, the
    theorem), ``canc_hi`` and ``residual_hi`` (with the roundings of the products and of the measurement),
    ``estimate`` (:func:`gradcodes._core.numerics.error_estimate` at the theorem's values) and ``bound`` (the
    upper end of the acceptance rule's interval at the rounded ones, >= every pattern's on every machine)."""
    L, K = code.L, code.branching - code.s
    C = max(float(canc_in), 1.0) * (1.0 + CANC_ALLOWANCE)
    canc = C**L
    res = float(res_in) * sum(C**i for i in range(L))
    width = sum(K**lev for lev in range(1, L + 1))
    terms = width + int(code.load) + 2 * L
    g = _gamma(2 * L + 2)
    canc_hi = canc * (1.0 + g) * (1.0 + _gamma(width + 1))
    res_hi = res + g * canc + float(residual_slack(canc_hi, width))
    est = float(error_estimate(canc, res, dtype, terms))
    _, _, hi = error_bounds(canc_hi, res_hi, canc_hi, width, dtype, terms)
    return {"canc": canc, "residual": res, "canc_hi": canc_hi, "residual_hi": res_hi, "estimate": est,
            "bound": float(hi), "terms": terms, "width": width}


def _inner_table(inner: Any) -> tuple[np.ndarray, np.ndarray] | None:
    """Every straggler set of the inner code (rows of ``s`` children) and ``|a_F|`` of its decode; None when
    there are more than :data:`WITNESS_SETS`."""
    n, s = inner.n, inner.s
    if math.comb(n, s) > WITNESS_SETS:
        return None
    sets = np.array(list(itertools.combinations(range(n), s)), dtype=np.int64).reshape(-1, s)
    mask = np.ones((sets.shape[0], n), dtype=bool)
    np.put_along_axis(mask, sets, False, axis=1)
    A = inner.decoding_matrices(mask)
    absA = np.abs(np.asarray(A, dtype=np.complex128 if inner.field == "complex" else np.float64)[:, 0, :])
    return sets, np.nan_to_num(absA, nan=0.0, posinf=0.0)


def worst_patterns(code: CodedReduceCode, units: Any = None) -> np.ndarray:
    """Responder masks (b, N) of the patterns that maximise the cancellation of the columns ``units`` (default: all
    units of a small tree, :data:`WITNESS_UNITS` spread over a large one), built bottom-up (module docstring);
    empty when the inner code has too many sets for the table."""
    table = _inner_table(code.inner)
    lists = code._lists
    if table is None or lists is None:
        return np.zeros((0, code.N), dtype=bool)
    sets, absA = table
    n, k = code.branching, code.inner.k
    absB = np.abs(np.asarray(code.inner.float_B() if code.exact else code.inner.B, dtype=float))
    own_len = int(code.r * code.P)
    parents = code.parents
    if units is None:
        units = range(code.P) if code.P <= 4 * WITNESS_UNITS else np.linspace(0, code.P - 1, WITNESS_UNITS).astype(int)
    holders = [np.flatnonzero(absB[:, kappa]) for kappa in range(k)]
    # the value of every set for chunk kappa is linear in the holders' R only: (sets, holders) tables
    tables = [absA[:, h] * absB[h, kappa][None, :] for kappa, h in enumerate(holders)]
    out = []
    for u in units:
        choices: dict[int, int] = {}

        def best(p: int, u: int = int(u), choices: dict[int, int] = choices) -> float:
            if p >= parents:                                  # a leaf: it owns its whole list
                return 1.0
            lst = np.arange(code.P) if p == 0 else lists[0][p - 1]
            own = 0 if p == 0 else own_len
            where = np.flatnonzero(lst == u)
            if where.size == 0:
                return 0.0
            idx = int(where[0])
            if idx < own:
                return 1.0
            kappa = (idx - own) // ((lst.size - own) // k)
            R = np.array([best(p * n + int(t) + 1) for t in holders[kappa]])
            vals = tables[kappa] @ R
            j = int(np.argmax(vals))
            choices[p] = j
            return float(vals[j])

        best(0)
        mask = np.ones(code.N, dtype=bool)
        for p, j in choices.items():
            mask[p * n + sets[j]] = False
        out.append(mask)
    return np.unique(np.array(out), axis=0) if out else np.zeros((0, code.N), dtype=bool)


def _uniform_pattern(code: CodedReduceCode, responders: Any) -> np.ndarray | None:
    """Every parent loses the children missing from the inner responder set ``responders``."""
    if responders is None:
        return None
    kid = np.zeros(code.branching, dtype=bool)
    kid[list(responders)] = True
    return np.tile(kid, code.parents)[None]


@dataclass
class Composition:
    """What :func:`compose` found: ``proven`` (every pattern accepted on every machine, or exact), the ``bounds``
    of :func:`composed_bounds` (a residual of 0 for exact codes), the inner code's report, the worst patterns
    checked (``checked``: per kind; they are in the tracker given to :func:`compose`), the report's notes and
    theorem, and the allocation checks."""

    proven: bool
    bounds: dict[str, float]
    inner: Any
    loads: np.ndarray
    loads_equal: bool
    allocation_ok: bool
    checked: dict[str, int] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    theorem: str | None = None


def compose(code: CodedReduceCode, rtol: float, dtype: np.dtype, tracker: Tracker) -> Composition | None:
    """The proof by composition (module docstring), with the worst patterns checked into ``tracker`` when it is not
    a proof; None when the theorem's conditions do not hold (no allocation lists, a matrix that is not
    CR.Allocate's, an inner code not verified over all its sets within the default budget, a complex inner
    code)."""
    from .._core.group_decoder import GroupDecoder
    from .._verify.blocks import BlockVerifyReport, is_proof
    from .._verify.verifier import verify

    inner = code.inner
    if code.m != 1 or inner.field not in ("real", "rational"):
        return None
    notes: list[str] = []
    loads, loads_equal, allocation_ok = _allocation(code, notes)
    if not (loads_equal and allocation_ok and _allocation_matches(code)):
        return None
    ri = verify(inner, samples=0, search=False, stop_on_failure=False, dtype=dtype, progress=False)
    # worst values over every set: an exhaustive run's, the proof by blocks' bounds, or the 0/1 group decoder's
    # (the same for every set, by its theorem); another theorem's report holds only the sets it sampled
    dec = inner.decoders[inner.default_decoder]
    whole = bool(ri.exhaustive and not ri.stopped_early and not ri.interrupted) or (
        bool(ri.theorem) and (isinstance(ri, BlockVerifyReport) or isinstance(dec, GroupDecoder)))
    if not whole:
        return None
    if code.exact:
        proven = is_proof(ri)
        bounds = {"canc": float("nan"), "residual": 0.0, "residual_hi": 0.0, "estimate": 0.0, "bound": 0.0}
    else:
        bounds = composed_bounds(code, ri.worst_cancellation, max(ri.worst_residual_bound, ri.worst_residual),
                                 dtype)
        proven = ri.n_failures == 0 and bounds["bound"] <= rtol
    out = Composition(proven, bounds, ri, loads, loads_equal, allocation_ok, notes=notes)
    if not proven:                               # look for the patterns that reach the bound
        pieces = [("worst cancellation", worst_patterns(code)),
                  ("worst residual", _uniform_pattern(code, ri.worst_responders))]
        pieces += [("inner failure", _uniform_pattern(code, F)) for F in ri.failures[:3]]
        found = [(name, P) for name, P in pieces if P is not None and P.shape[0]]
        if found:
            tracker.add(np.concatenate([P for _, P in found]))     # one evaluation: |B| is formed once
        for name, P in found:
            out.checked[name] = out.checked.get(name, 0) + P.shape[0]
    how = "exhaustive" if ri.exhaustive else f"theorem: {ri.theorem}"
    notes.append(f"inner code {inner.name}: {ri.verdict} over all {ri.patterns_total:,} sets ({how}); worst "
                 f"cancellation {ri.worst_cancellation:.4g}, residual bound {ri.worst_residual_bound:.3g}")
    if code.exact:
        notes.append("exact arithmetic: every parent's a_F B_in = 1 exactly, so A B = 1 for every pattern"
                     if proven else "the inner code does not recover exactly from every set")
    else:
        notes.append(f"composed bounds for every pattern: cancellation <= {bounds['canc']:.4g}, residual <= "
                     f"{bounds['residual']:.3g}; acceptance bound {bounds['bound']:.3g} "
                     f"{'<=' if bounds['bound'] <= rtol else '>'} rtol={rtol:g} ({dtype}, {bounds['terms']:,} terms)")
    if not proven and out.checked and not tracker.n_failures:
        notes.append(f"the worst patterns built from the inner code pass the rule (worst error estimate "
                     f"{tracker.worst_est:.3g}): not a proof either way")
    if proven:
        out.theorem = ("CodedReduce composition (Reisizadeh et al. 2019, CR.Execute): B is CR.Allocate's matrix "
                       "of the inner code, proven over all its "
                       "sets; " + ("exact arithmetic" if code.exact else
                                   f"acceptance bound {bounds['bound']:.3g} <= rtol for every pattern"))
    return out


def _allocation(code: CodedReduceCode, notes: list[str]) -> tuple[np.ndarray, bool, bool]:
    """``(loads, loads_equal, allocation_ok)``: every worker stores ``r P`` units, and row ``v`` of ``B`` is
    exactly worker ``v``'s own share of the CR.Allocate list (cost O(nnz) for a code stored sparse)."""
    loads = np.asarray(code.loads)
    loads_equal = bool(np.all(loads == loads[0])) and int(loads[0]) == int(code.r * code.P)
    allocation_ok = True
    if code._lists is None:
        notes.append("no allocation lists (code built from a matrix): allocation not checked")
        return loads, loads_equal, allocation_ok
    own_len = int(code.r * code.P)
    n_leaf = code.branching**code.L
    shares = [slice(None) if v >= code.N - n_leaf else slice(0, own_len) for v in range(code.N)]
    if code.sparse:
        indptr, indices, data = code._csr_parts()
        units = [code._lists[0][v][sh] for v, sh in enumerate(shares)]
        lengths = np.array([u.size for u in units], dtype=np.int64)
        U = np.concatenate(units)
        C = np.concatenate([code._lists[1][v][sh] for v, sh in enumerate(shares)])
        bad = None
        if not np.array_equal(np.diff(indptr), lengths):
            bad = int(np.flatnonzero(np.diff(indptr) != lengths)[0])
        else:
            starts = np.zeros(U.size, dtype=bool)
            starts[indptr[:-1][lengths > 0]] = True
            if U.size > 1 and np.all((np.diff(U) > 0) | starts[1:]):
                wrong = (indices != U) | (data != C)      # every list ascending (CR.Allocate's are): no sort
                rows = None
            else:
                rows = np.repeat(np.arange(code.N), lengths)
                order = np.lexsort((U, rows))
                wrong = (indices != U[order]) | (data != C[order])
            if wrong.any():
                first = int(np.flatnonzero(wrong)[0])
                bad = int(np.searchsorted(indptr, first, side="right") - 1) if rows is None else int(
                    rows[order][first])
        if bad is not None:
            allocation_ok = False
            notes.append(f"row {bad} of B does not match worker {bad}'s allocation list")
        return loads, loads_equal, allocation_ok
    for v in range(code.N):
        u, c = code._lists[0][v][shares[v]], code._lists[1][v][shares[v]]
        row = np.asarray(code.B[v])
        expect_support = np.zeros(code.P, dtype=bool)
        expect_support[u] = True
        if not (np.array_equal(np.asarray(row != 0), expect_support) and
                all(row[ui] == ci for ui, ci in zip(u, c, strict=True))):
            allocation_ok = False
            notes.append(f"row {v} of B does not match worker {v}'s allocation list")
            break
    return loads, loads_equal, allocation_ok
