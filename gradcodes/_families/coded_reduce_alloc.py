"""CodedReduce load and allocation: the optimal fraction ``r_CR`` (achievability and converse) and CR.Allocate.

Reisizadeh, Prakash, Pedarsani & Avestimehr, "CodedReduce" (2019), Sections 3-4: every parent spreads its data
over its ``n`` children with an ``(n, s)`` gradient code and keeps a share ``r P`` of its own.
"""

from __future__ import annotations

import math
from fractions import Fraction
from typing import Any

import numpy as np

from .._base.errors import GradcodesTypeError, GradcodesValueError
from .._base.validate import check_int, check_tree_size

__all__ = ["coded_reduce_load"]

# ----------------------------------------------------------------------------------------------------------
# the load (Theorem 1) and the allocation (CR.Allocate)


def _tree_workers(branching: int, L: int, cap: int | None = None) -> int:
    """``N = b + b^2 + ... + b^L``, the workers of the ``(b, L)``-regular tree (or a number ``> cap`` once it
    exceeds ``cap``: bounded work for any ``L``)."""
    total, power = 0, 1
    for _ in range(L):
        power *= branching
        total += power
        if cap is not None and total > cap:
            break
    return total


def tree_shape(n: int, branching: int | None, L: int | None) -> tuple[int, int]:
    """The tree ``(branching, L)`` with ``n`` workers (``n = b + b^2 + ... + b^L``), given one or both of
    ``branching`` and ``L``: the command lines' ``-n`` is the number of workers for trees too. Bounded work for any
    arguments; a shape that does not fit names the sizes that would."""
    n = check_int("n", n, 2)
    if branching is None and L is None:
        raise GradcodesTypeError(
            f"coded_reduce with n={n} workers needs the tree's branching or its depth L as well (n = b + b^2 + ... + "
            f"b^L)")
    if branching is not None and L is not None:
        b, depth = check_int("branching", branching, 2), check_int("L", L, 1)
        size = _tree_workers(b, depth, cap=n)
        if size != n:
            raise GradcodesValueError(
                f"n={n} workers does not match branching={b}, L={depth}: that tree has "
                f"{f'{size:,}' if size < n else f'more than {n:,}'} workers (b + b^2 + ... + b^L; pass two of the "
                f"three)")
        return b, depth
    if branching is not None:
        b = check_int("branching", branching, 2)
        sizes: dict[int, int] = {}
        depth = 1
        while True:                                  # at most log_b(n) + 1 depths
            size = _tree_workers(b, depth, cap=n)
            sizes[size] = depth
            if size >= n:
                break
            depth += 1
        if n not in sizes:
            raise GradcodesValueError(
                f"n={n} workers is not a tree with branching={b}: n must be b + b^2 + ... + b^L, one of "
                f"{', '.join(f'{size:,}' for size in sizes)}{', ...' if max(sizes) > n else ''}")
        return b, sizes[n]
    depth = check_int("L", L, 1)
    if depth >= n.bit_length():                      # even b = 2 gives 2 + ... + 2^L > n
        raise GradcodesValueError(f"n={n} workers is not a tree of depth L={depth}: the smallest one (b = 2) has "
                                  f"more than {n:,} workers (2 + 4 + ... + 2^L)")
    lo, hi = 2, n                                    # the largest b with N(b, L) <= n, by bisection
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if _tree_workers(mid, depth, cap=n) <= n:
            lo = mid
        else:
            hi = mid - 1
    if _tree_workers(lo, depth, cap=n) != n:
        raise GradcodesValueError(
            f"n={n} workers is not a tree of depth L={depth}: n must be b + b^2 + ... + b^L, e.g. "
            f"{_tree_workers(lo, depth):,} (b={lo}) or {_tree_workers(lo + 1, depth):,} (b={lo + 1})")
    return lo, depth


def _check_tree(n: Any, L: Any, s: Any) -> tuple[int, int, int]:
    """``(branching, L, s)`` validated (the branching factor is ``n`` in the formulas of this module)."""
    n = check_int("branching", n, 2)
    L = check_int("L", L, 1)
    s = check_int("s", s, 0, n - 1)
    check_tree_size(n, L)
    return n, L, s


def _tree_fractions(q: Fraction, L: int) -> tuple[Fraction, list[Fraction]]:
    """``(r, [D_1..D_L])`` for ``D_1 = q``, ``D_{l+1} = q (D_l - r)``, ``D_L = r``: ``r = q^L / sum_{i<L} q^i``."""
    r = q**L / sum(q**i for i in range(L))
    D = [q]
    for _ in range(L - 1):
        D.append(q * (D[-1] - r))
    assert D[-1] == r
    return r, D


