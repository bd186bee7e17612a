r"""Structured adversaries and certified upper bounds for the worst case of approximate codes.

:func:`gradcodes.worst_case_error` reports the worst error over the sets of ``s`` stragglers as two bounds: a
*lower* bound, the largest error of the sets it evaluated (exact when every set was), and an *upper* bound that
holds for every set (a theorem with its conditions, or the trivial bound below). Random sets and a greedy swap search
rarely hit the structured sets that break a construction (all the workers holding a partition, all the edges of a
vertex, a neighbourhood of an expander), so the search starts from candidates that each family registers here:

* :func:`partition_holders` (every family): grow a set of partitions whose holders are few (start from one
  partition, add the partition with the fewest holders outside the set, while the holders fit in ``s``) and
  straggle all their holders, so those partitions are lost. For a graph assignment code (Glasgow & Wootters 2021)
  the holders of a vertex are its edges; for an expander code (Raviv et al. 2018) they are its neighbourhood, and
  the greedy growth finds sets of partitions with a small neighbourhood (low expansion); for a BIBD or repetition
  code they are the copies of blocks.
* :func:`clustered_rows` (every family): sets of workers whose rows overlap most (few partitions between them).
* :func:`worker_balls`: breadth-first balls in the graph of workers that share a partition (neighbourhoods of
  expanders).
* :func:`heaviest_rows`: the ``s`` workers with the largest ``||B_i||_1`` (heterogeneous codes load the fast
  workers most).

Upper bounds are registered per family as functions ``(code, s, decoder) -> UpperBound | None``; the generic one,
for least-squares decoders, is the trivial ``||E||_F`` (the decoder can always return ``u = 0``).

Both tables are filled by the families when they are imported (``gradcodes._families``), so this room never
imports a family.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np

__all__ = ["UpperBound", "ADVERSARIES", "UPPER_BOUNDS", "register_adversaries", "register_upper_bound",
           "adversaries_for", "upper_bound", "partition_holders", "clustered_rows", "worker_balls", "heaviest_rows",
           "pad"]

Adversary = Callable[[Any, int], Iterator[np.ndarray]]


@dataclass(frozen=True)
class UpperBound:
    """A certified upper bound on the worst error ``max_S ||A_F B - E||_2`` over ``|S| = s`` stragglers.

    Attributes
    ----------
    value : float
        The bound, in the units of :func:`gradcodes.approximation_error`.
    source : str
        How it is proven (``"theorem: <authors, year>: <statement> (<conditions>)"``).
    attained : bool
        The theorem also says some set attains it (the worst case is then exactly ``value``).
    """

    value: float
    source: str
    attained: bool = False


#: family name (``code.family``) -> extra structured adversaries (the defaults run for every family)
ADVERSARIES: dict[str, tuple[Adversary, ...]] = {}
#: family name -> function ``(code, s, decoder) -> UpperBound | None``
UPPER_BOUNDS: dict[str, Callable[[Any, int, Any], UpperBound | None]] = {}
#: at most this many starts per adversary (partitions or workers, in index order)
MAX_STARTS = 96


def register_adversaries(family: str, *adversaries: Adversary) -> None:
    """Register structured adversaries of a family (run after the defaults, in this order)."""
    ADVERSARIES[family] = tuple(adversaries)


def register_upper_bound(family: str, fn: Callable[[Any, int, Any], UpperBound | None]) -> None:
    """Register the certified upper bound of a family."""
    UPPER_BOUNDS[family] = fn


def pad(S: np.ndarray, s: int, n: int, prefer: np.ndarray | None = None) -> np.ndarray:
    """``S`` completed to ``s`` workers: first from ``prefer`` (in order), then the lowest indices; sorted."""
    chosen = list(dict.fromkeys(int(i) for i in S))[:s]
    seen = set(chosen)
    for pool in ((prefer if prefer is not None else np.empty(0, dtype=np.int64)), np.arange(n)):
        for i in pool:
            if len(chosen) >= s:
                break
            if int(i) not in seen:
                chosen.append(int(i))
                seen.add(int(i))
    return np.array(sorted(chosen), dtype=np.int64)


def _support(code: Any) -> np.ndarray:
    memo = getattr(code, "_memo", None)
    if isinstance(memo, dict) and "adversary_support" in memo:
        return memo["adversary_support"]
    supp = np.asarray(code.support_matrix, dtype=np.int64)
    if isinstance(memo, dict):
        memo["adversary_support"] = supp
    return supp


def partition_holders(code: Any, s: int) -> Iterator[np.ndarray]:
    """Every holder of a greedily grown set of partitions, one set per starting partition (see module docstring)."""
    n, k = code.n, code.k
    if s == 0:
        return
    supp = _support(code)                                 # (n, k) 0/1
    repl = supp.sum(axis=0)
    starts = np.lexsort((np.arange(k), repl))[:MAX_STARTS]
    for j0 in starts.tolist():
        S = supp[:, j0].astype(bool)
        if S.sum() > s:
            yield pad(np.empty(0, dtype=np.int64), s, n, np.flatnonzero(S))
            continue
        taken = np.zeros(k, dtype=bool)
        taken[j0] = True
        while True:
            outside = (~S).astype(np.int64) @ supp        # holders of each partition not yet straggling
            outside[taken] = n + 1
            j = int(np.argmin(outside))
            if outside[j] > n or S.sum() + outside[j] > s:
                prefer = np.flatnonzero(supp[:, j].astype(bool) & ~S) if outside[j] <= n else None
                yield pad(np.flatnonzero(S), s, n, prefer)
                break
            S |= supp[:, j].astype(bool)
            taken[j] = True


def worker_balls(code: Any, s: int) -> Iterator[np.ndarray]:
    """Breadth-first balls of ``s`` workers in the graph of workers sharing a partition, one per start worker."""
    n = code.n
    if s == 0:
        return
    supp = _support(code)
    share = (supp @ supp.T) > 0
    for v in range(min(n, MAX_STARTS)):
        order, seen, frontier = [v], {v}, [v]
        while frontier and len(order) < s:
            nxt = []
            for u in frontier:
                for w in np.flatnonzero(share[u]).tolist():
                    if w not in seen:
                        seen.add(w)
                        nxt.append(w)
            order.extend(nxt)
            frontier = nxt
        yield pad(np.array(order[:s], dtype=np.int64), s, n)


def clustered_rows(code: Any, s: int) -> Iterator[np.ndarray]:
    """Sets of workers whose rows overlap most, one per start worker: add the worker ``w`` with the largest
    ``sum_{i in S} <|B_w|, |B_i|>`` (ties: lower index) until ``s``. Such sets hold few partitions between them
    (low expansion), which the fixed decoders of expander codes feel most."""
    n = code.n
    if s == 0:
        return
    B = np.abs(np.asarray(code.float_B(), dtype=np.float64))
    gram = B @ B.T
    for v in range(min(n, MAX_STARTS)):
        inside = np.zeros(n, dtype=bool)
        inside[v] = True
        score = gram[v].copy()
        for _ in range(s - 1):
            w = int(np.argmax(np.where(inside, -np.inf, score)))
            inside[w] = True
            score += gram[w]
        yield np.flatnonzero(inside).astype(np.int64)


def heaviest_rows(code: Any, s: int) -> Iterator[np.ndarray]:
    """The ``s`` workers with the largest ``||B_i||_1``, then those with the largest load (ties: lower index)."""
    if s == 0:
        return
    B = np.abs(np.asarray(code.float_B(), dtype=np.float64))
    for w in (B.sum(axis=1), np.asarray(code.loads, dtype=np.float64)):
        yield np.sort(np.lexsort((np.arange(code.n), -w))[:s]).astype(np.int64)


DEFAULT_ADVERSARIES: tuple[Adversary, ...] = (partition_holders, clustered_rows, heaviest_rows)


def adversaries_for(code: Any) -> tuple[Adversary, ...]:
    """The defaults and the adversaries the code's family registered."""
    return DEFAULT_ADVERSARIES + tuple(a for a in ADVERSARIES.get(getattr(code, "family", None) or "", ())
                                       if a not in DEFAULT_ADVERSARIES)


