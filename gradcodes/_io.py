"""Saving codes to ``.npz`` files and loading them back, with their parameters.

A code file is untrusted input. :func:`load` reads it without pickles, checks every entry's dtype and shape from
its header, the sizes against :data:`gradcodes.limits`, and the saved parameters against the saved matrix
*before* it rebuilds anything; whatever is wrong with a file raises :class:`CodeFileError`.
"""

from __future__ import annotations

import json
import math
import os
import re
import warnings
import zipfile
from fractions import Fraction
from typing import Any

import numpy as np

from ._code import ApproximateCode, GradientCode, LinearCode
from ._fields import is_galois_array
from ._validate import check_int, limits

__all__ = ["save", "load", "CodeFileError"]

_FORMAT = 1
#: Entries a code file may hold, and the dtype kinds each may have (no object arrays: never a pickle).
_ENTRIES = {"meta": "U", "B": "biufc", "B_num": "U", "B_den": "U", "B_gf": "iu"}
#: The JSON parameters may not be longer than this (characters).
_MAX_META_CHARS = 10**7
#: Largest characteristic p of a GF(p) code file (the fields gradcodes builds are far smaller).
_MAX_P = 2**31


class CodeFileError(ValueError):
    """A file that :func:`gradcodes.load` cannot accept: not an ``.npz`` archive, truncated, corrupted, not written
    by :func:`gradcodes.save`, holding pickled objects, inconsistent, or larger than the bound it was given."""


