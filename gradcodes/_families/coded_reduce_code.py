"""CodedReduce (Reisizadeh, Prakash, Pedarsani & Avestimehr): gradient codes composed along a regular tree.

The master is the root of the ``(n, L)``-regular tree; every node at levels ``0..L-1`` has ``n`` children
and levels ``1..L`` are the ``N = n + n^2 + ... + n^L`` workers. Every parent spreads the data it is responsible
for over its children with an inner ``(n, s)`` gradient code, every worker also computes a share of its own, and
each parent decodes from any ``n - s`` children and adds its own message (hierarchical decoding). Every worker
then computes the same fraction ``r_CR`` of the dataset, the smallest possible on the tree (the converse in
:func:`coded_reduce_load`).

Nodes are addressed by tuples of child indices ``(t_1, ..., t_l)`` (the master is ``()``); workers are numbered in
breadth-first order: with ``b = branching`` children per node, the children of the master are workers ``0..b-1``
and the children of worker ``i`` are workers ``(i+1) b .. (i+1) b + b - 1``. With *parent* ``t = 0`` the master and
``t = i + 1`` worker ``i``, the children of parent ``t`` are workers ``t b .. t b + b - 1``.
"""

from __future__ import annotations

from fractions import Fraction
from typing import TYPE_CHECKING, Any

import numpy as np

from .._base.aliases import MatrixLike, Responders, RNGLike
from .._base.errors import GradcodesTypeError, GradcodesValueError
from .._base.validate import check_real
from .._core.acceptance import NonFiniteMessageError
from .._core.code import DecodingError, GradientCode, LinearCode, check_float_decode, check_underflow
from .._core.decoders import Decoder
from .._core.fields import RationalField
from .._core.numerics import DEFAULT_RTOL, error_estimate
from .coded_reduce_alloc import _check_tree, _level_slices, _tree_fractions
from .coded_reduce_tree import TreeStructureMixin

if TYPE_CHECKING:
    from .coded_reduce_verify import TreeVerifyReport

__all__ = ["CodedReduceCode", "TreeDecoder"]

#: the verifier of tree codes (``"verify"``: :func:`~gradcodes._families.coded_reduce_verify.verify_tree`),
#: registered by that module when it is imported (``import gradcodes`` imports it): it builds on this module, so this
#: module reaches it through this table, not an import
VERIFIERS: dict[str, Any] = {}

# ----------------------------------------------------------------------------------------------------------
# the hierarchical decoder


class TreeDecoder(Decoder):
    """Hierarchical CodedReduce decoding (CR.Execute), batched over responder masks.

    A worker's message reaches the master only if the worker and all its ancestors respond. Every responding
    parent decodes from its ``n - s`` smallest-index responding children with the inner code's decoding vector
    ``a_F`` (a parent with fewer than ``n - s`` responding children cannot decode: its subtree gets weight 0, so
    the residual reports the pattern). The flattened decoding vector of the whole tree is the product of the
    inner coefficients along each root-to-worker path: ``A[v] = prod_{edges (p, t) on the path} a_{F_p}[t]``.
    """

    name = "tree"
    description = "hierarchical: each parent decodes from its first n - s responding children"

    def __init__(self, exact: bool = False) -> None:
        self.exact = exact

    def matrices(self, code: LinearCode, mask: np.ndarray) -> Any:
        if not isinstance(code, CodedReduceCode):
            raise GradcodesTypeError(f"the tree decoder needs a CodedReduceCode, got {type(code).__name__}")
        W = code._tree_weights(mask)[0]
        return W[:, None, :]


