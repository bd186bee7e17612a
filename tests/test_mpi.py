"""End-to-end tests of gradcodes.mpi: real MPI jobs spawned with the environment's own ``mpiexec``.

Every job runs ``python -m mpi4py tests/mpi_job.py CONFIG`` (an exception on any rank aborts the job) with small
sizes and a subprocess timeout, so a bug fails fast instead of hanging. The jobs are skipped, with the reason, only
when no ``mpiexec`` sits next to the Python interpreter (``pip install -e '.[test,mpi-local]'`` provides it).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from typing import Any

import _faults
import numpy as np
import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
JOB = os.path.join(HERE, "mpi_job.py")
MPIEXEC = None
for _name in ("mpiexec", "mpirun"):
    _cand = os.path.join(os.path.dirname(sys.executable), _name)
    if os.path.exists(_cand):
        MPIEXEC = _cand
        break
try:
    import mpi4py  # noqa: F401
except ImportError:
    MPIEXEC = None

needs_mpi = pytest.mark.skipif(MPIEXEC is None, reason="no mpiexec/mpi4py in this environment: "
                                                       "pip install -e '.[test,mpi-local]'")
U64 = np.finfo(np.float64).eps / 2
U32 = np.finfo(np.float32).eps / 2


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([os.path.dirname(HERE), env.get("PYTHONPATH", "")])
    env.setdefault("OMP_NUM_THREADS", "1")
    env.setdefault("OPENBLAS_NUM_THREADS", "1")
    return env


def run_job(ranks: int, cfg: dict, *, timeout: float = 90, ok: bool = True) -> tuple[subprocess.CompletedProcess,
                                                                                     dict | None, float]:
    """Run the job; returns (process, the master's RESULT dict or None, wall seconds)."""
    cmd = [MPIEXEC, "-n", str(ranks), sys.executable, "-m", "mpi4py", JOB, json.dumps(cfg)]
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=_env())
    wall = time.perf_counter() - t0
    res = None
    for line in proc.stdout.splitlines():
        if line.startswith("RESULT "):
            res = json.loads(line[7:])
    if ok:
        assert proc.returncode == 0, f"job failed ({proc.returncode}):\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"
        assert res is not None, proc.stdout[-3000:]
    return proc, res, wall


def check_exact(res: dict, unit: float, k: int) -> None:
    """Every decoded gradient equals the uncoded sum to the code's own error estimate (or rounding)."""
    assert len(res["errors"]) == res["iters"]
    for t, (err, est) in enumerate(zip(res["errors"], res["estimates"], strict=True)):
        bound = max(est if np.isfinite(est) else 0.0, 2 * k * unit)
        assert err <= bound, f"iteration {t}: error {err:.3g} > bound {bound:.3g}"


def test_import_gradcodes_does_not_import_mpi4py():
    code = ("import sys, gradcodes, gradcodes.mpi; "
            "assert 'mpi4py' not in sys.modules, [m for m in sys.modules if 'mpi4py' in m]; print('ok')")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=_env(), timeout=120)
    assert out.returncode == 0 and "ok" in out.stdout, out.stderr


@needs_mpi
def test_flat_exact_late_workers_stale_messages_and_no_allocation():
    """Worker 1 is 0.3 s late every iteration (many iterations behind), plus one random 20 ms straggler per
    iteration: all decodes exact, worker 1 never used, its stale messages dropped, no gradient-sized allocation."""
    cfg = {"family": "cyclic_repetition", "kwargs": {"n": 6, "s": 2, "rng": 1}, "p": 20000, "iters": 15,
           "check_alloc": True, "delays": [{"kind": "fixed", "seconds": 0.3, "workers": [1]},
                                           {"kind": "fixed", "seconds": 0.02, "count": 1, "rng": 3}]}
    _, res, _ = run_job(7, cfg)
    check_exact(res, U64, 6)
    assert all(len(u) == 4 for u in res["used"])
    assert res["stale"] > 0                      # late messages did arrive and were dropped
    assert res["alloc_peak"] < res["gradient_bytes"] // 4