def save(code: LinearCode, path: str | os.PathLike[str]) -> None:
    """Write ``code`` to an ``.npz`` file: its matrix (exactly, for rational and GF(p) codes) and parameters.

    The file keeps the family's parameters (so that :func:`load` restores the family decoders), the default
    decoder, the acceptance tolerance ``rtol`` and, for approximate codes, the straggle probabilities. Decoders of
    custom codes (built directly from a matrix) are not stored: such codes come back with the generic decoders.

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
    rtol = getattr(code, "rtol", None)
    if rtol is not None:
        meta["rtol"] = float(rtol)
    if isinstance(code, ApproximateCode) and code.straggle_probabilities is not None:
        meta["straggle_probabilities"] = [str(p) for p in code.straggle_probabilities]
    arrays: dict[str, Any] = {}
    if code.field == "rational":
        arrays["B_num"] = np.vectorize(lambda f: str(f.numerator), otypes=[str])(code.B)
        arrays["B_den"] = np.vectorize(lambda f: str(f.denominator), otypes=[str])(code.B)
    elif is_galois_array(code.B):
        arrays["B_gf"] = np.asarray(code.B.view(np.ndarray), dtype=np.int64)
        gf: Any = type(code.B)                    # a galois FieldArray class
        meta["p"] = gf.characteristic
    else:
        arrays["B"] = np.asarray(code.B)
    np.savez(path, meta=np.array(json.dumps(meta)), **arrays)


def load(path: str | os.PathLike[str], *, max_entries: int | None = None) -> LinearCode:
    """Read a code written by :func:`save`, treating the file as untrusted input.

    Family decoders are restored by rebuilding the code with its constructor from the saved parameters when the
    result has the very same matrix (up to float rounding); otherwise (or for custom codes) the generic decoders
    are used, with a warning. The default decoder and ``rtol`` are restored.

    Before anything is built, the file is checked: it must be an ``.npz`` archive holding only the entries
    :func:`save` writes, none of them an object (pickle) array; the matrix must have at most ``max_entries``
    entries; the parameters must be well-typed and agree with the matrix (``n`` rows, ``k m`` columns), so that
    the rebuild costs no more than the matrix it reproduces.

    Parameters
    ----------
    path : str or os.PathLike
        The file.
    max_entries : int, optional
        Largest number of matrix entries accepted (default: ``gradcodes.limits.entries``, 10**8, for float
        matrices; ``gradcodes.limits.exact_entries``, 10**6, for rational and GF(p) ones). Pass a larger value to
        load a bigger code from a file you trust to be what it claims.

    Raises
    ------
    CodeFileError
        (a :class:`ValueError`) for any file that is not a valid gradcodes code file, or is over the bound; the
        message says what is wrong.
    FileNotFoundError
        If there is no file at ``path``.
    """
    where = os.fspath(path) if isinstance(path, (str, os.PathLike)) else None
    if where is None:
        raise TypeError(f"path must be a str or os.PathLike, got {type(path).__name__}")
    if max_entries is not None:
        max_entries = check_int("max_entries", max_entries, 1)
    arrays = _read_npz(where, max_entries)
    meta = _check_meta(where, arrays)
    B = _matrix(where, meta, arrays)
    _check_params(where, meta, B)
    try:
        code = _restore(meta, B)
    except CodeFileError:
        raise
    except (TypeError, ValueError, ArithmeticError, KeyError) as exc:
        raise CodeFileError(f"{where!r}: the saved code is not valid: {exc}") from None
    if "rtol" in meta and hasattr(code, "rtol"):
        code.rtol = meta["rtol"]
    if meta["default_decoder"] in code.decoders:
        code.default_decoder = meta["default_decoder"]
    elif meta["default_decoder"] != code.default_decoder:
        warnings.warn(f"{where!r}: the saved default decoder {meta['default_decoder']!r} could not be restored; "
                      f"using {code.default_decoder!r}", RuntimeWarning, stacklevel=2)
    return code


# ---------------------------------------------------------------------------------------------- reading


def _read_npz(where: str, max_entries: int | None) -> dict[str, np.ndarray]:
    """The archive's arrays, each checked from its header (dtype, shape, size) before its data is read."""
    bad = f"{where!r} is not a gradcodes code file"
    try:
        zf = zipfile.ZipFile(where)
    except FileNotFoundError:
        raise
    except (zipfile.BadZipFile, zipfile.LargeZipFile, OSError, EOFError, ValueError) as exc:
        raise CodeFileError(f"{bad}: not a readable .npz (zip) archive ({type(exc).__name__}: {exc})") from None
    out: dict[str, np.ndarray] = {}
    try:
        with zf:
            names = zf.namelist()
            if len(names) > len(_ENTRIES) or len(set(names)) != len(names):
                raise CodeFileError(f"{bad}: it has {len(names)} entries; a code file has at most "
                                    f"{len(_ENTRIES)} ({', '.join(_ENTRIES)})")
            for member in names:
                key = member[:-4] if member.endswith(".npy") else member
                if key not in _ENTRIES:
                    raise CodeFileError(f"{bad}: unexpected entry {member!r} (a code file holds "
                                        f"{', '.join(_ENTRIES)})")
                out[key] = _read_entry(zf, member, key, where, max_entries)
    except CodeFileError:
        raise
    except Exception as exc:  # zlib.error, EOFError, BadZipFile, ...: any failure to read is a bad file
        raise CodeFileError(f"{bad}: corrupted or truncated ({type(exc).__name__}: {exc})") from None
    if "meta" not in out:
        raise CodeFileError(f"{bad} (no 'meta' entry)")
    return out


