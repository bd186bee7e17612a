"""How close gradcodes.mpi runs to the communication floor of its message pattern, paired in one MPI job.

    python benchmarks/runtime/runtime_floor.py                   # flat on 3 ranks, tree on 7, p = 1e3, 1e5, 1e6
    python benchmarks/runtime/runtime_floor.py --ranks 9         # flat on 9 ranks (cyclic repetition n = 8, s = 2)
    python benchmarks/runtime/runtime_floor.py --smoke           # p = 1e3, a few iterations, writes nothing (the tests)

Every job runs, for each gradient length ``p`` and interleaved ``--repeats`` times, these programs on the same
ranks (no injected delays; the partial gradients are returned from preallocated arrays, so what is measured is
the runtime and its messages, not a model; the master's step does nothing):

* ``floor``: the minimal mpi4py program with the same message pattern: the master ``Isend``s the parameters to
  every worker without copying, keeps one ``Irecv`` posted per child, polls ``Testany`` (no sleep) until the
  first ``n - s`` replies of the current iteration (older ones dropped and re-posted), and combines each with
  one multiply-add using decoding coefficients cached per responder set; a worker takes the parameters through
  a posted ``Irecv`` (two buffers, the next receive posted as soon as one completes; polled with the same sleep
  as gradcodes' workers) and replies with ``Isend`` of a preallocated buffer. On the tree each parent does the
  same with its first ``n - s`` children and adds the result to its own message.
* ``floor+encode``: the same, the worker building its message from its ``s + 1`` partial gradients into the
  preallocated buffer with coefficients computed before the loop (one pass per partition: a copy or add for
  ``+-1``, BLAS ``axpy`` otherwise; the arithmetic of :meth:`gradcodes.LinearCode.encode_worker` without its
  per-call validation).
* ``Master/Worker``, ``train``: gradcodes with ``partial_gradient``; ``train+coded``: gradcodes with the
  ``coded_gradient`` callback (returning a preallocated message: the cost of the runtime alone).
* ``Allreduce (workers)`` (flat only): the data-parallel program users write, by hand in mpi4py: the workers'
  communicator split off once before the loop; each worker copies its partial gradient into the send buffer and
  calls a blocking ``MPI.Allreduce`` on the workers' communicator (the step does nothing, as in every program
  here); no message to or from the master, which waits for the end sleeping 10 ms between tests of an
  ``Ibarrier``. Timed on worker 1, from the copy to the end of ``Allreduce``. ``allreduce_train`` is gradcodes'
  baseline doing the same (timed by worker 1 too, which sends the master its records without blocking).
* ``Bcast+Allreduce`` (flat only): the former baseline's pattern, kept for comparison (blocking ``MPI.Bcast`` of
  the parameters from the master, blocking ``MPI.Allreduce`` over all ranks, the master adding zeros); its ratio
  is printed against ``Allreduce (workers)``, without a target.

Pairs: every repeat runs each program once, each gradcodes program next to its reference, in reverse order every
other repeat; a gradcodes run and its reference's run of the same repeat form a pair. Reported: per program the
median over repeats of the per-run median iteration time (the first ``WARMUP`` iterations left out), the CPU
time per iteration summed over the ranks (``time.process_time``; less sensitive to other jobs on the machine than
the wall clock, though the spinning master's follows the wall clock), and the median over the pairs of the
per-pair ratios against the floors (wall clock and CPU). Targets: ``Master/Worker`` and ``train`` within 1.2 x
``floor+encode`` at ``p >= 1e5`` and 1.5 x at ``1e3``; ``train+coded`` within 1.2 x ``floor`` at ``1e6``;
``allreduce_train`` within 1.1 x ``Allreduce (workers)``. The machine's load average and the command line are
printed with the results.

No rank ever blocks on a send alone: large messages go by rendezvous (a send completes only once its receiver has
posted a matching receive), and a parent re-posts its children's receives only while it polls them, so a master
waiting for every parameter send, or a parent waiting for its last reply, would close a cycle of waits (the
first version of this program stalled that way on the tree at ``p >= 1e5``). The floor's master frees its
finished parameter sends without waiting for a slow worker (``Testsome``), as gradcodes' master does.
"""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
import tempfile
import time

import numpy as np

WARMUP = 10
#: process_time() of this rank, appended once per iteration by the program running (every rank)
CPU: list[float] = []
POLL = 1e-4                      # the workers' sleep between polls, in every program (gradcodes' default)


