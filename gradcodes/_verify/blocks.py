r"""Proof by blocks: a code whose ``B`` is block-diagonal (after permuting workers and partitions) is verified one
block at a time, and identical blocks are checked once.

**Blocks.** The *support graph* of ``B`` joins worker ``i`` and partition ``j`` when ``B[i, j m + u] != 0`` for some
``u``. Its connected components are the blocks ``(W_b, P_b)``: ``n_b = |W_b|`` workers, ``k_b = |P_b|`` partitions
and the submatrix ``B_b`` (rows ``W_b``, columns ``j m + u`` for ``j ∈ P_b`` in increasing order). A worker storing
nothing is a block with ``k_b = 0``. Fractional repetition and the stable binary code (Tandon et al. 2017;
Charalambides, Mahdavifar & Hero 2020), grouped codes and any user matrix with this structure decompose.

**The block decoder** (:class:`BlockDecoder`) decodes every block from its own responders only: if block ``b``
has more than ``n_b - s`` responders it keeps the first ``n_b - s`` (smallest indices) and decodes them with the
block's own code ``B_b`` (an ``(n_b, s)`` code with ``k_b`` partitions); the decoding matrix is the concatenation
of the blocks' matrices (zero on workers storing nothing).

**Theorem (proof by blocks).** Let every partition be stored by some worker, ``E = 1_k^T ⊗ I_m`` and
``E_b = 1_{k_b}^T ⊗ I_m``.

1. *Exact recovery.* Some ``A_F`` with ``A_F B = E`` exists for every set ``S`` of ``s`` stragglers if and only if
   every block with ``k_b > 0`` has ``n_b >= s + 1`` workers and ``B_b`` recovers ``E_b`` from every set of ``s``
   stragglers inside ``W_b``.
2. *Accuracy of the block decoder.* For every ``S`` (``|S| = s``) the block decoder's matrix ``A`` satisfies
   ``||A B - E||_inf = max_b res_b`` and ``canc(A) = max_b canc_b``, where ``res_b``, ``canc_b`` are the
   residual and cancellation factor (the worst column of ``|A_{W_b}| |B_b|``,
   :func:`gradcodes._core.numerics.cancellation`)
   of block ``b``'s decode at a set of exactly ``s`` stragglers inside ``W_b``. Hence, with ``res*_b``, ``canc*_b``
   the worst values over all ``C(n_b, s)`` such sets, the error bound ``c_t canc + res`` of every decode
   (:func:`gradcodes._core.numerics.error_estimate`, ``t`` the whole decode's terms) is at most
   ``c_t max_b canc*_b + max_b res*_b``.

*Proof.* ``B`` is block-diagonal, so ``(A B)`` restricted to the columns of block ``b`` is ``A_{W_b} B_b`` and
``A B = E`` splits into ``A_{W_b} B_b = E_b`` for every ``b``. (1, "if") ``S ∩ W_b`` has at most ``s`` workers and,
as ``n_b >= s + 1 > s``, can be enlarged inside ``W_b`` to exactly ``s``; a decoding matrix of the smaller responder
set (zero on the added stragglers) decodes the larger one. (1, "only if") If ``n_b <= s`` for a block with
``k_b > 0``, a set ``S ⊇ W_b`` exists (``s <= n - 1``) and leaves ``A_{W_b} = 0 != E_b``; if ``B_b`` fails at
``S_b ⊆ W_b``, ``|S_b| = s``, the global set ``S = S_b`` fails. (2) The block decoder's part on ``W_b`` is block
``b``'s decode at an ``s``-subset of ``W_b`` (the actual stragglers of the block plus its last responders), so the
residual is the largest block residual; and a column of block ``b`` meets only the rows ``W_b``, so the columns of
``|A| |B|`` are those of the blocks' ``|A_{W_b}| |B_b|``. ∎ (The identities hold in real arithmetic; a residual
evaluated in floating point carries its own rounding, of order ``n_b u canc``, which the rule's interval covers.)

Hence :func:`gradcodes.verify` proves a block-decoded code when (a) every block with partitions has at least
``s + 1`` workers, (b) every distinct block is proven by ``verify`` (exhaustively, or by a decoder's theorem), with
every block decode accepted, and (c) the combined bound of part 2 (with the whole decode's terms) is at most
``rtol``. (b) alone does not imply (c): one block may reach its worst cancellation while another reaches its worst
residual, so (c) is checked from the blocks' worst values. Blocks with equal ``B_b`` (and equal decoders) have the
same worst values, so each is checked once. The work is ``sum over distinct blocks of C(n_b, s)`` straggler sets
instead of ``C(n, s)``.

**One budget.** The verifier's budget is the whole code's, shared by the distinct blocks in their order: ``limit``
counts their sets together, the default budget their predicted seconds (the cost model of
:mod:`gradcodes._verify.cost`, about 10 s of one core in all), and ``time_budget`` is one wall clock (each block
gets what the blocks before it left). A block is enumerated when it fits what is left, else sampled and searched:
the report is then unproven and names the block. Progress is one count over every enumerated block's sets.
"""

