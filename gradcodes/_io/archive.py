"""Reading a code file's ``.npz`` (zip) archive as untrusted input, with every entry's size bounded before it is read.

An ``.npz`` file is a zip archive of ``.npy`` entries. What an entry costs to read is known from two headers before
any of its data is decompressed: the zip directory gives the entry's compression and its uncompressed size, the
``.npy`` header its dtype and shape. :class:`CodeArchive` checks both against bounds, lets the caller check the
shape against the code's declared sizes, and only then streams the data, in chunks, into one preallocated array,
reading never more than the header promised. The bounds:

* entries :func:`gradcodes.save_code` writes are stored uncompressed, so their data occupies the file itself: the sum
  of the entries' stored sizes may not exceed the file's size on disk, and reading them costs no more memory than
  the file has bytes;
* a compressed entry (deflate, bzip2, lzma: never written by :func:`gradcodes.save_code`) could expand about a
  thousandfold (a "zip bomb"), so all compressed entries together may hold at most :data:`MAX_INFLATED` bytes
  (64 MiB) of data, unless the caller passed ``max_entries`` (then 16 bytes per entry allowed);
* a number of a rational matrix has at most :data:`MAX_DIGITS` characters (Python's own bound on the length of an
  integer literal); the text of the parameters at most ``MAX_META_CHARS`` characters.
"""

from __future__ import annotations

import math
import os
import zipfile
from collections.abc import Callable
from typing import Any

import numpy as np

__all__ = ["CodeArchive", "MAX_INFLATED", "MAX_DIGITS", "MAX_META_CHARS"]

#: Bytes of data all compressed entries of one file may decompress to (unless ``max_entries`` is given).
MAX_INFLATED = 2**26
#: Characters of one numerator or denominator of a rational matrix (Python's default ``int`` literal bound).
MAX_DIGITS = 4300
#: The JSON parameters may not be longer than this (characters).
MAX_META_CHARS = 10**7
#: Bytes read per chunk: the only buffer besides the result.
_CHUNK = 2**22


class CodeArchive:
    """An open code file: its member names checked, its entries read one at a time under bounds.

    ``error`` builds the exception raised for a bad file (:class:`gradcodes.CodeFileError`); ``kinds`` maps each
    allowed entry name to the dtype kinds it may have. Use as a context manager.
    """

    def __init__(self, where: str, kinds: dict[str, str], error: Callable[[str], Exception],
                 max_entries: int | None) -> None:
        self.where, self.kinds, self.error, self.max_entries = where, kinds, error, max_entries
        bad = f"{where!r} is not a gradcodes code file"
        try:
            self.zf = zipfile.ZipFile(where)
        except FileNotFoundError:
            raise
        except (zipfile.BadZipFile, zipfile.LargeZipFile, OSError, EOFError, ValueError) as exc:
            raise error(f"{bad}: not a readable .npz (zip) archive ({type(exc).__name__}: {exc})") from None
        try:
            self._check_directory(bad)
        except BaseException:
            self.zf.close()
            raise

    def _check_directory(self, bad: str) -> None:
        infos = self.zf.infolist()
        names = [i.filename for i in infos]
        if len(names) > len(self.kinds) or len(set(names)) != len(names):
            raise self.error(f"{bad}: it has {len(names)} entries; a code file has at most {len(self.kinds)} "
                             f"({', '.join(self.kinds)})")
        self.members: dict[str, zipfile.ZipInfo] = {}
        for info in infos:
            key = info.filename[:-4] if info.filename.endswith(".npy") else info.filename
            if key not in self.kinds:
                raise self.error(f"{bad}: unexpected entry {info.filename!r} (a code file holds "
                                 f"{', '.join(self.kinds)})")
            self.members[key] = info
        stored = sum(i.compress_size for i in infos if i.compress_type == zipfile.ZIP_STORED)
        if stored > os.path.getsize(self.where):
            raise self.error(f"{bad}: its directory claims {stored:,} stored bytes in a file of "
                             f"{os.path.getsize(self.where):,} bytes (truncated or forged)")
        inflated = sum(i.file_size for i in infos if i.compress_type != zipfile.ZIP_STORED)
        cap = self.inflate_cap()
        if inflated > cap:
            raise self.error(f"{bad}: its compressed entries expand to {inflated:,} bytes, more than the "
                             f"{cap:,} bytes accepted from compressed entries (gradcodes.save_code writes uncompressed "
                             f"files; pass max_entries to gradcodes.load_code to accept a larger compressed file)")

    def inflate_cap(self) -> int:
        """Bytes all compressed entries together may decompress to."""
        return MAX_INFLATED if self.max_entries is None else max(MAX_INFLATED, 16 * self.max_entries)

    def __enter__(self) -> CodeArchive:
        return self

    def __exit__(self, *exc: object) -> None:
        self.zf.close()

    def __contains__(self, key: str) -> bool:
        return key in self.members

    def read(self, key: str, check: Callable[[tuple[int, ...], np.dtype[Any]], None] | None = None) -> np.ndarray:
        """Entry ``key``: its ``.npy`` header is checked (dtype kind, no objects; ``check(shape, dtype)`` may
        raise), then exactly the data the header announces is streamed into a new array."""
        info = self.members[key]
        fmt = np.lib.format
        with self.zf.open(info) as fp:
            version = fmt.read_magic(fp)
            if version == (1, 0):
                shape: tuple[int, ...]
                shape, fortran, dtype = fmt.read_array_header_1_0(fp)
            elif version == (2, 0):
                shape, fortran, dtype = fmt.read_array_header_2_0(fp)
            else:
                raise self.error(f"{self.where!r}: entry {key!r} has an unsupported .npy version {version}")
            if dtype.hasobject or dtype.kind not in self.kinds[key]:
                what = "Python objects (a pickle, never loaded)" if dtype.hasobject else f"dtype {dtype}"
                raise self.error(f"{self.where!r}: entry {key!r} holds {what}; a code file stores it as "
                                 f"{_kinds(self.kinds[key])}")
            dims = tuple(int(d) for d in shape)
            if check is not None:
                check(dims, dtype)
            size = math.prod(dims)
            expected = size * dtype.itemsize
            if info.file_size < expected:
                raise self.error(f"{self.where!r}: entry {key!r} is truncated ({info.file_size:,} bytes for "
                                 f"{expected:,} bytes of data)")
            arr = np.empty(size, dtype=dtype)
            buf = arr.view(np.uint8).reshape(-1)
            done = 0
            while done < expected:                          # never more than the header announced
                chunk = fp.read(min(_CHUNK, expected - done))
                if not chunk:
                    raise self.error(f"{self.where!r}: entry {key!r} is truncated")
                buf[done:done + len(chunk)] = np.frombuffer(chunk, dtype=np.uint8)
                done += len(chunk)
            del buf
        return arr.reshape(dims, order="F" if fortran else "C")


def _kinds(kinds: str) -> str:
    names = {"U": "unicode text", "b": "bool", "i": "int", "u": "unsigned int", "f": "float", "c": "complex"}
    return " or ".join(names[k] for k in kinds)
