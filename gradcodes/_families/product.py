r"""Product gradient codes: the Kronecker product of two gradient codes (Sakorikar & Wang 2021).

Sakorikar & Wang, "Soft BIBD and product gradient codes" (2021; arXiv:2105.05231) widen the parameters for which
block-design codes (:func:`gradcodes.bibd_code`, Kadhe, Koyluoglu & Ramchandran 2019) exist by taking the Kronecker
product of existing gradient codes. With codes ``B_1`` (``n_1 x k_1``) and ``B_2`` (``n_2 x k_2``) the product is

.. math:: B = B_1 \otimes B_2, \qquad n = n_1 n_2,\ k = k_1 k_2,

worker ``(i_1, i_2)`` is row ``i_1 n_2 + i_2`` and partition ``(j_1, j_2)`` column ``j_1 k_2 + j_2``: the worker
stores the partitions ``S_{i_1} x S_{i_2}`` (load ``load_1 load_2``, replication multiplied).

Facts used here (standard Kronecker algebra, proved in the docs page :doc:`/bibd`):

* ``(u_1 \otimes u_2) B = (u_1 B_1) \otimes (u_2 B_2)``: decoders of the factors decode the product on the
  *product* responder sets ``F_1 x F_2``; for exact factors the product is an exact code.
* Least squares on a product set is the product of the factors' least squares (the projection onto the row space
  of ``B_{1,F_1} \otimes B_{2,F_2}`` is the Kronecker product of the projections), so with the factors' optimal
  squared errors ``e_1``, ``e_2``

  .. math:: \min_{\mathrm{supp}\,u \subseteq F_1 \times F_2} \|u B - 1\|^2 = k_1 k_2 - (k_1 - e_1)(k_2 - e_2).

* Any ``s`` stragglers lie in ``S_1 x [n_2]`` with ``|S_1| <= s`` (their first coordinates), and the optimal error
  only grows when responders are removed; so the worst optimal error with ``s`` stragglers is at most the value
  above with ``e_1`` the first factor's worst error with ``s`` stragglers and ``e_2`` the second's with none (and
  the same with the roles exchanged): :meth:`ProductCode.spectral_bound`. In particular the product of exact codes
  tolerating ``s_1`` and ``s_2`` stragglers tolerates ``max(s_1, s_2)``.

The soft-BIBD construction of the same paper (a probabilistic relaxation of the BIBD conditions) is not
implemented: its definition could not be read (only the abstract was available to this implementation).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from .._base.aliases import MatrixLike
from .._base.errors import GradcodesTypeError, GradcodesValueError
from .._base.registry import Scheme, register
from .._base.validate import check_entries, check_int
from .._core.code import ApproximateCode, LinearCode
from .._core.sparse import is_scipy_sparse, owned, use_sparse
from .._io.files import REBUILDERS
from .._verify.approx_adversaries import (
    UpperBound,
    pad,
    partition_holders,
    register_adversaries,
    register_upper_bound,
    structured_sets,
)
from .._verify.approx_worst import OptimalDecoder, worst_case_error

__all__ = ["ProductCode", "product_code"]


class ProductCode(ApproximateCode):
    """A code built by :func:`product_code`: ``B = B_1 ⊗ B_2`` (Sakorikar & Wang 2021).

    Attributes
    ----------
    first, second : LinearCode
        The factor codes; worker ``(i_1, i_2)`` is row ``i_1 * second.n + i_2``.

    Examples
    --------
    >>> import gradcodes as gc
    >>> code = gc.product_code(gc.fractional_repetition(2, 1), gc.fractional_repetition(2, 1))
    >>> isinstance(code, gc.ProductCode), code.n, code.load
    (True, 4, 4)
    """

    def __init__(self, B: MatrixLike, *, first: LinearCode, second: LinearCode, **kwargs: Any) -> None:
        super().__init__(B, **kwargs)
        self.first, self.second = first, second

    def factor_workers(self, worker: int) -> tuple[int, int]:
        """The pair ``(i_1, i_2)`` of factor workers of product worker ``worker`` (``worker = i_1 n_2 + i_2``).

        Parameters
        ----------
        worker : int
            A worker of the product code, ``0 <= worker < n``.

        Returns
        -------
        tuple of int
            ``(i_1, i_2)``.

        Examples
        --------
        >>> import gradcodes as gc
        >>> fr = gc.fractional_repetition(2, 1)
        >>> gc.product_code(fr, fr).factor_workers(3)
        (1, 1)
        """
        worker = check_int("worker", worker, 0, self.n - 1)
        return divmod(worker, self.second.n)

    def spectral_bound(self, s: int) -> float:
        r"""Bound on the optimal decoder's error with any ``s`` stragglers, from the factors' own bounds.

        ``sqrt(k_1 k_2 - (k_1 - b_1(s)^2)(k_2 - b_2(0)^2))`` (and the same with the factors exchanged; the smaller
        of the two), with ``b_i`` the factor's ``spectral_bound`` clipped to ``sqrt(k_i)``; a factor with fewer
        than ``s + 1`` workers or no ``spectral_bound`` method contributes the trivial ``sqrt(k)`` (module
        docstring). Exact factors (exact codes tolerating ``s`` stragglers) count with error 0 when they
        declare ``s`` as their straggler tolerance.

        Parameters
        ----------
        s : int
            Number of stragglers, ``0 <= s < n``.

        Returns
        -------
        float
            An upper bound on ``min ||u_F B - 1||_2`` over every set of ``n - s`` responders (at most
            ``sqrt(k_1 k_2)``).

        Raises
        ------
        GradcodesValueError
            If ``s`` is not in ``[0, n)``.

        Examples
        --------
        >>> import gradcodes as gc
        >>> fano = gc.bibd_code("projective_plane", 2)
        >>> code = gc.product_code(fano, gc.fractional_repetition(2, 1))      # the second factor tolerates 1
        >>> code.spectral_bound(1), round(code.spectral_bound(2), 4)
        (0.0, 1.069)
        """
        s = check_int("s", s, 0, self.n - 1)
        k1, k2 = self.first.k, self.second.k
        best = float(k1 * k2)
        for a, b, ka, kb in ((self.first, self.second, k1, k2), (self.second, self.first, k2, k1)):
            ea, eb = _factor_bound(a, s), _factor_bound(b, 0)
            if ea is not None and eb is not None:
                best = min(best, ka * kb - (ka - min(ea, ka)) * (kb - min(eb, kb)))
        return math.sqrt(max(best, 0.0))


def _factor_bound(code: LinearCode, s: int) -> float | None:
    """A bound on ``code``'s worst optimal squared error with ``s`` stragglers, or None when it has none."""
    if s > code.n - 1:
        return None
    if not isinstance(code, ApproximateCode):        # an exact code: error 0 within its straggler tolerance
        tol = getattr(code, "s", None)
        return 0.0 if s == 0 or (tol is not None and s <= tol) else None
    bound = getattr(code, "spectral_bound", None)
    if not callable(bound):
        return 0.0 if s == 0 and _sums_to_one(code) else None
    return float(bound(s)) ** 2