from __future__ import annotations

import math
import os
import time
from dataclasses import dataclass, field, fields
from fractions import Fraction
from typing import Any

import numpy as np

from .._base.errors import GradcodesTypeError, GradcodesValueError
from .._core.code import GradientCode, LinearCode
from .._core.decoders import Decoder
from .verifier import VerifyReport

__all__ = ["Block", "blocks_of", "canonical", "is_proof", "BlockDecoder", "by_blocks", "BlockVerifyReport"]


@dataclass(frozen=True)
class Block:
    """One connected component of the support graph: ``workers`` and ``partitions`` (index tuples; their order is
    the order of the block's rows and partitions in its sub-code)."""

    workers: tuple[int, ...]
    partitions: tuple[int, ...]

    def columns(self, m: int) -> np.ndarray:
        """Columns of ``B`` belonging to the block: ``j m + u`` for ``j`` in ``partitions``, ``u < m``."""
        p = np.asarray(self.partitions, dtype=np.int64)
        return (p[:, None] * m + np.arange(m)[None, :]).ravel()


def blocks_of(code: LinearCode) -> list[Block]:
    """The blocks of ``code.B``: connected components of the worker-partition support graph, ordered by their
    smallest worker (partitions stored by nobody form blocks without workers).

    Parameters
    ----------
    code : LinearCode
        Any code.

    Returns
    -------
    list of Block
        One entry per block, with the index tuples ``workers`` and ``partitions``.

    Raises
    ------
    GradcodesTypeError
        If ``code`` is not a gradcodes code.

    Examples
    --------
    >>> import gradcodes as gc
    >>> [b.workers for b in blocks_of(gc.fractional_repetition(6, 2))]
    [(0, 1, 2), (3, 4, 5)]
    """
    if not isinstance(code, LinearCode):
        raise GradcodesTypeError(
            f"blocks_of() takes a code (GradientCode or ApproximateCode), got {type(code).__name__}")
    n, k = code.n, code.k
    S = np.asarray(code.support_matrix)                   # (n, k): worker i stores partition j
    rows, cols = np.nonzero(S)
    import scipy.sparse
    from scipy.sparse.csgraph import connected_components

    graph = scipy.sparse.coo_matrix((np.ones(rows.size), (rows, n + cols)), shape=(n + k, n + k))
    count, label = connected_components(graph, directed=False)
    out = []
    for c in range(count):
        members = np.flatnonzero(label == c)
        out.append(Block(tuple(int(i) for i in members[members < n]),
                         tuple(int(j - n) for j in members[members >= n])))
    out.sort(key=lambda b: (b.workers[0] if b.workers else n, b.partitions[0] if b.partitions else k))
    return out


def _sub_matrix(code: LinearCode, block: Block) -> Any:
    return code.B[np.ix_(np.asarray(block.workers, dtype=np.int64), block.columns(code.m))]


