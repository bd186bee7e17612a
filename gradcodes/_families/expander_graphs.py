r"""More expander-graph approximate codes: the Margulis–Gabber–Galil graph and bipartite graphs (the graph families
of Raviv, Tamo, Tandon & Dimakis 2018/2020 besides random regular graphs), and the graph assignment codes of
Glasgow & Wootters (2021) with their optimal decoder in closed form.

**Margulis–Gabber–Galil graph** (Margulis 1973; Gabber & Galil 1981; Hoory, Linial & Wigderson 2006, §8). The
vertices are ``Z_N x Z_N`` (vertex ``(x, y)`` is worker ``x N + y``); the four maps ``T_1(x, y) = (x + 2y, y)``,
``T_2(x, y) = (x + 2y + 1, y)``, ``T_3(x, y) = (x, y + 2x)``, ``T_4(x, y) = (x, y + 2x + 1)`` (mod ``N``) are
bijections, and the adjacency operator is ``A = sum_i (P_i + P_i^T)`` with ``P_i`` the permutation matrix of
``T_i``. It is 8-regular as a *multigraph*: a repeated edge counts with its multiplicity and a self-loop
(``T_i v = v``) counts twice, once per direction, so ``A 1 = 8 * 1`` and ``A`` is symmetric. This is the operator
of Gabber & Galil's theorem, ``λ = max(|λ_2|, |λ_n|) <= 5 sqrt(2)`` (Hoory et al. 2006, Theorem 8.1), and the
degree networkx reports for its ``margulis_gabber_galil_graph``. The code is ``B = A / 8``: doubly stochastic and
symmetric, which is all the spectral bound of Raviv et al. (2018, §5) uses, so
``||(n/(n-s)) 1_F B - 1|| <= (λ/8) sqrt(n s / (n - s))`` with ``λ <= 5 sqrt(2)``. A worker stores the partitions
of its *distinct* neighbours (itself included when it has a loop): the load is at most 8.

**Bipartite graphs** (Raviv et al. 2020, §5: codes with ``k != n``). ``H`` is the ``n x k`` biadjacency matrix of a
bipartite graph with worker degree ``d`` (the load) and partition degree ``r = n d / k`` (the replication);
``B = H / r``, so ``1^T B = 1^T``. With ``σ_2`` the second singular value of ``H`` (the first is
``sqrt(d r)``, with singular vectors ``1``), the same argument gives
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

from .._base.aliases import MatrixLike, Responders, RNGLike
from .._base.errors import GradcodesRuntimeError, GradcodesTypeError, GradcodesValueError
from .._base.registry import Scheme, register
from .._base.validate import check_entries, check_int, check_rng, rng_param
from .._core.code import ApproximateCode, LinearCode
from .._core.decoders import Decoder
from .._core.fields import RationalField
from .._io.files import REBUILDERS
from .._verify.approx_adversaries import UpperBound, register_adversaries, register_upper_bound, worker_balls
from .._verify.approx_worst import FixedDecoder, OptimalDecoder, worst_case_error
from .expander import ExpanderCode, lapack_margin, random_regular_graph, spectral_upper

__all__ = ["margulis_gabber_galil_graph", "margulis_code", "random_biregular_graph", "bipartite_expander_code",
           "BipartiteExpanderCode", "graph_assignment_code", "GraphAssignmentCode", "ComponentDecoder",
           "graph_assignment_error"]

#: Gabber & Galil's bound on λ of the Margulis–Gabber–Galil graph (Hoory, Linial & Wigderson 2006, Thm 8.1).
MGG_LAMBDA_BOUND = 5 * math.sqrt(2)


def _csr(rows: np.ndarray, cols: np.ndarray, shape: tuple[int, int]) -> Any:
    """The integer matrix with ``rows[t], cols[t]`` counted once per ``t`` (duplicates summed), as a CSR array."""
    import scipy.sparse as sp

    M = sp.csr_array((np.ones(rows.size, dtype=np.int64), (rows, cols)), shape=shape)
    M.sum_duplicates()
    M.sort_indices()
    return M


def _to_dense(M: Any) -> np.ndarray:
    # the graph's adjacency, for the family's own arithmetic (the code's B is built from it)
    return np.asarray(M.toarray(), dtype=np.int64)


def _scaled(M: np.ndarray, den: int, field: str) -> Any:
    """``M / den`` in floats (one correctly rounded division per entry) or Fractions."""
    if field == "rational":
        B = np.empty(M.shape, dtype=object)
        for idx, v in np.ndenumerate(M):
            B[idx] = Fraction(int(v), den)
        return B
    return M / den


def _check_field(field: str) -> str:
    if field not in ("real", "rational"):
        raise GradcodesValueError(f"field must be 'real' or 'rational', got {field!r}")
    return field


# ----------------------------------------------------------------------------------------------- Margulis
def margulis_gabber_galil_graph(N: int) -> Any:
    """Adjacency matrix of the Margulis–Gabber–Galil graph on ``Z_N x Z_N`` as a ``scipy.sparse`` CSR array.

    ``A = sum_i (P_i + P_i^T)`` for the maps ``T_i`` in the module docstring: vertex ``(x, y)`` is index
    ``x N + y``, a multiple edge has its multiplicity and a self-loop counts 2 (one per direction), so every row sums
    to 8. Integer arithmetic only: the same matrix on every machine.

    Parameters
    ----------
    N : int
        Side of the torus, ``N >= 2`` (``N**2`` vertices).

    Returns
    -------
    scipy.sparse.csr_array
        The ``N**2 x N**2`` symmetric integer adjacency matrix, every row summing to 8.

    Examples
    --------
    >>> A = margulis_gabber_galil_graph(3)
    >>> A.shape, A.sum(axis=1).tolist() == [8] * 9, bool((A != A.T).nnz == 0), int(A[0, 0])
    ((9, 9), True, True, 4)
    """
    N = check_int("N", N, 2, 10_000)
    n = N * N
    check_entries(n, n, what="the Margulis–Gabber–Galil adjacency matrix")
    x, y = np.divmod(np.arange(n, dtype=np.int64), N)
    images = [((x + 2 * y) % N) * N + y, ((x + 2 * y + 1) % N) * N + y,
              x * N + (y + 2 * x) % N, x * N + (y + 2 * x + 1) % N]
    v = np.arange(n, dtype=np.int64)
    rows = np.concatenate([v] * 4 + images)
    cols = np.concatenate(images + [v] * 4)
    return _csr(rows, cols, (n, n))


def margulis_code(N: int, *, s: int | None = None, field: str = "real") -> ExpanderCode:
    r"""Approximate gradient code ``B = A / 8`` of the Margulis–Gabber–Galil graph on ``n = N**2`` workers.

    Raviv et al. (2018, §5) use the normalised adjacency matrix of an expander; the Margulis–Gabber–Galil graph
    is an explicit 8-regular one with loops and multiple edges, counted as in :func:`margulis_gabber_galil_graph`
    (a loop twice), so ``B`` is symmetric and doubly stochastic and the spectral bound holds with
    ``λ <= 5 sqrt(2)`` (Gabber & Galil 1981).

    Parameters
    ----------
    N : int
        ``N >= 2``; the code has ``n = k = N**2`` workers and partitions.
    s : int, optional
        The number of stragglers the code is meant for (default of :func:`~gradcodes.worst_case_error`).
    field : {"real", "rational"}
        Floats (entries are multiples of 1/8, exact) or Fractions.

    Returns
    -------
    ExpanderCode
        ``degree = 8``, ``spectral_lambda = 5 sqrt(2)`` (Gabber & Galil's bound, not the exact λ, which would need an
        eigen-solver), ``adjacency`` with multiplicities; decoders ``"optimal"`` (default) and ``"fixed"``.
        ``load`` counts distinct partitions (at most 8).

    Examples
    --------
    >>> import gradcodes as gc
    >>> code = gc.margulis_code(4, s=2)
    >>> code.n, code.load, float(code.B.sum(axis=0).max())      # loops and multiple edges: load 6 < 8 here
    (16, 6, 1.0)
    >>> rep = gc.worst_case_error(code, decoder="fixed")
    >>> rep.exhaustive, bool(rep.worst_lower <= code.spectral_bound(2))
    (True, True)
    """
    N = check_int("N", N, 2, 10_000)
    field = _check_field(field)
    n = N * N
    check_entries(n, n, exact=field == "rational")
    A = _to_dense(margulis_gabber_galil_graph(N))
    params: dict[str, Any] = {"N": N, "field": field}
    if s is not None:
        params["s"] = check_int("s", s, 0, n - 1)
    return ExpanderCode(_scaled(A, 8, field), degree=8, spectral_lambda=MGG_LAMBDA_BOUND, adjacency=A, s=s,
                        field=field, name=f"margulis[N={N}]", family="margulis_code", params=params,
                        decoders=[OptimalDecoder(), FixedDecoder()], default_decoder="optimal")


# ----------------------------------------------------------------------------------------------- bipartite
def random_biregular_graph(n: int, k: int, degree: int, rng: RNGLike = None, max_tries: int = 1000) -> Any:
    """Biadjacency matrix (``n x k`` CSR, 0/1) of a random simple bipartite graph, worker degree ``degree``.

    Sequential stub matching: worker after worker, each of its ``degree`` partitions is drawn among those it does
    not hold yet with probability proportional to their free slots (each partition has ``r = n * degree / k``); a
    dead end (fewer free partitions than needed) restarts the draw, at most ``max_tries`` times. Integer draws and
    integer prefix sums only, so a seed gives the same graph everywhere.

    Parameters
    ----------
    n : int
        Number of workers (left vertices).
    k : int
        Number of partitions (right vertices); ``n * degree`` must be a multiple of ``k``.
    degree : int
        Partitions per worker, ``1 <= degree <= k``.
    rng : None, int, SeedSequence or Generator, optional
        Random state (SPEC 7).
    max_tries : int, default 1000
        Restarts allowed after a dead end.

    Returns
    -------
    scipy.sparse.csr_array of int, shape (n, k)
        The 0/1 biadjacency matrix: rows sum to ``degree``, columns to ``n * degree / k``.

    Raises
    ------
    GradcodesValueError
        If a size is out of range or ``k`` does not divide ``n * degree``.
    GradcodesRuntimeError
        If all ``max_tries`` draws dead-end.

    Examples
    --------
    >>> H = random_biregular_graph(6, 4, 2, rng=0)
    >>> H.sum(axis=1).tolist(), H.sum(axis=0).tolist()
    ([2, 2, 2, 2, 2, 2], [3, 3, 3, 3])
    """
    n = check_int("n", n, 1)
    k = check_int("k", k, 1)
    degree = check_int("degree", degree, 1, k)
    if (n * degree) % k:
        raise GradcodesValueError(f"n * degree must be a multiple of k (each partition on r = n*degree/k workers); "
                                  f"got n={n}, k={k}, degree={degree}")
    r = n * degree // k
    check_entries(n, k, what="the biadjacency matrix")
    max_tries = check_int("max_tries", max_tries, 1)
    gen = check_rng(rng)
    for _ in range(max_tries):
        cap = np.full(k, r, dtype=np.int64)
        cols = np.empty(n * degree, dtype=np.int64)
        t = 0
        for _i in range(n):
            avail = cap.copy()
            for _j in range(degree):
                csum = np.cumsum(avail)
                if csum[-1] == 0:
                    break
                j = int(np.searchsorted(csum, int(gen.integers(int(csum[-1]))), side="right"))
                cols[t] = j
                t += 1
                cap[j] -= 1
                avail[j] = 0
            else:
                continue
            break
        if t == n * degree:
            return _csr(np.repeat(np.arange(n, dtype=np.int64), degree), cols, (n, k))
    raise GradcodesRuntimeError(f"no simple bipartite graph with worker degree {degree} on {n} x {k} vertices in "
                                f"{max_tries} draws; lower degree or raise max_tries")


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


def bipartite_expander_code(n: int, k: int, degree: int, graph: Any = "random", *, rng: RNGLike = None,
                            s: int | None = None, field: str = "real") -> BipartiteExpanderCode:
    """Approximate gradient code ``B = H / r`` of a bipartite graph between ``n`` workers and ``k`` partitions.

    Parameters
    ----------
    n, k : int
        Workers and partitions, ``n, k >= 1``.
    degree : int
        Worker degree ``d`` (the load), ``1 <= d <= k``; ``n d`` must be a multiple of ``k``.
    graph : "random" or array_like (n, k)
        ``"random"``: :func:`random_biregular_graph` with ``rng``. Otherwise a 0/1 biadjacency matrix with every row
        summing to ``degree`` and every column to ``r = n d / k``.
    rng : None, int, SeedSequence or Generator
        Random state of the random graph (SPEC 7).
    s : int, optional
        Stragglers the code is meant for (informational).
    field : {"real", "rational"}

    Returns
    -------
    BipartiteExpanderCode
        Decoders ``"optimal"`` (default) and ``"fixed"``; ``spectral_bound(s)``.

    Raises
    ------
    GradcodesValueError
        If a parameter is out of its range (the message names the parameter and the range), ``k`` does not divide ``n
        * degree``, or a given ``graph`` is not an ``n x k`` 0/1 matrix of these degrees.
    GradcodesTypeError
        If ``graph`` is neither ``"random"`` nor a matrix.

    Examples
    --------
    >>> import gradcodes as gc
    >>> code = gc.bipartite_expander_code(12, 8, 4, rng=1)
    >>> code.load, code.partition_degree, [round(float(v), 12) for v in set(code.B.sum(axis=0))]
    (4, 6, [1.0])
    """
    n = check_int("n", n, 1)
    k = check_int("k", k, 1)
    degree = check_int("degree", degree, 1, k)
    field = _check_field(field)
    check_entries(n, k, exact=field == "rational")
    if (n * degree) % k:
        raise GradcodesValueError(f"n * degree must be a multiple of k; got n={n}, k={k}, degree={degree}")
    r = n * degree // k
    params: dict[str, Any] = {"n": n, "k": k, "degree": degree, "field": field}
    if isinstance(graph, str):
        if graph != "random":
            raise GradcodesValueError(f"graph must be 'random' or a biadjacency matrix (n x k), got {graph!r}")
        H = _to_dense(random_biregular_graph(n, k, degree, rng))
        if rng_param(rng) is not None:
            params["rng"] = rng_param(rng)
        else:
            params["graph"] = H.tolist()
    else:
        try:
            H = np.asarray(graph)
        except (TypeError, ValueError):
            raise GradcodesTypeError(f"graph must be 'random' or a biadjacency matrix, got {graph!r}") from None
        if H.shape != (n, k):
            raise GradcodesValueError(f"graph biadjacency matrix must have shape (n, k) = ({n}, {k}), got {H.shape}")
        if H.dtype.kind not in "biuf" or not np.isin(H, (0, 1)).all():
            raise GradcodesValueError("graph biadjacency matrix must contain only 0 and 1")
        H = H.astype(np.int64)
        if (H.sum(axis=1) != degree).any() or (H.sum(axis=0) != r).any():
            raise GradcodesValueError(f"graph must have worker degree {degree} (row sums) and partition degree "
                                      f"r = n*degree/k = {r} (column sums)")
        params["graph"] = H.tolist()
    if s is not None:
        params["s"] = check_int("s", s, 0, n - 1)
    return BipartiteExpanderCode(_scaled(H, r, field), degree=degree, partition_degree=r, biadjacency=H, s=s,
                                 field=field, name=f"bipartite_expander[d={degree}]", family="bipartite_expander_code",
                                 params=params, decoders=[OptimalDecoder(), FixedDecoder()], default_decoder="optimal")


# ----------------------------------------------------------------------------------------------- graph assignment
def _multigraph_edges(A: np.ndarray) -> np.ndarray:
    """The edges of a multigraph adjacency matrix (loops on the diagonal counted twice), lexicographic, (n, 2)."""
    iu, ju = np.nonzero(np.triu(A, 1))
    reps = A[iu, ju]
    loops = np.flatnonzero(np.diag(A))
    u = np.concatenate([np.repeat(iu, reps), np.repeat(loops, np.diag(A)[loops] // 2)])
    v = np.concatenate([np.repeat(ju, reps), np.repeat(loops, np.diag(A)[loops] // 2)])
    order = np.lexsort((v, u))
    return np.stack([u[order], v[order]], axis=1).astype(np.int64)


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


# ----------------------------------------------------------------------------------------------- registration
def _rebuild_graph_assignment(k: int, degree: int, graph: Any = "random", field: str = "real",
                              rng: int | None = None, s: int | None = None, **_: Any) -> GraphAssignmentCode:
    return graph_assignment_code(k, degree, graph, rng=rng, s=s, field=field)


def _rebuild_bipartite(n: int, k: int, degree: int, graph: Any = "random", field: str = "real",
                       rng: int | None = None, s: int | None = None, **_: Any) -> BipartiteExpanderCode:
    return bipartite_expander_code(n, k, degree, graph, rng=rng, s=s, field=field)


REBUILDERS.update(margulis_code=lambda N, field="real", s=None, **_: margulis_code(N, s=s, field=field),
                  bipartite_expander_code=_rebuild_bipartite, graph_assignment_code=_rebuild_graph_assignment)



def _bipartite_upper(code: Any, s: int, dec: Any) -> UpperBound | None:
    """Raviv et al. (2020, §5): ``(σ_2 / r) sqrt(n s / (n - s))``, fixed decoder and therefore optimal."""
    if not isinstance(dec, (OptimalDecoder, FixedDecoder)) and dec.name != "lstsq":
        return None
    r = code.partition_degree
    sigma = code.second_singular_value() + lapack_margin(max(code.n, code.k), math.sqrt(code.degree * r))
    return UpperBound(sigma / r * math.sqrt(code.n * s / (code.n - s)),
                      f"theorem: Raviv et al. 2020 bipartite spectral bound: (σ_2/r) sqrt(n s/(n-s)), fixed decoder "
                      f"and therefore optimal (σ_2 = {sigma:.6g} = LAPACK singular value + margin)")


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


register_adversaries("margulis_code", worker_balls)
register_upper_bound("margulis_code", spectral_upper)
register_adversaries("bipartite_expander_code", worker_balls)
register_upper_bound("bipartite_expander_code", _bipartite_upper)
register_upper_bound("graph_assignment_code", _graph_assignment_upper)


def _evaluate(code: LinearCode) -> Any:
    return worst_case_error(code, samples=200, search_steps=3, neighbours=32, rng=0)


register(Scheme("margulis_code", lambda n=16, s=2: margulis_code(math.isqrt(n), s=s),
                "Raviv et al. approximate code B = A/8 of the Margulis–Gabber–Galil graph, n = N^2 workers (load <= 8)",
                tour=({"n": 16, "s": 2}, {"n": 100, "s": 10}),
                evaluate=_evaluate, kind="adversarial"))
register(Scheme("bipartite_expander_code",
                lambda n=12, k=8, degree=4, s=2, seed=0: bipartite_expander_code(n, k, degree, rng=seed, s=s),
                "Raviv et al. approximate code B = H/r of a random bipartite graph (n workers, k partitions, load d)",
                tour=({"n": 12, "k": 8, "degree": 4, "s": 2}, {"n": 60, "k": 40, "degree": 6, "s": 6}),
                evaluate=_evaluate, kind="adversarial"))
register(Scheme("graph_assignment_code",
                lambda k=10, degree=3, s=2, seed=0: graph_assignment_code(k, degree, rng=seed, s=s),
                "Glasgow & Wootters graph assignment code (workers = edges of a d-regular graph), optimal decoding",
                tour=({"k": 10, "degree": 3, "s": 2}, {"k": 40, "degree": 6, "s": 12}),
                evaluate=_evaluate, kind="adversarial"))
