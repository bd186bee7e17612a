r""":func:`recommend`: the lowest-load code within a budget that is *proven* to meet a tolerance.

**The candidate table** (:data:`CANDIDATES`, extended with :func:`add_candidate`) lists families with their load
formula. :func:`recommend` builds each applicable candidate within the load budget and classifies it:

* **proven**: a :func:`gradcodes.verify` report that is a proof (every straggler set enumerated, a decoder's
  theorem, or a proof by blocks), or the stored/enumerated group certificates of a :func:`gradcodes.grouped_random`
  code (:func:`gradcodes._families.grouped_random.certified_bound`). Its error is the proven worst float64 error
  bound of the acceptance rule (the acceptance rule's bound, ``docs/acceptance.md``; Higham 2002, §3.1; for blocks the
  bound of :mod:`gradcodes._verify.blocks`).
* **fails**: a checked straggler set fails (conclusive, whether or not every set was checked).
* **not proven**: otherwise. Its value is the worst over the sets checked, a lower bound of the worst case.

A candidate is *certified on the fly* when its enumeration fits ``certify_seconds`` by a fixed cost model
(``enumeration_seconds``: ``C(n_b, s)`` sets per distinct block, or ``C(n, s)`` for the whole code, times a
per-set cost measured for the verifier on a 2-core x86 machine: ``2 + 0.1 n s + 0.002 n^3`` microseconds for a
dense solve, doubled for complex codes; families with cheaper decoders declare their own, ``Candidate.per_set``).
The decision depends only on ``(n, s, m)`` and the code's block structure, never on a clock, so the answer does
not change with the machine's speed or load (a slower machine takes longer, and says the same).

**The choice.** Only a proven error ``<= rtol`` counts as meeting ``rtol``. Among those the lowest load wins, then
0/1 decoding, then table order: two error estimates are never compared with each other there, so rounding
differences between BLAS kernels cannot flip the choice. If none meets ``rtol``, a proven candidate beats every
unproven one; within a class the smallest error wins, except that errors within a factor ``TIE_BAND`` of the
smallest are ties (then lowest load, then table order). Candidates that cannot win (a proven code of lower load
already meets ``rtol``) are not built. Unproven candidates are checked on fixed sets (8 consecutive windows, then,
only when no candidate meets ``rtol``, ``samples`` random sets drawn from ``rng``, default seed 0), never by a
time-bounded search, so ``recommend`` is a function of its arguments.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from .._base.aliases import RNGLike
from .._base.errors import GradcodesTypeError, GradcodesValueError
from .._base.validate import check_entries, check_int, check_ns, check_real, check_rng, check_size
from .._core.code import CERTIFY_SECONDS, GradientCode, LinearCode, Recommendation
from .._core.decoders import single_threaded_blas

__all__ = ["recommend", "Recommendation", "Candidate", "CANDIDATES", "add_candidate", "enumeration_seconds",
           "TIE_BAND", "DEFAULT_RNG"]

#: the default ``rtol`` of :func:`recommend`
DEFAULT_RTOL = 1e-12
#: errors within this factor of the smallest are ties when no candidate meets ``rtol`` (then load decides)
TIE_BAND = 4.0
#: the seed of the random straggler sets when ``rng`` is None (so that the answer is a function of the arguments)
DEFAULT_RNG = 0
QUICK_CERTIFY_SECONDS = 1.0


def enumeration_seconds(n: int, s: int, m: int = 1, complex_: bool = False,
                        per_set: Callable[[int, int, int], float] | None = None) -> float:
    """Estimated seconds for :func:`gradcodes.verify` to enumerate all ``C(n, s)`` straggler sets of an ``(n, s)``
    code: ``C(n, s)`` times the microseconds per set of ``per_set(n, s, m)``, by default the conservative
    ``2 + 0.1 n s m + 0.002 n^3 m`` (a dense solve per set), doubled for complex codes. A fixed model (measured
    on a 2-core x86 machine), not a clock: the decision to certify depends only on the arguments.

    >>> round(enumeration_seconds(25, 16), 1), enumeration_seconds(500, 125) > 1e100
    (149.6, True)
    """
    us = per_set(n, s, m) if per_set is not None else 2.0 + 0.1 * n * s * m + 0.002 * n ** 3 * m
    return float(math.comb(n, s)) * us * 1e-6 * (2.0 if complex_ else 1.0)


def _ye_abbe_per_set(n: int, s: int, m: int) -> float:
    """Microseconds per set of the Ye-Abbe closed-form decoder (batched): ``2 + 0.008 n^2 m``."""
    return 2.0 + 0.008 * n * n * m


def _rowspace_per_set(n: int, s: int, sg: int) -> float:
    """Microseconds per set of :class:`~gradcodes.RowSpaceDecoder` (one ``(n - s) x (n - sg)`` QR, compiled):
    ``3 + 0.002 (n - s) (n - sg)^2``."""
    return 3.0 + 0.002 * (n - s) * (n - sg) ** 2


@dataclass(frozen=True)
class Candidate:
    """One row of the :func:`recommend` table.

    Attributes
    ----------
    name : str
        Label shown in the explanation.
    build : callable
        ``build(n, s, m) -> code``; raise ValueError when the family does not exist for these parameters.
    load : callable
        ``load(n, s, m) -> int or None``: the code's load without building it (None: not applicable).
    stable : bool
        True when the decode only adds messages with 0/1 (or ±1) weights: its error is rounding in the additions.
    note : str
        One line on what the family trades.
    cost : callable, optional
        ``cost(n, s, m) -> seconds``: estimated seconds to build *and* certify the code (for families that
        certify while they build, like :func:`gradcodes.grouped_random`); above ``certify_seconds`` the candidate is
        not built. Default: estimated from the built code's blocks (``enumeration_seconds``).
    per_set : callable, optional
        ``per_set(n_b, s, m) -> microseconds`` of the family's decoder per straggler set, for
        ``enumeration_seconds`` (default: its conservative dense-solve model).
    field : {"real", "complex"} or callable, default "real"
        The field of the messages (or ``field(n, s, m) -> str`` when it depends on the parameters): ``"complex"``
        codes send complex messages for real gradients (twice the bytes, complex decoded gradients) and are
        considered only when :func:`recommend` is called with ``field="any"``.
    """

    name: str
    build: Callable[[int, int, int], GradientCode]
    load: Callable[[int, int, int], int | None]
    stable: bool = False
    note: str = ""
    cost: Callable[[int, int, int], float] | None = None
    per_set: Callable[[int, int, int], float] | None = None
    field: str | Callable[[int, int, int], str] = "real"

    def field_for(self, n: int, s: int, m: int) -> str:
        """The field of the code this candidate builds for ``(n, s, m)``, without building it."""
        return self.field(n, s, m) if callable(self.field) else self.field


def _fr_load(n: int, s: int, m: int) -> int | None:
    return s + 1 if m == 1 and n % (s + 1) == 0 else None


def _mds_real_load(n: int, s: int, m: int) -> int | None:
    return s + 1 if m == 1 and ((n - s) % 2 == 1 or n % (s + 1) == 0) else None


def _build_fr(n: int, s: int, m: int) -> GradientCode:
    from .repetition import fractional_repetition
    return fractional_repetition(n, s)


def _build_binary(n: int, s: int, m: int) -> GradientCode:
    from .binary import stable_binary
    return stable_binary(n, s)


def _binary_load(n: int, s: int, m: int) -> int | None:
    from .binary import stable_binary_load
    return stable_binary_load(n, s) if m == 1 else None


def _build_grouped_mds(n: int, s: int, m: int) -> GradientCode:
    from .binary import grouped_mds
    return grouped_mds(n, s)


def _grouped_field(n: int, s: int, m: int) -> str:
    """:func:`gradcodes.grouped_mds`'s field: complex when some group has an odd ``t_g >= 3``."""
    q = n // (s + 1)
    if q == 0:
        return "real"
    base, extra = divmod(n - q * (s + 1), q)
    return "complex" if any(tg >= 3 and tg % 2 for tg in {base, base + 1 if extra else base}) else "real"


