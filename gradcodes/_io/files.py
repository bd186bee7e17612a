"""Saving codes to ``.npz`` files and loading them back, with their parameters.

A code file is untrusted input: :func:`load_code` states the trust model. In short, a file can give a matrix and the
parameters that describe it; it cannot make :func:`load_code` allocate or compute more than the bounds it was given
(``max_entries``, :data:`gradcodes.limits`), search for anything, loosen the acceptance tolerance the caller
allows, or replace its own matrix by another one. Whatever is wrong with a file raises :class:`CodeFileError`.

This module writes files and restores codes (the family rebuild, ``REBUILDERS``); ``checks`` reads a file's
entries and checks its parameters against its matrix.
"""

from __future__ import annotations

import json
import os
import warnings
from fractions import Fraction
from typing import Any, TypeVar, overload

import numpy as np

from .._base.errors import GradcodesTypeError
from .._base.validate import SizeLimitError, check_int, check_real, deprecated_alias, limits
from .._core.code import ApproximateCode, GradientCode, LinearCode
from .._core.fields import is_galois_array
from .._core.numerics import DEFAULT_RTOL
from .checks import CodeFileError, _check_params, _matrix, _read
from .sparse import same_sparse, sparse_arrays

__all__ = ["save_code", "load_code", "save", "load", "CodeFileError"]

_C = TypeVar("_C", bound=LinearCode)

#: The format :func:`save_code` writes. Format 1 (releases before the constructors became deterministic) recorded a
#: ``cyclic_repetition`` built with the then default ``refine=0`` without a ``refine`` parameter; format 2 adds the
#: matrix's ``shape`` and records parameters as the constructor's arguments at the time of writing.
_FORMAT = 2
#: Saved code types whose straggler model is the flat one of their base class: when the family cannot rebuild the
#: saved matrix they come back as that base class with the generic decoders. Any other type (a tree) is refused.
_FLAT_TYPES = {"GradientCode": "GradientCode", "YeAbbeCode": "GradientCode", "CyclicMDSCode": "GradientCode",
               "ApproximateCode": "ApproximateCode", "ExpanderCode": "ApproximateCode",
               "HeterogeneousCode": "ApproximateCode"}


def save_code(code: LinearCode, path: str | os.PathLike[str]) -> None:
    """Write ``code`` to the file ``path`` (an ``.npz`` archive, whatever its name): its matrix (exactly, for rational
    and GF(p) codes) and parameters.

    The file keeps the matrix bit for bit (float entries as IEEE 754 binary64, rational entries as integer
    numerators and denominators, GF(p) entries as integers; a code stored sparse as its compressed rows, so that
    the file is proportional to the non-zeros, docs/scale.md), its shape, the family's parameters (so that
    :func:`load_code` can restore the family decoders), the default decoder, the acceptance tolerance ``rtol``
    and, for approximate codes, the straggle probabilities. The entries are stored uncompressed. Decoders of custom
    codes (built directly from a matrix) are not stored: such codes come back with the generic decoders.

    Parameters
    ----------
    code : LinearCode
        Any gradcodes code.
    path : str or os.PathLike
        The file to write (replaced if it exists); written exactly there, whatever its suffix.

    Raises
    ------
    GradcodesTypeError
        ``code`` is not a gradcodes code.
    OSError
        The file cannot be written.

    Examples
    --------
    >>> import os, tempfile, gradcodes as gc
    >>> code = gc.fractional_repetition(6, 2)
    >>> path = os.path.join(tempfile.mkdtemp(), "fr.npz")
    >>> gc.save_code(code, path)
    >>> gc.load_code(path)
    GradientCode(name='fractional_repetition', n=6, s=2, k=6, m=1, field='real', load=3)
    """
    if not isinstance(code, LinearCode):
        raise GradcodesTypeError(f"save_code() takes a gradcodes code, got {type(code).__name__}")
    meta: dict[str, Any] = {
        "format": _FORMAT, "type": type(code).__name__, "name": code.name, "family": code.family,
        "params": code.params, "m": code.m, "field": code.field, "default_decoder": code.default_decoder,
        "s": getattr(code, "s", None), "shape": [code.n, code.k * code.m],
    }
    rtol = getattr(code, "rtol", None)
    if rtol is not None:
        meta["rtol"] = float(rtol)
    if isinstance(code, ApproximateCode) and code.straggle_probabilities is not None:
        meta["straggle_probabilities"] = [str(p) for p in code.straggle_probabilities]
    arrays: dict[str, Any] = {}
    if code.sparse:
        arrays.update(sparse_arrays(code))
    elif code.field == "rational":
        arrays["B_num"] = np.vectorize(lambda f: str(f.numerator), otypes=[str])(code.B)
        arrays["B_den"] = np.vectorize(lambda f: str(f.denominator), otypes=[str])(code.B)
    elif is_galois_array(code.B):
        arrays["B_gf"] = np.asarray(code.B.view(np.ndarray), dtype=np.int64)
        gf: Any = type(code.B)                    # a galois FieldArray class
        meta["p"] = gf.characteristic
    else:
        arrays["B"] = np.asarray(code.B)
    with open(os.fspath(path), "wb") as f:      # exactly the path given (np.savez of a name appends ".npz")
        np.savez(f, meta=np.array(json.dumps(meta)), **arrays)


