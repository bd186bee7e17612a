r"""Numerically stable binary gradient codes for every ``(n, s)``, and :func:`recommend`.

**Generalized fractional repetition** (:func:`stable_binary`; in the spirit of Charalambides, Mahdavifar & Hero,
*Numerically stable binary gradient coding*). Write ``n = q (s+1) + r`` with ``q = floor(n/(s+1)) >= 1`` and
``0 <= r <= s``. Split the workers into ``q`` contiguous groups of ``floor(n/q)`` or ``ceil(n/q)`` workers (each
``>= s + 1``), and the ``k`` partitions into ``q`` contiguous blocks of ``floor(k/q)`` or ``ceil(k/q)``. Every
member of group ``g`` stores block ``g`` and sends the plain sum of its partial gradients: ``B`` is 0/1.

*Theorem 1 (exact recovery with 0/1 weights).* Any ``s`` stragglers leave a responder in every group (groups have
``>= s + 1`` members); one responder per group, weight 1, sums the ``q`` disjoint blocks, i.e. all partitions.
The decode adds ``q`` messages: no cancellation (cancellation factor exactly 1), error at the level of the
additions themselves. *Load:* ``ceil(k/q)``; for ``k = n`` that is ``s + 1 + ceil(r/q)``: ``s + 1`` when
``(s+1) | n`` (this is fractional repetition), ``s + 2`` when ``0 < r <= q`` (in particular whenever
``n >= s(s+1)``, as ``r <= s``).

*Theorem 2 (no code without cancellation does better when n <= 2s + 1).* Let ``B >= 0`` with no row storing
everything uniformly, and suppose every responder set ``F`` (``|F| = n - s``) has a decoding vector ``a >= 0``.
Normalise the rows, ``p_i = B_i / ||B_i||_1`` (points of the simplex); ``a B = 1`` says the barycentre
``u = 1/k`` lies in the convex hull of ``{p_i : i ∈ F}``. Take a linear functional ``φ`` vanishing at ``u`` and at
no ``p_i`` (the finitely many ``p_i - u`` are nonzero). If ``n <= 2s + 1``, one of ``{φ > 0}``, ``{φ < 0}`` holds at
most ``s`` points; let them straggle: all responders lie strictly on one side of ``φ = 0`` and so does their hull,
which therefore misses ``u``. Contradiction. Hence for ``n <= 2s + 1`` every cancellation-free code (in particular
every 0/1 code decoded by adding messages) has a worker storing all partitions: load ``k``, which is exactly what
:func:`stable_binary` achieves there (``q = 1``).

*Fact 3 (exhaustive search).* For ``(n, s) = (5, 2)`` no matrix with entries in ``{0, 1}`` or ``{0, ±1}`` and load
``<= 4 = s + 2`` is a gradient code at all, whatever the (real) decoding weights (``tests/test_binary.py`` repeats
both searches). So a load of ``s + 2``
for every ``(n, s)`` is out of reach of binary codes; where ``r > q`` the stable choice costs load, and
:func:`recommend` weighs it against real-valued codes of load ``s + 1``.

**recommend()** chooses from a table of candidate families (:data:`CANDIDATES`; later families add entries with
:func:`add_candidate`): it builds each applicable candidate within the load budget, measures its worst float64
error estimate ``u * canc + residual`` with :func:`gradcodes.verify` (exhaustive for small codes, else
consecutive, random and searched straggler sets), and returns the lowest-load code whose error is within ``tol``
(or, if none is, the most accurate one), with the reasoning attached as ``code.recommendation``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .._blocks import Block, BlockDecoder
from .._code import GradientCode, LinearCode
from .._decoders import Decoder, single_threaded_blas
from .._io import REBUILDERS
from .._registry import Scheme, register
from .._typing import RNGLike, Unset
from .._validate import SEED_UNSET, check_choice, check_entries, check_int, check_ns, check_real, check_rng, check_size
from .repetition import GroupDecoder

__all__ = ["stable_binary", "stable_binary_load", "grouped_mds", "GroupedDecoder", "recommend", "Recommendation",
           "Candidate", "CANDIDATES", "add_candidate"]


def _split(total: int, parts: int) -> np.ndarray:
    """Boundaries of ``total`` items split into ``parts`` contiguous runs of sizes differing by at most one."""
    sizes = np.full(parts, total // parts, dtype=np.int64)
    sizes[: total % parts] += 1
    return np.concatenate([[0], np.cumsum(sizes)])


def stable_binary_load(n: int, s: int, k: int | None = None) -> int:
    """Load of :func:`stable_binary`: ``ceil(k / floor(n/(s+1)))`` (``s + 1 + ceil(r/q)`` for ``k = n``).

    >>> stable_binary_load(12, 3), stable_binary_load(13, 3), stable_binary_load(500, 125)
    (4, 5, 167)
    """
    n, s = check_ns(n, s)
    q = n // (s + 1)
    k = n if k is None else check_int("k", k, q)
    return -(-k // q)


def stable_binary(n: int, s: int, k: int | None = None, *, field: str = "real") -> GradientCode:
    r"""Stable binary gradient code for every ``(n, s)``: generalized fractional repetition, 0/1 decoding.

    ``q = floor(n/(s+1))`` groups of ``floor(n/q)``/``ceil(n/q)`` workers (each ``>= s + 1``) share ``q`` contiguous
    blocks of partitions; the decode adds one message per group (weight 1), so the decoded sum is as accurate as
    a sum of ``k`` partial gradients can be. Load ``ceil(k/q)`` = ``s + 1 + ceil(r/q)`` for ``k = n``, where
    ``n = q(s+1) + r``: ``s + 1`` when ``(s+1) | n``, ``s + 2`` when ``r <= q``. For ``n <= 2s + 1`` no code
    without cancellation has a lower load (module docstring, Theorem 2).

    Parameters
    ----------
    n : int
        Number of workers, ``n >= 1``.
    s : int
        Stragglers tolerated, ``0 <= s <= n - 1``.
    k : int, optional
        Number of partitions, ``k >= floor(n/(s+1))`` (default ``n``).
    field : {"real", "rational"}
        Floating point or exact arithmetic.

    Returns
    -------
    GradientCode
        Decoders ``"group"`` (default: smallest responder of each group, weight 1) and ``"group-mean"``.

    Examples
    --------
    >>> import gradcodes as gc
    >>> code = gc.stable_binary(7, 2)          # 7 = 2*3 + 1: groups of 4 and 3 workers
    >>> code.B.astype(int)
    array([[1, 1, 1, 1, 0, 0, 0],
           [1, 1, 1, 1, 0, 0, 0],
           [1, 1, 1, 1, 0, 0, 0],
           [1, 1, 1, 1, 0, 0, 0],
           [0, 0, 0, 0, 1, 1, 1],
           [0, 0, 0, 0, 1, 1, 1],
           [0, 0, 0, 0, 1, 1, 1]])
    >>> code.decoding_matrix([2, 3, 4, 6, 5]).astype(int)    # workers 0 and 1 straggle
    array([[0, 0, 1, 0, 1, 0, 0]])
    >>> gc.verify(code).exact, code.load
    (True, 4)
    """
    n, s = check_ns(n, s)
    check_choice("field", field, ("real", "rational"))
    if k is not None:
        check_int("k", k, 1)
    check_entries(n, n if k is None else k, exact=field == "rational")
    q = n // (s + 1)
    k = n if k is None else check_int("k", k, q)
    wb = _split(n, q)
    pb = _split(k, q)
    B = np.zeros((n, k), dtype=np.int64)
    for g in range(q):
        B[wb[g]:wb[g + 1], pb[g]:pb[g + 1]] = 1
    r = n % (s + 1)
    name = "stable_binary" if r else "stable_binary[FR]"
    decoders: list[Decoder] = [GroupDecoder(wb, "first"), GroupDecoder(wb, "mean")]
    default = "group"
    if field == "real" and s < wb[1] - wb[0]:               # proven block by block (each a repetition block)
        made: dict[tuple[int, int], GradientCode] = {}
        subs: list[GradientCode | None] = []
        for g in range(q):
            key = (int(wb[g + 1] - wb[g]), int(pb[g + 1] - pb[g]))
            if key not in made:
                made[key] = GradientCode(np.ones(key, dtype=np.int64), s, field="real", name="repetition[block]",
                                         decoders=[GroupDecoder(np.array([0, key[0]]))], default_decoder="group")
            subs.append(made[key])
        blocks = [Block(tuple(range(int(wb[g]), int(wb[g + 1]))), tuple(range(int(pb[g]), int(pb[g + 1]))))
                  for g in range(q)]
        decoders.append(BlockDecoder(blocks, subs, name="blocks"))
        default = "blocks"
    return GradientCode(B, s, field=field, name=name, family="stable_binary",
                        params={"n": n, "s": s, "k": k, "field": field}, decoders=decoders,
                        default_decoder=default)


# ----------------------------------------------------------------------------------------------- recommend
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
        True when the decode only adds messages with 0/1 (or ±1) weights: its error is rounding in the additions,
        and no floating-point check is needed to trust it.
    note : str
        One line on what the family trades.
    """

    name: str
    build: Callable[[int, int, int], LinearCode]
    load: Callable[[int, int, int], int | None]
    stable: bool = False
    note: str = ""


