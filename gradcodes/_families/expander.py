r"""Approximate gradient codes from expander graphs (Raviv, Tamo, Tandon & Dimakis 2018). The evaluator of approximate
codes (worst and average error over responder sets) and the optimal and fixed decoders, which every
:class:`~gradcodes.ApproximateCode` family shares, are in :mod:`gradcodes._verify.approx_worst`.

**Construction.** ``G`` is a ``d``-regular graph on the ``n`` workers (``k = n``) with adjacency matrix ``A_G``;
``B = A_G / d``. Worker ``i`` stores the partitions of its ``d`` neighbours (load ``d``, no self-loops).

**Decoders** (:mod:`gradcodes._verify.approx_worst`). *Optimal*: ``u*_F = argmin_{supp u ⊆ F} ||u B - 1||_2``
(minimum-norm least squares). *Fixed*: ``u_F = (n/|F|) 1_F``, which needs no solve at all.

**Spectral bound** (Raviv et al. 2018). Let ``d = λ_1 >= λ_2 >= ... >= λ_n`` be the eigenvalues of ``A_G`` and
``λ = max(|λ_2|, |λ_n|)``. For ``|F| = n - s``,

.. math:: \Bigl\| \tfrac{n}{n-s} 1_F^T B - 1^T \Bigr\|_2 \;\le\; \frac{\lambda}{d}\sqrt{\frac{n s}{n-s}},

and the optimal decoder is never worse. *Proof.* ``1_F = ((n-s)/n) 1 + y`` with ``y ⟂ 1`` and
``||y||^2 = s(n-s)/n``. ``B`` is symmetric with ``B 1 = 1``, so the residual is ``(n/(n-s)) B y``, and
``||B y|| <= (λ/d) ||y||`` on ``1^⟂``. For a connected graph ``λ < d`` unless it is bipartite (``λ_n = -d``); a
disconnected graph has ``λ_2 = d`` and the bound is void, so the constructor rejects it.
"""

from __future__ import annotations

import math
import numbers
from fractions import Fraction
from typing import Any

import numpy as np
import numpy.typing as npt

from .._base.aliases import MatrixLike, RNGLike
from .._base.errors import GradcodesRuntimeError, GradcodesTypeError, GradcodesValueError
from .._base.registry import Scheme, register
from .._base.validate import check_entries, check_int, check_rng, rng_param
from .._core.code import ApproximateCode
from .._io.files import REBUILDERS
from .._verify.approx_adversaries import UpperBound, register_adversaries, register_upper_bound, worker_balls
from .._verify.approx_worst import (
    ApproximationReport,
    FixedDecoder,
    OptimalDecoder,
    approximation_error,
    worst_case_error,
)

__all__ = ["expander_code", "random_regular_graph", "approximation_error", "worst_case_error",
           "ApproximationReport", "OptimalDecoder", "FixedDecoder", "spectral_parameter"]