@overload
def load_code(path: str | os.PathLike[str], *, max_entries: int | None = None, rtol: float | None = None,
              kind: None = None) -> LinearCode: ...


@overload
def load_code(path: str | os.PathLike[str], *, max_entries: int | None = None, rtol: float | None = None,
              kind: type[_C]) -> _C: ...


def load_code(path: str | os.PathLike[str], *, max_entries: int | None = None, rtol: float | None = None,
              kind: type[LinearCode] | None = None) -> LinearCode:
    r"""Read a code written by :func:`save_code`, treating the file as untrusted input.

    **Trust model.** The file supplies the matrix ``B`` and the parameters that describe it; the loaded code has
    exactly that ``B``, bit for bit. What a file cannot do:

    * *Cost more than its bounds.* Before any entry's data is read, its size is checked from the zip directory
      and the ``.npy`` header: at most ``max_entries`` matrix entries (default :data:`gradcodes.limits`), numbers
      of a rational matrix of at most 4300 digits, and compressed entries (which :func:`save_code` never writes) at most
      64 MiB of data in all, whatever their compression ratio; then exactly the announced bytes are streamed into
      one array. The parameters are checked against the matrix's shape (``n``, ``k``, ``m``, ``s``, a tree's
      ``n``, ``L``, ``P`` and inner code) before anything is built.
    * *Make the rebuild search.* Family decoders are restored by calling the family's constructor with the saved
      parameters; a file is rebuilt only from the choices it records (seeds, strides, graphs), never by a search
      (for example a ``grouped_random`` file must give its ``block_seeds``; otherwise :class:`CodeFileError`).
    * *Swap its matrix.* The rebuild's decoders are used only when the rebuilt ``B`` equals the saved ``B``
      bitwise (same dtype, same bytes; exactly for rational and GF(p) codes). Otherwise the saved ``B`` is kept
      with the generic decoders and a :class:`RuntimeWarning` (a tree code, whose straggler model needs its
      family, raises :class:`CodeFileError` instead). Decoders are attached to the matrix they were derived from,
      so that no proof or closed-form bound of the rebuild is claimed for a different matrix.
    * *Loosen the acceptance rule.* The file's ``rtol`` is used only if it is at most the caller's bound (the
      library default ``1e-8`` unless ``rtol=`` is given); a looser one is replaced by the bound, with a
      :class:`RuntimeWarning`.

    Files written by older releases load as they were saved: format 1 files of ``cyclic_repetition`` without
    ``refine`` in their parameters were built with ``refine=0`` and say so in ``code.params``.

    Parameters
    ----------
    path : str or os.PathLike
        The file.
    max_entries : int, optional
        Largest number of matrix entries accepted (default: ``gradcodes.limits.entries``, 10**8, for float
        matrices; ``gradcodes.limits.exact_entries``, 10**6, for rational and GF(p) ones). Pass a larger value to
        load a bigger code from a file you trust to be what it claims (it also allows compressed entries of up to
        16 bytes per entry).
    rtol : float in (0, 1), optional
        The loosest acceptance tolerance taken from the file: the code's ``rtol`` is ``min(file's rtol, rtol)``
        (default ``rtol``: the library default ``1e-8``, so that a file can only tighten it). To use another
        tolerance whatever the file says, set ``code.rtol`` after loading.
    kind : type, optional
        The code type the caller expects (:class:`GradientCode`, :class:`ApproximateCode`, a family's type): a
        file holding anything else raises :class:`CodeFileError`, and a type checker then knows the type of the
        result (``gc.load_code(path, kind=gc.GradientCode)`` is a ``GradientCode``).

    Returns
    -------
    LinearCode
        The saved code (an instance of ``kind`` when given).

    Raises
    ------
    CodeFileError
        (a :class:`ValueError`) for any file that is not a valid gradcodes code file, is over the bound, asks
        for a search, or does not hold a ``kind``; the message says what is wrong.
    FileNotFoundError
        If there is no file at ``path``.

    Examples
    --------
    >>> import os, tempfile, gradcodes as gc
    >>> path = os.path.join(tempfile.mkdtemp(), "fr.npz")
    >>> code = gc.fractional_repetition(6, 2)
    >>> code.rtol = 1e-4                        # looser than the default: the file cannot impose it
    >>> gc.save_code(code, path)
    >>> import warnings
    >>> with warnings.catch_warnings():
    ...     warnings.simplefilter("ignore")
    ...     gc.load_code(path).rtol
    1e-08
    >>> gc.load_code(path, rtol=1e-3).rtol           # the caller accepts up to 1e-3
    0.0001
    >>> gc.load_code(path, rtol=1e-3, kind=gc.GradientCode).s      # typed: a GradientCode
    2
    """
    where = os.fspath(path) if isinstance(path, (str, os.PathLike)) else None
    if where is None:
        raise GradcodesTypeError(f"path must be a str or os.PathLike, got {type(path).__name__}")
    if kind is not None and not (isinstance(kind, type) and issubclass(kind, LinearCode)):
        raise GradcodesTypeError(f"kind must be a code type (e.g. gradcodes.GradientCode) or None, got {kind!r}")
    if max_entries is not None:
        max_entries = check_int("max_entries", max_entries, 1)
    bound = DEFAULT_RTOL if rtol is None else check_real("rtol", rtol, 0, 1, open_lo=True, open_hi=True)
    meta, arrays = _read(where, max_entries)
    try:
        B = _matrix(where, meta, arrays)
        del arrays
        _check_params(where, meta, tuple(int(d) for d in B.shape))
        code = _restore(where, meta, B)
    except MemoryError as exc:                # never a traceback: the file asks for more than this machine has
        raise CodeFileError(f"{where!r}: not enough memory to load the saved code ({exc}); the file is larger "
                            f"than this machine can hold") from None
    except CodeFileError as exc:
        if str(exc).startswith(repr(where)):
            raise
        raise CodeFileError(f"{where!r}: {exc}") from None
    except (TypeError, ValueError, ArithmeticError, KeyError) as exc:
        raise CodeFileError(f"{where!r}: the saved code is not valid: {exc}") from None
    if hasattr(code, "rtol"):
        saved = meta.get("rtol", DEFAULT_RTOL)
        if saved > bound:
            warnings.warn(f"{where!r}: the file's rtol={saved:g} is looser than the {bound:g} accepted from a file; "
                          f"using rtol={bound:g} (pass rtol= to gradcodes.load_code to accept a looser one)",
                          RuntimeWarning, stacklevel=2)
        code.rtol = min(saved, bound)
    if meta["default_decoder"] in code.decoders:
        code.default_decoder = meta["default_decoder"]
    elif meta["default_decoder"] != code.default_decoder and not _warned_fallback(code):
        warnings.warn(f"{where!r}: the saved default decoder {meta['default_decoder']!r} could not be restored; "
                      f"using {code.default_decoder!r}", RuntimeWarning, stacklevel=2)
    if kind is not None and not isinstance(code, kind):
        raise CodeFileError(f"{where!r} holds a {type(code).__name__}, not a {kind.__name__} (kind=)")
    return code