@needs_mpi
def test_zero_one_code_float32_sums_to_rounding_with_hung_workers():
    """Fractional repetition (0/1 weights), float32 messages, s = 2 workers hung for the whole run."""
    cfg = {"family": "fractional_repetition", "kwargs": {"n": 6, "s": 2}, "p": 300, "iters": 10,
           "dtype": "float32", "delays": [{"kind": "hang", "workers": [0, 4]}]}
    _, res, _ = run_job(7, cfg)
    for err in res["errors"]:
        assert err <= 6 * U32
    assert all(0 not in u and 4 not in u for u in res["used"])


@needs_mpi
def test_ye_abbe_m2_messages_of_half_length():
    cfg = {"family": "ye_abbe", "kwargs": {"n": 6, "s": 2, "m": 2}, "p": 101, "iters": 10,
           "delays": [{"kind": "fixed", "seconds": 0.02, "count": 2, "rng": 5}]}
    _, res, _ = run_job(7, cfg)
    check_exact(res, U64, 6)


@needs_mpi
def test_coded_reduce_tree_with_stragglers_and_hung_leaf():
    """The 1 + 3 + 9 tree: a random straggler per iteration and a hung leaf; every parent uses its first n - s."""
    cfg = {"family": "coded_reduce", "kwargs": {"branching": 3, "L": 2, "s": 1}, "p": 50, "iters": 10,
           "delays": [{"kind": "fixed", "seconds": 0.03, "count": 1, "rng": 2}, {"kind": "hang", "workers": [5]}]}
    _, res, _ = run_job(13, cfg)
    check_exact(res, U64, 36)
    assert all(len(u) == 2 for u in res["used"])


#: coded_reduce(3, 2, 1) over cyclic_repetition(3, 1, rng=7, refine=0) (an ill-conditioned inner code, 13 ranks):
#: with workers 1, 5 and 10 hung the master decodes workers {0, 2}, worker 0 its children {3, 4} and worker 2 its
#: children {9, 11}; each of these sets is decodable in float32 on its own (predicted error below 0.1 of the
#: tolerance), their composition is not (about 6x the float32 tolerance): execute refuses the pattern in float32
#: and accepts it in float64. With workers 2, 5 and 8 hung the float32 pattern is accepted.
TREE = {"family": "coded_reduce", "kwargs": {"branching": 3, "L": 2, "s": 1},
        "inner": {"family": "cyclic_repetition", "kwargs": {"n": 3, "s": 1, "rng": 7, "refine": 0}}}
TREE_REFUSED, TREE_ACCEPTED = [1, 5, 10], [2, 5, 8]


def tree_verdicts(hung: list[int], dtype: type) -> tuple[bool, bool, np.ndarray]:
    """For TREE with ``hung`` never answering: (every parent's decoding set accepted by the inner code in ``dtype``,
    ``execute`` accepts the pattern in ``dtype``, the workers whose messages are used)."""
    import gradcodes as gc

    code = gc.coded_reduce(3, 2, 1, gc.cyclic_repetition(3, 1, rng=7, refine=0))
    mask = np.ones(code.N, dtype=bool)
    mask[hung] = False
    used = code.used(mask)
    per_parent = True
    for p in range(code.parents):
        kids = code.children(None if p == 0 else p - 1)
        if p == 0 or used[p - 1]:
            per_parent &= code.inner.decodable([int(c - kids[0]) for c in kids if used[c]], dtype=dtype)
    Y = code.encode(np.random.default_rng(0).uniform(0.5, 1.5, (code.k, 5)).astype(dtype))
    try:
        code.execute(mask, Y)
        accepted = True
    except gc.DecodingError:
        accepted = False
    return bool(per_parent), accepted, np.flatnonzero(used)


