"""Assignments of chunks to workers and the order in which each worker processes them, for the partial-straggler
protocol of Ramamoorthy, Meng & Girimaji (NeurIPS 2024, arXiv 2405.19509): :func:`cyclic_assignment`,
:func:`chunk_order` (the natural cyclic order, or one built from perfect matchings for regular square assignments)
and :func:`q_max` (the least number of processed chunks after which every progress state decodes, the paper's measure
of an order's quality).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .._base.errors import GradcodesTypeError, GradcodesValueError
from .._base.validate import check_choice, check_int

__all__ = ["cyclic_assignment", "chunk_order", "q_max"]


# ----------------------------------------------------------------------------------------------------------
# assignments and orders


def cyclic_assignment(n: int, load: int) -> np.ndarray:
    """The cyclic assignment of Tandon et al. (2017): worker ``i`` holds chunks ``i, ..., i+load-1 mod n``.

    Parameters
    ----------
    n : int >= 1
        Workers (and chunks).
    load : int in [1, n]
        Chunks per worker (= holders per chunk).

    Returns
    -------
    numpy.ndarray of bool, shape (n, n)

    Examples
    --------
    >>> cyclic_assignment(3, 2).astype(int)
    array([[1, 1, 0],
           [0, 1, 1],
           [1, 0, 1]])
    """
    n = check_int("n", n, 1)
    load = check_int("load", load, 1, n)
    A = np.zeros((n, n), dtype=bool)
    for r in range(load):
        A[np.arange(n), (np.arange(n) + r) % n] = True
    return A


def _check_assignment(assignment: Any) -> np.ndarray:
    try:
        A = np.asarray(assignment)
    except (TypeError, ValueError) as exc:
        raise GradcodesTypeError("assignment must be an n x k array of 0/1 entries") from exc
    if A.ndim != 2 or A.shape[0] < 1 or A.shape[1] < 1:
        raise GradcodesValueError(f"assignment must be a 2-D n x k 0/1 array, got shape {A.shape}")
    if A.dtype == object or A.dtype.kind not in "biuf":
        raise GradcodesTypeError(f"assignment must hold 0/1 numbers, got dtype {A.dtype}")
    if not np.all((A == 0) | (A == 1)):
        raise GradcodesValueError("assignment must contain only 0 and 1 entries")
    A = A.astype(bool)
    if not A.any(axis=1).all():
        raise GradcodesValueError(f"assignment: every worker must hold a chunk; workers "
                                  f"{np.flatnonzero(~A.any(axis=1)).tolist()} hold none")
    return A


def _perfect_matching(adj: list[list[int]], k: int) -> list[int]:
    """A perfect matching of a regular bipartite graph (augmenting paths, neighbours in increasing order):
    ``match[i]`` is worker i's chunk. Deterministic; O(n * edges)."""
    owner = [-1] * k
    match = [-1] * len(adj)

    def augment(i: int, seen: list[bool]) -> bool:
        for j in adj[i]:
            if not seen[j]:
                seen[j] = True
                if owner[j] < 0 or augment(owner[j], seen):
                    owner[j], match[i] = i, j
                    return True
        return False

    for i in range(len(adj)):
        if not augment(i, [False] * k):      # cannot happen for a regular bipartite graph (Hall's condition)
            raise GradcodesValueError("assignment has no perfect matching")
    return match


def chunk_order(assignment: Any, method: str = "matching") -> tuple[tuple[int, ...], ...]:
    """The order in which every worker processes its chunks.

    Parameters
    ----------
    assignment : array_like of 0/1, shape (n, k)
        ``assignment[i, j] = 1`` when worker ``i`` holds chunk ``j``.
    method : {"matching", "natural"}
        ``"natural"``: each worker in the order of the cyclic assignment rows, i.e. increasing chunk index starting
        from its own index (``i, i+1, ...`` mod ``k``; for the cyclic assignment this is "top to bottom").
        ``"matching"``: for a regular square assignment (``n = k``, every row and column sum equal to ``gamma``),
        the graph's decomposition into ``gamma`` perfect matchings, matching ``r`` processed at position ``r``, so
        every chunk is processed at every position by exactly one of its holders; this attains the lower bound
        ``Q_max >= 1 + n gamma - gamma (gamma + 1) / 2`` of :func:`q_max` for ``m = 1`` (the chunks' sums of
        ``gamma - pos`` add up to ``n gamma (gamma + 1) / 2``, so the smallest is at most their mean; Ramamoorthy,
        Meng & Girimaji 2024, the ordering of their Fig. 2). Other assignments fall back to ``"natural"``.

    Returns
    -------
    tuple of tuples
        ``order[i]`` lists worker ``i``'s chunks in processing order.

    Examples
    --------
    >>> A = cyclic_assignment(4, 2)
    >>> chunk_order(A, "natural")
    ((0, 1), (1, 2), (2, 3), (3, 0))
    >>> chunk_order(A, "matching")
    ((0, 1), (1, 2), (2, 3), (3, 0))
    """
    A = _check_assignment(assignment)
    method = check_choice("method", method, ("matching", "natural"))
    n, k = A.shape
    if method == "matching":
        rows, cols = A.sum(axis=1), A.sum(axis=0)
        gamma = int(rows[0])
        if n == k and np.all(rows == gamma) and np.all(cols == gamma):
            adj = [_from_own(A, i) for i in range(n)]
            out: list[list[int]] = [[] for _ in range(n)]
            for _ in range(gamma):
                match = _perfect_matching(adj, k)
                for i, j in enumerate(match):
                    out[i].append(j)
                    adj[i].remove(j)
            return tuple(tuple(o) for o in out)
    return tuple(tuple(_from_own(A, i)) for i in range(n))


