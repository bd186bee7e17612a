"""Gradient coding with partial stragglers: one message per processed chunk (Ramamoorthy, Meng & Girimaji 2024).

Ramamoorthy, Meng & Girimaji, "Leveraging partial stragglers within gradient coding", NeurIPS 2024
(arXiv:2405.19509). The data set is split into ``k`` chunks and chunk ``j`` is assigned to ``gamma_j`` workers
(an ``n x k`` 0/1 *assignment matrix*; the default is the cyclic assignment of Tandon et al. 2017, worker ``i``
holding chunks ``i, i+1, ..., i+s+m-1 mod n``). Each worker processes its chunks one after the other in a fixed
*order* and, unlike the classical protocols (one message after the whole load), sends a message after **every**
chunk, so that the work of a slow worker (a *partial straggler*) still counts.

Messages (the rows of ``B``; the paper defines the protocol class, and this is gradcodes' encoding within
it). Every partial gradient ``g_j`` (of chunk ``j``) is cut into ``m`` blocks
``g_j^(0..m-1)`` (communication factor ``m``, the paper's ``l``); the message of worker ``i`` after chunk ``j`` is

.. math::  y_{i,j} = \\sum_{u=0}^{m-1} x_{h}^{u}\\, g_j^{(u)},

a vector of length ``ceil(p/m)``, with ``h`` the rank of worker ``i`` among the holders of chunk ``j`` and the
integer nodes ``x_h = h - floor((gamma_j - 1)/2)`` (distinct for distinct holders). Any ``m`` messages about
chunk ``j`` form an invertible Vandermonde system ``V``, so the master recovers ``g_j`` from them and the sum
``g = sum_j g_j`` as soon as **every chunk has been processed by at least m workers** (for ``m = 1``: processed
once). The decoder (:class:`ChunkDecoder`) uses, for every chunk, the first ``m`` messages about it in message
order and the exact inverse ``V^{-1}`` (computed in rationals, rounded once to float64 for float codes: the same
bits on every machine).

Orders. The order in which workers process their chunks changes when the master can decode. The paper (its Fig. 2
and the ordering algorithm) measures it by ``Q_max``: the least number ``Q`` of processed chunks (summed over
workers) such that *every* progress state with ``Q`` processed chunks is decodable. For a square assignment
(``n = k``) in which every worker holds ``gamma`` chunks and every chunk has ``gamma`` holders, the bipartite
worker-chunk graph is ``gamma``-regular and splits into ``gamma`` perfect matchings (Koenig's theorem); processing
matching ``r`` at position ``r`` makes every chunk appear once at every position, which attains the lower bound on
``Q_max`` for ``m = 1``
(:func:`chunk_order`, ``"matching"``).
"""

from __future__ import annotations

from collections.abc import Sequence
from fractions import Fraction
from typing import Any

import numpy as np

from .._base.aliases import ArrayLike, MatrixLike, Responders
from .._base.errors import GradcodesTypeError, GradcodesValueError
from .._base.validate import check_choice, check_entries, check_int, check_real
from .._core.code import GradientCode, LinearCode
from .._core.decoders import Decoder
from .._core.fields import field_for, solve_left
from .._core.numerics import DEFAULT_RTOL
from .partial_stragglers_approx import vandermonde_pinv
from .partial_stragglers_order import _check_assignment, _check_order, chunk_order, cyclic_assignment, q_max

__all__ = ["PartialStragglerCode", "ChunkDecoder", "partial_straggler_code", "cyclic_assignment", "chunk_order",
           "q_max"]

#: the verifier of these codes (``"verify"``: :func:`~gradcodes._families.partial_stragglers_verify.verify_partial`),
#: registered by that module when it is imported (``import gradcodes`` imports it): it builds on this module, so this
#: module reaches it through this table, not an import
VERIFIERS: dict[str, Any] = {}

#: Largest number of holders of one chunk (the decoder indexes subsets of holders by bit masks).
MAX_REPLICATION = 60