@needs_mpi
def test_tree_pattern_refused_by_the_whole_tree_rule_though_every_parent_accepts():
    """Every parent's decoding set is accepted in float32, the composition misses the tree's float32 tolerance:
    the master refuses the pattern as execute does (DecodingError naming the ranks), instead of returning a
    gradient 6x off its tolerance. (Before the whole-tree check the job ran and returned that gradient.)"""
    per_parent, accepted, used = tree_verdicts(TREE_REFUSED, np.float32)
    assert per_parent and not accepted, "the example's premise changed with the acceptance rule: pick another"
    cfg = {**TREE, "p": 40, "iters": 3, "dtype": "float32", "check": False, "timeout": 60,
           "delays": [{"kind": "hang", "workers": TREE_REFUSED}]}
    proc, _, wall = run_job(13, cfg, ok=False, timeout=150)
    text = proc.stdout + proc.stderr
    assert proc.returncode != 0, text[-3000:]
    assert "DecodingError" in text and "iteration 0: the CodedReduce tree cannot decode" in text, text[-3000:]
    assert f"the sum came from ranks {(used + 1).tolist()}" in text          # ranks 1, 3, 4, 5, 10, 12
    assert "ranks [2, 6, 7, 8, 9, 11] were not used" in text


@needs_mpi
@pytest.mark.parametrize("hung,dtype", [(TREE_REFUSED, "float64"), (TREE_ACCEPTED, "float32")])
def test_tree_patterns_execute_accepts_still_decode_exactly(hung, dtype):
    """The same tree: the float32-refused pattern in float64, and an accepted float32 pattern, run and decode the
    sum to the whole tree's predicted error (the same estimate execute accepts)."""
    import gradcodes as gc

    per_parent, accepted, used = tree_verdicts(hung, np.dtype(dtype).type)
    assert per_parent and accepted
    cfg = {**TREE, "p": 40, "iters": 4, "dtype": dtype, "timeout": 60, "delays": [{"kind": "hang", "workers": hung}]}
    _, res, _ = run_job(13, cfg, timeout=150)
    code = gc.coded_reduce(3, 2, 1, gc.cyclic_repetition(3, 1, rng=7, refine=0))
    est = code.error_estimate(used, dtype=np.dtype(dtype))
    unit = U64 if dtype == "float64" else U32
    assert res["iters"] == 4 and all(u == [int(w) for w in used if w < 3] for u in res["used"])
    assert max(res["errors"]) <= max(2 * est, 2 * code.k * unit), (res["errors"], est)


@needs_mpi
def test_approximate_code_deadline():
    """An expander code (optimal decoder): the master waits for all 6 but stops at a 0.5 s deadline; two hung
    workers, so iterations decode from at most 4 and the error obeys ||g_hat - g|| <= ||A_F B - E|| ||G||_F."""
    cfg = {"family": "expander_code", "kwargs": {"n": 6, "degree": 3, "rng": 0}, "p": 40, "iters": 4,
           "wait_for": 6, "deadline": 0.5, "norm": "fro", "delays": [{"kind": "hang", "workers": [1, 2]}]}
    _, res, _ = run_job(7, cfg)
    assert all(set(u) <= {0, 3, 4, 5} for u in res["used"])      # the hung workers never count
    assert max(len(u) for u in res["used"]) == 4                   # stopped at the deadline, not at 6
    for u, err, est in zip(res["used"], res["errors"], res["estimates"], strict=True):
        if u:
            assert err <= est * (1 + 1e-9) + 1e-12


@needs_mpi
def test_allreduce_baseline():
    """The baseline steps on every worker: each worker's check of each iteration's sum, gathered by the job."""
    _, res, _ = run_job(5, {"family": "allreduce", "p": 30, "iters": 5})
    assert len(res["errors"]) == 5
    for err in res["errors"]:
        assert err <= 8 * U64


