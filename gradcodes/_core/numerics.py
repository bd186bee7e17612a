"""Batched numerical diagnostics of decoding matrices and the acceptance rule (see ``docs/acceptance.md``).

For a decoding matrix ``A_F`` (m x n) of a code with encoding matrix ``B`` (n x k*m) and target
``E = 1_k^T (x) I_m``:

* **residual** ``||A_F B - E||_inf`` — how far the decoder is from exact recovery;
* **cancellation factor** ``canc(A_F) = max_u sum_v max_j (|A_F| |B|)[u, j*m + v]`` — the worst column of
  ``|A_F| |B|`` (summed over the ``m`` pieces of a partition when ``m > 1``); row-scale invariant, >= 1 for an
  exact decode, exactly 1 for non-negative decodes such as fractional repetition's (:func:`cancellation`);
* **error bound** ``c_t canc + residual + gamma64_{t+1} (canc + 1)`` with ``c_t = gamma_{t+2}`` in the unit
  roundoff of the messages' dtype (:func:`rounding_factor`) and ``t`` the decoding vector's non-zeros plus the
  encoding load (:func:`error_estimate`);
* **acceptance** ``error bound <= tolerance(rtol, dtype)``: the float64 tolerance ``rtol`` keeps the same share
  of the digits of other dtypes (:func:`tolerance`), so float32 decodes are judged by float32's unit roundoff.

**Why it is a bound for every gradient** (Higham, *Accuracy and Stability of Numerical Algorithms*, 2nd ed. 2002,
§3.1 and Lemma 3.3; one coordinate, ``m = 1``). A worker's message ``y_i = fl(sum_j B_ij g_j)`` over its ``t_i <=
load`` partitions, with ``B`` rounded to the dtype, is within ``gamma_{t_i+1} sum_j |B_ij| |g_j|`` of the exact
combination; the decode ``fl(sum_i a_i y_i)`` of ``w`` terms, with ``a`` rounded to the dtype, is within
``gamma_{w+1} sum_i |a_i| |y_i|``. With ``r = a B - 1`` and ``M_j = sum_i |a_i| |B_ij|`` these give
``|g_hat - sum_j g_j| <= sum_j (|r_j| + gamma_{t+2} M_j) |g_j| <= (residual + gamma_{t+2} canc) sum_j |g_j|``
whatever the gradient: the rounding follows the column the gradient sits in, so the factor is the *worst*
column, not the average (a gradient concentrated in one partition reaches it). For ``m > 1`` the pieces ``v`` of
the same coordinate add up, hence the sum over ``v``. The residual itself is evaluated in float64, within
``gamma64_{w+1} (canc + 1)`` of the exact one (§3.1, (3.5)), and that is added. Complex arithmetic multiplies with
``sqrt(2) gamma_2`` (Lemma 3.5): ``c_t = sqrt(2) gamma_{t+6}``. The bound is relative to ``||sum_j |g_j| ||_inf``;
subnormal data adds :func:`underflow_error`.

**The acceptance rule, in one place.** A decode computes its own decoding matrix and accepts it when its error
bound is within the tolerance (:func:`accepts`). A verdict must hold for every machine's decode, so the verifier
judges an *interval* that contains every machine's bound (:func:`error_bounds`, :func:`judge`): a set is **ok**
when the upper end clears the tolerance, **fails** when even the lower end misses it, and is **borderline**
otherwise. The interval's half-width has two parts (Higham 2002):

* the residual: a computed inner product of ``w`` non-zero terms is within ``gamma_w |a|^T |b|`` of the exact one
  (section 3.1, (3.5); ``gamma_w = w u / (1 - w u)``, ``u`` float64's unit roundoff), so the residual evaluated
  anywhere is within ``gamma_{w+1} (mag + 1)`` of the exact residual of the same matrix, where
  ``mag = max_uj (|A| |B|)_uj`` (:func:`magnitude`); a decoding matrix
  computed by another BLAS kernel, batch size or thread count solves the same system with another rounding, and a
  backward-stable solve (sections 9.3, 19.3) leaves a residual within ``gamma_w mag`` of the exact system's, so
  two machines' matrices differ in residual by at most ``2 gamma_w mag``. Together:
  ``delta = (gamma_{w+1} + 2 gamma_w)(mag + 1)`` on each side of the measured residual;
* the cancellation factor: a relative allowance :data:`CANC_ALLOWANCE` (``2^-20``) for the variation of the
  computed decoding matrix's entries between machines (measured below ``2e-10`` across six OpenBLAS kernels on the
  most ill-conditioned set of the panel that CI checks on every kernel).

Both parts vanish when the evaluation is exact: a deterministic decoder (no BLAS or LAPACK in its computation, for
example the 0/1 group decoders) with integer-valued ``A`` and ``B`` and ``mag < 2^53`` computes every residual
entry without rounding.

All functions take a batch ``A`` of shape (b, m, n) and return arrays of shape (b,).
"""

