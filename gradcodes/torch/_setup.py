"""What every rank of a :mod:`gradcodes.torch` job checks once at set-up (the same code, parameter count and buffer
size on every rank; the world size against the layout; a dtype the layout can decode), and the drain deadline of
the stop.
"""

from __future__ import annotations

from typing import Any

from .._base.errors import GradcodesTypeError, GradcodesValueError
from .._runtime.layout import Layout, layout_for
from .._runtime.setup import GRACE, fingerprint, height

#: the earlier name of ``GRACE`` (its old value was 10 s)
STOP_WAIT = GRACE


def _dist() -> Any:
    """``torch.distributed`` (imported when a runtime object is built; the unit tests replace it)."""
    import torch.distributed as dist

    return dist


def check_same(code: Any, dist: Any, size: int, device: Any = "cpu", nbytes: int = 0) -> None:
    """Collective (every rank, once at set-up): raise on every rank when some ranks built a different code than
    rank 0 (the digest of :func:`gradcodes.mpi._setup.fingerprint`, e.g. a random code built without ``rng``),
    a different number ``size`` of trainable parameter entries or buffers of a different size ``nbytes``
    (``ModelBuffers``); the error names those ranks.

    Different codes decode wrong gradients without any other symptom, so this runs before the first message.
    """
    import torch

    digest = int(fingerprint(code), 16)
    mine = torch.tensor([digest - (1 << 64) if digest >= 1 << 63 else digest, int(size), int(nbytes)],
                        dtype=torch.int64, device=device)
    every = [torch.zeros_like(mine) for _ in range(dist.get_world_size())]
    dist.all_gather(every, mine)
    got = [(int(v[0]), int(v[1])) for v in every]
    nb = [int(v[2]) for v in every]
    codes = [r for r, (d, _) in enumerate(got) if d != got[0][0]]
    if codes:
        raise GradcodesValueError(f"ranks {codes} built a different code than rank 0 ({getattr(code, 'name', code)!r}"
                                  " on this rank): every rank must construct the same code (give random "
                                  "constructions a fixed rng)")
    sizes = [r for r, (_, n) in enumerate(got) if n != got[0][1]]
    if sizes:
        raise GradcodesValueError(f"ranks {sizes} have a different number of trainable parameter entries than rank 0 "
                                  f"({got[0][1]}; {[got[r][1] for r in sizes]}): every rank must build the same model "
                                  "and freeze the same parameters")
    if any(b != nb[0] for b in nb):
        raise GradcodesValueError(f"ranks {[r for r, b in enumerate(nb) if b != nb[0]]} have buffers of a different "
                                  f"size than rank 0 ({nb[0]} bytes; {[b for b in nb if b != nb[0]]}): every rank "
                                  "must build the same model")


def _layout(code: Any, dist: Any) -> Layout:
    """The code's rank layout, checked against the world size."""
    layout = layout_for(code)
    if dist.get_world_size() != layout.size:
        what = (f"the tree has N={layout.workers} workers" if layout.kind == "tree"
                else f"the code has n={layout.workers} workers")
        raise GradcodesValueError(f"{what}, so the job needs {layout.size} ranks (1 master + {layout.workers} "
                                  f"workers); it has {dist.get_world_size()}")
    return layout


def drain_deadline(layout: Layout, rank: int, start: float, wait: float = STOP_WAIT) -> float:
    """When a node that got the stop message at ``start`` (the master: began sending them) gives up on its
    children's goodbyes: ``wait`` seconds per level below it, plus ``wait`` for the stop messages to reach every
    worker (a worker busy with its previous parameters takes its stop message when it is done with them).

    A child at height ``h - 1`` says goodbye within ``wait * h`` of its own stop message; the master posts all stop
    messages at once, so unless a child takes its stop message more than ``wait`` seconds after its parent, the
    goodbye comes before the parent's deadline.
    """
    return start + wait * (height(layout, rank) + 1)


def _check_tree_dtype(layout: Layout, dtype: Any) -> None:
    """A CodedReduce tree needs a dtype numpy has: the whole tree's acceptance rule (``TreeCheck``) has no bound
    for bfloat16 (each parent's own decode has one, ``Combiner.check_unit``), so bfloat16 trees are refused."""
    import torch

    if layout.kind == "tree" and dtype == torch.bfloat16:
        raise GradcodesTypeError("a CodedReduce tree runs float16, float32 or float64 parameters: the whole tree's "
                                 "acceptance rule has no bfloat16 bound (a master--worker code runs bfloat16)")


def _combined(code: Any, layout: Layout) -> Any:
    """The code a parent decodes: the inner code on a tree, the code itself otherwise."""
    return code.inner if layout.kind == "tree" else code
