"""A built-in synthetic training problem (numpy only): least squares or logistic regression on Gaussian data."""

from __future__ import annotations

from typing import Any

import numpy as np

from .._base.aliases import DTypeLike, RNGLike
from .._base.errors import GradcodesValueError
from .._base.validate import check_int, check_rng

__all__ = ["SyntheticProblem"]


class SyntheticProblem:
    r"""Synthetic data split into ``k`` contiguous partitions; every rank builds the same data from ``rng``.

    * ``"least-squares"``: :math:`f(w) = \frac{1}{2M}\|Xw - y\|^2`, ``y = X w* + 0.1 noise``;
    * ``"logistic"``: :math:`f(w) = \frac1M \sum_i \log(1 + e^{x_i^T w}) - y_i x_i^T w`, labels drawn from the
      logistic model of ``w*``.

    The partial gradient on partition ``j`` is the gradient of partition ``j``'s share of ``f`` (so the partial
    gradients sum to ``grad f``); :attr:`lr` is ``1/L`` for the smoothness constant ``L``.

    Parameters
    ----------
    kind : {"least-squares", "logistic"}
    points, dim : int
        Data points ``M`` and dimension.
    rng : None, int, SeedSequence or Generator, default 0
        Random state of the data (SPEC 7). The default is 0, not None, because every rank of an MPI job must
        build the same data and the problem has no communicator to agree on fresh entropy.
    dtype : dtype, default float64

    Examples
    --------
    >>> prob = SyntheticProblem("least-squares", points=120, dim=5, rng=0)
    >>> g = prob.partial_gradient(4)
    >>> w = np.zeros(5)
    >>> bool(np.allclose(sum(g(w, j) for j in range(4)), prob.gradient(w)))
    True
    """

    def __init__(self, kind: str = "least-squares", *, points: int = 2400, dim: int = 50, rng: RNGLike = 0,
                 dtype: DTypeLike = np.float64) -> None:
        if kind not in ("least-squares", "logistic"):
            raise GradcodesValueError(f"kind must be 'least-squares' or 'logistic', got {kind!r}")
        self.kind = kind
        self.points = check_int("points", points, 1, 10**8)
        self.dim = check_int("dim", dim, 1, 10**7)
        if self.points * self.dim > 2 * 10**8:
            raise GradcodesValueError(f"points * dim = {self.points * self.dim} exceeds 2e8 entries")
        self.dtype = np.dtype(dtype)
        rng = check_rng(rng)
        self.X = rng.normal(size=(self.points, self.dim)).astype(self.dtype)
        self.w_star = rng.normal(size=self.dim) / np.sqrt(self.dim)
        z = self.X.astype(np.float64) @ self.w_star
        if kind == "least-squares":
            y = z + 0.1 * rng.normal(size=self.points)
        else:
            y = (rng.random(self.points) < 1 / (1 + np.exp(-z))).astype(np.float64)
        self.y = y.astype(self.dtype)
        L = float(np.linalg.norm(self.X.astype(np.float64), 2) ** 2 / self.points)
        self.lr = 1 / L if kind == "least-squares" else 4 / L

    def _residual(self, Xj: np.ndarray, yj: np.ndarray, w: np.ndarray) -> np.ndarray:
        z = Xj @ w
        if self.kind == "least-squares":
            return z - yj
        return 1 / (1 + np.exp(-z)) - yj

    def partial_gradient(self, k: int) -> Any:
        """``partial_gradient(w, j)`` for ``k`` equal contiguous partitions."""
        k = check_int("k", k, 1, self.points)
        bounds = np.linspace(0, self.points, k + 1).astype(np.int64)
        X, y, M = self.X, self.y, self.points

        def grad(w: np.ndarray, j: int) -> np.ndarray:
            lo, hi = bounds[j], bounds[j + 1]
            Xj = X[lo:hi]
            return (Xj.T @ self._residual(Xj, y[lo:hi], w)) / M

        return grad

    def gradient(self, w: np.ndarray) -> np.ndarray:
        """The full gradient."""
        return (self.X.T @ self._residual(self.X, self.y, w)) / self.points

    def loss(self, w: np.ndarray) -> float:
        """The training loss."""
        z = self.X.astype(np.float64) @ w
        if self.kind == "least-squares":
            return float(0.5 * np.mean((z - self.y) ** 2))
        return float(np.mean(np.logaddexp(0, z) - self.y * z))
