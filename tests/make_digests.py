"""SHA-256 digests of every registered scheme's encoding matrix and parameters (the determinism table).

A construction is a function of its arguments: the same call gives the same ``B`` (bit for bit) and the same
``params`` on every CPU, BLAS kernel, thread count and numpy SIMD level. ``tests/data/digests.json`` records the
digests of every registered scheme at its tour sizes (and a few seeds for the seeded ones);
``tests/test_determinism.py`` rebuilds them and compares, and ``.ci/kernels`` runs that test under every BLAS
kernel and SIMD level the machine can execute.

Regenerate the table (only when a construction changes on purpose; say why in the commit message)::

    python -m tests.make_digests            # writes tests/data/digests.json
    python -m tests.make_digests --check    # compares, prints the differing cases, exit status 1 if any
"""

from __future__ import annotations

import hashlib
import inspect
import json
import sys
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np

import gradcodes as gc

TABLE = Path(__file__).resolve().parent / "data" / "digests.json"

#: Seeds rebuilt for the schemes that take ``seed`` (at every tour size); seed 0 is the tour's own.
SEEDS = (0, 1, 7)

#: Extra calls beyond the tour sizes: the cases measured to differ between kernels before the constructions were
#: made deterministic (grouped_random's seed choice, cyclic_repetition at (100, 10), ye_abbe at (50, 5, 5)).
EXTRA: tuple[tuple[str, dict[str, Any]], ...] = (
    ("grouped_random", {"n": 13, "s": 4, "candidates": 2}),
    ("grouped_random", {"n": 23, "s": 4, "candidates": 4}),
    ("cyclic_repetition", {"n": 100, "s": 10, "rng": 0}),
    ("cyclic_repetition", {"n": 25, "s": 5, "rng": 13}),
    ("cyclic_repetition", {"n": 30, "s": 4, "rng": 7}),
    ("ye_abbe", {"n": 32, "s": 5, "m": 2}),
    ("ye_abbe", {"n": 50, "s": 5, "m": 5, "nodes": "random", "rng": 0}),
    ("ye_abbe", {"n": 12, "s": 3, "m": 2, "nodes": "chebyshev"}),
    ("ye_abbe", {"n": 12, "s": 3, "m": 2, "nodes": "equispaced"}),
    ("ye_abbe", {"n": 12, "s": 3, "m": 2, "nodes": "integer"}),
    ("cyclic_mds", {"n": 30, "s": 7}),
    ("heterogeneous", {"p": [0.1, 0.2, 0.05, 0.3], "k": 3, "scheme": "I"}),
    ("heterogeneous", {"p": [0.1, 0.2, 0.05, 0.3], "k": 5, "scheme": "II"}),
    # a random placement (benchmarks/numerics/adversarial_numerics.py's, n = 16) with angles assigned by local search
    ("adversarial_gc", {"placement": [[0, 3, 4, 5, 9, 11, 12], [1, 6, 7, 10, 14], [0, 1, 2, 3, 7, 11, 13],
                                      [0, 6, 8, 12, 13, 15], [0, 1, 3, 8, 12, 13, 14, 15], [1, 5, 6, 12, 13],
                                      [3, 4, 6, 7, 12, 14, 15], [0, 3, 4, 5, 8, 10, 14], [2, 4, 6, 9, 10, 12],
                                      [7, 8, 12, 14], [0, 3, 5, 7, 9, 11, 13], [0, 4, 7, 14, 15],
                                      [1, 2, 9, 10, 11, 12], [1, 2, 5, 6, 7, 10, 11, 13, 15], [2, 3, 6, 8, 13, 14],
                                      [1, 5, 9, 10, 13, 14]], "s": 1, "a": 1, "nodes": "spread"}),
)

def cases() -> Iterator[tuple[str, str, dict[str, Any]]]:
    """``(key, scheme, kwargs)``: every registered scheme at its tour sizes (with :data:`SEEDS` where it takes
    ``seed``), then :data:`EXTRA`. ``key`` names the call, e.g. ``cyclic_repetition(n=50, s=5, seed=1)``."""


    for name, scheme in gc.schemes().items():
        sig = inspect.signature(scheme.build).parameters
        seeded = "seed" in sig
        for sizes in scheme.tour:
            for seed in SEEDS if seeded else (None,):
                kwargs = dict(sizes) if seed is None else {**sizes, "seed": seed}
                yield _key(name, kwargs), name, kwargs
    for name, kwargs in EXTRA:
        yield _key("gc." + name, kwargs), "gc." + name, kwargs