from __future__ import annotations

from fractions import Fraction
from typing import Any

import numpy as np

from .fields import exact_zeros, is_galois_array

__all__ = ["target_matrix", "residuals", "cancellation", "magnitude", "widths", "accepts", "error_estimate",
           "error_bounds", "residual_slack", "judge", "rounding_factor", "column_factor", "outward", "residual_upper",
           "real_error_bound", "GRID_BITS", "exact_residual_ok", "unit_roundoff", "tolerance", "decode_terms",
           "underflow_error", "OK", "BORDERLINE", "FAILS"]

#: Relative factor of the default float64 acceptance tolerance.
DEFAULT_RTOL = 1e-8

#: Relative allowance for the variation of a computed cancellation factor between machines (see the module
#: docstring): the verifier's interval multiplies the cancellation term by ``1 +/- CANC_ALLOWANCE``.
CANC_ALLOWANCE = 2.0 ** -20

#: Verdicts of :func:`judge`, per pattern.
OK, BORDERLINE, FAILS = 0, 1, 2

_U64 = float(np.finfo(np.float64).eps) / 2


def target_matrix(k: int, m: int, like: Any = None) -> Any:
    """The target ``E = 1_k^T (x) I_m`` of shape (m, k*m): ``E[u, j*m + u] = 1``.

    >>> target_matrix(2, 2)
    array([[1., 0., 1., 0.],
           [0., 1., 0., 1.]])
    """
    E = np.tile(np.eye(m), (1, k))
    if like is None or not (is_galois_array(like) or (isinstance(like, np.ndarray) and like.dtype == object)):
        return E if like is None else E.astype(like.dtype)
    out = exact_zeros(like, (m, k * m))
    one = type(like)(1) if is_galois_array(like) else Fraction(1)
    for u in range(m):
        out[u, u::m] = one
    return out


def residuals(A: np.ndarray, B: np.ndarray, E: np.ndarray) -> np.ndarray:
    """``max |A_b B - E|`` for each matrix of the batch, with one matrix product for the whole batch."""
    b, m, n = A.shape
    R = np.asarray(A.reshape(b * m, n) @ B).reshape(b, m, -1)       # B may be a scipy.sparse array
    R -= E
    return np.abs(R).max(axis=(1, 2))


def exact_residual_ok(A: Any, B: Any, E: Any) -> np.ndarray:
    """For exact fields: True where ``A_b B == E`` holds exactly."""
    ok = np.empty(A.shape[0], dtype=bool)
    for i in range(A.shape[0]):
        ok[i] = bool(np.all(np.asarray(A[i] @ B == E)))
    return ok


#: Entries of one (b, m, k m) block of ``|A| |B|`` formed at a time by :func:`cancellation` (32 MB of float64).
_CANC_BLOCK = 1 << 22


def column_factor(M: np.ndarray, m: int) -> np.ndarray:
    """``max_u sum_v max_j M[..., u, j m + v]`` of a batch of non-negative (b, m, k m) arrays: the worst column of
    each output row, summed over the ``m`` pieces (module docstring). For ``m = 1``, ``max_j M[..., 0, j]``."""
    b = M.shape[0]
    return np.asarray(M.reshape(b, m, -1, m).max(axis=2, initial=0.0).sum(axis=2).max(axis=1, initial=0.0))


