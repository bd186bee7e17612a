"""Decode apply and encode speed against baselines measured in the same run (float32 messages).

    python benchmarks/speed/decode_apply.py              # p = 10**7 (5 * 10**6 when memory is short), ~4 GB of RAM
    python benchmarks/speed/decode_apply.py --p 1000000  # smaller
    python benchmarks/speed/decode_apply.py --quick      # p = 10**6, 5 repeats
    python benchmarks/speed/decode_apply.py --smoke      # p = 10**3, writes nothing (the test suite runs it)

Decode (``code.decode(F, Y)``, the decoding vector already cached) against:

* 0/1 decoders (fractional repetition, stable binary): adding just the rows with non-zero coefficients into one
  preallocated float32 accumulator (``acc[:] = Y[i0]; acc += Y[i1]; ...``). Target <= 1.2x.
* dense decoders (real cyclic MDS at (100, 9); (100, 10) has no real code, n - s must be odd; random cyclic
  repetition is refused in float32 on most sets, its cancellation is too large): ``a_F @ Y_F`` on rows already
  gathered in one contiguous block (BLAS gemv, the streaming read). Target <= 1.1x.

With the full receive buffer the decode runs the compiled kernel (``gradcodes._core.apply.csr_product``); the
column "numpy path ms" times the same decode with the kernel switched off (the previous path).

Each is run with the full receive buffer (n rows, stragglers at random positions) and with compact rows
(one row per responder). The GB/s column counts the bytes of the rows read plus the output written, against
this machine's streaming read rate measured in the same run (``np.max`` over a contiguous float32 block).

Encode at (500, 5) with p = 10**5: ``code.encode(G)`` (and the per-worker ``encode_worker``) against the dense
product ``B @ G`` in float32 (numpy, same dtype). Target: >= 20x, equal to rounding. The roofline line gives the
dense product's FLOP rate and the time of the encode's unavoidable memory traffic (a copy of G: read G, write Y),
i.e. the largest ratio this machine allows in this run.

Every time is the median of ``--repeats`` (>= 5) runs, alternating the methods, each call after a 0.25 s pause
(so that no method pays for the BLAS threads the previous one left spinning); the load average is printed
first. Results go to ``benchmarks/speed/results/decode_apply.txt``.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

import gradcodes as gc  # noqa: E402
import gradcodes._core.apply as ap  # noqa: E402

RESULTS = Path(__file__).resolve().parent / "results" / "decode_apply.txt"


def available_bytes() -> int:
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 1 << 62


#: idle seconds before each timed call: OpenBLAS's worker threads keep spinning for a while after a threaded
#: call, and on two cores they take one from whatever method runs next (the run prints the decode's time right
#: after ``a_F @ Y_F`` and after the pause: :func:`pause_check`)
PAUSE = 0.25


def pause_check(dec, base, repeats: int) -> tuple[float, float]:
    """Median seconds of ``dec()`` called right after ``base()`` and after ``base()`` and :data:`PAUSE`."""
    right, paused = [], []
    for _ in range(repeats):
        for sink, pause in ((right, 0.0), (paused, PAUSE)):
            time.sleep(PAUSE)
            base()
            time.sleep(pause)
            t0 = time.perf_counter()
            dec()
            sink.append(time.perf_counter() - t0)
    return float(np.median(right)), float(np.median(paused))


def medians(fns: dict, repeats: int) -> dict:
    """Median seconds of each callable, the methods alternating within every repeat (:data:`PAUSE` before each)."""
    times: dict = {k: [] for k in fns}
    for _ in range(repeats):
        for k, f in fns.items():
            time.sleep(PAUSE)
            t0 = time.perf_counter()
            f()
            times[k].append(time.perf_counter() - t0)
    return {k: float(np.median(v)) for k, v in times.items()}


def add_rows(acc: np.ndarray, Y: np.ndarray, rows: np.ndarray, coefs: np.ndarray) -> np.ndarray:
    """The 0/1 baseline: one preallocated accumulator, one add (or subtract) per row with a non-zero coefficient."""
    np.copyto(acc, Y[rows[0]]) if coefs[0] > 0 else np.negative(Y[rows[0]], out=acc)
    for r, c in zip(rows[1:], coefs[1:], strict=True):
        (np.add if c > 0 else np.subtract)(acc, Y[r], out=acc)
    return acc


def decode_cases(p: int, repeats: int, out: list[str]) -> list[dict]:
    rng = np.random.default_rng(0)
    nmax = 100
    Y = np.empty((nmax, p), dtype=np.float32)
    for i in range(nmax):
        Y[i] = rng.random(p, dtype=np.float32) + 0.5
    t0 = time.perf_counter()
    block = Y[:90]
    read = medians({"max": block.max}, repeats)["max"]
    read_rate = 90 * p * 4 / read
    out.append(f"streaming read rate (np.max over 90 x {p} float32, {90 * p * 4 / 1e9:.2f} GB): "
               f"{read_rate / 1e9:.1f} GB/s (median {read * 1e3:.0f} ms)")
    codes = [("fractional_repetition(100, 9)", gc.fractional_repetition(100, 9), "0/1"),
             ("stable_binary(100, 9)", gc.stable_binary(100, 9), "0/1"),
             ("cyclic_mds(100, 9, real)", gc.cyclic_mds(100, 9, field="real"), "dense")]
    rows = []
    for label, code, kind in codes:
        n = code.n
        S = np.sort(rng.choice(n, code.s, replace=False))
        # a set that decodes float32 messages (the acceptance bound refuses about 8 in 20 random sets of the real
        # cyclic MDS code at (100, 9) in float32; the 0/1 codes decode every set)
        while not code.decodable(np.setdiff1d(np.arange(n), S), dtype=np.float32):
            S = np.sort(rng.choice(n, code.s, replace=False))
        F = np.setdiff1d(np.arange(n), S)
        a = code.decoding_matrix(F)[0].astype(np.float32)          # also caches the decoding vector
        for layout in ("full", "compact"):
            if layout == "full":
                msgs = Y[:n]
                src = np.flatnonzero(a)                            # rows read = workers with a_i != 0
                coef = a[src]
            else:
                msgs = Y[:F.size]                                  # row r = worker F[r]
                nz = np.flatnonzero(a[F])
                src, coef = nz, a[F][nz]
            acc = np.empty(p, dtype=np.float32)
            if kind == "0/1":
                assert np.all(np.abs(coef) == 1), label
                def base(acc=acc, msgs=msgs, src=src, coef=coef):
                    return add_rows(acc, msgs, src, coef)
                base_name = "add nnz rows"
                target = 1.2
            else:
                gathered = Y[:src.size]                            # rows already gathered: one contiguous block
                cg = coef.copy()
                def base(cg=cg, gathered=gathered):
                    return cg @ gathered
                base_name = "a_F @ Y_F"
                target = 1.1
            def dec(code=code, F=F, msgs=msgs, layout=layout):
                return code.decode(F, msgs, rows=layout)
            g = dec()
            if kind == "0/1":
                ref = add_rows(np.empty(p, dtype=np.float32), msgs, src, coef)
            else:
                ref = (coef.astype(np.float64) @ msgs[src].astype(np.float64)).astype(np.float32) \
                    if p <= 10**6 else None
            if ref is not None:
                assert g.dtype == np.float32
                tol = 1e-4 if kind == "dense" else 1e-6     # relative to the sum's scale (entries may cancel)
                np.testing.assert_allclose(g, ref, rtol=tol, atol=tol * float(np.abs(ref).max()))
            fns = {"decode": dec, "base": base}
            if layout == "full":                                   # the numpy path (compiled kernel off)
                def dec_numpy(dec=dec):
                    ap._USE_NUMBA = False
                    try:
                        return dec()
                    finally:
                        ap._USE_NUMBA = True
                fns["numpy"] = dec_numpy
            t = medians(fns, repeats)
            if kind == "dense" and layout == "full":
                right, paused = pause_check(dec, base, repeats)
                out.append(f"pause check ({label}, full): decode right after a_F @ Y_F {right * 1e3:.1f} ms, after "
                           f"a_F @ Y_F and a {PAUSE} s pause {paused * 1e3:.1f} ms (median of {repeats} each)")
            bytes_moved = (src.size + 1) * p * 4
            rows.append(dict(code=label, kind=kind, layout=layout, read_rows=int(src.size), decode=t["decode"],
                             numpy=t.get("numpy", float("nan")),
                             base=t["base"], base_name=base_name, ratio=t["decode"] / t["base"], target=target,
                             gbs=bytes_moved / t["decode"] / 1e9, base_gbs=bytes_moved / t["base"] / 1e9,
                             read_rate=read_rate / 1e9))
    out.append(f"(setup and timing {time.perf_counter() - t0:.0f} s)")
    return rows


def encode_case(repeats: int, out: list[str], p: int = 10**5) -> dict:
    n, s = 500, 5
    code = gc.cyclic_repetition(n, s, rng=0)
    rng = np.random.default_rng(1)
    G = rng.standard_normal((n, p)).astype(np.float32)
    B32 = code.float_B(np.float32)
    Y = np.empty((n, p), dtype=np.float32)
    sup = code.supports
    parts = [G[sup[i]] for i in range(n)]                          # each worker's own partials (copies)
    code.encode(G)                                                 # warm the sparse form of B

    def workers():
        for i in range(n):
            code.encode_worker(i, parts[i], out=Y[i])

    Y2 = np.empty_like(Y)
    code.encode(G, out=Y)                                          # compile (or load) the kernel off the clock
    t = medians({"dense": lambda: B32 @ G, "encode": lambda: code.encode(G),
                 "encode_out": lambda: code.encode(G, out=Y), "workers": workers,
                 "copy": lambda: np.copyto(Y2, G), "fresh_copy": lambda: G.copy()}, repeats)
    flops = 2.0 * n * n * p
    out.append(f"roofline: dense B @ G does {flops / 1e9:.0f} GFLOP at {flops / t['dense'] / 1e9:.0f} GFLOP/s; the "
               f"sparse encode must read G and write Y ({2 * G.nbytes / 1e9:.2f} GB): a copy of G into a "
               f"preallocated buffer takes {t['copy'] * 1e3:.1f} ms ({2 * G.nbytes / t['copy'] / 1e9:.1f} GB/s "
               f"read+write), into a fresh array (G.copy(), page faults included) {t['fresh_copy'] * 1e3:.1f} ms; "
               f"so at most "
               f"{t['dense'] / t['fresh_copy']:.1f}x (fresh Y) / {t['dense'] / t['copy']:.1f}x (out=) over the "
               f"dense product on this machine in this run")
    ref = B32.astype(np.float64) @ G.astype(np.float64)
    scale = np.abs(B32).astype(np.float64) @ np.abs(G).astype(np.float64)
    u = np.finfo(np.float32).eps / 2
    err_sparse = float(np.max(np.abs(code.encode(G) - ref) / (scale * u)))
    err_dense = float(np.max(np.abs(B32 @ G - ref) / (scale * u)))
    workers()
    err_workers = float(np.max(np.abs(Y - ref) / (scale * u)))
    out.append(f"encode cyclic_repetition({n}, {s}) p={p} float32, nnz(B) = {int(np.count_nonzero(B32))} of "
               f"{n * n}; max error in units of u * sum|B||G|: sparse {err_sparse:.2f}, dense {err_dense:.2f}, "
               f"per-worker {err_workers:.2f}")
    return dict(t, ratio=t["dense"] / t["encode"], ratio_out=t["dense"] / t["encode_out"],
                ratio_copy=t["dense"] / t["copy"], ratio_fresh=t["dense"] / t["fresh_copy"],
                ratio_workers=t["dense"] / t["workers"], ok=max(err_sparse, err_workers) <= code.load + 1)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--p", type=int, default=None, help="gradient length of the decode benchmark (default 10**7)")
    ap.add_argument("--repeats", type=int, default=11, help="repeats per timing (>= 5), methods alternating")
    ap.add_argument("--quick", action="store_true", help="p = 10**6 and 5 repeats")
    ap.add_argument("--smoke", action="store_true",
                    help="tiny sizes (seconds) and no output files: checks that the script still runs")
    ap.add_argument("--no-write", action="store_true", help="do not write benchmarks/speed/results/decode_apply.txt")
    args = ap.parse_args()
    if args.smoke:                                   # p = 10**3, no pauses, nothing written
        global PAUSE
        args.p, args.no_write, PAUSE = 10**3, True, 0.0
    repeats = max(5, 5 if args.quick else args.repeats)
    p = args.p or (10**6 if args.quick else 10**7)
    need = 100 * p * 4 * 1.3
    if args.p is None and need > available_bytes():
        p = 5 * 10**6
    out = [f"load average at start: {' '.join(f'{x:.2f}' for x in os.getloadavg())} ({os.cpu_count()} CPUs)",
           f"decode: p = {p} float32, median of {repeats} alternating repeats"]
    rows = decode_cases(p, repeats, out)
    out.append("")
    head = (f"{'code':30s} {'layout':8s} {'rows read':>9s} {'decode ms':>9s} {'baseline':>14s} {'base ms':>8s} "
            f"{'ratio':>6s} {'target':>7s} {'met':>4s} {'GB/s':>6s} {'base GB/s':>9s} {'read rate':>9s} "
            f"{'numpy path ms':>13s}")
    out.append(head)
    all_met = True
    for r in rows:
        met = r["ratio"] <= r["target"]
        all_met &= met
        out.append(f"{r['code']:30s} {r['layout']:8s} {r['read_rows']:9d} {r['decode'] * 1e3:9.1f} "
                   f"{r['base_name']:>14s} {r['base'] * 1e3:8.1f} {r['ratio']:6.2f} {'<=' + str(r['target']):>7s} "
                   f"{'yes' if met else 'NO':>4s} {r['gbs']:6.1f} {r['base_gbs']:9.1f} {r['read_rate']:9.1f} "
                   f"{r['numpy'] * 1e3:13.1f}")
    out.append("")
    enc = encode_case(repeats, out, 10**3 if args.smoke else 10**5)
    out.append(f"{'method':34s} {'median ms':>9s} {'speed-up vs dense':>18s}")
    out.append(f"{'dense B @ G (float32 BLAS)':34s} {enc['dense'] * 1e3:9.1f} {1.0:18.1f}")
    out.append(f"{'code.encode(G)':34s} {enc['encode'] * 1e3:9.1f} {enc['ratio']:18.1f}")
    out.append(f"{'code.encode(G, out=Y)':34s} {enc['encode_out'] * 1e3:9.1f} {enc['ratio_out']:18.1f}")
    out.append(f"{'encode_worker(i, own partials) x n':34s} {enc['workers'] * 1e3:9.1f} {enc['ratio_workers']:18.1f}")
    out.append(f"{'(floor) copy G -> fresh array':34s} {enc['fresh_copy'] * 1e3:9.1f} {enc['ratio_fresh']:18.1f}")
    out.append(f"{'(floor) copy G -> preallocated':34s} {enc['copy'] * 1e3:9.1f} {enc['ratio_copy']:18.1f}")
    met = enc["ratio"] >= 20
    all_met &= met
    out.append(f"encode target >= 20x: {'met' if met else 'NOT met'} ({enc['ratio']:.1f}x); equal to rounding: "
               f"{'yes' if enc['ok'] else 'NO'}")
    out.append(f"all targets met: {'yes' if all_met else 'no'}")
    out.append(f"load average at end: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    text = "\n".join(out)
    print(text)
    if not args.no_write:
        RESULTS.parent.mkdir(parents=True, exist_ok=True)
        RESULTS.write_text("$ python benchmarks/speed/decode_apply.py" + (f" --p {args.p}" if args.p else "")
                           + (" --quick" if args.quick else "") + "\n" + text + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