# ------------------------------------------------------------------------------------------------ MPI side
def _code(cfg: dict, size: int):
    import gradcodes as gc

    if cfg["layout"] == "tree":
        n, L, s = cfg["tree"]
        return gc.coded_reduce(n, L, s)
    return gc.cyclic_repetition(size - 1, cfg["s"], rng=0)


def floor_run(comm, code, p: int, iters: int, encode: bool, bufs: np.ndarray) -> list[float]:
    """The minimal program (flat or tree); returns the master's per-iteration seconds (workers: [])."""
    from mpi4py import MPI

    import gradcodes as gc
    from gradcodes.mpi import layout_for

    lay = layout_for(code)
    rank = comm.Get_rank()
    tree = isinstance(code, gc.CodedReduceCode)
    dec = code.inner if tree else code
    need = dec.n - dec.s
    kids = lay.children(rank)
    K = len(kids)
    TAG0 = 3
    inbox = np.zeros((K, p))
    coef: dict[tuple[int, ...], list[tuple[int, float]]] = {}
    times: list[float] = []

    def post(i: int):
        return comm.Irecv(inbox[i], source=kids[i], tag=MPI.ANY_TAG)

    reqs = [post(i) for i in range(K)]
    recvd = [0] * K                                         # each child sends exactly `iters` messages
    held: dict[int, int] = {}                               # a newer iteration's reply, kept until then
    st = MPI.Status()

    def repost(i: int) -> None:
        reqs[i] = post(i) if recvd[i] < iters else MPI.REQUEST_NULL

    def gather(t: int, out: np.ndarray, accumulate: bool, spin: bool) -> None:
        got: list[int] = []
        for i, tg in list(held.items()):                   # a tree parent may be behind its children
            if tg <= t:
                del held[i]
                if tg == t:
                    got.append(i)
                else:
                    repost(i)
        while len(got) < need:
            idx, flag = MPI.Request.Testany(reqs, st)
            if not flag or idx == MPI.UNDEFINED:
                if not spin:
                    time.sleep(POLL)
                continue
            recvd[idx] += 1
            tag = st.Get_tag() - TAG0
            if tag < t:                                     # an older iteration's reply: drop, re-post
                repost(idx)
            elif tag > t:
                held[idx] = tag
            else:
                got.append(idx)
        key = tuple(sorted(got))
        c = coef.get(key)
        if c is None:
            A = np.asarray(dec.decoding_matrix(list(key)), dtype=np.float64)
            c = coef[key] = [(i, float(A[0, i])) for i in key if A[0, i] != 0]
        for a, (i, ci) in enumerate(c):
            if a == 0 and not accumulate:
                np.multiply(inbox[i], ci, out=out)
            else:
                gc._core.apply.combine_rows(out, [ci], inbox, [i], accumulate=True)
        for i in got:
            repost(i)

    if rank == 0:
        w = np.ones(p)
        out = np.empty(p)
        sends: list = []
        for t in range(iters):
            t0 = time.perf_counter()
            if sends:                                   # free the finished sends; never wait for a slow worker
                MPI.Request.Testsome(sends)
                sends = [r for r in sends if r != MPI.REQUEST_NULL]
            sends += [comm.Isend(w, dest=r, tag=TAG0 + t) for r in range(1, comm.Get_size())]
            gather(t, out, False, True)
            times.append(time.perf_counter() - t0)
            CPU.append(time.process_time())
    else:
        worker = rank - 1
        parts = [int(j) for j in code.supports[worker]]
        pbufs = np.empty((2, p))                        # the next parameters land while these are in use
        msg = np.zeros(p)
        mine = [bufs[j] for j in parts]
        row = code.float_B(np.float64)[worker]
        nz = [a for a, j in enumerate(parts) if row[j] != 0]
        cs = [float(row[parts[a]]) for a in nz]
        preq = comm.Irecv(pbufs[0], source=0, tag=MPI.ANY_TAG)
        sreq = MPI.REQUEST_NULL
        for t in range(iters):
            while not preq.Test():
                time.sleep(POLL)
            params = pbufs[t % 2]  # noqa: F841  (the parameters a real worker would compute with)
            preq = comm.Irecv(pbufs[(t + 1) % 2], source=0, tag=MPI.ANY_TAG) if t + 1 < iters else MPI.REQUEST_NULL
            while not sreq.Test():                      # the previous reply: polled, as gradcodes' workers do
                time.sleep(POLL)
            if encode:                                   # precomputed coefficients, one pass per partition
                gc._core.apply.combine_rows(msg, cs, mine, nz)
            if K:
                gather(t, msg, True, False)
            sreq = comm.Isend(msg, dest=lay.parent(rank), tag=TAG0 + t)
            CPU.append(time.process_time())
        sends = [sreq]
    # The end: the last sends complete while the late replies are dropped (so that the next program starts from an
    # empty queue). Never a blocking wait on a send alone: a large message is sent by rendezvous, so it completes
    # only once its receiver has posted a receive, and a parent re-posts its children's receives only while it
    # polls them; a rank waiting for its own send without polling its children closes a cycle of waits.
    for i in list(held):
        del held[i]
        repost(i)
    while True:
        done = MPI.Request.Testall(sends)
        idx, flag = MPI.Request.Testany(reqs) if reqs else (MPI.UNDEFINED, True)
        if flag and idx != MPI.UNDEFINED:
            recvd[idx] += 1
            repost(idx)
        elif done and all(r >= iters for r in recvd):
            break
        elif rank and not flag:
            time.sleep(POLL)
    comm.Barrier()
    return times