def structured_sets(code: Any, s: int, count: int) -> tuple[np.ndarray, list[str]]:
    """At most ``count`` distinct structured straggler sets (a (c, s) int array, in the order they are evaluated)
    and the adversary that gave each. The adversaries take turns, one set each, until ``count`` sets or all of them
    are exhausted (deterministic: no randomness)."""
    live = [(adv.__name__, iter(adv(code, s))) for adv in adversaries_for(code)]
    seen: set[tuple[int, ...]] = set()
    out: list[np.ndarray] = []
    used: list[str] = []
    while live and len(out) < count:
        for name, it in list(live):
            if len(out) >= count:
                break
            for S in it:
                key = tuple(int(i) for i in S)
                if len(key) == s and key not in seen:
                    seen.add(key)
                    out.append(np.asarray(key, dtype=np.int64))
                    used.append(name)
                    break
            else:
                live.remove((name, it))
    return np.array(out, dtype=np.int64).reshape(len(out), s), used


def _least_squares(dec: Any) -> bool:
    """A decoder that returns a least-squares solution on the responders (``least_squares = True`` on the class)."""
    from .._core.decoders import LeastSquaresDecoder

    return isinstance(dec, LeastSquaresDecoder) or bool(getattr(dec, "least_squares", False))


def upper_bound(code: Any, s: int, dec: Any) -> UpperBound | None:
    """The family's certified bound for this decoder, else the trivial one of least-squares decoders, else None."""
    fn = UPPER_BOUNDS.get(getattr(code, "family", None) or "")
    best = fn(code, s, dec) if fn is not None else None
    if _least_squares(dec):
        trivial = UpperBound(float(np.sqrt(code.k * code.m)),
                             "trivial: a least-squares decoder is never worse than u = 0, error ||E||_F = sqrt(k m)")
        if best is None or trivial.value < best.value:
            best = trivial
    return best
