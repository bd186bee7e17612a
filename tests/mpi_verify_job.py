"""An MPI job for tests/test_verify_mpi.py: every rank verifies the panel code named in argv[1] (PANEL: screened
enumeration; REF_PANEL: reference enumeration, trees and exact codes included) with comm=WORLD and writes its
report's fields as JSON to ``<argv[3]>.<rank>``."""

from __future__ import annotations

import json
import os
import sys

import gradcodes._verify.cost
import gradcodes._verify.parallel as P

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from test_verify_scale import PANEL, REF_OPTIONS, REF_PANEL, fields, ref_fields  # noqa: E402


def main() -> None:
    from mpi4py import MPI

    name, stop = sys.argv[1], sys.argv[2] == "1"
    ckpt = sys.argv[4] if len(sys.argv) > 4 else None
    if name in PANEL:
        gradcodes._verify.cost._KERNEL_MIN_SETS = 0
        P._FIRST, P._CHUNK = (96, 160), 256            # as the small_grid fixture: many chunks
        build, dtype = PANEL[name]
        report = __import__("gradcodes").verify(build(), dtype=dtype, stop_on_failure=stop, limit=10**6,
                                                comm=MPI.COMM_WORLD, checkpoint=ckpt)
        got = fields(report)
    else:                                              # the reference enumeration (small_ref_grid fixture)
        build, opts = REF_PANEL[name]
        report = __import__("gradcodes").verify(build(), stop_on_failure=stop, comm=MPI.COMM_WORLD,
                                                checkpoint=ckpt, **{**REF_OPTIONS, **opts})
        got = ref_fields(report)
    with open(f"{sys.argv[3]}.{MPI.COMM_WORLD.Get_rank()}", "w") as f:
        json.dump(got, f)


if __name__ == "__main__":
    main()
