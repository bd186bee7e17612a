"""Shared test configuration: a deterministic hypothesis profile sized for a 2-core CI machine."""

import functools
import os
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings

settings.register_profile("ci", max_examples=40, deadline=None, derandomize=True,
                          suppress_health_check=[HealthCheck.too_slow])
settings.register_profile("dev", max_examples=200, deadline=None)
# .ci/package-check runs the whole suite a second time, from the sdist against the installed wheel: fewer examples
settings.register_profile("sdist", max_examples=8, deadline=None, derandomize=True,
                          suppress_health_check=[HealthCheck.too_slow])
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))


# ---- parallel runs (pytest-xdist, ``-n 2 --dist loadgroup`` in the README's test command) ----
# Tests that launch MPI or torch.distributed jobs (several ranks each, on a 2-core machine) run one after another on
# one xdist worker, the "ranks" group, while the other worker takes the single-process tests. The group is made by
# the scheduler below from the node ids, not by ``xdist_group`` markers: pytest-xdist 3.8 writes a marker's group
# into ``item._nodeid``, which pytest 9.2 no longer reads, so under that pair the markers grouped nothing and the
# rank-launching tests ran on both workers at once (two 4-rank torch jobs side by side on two cores: a CI run failed
# on a port collision and on a job missing its later scenarios). Without xdist none of this runs.
ROOT = Path(__file__).resolve().parent.parent
_RANK_FILES = {"test_mpi.py", "test_mpi_adversarial.py", "test_mpi_partial.py", "test_torch.py",
               "test_torch_example.py", "test_verify_mpi.py", "test_verify_scale.py", "test_torch_amp.py",
               "test_docstring_jobs.py"}
_RANK_WORDS = ("mpiexec", "torchrun", "gradcodes.torch", "gradcodes.mpi")
_PARAM_FILES = {"test_benchmark_smoke": "benchmarks", "test_page_examples_run_and_match": "docs"}


@functools.cache
def launches_ranks(nodeid: str) -> bool:
    """Whether the test ``nodeid`` launches MPI or torch.distributed ranks: every test of a rank file, and the
    benchmark smoke runs and docs-page runs whose script or page mentions a launcher."""
    path, _, name = nodeid.partition("::")
    if Path(path).name in _RANK_FILES:
        return True
    func, _, param = name.partition("[")
    folder = _PARAM_FILES.get(func)
    if folder is None or not param.endswith("]"):
        return False
    target = ROOT / param[:-1] if param[:-1] == "README.md" else ROOT / folder / param[:-1]
    try:
        text = target.read_text(encoding="utf-8")
    except OSError:
        return False
    return any(word in text for word in _RANK_WORDS)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Move the rank-launching tests to the front (stable order otherwise): their group is the longest unit of work,
    so it starts first and the other worker fills the time beside it."""
    ranks = [item for item in items if launches_ranks(item.nodeid)]
    chosen = {id(item) for item in ranks}
    items[:] = ranks + [item for item in items if id(item) not in chosen]


@pytest.hookimpl(optionalhook=True)          # an xdist hook: without xdist installed, pytest ignores it
def pytest_xdist_make_scheduler(config: pytest.Config, log):  # noqa: ANN001, ANN201 - xdist's hook signature
    """``--dist loadgroup``: xdist's group scheduling with every rank-launching test in one group, "ranks"."""
    if config.getvalue("dist") != "loadgroup":
        return None
    from xdist.scheduler import LoadGroupScheduling

    class RankGroupScheduling(LoadGroupScheduling):
        def _split_scope(self, nodeid: str) -> str:
            return "ranks" if launches_ranks(nodeid.split("@")[0]) else super()._split_scope(nodeid)

    return RankGroupScheduling(config, log)


# ---- the suite leaves the checkout as it found it ----
# A test once wrote a verify checkpoint named after a fuzzed path ("x") into the directory the suite ran in, and it
# was committed at the project's root. The run that started the session (the xdist controller, or the only process)
# lists the root before and after; a new entry there fails the run. Hidden entries (.pytest_cache, .hypothesis) are
# the tools' own.
_ROOT_BEFORE: set[str] = set()


def pytest_sessionstart(session: pytest.Session) -> None:
    if not hasattr(session.config, "workerinput"):
        _ROOT_BEFORE.update(os.listdir(ROOT))


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    if hasattr(session.config, "workerinput") or not _ROOT_BEFORE:
        return
    left = sorted(name for name in set(os.listdir(ROOT)) - _ROOT_BEFORE if not name.startswith("."))
    if left:
        reporter = session.config.pluginmanager.get_plugin("terminalreporter")
        if reporter is not None:
            reporter.ensure_newline()
            reporter.write_line(f"the tests left new entries in {ROOT}: {left} (write into tmp_path instead)",
                                red=True)
        session.exitstatus = pytest.ExitCode.TESTS_FAILED