def _sums_to_one(code: LinearCode) -> bool:
    """Whether ``1^T B = 1^T`` (then ``u = 1`` decodes with no stragglers): checked exactly, or in floats to 1e-12."""
    if code.exact:
        return bool(np.all(np.asarray(code.B).sum(axis=0) == 1))
    return bool(np.allclose(code.float_B().sum(axis=0), 1.0, rtol=0, atol=1e-12))


def _factor(name: str, code: Any) -> LinearCode:
    if not isinstance(code, LinearCode):
        raise GradcodesTypeError(f"{name} must be a gradient code (a gradcodes LinearCode), got "
                                 f"{type(code).__name__}")
    if code.m != 1:
        raise GradcodesValueError(f"{name} must send one message per worker (m = 1), got m={code.m}")
    if code.field.startswith("GF"):
        raise GradcodesValueError(f"{name} must be over the reals or the rationals, got field={code.field!r}")
    return code


def product_code(first: LinearCode, second: LinearCode, *, s: int | None = None) -> ProductCode:
    r"""The product gradient code ``B = B_1 ⊗ B_2`` of two gradient codes (Sakorikar & Wang 2021).

    ``n = n_1 n_2`` workers and ``k = k_1 k_2`` partitions: worker ``(i_1, i_2)`` (row ``i_1 n_2 + i_2``) stores the
    partitions ``(j_1, j_2)`` (column ``j_1 k_2 + j_2``) with ``j_1`` stored by ``i_1`` in the first code and ``j_2``
    by ``i_2`` in the second; load ``load_1 load_2``. The default decoder ``"optimal"`` is least squares on the
    responders. On a product responder set ``F_1 x F_2`` its squared error is
    ``k_1 k_2 - (k_1 - e_1)(k_2 - e_2)`` with the factors' optimal errors ``e_i``, and for any ``s`` stragglers
    :meth:`ProductCode.spectral_bound` bounds it from the factors' bounds (module docstring). Two BIBD codes
    (:func:`gradcodes.bibd_code`) give a code for ``n = v_1 v_2`` workers, a number of workers no single plane has.

    Parameters
    ----------
    first, second : LinearCode
        Gradient codes with one message per worker (``m = 1``), both exact (``field="rational"``) or both
        floating point; their matrices are used as built (dense or sparse).
    s : int, optional
        The number of stragglers the code is meant for, ``0 <= s <= n - 1`` (the default of
        :func:`gradcodes.worst_case_error`).

    Returns
    -------
    ProductCode
        An :class:`~gradcodes.ApproximateCode` with decoders ``"optimal"`` (default) and the generic ones, the
        attributes ``first``, ``second`` and the methods ``factor_workers(i)`` and ``spectral_bound(s)``.

    Raises
    ------
    TypeError
        A factor that is not a gradient code.
    ValueError
        A factor with ``m != 1`` or over a finite field, one exact and one floating-point factor, ``s`` out of
        range, a product over the size limits.

    Examples
    --------
    The product of two Fano-plane codes: 49 workers, 49 partitions, load 9.

    >>> import gradcodes as gc
    >>> fano = gc.bibd_code("projective_plane", 2, field="rational")
    >>> code = gc.product_code(fano, fano)
    >>> code.n, code.k, code.load, code.factor_workers(10)
    (49, 49, 9, (1, 3))
    >>> alive = [7 * a + b for a in range(5) for b in range(1, 7)]   # F_1 = {0..4}, F_2 = {1..6}
    >>> e = gc.approximation_error(code, alive) ** 2                  # 49 - (7 - 4/7)(7 - 1/4) = 157/28
    >>> round(float(e), 12), round(157 / 28, 12)
    (5.607142857143, 5.607142857143)
    >>> round(code.spectral_bound(2) ** 2, 12)                        # 7 e_1(2) = 7 * 4/7
    4.0
    """
    first, second = _factor("first", first), _factor("second", second)
    if first.exact != second.exact:
        raise GradcodesValueError(f"first and second must both be exact or both floating point; got "
                                  f"field={first.field!r} and field={second.field!r}")
    n, k = first.n * second.n, first.k * second.k
    check_entries(n, k, exact=first.exact, what="the product code's matrix")
    if s is not None:
        s = check_int("s", s, 0, n - 1)
    B = _kron(first, second, n, k)
    params: dict[str, Any] = {"first": _record(first), "second": _record(second)}
    if s is not None:
        params["s"] = s
    field = "rational" if first.exact else "complex" if "complex" in (first.field, second.field) else "real"
    return ProductCode(B, first=first, second=second, s=s, field=field,
                       name=f"product({first.name} ⊗ {second.name})", family="product_code", params=params,
                       decoders=[OptimalDecoder()], default_decoder="optimal")


