"""The reproductions of "proofs that hold on every machine", each run in a fresh process (so the BLAS kernel can be
chosen per run), printing what gradcodes answers today.

Snippets that used to flip between OpenBLAS kernels (``OPENBLAS_CORETYPE``, with ``OPENBLAS_L2_SIZE`` unset) run
under several kernels; a snippet is consistent when every kernel gives the same answer. Kernels the CPU cannot run
are skipped.

    python benchmarks/reviews/proof_snippets.py            # every snippet (about a minute)
    python benchmarks/reviews/proof_snippets.py --smoke    # two snippets, one kernel
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
from pathlib import Path

SNIPPETS: dict[str, str] = {
    "1a verify verdict for every batch size, cyclic_repetition(30, 4, rng=7, refine=0)": """
c = gc.cyclic_repetition(30, 4, rng=7, refine=0)
print([gc.verify(c, limit=10**6, batch_size=b).verdict for b in (None, 1, 7)])
""",
    "1b decode of stragglers (8, 15, 22, 24) of that code": """
c = gc.cyclic_repetition(30, 4, rng=7, refine=0)
try:
    c.decode([i for i in range(30) if i not in (8, 15, 22, 24)], np.ones((30, 2))); print("accepted")
except gc.DecodingError: print("DecodingError")
""",
    "1c gradcodes verify FILE of cyclic_repetition(25, 5, rng=13, refine=0): exit code": """
path = os.path.join(tmp, "c25.npz"); gc.save_code(gc.cyclic_repetition(25, 5, rng=13, refine=0), path)
from gradcodes.cli import main
import contextlib, io
with contextlib.redirect_stdout(io.StringIO()): rc = main(["verify", path])
print("exit", rc, gc.verify(gc.load_code(path), rng=0).verdict)
""",
    "2 verify and decode agree, eye(50) + a 2^30 row": """
B = np.vstack([np.eye(50), np.r_[2.0**30, np.ones(49)][None]]); code = gc.GradientCode(B, s=1)
r = gc.verify(code, stop_on_failure=False)
refused = 0
for i in range(51):
    try: code.decode([j for j in range(51) if j != i], np.ones((51, 2)))
    except gc.DecodingError: refused += 1
print(r.verdict, r.n_failures, "failing sets; decode refuses", refused)
""",
    "3 verify(dtype=float32) of a by_blocks code": """
inner = gc.cyclic_repetition(12, 4, rng=1, refine=0)
code = gc.by_blocks(gc.GradientCode(np.kron(np.eye(2), inner.B), s=4))
r = gc.verify(code, dtype=np.float32); print(r.verdict, r.dtype)
""",
    "4 CodedReduceCode.execute in float32 at the worst pattern": """
code = gc.coded_reduce(6, 2, 3, gc.cyclic_repetition(6, 3, rng=34, refine=0))
F = gc.verify(code, rng=0).worst_cancellation_responders
G = np.random.default_rng(0).normal(size=(code.k, 8)).astype(np.float32)
try: code.execute(F, code.encode(G)); print("returned a sum")
except gc.DecodingError: print("DecodingError")
""",
    "5 MPI Combiner, float32 messages, responders [1, 3, 5, 6, 7, 9, 10, 11]": """
from gradcodes._runtime.codec import Combiner
code = gc.cyclic_repetition(12, 4, rng=1, refine=0)
buf = code.encode(np.random.default_rng(1).normal(size=(12, 8)).astype(np.float32))
out, tmp32 = np.empty(8, np.float32), np.empty(8, np.float32)
try: Combiner(code).combine([1, 3, 5, 6, 7, 9, 10, 11], buf, out, tmp32); print("combined")
except gc.DecodingError: print("DecodingError")
""",
    "6a recommend(42, 21, quick=True, rng=0)": """
r = gc.recommend(42, 21, quick=True, rng=0).recommendation
print(r.chosen, r.load, "proven" if r.proven else "unproven", "meets rtol" if r.meets_rtol else "")
""",
    "6b twelve calls of recommend(42, 12, quick=True)": """