@needs_mpi
def test_more_than_s_hung_workers_is_a_clear_error_not_a_hang():
    cfg = {"family": "cyclic_repetition", "kwargs": {"n": 6, "s": 2, "rng": 1}, "iters": 5, "timeout": 2.0,
           "delays": [{"kind": "hang", "workers": [0, 2, 5]}]}
    proc, _, wall = run_job(7, cfg, ok=False)
    text = proc.stdout + proc.stderr
    assert proc.returncode != 0
    assert "StragglerTimeout" in text and "within 2 s" in text
    assert "missing ranks [1, 3, 6]" in text          # workers 0, 2, 5
    assert wall < 120


@needs_mpi
def test_nan_from_a_worker_makes_it_a_straggler():
    cfg = {"family": "cyclic_repetition", "kwargs": {"n": 6, "s": 2, "rng": 1}, "iters": 8,
           "nan_workers": [3]}
    _, res, _ = run_job(7, cfg)
    check_exact(res, U64, 6)
    assert all(3 not in u for u in res["used"])


@needs_mpi
def test_nan_from_a_child_of_the_tree_master_makes_it_a_straggler():
    """coded_reduce(2, 2, 1): the master's decode is one child's message as it is (returned without a pass over
    it, only checked); worker 0 (rank 1, a parent) sends NaN, so the master never uses it and decodes from rank 2."""
    cfg = {"family": "coded_reduce", "kwargs": {"branching": 2, "L": 2, "s": 1}, "iters": 8, "nan_workers": [0]}
    _, res, _ = run_job(7, cfg)
    check_exact(res, U64, 4)
    assert all(u == [1] for u in res["used"])


@needs_mpi
@pytest.mark.parametrize("coded", [False, True])
def test_nan_from_a_leaf_is_dropped_by_its_parent(coded):
    """coded_reduce(2, 2, 1): worker 2 (rank 3, a leaf under rank 1) sends NaN before its sibling (rank 4, 0.05 s
    late) and the other parent (rank 2) is 0.2 s late, so the master decodes from rank 1 alone: exact only because
    rank 1 drops its NaN child and waits for the other one. Both parent paths: the message built by the encoder
    (each child checked on arrival) and the ``coded_gradient`` one (the sum checked once, the children only when
    it fails)."""
    cfg = {"family": "coded_reduce", "kwargs": {"branching": 2, "L": 2, "s": 1}, "iters": 6, "nan_workers": [2],
           "coded": coded, "delays": [{"kind": "fixed", "seconds": 0.2, "workers": [1]},
                                      {"kind": "fixed", "seconds": 0.05, "workers": [3]}]}
    _, res, _ = run_job(7, cfg)
    check_exact(res, U64, 4)
    assert all(u == [0] for u in res["used"][1:])


@needs_mpi
def test_nan_from_too_many_workers_is_a_clear_error():
    cfg = {"family": "cyclic_repetition", "kwargs": {"n": 6, "s": 2, "rng": 1}, "iters": 4, "timeout": 300,
           "nan_workers": [0, 1, 2]}
    proc, _, wall = run_job(7, cfg, ok=False)
    text = proc.stdout + proc.stderr
    assert proc.returncode != 0
    assert "NaN or infinite" in text and "ranks [1, 2, 3]" in text
    assert wall < 120                                         # detected at once, not after the 300 s timeout


@needs_mpi
@pytest.mark.parametrize("where", [0, 3])
def test_crash_on_any_rank_ends_the_job(where):
    """An exception on a worker (rank 4) or in the master's step (rank 0) ends the whole job within seconds."""
    cfg = {"family": "coded_reduce", "kwargs": {"branching": 2, "L": 2, "s": 1}, "iters": 50, "timeout": 300}
    if where:
        cfg["crash"] = [where, 2]
    else:
        cfg["master_crash"] = 2
    proc, _, wall = run_job(7, cfg, ok=False)
    assert proc.returncode != 0
    assert "injected crash" in proc.stdout + proc.stderr
    assert wall < 120                                         # far below the 300 s straggler timeout


def _cli(ranks: int, args: list[str], timeout: float = 120) -> subprocess.CompletedProcess:
    cmd = [MPIEXEC, "-n", str(ranks), sys.executable, "-m", "mpi4py", "-m", "gradcodes.mpi", *args]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=_env())


