"""Benchmark of gradcodes.torch: coded training on torch.distributed (Gloo, localhost) against DDP all-reduce.

    python benchmarks/runtime/runtime_torch.py          # launches the torchrun jobs itself (5 processes: n = 4, s = 1)
    python benchmarks/runtime/runtime_torch.py --smoke  # 3 processes, 3 iterations, no files; skipped without torch
    python benchmarks/runtime/runtime_torch.py --real-straggler-only --out FILE   # only job 4, its table to FILE
    python benchmarks/runtime/runtime_torch.py --example-only --out FILE          # only job 5, its table to FILE

Every job is ``torchrun -m gradcodes.torch`` (a small CNN on scikit-learn's 8x8 digits, global batch 240, SGD with
momentum, the same initial weights and batches for every scheme), repeated ``REPEATS`` times; one table of medians
over the repeats:

1. **No stragglers**: the coded scheme (cyclic repetition, earliest decodable set) and DDP; the per-iteration
   overhead of the master--worker exchange against DDP's all-reduce.
2. **Fixed stragglers**: ``s`` workers ``DELAY`` seconds late in every iteration (``slow:DELAY``): time to the
   stated test accuracy for the coded scheme, DDP, wait-for-all and ignore-stragglers. Targets: coded <= 1.15 x its
   no-straggler time, >= 3 x faster than DDP.
3. **Shifted exponential** (``shiftexp:A``, Reisizadeh et al. 2019; ``gc.simulate``'s model): the measured mean
   iteration time of the coded scheme against :func:`gradcodes.mpi.predict` with the per-message time calibrated
   from job 1 (``t_c = T_0 / K``, K messages waited for). Target: within 15 %.
4. **Real straggler**: no delay model; the operating system slows one worker process (the last worker, never the
   master): a controller thread of this script sends it ``SIGSTOP`` for ``STOP_S`` seconds out of every
   ``PERIOD_S`` (``SIGCONT`` for the rest, and always at the end). The workers run this script under torchrun
   (``--worker``: writes the rank's PID to the folder named by ``$GRADCODES_BENCH_PIDS``, then runs
   ``gradcodes.torch``'s built-in job). Wall-clock time to the stated test accuracy (both schemes are exact: the same
   gradients, the same accuracies) for the coded scheme and DDP over Gloo on the same workers, with and
   without the real straggler; medians of ``REPEATS`` runs (the full run reuses job 1's runs without it).
5. **The worked example's model** (``examples/torch_resnet_digits.py``: a small ResNet with BatchNorm on the digits
   upsampled to 16x16, a map-style ``Dataset``), on ``EX_N`` workers + master, global batch ``EX_BATCH``: the coded
   scheme through the example's ``Dataset`` and a ``DataLoader`` per worker (``num_workers=0``), the same through
   the in-memory tensors, and :func:`gradcodes.torch.ddp_train` (DDP on the workers, ``EX_BATCH / EX_N`` samples
   each: one partition of the coded run, so the same BatchNorm ghost batches), without stragglers and with the last
   worker ``DELAY`` seconds late every iteration. Constant-rate SGD with momentum for all (``ddp_train`` has no
   scheduler or clipping). Time to ``EX_TARGET`` test accuracy (the state after each step is copied, and
   evaluated after the run: not timed, and overlapping no other rank's work; ``steps``: the iterations until
   then) against DDP, and the
   per-iteration overhead of the DataLoader path against the in-memory path: each run's median iteration time,
   medians over the repeats. The workers run this script under torchrun (``--example-worker CONFIG``), which loads
   the example's model and data from ``examples/``.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
import types
from collections.abc import Iterator
from contextlib import contextmanager

import numpy as np

REPEATS = 3
DELAY = 0.3
A = 1e-3                      # shifted exponential: seconds per sample
ITERS, TARGET, BATCH, LR = 80, 0.85, 240, 0.1
STOP_S, PERIOD_S = 0.2, 0.25  # real straggler: SIGSTOP for STOP_S seconds out of every PERIOD_S
PIDS_ENV = "GRADCODES_BENCH_PIDS"
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
EXAMPLE = os.path.join(ROOT, "examples", "torch_resnet_digits.py")
EX_N, EX_ITERS, EX_TARGET, EX_BATCH, EX_LR = 3, 60, 0.90, 120, 0.05   # job 5: the example's model


def launch(procs: int, args: list[str], pids: str | None = None, entry: list[str] | None = None) -> list[dict]:
    """Run the built-in job under torchrun; with ``pids`` (a folder), the workers run this script's ``--worker``
    entry instead, which writes each rank's PID there first; ``entry`` replaces the job (``--example-worker``)."""
    env = dict(os.environ, OMP_NUM_THREADS="1")
    env["PYTHONPATH"] = os.pathsep.join([ROOT, env.get("PYTHONPATH", "")])
    if entry is None:
        entry = ["-m", "gradcodes.torch"] if pids is None else [os.path.abspath(__file__), "--worker"]
    if pids is not None:
        env[PIDS_ENV] = pids
    cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node", str(procs), *entry,
           "--json", *args]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=1800, env=env)
    if proc.returncode != 0:
        raise RuntimeError(f"job failed: {' '.join(cmd)}\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}")
    line = next(ln for ln in proc.stdout.splitlines() if ln.startswith("ROWS "))
    return json.loads(line[5:])