def _fr_load(n: int, s: int, m: int) -> int | None:
    return s + 1 if m == 1 and n % (s + 1) == 0 else None


def _mds_real_load(n: int, s: int, m: int) -> int | None:
    return s + 1 if m == 1 and ((n - s) % 2 == 1 or n % (s + 1) == 0) else None


def _build_fr(n: int, s: int, m: int) -> LinearCode:
    from .repetition import fractional_repetition
    return fractional_repetition(n, s)


def _build_mds(field_: str) -> Callable[[int, int, int], LinearCode]:
    def build(n: int, s: int, m: int) -> LinearCode:
        from .cyclic_mds import cyclic_mds
        return cyclic_mds(n, s, field_)
    return build


def _build_cyclic_rep(n: int, s: int, m: int) -> LinearCode:
    from .repetition import cyclic_repetition
    return cyclic_repetition(n, s, rng=0)


#: The candidate table of :func:`recommend`, in order of preference among equals (stable codes first).
CANDIDATES: list[Candidate] = [
    Candidate("fractional_repetition", _build_fr, _fr_load, True, "0/1 decoding, load s+1; needs (s+1) | n"),
    Candidate("stable_binary", lambda n, s, m: stable_binary(n, s),
              lambda n, s, m: stable_binary_load(n, s) if m == 1 else None, True,
              "0/1 decoding for every (n, s); load s+1+ceil(r/q)"),
    Candidate("cyclic_mds[real]", _build_mds("real"), _mds_real_load, False,
              "load s+1, real messages; accuracy degrades with n and s (consecutive stragglers)"),
    Candidate("cyclic_mds[complex]", _build_mds("complex"), lambda n, s, m: s + 1 if m == 1 else None, False,
              "load s+1, complex messages (2x bandwidth); accuracy degrades with n and s"),
    Candidate("cyclic_repetition", _build_cyclic_rep, lambda n, s, m: s + 1 if m == 1 else None, False,
              "load s+1, random real code (seed 0): stable with high probability, no guarantee"),
]


