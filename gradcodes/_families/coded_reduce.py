"""CodedReduce (Reisizadeh, Prakash, Pedarsani & Avestimehr): gradient codes composed along a regular tree.

Spec §4. The master is the root of the ``(n, L)``-regular tree; every node at levels ``0..L-1`` has ``n`` children
and levels ``1..L`` are the ``N = n + n^2 + ... + n^L`` workers. Every parent spreads the data it is responsible
for over its children with an inner ``(n, s)`` gradient code, every worker also computes a share of its own, and
each parent decodes from any ``n - s`` children and adds its own message (hierarchical decoding). Every worker
then computes the same fraction ``r_CR`` of the dataset, the smallest possible on the tree (the converse in
:func:`coded_reduce_load`).

Nodes are addressed by tuples of child indices ``(t_1, ..., t_l)`` (the master is ``()``); workers are numbered in
breadth-first order, so the children of the master are workers ``0..n-1`` and the children of worker ``i`` are
workers ``(i+1) n .. (i+1) n + n - 1``. With *parent* ``p = 0`` the master and ``p = i + 1`` worker ``i``, the
children of parent ``p`` are workers ``p n .. p n + n - 1``.
"""

from __future__ import annotations

import itertools
import math
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

import numpy as np

from .._code import DecodingError, GradientCode, LinearCode
from .._decoders import Decoder
from .._io import REBUILDERS
from .._numerics import DEFAULT_RTOL, accepts, error_estimate
from .._registry import Scheme, register
from .._validate import check_int, check_real, check_seed

__all__ = ["coded_reduce", "coded_reduce_load", "CodedReduceCode", "TreeDecoder", "TreeVerifyReport",
           "verify_tree"]


# ----------------------------------------------------------------------------------------------------------
# the load (Theorem 1) and the allocation (CR.Allocate)


def _check_tree(n: Any, L: Any, s: Any) -> tuple[int, int, int]:
    n = check_int("n", n, 2)
    L = check_int("L", L, 1)
    s = check_int("s", s, 0, n - 1)
    return n, L, s


def _tree_fractions(q: Fraction, L: int) -> tuple[Fraction, list[Fraction]]:
    """``(r, [D_1..D_L])`` for ``D_1 = q``, ``D_{l+1} = q (D_l - r)``, ``D_L = r``: ``r = q^L / sum_{i<L} q^i``."""
    r = q**L / sum(q**i for i in range(L))
    D = [q]
    for _ in range(L - 1):
        D.append(q * (D[-1] - r))
    assert D[-1] == r
    return r, D


def coded_reduce_load(n: int, L: int, s: int) -> Fraction:
    r"""The CodedReduce computation load ``r_CR``: the fraction of the dataset every worker processes.

    With ``q = (s+1)/n``,

    .. math::

        r_{CR} = \frac{q^L (1-q)}{1-q^L} = \frac{(s+1)^L (n-s-1)}{n\,(n^L - (s+1)^L)}
        \quad (s+1 < n), \qquad r_{CR} = 1/L \quad (s = n-1).

    **Achievability** (:func:`coded_reduce`): the master spreads the dataset over its ``n`` children with an
    ``(n, s)`` gradient code, so a level-1 subtree is responsible for ``D_1 = q``; a level-``l`` node computes
    ``r`` itself and spreads the rest the same way, ``D_{l+1} = q (D_l - r)``; a leaf computes all it gets,
    ``D_L = r``. Solving gives ``r = q^L / (1 + q + ... + q^{L-1})``, the formula above.

    **Converse (optimality on the regular tree, any linear scheme, per-parent straggler model).** Call a data
    unit *robustly available* from node ``v`` if ``v`` computes it or it is robustly available from at least
    ``s+1`` children of ``v`` (otherwise ``s`` stragglers among the children can hide it, and a straggler hides
    its whole subtree). The master needs every unit robustly available from at least ``s+1`` of its children.
    Let ``R_l`` be the average amount robustly available from a level-``l`` node and ``r`` the largest load.
    Counting pairs (unit, child) gives ``R_1 >= q``, ``R_{l+1} >= q (R_l - r)`` and, at the leaves,
    ``R_L <= r``. The map ``x -> q (x - r)`` is increasing, so ``r >= q^L - r (q + ... + q^{L-1})``, i.e.
    ``r >= r_CR``. (Spec §4.2; the paper proves optimality on regular trees.)

    Parameters
    ----------
    n : int
        Children per node, ``n >= 2``.
    L : int
        Depth (levels of workers), ``L >= 1``.
    s : int
        Stragglers tolerated among each parent's children, ``0 <= s <= n - 1``.

    Returns
    -------
    fractions.Fraction

    Examples
    --------
    >>> import gradcodes as gc
    >>> gc.coded_reduce_load(3, 2, 1), gc.coded_reduce_load(12, 2, 5), gc.coded_reduce_load(4, 2, 3)
    (Fraction(4, 15), Fraction(1, 6), Fraction(1, 2))
    >>> gc.coded_reduce_load(5, 1, 2)          # L = 1 is plain gradient coding: (s+1)/n
    Fraction(3, 5)
    """
    n, L, s = _check_tree(n, L, s)
    return _tree_fractions(Fraction(s + 1, n), L)[0]


def _lcm_den(values: list[Fraction]) -> int:
    out = 1
    for v in values:
        out = math.lcm(out, Fraction(v).denominator)
    return out


def _min_units(k_inner: int, r: Fraction, D: list[Fraction]) -> int:
    """``P_min``: every list length ``D_l P``, own share ``r P`` and chunk length ``(D_l - r) P / k`` integral."""
    vals = [r, Fraction(1, k_inner), *D]
    vals += [(d - r) / k_inner for d in D[:-1]]
    return _lcm_den(vals)


