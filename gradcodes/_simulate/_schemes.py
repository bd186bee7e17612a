"""The schemes' iteration times, vectorised over iterations: CodedReduce trees, master--worker, ring all-reduce."""

from __future__ import annotations

import numpy as np

from ._models import _chunks, _computation, _reception, _reception_times


def _sim_tree(rng, iters, n, L, s, points, a, mu, t_c, overlap, want_resp):
    N = n * (n**L - 1) // (n - 1)
    K = n - s
    times = np.empty(iters)
    resp = np.zeros((iters, N), dtype=bool) if want_resp else None
    offsets = [0]
    for lev in range(1, L + 1):
        offsets.append(offsets[-1] + n**lev)  # level lev occupies [offsets[lev-1], offsets[lev])
    for lo, hi in _chunks(iters, N):
        b = hi - lo
        ready = _computation(rng, (b, n**L), points, a, mu)  # leaves
        used_orders = {}
        for lev in range(L - 1, -1, -1):  # parents at level lev
            kids = ready.reshape(b, n**lev, n)
            if lev >= 1:
                T = _computation(rng, (b, n**lev), points, a, mu)
                R, order = _reception(kids, K, t_c, None if overlap else T, want_resp)
                ready = np.maximum(T, R)
            else:
                R, order = _reception(kids, K, t_c, None, want_resp)
                times[lo:hi] = R[:, 0]
            if want_resp:
                used_orders[lev + 1] = order  # (b, n**lev, K): children used at level lev+1
        if want_resp:
            parent_used = np.ones((b, 1), dtype=bool)
            for lev in range(1, L + 1):
                used = np.zeros((b, n ** (lev - 1), n), dtype=bool)
                np.put_along_axis(used, used_orders[lev], True, axis=-1)
                used &= parent_used[:, :, None]
                used = used.reshape(b, n**lev)
                resp[lo:hi, offsets[lev - 1]:offsets[lev]] = used
                parent_used = used
    return times, resp


def _sim_master_worker(rng, iters, N, K, points, a, mu, t_c, want_resp):
    times = np.empty(iters)
    resp = np.zeros((iters, N), dtype=bool) if want_resp else None
    for lo, hi in _chunks(iters, N):
        T = _computation(rng, (hi - lo, N), points, a, mu)
        R, order = _reception(T, K, t_c, None, want_resp and K < N)
        times[lo:hi] = R
        if want_resp:
            if K < N:
                np.put_along_axis(resp[lo:hi], order, True, axis=-1)
            else:
                resp[lo:hi] = True
    return times, resp


def _sim_ring(rng, iters, N, points, a, mu, t_c, t_step, want_resp, model=None, alpha=0.0, comm=None):
    """All-reduce after every worker has computed: ring by default (``2(N-1)`` steps of ``alpha + (t_c -
    alpha)/N + t_step``; with ``alpha = 0`` the same bits as ``t_c/N + t_step``), or a given total ``comm``."""
    times = np.empty(iters)
    if comm is None:
        comm = 2 * (N - 1) * ((t_c - alpha) / N + alpha + t_step)
    for lo, hi in _chunks(iters, N):
        if model is None:
            T = _computation(rng, (hi - lo, N), points, a, mu)
        else:
            T = model.times(rng, hi - lo, N, points)
        times[lo:hi] = T.max(axis=1) + comm
    resp = np.ones((iters, N), dtype=bool) if want_resp else None
    return times, resp


def _sim_policy(rng, iters, code, policy, points, a, mu, model, t_c, want_resp, deadline=None):
    """Master--worker under a wait policy: the ``J``-th message (``J`` from ``policy.counts``) ends the
    iteration; with a ``deadline`` (approximate codes) the master stops at the deadline with the messages
    received by then if that comes first. Returns ``(times, responders, counts)``."""
    N = code.n
    times = np.empty(iters)
    counts = np.empty(iters, dtype=np.int64)
    resp = np.zeros((iters, N), dtype=bool) if want_resp else None
    for lo, hi in _chunks(iters, N):
        if model is None:
            T = _computation(rng, (hi - lo, N), points, a, mu)     # the same draws as the classical policy
        else:
            T = model.times(rng, hi - lo, N, points)
        order = np.argsort(T, axis=-1, kind="stable")
        R = _reception_times(np.take_along_axis(T, order, axis=-1), t_c)   # R[:, j-1]: j-th message received
        J = np.asarray(policy.counts(code, order), dtype=np.int64)
        t = R[np.arange(hi - lo), J - 1]
        if deadline is not None:
            late = t > deadline
            J = np.where(late, (R <= deadline).sum(axis=1), J)
            t = np.where(late, deadline, t)
        times[lo:hi] = t
        counts[lo:hi] = J
        if want_resp:
            assert resp is not None
            used = np.arange(N)[None, :] < J[:, None]
            np.put_along_axis(resp[lo:hi], order, used, axis=1)
    return times, resp, counts