# ----------------------------------------------------------------------------------------------- graphs
def random_regular_graph(n: int, degree: int, rng: RNGLike = None, max_tries: int = 1000) -> np.ndarray:
    """Adjacency matrix (n x n, 0/1 int) of a uniformly-ish random simple ``d``-regular graph.

    Steger & Wormald's algorithm: pairs two uniformly random free half-edges at a time, keeping the pair when it is
    admissible (no loop, no repeated edge) and restarting on a dead end; ``n * d`` must be even and
    ``0 <= d <= n - 1``. Each pair is found by rejection sampling (``O(1)`` expected draws while many admissible
    pairs remain); after a run of rejections the admissible pairs of the few vertices with free half-edges are
    enumerated and one is drawn exactly (weight ``free_u * free_v``, the same distribution), or the dead end is
    detected. Expected cost about ``O(n d)`` plus the ``n x n`` matrix.

    ``degree`` is the graph degree; ``rng`` the random state (None, an int, a SeedSequence or a Generator).

    Parameters
    ----------
    n : int
        Number of vertices, ``n >= 1``.
    degree : int
        Degree of every vertex, ``0 <= degree <= n - 1`` with ``n * degree`` even (required).
    rng : None, int, SeedSequence or Generator, optional
        Random state (SPEC 7).
    max_tries : int, default 1000
        Restarts allowed after a dead end.
    d, seed
        Deprecated former names of ``degree`` and ``rng`` (DeprecationWarning).

    Returns
    -------
    numpy.ndarray of int, shape (n, n)
        The symmetric 0/1 adjacency matrix, zero diagonal, every row summing to ``degree``.

    Raises
    ------
    GradcodesValueError
        If ``n``, ``degree`` or ``max_tries`` is out of range or ``n * degree`` is odd.
    GradcodesTypeError
        If ``degree`` is not given.
    GradcodesRuntimeError
        If all ``max_tries`` draws dead-end.

    Examples
    --------
    >>> A = random_regular_graph(10, 3, rng=0)
    >>> A.sum(axis=0).tolist() == [3] * 10, bool((A == A.T).all()), int(A.trace())
    (True, True, 0)
    """
    n = check_int("n", n, 1)
    d = check_int("degree", degree, 0, n - 1)
    check_entries(n, n, what="the adjacency matrix")
    if (n * d) % 2:
        raise GradcodesValueError(f"a d-regular graph on n vertices needs n*d even; got n={n}, degree={d}")
    max_tries = check_int("max_tries", max_tries, 1)
    rng = check_rng(rng)
    for _ in range(max_tries):
        A = _pair_stubs(n, d, rng)
        if A is not None:
            return A
    raise GradcodesRuntimeError(  # pragma: no cover
        f"could not draw a {d}-regular graph on {n} vertices in {max_tries} tries")


def _pair_stubs(n: int, d: int, rng: np.random.Generator, rejections: int = 64) -> np.ndarray | None:
    """One Steger-Wormald attempt: a d-regular adjacency matrix, or None at a dead end."""
    A = np.zeros((n, n), dtype=np.int64)
    stubs = np.repeat(np.arange(n, dtype=np.int64), d)      # unpaired half-edges (vertex of each)
    m = stubs.size
    while m:
        for _ in range(rejections):                        # uniform pair of distinct half-edges
            i, j = rng.integers(m, size=2)
            u, v = int(stubs[i]), int(stubs[j])
            if i != j and u != v and not A[u, v]:
                break
        else:                                              # few admissible pairs left: draw one exactly
            verts, free = np.unique(stubs[:m], return_counts=True)
            W = np.outer(free, free) * (1 - A[np.ix_(verts, verts)])
            W = np.triu(W, 1)
            total = W.sum()
            if total == 0:
                return None
            a, b = divmod(int(rng.choice(W.size, p=(W / total).ravel())), verts.size)
            u, v = int(verts[a]), int(verts[b])
            i = int(np.flatnonzero(stubs[:m] == u)[0])
            j = int(np.flatnonzero(stubs[:m] == v)[0])
        A[u, v] = A[v, u] = 1
        for k in sorted((int(i), int(j)), reverse=True):   # remove both half-edges (swap with the last free one)
            m -= 1
            stubs[k] = stubs[m]
    return A