def _allocate(n: int, L: int, P: int, r: Fraction, B: np.ndarray, supports: list[np.ndarray],
              zero: Any) -> tuple[list[np.ndarray], list[np.ndarray]]:
    """CR.Allocate (spec §4.3): the ordered (unit, coefficient) list of every worker, breadth-first.

    Returns ``(units, coefs)``: one integer array and one coefficient array per worker (its *whole* assigned
    list; the first ``r P`` entries are its own share, and leaves own everything).
    """
    k = B.shape[1]
    own_len = int(r * P)
    units: list[np.ndarray] = []
    coefs: list[np.ndarray] = []
    # parent p = 0 is the master (list = all units, coefficient 1, nothing of its own)
    parent_units = [np.arange(P, dtype=np.int64)]
    parent_coefs = [np.full(P, zero + 1, dtype=B.dtype)]
    parent_own = [0]
    p = 0
    level_sizes = [n**lev for lev in range(1, L + 1)]
    N = sum(level_sizes)
    internal = N - n**L
    while p < 1 + internal:
        u, c, own = parent_units[p], parent_coefs[p], parent_own[p]
        rest_u, rest_c = u[own:], c[own:]
        if rest_u.size % k:
            raise AssertionError("allocation: chunk lengths are not integral (P is not a multiple of P_min)")
        ru = rest_u.reshape(k, -1)
        rc = rest_c.reshape(k, -1)
        for t in range(n):
            sup = supports[t]
            cu = ru[sup].ravel()
            cc = (rc[sup] * B[t, sup][:, None]).ravel()
            units.append(cu)
            coefs.append(cc)
            worker = len(units) - 1
            if worker < internal:          # an internal node: it becomes a parent later (BFS order)
                parent_units.append(cu)
                parent_coefs.append(cc)
                parent_own.append(own_len)
        p += 1
    return units, coefs


# ----------------------------------------------------------------------------------------------------------
# the hierarchical decoder


def _level_slices(n: int, L: int) -> list[slice]:
    out, lo = [], 0
    for lev in range(1, L + 1):
        out.append(slice(lo, lo + n**lev))
        lo += n**lev
    return out


