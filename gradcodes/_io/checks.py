"""Reading a code file under checks: every entry's size from its headers before its data, the JSON parameters,
the matrix in its field, and the family's size parameters against the matrix (a tree's inner code and a product's
factors included), so that a file cannot make :func:`gradcodes.load_code` allocate or compute more than the
matrix it holds. ``files`` (``save_code`` / ``load_code``, the rebuild of family decoders) builds on this module.
"""

from __future__ import annotations

import json
import math
import re
from fractions import Fraction
from typing import Any

import numpy as np

from .._base.errors import GradcodesValueError
from .._base.validate import limits
from .archive import MAX_DIGITS, MAX_META_CHARS, CodeArchive
from .sparse import SPARSE_ENTRIES, check_sparse_header, sparse_matrix

__all__ = ["CodeFileError"]

#: The formats :func:`gradcodes.load_code` reads (``files._FORMAT`` is the one :func:`gradcodes.save_code` writes).
_READS = (1, 2)
#: Entries a code file may hold, and the dtype kinds each may have (no object arrays: never a pickle).
_ENTRIES = {"meta": "U", "B": "biufc", "B_num": "U", "B_den": "U", "B_gf": "iu", **SPARSE_ENTRIES}
#: Largest characteristic p of a GF(p) code file (the fields gradcodes builds are far smaller).
_MAX_P = 2**31


class CodeFileError(GradcodesValueError):
    """A file that :func:`gradcodes.load_code` cannot accept: not an ``.npz`` archive, truncated, corrupted, not written
    by :func:`gradcodes.save_code`, holding pickled objects, inconsistent, or larger than the bound it was given."""


def _read(where: str, max_entries: int | None) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
    """The parameters, then the matrix entries, each checked from its headers before its data is read."""
    bad = f"{where!r} is not a gradcodes code file"
    try:
        with CodeArchive(where, _ENTRIES, CodeFileError, max_entries) as ar:
            if "meta" not in ar:
                raise CodeFileError(f"{bad} (no 'meta' entry)")

            def meta_header(shape: tuple[int, ...], dtype: np.dtype[Any]) -> None:
                if shape != () or dtype.itemsize // 4 > MAX_META_CHARS:
                    raise CodeFileError(f"{where!r}: entry 'meta' must be one string of at most "
                                        f"{MAX_META_CHARS:,} characters, got shape {shape} and dtype {dtype}")

            meta = _check_meta(where, ar.read("meta", meta_header))
            shapes: dict[str, tuple[int, ...]] = {}
            lengths: dict[str, int] = {}

            def matrix_header(key: str) -> Any:
                def check(shape: tuple[int, ...], dtype: np.dtype[Any]) -> None:
                    if key in SPARSE_ENTRIES:
                        check_sparse_header(where, key, shape, meta, max_entries, lengths, CodeFileError)
                        _check_params(where, meta, tuple(meta["shape"]))   # before the data is read
                        return
                    _check_matrix_header(where, key, shape, dtype, max_entries)
                    for other, seen in shapes.items():
                        if seen != shape:
                            raise CodeFileError(f"{where!r}: invalid saved matrix: entry {key!r} has shape {shape}, "
                                                f"entry {other!r} {seen}")
                    _check_params(where, meta, shape)          # the declared sizes, before the data is read
                    shapes[key] = shape
                return check

            arrays = {key: ar.read(key, matrix_header(key)) for key in _ENTRIES if key != "meta" and key in ar}
    except (CodeFileError, FileNotFoundError):
        raise
    except Exception as exc:  # zlib.error, EOFError, BadZipFile, ...: any failure to read is a bad file
        raise CodeFileError(f"{bad}: corrupted or truncated ({type(exc).__name__}: {exc})") from None
    return meta, arrays


def _check_matrix_header(where: str, key: str, shape: tuple[int, ...], dtype: np.dtype[Any],
                         max_entries: int | None) -> None:
    if len(shape) != 2:
        raise CodeFileError(f"{where!r}: entry {key!r} must be a matrix (2-D), got shape {shape}")
    size = math.prod(shape)
    exact = key != "B"
    bound = max_entries if max_entries is not None else (limits.exact_entries if exact else limits.entries)
    if size > bound:
        which = "max_entries" if max_entries is not None else \
            f"gradcodes.limits.{'exact_entries' if exact else 'entries'}"
        raise CodeFileError(f"{where!r}: the saved matrix has {shape[0]:,} x {shape[1]:,} = {size:,} entries, "
                            f"more than the bound {bound:,} ({which}); if you trust the file, load it with "
                            f"gradcodes.load_code(path, max_entries={size})")
    if key in ("B_num", "B_den") and dtype.itemsize // 4 > MAX_DIGITS:
        raise CodeFileError(f"{where!r}: entry {key!r} has numbers of up to {dtype.itemsize // 4:,} digits, more "
                            f"than the {MAX_DIGITS:,} a code file may use")