def canonical(code: LinearCode, block: Block) -> Block:
    """The block with its workers and partitions reordered canonically: rows by their sorted entries, then
    partitions by their columns' entries in that row order. Two blocks whose matrices are equal up to a permutation
    of rows and of partitions get equal matrices (guaranteed when the rows' multisets of entries differ or the tied
    rows are equal, as in random and repetition codes; otherwise equal blocks may merely be checked twice).
    """
    m = code.m
    W = np.asarray(block.workers, dtype=np.int64)
    Bb = _sub_matrix(code, block)
    row_key = [tuple(sorted(repr(v) for v in row)) for row in Bb.tolist()]
    order = sorted(range(len(W)), key=lambda i: (row_key[i], i))
    Bb = Bb[order]
    part_key = [tuple(repr(v) for v in Bb[:, j * m:(j + 1) * m].ravel().tolist())
                for j in range(len(block.partitions))]
    porder = sorted(range(len(block.partitions)), key=lambda j: (part_key[j], j))
    return Block(tuple(int(W[i]) for i in order), tuple(block.partitions[j] for j in porder))


def _key(B: Any) -> tuple[Any, ...]:
    arr = np.asarray(B)
    data = arr.tobytes() if arr.dtype != object else repr(arr.tolist()).encode()
    return (arr.shape, str(arr.dtype), data)


class BlockDecoder(Decoder):
    """Decode each block of a block-diagonal code from its own first ``n_b - s`` responders with the block's code.

    Parameters
    ----------
    blocks : list of Block
        The blocks (see :func:`blocks_of`); together they cover every worker.
    subcodes : list of GradientCode or None
        Block ``b``'s code (``B_b`` with ``s`` stragglers, ``k_b`` partitions, the same ``m``); its default decoder
        decodes the block. None for blocks without partitions.
    name : str, default "blocks"
        The decoder's name.

    Examples
    --------
    >>> import gradcodes as gc
    >>> code = gc.stable_binary(6, 2)
    >>> code.default_decoder, sorted(gc.blocks_of(code)[0].workers)
    ('blocks', [0, 1, 2])
    """

    description = "per block: the block code's decoder on its first n_b - s responders"

    def __init__(self, blocks: list[Block], subcodes: list[GradientCode | None], name: str = "blocks") -> None:
        if len(blocks) != len(subcodes):
            raise GradcodesValueError("blocks and subcodes must have the same length")
        self.blocks = list(blocks)
        self.subcodes = list(subcodes)
        self.name = name

    def matrices(self, code: LinearCode, mask: np.ndarray) -> Any:
        b = mask.shape[0]
        s = getattr(code, "s", 0)
        dtype = object if code.exact else code._entry_dtype()
        out = np.zeros((b, code.m, code.n), dtype=dtype)
        if code.exact:
            out.fill(Fraction(0))
        for block, sub in zip(self.blocks, self.subcodes, strict=True):
            if sub is None or not block.workers:
                continue
            W = np.asarray(block.workers, dtype=np.int64)
            mb = mask[:, W].copy()
            keep = max(W.size - s, 0)
            rank = np.cumsum(mb, axis=1)
            mb &= rank <= keep                         # the first n_b - s responders of the block
            A = sub.decoding_matrices(mb)
            out[:, :, W] = A
        return out

    # ------------------------------------------------------------------ the proof by blocks
    def verify_by_blocks(self, code: GradientCode, **options: Any) -> VerifyReport:
        """:func:`gradcodes.verify` for a code decoded by this decoder (the module docstring's theorem).

        Each distinct block is verified once and the reports are combined; when ``code.B`` is not exactly this
        decoder's blocks the decoder is checked set by set instead (a note in the report says so).

        Parameters
        ----------
        code : GradientCode
            The code this decoder decodes.
        **options
            The options of :func:`gradcodes.verify` (``dtype``, ``rtol``, ``limit``, ...), passed to every
            block's verification; ``decoder`` and ``field`` are ignored.

        Returns
        -------
        VerifyReport
            A :class:`~gradcodes.BlockVerifyReport` with one entry per block for a proof by blocks, else the
            report of the set-by-set check.

        Examples
        --------
        >>> import gradcodes as gc
        >>> code = gc.stable_binary(6, 2)                         # two identical blocks of 3 workers
        >>> report = code.decoders["blocks"].verify_by_blocks(code)
        >>> report.verdict, [b["same_as"] for b in report.blocks]  # the second block is the first one again
        ('ok', [None, 0])
        """
        return verify_blocks(code, self, **options)