class TreeDecoder(Decoder):
    """Hierarchical CodedReduce decoding (spec §4.4), batched over responder masks.

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
        W = code._tree_weights(mask)[0]
        return W[:, None, :]


class CodedReduceCode(LinearCode):
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
    """

    def __init__(self, B: Any, *, branching: int, L: int, s: int, inner: GradientCode, P: int,
                 lists: tuple[list[np.ndarray], list[np.ndarray]] | None = None, rtol: float = DEFAULT_RTOL,
                 name: str | None = None, params: dict[str, Any] | None = None) -> None:
        n, L, s = _check_tree(branching, L, s)
        N = n * (n**L - 1) // (n - 1)
        dec = TreeDecoder(exact=inner.exact)
        super().__init__(B, field=inner.field, name=name or f"coded_reduce(n={n}, L={L}, s={s})",
                         family="coded_reduce", params=params or {"n": n, "L": L, "s": s, "P": P},
                         decoders=[dec], default_decoder="tree")
        if self.n != N or self.k != P:
            raise ValueError(f"B must be N x P = {N} x {P} for the ({n}, {L}) tree, got {self.n} x {self.k}")
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

    # ------------------------------------------------------------------ structure
    @property
    def parents(self) -> int:
        """Number of parents (the master and the internal workers): ``(n^L - 1)/(n - 1)``."""
        return 1 + self.N - self.branching**self.L

    def node(self, worker: int) -> tuple[int, ...]:
        """The tuple address ``(t_1, ..., t_l)`` of a worker (breadth-first index)."""
        worker = check_int("worker", worker, 0, self.N - 1)
        n = self.branching
        path: list[int] = []
        p = worker + 1            # parent numbering: master = 0, worker i = i + 1
        while p > 0:
            path.append((p - 1) % n)
            p = (p - 1) // n
        return tuple(reversed(path))

    def worker(self, node: tuple[int, ...]) -> int:
        """The breadth-first index of the worker at address ``node``."""
        node = tuple(node)
        if not 1 <= len(node) <= self.L:
            raise ValueError(f"node must have between 1 and L={self.L} entries, got {node!r}")
        p = 0
        for t in node:
            t = check_int("node entry", t, 0, self.branching - 1)
            p = p * self.branching + t + 1
        return p - 1

    def level(self, worker: int) -> int:
        """The level (1..L) of a worker."""
        return len(self.node(worker))

    def children(self, worker: int | None) -> np.ndarray:
        """The children of a worker (``None`` = the master); empty for a leaf."""
        p = 0 if worker is None else check_int("worker", worker, 0, self.N - 1) + 1
        if p >= self.parents:
            return np.zeros(0, dtype=np.int64)
        return np.arange(p * self.branching, (p + 1) * self.branching)

    def parent(self, worker: int) -> int | None:
        """The parent of a worker (``None`` for the master)."""
        worker = check_int("worker", worker, 0, self.N - 1)
        p = worker // self.branching
        return None if p == 0 else p - 1

    def assigned(self, worker: int) -> list[tuple[int, Any]]:
        """The ordered list ``[(unit, coefficient), ...]`` CR.Allocate gives a worker (spec §4.3)."""
        worker = check_int("worker", worker, 0, self.N - 1)
        if self._lists is None:
            raise ValueError("this code was built from a matrix; it has no allocation lists")
        u, c = self._lists[0][worker], self._lists[1][worker]
        return [(int(a), b) for a, b in zip(u, c, strict=True)]

    def own(self, worker: int) -> list[tuple[int, Any]]:
        """The part of :meth:`assigned` the worker computes itself (its first ``r P`` entries)."""
        lst = self.assigned(worker)
        return lst[: int(self.r * self.P)]

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
            return np.full(shape, Fraction(0), dtype=object)
        return np.zeros(shape, dtype=self.B.dtype)

    def _tree_weights(self, mask: np.ndarray, levels: bool = False) -> tuple[Any, np.ndarray, np.ndarray, list]:
        """Hierarchical decoding of a batch of responder masks (b, N).

        Returns ``(W, used, bad_parent, coefs)``: the flattened decoding vectors ``W`` (b, N); ``used`` (b, N),
        the workers whose message reaches the master; ``bad_parent`` (b,), the first parent (0 = master,
        ``i+1`` = worker ``i``) with too few responding children, or -1; and (with ``levels=True``) the
        per-level coefficient arrays (b, n^{l-1}, n) a parent applies to its children's messages.
        """
        mask = np.asarray(mask, dtype=bool)
        b = mask.shape[0]
        n, K = self.branching, self.branching - self.s
        W = self._zeros((b, self.N))
        used_all = np.zeros((b, self.N), dtype=bool)
        bad_parent = np.full(b, -1, dtype=np.int64)
        coef_levels = []
        w_parent = np.full((b, 1), Fraction(1), dtype=object) if self.field == "rational" else \
            np.ones((b, 1), dtype=self.B.dtype)
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
            used = kids & (np.cumsum(kids, axis=2) <= K) & ~bad[:, :, None]
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
            raise ValueError(f"responders: {self._describe_parent(int(bad))} has only {len(got)} responding "
                             f"children {got} of {kids.tolist()}; the tree tolerates at most s={self.s} "
                             f"stragglers per parent (needs n - s = {self.branching - self.s})")
        return F, mask

    def _accept(self, F: np.ndarray, A: Any, res: float, canc: float) -> None:
        if self.exact:
            if res != 0:
                raise DecodingError(f"responders {F.tolist()} cannot recover the gradient (exact "
                                    f"{self.field} arithmetic)", F, res)
            return
        if not accepts(np.array(canc), np.array(res), self.rtol):
            est = float(error_estimate(canc, res))
            raise DecodingError(f"responders {F.tolist()} cannot recover the gradient to rtol={self.rtol:g}: "
                                f"residual {res:.3g}, cancellation {canc:.3g}, predicted error {est:.3g}", F, res)

    def reachable(self, mask: np.ndarray) -> np.ndarray:
        """Responder masks (b, N) -> the responders whose every ancestor responds too (b, N).

        A straggler silences its subtree, so only these messages can reach the master; every decoder (the tree
        decoder and the generic ones on the flattened code) only sees them."""
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

    def decoding_matrices(self, mask: np.ndarray, decoder: str | Decoder | None = None) -> Any:
        """Batched decoding matrices (b, 1, N); workers below a straggler get weight 0 whatever the decoder."""
        mask = np.asarray(mask, dtype=bool)
        if mask.ndim == 2 and mask.shape[1] == self.N:
            mask = self.reachable(mask)
        return super().decoding_matrices(mask, decoder)

    def decode(self, responders: Any, messages: Any, **kwargs: Any) -> Any:
        """As :meth:`gradcodes.LinearCode.decode`; rows of workers below a straggler are ignored (even NaN).

        ``messages`` is the full (N, q) buffer or one row per entry of ``responders``, in that order.
        """
        order = None
        if not (isinstance(responders, np.ndarray) and responders.dtype == bool):
            order = responders.tolist() if isinstance(responders, np.ndarray) else list(responders)
        _, mask = self._mask(responders if order is None else order)
        if order is not None and len(order) != self.N and np.ndim(messages) == 2 and \
                np.shape(messages)[0] == len(order):
            M = self._check_data("messages", messages)
            full = self._zeros((self.N, M.shape[1])) if M.dtype == object else np.zeros((self.N, M.shape[1]),
                                                                                       dtype=M.dtype)
            full[np.asarray(order, dtype=np.int64)] = M
            messages = full
        return super().decode(self.reachable(mask[None])[0], messages, **kwargs)

    def used(self, responders: Any) -> np.ndarray:
        """Bool mask (N,): the workers whose messages reach the master (each parent's first ``n - s``)."""
        F, mask = self._mask(responders)
        return self._tree_weights(mask[None])[1][0]

    def execute(self, responders: Any, messages: Any, *, return_messages: bool = False) -> Any:
        """Run CR.Execute (spec §4.4) on the workers' own messages: the literal hierarchical reduction.

        Leaves send their own message; every internal node waits for its first ``n - s`` responding children,
        decodes their messages with the inner code and adds its own message; the master decodes its children.
        The result equals :meth:`decode` (to rounding; exactly for Fractions).

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
        """
        F, mask = self._mask(responders)
        M = self._check_data("messages", messages)
        if M.shape[0] != self.N:
            raise ValueError(f"messages must have N={self.N} rows (one per worker), got shape {M.shape}")
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
            raise ValueError("messages of responding workers contain NaN or infinite values")
        return (out, up) if return_messages else out

    def _verify_hook(self, *, limit: int | None = None, samples: int = 2000, search: bool = True,
                     seed: Any = 0, rtol: float | None = None, decoder: Any = None, field: Any = None,
                     batch_size: int | None = None, **ignored: Any) -> TreeVerifyReport:
        """``gc.verify(code, ...)`` on a tree code runs :func:`verify_tree` (its own straggler model)."""
        if decoder not in (None, "tree"):
            raise ValueError(f"decoder: verify checks the tree decoder of a CodedReduce code, got {decoder!r}")
        if field is not None:
            raise ValueError("field: a CodedReduce code cannot be re-verified over another field; build it with "
                             "an inner code over that field instead")
        return verify_tree(self, limit=100_000 if limit is None else limit, samples=samples, search=search,
                           seed=seed, rtol=rtol, batch=4096 if batch_size is None else batch_size)

    # ------------------------------------------------------------------ patterns
    def patterns_total(self) -> int:
        """Number of straggler patterns: every parent picks at most ``s`` straggling children.

        Choices below a straggling parent are counted too (they do not change the outcome), as in the spec
        (the n=3, L=2, s=1 tree has ``4^4 = 256``).
        """
        per = sum(math.comb(self.branching, j) for j in range(self.s + 1))
        return per**self.parents

    def straggler_options(self) -> np.ndarray:
        """All straggler sets of one parent's children (size <= s) as bool rows (True = straggler).

        Raises ValueError beyond 10^6 sets (no dense C(n, s)-sized tables; use :meth:`random_patterns`)."""
        n = self.branching
        count = sum(math.comb(n, j) for j in range(self.s + 1))
        if count > 1_000_000:
            raise ValueError(f"straggler_options: {count:,} straggler sets of size <= s={self.s} among n={n} "
                             "children (more than 10^6); use random_patterns")
        rows = []
        for j in range(self.s + 1):
            for S in itertools.combinations(range(n), j):
                row = np.zeros(n, dtype=bool)
                row[list(S)] = True
                rows.append(row)
        return np.array(rows)

    def random_patterns(self, count: int, seed: Any = None) -> np.ndarray:
        """``count`` random responder masks (count, N): each parent picks a straggler set uniformly among the
        sets of size at most ``s`` (no table of sets is built)."""
        count = check_int("count", count, 0)
        rng = check_seed(seed)
        n = self.branching
        sizes = np.arange(self.s + 1)
        w = np.array([math.comb(n, j) for j in sizes], dtype=float)
        j = rng.choice(sizes, size=(count, self.parents), p=w / w.sum())
        keys = rng.random((count, self.parents, n))
        ranks = np.argsort(np.argsort(keys, axis=2), axis=2)
        strag = ranks < j[:, :, None]
        return ~strag.reshape(count, self.N)

    def pattern_text(self, mask: np.ndarray) -> str:
        """Readable straggler pattern ``{parent: [straggling child indices t]}``, for the parents whose output
        reaches the master (``master`` or a node address; children are numbered ``0..n-1`` under their parent)."""
        mask = np.asarray(mask, dtype=bool)
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