def _adjacency(graph: Any, n: int | None) -> np.ndarray:
    """A 0/1 symmetric adjacency matrix from an array, neighbour lists, or a networkx-like graph."""
    A: np.ndarray | None
    if hasattr(graph, "edges") and hasattr(graph, "nodes") and callable(graph.nodes):
        nodes = sorted(graph.nodes())
        pos = {v: i for i, v in enumerate(nodes)}
        A = np.zeros((len(nodes), len(nodes)), dtype=np.int64)
        multi = bool(getattr(graph, "is_multigraph", lambda: False)())
        for u, v in graph.edges():
            # a multigraph (networkx's margulis_gabber_galil_graph) keeps its multiplicities, and a loop counts twice
            # (once per direction), as in the degree networkx reports: A stays symmetric with A 1 = d 1
            if u == v and not multi:
                raise GradcodesValueError(f"graph has a self-loop at {u!r}; expander codes use simple graphs "
                                          f"(loops are accepted in multigraphs, counted twice)")
            if multi:
                A[pos[u], pos[v]] += 1
                if u != v:
                    A[pos[v], pos[u]] += 1
                else:
                    A[pos[u], pos[u]] += 1
            else:
                A[pos[u], pos[v]] = A[pos[v], pos[u]] = 1
        return A
    if isinstance(graph, dict) or (isinstance(graph, (list, tuple)) and graph
                                   and all(isinstance(x, (list, tuple, np.ndarray)) for x in graph)
                                   and len({len(x) for x in graph}) >= 1 and not _is_square(graph)):
        items = list(graph.items() if isinstance(graph, dict) else enumerate(graph))
        size = len(items)
        A = np.zeros((size, size), dtype=np.int64)
        for u, nbrs in items:
            for v in (u, *nbrs):
                if isinstance(v, bool) or not isinstance(v, numbers.Integral):
                    raise GradcodesTypeError(
                        f"graph neighbour lists must contain integer vertices 0..{size - 1}, got {v!r} "
                        f"(vertex {u!r})")
            for v in nbrs:
                if not (0 <= int(v) < size) or not (0 <= int(u) < size):
                    raise GradcodesValueError(
                        f"graph neighbour lists must use vertices 0..{size - 1}; got edge {u}-{v}")
                if int(u) == int(v):
                    raise GradcodesValueError(f"graph has a self-loop at {u}; expander codes use simple graphs")
                if A[int(u), int(v)]:
                    raise GradcodesValueError(
                        f"graph neighbour list of vertex {u} repeats vertex {v}; expander codes use "
                        f"simple graphs (no multiple edges)")
                A[int(u), int(v)] = 1
        if not (A == A.T).all():
            bad = np.argwhere(A != A.T)[0]
            raise GradcodesValueError(
                f"graph neighbour lists are not symmetric: {bad[0]} lists {bad[1]} but not conversely")
        return A
    try:
        A = np.asarray(graph)
    except (TypeError, ValueError):
        A = None
    if A is None or A.ndim == 0 or A.dtype == object:
        raise GradcodesTypeError(
            f"graph must be 'random', an adjacency matrix, neighbour lists or a networkx graph, got "
            f"{graph!r}")
    if A.ndim != 2 or A.shape[0] != A.shape[1]:
        raise GradcodesValueError(f"graph adjacency matrix must be square, got shape {A.shape}")
    if A.dtype.kind not in "biuf" or not np.all(np.isin(A, (0, 1))):
        raise GradcodesValueError("graph adjacency matrix must contain only 0 and 1")
    A = A.astype(np.int64)
    if not (A == A.T).all():
        bad = np.argwhere(A != A.T)[0]
        raise GradcodesValueError(f"graph adjacency matrix must be symmetric (undirected); A[{bad[0]}, {bad[1]}] != "
                                  f"A[{bad[1]}, {bad[0]}]")
    if np.trace(A):
        i = int(np.flatnonzero(np.diag(A))[0])
        raise GradcodesValueError(f"graph adjacency matrix has a self-loop at vertex {i} (nonzero diagonal)")
    return A


def _is_square(x: Any) -> bool:
    try:
        arr = np.asarray(x)
    except (TypeError, ValueError):
        return False
    return bool(arr.ndim == 2 and arr.shape[0] == arr.shape[1] and np.isin(arr, (0, 1)).all()
                and arr.dtype != object)


def _connected(A: np.ndarray) -> bool:
    n = A.shape[0]
    seen = np.zeros(n, dtype=bool)
    seen[0] = True
    frontier = seen.copy()
    while frontier.any():
        new = (A[frontier].sum(axis=0) > 0) & ~seen
        seen |= new
        frontier = new
    return bool(seen.all())