def _read_entry(zf: zipfile.ZipFile, member: str, key: str, where: str, max_entries: int | None) -> np.ndarray:
    fmt = np.lib.format
    with zf.open(member) as fp:
        version = fmt.read_magic(fp)
        if version == (1, 0):
            shape: tuple[int, ...]
            shape, fortran, dtype = fmt.read_array_header_1_0(fp)
        elif version == (2, 0):
            shape, fortran, dtype = fmt.read_array_header_2_0(fp)
        else:
            raise CodeFileError(f"{where!r}: entry {key!r} has an unsupported .npy version {version}")
        if dtype.hasobject or dtype.kind not in _ENTRIES[key]:
            what = "Python objects (a pickle, never loaded)" if dtype.hasobject else f"dtype {dtype}"
            raise CodeFileError(f"{where!r}: entry {key!r} holds {what}; a code file stores it as "
                                f"{_kinds(_ENTRIES[key])}")
        size = math.prod(int(d) for d in shape)
        if key == "meta":
            if shape != () or dtype.itemsize // 4 > _MAX_META_CHARS:
                raise CodeFileError(f"{where!r}: entry 'meta' must be one string of at most {_MAX_META_CHARS:,} "
                                    f"characters, got shape {shape} and dtype {dtype}")
        else:
            if len(shape) != 2:
                raise CodeFileError(f"{where!r}: entry {key!r} must be a matrix (2-D), got shape {shape}")
            exact = key != "B"
            bound = max_entries if max_entries is not None else (limits.exact_entries if exact else limits.entries)
            if size > bound:
                which = "max_entries" if max_entries is not None else \
                    f"gradcodes.limits.{'exact_entries' if exact else 'entries'}"
                raise CodeFileError(f"{where!r}: the saved matrix has {shape[0]:,} x {shape[1]:,} = {size:,} entries, "
                                    f"more than the bound {bound:,} ({which}); if you trust the file, load it with "
                                    f"gradcodes.load(path, max_entries={size})")
            if key in ("B_num", "B_den") and dtype.itemsize // 4 > 10_000:
                raise CodeFileError(f"{where!r}: entry {key!r} has numbers of up to {dtype.itemsize // 4:,} digits")
        expected = size * dtype.itemsize
        info = zf.getinfo(member)
        if info.file_size < expected:
            raise CodeFileError(f"{where!r}: entry {key!r} is truncated ({info.file_size:,} bytes for "
                                f"{expected:,} bytes of data)")
        data = fp.read(expected)
        if len(data) != expected:
            raise CodeFileError(f"{where!r}: entry {key!r} is truncated")
        arr = np.frombuffer(data, dtype=dtype)
        dims = tuple(int(d) for d in shape)
        return (arr.reshape(dims, order="F") if fortran else arr.reshape(dims, order="C")).copy()


def _kinds(kinds: str) -> str:
    names = {"U": "unicode text", "b": "bool", "i": "int", "u": "unsigned int", "f": "float", "c": "complex"}
    return " or ".join(names[k] for k in kinds)


def _check_meta(where: str, arrays: dict[str, np.ndarray]) -> dict[str, Any]:
    """The JSON parameters, each of the type :func:`save` writes."""
    def fail(what: str) -> CodeFileError:
        return CodeFileError(f"{where!r}: invalid gradcodes parameters: {what}")

    try:
        meta = json.loads(str(arrays["meta"]))
    except (ValueError, RecursionError) as exc:
        raise fail(f"not JSON ({exc})") from None
    if not isinstance(meta, dict):
        raise fail(f"expected a JSON object, got {type(meta).__name__}")
    if meta.get("format") != _FORMAT:
        raise CodeFileError(f"{where!r}: unsupported gradcodes file format {meta.get('format')!r} "
                            f"(this version reads format {_FORMAT})")
    spec: dict[str, tuple[type | tuple[type, ...], bool]] = {
        "type": (str, True), "name": (str, True), "family": ((str, type(None)), True), "params": (dict, True),
        "m": (int, True), "field": (str, True), "default_decoder": (str, True), "s": ((int, type(None)), False),
        "rtol": ((float, int), False), "p": (int, False), "straggle_probabilities": (list, False),
    }
    for key, (typ, required) in spec.items():
        if key not in meta:
            if required:
                raise fail(f"missing {key!r}")
            continue
        v = meta[key]
        if isinstance(v, bool) or not isinstance(v, typ):
            raise fail(f"{key!r} has the wrong type ({type(v).__name__})")
    if meta["type"] in ("GradientCode", "CodedReduceCode") and meta.get("s") is None:
        raise fail(f"a {meta['type']} needs the number of stragglers 's'")
    if meta["m"] < 1:
        raise fail(f"m = {meta['m']} must be >= 1")
    if "rtol" in meta and not (0 < meta["rtol"] < 1):
        raise fail(f"rtol = {meta['rtol']!r} must lie in (0, 1)")
    if meta["field"] not in ("real", "complex", "rational") and not re.fullmatch(r"GF\(\d{1,10}\)", meta["field"]):
        raise fail(f"unknown field {meta['field']!r}")
    return meta


