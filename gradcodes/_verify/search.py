"""Searching for failing straggler sets when enumeration does not fit: restarted coordinate ascent, then swaps.

Why random sets miss the bad ones: for a code whose decoding vectors are ``a = c + K z`` (``K`` an orthonormal basis
of the left null space of ``B``, ``d`` columns), a straggler set ``S`` forces ``a_S = 0``, i.e. the |S| x d system
``K_S z = -c_S``. The decode cancels badly exactly when ``K_S`` is nearly singular (``|z|`` grows like
``1 / sigma_min(K_S)``), and fails outright when ``K_S`` is singular and ``c_S`` is not in its range (Tandon et al.
2017, Section 3: ``B`` is robust iff every ``n - s`` rows span the target). For a random cyclic-repetition code
(``d = s``) only a handful of the ``C(n, s)`` sets have such a ``K_S``: ``s`` rows of ``K`` that almost lie in a
common hyperplane of ``R^s``. Measured on ``cyclic_repetition(40, 5, seed=0)``: the two failing sets have
``sigma_min(K_S)`` about 1e-9 against a median of 7e-3, while their 4-row subsets are not unusual (``sigma_min``
4e-3 to 2e-2), so growing a set row by row (beam search on partial sets) does not find them. What works better
is a search over *full* sets: coordinate ascent on ``|z|`` (replace one straggler by the best of all responders,
``n - s`` batched s x s solves per move) from random starts, each end point checked by the reference rule.
``benchmarks/verify/verify_search.py`` measures how often it catches planted failing sets.
"""

from __future__ import annotations

import itertools
import time
from typing import Any

import numpy as np

__all__ = ["restart_search", "local_search", "swap_neighbours"]


def swap_neighbours(S: np.ndarray, n: int, rng: np.random.Generator, limit: int) -> np.ndarray:
    """The straggler sets one swap away from ``S`` (one straggler for one responder), at most ``limit`` of them
    drawn at random; a sorted (count, s) int array. The move of every local search for a worst set."""
    s = S.size
    outside = np.setdiff1d(np.arange(n), S)
    pairs = np.array(list(itertools.product(range(s), range(outside.size))))
    if pairs.shape[0] > limit:
        pairs = pairs[rng.choice(pairs.shape[0], limit, replace=False)]
    cand = np.repeat(S[None], pairs.shape[0], axis=0)
    cand[np.arange(pairs.shape[0]), pairs[:, 0]] = outside[pairs[:, 1]]
    cand.sort(axis=1)
    return cand


def restart_search(tracker: Any, code: Any, rng: np.random.Generator, seconds: float | None = None,
                   restarts: int = 400, sweeps: int = 6) -> tuple[np.ndarray, np.ndarray] | None:
    """Coordinate ascent on ``|z|`` from random straggler sets, with restarts (null-space codes with ``d = s``).

    The score of a set is ``sum_j |z_j| kappa_j`` with ``K_S z = -c_S`` and ``kappa_j = sum_i |K_ij| ||B_i||_1``,
    an upper bound of ``k`` times the cancellation factor up to ``canc(c)`` (infinite for a singular ``K_S``). One
    move replaces one straggler by the best of all ``n - s`` responders. Each restart climbs until no single
    replacement improves the score (at most ``sweeps`` sweeps); its end point is evaluated by the reference rule.
    Stops after ``restarts`` restarts, a failure, or the budget, checked before every move (one move costs
    ``n - s`` solves of size ``s``, so a climb at large ``(n, s)`` is cut short rather than overrunning): by
    default (``seconds=None``) a fixed count of moves, :func:`gradcodes._verify.cost.search_moves` (about
    :data:`~gradcodes._verify.cost.SEARCH_SECONDS` s of one core; the same sets on every machine); with
    ``seconds``, a wall-clock budget.
    Returns ``(sets, estimates)`` of the end
    points, or None when the code has no such structure (exact fields, ``m > 1``, ``d != s``).
    """
    from .._core.decoders import NullSpaceDecoder, row_scaled
    from .fast import _solve_small

    if code.exact or code.field != "real" or code.m != 1:
        return None
    n, s = code.n, code.s
    C, K, _ = NullSpaceDecoder.basis(code)
    if s == 0 or K.shape[1] != s or n - s < 1:
        return None
    w = np.abs(row_scaled(code)[0]).sum(axis=1)
    kappa = (np.abs(K) * w[:, None]).sum(axis=0)
    c = C[0]

    def score(S: np.ndarray) -> np.ndarray:
        Z = _solve_small(K[S], -c[S][:, :, None])[:, :, 0]
        v = np.abs(Z) @ kappa
        return np.where(np.isnan(v), np.inf, v)

    from .cost import search_moves

    t0 = time.perf_counter()
    moves = search_moves(n, s) if seconds is None else None
    made = 0

    def spent() -> bool:
        if seconds is None:
            return moves is not None and made >= moves
        return time.perf_counter() - t0 > seconds

    ends, ests = [], []
    for _ in range(restarts):
        S = np.sort(rng.choice(n, s, replace=False))
        cur = score(S[None])[0]
        for _ in range(sweeps):
            improved = False
            for i in rng.permutation(s):
                if spent():
                    break
                made += 1
                out = np.setdiff1d(np.arange(n), S)
                cand = np.repeat(S[None], out.size, axis=0)
                cand[:, i] = out
                sc = score(cand)
                j = int(np.argmax(sc))
                if sc[j] > cur:
                    cur, S = sc[j], np.sort(cand[j])
                    improved = True
            if not improved or not np.isfinite(cur):
                break
        ends.append(S)
        ests.append(tracker.add(S[None])[0])
        if tracker.n_failures or spent():
            break
    return np.array(ends), np.array(ests)


def local_search(tracker: Any, parts: list[tuple[np.ndarray, np.ndarray]], rng: np.random.Generator,
                 batch_size: int, starts: int = 3, steps: int = 15, neighbours: int = 256) -> int:
    """Greedy swaps (one straggler for one responder) from the worst sets found; returns sets evaluated."""
    n = tracker.code.n
    S_all = np.concatenate([p[0] for p in parts])
    e_all = np.concatenate([p[1] for p in parts])
    order = np.argsort(-np.nan_to_num(e_all, nan=np.inf))[:starts]
    evaluated = 0
    for idx in order:
        cur, cur_e = S_all[idx].copy(), e_all[idx]
        for _ in range(steps):
            cand = swap_neighbours(cur, n, rng, neighbours)
            e = np.concatenate([tracker.add(cand[lo:lo + batch_size]) for lo in range(0, len(cand), batch_size)])
            evaluated += len(cand)
            best = int(np.argmax(e))
            if tracker.n_failures or not e[best] > cur_e:
                break
            cur, cur_e = cand[best], e[best]
        if tracker.n_failures:
            break
    return evaluated
