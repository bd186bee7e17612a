"""How a code is laid out on ranks (any transport): who computes what, who receives from whom, how messages combine.

* **Flat (master--worker)**, any :class:`~gradcodes.LinearCode` with ``n`` workers: rank 0 is the master, rank
  ``i + 1`` is worker ``i`` and sends ``y_i = sum_{j,u} B[i, j m + u] g_j^{(u)}`` (length ``ceil(length/m)``; Tandon
  et al. 2017, Section 2; Ye & Abbe 2018, Section 2 for ``m > 1``). The master combines the responders ``F`` with
  the code's decoding matrix ``A_F`` (``m x n``): block ``u`` of the gradient is ``sum_{i in F} A_F[u, i] y_i``.
* **Tree (CodedReduce**, Reisizadeh et al., Section 3), a :class:`~gradcodes.CodedReduceCode` on the
  ``(b, L)``-regular tree (``b = branching``): rank 0 is the root, rank ``v + 1`` is worker ``v`` (breadth-first
  order), so the parent of rank ``r >= 1`` is rank ``(r - 1) // b`` and the children of rank ``r`` are ranks
  ``r b + 1 .. r b + b``. Every worker sends its own message plus the inner-code decode of its first ``b - s``
  children; the root decodes its children.

**Tree message format** (MPI and torch runtimes). A tree parent's message to its own parent is its payload (its
own message plus the decode of its children; ``ceil(length/m)`` entries, after the iteration entry on torch)
followed by a *tail* of :meth:`Layout.tail` entries in the messages' dtype, one per rank below it in
:meth:`Layout.preorder` order: ``1.0`` when that worker's message is part of the sum sent up (it is in its parent's
decoding set, and so is every ancestor up to the sender), ``0.0`` otherwise. Child ``i``'s block of the tail is its
own flag followed by its own tail, so a parent builds its tail with a few slice copies; a leaf sends no tail. The
master reads the tails of the children it used and rebuilds the pattern it decoded for :class:`TreeCheck` (the
whole tree's acceptance rule): fixed sizes, preallocated buffers, no pickling.
"""

from __future__ import annotations

import math
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from .. import ApproximateCode, CodedReduceCode, DecodingError, LinearCode
from .._base.aliases import ArrayLike, DTypeLike
from .._base.errors import GradcodesTypeError, GradcodesValueError
from .._core.apply import combine_rows
from .._core.decoders import Decoder
from .._core.numerics import real_error_bound, tolerance_for
from .engine import finite

__all__ = ["Layout", "layout_for", "WorkerEncoder", "Combiner", "UnitTracker", "TreeCheck", "write_tail"]