def _matrix(where: str, meta: dict[str, Any], arrays: dict[str, np.ndarray]) -> Any:
    """The saved matrix, in its field, checked against the parameters."""
    def fail(what: str) -> CodeFileError:
        return CodeFileError(f"{where!r}: invalid saved matrix: {what}")

    kinds = [k for k in ("B", "B_num", "B_gf") if k in arrays]
    if len(kinds) != 1:
        raise fail(f"expected exactly one of 'B', 'B_num'/'B_den', 'B_gf', got {sorted(arrays)}")
    kind = kinds[0]
    field = meta["field"]
    B: Any                                    # an ndarray (float or Fractions) or a galois array
    if kind == "B_num":
        if "B_den" not in arrays or arrays["B_den"].shape != arrays["B_num"].shape:
            raise fail("'B_num' needs a 'B_den' entry of the same shape")
        if field != "rational":
            raise fail(f"a rational matrix in a file whose field is {field!r}")
        try:
            B = np.empty(arrays["B_num"].shape, dtype=object)
            flat = B.reshape(-1)
            for i, (a, b) in enumerate(zip(arrays["B_num"].flat, arrays["B_den"].flat, strict=True)):
                flat[i] = Fraction(int(a), int(b))
        except (ValueError, ZeroDivisionError) as exc:
            raise fail(f"entries must be integers with non-zero denominators ({exc})") from None
    elif kind == "B_gf":
        if "p" not in meta:
            raise fail("a GF(p) matrix without the characteristic 'p'")
        p = meta["p"]
        if not 2 <= p <= _MAX_P or field != f"GF({p})":
            raise fail(f"characteristic p = {p} must be a prime in [2, {_MAX_P}] matching the field {field!r}")
        Bi = arrays["B_gf"]
        if Bi.size and (Bi.min() < 0 or Bi.max() >= p):
            raise fail(f"GF({p}) entries must lie in [0, {p - 1}]")
        import galois

        try:
            B = galois.GF(p)(Bi.astype(np.int64))
        except (ValueError, TypeError) as exc:
            raise fail(f"not a GF({p}) matrix ({exc})") from None
    else:
        B = arrays["B"]
        if field not in ("real", "complex"):
            raise fail(f"a floating-point matrix in a file whose field is {field!r}")
        if B.dtype.kind in "fc" and not np.all(np.isfinite(B)):
            raise fail("it has infinite or NaN entries")
    n, cols = int(B.shape[0]), int(B.shape[1])
    if n < 1 or cols < 1 or cols % meta["m"]:
        raise fail(f"shape {B.shape} is not (n, k*m) with n, k >= 1 and m = {meta['m']}")
    if meta.get("s") is not None and not 0 <= meta["s"] <= n - 1:
        raise CodeFileError(f"{where!r}: invalid gradcodes parameters: s = {meta['s']} must lie in [0, {n - 1}]")
    return B