def collective_run(comm, p: int, iters: int, bufs: np.ndarray) -> list[float]:
    """Blocking Bcast of the parameters + each worker's partial gradient + blocking Allreduce over all ranks."""
    from mpi4py import MPI

    rank = comm.Get_rank()
    w, send, recv = np.ones(p), np.zeros(p), np.zeros(p)
    times = []
    for _ in range(iters):
        t0 = time.perf_counter()
        comm.Bcast(w, root=0)
        if rank:
            np.copyto(send, bufs[rank - 1])
        comm.Allreduce(send, recv, op=MPI.SUM)
        times.append(time.perf_counter() - t0)
        CPU.append(time.process_time())
    return times if rank == 0 else []


def workers_allreduce_run(comm, p: int, iters: int, bufs: np.ndarray) -> list[float]:
    """The users' data-parallel loop: Allreduce among the workers only, a local step (nothing here), no master
    traffic; worker 1's per-iteration seconds, returned on the master."""
    from mpi4py import MPI

    rank = comm.Get_rank()
    sub = comm.Split(0 if rank else MPI.UNDEFINED, rank)         # once, before the loop
    times: list[float] = []
    if rank:
        send, recv = np.zeros(p), np.zeros(p)
        for _ in range(iters):
            t0 = time.perf_counter()
            np.copyto(send, bufs[rank - 1])
            sub.Allreduce(send, recv, op=MPI.SUM)
            times.append(time.perf_counter() - t0)
            CPU.append(time.process_time())
        sub.Free()
    end = comm.Ibarrier()
    while not end.Test():
        time.sleep(1e-2)                           # the master idles (it is not part of the program)
    if rank == 1:
        comm.send(times, dest=0)
    return comm.recv(source=1) if rank == 0 else []


def gradcodes_run(comm, code, p: int, iters: int, how: str, bufs: np.ndarray) -> list[float]:
    from gradcodes.mpi import Master, Worker, allreduce_train, train

    first = int(code.supports[comm.Get_rank() - 1][0]) if comm.Get_rank() and how != "allreduce_train" else \
        comm.Get_rank() - 1

    def grad(w, j):
        if j == first:                             # once per iteration on a worker
            CPU.append(time.process_time())
        return bufs[j]

    q = bufs.shape[1]
    message = np.zeros(q)

    def coded(w, weights):
        CPU.append(time.process_time())
        return message

    def mark(t, seconds, loss):                    # the master, after each iteration
        CPU.append(time.process_time())

    def step(w, g, t):
        return None

    if how == "allreduce_train":
        res = allreduce_train(np.ones(p), grad, step, iterations=iters, comm=comm, callback=mark)
        return [] if res is None else res.time.tolist()
    if how in ("train", "train+coded"):
        kw = {"coded_gradient": coded} if how == "train+coded" else {}
        res = train(code, np.ones(p), None if kw else grad, step, iterations=iters, comm=comm, callback=mark, **kw)
        return [] if res is None else res.time.tolist()
    if comm.Get_rank() == 0:                       # Master/Worker: the custom loop of docs/runtime.md
        master = Master(code, p, comm=comm)
        w = master.writable_params(np.ones(p))
        times = []
        for t in range(iters):
            t0 = time.perf_counter()
            master.broadcast(w, t)
            master.aggregate(t)
            w = master.writable_params(w)
            times.append(time.perf_counter() - t0)
            CPU.append(time.process_time())
        master.stop()
        return times
    Worker(code, p, grad, comm=comm).run()
    return []