def _warned_fallback(code: LinearCode) -> bool:
    """A family code back with the generic decoders only: :func:`rebuild_saved` has already said why."""
    return code.family in REBUILDERS and set(code.decoders) <= {"nullspace", "lstsq", "exact"}


# ---------------------------------------------------------------------------------------------- restoring


def _restore(where: str, meta: dict[str, Any], B: Any) -> LinearCode:
    rebuilt = rebuild_saved(meta.get("family"), meta["params"], B, p=meta.get("p"), where=where, stacklevel=4)
    if rebuilt is not None:
        return rebuilt
    base = _FLAT_TYPES.get(meta["type"])
    if base is None:
        # a code type with its own straggler model (e.g. a tree) must come back as itself, never as a plain
        # GradientCode that would claim any n - s responders suffice
        raise CodeFileError(f"{where!r}: cannot restore a {meta['type']} of family {meta.get('family')!r}: its "
                            f"constructor could not rebuild the saved matrix from the saved parameters")
    common = {"m": meta["m"], "name": meta["name"], "family": meta["family"], "params": meta["params"]}
    if base == "ApproximateCode":
        probs = meta.get("straggle_probabilities")
        return ApproximateCode(B, s=meta.get("s"), straggle_probabilities=None if probs is None else
                               [Fraction(p) if meta["field"] == "rational" else float(p) for p in probs],
                               **common)
    if meta.get("s") is None:
        raise CodeFileError(f"{where!r}: a {meta['type']} file must give s")
    return GradientCode(B, meta["s"], **common)