def write_pid(folder: str, rank: int) -> None:
    """Publish this process's PID as ``folder/rank<rank>.pid`` for :class:`DutyCycle` (runtime_mpi.py uses it too)."""
    path = os.path.join(folder, f"rank{rank}.pid")
    with open(path + ".tmp", "w") as fh:
        fh.write(str(os.getpid()))
    os.replace(path + ".tmp", path)                         # the controller never reads a half-written file


def worker(argv: list[str]) -> int:
    """A torchrun worker: write this rank's PID to ``$GRADCODES_BENCH_PIDS/rank<RANK>.pid``, then run the job."""
    import torch.distributed  # noqa: F401  (imported before the PID is published: the stops slow training, not imports)

    folder = os.environ.get(PIDS_ENV)
    if folder:
        write_pid(folder, int(os.environ["RANK"]))
    from gradcodes.torch._job import main as job_main

    return job_main(argv)


class DutyCycle(threading.Thread):
    """The controller: once ``pid_file`` exists, ``SIGSTOP`` its process for ``stop_s`` out of every ``period_s``
    seconds until :meth:`finish`; the process is always left running (``SIGCONT`` in a ``finally``)."""

    def __init__(self, pid_file: str, stop_s: float, period_s: float) -> None:
        super().__init__(daemon=True)
        self.pid_file, self.stop_s, self.period_s = pid_file, stop_s, period_s
        self.done = threading.Event()
        self.pid: int | None = None
        self._fd: int | None = None
        self.stops = 0

    def run(self) -> None:
        while self.pid is None and not self.done.is_set():
            try:
                with open(self.pid_file) as fh:
                    self.pid = int(fh.read())
            except (OSError, ValueError):
                self.done.wait(0.01)
        if self.pid is None:
            return
        try:                        # a pidfd names this process, never a later one that reuses its PID
            self._fd = os.pidfd_open(self.pid)
        except (AttributeError, OSError):
            self._fd = None
        try:
            while not self.done.is_set():
                self.send(signal.SIGSTOP)
                self.stops += 1
                self.done.wait(self.stop_s)
                self.send(signal.SIGCONT)
                self.done.wait(self.period_s - self.stop_s)
        except ProcessLookupError:                          # the worker has ended
            pass
        finally:
            self.resume()

    def send(self, sig: int) -> None:
        if self._fd is not None:
            signal.pidfd_send_signal(self._fd, sig)
        else:
            os.kill(self.pid, sig)                          # type: ignore[arg-type]

    def resume(self) -> None:
        if self.pid is not None:
            try:
                self.send(signal.SIGCONT)
            except (ProcessLookupError, OSError):
                pass

    def finish(self) -> None:
        self.done.set()
        self.join(timeout=5)
        self.resume()
        if self._fd is not None and not self.is_alive():
            os.close(self._fd)
            self._fd = None


@contextmanager
def real_straggler(rank: int, stop_s: float = STOP_S, period_s: float = PERIOD_S) -> Iterator[tuple[str, DutyCycle]]:
    """``(pid folder, controller)``: duty-cycles rank ``rank``'s process while the block runs; always resumes it."""
    with tempfile.TemporaryDirectory() as folder:
        ctl = DutyCycle(os.path.join(folder, f"rank{rank}.pid"), stop_s, period_s)
        ctl.start()
        try:
            yield folder, ctl
        finally:
            ctl.finish()


