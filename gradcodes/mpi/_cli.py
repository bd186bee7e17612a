"""``mpiexec -n SIZE python -m mpi4py -m gradcodes.mpi --scheme NAME ...``: a built-in training job.

Trains the synthetic problem with the chosen registered scheme, then (in the same job, on the same ranks) with
the uncoded baselines: wait-for-all, ignore-stragglers (the first ``N - s`` messages, inexact) and
``MPI.Allreduce``; prints progress and a final table with the speedups.
"""

from __future__ import annotations

import argparse
import inspect
import math
import sys
from typing import Any

import numpy as np

from .._base.errors import GradcodesValueError

__all__ = ["main", "build_parser"]


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m mpi4py -m gradcodes.mpi",
        description="Run a registered gradient-coding scheme on MPI with a synthetic least-squares or logistic "
                    "problem, against uncoded baselines run in the same job. Launch with "
                    "mpiexec -n SIZE python -m mpi4py -m gradcodes.mpi ...",
    )
    p.add_argument("--scheme", required=True, help="a registered scheme (gradcodes list), e.g. coded_reduce, "
                                                    "cyclic_repetition, expander_code")
    for name, typ, hlp in [("n", int, "workers"), ("branching", int, "children per node (coded_reduce)"),
                           ("s", int, "stragglers tolerated"), ("L", int, "tree depth (coded_reduce)"),
                           ("m", int, "communication factor"), ("k", int, "partitions"),
                           ("degree", int, "graph degree (expander_code)")]:
        p.add_argument(f"--{name}", type=typ, default=None, help=hlp)
    p.add_argument("--code-seed", type=int, default=0, help="seed of random constructions (default 0)")
    p.add_argument("--iters", type=int, default=50, help="iterations per scheme (default 50)")
    p.add_argument("--problem", choices=["least-squares", "logistic"], default="least-squares")
    p.add_argument("--points", type=int, default=2400, help="data points (default 2400)")
    p.add_argument("--dim", type=int, default=50, help="parameters (default 50)")
    p.add_argument("--delay", choices=["none", "shifted-exp", "fixed", "random"], default="none",
                   help="injected straggling: the simulator's shifted exponential, a fixed delay on --slow workers, "
                        "or on --count random workers per iteration")
    p.add_argument("--a", type=float, default=1e-4, help="shifted-exp: seconds per data point (default 1e-4)")
    p.add_argument("--mu", type=float, default=None, help="shifted-exp: rate per data point (default 1/a)")
    p.add_argument("--seconds", type=float, default=0.1, help="fixed/random: the delay (default 0.1 s)")
    p.add_argument("--slow", type=str, default="0", help="fixed: comma-separated worker indices (default 0)")
    p.add_argument("--count", type=int, default=1, help="random: late workers per iteration (default 1)")
    p.add_argument("--hang", type=str, default="", help="comma-separated workers that never answer")
    p.add_argument("--baselines", default="wait-for-all,ignore-stragglers,allreduce",
                   help="comma-separated baselines to run too ('' for none)")
    p.add_argument("--wait-for", type=int, default=None, help="approximate codes: messages to wait for")
    p.add_argument("--deadline", type=float, default=None, help="approximate codes: seconds to wait at most")
    p.add_argument("--decoder", default=None, help="decoder name (approximate codes)")
    p.add_argument("--timeout", type=float, default=60.0, help="seconds before a missing-workers error")
    p.add_argument("--t-c", type=float, default=0.0, help="per-message time for the simulate prediction")
    p.add_argument("--seed", type=int, default=0, help="data and delay seed (default 0)")
    p.add_argument("--json", default=None, help="write the results to this JSON file (rank 0)")
    return p


def _ints(text: str) -> list[int]:
    return [int(x) for x in text.split(",") if x.strip()]


def build_code(args: argparse.Namespace) -> Any:
    """The scheme's code from the options its constructor accepts."""
    from .._base.registry import get_scheme

    scheme = get_scheme(args.scheme)
    given = {"n": args.n, "branching": args.branching, "s": args.s, "L": args.L, "m": args.m, "k": args.k,
             "degree": args.degree,
             "seed": args.code_seed}
    sig = inspect.signature(scheme.build)
    accepts_any = any(q.kind is q.VAR_KEYWORD for q in sig.parameters.values())
    kwargs = {k: v for k, v in given.items() if v is not None and (k in sig.parameters or accepts_any)}
    unknown = [k for k, v in given.items() if v is not None and k not in kwargs and k != "seed"]
    if unknown:
        raise GradcodesValueError(f"scheme {scheme.name!r} does not take {', '.join('--' + u for u in unknown)}; it "
                                  f"takes "
                         f"{', '.join(sig.parameters)}")
    return scheme.build(**kwargs)