def _kron(first: LinearCode, second: LinearCode, n: int, k: int) -> Any:
    B1, B2 = first.B, second.B
    if first.exact:
        return np.kron(np.asarray(B1, dtype=object), np.asarray(B2, dtype=object))
    if is_scipy_sparse(B1) or is_scipy_sparse(B2):
        from scipy import sparse

        csr = sparse.csr_array(sparse.kron(sparse.csr_array(B1), sparse.csr_array(B2), format="csr"))
        return owned(csr) if use_sparse(n, k) else csr.toarray()
    return np.kron(np.asarray(B1), np.asarray(B2))


def _record(code: LinearCode) -> dict[str, Any]:
    """What rebuilds a factor: its family, parameters (``family`` None for a code built from a matrix) and shape
    ``[n, k]`` (so that :func:`gradcodes.load_code` checks a file's factors against its matrix before rebuilding)."""
    return {"family": code.family, "params": dict(code.params), "shape": [code.n, code.k]}


def _rebuild_factor(rec: Any) -> LinearCode:
    if not isinstance(rec, dict) or rec.get("family") not in REBUILDERS or not isinstance(rec.get("params"), dict):
        raise GradcodesValueError("a factor of the product code has no family that can rebuild it")
    return REBUILDERS[rec["family"]](**rec["params"])