print(sorted({gc.recommend(42, 12, quick=True).name for _ in range(12)}))
""",
    "6c recommend(50, 16, max_load=18)": """
r = gc.recommend(50, 16, max_load=18).recommendation
print(r.chosen, r.load, "proven" if r.proven else "unproven", f"{r.error_estimate:.2g}")
""",
    "7a grouped_random(13, 4, candidates=2).params['block_seeds']": """
print(gc.grouped_random(13, 4, candidates=2).params["block_seeds"])
""",
    "7b SHA-256 of cyclic_repetition(100, 10, rng=0).B and ye_abbe(50, 5, 5).B": """
import hashlib
print(hashlib.sha256(gc.cyclic_repetition(100, 10, rng=0).B.tobytes()).hexdigest()[:16],
      hashlib.sha256(gc.ye_abbe(50, 5, 5).B.tobytes()).hexdigest()[:16])
""",
    "8 file with B[0,0]=0.25 and rtol=0.9: gradcodes verify exit code": """
import json, warnings
warnings.simplefilter("ignore")
path = os.path.join(tmp, "fr.npz"); gc.save_code(gc.fractional_repetition(12, 3), path)
data = dict(np.load(path)); meta = json.loads(str(data["meta"])); meta["rtol"] = 0.9
B = data["B"].astype(float); B[0, 0] = 0.25; data["B"] = B; data["meta"] = np.array(json.dumps(meta))
np.savez(path, **data)
from gradcodes.cli import main
import contextlib, io
with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()): rc = main(["verify", path])
print("exit", rc)
""",
    "9 screened enumeration: worst estimate vs the reference's, cyclic_repetition(40, 4, rng=21, refine=0)": """
import gradcodes._verify.cost
from gradcodes._verify import verifier as _verify
c = gc.cyclic_repetition(40, 4, rng=21, refine=0)
a = gc.verify(c, limit=10**6); gradcodes._verify.cost._KERNEL_MIN_SETS = 10**12; b = gc.verify(c, limit=10**6)
print(f"{a.error_estimate:.3g} {b.error_estimate:.3g} ratio {a.error_estimate / b.error_estimate:.4f}")
""",
}
KERNELS = {"1a", "1c", "7a", "7b"}      # snippets that used to depend on the kernel
CORES = ["Prescott", "Nehalem", "Haswell", "SkylakeX", "Zen"]
NEEDS = {"SkylakeX": "avx512f", "Haswell": "avx2", "Zen": "avx2"}


def _run(code: str, core: str | None, tmp: str) -> str:
    env = {k: v for k, v in os.environ.items() if k != "OPENBLAS_L2_SIZE"}
    if core:
        env["OPENBLAS_CORETYPE"] = core
    prog = f"import os, numpy as np, gradcodes as gc\ntmp = {tmp!r}\n" + code
    res = subprocess.run([sys.executable, "-c", prog], env=env, capture_output=True, text=True)
    if res.returncode:
        return "ERROR " + res.stderr.strip().splitlines()[-1][:100]
    return res.stdout.strip()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--smoke", action="store_true", help="two snippets, the default kernel")
    args = ap.parse_args()
    flags = ""
    try:
        flags = next(line for line in Path("/proc/cpuinfo").read_text().splitlines() if line.startswith("flags"))
    except (OSError, StopIteration):
        pass
    cores = [c for c in CORES if NEEDS.get(c, "") in flags]
    names = list(SNIPPETS)[1:3] if args.smoke else list(SNIPPETS)
    with tempfile.TemporaryDirectory() as tmp:
        for name in names:
            key = name.split()[0]
            if key in KERNELS and not args.smoke:
                outs = {core: _run(SNIPPETS[name], core, tmp) for core in cores}
                same = len(set(outs.values())) == 1
                print(f"{name}\n    {next(iter(outs.values())) if same else outs}   "
                      f"[{'same on ' if same else 'DIFFERS across '}{', '.join(cores)}]")
            else:
                print(f"{name}\n    {_run(SNIPPETS[name], None, tmp)}")


if __name__ == "__main__":
    main()