def spectral_parameter(A: np.ndarray) -> tuple[float, float]:
    """``(d, λ)`` of a regular graph: its degree and ``max(|λ_2|, |λ_n|)`` of the adjacency matrix.

    ``A`` is anything :func:`expander_code` accepts as a graph (adjacency matrix, neighbour lists, networkx graph);
    it must be simple and regular (ValueError otherwise).

    >>> petersen = [[1, 4, 5], [0, 2, 6], [1, 3, 7], [2, 4, 8], [0, 3, 9], [0, 7, 8], [1, 8, 9], [2, 5, 9],
    ...             [3, 5, 6], [4, 6, 7]]
    >>> d, lam = spectral_parameter(petersen)
    >>> d, round(lam, 12)
    (3.0, 2.0)
    """
    return _spectrum(_adjacency(A, None))


def _spectrum(A: np.ndarray) -> tuple[float, float]:
    """``(d, λ)`` of a validated regular (multi)graph adjacency matrix."""
    if A.shape[0] == 0:
        raise GradcodesValueError("graph must have at least one vertex")
    deg = A.sum(axis=1)
    if (deg != deg[0]).any():
        raise GradcodesValueError(f"graph must be regular; degrees range {int(deg.min())}..{int(deg.max())}")
    ev = np.sort(np.linalg.eigvalsh(A.astype(np.float64)))[::-1]
    return float(ev[0]), float(max(abs(ev[1]), abs(ev[-1]))) if ev.size > 1 else 0.0


# ----------------------------------------------------------------------------------------------- constructor
class ExpanderCode(ApproximateCode):
    """An expander code (:func:`expander_code`): ``B = A / d`` for the adjacency matrix ``A`` of a d-regular graph.

    Attributes
    ----------
    degree : int
        The graph degree ``d`` (the load).
    spectral_lambda : float
        ``λ``, the largest absolute eigenvalue of ``A`` other than ``d``.
    adjacency : numpy.ndarray
        The 0/1 adjacency matrix (n, n).

    Examples
    --------
    >>> import gradcodes as gc
    >>> code = gc.expander_code(8, 3, rng=0)
    >>> isinstance(code, gc.ExpanderCode), code.load
    (True, 3)
    """

    degree: int
    spectral_lambda: float
    adjacency: npt.NDArray[np.int64]

    def __init__(self, B: MatrixLike, *, degree: int, spectral_lambda: float, adjacency: npt.ArrayLike,
                 **kwargs: Any) -> None:
        super().__init__(B, **kwargs)
        self.degree = int(degree)
        self.spectral_lambda = float(spectral_lambda)
        self.adjacency = np.asarray(adjacency)

    def spectral_bound(self, s: int) -> float:
        """``(λ/d) sqrt(n s / (n - s))``: bound on the fixed (hence optimal) decoder's error with ``s`` stragglers.

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
        >>> f"{gc.expander_code(8, 3, rng=0).spectral_bound(2):.3f}"
        '1.314'
        """
        n = self.n
        s = check_int("s", s, 0, n - 1)
        return self.spectral_lambda / self.degree * math.sqrt(n * s / (n - s))