# ----------------------------------------------------------------------------------------------------------
# the constructor


def _default_inner(n: int, s: int, field: str, seed: Any) -> GradientCode:
    from .repetition import cyclic_repetition, fractional_repetition

    if n % (s + 1) == 0:
        return fractional_repetition(n, s, field=field)
    if field == "real":
        # Spec §4.3 suggests the real cyclic MDS code (n - s odd) or Tandon's cyclic repetition with a random H.
        # Their cancellation grows with n and s (worst searched: MDS 2.6e3 at (25, 6), 1e6 at (31, 14); random
        # cyclic repetition 14 at (3, 1), 2e3 at (10, 4)) and multiplies along the tree ((3, 6, 1): 7e7, fails
        # float64; (30, 2, 15): 7e11, fails). The Ye-Abbe Fourier code with m = 1 has the same load s + 1, every
        # (n, s), and a proven cancellation bound (64 at (25, 6), 3.8e3 at (31, 14); at most 2x the MDS code's on
        # the small cases measured).
        from .ye_abbe import ye_abbe

        return ye_abbe(n, s, 1)
    if field == "rational":
        # An exact H (integers, H 1 = 0) drawn from the seed; any n - s rows of the code must span 1, which
        # holds with probability 1 for continuous H but only generically for integer H, so the drawn code is
        # verified exactly and redrawn if needed. (A float H converted to Fractions would not satisfy
        # H 1 = 0 exactly.)
        from .._verify import verify

        rng = check_seed(seed)
        for _ in range(50):
            H = rng.integers(-50, 51, size=(s, n - 1))
            H = np.concatenate([H, -H.sum(axis=1, keepdims=True)], axis=1)
            try:
                code = cyclic_repetition(n, s, H=H.tolist(), field="rational")
            except ValueError:
                continue
            if verify(code, limit=20_000).exact:
                return code
        raise ValueError(f"could not draw an exact rational cyclic-repetition inner code for n={n}, s={s}; "
                         "pass inner= explicitly")
    raise ValueError(f"field must be 'real' or 'rational', got {field!r}")  # pragma: no cover - checked by caller


def coded_reduce(n: int, L: int, s: int, inner: GradientCode | None = None, *, P: int | None = None,
                 field: str | None = None, seed: Any = 0) -> CodedReduceCode:
    r"""CodedReduce: gradient codes composed along the ``(n, L)``-regular tree (spec §4).

    The master is the root; every node at levels ``0..L-1`` has ``n`` children; the ``N = n + ... + n^L``
    workers are the nodes at levels ``1..L``. The dataset is cut into ``P`` units. **CR.Allocate** gives every
    node an ordered list of (unit, coefficient) pairs: the master's is every unit with coefficient 1; a node
    at level ``1 <= l < L`` keeps the first ``r P`` entries as its own share and cuts the rest into ``k`` equal
    chunks ``C_0..C_{k-1}``; child ``t`` gets the chunks ``kappa`` with ``B_inner[t, kappa] != 0``, in
    increasing ``kappa``, scaled by ``B_inner[t, kappa]``; a leaf owns its whole list. Every worker computes
    ``r P`` units (:func:`coded_reduce_load`), the optimum on the tree.

    **CR.Execute**: a worker computes ``sum c g_u`` over its own share; an internal node waits for any ``n-s``
    children ``F`` and sends its own message plus ``sum_{t in F} a_F[t] msg_t``; the master's
    ``sum_{t in F} a_F[t] msg_t`` is exactly ``sum_u g_u`` (induction: ``sum_t a_F[t] B_inner[t, kappa] = 1``).

    Parameters
    ----------
    n : int
        Children per node, ``n >= 2``.
    L : int
        Levels of workers, ``L >= 1`` (``L = 1`` is master--worker gradient coding with the inner code).
    s : int
        Stragglers tolerated among the children of every parent, ``0 <= s <= n - 1``.
    inner : GradientCode, optional
        Any exact ``(n, s)`` gradient code with ``m = 1`` and equal row weights. Default: fractional
        repetition if ``(s+1) | n``; else, over the reals, the Ye–Abbe Fourier code ``ye_abbe(n, s, 1)`` (load
        ``s + 1``, proven cancellation bound; spec §4.3 suggests the real cyclic MDS code or a random cyclic
        repetition, whose cancellation grows faster and compounds along the tree); with ``field="rational"``,
        Tandon's cyclic repetition with a random integer ``H`` drawn from ``seed``.
    P : int, optional
        Number of data units, a positive multiple of the smallest admissible ``P_min`` (default ``P_min``).
    field : {"real", "rational"}, optional
        Field of the default inner code (``"rational"`` for exact arithmetic). With ``inner`` given the tree
        takes the inner code's field, and a different ``field`` is an error. Default ``"real"``.
    seed : int or numpy Generator, optional
        Seed of the default rational cyclic-repetition inner code (unused otherwise).

    Returns
    -------
    CodedReduceCode
        ``n`` = ``N`` workers, ``k`` = ``P`` units, ``load`` = ``r P``.

    Examples
    --------
    The spec's worked example (§4.5), in exact arithmetic:

    >>> import gradcodes as gc
    >>> inner = gc.cyclic_repetition(3, 1, H=[[1, 1, -2]], field="rational")
    >>> code = gc.coded_reduce(3, 2, 1, inner)
    >>> code.N, code.P, code.r, code.load
    (12, 15, Fraction(4, 15), 4)
    >>> [(u, str(c)) for u, c in code.assigned(code.worker((0, 1)))]
    [(6, '-1'), (7, '-1'), (8, '-1/2'), (9, '-1/2')]
    >>> gc.verify_tree(code).exact        # all 256 straggler patterns recover the sum exactly
    True

    Encode and decode through the flattened code (worker 1 and worker 3 straggle):

    >>> import numpy as np
    >>> G = np.arange(45.0).reshape(15, 3)           # one partial gradient per data unit
    >>> code = gc.coded_reduce(3, 2, 1)              # default inner code: ye_abbe(3, 1, 1)
    >>> Y = code.encode(G)
    >>> responders = [i for i in range(12) if i not in (1, 3)]
    >>> np.allclose(code.decode(responders, Y), G.sum(axis=0))
    True
    """
    n, L, s = _check_tree(n, L, s)
    check_seed(seed)                     # validated even when the default inner code does not use it
    if inner is None:
        fld = "real" if field is None else field
        if fld not in ("real", "rational"):
            raise ValueError(f"field must be 'real' or 'rational', got {field!r}")
        inner = _default_inner(n, s, fld, seed)
    else:
        if not isinstance(inner, GradientCode):
            raise TypeError(f"inner must be an exact GradientCode (e.g. gc.cyclic_repetition(n, s)), got "
                            f"{type(inner).__name__}")
        if inner.n != n:
            raise ValueError(f"inner must have n={n} workers (one per child), got an inner code with "
                             f"n={inner.n}")
        if inner.s != s:
            raise ValueError(f"inner must tolerate exactly s={s} stragglers, got an inner code with s={inner.s}")
        if inner.m != 1:
            raise ValueError(f"inner must have m=1 (whole-gradient messages), got m={inner.m}")
        if field is not None and field != inner.field:
            raise ValueError(f"field={field!r} contradicts the inner code's field {inner.field!r}; the tree "
                             "takes the inner code's field (omit field, or build the inner code over that field)")
    if inner.field not in ("real", "complex", "rational"):
        raise ValueError(f"inner must be over the real, complex or rational field, got {inner.field}")
    loads = np.asarray(inner.loads)
    if np.any(loads != loads[0]):
        raise ValueError(f"inner must give every worker the same number of partitions (equal loads on the "
                         f"tree), got loads {loads.tolist()}")
    k = inner.k
    q = Fraction(int(loads[0]), k)
    r, D = _tree_fractions(q, L)
    P_min = _min_units(k, r, D)
    if P is None:
        P = P_min
    else:
        P = check_int("P", P, 1)
        if P % P_min:
            raise ValueError(f"P must be a positive multiple of P_min={P_min} for (n, L, s)=({n}, {L}, {s}) "
                             f"with this inner code, got P={P}")
    Bi = inner.B
    if inner.field == "rational":
        zero: Any = Fraction(0)
        Bi = np.asarray(Bi, dtype=object)
    else:
        Bi = np.asarray(Bi)
        zero = Bi.dtype.type(0)
    supports = [np.flatnonzero(np.asarray(row != 0)) for row in Bi]
    units, coefs = _allocate(n, L, P, r, Bi, supports, zero)
    N = len(units)
    own_len = int(r * P)
    n_leaf = n**L
    if inner.field == "rational":
        B = np.full((N, P), Fraction(0), dtype=object)
    else:
        B = np.zeros((N, P), dtype=Bi.dtype)
    for v in range(N):
        share = slice(None) if v >= N - n_leaf else slice(0, own_len)
        B[v, units[v][share]] = coefs[v][share]
    params = {"n": n, "L": L, "s": s, "P": P, "inner": _inner_record(inner)}
    return CodedReduceCode(B, branching=n, L=L, s=s, inner=inner, P=P, lists=(units, coefs),
                           params=params)