def load_example() -> types.ModuleType:
    """The worked example as a module (its model, data and accuracy), loaded from ``examples/``."""
    spec = importlib.util.spec_from_file_location("torch_resnet_digits", EXAMPLE)
    if spec is None or spec.loader is None or not os.path.exists(EXAMPLE):
        raise FileNotFoundError(f"job 5 needs the worked example {EXAMPLE}")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def example_worker(cfg: dict) -> int:
    """A torchrun rank of job 5: every run of ``cfg["runs"]`` (``[label, scheme, delay seconds]``, scheme
    ``"dataset"``, ``"memory"`` or ``"ddp"``) in turn, the same initial weights and batches; rank 0 prints
    ``ROWS [...]``."""
    import torch
    import torch.distributed as dist

    import gradcodes as gc
    from gradcodes.torch import FixedDelay, ddp_train, train

    ex = load_example()
    dist.init_process_group("gloo")
    rank, n, s = dist.get_rank(), dist.get_world_size() - 1, cfg["s"]
    X, y, X_test, y_test = ex.load_digits16()
    data = ex.Digits16(X, y)
    group = dist.new_group(list(range(1, n + 1)))
    loss_fn = torch.nn.CrossEntropyLoss(reduction="none")
    code = gc.cyclic_repetition(n, s, rng=0)
    rows = []
    snaps: list[dict] = []

    def evaluate(model: torch.nn.Module) -> float:
        """A copy of the state after each step (microseconds), evaluated after the run, so that every scheme's
        wall time holds the same (no) evaluation work. (``ddp_train`` synchronises its ranks after an evaluation;
        before, rank 1's evaluation overlapped the late rank's delay and hid up to its duration.)"""
        snaps.append({k: v.clone() for k, v in model.state_dict().items()})
        return 0.0

    def sgd(params: object) -> torch.optim.Optimizer:
        return torch.optim.SGD(params, lr=cfg["lr"], momentum=0.9)

    for label, scheme, late in cfg["runs"]:
        delay = FixedDelay(late, workers=range(n - s, n)) if late else None
        model = ex.make_model(0)
        snaps.clear()
        kw = {"batch_size": cfg["batch"], "iterations": cfg["iters"], "optimizer": sgd, "delay": delay}
        if scheme == "ddp":
            res = ddp_train(model, loss_fn, X, y, workers=n, group=group, evaluate=evaluate, **kw)
        elif scheme == "dataset":
            res = train(code, model, loss_fn, data, evaluate=evaluate, loader_kwargs={"num_workers": 0}, **kw)
        else:
            res = train(code, model, loss_fn, X, y, evaluate=evaluate, **kw)
        stats = torch.zeros(6, dtype=torch.float64)          # DDP's record is rank 1's: sent to the master
        if res is not None:
            res.accuracy = []
            for state in snaps:
                model.load_state_dict(state)
                res.accuracy.append(ex.accuracy(model, X_test, y_test))
            stats[:] = torch.tensor([res.time_to(cfg["target"]), res.mean_iteration, float(np.median(res.times)),
                                     res.accuracy[-1], len(res.times),
                                     next((t + 1 for t, a in enumerate(res.accuracy) if a >= cfg["target"]),
                                          float("inf"))], dtype=torch.float64)
        if scheme == "ddp" and rank == 1:
            dist.send(stats, 0, tag=98)
        elif scheme == "ddp" and rank == 0:
            dist.recv(stats, 1, tag=98)
        dist.barrier()
        if rank == 0:
            rows.append({"job": label, "scheme": scheme, "time_to_target": float(stats[0]),
                         "mean_iteration": float(stats[1]), "median_iteration": float(stats[2]),
                         "final_accuracy": float(stats[3]), "iterations": int(stats[4]),
                         "steps_to_target": float(stats[5])})
    if rank == 0:
        print("ROWS " + json.dumps(rows), flush=True)
    dist.destroy_process_group()
    return 0


EX_SCHEMES = {"dataset": "coded, Dataset + DataLoader", "memory": "coded, in-memory tensors", "ddp": "DDP allreduce"}


