"""Every script in benchmarks/ (its topic folders, and index.py) runs in its smoke mode (``--smoke``: tiny sizes,
seconds, no output files), so a benchmark broken by a library change fails the test suite instead of rotting until
its next full run; and benchmarks/README.md, the index, is what benchmarks/index.py generates.

Each script runs in a subprocess from a copy of benchmarks/ (anything a script writes lands in the copy, never in
the committed results) against the gradcodes this session imports. Scripts that need optional packages (scikit-learn,
matplotlib, mpi4py) skip those parts with a message and still exit 0.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
BENCHMARKS = ROOT / "benchmarks"
#: every script, as its path under benchmarks/ ("verify/verify_speed.py"; "index.py" at the top)
SCRIPTS = sorted(p.relative_to(BENCHMARKS).as_posix() for p in BENCHMARKS.rglob("*.py") if "__pycache__" not in p.parts)
TOPICS = ("verify", "numerics", "runtime", "families", "speed", "reviews")


@pytest.fixture(scope="module")
def bench_copy(tmp_path_factory: pytest.TempPathFactory) -> Path:
    dest = tmp_path_factory.mktemp("bench") / "benchmarks"
    shutil.copytree(BENCHMARKS, dest, ignore=shutil.ignore_patterns("__pycache__", "*.png"))
    # runtime/runtime_torch.py's job 5 trains the worked example's model: examples/ sits next to benchmarks/
    shutil.copytree(ROOT / "examples", dest.parent / "examples", ignore=shutil.ignore_patterns("__pycache__"))
    return dest


def test_every_script_is_covered():
    assert len(SCRIPTS) >= 40
    assert {"families/coded_reduce.py", "families/expander_graphs.py", "index.py"} <= set(SCRIPTS)
    # every script in a topic folder (index.py alone at the top), one level deep, names unique across folders
    folders = {Path(s).parent.as_posix() for s in SCRIPTS}
    assert folders == {".", *TOPICS}, folders
    assert [s for s in SCRIPTS if "/" not in s] == ["index.py"]
    names = [Path(s).name for s in SCRIPTS]
    assert len(names) == len(set(names)), sorted(n for n in names if names.count(n) > 1)


#: results files not named after the script that writes them
RESULT_OWNERS = {"certified_seeds.jsonl": "certify_seeds", "certify_check.txt": "certify_seeds",
                 "seed_screen.jsonl": "certify_seeds", "adversarial_spread.txt": "adversarial_numerics",
                 "acceptance_bound_cost.txt": "frontier"}


def test_results_sit_next_to_their_scripts():
    """No results folder at the top any more; each topic's results/ holds files only, of that topic's scripts."""
    assert not (BENCHMARKS / "results").exists()
    for topic in TOPICS:
        stems = {p.stem for p in (BENCHMARKS / topic).glob("*.py")}
        results = BENCHMARKS / topic / "results"
        assert results.is_dir(), results
        for f in results.iterdir():
            owner = RESULT_OWNERS.get(f.name) or max((s for s in stems if f.name.startswith(s)), key=len, default=None)
            assert f.is_file() and owner in stems, f


def test_index_is_current():
    """benchmarks/README.md is exactly what ``python benchmarks/index.py`` writes (regenerate it after a change)."""
    spec = importlib.util.spec_from_file_location("benchmarks_index", BENCHMARKS / "index.py")
    assert spec is not None and spec.loader is not None
    index = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(index)
    text = index.render()
    assert (BENCHMARKS / "README.md").read_text(encoding="utf-8") == text, "stale: python benchmarks/index.py"
    listed = {line.split("](", 1)[1].split(")", 1)[0] for line in text.splitlines() if line.startswith("- [")}
    assert listed == set(SCRIPTS) - {"index.py"}


@pytest.mark.parametrize("script", SCRIPTS)
def test_benchmark_smoke(script: str, bench_copy: Path) -> None:
    # the gradcodes this test session imports: the checkout, or the installed wheel when run from the sdist
    import gradcodes

    where = str(Path(gradcodes.__file__).resolve().parent.parent)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([where, os.environ.get("PYTHONPATH", "")]),
               MPLBACKEND="Agg", OMP_NUM_THREADS="1")
    res = subprocess.run([sys.executable, str(bench_copy / script), "--smoke"], cwd=bench_copy.parent, env=env,
                         capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, f"{script} --smoke exited {res.returncode}\n{res.stdout[-3000:]}\n{res.stderr[-3000:]}"
    assert "Traceback" not in res.stderr, res.stderr[-3000:]


@pytest.mark.parametrize("script", ["runtime/runtime_torch.py", "runtime/runtime_mpi.py"])
def test_runtime_benchmark_help(script: str, bench_copy: Path) -> None:
    """``--help`` prints the usage and does nothing else: no job is launched, no file is written."""
    before = sorted(p for p in bench_copy.rglob("*") if "__pycache__" not in p.parts)
    res = subprocess.run([sys.executable, str(bench_copy / script), "--help"], cwd=bench_copy.parent,
                         capture_output=True, text=True, timeout=60)
    assert res.returncode == 0, res.stderr[-3000:]
    assert res.stdout.startswith("usage:") and "--smoke" in res.stdout and "real" in res.stdout
    assert not res.stderr
    assert sorted(p for p in bench_copy.rglob("*") if "__pycache__" not in p.parts) == before


#: committed results files that a test reproduces: file -> (script, arguments, regex of the lines that measure time
#: or name a plot, whose values depend on the machine and on matplotlib, not on the library, optional packages the
#: committed run used)
REPRODUCED = {
    "families/results/coded_reduce.txt": (
        "families/coded_reduce.py", [],
        r"^(0\. tree figure|1\. simulator speed|   gc\.simulate \(vectorised\)|   baseline: |   plot: |total |"
        r"\s*\(matplotlib missing)|steps of gradient descent", ("sklearn",)),
}

_NUMBER = r"[-+]?(?:\d+\.\d*|\.\d+|\d+)(?:[eE][-+]?\d+)?"


def _same_line(committed: str, fresh: str) -> bool:
    """Equal text, numbers equal as printed, except rounding-level deviations (both below 1e-12 in magnitude: the
    "follows uncoded gradient descent to 4.4e-16" columns differ between BLAS kernels)."""
    import re

    if re.sub(_NUMBER, "#", committed) != re.sub(_NUMBER, "#", fresh):
        return False
    for a, b in zip(re.findall(_NUMBER, committed), re.findall(_NUMBER, fresh), strict=True):
        if a != b and not (abs(float(a)) < 1e-12 and abs(float(b)) < 1e-12):
            return False
    return True


@pytest.mark.parametrize("result", sorted(REPRODUCED))
def test_committed_results_match_their_scripts(result: str, bench_copy: Path) -> None:
    """A committed result is what its script prints now, at full size (the simulated-time tables of CodedReduce said
    GC took 1,452 s after the simulator's default wait had changed to give 350 s)."""
    import re

    import gradcodes

    script, argv, volatile, needs = REPRODUCED[result]
    for module in needs:               # the committed run used an optional extra (the training part: scikit-learn)
        pytest.importorskip(module)
    where = str(Path(gradcodes.__file__).resolve().parent.parent)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([where, os.environ.get("PYTHONPATH", "")]),
               MPLBACKEND="Agg", OMP_NUM_THREADS="1")
    res = subprocess.run([sys.executable, str(bench_copy / script), *argv], cwd=bench_copy.parent, env=env,
                         capture_output=True, text=True, timeout=600)
    assert res.returncode == 0, res.stderr[-3000:]
    keep = re.compile(volatile)
    # blank lines and the volatile ones (timings, plots, which depend on the machine and on matplotlib) left out
    committed = [ln for ln in (BENCHMARKS / result).read_text().splitlines() if ln.strip() and not keep.search(ln)]
    fresh = [ln for ln in res.stdout.splitlines() if ln.strip() and not keep.search(ln)]
    assert len(committed) == len(fresh), f"{result}: {len(committed)} lines committed, the script printed {len(fresh)}"
    stale = [(c, f) for c, f in zip(committed, fresh, strict=True) if not _same_line(c, f)]
    assert not stale, f"{result} is stale (regenerate: python benchmarks/{script}):\n" + "\n".join(
        f"  committed: {c}\n  now:       {f}" for c, f in stale[:5])


def test_results_check_catches_a_stale_number():
    assert _same_line("   GC             1451.5      0.1758", "   GC             1451.5      0.1758")
    assert not _same_line("   GC             1451.5      0.1758", "   GC              350.4      0.1758")
    assert _same_line("deviation 8.88e-16", "deviation 4.44e-16")
    assert not _same_line("deviation 8.88e-16", "deviation 4.44e-10")
    assert not _same_line("GC follows: yes", "GC follows: no")
