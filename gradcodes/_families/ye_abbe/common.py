"""Helpers shared by the Ye–Abbe constructions: holder windows, truncated power series, grouping, primes."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ..._core.fields import field_of


def _prime_1_mod(q: int, lo: int = 1000) -> int:
    """The smallest prime ``p >= lo`` with ``p = 1 (mod q)``."""
    p = (lo // q + 1) * q + 1
    while True:
        if p > 3 and all(p % r for r in range(2, math.isqrt(p) + 1)):
            return p
        p += q



def _holders(n: int, d: int) -> np.ndarray:
    """(n, d): row ``j`` lists the workers holding partition ``j`` (``j-d+1, ..., j`` mod n)."""
    return (np.arange(n)[:, None] + np.arange(-d + 1, 1)[None, :]) % n



def _series_inv(x: Any, R: int, one: Any) -> list[Any]:
    """Coefficients of ``1 / (1 + x t)`` up to ``t^(R-1)``: ``(-x)^r`` (elementwise, shaped like ``x``)."""
    out = [one + 0 * x]
    for _ in range(1, R):
        out.append(-out[-1] * x)
    return out


def _series_mul(a: list[Any], b: list[Any]) -> list[Any]:
    """Product of two power series truncated to ``len(a)`` terms."""
    return [sum((a[i] * b[r - i] for i in range(1, r + 1)), a[0] * b[r]) for r in range(len(a))]




def _group(B: Any, n: int, k: int, m: int) -> Any:
    """Group ``k = r n`` partitions into ``n`` super-partitions: repeat each block column ``r`` times."""
    if k == n:
        return B
    B3 = B.reshape(n, n, m)
    return field_of(B).repeat(B3, k // n, axis=1).reshape(n, k * m)
