"""Computation-load lower bounds for exact gradient codes."""

from __future__ import annotations

import math
from fractions import Fraction

from .._base.validate import check_int

__all__ = ["min_load", "min_replication", "meets_min_load", "min_load_heterogeneous"]


def min_replication(n: int, s: int, m: int = 1) -> int:
    """Every partition must be stored by at least ``s + m`` workers (see :func:`min_load`).

    >>> min_replication(10, 2, m=3)
    5
    """
    n = check_int("n", n, 1)
    s = check_int("s", s, 0, n - 1)
    m = check_int("m", m, 1, n - s)               # s + m <= n: the range names m, the extra one
    return s + m


def min_load(n: int, s: int, m: int = 1, k: int | None = None) -> Fraction:
    r"""Lower bound on the computation load (partitions per worker) of an exact gradient code.

    .. math:: d \;\ge\; \frac{k\,(s+m)}{n}

    where ``n`` workers share ``k`` partitions, any ``s`` may straggle, and each message is ``1/m`` of a gradient.
    The bound is on the *average* load; the maximum load of a code is an integer, so it is at least the
    ceiling of this value. For ``k = n`` it reads ``d >= s + m``.

    *Proof.* Suppose partition ``j`` is stored by a set ``T`` of at most ``s + m - 1`` workers. Let ``s`` of them
    straggle (all of them if ``|T| <= s``). At most ``m - 1`` responders then carry information about ``g_j``,
    in messages of length ``p/m``: at most ``(m-1) p/m < p`` numbers, depending linearly on ``g_j``. Set every
    other partial gradient to 0; the decoded sum equals ``g_j``, an arbitrary vector of ``R^p``, which cannot be
    a function of fewer than ``p`` linear measurements. Hence every partition is stored by at least ``s + m``
    workers, the ``k`` columns of ``B`` have at least ``k (s + m)`` nonzero partition slots in all, and the
    average over ``n`` workers is at least ``k (s + m) / n``. (For ``m = 1`` this is Tandon et al.'s bound:
    with ``|T| <= s`` the ``j``-th column of ``B_F`` is zero, so ``(a_F B)_j = 0 != 1``.)

    Parameters
    ----------
    n : int
        Number of workers, ``n >= 1``.
    s : int
        Stragglers tolerated, ``0 <= s <= n - m``.
    m : int, default 1
        Communication factor, ``1 <= m <= n``.
    k : int, optional
        Number of partitions (default ``n``), ``k >= 1``.

    Returns
    -------
    fractions.Fraction
        The exact bound.

    Examples
    --------
    >>> from gradcodes import min_load
    >>> min_load(10, 2)
    Fraction(3, 1)
    >>> min_load(10, 2, m=3, k=4)
    Fraction(2, 1)
    >>> min_load(7, 2, k=3)
    Fraction(9, 7)
    """
    n = check_int("n", n, 1)
    s = check_int("s", s, 0, n - 1)
    m = check_int("m", m, 1, n - s)               # s + m <= n: the range names m, the extra one
    k = n if k is None else check_int("k", k, 1)
    return Fraction(k * (s + m), n)


def meets_min_load(load: int, n: int, s: int, m: int = 1, k: int | None = None) -> bool:
    """True when an integer maximum ``load`` equals the smallest integer allowed by :func:`min_load`."""
    return load <= math.ceil(min_load(n, s, m, k))


def min_load_heterogeneous(n: int, k: int) -> Fraction:
    r"""Minimum average replication per partition of an optimal unbiased heterogeneous code.

    Returns ``(n + k - 1) / k = 1 + (n - 1)/k`` as an exact ``Fraction``: a code that is unbiased
    (column sums of ``alpha`` are 1) and optimal (row sums are Song & Choi's ``Y``) needs at least
    ``n + k - 1`` nonzero coefficients when the straggle probabilities are generic.

    *Proof.* Let ``H`` be the bipartite graph on the ``n`` workers and ``k`` partitions with an edge
    ``(i, j)`` whenever ``alpha_ij != 0``. No vertex is isolated (``Y_i > 0`` and every column sums to 1).
    If a connected component has workers ``W'`` and partitions ``P'``, all the mass of the rows ``W'`` lies in
    the columns ``P'`` and vice versa, so ``sum_{i in W'} Y_i = |P'|`` is an integer. For generic ``p`` no
    proper non-empty subset of the ``Y_i`` sums to an integer, so ``H`` is connected, and a connected graph
    on ``n + k`` vertices has at least ``n + k - 1`` edges. Hence ``nnz(alpha) >= n + k - 1`` and the
    average replication ``nnz/k >= 1 + (n-1)/k``. The bound is attained by Schemes I, II and the
    northwest-corner scheme. (For non-generic ``p``, e.g. equal ``p_i`` with ``n | k``, fewer nonzeros can
    suffice; the northwest-corner scheme finds such savings along its chain automatically.)

    Parameters
    ----------
    n : int
        Number of workers (>= 1).
    k : int
        Number of partitions (>= 1).

    Returns
    -------
    fractions.Fraction

    Examples
    --------
    >>> min_load_heterogeneous(10, 10)
    Fraction(19, 10)
    """
    n = check_int("n", n, 1)
    k = check_int("k", k, 1)
    return Fraction(n + k - 1, k)
