r"""The code types of the graph codes beyond random regular graphs, and the optimal decoding of graph assignment
codes in closed form.

The constructions are one module each: ``margulis`` (the Margulis–Gabber–Galil graph, Margulis 1973; Gabber & Galil
1981), ``bipartite_expander`` (bipartite graphs, Raviv, Tamo, Tandon & Dimakis 2020, §5) and ``graph_assignment``
(Glasgow & Wootters 2021). This module holds what their codes are made of: :class:`BipartiteExpanderCode` with its
spectral bound, :class:`GraphAssignmentCode`, :class:`ComponentDecoder` and :func:`graph_assignment_error` (the
classes keep this module as their ``__module__``, which code identity hashes and pickles name).

**Bipartite graphs** (Raviv et al. 2020, §5: codes with ``k != n``). ``H`` is the ``n x k`` biadjacency matrix of a
bipartite graph with worker degree ``d`` (the load) and partition degree ``r = n d / k`` (the replication);
``B = H / r``, so ``1^T B = 1^T``. With ``σ_2`` the second singular value of ``H`` (the first is
``sqrt(d r)``, with singular vectors ``1``), the argument of Raviv et al. (2018, §5) gives
``||(n/(n-s)) 1_F B - 1|| <= (σ_2 / r) sqrt(n s / (n - s))``.

**Graph assignment codes** (Glasgow & Wootters 2021, Definition II.2). A ``d``-regular (multi)graph ``G`` on the
``k`` partitions; every *edge* is a worker holding its two end points (a loop: its one end point, twice), so
``n = k d / 2`` workers of load 2 (each partition ``2/d``-th of the size of an expander code's partition with the same
``n``, hence the same computation per worker as :func:`~gradcodes.expander_code` with degree ``d``). ``B = M / d``
with ``M`` the ``n x k`` edge–vertex incidence matrix (a loop has a 2). The *optimal* error
``min_{supp u ⊆ F} ||u B - 1||`` has a closed form (Glasgow & Wootters 2021, §IV): let ``α = u B``; in a connected
component of the graph of the surviving edges that holds an odd cycle (a loop included) ``α = 1``; in a bipartite
component with sides ``L``, ``R`` (``|L| >= |R|``) ``α = 1 - δ`` on ``L`` and ``1 + δ`` on ``R`` with
``δ = (|L| - |R|) / (|L| + |R|)``; an isolated partition has ``α = 0``. Hence

.. math:: \min_{\mathrm{supp}\,u \subseteq F} \|uB - 1\|_2^2 = \sum_{\text{bipartite } C = L \cup R}
          \frac{(|L| - |R|)^2}{|L| + |R|}

(an isolated partition contributes 1). :class:`ComponentDecoder` computes such a ``u`` exactly: ``α`` as above, then
a spanning tree of each component (plus one odd-cycle edge when there is one) solved leaf by leaf in integers.
"""

from __future__ import annotations

import math
from fractions import Fraction
from typing import Any

import numpy as np

from .._base.aliases import MatrixLike, Responders
from .._base.errors import GradcodesTypeError
from .._base.validate import check_int
from .._core.code import ApproximateCode, LinearCode
from .._core.decoders import Decoder
from .._core.fields import RationalField

__all__ = ["BipartiteExpanderCode", "GraphAssignmentCode", "ComponentDecoder", "graph_assignment_error"]


class BipartiteExpanderCode(ApproximateCode):
    """A bipartite expander code (:func:`bipartite_expander_code`): ``B = H / r`` for a biadjacency matrix ``H``.

    Attributes
    ----------
    degree : int
        Worker degree ``d`` (the load).
    partition_degree : int
        Partition degree ``r = n d / k``.
    biadjacency : numpy.ndarray
        ``H`` (n, k), 0/1.

    Examples
    --------
    >>> import gradcodes as gc
    >>> code = gc.bipartite_expander_code(6, 4, 2, rng=0)
    >>> isinstance(code, gc.BipartiteExpanderCode), code.n, code.k, code.load
    (True, 6, 4, 2)
    """

    def __init__(self, B: MatrixLike, *, degree: int, partition_degree: int, biadjacency: Any, **kwargs: Any) -> None:
        super().__init__(B, **kwargs)
        self.degree = int(degree)
        self.partition_degree = int(partition_degree)
        self.biadjacency = np.asarray(biadjacency)

    def second_singular_value(self) -> float:
        """``σ_2`` of ``H``: a diagnostic computed on demand with LAPACK (not part of the code's value).

        Returns
        -------
        float
            The second largest singular value of the biadjacency matrix.

        Examples
        --------
        >>> import gradcodes as gc
        >>> f"{gc.bipartite_expander_code(6, 4, 2, rng=0).second_singular_value():.3f}"
        '2.000'
        """
        sv = np.linalg.svd(self.biadjacency.astype(np.float64), compute_uv=False)
        return float(sv[1]) if sv.size > 1 else 0.0

    def spectral_bound(self, s: int) -> float:
        """``(σ_2 / r) sqrt(n s / (n - s))``: bound on the fixed (hence optimal) decoder's error, ``s`` stragglers.

        Parameters
        ----------
        s : int
            Number of stragglers, ``0 <= s < n``.

        Returns
        -------
        float
            An upper bound on ``||A_F B - E||_2`` for every set of ``n - s`` responders.

        Examples
        --------
        >>> import gradcodes as gc
        >>> f"{gc.bipartite_expander_code(6, 4, 2, rng=0).spectral_bound(1):.3f}"
        '0.730'
        """
        s = check_int("s", s, 0, self.n - 1)
        return self.second_singular_value() / self.partition_degree * math.sqrt(self.n * s / (self.n - s))


