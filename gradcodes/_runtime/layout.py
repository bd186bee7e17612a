"""How a code is laid out on ranks (any transport): who computes what, who receives from whom, how messages combine.

* **Flat (master--worker)**, any :class:`~gradcodes.LinearCode` with ``n`` workers: rank 0 is the master, rank
  ``i + 1`` is worker ``i`` and sends ``y_i = sum_{j,u} B[i, j m + u] g_j^{(u)}`` (length ``ceil(length/m)``; Tandon
  et al. 2017, Section 2; Ye & Abbe 2018, Section 2 for ``m > 1``). The master combines the responders ``F`` with
  the code's decoding matrix ``A_F`` (``m x n``): block ``u`` of the gradient is ``sum_{i in F} A_F[u, i] y_i``.
* **Tree (CodedReduce**, Reisizadeh et al., Section 3), a :class:`~gradcodes.CodedReduceCode` on the
  ``(b, L)``-regular tree (``b = branching``): rank 0 is the root, rank ``v + 1`` is worker ``v`` (breadth-first
  order), so the parent of rank ``r >= 1`` is rank ``(r - 1) // b`` and the children of rank ``r`` are ranks
  ``r b + 1 .. r b + b``. Every worker sends its own message plus the inner-code decode of its first ``b - s``
  children; the root decodes its children.

**Tree message format** (MPI and torch runtimes). A tree parent's message to its own parent is its payload (its
own message plus the decode of its children; ``ceil(length/m)`` entries, after the iteration entry on torch)
followed by a *tail* of :meth:`Layout.tail` entries in the messages' dtype, one per rank below it in
:meth:`Layout.preorder` order: ``1.0`` when that worker's message is part of the sum sent up (it is in its parent's
decoding set, and so is every ancestor up to the sender), ``0.0`` otherwise. Child ``i``'s block of the tail is its
own flag followed by its own tail, so a parent builds its tail with a few slice copies; a leaf sends no tail. The
master reads the tails of the children it used and rebuilds the pattern it decoded for :class:`TreeCheck` (the
whole tree's acceptance rule): fixed sizes, preallocated buffers, no pickling.
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass
from typing import Any

import numpy as np

from .. import CodedReduceCode, DecodingError, LinearCode
from .._base.aliases import DTypeLike
from .._base.errors import GradcodesTypeError

__all__ = ["Layout", "layout_for", "TreeCheck", "write_tail"]


@dataclass(frozen=True)
class Layout:
    """The rank layout of a code.

    Attributes
    ----------
    kind : str
        ``"flat"`` or ``"tree"``.
    size : int
        Ranks needed (workers + 1).
    workers : int
        Number of workers.
    branching : int
        Children per parent (``n`` workers for flat, the tree's ``n`` for CodedReduce).

    Examples
    --------
    >>> import gradcodes as gc
    >>> from gradcodes.mpi import layout_for
    >>> layout = layout_for(gc.coded_reduce(2, 2, 1))
    >>> layout.kind, layout.size, layout.children(0)
    ('tree', 7, [1, 2])
    """

    kind: str
    size: int
    workers: int
    branching: int

    def parent(self, rank: int) -> int:
        """The rank a worker sends its messages to.

        Parameters
        ----------
        rank : int
            A worker's rank, ``1 <= rank <= workers``.

        Returns
        -------
        int
            0 (the master) on a flat layout, the tree parent's rank on a tree.

        Examples
        --------
        >>> import gradcodes as gc
        >>> from gradcodes.mpi import layout_for
        >>> tree = layout_for(gc.coded_reduce(2, 2, 1))          # master 0; ranks 1, 2; leaves 3..6
        >>> [tree.parent(r) for r in range(1, 7)]
        [0, 0, 1, 1, 2, 2]
        """
        return 0 if self.kind == "flat" else (rank - 1) // self.branching

    def children(self, rank: int) -> list[int]:
        """The ranks a node receives from (empty for a leaf).

        Parameters
        ----------
        rank : int
            A rank (0: the master).

        Returns
        -------
        list of int
            Its children's ranks, in order.

        Examples
        --------
        >>> import gradcodes as gc
        >>> from gradcodes.mpi import layout_for
        >>> tree = layout_for(gc.coded_reduce(2, 2, 1))          # master 0; ranks 1, 2; leaves 3..6
        >>> tree.children(0), tree.children(1), tree.children(3)
        ([1, 2], [3, 4], [])"""
        if self.kind == "flat":
            return list(range(1, self.size)) if rank == 0 else []
        lo = rank * self.branching + 1
        return list(range(lo, lo + self.branching)) if lo < self.size else []

    def preorder(self, rank: int) -> list[int]:
        """The ranks below ``rank`` in pre-order (each child, then the ranks below it, children in order); empty
        for a leaf and for a flat layout's workers.

        A tree parent's message ends with one flag per rank of this list (the *tail*, see the module's
        docstring): 1 where that worker's message went into the sum, 0 elsewhere.

        Parameters
        ----------
        rank : int
            A rank (0: the master).

        Returns
        -------
        list of int
            The ranks of its subtree, itself excluded.

        Examples
        --------
        >>> import gradcodes as gc
        >>> from gradcodes.mpi import layout_for
        >>> tree = layout_for(gc.coded_reduce(2, 2, 1))          # master 0; ranks 1, 2; leaves 3..6
        >>> tree.preorder(0), tree.preorder(1)
        ([1, 3, 4, 2, 5, 6], [3, 4])"""
        out: list[int] = []
        for c in self.children(rank) if self.kind == "tree" else []:
            out.append(c)
            out.extend(self.preorder(c))
        return out

    def tail(self, rank: int) -> int:
        """Entries after the payload of the messages ``rank`` sends (its *tail*, see the module's docstring): the
        number of ranks below it on a tree (0 for leaves, the master and flat layouts).

        Parameters
        ----------
        rank : int
            A rank.

        Returns
        -------
        int
            ``len(preorder(rank))`` for a tree's worker, else 0.

        Examples
        --------
        >>> import gradcodes as gc
        >>> from gradcodes.mpi import layout_for
        >>> tree = layout_for(gc.coded_reduce(2, 2, 1))          # master 0; ranks 1, 2; leaves 3..6
        >>> tree.tail(1), tree.tail(3)
        (2, 0)"""
        if self.kind != "tree" or rank == 0:
            return 0
        n, below, width = self.branching, 0, 1
        lo = rank
        while True:
            lo = lo * n + 1                              # the first rank of the next level below
            if lo >= self.size:
                return below
            width *= n
            below += width


def layout_for(code: LinearCode) -> Layout:
    """The :class:`Layout` of a code: a tree for CodedReduce, master--worker for every other code.

    Parameters
    ----------
    code : LinearCode
        The code the job runs.

    Returns
    -------
    Layout
        Its kind (``"flat"`` or ``"tree"``), the ranks the job needs (``size``, the master included) and the tree's
        parents and children.

    Raises
    ------
    GradcodesTypeError
        If ``code`` is not a gradcodes code, or is a :class:`~gradcodes.PartialStragglerCode` (a message per chunk:
        :class:`~gradcodes.mpi.PartialMaster`).

    Examples
    --------
    >>> import gradcodes as gc
    >>> from gradcodes.mpi import layout_for
    >>> layout_for(gc.cyclic_repetition(6, 2, rng=0))        # mpiexec -n 7
    Layout(kind='flat', size=7, workers=6, branching=6)
    >>> layout_for(gc.coded_reduce(2, 2, 1))
    Layout(kind='tree', size=7, workers=6, branching=2)
    """
    if isinstance(code, CodedReduceCode):
        return Layout("tree", code.N + 1, code.N, code.branching)
    if not isinstance(code, LinearCode):
        raise GradcodesTypeError(f"code must be a gradcodes code (LinearCode), got {type(code).__name__}")
    from .._families.partial_stragglers import PartialStragglerCode

    if isinstance(code, PartialStragglerCode):      # rows are messages, not workers
        raise GradcodesTypeError("code: a PartialStragglerCode sends a message per chunk; run it with "
                                 "gradcodes.mpi.PartialMaster and PartialWorker")
    return Layout("flat", code.n + 1, code.n, code.n)


def write_tail(out: Any, rows: Any, tails: Any) -> None:
    """Write a tree parent's tail (see the module's docstring) into ``out``: child ``i``'s block is its flag (1 for
    the children in ``rows``, the decoding set) followed by ``tails[i]``, the tail of child ``i``'s message
    (``tails`` of shape ``(children, Layout.tail(child))``; width 0 below the last level). Numpy arrays or torch
    tensors (slice assignments only)."""
    width = 1 + int(tails.shape[1])
    out[:] = 0
    for i in rows:
        out[i * width] = 1
        if width > 1:
            out[i * width + 1:(i + 1) * width] = tails[i]


#: Straggler patterns whose verdict a :class:`TreeCheck` keeps (least recently used out).
TREE_VERDICTS = 4096
#: A refusal: the message, the responders and the residual of the DecodingError to raise.
_Verdict = tuple[str, "list[int] | None", "float | None"]


class TreeCheck:
    """The master's whole-tree acceptance of a CodedReduce run (MPI and torch runtimes).

    Every parent accepts its own children's decode by the inner code's rule, but the composition of accepted
    decodes can still miss the tree's tolerance (the parents' decoding coefficients multiply along each path).
    Each iteration the master rebuilds the pattern it actually decoded (the workers whose messages went into
    the sum: its own decoding set and the flags every used child sent in its tail, see the module's docstring)
    and applies the rule of :meth:`gradcodes.CodedReduceCode.execute` and
    :meth:`~gradcodes.CodedReduceCode.decode` to it (``CodedReduceCode._accept_tree``: the flattened decoding
    vector of the pattern, its residual and cancellation, accepted in the messages' dtype), so the runtime
    refuses exactly the patterns ``execute`` refuses. The verdict is cached per pattern: a repeated pattern
    costs the mask's rebuild (a few slice assignments) and one dictionary lookup.

    Parameters
    ----------
    code : CodedReduceCode
    layout : Layout
        The code's tree layout.
    dtype : numpy dtype
        The messages' dtype (the tolerance is that dtype's).
    cache_size : int, default TREE_VERDICTS
    """

    def __init__(self, code: CodedReduceCode, layout: Layout, dtype: DTypeLike,
                 cache_size: int = TREE_VERDICTS) -> None:
        self.code = code
        self.dtype = np.dtype(dtype)
        kids = layout.children(0)
        self.kids = np.array([r - 1 for r in kids], dtype=np.int64)          # the master's children, as workers
        self.below = [np.array([r - 1 for r in layout.preorder(r0)], dtype=np.int64) for r0 in kids]
        self.tail = layout.tail(kids[0]) if kids else 0
        self.mask = np.zeros(code.N, dtype=bool)
        self._verdicts: OrderedDict[bytes, _Verdict | float] = OrderedDict()   # refusal, or the accepted bound
        self._size = int(cache_size)
        self.misses = 0                                                      # patterns checked (cache misses)

    def pattern(self, rows: list[int], tails: Any) -> np.ndarray:
        """The used-workers mask (N,) of an iteration: the master's children ``rows`` and, below each, the flags of
        its tail (``tails[i]``, the entries after child ``i``'s payload). A buffer reused by the next call."""
        mask = self.mask
        mask.fill(False)
        for i in rows:
            mask[self.kids[i]] = True
            if self.tail:
                mask[self.below[i]] = np.asarray(tails[i]) != 0
        return mask

    def check(self, rows: list[int], tails: Any, iteration: int | None = None) -> float:
        """The error bound of this iteration's pattern (see :meth:`pattern`) in the messages' dtype; raise
        :class:`~gradcodes.DecodingError` when it misses the tree's tolerance, naming the ranks used and not
        used."""
        mask = self.pattern(rows, tails)
        key = mask.tobytes()
        verdict: _Verdict | float
        if key in self._verdicts:
            self._verdicts.move_to_end(key)
            verdict = self._verdicts[key]
        else:
            self.misses += 1
            try:
                verdict = self.code._accept_tree(mask, self.dtype, sets=True)
            except DecodingError as exc:
                verdict = (self._message(mask, exc), exc.responders, exc.residual)
            self._verdicts[key] = verdict
            while len(self._verdicts) > self._size:
                self._verdicts.popitem(last=False)
        if not isinstance(verdict, float):
            where = "" if iteration is None else f"iteration {iteration}: "
            raise DecodingError(where + verdict[0], verdict[1], verdict[2])
        return verdict

    def _message(self, mask: np.ndarray, exc: DecodingError) -> str:
        used = np.flatnonzero(mask)
        unused = np.flatnonzero(~mask)
        return (f"the CodedReduce tree cannot decode this straggler pattern to its {self.dtype} tolerance: every "
                f"parent's decoding set was accepted, their composition is not; the sum came from ranks "
                f"{(used + 1).tolist()}, ranks {(unused + 1).tolist()} were not used (stragglers, below a "
                f"straggler, or not waited for); straggling children per parent "
                f"{self.code.pattern_text(mask)}; the whole tree's decode (as CodedReduceCode.execute) "
                f"refuses it: {exc}")