def _build_ye_abbe(n: int, s: int, m: int) -> LinearCode:
    from .ye_abbe import ye_abbe
    return ye_abbe(n, s, m)


CANDIDATES.append(Candidate("ye_abbe", _build_ye_abbe, lambda n, s, m: s + m if s + m <= n else None, False,
                            "Ye-Abbe (real Fourier nodes): load s+m, messages 1/m of a gradient; the m > 1 option"))


def add_candidate(candidate: Candidate, *, before: str | None = None) -> None:
    """Add a family to the :func:`recommend` table (e.g. Ye-Abbe codes for ``m > 1``); replaces a same-named row."""
    if not isinstance(candidate, Candidate):
        raise TypeError(f"add_candidate() takes a Candidate, got {type(candidate).__name__}")
    names = [c.name for c in CANDIDATES if c.name != candidate.name]
    if before is not None and before not in names:
        raise ValueError(f"before must be the name of a candidate ({', '.join(names)}) or None, got {before!r}")
    CANDIDATES[:] = [c for c in CANDIDATES if c.name != candidate.name]
    CANDIDATES.insert(names.index(before) if before is not None else len(CANDIDATES), candidate)


@dataclass
class Recommendation:
    """Why :func:`recommend` chose its code: the candidate table with loads and measured errors."""

    n: int
    s: int
    m: int
    max_load: int | None
    tol: float
    chosen: str
    load: int
    error_estimate: float
    meets_tol: bool
    rows: list[dict[str, Any]] = field(default_factory=list)
    reason: str = ""

    def __str__(self) -> str:
        budget = "none" if self.max_load is None else str(self.max_load)
        lines = [f"recommend(n={self.n}, s={self.s}, m={self.m}, max_load={budget}, tol={self.tol:.0e}) -> "
                 f"{self.chosen} (load {self.load}, worst float64 error estimate {self.error_estimate:.1e})",
                 f"  {self.reason}", "  candidates:"]
        for row in self.rows:
            err = row.get("error")
            err_s = "-" if err is None else ("fails" if not np.isfinite(err) else f"{err:.1e}")
            lines.append(f"    {row['name']:<22} load {str(row.get('load', '-')):>4}  error {err_s:>8}  "
                         f"{row['status']}")
        return "\n".join(lines)