def example_rows(repeats: int, *, n: int = EX_N, s: int = 1, iters: int = EX_ITERS, delay: float = DELAY,
                 procs_note: str = "") -> list[str]:
    """Job 5: the example's model; the lines of its table."""
    late = f"{s} worker {delay} s late"
    cfg = {"s": s, "iters": iters, "batch": EX_BATCH, "lr": EX_LR, "target": EX_TARGET,
           "runs": [["no stragglers", "dataset", 0.0], ["no stragglers", "memory", 0.0],
                    ["no stragglers", "ddp", 0.0], [late, "dataset", delay], [late, "ddp", delay]]}
    runs = [launch(n + 1, [json.dumps(cfg)], entry=[os.path.abspath(__file__), "--example-worker"])
            for _ in range(repeats)]

    def m(job: str, scheme: str, key: str) -> float:
        return float(np.median([next(r[key] for r in rows if r["job"] == job and r["scheme"] == scheme)
                                for rows in runs]))

    to = "time to " + format(EX_TARGET, ".0%")
    lines = [f"the worked example's model (examples/torch_resnet_digits.py: ResNet with BatchNorm, digits 16x16) on "
             f"{n} workers + master (Gloo, localhost), s = {s}, cyclic repetition, batch {EX_BATCH}, SGD lr {EX_LR} "
             f"momentum 0.9, {iters} iterations, medians of {repeats} runs{procs_note}",
             f"{'job':22s} {'scheme':30s} {'s/iter':>8s} {'median':>8s} {to:>12s} {'steps':>6s} {'final acc':>9s}"]
    for job, scheme, _ in cfg["runs"]:
        lines.append(f"{job:22s} {EX_SCHEMES[scheme]:30s} {m(job, scheme, 'mean_iteration'):8.4f} "
                     f"{m(job, scheme, 'median_iteration'):8.4f} {m(job, scheme, 'time_to_target'):12.3f} "
                     f"{m(job, scheme, 'steps_to_target'):6.0f} {m(job, scheme, 'final_accuracy'):9.3f}")
    base = "no stragglers"
    dl, mem = m(base, "dataset", "median_iteration"), m(base, "memory", "median_iteration")

    def one(rows: list[dict], scheme: str) -> float:
        return next(r["median_iteration"] for r in rows if r["job"] == base and r["scheme"] == scheme)

    paired = float(np.median([one(rows, "dataset") - one(rows, "memory") for rows in runs]))
    lines += [f"{to} without stragglers: DDP / coded (DataLoader) = "
              f"{m(base, 'ddp', 'time_to_target') / m(base, 'dataset', 'time_to_target'):.2f}x",
              f"{to} with {late}: DDP / coded (DataLoader) = "
              f"{m(late, 'ddp', 'time_to_target') / m(late, 'dataset', 'time_to_target'):.2f}x; coded with / without "
              f"the straggler = {m(late, 'dataset', 'time_to_target') / m(base, 'dataset', 'time_to_target'):.2f}x",
              f"DataLoader path against in-memory tensors, per iteration (median iteration of each run, medians of "
              f"{repeats} runs): {dl * 1e3:.1f} ms against {mem * 1e3:.1f} ms ({dl / mem:.2f}x; paired difference "
              f"{paired * 1e3:+.1f} ms)"]
    return lines


def smoke() -> int:
    try:
        import torch  # noqa: F401
    except ImportError:
        print("smoke: torch not installed (pip install 'gradcodes[torch]'): skipped")
        return 0
    # one job, run through the real-straggler path: rank 2 (a worker) SIGSTOPped 50 ms out of every 100 ms
    with real_straggler(2, 0.05, 0.1) as (folder, ctl):
        rows = launch(3, ["--schemes", "cyclic_repetition,ddp", "--iterations", "3", "--delay", "none",
                          "--model", "linear", "--batch-size", "60"], pids=folder)
    print(f"smoke, real straggler (rank 2, PID {ctl.pid}, {ctl.stops} SIGSTOPs): {len(rows)} schemes, "
          f"mean iteration {rows[0]['mean_iteration']:.4f} s (coded), {rows[1]['mean_iteration']:.4f} s (DDP)")
    # job 5 on 2 workers, 3 iterations, a 0.05 s straggler: the example's model through every path
    lines = example_rows(1, n=2, iters=3, delay=0.05)
    print("smoke, the example's model:\n" + "\n".join(lines))
    return 0 if ctl.pid is not None and len(rows) == 2 and len(lines) == 10 else 1