def _check_params(where: str, meta: dict[str, Any], B: Any) -> None:
    """The family parameters must describe the saved matrix: a rebuild then costs no more than the matrix."""
    params = meta["params"]
    n, cols = int(B.shape[0]), int(B.shape[1])
    m = meta["m"]
    expected: dict[str, int] = {"n": n, "k": cols // m, "m": m}
    if meta.get("s") is not None:
        expected["s"] = meta["s"]
    if meta.get("family") == "coded_reduce":
        expected = {}
        b, L = params.get("n"), params.get("L")
        if not (isinstance(b, int) and isinstance(L, int) and not isinstance(b, bool) and b >= 1 and 1 <= L <= 64):
            raise CodeFileError(f"{where!r}: invalid coded_reduce parameters n={b!r}, L={L!r}")
        total, level = 0, 1
        for _ in range(L):
            level *= b
            total += level
            if total > n:
                break
        if total != n:
            raise CodeFileError(f"{where!r}: invalid gradcodes parameters: a tree with branching n={b} and depth "
                                f"L={L} does not have the {n:,} workers of the saved matrix")
    elif meta.get("family") == "heterogeneous":
        expected = {"k": cols // m}
        if not isinstance(params.get("p"), list) or len(params["p"]) != n:
            raise CodeFileError(f"{where!r}: invalid heterogeneous parameters: p must list the {n:,} workers' "
                                f"straggle probabilities")
    for key, value in expected.items():
        if key in params and (isinstance(params[key], bool) or params[key] != value):
            raise CodeFileError(f"{where!r}: invalid gradcodes parameters: {key} = {params[key]!r} in the parameters, "
                                f"but the saved matrix has {key} = {value}")
    probs = meta.get("straggle_probabilities")
    if probs is not None and len(probs) != n:
        raise CodeFileError(f"{where!r}: invalid gradcodes parameters: {len(probs)} straggle probabilities for "
                            f"{n:,} workers")


def _restore(meta: dict[str, Any], B: Any) -> LinearCode:
    rebuilt = _rebuild(meta, B)
    if rebuilt is not None:
        return rebuilt
    if meta["type"] not in ("GradientCode", "ApproximateCode"):
        # a code type with its own straggler model (e.g. a tree) must come back as itself, never as a plain
        # GradientCode that would claim any n - s responders suffice
        raise CodeFileError(f"cannot restore a {meta['type']} of family {meta.get('family')!r}: its constructor "
                            f"could not rebuild the saved matrix from the saved parameters")
    common = {"m": meta["m"], "name": meta["name"], "family": meta["family"], "params": meta["params"]}
    if meta["type"] == "ApproximateCode":
        probs = meta.get("straggle_probabilities")
        return ApproximateCode(B, s=meta.get("s"), straggle_probabilities=None if probs is None else
                               [Fraction(p) if meta["field"] == "rational" else float(p) for p in probs],
                               **common)
    if meta.get("s") is None:
        raise CodeFileError("a GradientCode file must give s")
    return GradientCode(B, meta["s"], rtol=meta.get("rtol", 1e-8), **common)


def _rebuild(meta: dict[str, Any], B: Any) -> LinearCode | None:
    constructor = REBUILDERS.get(meta.get("family") or "")
    if constructor is None:
        return None
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")                      # construction warnings were shown at build time
            code = constructor(**meta["params"])
            if is_galois_array(B) and not code.exact and code._field_builder is not None:
                import galois

                code = code.in_field(galois.GF(int(meta["p"])))
    except (TypeError, ValueError, KeyError, ArithmeticError) as exc:
        warnings.warn(f"the {meta['family']!r} family could not rebuild the saved code ({exc}); loading it with the "
                      f"generic decoders only", RuntimeWarning, stacklevel=4)
        return None
    if _same_matrix(code.B, B):
        return code
    warnings.warn(f"the saved matrix differs from the {meta['family']!r} construction with the saved parameters "
                  f"(edited, or built by another version); loading it with the generic decoders only",
                  RuntimeWarning, stacklevel=4)
    return None


def _same_matrix(rebuilt: Any, saved: Any) -> bool:
    """Equal exactly for exact fields; for floats equal up to rounding (``1e-12 * max|B|``), the same zero pattern."""
    if rebuilt.shape != np.shape(saved) or is_galois_array(rebuilt) != is_galois_array(saved):
        return False
    if is_galois_array(saved) and type(rebuilt) is not type(saved):
        return False
    if isinstance(saved, np.ndarray) and saved.dtype.kind in "fc" and isinstance(rebuilt, np.ndarray):
        if rebuilt.dtype == object:
            return False
        same_support = np.array_equal(rebuilt != 0, saved != 0)
        scale = max(float(np.abs(saved).max()), 1e-300)
        return same_support and bool(np.abs(rebuilt - saved).max() <= 1e-12 * scale)
    return bool(np.all(np.asarray(rebuilt == saved)))


#: family name -> constructor called with the saved ``params`` to restore a code's family decoders. A family
#: whose decoders are all generic need not register (the generic ``GradientCode`` is then exactly right).
REBUILDERS: dict[str, Any] = {}