def cancellation(A: np.ndarray, B: np.ndarray, k: int) -> np.ndarray:
    """Cancellation factor ``canc = max_u sum_v max_j (|A| |B|)[u, j m + v]`` for each matrix of the batch.

    The worst column of ``|A_F| |B|`` (for ``m = 1``: ``max_j sum_i |a_i| |B_ij|``): the factor by which the decode
    amplifies the rounding of the messages when the gradient sits in that column's partition. It is at least 1
    when ``A_F B = E`` (and exactly 1 for non-negative decodes such as fractional repetition's), row-scale
    invariant, and it bounds the error of every decode (module docstring). ``k`` is kept for the signature (the
    pieces per partition are ``m = A.shape[1]``). Formed in blocks of at most :data:`_CANC_BLOCK` entries.

    >>> B = np.array([[1.0, 1.0, 0.0], [0.0, 1.0, 1.0], [1.0, 0.0, 1.0]])
    >>> A = np.array([[[0.5, 0.5, 0.5]]])           # a B = 1 with every column covered twice at weight 1/2
    >>> cancellation(A, B, 3).tolist()
    [1.0]
    >>> cancellation(np.array([[[1.0, -1.0, 1.0]]]), B, 3).tolist()   # same sum, weights that cancel
    [2.0]
    """
    A = np.asarray(A)
    b, m, n = A.shape
    absB = abs(B)                                                      # B may be a scipy.sparse array
    cols = int(absB.shape[1])
    out = np.empty(b)
    step = max(1, _CANC_BLOCK // max(1, m * cols))
    for lo in range(0, b, step):
        blk = np.abs(A[lo:lo + step])
        M = np.asarray(blk.reshape(-1, n) @ absB).reshape(blk.shape[0], m, cols)
        out[lo:lo + step] = column_factor(M, m)
    return out


def magnitude(A: np.ndarray, B: np.ndarray) -> np.ndarray:
    """``mag = max_{u,j} (|A| |B|)[u, j]`` for each matrix of the batch: the size that the rounding of ``A B`` is
    relative to (Higham 2002, (3.5); row-scale invariant, like the cancellation factor)."""
    b, m, n = A.shape
    M = np.asarray(np.abs(A).reshape(b * m, n) @ abs(B))                # B may be a scipy.sparse array
    return np.asarray(M.reshape(b, -1).max(axis=1, initial=0.0))


def widths(A: Any) -> np.ndarray:
    """The most non-zeros of a row of each decoding matrix of the batch (the terms of one decoded coordinate)."""
    return np.asarray(np.count_nonzero(np.asarray(A != 0), axis=-1), dtype=np.int64).max(axis=-1, initial=0)


def _gamma(w: Any) -> Any:
    wu = np.asarray(w, dtype=float) * _U64
    return wu / (1.0 - wu)


def residual_slack(mag: Any, width: Any, exact_eval: Any = False) -> Any:
    """``delta = (gamma_{w+1} + 2 gamma_w)(mag + 1)``: how far any machine's computed residual of a set can be from
    this machine's (module docstring); 0 where ``exact_eval``."""
    w = np.asarray(width, dtype=float)
    return np.where(np.asarray(exact_eval, dtype=bool), 0.0,
                    (_gamma(w + 1) + 2 * _gamma(w)) * (np.asarray(mag, dtype=float) + 1.0))


#: Significant bits of the verifier's interval ends (:func:`outward`): the ends are rounded outward to this grid.
GRID_BITS = 12


def outward(x: Any, up: bool = True) -> Any:
    """``x`` rounded up (``up``) or down to :data:`GRID_BITS` significant bits, elementwise and exactly (``frexp``,
    ``ceil``/``floor`` and ``ldexp`` round nothing), so a value that varies between machines in its last digits
    gives the same grid value everywhere unless a grid point lies inside that variation (a relative ``2^-12``
    grid against variations of ``1e-9`` relative: module docstring). Zero, infinities and NaN are kept.

    >>> float(outward(1.0 + 2.0**-30)), float(outward(1.0 + 2.0**-30, up=False))
    (1.00048828125, 1.0)
    """
    x = np.asarray(x, dtype=float)
    mant, ex = np.frexp(x)
    scaled = np.ldexp(mant, GRID_BITS)
    r = np.ceil(scaled) if up else np.floor(scaled)
    with np.errstate(invalid="ignore", over="ignore"):
        out = np.ldexp(r, ex - GRID_BITS)
    return np.where(np.isfinite(x) & (x != 0), out, x)


def residual_upper(residual: Any, mag: Any, width: Any, exact_eval: Any = False) -> Any:
    """The largest residual any machine computes for a set: ``max(r, delta) + delta`` (``r`` where ``exact_eval``).

    A set the code recovers exactly has, on every machine, a computed residual of at most ``delta`` (the rounding
    of a backward-stable solve and of the residual's own evaluation, :func:`residual_slack`), so its measured
    residual, rounding noise that differs by kernel, is replaced by ``delta``, a function of the magnitude alone;
    a larger residual is the set's own, within ``delta`` on every machine. Rounded up to the grid of
    :func:`outward`.
    """
    exact_eval = np.asarray(exact_eval, dtype=bool)
    delta = residual_slack(mag, width, exact_eval)
    res = np.asarray(residual, dtype=float)
    with np.errstate(invalid="ignore"):
        return np.where(exact_eval, res, outward(np.maximum(res, delta) + delta))


def error_bounds(canc: Any, residual: Any, mag: Any, width: Any, dtype: Any = np.float64, terms: Any = 1,
                 exact_eval: Any = False) -> tuple[Any, Any, Any]:
    """``(lo, est, hi)``: the error estimate of a decode (:func:`error_estimate`) and an interval that holds every
    machine's estimate of the same set (module docstring: the residual within ``delta = (gamma_{w+1} + 2
    gamma_w)(mag + 1)``, the cancellation within the relative :data:`CANC_ALLOWANCE`; both zero where
    ``exact_eval``).

    >>> lo, est, hi = error_bounds(10.0, 1e-12, 20.0, 5)
    >>> bool(lo < est < hi), float(hi - est) < 1e-13
    (True, True)
    >>> lo, est, hi = error_bounds(1.0, 0.0, 3.0, 3, exact_eval=True)    # exact evaluation: no interval
    >>> float(lo) == float(est) == float(hi)
    True
    """
    exact_eval = np.asarray(exact_eval, dtype=bool)
    delta = residual_slack(mag, width, exact_eval)
    eta = np.where(exact_eval, 0.0, CANC_ALLOWANCE)
    res = np.asarray(residual, dtype=float)
    c = np.asarray(canc, dtype=float)
    t = np.maximum(np.asarray(terms, dtype=float), 1.0)
    with np.errstate(invalid="ignore", over="ignore"):
        coef = rounding_factor(dtype, t) + _gamma(t + 1)
        est = coef * c + _gamma(t + 1) + res
        lo = coef * c * (1 - eta) + _gamma(t + 1) + np.maximum(res - delta, 0.0)
        hi = coef * c * (1 + eta) + _gamma(t + 1) + residual_upper(res, mag, width, exact_eval)
        # the ends on a fixed grid (outward), so that they are the same on every machine
        lo = np.where(exact_eval, lo, outward(lo, up=False))
        hi = np.where(exact_eval, hi, outward(hi))
    return lo, est, hi


def judge(canc: Any, residual: Any, mag: Any, width: Any, rtol: float, dtype: Any = np.float64, terms: Any = 1,
          exact_eval: Any = False) -> np.ndarray:
    """The machine-independent verdict per pattern: :data:`OK` (every machine's decode accepts: the upper end of
    :func:`error_bounds` is within ``rtol``, the tolerance of ``dtype``), :data:`FAILS` (every machine's decode
    refuses: even the lower end exceeds it, or a value is not finite) or :data:`BORDERLINE` (in between: the
    verdict would depend on the BLAS kernel, batch size or thread count, so it is not a proof either way).

    >>> judge([1e3, 1e3, 1e3], [0.0, 2e-8, 0.0], [1e3, 1e3, 1e9], [10, 10, 10], 1e-8).tolist()
    [0, 2, 1]
    """
    lo, _, hi = error_bounds(canc, residual, mag, width, dtype, terms, exact_eval)
    with np.errstate(invalid="ignore"):
        out = np.where(np.isfinite(hi) & (hi <= rtol), OK, np.where(np.isfinite(lo) & (lo <= rtol), BORDERLINE,
                                                                     FAILS))
    return np.asarray(out, dtype=np.int8)


def tolerance(rtol: float, dtype: Any = np.float64) -> float:
    """The acceptance tolerance for messages of ``dtype``, given the float64 tolerance ``rtol``.

    ``rtol`` is stated for float64. Another dtype keeps the same share of its digits: with ``u`` the unit
    roundoff of ``dtype`` and ``u64`` float64's, ``tol = u ** (log rtol / log u64)``, so ``tol = rtol`` for float64
    and the default ``rtol = 1e-8`` (half of float64's digits) gives ``2.3e-4`` for float32 and complex64 (half of
    theirs).

    >>> tolerance(1e-8, np.float64)
    1e-08
    >>> round(tolerance(1e-8, np.float32), 6)
    0.000238
    """
    return tolerance_for(rtol, unit_roundoff(dtype))


def tolerance_for(rtol: float, u: float) -> float:
    """:func:`tolerance` for a real format given by its unit roundoff ``u`` (a format numpy lacks, such as
    bfloat16, ``u = 2**-8``).

    >>> round(tolerance_for(1e-8, 2.0**-8), 4)
    0.062
    """
    u64 = unit_roundoff(np.float64)
    if u == u64:
        return float(rtol)
    return float(u ** (np.log(rtol) / np.log(u64)))


def accepts(canc: Any, residual: Any, rtol: float = DEFAULT_RTOL, dtype: Any = np.float64,
            terms: Any = 1) -> np.ndarray:
    """True where a decode in ``dtype`` is trustworthy: ``error_estimate(canc, residual, dtype, terms) <=
    tolerance(rtol, dtype)`` (and both are finite).

    This is the acceptance rule of every decode (and the helper a verifier uses to answer for a dtype). It is
    stricter than the common residual test ``residual <= rtol * max(1, ||a||_1 max|B|)``, which grows with the
    cancellation and so accepts decoding vectors that lose every digit; the target ``E`` has unit entries and
    ``A_F B`` is invariant under row scalings of ``B``, so no further scaling is needed.

    >>> bool(accepts(1e3, 0.0)), bool(accepts(1e3, 0.0, dtype=np.float32)), bool(accepts(1e5, 0.0, dtype=np.float32))
    (True, True, False)
    """
    est = error_estimate(canc, residual, dtype, terms)
    return np.isfinite(est) & (est <= tolerance(rtol, dtype))


def unit_roundoff(dtype: Any) -> float:
    """Unit roundoff of a float/complex dtype (float64 for anything exact or integer)."""
    dt = np.dtype(dtype)
    if dt.kind in "fc":
        return float(np.finfo(dt).eps) / 2
    return float(np.finfo(np.float64).eps) / 2


def rounding_factor(dtype: Any = np.float64, terms: Any = 1) -> Any:
    """The factor of the cancellation in :func:`error_estimate`: ``gamma_{t+2}`` in the unit roundoff of ``dtype``
    (``sqrt(2) gamma_{t+6}`` for complex dtypes), with ``t = max(terms, 1)``.

    ``t + 2`` roundings reach one decoded coordinate: the encoding sums ``load`` products with ``B`` rounded to the
    dtype (``load + 1``), the decode ``w`` products with the decoding vector rounded to the dtype (``w + 1``), and
    ``(1 + gamma_a)(1 + gamma_b) <= 1 + gamma_{a+b}`` (Higham 2002, Lemma 3.3); complex products carry ``sqrt(2)
    gamma_2`` (Higham 2002, Lemma 3.5), hence the four more roundings and the factor ``sqrt(2)``.

    >>> float(rounding_factor(np.float64, 8)) == 10 * 2.0**-53 / (1 - 10 * 2.0**-53)
    True
    """
    dt = np.dtype(dtype) if np.dtype(dtype).kind in "fc" else np.dtype(np.float64)
    u = unit_roundoff(dt)
    t = np.maximum(np.asarray(terms, dtype=float), 1.0)
    if dt.kind == "c":
        tu = (t + 6) * u
        return np.sqrt(2.0) * tu / (1.0 - tu)
    tu = (t + 2) * u
    return tu / (1.0 - tu)


def real_error_bound(canc: Any, residual: Any, u: float, terms: Any = 1) -> Any:
    """:func:`error_estimate` for a real dtype given by its unit roundoff ``u`` (the form the decoders' theorems
    receive, ``Decoder.theorem(code, u, rtol)``)."""
    c = np.asarray(canc, dtype=float)
    t = np.maximum(np.asarray(terms, dtype=float), 1.0)
    tu = (t + 2) * u
    with np.errstate(invalid="ignore", over="ignore"):
        return tu / (1.0 - tu) * c + np.asarray(residual) + _gamma(t + 1) * (c + 1.0)


def error_estimate(canc: Any, residual: Any, dtype: Any = np.float64, terms: Any = 1) -> Any:
    """A bound on the relative error of a decoded sum, for every gradient:
    ``rounding_factor(dtype, t) canc + residual + gamma_{t+1} (canc + 1)``.

    With ``canc`` the worst column of ``|A_F| |B|`` (:func:`cancellation`), ``residual`` the largest entry of
    ``|A_F B - E|`` and ``t = terms`` the decoding vector's non-zeros plus the encoding load, the decoded sum
    ``g_hat`` of messages computed in ``dtype`` satisfies, coordinate by coordinate,
    ``|g_hat - sum_j g_j| <= bound * sum_j |g_j|`` whatever the gradient, the summation order and the kernel
    (module docstring; Higham, *Accuracy and Stability of Numerical Algorithms*, 2nd ed. 2002, §3.1). The last term
    (``gamma`` in float64's unit roundoff) covers the rounding of the residual's own evaluation in float64. The
    error is relative to ``||sum_j |g_j| ||_inf``; for data near the underflow threshold add
    :func:`underflow_error`.

    >>> b = float(error_estimate(1.0, 0.0, np.float32, 3))         # a 0/1 decode of 3 float32 terms
    >>> 5 * 2.0**-24 < b < 5.01 * 2.0**-24
    True
    """
    c = np.asarray(canc, dtype=float)
    t = np.maximum(np.asarray(terms, dtype=float), 1.0)
    with np.errstate(invalid="ignore", over="ignore"):
        return rounding_factor(dtype, t) * c + np.asarray(residual) + _gamma(t + 1) * (c + 1.0)


def decode_terms(A: np.ndarray, load: int) -> int:
    """Rounded additions along one coordinate of a decode with matrix ``A`` (m, n): the most non-zeros of a row
    of ``A`` plus the encoding ``load``."""
    return int(np.count_nonzero(np.asarray(A != 0), axis=-1).max(initial=0)) + int(load)


def underflow_error(coef_l1: float, terms: int, load: int, amax: float, dtype: Any) -> float:
    """Relative error floor of a decode whose result has magnitude ``amax`` (at most its largest entry) in ``dtype``.

    Below the smallest normal number every rounding has an absolute error up to half the smallest subnormal
    ``eta`` whatever the size of the operands, so the absolute error of a decoded coordinate is at most
    ``eta/2 * (||a||_1 (load + 1) + terms)`` (each message carries ``load + 1`` roundings, weighted by the
    decoding coefficients, plus the decode's own); relative to ``amax`` this is negligible for normal data and
    dominant for subnormal data. Exactly zero results report 0.
    """
    dt = np.dtype(dtype)
    if dt.kind not in "fc" or not amax > 0:
        return 0.0
    eta = float(np.finfo(dt).smallest_subnormal)
    return eta / float(amax) * (coef_l1 * (load + 1) + terms) / 2   # eta / 2 itself would round to 0 in float64
