"""Value identity of codes: the canonical byte stream behind ``code == other`` and ``hash(code)``.

Two codes are equal when they have the same type and the same construction: field, ``n``, ``k``, ``m``, ``s``,
``rtol``, name, family and ``params``, a bit-for-bit equal encoding matrix ``B`` (same dtype; Fractions by
numerator and denominator; GF(p) entries with their field), the names and types of their decoders, and every
further attribute a code type stores (a CodedReduce tree's branching factor, depth, inner code and allocation
lists; an expander's graph; straggle probabilities). Caches and the field builders (functions) are not part of
the identity. The attributes are written to a SHA-256 hash in a canonical, type-tagged encoding (floats by their
bits, so ``0.0`` and ``-0.0`` differ and equal NaNs agree), so equality is bitwise equality of those attributes up
to a SHA-256 collision, and ``hash(code)`` is consistent with it.
"""

from __future__ import annotations

import hashlib
import numbers
import struct
from fractions import Fraction
from typing import Any, TypeVar

import numpy as np

__all__ = ["identity_digest", "NOT_IDENTITY"]

#: attributes that are caches, functions or notes about how the code was chosen (``recommendation``, attached by
#: :func:`gradcodes.recommend` after construction), never part of a code's value
NOT_IDENTITY = frozenset({"_cache", "_memo", "_inner_cache", "_field_builder", "_cache_size", "decoders",
                          "recommendation"})


def b_digest(code: Any) -> bytes:
    """SHA-256 of the encoding matrix's value, whichever way it is stored.

    Exact matrices (Fractions, GF(p)) are hashed entry by entry. Float and complex matrices are hashed through
    their canonical compressed-row form (shape, dtype, row offsets, column indices and values of the non-zeros,
    plus the positions of any ``-0.0`` entries of a dense matrix), so a code stored sparse and one stored dense
    with bit-for-bit equal entries have the same digest, at a cost proportional to the non-zeros for sparse ones.
    """
    h = hashlib.sha256()
    parts = code.__dict__.get("_csr")
    if parts is None:
        B = code.__dict__["_B"]
        from .fields import is_galois_array

        if is_galois_array(B) or not isinstance(B, np.ndarray) or B.dtype.kind not in "fc":
            feed(h, B)
            return h.digest()
        from .sparse import csr_of_dense

        parts = csr_of_dense(B)
        negzero = np.flatnonzero((B == 0) & np.signbit(B.real if B.dtype.kind == "c" else B))
        if B.dtype.kind == "c":
            negzero = np.concatenate([negzero, -1 - np.flatnonzero((B == 0) & np.signbit(B.imag))])
    else:
        negzero = np.zeros(0, dtype=np.int64)
    indptr, indices, data = parts
    shape = (code.__dict__["_n"], code.__dict__["_k"] * code.__dict__["_m"])
    _put(h, b"csr", f"{data.dtype.str}{shape}".encode())
    for a in (indptr, indices, data, negzero):
        feed(h, np.ascontiguousarray(a, dtype=a.dtype if a is data else np.int64))
    return h.digest()


def _put(h: Any, tag: bytes, payload: bytes) -> None:
    h.update(tag)
    h.update(struct.pack("<Q", len(payload)))
    h.update(payload)


def _array(h: Any, a: np.ndarray) -> None:
    from .fields import is_galois_array

    if is_galois_array(a):
        _put(h, b"gf", str(getattr(type(a), "order", "")).encode())
        a = np.asarray(a).view(np.ndarray)
    if a.dtype == object:
        _put(h, b"ao", repr(a.shape).encode())
        for x in a.flat:
            feed(h, x)
        return
    _put(h, b"a", f"{a.dtype.str}{a.shape}".encode())
    h.update(np.ascontiguousarray(a).tobytes())


def feed(h: Any, value: Any) -> None:
    """Write ``value`` to the hash ``h`` in the canonical, type-tagged encoding (recursive)."""
    if value is None:
        _put(h, b"N", b"")
    elif isinstance(value, (bool, np.bool_)):
        _put(h, b"b", b"1" if value else b"0")
    elif isinstance(value, numbers.Integral):
        _put(h, b"i", str(int(value)).encode())
    elif isinstance(value, Fraction):
        _put(h, b"q", f"{value.numerator}/{value.denominator}".encode())
    elif isinstance(value, float):                         # Python floats and numpy.float64
        _put(h, b"f", struct.pack("<d", value))
    elif isinstance(value, complex):                       # Python complex and numpy.complex128
        _put(h, b"c", struct.pack("<dd", value.real, value.imag))
    elif isinstance(value, str):
        _put(h, b"s", value.encode())
    elif isinstance(value, bytes):
        _put(h, b"y", value)
    elif isinstance(value, np.ndarray):
        _array(h, value)
    elif isinstance(value, np.generic):
        _put(h, b"g", f"{value.dtype.str}".encode() + np.asarray(value).tobytes())
    elif isinstance(value, (list, tuple)):
        _put(h, b"l" if isinstance(value, list) else b"t", str(len(value)).encode())
        for x in value:
            feed(h, x)
    elif isinstance(value, dict):
        items = []
        for k, v in value.items():
            hk = hashlib.sha256()
            feed(hk, k)
            items.append((hk.digest(), k, v))
        _put(h, b"d", str(len(items)).encode())
        for _, k, v in sorted(items, key=lambda t: t[0]):
            feed(h, k)
            feed(h, v)
    elif isinstance(value, slice):
        _put(h, b"sl", b"")
        for x in (value.start, value.stop, value.step):
            feed(h, x)
    elif isinstance(value, tuple(CODE_TYPES)):
        _put(h, b"code", identity_digest(value))
    else:                                  # other objects (functions, decoders): their type only
        _put(h, b"o", f"{type(value).__module__}.{type(value).__qualname__}".encode())


#: the code types whose instances :func:`feed` encodes by their own digest (:class:`gradcodes._core.code_base.CodeBase`
#: adds itself when it is defined: the base class builds on this module, so this module does not import it)
CODE_TYPES: list[type] = []

_T = TypeVar("_T", bound=type)


def register_code_type(cls: _T) -> _T:
    """Make :func:`feed` encode instances of ``cls`` (and its subclasses) by :func:`identity_digest`; returns
    ``cls``."""
    if cls not in CODE_TYPES:
        CODE_TYPES.append(cls)
    return cls


def identity_digest(code: Any) -> bytes:
    """SHA-256 digest of a code's identity (its type and every attribute outside :data:`NOT_IDENTITY`).

    The digest of the read-only encoding matrix is computed once per code and kept in its memo.
    """
    h = hashlib.sha256()
    _put(h, b"type", f"{type(code).__module__}.{type(code).__qualname__}".encode())
    memo = code.__dict__.get("_memo")
    bd = memo.get("B digest") if memo is not None else None
    if bd is None:
        bd = b_digest(code)
        if memo is not None:
            memo["B digest"] = bd
    _put(h, b"B", bd)
    _put(h, b"decoders", repr(sorted((k, f"{type(d).__module__}.{type(d).__qualname__}")
                                     for k, d in code.decoders.items())).encode())
    for name in sorted(code.__dict__):
        if name in NOT_IDENTITY or name in ("_B", "_csr"):
            continue
        feed(h, name)
        feed(h, code.__dict__[name])
    return h.digest()