def _from_own(A: np.ndarray, i: int) -> list[int]:
    """Worker i's chunks in increasing index from its own (i, i+1, ... mod k)."""
    k = A.shape[1]
    return sorted((int(j) for j in np.flatnonzero(A[i])), key=lambda j: (j - i) % k)


def _check_order(A: np.ndarray, order: Any) -> tuple[tuple[int, ...], ...]:
    n = A.shape[0]
    try:
        rows = [list(o) for o in order]
    except TypeError as exc:
        raise GradcodesTypeError("order must be a sequence of n sequences of chunk indices") from exc
    if len(rows) != n:
        raise GradcodesValueError(f"order must list the chunks of each of the n={n} workers, got {len(rows)} rows")
    out = []
    for i, row in enumerate(rows):
        for j in row:
            if isinstance(j, bool) or not isinstance(j, (int, np.integer)):
                raise GradcodesTypeError(f"order[{i}] must contain integer chunk indices, got {j!r}")
        want = sorted(np.flatnonzero(A[i]).tolist())
        if sorted(int(j) for j in row) != want:
            raise GradcodesValueError(f"order[{i}] must be a permutation of worker {i}'s chunks {want}, got "
                                      f"{[int(j) for j in row]}")
        out.append(tuple(int(j) for j in row))
    return tuple(out)


def q_max(assignment: Any, order: Any, m: int = 1) -> int:
    """``Q_max``: the least ``Q`` such that every progress state with ``Q`` processed chunks decodes.

    A progress state gives every worker ``i`` a number ``t_i`` of finished chunks (a prefix of its order); it
    decodes when every chunk has been processed by at least ``m`` workers. The largest non-decodable state
    leaves one chunk ``j`` with ``m - 1`` copies: every worker not holding ``j`` finishes, the ``m - 1`` holders
    with the most work after ``j`` finish, and the others stop just before ``j``, so (with ``pos_i(j)`` the number of
    chunks worker ``i`` processes before ``j`` and ``gamma_i`` its load)

    .. math:: Q_{max} = 1 + \\sum_i \\gamma_i - \\min_j \\Big( \\sum_{i \\ni j} (\\gamma_i - pos_i(j))
              - \\text{the } m-1 \\text{ largest of } (\\gamma_i - pos_i(j)) \\Big)

    (the ``Q_max`` of Ramamoorthy, Meng & Girimaji 2024, Fig. 2, there for ``m = 1``). The classical protocol (one
    message per worker after its whole load, any ``n - s`` workers) needs
    ``1 + (n - s - 1) gamma + (s + 1)(gamma - 1)`` in the worst case for a regular load ``gamma``.

    Parameters
    ----------
    assignment : array_like of 0/1, shape (n, k)
    order : sequence of sequences
        ``order[i]``: worker ``i``'s chunks in processing order (see :func:`chunk_order`).
    m : int >= 1
        Copies of each chunk needed (the communication factor).

    Returns
    -------
    int
        ``Q_max``: any ``Q_max`` processed chunks (in the workers' orders) suffice to decode.

    Examples
    --------
    >>> A = cyclic_assignment(3, 2)
    >>> q_max(A, chunk_order(A))        # 4 of the 6 chunk computations always suffice
    4
    """
    A = _check_assignment(assignment)
    order = _check_order(A, order)
    gam = A.sum(axis=0)
    m = check_int("m", m, 1, int(gam.min()))
    total = int(A.sum())
    best = None
    for j in range(A.shape[1]):
        gains = sorted((len(o) - o.index(j) for o in order if j in o), reverse=True)
        keep = sum(gains) - sum(gains[: m - 1])
        best = keep if best is None else min(best, keep)
    assert best is not None
    return 1 + total - best