@dataclass(repr=False)
class BlockVerifyReport(VerifyReport):
    """A :class:`~gradcodes.VerifyReport` assembled from the blocks' reports (proof by blocks).

    ``blocks`` lists one dict per block: ``workers``, ``partitions``, ``same_as`` (index of the identical block
    checked instead, or None) and ``report`` (its :class:`~gradcodes.VerifyReport`, None without partitions).
    The worst residual, cancellation and error estimate are the bounds of the proof by blocks (docs/stable_codes.md,
    "Proof by blocks"), reached at the reported responder sets up to the rounding of the bound. The other
    attributes are those of :class:`~gradcodes.VerifyReport`, for the whole code.

    Attributes
    ----------
    blocks : list of dict
        One entry per block of the code's matrix, as above.

    Examples
    --------
    >>> import gradcodes as gc
    >>> report = gc.verify(gc.stable_binary(6, 2))             # two blocks of 3 workers
    >>> bool(report), [b["workers"] for b in report.blocks]
    (True, [(0, 1, 2), (3, 4, 5)])
    """

    blocks: list[dict[str, Any]] = field(default_factory=list)

    def __str__(self) -> str:
        lines = [super().__str__()]
        for i, blk in enumerate(self.blocks):
            W = blk["workers"]
            head = f"  block {i:<3} {len(W)} workers [{W[0] if W else '-'}..{W[-1] if W else '-'}], " \
                   f"{len(blk['partitions'])} partitions: "
            rep = blk["report"]
            if rep is None:
                lines.append(head + "no partitions (nothing to decode)")
            elif blk["same_as"] is not None:
                lines.append(head + f"identical to block {blk['same_as']}")
            else:
                lines.append(head + f"{rep.verdict}, {rep.patterns_checked:,} of {rep.patterns_total:,} sets, "
                             f"error estimate {rep.error_estimate:.2g}")
        return "\n".join(lines)


def by_blocks(code: GradientCode) -> GradientCode:
    """The same code decoded block by block (:class:`BlockDecoder`), so that :func:`gradcodes.verify` proves it
    block by block; each block keeps the original code's generic default decoder.

    Parameters
    ----------
    code : GradientCode
        A code whose matrix has several blocks (connected components, :func:`blocks_of`).

    Returns
    -------
    GradientCode
        The same matrix, ``s`` and tolerance, decoded by a :class:`BlockDecoder`.

    Raises
    ------
    GradcodesTypeError
        If ``code`` is not a :class:`GradientCode`.
    GradcodesValueError
        If a block has at most ``s`` workers (``s`` stragglers could silence it).

    Examples
    --------
    >>> import numpy as np, gradcodes as gc
    >>> B = np.kron(np.eye(2), gc.cyclic_repetition(5, 2, rng=0).B)      # two copies of a (5, 2) code
    >>> code = by_blocks(gc.GradientCode(B, s=2))
    >>> report = gc.verify(code)
    >>> bool(report), report.patterns_checked, report.patterns_total         # one block checked: C(5, 2) sets
    (True, 10, 45)
    """
    if not isinstance(code, GradientCode):
        raise GradcodesTypeError(f"by_blocks() takes a GradientCode, got {type(code).__name__}")
    blocks = blocks_of(code)
    subs: list[GradientCode | None] = []
    seen: dict[tuple[Any, ...], GradientCode] = {}
    for blk in list(blocks):
        if not blk.partitions or not blk.workers:
            subs.append(None)
            continue
        if len(blk.workers) <= code.s:
            raise GradcodesValueError(
                f"block of workers {list(blk.workers)} has {len(blk.workers)} <= s={code.s} workers: "
                f"{code.s} stragglers can silence it, so the code recovers from no such set")
        blk = canonical(code, blk)
        blocks[len(subs)] = blk
        Bb = _sub_matrix(code, blk)
        key = _key(Bb)
        if key not in seen:
            seen[key] = GradientCode(Bb, code.s, m=code.m, rtol=code.rtol, field=code.field,
                                     name=f"{code.name}[block]")
        subs.append(seen[key])
    return GradientCode(code.B, code.s, m=code.m, rtol=code.rtol, field=code.field, name=code.name,
                        family=code.family, params=code.params, decoders=[BlockDecoder(blocks, subs)],
                        default_decoder="blocks")


