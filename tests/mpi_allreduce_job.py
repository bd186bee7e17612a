"""An MPI job driven by tests/test_mpi_allreduce.py: ``gradcodes.mpi.allreduce_train`` (the data-parallel
baseline) on a least-squares problem, run as ``mpiexec -n N python -m mpi4py tests/mpi_allreduce_job.py CONFIG``.

Every rank passes ``allreduce_train`` a communicator that logs each call made on it, and on every communicator
derived from it (name, bytes of the numpy buffers passed, size of the communicator); the master's callback marks
each iteration in its log. Rank 0 then trains the same problem in one process and prints one JSON line
``RESULT {...}``: the distance of the final parameters and losses to single-process training, whether every worker
ended with the master's parameters, the master's calls between its first and last iteration, and the workers'
``Allreduce`` calls.
"""

from __future__ import annotations

import json
import sys
import zlib

import numpy as np


def main() -> None:
    from mpi4py import MPI

    from gradcodes.mpi import FixedDelay, Hang, NoDelay, allreduce_train

    cfg = json.loads(sys.argv[1])
    world = MPI.COMM_WORLD
    rank, n = world.Get_rank(), world.Get_size() - 1
    p, iters = cfg.get("p", 40), cfg.get("iters", 12)
    rng = np.random.default_rng(3)
    X = rng.normal(size=(20 * n, p))
    y = X @ rng.normal(size=p) + 0.1 * rng.normal(size=20 * n)
    parts = np.array_split(np.arange(20 * n), n)
    lr = 1.0 / np.linalg.norm(X, 2) ** 2

    def partial_gradient(w: np.ndarray, j: int) -> np.ndarray:
        A, b = X[parts[j]], y[parts[j]]
        return A.T @ (A @ w - b)

    def loss(w: np.ndarray) -> float:
        return float(0.5 * np.sum((X @ w - y) ** 2))

    def step(w: np.ndarray, g: np.ndarray, t: int):
        if cfg.get("functional"):                 # return new parameters instead of updating in place
            return w - lr * g
        w -= lr * g
        return None

    log: list = []

    class Logged:
        """Delegates to an mpi4py communicator, logging every call (and wrapping the communicators it returns)."""

        def __init__(self, comm) -> None:
            self._comm = comm

        def __getattr__(self, name: str):
            attr = getattr(self._comm, name)
            if not callable(attr) or name.startswith("Get_"):
                return attr

            def call(*a, **k):
                nbytes = sum(x.nbytes for x in a if isinstance(x, np.ndarray))
                log.append([name, int(nbytes), self._comm.Get_size()])
                out = attr(*a, **k)
                if isinstance(out, MPI.Comm) and out != MPI.COMM_NULL:
                    return Logged(out)
                return out
            return call

    def mark(t: int, seconds: float, value) -> None:
        log.append(["ITER", t, None])

    delay = NoDelay()
    for d in cfg.get("delays", []):
        kind = d.pop("kind")
        delay = delay + {"fixed": FixedDelay, "hang": Hang}[kind](**d)
    w0 = np.linspace(-1, 1, p)
    w = w0.copy() if rank == 0 else np.zeros(p)    # only the master's initial values count
    res = allreduce_train(w, partial_gradient, step, iterations=iters, comm=Logged(world), delay=delay, loss=loss,
                          callback=mark, blocking=cfg.get("blocking", True), timeout=cfg.get("timeout", 60.0))
    sums = world.gather(zlib.crc32(w.data), root=0)
    logs = world.gather(log, root=0)
    if res is None:
        return
    # single-process training: the same partial gradients summed in one process, the same step
    ref, ref_loss = w0.copy(), []
    for t in range(iters):
        g = sum(partial_gradient(ref, j) for j in range(n))
        new = step(ref, g, t)
        ref = new if new is not None else ref
        ref_loss.append(loss(ref))
    marks = [i for i, e in enumerate(log) if e[0] == "ITER"]
    during = [e for e in log[marks[0] + 1:marks[-1]] if e[0] != "ITER"]
    worker_allreduce = [[e for e in lg if "llreduce" in e[0]] for lg in logs[1:]]
    print("RESULT " + json.dumps({
        "param_error": float(np.abs(w - ref).max() / np.abs(ref).max()),
        "loss_error": float(np.max(np.abs(res.loss - ref_loss) / np.abs(ref_loss))),
        "marks": len(marks), "iterations": res.iterations, "workers": res.workers,
        "times_positive": bool(np.all(res.time > 0)), "wait_le_time": bool(np.all(res.wait <= res.time)),
        "times": res.time.tolist(), "waits": res.wait.tolist(),
        "worker_sums": sums[1:], "master_sum": zlib.crc32(w.data),
        "master_during": during, "master_all": log, "worker_allreduce": worker_allreduce,
    }), flush=True)


if __name__ == "__main__":
    main()