def _float(M: Any) -> np.ndarray:
    """A decoding or encoding matrix as float64 (Fractions are rounded once)."""
    arr = np.asarray(M)
    if arr.dtype == object:
        return np.vectorize(float, otypes=[np.float64])(arr)
    if arr.dtype.kind == "c":
        raise GradcodesTypeError("complex codes are not supported by the MPI runtime (gradients are real)")
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

    Examples
    --------
    >>> import gradcodes as gc
    >>> from gradcodes.mpi import layout_for
    >>> layout = layout_for(gc.coded_reduce(2, 2, 1))
    >>> layout.kind, layout.size, layout.children(0)
    ('tree', 7, [1, 2])
    """

    kind: str
    size: int
    workers: int
    branching: int

    def parent(self, rank: int) -> int:
        """The rank a worker sends its messages to.

        Parameters
        ----------
        rank : int
            A worker's rank, ``1 <= rank <= workers``.

        Returns
        -------
        int
            0 (the master) on a flat layout, the tree parent's rank on a tree.

        Examples
        --------
        >>> import gradcodes as gc
        >>> from gradcodes.mpi import layout_for
        >>> tree = layout_for(gc.coded_reduce(2, 2, 1))          # master 0; ranks 1, 2; leaves 3..6
        >>> [tree.parent(r) for r in range(1, 7)]
        [0, 0, 1, 1, 2, 2]
        """
        return 0 if self.kind == "flat" else (rank - 1) // self.branching

    def children(self, rank: int) -> list[int]:
        """The ranks a node receives from (empty for a leaf).

        Parameters
        ----------
        rank : int
            A rank (0: the master).

        Returns
        -------
        list of int
            Its children's ranks, in order.

        Examples
        --------
        >>> import gradcodes as gc
        >>> from gradcodes.mpi import layout_for
        >>> tree = layout_for(gc.coded_reduce(2, 2, 1))          # master 0; ranks 1, 2; leaves 3..6
        >>> tree.children(0), tree.children(1), tree.children(3)
        ([1, 2], [3, 4], [])"""
        if self.kind == "flat":
            return list(range(1, self.size)) if rank == 0 else []
        lo = rank * self.branching + 1
        return list(range(lo, lo + self.branching)) if lo < self.size else []

    def preorder(self, rank: int) -> list[int]:
        """The ranks below ``rank`` in pre-order (each child, then the ranks below it, children in order); empty
        for a leaf and for a flat layout's workers.

        A tree parent's message ends with one flag per rank of this list (the *tail*, see the module's
        docstring): 1 where that worker's message went into the sum, 0 elsewhere.

        Parameters
        ----------
        rank : int
            A rank (0: the master).

        Returns
        -------
        list of int
            The ranks of its subtree, itself excluded.

        Examples
        --------
        >>> import gradcodes as gc
        >>> from gradcodes.mpi import layout_for
        >>> tree = layout_for(gc.coded_reduce(2, 2, 1))          # master 0; ranks 1, 2; leaves 3..6
        >>> tree.preorder(0), tree.preorder(1)
        ([1, 3, 4, 2, 5, 6], [3, 4])"""
        out: list[int] = []
        for c in self.children(rank) if self.kind == "tree" else []:
            out.append(c)
            out.extend(self.preorder(c))
        return out

    def tail(self, rank: int) -> int:
        """Entries after the payload of the messages ``rank`` sends (its *tail*, see the module's docstring): the
        number of ranks below it on a tree (0 for leaves, the master and flat layouts).

        Parameters
        ----------
        rank : int
            A rank.

        Returns
        -------
        int
            ``len(preorder(rank))`` for a tree's worker, else 0.

        Examples
        --------
        >>> import gradcodes as gc
        >>> from gradcodes.mpi import layout_for
        >>> tree = layout_for(gc.coded_reduce(2, 2, 1))          # master 0; ranks 1, 2; leaves 3..6
        >>> tree.tail(1), tree.tail(3)
        (2, 0)"""
        if self.kind != "tree" or rank == 0:
            return 0
        n, below, width = self.branching, 0, 1
        lo = rank
        while True:
            lo = lo * n + 1                              # the first rank of the next level below
            if lo >= self.size:
                return below
            width *= n
            below += width


def layout_for(code: LinearCode) -> Layout:
    """The :class:`Layout` of a code: a tree for CodedReduce, master--worker for every other code.

    Parameters
    ----------
    code : LinearCode
        The code the job runs.

    Returns
    -------
    Layout
        Its kind (``"flat"`` or ``"tree"``), the ranks the job needs (``size``, the master included) and the tree's
        parents and children.

    Raises
    ------
    GradcodesTypeError
        If ``code`` is not a gradcodes code, or is a :class:`~gradcodes.PartialStragglerCode` (a message per chunk:
        :class:`~gradcodes.mpi.PartialMaster`).

    Examples
    --------
    >>> import gradcodes as gc
    >>> from gradcodes.mpi import layout_for
    >>> layout_for(gc.cyclic_repetition(6, 2, rng=0))        # mpiexec -n 7
    Layout(kind='flat', size=7, workers=6, branching=6)
    >>> layout_for(gc.coded_reduce(2, 2, 1))
    Layout(kind='tree', size=7, workers=6, branching=2)
    """
    if isinstance(code, CodedReduceCode):
        return Layout("tree", code.N + 1, code.N, code.branching)
    if not isinstance(code, LinearCode):
        raise GradcodesTypeError(f"code must be a gradcodes code (LinearCode), got {type(code).__name__}")
    from .._families.partial_stragglers import PartialStragglerCode

    if isinstance(code, PartialStragglerCode):      # rows are messages, not workers
        raise GradcodesTypeError("code: a PartialStragglerCode sends a message per chunk; run it with "
                                 "gradcodes.mpi.PartialMaster and PartialWorker")
    return Layout("flat", code.n + 1, code.n, code.n)


class WorkerEncoder:
    """Worker ``i``'s own message from its own partial gradients only: ``y_i = sum_{j in S_i, u} B[i, j m + u]
    g_j^{(u)}`` over the partitions ``S_i`` it stores, written into a preallocated buffer (cost proportional to the
    worker's load, no gradient-sized temporary).

    Everything that does not change between iterations is done once here: the arguments are checked, the
    coefficients ``B[i, j m + u]`` are cast to the messages' dtype and their zeros dropped, and the sequence of
    row operations is fixed. :meth:`encode` then only calls ``partial_gradient`` and runs that sequence: for
    ``m = 1`` one pass per stored partition (a copy, add or subtract for coefficients ``+-1``, one BLAS ``axpy``
    otherwise), the same sums as
    :meth:`gradcodes.LinearCode.encode_worker` without its per-call validation.

    Parameters
    ----------
    code : LinearCode
    worker : int
    p : int
        Gradient length.
    dtype : numpy dtype
        The messages' dtype (float32 stays float32).

    Raises
    ------
    GradcodesValueError
        If ``worker`` is not in ``[0, n)`` or ``p < 1``.
    GradcodesTypeError
        If the code is over GF(p) or the complex numbers, or ``dtype`` is not a float dtype.

    Examples
    --------
    >>> import numpy as np, gradcodes as gc
    >>> from gradcodes.mpi import WorkerEncoder
    >>> code = gc.cyclic_repetition(4, 1, rng=0)
    >>> enc = WorkerEncoder(code, 2, 3, np.float64)             # worker 2, gradients of length 3
    >>> enc.partitions, enc.q
    ([2, 3], 3)
    >>> G = np.arange(12.0).reshape(4, 3)                       # the four partial gradients
    >>> out = np.empty(enc.q)
    >>> enc.encode(None, lambda params, j: G[j], out)           # calls the callback for partitions 2 and 3 only
    >>> bool(np.allclose(out, code.encode(G)[2]))
    True
    """

    def __init__(self, code: LinearCode, worker: int, p: int, dtype: DTypeLike) -> None:
        if code.field.startswith("GF("):
            raise GradcodesTypeError(f"a code over {code.field} cannot run on real gradients")
        if code.field == "complex":
            raise GradcodesTypeError("complex codes are not supported by the MPI runtime (gradients are real)")
        self.code = code
        self.worker = int(worker)
        if not 0 <= self.worker < code.n:
            raise GradcodesValueError(f"worker must be in [0, n - 1] = [0, {code.n - 1}], got {worker}")
        self.m = code.m
        self.p = int(p)
        if self.p < 1:
            raise GradcodesValueError(f"p must be an integer >= 1, got {p}")
        self.q = -(-self.p // self.m)
        self.dtype = np.dtype(dtype)
        if self.dtype.kind != "f":
            raise GradcodesTypeError(f"dtype must be a float dtype, got {self.dtype}")
        self.partitions = [int(j) for j in code.supports[worker]]
        self._parts: list[Any] = [None] * len(self.partitions)
        k, m = code.k, self.m
        if code.sparse and code._entry_dtype().kind == "f":   # the worker's row from the non-zeros: no dense B
            indptr, indices, data = code._csr_parts()
            lo, hi = int(indptr[self.worker]), int(indptr[self.worker + 1])
            full = np.zeros(k * m, dtype=self.dtype)
            full[indices[lo:hi]] = data[lo:hi].astype(self.dtype)
            row = full.reshape(k, m)
        else:
            row = code.float_B(self.dtype)[self.worker].reshape(k, m)
        #: ``weights[j, u] = B[i, j m + u]`` in the messages' dtype (shape ``(k,)`` when ``m = 1``), read-only: the
        #: argument of a ``coded_gradient(params, weights)`` callback
        self.weights = np.ascontiguousarray(row[:, 0] if m == 1 else row)
        self.weights.flags.writeable = False
        coef = row[self.partitions]                                  # (load, m)
        # (u, positions a of the partials with a non-zero coefficient, those coefficients, block length)
        self._plan = []
        for u in range(m):
            L = max(0, min(self.q, self.p - u * self.q))
            nz = np.flatnonzero(coef[:, u] != 0)
            self._plan.append((u, [int(a) for a in nz], [coef[a, u].item() for a in nz], L))
        self._shape = (self.p,)

    def check_part(self, g: Any, j: int) -> np.ndarray:
        """A partial gradient checked against the run's length and dtype (clear errors).

        Parameters
        ----------
        g : object
            What ``partial_gradient(params, j)`` returned.
        j : int
            The partition (named in the error message).

        Returns
        -------
        ndarray, shape (p,)
            ``g`` itself.

        Raises
        ------
        GradcodesValueError
            If ``g`` is not a numpy array of shape ``(p,)``.
        GradcodesTypeError
            If its dtype is not the run's.

        Examples
        --------
        >>> import numpy as np, gradcodes as gc
        >>> from gradcodes.mpi import WorkerEncoder
        >>> enc = WorkerEncoder(gc.cyclic_repetition(4, 1, rng=0), 2, 3, np.float64)
        >>> enc.check_part(np.zeros(3), 2)
        array([0., 0., 0.])
        >>> enc.check_part(np.zeros(3, dtype=np.float32), 2)
        Traceback (most recent call last):
        ...
        gradcodes.GradcodesTypeError: partial_gradient(params, 2) returned dtype float32; the run uses float64 ...
        """
        p = self.p
        if not isinstance(g, np.ndarray) or g.shape != (p,):
            raise GradcodesValueError(f"partial_gradient(params, {j}) must return a flat numpy array of length {p}, "
                             f"got {type(g).__name__} {getattr(g, 'shape', '')}")
        if g.dtype != self.dtype:
            raise GradcodesTypeError(f"partial_gradient(params, {j}) returned dtype {g.dtype}; the run uses "
                            f"{self.dtype} (the parameters' dtype)")
        return g

    def check_message(self, y: Any) -> np.ndarray:
        """A ``coded_gradient`` result checked against the message length and dtype.

        Parameters
        ----------
        y : object
            What ``coded_gradient(params, weights)`` returned.

        Returns
        -------
        ndarray, shape (q,)
            ``y`` itself.

        Raises
        ------
        GradcodesValueError
            If ``y`` is not a numpy array of shape ``(q,)`` (``q = ceil(p / m)``) and the run's dtype.

        Examples
        --------
        >>> import numpy as np, gradcodes as gc
        >>> from gradcodes.mpi import WorkerEncoder
        >>> enc = WorkerEncoder(gc.cyclic_repetition(4, 1, rng=0), 2, 3, np.float64)
        >>> enc.check_message(np.ones(3))
        array([1., 1., 1.])
        >>> enc.check_message(np.ones(2))
        Traceback (most recent call last):
        ...
        gradcodes.GradcodesValueError: coded_gradient(params, weights) must return a flat numpy array of length ...
        """
        if not isinstance(y, np.ndarray) or y.shape != (self.q,) or y.dtype != self.dtype:
            raise GradcodesValueError(f"coded_gradient(params, weights) must return a flat numpy array of length "
                             f"ceil(length/m)={self.q} and dtype {self.dtype}, got {type(y).__name__} "
                             f"{getattr(y, 'shape', '')} {getattr(y, 'dtype', '')}")
        return y

    def encode(self, params: np.ndarray, partial_gradient: Callable[[np.ndarray, int], ArrayLike],
               out: np.ndarray) -> None:
        """Write the message for ``params`` into ``out`` (length ``q``, C-contiguous, the run's dtype).

        ``partial_gradient(params, j)`` is called once per stored partition; each result must stay valid until
        the message is built (return a new array, or one buffer per partition). Its shape and dtype are compared
        with the run's (two attribute reads); nothing else is validated per call.

        Parameters
        ----------
        params : ndarray
            The parameters, passed to ``partial_gradient`` as they are.
        partial_gradient : callable
            ``partial_gradient(params, j)``: the gradient of partition ``j``, a numpy array of shape ``(p,)`` in
            the run's dtype.
        out : ndarray, shape (q,)
            The message buffer (C-contiguous, the run's dtype), overwritten.

        Raises
        ------
        GradcodesValueError, GradcodesTypeError
            If a partial gradient has the wrong shape or dtype (:meth:`check_part`).

        Examples
        --------
        >>> import numpy as np, gradcodes as gc
        >>> from gradcodes.mpi import WorkerEncoder
        >>> code = gc.fractional_repetition(4, 1)                  # worker 0 stores partitions 0 and 1
        >>> enc = WorkerEncoder(code, 0, 2, np.float64)
        >>> out = np.empty(enc.q)
        >>> enc.encode(np.zeros(2), lambda w, j: np.full(2, float(j + 1)), out)
        >>> out.tolist()                                            # 1 + 2 in each coordinate
        [3.0, 3.0]
        """
        parts = self._parts
        shape, dt = self._shape, self.dtype
        for a, j in enumerate(self.partitions):
            g = partial_gradient(params, j)
            if not isinstance(g, np.ndarray) or g.shape != shape or g.dtype != dt:
                self.check_part(g, j)
            parts[a] = g
        try:
            if self.m == 1:
                u, nz, cs, _ = self._plan[0]
                combine_rows(out, cs, parts, nz)
            else:
                q = self.q
                out.fill(0)
                for u, nz, cs, L in self._plan:
                    if L and nz:
                        combine_rows(out[:L], cs, [parts[a][u * q:u * q + L] for a in nz], range(len(nz)),
                                     accumulate=True)
        finally:
            for a in range(len(parts)):
                parts[a] = None


class Combiner:
    """A parent's linear combination of its children's messages: ``out[u] (+)= sum_{i in F} A_F[u, i] y_i``.

    ``weights(F, dtype)`` gives the ``m x K`` matrix for the rows ``F`` that arrived (cached per set and dtype,
    least recently used out); for a GradientCode the decoding matrix is validated by the code's acceptance rule in
    the messages' dtype (``DecodingError`` when the set cannot decode to the tolerance of that dtype, exactly as
    :meth:`gradcodes.LinearCode.decode` would refuse it), for an ApproximateCode it comes from the chosen (optimal
    or fixed) decoder. With the matrix, each set caches its combination plan (the non-zero coefficients cast to
    the messages' dtype) and its error estimate, so a repeated responder set costs one multiply-add pass per
    message (a copy or an add for coefficients ``+-1``, BLAS ``axpy`` otherwise) and nothing else.

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
        self._plans: OrderedDict[tuple[tuple[int, ...], str], list[tuple[list[int], list[Any]]]] = OrderedDict()
        self._errors: OrderedDict[tuple[tuple[int, ...], str], float] = OrderedDict()
        self._unit_ok: OrderedDict[tuple[tuple[int, ...], float], bool] = OrderedDict()
        self._size = cache_size

    def _remember(self, cache: OrderedDict, key: Any, value: Any) -> None:
        cache[key] = value
        while len(cache) > self._size:
            cache.popitem(last=False)

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
            self._remember(self._cache, key, W)
        else:
            self._cache.move_to_end(key)
        return W

    def plan(self, rows: list[int], dtype: DTypeLike,
             coef_dtype: DTypeLike | None = None) -> list[tuple[list[int], list[Any]]]:
        """Per output block ``u``: the rows with a non-zero coefficient (ascending) and those coefficients in
        ``coef_dtype`` (default ``dtype``), the decode accepted by the rule in the messages' ``dtype`` (cached per
        set and dtypes). ``coef_dtype=float64`` for float32 messages: coefficients not rounded to float32, for
        a decode accumulated in float64."""
        dt = np.dtype(dtype)
        ct = dt if coef_dtype is None else np.dtype(coef_dtype)
        key = (tuple(sorted(rows)), dt.str if ct == dt else dt.str + ct.str)
        plan = self._plans.get(key)
        if plan is None:
            W = self.weights(rows, dt).astype(ct)
            plan = []
            for u in range(self.m):
                idx = [i for i in key[0] if W[u, i] != 0]
                plan.append((idx, [W[u, i].item() for i in idx]))
            self._remember(self._plans, key, plan)
        return plan

    def single(self, rows: list[int], dtype: DTypeLike) -> int | None:
        """The row whose message is the decode itself (``m = 1``, one non-zero coefficient, exactly 1, as the
        0/1 decodes of fractional repetition or a CodedReduce parent's ``n - s = 1`` child), else None."""
        if self.m != 1:
            return None
        idx, cs = self.plan(rows, dtype)[0]
        return idx[0] if len(idx) == 1 and cs[0] == 1 else None

    def error_estimate(self, rows: list[int], dtype: DTypeLike) -> float:
        """The code's predicted relative error of this decode (:meth:`gradcodes.LinearCode.error_estimate`),
        cached per responder set and dtype."""
        if not rows:
            return float("nan")
        key = (tuple(sorted(rows)), np.dtype(dtype).str)
        est = self._errors.get(key)
        if est is None:
            if isinstance(self.code, ApproximateCode):
                est = float(self.code.approximation_error(list(key[0]), decoder=self.decoder))
            else:
                est = float(self.code.error_estimate(list(key[0]), decoder=self.decoder, dtype=dtype))
            self._remember(self._errors, key, est)
        return est

    def check_unit(self, rows: list[int], u: float, name: str) -> None:
        """Raise :class:`gradcodes.DecodingError` unless the decode of ``rows`` meets the acceptance rule for
        messages in a real format that numpy lacks, given by its unit roundoff ``u`` and ``name`` (bfloat16: ``u =
        2**-8``): the bound :func:`gradcodes._core.numerics.real_error_bound` of the set's cancellation, residual and
        terms against :func:`gradcodes._core.numerics.tolerance_for` (cached per set)."""
        key = (tuple(sorted(rows)), float(u))
        if key in self._unit_ok:
            self._unit_ok.move_to_end(key)
            return
        code: Any = self.code
        F, mask = code._mask(list(key[0]))
        A, res, canc = code._raw_decoding_matrix(F, mask, code._decoder(self.decoder))
        bound = float(real_error_bound(canc, res, u, code._terms(A)))
        tol = tolerance_for(code.rtol, u)
        if not (math.isfinite(bound) and bound <= tol):
            raise DecodingError(
                f"responders {F.tolist()} cannot recover the gradient to the {name} tolerance {tol:.3g} (rtol="
                f"{code.rtol:g} for float64): error bound {bound:.3g} in {name} (unit roundoff {u:.2g}; residual "
                f"{res:.3g}, cancellation {canc:.3g}); float32 or float64 messages, or a code without cancellation "
                f"(e.g. gradcodes.stable_binary), decode within their tolerance", F, res)
        self._remember(self._unit_ok, key, True)

    def combine(self, rows: list[int], buf: np.ndarray, out: np.ndarray, tmp: np.ndarray | None = None,
                accumulate: bool = False, base: np.ndarray | None = None) -> None:
        """``out`` (length ``m q``) = [``out`` +] the combination of ``buf[rows]`` (each of length ``q``).

        ``base`` (same length as ``out``, another array): ``out = base +`` the combination, in one pass over
        ``base`` (a tree parent adds its children's decode to a ``coded_gradient`` message without copying it
        first: the first message's add or subtract reads ``base`` and writes ``out``).
        ``tmp`` is not needed any more (kept for callers of the earlier signature)."""
        q = buf.shape[1]
        for u, (idx, cs) in enumerate(self.plan(rows, buf.dtype)):
            self._block(out[u * q:(u + 1) * q], idx, cs, buf, accumulate,
                        None if base is None else base[u * q:(u + 1) * q])

    @staticmethod
    def _block(o: np.ndarray, idx: list[int], cs: list[Any], buf: np.ndarray, accumulate: bool,
               b: np.ndarray | None) -> None:
        """One output block: ``o = [o +] sum cs[a] buf[idx[a]]``, or ``o = b + ...`` (one pass over ``b``)."""
        if b is None:
            combine_rows(o, cs, buf, idx, accumulate=accumulate)
            return
        if idx and cs[0] in (1, -1):
            (np.add if cs[0] == 1 else np.subtract)(b, buf[idx[0]], out=o)
            idx, cs = idx[1:], cs[1:]
        else:
            np.copyto(o, b)
        combine_rows(o, cs, buf, idx, accumulate=True)

    def combine_finite(self, rows: list[int], buf: np.ndarray, out: np.ndarray,
                       base: np.ndarray | None = None) -> bool:
        """``out`` (length ``m q``, C-contiguous) = [``base`` +] the combination of ``buf[rows]``; returns whether
        every entry of ``out`` is finite.

        The same multiply-adds as :meth:`combine` (one pass per message: a copy, add or BLAS ``axpy``), then one
        check of each output block for NaN/inf (its sum of squares, one BLAS ``dot``; the exact check only when
        that sum is not finite, :func:`gradcodes._runtime.engine.finite`): one check of the result in place of one check
        per message, the messages inspected one by one only when it fails (a NaN in ``base``, the parent's own
        message, fails it too: the caller tells the two apart). Checking cache-sized pieces of the result
        right after writing them (an earlier way) was slower on the project's 2-core test machine: six float64
        messages 125 against 116 microseconds at ``q = 10^5`` and 1.88 against 1.62 ms at ``10^6``
        (``benchmarks/runtime/combine_check.py``, medians of 7 runs; the combine alone, as the floor program does it,
        106 and 1,521): the per-piece calls cost more than the memory traffic they save."""
        q = buf.shape[1]
        ok = True
        with np.errstate(over="ignore", invalid="ignore"):
            for u, (idx, cs) in enumerate(self.plan(rows, buf.dtype)):
                o_u = out[u * q:(u + 1) * q]
                self._block(o_u, idx, cs, buf, False, None if base is None else base[u * q:(u + 1) * q])
                if ok and not finite(o_u):
                    ok = False
        return ok


class UnitTracker:
    """A wait policy's tracker that also requires the decode of the rows so far to meet the rule of a format given
    by its unit roundoff (:meth:`Combiner.check_unit`; bfloat16): the wait goes on past a set that the policy
    would take but whose decode that format cannot trust."""

    def __init__(self, tracker: Any, combiner: Combiner, u: float, name: str) -> None:
        self.inner, self.combiner, self.u, self.name = tracker, combiner, float(u), name
        self.rows: list[int] = []

    def reset(self) -> None:
        self.rows = []
        self.inner.reset()

    def add(self, row: int) -> bool:
        self.rows.append(int(row))
        if not self.inner.add(row):
            return False
        try:
            self.combiner.check_unit(self.rows, self.u, self.name)
        except DecodingError:
            return False
        return True


def write_tail(out: Any, rows: Any, tails: Any) -> None:
    """Write a tree parent's tail (see the module's docstring) into ``out``: child ``i``'s block is its flag (1 for
    the children in ``rows``, the decoding set) followed by ``tails[i]``, the tail of child ``i``'s message
    (``tails`` of shape ``(children, Layout.tail(child))``; width 0 below the last level). Numpy arrays or torch
    tensors (slice assignments only)."""
    width = 1 + int(tails.shape[1])
    out[:] = 0
    for i in rows:
        out[i * width] = 1
        if width > 1:
            out[i * width + 1:(i + 1) * width] = tails[i]


#: Straggler patterns whose verdict a :class:`TreeCheck` keeps (least recently used out).
TREE_VERDICTS = 4096
#: A refusal: the message, the responders and the residual of the DecodingError to raise.
_Verdict = tuple[str, "list[int] | None", "float | None"]


class TreeCheck:
    """The master's whole-tree acceptance of a CodedReduce run (MPI and torch runtimes).

    Every parent accepts its own children's decode by the inner code's rule, but the composition of accepted
    decodes can still miss the tree's tolerance (the parents' decoding coefficients multiply along each path).
    Each iteration the master rebuilds the pattern it actually decoded (the workers whose messages went into
    the sum: its own decoding set and the flags every used child sent in its tail, see the module's docstring)
    and applies the rule of :meth:`gradcodes.CodedReduceCode.execute` and
    :meth:`~gradcodes.CodedReduceCode.decode` to it (``CodedReduceCode._accept_tree``: the flattened decoding
    vector of the pattern, its residual and cancellation, accepted in the messages' dtype), so the runtime
    refuses exactly the patterns ``execute`` refuses. The verdict is cached per pattern: a repeated pattern
    costs the mask's rebuild (a few slice assignments) and one dictionary lookup.

    Parameters
    ----------
    code : CodedReduceCode
    layout : Layout
        The code's tree layout.
    dtype : numpy dtype
        The messages' dtype (the tolerance is that dtype's).
    cache_size : int, default TREE_VERDICTS
    """

    def __init__(self, code: CodedReduceCode, layout: Layout, dtype: DTypeLike,
                 cache_size: int = TREE_VERDICTS) -> None:
        self.code = code
        self.dtype = np.dtype(dtype)
        kids = layout.children(0)
        self.kids = np.array([r - 1 for r in kids], dtype=np.int64)          # the master's children, as workers
        self.below = [np.array([r - 1 for r in layout.preorder(r0)], dtype=np.int64) for r0 in kids]
        self.tail = layout.tail(kids[0]) if kids else 0
        self.mask = np.zeros(code.N, dtype=bool)
        self._verdicts: OrderedDict[bytes, _Verdict | float] = OrderedDict()   # refusal, or the accepted bound
        self._size = int(cache_size)
        self.misses = 0                                                      # patterns checked (cache misses)

    def pattern(self, rows: list[int], tails: Any) -> np.ndarray:
        """The used-workers mask (N,) of an iteration: the master's children ``rows`` and, below each, the flags of
        its tail (``tails[i]``, the entries after child ``i``'s payload). A buffer reused by the next call."""
        mask = self.mask
        mask.fill(False)
        for i in rows:
            mask[self.kids[i]] = True
            if self.tail:
                mask[self.below[i]] = np.asarray(tails[i]) != 0
        return mask

    def check(self, rows: list[int], tails: Any, iteration: int | None = None) -> float:
        """The error bound of this iteration's pattern (see :meth:`pattern`) in the messages' dtype; raise
        :class:`~gradcodes.DecodingError` when it misses the tree's tolerance, naming the ranks used and not
        used."""
        mask = self.pattern(rows, tails)
        key = mask.tobytes()
        verdict: _Verdict | float
        if key in self._verdicts:
            self._verdicts.move_to_end(key)
            verdict = self._verdicts[key]
        else:
            self.misses += 1
            try:
                verdict = self.code._accept_tree(mask, self.dtype, sets=True)
            except DecodingError as exc:
                verdict = (self._message(mask, exc), exc.responders, exc.residual)
            self._verdicts[key] = verdict
            while len(self._verdicts) > self._size:
                self._verdicts.popitem(last=False)
        if not isinstance(verdict, float):
            where = "" if iteration is None else f"iteration {iteration}: "
            raise DecodingError(where + verdict[0], verdict[1], verdict[2])
        return verdict

    def _message(self, mask: np.ndarray, exc: DecodingError) -> str:
        used = np.flatnonzero(mask)
        unused = np.flatnonzero(~mask)
        return (f"the CodedReduce tree cannot decode this straggler pattern to its {self.dtype} tolerance: every "
                f"parent's decoding set was accepted, their composition is not; the sum came from ranks "
                f"{(used + 1).tolist()}, ranks {(unused + 1).tolist()} were not used (stragglers, below a "
                f"straggler, or not waited for); straggling children per parent "
                f"{self.code.pattern_text(mask)}; the whole tree's decode (as CodedReduceCode.execute) "
                f"refuses it: {exc}")