def _rebuild(first: Any, second: Any, s: int | None = None, **_: Any) -> ProductCode:
    return product_code(_rebuild_factor(first), _rebuild_factor(second), s=s)


def _build(q: int = 2, s: int = 2) -> ProductCode:
    from .bibd import bibd_code

    return product_code(bibd_code("projective_plane", q), bibd_code("projective_plane", q), s=s)


def factor_rows(code: Any, s: int) -> Any:
    """Every worker of whole factor rows: ``S_1 x [n_2]`` for structured sets ``S_1`` of the first factor with
    ``|S_1| = s // n_2`` (and the same with the factors exchanged), completed by the next factor row's workers."""
    n1, n2 = code.first.n, code.second.n
    for factor, other, t, idx in ((code.first, n2, s // n2, lambda a, b: a * n2 + b),
                                  (code.second, n1, s // n1, lambda a, b: b * n2 + a)):
        if t < 1 or t > factor.n - 1:
            continue
        sets, _ = structured_sets(factor, t, 32)
        for S1 in sets:
            S = np.array([idx(a, b) for a in S1.tolist() for b in range(other)], dtype=np.int64)
            nxt = next((a for a in range(factor.n) if a not in set(S1.tolist())), None)
            prefer = None if nxt is None else np.array([idx(nxt, b) for b in range(other)], dtype=np.int64)
            yield pad(S, s, code.n, prefer)


def _product_upper(code: Any, s: int, dec: Any) -> UpperBound | None:
    """:meth:`ProductCode.spectral_bound` (least-squares decoders), with a relative margin of 1e-9 for the factors'
    floating-point bounds."""
    if dec.name not in ("optimal", "lstsq"):
        return None
    return UpperBound(code.spectral_bound(s) * (1 + 1e-9),
                      "theorem: Sakorikar & Wang 2021 product bound: k1 k2 - (k1 - e1(s))(k2 - e2(0)) "
                      "from the factors' certified bounds (the optimal error grows when responders are removed)")


REBUILDERS.update(product_code=_rebuild)
register_adversaries("product_code", partition_holders, factor_rows)
register_upper_bound("product_code", _product_upper)
register(Scheme(
    "product_code", _build,
    "Sakorikar & Wang product code: the Kronecker product of two BIBD codes PG(2,q) x PG(2,q) (n = (q^2+q+1)^2, "
    "load (q+1)^2), least-squares decoder, a worst-case bound from the factors",
    tour=({"q": 2, "s": 2},),
    evaluate=lambda code: worst_case_error(code, samples=200, search_steps=3, neighbours=32, rng=0),
    kind="adversarial"))
