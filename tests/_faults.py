"""Real faults for the end-to-end fault tests of both runtimes (issue 34), in one place.

The jobs (tests/mpi_fault_job.py, tests/torch_fault_job.py) call :func:`inject` inside the user's gradient or loss
function, as a cluster produces faults, not through the library's delay models; the test modules
(tests/test_mpi.py, tests/test_torch.py) launch them with :func:`run_job`, which bounds every job by a timeout,
kills every process of a job still running then, and parses the master's ``RESULT`` line.

The fault kinds (:data:`KINDS`), each what the faulty worker does when its fault is due:

``"loop"``
    an endless loop of 0.1 s sleeps (frozen in user code, the GIL released);
``"spin"``
    an endless busy loop (frozen in user code, holding the GIL between bytecodes);
``"sigstop"``
    ``os.kill(os.getpid(), SIGSTOP)``: the whole process stopped, until someone resumes (``SIGCONT``) or kills it;
``"sigkill"``
    ``os.kill(os.getpid(), SIGKILL)``: the process dies at once, nothing of it runs any more;
``"exit0"``, ``"exit1"``
    ``os._exit(0)`` / ``os._exit(1)``: the process ends without cleaning up;
``"raise"``
    a ``RuntimeError`` out of the user's function;
``"sleep"``
    ``time.sleep(seconds)`` once (a real straggler that then carries on);
``"none"``
    nothing.

A job's CONFIG (JSON) names its faults as ``"faults": {"<worker index>": kind}``, triggered once on that worker at
its first call at iteration ``"at"`` or later (0-based; default 2), with ``"sleep"`` seconds for the sleep.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import threading
import time
from collections.abc import Callable, Sequence
from typing import Any, NamedTuple

KINDS = ("none", "loop", "spin", "sigstop", "sigkill", "exit0", "exit1", "raise", "sleep")


def inject(kind: str, rank: int, *, seconds: float = 2.0) -> None:
    """Do the fault ``kind`` now, in this process (rank ``rank``): see the module's docstring.

    Prints ``FAULT <kind> rank <rank> pid <pid> <unix time>`` first (flushed), so a test can tell when and where it
    happened.
    """
    if kind not in KINDS:
        raise ValueError(f"unknown fault kind {kind!r}; one of {KINDS}")
    print(f"FAULT {kind} rank {rank} pid {os.getpid()} {time.time()!r}", flush=True)
    if kind == "loop":
        while True:
            time.sleep(0.1)
    elif kind == "spin":
        while True:
            pass
    elif kind == "sigstop":
        os.kill(os.getpid(), signal.SIGSTOP)
    elif kind == "sigkill":
        os.kill(os.getpid(), signal.SIGKILL)
    elif kind == "exit0":
        os._exit(0)
    elif kind == "exit1":
        os._exit(1)
    elif kind == "raise":
        raise RuntimeError(f"injected failure on rank {rank}")
    elif kind == "sleep":
        time.sleep(seconds)


class Fault:
    """The fault of worker rank ``rank`` under the job's CONFIG ``cfg``: call it with the iteration inside the
    user's function; the fault happens once, at the first call at iteration ``cfg["at"]`` (default 2) or later.

    >>> f = Fault({"faults": {"0": "none", "1": "sleep"}, "at": 1, "sleep": 0.0}, rank=2)
    >>> f(0)
    >>> f(1)
    FAULT sleep rank 2 pid ...
    >>> f(2)
    >>> Fault({"faults": {"1": "loop"}}, rank=0).kind       # the master (rank 0) is never faulty
    'none'
    """

    def __init__(self, cfg: dict, rank: int) -> None:
        self.kind = str(cfg.get("faults", {}).get(str(rank - 1), "none")) if rank > 0 else "none"
        self.at = int(cfg.get("at", 2))
        self.seconds = float(cfg.get("sleep", 2.0))
        self.rank = rank
        self.done = self.kind == "none"

    def __call__(self, t: int) -> None:
        if not self.done and t >= self.at:
            self.done = True
            inject(self.kind, self.rank, seconds=self.seconds)


class Run(NamedTuple):
    """What :func:`run_job` saw: the launcher's exit status (``"hung"``: still running at the timeout, then
    killed), its output (stdout and stderr together), the master's ``RESULT`` (None without one), the wall clock
    (``time.time()``) when the launcher returned or was killed, and the seconds it ran."""

    status: int | str
    out: str
    res: dict | None
    ended: float
    wall: float


def descendants(pid: int) -> list[int]:
    """Every process below ``pid`` (hydra's proxy starts the ranks in a session of its own, so a process group
    does not hold them all)."""
    out, todo = [], [pid]
    while todo:
        kids = subprocess.run(["pgrep", "-P", str(todo.pop())], capture_output=True, text=True).stdout.split()
        out += [int(k) for k in kids]
        todo += [int(k) for k in kids]
    return out


def stopped(proc: subprocess.Popen) -> list[int]:
    """The stopped (``SIGSTOP``) processes of the job ``proc``."""
    pids = []
    for pid in descendants(proc.pid):
        stat = subprocess.run(["ps", "-o", "stat=", "-p", str(pid)], capture_output=True, text=True).stdout
        if "T" in stat:
            pids.append(pid)
    return pids


def signal_stopped(proc: subprocess.Popen, sig: int) -> list[int]:
    """Send ``sig`` to the job's stopped processes; returns their pids."""
    pids = stopped(proc)
    for pid in pids:
        try:
            os.kill(pid, sig)
        except ProcessLookupError:
            pass
    return pids


class Resume:
    """An ``on_result`` for :func:`run_job`: resume (``SIGCONT``) the job's stopped processes, as an operator
    would; :attr:`at` is when (``time.time()``), None until then."""

    def __init__(self) -> None:
        self.at: float | None = None

    def __call__(self, proc: subprocess.Popen) -> None:
        assert signal_stopped(proc, signal.SIGCONT), "no stopped process to resume"
        self.at = time.time()