def coded_reduce_load(branching: int, L: int, s: int) -> Fraction:
    r"""The CodedReduce computation load ``r_CR``: the fraction of the dataset every worker processes.

    With ``n`` the branching factor and ``q = (s+1)/n``,

    .. math::

        r_{CR} = \frac{q^L (1-q)}{1-q^L} = \frac{(s+1)^L (n-s-1)}{n\,(n^L - (s+1)^L)}
        \quad (s+1 < n), \qquad r_{CR} = 1/L \quad (s = n-1).

    **Achievability** (:func:`coded_reduce`): the master spreads the dataset over its ``n`` children with an
    ``(n, s)`` gradient code, so a level-1 subtree is responsible for ``D_1 = q``; a level-``l`` node computes
    ``r`` itself and spreads the rest the same way, ``D_{l+1} = q (D_l - r)``; a leaf computes all it gets,
    ``D_L = r``. Solving gives ``r = q^L / (1 + q + ... + q^{L-1})``, the formula above.

    **Converse (optimality on the regular tree, any linear scheme, per-parent straggler model).** Call a data
    unit *robustly available* from node ``v`` if ``v`` computes it or it is robustly available from at least
    ``s+1`` children of ``v`` (otherwise ``s`` stragglers among the children can hide it, and a straggler hides
    its whole subtree). The master needs every unit robustly available from at least ``s+1`` of its children.
    Let ``R_l`` be the average amount robustly available from a level-``l`` node and ``r`` the largest load.
    Counting pairs (unit, child) gives ``R_1 >= q``, ``R_{l+1} >= q (R_l - r)`` and, at the leaves,
    ``R_L <= r``. The map ``x -> q (x - r)`` is increasing, so ``r >= q^L - r (q + ... + q^{L-1})``, i.e.
    ``r >= r_CR``. (Reisizadeh et al., CodedReduce, Theorem 1; the paper proves optimality on regular trees.)

    Parameters
    ----------
    branching : int
        Children per node (``n`` in the formulas), ``>= 2``.
    L : int
        Depth (levels of workers), ``L >= 1``.
    s : int
        Stragglers tolerated among each parent's children, ``0 <= s <= n - 1``.

    Returns
    -------
    fractions.Fraction

    Examples
    --------
    >>> import gradcodes as gc
    >>> gc.coded_reduce_load(3, 2, 1), gc.coded_reduce_load(12, 2, 5), gc.coded_reduce_load(4, 2, 3)
    (Fraction(4, 15), Fraction(1, 6), Fraction(1, 2))
    >>> gc.coded_reduce_load(5, 1, 2)          # L = 1 is plain gradient coding: (s+1)/n
    Fraction(3, 5)
    """
    n, L, s = _check_tree(branching, L, s)
    return _tree_fractions(Fraction(s + 1, n), L)[0]


def _lcm_den(values: list[Fraction]) -> int:
    out = 1
    for v in values:
        out = math.lcm(out, Fraction(v).denominator)
    return out


def _min_units(k_inner: int, r: Fraction, D: list[Fraction]) -> int:
    """``P_min``: every list length ``D_l P``, own share ``r P`` and chunk length ``(D_l - r) P / k`` integral."""
    vals = [r, Fraction(1, k_inner), *D]
    vals += [(d - r) / k_inner for d in D[:-1]]
    return _lcm_den(vals)


def _allocate(n: int, L: int, P: int, r: Fraction, B: np.ndarray, supports: list[np.ndarray],
              zero: Any) -> tuple[list[np.ndarray], list[np.ndarray]]:
    """CR.Allocate (Reisizadeh et al.): the ordered (unit, coefficient) list of every worker, breadth-first.

    Returns ``(units, coefs)``: one integer array and one coefficient array per worker (its *whole* assigned
    list; the first ``r P`` entries are its own share, and leaves own everything).
    """
    k = B.shape[1]
    own_len = int(r * P)
    units: list[np.ndarray] = []
    coefs: list[np.ndarray] = []
    # parent p = 0 is the master (list = all units, coefficient 1, nothing of its own)
    parent_units = [np.arange(P, dtype=np.int64)]
    parent_coefs = [np.full(P, zero + 1, dtype=B.dtype)]
    parent_own = [0]
    p = 0
    level_sizes = [n**lev for lev in range(1, L + 1)]
    N = sum(level_sizes)
    internal = N - n**L
    while p < 1 + internal:
        u, c, own = parent_units[p], parent_coefs[p], parent_own[p]
        rest_u, rest_c = u[own:], c[own:]
        if rest_u.size % k:
            raise AssertionError("allocation: chunk lengths are not integral (P is not a multiple of P_min)")
        ru = rest_u.reshape(k, -1)
        rc = rest_c.reshape(k, -1)
        for t in range(n):
            sup = supports[t]
            cu = ru[sup].ravel()
            cc = (rc[sup] * B[t, sup][:, None]).ravel()
            units.append(cu)
            coefs.append(cc)
            worker = len(units) - 1
            if worker < internal:          # an internal node: it becomes a parent later (BFS order)
                parent_units.append(cu)
                parent_coefs.append(cc)
                parent_own.append(own_len)
        p += 1
    return units, coefs


def _level_slices(n: int, L: int) -> list[slice]:
    out, lo = [], 0
    for lev in range(1, L + 1):
        out.append(slice(lo, lo + n**lev))
        lo += n**lev
    return out
