"""The published polynomial construction of Ye–Abbe codes (Ye & Abbe 2018, Section 3.3): real nodes, top
monomial coefficients as functionals, closed-form Lagrange decoders; and the node choices."""

from __future__ import annotations

from fractions import Fraction
from typing import Any

import numpy as np

from ..._base.errors import GradcodesTypeError, GradcodesValueError
from ..._core import detlinalg as _det
from ..._core.fields import Field, to_fraction
from .common import _holders, _series_inv, _series_mul

#: The named node choices accepted by :func:`ye_abbe` (a sequence of numbers is accepted too).
NODE_CHOICES = ("fourier", "chebyshev", "equispaced", "integer", "random")


def _poly_parts(theta: Any, n: int, m: int, bk: Field) -> tuple[Any, list[Any]]:
    """``full_i = prod_{k != i} (theta_i - theta_k)`` (n,) and ``e_r`` of all the nodes, ``r < m``."""
    one = bk.const(1)
    diff = theta[:, None] - theta[None, :]
    diff = bk.unit_diagonal(diff)
    e_all = [one] + [bk.const(0)] * (m - 1)
    for t in range(n):
        e_all = [e_all[0]] + [e_all[r] + theta[t] * e_all[r - 1] for r in range(1, m)]
    return np.prod(diff, axis=1), e_all


def _poly_B(theta: Any, n: int, s: int, m: int, bk: Field, full: Any, e_all: list[Any]) -> Any:
    d = s + m
    H = _holders(n, d)
    one = bk.const(1)
    dH = theta[H][:, :, None] - theta[H][:, None, :]                 # (n, d, d)
    dH = bk.unit_diagonal(dH)
    Z = full[H] / np.prod(dH, axis=2)                                # (n, d): Z_j(theta_i), i in H_j
    # e_r(non-holders of j), r < m, via the series prod_all (1 + theta t) / prod_{h in H_j} (1 + theta_h t)
    e = [x * bk.ones(n) for x in e_all]
    for a in range(d):
        e = _series_mul(e, _series_inv(theta[H[:, a]], m, one))
    # B_j = Phi M^{-1}, Phi[a, w] = Z_j(theta_a) theta_a^w, M[v, w] = (-1)^(w-v) e_{w-v} (unit upper triangular)
    powers = [bk.ones((n, d))]
    for _ in range(1, m):
        powers.append(powers[-1] * theta[H])
    cols: list[Any] = []
    for w in range(m):
        col = Z * powers[w]
        for v in range(w):
            Mvw = e[w - v] if (w - v) % 2 == 0 else -e[w - v]
            col = col - cols[v] * Mvw[:, None]
        cols.append(col)
    B = bk.zeros((n, n, m))
    for a in range(d):
        for u in range(m):
            B[H[:, a], np.arange(n), u] = cols[u][:, a]
    return B.reshape(n, n * m)


def _poly_A(theta: Any, full: Any, e_all: list[Any], n: int, m: int, bk: Field, S: np.ndarray) -> Any:
    """``A_F[u, i] = [x^(n-d+u)] L_i^F(x) = w_i^F (-1)^(m-1-u) e_(m-1-u)(F minus i)`` for i in F, batched."""
    b, s = S.shape
    # w_i^F = prod_{l in S} (theta_i - theta_l) / full_i   (zero at the stragglers automatically)
    num = np.prod(theta[None, :, None] - theta[S][:, None, :], axis=2) if s else None
    wF = (num / full[None, :]) if s else bk.ones((b, n)) / full[None, :]
    ones_bn = bk.ones((b, n))
    e = [x * ones_bn for x in e_all]
    one = bk.const(1)
    for c in range(s):
        e = _series_mul(e, _series_inv(theta[S[:, c]][:, None] * ones_bn, m, one))
    e = _series_mul(e, _series_inv(theta[None, :] * ones_bn, m, one))
    out = bk.zeros((b, m, n))
    for u in range(m):
        r = m - 1 - u
        out[:, u, :] = wF * (e[r] if r % 2 == 0 else -e[r])
    return out



def _named_nodes(kind: str, n: int, exact: bool) -> Any:
    if kind == "integer":
        vals = [Fraction(i + 1) for i in range(n)]
    elif kind == "equispaced":
        vals = [Fraction(-1) + Fraction(2 * i, n - 1) if n > 1 else Fraction(0) for i in range(n)]
    elif kind == "chebyshev":
        if exact:
            raise GradcodesValueError(
                "nodes='chebyshev' are irrational: exact (field='rational') codes need rational nodes "
                "('integer', 'equispaced', or a sequence of Fractions); to check the Fourier "
                "construction exactly use verify(code, field='GF')")
        return _det.cos_pi(2 * np.arange(n) + 1, 2 * n)           # correctly rounded: the same bits everywhere
    else:  # pragma: no cover - guarded by the caller
        raise GradcodesValueError(kind)
    return np.array(vals, dtype=object) if exact else np.array([float(v) for v in vals])


def _user_nodes(nodes: Any, n: int, exact: bool) -> tuple[Any, list[str]]:
    try:
        raw = list(nodes)
    except TypeError:
        raise GradcodesTypeError(f"nodes must be one of {', '.join(map(repr, NODE_CHOICES))} or a sequence of n={n} "
                                 f"distinct real numbers, got {nodes!r}") from None
    if len(raw) != n:
        raise GradcodesValueError(f"nodes must have length n={n} (one evaluation point per worker), got {len(raw)}")
    if exact:
        try:
            vals = [Fraction(v) if isinstance(v, str) else to_fraction(v, "nodes") for v in raw]
        except (ValueError, ZeroDivisionError) as err:
            raise GradcodesValueError(f"nodes must be rational numbers (or strings like '1/3') for field='rational': "
                                      f"{err}") from None
        arr = np.array(vals, dtype=object)
    else:
        for v in raw:
            if isinstance(v, (bool, complex, np.complexfloating)) or not isinstance(v, (int, float, Fraction,
                                                                                        np.integer, np.floating)):
                raise GradcodesTypeError(f"nodes must be real numbers, got {v!r}")
        arr = np.array([float(v) for v in raw])
        if not np.all(np.isfinite(arr)):
            raise GradcodesValueError("nodes must be finite real numbers")
        vals = arr.tolist()
    uniq, counts = np.unique(np.array([float(v) for v in vals]), return_counts=True)
    if exact:
        dup = len(set(vals)) != len(vals)
    else:
        dup = bool((counts > 1).any())
    if dup:
        seen: dict[Any, int] = {}
        pairs = []
        for i, v in enumerate(vals):
            if v in seen:
                pairs.append((seen[v], i))
            seen.setdefault(v, i)
        raise GradcodesValueError(
            f"nodes must be distinct; nodes {pairs[0][0]} and {pairs[0][1]} are both {vals[pairs[0][1]]}")
    return arr, [str(v) for v in vals]