class CodedReduceCode(TreeStructureMixin, LinearCode):
    """A CodedReduce tree code (build it with :func:`coded_reduce`).

    The flattened view is an ordinary :class:`~gradcodes.LinearCode`: ``B`` is ``N x P`` (row ``v`` = worker
    ``v``'s own coefficients on the ``P`` data units), ``encode`` gives every worker's *own* message
    ``B_v G``, and ``decode(responders, messages)`` returns ``A_F Y`` with the hierarchical decoding vector
    ``A_F`` of :class:`TreeDecoder`. :meth:`execute` runs the actual CR.Execute recursion (each parent adds its
    own message to the decoded combination of its children's messages) and gives the same sum.

    Straggler model: ``responders`` lists the workers that did not straggle; a straggler silences its whole
    subtree, and every parent whose message is needed must have at least ``n - s`` responding children.

    Attributes
    ----------
    branching, L, s : int
        The tree (``n`` children per node, ``L`` levels of workers) and the stragglers tolerated per parent.
        (``code.n`` is the number of workers ``N``, as for every code.)
    N : int
        Number of workers.
    inner : GradientCode
        The ``(n, s)`` code used at every parent.
    r : Fraction
        The fraction of the dataset every worker processes (``load / P``; ``= r_CR`` for a load-optimal inner
        code).
    D : tuple of Fraction
        ``D_l``: the fraction of the data a level-``l`` subtree is responsible for.
    P : int
        Number of data units (``k``): the partials passed to :meth:`encode` are one per unit.

    Examples
    --------
    >>> import gradcodes as gc
    >>> code = gc.coded_reduce(2, 2, 1)
    >>> isinstance(code, gc.CodedReduceCode), code.n, code.k, code.load
    (True, 6, 4, 2)
    """

    def __init__(self, B: MatrixLike, *, branching: int, L: int, s: int, inner: GradientCode, P: int,
                 lists: tuple[list[np.ndarray], list[np.ndarray]] | None = None, rtol: float = DEFAULT_RTOL,
                 name: str | None = None, params: dict[str, Any] | None = None) -> None:
        n, L, s = _check_tree(branching, L, s)
        N = n * (n**L - 1) // (n - 1)
        dec = TreeDecoder(exact=inner.exact)
        super().__init__(B, field=inner.field, name=name or f"coded_reduce(branching={n}, L={L}, s={s})",
                         family="coded_reduce", params=params or {"branching": n, "L": L, "s": s, "P": P},
                         decoders=[dec], default_decoder="tree")
        if self.n != N or self.k != P:
            raise GradcodesValueError(f"B must be N x P = {N} x {P} for the ({n}, {L}) tree, got {self.n} x {self.k}")
        self.branching, self.L, self.s, self.N, self.P = n, L, s, N, P
        self.inner = inner
        self.rtol = check_real("rtol", rtol, 0, 1, open_lo=True, open_hi=True)
        w = int(inner.loads[0])
        self.q = Fraction(w, inner.k)
        self.r, D = _tree_fractions(self.q, L)
        self.D = tuple(D)
        self._lists = lists
        self._inner_cache: dict[bytes, Any] = {}
        self._slices = _level_slices(n, L)

    # ------------------------------------------------------------------ decoding
    def _inner_vector(self, row: np.ndarray) -> Any:
        key = row.tobytes()
        a = self._inner_cache.get(key)
        if a is None:
            a = self.inner.decoding_matrix(np.flatnonzero(row))[0]
            self._inner_cache[key] = a
        return a

    def _zeros(self, shape: tuple[int, ...]) -> np.ndarray:
        if self.field == "rational":
            return np.asarray(RationalField().zeros(shape))
        return np.zeros(shape, dtype=self._entry_dtype())

    def _tree_weights(self, mask: np.ndarray, levels: bool = False,
                      sets: bool = False) -> tuple[Any, np.ndarray, np.ndarray, list]:
        """Hierarchical decoding of a batch of responder masks (b, N).

        Returns ``(W, used, bad_parent, coefs)``: the flattened decoding vectors ``W`` (b, N); ``used`` (b, N),
        the workers whose message reaches the master; ``bad_parent`` (b,), the first parent (0 = master,
        ``i+1`` = worker ``i``) with too few responding children, or -1; and (with ``levels=True``) the
        per-level coefficient arrays (b, n^{l-1}, n) a parent applies to its children's messages.

        ``sets=True``: ``mask`` holds the children each parent actually decoded from (a runtime's pattern, where
        a parent may stop at a decodable set smaller than ``n - s``): every reachable parent decodes from all its
        marked children (at least one; none is a bad parent).
        """
        mask = np.asarray(mask, dtype=bool)
        b = mask.shape[0]
        n, K = self.branching, (1 if sets else self.branching - self.s)
        W = self._zeros((b, self.N))
        used_all = np.zeros((b, self.N), dtype=bool)
        bad_parent = np.full(b, -1, dtype=np.int64)
        coef_levels = []
        w_parent = RationalField().ones((b, 1)) if self.field == "rational" else \
            np.ones((b, 1), dtype=self._entry_dtype())
        alive_parent = np.ones((b, 1), dtype=bool)
        first_parent = 0
        for sl in self._slices:
            npar = alive_parent.shape[1]
            kids = mask[:, sl].reshape(b, npar, n) & alive_parent[:, :, None]
            cnt = kids.sum(axis=2)
            bad = alive_parent & (cnt < K)
            if bad.any():
                rows = np.flatnonzero(bad.any(axis=1) & (bad_parent < 0))
                bad_parent[rows] = first_parent + np.argmax(bad[rows], axis=1)
            used = (kids if sets else kids & (np.cumsum(kids, axis=2) <= K)) & ~bad[:, :, None]
            flat = used.reshape(b * npar, n)
            ok = (alive_parent & ~bad).reshape(-1)
            coef = self._zeros((b * npar, n))
            if ok.any():
                uniq, inv = np.unique(flat[ok], axis=0, return_inverse=True)
                table = np.stack([np.asarray(self._inner_vector(row)) for row in uniq])
                coef[ok] = table[inv.reshape(-1)]
            coef = coef.reshape(b, npar, n)
            if levels:
                coef_levels.append(coef)
            w = (w_parent[:, :, None] * coef).reshape(b, npar * n)
            W[:, sl] = w
            used_all[:, sl] = used.reshape(b, npar * n)
            w_parent = w
            alive_parent = used.reshape(b, npar * n)
            first_parent += npar
        return W, used_all, bad_parent, coef_levels

    def _describe_parent(self, p: int) -> str:
        return "the master" if p == 0 else f"worker {p - 1} (node {self.node(p - 1)})"

    def _mask(self, responders: Any) -> tuple[np.ndarray, np.ndarray]:
        F, mask = super()._mask(responders)
        bad = self._tree_weights(mask[None])[2][0]
        if bad >= 0:
            kids = self.children(None if bad == 0 else int(bad) - 1)
            got = [int(c) for c in kids if mask[c]]
            raise DecodingError(f"responders: {self._describe_parent(int(bad))} has only {len(got)} responding "
                                f"children {got} of {kids.tolist()}; the tree tolerates at most s={self.s} "
                                f"stragglers per parent (needs n - s = {self.branching - self.s})", F)
        return F, mask

    def _pattern_ok(self, mask: np.ndarray) -> bool:
        """Every parent whose message is used has at least ``n - s`` responding children (see :meth:`decodable`)."""
        return bool(self._tree_weights(np.asarray(mask, dtype=bool)[None])[2][0] < 0)

    def _accept(self, F: np.ndarray, A: Any, res: float, canc: float, *, dtype: Any = np.float64,
                terms: int = 1) -> None:
        if self.exact:
            if res != 0:
                raise DecodingError(f"responders {F.tolist()} cannot recover the gradient (exact "
                                    f"{self.field} arithmetic)", F, res)
            return
        check_float_decode(self, F, res, canc, self.rtol, dtype, terms)

    def _accept_floor(self, F: np.ndarray, res: float, canc: float, floor: float, amax: float, dtype: Any,
                      terms: int) -> None:
        check_underflow(F, res, canc, floor, amax, self.rtol, dtype, terms)

    def _terms(self, A: Any) -> int:
        """Rounded operations along one decoded coordinate: the flat count
        (:func:`gradcodes._core.numerics.decode_terms`)
        plus ``2 L``. Each level of the tree rounds its own weighted sum and the coefficient it applies (a path of
        ``L`` levels over sums of ``K + 1`` terms has at most ``L (K + 2)`` roundings after the encoding, and the
        flat count already holds at least ``L K`` decoding terms), so the bound holds for the tree's evaluation
        order, not only for a flat sum."""
        return super()._terms(A) + 2 * self.L

    def _accept_tree(self, mask: np.ndarray, dtype: Any, *, sets: bool = False) -> float:
        """The whole-tree acceptance rule of :meth:`decode` and :meth:`execute` for one responder mask (N,); returns
        the pattern's error bound in ``dtype`` (:func:`gradcodes._numerics.error_estimate`).

        The flattened decoding vector of the pattern (the product of the parents' inner decoding coefficients
        along every root-to-worker path) is measured by the code's own check (``_raw_decoding_matrix``: residual
        and cancellation) and accepted by the code's rule in ``dtype`` (``_accept``); raises
        :class:`~gradcodes.DecodingError` when it misses the tolerance of that dtype.

        ``sets=True`` (the runtimes' check, :class:`gradcodes._runtime.layout.TreeCheck`): ``mask`` marks exactly the
        workers whose messages were used (every parent's decoding set). When every used parent decoded from
        ``n - s`` children this is the decode of that responder set, measured by the very same call; a parent
        that stopped at a smaller decodable set (the ``"earliest"`` wait policy) has its own set's coefficients
        (:meth:`_tree_weights` with ``sets=True``), measured and accepted by the same functions.
        """
        mask = np.asarray(mask, dtype=bool)
        usable = self._usable(mask)
        F = np.flatnonzero(usable)
        if sets and not self._full_sets(usable):
            A = self._tree_weights(usable[None], sets=True)[0][0][None, :]
            res, canc = self._check_matrix(F, A)
        else:
            A, res, canc = self._raw_decoding_matrix(F, usable, self._decoder(None))
        dt = np.dtype(dtype) if np.dtype(dtype) != object else np.dtype(np.float64)
        terms = self._terms(A)
        self._accept(F, A, res, canc, dtype=dt, terms=terms)
        return 0.0 if self.exact else float(error_estimate(canc, res, dt, terms))

    def _full_sets(self, used: np.ndarray) -> bool:
        """Every parent whose message is used (the master and the marked inner workers) has exactly ``n - s``
        marked children (so the tree decoder of ``used`` decodes from exactly those)."""
        n, K = self.branching, self.branching - self.s
        par = np.concatenate([[True], used[: self.parents - 1]])
        cnt = used.reshape(self.parents, n).sum(axis=1)
        return bool(np.all(cnt[par] == K))

    def reachable(self, mask: np.ndarray) -> np.ndarray:
        """Responder masks (b, N) -> the responders whose every ancestor responds too (b, N).

        A straggler silences its subtree, so only these messages can reach the master; every decoder (the tree
        decoder and the generic ones on the flattened code) only sees them.

        Parameters
        ----------
        mask : array_like of bool, shape (b, N)
            Each row: the responders of one set.

        Returns
        -------
        ndarray of bool, shape (b, N)
            True for the responders whose parent, grandparent, ... up to level 1 all respond.

        Examples
        --------
        >>> import numpy as np, gradcodes as gc
        >>> code = gc.coded_reduce(2, 2, 1)      # workers 0, 1 at level 1; 2, 3 under 0; 4, 5 under 1
        >>> mask = np.array([[0, 1, 1, 1, 1, 1], [1, 1, 1, 0, 1, 1]], dtype=bool)
        >>> code.reachable(mask).astype(int).tolist()           # worker 0 straggles: 2 and 3 are cut off
        [[0, 1, 0, 0, 1, 1], [1, 1, 1, 0, 1, 1]]
        """
        mask = np.asarray(mask, dtype=bool)
        b, n = mask.shape[0], self.branching
        out = np.zeros_like(mask)
        alive = np.ones((b, 1), dtype=bool)
        for sl in self._slices:
            alive = (mask[:, sl].reshape(b, alive.shape[1], n) & alive[:, :, None]).reshape(b, -1)
            out[:, sl] = alive
        return out

    def _raw_decoding_matrix(self, F: np.ndarray, mask: np.ndarray, dec: Decoder) -> tuple[Any, float, float]:
        reach = self.reachable(mask[None])[0]
        return super()._raw_decoding_matrix(np.flatnonzero(reach), reach, dec)

    def _usable(self, mask: np.ndarray) -> np.ndarray:
        """Only reachable workers' messages are used by :meth:`decode` (rows below a straggler are never read)."""
        return self.reachable(mask[None])[0]

    def decoding_matrices(self, mask: np.ndarray, decoder: str | Decoder | None = None) -> Any:
        """Batched decoding matrices (b, 1, N); workers below a straggler get weight 0 whatever the decoder.

        Parameters
        ----------
        mask : ndarray of bool, shape (b, N)
            Each row: the responders of one set.
        decoder : str or Decoder, optional
            Default: the tree decoder.

        Returns
        -------
        ndarray, shape (b, 1, N)
            The decoding vectors of the flattened code.

        Examples
        --------
        >>> import gradcodes as gc
        >>> code = gc.coded_reduce(2, 2, 1)      # workers 0, 1 at level 1; 2, 3 under 0; 4, 5 under 1
        >>> import numpy as np
        >>> code.decoding_matrices(code.random_patterns(3, rng=0)).shape
        (3, 1, 6)
        """
        mask = np.asarray(mask, dtype=bool)
        if mask.ndim == 2 and mask.shape[1] == self.N:
            mask = self.reachable(mask)
        return super().decoding_matrices(mask, decoder)

    def used(self, responders: Responders) -> np.ndarray:
        """Bool mask (N,): the workers whose messages reach the master (each parent's first ``n - s``).

        Parameters
        ----------
        responders : iterable of int or bool mask
            The workers whose messages arrived.

        Returns
        -------
        ndarray of bool, shape (N,)
            True for the messages the tree decode uses.

        Examples
        --------
        >>> import gradcodes as gc
        >>> code = gc.coded_reduce(2, 2, 1)      # workers 0, 1 at level 1; 2, 3 under 0; 4, 5 under 1
        >>> code.used([1, 2, 3, 4, 5]).astype(int).tolist()       # worker 0 straggles: 2, 3 are cut off
        [0, 1, 0, 0, 1, 0]
        """
        F, mask = self._mask(responders)
        return self._tree_weights(mask[None])[1][0]

    def execute(self, responders: Responders, messages: MatrixLike, *, return_messages: bool = False) -> Any:
        """Run CR.Execute (Reisizadeh et al.) on the workers' own messages: the literal hierarchical reduction.

        Leaves send their own message; every internal node waits for its first ``n - s`` responding children,
        decodes their messages with the inner code and adds its own message; the master decodes its children.
        The result equals :meth:`decode` (to rounding; exactly for Fractions), and it is accepted by the same rule
        in the messages' dtype: a pattern whose tree decoding matrix misses the tolerance of that dtype raises
        :class:`~gradcodes.DecodingError`, as :meth:`decode` does.

        Parameters
        ----------
        responders : iterable of int or bool mask of length N
            Workers that did not straggle.
        messages : ndarray, shape (N, q)
            Every worker's own message (:meth:`encode`); rows of silenced workers are ignored.
        return_messages : bool
            Also return the (N, q) array of messages each worker sends up (zero rows for unused workers).

        Returns
        -------
        ndarray, shape (q,)

        Raises
        ------
        DecodingError
            When the responders' tree decode misses the tolerance in the messages' dtype.
        NonFiniteMessageError
            When a used worker's message holds NaN or infinite values (the result is not finite).
        GradcodesValueError
            If ``messages`` has not ``N`` rows, or ``responders`` is not a set of workers in ``[0, N)`` or a mask
            of length ``N``.

        Examples
        --------
        >>> import numpy as np, gradcodes as gc
        >>> code = gc.coded_reduce(2, 2, 1)      # workers 0, 1 at level 1; 2, 3 under 0; 4, 5 under 1
        >>> G = np.arange(8.0).reshape(code.k, 2)                   # four partial gradients of length 2
        >>> Y = code.encode(G)                                      # every worker's own message
        >>> code.execute([1, 2, 3, 4, 5], Y).tolist(), G.sum(axis=0).tolist()      # worker 0 straggles
        ([12.0, 16.0], [12.0, 16.0])
        """
        F, mask = self._mask(responders)
        M = self._check_data("messages", messages)
        if M.shape[0] != self.N:
            raise GradcodesValueError(f"messages must have N={self.N} rows (one per worker), got shape {M.shape}")
        self._accept_tree(mask, M.dtype if M.dtype != object else np.float64)   # decode's rule, messages' dtype
        _, used, _, coefs = self._tree_weights(mask[None], levels=True)
        used = used[0]
        q = M.shape[1]
        up = M.copy()
        up[~used] = 0
        n = self.branching
        for lev in range(self.L, 0, -1):
            sl = self._slices[lev - 1]
            C = self._matrix_for(M, coefs[lev - 1][0])                          # (n^{lev-1}, n)
            kids = up[sl].reshape(-1, n, q)
            dec = (C[:, :, None] * kids).sum(axis=1)                            # (n^{lev-1}, q)
            if lev == 1:
                out = dec[0]
            else:
                par = self._slices[lev - 2]
                up[par] = np.where(used[par][:, None], up[par] + dec, up[par])
        if M.dtype != object and not np.all(np.isfinite(out)):
            bad = [int(i) for i in np.flatnonzero(used & ~np.isfinite(M).all(axis=1))]
            raise NonFiniteMessageError(f"messages of responding workers {bad} contain NaN or infinite values", bad)
        return (out, up) if return_messages else out

    def _verify_hook(self, *, limit: int | None = None, samples: int = 2000, search: bool = True,
                     rng: RNGLike = None, rtol: float | None = None, decoder: Any = None, field: Any = None,
                     batch_size: int | None = None, dtype: Any = np.float64, stop_on_failure: bool = True,
                     progress: bool | None = None, time_budget: float | None = None, workers: int | None = None,
                     checkpoint: Any = None, checkpoint_every: float = 60.0, comm: Any = None,
                     **ignored: Any) -> TreeVerifyReport:
        """``gc.verify(code, ...)`` on a tree code runs :func:`verify_tree`: the verifier's engine on the tree's
        straggler-pattern model."""
        if decoder not in (None, "tree"):
            raise GradcodesValueError(f"decoder: verify checks the tree decoder of a CodedReduce code, got {decoder!r}")
        if field is not None:
            raise GradcodesValueError(
                "field: a CodedReduce code cannot be re-verified over another field; build it with "
                "an inner code over that field instead")
        return VERIFIERS["verify"](self, limit=limit, samples=samples, search=search, rng=rng, rtol=rtol,
                           batch_size=4096 if batch_size is None else batch_size, dtype=dtype,
                           stop_on_failure=stop_on_failure, progress=progress, time_budget=time_budget,
                           workers=workers, checkpoint=checkpoint, checkpoint_every=checkpoint_every, comm=comm)

    # ------------------------------------------------------------------ patterns (enumerated by TreeStructureMixin)
    def pattern_text(self, mask: np.ndarray) -> str:
        """Readable straggler pattern ``{parent: [straggling child indices t]}``, for the parents whose output
        reaches the master (``master`` or a node address; children are numbered ``0..n-1`` under their parent).

        Parameters
        ----------
        mask : ndarray of bool, shape (N,)
            One responder mask.

        Returns
        -------
        str
            ``{parent: [straggling children]}``.

        Raises
        ------
        GradcodesValueError
            If ``mask`` is not one mask of shape ``(N,)``.

        Examples
        --------
        >>> import gradcodes as gc
        >>> code = gc.coded_reduce(2, 2, 1)      # workers 0, 1 at level 1; 2, 3 under 0; 4, 5 under 1
        >>> import numpy as np
        >>> code.pattern_text(np.array([False, True, True, True, True, True]))
        '{master: [0]}'
        """
        mask = np.asarray(mask, dtype=bool)
        if mask.shape != (self.n,):
            raise GradcodesValueError(f"mask must be one responder mask of shape ({self.n},), got an array "
                                      f"of shape {mask.shape}")
        used = self._tree_weights(mask[None])[1][0]
        parts = []
        n = self.branching
        for p in range(self.parents):
            if p > 0 and not used[p - 1]:
                continue
            kids = np.arange(p * n, (p + 1) * n)
            st = [int(c) - p * n for c in kids if not mask[c]]
            if st:
                parts.append(f"{'master' if p == 0 else self.node(p - 1)}: {st}")
        return "{" + ", ".join(parts) + "}" if parts else "{no stragglers}"