def _inner_record(inner: GradientCode) -> dict[str, Any]:
    """A JSON-serialisable record of the inner code (its family, parameters and exact matrix)."""
    return {"family": inner.family, "params": dict(inner.params), "field": inner.field, "s": int(inner.s),
            "B": [[str(x) if inner.field == "rational" else repr(complex(x) if inner.field == "complex"
                                                                  else float(x)) for x in row]
                  for row in np.asarray(inner.B)]}


def _from_record(n: int, L: int, s: int, P: int, inner: dict[str, Any] | None = None) -> CodedReduceCode:
    """Rebuild a saved tree code (``gradcodes.load``): the inner code from its family if that reproduces the
    saved matrix, else as a plain GradientCode with that matrix (generic decoders)."""
    if inner is None:
        return coded_reduce(n, L, s, P=P)
    parse = {"rational": Fraction, "complex": complex}.get(inner["field"], float)
    Bi = [[parse(x) for x in row] for row in inner["B"]]
    code = None
    try:
        from .._registry import get_scheme

        code = get_scheme(inner["family"]).build(**inner["params"])
        if np.shape(code.B) != np.shape(Bi) or not all(
                a == b for a, b in zip(np.asarray(code.B).flat, np.asarray(Bi, dtype=object).flat, strict=True)):
            code = None
    except (TypeError, ValueError, KeyError):
        code = None
    if code is None:
        code = GradientCode(np.asarray(Bi, dtype=object if inner["field"] == "rational" else None), inner["s"],
                            field=inner["field"], name=inner["family"], family=inner["family"])
    return coded_reduce(n, L, s, code, P=P)


REBUILDERS["coded_reduce"] = _from_record


# ----------------------------------------------------------------------------------------------------------
# the verifier


