"""An MPI job with real faults, driven by tests/test_mpi.py (``mpiexec -n 4 python -m mpi4py
tests/mpi_fault_job.py CONFIG``): n = 3 workers of ``cyclic_repetition(3, 1)`` (s = 1), float64.

CONFIG is JSON: ``fault`` is what the workers in ``workers`` (worker indices) do inside the user's
``partial_gradient`` at their ``at``-th iteration: ``"loop"`` (an endless loop of 0.1 s sleeps), ``"spin"`` (an
endless busy loop), ``"sigstop"`` (``os.kill(os.getpid(), SIGSTOP)``), ``"exit1"`` / ``"exit0"``
(``os._exit``), ``"raise"`` (an exception), or ``"none"``; not through the library's delay models. Rank 0 checks
every iteration's decoded gradient against the uncoded sum of the partial gradients (float64) and prints
``RESULT {...}`` (the worst relative error, the iterations, the slowest iteration, the failures
:func:`gradcodes.mpi.train` reported, the seconds from the last iteration to its return), then ``MASTER_EXIT``
just before the process exits. With ``"cont"`` the master sends SIGCONT to the stopped workers after ``train``
returned (an operator resuming them).
"""

from __future__ import annotations

import json
import os
import signal
import sys
import time

import numpy as np


def main() -> None:
    from mpi4py import MPI

    import gradcodes as gc
    from gradcodes.mpi import train

    cfg = json.loads(sys.argv[1])
    comm = MPI.COMM_WORLD
    rank = comm.Get_rank()
    pids = comm.allgather(os.getpid())
    n = comm.Get_size() - 1
    code = gc.cyclic_repetition(n, 1, rng=0)
    k, p, iters = code.k, 32, cfg.get("iters", 8)
    C = np.random.default_rng(7).uniform(0.5, 1.5, size=(k, p))
    out = np.empty((k, p))
    fault, at = cfg.get("fault", "none"), cfg.get("at", 2)
    faulty = [rank - 1 in cfg.get("workers", [0])]     # the fault happens once

    def partial_gradient(w: np.ndarray, j: int) -> np.ndarray:
        if faulty[0] and int(w[0]) >= at:
            faulty[0] = False
            print(f"FAULT {fault} rank {rank} {time.time()!r}", flush=True)
            if fault == "loop":
                while True:
                    time.sleep(0.1)
            elif fault == "spin":
                while True:
                    pass
            elif fault == "sigstop":
                os.kill(os.getpid(), signal.SIGSTOP)
            elif fault == "exit1":
                os._exit(1)
            elif fault == "exit0":
                os._exit(0)
            elif fault == "raise":
                raise RuntimeError(f"injected failure on rank {rank}")
        np.multiply(C[j], w, out=out[j])
        out[j] += j
        return out[j]

    worst = [0.0]
    last = [0.0]

    def step(w: np.ndarray, g: np.ndarray, t: int) -> None:
        ref = sum(C[j] * w + j for j in range(k))
        worst[0] = max(worst[0], float(np.abs(g - ref).max() / np.abs(ref).max()))
        w += 1.0                                        # w[0] counts the iterations (the fault's trigger)
        last[0] = time.monotonic()

    kw = {"grace": cfg["grace"]} if "grace" in cfg else {}
    res = train(code, np.zeros(p), partial_gradient, step, iterations=iters, timeout=cfg.get("timeout", 20.0),
                **kw)
    if rank == 0:
        assert res is not None
        print("RESULT " + json.dumps({
            "grad_err": worst[0], "iterations": res.iterations, "slowest": float(res.time.max()),
            "failures": {str(r): v for r, v in getattr(res, "failures", {}).items()},
            "after_last": time.monotonic() - last[0], "last_at": time.time() - (time.monotonic() - last[0])}),
            flush=True)
        if cfg.get("cont"):
            for w in cfg.get("workers", [0]):
                os.kill(pids[w + 1], signal.SIGCONT)
        print(f"MASTER_EXIT {time.time()!r}", flush=True)


if __name__ == "__main__":
    main()