def _check_meta(where: str, text: np.ndarray) -> dict[str, Any]:
    """The JSON parameters, each of the type :func:`save_code` writes; a format 1 file's parameters as it was built."""
    def fail(what: str) -> CodeFileError:
        return CodeFileError(f"{where!r}: invalid gradcodes parameters: {what}")

    try:
        meta = json.loads(str(text))
    except (ValueError, RecursionError) as exc:
        raise fail(f"not JSON ({exc})") from None
    if not isinstance(meta, dict):
        raise fail(f"expected a JSON object, got {type(meta).__name__}")
    if isinstance(meta.get("format"), bool) or meta.get("format") not in _READS:
        raise CodeFileError(f"{where!r}: unsupported gradcodes file format {meta.get('format')!r} "
                            f"(this version reads formats {', '.join(map(str, _READS))})")
    spec: dict[str, tuple[type | tuple[type, ...], bool]] = {
        "type": (str, True), "name": (str, True), "family": ((str, type(None)), True), "params": (dict, True),
        "m": (int, True), "field": (str, True), "default_decoder": (str, True), "s": ((int, type(None)), False),
        "rtol": ((float, int), False), "p": (int, False), "straggle_probabilities": (list, False),
        "shape": (list, False),
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
    shape = meta.get("shape")
    if shape is not None and not (len(shape) == 2 and all(isinstance(d, int) and not isinstance(d, bool) and d >= 1
                                                          for d in shape)):
        raise fail(f"'shape' must be two positive integers, got {shape!r}")
    if meta["format"] == 1:
        _as_built_by_format_1(meta["family"], meta["params"])
    return meta


def _as_built_by_format_1(family: str | None, params: dict[str, Any]) -> None:
    """Format 1 files record the parameters of their time: fill in the defaults those releases used."""
    if family == "cyclic_repetition" and params.get("field", "real") == "real":
        params.setdefault("refine", 0)            # refine=0 was the default (and left out of the parameters)
    if family == "coded_reduce" and isinstance(params.get("inner"), dict):
        inner = params["inner"]
        if isinstance(inner.get("params"), dict):
            _as_built_by_format_1(inner.get("family"), inner["params"])


def _matrix(where: str, meta: dict[str, Any], arrays: dict[str, np.ndarray]) -> Any:
    """The saved matrix, in its field, checked against the parameters."""
    def fail(what: str) -> CodeFileError:
        return CodeFileError(f"{where!r}: invalid saved matrix: {what}")

    kinds = [k for k in ("B", "B_num", "B_gf", "B_indptr") if k in arrays]
    if len(kinds) != 1:
        raise fail(f"expected exactly one of 'B', 'B_num'/'B_den', 'B_gf', 'B_indptr'/'B_indices'/'B_data', got "
                   f"{sorted(arrays)}")
    if kinds[0] == "B_indptr":
        return sparse_matrix(where, meta, arrays, CodeFileError)
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
    if B.dtype.kind in "biufc" and not B.dtype.isnative:
        B = B.astype(B.dtype.newbyteorder("="))
    return B


def _check_params(where: str, meta: dict[str, Any], shape: tuple[int, ...]) -> None:
    """The parameters must describe a matrix of this shape, so that a rebuild costs no more than the matrix.

    Called with the shape from the ``.npy`` header, before the matrix's data is read, and again on the matrix.
    """
    n, cols = shape
    m = meta["m"]
    if n < 1 or cols < 1 or cols % m:
        raise CodeFileError(f"{where!r}: invalid saved matrix: shape {shape} is not (n, k*m) with n, k >= 1 and "
                            f"m = {m}")
    if meta.get("s") is not None and not 0 <= meta["s"] <= n - 1:
        raise CodeFileError(f"{where!r}: invalid gradcodes parameters: s = {meta['s']} must lie in [0, {n - 1}]")
    if meta.get("shape") is not None and tuple(meta["shape"]) != shape:
        raise CodeFileError(f"{where!r}: invalid saved matrix: shape {shape}, but the parameters say "
                            f"{tuple(meta['shape'])}")
    _check_family(where, meta.get("family"), meta["params"], n, cols, m, meta.get("s"))
    probs = meta.get("straggle_probabilities")
    if probs is not None and len(probs) != n:
        raise CodeFileError(f"{where!r}: invalid gradcodes parameters: {len(probs)} straggle probabilities for "
                            f"{n:,} workers")


def _is_int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _check_family(where: str, family: Any, params: dict[str, Any], n: int, cols: int, m: int, s: int | None) -> None:
    """A family's size parameters against an ``n x cols`` matrix (``cols = k m``); a tree's inner code too."""
    def fail(what: str) -> CodeFileError:
        return CodeFileError(f"{where!r}: invalid gradcodes parameters: {what}")

    expected: dict[str, int] = {"n": n, "k": cols // m, "m": m}
    if s is not None:
        expected["s"] = s
    if family == "coded_reduce":
        b, L = params.get("branching", params.get("n")), params.get("L")       # "n" in files before 0.2
        if not (isinstance(b, int) and isinstance(L, int) and _is_int(b) and _is_int(L) and b >= 2 and 1 <= L <= 64):
            raise CodeFileError(f"{where!r}: invalid coded_reduce parameters branching={b!r}, L={L!r}")
        total, level = 0, 1
        for _ in range(L):
            level *= b
            total += level
            if total > n:
                break
        if total != n:
            raise fail(f"a tree with branching n={b} and depth L={L} does not have the {n:,} workers of the saved "
                       f"matrix")
        expected = {"P": cols, "s": s} if s is not None else {"P": cols}
        if "P" not in params:
            raise fail("a coded_reduce code needs its number of units P")
        inner = params.get("inner")
        if inner is not None:
            _check_inner(where, inner, b, s)
    elif family == "partial_straggler_code":                     # rows of B are messages, not workers
        w, sp, a = params.get("n"), params.get("s"), params.get("assignment")
        if a is None:
            ok = (isinstance(w, int) and isinstance(sp, int) and _is_int(w) and _is_int(sp) and w >= 1 and sp >= 0
                  and w * (sp + m) == n and w == cols // m)
        else:
            ok = (_is_int(w) and isinstance(a, list) and len(a) == w and all(isinstance(r, list) for r in a)
                  and sum(len(r) for r in a) <= n * cols and sum(x == 1 for r in a for x in r) == n)
        if not ok:
            raise fail(f"a partial_straggler_code with n={w!r}, s={sp!r} does not send the {n:,} messages of the "
                       f"saved matrix")
        expected = {"m": m}
    elif family == "heterogeneous":
        expected = {"k": cols // m}
        if not isinstance(params.get("p"), list) or len(params["p"]) != n:
            raise CodeFileError(f"{where!r}: invalid heterogeneous parameters: p must list the {n:,} workers' "
                                f"straggle probabilities")
    elif family == "adversarial_gc":
        _check_adversarial(where, params, n, cols // m, s)
    elif family == "product_code":
        for which in ("first", "second"):
            if not isinstance(params.get(which), dict):
                raise fail(f"a product_code needs its {which!r} factor's record")
        (n1, k1), (n2, k2) = (_factor_shape(where, params[w]) for w in ("first", "second"))
        if n1 * n2 != n or k1 * k2 != cols or m != 1:
            raise fail(f"factors of shapes ({n1:,}, {k1:,}) and ({n2:,}, {k2:,}) do not make the saved "
                       f"{n:,} x {cols:,} matrix (m = {m}); each factor's n and k must divide the matrix's")
        for w, (nf, kf) in (("first", (n1, k1)), ("second", (n2, k2))):
            rec = params[w]
            _check_family(where, rec.get("family"), rec.get("params", {}), nf, kf, 1, None)
    elif family == "margulis_code":
        N: Any = params.get("N")
        if not _is_int(N) or N * N != n:
            raise fail(f"N = {N!r}, but a Margulis code on the {n:,} workers of the saved matrix has N = sqrt(n)")
    elif family in ("bibd_code", "stochastic_bibd") and params.get("q") is not None:
        q, side = params["q"], math.isqrt(max(n, cols))
        if not (_is_int(q) and 2 <= q <= side):                      # a plane of order q has >= q^2 points, lines
            raise fail(f"q = {q!r} must be an integer in [2, {side}] (a plane of order q has at least q^2 points "
                       f"and lines; the saved matrix is {n:,} x {cols:,})")
    for key in _PER_WORKER.get(family or "", ()):
        if key in params and not (isinstance(params[key], list) and len(params[key]) == n):
            raise fail(f"{key!r} must list one value for each of the {n:,} workers of the saved matrix")
    for key, value in expected.items():
        if key in params and (isinstance(params[key], bool) or params[key] != value):
            raise fail(f"{key} = {params[key]!r} in the parameters, but the saved matrix has {key} = {value}")


#: Parameters that list one value per worker (their length is checked against the matrix's rows).
_PER_WORKER: dict[str, tuple[str, ...]] = {
    "heterogeneous_exact": ("speeds",), "robust_heterogeneous_exact": ("speeds",),
    "ignore_stragglers": ("p",), "stochastic_gc": ("p",), "bernoulli_gc": ("p",), "erasurehead": ("p",),
    "optimal_decoding": ("p",),
}


def _check_adversarial(where: str, params: dict[str, Any], n: int, k: int, s: int | None) -> None:
    """An ``adversarial_gc`` record: an ``n x k`` 0/1 placement, ``stragglers + 2 adversaries = s``, ``n`` nodes,
    and for ``nodes="spread"`` the recorded angles (the rebuild never runs the search)."""
    def fail(what: str) -> CodeFileError:
        return CodeFileError(f"{where!r}: invalid adversarial_gc parameters: {what}")

    S = params.get("placement")
    if not (isinstance(S, list) and len(S) == n and all(isinstance(r, list) and len(r) == k for r in S)):
        rows = len(S) if isinstance(S, list) else None
        raise fail(f"'placement' must be an {n:,} x {k:,} 0/1 matrix (the saved matrix's workers and partitions), "
                   f"got {'a ' + type(S).__name__ if rows is None else f'{rows:,} rows'}")
    if not all(x is not True and x is not False and (x == 0 or x == 1) for r in S for x in r):
        raise fail("'placement' must hold only 0 and 1")
    st: Any = params.get("stragglers")
    adv: Any = params.get("adversaries")
    if not (_is_int(st) and _is_int(adv) and st >= 0 and adv >= 0 and (s is None or st + 2 * adv == s)):
        raise fail(f"stragglers = {st!r} and adversaries = {adv!r} must be integers >= 0 with stragglers + "
                   f"2 adversaries = s = {s}")
    nodes = params.get("nodes")
    if isinstance(nodes, list) and len(nodes) != n:
        raise fail(f"'nodes' must list the {n:,} workers' evaluation points, got {len(nodes):,}")
    if nodes == "spread":
        angles = params.get("angles")
        if not (isinstance(angles, list) and len(angles) == n and all(_is_int(v) for v in angles)
                and sorted(angles) == list(range(n))):
            raise fail(f"a nodes='spread' file must record its 'angles', a permutation of 0..{n - 1} (a file is "
                       f"rebuilt from the choices it records, never by a search)")


def _factor_shape(where: str, rec: dict[str, Any]) -> tuple[int, int]:
    """The ``(n, k)`` a product factor's record declares."""
    shape = rec.get("shape")
    if not (isinstance(shape, list) and len(shape) == 2 and all(_is_int(d) and d >= 1 for d in shape)
            and isinstance(rec.get("params"), dict)):
        raise CodeFileError(f"{where!r}: invalid product_code parameters: a factor's record must give its "
                            f"'family', 'params' and 'shape' [n, k] (two positive integers), got {shape!r}")
    return int(shape[0]), int(shape[1])


def _check_inner(where: str, inner: Any, b: int, s: int | None) -> None:
    """The inner-code record of a saved tree: its matrix (``b`` rows) and parameters, checked like a file's."""
    def fail(what: str) -> CodeFileError:
        return CodeFileError(f"{where!r}: invalid coded_reduce inner code: {what}")

    if not isinstance(inner, dict):
        raise fail(f"expected a JSON object, got {type(inner).__name__}")
    rows, family, params = inner.get("B"), inner.get("family"), inner.get("params")
    if not (isinstance(rows, list) and len(rows) == b and all(isinstance(r, list) for r in rows)
            and len(rows[0]) >= 1 and all(len(r) == len(rows[0]) for r in rows)):
        raise fail(f"'B' must be a matrix with the tree's n = {b} rows")
    if not all(isinstance(x, str) for r in rows for x in r):
        raise fail("the entries of 'B' must be strings")
    if not (family is None or isinstance(family, str)) or not isinstance(params, dict):
        raise fail("'family' must be a string and 'params' an object")
    if inner.get("field") not in ("real", "complex", "rational"):
        raise fail(f"unknown field {inner.get('field')!r}")
    if not _is_int(inner.get("s")) or inner["s"] != s:
        raise fail(f"s = {inner.get('s')!r}, but the tree has s = {s}")
    _check_family(where, family, params, b, len(rows[0]), 1, s)


# shown (tracebacks, reprs, pickles) under the public name it is imported by
CodeFileError.__module__ = "gradcodes"
