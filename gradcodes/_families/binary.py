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

**recommend()** (:mod:`gradcodes._families.recommend`, with its candidate table ``CANDIDATES``, ``Candidate`` and
``add_candidate``) returns the lowest-load code within a budget that is *proven* to meet a tolerance, with the
reasoning attached as ``code.recommendation``.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .._base.registry import Scheme, register
from .._base.validate import check_choice, check_entries, check_int, check_ns, check_size
from .._core.code import GradientCode
from .._core.decoders import Decoder
from .._core.sparse import csr_from_rows, owned, use_sparse
from .._io.files import REBUILDERS
from .._verify.blocks import Block, BlockDecoder
from .repetition import GroupDecoder

__all__ = ["stable_binary", "stable_binary_load", "grouped_mds", "GroupedDecoder"]


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
    sparse = field == "real" and use_sparse(n, n if k is None else k)
    if sparse:
        check_size("the rows and columns of the encoding matrix (each holds a non-zero)",
                   max(n, n if k is None else int(k)), "entries")
    else:
        check_entries(n, n if k is None else k, exact=field == "rational")
    q = n // (s + 1)
    k = n if k is None else check_int("k", k, q)
    wb = _split(n, q)
    pb = _split(k, q)
    B: Any
    if sparse:                     # the non-zeros only: group g's rows store partitions pb[g]..pb[g+1]-1
        gsize, width = np.diff(wb), np.diff(pb)
        check_size(f"the non-zeros of the encoding matrix ({n:,} x {k:,})", int(gsize @ width), "entries")
        w_row = np.repeat(width, gsize)
        indptr = np.concatenate([[0], np.cumsum(w_row)]).astype(np.int64)
        start = np.repeat(pb[:-1], gsize)
        indices = np.repeat(start - indptr[:-1], w_row) + np.arange(int(indptr[-1]))
        B = csr_from_rows(indptr, indices, np.ones(indices.size), (n, k))
    else:
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


REBUILDERS.update(stable_binary=stable_binary)
register(Scheme("stable_binary", stable_binary,
                "generalized fractional repetition: 0/1 decoding for every (n, s), load s+1+ceil(r/q)",
                tour=({"n": 13, "s": 3}, {"n": 101, "s": 9}, {"n": 500, "s": 21})))


# ----------------------------------------------------------------------------------------------- grouped MDS
class GroupedDecoder(BlockDecoder):
    """Decode each group's block with its own sub-code's default decoder: a
    :class:`~gradcodes._verify.blocks.BlockDecoder`
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
    sparse = use_sparse(n, n)
    if sparse:
        check_size(f"the non-zeros of the encoding matrix ({n:,} x {n:,}), at least n (s + 1)", n * (s + 1),
                   "entries")
    else:
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
    if sparse and any(np.any(np.signbit(np.asarray(sub.B)[np.asarray(sub.B) == 0].view(np.float64)))
                      for sub in made.values()):
        sparse = False             # a -0.0 inside a block: only the dense matrix holds it bit for bit
        check_entries(n, n)
    B: Any
    if sparse:                     # block diagonal: the blocks' non-zeros only (gradcodes._core.sparse)
        import scipy.sparse

        B = scipy.sparse.block_diag([scipy.sparse.csr_array(sub.B) for sub in subs], format="csr")
        B = owned(B.astype(np.float64 if real else np.complex128))
        check_size("the non-zeros of the encoding matrix", int(B.nnz), "entries")
    else:
        B = np.zeros((n, n), dtype=np.float64 if real else np.complex128)
        for g, sub in enumerate(subs):
            lo, hi = bounds[g], bounds[g + 1]
            B[lo:hi, lo:hi] = sub.B
    name = "grouped_mds" if real else "grouped_mds[complex]"
    return GradientCode(B, s, name=name, family="grouped_mds", params={"n": n, "s": s},
                        decoders=[GroupedDecoder(bounds, subs)], default_decoder="grouped")


REBUILDERS.update(grouped_mds=grouped_mds)
register(Scheme("grouped_mds", grouped_mds,
                "fractional-repetition groups with small cyclic-MDS blocks inside: load s+1 (s+2), any (n, s)",
                tour=({"n": 23, "s": 4}, {"n": 200, "s": 20})))
