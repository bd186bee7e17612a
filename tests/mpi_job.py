"""An MPI job driven by tests/test_mpi.py (run as ``mpiexec -n N python -m mpi4py tests/mpi_job.py CONFIG``).

CONFIG is JSON: the code (``family`` + ``kwargs``, and ``inner`` = {family, kwargs} for a tree's inner code),
``p``, ``iters``, injected delays, NaN/crash injection, and which checks to run. Rank 0 checks every iteration's
decoded gradient against the uncoded sum of the same partial gradients and prints one JSON line ``RESULT {...}``;
a failed check raises, which aborts the job.
"""

from __future__ import annotations

import json
import sys
import tracemalloc

import numpy as np


def main() -> None:
    from mpi4py import MPI

    import gradcodes as gc
    from gradcodes.mpi import FixedDelay, Hang, NoDelay, ShiftedExponential, train

    cfg = json.loads(sys.argv[1])
    rank = MPI.COMM_WORLD.Get_rank()
    if cfg["family"] == "allreduce":
        code = "allreduce"
        k = MPI.COMM_WORLD.Get_size() - 1
    else:
        kwargs = dict(cfg.get("kwargs", {}))
        if "inner" in cfg:                         # a CodedReduce tree's inner code: {"family", "kwargs"}
            kwargs["inner"] = getattr(gc, cfg["inner"]["family"])(**cfg["inner"]["kwargs"])
        code = getattr(gc, cfg["family"])(**kwargs)
        k = code.k
    p, iters = cfg.get("p", 64), cfg.get("iters", 12)
    dtype = np.dtype(cfg.get("dtype", "float64"))
    C = np.random.default_rng(7).uniform(0.5, 1.5, size=(k, p)).astype(dtype)
    out = np.empty((k, p), dtype=dtype)
    nan_workers = set(cfg.get("nan_workers", []))
    crash = cfg.get("crash")                       # [worker, iteration]
    alloc = cfg.get("check_alloc", False)
    state = {"calls": 0, "peak": 0, "base": 0}

    def partial_gradient(w: np.ndarray, j: int) -> np.ndarray:
        # g_j(w) = C_j * w + j: depends on the iteration's parameters, so a stale message would not match
        if alloc and rank > 0:                     # peak allocation since the previous call, beyond live memory
            if state["calls"] >= 3 * k:
                state["peak"] = max(state["peak"], tracemalloc.get_traced_memory()[1] - state["base"])
            if state["calls"] == 0:
                tracemalloc.start()
            tracemalloc.reset_peak()
            state["base"] = tracemalloc.get_traced_memory()[0]
            state["calls"] += 1
        if crash is not None and rank == crash[0] + 1 and w[0] >= crash[1]:
            raise RuntimeError(f"injected crash on rank {rank}")
        np.multiply(C[j], w, out=out[j])
        out[j] += j
        if rank - 1 in nan_workers:
            out[j][0] = np.nan
        return out[j]

    delay = NoDelay()
    for d in cfg.get("delays", []):
        kind = d.pop("kind")
        delay = delay + {"fixed": FixedDelay, "hang": Hang, "shifted-exp": ShiftedExponential}[kind](**d)
    errors = []
    budget = []

    def step(w: np.ndarray, g: np.ndarray, t: int) -> None:
        if alloc:
            if t >= 2:
                budget.append(tracemalloc.get_traced_memory()[1] - base[0])
        if cfg.get("master_crash") == t:
            raise RuntimeError("injected crash on the master")
        if cfg.get("check", True):
            G = np.stack([C[j].astype(np.float64) * w + j for j in range(k)])
            ref = G.sum(axis=0)
            if cfg.get("norm") == "fro":           # approximate codes: ||g_hat - g||_2 / ||G||_F
                errors.append(float(np.linalg.norm(g - ref) / np.linalg.norm(G)))
            else:                                  # relative to the sum of |g_j| (the rounding scale)
                errors.append(float(np.abs(g - ref).max() / np.abs(G).sum(axis=0).max()))
        w += 1.0                                   # w[0] counts iterations (used by the crash injection)
        if alloc:
            tracemalloc.reset_peak()
            base[0] = tracemalloc.get_traced_memory()[0]

    base = [0]
    if alloc and rank == 0:
        tracemalloc.start()
    kw = {k2: cfg[k2] for k2 in ("timeout", "wait_for", "deadline", "decoder", "policy", "master_poll")
          if k2 in cfg}
    grad = partial_gradient
    if cfg.get("coded"):                           # the coded_gradient fast path, from the same partials
        m = 1 if isinstance(code, str) else code.m
        q = -(-p // m)
        message = np.empty(q, dtype=dtype)

        def coded_gradient(w: np.ndarray, weights: np.ndarray) -> np.ndarray:
            W = weights.reshape(k, m)
            assert W.dtype == dtype and not weights.flags.writeable
            padded = np.zeros(m * q, dtype=dtype)
            message[...] = 0
            for j in np.flatnonzero(np.any(W != 0, axis=1)):
                padded[:p] = partial_gradient(w, int(j))
                for u in range(m):
                    np.add(message, W[j, u] * padded[u * q:(u + 1) * q], out=message)
            return message                         # the same buffer every call: sent without a copy

        kw["coded_gradient"] = coded_gradient
        grad = None
    res = train(code, np.zeros(p, dtype=dtype), grad, step, iterations=iters, delay=delay, **kw)
    if code == "allreduce":                        # the baseline steps on every worker: their checks, worst first
        every = MPI.COMM_WORLD.gather(errors, root=0)
        if res is not None:
            assert all(len(e) == iters for e in every[1:]), [len(e) for e in every]
            errors = [max(e[t] for e in every[1:]) for t in range(iters)]
    if alloc and rank > 0 and state["peak"] > p * dtype.itemsize // 4:
        raise AssertionError(f"rank {rank} allocated {state['peak']} bytes per iteration (p*itemsize = "
                             f"{p * dtype.itemsize})")
    if res is not None:
        used = res.used
        print("RESULT " + json.dumps({
            "errors": errors, "estimates": [float(x) for x in res.error_estimate],
            "used": [np.flatnonzero(u).tolist() for u in used], "need": res.need,
            "alloc_peak": max(budget) if budget else None, "gradient_bytes": p * dtype.itemsize,
            "mean_time": float(res.time.mean()), "iters": res.iterations,
            "stale": res.stale, "summary": {k2: v for k2, v in res.summary().items() if k2 != "predicted"},
        }), flush=True)


if __name__ == "__main__":
    main()