def is_proof(report: VerifyReport) -> bool:
    """True when a :func:`gradcodes.verify` report is a proof: no failure and every set checked (exhaustive), or a
    decoder's theorem, or a proof by blocks."""
    if not bool(report) or report.n_failures:
        return False
    if isinstance(report, BlockVerifyReport):
        return True                                   # exact only when every block is a proof
    return bool(report.exhaustive and not report.stopped_early) or bool(getattr(report, "theorem", None))


class _Direct(Decoder):
    """The same decoding matrices without the proof by blocks (for a matrix that does not match the blocks)."""

    def __init__(self, dec: Decoder) -> None:
        self.dec, self.name, self.description = dec, dec.name, dec.description

    def matrices(self, code: LinearCode, mask: np.ndarray) -> Any:
        return self.dec.matrices(code, mask)


def _matches(code: GradientCode, dec: BlockDecoder) -> bool:
    """``code.B`` is exactly the blocks' matrices at their positions and zero elsewhere."""
    if code.exact:
        return False
    if code.sparse:
        return _matches_sparse(code, dec)
    seen = np.zeros(np.shape(code.B), dtype=bool)
    for blk, sub in zip(dec.blocks, dec.subcodes, strict=True):
        W = np.asarray(blk.workers, dtype=np.int64)
        if sub is None or not blk.partitions:
            continue
        cols = blk.columns(code.m)
        if sub.m != code.m or sub.s != code.s or not np.array_equal(code.B[np.ix_(W, cols)], sub.B):
            return False
        seen[np.ix_(W, cols)] = True
    return not np.any(np.asarray(code.B)[~seen] != 0)


def _matches_sparse(code: GradientCode, dec: BlockDecoder) -> bool:
    """:func:`_matches` for a code stored sparse: each block's rows and columns hold exactly the block's matrix, and
    the blocks' non-zeros account for all of ``B``'s (so nothing lies outside them); cost O(nnz)."""
    S = code._scipy_B()
    total = 0
    for blk, sub in zip(dec.blocks, dec.subcodes, strict=True):
        if sub is None or not blk.partitions:
            continue
        W = np.asarray(blk.workers, dtype=np.int64)
        cols = blk.columns(code.m)
        if sub.m != code.m or sub.s != code.s:
            return False
        if W.size and W[-1] - W[0] + 1 == W.size and np.all(np.diff(W) == 1):
            rows = S[int(W[0]):int(W[-1]) + 1]
        else:
            rows = S[W]
        Bb = rows[:, cols]
        if not np.array_equal(Bb.toarray(), np.asarray(sub.B)):
            return False
        total += int(Bb.count_nonzero())
    return total == code.nnz


def _repetition_report(sub: GradientCode, dtype: Any = np.float64) -> BlockVerifyReport | None:
    """A repetition block (every worker stores all the block's partitions, 0/1, ``m = 1``) decoded by its first
    responder with weight 1 needs no enumeration: any ``s <= n_b - 1`` stragglers leave a first responder, and
    ``e_i B_b = 1`` exactly (residual 0, cancellation factor 1; Tandon et al. 2017, fractional repetition)."""
    from .._core.group_decoder import GroupDecoder
    from .bounds import min_load

    dec = sub.decoders[sub.default_decoder]
    B = np.asarray(sub.B)
    if (sub.exact or sub.m != 1 or not isinstance(dec, GroupDecoder) or dec.mode != "first"
            or dec.bounds.tolist() != [0, sub.n] or not np.all(B == 1)):
        return None
    from .._core.numerics import error_estimate

    F = tuple(range(sub.s, sub.n))
    est = float(error_estimate(1.0, 0.0, dtype, 1 + sub.k))    # one message of k_b partials, no decode rounding
    return BlockVerifyReport(
        name=sub.name, n=sub.n, s=sub.s, k=sub.k, m=1, field=sub.field, decoder=dec.name, exact=True,
        exhaustive=False, patterns_checked=0, patterns_total=math.comb(sub.n, sub.s), strategies={},
        worst_residual=0.0, worst_responders=F, worst_cancellation=1.0, worst_cancellation_responders=F,
        error_estimate=est, failures=[], n_failures=0, load=sub.k, average_load=Fraction(sub.k),
        load_lower_bound=min_load(sub.n, sub.s, 1, sub.k), meets_lower_bound=False, rtol=sub.rtol, seconds=0.0,
        dtype=str(np.dtype(dtype)), worst_residual_bound=0.0, error_bound=est,
        notes=["repetition block: every s stragglers leave a first responder (weight 1, residual 0, cancellation 1)"])


