"""An MPI job driven by tests/test_mpi_partial.py (``mpiexec -n N python -m mpi4py tests/mpi_partial_job.py CONFIG``).

CONFIG is JSON: the protocol (``n``, ``s``, ``m``), ``p``, ``iters``, ``dtype``, a slow worker (``slow``: worker and
seconds per iteration), hung workers (``hang``), NaN gradients on every worker (``nan``) and a ``deadline``
(seconds after the broadcast: the master's least-squares estimate, checked against ``code.estimate``). Rank 0
checks every iteration's decoded gradient against the uncoded sum of the same chunk gradients (or that estimate)
and prints one JSON line ``RESULT {...}``; a failed check raises, which aborts the job.
"""

from __future__ import annotations

import json
import sys

import numpy as np


def main() -> None:
    from mpi4py import MPI

    import gradcodes as gc
    from gradcodes.mpi import FixedDelay, Hang, NoDelay
    from gradcodes.mpi._partial import PartialMaster, PartialWorker

    cfg = json.loads(sys.argv[1])
    comm = MPI.COMM_WORLD
    code = gc.partial_straggler_code(cfg["n"], cfg["s"], cfg.get("m", 1))
    p, iters = cfg.get("p", 50), cfg.get("iters", 4)
    dtype = np.dtype(cfg.get("dtype", "float64"))
    C = np.random.default_rng(7).uniform(0.5, 1.5, size=(code.k, p)).astype(dtype)
    out = np.empty((code.k, p), dtype=dtype)

    nan = cfg.get("nan", False)                     # every worker's chunk gradients are NaN

    def gradient(j: int, w: np.ndarray) -> np.ndarray:
        # g_j(w) = C_j * w + j: depends on the iteration's parameters, so a stale message would not match
        np.multiply(C[j], w, out=out[j])
        out[j] += np.nan if nan else j
        return out[j]

    delay = NoDelay()
    if cfg.get("slow"):
        delay = delay + FixedDelay(cfg["slow"][1], workers=[cfg["slow"][0]])
    if cfg.get("hang"):
        delay = delay + Hang(cfg["hang"])
    if comm.Get_rank() == 0:
        master = PartialMaster(code, comm, p, dtype=dtype)
        comm.Barrier()                              # every rank set up: iteration 0 does not time the start-up
        errors, used, arrived, waits, sq = [], [], [], [], []
        w = np.ones(p, dtype=dtype)
        for t in range(iters):
            w[:] = 1 + t
            master.broadcast(w, t)
            try:
                g, info = master.aggregate(t, timeout=60, deadline=cfg.get("deadline"))
            except gc.DecodingError as exc:             # NaN messages: named, never a silently wrong sum
                master.stop()
                print("RESULT " + json.dumps({"nonfinite": exc.responders, "kind": type(exc).__name__}), flush=True)
                return
            G = np.stack([C[j].astype(np.float64) * (1 + t) + j for j in range(code.k)])
            want = G.sum(axis=0)
            if info["squared_error"]:               # stopped at the deadline: the code's own estimate
                used_rows = list(info["messages"])
                Y = (np.asarray(code.B, dtype=np.float64) @ G.reshape(code.k * code.m, -1))[used_rows]
                want = code.estimate(used_rows, Y, length=p)
                sq.append(info["squared_error"])
            err = float(np.max(np.abs(g - want)) / np.max(np.abs(want)))
            unit = np.finfo(dtype).eps
            if err > 8 * code.k * unit:
                raise AssertionError(f"iteration {t}: relative error {err:.3g}")
            errors.append(err)
            used.append(list(info["messages"]))
            arrived.append(info["arrived"])
            waits.append(info["wait"])
        master.stop()
        print("RESULT " + json.dumps({"errors": errors, "used": used, "arrived": arrived, "waits": waits, "sq": sq,
                                      "offsets": code.offsets.tolist(), "order": [list(o) for o in code.order]}),
              flush=True)
    else:
        worker = PartialWorker(code, comm, p, gradient, dtype=dtype, delay=delay)
        comm.Barrier()
        worker.run()


if __name__ == "__main__":
    main()