class GraphAssignmentCode(ApproximateCode):
    """A graph assignment code (:func:`graph_assignment_code`): worker = edge of a ``d``-regular graph on partitions.

    Attributes
    ----------
    degree : int
        ``d``, the graph degree (each partition is on ``d`` workers, a loop counting twice).
    edges : numpy.ndarray
        (n, 2) end points of each worker's edge (equal for a loop).
    adjacency : numpy.ndarray
        (k, k) multigraph adjacency matrix (a loop counts 2).

    Examples
    --------
    >>> import gradcodes as gc
    >>> code = gc.graph_assignment_code(4, 8, graph="margulis")
    >>> isinstance(code, gc.GraphAssignmentCode), code.n, code.k
    (True, 16, 4)
    """

    def __init__(self, B: MatrixLike, *, degree: int, edges: Any, adjacency: Any, **kwargs: Any) -> None:
        super().__init__(B, **kwargs)
        self.degree = int(degree)
        self.edges = np.asarray(edges)
        self.adjacency = np.asarray(adjacency)


def _components(code: GraphAssignmentCode, alive: np.ndarray) -> tuple[list[dict[int, int]], list[Any]]:
    """For the surviving edges: per component, the numerators of ``u`` (edge -> int) and the denominator."""
    k = code.k
    edges = code.edges
    nbrs: list[list[tuple[int, int]]] = [[] for _ in range(k)]
    for e in np.flatnonzero(alive).tolist():
        a, b = int(edges[e, 0]), int(edges[e, 1])
        nbrs[a].append((e, b))
        if a != b:
            nbrs[b].append((e, a))
    color = [-1] * k
    weights: list[dict[int, int]] = []
    dens: list[Any] = []
    for root in range(k):
        if color[root] != -1:
            continue
        color[root] = 0
        order, parent = [root], {root: -1}
        odd: tuple[int, int, int] | None = None
        for v in order:                                  # breadth-first; `order` grows while iterating
            for e, w in nbrs[v]:
                if color[w] == -1:
                    color[w] = 1 - color[v]
                    parent[w] = e
                    order.append(w)
                elif odd is None and color[w] == color[v] and e != parent.get(v):
                    odd = (e, v, w)
        if len(order) == 1 and not nbrs[root]:
            continue                                     # isolated partition: α = 0, no edge to weigh
        size = [0, 0]
        for v in order:
            size[color[v]] += 1
        w_num: dict[int, int] = {}
        if odd is None:                                  # bipartite: α_v = 2 |other side| / |C|
            den = len(order)
            rem = {v: 2 * size[1 - color[v]] for v in order}
        else:                                            # an odd cycle: α = 1 (numerators 2 over 2)
            den = 2
            rem = {v: 2 for v in order}
            e, a, b = odd
            x = (size[0] - size[1]) * (1 if color[a] == 0 else -1)
            w_num[e] = x
            rem[a] -= x
            rem[b] -= x
        for v in reversed(order[1:]):                    # leaves first: the tree edge to the parent takes the rest
            e = parent[v]
            w_num[e] = rem[v]
            a, b = int(edges[e, 0]), int(edges[e, 1])
            rem[a if b == v else b] -= rem[v]
            rem[v] = 0
        weights.append(w_num)
        dens.append(den)
    return weights, dens


