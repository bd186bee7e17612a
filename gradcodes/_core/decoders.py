"""Decoders: small parallel classes over one base.

A decoder turns a batch of responder patterns into decoding matrices. Every decoder implements

    ``matrices(code, mask) -> A``  with ``mask`` of shape (b, n) (True = responder) and ``A`` of shape (b, m, n),

zero in every straggler column. Decoders never check their own answer: the code (``decoding_matrix``) and the
verifier compute residuals, so a decoder that cannot decode a pattern simply returns its best attempt.

Generic decoders, available on every code of the matching field:

* :class:`NullSpaceDecoder` (``"nullspace"``, float default) — all solutions of ``a B = E`` are ``a = c + K z`` with
  ``c`` one particular solution and ``K`` a basis of the left null space of ``B``; a straggler set ``S`` then costs
  one |S| x dim(K) solve (``K_S z = -c_S``) instead of an (n - s)-sized least-squares problem. Batched; patterns
  whose small solve is singular or inaccurate fall back to :class:`LeastSquaresDecoder`.
* :class:`LeastSquaresDecoder` (``"lstsq"``) — minimum-norm least squares on the responders' rows (batched
  pseudo-inverse). Often the most accurate choice when ``B_F`` is numerically rank-deficient.
* :class:`ExactDecoder` (``"exact"``) — the null-space method in exact arithmetic (Fractions or GF(p)).

Families add closed forms by subclassing :class:`Decoder` in their own module.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from .._base.aliases import Array
from .._base.validate import check_int, check_real
from .fields import exact_zeros, left_nullspace, solve_left
from .numerics import DEFAULT_RTOL

if TYPE_CHECKING:
    from .code import LinearCode

__all__ = ["Decoder", "NullSpaceDecoder", "LeastSquaresDecoder", "ExactDecoder", "stragglers_of",
           "single_threaded_blas", "min_norm_solve", "pinv"]

_CHUNK = 4096
_EPS = float(np.finfo(np.float64).eps)


class Decoder:
    """Base class of all decoders. Subclasses set :attr:`name` and implement :meth:`matrices`.

    Examples
    --------
    >>> import gradcodes as gc
    >>> code = gc.cyclic_repetition(5, 2, rng=0)
    >>> sorted(code.decoders), code.default_decoder           # by name; decode(..., decoder=...) picks one
    (['lstsq', 'nullspace'], 'nullspace')
    """

    #: Key of the decoder in ``code.decoders``.
    name: str = "decoder"
    #: True if the decoder computes in exact arithmetic.
    exact: bool = False
    #: True if its matrices are the same on every machine (no BLAS, LAPACK or transcendental functions in their
    #: computation): the acceptance rule then needs no allowance for their variation (docs/acceptance.md).
    deterministic: bool = False
    #: One line shown in reports.
    description: str = ""

    def matrices(self, code: LinearCode, mask: np.ndarray) -> Array:
        """Decoding matrices (b, m, n) for the responder masks ``mask`` (b, n).

        Parameters
        ----------
        code : LinearCode
            The code (its matrix ``B``, ``m`` and the decoder's cached factorisations).
        mask : ndarray of bool, shape (b, n)
            Each row: the responders of one set.

        Returns
        -------
        ndarray, shape (b, m, n)
            ``A_F`` of each set, zero in the columns of non-responders; not checked (the code's
            :meth:`~gradcodes.LinearCode.decode` and :func:`gradcodes.verify` judge ``A_F B - E``).

        Examples
        --------
        >>> import numpy as np, gradcodes as gc
        >>> code = gc.fractional_repetition(4, 1)
        >>> mask = np.array([[1, 0, 1, 1], [0, 1, 1, 1]], dtype=bool)
        >>> gc.LeastSquaresDecoder().matrices(code, mask).round(9).tolist()     # the min-norm solutions
        [[[1.0, 0.0, 0.5, 0.5]], [[0.0, 1.0, 0.5, 0.5]]]
        """
        raise NotImplementedError

    def __repr__(self) -> str:
        """The call that builds the decoder when its arguments are stored under their names (``NullSpaceDecoder(
        rtol=1e-08, refine=1)``), else ``<Type 'name'>``."""
        import inspect

        from .._base.output import call_repr

        params = [p for p in inspect.signature(type(self).__init__).parameters.values()
                  if p.name != "self" and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)]
        if all(hasattr(self, p.name) for p in params):
            return call_repr(self, {p.name: getattr(self, p.name) for p in params},
                             {p.name: p.default for p in params if p.default is not p.empty})
        return f"<{type(self).__name__} {self.name!r}>"


_CONTROLLER: Any = None


def single_threaded_blas() -> Any:
    """Context manager limiting BLAS to one thread.

    Batched decoders issue many small products and factorisations; a multithreaded BLAS spins on them and, on a
    busy machine, runs them 10-40x slower (measured: 1024 stacked 100x100 pseudo-inverses 35.7 s against 0.95 s;
    exhaustive verification of (50, 5) 110 s against 4 s). One reused controller: about 6 microseconds a call.
    """
    global _CONTROLLER
    if _CONTROLLER is None:
        from threadpoolctl import ThreadpoolController

        _CONTROLLER = ThreadpoolController()
    return _CONTROLLER.limit(limits=1, user_api="blas")


def row_scaled(code: LinearCode) -> tuple[np.ndarray, np.ndarray]:
    """``(Bs, d)``: ``B`` equilibrated by powers of two (``Bs = diag(d) B``, exact in floating point) and ``d``.

    A decoding matrix ``A'`` for ``Bs`` gives ``A = A' diag(d)`` for ``B``: decoding is invariant to row scalings
    (a worker may send any multiple of its combination), while the rank decisions of an SVD are not. Rows are
    rescaled only when their norms spread over more than ``2**16`` (otherwise ``d = 1``: on ordinary codes the
    unscaled matrix measured 1.5-2x more accurate); zero rows keep scale 1.
    """
    cached = code._memo.get("row_scaled")
    if cached is None:
        norms = np.linalg.norm(code.B, axis=1)
        pos = norms[norms > 0]
        d = np.ones(code.n)
        if pos.size and pos.max() > 2.0**16 * pos.min():
            d = np.where(norms > 0, np.exp2(-np.round(np.log2(np.where(norms > 0, norms, 1.0)))), 1.0)
        cached = (np.ascontiguousarray(code.B * d[:, None]), d)
        code._memo["row_scaled"] = cached
    return cached


def stragglers_of(mask: np.ndarray, t: int) -> np.ndarray:
    """The (b, t) sorted straggler indices of masks that all have exactly ``t`` stragglers."""
    if t == 0:
        return np.zeros((mask.shape[0], 0), dtype=np.int64)
    return np.nonzero(~mask)[1].reshape(mask.shape[0], t)      # row-major order: sorted within each row


def pinv(M: np.ndarray) -> np.ndarray:
    """Pseudo-inverse (stacked) dropping singular values below ``max(rows, cols) * eps * sigma_max``.

    numpy's own default (``rcond=1e-15``) keeps noise singular values of rank-deficient matrices, which destroys
    the minimum-norm solution of exactly the systems gradient codes produce.
    """
    eps = np.finfo(np.result_type(M.dtype, np.float64)).eps
    return np.linalg.pinv(M, rcond=max(M.shape[-2:]) * eps)


def null_space(M: np.ndarray) -> np.ndarray:
    """An orthonormal basis (columns) of the null space of ``M``, from its SVD: the right singular vectors of the
    singular values at most ``max(rows, cols) * eps * sigma_max`` (the rule of :func:`scipy.linalg.null_space`,
    computed with numpy so that ``import scipy.linalg`` stays off the path of a first decode).

    >>> null_space(np.array([[1.0, 1.0]])).shape
    (2, 1)
    """
    _, sv, vh = np.linalg.svd(M, full_matrices=True)
    eps = np.finfo(np.result_type(M.dtype, np.float64)).eps
    tol = max(M.shape) * eps * (sv[0] if sv.size else 0.0)
    rank = int(np.sum(sv > tol))
    return vh[rank:, :].T.conj()


def min_norm_solve(M: np.ndarray, R: np.ndarray, rcond: float | None = None) -> np.ndarray:
    """Minimum-norm least-squares solutions ``X`` of ``M X = R`` for stacks ``M`` (..., r, c), ``R`` (..., r, t).

    Applies the SVD factors in order, ``X = V diag(1/sigma) (U^H R)`` with singular values below
    ``rcond * sigma_max`` (default ``max(r, c) * eps``) dropped, like LAPACK's ``gelsd``: the right-hand side is
    projected *before* dividing by small singular values, so the residual stays at rounding level on numerically
    rank-deficient systems where ``pinv(M) @ R`` loses up to ``eps / sigma_min`` (measured: 3e-14 against 3e-5
    for the centered cyclic-MDS code at n = 500, s = 125).
    """
    if rcond is None:
        rcond = max(M.shape[-2:]) * np.finfo(np.result_type(M.dtype, np.float64)).eps
    if M.ndim > 2:
        with single_threaded_blas():
            return _min_norm_solve(M, R, rcond)
    return _min_norm_solve(M, R, rcond)


def _min_norm_solve(M: np.ndarray, R: np.ndarray, rcond: float) -> np.ndarray:
    U, sig, Vh = np.linalg.svd(M, full_matrices=False)
    keep = sig > rcond * sig[..., :1]
    inv = np.where(keep, 1.0 / np.where(keep, sig, 1.0), 0.0)
    C = (np.conj(np.swapaxes(U, -1, -2)) @ R) * inv[..., :, None]
    return np.conj(np.swapaxes(Vh, -1, -2)) @ C


def _by_straggler_count(mask: np.ndarray) -> list[tuple[int, np.ndarray]]:
    counts = mask.shape[1] - mask.sum(axis=1)
    return [(int(t), np.flatnonzero(counts == t)) for t in np.unique(counts)]


class LeastSquaresDecoder(Decoder):
    """Minimum-norm least squares ``argmin ||A_F B_F - E||`` on the responders' compact rows (batched SVD).

    Singular values below ``max(n, k m) * eps * sigma_max`` are dropped, which picks the small-norm solution among
    the many that agree to rounding when ``B_F`` is numerically rank-deficient (see :func:`min_norm_solve`).

    Examples
    --------
    >>> import numpy as np, gradcodes as gc
    >>> code = gc.cyclic_repetition(5, 2, rng=0)
    >>> Y = code.encode(np.arange(10.0).reshape(5, 2))        # five partial gradients of length 2
    >>> np.round(code.decode([0, 2, 4], Y[[0, 2, 4]], decoder=gc.LeastSquaresDecoder()), 9).tolist()
    [20.0, 25.0]
    """

    name = "lstsq"
    description = "minimum-norm least squares (pseudo-inverse)"

    def matrices(self, code: LinearCode, mask: np.ndarray) -> np.ndarray:
        with single_threaded_blas():
            return self._matrices(code, mask)

    def _matrices(self, code: LinearCode, mask: np.ndarray) -> np.ndarray:
        B, rs = row_scaled(code)                                 # solve for diag(rs) B, then A = A' diag(rs)
        E = code.target
        b, n = mask.shape
        out = np.zeros((b, code.m, n), dtype=np.result_type(B, E, np.float64))
        step = max(1, _CHUNK // 8)
        for t, rows in _by_straggler_count(mask):
            if t == n:
                continue                                         # nobody responded: A = 0
            for lo in range(0, rows.size, step):
                r = rows[lo:lo + step]
                F = np.sort(np.argsort(~mask[r], axis=1, kind="stable")[:, : n - t], axis=1)   # (c, n - t)
                BtF = np.swapaxes(B[F], 1, 2)                    # compact B_F^T: (c, km, n - t)
                aF = np.swapaxes(min_norm_solve(BtF, np.broadcast_to(E.T.astype(BtF.dtype), (r.size, *E.T.shape))),
                                 1, 2)                           # (c, m, n - t)
                blk = np.zeros((r.size, code.m, n), dtype=out.dtype)
                np.put_along_axis(blk, np.broadcast_to(F[:, None, :], aF.shape), aF, axis=2)
                out[r] = blk
        out *= rs
        return out


class NullSpaceDecoder(Decoder):
    """All solutions of ``a B = E`` are ``c + K z``; a straggler set costs one small solve ``K_S z = -c_S``.

    With ``d = dim(left null space of B)`` (``d = s`` for MDS-like codes), each pattern costs O(s^2 d + n d m)
    after an O(n^2 k m) precomputation, and a whole batch is a handful of stacked LAPACK calls. ``refine`` steps
    of iterative refinement (solve for the residual ``E - A B`` the same way and add the correction) follow;
    one step typically gains one to two digits on ill-conditioned random codes. Patterns whose small system is
    singular or leaves a relative residual above ``rtol`` are recomputed with the minimum-norm least-squares
    decoder.

    Parameters
    ----------
    rtol : float > 0, default 1e-8
        Relative residual of the small solve above which a pattern falls back to least squares.
    refine : int >= 0, default 1
        Steps of iterative refinement.

    Examples
    --------
    >>> import numpy as np, gradcodes as gc
    >>> code = gc.cyclic_repetition(5, 2, rng=0)
    >>> Y = code.encode(np.arange(10.0).reshape(5, 2))        # five partial gradients of length 2
    >>> np.round(code.decode([0, 2, 4], Y[[0, 2, 4]], decoder=gc.NullSpaceDecoder()), 9).tolist()
    [20.0, 25.0]
    """

    name = "nullspace"
    description = "null-space method (one small solve per straggler set), least-squares fallback"

    def __init__(self, rtol: float = DEFAULT_RTOL, refine: int = 1) -> None:
        self.rtol = check_real("rtol", rtol, 0, None, open_lo=True)
        self.refine = check_int("refine", refine, 0)

    @staticmethod
    def basis(code: LinearCode) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``(C, K, P)``: min-norm particular solution ``C`` (m, n), orthonormal left-null basis ``K`` (n, d) and
        ``P = pinv(B)`` (k m, n).

        Parameters
        ----------
        code : LinearCode
            The code; the result is cached with it.

        Returns
        -------
        tuple of ndarray
            ``C``, ``K`` and ``P``.

        Examples
        --------
        >>> import gradcodes as gc
        >>> C, K, P = gc.NullSpaceDecoder.basis(gc.cyclic_repetition(5, 2, rng=0))
        >>> C.shape, K.shape, P.shape                  # d = s = 2: the left null space of B
        ((1, 5), (5, 2), (5, 5))
        """
        cached = code._memo.get("nullspace")
        if cached is None:
            Bn = row_scaled(code)[0]                             # solve for the row-normalised matrix
            P = pinv(Bn)
            C = code.target @ P
            C += (code.target - C @ Bn) @ P                      # one step of iterative refinement, once
            K = null_space(Bn.T)
            cached = (np.ascontiguousarray(C), np.ascontiguousarray(K), np.ascontiguousarray(P))
            code._memo["nullspace"] = cached
        return cached

    @staticmethod
    def _inverse(K: np.ndarray, S: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``(K_S, W)`` with ``W`` a batched inverse of ``K_S`` (pseudo-inverse where singular or non-square).

        One factorisation serves the solve and every refinement step (iterative refinement corrects the
        rounding of the explicit inverse).
        """
        KS = K[S]                                                            # (g, t, d)
        if KS.shape[1] == KS.shape[2]:
            try:
                return KS, np.linalg.inv(KS)
            except np.linalg.LinAlgError:
                pass
        return KS, pinv(KS)

    @staticmethod
    def _solve(Cp: np.ndarray, K: np.ndarray, S: np.ndarray, KS: np.ndarray, W: np.ndarray
               ) -> tuple[np.ndarray, np.ndarray]:
        """``A = Cp + (K Z)^T`` with ``K_S Z = -Cp_S``; returns ``(A, solve residual)`` for a group (g, m, n)."""
        g, m, n = Cp.shape
        d = K.shape[1]
        idx = np.broadcast_to(S[:, None, :], (g, m, S.shape[1]))
        rhs = -np.swapaxes(np.take_along_axis(Cp, idx, axis=2), 1, 2)       # (g, t, m)
        Z = W @ rhs                                                          # (g, d, m)
        # (K Z)^T for the whole group as one GEMM: (g*m, d) @ (d, n)
        A = Cp + (np.swapaxes(Z, 1, 2).reshape(g * m, d) @ K.T).reshape(g, m, n)
        return A, np.abs(KS @ Z - rhs).reshape(g, -1).max(axis=1)

    def matrices(self, code: LinearCode, mask: np.ndarray) -> np.ndarray:
        self.basis(code)                                         # the one-off factorisation may use every thread
        with single_threaded_blas():
            return self._matrices(code, mask)

    def _matrices(self, code: LinearCode, mask: np.ndarray) -> np.ndarray:
        C, K, P = self.basis(code)
        B, rs = row_scaled(code)                                 # solve for diag(rs) B, then A = A' diag(rs)
        E = code.target
        b, n = mask.shape
        m, d = C.shape[0], K.shape[1]
        groups = _by_straggler_count(mask)
        out = None if len(groups) == 1 else np.empty((b, m, n), dtype=np.result_type(C, K))
        bmax = np.abs(B).max()
        redo: list[np.ndarray] = []
        for t, rows in groups:
            S = stragglers_of(mask[rows] if out is not None else mask, t)
            g = rows.size
            free = t == 0 or d == 0                                  # nothing to solve: A = C on the mask
            if free:
                A = np.array(np.broadcast_to(C, (g, m, n)))
                sol_res = np.abs(C[:, S]).max(axis=(0, 2)) if t else np.zeros(g)
            else:
                KS, W = self._inverse(K, S)
                A, sol_res = self._solve(np.broadcast_to(C, (g, m, n)), K, S, KS, W)
            _zero_columns(A, S)
            sel = np.arange(g)
            for _ in range(self.refine):
                # refine only the patterns whose residual is above a few ulps (most are not, in a good code)
                As = A if sel.size == g else A[sel]
                R = E - (As.reshape(-1, n) @ B).reshape(sel.size, m, -1)
                keep = np.abs(R).reshape(sel.size, -1).max(axis=1) > 64 * _EPS
                if not keep.any():
                    break
                if not keep.all():
                    sel, R = sel[keep], R[keep]
                RP = (R.reshape(sel.size * m, -1) @ P).reshape(sel.size, m, n)
                D = RP if free else self._solve(RP, K, S[sel], KS[sel], W[sel])[0]
                _zero_columns(D, S[sel])
                if sel.size == g:
                    A += D
                else:
                    A[sel] += D
            sol_res = sol_res * bmax
            cand = np.flatnonzero(~np.isfinite(sol_res) | (sol_res > self.rtol))
            if cand.size:
                scale = np.maximum(1.0, np.abs(A[cand]).sum(axis=2).max(axis=1) * bmax)
                bad = ~np.isfinite(sol_res[cand]) | (sol_res[cand] > self.rtol * scale)
                if bad.any():
                    redo.append(rows[cand[bad]])
            if out is None:
                out = A
            else:
                out[rows] = A
        out *= rs
        if redo:
            idx = np.concatenate(redo)
            out[idx] = LeastSquaresDecoder().matrices(code, mask[idx])
        return out


def _zero_columns(A: np.ndarray, S: np.ndarray) -> None:
    """Set ``A[i, :, S[i]] = 0`` for every pattern ``i`` (stragglers get exactly zero weight)."""
    if S.shape[1]:
        np.put_along_axis(A, np.broadcast_to(S[:, None, :], (A.shape[0], A.shape[1], S.shape[1])), 0, axis=2)


class ExactDecoder(Decoder):
    """The null-space method in exact arithmetic (Fractions or GF(p)): no rounding at all.

    ``C`` and the left-null basis ``K`` are computed once by exact Gaussian elimination; each pattern then solves
    ``K_S z = -c_S`` exactly. A pattern with no solution gets a zero matrix (its residual is not zero, so the
    code and the verifier report it).

    Examples
    --------
    >>> import numpy as np, gradcodes as gc
    >>> code = gc.fractional_repetition(4, 1, field="rational")
    >>> Y = code.encode(np.arange(8).reshape(4, 2))
    >>> [int(x) for x in code.decode([0, 2, 3], Y[[0, 2, 3]], decoder=gc.ExactDecoder())]
    [12, 16]
    """

    name = "exact"
    exact = True
    deterministic = True
    description = "exact null-space elimination"

    @staticmethod
    def basis(code: LinearCode) -> tuple[Array, Array]:
        """The particular solution ``C`` and the left-null basis ``K`` of an exact code (computed once, cached).

        Parameters
        ----------
        code : LinearCode
            A code over the rationals or GF(p).

        Returns
        -------
        C : ndarray, shape (m, n)
            A solution of ``C B = E`` by exact elimination (zero when there is none).
        K : ndarray, shape (n, d)
            Its columns span the left null space of ``B`` (``K^T B = 0``), ``d`` its dimension; every solution
            of ``a B = E`` is ``C + z^T K^T``.

        Examples
        --------
        >>> import gradcodes as gc
        >>> code = gc.fractional_repetition(4, 1, field="rational")
        >>> C, K = gc.ExactDecoder.basis(code)
        >>> C.shape, K.shape, bool((C @ code.B == code.target).all()), bool((K.T @ code.B == 0).all())
        ((1, 4), (4, 2), True, True)
        """
        cached = code._memo.get("exact")
        if cached is None:
            C = solve_left(code.B, code.target)
            if C is None:
                C = exact_zeros(code.B, (code.m, code.n))
            cached = (C, left_nullspace(code.B))
            code._memo["exact"] = cached
        return cached

    def matrices(self, code: LinearCode, mask: np.ndarray) -> Array:
        C, K = self.basis(code)
        b, n = mask.shape
        out = exact_zeros(code.B, (b, code.m, n))
        for i in range(b):
            S = np.flatnonzero(~mask[i])
            if S.size == 0:
                out[i] = C
                continue
            # z^T K_S^T = -C_S  (solve_left solves X @ M = T)
            X = solve_left(K[S].T.copy(), -C[:, S]) if K.shape[1] else None
            if X is None:
                if np.all(np.asarray(C[:, S] == 0)):
                    out[i] = C
                continue  # no solution: leave zeros, the residual check reports it
            out[i] = C + X @ K.T  # exactly zero on S, since K_S z = -c_S holds exactly
        return out