@dataclass
class TreeVerifyReport:
    """Outcome of :func:`verify_tree`.

    Attributes
    ----------
    exact : bool
        Every pattern checked recovers the sum (exactly for rational codes, to tolerance for float ones), and
        the loads and allocation check out.
    exhaustive : bool
        All ``patterns_total`` patterns were checked.
    patterns_checked, patterns_total : int
        Straggler patterns checked / in the model (every parent picks at most ``s`` straggling children).
    distinct_checked : int
        Distinct effective decodings among the checked patterns (patterns that differ only below a straggler,
        or only in children a parent does not need, decode identically).
    worst_residual : float
        Largest ``max |A B - 1|`` found (0 in exact arithmetic when all pass).
    worst_pattern : str
        The pattern attaining it (``{parent: straggling children}``).
    worst_cancellation : float
        Largest cancellation factor ``sum_v |A_v| ||B_v||_1 / P`` found (>= 1), with its pattern in
        ``worst_cancellation_pattern``; float decodes lose about ``u * canc`` relative accuracy.
    error_estimate : float
        ``u * worst_cancellation + worst_residual`` (float64 ``u``).
    failures : list of str
        The first failing patterns (empty when ``exact``).
    loads_equal : bool
        Every worker stores exactly ``load`` units.
    allocation_ok : bool
        Row ``v`` of ``B`` is exactly worker ``v``'s own share of the CR.Allocate list.
    load, load_fraction, load_lower_bound
        ``r P`` units, ``r``, and the optimum ``r_CR`` (Fraction); ``meets_lower_bound`` = ``r == r_CR``.
    seconds : float
    """

    name: str
    exact: bool
    exhaustive: bool
    patterns_checked: int
    patterns_total: int
    distinct_checked: int
    worst_residual: float
    worst_pattern: str
    worst_cancellation: float
    worst_cancellation_pattern: str
    error_estimate: float
    failures: list[str]
    loads_equal: bool
    allocation_ok: bool
    load: int
    load_fraction: Fraction
    load_lower_bound: Fraction
    meets_lower_bound: bool
    field: str
    seconds: float
    N: int = 0
    s: int = 0
    rtol: float = DEFAULT_RTOL
    notes: list[str] = field(default_factory=list)

    @property
    def verdict(self) -> str:
        """One word, as :attr:`gradcodes.VerifyReport.verdict`: ``exact`` (exact arithmetic), ``ok`` (float
        decodes within ``rtol``), ``inaccurate`` (residuals within ``rtol`` but cancellation pushes the predicted
        error above it) or ``FAILS`` (including a load/allocation mismatch)."""
        if self.exact:
            return "exact" if self.field == "rational" else "ok"
        if self.loads_equal and self.allocation_ok and self.worst_residual <= self.rtol:
            return "inaccurate"
        return "FAILS"

    def __bool__(self) -> bool:
        return self.exact

    def tour_row(self) -> dict[str, Any]:
        """The tour's columns."""
        bound = self.load_lower_bound * (Fraction(self.load) / self.load_fraction)
        return {
            "scheme": self.name, "n": self.N, "s": f"{self.s}/parent", "m": 1,
            "load / bound": f"{self.load} / {bound} units",
            "sets checked": f"{self.patterns_checked:,} tree patterns",
            "exhaustive": "yes" if self.exhaustive else "no",
            "result": self.verdict,
            "worst residual": f"{self.worst_residual:.1e}",
            "error est.": f"{self.error_estimate:.1e}",
            "seconds": f"{self.seconds:.2f}",
        }

    def __str__(self) -> str:
        mode = "exhaustive" if self.exhaustive else "sampled + worst-case search"
        lines = [
            f"verify_tree: {self.name} [{self.field}]",
            f"  recovery      : {self.verdict.upper()} ({mode}: {self.patterns_checked} of "
            f"{self.patterns_total} straggler patterns, {self.distinct_checked} distinct decodings)",
            f"  worst residual: {self.worst_residual:.3g} at {self.worst_pattern}",
            f"  cancellation  : {self.worst_cancellation:.3g} at {self.worst_cancellation_pattern} "
            f"(float64 error estimate {self.error_estimate:.2e})",
            f"  load          : {self.load} units = {self.load_fraction} of the data per worker; optimum "
            f"r_CR = {self.load_lower_bound}; {'optimal' if self.meets_lower_bound else 'NOT optimal'}; "
            f"equal loads: {self.loads_equal}; allocation matches B: {self.allocation_ok}",
        ]
        if self.failures:
            lines.append("  failures      : " + "; ".join(self.failures))
        lines += ["  note: " + t for t in self.notes]
        lines.append(f"  time          : {self.seconds:.2f} s")
        return "\n".join(lines)


def _exhaustive_masks(code: CodedReduceCode, batch: int) -> Iterator[np.ndarray]:
    opts = code.straggler_options()
    S1 = opts.shape[0]
    total = code.patterns_total()
    par = code.parents
    for lo in range(0, total, batch):
        idx = np.arange(lo, min(total, lo + batch), dtype=np.int64)
        digits = np.empty((idx.size, par), dtype=np.int64)
        rest = idx.copy()
        for j in range(par - 1, -1, -1):
            digits[:, j] = rest % S1
            rest //= S1
        yield ~opts[digits].reshape(idx.size, code.N)


def _special_masks(code: CodedReduceCode) -> np.ndarray:
    """Structured patterns: no stragglers, and the same s consecutive (cyclically) children at every parent."""
    n, s = code.branching, code.s
    rows = [np.ones(code.N, dtype=bool)]
    for t in range(n if s else 0):
        kid = np.ones(n, dtype=bool)
        kid[[(t + j) % n for j in range(s)]] = False
        rows.append(np.tile(kid, code.parents))
    return np.array(rows)


def _targeted_masks(code: CodedReduceCode, batch: int) -> Iterator[np.ndarray]:
    """One pattern per worker that forces the worker's message into use (all other parents: no stragglers).

    Along the worker's path, every ancestor loses the ``s`` children cyclically *preceding* the path child
    ``t`` (``t-1, ..., t-s mod n``); then ``t`` is among the ``n - s`` smallest-index responders, and decoders
    that prefer small indices (e.g. fractional repetition's one-per-group rule) must use it. Random patterns
    almost never reach such workers (for n = 12, s = 5 a leaf may need 3 + 4 specific stragglers), so a
    corrupted share there would go unnoticed without these. Yields (b, N) masks.
    """
    n, s = code.branching, code.s
    for lo in range(0, code.N, batch):
        hi = min(code.N, lo + batch)
        out = np.ones((hi - lo, code.N), dtype=bool)
        for v in range(lo, hi):
            w = v
            while True:
                par, child = divmod(w, n)       # parent number (0 = master, i + 1 = worker i), child index
                for j in range(1, s + 1):
                    out[v - lo, par * n + (child - j) % n] = False
                if par == 0:
                    break
                w = par - 1
        yield out