class ComponentDecoder(Decoder):
    """The optimal decoder of a graph assignment code in closed form (Glasgow & Wootters 2021, §IV).

    For each connected component of the surviving edges: ``α = 1`` if it holds an odd cycle, else ``α_v = 2 |other
    side| / |C|``; then ``u`` on a spanning tree (plus the odd-cycle edge) solves ``u B = α`` exactly, leaf by
    leaf, in integers over the denominator ``|C|`` (or 2). Its error equals the least-squares optimum
    (:func:`graph_assignment_error`); no eigen- or least-squares solver, exactly zero on stragglers.

    Examples
    --------
    >>> import gradcodes as gc
    >>> code = gc.graph_assignment_code(4, 8, graph="margulis")
    >>> code.default_decoder, code.approximation_error(range(code.n)) < 1e-12
    ('components', True)
    """

    name = "components"
    exact = True
    least_squares = True
    description = "optimal decoding by connected components (Glasgow & Wootters)"

    def matrices(self, code: LinearCode, mask: np.ndarray) -> Any:
        """Optimal decoding matrices (b, 1, n) for the responder masks ``mask`` (b, n), component by component.

        Parameters
        ----------
        code : GraphAssignmentCode
            A code of :func:`~gradcodes.graph_assignment_code` (its edges are the workers).
        mask : ndarray of bool, shape (b, n)
            Each row: the responders of one set.

        Returns
        -------
        ndarray, shape (b, 1, n)
            The least-squares optimal ``A_F`` of each set, zero on the stragglers; exact rationals for a code
            over the rationals.

        Raises
        ------
        GradcodesTypeError
            If ``code`` is not a graph assignment code.

        Examples
        --------
        >>> import numpy as np, gradcodes as gc
        >>> code = gc.graph_assignment_code(4, 8, graph="margulis")
        >>> mask = np.zeros((1, code.n), dtype=bool)
        >>> mask[0, 0] = True                                     # one responder: a self-loop on partition 0
        >>> A = gc.ComponentDecoder().matrices(code, mask)
        >>> A.shape, round(float(((A[0] @ code.B - code.target) ** 2).sum()), 9), gc.graph_assignment_error(code, [0])
        ((1, 1, 16), 3.0, Fraction(3, 1))
        """
        if not isinstance(code, GraphAssignmentCode):
            raise GradcodesTypeError(f"the components decoder needs a graph assignment code, got "
                                     f"{type(code).__name__}")
        b, n = mask.shape
        d = code.degree
        out = RationalField().zeros((b, 1, n)) if code.exact else np.zeros((b, 1, n))
        for i in range(b):
            weights, dens = _components(code, mask[i])
            for w_num, den in zip(weights, dens, strict=True):
                for e, num in w_num.items():
                    out[i, 0, e] = Fraction(d * num, den) if code.exact else d * num / den
        return out


def graph_assignment_error(code: GraphAssignmentCode, responders: Responders) -> Fraction:
    r"""The optimal squared error ``min_{supp u ⊆ F} ||u B - 1||^2`` of a graph assignment code, exactly.

    ``sum over bipartite components C = L ∪ R of the surviving edges of (|L| - |R|)^2 / |C|`` (an isolated
    partition counts 1; Glasgow & Wootters 2021, §IV).

    Parameters
    ----------
    code : GraphAssignmentCode
        A code of :func:`graph_assignment_code`.
    responders : iterable of int or bool mask
        The workers whose messages arrived.

    Returns
    -------
    fractions.Fraction
        The optimal squared error, exactly (0 when the responders recover the sum).

    Raises
    ------
    GradcodesTypeError
        If ``code`` is not a graph assignment code.

    Examples
    --------
    >>> import gradcodes as gc
    >>> code = gc.graph_assignment_code(4, 8, graph="margulis")
    >>> gc.graph_assignment_error(code, range(code.n))
    Fraction(0, 1)
    """
    if not isinstance(code, GraphAssignmentCode):
        raise GradcodesTypeError(f"code must be a graph assignment code, got {type(code).__name__}")
    _, mask = code._mask(responders)
    parent = list(range(code.k))
    parity = [0] * code.k
    odd = [False] * code.k

    def find(v: int) -> tuple[int, int]:
        p = 0
        while parent[v] != v:
            p ^= parity[v]
            v = parent[v]
        return v, p

    for e in np.flatnonzero(mask).tolist():
        (ra, pa), (rb, pb) = find(int(code.edges[e, 0])), find(int(code.edges[e, 1]))
        if ra == rb:
            odd[ra] = odd[ra] or pa == pb
        else:
            parent[rb], parity[rb] = ra, pa ^ pb ^ 1
            odd[ra] = odd[ra] or odd[rb]
    sides: dict[int, list[int]] = {}
    for v in range(code.k):
        r, p = find(v)
        sides.setdefault(r, [0, 0])[p] += 1
    return sum((Fraction((a - b) ** 2, a + b) for r, (a, b) in sides.items() if not odd[r]), Fraction(0))