def med(runs: list[list[dict]], scheme: str, key: str) -> float:
    return float(np.median([next(r[key] for r in rows if r["scheme"] == scheme) for rows in runs]))


def real_straggler_rows(n: int, s: int, repeats: int, base: list[list[dict]] | None = None) -> list[str]:
    """Job 4: coded and DDP with and without a real (SIGSTOP-duty-cycled) straggler, the last worker (rank n).
    ``base``: no-straggler runs of job 1 to reuse (else launched here). The lines of its table."""
    common = ["--schemes", "cyclic_repetition,ddp", "--delay", "none", "--stragglers", str(s), "--iterations",
              str(ITERS), "--target", str(TARGET), "--batch-size", str(BATCH), "--lr", str(LR)]
    base = list(base or [])
    real, stops = [], []
    for _ in range(repeats):                       # interleaved, as above
        if len(base) < repeats:
            base.append(launch(n + 1, common))
        with real_straggler(n) as (folder, ctl):
            real.append(launch(n + 1, common, pids=folder))
        stops.append(ctl.stops)
    coded, ddp = "cyclic_repetition", "DDP allreduce"
    lines = [f"real straggler: rank {n} (a worker) SIGSTOPped {STOP_S} s out of every {PERIOD_S} s by a controller "
             f"thread of this script (SIGCONT always at the end), no delay model; {n} workers + master, s = {s}, CNN "
             f"on digits, batch {BATCH}, {ITERS} iterations, medians of {repeats} runs "
             f"(SIGSTOPs per run: {', '.join(map(str, stops))})",
             f"{'job':28s} {'scheme':34s} {'s/iter':>8s} {'time to ' + format(TARGET, '.0%'):>12s} "
             f"{'final acc':>9s}"]
    for label, runs in (("no straggler", base), ("real straggler (SIGSTOP)", real)):
        for sc in (coded, ddp):
            lines.append(f"{label:28s} {sc:34s} {med(runs, sc, 'mean_iteration'):8.4f} "
                         f"{med(runs, sc, 'time_to_target'):12.3f} {med(runs, sc, 'final_accuracy'):9.3f}")
    tt = {(k, sc): med(runs, sc, "time_to_target") for k, runs in (("base", base), ("real", real))
          for sc in (coded, ddp)}
    lines.append(f"time to {TARGET:.0%} with the real straggler: DDP / coded = "
                 f"{tt['real', ddp] / tt['real', coded]:.2f}x; coded with / without it = "
                 f"{tt['real', coded] / tt['base', coded]:.2f}x, DDP with / without it = "
                 f"{tt['real', ddp] / tt['base', ddp]:.2f}x")
    return lines


def parse_args(argv: list[str]) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter,
                                epilog="(--worker ARGS...: the torchrun workers' entry used by job 4; not for users)")
    p.add_argument("--smoke", action="store_true", help="tiny jobs (3 processes, 3 iterations), no files")
    p.add_argument("--real-straggler-only", action="store_true", help="run only job 4 (the real straggler)")
    p.add_argument("--example-only", action="store_true", help="run only job 5 (the worked example's model)")
    p.add_argument("--repeats", type=int, default=REPEATS, help="repeats per job (default %(default)s)")
    p.add_argument("--out", help="also write the output to this file, under a header (command, date, machine, load)")
    return p.parse_args(argv)


def main(args: argparse.Namespace) -> int:
    n, s = 4, 1
    start = time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime())
    load0 = os.getloadavg()
    if args.real_straggler_only:
        lines = real_straggler_rows(n, s, args.repeats)
    elif args.example_only:
        lines = example_rows(args.repeats)
    else:
        lines = full(n, s, args.repeats)
    print("\n".join(lines), flush=True)
    if args.out:
        import torch

        load1 = os.getloadavg()
        head = [f"# python benchmarks/runtime/runtime_torch.py {' '.join(sys.argv[1:])}",
                f"# {start} to {time.strftime('%H:%M:%S UTC', time.gmtime())}; {os.cpu_count()} cores, shared; "
                f"load average {load0[0]:.2f} {load0[1]:.2f} {load0[2]:.2f} at start, {load1[0]:.2f} {load1[1]:.2f} "
                f"{load1[2]:.2f} at end; torch {torch.__version__}, Gloo"]
        with open(args.out, "w") as fh:
            fh.write("\n".join(head + lines) + "\n")
    return 0