def expander_code(n: int, degree: int, graph: Any = "random", *, rng: RNGLike = None, s: int | None = None,
                  field: str = "real", require_connected: bool = True) -> ExpanderCode:
    r"""Approximate gradient code ``B = A_G / d`` of a ``d``-regular graph (Raviv et al. 2018).

    Parameters
    ----------
    n : int
        Number of workers (= partitions), ``n >= 2``.
    degree : int
        The load ``d``, ``1 <= d <= n - 1`` (``n * d`` even for a random graph).
    graph : "random", array_like (n, n), neighbour lists or networkx graph
        ``"random"``: a random simple ``d``-regular graph drawn with ``rng``. Otherwise a user graph, which must be
        simple (0/1, symmetric, no self-loops), ``d``-regular and (by default) connected.
    rng : None, int, numpy.random.SeedSequence or numpy.random.Generator, optional
        Random state of the random graph (SPEC 7: None, an int, a SeedSequence or a Generator).
    s : int, optional
        The number of stragglers the code is meant for (informational: decodes accept any responder set; used as
        the default of :func:`worst_case_error`).
    field : {"real", "rational"}
        Floating point, or exact Fractions (to compute errors exactly, e.g. for the Petersen graph).
    require_connected : bool, default True
        Reject disconnected graphs (their ``λ = d`` voids the spectral bound and some partitions are lost when a
        whole component straggles).

    Returns
    -------
    ExpanderCode
        An :class:`~gradcodes.ApproximateCode` with decoders ``"optimal"`` (default) and ``"fixed"`` (plus the
        generic ones). Attributes ``degree``, ``spectral_lambda`` (``λ``), ``adjacency``; method
        ``spectral_bound(s)``.

    Raises
    ------
    GradcodesValueError
        If a parameter is out of its range (the message names the parameter and the range), or ``graph`` is not a
        connected regular graph on ``n`` vertices.

    Examples
    --------
    The Petersen graph (``d = 3``, ``λ = 2``):

    >>> import gradcodes as gc
    >>> petersen = [[1, 4, 5], [0, 2, 6], [1, 3, 7], [2, 4, 8], [0, 3, 9], [0, 7, 8], [1, 8, 9], [2, 5, 9],
    ...             [3, 5, 6], [4, 6, 7]]
    >>> code = gc.expander_code(10, 3, graph=petersen)
    >>> code.load, round(code.spectral_lambda, 12)
    (3, 2.0)
    >>> err = gc.approximation_error(code, [2, 3, 4, 5, 6, 7, 8, 9], decoder="fixed")
    >>> bool(err <= code.spectral_bound(2))
    True
    >>> rep = gc.worst_case_error(code, 2)
    >>> rep.exhaustive, rep.patterns_checked, bool(rep.worst_lower <= code.spectral_bound(2))
    (True, 45, True)
    """
    n = check_int("n", n, 2)
    degree = check_int("degree", degree, 1, n - 1 if isinstance(graph, str) else None)   # multigraphs: any d
    check_entries(n, n, exact=field == "rational")
    if field not in ("real", "rational"):
        raise GradcodesValueError(f"field must be 'real' or 'rational', got {field!r}")
    params: dict[str, Any] = {"n": n, "degree": degree, "field": field}
    if isinstance(graph, str):
        if graph != "random":
            raise GradcodesValueError(
                f"graph must be 'random' or a user graph (adjacency matrix, neighbour lists, networkx "
                f"graph), got {graph!r}")
        gen = check_rng(rng)
        for _ in range(100 if require_connected else 1):
            A = random_regular_graph(n, degree, gen)
            if not require_connected or _connected(A):
                break
        else:
            raise GradcodesValueError(f"no connected {degree}-regular graph found on {n} vertices; use degree >= 2")
        if rng_param(rng) is not None:
            params["rng"] = rng_param(rng)
        else:                                 # no seed to redraw it from: keep the graph itself (save/load)
            params["graph"] = [np.flatnonzero(row).tolist() for row in A]
    else:
        A = _adjacency(graph, n)
        if A.shape[0] != n:
            raise GradcodesValueError(f"graph has {A.shape[0]} vertices, expected n={n}")
        deg = A.sum(axis=1)
        if not (deg == degree).all():
            i = int(np.flatnonzero(deg != degree)[0])
            raise GradcodesValueError(
                f"graph must be {degree}-regular (degree={degree}); vertex {i} has degree {int(deg[i])} "
                f"(degrees range {int(deg.min())}..{int(deg.max())}): irregular graph")
        if require_connected and not _connected(A):
            raise GradcodesValueError(
                "graph is disconnected: λ_2 = d, so the spectral bound is void and a straggling "
                "component loses its partitions; pass a connected graph (or require_connected=False)")
        if (A > 1).any() or np.trace(A):     # a multigraph: keep multiplicities and loops for save/load
            iu, ju = np.nonzero(np.triu(A))
            params["graph"] = {"multigraph_edges": [[int(u), int(v)] for u, v in zip(iu, ju, strict=True)
                                                    for _ in range(int(A[u, v]) // (2 if u == v else 1))]}
        else:
            params["graph"] = [np.flatnonzero(row).tolist() for row in A]
    d, lam = _spectrum(A)
    if field == "rational":
        B = np.empty(A.shape, dtype=object)
        for idx, v in np.ndenumerate(A):
            B[idx] = Fraction(int(v), degree)
    else:
        B = A / degree
    if s is not None:
        params["s"] = check_int("s", s, 0, n - 1)
    return ExpanderCode(B, degree=degree, spectral_lambda=lam, adjacency=A, s=s, field=field,
                        name=f"expander[d={degree}]", family="expander_code", params=params,
                        decoders=[OptimalDecoder(), FixedDecoder()], default_decoder="optimal")


class _MultiGraph:
    """The networkx interface (nodes, edges, is_multigraph) of a saved multigraph's edge list."""

    def __init__(self, n: int, edges: list[list[int]]) -> None:
        self._n, self._edges = n, edges

    def nodes(self) -> list[int]:
        return list(range(self._n))

    def edges(self) -> list[tuple[int, int]]:
        return [(int(u), int(v)) for u, v in self._edges]

    def is_multigraph(self) -> bool:
        return True


def _rebuild(n: int, degree: int, field: str = "real", rng: int | None = None, graph: Any = None,
             seed: int | None = None,
             s: int | None = None, **_: Any) -> ApproximateCode:
    if isinstance(graph, dict) and "multigraph_edges" in graph:
        graph = _MultiGraph(n, graph["multigraph_edges"])
    return expander_code(n, degree, graph if graph is not None else "random", rng=rng if seed is None else seed, s=s,
                         field=field)


def lapack_margin(n: int, scale: float) -> float:
    """A safe margin on an eigen- or singular value computed by LAPACK for an ``n x n`` matrix of norm ``scale``:
    ``1e-13 n scale``, hundreds of times the backward error ``O(n eps ||A||)`` of a symmetric eigensolver or SVD
    (eigenvalues of a symmetric matrix move by at most the norm of the perturbation: Weyl's inequality)."""
    return 1e-13 * n * scale


def spectral_upper(code: Any, s: int, dec: Any) -> UpperBound | None:
    """The spectral bound of Raviv et al. (2018) for the fixed decoder, hence for the optimal ones (they are never
    worse); ``λ`` of the Margulis graph is Gabber & Galil's ``5 sqrt(2)``, else LAPACK's plus a margin."""
    if not isinstance(dec, (OptimalDecoder, FixedDecoder)) and dec.name != "lstsq":
        return None
    n, d = code.n, code.degree
    exact_lam = code.family == "margulis_code"
    lam = code.spectral_lambda if exact_lam else code.spectral_lambda + lapack_margin(n, d)
    how = ("λ <= 5 sqrt(2), Gabber & Galil 1981 (Hoory, Linial & Wigderson 2006, Thm 8.1)" if exact_lam
           else f"λ = {lam:.6g} = LAPACK eigenvalue + margin")
    return UpperBound(lam / d * math.sqrt(n * s / (n - s)),
                      f"theorem: Raviv et al. 2018 spectral bound: (λ/d) sqrt(n s/(n-s)) for a d-regular graph, "
                      f"fixed decoder and therefore optimal ({how})")


REBUILDERS.update(expander_code=_rebuild)
register_adversaries("expander_code", worker_balls)
register_upper_bound("expander_code", spectral_upper)
register(Scheme("expander_code", lambda n, degree=3, s=1, seed=0: expander_code(n, degree, rng=seed, s=s),
                "Raviv et al. approximate code B = A_G/d of a random d-regular graph (load d; worst/mean error)",
                tour=({"n": 10, "degree": 3, "s": 2}, {"n": 50, "degree": 6, "s": 5},
                      {"n": 200, "degree": 10, "s": 20}),
                evaluate=lambda code: worst_case_error(code, samples=200, search_steps=3, neighbours=32, rng=0),
                kind="adversarial"))
