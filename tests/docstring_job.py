"""Run the runtime docstrings' job examples as a real job (tests/test_docstring_jobs.py launches it).

    mpiexec -n 5 python -m mpi4py tests/docstring_job.py mpi
    torchrun --standalone --nproc-per-node 4 tests/docstring_job.py torch

Nothing of the examples is copied here: every rank reads them from the docstrings. A class's example program, and
each of its methods', is the class docstring's ``>>>`` lines (they define ``code``; a method's say "``code`` as in
the class's example", and its own ``>>>`` lines are single-process illustrations, run by the doctests), then the
literal blocks (the text after ``::``) of its Examples section, run in a fresh namespace over a small preamble:
the imports, and the names the docstrings leave to the reader (``grad``, ``model``, ``loss_fn``, ``X``, ``y``,
``rank``). A session runs one master program on rank 0 and one worker program on every other rank,
so each master-side example meets a worker-side one (the shorter list cycles). Every rank ends with one line
``RAN <json list of the programs it ran>``.
"""

from __future__ import annotations

import doctest
import inspect
import json
import sys
import textwrap
from typing import Any


def examples_section(doc: str) -> str:
    """The Examples section of a numpydoc docstring (cleaned), or an empty string."""
    lines = inspect.cleandoc(doc).splitlines()
    for i in range(len(lines) - 1):
        if lines[i].strip() == "Examples" and set(lines[i + 1].strip()) == {"-"}:
            return "\n".join(lines[i + 2:])
    return ""


def literal_blocks(doc: str) -> list[str]:
    """The literal blocks of the Examples section: the indented text after a paragraph ending in ``::``."""
    lines = examples_section(doc).splitlines()
    out: list[str] = []
    i = 0
    while i < len(lines):
        line = lines[i]
        i += 1
        if not line.rstrip().endswith("::") or line.lstrip().startswith(">>>"):
            continue
        base = len(line) - len(line.lstrip())
        block: list[str] = []
        while i < len(lines) and (not lines[i].strip() or len(lines[i]) - len(lines[i].lstrip()) > base):
            block.append(lines[i])
            i += 1
        text = textwrap.dedent("\n".join(block)).strip("\n")
        if text:
            out.append(text)
    return out


def doctest_source(doc: str) -> str:
    """The ``>>>`` (and ``...``) lines of a docstring, as one program."""
    return "".join(ex.source for ex in doctest.DocTestParser().get_examples(inspect.cleandoc(doc)))


def programs(cls: type) -> list[tuple[str, str]]:
    """``(name, source)`` of the class's example program and of each public method's that shows a job (a literal
    block in its Examples), in definition order: the class's ``>>>`` lines, then the literal blocks."""
    head = doctest_source(cls.__doc__ or "")
    out = []
    for name in ["", *(n for n in vars(cls) if not n.startswith("_"))]:
        obj = cls if not name else vars(cls)[name]
        doc = getattr(obj, "__doc__", None) or ""
        blocks = literal_blocks(doc)
        if not blocks:
            continue
        out.append((f"{cls.__name__}{'.' + name if name else ''}", head + "\n".join(blocks) + "\n"))
    return out


def run(name: str, source: str, preamble: dict[str, Any]) -> None:
    ns = dict(preamble)
    exec(compile(source, f"<docstring example {name}>", "exec"), ns)


def mpi_job() -> list[str]:
    import numpy as np
    from mpi4py import MPI

    import gradcodes as gc
    import gradcodes.mpi as gm

    rank = MPI.COMM_WORLD.Get_rank()
    base = {**{name: getattr(gm, name) for name in gm.__all__}, "np": np, "MPI": MPI, "gc": gc, "rank": rank}

    def grad(w: Any, j: int) -> Any:             # Worker: the gradient of partition j at w
        return (j + 1.0) * w + j

    def chunk_grad(chunk: int, w: Any) -> Any:   # PartialWorker: the gradient of one chunk at w
        return (chunk + 1.0) * w + chunk

    ran = []
    for master_cls, worker_cls, g in ((gm.Master, gm.Worker, grad), (gm.PartialMaster, gm.PartialWorker, chunk_grad)):
        masters, workers = programs(master_cls), programs(worker_cls)
        for i in range(max(len(masters), len(workers))):
            name, source = masters[i % len(masters)] if rank == 0 else workers[i % len(workers)]
            run(name, source, {**base, "grad": g})
            ran.append(name)
    return ran


def torch_job() -> list[str]:
    import torch
    import torch.distributed as dist

    import gradcodes as gc
    import gradcodes.torch as gt

    dist.init_process_group("gloo")
    rank = dist.get_rank()
    gen = torch.Generator().manual_seed(0)
    X = torch.randn(60, 4, dtype=torch.float64, generator=gen)
    y = torch.randn(60, 1, dtype=torch.float64, generator=gen)

    def preamble() -> dict[str, Any]:
        torch.manual_seed(0)                     # the same model on every rank
        return {**{name: getattr(gt, name) for name in gt.__all__}, "torch": torch, "dist": dist, "gc": gc,
                "rank": rank, "X": X, "y": y, "model": torch.nn.Linear(4, 1, dtype=torch.float64),
                "loss_fn": lambda out, target: ((out - target) ** 2).sum(dim=1)}

    ran = []
    masters, workers = programs(gt.Master), programs(gt.Worker)
    for i in range(max(len(masters), len(workers))):
        name, source = masters[i % len(masters)] if rank == 0 else workers[i % len(workers)]
        run(name, source, preamble())
        ran.append(name)
    # ddp_train: every rank runs the same program
    doc = gt.ddp_train.__doc__ or ""
    source = doctest_source(doc) + "\n".join(literal_blocks(doc)) + "\n"
    run("ddp_train", source, preamble())
    ran.append("ddp_train")
    dist.destroy_process_group()
    return ran


if __name__ == "__main__":
    ran = mpi_job() if sys.argv[1] == "mpi" else torch_job()
    print("RAN " + json.dumps(ran), flush=True)