# ----------------------------------------------------------------------------------------------------------
# the decoder


def _nodes(gamma: int) -> list[int]:
    return [h - (gamma - 1) // 2 for h in range(gamma)]


def _vandermonde_inverse(nodes: Sequence[int], m: int) -> list[list[Fraction]]:
    """Exact inverse of ``V[r, u] = nodes[r]^u`` (m x m, distinct nodes) by the field layer's elimination."""
    V = np.array([[Fraction(x) ** u for u in range(m)] for x in nodes], dtype=object)
    X = solve_left(V, np.array([[Fraction(int(r == c)) for c in range(m)] for r in range(m)], dtype=object))
    assert X is not None                                     # distinct nodes: V is invertible
    return [list(row) for row in X]


class ChunkDecoder(Decoder):
    """Chunk by chunk: the first ``m`` messages about every chunk, inverted exactly (closed form, batched).

    For a message mask, every chunk ``j`` with at least ``m`` messages gets the rows of ``V^{-1}`` of its first
    ``m`` messages (in message order); a chunk with fewer leaves zeros, so the residual ``||A B - E||`` reports the
    missing chunk. The inverses are exact rationals (rounded once to float64 for float codes).

    With ``approximate=True`` (name ``"chunks_lstsq"``, used by
    :meth:`~gradcodes.PartialStragglerCode.estimate`) a chunk with ``0 < c < m`` messages gets the exact pseudo-inverse
    ``V^+ = V^T (V V^T)^{-1}`` of its ``c x m`` Vandermonde rows instead of zeros: the least-squares choice,
    which leaves ``m - c`` in ``||A B - E||_F^2`` for that chunk (``V^+ V`` projects onto a ``c``-dimensional
    row space). Chunks with ``m`` or more messages are decoded exactly as above, so both decoders agree on every
    decodable set.

    Parameters
    ----------
    exact : bool, default False
        Exact rational inverses (for rational codes).
    approximate : bool, default False
        Least squares for chunks with fewer than ``m`` messages (name ``"chunks_lstsq"``).

    Examples
    --------
    >>> import numpy as np, gradcodes as gc
    >>> code = gc.partial_straggler_code(4, 1)
    >>> mask = code.progress_mask(np.array([2, 2, 2, 0]))            # worker 3 sent nothing
    >>> float(code.residual(np.flatnonzero(mask), decoder="chunks"))
    0.0
    """

    name = "chunks"
    description = "every chunk from its first m messages (exact Vandermonde inverse)"
    deterministic = True

    def __init__(self, exact: bool = False, approximate: bool = False) -> None:
        self.exact = exact
        self.approximate = approximate
        if approximate:
            self.name = "chunks_lstsq"
            self.description = ("least squares chunk by chunk: first m messages inverted, fewer messages "
                                "pseudo-inverted (exact)")
        self._inv: dict[tuple[int, int, int], Any] = {}

    def _inverse(self, gamma: int, key: int, m: int) -> Any:
        ck = (gamma, key, m)
        if ck not in self._inv:
            nodes = _nodes(gamma)
            sel = [nodes[h] for h in range(gamma) if key >> h & 1]
            inv = _vandermonde_inverse(sel, m) if len(sel) == m else vandermonde_pinv(sel, m)
            arr = np.empty((m, len(sel)), dtype=object)
            for u in range(m):
                for r in range(len(sel)):
                    arr[u, r] = inv[u][r]
            self._inv[ck] = arr if self.exact else arr.astype(np.float64)
        return self._inv[ck]

    def matrices(self, code: LinearCode, mask: np.ndarray) -> Any:
        """Decoding matrices (b, m, n) for the message masks ``mask`` (b, n), chunk by chunk.

        Parameters
        ----------
        code : PartialStragglerCode
            The protocol (its message rows, ``m`` and the holders of every chunk).
        mask : ndarray of bool, shape (b, n)
            Each row: the messages that arrived in one set.

        Returns
        -------
        ndarray, shape (b, m, n)
            ``A_F`` of each set: the exact Vandermonde inverse of the first ``m`` messages of every chunk (the
            pseudo-inverse of fewer with ``approximate=True``), zero elsewhere; exact rationals when the decoder
            is ``exact``.

        Raises
        ------
        GradcodesTypeError
            If ``code`` is not a :class:`~gradcodes.PartialStragglerCode`.

        Examples
        --------
        >>> import numpy as np, gradcodes as gc
        >>> code = gc.partial_straggler_code(4, 1)
        >>> mask = code.progress_mask(np.array([2, 2, 2, 0]))            # worker 3 sent nothing
        >>> A = gc.ChunkDecoder().matrices(code, mask[None])
        >>> A.shape, bool(np.allclose(A[0] @ code.B, code.target))
        ((1, 1, 8), True)
        """
        if not isinstance(code, PartialStragglerCode):
            raise GradcodesTypeError(f"the chunk decoder needs a PartialStragglerCode, got {type(code).__name__}")
        mask = np.asarray(mask, dtype=bool)
        b, m = mask.shape[0], code.m
        A = field_for(self.exact).zeros((b, m, code.n))
        least = 1 if self.approximate else m
        for rows in code.holders:
            P = mask[:, rows]
            sel = P & (np.cumsum(P, axis=1) <= m)
            ok = P.sum(axis=1) >= least
            weights = np.left_shift(np.int64(1), np.arange(rows.size, dtype=np.int64))
            keys = np.where(ok, (sel * weights).sum(axis=1), -1)
            for key in np.unique(keys[ok]):
                idx = np.flatnonzero(keys == key)
                cols = rows[[h for h in range(rows.size) if int(key) >> h & 1]]
                A[np.ix_(idx, np.arange(m), cols)] = self._inverse(rows.size, int(key), m)[None]
        return A


# ----------------------------------------------------------------------------------------------------------
# the code


class PartialStragglerCode(GradientCode):
    """A partial-straggler protocol (build it with :func:`partial_straggler_code`): one message per processed chunk.

    The flat view is an ordinary :class:`~gradcodes.GradientCode` whose *rows are messages*: ``code.n`` is the
    number of messages (``sum_i gamma_i``), row :meth:`message` ``(i, t)`` is the message worker ``i`` sends
    after its ``t``-th chunk (``t = 0, 1, ...`` in its ``order``), supported on one chunk. ``decode`` takes the
    arrived messages as responders; any ``n - s`` messages decode (each chunk then misses at most ``s`` of its
    ``gamma_j >= s + m`` messages), and so does every smaller set in which each chunk has ``m`` messages
    (:meth:`decodable_progress` for prefix states).

    Attributes
    ----------
    workers : int
        Number of workers ``N``.
    assignment : numpy.ndarray of bool, shape (workers, k)
        Which worker holds which chunk.
    order : tuple of tuples
        ``order[i]``: worker ``i``'s chunks in processing order.
    holders : tuple of numpy.ndarray
        ``holders[j]``: the message rows about chunk ``j``, in the order of the holders' worker indices.
    offsets : numpy.ndarray, shape (workers + 1,)
        Worker ``i``'s messages are rows ``offsets[i] .. offsets[i+1] - 1``.
    message_worker, message_chunk, message_position : numpy.ndarray, shape (n,)
        For every message row: its worker, its chunk and its position in the worker's order.

    Examples
    --------
    >>> import gradcodes as gc
    >>> code = gc.partial_straggler_code(4, 1)
    >>> isinstance(code, gc.PartialStragglerCode), code.n, code.k
    (True, 8, 4)
    """

    def __init__(self, B: MatrixLike, *, assignment: np.ndarray, order: tuple[tuple[int, ...], ...], s: int, m: int,
                 rtol: float = DEFAULT_RTOL, name: str | None = None, params: dict[str, Any] | None = None,
                 field: str | None = None) -> None:
        exact = field == "rational"
        super().__init__(B, s, m=m, rtol=rtol, field=field, name=name, family="partial_straggler_code",
                         params=params, default_decoder="chunks",
                         decoders=[ChunkDecoder(exact=exact), ChunkDecoder(exact=exact, approximate=True)])
        self.assignment = assignment
        self.assignment.flags.writeable = False
        self.order = order
        self.workers = assignment.shape[0]
        self.offsets = np.concatenate([[0], np.cumsum([len(o) for o in order])]).astype(np.int64)
        mw, mc, mp = [], [], []
        for i, o in enumerate(order):
            for t, j in enumerate(o):
                mw.append(i)
                mc.append(j)
                mp.append(t)
        self.message_worker = np.asarray(mw, dtype=np.int64)
        self.message_chunk = np.asarray(mc, dtype=np.int64)
        self.message_position = np.asarray(mp, dtype=np.int64)
        hold = []
        for j in range(self.k):
            rows = np.flatnonzero(self.message_chunk == j)
            hold.append(rows[np.argsort(self.message_worker[rows], kind="stable")])
        self.holders = tuple(hold)
        for arr in (self.offsets, self.message_worker, self.message_chunk, self.message_position, *self.holders):
            arr.flags.writeable = False

    def used_messages(self, mask: ArrayLike) -> np.ndarray:
        """The messages :class:`ChunkDecoder` uses from message masks (..., n): the first ``m`` of every chunk.

        Parameters
        ----------
        mask : array_like of bool, shape (..., n)
            Message masks: True for an arrived message.

        Returns
        -------
        ndarray of bool, shape (..., n)
            The messages the decode reads.

        Examples
        --------
        >>> import numpy as np, gradcodes as gc
        >>> code = gc.partial_straggler_code(4, 1)     # 4 workers, 2 chunks each: n = 8 messages
        >>> code.used_messages(code.progress_mask(np.array([2, 2, 2, 0]))).astype(int).tolist()
        [1, 1, 0, 1, 0, 1, 0, 0]
        """
        mask = np.asarray(mask, dtype=bool)
        used = np.zeros_like(mask)
        for rows in self.holders:
            P = mask[..., rows]
            used[..., rows] = P & (np.cumsum(P, axis=-1) <= self.m)
        return used

    def _min_responders(self) -> int:
        return 0                        # any message set: the decode's own residual decides (DecodingError)

    @property
    def replication(self) -> np.ndarray:
        """Holders per chunk (``gamma_j``)."""
        return self.assignment.sum(axis=0)

    @property
    def q_max(self) -> int:
        """:func:`q_max` of this assignment and order (processed chunks that always suffice)."""
        return q_max(self.assignment, self.order, self.m)

    def message(self, worker: int, position: int) -> int:
        """The message row of ``worker``'s chunk number ``position`` (0-based) in its order.

        Parameters
        ----------
        worker : int
            A worker, ``0 <= worker < workers``.
        position : int
            The chunk's place in the worker's order.

        Returns
        -------
        int
            The message's row of ``B``.

        Examples
        --------
        >>> import numpy as np, gradcodes as gc
        >>> code = gc.partial_straggler_code(4, 1)     # 4 workers, 2 chunks each: n = 8 messages
        >>> code.message(0, 0), code.message(0, 1), code.message(1, 0)
        (0, 1, 2)
        """
        worker = check_int("worker", worker, 0, self.workers - 1)
        position = check_int("position", position, 0, len(self.order[worker]) - 1)
        return int(self.offsets[worker] + position)

    def progress_mask(self, progress: Any) -> np.ndarray:
        """Message masks (shape (..., n)) of progress vectors (shape (..., workers)): worker ``i`` has sent its first
        ``progress[i]`` messages.

        Parameters
        ----------
        progress : array_like of int, shape (..., workers)
            Messages sent by each worker (a prefix of its order).

        Returns
        -------
        ndarray of bool, shape (..., n)
            The arrived messages.

        Raises
        ------
        GradcodesValueError
            If ``progress`` is not integers of shape ``(..., workers)``.

        Examples
        --------
        >>> import numpy as np, gradcodes as gc
        >>> code = gc.partial_straggler_code(4, 1)     # 4 workers, 2 chunks each: n = 8 messages
        >>> code.progress_mask(np.array([1, 1, 0, 0])).astype(int).tolist()
        [1, 0, 1, 0, 0, 0, 0, 0]
        """
        P = np.asarray(progress)
        if P.dtype.kind not in "iu" or P.shape[-1:] != (self.workers,):
            raise GradcodesValueError(f"progress must be integers of shape (..., {self.workers}), got "
                                      f"{P.dtype} {P.shape}")
        loads = np.diff(self.offsets)
        if np.any(P < 0) or np.any(P > loads):
            raise GradcodesValueError(f"progress[i] must be in [0, {loads.tolist()}[i]] (worker i's chunks)")
        return P[..., self.message_worker] > self.message_position

    def decodable_progress(self, progress: Any) -> np.ndarray | bool:
        """Whether progress states decode: every chunk processed by at least ``m`` workers (exact criterion).

        Parameters
        ----------
        progress : array_like of int, shape (..., workers)
            Messages sent by each worker.

        Returns
        -------
        bool or ndarray of bool, shape (...)
            Whether each state decodes.

        Examples
        --------
        >>> import numpy as np, gradcodes as gc
        >>> code = gc.partial_straggler_code(4, 1)     # 4 workers, 2 chunks each: n = 8 messages
        >>> code.decodable_progress(np.array([[2, 2, 2, 0], [1, 1, 0, 0]])).tolist()
        [True, False]
        """
        M = self.progress_mask(progress)
        counts = np.stack([M[..., rows].sum(axis=-1) for rows in self.holders], axis=-1)
        out = np.all(counts >= self.m, axis=-1)
        return bool(out) if np.ndim(out) == 0 else out

    # ------------------------------------------------------------------ approximate recovery
    def squared_error(self, mask: ArrayLike) -> Any:
        """Least-squares error ``min_A ||A B_F - E||_F^2`` of message masks (shape (..., n), booleans).

        Equal to ``sum_j max(0, m - c_j)`` with ``c_j`` the messages about chunk ``j`` (an integer: the gradient
        blocks the messages leave undetermined; 0 exactly when the set decodes). Divide by ``k * m`` for the
        normalised error (docs: "Partial stragglers", section 7).

        Parameters
        ----------
        mask : array_like of bool, shape (..., n)
            Message masks: True for an arrived message.

        Returns
        -------
        int or ndarray of int, shape (...)
            The squared error of each mask.

        Examples
        --------
        >>> import numpy as np, gradcodes as gc
        >>> code = gc.partial_straggler_code(4, 1)     # 4 workers, 2 chunks each: n = 8 messages
        >>> code.squared_error(code.progress_mask(np.array([1, 1, 0, 0])))       # 2 chunks undetermined
        2
        """
        from .partial_stragglers_approx import squared_error

        return squared_error(self, mask)

    def approximation_error(self, responders: Responders) -> float:
        """``||A_F B - E||_F`` of the least-squares estimate from these messages (as for approximate codes).

        Parameters
        ----------
        responders : iterable of int or bool mask
            The arrived messages (rows of ``B``).

        Returns
        -------
        float
            The Frobenius norm of the residual (0 when the messages decode).

        Examples
        --------
        >>> import numpy as np, gradcodes as gc
        >>> code = gc.partial_straggler_code(4, 1)     # 4 workers, 2 chunks each: n = 8 messages
        >>> float(code.approximation_error([0, 2]) ** 2)             # sqrt of squared_error
        2.0...
        """
        _, mask = self._mask(responders)
        return float(np.sqrt(self.squared_error(mask)))

    def estimate(self, responders: Responders, messages: MatrixLike, *, length: int | None = None,
                 return_error: bool = False) -> Any:
        """The least-squares estimate of the sum from whatever messages have arrived (approximate recovery).

        A chunk with ``m`` or more messages is recovered exactly (the same coefficients as :meth:`decode`); one
        with ``0 < c < m`` messages contributes the pseudo-inverse estimate of its ``m`` blocks, and a chunk
        without messages contributes zero. The coefficients are exact rationals rounded once (the same bits on
        every machine); nothing is refused for being inexact: ``return_error=True`` also returns
        :meth:`squared_error`, the estimate's error ``||A B - E||_F^2`` in units of block energy.

        Parameters
        ----------
        responders : sequence of int, or boolean mask of length n
            The message rows that have arrived (as in :meth:`decode`).
        messages : ndarray, shape (n, q) or (len(responders), q)
            The full receive buffer or the arrived rows in the order of ``responders`` (as in :meth:`decode`).
        length : int, optional
            Length of the gradient (drops the zero padding).
        return_error : bool, default False
            Also return the integer squared error.

        Returns
        -------
        g : ndarray, shape (length,)
            In the messages' dtype (float32 stays float32, Fractions stay exact).
        error : int
            Only with ``return_error``.

        Examples
        --------
        Three chunks, ``m = 2``, no straggler tolerance (every chunk held by two workers, nodes 0 and 1): message
        ``(i, 0)`` of node 0 is chunk ``i``'s first block; message ``(2, 1)`` of node 1 is the sum of chunk 0's two
        blocks, which least squares splits evenly:

        >>> import numpy as np, gradcodes as gc
        >>> from fractions import Fraction as F
        >>> code = gc.partial_straggler_code(3, 0, 2, field="rational")
        >>> G = np.array([[F(1), F(2)], [F(3), F(4)], [F(5), F(6)]], dtype=object)   # the sum is (9, 12)
        >>> Y = code.encode(G)
        >>> code.estimate([code.message(0, 0)], Y, return_error=True)   # chunk 0's first block only
        (array([Fraction(1, 1), Fraction(0, 1)], dtype=object), 5)
        >>> code.estimate([code.message(2, 1)], Y, return_error=True)   # 1 + 2 = 3, split as (3/2, 3/2)
        (array([Fraction(3, 2), Fraction(3, 2)], dtype=object), 5)
        >>> code.estimate([code.message(0, 0), code.message(2, 1)], Y, return_error=True)   # chunk 0 exactly
        (array([Fraction(1, 1), Fraction(2, 1)], dtype=object), 4)
        """
        from .partial_stragglers_approx import estimate

        return estimate(self, responders, messages, length, return_error)

    def classical_code(self) -> GradientCode:
        """The classical code storing the same data (cyclic assignment): ``gc.ye_abbe(workers, s, m)``, whose
        workers send one message after their whole load (used by :func:`gradcodes.simulate_partial`).

        Returns
        -------
        GradientCode
            ``gc.ye_abbe(workers, s, m)``.

        Examples
        --------
        >>> import numpy as np, gradcodes as gc
        >>> code = gc.partial_straggler_code(4, 1)     # 4 workers, 2 chunks each: n = 8 messages
        >>> code.classical_code().n
        4
        """
        from .partial_stragglers_approx import classical_code

        return classical_code(self)

    def _verify_hook(self, *, limit: int | None = None, samples: int = 2000, search: bool = True,
                     rng: Any = None, rtol: float | None = None, decoder: Any = None, field: Any = None,
                     batch_size: int | None = None, dtype: Any = np.float64, stop_on_failure: bool = True,
                     progress: bool | None = None, time_budget: float | None = None, **ignored: Any) -> Any:
        """``gc.verify(code, ...)`` runs :func:`verify_partial`: the verifier's engine on the chunk-arrival
        patterns (progress states) the protocol admits."""
        if decoder not in (None, "chunks"):
            raise GradcodesValueError(f"decoder: verify checks the chunk decoder of a partial-straggler code, got "
                                      f"{decoder!r}")
        if field is not None:
            raise GradcodesValueError("field: build the code with field='rational' for an exact proof")
        return VERIFIERS["verify"](self, limit=limit, samples=samples, rng=rng, rtol=rtol,
                              batch_size=4096 if batch_size is None else batch_size, dtype=dtype,
                              stop_on_failure=stop_on_failure, progress=progress, time_budget=time_budget)


def partial_straggler_code(n: int, s: int | None = None, m: int = 1, *, assignment: Any = None,
                           order: Any = "matching", field: str = "real",
                           rtol: float = DEFAULT_RTOL) -> PartialStragglerCode:
    """The partial-straggler gradient coding protocol of Ramamoorthy, Meng & Girimaji (NeurIPS 2024).

    Every worker sends one message after every chunk it finishes (see the module notes and
    :class:`PartialStragglerCode`); the master decodes as soon as every chunk has been processed by ``m`` workers,
    so slow workers' finished chunks count. With the default cyclic assignment (load ``s + m``) the protocol
    stores the same data as the classical codes with the same parameters (``gc.cyclic_repetition(n, s)`` for
    ``m = 1``, ``gc.ye_abbe(n, s, m)``), which wait for ``n - s`` workers to finish their whole load.

    Parameters
    ----------
    n : int >= 1
        Number of workers.
    s : int, optional
        Full stragglers the assignment tolerates: with the cyclic assignment every worker holds ``s + m``
        consecutive chunks (``0 <= s <= n - m``). Required without ``assignment``; with one it must be omitted
        (it is then ``min_j gamma_j - m``).
    m : int >= 1, default 1
        Communication factor (the paper's ``l``): messages have length ``ceil(p/m)`` and every chunk must be
        processed by ``m`` workers; at most the smallest replication ``min_j gamma_j``.
    assignment : array_like of 0/1, shape (n, k), optional
        Arbitrary chunk assignment (``k`` chunks, each held by at least ``m`` workers, every worker holding one).
    order : {"matching", "natural"} or sequence of sequences, default "matching"
        Processing order of every worker's chunks: a method of :func:`chunk_order`, or explicit permutations.
    field : {"real", "rational"}, default "real"
        ``"rational"`` builds ``B`` and the decoder over Fractions (exact decodes and proofs).
    rtol : float in (0, 1), default 1e-8
        Acceptance tolerance of float64 decodes (see :class:`~gradcodes.GradientCode`).

    Returns
    -------
    PartialStragglerCode

    Raises
    ------
    GradcodesValueError
        If a parameter is out of its range (the message names the parameter and the range), ``s`` is missing without
        an assignment or given with one, or the assignment does not fit ``n`` and ``m``.

    Examples
    --------
    The paper's Figure 1 setting: three workers, three chunks, two chunks each. Worker 2 has failed and worker 0
    finished only its first chunk; with worker 1's two messages every chunk has been processed once:

    >>> import numpy as np
    >>> import gradcodes as gc
    >>> code = gc.partial_straggler_code(3, 1)
    >>> code.order, code.n
    (((0, 1), (1, 2), (2, 0)), 6)
    >>> arrived = [code.message(0, 0), code.message(1, 0), code.message(1, 1)]
    >>> G = np.arange(12.0).reshape(3, 4)              # the three chunk gradients
    >>> Y = code.encode(G)                              # every message of every worker
    >>> code.decode(arrived, Y)
    array([12., 15., 18., 21.])
    >>> code.q_max                                      # 4 processed chunks always suffice (the classical: 5)
    4
    """
    n = check_int("n", n, 1)
    m = check_int("m", m, 1)
    field = check_choice("field", field, ("real", "rational"))
    rtol = check_real("rtol", rtol, 0, 1, open_lo=True, open_hi=True)
    if assignment is None:
        if s is None:
            raise GradcodesValueError("s must be given (an integer in [0, n - m]) unless an assignment is")
        s = check_int("s", s, 0, n - 1)
        m = check_int("m", m, 1, n - s)               # s + m <= n: the range names m, the extra one
        check_entries(n, n * m, exact=field == "rational", what="the assignment")
        A = cyclic_assignment(n, s + m)
        assign_param = None
    else:
        if s is not None:
            raise GradcodesValueError("s must be omitted with an assignment (it is min_j gamma_j - m)")
        A = _check_assignment(assignment)
        if A.shape[0] != n:
            raise GradcodesValueError(f"assignment must have n={n} rows (one per worker), got {A.shape[0]}")
        gam = A.sum(axis=0)
        if gam.min() < m:
            raise GradcodesValueError(f"m must be at most the smallest replication min_j gamma_j = {int(gam.min())} "
                                      f"(chunks {np.flatnonzero(gam < m).tolist()} have fewer than m={m} holders)")
        s = int(gam.min()) - m
        assign_param = A.astype(int).tolist()
    gam = A.sum(axis=0)
    if gam.max() > MAX_REPLICATION:
        raise GradcodesValueError(f"assignment: a chunk may have at most {MAX_REPLICATION} holders, got "
                                  f"{int(gam.max())}")
    k = A.shape[1]
    rows_total = int(A.sum())
    check_entries(rows_total, k * m, exact=field == "rational")
    if isinstance(order, str):
        method = check_choice("order", order, ("matching", "natural"))
        orders = chunk_order(A, method)
        order_param: Any = method
    else:
        orders = _check_order(A, order)
        order_param = [list(o) for o in orders]
    exact = field == "rational"
    B = field_for(exact).zeros((rows_total, k * m))
    holders_sorted = [np.flatnonzero(A[:, j]).tolist() for j in range(k)]
    r = 0
    for i, o in enumerate(orders):
        for j in o:
            h = holders_sorted[j].index(i)
            x = _nodes(len(holders_sorted[j]))[h]
            for u in range(m):
                B[r, j * m + u] = Fraction(x) ** u if exact else float(x ** u)
            r += 1
    params = {"n": n, "s": s if assignment is None else None, "m": m, "assignment": assign_param,
              "order": order_param, "field": field, "rtol": rtol}
    name = f"partial_straggler_code(n={n}, s={s}, m={m})" if assignment is None else \
        f"partial_straggler_code(n={n}, k={k}, m={m})"
    return PartialStragglerCode(B, assignment=A, order=orders, s=s, m=m, rtol=rtol, name=name, params=params,
                                field="rational" if exact else "real")


def _tour_evaluate(code: PartialStragglerCode) -> Any:
    """The tour's check: :func:`gradcodes.verify` over the chunk-arrival patterns, every one of them up to 10,000
    (a fixed limit, not a time budget: the verdict does not depend on the machine's load), else 50 random
    patterns (rational codes are then proven by chunks)."""
    from .._verify.verifier import verify

    return verify(code, rng=0, samples=50, limit=10_000)


def _register() -> None:
    from .._base.registry import Scheme, register
    from .._io.files import REBUILDERS

    REBUILDERS["partial_straggler_code"] = partial_straggler_code    # gc.load_code restores the class and decoder
    register(Scheme(
        "partial_straggler_code", partial_straggler_code,
        "Ramamoorthy-Meng-Girimaji partial stragglers: a message after every chunk (load s + m, messages 1/m of a "
        "gradient), decodable once every chunk has m messages; proven over every chunk-arrival pattern",
        tour=({"n": 3, "s": 1}, {"n": 6, "s": 2, "m": 2}, {"n": 20, "s": 3, "m": 2, "field": "rational"},
              {"n": 40, "s": 2, "m": 2, "field": "rational"}),
        evaluate=_tour_evaluate, kind="partial"))


_register()
