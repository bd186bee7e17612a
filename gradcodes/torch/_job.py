"""The built-in job: ``torchrun --standalone --nproc-per-node N+1 -m gradcodes.torch``.

Trains a small CNN (or a linear model) on scikit-learn's 8x8 handwritten digits (1797 images shipped with
scikit-learn, no download) with each scheme in turn, the same initial weights and batches for all, and prints
the time to a stated test accuracy, the mean iteration time and the final accuracy per scheme. Schemes: any
exact code family of gradcodes by name (``cyclic_repetition``, ``fractional_repetition``, ``ye_abbe`` with
``--comm-factor``, ``coded_reduce``: the CodedReduce tree with ``--branching`` children per parent), ``all``
(uncoded, wait for all workers), ``ignore`` (ignore the ``s`` slowest workers, rescaled) and
``ddp`` (DistributedDataParallel all-reduce on the workers).
"""

from __future__ import annotations

import argparse
import json
import math
from typing import Any

import numpy as np

from .._base.errors import GradcodesValueError

__all__ = ["main", "digits", "make_model", "build_scheme", "parse_delay"]


def digits(dtype: Any = None, seed: int = 0) -> tuple[Any, Any, Any, Any]:
    """``(X_train, y_train, X_test, y_test)``: the digits as (N, 1, 8, 8) tensors scaled to [0, 1], a fixed
    split of 1500 training and 297 test images."""
    import torch
    from sklearn.datasets import load_digits

    d = load_digits()
    X = torch.as_tensor(d.images / 16.0, dtype=dtype or torch.float32).unsqueeze(1)
    y = torch.as_tensor(d.target, dtype=torch.int64)
    perm = torch.as_tensor(np.random.default_rng(seed).permutation(len(y)))
    X, y = X[perm], y[perm]
    return X[:1500], y[:1500], X[1500:], y[1500:]


