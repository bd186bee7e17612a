"""The ``gradcodes`` command line: ``tour``, ``schemes``, ``build``, ``verify``, ``recommend``, ``decode``, ``bound``,
``evaluate``, ``worst``, ``simulate``.

Results go to stdout (a table, or one JSON document with ``--json``); progress and log lines go to stderr.

Exit status: ``0`` success (for ``verify``: the code is proven to recover, see :class:`gradcodes.VerifyReport`),
``1`` verification failed or not proven (``verify``; ``recommend`` when no candidate is proven to meet ``--rtol``;
``decode`` when the responders cannot decode; ``tour`` when a row's result is not one of its expected results),
``2`` usage error: a bad or missing option, a bad value, an unreadable or invalid code file. User errors print one
line ``gradcodes: error: ...`` and never a Python traceback.
"""

from __future__ import annotations

import argparse
import ast
import inspect
import math
import os
import sys
import warnings
from collections.abc import Callable, Sequence
from typing import Any

from ._base.errors import GradcodesValueError
from ._base.output import emit as _emit
from ._base.output import format_table, labelled, to_json
from ._base.registry import get_scheme, schemes
from ._cli.tour import tour, tour_status
from ._io.files import load_code, save_code
from ._simulate import add_simulate_parser
from ._verify.approx_eval import evaluate_approximate
from ._verify.approx_worst import worst_case_error
from ._verify.bounds import min_load
from ._verify.verifier import verify

__all__ = ["main", "build_parser", "to_json"]

#: Python constructor name -> registered scheme name, for the schemes registered under a short name. The CLI takes
#: either spelling (``gradcodes build stochastic_gc ...`` is ``gradcodes build sgc ...``).
ALIASES = {"ignore_stragglers": "is_sgd", "stochastic_gc": "sgc", "bernoulli_gc": "bgc", "erasurehead": "ehd",
           "optimal_decoding": "od"}


class UsageError(GradcodesValueError):
    """A command-line mistake (exit status 2)."""


def _parse_params(items: Sequence[str]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for item in items:
        if "=" not in item:
            raise UsageError(f"--param takes KEY=VALUE, got {item!r}")
        key, raw = item.split("=", 1)
        key = key.strip().replace("-", "_")
        if not key.isidentifier():
            raise UsageError(f"--param: {key!r} is not a parameter name")
        try:
            out[key] = ast.literal_eval(raw)
        except (ValueError, SyntaxError, MemoryError, RecursionError):
            out[key] = raw
    return out


def _scheme_name(name: str) -> str:
    name = ALIASES.get(name, name)
    if name not in schemes():
        valid = sorted([*schemes(), *ALIASES])
        raise UsageError(f"unknown scheme {name!r}; valid schemes: {', '.join(valid)}")
    return name


def _constructor(scheme_name: str) -> Callable[..., Any] | None:
    """The public Python constructor of a scheme (``gradcodes.<name>``), if there is one."""
    import gradcodes

    python_name = {v: k for k, v in ALIASES.items()}.get(scheme_name, scheme_name)
    fn = getattr(gradcodes, python_name, None)
    return fn if callable(fn) and python_name in gradcodes.__all__ and not isinstance(fn, type) else None


_FLAGS = {"n": "-n", "s": "-s", "m": "-m", "k": "-k", "seed": "--seed"}


def _flag(name: str) -> str:
    return _FLAGS.get(name, f"--param {name}=...")


def _build(args: argparse.Namespace) -> Any:
    """Build the scheme ``args.scheme`` from the options: the registered builder (with the tour's defaults), or
    the public constructor when an option only it takes is given (every constructor parameter is reachable)."""
    scheme = get_scheme(_scheme_name(args.scheme))
    given = {"n": args.n, "s": args.s, "m": args.m, "k": args.k, "seed": args.seed}
    given = {k: v for k, v in given.items() if v is not None}
    params = _parse_params(args.param or [])
    twice = [k for k in params if k in given or (k == "rng" and "seed" in given)]
    if twice:                                      # one value per parameter: never a silent winner
        raise UsageError(f"{', '.join(twice)} given twice: as {', '.join(_FLAGS.get(k, '--seed') for k in twice)} "
                         f"and as --param; give it once")
    if "rng" in params:                            # --param rng=X is --seed X
        params["seed"] = params.pop("rng")
    given.update(params)
    sig = inspect.signature(scheme.build)
    target, target_sig = scheme.build, sig
    if any(k not in sig.parameters for k in given):
        fn = _constructor(scheme.name)
        fn_sig = inspect.signature(fn) if fn is not None else None
        if fn_sig is not None and "seed" in given and "rng" in fn_sig.parameters:
            given["rng"] = given.pop("seed")          # --seed is the constructor's rng
        if fn is not None and fn_sig is not None and all(k in fn_sig.parameters for k in given):
            defaults = {("rng" if k == "seed" else k): p.default for k, p in sig.parameters.items()
                        if p.default is not p.empty and ("rng" if k == "seed" else k) in fn_sig.parameters
                        and ("rng" if k == "seed" else k) not in given}
            assert fn is not None
            target, target_sig, given = fn, fn_sig, {**defaults, **given}
        else:
            takes = list(sig.parameters) + [k for k in (fn_sig.parameters if fn_sig else ()) if k not in sig.parameters]
            unknown = [k for k in given if k not in takes]
            raise UsageError(f"scheme {scheme.name!r} does not take {', '.join(unknown)}; it takes "
                             f"{', '.join(takes)}")
    missing = [k for k, p in target_sig.parameters.items()
               if p.default is p.empty and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD) and k not in given]
    if missing:
        raise UsageError(f"scheme {scheme.name!r} needs {', '.join(_flag(k) for k in missing)}")
    return target(**given)