def _status(err: float, proven: bool, tol: float) -> str:
    """A row's verdict. A failing set, or a set whose error exceeds ``tol``, settles "not accurate" for good,
    whether or not every set was checked; only an accurate result needs a proof to be a worst case."""
    if not np.isfinite(err):
        return "FAILS (a failing straggler set was found: conclusive)"
    if err > tol:
        return "above tol, worst case proven" if proven else "above tol (a checked set exceeds it: conclusive)"
    return "accurate, proven" if proven else "accurate on the checked sets, searched (not a worst case)"


def _screen_sets(n: int, s: int) -> np.ndarray:
    """A few straggler sets that break unstable codes first: consecutive windows at eight evenly spread starts
    (the worst sets of cyclic codes), as a sorted (b, s) array."""
    starts = np.unique(np.linspace(0, n - 1, min(n, 8)).astype(np.int64))
    return np.unique(np.sort((starts[:, None] + np.arange(s)[None, :]) % n, axis=1), axis=0)


def _measure(code: LinearCode, samples: int, rng: Any, quick: bool, tol: float | None = None
             ) -> tuple[float, bool]:
    """``(worst float64 error estimate u canc + residual, proven)`` by :func:`gradcodes.verify` (inf if a set fails);
    a grouped random code is judged by its group certificates (:func:`certified_bound`), never re-enumerated.

    With ``tol`` (the caller knows an accurate code exists, so a code above ``tol`` cannot win) a handful of
    consecutive straggler sets is checked first; when one of them fails or exceeds ``tol``, that value is returned
    (not proven, but conclusive: the code is not accurate) without the full measurement.
    """
    from .._blocks import is_proof
    from .._verify import _Tracker, verify

    if code.family == "grouped_random":
        from .grouped_random import certified_bound

        bound, proven, failed = certified_bound(code)  # type: ignore[arg-type]
        return (float("inf") if failed else bound), proven
    if tol is not None and isinstance(code, GradientCode) and not code.exact and code.s:
        tracker = _Tracker(code, code._decoder(None), code.rtol)
        est = tracker.add(_screen_sets(code.n, code.s))
        if tracker.n_failures:
            return float("inf"), False
        if float(est.max()) > tol:
            return float(est.max()), False
    rep = verify(code, samples=samples, search=not quick, rng=rng, stop_on_failure=True,
                 limit=20_000 if quick else 200_000)
    if rep.n_failures:
        return float("inf"), False
    return float(max(rep.error_estimate, 0.0)), is_proof(rep)