def _grouped_load(n: int, s: int, m: int) -> int | None:
    if m != 1:
        return None
    q, r = divmod(n, s + 1)
    has_one = r // q == 1 or (r // q == 0 and r % q > 0)      # a t_g = 1 block is stored whole: load s + 2
    return s + 2 if has_one else s + 1


def _grouped_random_load(n: int, s: int, m: int) -> int | None:
    from .grouped_random import grouped_random_load

    if m != 1:
        return None
    load = grouped_random_load(n, s, 1)
    binary = _binary_load(n, s, m)
    return load if binary is not None and load < binary else None     # else every group is stored whole


def _random_groups(n: int, s: int) -> list[int]:
    """Group sizes of ``grouped_random(n, s, 1)`` that are random codes with no stored certificate."""
    from ._certified_seeds import CERTIFIED
    from .grouped_random import REFINE, group_sizes

    return [ng for ng in sorted(set(int(x) for x in group_sizes(n, s)))
            if min(s + 1, ng - 1) < ng - 1
            and not ((ng, s, 1) in CERTIFIED and CERTIFIED[(ng, s, 1)]["refine"] == REFINE)]


def _grouped_random_cost(n: int, s: int, m: int) -> float:
    """One candidate seed per group size without a stored certificate, each enumerated once."""
    return sum(enumeration_seconds(ng, s, per_set=lambda a, b, c: _rowspace_per_set(a, b, min(b + 1, a - 1)))
               for ng in _random_groups(n, s))


