"""How a code is laid out on MPI ranks: who computes what, who receives from whom, and how messages combine.

* **Flat (master--worker)**, any :class:`~gradcodes.LinearCode` with ``n`` workers: rank 0 is the master, rank
  ``i + 1`` is worker ``i`` and sends ``y_i = sum_{j,u} B[i, j m + u] g_j^{(u)}`` (length ``ceil(p/m)``; Tandon
  et al. 2017, Section 2; Ye & Abbe 2018, Section 2 for ``m > 1``). The master combines the responders ``F`` with
  the code's decoding matrix ``A_F`` (``m x n``): block ``u`` of the gradient is ``sum_{i in F} A_F[u, i] y_i``.
* **Tree (CodedReduce**, Reisizadeh et al., Section 3), a :class:`~gradcodes.CodedReduceCode` on the
  ``(n, L)``-regular tree: rank 0 is the root, rank ``v + 1`` is worker ``v`` (breadth-first order), so the
  parent of rank ``r >= 1`` is rank ``(r - 1) // n`` and the children of rank ``r`` are ranks
  ``r n + 1 .. r n + n``. Every worker sends its own message plus the inner-code decode of its first ``n - s``
  children; the root decodes its children.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from .. import ApproximateCode, CodedReduceCode, LinearCode
from .._decoders import Decoder
from .._typing import ArrayLike, DTypeLike

__all__ = ["Layout", "layout_for", "WorkerEncoder", "Combiner"]


def _float(M: Any) -> np.ndarray:
    """A decoding or encoding matrix as float64 (Fractions are rounded once)."""
    arr = np.asarray(M)
    if arr.dtype == object:
        return np.vectorize(float, otypes=[np.float64])(arr)
    if arr.dtype.kind == "c":
        raise TypeError("complex codes are not supported by the MPI runtime (gradients are real)")
    return arr.astype(np.float64)


@dataclass(frozen=True)
class Layout:
    """The rank layout of a code.

    Attributes
    ----------
    kind : str
        ``"flat"`` or ``"tree"``.
    size : int
        Ranks needed (workers + 1).
    workers : int
        Number of workers.
    branching : int
        Children per parent (``n`` workers for flat, the tree's ``n`` for CodedReduce).
    """

    kind: str
    size: int
    workers: int
    branching: int

    def parent(self, rank: int) -> int:
        """The rank a worker sends its messages to."""
        return 0 if self.kind == "flat" else (rank - 1) // self.branching

    def children(self, rank: int) -> list[int]:
        """The ranks a node receives from (empty for a leaf)."""
        if self.kind == "flat":
            return list(range(1, self.size)) if rank == 0 else []
        lo = rank * self.branching + 1
        return list(range(lo, lo + self.branching)) if lo < self.size else []


def layout_for(code: LinearCode) -> Layout:
    """The :class:`Layout` of a code: a tree for CodedReduce, master--worker for every other code."""
    if isinstance(code, CodedReduceCode):
        return Layout("tree", code.N + 1, code.N, code.branching)
    if not isinstance(code, LinearCode):
        raise TypeError(f"code must be a gradcodes code (LinearCode), got {type(code).__name__}")
    return Layout("flat", code.n + 1, code.n, code.n)


class WorkerEncoder:
    """Worker ``i``'s own message from its own partial gradients only: ``y_i = sum_{j in S_i, u} B[i, j m + u]
    g_j^{(u)}`` over the partitions ``S_i`` it stores, written into a preallocated buffer by
    :meth:`gradcodes.LinearCode.encode_worker` (cost proportional to the worker's load, no gradient-sized
    temporary).

    Parameters
    ----------
    code : LinearCode
    worker : int
    p : int
        Gradient length.
    dtype : numpy dtype
        The messages' dtype (float32 stays float32).
    """

    def __init__(self, code: LinearCode, worker: int, p: int, dtype: DTypeLike) -> None:
        if code.field.startswith("GF("):
            raise TypeError(f"a code over {code.field} cannot run on real gradients")
        if code.field == "complex":
            raise TypeError("complex codes are not supported by the MPI runtime (gradients are real)")
        self.code = code
        self.worker = int(worker)
        self.m = code.m
        self.p = int(p)
        self.q = -(-self.p // self.m)
        self.dtype = np.dtype(dtype)
        self.partitions = [int(j) for j in code.supports[worker]]
        self._parts: list[Any] = [None] * len(self.partitions)

    def encode(self, params: np.ndarray, partial_gradient: Callable[[np.ndarray, int], ArrayLike],
               out: np.ndarray) -> None:
        """Write the message for ``params`` into ``out`` (length ``q``).

        ``partial_gradient(params, j)`` is called once per stored partition; each result must stay valid until
        the message is built (return a new array, or one buffer per partition)."""
        p = self.p
        for a, j in enumerate(self.partitions):
            g = partial_gradient(params, j)
            if not isinstance(g, np.ndarray) or g.shape != (p,):
                raise ValueError(f"partial_gradient(params, {j}) must return a flat numpy array of length p={p}, "
                                 f"got {type(g).__name__} {getattr(g, 'shape', '')}")
            if g.dtype != self.dtype:
                raise TypeError(f"partial_gradient(params, {j}) returned dtype {g.dtype}; the run uses "
                                f"{self.dtype} (the parameters' dtype)")
            self._parts[a] = g
        self.code.encode_worker(self.worker, self._parts, length=p, out=out)
        for a in range(len(self._parts)):
            self._parts[a] = None


class Combiner:
    """A parent's linear combination of its children's messages: ``out[u] (+)= sum_{i in F} A_F[u, i] y_i``.

    ``weights(F, dtype)`` gives the ``m x K`` matrix for the rows ``F`` that arrived (cached per set and dtype,
    least recently used out); for a GradientCode the decoding matrix is validated by the code's acceptance rule in
    the messages' dtype (``DecodingError`` when the set cannot decode to the tolerance of that dtype, exactly as
    :meth:`gradcodes.LinearCode.decode` would refuse it), for an ApproximateCode it comes from the chosen (optimal
    or fixed) decoder.

    Parameters
    ----------
    code : LinearCode
        The code decoded at this parent (the whole code for flat layouts, the inner code for tree parents).
    decoder : str or Decoder, optional
        Decoder name for :meth:`gradcodes.LinearCode.decoding_matrix`.
    """

    def __init__(self, code: LinearCode, decoder: str | Decoder | None = None, cache_size: int = 256) -> None:
        self.code = code
        self.decoder = decoder
        self.m = code.m
        self._cache: OrderedDict[tuple[tuple[int, ...], str], np.ndarray] = OrderedDict()
        self._size = cache_size

    def weights(self, rows: list[int], dtype: DTypeLike = np.float64) -> np.ndarray:
        rows_key = tuple(sorted(rows))
        dt = np.dtype(dtype)
        key = (rows_key, dt.str)
        W = self._cache.get(key)
        if W is None:
            if not rows_key:
                W = np.zeros((self.m, self.code.n))
            else:
                W = _float(self.code.decoding_matrix(list(rows_key), decoder=self.decoder, dtype=dt))
            W.flags.writeable = False
            self._cache[key] = W
            while len(self._cache) > self._size:
                self._cache.popitem(last=False)
        else:
            self._cache.move_to_end(key)
        return W

    def error_estimate(self, rows: list[int], dtype: DTypeLike) -> float:
        """The code's predicted relative error of this decode (:meth:`gradcodes.LinearCode.error_estimate`)."""
        if not rows:
            return float("nan")
        if isinstance(self.code, ApproximateCode):
            return float(self.code.approximation_error(sorted(rows), decoder=self.decoder))
        return float(self.code.error_estimate(sorted(rows), decoder=self.decoder, dtype=dtype))

    def combine(self, rows: list[int], buf: np.ndarray, out: np.ndarray, tmp: np.ndarray,
                accumulate: bool = False) -> None:
        """``out`` (length ``m q``) = [``out`` +] the combination of ``buf[rows]`` (each of length ``q``)."""
        W = self.weights(rows, buf.dtype)
        q = buf.shape[1]
        if not accumulate:
            out.fill(0)
        for u in range(self.m):
            seg = out[u * q:(u + 1) * q]
            for i in rows:
                c = W[u, i]
                if c == 0.0:
                    continue
                if c == 1.0:
                    np.add(seg, buf[i], out=seg)
                else:
                    np.multiply(buf[i], c, out=tmp, casting="unsafe")
                    np.add(seg, tmp, out=seg)