def _load_target(args: argparse.Namespace) -> Any:
    """A code from ``args.target``: a saved file, or a scheme name built from the options."""
    target = args.target
    if os.path.exists(target):
        if os.path.isdir(target):
            raise UsageError(f"{target!r} is a directory, not a code file")
        options = [flag for name, flag in (("n", "-n"), ("s", "-s"), ("m", "-m"), ("k", "-k"), ("seed", "--seed"),
                                           ("param", "--param")) if getattr(args, name, None) is not None]
        if options:                                # a saved code is what it is: options to build one do not apply
            raise UsageError(f"{', '.join(options)} build a scheme by name; {target!r} is a saved code, which they "
                             f"would not change (leave them out, or name a scheme)")
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            code = load_code(target, rtol=getattr(args, "rtol", None))
        for w in caught:                                  # one line each, no source line
            print(f"gradcodes: warning: {w.message}", file=sys.stderr)
        return code
    looks_like_file = target.endswith((".npz", ".npy")) or os.sep in target or "/" in target
    if looks_like_file:
        raise UsageError(f"no code file {target!r}")
    args.scheme = target
    return _build(args)


def _add_code_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("-n", type=int, help="number of workers")
    p.add_argument("-s", type=int, help="stragglers tolerated")
    p.add_argument("-m", type=int, help="communication factor (messages are 1/m of a gradient)")
    p.add_argument("-k", type=int, help="number of partitions (default n)")
    p.add_argument("--seed", type=int, help="seed of a randomised construction, passed as its rng= (default: the "
                   "scheme's registered seed, 0, so a build is reproducible; Python's rng=None draws fresh entropy)")
    p.add_argument("--param", action="append", metavar="KEY=VALUE",
                   help="any other constructor parameter, e.g. --param placement=textbook (repeatable)")


def _add_json(p: argparse.ArgumentParser) -> None:
    p.add_argument("--json", action="store_true", help="print the result as one JSON document on stdout")