@needs_mpi
def test_cli_wrong_rank_count_names_the_right_one():
    proc = _cli(4, ["--scheme", "coded_reduce", "--branching", "3", "--L", "2", "--s", "1", "--iters", "3"])
    assert proc.returncode != 0
    assert "needs 13 MPI ranks" in proc.stderr and "mpiexec -n 13" in proc.stderr


@needs_mpi
def test_cli_runs_scheme_and_baselines(tmp_path):
    out = tmp_path / "run.json"
    proc = _cli(5, ["--scheme", "cyclic_repetition", "--n", "4", "--s", "1", "--iters", "6", "--points", "200",
                    "--dim", "8", "--delay", "random", "--seconds", "0.02", "--json", str(out)])
    assert proc.returncode == 0, proc.stderr[-3000:]
    for name in ("cyclic_repetition", "wait-for-all", "ignore-stragglers", "allreduce", "x vs wait-for-all"):
        assert name in proc.stdout
    doc = json.loads(out.read_text())
    res = {r["scheme"]: r for r in doc["results"]}
    # exact schemes follow the same gradient descent: equal losses to rounding
    assert abs(res["cyclic_repetition"]["final_loss"] - res["wait-for-all"]["final_loss"]) <= 1e-9
    assert abs(res["allreduce"]["final_loss"] - res["wait-for-all"]["final_loss"]) <= 1e-9


# every exact family of the tour, small enough for a 2-core machine (the tour's own sizes need up to 101 ranks)
EXACT_TOUR = [
    ("uncoded", {"n": 4}), ("fractional_repetition", {"n": 6, "s": 2}),
    ("cyclic_repetition", {"n": 5, "s": 1, "rng": 0}), ("cyclic_mds", {"n": 5, "s": 2, "field": "real"}),
    ("stable_binary", {"n": 7, "s": 2}), ("grouped_mds", {"n": 7, "s": 2}),
    ("grouped_random", {"n": 7, "s": 2, "rng": 0}), ("ye_abbe", {"n": 5, "s": 1, "m": 2}),
    ("coded_reduce", {"branching": 2, "L": 2, "s": 1}),
]


@needs_mpi
@pytest.mark.parametrize(("family", "kwargs"), EXACT_TOUR, ids=[f for f, _ in EXACT_TOUR])
def test_earliest_decodable_set_stays_exact(family, kwargs):
    """The default wait policy (earliest decodable set, at the master and at every tree parent) with random
    shifted-exponential straggling: every iteration's gradient is the exact sum, to the code's error estimate."""
    import gradcodes as gc

    code = getattr(gc, family)(**kwargs)
    cfg = {"family": family, "kwargs": kwargs, "p": 37, "iters": 8,
           "delays": [{"kind": "shifted-exp", "a": 1e-4, "m_data": 200, "rng": 1}]}
    _, res, _ = run_job(code.n + 1, cfg)
    check_exact(res, U64, code.k * code.m)
    if family not in ("coded_reduce",):
        for u in res["used"]:
            assert code.decodable(u) and len(u) <= code.n - code.s


@needs_mpi
def test_group_code_earliest_is_faster_than_first_n_minus_s():
    """Fractional repetition (6, 2), groups {0, 1, 2} and {3, 4, 5}; workers 1, 2, 4, 5 are 0.3 s late in every
    iteration. The earliest decodable set is {0, 3}; the first n - s = 4 needs two late workers."""
    base = {"family": "fractional_repetition", "kwargs": {"n": 6, "s": 2}, "p": 50, "iters": 6,
            "delays": [{"kind": "fixed", "seconds": 0.3, "workers": [1, 2, 4, 5]}]}
    _, early, _ = run_job(7, base)
    _, first, _ = run_job(7, {**base, "policy": "first"})
    check_exact(early, U64, 6)
    check_exact(first, U64, 6)
    # iteration 0 is the warm-up (each worker's one-time set-up, e.g. limiting BLAS threads, runs in its first step
    # and can outlast the 0.3 s delay of the others)
    assert all(sorted(u) == [0, 3] for u in early["used"][1:])
    assert all(len(u) == 4 for u in first["used"])
    assert early["summary"]["median_time"] < 0.5 * first["summary"]["median_time"]


