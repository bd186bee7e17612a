"""Shared test configuration: a deterministic hypothesis profile sized for a 2-core CI machine."""

import os

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
# one xdist worker, the "ranks" group, while the other worker takes the single-process tests; without xdist the
# marker does nothing.
_RANK_FILES = {"test_mpi.py", "test_mpi_adversarial.py", "test_mpi_partial.py", "test_torch.py", "test_verify_mpi.py",
               "test_verify_scale.py"}
_RANK_WORDS = ("mpiexec", "torchrun", "gradcodes.torch", "gradcodes.mpi")


def _launches_ranks(item) -> bool:  # noqa: ANN001 - a pytest Item
    from pathlib import Path

    name = Path(str(item.fspath)).name
    if name in _RANK_FILES:
        return True
    spec = getattr(item, "callspec", None)
    if spec is None or item.originalname not in {"test_benchmark_smoke", "test_page_examples_run_and_match"}:
        return False
    target = next((v for v in spec.params.values() if isinstance(v, (str, Path))), None)
    if target is None:
        return False
    path = Path(target)
    if not path.is_absolute():
        folder = "benchmarks" if name == "test_benchmarks.py" else "docs"
        path = Path(__file__).resolve().parent.parent / folder / path
    try:
        text = path.read_text(encoding="utf-8")
    except OSError:
        return False
    return any(word in text for word in _RANK_WORDS)


def pytest_collection_modifyitems(config, items) -> None:  # noqa: ANN001 - pytest's hook signature
    """Mark the rank-launching tests and move them to the front (stable order otherwise): the group is the longest
    unit of work, so it starts first and the other worker fills the time beside it."""
    import pytest

    ranks = [item for item in items if _launches_ranks(item)]
    for item in ranks:
        item.add_marker(pytest.mark.xdist_group("ranks"))
    chosen = {id(item) for item in ranks}
    items[:] = ranks + [item for item in items if id(item) not in chosen]
