"""An MPI job with real faults, driven by tests/test_mpi.py (``mpiexec -n 4 python -m mpi4py
tests/mpi_fault_job.py CONFIG``): n = 3 workers of ``cyclic_repetition(3, 1)`` (s = 1), or with ``"code": "tree"``
the CodedReduce tree ``coded_reduce(2, 2, 1)`` on 7 ranks; float64.

CONFIG is JSON: ``"faults": {"<worker index>": kind}`` (tests/_faults.py: ``"loop"``, ``"spin"``, ``"sigstop"``,
``"sigkill"``, ``"exit0"``, ``"exit1"``, ``"raise"``, ``"sleep"``) happen inside the user's ``partial_gradient``,
once, at the first call at iteration ``"at"`` or later; not through the library's delay models. Rank 0 checks every
iteration's decoded gradient against the uncoded sum of the partial gradients (float64) and prints ``RESULT {...}``
(the worst relative error, the iterations, every iteration's time and used workers, the failures
:func:`gradcodes.mpi.train` reported, the seconds from the last iteration to its return), then ``MASTER_EXIT`` just
before the process exits.
"""

from __future__ import annotations

import json
import sys
import time

import numpy as np
from _faults import Fault


def main() -> None:
    from mpi4py import MPI

    import gradcodes as gc
    from gradcodes.mpi import train

    cfg = json.loads(sys.argv[1])
    comm = MPI.COMM_WORLD
    rank = comm.Get_rank()
    n = comm.Get_size() - 1
    code = gc.coded_reduce(2, 2, 1) if cfg.get("code") == "tree" else gc.cyclic_repetition(n, 1, rng=0)
    k, p, iters = code.k, 32, cfg.get("iters", 8)
    C = np.random.default_rng(7).uniform(0.5, 1.5, size=(k, p))
    out = np.empty((k, p))
    fault = Fault(cfg, rank)

    def partial_gradient(w: np.ndarray, j: int) -> np.ndarray:
        fault(int(w[0]))                                # w[0] counts the iterations
        np.multiply(C[j], w, out=out[j])
        out[j] += j
        return out[j]

    worst = [0.0]
    last = [0.0]

    def step(w: np.ndarray, g: np.ndarray, t: int) -> None:
        ref = sum(C[j] * w + j for j in range(k))
        worst[0] = max(worst[0], float(np.abs(g - ref).max() / np.abs(ref).max()))
        w += 1.0                                        # w[0] counts the iterations (the faults' trigger)
        last[0] = time.monotonic()

    kw = {"grace": cfg["grace"]} if "grace" in cfg else {}
    res = train(code, np.zeros(p), partial_gradient, step, iterations=iters, timeout=cfg.get("timeout", 20.0),
                **kw)
    if rank == 0:
        assert res is not None
        print("RESULT " + json.dumps({
            "grad_err": worst[0], "iterations": res.iterations, "slowest": float(res.time.max()),
            "times": res.time.tolist(), "used": [np.flatnonzero(u).tolist() for u in res.used],
            "failures": {str(r): v for r, v in getattr(res, "failures", {}).items()},
            "after_last": time.monotonic() - last[0], "last_at": time.time() - (time.monotonic() - last[0])}),
            flush=True)
        print(f"MASTER_EXIT {time.time()!r}", flush=True)


if __name__ == "__main__":
    main()