class _Tracker:
    def __init__(self, code: CodedReduceCode, rtol: float, max_failures: int) -> None:
        self.code = code
        self.rtol = rtol
        self.max_failures = max_failures
        self.failures: list[str] = []
        self.checked = 0
        self.worst_res = 0.0
        self.worst_res_mask: np.ndarray | None = None
        self.worst_canc = 0.0
        self.worst_canc_mask: np.ndarray | None = None
        self.seen: set[bytes] = set()
        Bf = code.float_B() if code.field != "complex" else np.asarray(code.B)
        self.row_l1 = np.abs(Bf).sum(axis=1)
        self.Bf = Bf
        self.exactB = code.B if code.exact else None

    def _exact_residuals(self, W: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Exact ``max |W B - 1|`` per row for Fraction matrices, computed with integers.

        ``B = B_int / d_B`` and each row ``W_i = W_int,i / d_i`` (``d`` = lcm of the denominators); then
        ``W_i B = 1`` iff ``W_int,i B_int = d_i d_B`` entrywise. The product runs in int64 when the sizes
        provably fit, else in Python integers (object arrays); never in Fractions.
        """
        if not hasattr(self, "_Bint"):
            num = np.frompyfunc(lambda v: v.numerator, 1, 1)(self.code.B)
            den = np.frompyfunc(lambda v: v.denominator, 1, 1)(self.code.B)
            dB = 1
            for d in set(den.flat):
                dB = math.lcm(dB, int(d))
            self._Bint = num * (dB // den)           # object array of Python ints
            self._dB = dB
        num = np.frompyfunc(lambda v: Fraction(v).numerator, 1, 1)(W)
        den = np.frompyfunc(lambda v: Fraction(v).denominator, 1, 1)(W)
        dW = np.array([math.lcm(*map(int, set(row))) for row in den], dtype=object)
        Wint = num * (dW[:, None] // den)
        Wf = (num.astype(np.float64) / den.astype(np.float64)) if W.size else np.zeros(W.shape)
        bound = (float(np.max(np.abs(Wint.astype(np.float64)), initial=0)) *
                 float(np.max(np.abs(self._Bint.astype(np.float64)), initial=0)) * self.code.N)
        fits = bound < 2.0**62 and float(max(dW, default=1)) * self._dB < 2.0**62
        if fits:
            R = Wint.astype(np.int64) @ self._Bint.astype(np.int64)
            target = dW.astype(np.int64)[:, None] * np.int64(self._dB)
        else:
            R = Wint @ self._Bint
            target = dW[:, None] * self._dB
        ok = np.all(R == target, axis=1)
        res = np.zeros(W.shape[0])
        for i in np.flatnonzero(~ok):
            row = R[i]
            res[i] = float(max(abs(Fraction(int(x), int(dW[i]) * self._dB) - 1) for x in row))
        return res, Wf

    def check(self, masks: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Residual and cancellation of each mask (b,); records the worst and the failures."""
        code = self.code
        W, used, bad, _ = code._tree_weights(masks)
        b = masks.shape[0]
        self.checked += b
        # distinct decodings: identical used-sets give identical decoding vectors
        uniq, first, inv = np.unique(used, axis=0, return_index=True, return_inverse=True)
        inv = inv.reshape(-1)
        for row in uniq:
            self.seen.add(np.packbits(row).tobytes())
        Wu = W[first]
        if code.exact:
            res_u, Wf = self._exact_residuals(Wu)
        else:
            Wf = Wu
            res_u = np.abs(Wu @ self.Bf - 1).max(axis=1)
        canc_u = (np.abs(Wf) @ self.row_l1) / code.P
        res = res_u[inv]
        canc = canc_u[inv]
        res[bad >= 0] = np.inf
        if code.exact:
            fail = res != 0
        else:
            fail = ~accepts(canc, res, self.rtol)
        for i in np.flatnonzero(fail)[: max(0, self.max_failures - len(self.failures))]:
            self.failures.append(code.pattern_text(masks[i]))
        i = int(np.argmax(res))
        if res[i] > self.worst_res or self.worst_res_mask is None:
            self.worst_res, self.worst_res_mask = float(res[i]), masks[i].copy()
        j = int(np.argmax(canc))
        if canc[j] > self.worst_canc or self.worst_canc_mask is None:
            self.worst_canc, self.worst_canc_mask = float(canc[j]), masks[j].copy()
        return res, canc


def verify_tree(code: CodedReduceCode, *, limit: int = 100_000, samples: int = 2_000, search: bool = True,
                seed: Any = 0, rtol: float | None = None, batch: int = 4096, max_failures: int = 5,
                search_budget: int | None = None) -> TreeVerifyReport:
    """Verify a CodedReduce code under its straggler model (spec §4.4, "Verifier").

    A straggler pattern lets every parent (the master and every internal worker) pick at most ``s`` straggling
    children; a straggler silences its subtree. For each pattern the hierarchical decoding vector ``A`` is
    computed (:class:`TreeDecoder`) and ``A B = 1`` is checked: exactly (with integers, never rounded) for
    rational codes; float codes pass a pattern when the predicted float64 relative error
    ``u * canc + ||A B - 1||_inf <= rtol`` (as :func:`gradcodes.verify`). ``gc.verify(code)``
    dispatches here for tree codes.

    * If there are at most ``limit`` patterns, all of them are checked (the n=3, L=2, s=1 tree has 256).
    * Otherwise: the structured patterns (no stragglers; the same ``s`` cyclically consecutive children at
      every parent), one *targeted* pattern per worker that forces that worker's message into use (its
      ancestors each lose the ``s`` siblings preceding the path), ``samples`` uniformly random patterns, and
      with ``search=True`` a worst-case search (coordinate ascent: each parent whose output reaches the master
      in turn tries every straggler set given the others, keeping the one that maximises the residual, then
      the cancellation factor; at most ``search_budget`` patterns). Only the exhaustive mode is a proof.

    The load is checked too: every worker stores exactly ``r P`` units, ``B`` matches the CR.Allocate lists,
    and ``r`` is compared with the optimum :func:`coded_reduce_load`.

    Parameters
    ----------
    code : CodedReduceCode
    limit : int
        Largest number of patterns checked exhaustively.
    samples : int
        Random patterns when not exhaustive.
    search : bool
        Run the worst-case search when not exhaustive.
    seed : int, optional
        Seed of the sampling.
    rtol : float, optional
        Float codes: accepted predicted relative error, in (0, 1) (default: the code's ``rtol``, 1e-8).
    batch : int
        Patterns per batch.
    max_failures : int
        Failing patterns kept in the report.
    search_budget : int, optional
        Patterns the worst-case search may check (default 20,000 for float codes, 2,000 for exact ones).

    Returns
    -------
    TreeVerifyReport

    Examples
    --------
    >>> import gradcodes as gc
    >>> rep = gc.verify_tree(gc.coded_reduce(3, 2, 1, field="rational"))
    >>> rep.exact, rep.exhaustive, rep.patterns_checked, rep.load_fraction
    (True, True, 256, Fraction(4, 15))
    """
    if not isinstance(code, CodedReduceCode):
        raise TypeError(f"verify_tree takes a CodedReduceCode, got {type(code).__name__}")
    limit = check_int("limit", limit, 0)
    samples = check_int("samples", samples, 0)
    batch = check_int("batch", batch, 1)
    if search_budget is None:
        search_budget = 2_000 if code.exact else 20_000
    search_budget = check_int("search_budget", search_budget, 0)
    t0 = time.perf_counter()
    rtol = check_real("rtol", code.rtol if rtol is None else rtol, 0, 1, open_lo=True, open_hi=True)
    tr = _Tracker(code, rtol, check_int("max_failures", max_failures, 0))
    total = code.patterns_total()
    exhaustive = total <= limit
    notes: list[str] = []
    if exhaustive:
        for masks in _exhaustive_masks(code, batch):
            tr.check(masks)
    else:
        tr.check(_special_masks(code))
        for masks in _targeted_masks(code, batch):
            tr.check(masks)
        rng = check_seed(seed)
        for lo in range(0, samples, batch):
            tr.check(code.random_patterns(min(batch, samples - lo), rng))
        if search:
            _search(code, tr, rng, budget=search_budget)
    # loads and allocation
    loads = np.asarray(code.loads)
    loads_equal = bool(np.all(loads == loads[0]))
    allocation_ok = True
    if code._lists is not None:
        own_len = int(code.r * code.P)
        n_leaf = code.branching**code.L
        for v in range(code.N):
            u, c = code._lists[0][v], code._lists[1][v]
            if v < code.N - n_leaf:
                u, c = u[:own_len], c[:own_len]
            row = np.asarray(code.B[v])
            expect_support = np.zeros(code.P, dtype=bool)
            expect_support[u] = True
            if not (np.array_equal(np.asarray(row != 0), expect_support) and
                    all(row[ui] == ci for ui, ci in zip(u, c, strict=True))):
                allocation_ok = False
                notes.append(f"row {v} of B does not match worker {v}'s allocation list")
                break
    else:
        notes.append("no allocation lists (code built from a matrix): allocation not checked")
    frac = Fraction(int(code.load), code.P)
    opt = coded_reduce_load(code.branching, code.L, code.s)
    ok = not tr.failures and tr.checked > 0 and loads_equal and allocation_ok and int(loads[0]) == int(
        code.r * code.P)
    u = float(np.finfo(np.float64).eps) / 2
    res_txt = code.pattern_text(tr.worst_res_mask) if tr.worst_res_mask is not None else "-"
    canc_txt = code.pattern_text(tr.worst_canc_mask) if tr.worst_canc_mask is not None else "-"
    return TreeVerifyReport(
        name=code.name, exact=bool(ok), exhaustive=exhaustive, patterns_checked=tr.checked,
        patterns_total=total, distinct_checked=len(tr.seen), worst_residual=tr.worst_res,
        worst_pattern=res_txt, worst_cancellation=tr.worst_canc, worst_cancellation_pattern=canc_txt,
        error_estimate=u * tr.worst_canc + (tr.worst_res if np.isfinite(tr.worst_res) else np.inf),
        failures=tr.failures, loads_equal=loads_equal, allocation_ok=allocation_ok, load=int(code.load),
        load_fraction=frac, load_lower_bound=opt, meets_lower_bound=frac == opt, field=code.field,
        seconds=time.perf_counter() - t0, N=code.N, s=code.s, rtol=rtol, notes=notes)


def _search(code: CodedReduceCode, tr: _Tracker, rng: np.random.Generator, budget: int,
            sweeps: int = 2, max_options: int = 512) -> None:
    """Coordinate ascent over the parents' straggler sets, from the worst patterns found so far.

    Only parents whose output reaches the master matter, so each step re-tries one *used* parent's straggler
    set (all sets if there are at most ``max_options``, else a random sample plus the current one), keeping the
    best; it stops after ``sweeps`` sweeps without improvement or when ``budget`` patterns have been checked.
    """
    n = code.branching
    if code.exact:          # exact decodes are slow: a lighter search (it steers by cancellation anyway)
        max_options = min(max_options, 128)
    total_opts = sum(math.comb(n, j) for j in range(code.s + 1))
    opts = ~code.straggler_options() if total_opts <= max_options else None
    spent = 0
    for key in ("res", "canc"):
        start = tr.worst_res_mask if key == "res" else tr.worst_canc_mask
        if start is None:
            continue
        cur = start.copy()
        for _ in range(sweeps):
            improved = False
            used = code._tree_weights(cur[None])[1][0]
            parents = [0] + [int(v) + 1 for v in np.flatnonzero(used) if v + 1 < code.parents]
            for p in parents:
                if spent >= budget:
                    return
                if opts is not None:
                    cand_rows = opts
                else:
                    cand_rows = code.random_patterns(max_options, rng).reshape(max_options, code.parents, n)[:, 0]
                    cand_rows = np.vstack([cur[p * n:(p + 1) * n], cand_rows])
                cands = np.repeat(cur[None], cand_rows.shape[0], axis=0)
                cands[:, p * n:(p + 1) * n] = cand_rows
                res, canc = tr.check(cands)
                spent += cands.shape[0]
                score = canc if (key == "canc" or code.exact) else res   # exact residuals are 0 unless failing
                best = int(np.argmax(score))
                here = np.flatnonzero((cands == cur).all(axis=1))
                if score[best] > (score[here].max() if here.size else -np.inf):
                    cur = cands[best].copy()
                    improved = True
            if not improved:
                break


# ----------------------------------------------------------------------------------------------------------
register(Scheme(
    name="coded_reduce",
    build=coded_reduce,
    summary="CodedReduce: (n, s) gradient codes composed along the (n, L)-regular tree (optimal load r_CR)",
    tour=({"n": 3, "L": 2, "s": 1}, {"n": 4, "L": 2, "s": 1}, {"n": 12, "L": 2, "s": 5}),
    evaluate=verify_tree,
    kind="tree",
))
