"""Saving codes to ``.npz`` files and loading them back, with their parameters."""

from __future__ import annotations

import json
import os
import warnings
from fractions import Fraction
from typing import Any

import numpy as np

from ._code import ApproximateCode, GradientCode, LinearCode
from ._fields import is_galois_array

__all__ = ["save", "load"]

_FORMAT = 1


def save(code: LinearCode, path: str | os.PathLike[str]) -> None:
    """Write ``code`` to an ``.npz`` file: its matrix (exactly, for rational and GF(p) codes) and parameters.

    Examples
    --------
    >>> import os, tempfile, gradcodes as gc
    >>> code = gc.fractional_repetition(6, 2)
    >>> path = os.path.join(tempfile.mkdtemp(), "fr.npz")
    >>> gc.save(code, path)
    >>> gc.load(path)
    GradientCode(name='fractional_repetition', n=6, s=2, k=6, m=1, field='real', load=3)
    """
    if not isinstance(code, LinearCode):
        raise TypeError(f"save() takes a gradcodes code, got {type(code).__name__}")
    meta: dict[str, Any] = {
        "format": _FORMAT, "type": type(code).__name__, "name": code.name, "family": code.family,
        "params": code.params, "m": code.m, "field": code.field, "default_decoder": code.default_decoder,
        "s": getattr(code, "s", None),
    }
    if isinstance(code, ApproximateCode) and code.straggle_probabilities is not None:
        meta["straggle_probabilities"] = [str(p) for p in code.straggle_probabilities]
    arrays: dict[str, np.ndarray] = {}
    if code.field == "rational":
        arrays["B_num"] = np.vectorize(lambda f: str(f.numerator), otypes=[str])(code.B)
        arrays["B_den"] = np.vectorize(lambda f: str(f.denominator), otypes=[str])(code.B)
    elif is_galois_array(code.B):
        arrays["B_gf"] = np.asarray(code.B.view(np.ndarray), dtype=np.int64)
        meta["p"] = type(code.B).characteristic
    else:
        arrays["B"] = np.asarray(code.B)
    np.savez(path, meta=np.array(json.dumps(meta)), **arrays)


def load(path: str | os.PathLike[str]) -> LinearCode:
    """Read a code written by :func:`save`.

    Family decoders are restored by rebuilding the code with its constructor from the saved parameters when the
    result has the very same matrix; otherwise (or for custom codes) the generic decoders are used.
    """
    with np.load(path, allow_pickle=False) as data:
        if "meta" not in data:
            raise ValueError(f"{os.fspath(path)!r} is not a gradcodes file (no 'meta' entry)")
        meta = json.loads(str(data["meta"]))
        if meta.get("format") != _FORMAT:
            raise ValueError(f"unsupported gradcodes file format {meta.get('format')!r}")
        if "B_num" in data:
            B = np.vectorize(lambda a, b: Fraction(int(a), int(b)), otypes=[object])(data["B_num"], data["B_den"])
        elif "B_gf" in data:
            import galois

            B = galois.GF(int(meta["p"]))(data["B_gf"])
        else:
            B = data["B"]
    rebuilt = _rebuild(meta, B)
    if rebuilt is not None:
        return rebuilt
    if meta["type"] not in ("GradientCode", "ApproximateCode"):
        # a code type with its own straggler model (e.g. a tree) must come back as itself, never as a plain
        # GradientCode that would claim any n - s responders suffice
        raise ValueError(f"cannot restore a {meta['type']} of family {meta.get('family')!r}: its constructor could "
                         f"not rebuild the saved matrix from the saved parameters")
    common = {"m": meta["m"], "name": meta["name"], "family": meta["family"], "params": meta["params"]}
    if meta["type"] == "ApproximateCode":
        probs = meta.get("straggle_probabilities")
        return ApproximateCode(B, s=meta.get("s"), straggle_probabilities=None if probs is None else
                               [Fraction(p) if meta["field"] == "rational" else float(p) for p in probs],
                               **common)
    return GradientCode(B, meta["s"], **common)


def _rebuild(meta: dict[str, Any], B: Any) -> LinearCode | None:
    constructor = REBUILDERS.get(meta.get("family") or "")
    if constructor is None:
        return None
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")                      # construction warnings were shown at build time
            code = constructor(**meta["params"])
    except (TypeError, ValueError) as exc:
        warnings.warn(f"the {meta['family']!r} family could not rebuild the saved code ({exc}); loading it with the "
                      f"generic decoders only", RuntimeWarning, stacklevel=3)
        return None
    if _same_matrix(code.B, B):
        return code
    warnings.warn(f"the saved matrix differs from the {meta['family']!r} construction with the saved parameters "
                  f"(edited, or built by another version); loading it with the generic decoders only",
                  RuntimeWarning, stacklevel=3)
    return None


def _same_matrix(rebuilt: Any, saved: Any) -> bool:
    """Equal exactly for exact fields; for floats equal up to rounding (``1e-12 * max|B|``), the same zero pattern."""
    if rebuilt.shape != np.shape(saved):
        return False
    if isinstance(saved, np.ndarray) and saved.dtype.kind in "fc" and isinstance(rebuilt, np.ndarray):
        same_support = np.array_equal(rebuilt != 0, saved != 0)
        scale = max(float(np.abs(saved).max()), 1e-300)
        return same_support and bool(np.abs(rebuilt - saved).max() <= 1e-12 * scale)
    return bool(np.all(np.asarray(rebuilt == saved)))


#: family name -> constructor called with the saved ``params`` to restore a code's family decoders. A family
#: whose decoders are all generic need not register (the generic ``GradientCode`` is then exactly right).
REBUILDERS: dict[str, Any] = {}
