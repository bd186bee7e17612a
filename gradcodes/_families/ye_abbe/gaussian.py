"""The random construction of Ye–Abbe codes: a Gaussian generator ``V`` (N x n) and functionals ``C`` (N x m)."""

from __future__ import annotations

from typing import Any

import numpy as np

from ..._fields import Field, solve_left
from .common import _holders


def _random_B(V: Any, C: Any, n: int, s: int, m: int, bk: Field) -> Any:
    d = s + m
    H = _holders(n, d)
    B = bk.zeros((n, n, m))
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
                raise ValueError(f"the random construction is singular at partition {j}; use another seed")
            P = X.T
        else:
            P = np.linalg.solve(Mj.T, rhs)
        B[H[j], j] = V[:, H[j]].T @ P
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

