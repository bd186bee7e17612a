"""The structure of a CodedReduce tree (Reisizadeh, Prakash, Pedarsani & Avestimehr): node addresses, levels,
parents and children, the allocation lists of CR.Allocate, and the straggler patterns of the tree.

``TreeStructureMixin`` holds the methods of :class:`~gradcodes.CodedReduceCode` that read only the tree's shape
(``branching``, ``L``, ``s``, ``N``, ``P``, ``r``) and the allocation lists; the decoding and CR.Execute stay with
the class in ``coded_reduce_code``. Nodes are addressed by tuples of child indices ``(t_1, ..., t_l)`` (the master
is ``()``); workers are numbered in breadth-first order: the children of parent ``t`` (``t = 0`` the master,
``t = i + 1`` worker ``i``) are workers ``t b .. t b + b - 1``, ``b = branching``.
"""

from __future__ import annotations

import itertools
import math
from fractions import Fraction
from typing import Any

import numpy as np

from .._base.aliases import RNGLike
from .._base.errors import GradcodesValueError
from .._base.validate import check_int, check_rng

__all__ = ["TreeStructureMixin"]


class TreeStructureMixin:
    """The tree-shape methods of :class:`~gradcodes.CodedReduceCode`: addresses, levels, parents, children,
    allocation lists and straggler patterns (the class sets the attributes below in its constructor)."""

    branching: int
    L: int
    s: int
    N: int
    P: int
    r: Fraction
    _lists: tuple[list[np.ndarray], list[np.ndarray]] | None

    # ------------------------------------------------------------------ structure
    @property
    def parents(self) -> int:
        """Number of parents (the master and the internal workers): ``(n^L - 1)/(n - 1)``."""
        return 1 + self.N - self.branching**self.L

    def node(self, worker: int) -> tuple[int, ...]:
        """The tuple address ``(t_1, ..., t_l)`` of a worker (breadth-first index).

        Parameters
        ----------
        worker : int
            A worker's breadth-first index, ``0 <= worker < n``.

        Returns
        -------
        tuple of int
            Child indices from the master down, one per level.

        Examples
        --------
        >>> import gradcodes as gc
        >>> code = gc.coded_reduce(2, 2, 1)      # workers 0, 1 at level 1; 2, 3 under 0; 4, 5 under 1
        >>> code.node(0), code.node(4)
        ((0,), (1, 0))
        """
        worker = check_int("worker", worker, 0, self.N - 1)
        n = self.branching
        path: list[int] = []
        p = worker + 1            # parent numbering: master = 0, worker i = i + 1
        while p > 0:
            path.append((p - 1) % n)
            p = (p - 1) // n
        return tuple(reversed(path))

    def worker(self, node: tuple[int, ...]) -> int:
        """The breadth-first index of the worker at address ``node``.

        Parameters
        ----------
        node : tuple of int
            An address ``(t_1, ..., t_l)``, ``1 <= l <= L``, each ``0 <= t < branching``.

        Returns
        -------
        int
            The worker's breadth-first index.

        Raises
        ------
        GradcodesValueError
            If ``node`` has not between 1 and ``L`` entries.

        Examples
        --------
        >>> import gradcodes as gc
        >>> code = gc.coded_reduce(2, 2, 1)      # workers 0, 1 at level 1; 2, 3 under 0; 4, 5 under 1
        >>> code.worker((1, 0))
        4
        """
        node = tuple(node)
        if not 1 <= len(node) <= self.L:
            raise GradcodesValueError(f"node must have between 1 and L={self.L} entries, got {node!r}")
        p = 0
        for t in node:
            t = check_int("node entry", t, 0, self.branching - 1)
            p = p * self.branching + t + 1
        return p - 1

    def level(self, worker: int) -> int:
        """The level (1..L) of a worker.

        Parameters
        ----------
        worker : int
            A worker's breadth-first index, ``0 <= worker < n``.

        Returns
        -------
        int
            ``len(node(worker))``.

        Examples
        --------
        >>> import gradcodes as gc
        >>> code = gc.coded_reduce(2, 2, 1)      # workers 0, 1 at level 1; 2, 3 under 0; 4, 5 under 1
        >>> [code.level(w) for w in range(code.n)]
        [1, 1, 2, 2, 2, 2]
        """
        return len(self.node(worker))

    def children(self, worker: int | None) -> np.ndarray:
        """The children of a worker (``None`` = the master); empty for a leaf.

        Parameters
        ----------
        worker : int or None
            A worker's index, or None for the master.

        Returns
        -------
        ndarray of int
            The children's indices.

        Examples
        --------
        >>> import gradcodes as gc
        >>> code = gc.coded_reduce(2, 2, 1)      # workers 0, 1 at level 1; 2, 3 under 0; 4, 5 under 1
        >>> code.children(None).tolist(), code.children(0).tolist(), code.children(2).tolist()
        ([0, 1], [2, 3], [])
        """
        p = 0 if worker is None else check_int("worker", worker, 0, self.N - 1) + 1
        if p >= self.parents:
            return np.zeros(0, dtype=np.int64)
        return np.arange(p * self.branching, (p + 1) * self.branching)

    def parent(self, worker: int) -> int | None:
        """The parent of a worker (``None`` for the master).

        Parameters
        ----------
        worker : int
            A worker's breadth-first index, ``0 <= worker < n``.

        Returns
        -------
        int or None
            The parent's index; None when the parent is the master.

        Examples
        --------
        >>> import gradcodes as gc
        >>> code = gc.coded_reduce(2, 2, 1)      # workers 0, 1 at level 1; 2, 3 under 0; 4, 5 under 1
        >>> code.parent(0), code.parent(5)
        (None, 1)
        """
        worker = check_int("worker", worker, 0, self.N - 1)
        p = worker // self.branching
        return None if p == 0 else p - 1

    def assigned(self, worker: int) -> list[tuple[int, Any]]:
        """The ordered list ``[(unit, coefficient), ...]`` CR.Allocate gives a worker.

        Parameters
        ----------
        worker : int
            A worker's breadth-first index, ``0 <= worker < n``.

        Returns
        -------
        list of (int, coefficient)
            The data units and their coefficients, in CR.Allocate's order.

        Raises
        ------
        GradcodesValueError
            If the code was built from a matrix (it has no allocation lists).

        Examples
        --------
        >>> import gradcodes as gc
        >>> code = gc.coded_reduce(2, 2, 1)      # workers 0, 1 at level 1; 2, 3 under 0; 4, 5 under 1
        >>> [unit for unit, _ in code.assigned(2)]
        [2, 3]
        """
        worker = check_int("worker", worker, 0, self.N - 1)
        if self._lists is None:
            raise GradcodesValueError("this code was built from a matrix; it has no allocation lists")
        u, c = self._lists[0][worker], self._lists[1][worker]
        return [(int(a), b) for a, b in zip(u, c, strict=True)]

    def own(self, worker: int) -> list[tuple[int, Any]]:
        """The part of :meth:`assigned` the worker computes itself (its first ``r P`` entries).

        Parameters
        ----------
        worker : int
            A worker's breadth-first index, ``0 <= worker < n``.

        Returns
        -------
        list of (int, coefficient)
            The first ``r P`` entries of :meth:`assigned`.

        Examples
        --------
        >>> import gradcodes as gc
        >>> code = gc.coded_reduce(2, 2, 1)      # workers 0, 1 at level 1; 2, 3 under 0; 4, 5 under 1
        >>> [unit for unit, _ in code.own(2)]
        [2, 3]
        """
        lst = self.assigned(worker)
        return lst[: int(self.r * self.P)]

    # ------------------------------------------------------------------ patterns
    def patterns_total(self) -> int:
        """Number of straggler patterns: every parent picks at most ``s`` straggling children.

        Choices below a straggling parent are counted too (they do not change the outcome)
        (the n=3, L=2, s=1 tree has ``4^4 = 256``).

        Returns
        -------
        int
            ``(sum_{j <= s} C(n, j))^parents``, with ``n`` the branching factor.

        Examples
        --------
        >>> import gradcodes as gc
        >>> gc.coded_reduce(2, 2, 1).patterns_total(), gc.coded_reduce(3, 2, 1).patterns_total()   # 3^3, 4^4
        (27, 256)
        """
        per = sum(math.comb(self.branching, j) for j in range(self.s + 1))
        return per**self.parents

    def straggler_options(self) -> np.ndarray:
        """All straggler sets of one parent's children (size <= s) as bool rows (True = straggler).

        Raises ValueError beyond 10^6 sets (no dense C(n, s)-sized tables; use :meth:`random_patterns`).

        Returns
        -------
        ndarray of bool, shape (sets, branching)
            Every straggler set of size at most ``s``, the empty one first.

        Raises
        ------
        GradcodesValueError
            If there are more than ``10**6`` sets.

        Examples
        --------
        >>> import gradcodes as gc
        >>> code = gc.coded_reduce(2, 2, 1)      # workers 0, 1 at level 1; 2, 3 under 0; 4, 5 under 1
        >>> code.straggler_options().astype(int).tolist()
        [[0, 0], [1, 0], [0, 1]]
        """
        n = self.branching
        count = sum(math.comb(n, j) for j in range(self.s + 1))
        if count > 1_000_000:
            raise GradcodesValueError(f"straggler_options: {count:,} straggler sets of size <= s={self.s} among n={n} "
                                      "children (more than 10^6); use random_patterns")
        rows = []
        for j in range(self.s + 1):
            for S in itertools.combinations(range(n), j):
                row = np.zeros(n, dtype=bool)
                row[list(S)] = True
                rows.append(row)
        return np.array(rows)

    def random_patterns(self, count: int, rng: RNGLike = None) -> np.ndarray:
        """``count`` random responder masks (count, N): each parent picks a straggler set uniformly among the
        sets of size at most ``s`` (no table of sets is built). ``rng``: random state (None, an int, a
        SeedSequence or a Generator).

        Parameters
        ----------
        count : int
            Number of masks.
        rng : None, int, SeedSequence or Generator, optional
            Random state (SPEC 7).

        Returns
        -------
        ndarray of bool, shape (count, N)
            True for a responding worker.

        Examples
        --------
        >>> import gradcodes as gc
        >>> code = gc.coded_reduce(2, 2, 1)      # workers 0, 1 at level 1; 2, 3 under 0; 4, 5 under 1
        >>> masks = code.random_patterns(4, rng=0)
        >>> masks.shape, bool((masks.sum(axis=1) >= code.n - 3).all())     # at most s = 1 per parent (3 parents)
        ((4, 6), True)
        """
        count = check_int("count", count, 0)
        rng = check_rng(rng)
        n = self.branching
        sizes = np.arange(self.s + 1)
        w = np.array([math.comb(n, j) for j in sizes], dtype=float)
        j = rng.choice(sizes, size=(count, self.parents), p=w / w.sum())
        keys = rng.random((count, self.parents, n))
        ranks = np.argsort(np.argsort(keys, axis=2), axis=2)
        strag = ranks < j[:, :, None]
        return ~strag.reshape(count, self.N)
