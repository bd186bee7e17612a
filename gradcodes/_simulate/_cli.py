"""``gradcodes simulate``: the command line of :func:`gradcodes.simulate`."""

from __future__ import annotations

import argparse
from typing import Any

from ._core import SCHEME_NAMES, simulate

__all__ = ["add_simulate_parser", "run_simulate_cli"]


def add_simulate_parser(subparsers: Any) -> argparse.ArgumentParser:
    """Add the ``simulate`` subcommand to an ``argparse`` subparsers object (called by ``gradcodes.cli``)."""
    p = subparsers.add_parser(
        "simulate",
        help="Monte Carlo iteration time of CodedReduce vs master-worker, SGD and ring all-reduce",
        description="Expected iteration time under the shifted-exponential computation and single-port "
                    "communication models (CodedReduce paper). Defaults: the CodedReduce paper's setting "
                    "(N = 156 = 12 + 144, s = 5, t_c = 0.05 s, a = 5e-5 s/point, a*mu = 1, 49,920 points).",
    )
    p.add_argument("--schemes", default=",".join(SCHEME_NAMES),
                   help="comma-separated subset of " + ",".join(SCHEME_NAMES) + " (default: all)")
    p.add_argument("--branching", type=int, default=None,
                   help="children per tree node (the CodedReduce paper's n; default 12, or what -n and -L give)")
    p.add_argument("-L", type=int, default=None, help="tree depth (default 2, or what -n and --branching give)")
    p.add_argument("-n", type=int, default=None,
                   help="workers N = b + b^2 + ... + b^L of the tree, as everywhere in gradcodes (with -L or "
                        "--branching, the other follows; default 156)")
    p.add_argument("-s", type=int, default=5, help="stragglers tolerated per parent (default 5)")
    p.add_argument("--s-gc", type=int, default=None,
                   help="stragglers tolerated/ignored by GC and SGD (default floor(s N / branching))")
    p.add_argument("--m-data", type=float, default=49_920, help="data points per iteration (default 49920)")
    p.add_argument("-a", type=float, default=5e-5, help="seconds per data point (default 5e-5)")
    p.add_argument("--mu", type=float, default=None,
                   help="exponential rate per data point; 'inf' = deterministic (default 1/a)")
    p.add_argument("--t-c", type=float, default=0.05, help="seconds per message (default 0.05)")
    p.add_argument("--alpha", type=float, default=0.0,
                   help="latency per message in seconds, 0 <= alpha <= t_c (the alpha-beta model; default 0: "
                        "bandwidth only, which favours the ring all-reduce's 2(N-1) steps)")
    p.add_argument("--t-step", type=float, default=0.0, help="extra cost per ring all-reduce step (default 0)")
    p.add_argument("--no-overlap", action="store_true",
                   help="CR parents receive only after finishing their own computation")
    p.add_argument("--iters", type=int, default=10_000, help="Monte Carlo iterations (default 10000)")
    p.add_argument("--seed", type=int, default=0, help="random seed (default 0)")
    p.add_argument("--time-budget", type=float, default=None, metavar="SECONDS",
                   help="run as many of --iters iterations as fit in this many seconds (the header says how many "
                        "ran; rerun with --iters set to that number for the same table without a clock)")
    p.set_defaults(func=run_simulate_cli)
    return p


def run_simulate_cli(args: argparse.Namespace) -> int:
    """Run ``gradcodes simulate`` from parsed arguments; prints the table. Returns the exit status."""
    labels = [x.strip() for x in args.schemes.split(",") if x.strip()]
    branching, L = args.branching, args.L
    if args.n is not None:
        from .._families.coded_reduce_alloc import tree_shape

        branching, L = tree_shape(args.n, branching, L if L is not None or branching is not None else 2)
    res = simulate(labels, branching=12 if branching is None else branching, L=2 if L is None else L, s=args.s,
                   s_gc=args.s_gc, m_data=args.m_data, a=args.a, mu=args.mu, t_c=args.t_c, t_step=args.t_step,
                   alpha=args.alpha, overlap=not args.no_overlap, iters=args.iters, rng=args.seed,
                   time_budget=args.time_budget)
    if getattr(args, "json", False):
        from .._base.output import emit

        emit(args, res)
        return 0
    p = res.params
    print(f"tree branching={p['branching']} L={p['L']} s={p['s']} (N={p['N']} workers), s_gc={p['s_gc']}, "
          f"m_data={p['m_data']:g}, "
          f"a={p['a']:g} s/pt, mu={p['mu']:g}/s, t_c={p['t_c']:g} s, alpha={p['alpha']:g} s, "
          f"t_step={p['t_step']:g} s, "
          f"iters={p['iters']}, seed={p['seed']}"
          + (f" (time budget {p['time_budget']:g} s: {p['iters']} of {p['iters_requested']} iterations)"
             if p.get("time_budget") is not None else ""))
    print(res)
    return 0