def _build_grouped_random(n: int, s: int, m: int) -> GradientCode:
    """Seed 0 of every group size without a stored certificate, enumerated (so certified) while it is built;
    :func:`recommend` calls this only when :func:`_grouped_random_cost` fits its ``certify_seconds``."""
    from .grouped_random import grouped_random

    limit = max([math.comb(ng, s) for ng in _random_groups(n, s)], default=0)
    return grouped_random(n, s, 1, candidates=1, limit=limit)


def _build_mds(field_: str) -> Callable[[int, int, int], GradientCode]:
    def build(n: int, s: int, m: int) -> GradientCode:
        from .cyclic_mds import cyclic_mds
        return cyclic_mds(n, s, field_)
    return build


def _build_cyclic_rep(n: int, s: int, m: int) -> GradientCode:
    from .repetition import cyclic_repetition
    return cyclic_repetition(n, s, rng=0)


def _build_ye_abbe(n: int, s: int, m: int) -> GradientCode:
    from .ye_abbe import ye_abbe
    return ye_abbe(n, s, m)


#: The candidate table of :func:`recommend`, in order of preference among equals (stable codes first).
CANDIDATES: list[Candidate] = [
    Candidate("fractional_repetition", _build_fr, _fr_load, True, "0/1 decoding, load s+1; needs (s+1) | n"),
    Candidate("stable_binary", _build_binary, _binary_load, True, "0/1 decoding for every (n, s); load s+1+ceil(r/q)"),
    Candidate("grouped_mds", _build_grouped_mds, _grouped_load, False,
              "repetition groups with small cyclic-MDS blocks; load s+1 (s+2)", field=_grouped_field),
    Candidate("grouped_random", _build_grouped_random, _grouped_random_load, False,
              "random cyclic-repetition groups with one extra unit of load; proven by blocks",
              cost=_grouped_random_cost),
    Candidate("cyclic_mds[real]", _build_mds("real"), _mds_real_load, False,
              "load s+1, real messages; accuracy degrades with n and s (consecutive stragglers)"),
    Candidate("cyclic_mds[complex]", _build_mds("complex"), lambda n, s, m: s + 1 if m == 1 else None, False,
              "load s+1, complex messages (2x bandwidth); accuracy degrades with n and s", field="complex"),
    Candidate("cyclic_repetition", _build_cyclic_rep, lambda n, s, m: s + 1 if m == 1 else None, False,
              "load s+1, random real code (seed 0): stable with high probability, no guarantee"),
    Candidate("ye_abbe", _build_ye_abbe, lambda n, s, m: s + m if s + m <= n else None, False,
              "Ye-Abbe (real Fourier nodes): load s+m, messages 1/m of a gradient; the m > 1 option",
              per_set=_ye_abbe_per_set),
]


