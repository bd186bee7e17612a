r"""Approximate codes of bipartite expander graphs between workers and partitions (the codes with ``k != n`` of
Raviv, Tamo, Tandon & Dimakis 2020, §5): ``B = H / r`` for the biadjacency matrix ``H`` of a random (or given)
bipartite graph; the code type and its spectral bound are in ``expander_graphs``.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from .._base.aliases import RNGLike
from .._base.errors import GradcodesRuntimeError, GradcodesTypeError, GradcodesValueError
from .._base.registry import Scheme, register
from .._base.validate import check_entries, check_int, check_rng, rng_param
from .._io.files import REBUILDERS
from .._verify.approx_adversaries import UpperBound, register_adversaries, register_upper_bound, worker_balls
from .._verify.approx_worst import FixedDecoder, OptimalDecoder
from .expander import lapack_margin
from .expander_graphs import BipartiteExpanderCode
from .margulis import _check_field, _csr, _evaluate, _scaled, _to_dense

__all__ = ["random_biregular_graph", "bipartite_expander_code"]


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


def _rebuild_bipartite(n: int, k: int, degree: int, graph: Any = "random", field: str = "real",
                       rng: int | None = None, s: int | None = None, **_: Any) -> BipartiteExpanderCode:
    return bipartite_expander_code(n, k, degree, graph, rng=rng, s=s, field=field)


def _bipartite_upper(code: Any, s: int, dec: Any) -> UpperBound | None:
    """Raviv et al. (2020, §5): ``(σ_2 / r) sqrt(n s / (n - s))``, fixed decoder and therefore optimal."""
    if not isinstance(dec, (OptimalDecoder, FixedDecoder)) and dec.name != "lstsq":
        return None
    r = code.partition_degree
    sigma = code.second_singular_value() + lapack_margin(max(code.n, code.k), math.sqrt(code.degree * r))
    return UpperBound(sigma / r * math.sqrt(code.n * s / (code.n - s)),
                      f"theorem: Raviv et al. 2020 bipartite spectral bound: (σ_2/r) sqrt(n s/(n-s)), fixed decoder "
                      f"and therefore optimal (σ_2 = {sigma:.6g} = LAPACK singular value + margin)")


REBUILDERS.update(bipartite_expander_code=_rebuild_bipartite)
register_adversaries("bipartite_expander_code", worker_balls)
register_upper_bound("bipartite_expander_code", _bipartite_upper)
register(Scheme("bipartite_expander_code",
                lambda n=12, k=8, degree=4, s=2, seed=0: bipartite_expander_code(n, k, degree, rng=seed, s=s),
                "Raviv et al. approximate code B = H/r of a random bipartite graph (n workers, k partitions, load d)",
                tour=({"n": 12, "k": 8, "degree": 4, "s": 2}, {"n": 60, "k": 40, "degree": 6, "s": 6}),
                evaluate=_evaluate, kind="adversarial"))
