r"""Graph assignment codes of Glasgow & Wootters (2021, Definition II.2): the workers are the edges of a
``d``-regular (multi)graph on the partitions, ``B = M / d`` with ``M`` the edge–vertex incidence matrix. The code
type and its optimal decoder in closed form (Glasgow & Wootters 2021, §IV) are in ``expander_graphs``.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from .._base.aliases import RNGLike
from .._base.errors import GradcodesTypeError, GradcodesValueError
from .._base.registry import Scheme, register
from .._base.validate import check_entries, check_int, check_rng, rng_param
from .._io.files import REBUILDERS
from .._verify.approx_adversaries import UpperBound, register_upper_bound
from .._verify.approx_worst import FixedDecoder, OptimalDecoder
from .expander import random_regular_graph
from .expander_graphs import ComponentDecoder, GraphAssignmentCode
from .margulis import _check_field, _csr, _evaluate, _scaled, _to_dense, margulis_gabber_galil_graph

__all__ = ["graph_assignment_code"]


def _multigraph_edges(A: np.ndarray) -> np.ndarray:
    """The edges of a multigraph adjacency matrix (loops on the diagonal counted twice), lexicographic, (n, 2)."""
    iu, ju = np.nonzero(np.triu(A, 1))
    reps = A[iu, ju]
    loops = np.flatnonzero(np.diag(A))
    u = np.concatenate([np.repeat(iu, reps), np.repeat(loops, np.diag(A)[loops] // 2)])
    v = np.concatenate([np.repeat(ju, reps), np.repeat(loops, np.diag(A)[loops] // 2)])
    order = np.lexsort((v, u))
    return np.stack([u[order], v[order]], axis=1).astype(np.int64)


def graph_assignment_code(k: int, degree: int, graph: Any = "random", *, rng: RNGLike = None,
                          s: int | None = None, field: str = "real") -> GraphAssignmentCode:
    r"""Graph assignment code of Glasgow & Wootters (2021): the workers are the edges of a ``d``-regular graph.

    Partition ``j`` is vertex ``j`` of ``G``; worker ``e = {u, v}`` holds partitions ``u`` and ``v`` and sends
    ``(g_u + g_v) / d`` (a loop ``{u, u}``: ``2 g_u / d``). ``n = k d / 2``; ``B = M / d`` with ``M`` the edge–vertex
    incidence matrix, so ``1^T B = 1^T``.

    Parameters
    ----------
    k : int
        Partitions (vertices), ``k >= 2``.
    degree : int
        ``d``, ``1 <= d``; ``k d`` even.
    graph : "random", "margulis" or array_like (k, k)
        ``"random"``: a random simple ``d``-regular graph (:func:`~gradcodes.random_regular_graph`, ``rng``);
        ``"margulis"``: the Margulis–Gabber–Galil graph (``k = N**2``, ``d = 8``); or a symmetric non-negative
        integer adjacency matrix with edge multiplicities and twice the number of loops on the diagonal, row sums
        ``d``.
    rng : None, int, SeedSequence or Generator
        Random state of ``graph="random"``.
    s : int, optional
        Stragglers the code is meant for (informational).
    field : {"real", "rational"}

    Returns
    -------
    GraphAssignmentCode
        Decoders ``"components"`` (:class:`ComponentDecoder`, the optimal decoder in closed form; default),
        ``"optimal"`` (least squares) and ``"fixed"``.

    Raises
    ------
    GradcodesValueError
        If a parameter is out of its range (the message names the parameter and the range), or ``graph`` is not a
        ``degree``-regular multigraph on ``k`` vertices (``"margulis"``: ``k = N**2``, ``degree = 8``).
    GradcodesTypeError
        If ``graph`` is neither a name nor a matrix.

    Examples
    --------
    The triangle (``d = 2``, three workers): with worker 0 = ``{0, 1}`` straggling, the surviving edges form the
    path 0–2–1 (``L = {0, 1}``, ``R = {2}``) so the optimal squared error is ``(2 - 1)^2 / 3``:

    >>> import gradcodes as gc
    >>> tri = gc.graph_assignment_code(3, 2, graph=[[0, 1, 1], [1, 0, 1], [1, 1, 0]])
    >>> tri.edges.tolist(), gc.graph_assignment_error(tri, [1, 2])
    ([[0, 1], [0, 2], [1, 2]], Fraction(1, 3))
    >>> tri.decoding_matrix([1, 2]).tolist()        # α = (2/3, 2/3, 4/3)
    [[0.0, 1.3333333333333333, 1.3333333333333333]]
    """
    k = check_int("k", k, 2)
    degree = check_int("degree", degree, 1, 10_000)
    field = _check_field(field)
    params: dict[str, Any] = {"k": k, "degree": degree, "field": field}
    if isinstance(graph, str):
        if graph == "random":
            if degree > k - 1:
                raise GradcodesValueError(f"degree must be in [1, k - 1] = [1, {k - 1}] for a random simple graph, "
                                          f"got {degree}")
            A = random_regular_graph(k, degree, check_rng(rng))
            if rng_param(rng) is not None:
                params["rng"] = rng_param(rng)
            else:
                params["graph"] = A.tolist()
            params.setdefault("graph", "random")
        elif graph == "margulis":
            N = math.isqrt(k)
            if N * N != k or degree != 8:
                raise GradcodesValueError(f"graph='margulis' needs k = N**2 (N >= 2) and degree = 8; got k={k}, "
                                          f"degree={degree}")
            A = _to_dense(margulis_gabber_galil_graph(N))
            params["graph"] = "margulis"
        else:
            raise GradcodesValueError(f"graph must be 'random', 'margulis' or an adjacency matrix, got {graph!r}")
    else:
        try:
            A = np.asarray(graph)
        except (TypeError, ValueError):
            raise GradcodesTypeError(f"graph must be 'random', 'margulis' or an adjacency matrix, got {graph!r}") \
                from None
        if A.shape != (k, k):
            raise GradcodesValueError(f"graph adjacency matrix must have shape (k, k) = ({k}, {k}), got {A.shape}")
        if A.dtype.kind not in "biu" or (A < 0).any():
            raise GradcodesValueError("graph adjacency matrix must hold non-negative integers (edge multiplicities)")
        A = A.astype(np.int64)
        if not (A == A.T).all():
            raise GradcodesValueError("graph adjacency matrix must be symmetric (undirected)")
        if (np.diag(A) % 2).any():
            raise GradcodesValueError("graph adjacency matrix must have even diagonal entries (a loop counts 2)")
        deg = A.sum(axis=1)
        if (deg != degree).any():
            i = int(np.flatnonzero(deg != degree)[0])
            raise GradcodesValueError(f"graph must be {degree}-regular (degree={degree}); vertex {i} has degree "
                                      f"{int(deg[i])}")
        params["graph"] = A.tolist()
    n = k * degree // 2
    if (k * degree) % 2 or n < 1:
        raise GradcodesValueError(f"k * degree must be even and positive; got k={k}, degree={degree}")
    check_entries(n, k, exact=field == "rational")
    edges = _multigraph_edges(A)
    M = _to_dense(_csr(np.repeat(np.arange(n, dtype=np.int64), 2), edges.ravel(), (n, k)))
    if s is not None:
        params["s"] = check_int("s", s, 0, n - 1)
    return GraphAssignmentCode(_scaled(M, degree, field), degree=degree, edges=edges, adjacency=A, s=s, field=field,
                               name=f"graph_assignment[d={degree}]", family="graph_assignment_code", params=params,
                               decoders=[ComponentDecoder(), OptimalDecoder(), FixedDecoder()],
                               default_decoder="components")


def _rebuild_graph_assignment(k: int, degree: int, graph: Any = "random", field: str = "real",
                              rng: int | None = None, s: int | None = None, **_: Any) -> GraphAssignmentCode:
    return graph_assignment_code(k, degree, graph, rng=rng, s=s, field=field)


def _graph_assignment_upper(code: Any, s: int, dec: Any) -> UpperBound | None:
    r"""``sqrt(min(k, floor(2 s / d)))`` for the optimal decoders of a graph assignment code.

    By Glasgow & Wootters' closed form the optimal squared error is ``sum (|L| - |R|)^2 / (|L| + |R|)`` over the
    bipartite components of the surviving edges, ``x_C = |L| - |R| >= 0`` with ``x_C <= |L| + |R|``, so it is at
    most ``sum x_C``. In such a component no surviving edge joins two vertices of ``L`` (nor is a loop), so at most
    ``d |R|`` of the ``d |L|`` edge ends at ``L`` survive and at least ``d x_C`` are ends of straggling edges;
    ``s`` stragglers have ``2 s`` ends, hence ``d sum x_C <= 2 s``. The error is also at most ``sqrt(k)`` (``u = 0``).
    """
    if dec.name not in ("components", "optimal", "lstsq"):
        return None
    return UpperBound(math.sqrt(min(code.k, (2 * s) // code.degree)),
                      "theorem: Glasgow & Wootters 2021 components: optimal error^2 <= floor(2 s/d) for a d-regular "
                      "graph assignment code (from their §IV closed form: each bipartite component costs d (|L|-|R|) "
                      "straggling edge ends)")


REBUILDERS.update(graph_assignment_code=_rebuild_graph_assignment)
register_upper_bound("graph_assignment_code", _graph_assignment_upper)
register(Scheme("graph_assignment_code",
                lambda k=10, degree=3, s=2, seed=0: graph_assignment_code(k, degree, rng=seed, s=s),
                "Glasgow & Wootters graph assignment code (workers = edges of a d-regular graph), optimal decoding",
                tour=({"k": 10, "degree": 3, "s": 2}, {"k": 40, "degree": 6, "s": 12}),
                evaluate=_evaluate, kind="adversarial"))