@needs_mpi
@pytest.mark.parametrize("family,kwargs,ranks", [("cyclic_repetition", {"n": 6, "s": 2, "rng": 1}, 7),
                                                 ("ye_abbe", {"n": 6, "s": 2, "m": 2}, 7),
                                                 ("coded_reduce", {"branching": 2, "L": 2, "s": 1}, 7)])
def test_coded_gradient_callback_decodes_exactly(family, kwargs, ranks):
    """The fast path: each worker returns its coded combination itself (the same buffer every call, sent without
    a copy), with a random straggler per iteration; flat (m = 1, 2) and tree decodes equal the uncoded sum."""
    cfg = {"family": family, "kwargs": kwargs, "p": 101, "iters": 10, "coded": True, "master_poll": 1e-4,
           "delays": [{"kind": "fixed", "seconds": 0.02, "count": 1, "rng": 4}]}
    _, res, _ = run_job(ranks, cfg)
    check_exact(res, U64, 8)
    assert res["summary"]["iterations"] == 10


@needs_mpi
def test_allreduce_baseline_with_coded_gradient():
    _, res, _ = run_job(4, {"family": "allreduce", "p": 30, "iters": 4, "coded": True})
    assert len(res["errors"]) == 4
    for err in res["errors"]:
        assert err <= 8 * U64


@needs_mpi
def test_nan_worker_is_found_only_when_the_decode_is_not_finite_and_then_skipped():
    """float32, a 0/1 code whose first responders include the NaN worker in most iterations: the decoded
    gradient is checked once, the NaN message attributed to its sender and replaced by another worker's."""
    cfg = {"family": "fractional_repetition", "kwargs": {"n": 6, "s": 2}, "p": 300, "iters": 10,
           "dtype": "float32", "nan_workers": [0], "policy": "first"}
    _, res, _ = run_job(7, cfg)
    for err in res["errors"]:
        assert err <= 6 * U32
    assert all(0 not in u for u in res["used"])


# --- issue 34: real faults (tests/mpi_fault_job.py, tests/_faults.py), not the library's delay models ------------
FAULT_JOB = os.path.join(HERE, "mpi_fault_job.py")
GRACE = 1.5


def run_fault_job(cfg: dict, *, ranks: int = 4, timeout: float = 60, on_result: Any = None) -> _faults.Run:
    """Run tests/mpi_fault_job.py under mpiexec (4 ranks: n = 3, s = 1; 7: the tree coded_reduce(2, 2, 1)); see
    :func:`_faults.run_job` (a job still running at ``timeout`` is killed, every process of it: status
    ``"hung"``)."""
    assert MPIEXEC is not None
    cmd = [MPIEXEC, "-n", str(ranks), sys.executable, "-m", "mpi4py", FAULT_JOB, json.dumps({"grace": GRACE, **cfg})]
    return _faults.run_job(cmd, env=_env(), timeout=timeout, on_result=on_result)


@needs_mpi
@pytest.mark.parametrize("fault", ["loop", "spin"])
def test_worker_frozen_in_its_gradient_leaves_every_iteration_exact_and_the_job_ends_within_the_grace(fault):
    # old code: the master raised StragglerTimeout 30 s after its last iteration (MPI_Abort, the result lost)
    status, out, res, ended, _ = run_fault_job({"faults": {0: fault}, "at": 2, "iters": 8})
    _faults.check_finished_exactly(res, out, [1], iterations=8, grace=GRACE)
    assert "ending the process with status 0" in out, out[-3000:]
    assert status == 0, out[-3000:]                   # MPI_Finalize before the exit: hydra sees a clean exit
    assert res is not None and ended - res["last_at"] <= 2 * GRACE + _faults.slack(8), ended - res["last_at"]


