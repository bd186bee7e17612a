"""The decoder type of Ye–Abbe codes (closed-form decoding matrices, batched over responder sets)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from ..._core.decoders import Decoder
from ..._core.fields import field_of


class YeAbbeDecoder(Decoder):
    """Closed-form decoder of :func:`ye_abbe` codes: ``A_F[u, i] = kappa_u(L_i^F)``, batched over responder sets.

    ``"fourier"``: sine products (O(n s) per set); polynomial nodes: barycentric weights times elementary
    symmetric functions from truncated power series (O(n s m) per set; never a Vandermonde inverse); ``"random"``:
    one ``(n-s) x (n-s)`` solve per set. When more than ``n - s`` workers respond, the ``n - s`` smallest indices
    are used (deterministic; any ``n - s`` would do). Exact (Fraction / GF(p)) for exact codes.
    """

    def __init__(self, name: str, fn: Callable[[np.ndarray], Any], s: int, exact: bool, description: str) -> None:
        self.name = name
        self._fn = fn
        self._s = s
        self.exact = exact
        self.description = description

    def matrices(self, code: Any, mask: np.ndarray) -> Any:
        mask = np.asarray(mask, dtype=bool)
        b, n = mask.shape
        s = self._s
        counts = n - mask.sum(axis=1)
        if np.all(counts == s):
            return self._batched(mask, code.m)
        out = self._zeros(code, b, n)
        for t in np.unique(counts):
            if t > s:  # too few responders: no decoding matrix (zeros; the residual reports it)
                continue
            rows = np.flatnonzero(counts == t)
            mk = mask[rows].copy()
            if t < s:  # more responders than needed: keep the n - s smallest indices
                mk &= np.cumsum(mk, axis=1) <= n - s
            out[rows] = self._batched(mk, code.m)
        return out

    def _zeros(self, code: Any, b: int, n: int) -> Any:
        return field_of(code.B).zeros((b, code.m, n))

    def _batched(self, mask: np.ndarray, m: int) -> Any:
        b, n = mask.shape
        S = np.flatnonzero(~mask.ravel()).reshape(b, -1) % n
        chunk = max(1, 4_000_000 // (n * (S.shape[1] + m + 1)))     # (chunk, m, n) output + O(n (s + m)) work
        if b <= chunk:
            return self._fn(S)
        parts = [self._fn(S[lo:lo + chunk]) for lo in range(0, b, chunk)]
        return field_of(parts[0]).concatenate(parts)