def recommend(n: int, s: int, m: int = 1, max_load: int | None = None, *, tol: float = 1e-12,
              samples: int = 200, rng: RNGLike = None, quick: bool = False,
              seed: RNGLike | Unset = SEED_UNSET) -> LinearCode:
    r"""The most accurate gradient code within a load budget, with its reasoning in ``code.recommendation``.

    Every applicable candidate of :data:`CANDIDATES` whose load is at most ``max_load`` is built and its worst
    float64 error estimate ``u * canc + residual`` measured (:func:`gradcodes.verify`: every straggler set when
    ``C(n, s)`` is small, else consecutive, random and searched sets; codes with 0/1 decoding are exact by
    construction and only checked). Among the codes whose error is at most ``tol`` the one with the lowest load
    wins (ties: the more accurate one); if none reaches ``tol``, the most accurate code within the budget is
    returned and the explanation says so.

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
    tol : float, default 1e-12
        Error level counted as "accurate".
    samples : int, default 200
        Random straggler sets per candidate when not exhaustive.
    rng : None, int, numpy.random.SeedSequence or numpy.random.Generator, optional
        Random state of the random sets (SPEC 7: None for fresh entropy, an int, a SeedSequence or a
        Generator; ``seed=`` is a deprecated alias).
    quick : bool, default False
        Skip the local search for the worst set (faster, less thorough).

    Returns
    -------
    LinearCode
        With ``code.recommendation`` (a :class:`Recommendation`; ``print`` it for the table).

    Examples
    --------
    >>> import gradcodes as gc
    >>> code = gc.recommend(40, 9)            # fractional repetition, proven by its theorem
    >>> code.name, code.load
    ('fractional_repetition', 10)
    >>> code = gc.recommend(13, 3)           # small: the complex cyclic-MDS code is accurate at load s + 1
    >>> code.name, code.load, code.recommendation.meets_tol
    ('cyclic_mds[complex]', 4, True)
    >>> code = gc.recommend(13, 3, max_load=5)
    >>> print(code.recommendation)        # doctest: +ELLIPSIS
    recommend(n=13, s=3, m=1, max_load=5, tol=1e-12) -> cyclic_mds[complex] (load 4, ...)
      lowest load among the codes with error <= 1e-12; worst case proven
      candidates:
        fractional_repetition  load    -  error        -  not applicable
        stable_binary          load    5  error  1.1e-16  accurate, proven
    ...
    """
    n, s = check_ns(n, s)
    m = check_int("m", m, 1, n - s)
    check_entries(n, n * m, what="the candidate codes' matrices")
    if max_load is not None:
        max_load = check_int("max_load", max_load, s + m)
    tol = check_real("tol", tol, 0, None, open_lo=True)
    samples = check_int("samples", samples, 1)
    gen = check_rng(rng, seed)
    check_size("the sampled straggler sets times n", samples * n, "work")
    rows: list[dict[str, Any]] = []
    built: list[tuple[LinearCode, float, int, int, Candidate, bool]] = []
    # when the stable binary code is within the budget an accurate, proven code exists, so a candidate shown to
    # be above tol on a few sets cannot win: one failing (or inaccurate) set settles it (conclusively) and the
    # full measurement is skipped
    sure = m == 1 and (max_load is None or stable_binary_load(n, s) <= max_load)
    with single_threaded_blas():                     # many small factorisations: threads only contend
        for order, cand in enumerate(CANDIDATES):
            load = cand.load(n, s, m)
            if load is None:
                rows.append({"name": cand.name, "status": "not applicable"})
                continue
            if max_load is not None and load > max_load:
                rows.append({"name": cand.name, "load": load, "status": f"over budget ({load} > {max_load})"})
                continue
            # a code of higher load than an accurate one already found cannot win; skip the costly check
            if any(err <= tol and ld < load for _, err, ld, _, _, _ in built):
                rows.append({"name": cand.name, "load": load, "status": "skipped (an accurate code of lower "
                                                                         "load exists)"})
                continue
            try:
                code = cand.build(n, s, m)
            except ValueError as exc:
                rows.append({"name": cand.name, "load": load, "status": f"not built: {exc}"})
                continue
            err, proven = _measure(code, samples, gen, quick or cand.stable, tol if sure else None)
            built.append((code, err, code.load, order, cand, proven))
            rows.append({"name": cand.name, "load": code.load, "error": err, "proven": proven,
                         "status": _status(err, proven, tol)})
    if not built:
        raise ValueError(f"no candidate code for n={n}, s={s}, m={m} within max_load={max_load}"
                         + (f"; the stable binary code needs load {stable_binary_load(n, s)}" if m == 1 else
                            "; for m > 1 only the Ye-Abbe code (load s + m) is registered"))
    accurate = [b for b in built if b[1] <= tol]
    if accurate:
        code, err, load, _, cand, proven = min(accurate, key=lambda b: (b[2], not b[5], not b[4].stable, b[1],
                                                                         b[3]))
        reason = (f"lowest load among the codes with error <= {tol:.0e}"
                  + (" (0/1 decoding: exact up to the rounding of the additions)" if cand.stable else "")
                  + ("; worst case proven" if proven else "; worst case searched, not proven"))
        meets = True
    else:
        code, err, load, _, cand, proven = min(built, key=lambda b: (b[1], b[2], b[3]))
        better = stable_binary_load(n, s) if m == 1 else None
        reason = (f"no candidate within the budget reaches {tol:.0e}; this is the most accurate one"
                  + (f" (the stable binary code reaches ~1e-16 at load {better})" if better else "")
                  + ("; worst case proven" if proven else "; worst case searched, not proven"))
        meets = False
    code.recommendation = Recommendation(
        n=n, s=s, m=m, max_load=max_load, tol=tol, chosen=cand.name, load=load, error_estimate=err,
        meets_tol=meets, rows=rows, reason=reason)
    return code