def build_parser() -> argparse.ArgumentParser:
    """The argument parser (families may add subcommands)."""
    from . import __version__

    parser = argparse.ArgumentParser(
        prog="gradcodes",
        description="Gradient codes: build, verify, recommend, decode, bound, evaluate, worst, simulate, tour.",
        epilog="Exit status: 0 success (verify: proven; tour: every row as expected), 1 verification failed or "
               "not proven (recommend: no code proven to meet --rtol; decode: not decodable; tour: an unexpected "
               "row), 2 usage error or "
               "bad code file. Results on stdout, progress on stderr.")
    parser.add_argument("--version", action="version", version=f"gradcodes {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)

    p = sub.add_parser("tour", help="build every scheme at representative sizes, verify each, print one table")
    p.add_argument("--quick", action="store_true", help="only the smallest size of each scheme")
    p.add_argument("--schemes", help="comma-separated scheme names (default: all)")
    _add_json(p)

    p = sub.add_parser("schemes", help="list the available schemes")
    _add_json(p)

    p = sub.add_parser("build", help="build a code and save it to .npz")
    p.add_argument("scheme", help="scheme name (see `gradcodes schemes`; the Python constructor name works too)")
    _add_code_options(p)
    p.add_argument("-o", "--output", required=True, help="output .npz file")
    _add_json(p)

    p = sub.add_parser("verify", help="verify a saved code (.npz) or a scheme built on the fly")
    p.add_argument("target", help="a .npz file written by `gradcodes build`, or a scheme name")
    _add_code_options(p)
    p.add_argument("--limit", type=int, help="the most sets enumerated: all C(n, s) sets when there are at most "
                   "this many, none otherwise (sampled and searched instead; 0 never enumerates). Default: a fixed "
                   "count of sets from the verifier's cost model, about 10 s of one core; the same verdict on every "
                   "machine")
    p.add_argument("--time-budget", type=float, default=None, metavar="SECONDS",
                   help="a wall-clock budget instead of the default count: enumerate when the rate measured on "
                   "the first batches predicts the check fits SECONDS (the verdict then depends on the "
                   "machine's speed and load)")
    p.add_argument("--samples", type=int, default=2000, help="random sets when not exhaustive (default 2000, drawn "
                   "from fresh entropy as verify(rng=None) does)")
    p.add_argument("--no-search", action="store_true", help="skip the worst-set local search")
    p.add_argument("--decoder", help="decoder name (default: the code's)")
    p.add_argument("--gf", action="store_true", help="verify the construction over a finite field GF(p)")
    p.add_argument("--rtol", type=float, help="the acceptance tolerance, in (0, 1): a scheme name is verified to "
                   "it (default 1e-8); for a code file it is the loosest tolerance taken from the file (default "
                   "1e-8: a file can only tighten it)")
    p.add_argument("--workers", type=int, help="local processes of the exhaustive check (default: every core this "
                   "process may use); under `mpiexec -n R python -m mpi4py -m gradcodes verify ...` the R ranks "
                   "share it")
    p.add_argument("--checkpoint", metavar="PATH", help="save the exhaustive check's progress to PATH and continue "
                   "from it when PATH exists (same code and arguments only)")
    p.add_argument("--checkpoint-every", type=float, default=60.0, metavar="SECONDS",
                   help="seconds between checkpoint writes (default 60)")
    _add_json(p)

    p = sub.add_parser("bound", help="the computation-load lower bound k(s+m)/n")
    p.add_argument("-n", type=int, required=True, help="workers")
    p.add_argument("-s", type=int, required=True, help="stragglers tolerated")
    p.add_argument("-m", type=int, default=1, help="communication factor: pieces per message (default 1)")
    p.add_argument("-k", type=int, help="partitions (default n)")
    _add_json(p)

    for hook in _SUBCOMMAND_HOOKS:
        hook(sub)
    for name, action in sub.choices.items():
        if name in ("simulate", "evaluate", "worst") and not any("--json" in a.option_strings for a in action._actions):
            _add_json(action)
    return parser


#: Functions ``hook(subparsers)`` that add family subcommands; each sets ``func`` via ``set_defaults``.
_SUBCOMMAND_HOOKS: list[Any] = [add_simulate_parser]


# ---------------------------------------------------------------------------------------------------- evaluate
# `gradcodes evaluate`: expected error and bias of approximate codes (gradcodes._verify.approx_eval)


def _cmd_evaluate(args: argparse.Namespace) -> int:
    code = _load_target(args)
    report = evaluate_approximate(code, args.gradients, p=args.p, decoder=args.decoder, method=args.method,
                                  samples=args.samples, rng=args.mc_seed)
    _emit(args, report)
    return 0


def _add_evaluate_parser(sub: Any) -> None:
    p = sub.add_parser("evaluate", help="expected error and bias of an approximate code under random stragglers")
    p.add_argument("target", help="a .npz file written by `gradcodes build`, or a scheme name "
                                  "(e.g. heterogeneous, sgc, bgc, ehd, od, is_sgd)")
    _add_code_options(p)
    p.add_argument("--p", help="straggle probabilities for the evaluation, e.g. '1/10,1/5,1/2' or 0.2 "
                               "(default: the code's own)")
    p.add_argument("--gradients", default="orthonormal", choices=["orthonormal", "aligned"],
                   help="g_j = e_j (default) or all g_j equal")
    p.add_argument("--method", default="auto", choices=["auto", "enumerate", "montecarlo", "closed"],
                   help="enumerate: all 2^n straggler patterns (n <= 24); closed: the closed form (fixed-weight "
                        "decoders); montecarlo: --samples seeded patterns, mean and standard error; auto (default): "
                        "enumerate up to n = 16, then the closed form where it applies, else Monte Carlo")
    p.add_argument("--samples", type=int, default=20000, help="Monte Carlo samples (default 20000)")
    p.add_argument("--mc-seed", type=int, default=0, help="Monte Carlo seed (default 0)")
    p.add_argument("--decoder", help="decoder name (default: the code's)")
    p.set_defaults(func=_cmd_evaluate)


_SUBCOMMAND_HOOKS.append(_add_evaluate_parser)


# ---------------------------------------------------------------------------------------------------- recommend
# `gradcodes recommend`: the lowest-load code proven to meet rtol (gradcodes._families.recommend)


def _cmd_recommend(args: argparse.Namespace) -> int:
    from ._families.recommend import recommend

    if args.output is not None:
        _check_output_dir(args.output)
    code = recommend(args.n, args.s, args.m, args.max_load, rtol=args.rtol, quick=args.quick,
                     certify_seconds=args.certify_seconds, field=args.field)
    rec = code.recommendation
    assert rec is not None                    # recommend() always attaches its reasons
    if args.output is not None:
        save_code(code, args.output)
    text = str(rec) + (f"\nwrote {code!r} to {args.output}" if args.output is not None else "")
    _emit(args, {"recommendation": rec, "code": code.name, "load": code.load, "field": code.field,
                 "path": args.output}, text)
    return 0 if rec.meets_rtol else 1


def _add_recommend_parser(sub: Any) -> None:
    p = sub.add_parser("recommend", help="the lowest-load code proven to meet a tolerance, with the reasons",
                       description="Judge every candidate family for (n, s, m) and print the table of loads, "
                       "proven errors and reasons (gradcodes.recommend). Exit status 0 when the chosen code is "
                       "proven to meet --rtol, 1 when no candidate is (the table says why).")
    p.add_argument("-n", type=int, required=True, help="workers (= partitions)")
    p.add_argument("-s", type=int, required=True, help="stragglers tolerated")
    p.add_argument("-m", type=int, default=1, help="communication factor (default 1)")
    p.add_argument("--max-load", type=int, help="largest acceptable load, at least s + m (default: none)")
    p.add_argument("--rtol", type=float, default=1e-12, help="proven worst float64 error bound to meet, the "
                   "acceptance rule's relative tolerance as in verify --rtol (default 1e-12)")
    p.add_argument("--field", default="real", choices=["real", "any"],
                   help="real codes only (default), or complex codes too (complex messages, twice the bytes)")
    p.add_argument("--quick", action="store_true", help="a 1 s certification budget instead of 10 s")
    p.add_argument("--certify-seconds", type=float, metavar="SECONDS",
                   help="estimated seconds (a fixed cost model, not a clock) each candidate may spend on "
                   "enumeration (default 10; 1 with --quick)")
    p.add_argument("-o", "--output", help="save the chosen code to this .npz file")
    _add_json(p)
    p.set_defaults(func=_cmd_recommend)


_SUBCOMMAND_HOOKS.append(_add_recommend_parser)


# ---------------------------------------------------------------------------------------------------- decode
# `gradcodes decode`: the decoding vector of a responder set and its acceptance, or the decoded sum of messages


def _responders(text: str) -> list[int]:
    try:
        out = [int(x) for x in text.replace(" ", "").split(",") if x]
    except ValueError:
        raise UsageError(f"--responders takes comma-separated worker indices, e.g. 0,2,5; got {text!r}") from None
    if not out:
        raise UsageError("--responders names no worker")
    return out


def _cmd_decode(args: argparse.Namespace) -> int:
    import numpy as np

    from ._core.acceptance import DecodingError
    from ._core.code import ApproximateCode

    code = _load_target(args)
    F = _responders(args.responders)
    if args.output is not None and args.messages is None:
        raise UsageError("-o saves the decoded sum of --messages FILE.npy; without --messages there is no sum to save")
    if args.output is not None:
        _check_output_dir(args.output)
    if args.messages is not None:
        try:
            Y = np.load(args.messages, allow_pickle=False)       # a file from others: never unpickled
        except (OSError, ValueError, EOFError) as exc:
            raise UsageError(f"cannot read the messages {args.messages!r} as a .npy array: {exc}") from None
        if not isinstance(Y, np.ndarray) or Y.ndim != 2 or Y.shape[0] != len(F):
            raise UsageError(f"--messages must hold a 2-D array with one row per responder ({len(F)} rows), "
                             f"got {getattr(Y, 'shape', type(Y).__name__)}")
        if args.dtype is not None and np.dtype(args.dtype) != Y.dtype:
            raise UsageError(f"--dtype {args.dtype} but the messages are {Y.dtype}: a decode is judged in the "
                             f"messages' own dtype (leave --dtype out, or convert the file)")
    else:
        dt = np.dtype(args.dtype or "float64")
        Y = np.zeros((len(F), code.m), dtype=np.complex128 if code.field == "complex" else dt)
    try:
        A = code.decoding_matrix(F, args.decoder, dtype=Y.dtype if Y.dtype.kind in "fc" else np.float64)
        decoded, info = code.decode(F, Y, decoder=args.decoder, return_info=True)
    except DecodingError as exc:
        _emit(args, {"decodable": False, "responders": F, "message": str(exc)},
              "\n".join(labelled("not decodable: ", str(exc))))
        return 1
    if args.output is not None:
        np.save(args.output, np.asarray(decoded), allow_pickle=False)
    a = np.asarray(A)[:, F]
    approximate = isinstance(code, ApproximateCode)
    what = "approximate decode (an estimate of the sum, within the bound below)" if approximate else "decodable"
    total = np.asarray(decoded)
    summary = (f"decoded sum: shape {total.shape}, {total.dtype}, "
               f"{np.array2string(total.ravel()[:6], precision=6, max_line_width=80)}"
               + (" ..." if total.size > 6 else "")) if args.messages is not None else ""
    text = (f"responders {F}: {what}\n  decoder {info.decoder!r} in {Y.dtype}: relative error bound "
            f"{info.error_estimate:.2e}, cancellation {info.cancellation:.3g}, residual {info.residual:.2e}\n"
            + "\n".join(f"a[{u}] = {np.array2string(row, precision=6, max_line_width=100)}" for u, row in enumerate(a))
            + (f"\n{summary}" if summary else "")
            + (f"\nwrote the decoded sum to {args.output}" if args.output is not None else ""))
    _emit(args, {"decodable": True, "approximate": approximate, "responders": F, "decoder": info.decoder,
                 "dtype": str(Y.dtype), "a": a, "error_estimate": info.error_estimate,
                 "cancellation": info.cancellation, "residual": info.residual, "exact": info.exact,
                 "sum_shape": list(total.shape) if args.messages is not None else None, "path": args.output}, text)
    return 0


def _add_decode_parser(sub: Any) -> None:
    p = sub.add_parser("decode", help="decode a responder set: its decoding vector and error bound, or messages",
                       description="Print the decoding vector a_F of the responders (a_F B = 1) and the acceptance "
                       "rule's relative error bound in --dtype; with --messages, decode a .npy array (one row per "
                       "responder, in the order given) and save the sum with -o. Exit status 0 when the set "
                       "decodes to the tolerance, 1 when it cannot.")
    p.add_argument("target", help="a .npz file written by `gradcodes build`, or a scheme name")
    _add_code_options(p)
    p.add_argument("--responders", required=True, help="comma-separated worker indices, e.g. 0,2,5")
    p.add_argument("--dtype", default=None, choices=["float64", "float32", "float16"],
                   help="the messages' dtype the decode is judged in (default float64; with --messages: theirs, "
                        "and a different --dtype is an error)")
    p.add_argument("--messages", metavar="FILE.npy", help="the responders' messages, one row each")
    p.add_argument("-o", "--output", metavar="FILE.npy", help="save the decoded sum of --messages (required with it "
                                                                 "to keep the sum; the text shows its first values)")
    p.add_argument("--decoder", help="decoder name (default: the code's)")
    _add_json(p)
    p.set_defaults(func=_cmd_decode)


_SUBCOMMAND_HOOKS.append(_add_decode_parser)


# ---------------------------------------------------------------------------------------------------- worst
# `gradcodes worst`: the worst straggler set of an approximate code, proven or as two bounds (approx_worst)


def _cmd_worst(args: argparse.Namespace) -> int:
    code = _load_target(args)
    report = worst_case_error(code, args.stragglers, decoder=args.decoder, limit=args.limit, samples=args.samples,
                              rng=args.search_seed, time_budget=args.time_budget)
    _emit(args, report)
    return 0


def _add_worst_parser(sub: Any) -> None:
    p = sub.add_parser("worst", help="worst-case error of an approximate code over every set of s stragglers: "
                                     "proven, or a lower bound found by search and a certified upper bound")
    p.add_argument("target", help="a .npz file written by `gradcodes build`, or a scheme name (e.g. expander_code, "
                                  "graph_assignment_code, bibd_code)")
    _add_code_options(p)
    p.add_argument("--stragglers", type=int, help="stragglers of the evaluation (default: the code's s)")
    p.add_argument("--decoder", help="decoder name (default: the code's)")
    p.add_argument("--limit", type=int, default=20_000, help="evaluate every set when there are at most this many "
                   "(default 20000)")
    p.add_argument("--samples", type=int, help="random sets of the search (default: from a fixed cost model)")
    p.add_argument("--time-budget", type=float, default=None, metavar="SECONDS",
                   help="stop every phase when SECONDS run out and print the bounds found so far (labelled)")
    p.add_argument("--search-seed", type=int, default=0, help="seed of the random sets and swaps (default 0)")
    _add_json(p)
    p.set_defaults(func=_cmd_worst)


_SUBCOMMAND_HOOKS.append(_add_worst_parser)


# ---------------------------------------------------------------------------------------------------- commands


def _cmd_tour(args: argparse.Namespace) -> int:
    names = None if args.schemes is None else [_scheme_name(x.strip()) for x in args.schemes.split(",") if x.strip()]
    if names == []:                                # --schemes "" ran every scheme
        raise UsageError("--schemes names no scheme (leave it out for all of them)")
    if names is not None:
        for name in names:
            get_scheme(name)                      # unknown names fail before any work
    if args.json:
        import io

        rows = tour(names, quick=args.quick, out=io.StringIO(), log=sys.stderr)
        _emit(args, rows)
    else:
        rows = tour(names, quick=args.quick, log=sys.stderr)
    return tour_status(rows)


def _cmd_schemes(args: argparse.Namespace) -> int:
    rev = {v: k for k, v in ALIASES.items()}
    if getattr(args, "json", False):
        _emit(args, [{"scheme": s.name, "alias": rev.get(s.name), "kind": s.kind, "summary": s.summary,
                      "tour": [dict(p) for p in s.tour]} for s in schemes().values()])
        return 0
    import shutil

    # the summaries wrap to the terminal's width (100 columns when the output is not a terminal)
    print(format_table([{"scheme": s.name + (f" ({rev[s.name]})" if s.name in rev else ""), "kind": s.kind,
                         "summary": s.summary} for s in schemes().values()],
                       wrap="summary", width=shutil.get_terminal_size((100, 24)).columns))
    return 0


def _cmd_bound(args: argparse.Namespace) -> int:
    b = min_load(args.n, args.s, args.m, args.k)
    k = args.k or args.n
    text = f"min load = k(s+m)/n = {k}*({args.s}+{args.m})/{args.n} = {b}"
    if b.denominator != 1:
        text += f" ≈ {float(b):.4g} (max load >= {math.ceil(b)})"
    _emit(args, {"n": args.n, "s": args.s, "m": args.m, "k": k, "min_load": b, "min_load_exact": str(b),
                 "min_load_float": float(b), "max_load_at_least": math.ceil(b)}, text)
    return 0


def _check_output_dir(path: str) -> None:
    out_dir = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(out_dir):
        raise UsageError(f"cannot write {path!r}: no directory {out_dir!r}")


def _cmd_build(args: argparse.Namespace) -> int:
    _check_output_dir(args.output)
    code = _build(args)
    save_code(code, args.output)
    if getattr(args, "json", False):
        _emit(args, {"path": args.output, "scheme": code.family, "name": code.name, "n": code.n, "k": code.k,
                     "m": code.m, "s": getattr(code, "s", None), "field": code.field, "load": code.load,
                     "params": code.params})
    else:
        print(f"wrote {code!r} to {args.output}")
    return 0


def _mpi_world() -> Any:
    """``MPI.COMM_WORLD`` when this process runs under ``python -m mpi4py`` with more than one rank, else None
    (mpi4py is never imported here: it is already loaded in that case)."""
    mpi = sys.modules.get("mpi4py.MPI")
    if mpi is None:
        return None
    world = mpi.COMM_WORLD
    return world if world.Get_size() > 1 else None


def _cmd_verify(args: argparse.Namespace) -> int:
    code = _load_target(args)
    comm = _mpi_world()
    opts = {"limit": args.limit, "samples": args.samples, "search": not args.no_search, "decoder": args.decoder,
            "time_budget": args.time_budget, "workers": args.workers, "checkpoint_every": args.checkpoint_every}
    if comm is not None:
        opts["comm"] = comm
    if args.rtol is not None and not os.path.exists(args.target):
        opts["rtol"] = args.rtol                      # a scheme built here: verify it to --rtol
    report = verify(code, field="GF" if args.gf else None, checkpoint=args.checkpoint, **opts)
    if comm is not None and comm.Get_rank() != 0:     # every rank holds the same report; rank 0 prints it
        return 0 if bool(report) else 1
    if not (args.gf and bool(report)):
        _emit(args, report)
        if getattr(report, "interrupted", False):    # Ctrl-C: the partial report is printed, then status 130
            print("gradcodes: interrupted", file=sys.stderr)
            return 130
        return 0 if bool(report) else 1
    # a GF(p) proof covers the algebra only: the float code's own verdict decides the exit status too
    float_report = verify(code, **opts)
    if getattr(args, "json", False):
        _emit(args, {"gf": report, "float": float_report})
    else:
        print(report)
        print(float_report)
    return 0 if bool(float_report) else 1


_COMMANDS = {"tour": _cmd_tour, "schemes": _cmd_schemes, "bound": _cmd_bound, "build": _cmd_build,
             "verify": _cmd_verify}


def _silence_stdout() -> None:
    """Point stdout at ``os.devnull`` so that the interpreter's final flush of a closed pipe raises nothing (the
    recipe of the Python documentation, ``signal`` module, "Note on SIGPIPE")."""
    import os

    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):                # stdout without a file descriptor (a test's capture)
        pass


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``gradcodes`` command; returns the exit status (see the module docstring)."""
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:                    # --help / --version (0) or a usage error (2)
        return int(exc.code or 0)
    try:
        func = getattr(args, "func", None) or _COMMANDS[args.command]
        return int(func(args) or 0)
    except KeyboardInterrupt:
        print("gradcodes: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:                      # the reader closed the pipe (``gradcodes ... | head``): stop quietly
        _silence_stdout()
        return 141                               # 128 + SIGPIPE, as a tool ended by the signal reports in a shell
    except (ValueError, TypeError, OSError, RuntimeError) as exc:
        print(f"gradcodes: error: {exc}", file=sys.stderr)
        if getattr(args, "json", False):         # --json: the error is a JSON document on stdout too
            import json

            print(json.dumps({"error": type(exc).__name__, "message": str(exc)}))
        return 2