def _key(name: str, kwargs: dict[str, Any]) -> str:
    return f"{name}(" + ", ".join(f"{k}={v!r}" for k, v in kwargs.items()) + ")"


def build(name: str, kwargs: dict[str, Any]) -> Any:
    """The code of one case: the registered scheme, or (``gc.NAME``, for :data:`EXTRA`) the public constructor."""
    with warnings.catch_warnings():  # e.g. heterogeneous' NegativeCoefficientWarning: the digest is the point here
        warnings.simplefilter("ignore")
        if name.startswith("gc."):
            return getattr(gc, name[3:])(**kwargs)
        return gc.schemes()[name].build(**kwargs)


def _canonical(x: Any) -> Any:
    """JSON-ready form with every number spelled exactly (floats by ``float.hex``)."""
    if isinstance(x, dict):
        return {str(k): _canonical(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [_canonical(v) for v in x]
    if isinstance(x, np.ndarray):
        return {"ndarray": str(x.dtype), "shape": list(x.shape), "values": _canonical(x.tolist())}
    if isinstance(x, (bool, np.bool_)):
        return bool(x)
    if isinstance(x, (int, np.integer)):
        return int(x)
    if isinstance(x, (float, np.floating)):
        return {"float": float(x).hex()}
    if isinstance(x, (complex, np.complexfloating)):
        return {"complex": [float(x.real).hex(), float(x.imag).hex()]}
    if x is None or isinstance(x, str):
        return x
    return {type(x).__name__: str(x)}


def matrix_digest(B: Any) -> str:
    """SHA-256 of ``B``: its dtype, its shape and its bytes (exact entries by their decimal strings)."""
    h = hashlib.sha256()
    arr = np.asarray(B)
    if type(B) is not np.ndarray and hasattr(B, "characteristic"):  # a galois FieldArray
        h.update(f"GF({B.characteristic}^{B.degree})".encode())
        arr = B.view(np.ndarray)
    h.update(f"{arr.dtype.str}{arr.shape}".encode())
    if arr.dtype == object:
        h.update("\n".join(str(x) for x in arr.ravel()).encode())
    else:
        h.update(np.ascontiguousarray(arr).tobytes())
    return h.hexdigest()


def params_digest(params: Any) -> str:
    """SHA-256 of the canonical JSON of ``params`` (sorted keys, exact floats)."""
    text = json.dumps(_canonical(params), sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()


def digests(name: str, kwargs: dict[str, Any]) -> dict[str, str]:
    code = build(name, kwargs)
    return {"B": matrix_digest(code.B), "params": params_digest(code.params)}


def table() -> dict[str, dict[str, str]]:
    out: dict[str, dict[str, str]] = {}
    for key, name, kwargs in cases():
        out[key] = {"scheme": name, "kwargs": json.dumps(kwargs, sort_keys=True), **digests(name, kwargs)}
    return out


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    current = table()
    if "--check" in argv:
        saved = json.loads(TABLE.read_text())
        bad = [k for k in current if saved.get(k, {}).get("B") != current[k]["B"]
               or saved.get(k, {}).get("params") != current[k]["params"]]
        missing = sorted(set(saved) - set(current))
        for k in bad:
            what = [f for f in ("B", "params") if saved.get(k, {}).get(f) != current[k][f]]
            print(f"DIFFERS {k}: {', '.join(what)}")
        for k in missing:
            print(f"MISSING {k}")
        print(f"{len(current) - len(bad)} of {len(current)} cases match {TABLE.name}")
        return 1 if bad or missing else 0
    if "--print" in argv:
        for k, v in current.items():
            print(f"{k}\t{v['B'][:16]}\t{v['params'][:16]}")
        return 0
    TABLE.parent.mkdir(exist_ok=True)
    TABLE.write_text(json.dumps(current, indent=1, sort_keys=False) + "\n")
    print(f"wrote {len(current)} cases to {TABLE}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
