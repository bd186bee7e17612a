"""The ``gradcodes`` command line: ``tour``, ``build``, ``verify``, ``bound``, ``schemes`` and ``simulate``."""

from __future__ import annotations

import argparse
import ast
import inspect
import math
import os
import sys
from collections.abc import Sequence
from typing import Any

from ._bounds import min_load
from ._io import load, save
from ._registry import get_scheme, schemes
from ._simulate import add_simulate_parser
from ._tour import format_table, tour
from ._verify import verify

__all__ = ["main", "build_parser"]


def _parse_params(items: Sequence[str]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for item in items:
        if "=" not in item:
            raise ValueError(f"--param takes KEY=VALUE, got {item!r}")
        key, raw = item.split("=", 1)
        try:
            out[key] = ast.literal_eval(raw)
        except (ValueError, SyntaxError):
            out[key] = raw
    return out


def _build(args: argparse.Namespace) -> Any:
    scheme = get_scheme(args.scheme)
    given = {"n": args.n, "s": args.s, "m": args.m, "k": args.k, "seed": args.seed}
    given = {k: v for k, v in given.items() if v is not None}
    given.update(_parse_params(args.param or []))
    sig = inspect.signature(scheme.build)
    accepts_any = any(p.kind is p.VAR_KEYWORD for p in sig.parameters.values())
    unknown = [k for k in given if k not in sig.parameters and not accepts_any]
    if unknown:
        raise ValueError(f"scheme {scheme.name!r} does not take {', '.join(unknown)}; it takes "
                         f"{', '.join(sig.parameters)}")
    return scheme.build(**given)


def _add_code_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("-n", type=int, help="number of workers")
    p.add_argument("-s", type=int, help="stragglers tolerated")
    p.add_argument("-m", type=int, help="communication factor (messages are 1/m of a gradient)")
    p.add_argument("-k", type=int, help="number of partitions (default n)")
    p.add_argument("--seed", type=int, help="seed of randomised constructions")
    p.add_argument("--param", action="append", metavar="KEY=VALUE", help="extra constructor parameter")


EXIT_CODES = """exit status:
  0  proven (every straggler set checked, or a theorem of the decoder; with --gf: the GF(p) algebra AND the
     float code)
  1  verification failed (a failing or inaccurate straggler set was found)
  2  usage error or bad input
  3  unproven: no failure found, but not every set was checked (not a proof)"""


def _verify_status(report: Any) -> int:
    """Exit status of one verify report: 0 proof, 1 failure found, 3 unproven."""
    if bool(report):
        return 0
    return 3 if report.verdict == "unproven" else 1


def _tour_status(rows: Sequence[dict[str, Any]]) -> int:
    """Exit status of the tour: 1 if a row fails, else 3 if a verified row is unproven, else 0."""
    results = [str(r.get("result", "")) for r in rows]
    if any(x in ("FAILS", "inaccurate") for x in results):
        return 1
    return 3 if "unproven" in results else 0


def build_parser() -> argparse.ArgumentParser:
    """The argument parser (families may add subcommands)."""
    parser = argparse.ArgumentParser(prog="gradcodes", description="Gradient codes: build, verify, bound, tour.",
                                     epilog=EXIT_CODES, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)

    p = sub.add_parser("tour", help="build every scheme at representative sizes, verify each, print one table")
    p.add_argument("--quick", action="store_true", help="only the smallest size of each scheme")
    p.add_argument("--schemes", help="comma-separated scheme names (default: all)")

    p = sub.add_parser("build", help="build a code and save it to .npz")
    p.add_argument("scheme", help="scheme name (see `gradcodes schemes`)")
    _add_code_options(p)
    p.add_argument("-o", "--output", required=True, help="output .npz file")

    p = sub.add_parser("verify", help="verify a saved code (.npz) or a scheme built on the fly")
    p.add_argument("target", help="a .npz file written by `gradcodes build`, or a scheme name")
    _add_code_options(p)
    p.add_argument("--limit", type=int, help="check all C(n, s) sets up to this many (default: whenever the "
                   "enumeration fits --time-budget)")
    p.add_argument("--time-budget", type=float, default=10.0, help="seconds for the default exhaustive check")
    p.add_argument("--samples", type=int, default=2000, help="random sets when not exhaustive")
    p.add_argument("--no-search", action="store_true", help="skip the worst-set local search")
    p.add_argument("--decoder", help="decoder name (default: the code's)")
    p.add_argument("--gf", action="store_true", help="verify the construction over a finite field GF(p)")

    p = sub.add_parser("bound", help="the computation-load lower bound k(s+m)/n")
    p.add_argument("-n", type=int, required=True)
    p.add_argument("-s", type=int, required=True)
    p.add_argument("-m", type=int, default=1)
    p.add_argument("-k", type=int)

    sub.add_parser("schemes", help="list the available schemes")
    for hook in _SUBCOMMAND_HOOKS:
        hook(sub)
    return parser


#: Functions ``hook(subparsers)`` that add family subcommands; each sets ``func`` via ``set_defaults``.
_SUBCOMMAND_HOOKS: list[Any] = [add_simulate_parser]


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``gradcodes`` command; returns the exit status."""
    args = build_parser().parse_args(argv)
    try:
        if getattr(args, "func", None) is not None:
            return int(args.func(args) or 0)
        if args.command == "tour":
            names = None if not args.schemes else [x.strip() for x in args.schemes.split(",") if x.strip()]
            rows = tour(names, quick=args.quick)
            return _tour_status(rows)
        if args.command == "schemes":
            print(format_table([{"scheme": s.name, "kind": s.kind, "summary": s.summary}
                                for s in schemes().values()]))
            return 0
        if args.command == "bound":
            b = min_load(args.n, args.s, args.m, args.k)
            k = args.k or args.n
            text = f"min load = k(s+m)/n = {k}*({args.s}+{args.m})/{args.n} = {b}"
            if b.denominator != 1:
                text += f" ≈ {float(b):.4g} (max load >= {math.ceil(b)})"
            print(text)
            return 0
        if args.command == "build":
            code = _build(args)
            save(code, args.output)
            print(f"wrote {code!r} to {args.output}")
            return 0
        if args.command == "verify":
            if os.path.exists(args.target) or args.target.endswith(".npz"):
                code = load(args.target)
            else:
                args.scheme = args.target
                code = _build(args)
            opts = {"limit": args.limit, "samples": args.samples, "search": not args.no_search,
                    "decoder": args.decoder, "time_budget": args.time_budget}
            report = verify(code, field="GF" if args.gf else None, **opts)
            print(report)
            status = _verify_status(report)
            if args.gf:
                # the GF(p) check proves the algebra only: the float code's own verdict decides the exit status
                float_report = verify(code, **opts)
                print(float_report)
                status = max(status, _verify_status(float_report))
            return status
    except (ValueError, TypeError, FileNotFoundError) as exc:
        print(f"gradcodes: error: {exc}", file=sys.stderr)
        return 2
    return 2  # pragma: no cover - argparse enforces a command
