"""A construction is a function of its arguments: the committed SHA-256 digests of every registered scheme.

``tests/data/digests.json`` holds the digests of ``B`` (dtype, shape, bytes) and of ``params`` (canonical JSON) of
every registered scheme at its tour sizes and a few seeds, plus the calls that differed between BLAS kernels or
numpy SIMD levels before the constructions were made reproducible. This file rebuilds them all and compares;
``.ci/kernels`` runs it under every BLAS kernel, thread count and SIMD level the machine can execute, and the last
test here runs the known offenders once under another kernel and SIMD level itself. Regenerate the table only
when a construction changes on purpose: ``python -m tests.make_digests``.
"""

from __future__ import annotations

import json
import os
import platform
import subprocess
import sys
from pathlib import Path

import pytest
from make_digests import TABLE, cases, digests

import gradcodes as gc

SAVED = json.loads(TABLE.read_text())
CASES = list(cases())


@pytest.mark.parametrize(("key", "name", "kwargs"), CASES, ids=[c[0] for c in CASES])
def test_digest_matches_the_committed_table(key, name, kwargs):
    assert key in SAVED, f"{key} has no committed digest: run python -m tests.make_digests"
    got = digests(name, kwargs)
    assert got["B"] == SAVED[key]["B"], f"{key}: B is not bit-identical to the committed build"
    assert got["params"] == SAVED[key]["params"], f"{key}: params differ from the committed build"


def test_table_covers_every_registered_scheme_and_nothing_stale():
    keys = {c[0] for c in CASES}
    assert set(SAVED) == keys
    covered = {entry["scheme"] for entry in SAVED.values()}
    assert set(gc.schemes()) <= covered


#: the calls measured to differ between BLAS kernels or SIMD levels before (one per construction fixed)
OFFENDERS = [
    "gc.grouped_random(n=13, s=4, candidates=2)",
    "gc.cyclic_repetition(n=100, s=10, rng=0)",
    "ye_abbe(n=50, s=5, m=5, seed=0)",
    "gc.ye_abbe(n=50, s=5, m=5, nodes='random', rng=0)",
    "cyclic_mds(n=12, s=3)",
    "heterogeneous(n=10, tau=1.5, seed=0)",
    "sgc(n=10, degree=2, tau=1.5, seed=0)",
]


def _other_setting() -> dict[str, str] | None:
    """Environment of another OpenBLAS kernel (Prescott: any x86-64) and numpy's baseline SIMD level."""
    if platform.machine().lower() not in ("x86_64", "amd64") or not Path("/proc/cpuinfo").exists():
        return None
    from numpy._core._multiarray_umath import __cpu_dispatch__, __cpu_features__

    env = {k: v for k, v in os.environ.items() if k not in ("OPENBLAS_L2_SIZE", "NPY_DISABLE_CPU_FEATURES")}
    env.update(OPENBLAS_CORETYPE="Prescott", OPENBLAS_NUM_THREADS="1")
    disable = [f for f in __cpu_dispatch__ if __cpu_features__.get(f)]
    if disable:
        env["NPY_DISABLE_CPU_FEATURES"] = " ".join(disable)
    return env


def test_known_offenders_are_bit_identical_under_another_kernel_and_simd_level():
    if os.environ.get("GRADCODES_CI_KERNELS"):
        pytest.skip(".ci/kernels runs this whole file under every kernel and SIMD level already")
    env = _other_setting()
    if env is None:
        pytest.skip("needs an x86-64 Linux CPU (OpenBLAS kernels selected through OPENBLAS_CORETYPE)")
    assert set(OFFENDERS) <= set(SAVED)
    here = Path(__file__).resolve().parent
    env["PYTHONPATH"] = os.pathsep.join([str(Path(gc.__file__).resolve().parent.parent), str(here)])
    code = ("import json, sys\nimport make_digests as m\n"
            f"keys = {OFFENDERS!r}\n"
            "print(json.dumps({k: m.digests(name, kw) for k, name, kw in m.cases() if k in keys}))\n")
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120,
                         check=True)
    got = json.loads(out.stdout.strip().splitlines()[-1])
    assert set(got) == set(OFFENDERS)
    bad = [k for k in OFFENDERS if got[k] != {"B": SAVED[k]["B"], "params": SAVED[k]["params"]}]
    assert not bad, f"differ under OPENBLAS_CORETYPE=Prescott, numpy baseline SIMD: {bad}"