def rebuild_saved(family: str | None, params: dict[str, Any], B: Any, *, p: int | None = None,
                  exact_values: bool = False, where: str | None = None, stacklevel: int = 2) -> LinearCode | None:
    """The family's rebuild of a saved matrix ``B`` (for its decoders), or None.

    None without a warning when the family registers no rebuilder (its decoders are the generic ones); None with a
    :class:`RuntimeWarning` when the constructor refuses the parameters or builds another matrix. The rebuild is
    accepted only when its matrix is ``B`` bit for bit: same dtype and bytes (``exact_values=True``: the same
    values exactly, for a record that does not keep the dtype); exact equality for rational and GF(p) matrices.
    A rebuilder raises :class:`CodeFileError` for parameters that would make it search.
    """
    constructor = REBUILDERS.get(family or "")
    if constructor is None:
        return None
    file = "" if where is None else f"{where!r}: "
    cap = rebuild_cap(tuple(int(d) for d in np.shape(B)))
    try:
        with warnings.catch_warnings(), limits.raised(entries=min(limits.entries, cap),
                                                      exact_entries=min(limits.exact_entries, cap)):
            warnings.simplefilter("ignore")                      # construction warnings were shown at build time
            code = constructor(**params)
            if is_galois_array(B) and not code.exact and code._field_builder is not None:
                import galois

                code = code.in_field(galois.GF(int(p or 0)))
    except CodeFileError:
        raise
    except SizeLimitError as exc:
        raise CodeFileError(f"{file}invalid gradcodes parameters: the {family!r} rebuild asks for more than the "
                            f"saved {np.shape(B)[0]:,} x {np.shape(B)[1]:,} matrix allows ({exc}); a rebuild from a "
                            f"file may allocate at most {cap:,} entries, the square of the matrix's larger "
                            f"side") from None
    except (TypeError, ValueError, KeyError, ArithmeticError, RuntimeError) as exc:
        warnings.warn(f"{file}the {family!r} family could not rebuild the saved code ({exc}); loading the saved matrix "
                      f"with the generic decoders only", RuntimeWarning, stacklevel=stacklevel)
        return None
    from .._core.sparse import is_scipy_sparse

    if is_scipy_sparse(B):
        same = same_sparse(code, B)
    elif code.sparse:              # a dense file (or record) of a code the family now stores sparse
        same = _same_dense_as_sparse(code, B)
    else:
        same = _same_matrix(code.B, B, exact_values)
    if same:
        return code
    warnings.warn(f"{file}the saved matrix differs from the {family!r} construction with the saved parameters (edited, "
                  f"or built by another version or machine); loading the saved matrix with the generic decoders "
                  f"only", RuntimeWarning, stacklevel=stacklevel)
    return None