def _delay(args: argparse.Namespace) -> Any:
    from .._runtime.delays import FixedDelay, Hang, NoDelay, ShiftedExponential

    d: Any = NoDelay()
    if args.delay == "shifted-exp":
        d = ShiftedExponential(args.a, args.mu, m_data=args.points, rng=args.seed)
    elif args.delay == "fixed":
        d = FixedDelay(args.seconds, workers=_ints(args.slow))
    elif args.delay == "random":
        d = FixedDelay(args.seconds, count=args.count, rng=args.seed)
    if args.hang.strip():
        d = d + Hang(_ints(args.hang))
    return d


def _resiliency(code: Any, N: int) -> int:
    from .. import CodedReduceCode

    if isinstance(code, CodedReduceCode):
        return (code.s * N) // code.branching
    s = getattr(code, "s", None)
    return int(s) if s is not None else 0


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    from .. import ignore_stragglers, uncoded
    from .._runtime.layout import layout_for
    from ._comm import get_mpi
    from ._problem import SyntheticProblem
    from ._train import train

    MPI = get_mpi()
    comm = MPI.COMM_WORLD
    rank, size = comm.Get_rank(), comm.Get_size()
    say = print if rank == 0 else (lambda *a, **k: None)
    code = build_code(args)
    lay = layout_for(code)
    if size != lay.size:
        say(f"gradcodes.mpi: {code.name} has {lay.workers} workers and needs {lay.size} MPI ranks (1 master + "
            f"{lay.workers} workers); this job has {size}. Run:\n  mpiexec -n {lay.size} python -m mpi4py -m "
            f"gradcodes.mpi {' '.join(argv if argv is not None else sys.argv[1:])}", file=sys.stderr, flush=True)
        return 2
    N = lay.workers
    prob = SyntheticProblem(args.problem, points=args.points, dim=args.dim, rng=args.seed)
    delay = _delay(args)
    s_gc = _resiliency(code, N)
    runs: list[tuple[str, Any, dict[str, Any]]] = [(code.name, code, {"wait_for": args.wait_for,
                                                                     "deadline": args.deadline,
                                                                     "decoder": args.decoder})]
    for b in [x.strip() for x in args.baselines.split(",") if x.strip()]:
        if b == "wait-for-all":
            runs.append((b, uncoded(N), {}))
        elif b == "ignore-stragglers":
            runs.append((b, ignore_stragglers(N), {"wait_for": N - s_gc}))
        elif b == "allreduce":
            runs.append((b, "allreduce", {}))
        else:
            raise GradcodesValueError(f"unknown baseline {b!r}; valid: wait-for-all, ignore-stragglers, allreduce")
    say(f"gradcodes.mpi: {size} ranks, {prob.kind} ({prob.points} points, {prob.dim} parameters), "
        f"{args.iters} iterations per scheme, delay: {delay.describe()}", flush=True)
    results = []
    every = max(1, args.iters // 5)
    for label, c, kw in runs:
        k = N if isinstance(c, str) else c.k
        grad = prob.partial_gradient(k)
        lr = prob.lr

        def step(w: np.ndarray, g: np.ndarray, t: int, lr: float = lr) -> None:
            w -= lr * g

        def progress(t: int, sec: float, loss: Any, label: str = label) -> None:
            if t % every == 0 or t == args.iters - 1:
                say(f"  [{label}] iteration {t:>4}  {sec * 1e3:8.1f} ms  loss {loss:.6g}", flush=True)

        res = train(c, np.zeros(prob.dim), grad, step, iterations=args.iters, delay=delay, timeout=args.timeout,
                    loss=prob.loss, t_c=args.t_c, callback=progress, **kw)
        if res is not None:
            res.scheme = label
            results.append(res)
    if rank != 0:
        return 0
    from .._base.output import format_table

    base = {r.scheme: r.summary()["mean_time"] for r in results}
    others = [b for b in base if b != results[0].scheme]
    rows = []
    for r in results:
        s = r.summary()
        row = {"scheme": r.scheme, "workers": str(r.workers), "waits": str(r.need),
               "mean s/it": f"{s['mean_time']:.4f}", "median": f"{s['median_time']:.4f}",
               "predicted": f"{r.predicted:.4f}" if r.predicted else "-",
               "final loss": f"{s.get('final_loss', math.nan):.6g}"}
        row.update({f"x vs {b}": f"{base[b] / s['mean_time']:.2f}" for b in others})
        rows.append(row)
    print("\n" + format_table(rows, right=[c for c in rows[0] if c != "scheme"] if rows else ()))
    print("(x vs B: B's mean time per iteration / this scheme's, measured in this job; the first iteration is "
          "left out)")
    if args.json:
        import json

        with open(args.json, "w") as fh:
            json.dump({"args": vars(args), "results": [r.summary() for r in results]}, fh, indent=1, default=str)
    return 0