def _confirm_failures(code: GradientCode, dec: BlockDecoder, lifted: list[tuple[int, ...]], rtol: float,
                      dtype: np.dtype) -> list[tuple[int, ...]]:
    """The responder sets of ``lifted`` that the whole code's decode refuses on every machine (the acceptance rule
    on the block decoder's matrix of the whole code)."""
    from .._core.numerics import FAILS
    from .verifier import _Tracker

    tracker = _Tracker(code, dec, rtol, dtype)
    S = np.array([[i for i in range(code.n) if i not in set(F)] for F in lifted], dtype=np.int64)
    verdict = tracker.evaluate(S.reshape(len(lifted), code.s)).verdict
    return [F for F, v in zip(lifted, verdict, strict=True) if v == FAILS]


def _verify_distinct(code: GradientCode, todo: list[tuple[int, GradientCode]], rows: list[dict[str, Any]],
                     options: dict[str, Any], notes: list[str]) -> None:
    """Verify the distinct blocks ``todo`` (``(row, block code)``) under one budget and one clock; each report goes
    to ``rows[row]["report"]``.

    The budget is the whole code's, shared by the blocks in their order: ``limit`` (the most sets enumerated, all
    blocks together), the default budget (:data:`gradcodes._verify.cost.DEFAULT_SECONDS` of the cost model's
    predicted time, all blocks together; a block no larger than its sampled check is always enumerated, as a flat
    code is) or ``time_budget`` (wall-clock seconds since the start, what is left going to the next block). A
    block that does not fit what is left is sampled and searched, not enumerated: the report is then unproven and
    says which. Progress (``progress``) is one clock over the sets of every enumerated block."""
    from .cost import DEFAULT_SECONDS, flat_cost_us
    from .engine import Clock, shared_clock
    from .verifier import verify

    options = dict(options)
    limit, time_budget = options.pop("limit", None), options.pop("time_budget", None)
    samples, search = int(options.get("samples", 2000)), bool(options.get("search", True))
    s = code.s
    totals = [math.comb(sub.n, s) for _, sub in todo]
    whole = sum(totals)
    plan: list[bool] = []                 # enumerate the block (limit / default budget; unused with time_budget)
    left_sets, left_seconds = limit, DEFAULT_SECONDS
    for (i, sub), total in zip(todo, totals, strict=True):
        if limit is not None:
            fits = total <= left_sets
            left_sets -= total if fits else 0
            why = f"what is left of limit = {limit:,} ({left_sets:,} sets after the blocks before it)"
        else:
            seconds = total * flat_cost_us(sub, sub._decoder(None)) * 1e-6
            fits = total <= sub.n + samples + (2000 if search else 0) or seconds <= left_seconds
            left_seconds = max(left_seconds - (seconds if fits else 0.0), 0.0)
            why = (f"what is left of the default budget (about {left_seconds:.2g} of {DEFAULT_SECONDS:g} s of one "
                   f"core, shared by the distinct blocks): about {seconds:.3g} s")
        plan.append(fits)
        if time_budget is None and not fits:
            notes.append(f"block {i} ({sub.n} workers): its {total:,} sets exceed {why}; sampled and searched, not "
                         f"enumerated")
    if time_budget is None and not all(plan):
        notes.append(f"pass limit={whole} (every distinct block: {whole:,} sets) or time_budget= seconds for a full "
                     f"check")
    clock_total = whole if time_budget is not None else sum(t for t, f in zip(totals, plan, strict=True) if f)
    start = time.perf_counter()
    ckpt = options.get("checkpoint")
    with shared_clock(Clock(max(clock_total, 1), options.get("progress"), f"verify {code.name} (blocks)")):
        for ((i, sub), total, fits) in zip(todo, totals, plan, strict=True):
            sub_options = dict(options)
            if ckpt is not None:                           # one checkpoint file per distinct block
                sub_options["checkpoint"] = f"{os.fspath(ckpt)}.block{i}"
            if time_budget is not None:
                sub_options["time_budget"] = max(0.0, time_budget - (time.perf_counter() - start))
            else:
                sub_options["limit"] = total if fits else 0
            rows[i]["report"] = verify(sub, **sub_options)