def _grouped_random_load(n: int, s: int, m: int) -> int | None:
    from .grouped_random import grouped_random_load

    if m != 1:
        return None
    load = grouped_random_load(n, s, 1)
    return load if load < stable_binary_load(n, s) else None     # else every group is stored whole


def _build_grouped_random(n: int, s: int, m: int) -> LinearCode:
    """The oversampled grouped random code when every group size can be proven: a stored certificate, or at most
    20,000 straggler sets to enumerate (no long seed search at recommend time)."""
    import math

    from ._certified_seeds import CERTIFIED
    from .grouped_random import group_sizes, grouped_random

    for ng in sorted(set(int(x) for x in group_sizes(n, s))):
        if (ng, s, 1) not in CERTIFIED and min(s + 1, ng - 1) < ng - 1 and math.comb(ng, s) > 20_000:
            raise ValueError(f"groups of {ng} workers have C({ng}, {s}) = {math.comb(ng, s):,} straggler sets and no "
                             f"stored certificate: not certifiable at recommend time")
    return grouped_random(n, s, 1, candidates=2, limit=20_000)


REBUILDERS.update(stable_binary=stable_binary)
register(Scheme("stable_binary", stable_binary,
                "generalized fractional repetition: 0/1 decoding for every (n, s), load s+1+ceil(r/q)",
                tour=({"n": 13, "s": 3}, {"n": 101, "s": 9}, {"n": 500, "s": 21})))


# ----------------------------------------------------------------------------------------------- grouped MDS
class GroupedDecoder(BlockDecoder):
    """Decode each group's block with its own sub-code's default decoder: a :class:`~gradcodes._blocks.BlockDecoder`
    (so :func:`gradcodes.verify` proves the code block by block; equal groups are checked once)."""

    description = "per group: one responder (repetition block) or the block's cyclic-MDS decoder"

    def __init__(self, bounds: np.ndarray, subcodes: list[GradientCode]) -> None:
        self.bounds = np.asarray(bounds, dtype=np.int64)
        blocks = [Block(tuple(range(int(lo), int(hi))), tuple(range(int(lo), int(hi))))
                  for lo, hi in zip(self.bounds[:-1], self.bounds[1:], strict=True)]
        super().__init__(blocks, list(subcodes), name="grouped")


def _repetition_block(ng: int, s: int) -> GradientCode:
    """``ng`` workers storing the same ``ng`` partitions: decoded by the first responder (weight 1)."""
    return GradientCode(np.ones((ng, ng), dtype=np.int64), s, field="real", name="repetition[block]",
                        decoders=[GroupDecoder(np.array([0, ng]))], default_decoder="group")