def rebuild_cap(shape: tuple[int, ...]) -> int:
    """Entries any one array of a rebuild from a file of an ``n x cols`` matrix may have: ``max(n, cols)^2``.

    A rebuild runs the family's constructor (and, for a product or a tree, its factors' or inner code's) under
    :data:`gradcodes.limits` lowered to this bound, so that whatever the file's parameters say, no constructor
    allocates a matrix larger than a square on the saved matrix's larger side: the work a file drives is bounded
    by the file's own matrix, before anything is allocated (each constructor checks its sizes first).
    """
    side = max(shape) if shape else 1
    return max(side * side, 1)


def _same_dense_as_sparse(code: LinearCode, saved: Any) -> bool:
    """A rebuilt code stored sparse against a saved dense float matrix: the same dtype, shape and non-zeros bit
    for bit, and no ``-0.0`` in the saved matrix (which the sparse form cannot hold)."""
    from .._core.sparse import csr_of_dense, to_scipy

    b = np.asarray(saved)
    if b.dtype.kind not in "fc" or b.shape != (code.n, code.k * code.m) or b.dtype != code._entry_dtype():
        return False
    if np.any((b == 0) & np.signbit(b.real if b.dtype.kind == "c" else b)):
        return False
    return same_sparse(code, to_scipy(csr_of_dense(b), b.shape))


def _same_matrix(rebuilt: Any, saved: Any, exact_values: bool = False) -> bool:
    """Bitwise equality (same dtype and bytes); exact equality of the values for exact fields or ``exact_values``."""
    if np.shape(rebuilt) != np.shape(saved) or is_galois_array(rebuilt) != is_galois_array(saved):
        return False
    if is_galois_array(saved):
        return type(rebuilt) is type(saved) and bool(np.array_equal(rebuilt.view(np.ndarray),
                                                                    saved.view(np.ndarray)))
    r, b = np.asarray(rebuilt), np.asarray(saved)
    if r.dtype == object or b.dtype == object or exact_values:
        if (r.dtype == object) != (b.dtype == object):
            return False
        return bool(np.all(r == b))
    return r.dtype == b.dtype and np.ascontiguousarray(r).tobytes() == np.ascontiguousarray(b).tobytes()


#: family name -> constructor called with the saved ``params`` to restore a code's family decoders (used only if
#: it rebuilds the saved matrix bitwise, see :func:`rebuild_saved`). A family whose decoders are all generic need
#: not register (the generic ``GradientCode`` is then exactly right). A rebuild must not search: a family whose
#: constructor would search when a recorded choice is missing registers a hook raising :class:`CodeFileError`.
REBUILDERS: dict[str, Any] = {}


#: Former names (DeprecationWarning): ``load`` read as the computation load ``code.load`` of everything else.
save = deprecated_alias(save_code, "save", "save_code")
load = deprecated_alias(load_code, "load", "load_code")