def job(cfg: dict) -> None:
    from mpi4py import MPI

    comm = MPI.COMM_WORLD
    code = _code(cfg, comm.Get_size())
    out = []
    for p in cfg["ps"]:
        bufs = np.random.default_rng(0).normal(size=(max(code.k, comm.Get_size()), p))
        for rep in range(cfg["repeats"]):
            # each repeat runs every program once, in reverse order every other repeat, so that a gradcodes run
            # and its floor run are neighbours in time (a pair) and a drift of the load favours neither
            for prog in cfg["programs"][::1 if rep % 2 == 0 else -1]:
                CPU.clear()
                comm.Barrier()
                if prog == "floor":
                    t = floor_run(comm, code, p, cfg["iters"], False, bufs)
                elif prog == "floor+encode":
                    t = floor_run(comm, code, p, cfg["iters"], True, bufs)
                elif prog == "Bcast+Allreduce":
                    t = collective_run(comm, p, cfg["iters"], bufs)
                elif prog == "Allreduce (workers)":
                    t = workers_allreduce_run(comm, p, cfg["iters"], bufs)
                else:
                    t = gradcodes_run(comm, code, p, cfg["iters"], prog, bufs)
                marks = CPU[WARMUP:]
                cpu = (marks[-1] - marks[0]) / (len(marks) - 1) if len(marks) > 1 else float("nan")
                cpus = comm.gather(cpu, root=0)
                if comm.Get_rank() == 0:
                    out.append({"p": p, "program": prog, "repeat": rep, "time": t, "cpu": cpus})
    if comm.Get_rank() == 0:
        with open(cfg["out"], "w") as fh:
            json.dump(out, fh)


# ------------------------------------------------------------------------------------------------ driver
def launch(ranks: int, cfg: dict) -> list[dict]:
    exe = os.path.join(os.path.dirname(sys.executable), "mpiexec")
    with tempfile.TemporaryDirectory() as tmp:
        cfg = dict(cfg, out=os.path.join(tmp, "out.json"))
        import gradcodes  # the ranks import the gradcodes this driver imports

        where = os.path.dirname(os.path.dirname(os.path.abspath(gradcodes.__file__)))
        env = dict(os.environ, OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1",
                   PYTHONPATH=os.pathsep.join([where, os.environ.get("PYTHONPATH", "")]))
        cmd = [exe, "-n", str(ranks), sys.executable, "-m", "mpi4py", os.path.abspath(__file__), "--job",
               json.dumps(cfg)]
        subprocess.run(cmd, check=True, timeout=3600, env=env)
        with open(cfg["out"]) as fh:
            return json.load(fh)


def _target(prog: str, p: int) -> tuple[str | None, float | None]:
    """The reference program of ``prog`` and the target ratio (None: no target)."""
    if prog in ("Master/Worker", "train"):
        return "floor+encode", 1.5 if p < 10**5 else 1.2
    if prog == "train+coded":
        return "floor", 1.2 if p >= 10**6 else None
    if prog == "allreduce_train":
        return "Allreduce (workers)", 1.1
    if prog == "Bcast+Allreduce":                  # the former baseline's pattern: what it cost, no target
        return "Allreduce (workers)", None
    return None, None


def table(rows: list[dict], layout: str, ranks: int, say) -> bool:
    """Print medians and paired ratios; returns whether every target was met.

    A program's run in repeat ``r`` and its reference's run in the same repeat are a pair (neighbours in time);
    the ratio reported is the median over the pairs of (median iteration time of the run / that of the
    reference run), which a load that changes between repeats moves much less than a ratio of overall medians.
    CPU: process time per iteration after the warm-up, summed over the ranks, median over repeats, and its
    paired ratio (the master spins, so its CPU time follows the wall clock; the workers' does not)."""
    runs: dict[tuple[int, str], dict[int, tuple[float, float]]] = {}
    for r in rows:
        wall = float(np.median(r["time"][WARMUP:] or r["time"]))
        cpu = float(np.nansum(r["cpu"])) if not all(np.isnan(r["cpu"])) else float("nan")
        runs.setdefault((r["p"], r["program"]), {})[r["repeat"]] = (wall, cpu)
    ok = True
    say(f"\n{layout} on {ranks} ranks: ms = median over repeats of the per-run median iteration time; ratio = median "
        "over repeats of the paired ratios (wall clock, and CPU time of all ranks)")
    say(f"{'p':>9}  {'program':<21}{'ms':>9}{'cpu ms':>9}  {'ratio':<28}{'cpu ratio':>9}  target")
    for p, prog in runs:
        mine = runs[p, prog]
        wall = float(np.median([v[0] for v in mine.values()]))
        cpu = float(np.median([v[1] for v in mine.values()]))
        ref, goal = _target(prog, p)
        text, ctext, verdict = "", "", ""
        if ref is not None and (p, ref) in runs:
            other = runs[p, ref]
            pairs = [r for r in mine if r in other]
            ratio = float(np.median([mine[r][0] / other[r][0] for r in pairs]))
            cratio = float(np.median([mine[r][1] / other[r][1] for r in pairs]))
            text, ctext = f"{ratio:.2f} x {ref}", f"{cratio:.2f}"
            if goal is not None:
                good = ratio <= goal
                ok &= good
                verdict = f"<= {goal} x  {'ok' if good else 'NOT MET'}"
        say(f"{p:>9}  {prog:<21}{1e3 * wall:>9.3f}{1e3 * cpu:>9.3f}  {text:<28}{ctext:>9}  {verdict}")
    return ok


