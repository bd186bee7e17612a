"""An MPI job with adversarial workers, driven by tests/test_mpi_adversarial.py
(``mpiexec -n N python -m mpi4py tests/mpi_adversarial_job.py CONFIG``).

CONFIG (JSON): ``n`` workers on a cyclic placement of ``load`` partitions, ``s``, ``a``, ``p``, ``iters``, ``liars``
(workers that add ``shift`` to their message), ``slow`` (workers that sleep ``slow_seconds`` before each message,
so that the master's first ``n - s`` are the others), ``dtype`` (of parameters and messages, default float64),
``wait_for`` (the master's). Rank 0 checks each decoded gradient against the uncoded sum and that the liars were
named, and prints ``RESULT {...}``; a failed check raises, which aborts the job.
"""

from __future__ import annotations

import json
import sys
import time

import numpy as np


def main() -> None:
    from mpi4py import MPI

    import gradcodes as gc
    from gradcodes.mpi import Master, Worker

    cfg = json.loads(sys.argv[1])
    n, load, s, a = cfg["n"], cfg["load"], cfg["s"], cfg["a"]
    placement = np.zeros((n, n), dtype=np.int64)
    for i in range(n):
        placement[i, (i + np.arange(load)) % n] = 1
    code = gc.adversarial_gc(placement, s, a, m=cfg.get("m"))
    p, iters = cfg.get("p", 16), cfg.get("iters", 4)
    C = np.random.default_rng(3).uniform(0.5, 1.5, size=(n, p))
    liars = set(cfg.get("liars", []))
    slow = set(cfg.get("slow", []))
    rank = MPI.COMM_WORLD.Get_rank()
    dtype = np.dtype(cfg.get("dtype", "float64"))
    tol = 1e-9 if dtype == np.float64 else 1e-5

    def partial_gradient(w: np.ndarray, j: int) -> np.ndarray:
        return C[j] * w + j

    if rank == 0:
        master = Master(code, p, dtype, timeout=60, wait_for=cfg.get("wait_for"))
        w = np.linspace(1.0, 2.0, p, dtype=dtype)
        found = []
        for t in range(iters):
            master.broadcast(w, t)
            g, info = master.aggregate(t)
            want = sum(partial_gradient(w, j) for j in range(n))
            if g.dtype != dtype:
                raise AssertionError(f"iteration {t}: decoded a {g.dtype} gradient from {dtype} messages")
            err = float(np.abs(g - want).max() / np.abs(want).max())
            if err > tol:
                raise AssertionError(f"iteration {t}: relative error {err:.2e}")
            wrong = set(info.adversaries)
            if not wrong <= liars or not (liars & set(info.responders)) <= wrong:
                raise AssertionError(f"iteration {t}: named {sorted(wrong)}, liars among responders "
                                     f"{sorted(liars & set(info.responders))}")
            found.append(sorted(wrong))
            w = (w * 0.9).astype(dtype)
        master.stop()
        print("RESULT " + json.dumps({"found": found, "responders": len(info.responders)}), flush=True)
    else:
        me = rank - 1

        def coded(w: np.ndarray, weights: np.ndarray) -> np.ndarray:
            if me in slow:
                time.sleep(cfg.get("slow_seconds", 1.0))
            y = sum(weights[j] * partial_gradient(w, j) for j in range(n) if weights[j] != 0)
            y = np.asarray(y, dtype=dtype)
            return y + cfg.get("shift", 5.0) if me in liars else y

        Worker(code, p, None, dtype, coded_gradient=coded).run()


if __name__ == "__main__":
    main()