def full(n: int, s: int, repeats: int) -> list[str]:
    """Jobs 1 to 4; the lines of the tables."""
    import gradcodes as gc
    from gradcodes.mpi import ShiftedExponential, predict

    common = ["--stragglers", str(s), "--iterations", str(ITERS), "--target", str(TARGET), "--batch-size", str(BATCH),
              "--lr", str(LR)]
    base, slow, expo = [], [], []
    for _ in range(repeats):                       # interleaved, so slow drifts of the machine hit every job
        base.append(launch(n + 1, ["--schemes", "cyclic_repetition,ddp", "--delay", "none", *common]))
        slow.append(launch(n + 1, ["--schemes", "cyclic_repetition,ddp,all,ignore", "--delay", f"slow:{DELAY}",
                                   *common]))
        expo.append(launch(n + 1, ["--schemes", "cyclic_repetition", "--delay", f"shiftexp:{A}", *common]))
    coded, ddp, ign = "cyclic_repetition", "DDP allreduce", f"ignore-stragglers (first {n - s})"
    t0, t_ddp0 = med(base, coded, "mean_iteration"), med(base, ddp, "mean_iteration")
    lines = [f"gradcodes.torch on {n} workers + master (Gloo, localhost), s = {s}, CNN on digits, batch {BATCH}, "
             f"{ITERS} iterations, medians of {repeats} runs"]
    say = lines.append
    say(f"{'job':28s} {'scheme':34s} {'s/iter':>8s} {'time to ' + format(TARGET, '.0%'):>12s} {'final acc':>9s}")
    for label, runs in (("no stragglers", base), (f"{s} fixed {DELAY} s straggler", slow),
                        (f"shifted exp a={A:g}", expo)):
        for r in runs[0]:
            sc = r["scheme"]
            say(f"{label:28s} {sc:34s} {med(runs, sc, 'mean_iteration'):8.4f} "
                f"{med(runs, sc, 'time_to_target'):12.3f} {med(runs, sc, 'final_accuracy'):9.3f}")
    t_slow = med(slow, coded, "mean_iteration")
    tta = {sc: med(slow, sc, "time_to_target") for sc in (coded, ddp, "wait-for-all", ign)}
    code = gc.cyclic_repetition(n, s, rng=0)
    need = n - s
    pred = predict(code, ShiftedExponential(A, m_data=BATCH, rng=0), workers=n, need=need, t_c=t0 / need)
    measured = med(expo, coded, "mean_iteration")
    say("")
    say(f"no-straggler overhead vs DDP per iteration: {t0 / t_ddp0:.2f}x ({t0 * 1e3:.1f} ms vs "
        f"{t_ddp0 * 1e3:.1f} ms)")
    say(f"first decodable with stragglers / without: {t_slow / t0:.2f}x (target <= 1.15)")
    say(f"time to {TARGET:.0%}: DDP / coded = {tta[ddp] / tta[coded]:.2f}x (target >= 3), wait-for-all / coded = "
        f"{tta['wait-for-all'] / tta[coded]:.2f}x, ignore-stragglers {tta[ign]:.3f} s vs coded {tta[coded]:.3f} s")
    if pred is not None:
        say(f"shifted exponential: measured {measured:.4f} s/iter, gc.simulate {pred:.4f} s/iter "
            f"({measured / pred - 1:+.1%}; target within 15%)")
    say("")
    lines += real_straggler_rows(n, s, repeats, base=base)        # job 4 reuses job 1's no-straggler runs
    return lines + [""] + example_rows(repeats)


if __name__ == "__main__":
    if sys.argv[1:2] == ["--worker"]:
        sys.exit(worker(sys.argv[2:]))
    if sys.argv[1:2] == ["--example-worker"]:
        sys.exit(example_worker(json.loads(sys.argv[-1])))
    ns = parse_args(sys.argv[1:])
    sys.exit(smoke() if ns.smoke else main(ns))
