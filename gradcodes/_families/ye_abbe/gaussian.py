"""The random construction of Ye–Abbe codes: a Gaussian generator ``V`` (N x n) and functionals ``C`` (N x m)."""

from __future__ import annotations

from typing import Any

import numpy as np

from ..._base.errors import GradcodesValueError
from ..._core import detlinalg as _det
from ..._core.fields import Field, solve_left
from .common import _holders


def _random_B(V: Any, C: Any, n: int, s: int, m: int, bk: Field) -> Any:
    d = s + m
    H = _holders(n, d)
    B = bk.zeros((n, n, m))
    if not bk.exact:
        return _random_B_float(V, C, n, s, m)
    for j in range(n):
        nh = (j + np.arange(1, n - d + 1)) % n
        Mj = np.concatenate([V[:, nh], C], axis=1)                   # (N, N)
        # P (N x m): V_nh^T P = 0 and C^T P = I
        rhs = bk.zeros((n - s, m))
        for u in range(m):
            rhs[n - d + u, u] = bk.const(1)
        if bk.exact:
            X = solve_left(Mj, rhs.T)                                # X Mj = rhs^T, i.e. Mj^T X^T = rhs
            if X is None:
                raise GradcodesValueError(f"the random construction is singular at partition {j}; use another seed")
            P = X.T
        B[H[j], j] = V[:, H[j]].T @ P
    return B.reshape(n, n * m)


def _random_B_float(V: np.ndarray, C: np.ndarray, n: int, s: int, m: int) -> np.ndarray:
    """:func:`_random_B` in float64, reproducibly: the ``n`` solves ``M_j^T P_j = [0; I]`` by elimination in a fixed
    order with one refinement step (Dot2 residuals), the products with sums in index order; batched over ``j``
    in chunks of about 2^22 matrix entries."""
    d = s + m
    N = n - s
    H = _holders(n, d)
    B = np.zeros((n, n, m))
    rhs = np.zeros((N, m))
    rhs[n - d:, :] = np.eye(m)
    chunk = max(1, (1 << 22) // (N * N))
    for lo in range(0, n, chunk):
        js = np.arange(lo, min(n, lo + chunk))
        nh = (js[:, None] + np.arange(1, n - d + 1)[None, :]) % n                       # (b, n - d)
        Mt = np.concatenate([np.swapaxes(V[:, nh], 0, 1), np.broadcast_to(C, (js.size,) + C.shape)], axis=2)
        P = _det.solve(np.swapaxes(Mt, 1, 2), np.broadcast_to(rhs, (js.size, N, m)), refine=1)
        if not np.all(np.isfinite(P)):
            raise GradcodesValueError("the random construction is singular at some partition; use another seed")
        vals = _det.matmul(np.swapaxes(np.swapaxes(V[:, H[js]], 0, 1), 1, 2), P)       # (b, d, m)
        for a in range(d):
            B[H[js, a], js] = vals[:, a]
    return B.reshape(n, n * m)


def _random_A(V: Any, C: Any, n: int, bk: Field, S: np.ndarray) -> Any:
    b, s = S.shape
    m = C.shape[1]
    mask = np.ones((b, n), dtype=bool)
    np.put_along_axis(mask, S, False, axis=1)
    F = np.flatnonzero(mask.ravel()).reshape(b, n - s) % n
    out = bk.zeros((b, m, n))
    if bk.exact:
        for i in range(b):
            X = solve_left(V[:, F[i]].T.copy(), C.T)                 # X V_F^T = C^T  ->  V_F X^T = C
            if X is not None:
                out[i][:, F[i]] = X
        return out
    VF = np.swapaxes(V[:, F], 0, 1)                                  # (b, N, N)
    a = np.linalg.solve(VF, np.broadcast_to(C, (b,) + C.shape))      # (b, N, m)
    rows = np.arange(b)[:, None]
    for u in range(m):
        out[rows, u, F] = a[:, :, u]
    return out