@needs_mpi
def test_sigstopped_worker_is_named_and_the_job_ends_once_it_is_resumed():
    resume = _faults.Resume()                         # once the master has exited
    status, out, res, ended, _ = run_fault_job({"faults": {0: "sigstop"}, "at": 2, "iters": 8}, on_result=resume)
    _faults.check_finished_exactly(res, out, [1], iterations=8, grace=GRACE)
    assert status == 0, out[-3000:]
    assert resume.at and ended - resume.at <= 2 * GRACE + _faults.slack(8), ended - resume.at


@needs_mpi
def test_sigstopped_worker_left_stopped_keeps_mpiexec_waiting_until_the_harness_kills_it():
    def kill_stopped(proc):
        time.sleep(3.0)
        assert proc.poll() is None                    # hydra still waits for the stopped rank
        assert _faults.signal_stopped(proc, signal.SIGKILL)

    status, out, res, _, _ = run_fault_job({"faults": {0: "sigstop"}, "at": 2, "iters": 8}, on_result=kill_stopped)
    _faults.check_finished_exactly(res, out, [1], iterations=8, grace=GRACE)
    assert status not in (0, "hung") and "BAD TERMINATION" in out, (status, out[-3000:])


@needs_mpi
def test_more_than_s_frozen_workers_end_the_job_with_an_error_naming_them():
    status, out, res, _, _ = run_fault_job({"faults": {0: "loop", 1: "spin"}, "at": 2, "iters": 8, "timeout": 3.0})
    assert res is None and status not in (0, "hung"), out[-3000:]
    assert "StragglerTimeout" in out and "missing ranks [1, 2]" in out, out[-3000:]


@needs_mpi
@pytest.mark.parametrize("fault", ["exit0", pytest.param("exit1", marks=pytest.mark.xfail(
    strict=False, reason="once in a fresh-clone CI run on the loaded 2-core machine mpiexec (MPICH 5.0.2 hydra) did "
                         "not end the job within 60 s after a rank's os._exit(1) without MPI_Finalize (it passed in "
                         "the session's other runs): a launcher behaviour under load, not yet understood (issue 34)")),
    "raise", "sigkill"])
def test_worker_death_mid_run_ends_the_whole_mpi_job_at_once(fault):
    # MPICH's hydra kills every rank when one exits without MPI_Finalize, whatever its status (measured, MPICH
    # 5.0.2, racy between runs): exit 0 -> mpiexec returns 9 ("BAD TERMINATION") or 0 with the other ranks killed
    # silently (the master's result is lost either way); exit 1 -> mpiexec returns 1 with no message, or 9 with
    # "BAD TERMINATION"; an exception -> python -m mpi4py calls MPI_Abort, naming the rank, status 1; SIGKILL ->
    # 9, "BAD TERMINATION" and "Killed (signal 9)" without naming the rank (the PID it prints was another rank's in
    # 3 of 3 runs: the killed one's neighbour)
    status, out, res, _, wall = run_fault_job({"faults": {1: fault}, "at": 3, "iters": 400, "timeout": 60.0})
    assert res is None and status != "hung", out[-3000:]
    assert wall < 30
    if fault == "exit0":
        assert status == 0 or (status == 9 and "BAD TERMINATION" in out), (status, out[-3000:])
    elif fault == "exit1":
        assert status == 1 or (status == 9 and "BAD TERMINATION" in out), (status, out[-3000:])
    elif fault == "sigkill":
        assert 2 in _faults.faults_seen(out), out[-3000:]
        assert status == 9 and "BAD TERMINATION" in out and "Killed (signal 9)" in out, (status, out[-3000:])
    else:
        assert status == 1, (status, out[-3000:])
    if fault == "raise":
        # the rank's own traceback names it; MPICH's abort line ("rank 2 in comm 0") is printed by the aborting
        # process and was missing once in a loaded run (hydra had already torn the job down): not required
        assert "injected failure on rank 2" in out, out[-3000:]