def add_candidate(candidate: Candidate, *, before: str | None = None) -> None:
    """Add a family to the :func:`recommend` table (e.g. Ye-Abbe codes for ``m > 1``); replaces a same-named row."""
    if not isinstance(candidate, Candidate):
        raise GradcodesTypeError(f"add_candidate() takes a Candidate, got {type(candidate).__name__}")
    names = [c.name for c in CANDIDATES if c.name != candidate.name]
    if before is not None and before not in names:
        raise GradcodesValueError(
            f"before must be the name of a candidate ({', '.join(names)}) or None, got {before!r}")
    CANDIDATES[:] = [c for c in CANDIDATES if c.name != candidate.name]
    CANDIDATES.insert(names.index(before) if before is not None else len(CANDIDATES), candidate)


def _screen_sets(n: int, s: int) -> np.ndarray:
    """A few straggler sets that break unstable codes first: consecutive windows at eight evenly spread starts
    (the worst sets of cyclic codes), as a sorted (b, s) array."""
    starts = np.unique(np.linspace(0, n - 1, min(n, 8)).astype(np.int64))
    return np.unique(np.sort((starts[:, None] + np.arange(s)[None, :]) % n, axis=1), axis=0)


def _screen(code: GradientCode) -> tuple[float, bool]:
    """``(worst error estimate, a set failed)`` at the :func:`_screen_sets` windows, by the verifier's rule."""
    from .._verify.verifier import _Tracker

    tracker = _Tracker(code, code._decoder(None), code.rtol)
    est = tracker.add(_screen_sets(code.n, code.s))
    return float(np.max(est, initial=0.0)), bool(tracker.n_failures)


def _certify_cost(code: LinearCode, per_set: Callable[[int, int, int], float] | None = None) -> tuple[float, int]:
    """Estimated seconds and number of straggler sets to enumerate the code (its distinct non-repetition blocks
    for a block decoder)."""
    from .._verify.blocks import BlockDecoder, _repetition_report

    s = int(getattr(code, "s", 0))
    cplx = code.field == "complex"
    dec = code._decoder(None)
    if isinstance(dec, BlockDecoder):
        seen: set[int] = set()
        total, sets = 0.0, 0
        for sub in dec.subcodes:
            if sub is None or id(sub) in seen or _repetition_report(sub) is not None:
                continue
            seen.add(id(sub))
            total += enumeration_seconds(sub.n, min(s, sub.n), sub.m, sub.field == "complex", per_set)
            sets += math.comb(sub.n, min(s, sub.n))
        return total, sets
    return enumeration_seconds(code.n, s, code.m, cplx, per_set), math.comb(code.n, s)


def _how(rep: Any) -> str:
    """How a proven :func:`gradcodes.verify` report proved the code."""
    from .._verify.blocks import BlockVerifyReport

    if isinstance(rep, BlockVerifyReport):
        return "proof by blocks"
    if rep.exhaustive:
        return f"exhaustive: {rep.patterns_checked:,} sets"
    return f"theorem: {rep.theorem}" if rep.theorem else "verify"


def _judge(code: LinearCode, cand: Candidate, budget: float, cost: float | None) -> dict[str, Any]:
    """Certify ``code`` when it enumerates within ``budget`` seconds (or is proven by a theorem / certificates);
    else screen it. Returns ``error``, ``proven``, ``failed``, ``how``, ``settled`` (a screened value already
    exceeds rtol or fails, so sampling cannot change the class)."""
    from .._verify.verifier import verify

    if code.family == "grouped_random":
        from .grouped_random import certified_bound

        bound, proven, failed = certified_bound(code)  # type: ignore[arg-type]
        stored = any("stored" in str(c.get("status", "")) for c in code.params.get("certificates", []))
        how = ("group certificates (" + ("stored, " if stored else "") + f"enumerated at recommend time, about "
               f"{cost or 0.0:.1f} s estimated)") if proven else "group certificates searched, not enumerated"
        return {"error": float("inf") if failed else bound, "proven": proven, "failed": failed, "how": how,
                "settled": True}
    est, sets = _certify_cost(code, cand.per_set)
    est = est if cost is None else cost
    if est <= budget or cand.stable:
        limit = sets if est <= budget else 0      # the sets of the code (of its distinct blocks, together)
        rep = verify(code, limit=limit, samples=0 if est <= budget else 20, search=False, rng=DEFAULT_RNG,
                     stop_on_failure=True)
        failed = bool(rep.n_failures)
        if failed:
            return {"error": float("inf"), "proven": False, "failed": True, "settled": True,
                    "how": f"{rep.verdict} at a checked set"}
        if rep.proven:
            how = _how(rep) + ("" if rep.theorem or est > budget else f", about {est:.1g} s estimated")
            # the proven value is the upper end of the acceptance rule's interval: the same on every machine
            return {"error": float(max(rep.error_bound, rep.error_estimate, 0.0)), "proven": True, "failed": False,
                    "how": how, "settled": True}
        return {"error": float(max(rep.error_estimate, 0.0)), "proven": False, "failed": False, "settled": False,
                "how": f"checked {rep.patterns_checked:,} sets, {rep.verdict} (not a proof)"}
    s = int(getattr(code, "s", 0))
    if code.exact or not isinstance(code, GradientCode) or s == 0:
        value, failed = 0.0, False
    else:
        value, failed = _screen(code)
    where = " in its distinct blocks" if sets < math.comb(code.n, s) else ""
    return {"error": float("inf") if failed else value, "proven": False, "failed": failed, "settled": failed,
            "how": f"not certifiable within {budget:g} s ({sets:.3g} sets{where}, about {est:.2g} s estimated); "
                   f"checked on {len(_screen_sets(code.n, s)) if s else 0} consecutive windows"}