def verify_blocks(code: GradientCode, dec: BlockDecoder, **options: Any) -> VerifyReport:
    """Proof by blocks (module docstring): verify each distinct block once and combine the reports. When
    ``code.B`` is not exactly the decoder's blocks (or the field is exact), the decoder is checked set by set."""
    from .._core.numerics import CANC_ALLOWANCE, error_estimate, tolerance
    from .bounds import meets_min_load, min_load
    from .verifier import verify

    if not _matches(code, dec):
        options.pop("decoder", None)
        rep = verify(code, decoder=_Direct(dec), **options)
        rep.notes.append("the matrix is not the block decoder's blocks: checked set by set, no proof by blocks")
        return rep
    start = time.perf_counter()
    n, s, k, m = code.n, code.s, code.k, code.m
    dtype = np.dtype(options.get("dtype", np.float64))
    rtol = tolerance(code.rtol, dtype) if options.get("rtol") is None else float(options["rtol"])
    options = {key: v for key, v in options.items() if key not in ("decoder", "field")}
    options["rtol"] = rtol
    by_id: dict[int, int] = {}
    rows: list[dict[str, Any]] = []
    reports: list[tuple[Block, VerifyReport]] = []
    failures: list[tuple[int, ...]] = []
    notes: list[str] = []
    dead: Block | None = None
    covered: set[int] = set()
    todo: list[tuple[int, GradientCode]] = []             # the distinct blocks to verify: (row, block code)
    for i, (blk, sub) in enumerate(zip(dec.blocks, dec.subcodes, strict=True)):
        covered.update(blk.partitions)
        row: dict[str, Any] = {"workers": blk.workers, "partitions": blk.partitions, "same_as": None,
                               "report": None}
        rows.append(row)
        if sub is None or not blk.partitions:
            continue
        if len(blk.workers) <= s:
            dead = blk
            continue
        if id(sub) in by_id:
            row["same_as"] = by_id[id(sub)]
        else:
            by_id[id(sub)] = i
            row["report"] = _repetition_report(sub, dtype)
            if row["report"] is None:
                todo.append((i, sub))
    _verify_distinct(code, todo, rows, options, notes)
    for blk, row in zip(dec.blocks, rows, strict=True):
        if row["same_as"] is not None:
            row["report"] = rows[row["same_as"]]["report"]
        if row["report"] is not None:
            reports.append((blk, row["report"]))
    missing = sorted(set(range(k)) - covered)
    everyone = tuple(range(n))
    if missing:
        failures.append(everyone)
        notes.append(f"partitions {missing[:10]} are in no block of the decoder: no responder set recovers them")
    if dead is not None:
        S = set(dead.workers)
        S.update(i for i in range(n) if i not in S and len(S) < s)
        failures.append(tuple(i for i in range(n) if i not in S))
        notes.append(f"block of workers {list(dead.workers)} has at most s={s} workers: straggling together they "
                     f"leave its partitions undecoded")

    def lift(blk: Block, F: tuple[int, ...] | None) -> tuple[int, ...] | None:
        if F is None:
            return None
        inside = {blk.workers[j] for j in F}
        members = set(blk.workers)
        return tuple(i for i in range(n) if i not in members or i in inside)

    checked = sum(r["report"].patterns_checked for r in rows if r["report"] is not None and r["same_as"] is None)
    n_fail = len(failures)
    # a block's failing set fails the whole code only if the whole decode of the lifted set fails too: judge each by
    # the full rule
    lifted = [F for blk, rep in reports for F in (lift(blk, F) for F in rep.failures[:10]) if F is not None]
    if lifted:
        confirmed = _confirm_failures(code, dec, lifted, rtol, dtype)
        if len(confirmed) < len(lifted):
            notes.append(f"{len(lifted) - len(confirmed)} failing sets of single blocks are not failures of the "
                         f"whole code's decode: not a proof either")
        failures.extend(confirmed)
        n_fail += len(confirmed)
    proven = not failures and n_fail == 0 and all(is_proof(rep) for _, rep in reports)
    # the whole decode: terms = the non-zeros of the block decoder's row (n_b - s per block) plus the load
    terms = sum(len(blk.workers) - s for blk, _ in reports) + int(code.loads.max())
    worst_res = max((rep.worst_residual for _, rep in reports), default=0.0)
    res_hi = max((max(rep.worst_residual_bound, rep.worst_residual) for _, rep in reports), default=0.0)
    res_lo = max((rep.worst_residual if rep.worst_residual_lower is None else rep.worst_residual_lower
                  for _, rep in reports), default=0.0)
    if missing or dead is not None:
        worst_res = res_hi = res_lo = max(worst_res, 1.0)        # a whole block of the target undecoded
    res_pair = max(reports, key=lambda br: br[1].worst_residual) if reports else None
    cancs = [rep.worst_cancellation for blk, rep in reports if np.isfinite(rep.worst_cancellation)]
    canc_bound = float(max(cancs)) if cancs else float("nan")
    if code.exact:
        bound = upper = 0.0
    else:
        # the rule at the blocks' worst values; the upper end with the residual's slack (in res_hi) and eta
        c = canc_bound if cancs else 0.0
        bound = float(error_estimate(c, worst_res, dtype, terms))
        upper = float(error_estimate(c * (1 + CANC_ALLOWANCE), res_hi, dtype, terms))
    if proven and not code.exact and not upper <= rtol:
        proven = False
        notes.append(f"combined bound (c_t max_b canc_b)(1 + eta) + max_b (res_b + delta_b) = "
                     f"{upper:.3g} > rtol={rtol:g} ({dtype}; the acceptance rule)")
    unproven = [i for i, r in enumerate(rows) if r["report"] is not None and r["same_as"] is None
                and not is_proof(r["report"]) and r["report"].n_failures == 0]
    distinct = sum(1 for r in rows if r["report"] is not None and r["same_as"] is None)
    notes.insert(0, f"proof by blocks: {len(rows)} blocks, {distinct} distinct checked "
                    f"(theorem: gradcodes.by_blocks); error bound = c_t max_b canc_b + max_b res_b")
    if unproven:
        notes.append(f"blocks {unproven} were searched, not enumerated: their worst case is not proven")
    canc_blk = max(reports, key=lambda br: np.nan_to_num(br[1].worst_cancellation, nan=-1.0)) if reports else None
    loads = code.loads
    kwargs: dict[str, Any] = dict(
        name=code.name, n=n, s=s, k=k, m=m, field=code.field, decoder=dec.name, exact=proven, exhaustive=False,
        patterns_checked=checked, patterns_total=math.comb(n, s),
        strategies={"blocks": checked}, worst_residual=worst_res,
        worst_responders=lift(res_pair[0], res_pair[1].worst_responders) if res_pair else None,
        worst_cancellation=canc_bound,
        worst_cancellation_responders=(lift(canc_blk[0], canc_blk[1].worst_cancellation_responders)
                                       if canc_blk else None),
        error_estimate=bound, failures=failures[:10], n_failures=n_fail, load=int(loads.max()),
        average_load=Fraction(int(loads.sum()), n),
        load_lower_bound=min_load(n, s, m, k) if s + m <= n else Fraction(k * (s + m), n),
        meets_lower_bound=s + m <= n and meets_min_load(int(loads.max()), n, s, m, k), rtol=rtol,
        dtype=str(dtype), worst_residual_bound=0.0 if code.exact else res_hi,
        worst_residual_lower=None if code.exact else res_lo, error_bound=upper,
        n_borderline=sum(rep.n_borderline for _, rep in reports),
        seconds=time.perf_counter() - start, stopped_early=any(rep.stopped_early for _, rep in reports),
        notes=notes, blocks=rows)
    names = {f.name for f in fields(BlockVerifyReport)}
    if "theorem" in names and proven:
        kwargs["theorem"] = ("proof by blocks (gradcodes.by_blocks): every distinct block proven, combined bound "
                             "<= rtol")
    return BlockVerifyReport(**{key: v for key, v in kwargs.items() if key in names})