def main(argv: list[str]) -> int:
    import argparse
    import importlib.util

    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--smoke", action="store_true", help="p = 1e3, a few iterations, one repeat (seconds)")
    ap.add_argument("--ranks", type=int, default=3, help="ranks of the flat job (cyclic repetition n = ranks - 1)")
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--iters", type=int, default=70, help="iterations per run (the first 10 are warm-up)")
    ap.add_argument("--ps", default="1000,100000,1000000")
    ap.add_argument("--layouts", default="flat,tree")
    ap.add_argument("--programs", default=None, help="only these programs (comma-separated names)")
    ap.add_argument("--out", default=None, help="also write the table to this file")
    args = ap.parse_args(argv)
    exe = os.path.join(os.path.dirname(sys.executable), "mpiexec")
    if importlib.util.find_spec("mpi4py") is None or not os.path.exists(exe):
        print("mpi4py or mpiexec not installed: skipped (pip install -e '.[mpi-local]')")
        return 0
    lines: list[str] = []

    def say(s: str = "") -> None:
        print(s, flush=True)
        lines.append(s)

    if args.smoke:
        args.ps, args.repeats, args.iters, args.ranks = "1000", 1, WARMUP + 3, 3
    ps = [int(float(x)) for x in args.ps.split(",")]
    la = os.getloadavg()
    say("command: python benchmarks/runtime/runtime_floor.py " + shlex.join(argv))
    say(f"runtime floor, {time.strftime('%Y-%m-%d %H:%M:%S UTC', time.gmtime())}, load average at start "
        f"{la[0]:.2f} {la[1]:.2f} {la[2]:.2f}, {os.cpu_count()} cores; {args.repeats} repeats x {args.iters} "
        f"iterations ({WARMUP} warm-up), workers poll every {POLL:g} s, the master spins")
    ok = True
    # each gradcodes program next to its reference (pairs neighbours in time)
    flat_progs = ["floor", "train+coded", "floor+encode", "Master/Worker", "train", "Bcast+Allreduce",
                  "Allreduce (workers)", "allreduce_train"]
    tree_progs = ["floor", "train+coded", "floor+encode", "Master/Worker", "train"]
    s = 1 if args.ranks <= 4 else 2
    for layout in args.layouts.split(","):
        if layout == "flat":
            ranks, cfg = args.ranks, {"layout": "flat", "s": s, "programs": flat_progs}
            name = f"flat cyclic_repetition(n={args.ranks - 1}, s={s})"
        else:
            ranks, cfg = 7, {"layout": "tree", "tree": [2, 2, 1], "programs": tree_progs}
            name = "tree coded_reduce(2, 2, 1) (1 + 2 + 4)"
        if args.programs:
            cfg["programs"] = [x for x in cfg["programs"] if x in args.programs.split(",")]
        rows = launch(ranks, dict(cfg, ps=ps, repeats=args.repeats, iters=args.iters))
        ok &= table(rows, name, ranks, say)
        la = os.getloadavg()
        say(f"load average after the {layout} job {la[0]:.2f} {la[1]:.2f} {la[2]:.2f}")
    la = os.getloadavg()
    say(f"\nload average at end {la[0]:.2f} {la[1]:.2f} {la[2]:.2f}")
    say("all targets met" if ok else "SOME TARGETS NOT MET")
    if args.out and not args.smoke:
        with open(args.out, "w") as fh:
            fh.write("\n".join(lines) + "\n")
    return 0


if __name__ == "__main__":
    if len(sys.argv) > 2 and sys.argv[1] == "--job":
        job(json.loads(sys.argv[2]))
    else:
        sys.exit(main(sys.argv[1:]))