#: the tree coded_reduce(2, 2, 1) on 7 ranks: rank r sends to (r - 1) // 2, so ranks 1, 2 are the master's children
#: (inner parents), ranks 3, 4 rank 1's and ranks 5, 6 rank 2's (leaves); s = 1 per parent, and the tree has 2
#: levels below the master, whose wait for the goodbyes is then 3 * grace
@needs_mpi
def test_tree_frozen_inner_parent_and_leaf_leave_every_iteration_exact_and_the_job_ends_within_the_grace():
    """An inner parent (rank 1) loops forever and a leaf under the other parent (rank 6) stops itself (SIGSTOP),
    both inside their ``partial_gradient``: the master decodes rank 2's message, itself decoded from rank 5,
    every iteration exact; it returns within 3 * grace naming rank 1, the looping parent ends itself, and once
    the harness resumes the stopped leaf the job ends with status 0."""
    resume = _faults.Resume()
    status, out, res, ended, _ = run_fault_job({"code": "tree", "faults": {0: "loop", 5: "sigstop"}, "at": 2,
                                                "iters": 8}, ranks=7, on_result=resume)
    _faults.check_finished_exactly(res, out, [1], iterations=8, grace=GRACE, levels=2)
    assert res is not None and all(u == [1] for u in res["used"][3:]), res     # rank 2 alone, once rank 1 froze
    assert set(_faults.faults_seen(out)) == {1, 6}, out[-3000:]
    assert "rank 1: the master's stop message came 3 s ago" in out, out[-3000:]   # 2 * grace: a parent
    assert "rank 2: children [6] did not say goodbye" in out, out[-3000:]
    assert status == 0, out[-3000:]
    assert resume.at and ended - resume.at <= 2 * GRACE + _faults.slack(8), (ended - resume.at, out[-3000:])


@needs_mpi
def test_tree_more_than_s_frozen_subtrees_end_the_job_with_an_error_naming_them():
    """Both inner parents (ranks 1 and 2, the master's children) freeze, one looping, one stopped: the master
    cannot decode, raises StragglerTimeout naming them after its 3 s timeout and MPI_Abort ends every rank, the
    stopped one included."""
    status, out, res, _, wall = run_fault_job({"code": "tree", "faults": {0: "loop", 1: "sigstop"}, "at": 2,
                                               "iters": 8, "timeout": 3.0}, ranks=7)
    assert res is None and status == 1, (status, out[-3000:])
    assert "StragglerTimeout" in out and "missing ranks [1, 2]" in out, out[-3000:]
    # (MPICH's "Abort(1) on node 0 (rank 0 in comm 0)" line usually follows, but was missing from one run's output
    # under load: the status and the error are what the test relies on)
    assert wall < 40, wall


@needs_mpi
def test_sleeping_worker_is_never_waited_for_while_n_minus_s_others_have_answered():
    """A real straggler: worker 1 sleeps 2 s once inside its ``partial_gradient``. Workers 0 and 2 (n - s = 2)
    answer every iteration, so no iteration may wait for the sleeper: the slowest from the sleep's iteration on is
    far below the sleep (half of it, for a loaded machine; an iteration that waited would take about the whole
    sleep). With a grace longer than the sleep it wakes, says goodbye and the run names no failure."""
    sleep = 2.0
    status, out, res, _, _ = run_fault_job({"faults": {1: "sleep"}, "sleep": sleep, "at": 2, "iters": 30,
                                            "grace": 2 * sleep})
    assert res is not None and res["iterations"] == 30 and res["grad_err"] <= 1e-12, out[-3000:]
    assert 2 in _faults.faults_seen(out), out[-3000:]
    assert max(res["times"][2:]) < sleep / 2, res["times"]
    assert res["failures"] == {} and status == 0, (res, out[-3000:])