def kill_all(proc: subprocess.Popen) -> None:
    """``SIGKILL`` every process of the job ``proc`` (started in a session of its own) and reap the launcher."""
    pids = descendants(proc.pid)
    try:
        os.killpg(proc.pid, signal.SIGKILL)         # the launcher runs in a session of its own (its pid is the group)
    except (ProcessLookupError, PermissionError):
        pass
    for pid in pids:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    proc.wait()


def result_of(out: str) -> dict | None:
    """The master's ``RESULT {json}`` line in ``out``, parsed (the last one), or None."""
    res = None
    for line in out.splitlines():
        if "RESULT {" in line:
            res = json.loads(line[line.index("RESULT {") + 7:])
    return res


def run_job(cmd: Sequence[str], *, env: dict[str, str], timeout: float, cwd: Any = None,
            on_result: Callable[[subprocess.Popen], None] | None = None, when: str = "MASTER_EXIT") -> Run:
    """Run the launcher command ``cmd`` (mpiexec or torchrun with a fault job) in a session of its own.

    ``on_result(proc)`` runs once, as soon as a line of the output contains ``when`` (default: the master printed
    ``MASTER_EXIT``, the harness's turn: resuming or killing a stopped worker; :func:`kill_all` kills the whole
    job). A job still running at ``timeout`` seconds is killed, every process of it, and reported with status
    ``"hung"``.
    """
    t0 = time.monotonic()
    proc = subprocess.Popen(list(cmd), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env,
                            cwd=cwd, start_new_session=True)
    lines: list[str] = []
    reader = threading.Thread(target=lambda: lines.extend(proc.stdout or []), daemon=True)
    reader.start()
    status: int | str = "hung"
    called = on_result is None
    while time.monotonic() - t0 < timeout:
        if proc.poll() is not None:
            status = proc.returncode
            break
        if not called and any(when in ln for ln in list(lines)):
            called = True
            assert on_result is not None
            on_result(proc)
        time.sleep(0.1)
    ended, wall = time.time(), time.monotonic() - t0
    if status == "hung":
        kill_all(proc)
    reader.join(5)
    out = "".join(lines)
    return Run(status, out, result_of(out), ended, wall)


def faults_seen(out: str) -> dict[int, tuple[int, float]]:
    """rank -> (pid, wall clock) of its ``FAULT`` line in ``out``: the faults that happened. Found anywhere in a
    line: the launcher may join two ranks' lines into one (seen with hydra).

    >>> faults_seen("FAULT loop rank 1 pid 10 1.5FAULT sigstop rank 6 pid 11 2.5\\n")
    {1: (10, 1.5), 6: (11, 2.5)}
    """
    return {int(rank): (int(pid), float(when))
            for rank, pid, when in re.findall(r"FAULT \w+ rank (\d+) pid (\d+) (\d+\.\d+)", out)}


def slack(seconds: float) -> float:
    """A timing margin of ``seconds`` on an idle machine, stretched on a loaded one: times the 1-minute load
    average per core over 2 when that exceeds 1 (a 2-core machine at load 4 keeps ``seconds``, at load 12 gets 3x).
    The tests' bounds are the documented grace plus this: processes start, get scheduled and tear down slower
    under load, which is not what they test."""
    return seconds * max(1.0, os.getloadavg()[0] / (2 * (os.cpu_count() or 1)))


def check_finished_exactly(res: dict | None, out: str, ranks: Sequence[int], *, iterations: int, grace: float,
                           levels: int = 1, tol: float = 1e-12, at: int = 2, slowest: float = 5.0) -> None:
    """The master finished every iteration exactly (relative error at most ``tol`` against the single-process
    gradient), no iteration from the faults' (``at``) on waited for the frozen workers (each below ``slowest``
    seconds: such a wait lasts the jobs' whole 20 s straggler timeout, and raises; single iterations of 2-3 s were
    seen at load averages of 15-20 on 2 cores; the first iterations also wait for the ranks' start-up), it
    names every rank in ``ranks`` among the failures, and it returned within ``(levels + 1) * grace`` of its last
    iteration (a flat code has 1 level below the master), plus a margin for a loaded machine."""
    assert res is not None, out[-3000:]
    assert res["iterations"] == iterations and res["grad_err"] <= tol, res
    assert max(res["times"][at:]) < slowest, res
    assert all(str(r) in res["failures"] for r in ranks), (ranks, res)
    assert res["after_last"] <= (levels + 1) * grace + slack(1.5), res


def torch_teardown_abort(out: str) -> bool:
    """True when the only failure torchrun reports is torch's known abort at process exit: a rank that finished its
    work dies in a C++ destructor ("terminate called without an active exception", SIGABRT, exit code -6) and
    torchrun stops the others (SIGTERM, -15). Seen with Gloo in torch 2.13, intermittently, in runs of the page's
    plain DDP script (train_ddp.py, no gradcodes code in it), with or without a barrier before
    destroy_process_group (a fresh-clone CI run failed on it); tests/test_torch.py accepts the same abort for a
    resumed rank (with its own, looser check: other ranks there end with their own statuses). The caller checks
    that the program printed its result.

    >>> torch_teardown_abort("terminate called without an active exception\\n  exitcode  : -6 (pid: 1)")
    True
    >>> torch_teardown_abort("terminate called without an active exception\\n  exitcode  : 1 (pid: 1)")
    False
    """
    codes = re.findall(r"exitcode\s*:\s*(-?\d+)", out)
    return ("terminate called without an active exception" in out and "-6" in codes
            and all(c in ("-6", "-15") for c in codes))