def make_model(kind: str = "cnn", *, seed: int = 0, dtype: Any = None) -> Any:
    """A small CNN (two 3x3 convolutions, 4.6k parameters) or a linear model, initialised from ``seed``."""
    import torch
    from torch import nn

    torch.manual_seed(seed)
    if kind == "cnn":
        model = nn.Sequential(nn.Conv2d(1, 16, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                              nn.Conv2d(16, 16, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                              nn.Flatten(), nn.Linear(64, 10))
    elif kind == "linear":
        model = nn.Sequential(nn.Flatten(), nn.Linear(64, 10))
    else:
        raise GradcodesValueError(f"model must be 'cnn' or 'linear', got {kind!r}")
    return model.to(dtype or torch.float32)


def build_scheme(name: str, n: int, s: int, m: int = 1, branching: int = 2) -> tuple[Any, Any, str]:
    """``(code, policy, label)`` for a scheme name (``ddp`` gives ``(None, None, label)``); ``coded_reduce`` is
    the CodedReduce tree with ``branching`` children per parent and as many levels as make ``n`` workers."""
    import gradcodes as gc
    from gradcodes._simulate._policies import FixedK

    if name == "coded_reduce":
        total, L = 0, 0
        while total < n:
            L += 1
            total += branching ** L
        if total != n:
            raise GradcodesValueError(f"coded_reduce: a tree with branching={branching} has "
                                      f"{branching} + {branching}^2 + ... workers (N + 1 ranks); {n} workers is "
                                      f"none of these")
        return gc.coded_reduce(branching, L, s), None, f"coded_reduce b={branching} L={L}"
    if name == "ddp":
        return None, None, "DDP allreduce"
    if name == "all":
        return gc.uncoded(n), "all", "wait-for-all"
    if name == "ignore":
        return gc.ignore_stragglers(n), FixedK(n - s), f"ignore-stragglers (first {n - s})"
    if name == "ye_abbe":
        return gc.ye_abbe(n, s, m), None, f"ye_abbe m={m}"
    if name in ("cyclic_repetition", "cyclic_mds_real"):
        return gc.cyclic_repetition(n, s, rng=0), None, name
    builder = getattr(gc, name, None)
    if builder is None:
        raise GradcodesValueError(f"unknown scheme {name!r}")
    return builder(n, s), None, name


def parse_delay(text: str, *, n: int, s: int, data: int) -> Any:
    """``none``, ``fixed:SECONDS`` (``s`` random workers late each iteration), ``slow:SECONDS`` (the last ``s``
    workers late in every iteration) or ``shiftexp:A`` (shifted exponential, ``a = A`` seconds per sample)."""
    from gradcodes._runtime.delays import FixedDelay, NoDelay, ShiftedExponential

    kind, _, val = text.partition(":")
    if kind == "none":
        return NoDelay()
    if kind == "fixed":
        return FixedDelay(float(val), count=s, rng=0)
    if kind == "slow":
        return FixedDelay(float(val), workers=range(n - s, n))
    if kind == "shiftexp":
        return ShiftedExponential(float(val), m_data=data, rng=0)
    raise GradcodesValueError(f"--delay must be none, fixed:SECONDS, slow:SECONDS or shiftexp:A, got {text!r}")


def accuracy(model: Any, X: Any, y: Any) -> float:
    import torch

    with torch.no_grad():
        return float((model(X).argmax(1) == y).double().mean())


def run(args: argparse.Namespace) -> list[dict[str, Any]]:
    """Run every scheme; the master returns one row per scheme (other ranks an empty list)."""
    import torch
    import torch.distributed as dist

    from ._train import ddp_train, train

    dtype = getattr(torch, args.dtype)
    rank, world = dist.get_rank(), dist.get_world_size()
    n = world - 1
    Xtr, ytr, Xte, yte = digits(dtype, seed=args.seed)
    loss_fn = torch.nn.CrossEntropyLoss(reduction="none")
    workers_group = dist.new_group(list(range(1, world)))
    rows: list[dict[str, Any]] = []
    for name in args.schemes.split(","):
        code, policy, label = build_scheme(name, n, args.stragglers, args.comm_factor, args.branching)
        model = make_model(args.model, seed=args.seed, dtype=dtype)
        delay = parse_delay(args.delay, n=n, s=args.stragglers, data=args.batch_size)

        def opt(params: Any) -> Any:
            return torch.optim.SGD(params, lr=args.lr, momentum=0.9)

        if code is None:
            res = ddp_train(model, loss_fn, Xtr, ytr, workers=n, batch_size=args.batch_size,
                            iterations=args.iterations, optimizer=opt, group=workers_group, delay=delay,
                            seed=args.seed, evaluate=lambda mdl: accuracy(mdl, Xte, yte))
            # rank 1 reports to the master
            stats = torch.zeros(4, dtype=torch.float64)
            if rank == 1 and res is not None:
                stats[:] = torch.tensor([res.time_to(args.target), res.mean_iteration, res.accuracy[-1],
                                         len(res.times)], dtype=torch.float64)
                dist.send(stats, 0, tag=99)
            elif rank == 0:
                dist.recv(stats, 1, tag=99)
            dist.barrier()
            if rank == 0:
                rows.append({"scheme": label, "time_to_target": float(stats[0]), "mean_iteration": float(stats[1]),
                             "final_accuracy": float(stats[2]), "iterations": int(stats[3])})
            continue
        res = train(code, model, loss_fn, Xtr, ytr, batch_size=args.batch_size, iterations=args.iterations,
                    optimizer=opt, policy=policy, delay=delay, timeout=args.timeout, seed=args.seed,
                    evaluate=(lambda mdl: accuracy(mdl, Xte, yte)) if rank == 0 else None, name=label)
        dist.barrier()
        if rank == 0 and res is not None:
            rows.append({"scheme": label, "time_to_target": res.time_to(args.target),
                         "mean_iteration": res.mean_iteration, "final_accuracy": res.accuracy[-1],
                         "iterations": len(res.times)})
    return rows


def table(rows: list[dict[str, Any]], target: float) -> str:
    from .._base.output import format_table

    ref = next((r for r in rows if r["scheme"] == "DDP allreduce"), None)
    to = "time to " + format(target, ".0%")
    table = []
    for r in rows:
        tt = r["time_to_target"]
        ratio = "" if ref is None or not math.isfinite(tt) else f"{ref['time_to_target'] / tt:.2f}x"
        table.append({"scheme": r["scheme"], to: f"{tt:.3f}", "vs DDP": ratio, "s/iter": f"{r['mean_iteration']:.4f}",
                      "final acc": f"{r['final_accuracy']:.3f}"})
    return format_table(table, ["scheme", to, "vs DDP", "s/iter", "final acc"],
                        right=[to, "vs DDP", "s/iter", "final acc"])


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="torchrun --standalone --nproc-per-node N+1 -m gradcodes.torch",
                                description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--schemes", default="cyclic_repetition,ddp,all,ignore",
                   help="comma-separated schemes (default: %(default)s)")
    p.add_argument("--stragglers", type=int, default=1, help="stragglers s tolerated (default 1)")
    p.add_argument("--comm-factor", type=int, default=2, help="communication factor m of ye_abbe (default 2)")
    p.add_argument("--branching", type=int, default=2,
                   help="children per parent of the coded_reduce tree (default 2; N + 1 ranks for N = b + ... + b^L)")
    p.add_argument("--model", default="cnn", choices=["cnn", "linear"])
    p.add_argument("--iterations", type=int, default=60)
    p.add_argument("--batch-size", type=int, default=240, help="global batch (a multiple of k)")
    p.add_argument("--lr", type=float, default=0.1)
    p.add_argument("--delay", default="fixed:0.3", help="none, fixed:SECONDS, slow:SECONDS or shiftexp:A")
    p.add_argument("--target", type=float, default=0.9, help="test accuracy to time (default 0.9)")
    p.add_argument("--dtype", default="float32", choices=["float32", "float64"])
    p.add_argument("--timeout", type=float, default=60.0)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--json", action="store_true", help="also print the rows as one JSON line (ROWS [...])")
    return p


def main(argv: list[str] | None = None) -> int:
    import torch.distributed as dist

    args = parser().parse_args(argv)
    dist.init_process_group("gloo")
    try:
        if dist.get_world_size() < 3:
            raise SystemExit("run with torchrun --standalone --nproc-per-node N+1, N >= 2 workers")
        rows = run(args)
        if dist.get_rank() == 0:
            print(f"digits, {args.model}, {dist.get_world_size() - 1} workers, s={args.stragglers}, "
                  f"delay {args.delay}, "
                  f"{args.iterations} iterations, batch {args.batch_size}", flush=True)
            print(table(rows, args.target), flush=True)
            if args.json:
                print("ROWS " + json.dumps(rows), flush=True)
    finally:
        dist.destroy_process_group()
    return 0