def _status(row: dict[str, Any], rtol: float) -> str:
    err, how = row["error"], row["how"]
    if row["failed"]:
        return f"FAILS ({how}: conclusive)"
    if row["proven"]:
        return f"meets rtol, proven ({how})" if err <= rtol else f"above rtol, proven ({how})"
    if err > rtol:
        return f"above rtol (a checked set exceeds it: conclusive; {how})"
    return f"not proven: the worst of the checked sets, not a worst case ({how})"


def _rank(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """The best of ``rows`` by error with a tie band: rows within ``TIE_BAND`` of the smallest error are
    ties, broken by load, then table order (never by comparing two nearly equal estimates)."""
    best = min(r["error"] for r in rows)
    band = [r for r in rows if r["error"] <= best * TIE_BAND] if np.isfinite(best) else rows
    return min(band, key=lambda r: (r["load"], r["order"]))


def recommend(n: int, s: int, m: int = 1, max_load: int | None = None, *, rtol: float = DEFAULT_RTOL,
              samples: int = 200, rng: RNGLike = None, quick: bool = False, certify_seconds: float | None = None,
              field: str = "real", tol: float | None = None) -> GradientCode:
    r"""The lowest-load code within a budget that is proven to meet ``rtol``, with its reasoning attached.

    Every applicable candidate of :data:`CANDIDATES` with load at most ``max_load`` is built and judged (see
    docs/stable_codes.md, section ``recommend``). A candidate is *proven* when
    :func:`gradcodes.verify` returns a proof (exhaustive enumeration, a decoder's theorem, a proof by blocks) or its
    group certificates are proven (:func:`gradcodes.grouped_random`); candidates whose enumeration fits
    ``certify_seconds`` (a fixed cost model, not a clock) are enumerated on the fly. It *meets* ``rtol`` when its
    proven worst float64 error bound (the acceptance rule's bound, ``docs/acceptance.md``) is at most ``rtol``. The
    chosen
    code is

    1. among the candidates proven to meet ``rtol``: the lowest load, then 0/1 decoding, then table order;
    2. else the best proven candidate, else the best unproven one: the smallest error, with errors within a factor
       ``TIE_BAND`` of it counted as ties (lowest load, then table order).

    A proven candidate thus always beats an unproven one, and unproven values (the worst over a fixed set of
    straggler windows and ``samples`` seeded random sets) are never called worst cases.

    Parameters
    ----------
    n : int
        Number of workers (= partitions), ``n >= 1``.
    s : int
        Stragglers tolerated, ``0 <= s <= n - 1``.
    m : int, default 1
        Communication factor (families supporting ``m > 1`` register candidates with :func:`add_candidate`).
    max_load : int, optional
        Largest acceptable load (partitions per worker); at least ``s + m`` (the lower bound).
    rtol : float, default 1e-12
        Error level counted as "accurate" (only with a proof): the relative tolerance of the acceptance rule, the
        name :func:`gradcodes.verify` uses (a code meets ``rtol`` here exactly when ``verify(code, rtol=rtol)``
        proves it).
    samples : int, default 200
        Random straggler sets per unproven candidate, checked only when no candidate is proven to meet ``rtol``.
    rng : None, int, numpy.random.SeedSequence or numpy.random.Generator, optional
        Random state of those sets. None means the fixed seed ``DEFAULT_RNG`` (0), so that the answer is the
        same on every call; pass a Generator for other sets.
    quick : bool, default False
        Lower the default certification budget to 1 s.
    certify_seconds : float, optional
        Estimated seconds (by ``enumeration_seconds``) each candidate may spend on an exhaustive check of its
        blocks or of the whole code; default 10 (1 with ``quick``). 0 certifies only by theorems and certificates.
    field : {"real", "any"}, default "real"
        ``"real"``: only codes with real coefficients, whose messages and decoded gradients keep the gradients'
        dtype (float32 stays float32). ``"any"`` also considers complex codes (``cyclic_mds[complex]``: complex
        messages, twice the bytes on the wire, and a complex decoded gradient whose real part is the sum).
    tol : float, optional
        Deprecated name of ``rtol`` (0.1.0; DeprecationWarning).

    Returns
    -------
    GradientCode
        With ``code.recommendation`` (a :class:`Recommendation`; ``print`` it for the table).

    Raises
    ------
    GradcodesValueError
        If a parameter is out of its range (the message names the parameter and the range), or ``field`` is neither
        ``"real"`` nor ``"any"``.

    Examples
    --------
    >>> import gradcodes as gc
    >>> code = gc.recommend(40, 9)            # fractional repetition, proven by its theorem
    >>> code.name, code.load, code.recommendation.proven
    ('fractional_repetition', 10, True)
    >>> code = gc.recommend(13, 3)           # C(13, 3) = 286 sets: every candidate is enumerated
    >>> code.name, code.field, code.load, code.recommendation.meets_rtol
    ('ye_abbe', 'real', 4, True)
    >>> gc.recommend(13, 3, field="any").name     # complex codes only when asked
    'cyclic_mds[complex]'
    >>> code = gc.recommend(42, 21, quick=True)    # load-22 codes cannot be proven: the binary code wins
    >>> print(code.recommendation)        # doctest: +ELLIPSIS
    recommend(n=42, s=21, m=1, max_load=none, rtol=1e-12) -> stable_binary (load 42, ..., proven)
      lowest load among the codes proven to meet rtol = 1e-12 ...
      candidates:
        fractional_repetition  load    -  error         -  not applicable
        stable_binary          load   42  error ... meets rtol, proven (proof by blocks)
    ...
    """
    n, s = check_ns(n, s)
    m = check_int("m", m, 1, n - s)
    check_entries(n, n * m, what="the candidate codes' matrices")
    if max_load is not None:
        max_load = check_int("max_load", max_load, s + m)
    if tol is not None:
        import warnings

        if rtol != DEFAULT_RTOL and tol != rtol:
            raise GradcodesTypeError(f"give rtol= only: tol= is its deprecated name (got rtol={rtol!r} and "
                                     f"tol={tol!r})")
        warnings.warn("gradcodes.recommend(tol=...) is deprecated, use rtol= (the name gradcodes.verify uses for the "
                      "same tolerance)", DeprecationWarning, stacklevel=2)
        rtol = tol
    rtol = check_real("rtol", rtol, 0, 1, open_lo=True, open_hi=True)   # as verify(rtol=): a relative error
    samples = check_int("samples", samples, 1)
    if field not in ("real", "any"):
        raise GradcodesValueError(f"field must be 'real' (real codes only) or 'any' (complex codes too), got {field!r}")
    budget = (QUICK_CERTIFY_SECONDS if quick else CERTIFY_SECONDS) if certify_seconds is None else \
        check_real("certify_seconds", certify_seconds, 0, 1e6)
    gen = check_rng(DEFAULT_RNG if rng is None else rng)
    check_size("the sampled straggler sets times n", samples * n, "work")
    rows: list[dict[str, Any]] = []
    codes: dict[str, GradientCode] = {}

    def key(r: dict[str, Any]) -> tuple[int, bool, int]:
        return r["load"], not r["stable"], r["order"]

    with single_threaded_blas():                     # many small factorisations: threads only contend
        for order, cand in enumerate(CANDIDATES):
            load = cand.load(n, s, m)
            row: dict[str, Any] = {"name": cand.name, "order": order, "stable": cand.stable}
            rows.append(row)
            if load is None:
                row["status"] = "not applicable"
                continue
            if field == "real" and cand.field_for(n, s, m) != "real":
                row["status"] = f"not considered: {cand.field_for(n, s, m)} messages (field='any' to include)"
                continue
            row["load"] = load
            if max_load is not None and load > max_load:
                row["status"] = f"over budget ({load} > {max_load})"
                continue
            winners = [r for r in rows if r.get("meets_rtol")]
            if winners and min(key(r) for r in winners) < key(row):
                row["status"] = ("skipped (cannot win: a proven code of lower load or earlier in the table meets "
                                 "rtol)")
                continue
            cost = cand.cost(n, s, m) if cand.cost is not None else None
            if cost is not None and cost > budget:
                row["status"] = (f"not built: not certifiable within certify_seconds = {budget:g} "
                                 f"(about {cost:.2g} s estimated to enumerate its groups)")
                continue
            try:
                code = cand.build(n, s, m)
            except ValueError as exc:
                row["status"] = f"not built: {exc}"
                continue
            if not isinstance(code, GradientCode):
                raise GradcodesTypeError(f"candidate {cand.name!r} built a {type(code).__name__}; recommend() "
                                         f"candidates must build exact gradient codes (GradientCode)")
            codes[cand.name] = code
            row.update(_judge(code, cand, budget, cost), load=code.load)
            row["meets_rtol"] = bool(row["proven"] and row["error"] <= rtol)
            row["status"] = _status(row, rtol)
        built = [r for r in rows if r["name"] in codes]
        if not built:
            from .binary import stable_binary_load

            raise GradcodesValueError(
                f"no candidate code for n={n}, s={s}, m={m} within max_load={max_load}"
                + (f"; the stable binary code needs load {stable_binary_load(n, s)}" if m == 1 else
                   "; for m > 1 only the Ye-Abbe code (load s + m) is registered"))
        winners = [r for r in built if r["meets_rtol"]]
        if not winners:                          # sample the unsettled unproven rows: they may be all there is
            from .._verify.verifier import verify

            for r in built:
                if not r["proven"] and not r["settled"]:
                    rep = verify(codes[r["name"]], limit=0, samples=samples, search=False, rng=gen,
                                 stop_on_failure=True)
                    r["failed"] = bool(rep.n_failures)
                    r["error"] = float("inf") if r["failed"] else max(r["error"], float(rep.error_estimate))
                    r["how"] += f"; {rep.patterns_checked:,} more sets ({samples} random, seeded)"
                    r["status"] = _status(r, rtol)
    if winners:
        best = min(winners, key=key)
        reason = (f"lowest load among the codes proven to meet rtol = {rtol:.0e}"
                  + (" (0/1 decoding: exact up to the rounding of the additions)" if best["stable"] else "")
                  + f"; {best['how']}")
    else:
        proven = [r for r in built if r["proven"] and not r["failed"]]
        unproven = [r for r in built if not r["proven"] and not r["failed"]]
        best = _rank(proven or unproven or built)
        binary = _binary_load(n, s, m)
        reason = (f"no candidate within the budget is proven to reach rtol = {rtol:.0e}"
                  + (f" (the stable binary code, 0/1-decodable, needs load {binary} > max_load = {max_load})"
                     if binary and max_load is not None and binary > max_load else "")
                  + ("; the most accurate proven one" if best["proven"] else
                     "; none is proven: the most accurate on the checked sets, NOT a worst case")
                  + f" (ties within a factor {TIE_BAND:g}: lowest load)")
    for r in rows:
        for k in ("order", "stable", "settled", "failed"):
            r.pop(k, None)
    code = codes[best["name"]]
    code.recommendation = Recommendation(
        n=n, s=s, m=m, max_load=max_load, rtol=rtol, chosen=best["name"], load=code.load,
        error_estimate=best["error"],
        meets_rtol=bool(best.get("meets_rtol")), rows=rows, reason=reason, proven=bool(best["proven"]),
        certify_seconds=budget)
    return code
