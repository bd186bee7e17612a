r"""The Margulis–Gabber–Galil graph and its approximate code (an explicit expander, beside the random regular graphs
of Raviv, Tamo, Tandon & Dimakis 2018/2020), and the helpers the graph constructions share (``bipartite_expander``,
``graph_assignment``: integer CSR matrices, scaling by the degree, the field check, the registered evaluation).

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
"""

from __future__ import annotations

import math
from fractions import Fraction
from typing import Any

import numpy as np

from .._base.errors import GradcodesValueError
from .._base.registry import Scheme, register
from .._base.validate import check_entries, check_int
from .._core.code import LinearCode
from .._io.files import REBUILDERS
from .._verify.approx_adversaries import register_adversaries, register_upper_bound, worker_balls
from .._verify.approx_worst import FixedDecoder, OptimalDecoder, worst_case_error
from .expander import ExpanderCode, spectral_upper

__all__ = ["margulis_gabber_galil_graph", "margulis_code"]

#: Gabber & Galil's bound on λ of the Margulis–Gabber–Galil graph (Hoory, Linial & Wigderson 2006, Thm 8.1).
MGG_LAMBDA_BOUND = 5 * math.sqrt(2)


# ----------------------------------------------------------------------------------------------- shared helpers
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



def _evaluate(code: LinearCode) -> Any:
    """The registered schemes' ``evaluate``: the worst-case search of every graph code."""
    return worst_case_error(code, samples=200, search_steps=3, neighbours=32, rng=0)


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


REBUILDERS.update(margulis_code=lambda N, field="real", s=None, **_: margulis_code(N, s=s, field=field))
register_adversaries("margulis_code", worker_balls)
register_upper_bound("margulis_code", spectral_upper)
register(Scheme("margulis_code", lambda n=16, s=2: margulis_code(math.isqrt(n), s=s),
                "Raviv et al. approximate code B = A/8 of the Margulis–Gabber–Galil graph, n = N^2 workers (load <= 8)",
                tour=({"n": 16, "s": 2}, {"n": 100, "s": 10}),
                evaluate=_evaluate, kind="adversarial"))