def grouped_mds(n: int, s: int) -> GradientCode:
    r"""Fractional-repetition groups whose blocks are small cyclic-MDS codes: load ``s + 1`` (``s + 2`` at most).

    The workers and partitions split into the ``q = floor(n/(s+1))`` groups/blocks of :func:`stable_binary`, but
    block ``g`` (``n_g = s + 1 + t_g`` workers, ``n_g`` partitions) is coded *inside* the group: with ``t_g = 0`` or
    ``1`` every member stores the whole block (load ``n_g <= s + 2``, 0/1 decoding); with ``t_g >= 2`` the group runs
    :func:`gradcodes.cyclic_mds` ``(n_g, s)`` on its block (load ``s + 1``; real when ``t_g`` is even, else
    complex). Any ``s`` stragglers hit each group in at most ``s`` workers, which its sub-code tolerates, and the
    blocks are disjoint: the decoded block sums add up to the total. The decode cancels only inside the
    ``(t_g + 1)``-dimensional sub-codes, so it is accurate when the groups are small (``n_g`` up to a few dozen) or
    ``t_g <= 2``; :func:`recommend` measures it.

    Parameters
    ----------
    n : int
        Number of workers (= partitions), ``n >= 1``.
    s : int
        Stragglers tolerated, ``0 <= s <= n - 1``.

    Returns
    -------
    GradientCode
        ``k = n``, load ``s + 1`` (``s + 2`` when some ``t_g = 1``); real unless some ``t_g`` is odd and ``>= 3``
        (then complex). Decoder ``"grouped"`` (default: per group, first responder of a repetition block or the
        block's cyclic-MDS decoder), plus the generic ones.

    Examples
    --------
    >>> import gradcodes as gc
    >>> code = gc.grouped_mds(50, 12)           # 3 groups of 16-17 workers, cyclic-MDS blocks: load s + 1
    >>> code.load, code.field, gc.verify(code).verdict    # proven block by block: C(17, 12) sets per block
    (13, 'complex', 'ok')
    """
    n, s = check_ns(n, s)
    check_entries(n, n)
    q = n // (s + 1)
    r = n - q * (s + 1)
    t = np.full(q, r // q, dtype=np.int64)
    t[: r % q] += 1
    bounds = np.concatenate([[0], np.cumsum(s + 1 + t)])
    from .cyclic_mds import cyclic_mds

    real = all(tg <= 1 or tg % 2 == 0 for tg in t)
    made: dict[int, GradientCode] = {}                    # equal groups share one sub-code: checked once
    for tg in sorted(set(int(x) for x in t)):
        ng = s + 1 + tg
        made[tg] = _repetition_block(ng, s) if tg <= 1 else cyclic_mds(ng, s, "real" if real else "complex")
    subs = [made[int(tg)] for tg in t]
    B = np.zeros((n, n), dtype=np.float64 if real else np.complex128)
    for g, sub in enumerate(subs):
        lo, hi = bounds[g], bounds[g + 1]
        B[lo:hi, lo:hi] = sub.B
    name = "grouped_mds" if real else "grouped_mds[complex]"
    return GradientCode(B, s, name=name, family="grouped_mds", params={"n": n, "s": s},
                        decoders=[GroupedDecoder(bounds, subs)], default_decoder="grouped")


def _grouped_load(n: int, s: int, m: int) -> int | None:
    if m != 1:
        return None
    q, r = divmod(n, s + 1)
    has_one = r // q == 1 or (r // q == 0 and r % q > 0)      # a t_g = 1 block is stored whole: load s + 2
    return s + 2 if has_one else s + 1


add_candidate(Candidate("grouped_mds", lambda n, s, m: grouped_mds(n, s), _grouped_load, False,
                        "repetition groups with small cyclic-MDS blocks; load s+1 (s+2)"),
              before="cyclic_mds[real]")
add_candidate(Candidate("grouped_random", _build_grouped_random, _grouped_random_load, False,
                        "random cyclic-repetition groups with one extra unit of load; proven by blocks"),
              before="cyclic_mds[real]")
REBUILDERS.update(grouped_mds=grouped_mds)
register(Scheme("grouped_mds", grouped_mds,
                "fractional-repetition groups with small cyclic-MDS blocks inside: load s+1 (s+2), any (n, s)",
                tour=({"n": 23, "s": 4}, {"n": 200, "s": 20})))
