"""Decoding with wrong messages and the exact verifier of :func:`~gradcodes.adversarial_gc` codes (Jahani-Nezhad &
Maddah-Ali, IEEE JSAIT 2021): :func:`decode_adversarial` finds, corrects or detects up to ``a`` wrong messages (the
proof is in :mod:`gradcodes._families.adversarial`'s docstring), :func:`verify_adversarial` checks every
(straggler set, adversary set) pair in exact arithmetic.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

import numpy as np

from .._base.aliases import MatrixLike, Responders, RNGLike
from .._base.errors import GradcodesTypeError, GradcodesValueError
from .._base.validate import check_int, check_real, check_responders, check_rng, check_size
from .._core.acceptance import DecodingError
from .._core.numerics import tolerance, unit_roundoff
from . import adversarial_fourier as _fourier
from .adversarial import AdversarialCode, _code_weights, _float_weights, adversarial_gc

__all__ = ["AdversarialDecodeResult", "decode_adversarial", "verify_adversarial", "AdversarialVerifyReport"]

#: The consistency check must let honest messages through: their discrepancies measure up to ~9 unit roundoffs of
#: their dtype (benchmarks/numerics/adversarial_consistency.py); a check tighter than this cannot tell rounding from a
#: lie.
_HONEST = 16
#: Entries of :func:`_scale_floor`'s work array (32 MB of float64): it runs over blocks of columns.
_FLOOR_CHUNK = 1 << 22


# ----------------------------------------------------------------------------------------------- decoding
@dataclass
class AdversarialDecodeResult:
    """The verdict of :func:`decode_adversarial`.

    Attributes
    ----------
    gradient : numpy.ndarray or None
        The decoded sum (length ``m q``, or ``length``), None when the messages could not be corrected.
    adversarial : tuple of int
        The workers whose messages were found wrong (empty when all agree).
    corrected : bool
        True when a consistent decoding was found (then ``gradient`` is the exact sum whenever at most
        ``code.adversaries`` messages were wrong; for float codes, within the tolerance every decode is held to,
        for one wrong message among those used: see ``rtol`` of :func:`decode_adversarial`).
    detected : bool
        True when some message was inconsistent (wrong messages were detected, corrected or not).
    responders : tuple of int
        The responders used.

    Examples
    --------
    >>> import numpy as np, gradcodes as gc
    >>> placement = [[0, 1, 2], [0, 1, 3], [0, 2, 3], [1, 2, 3], [0, 1, 2, 3]]
    >>> code = gc.adversarial_gc(placement, s=1, a=1)
    >>> Y = code.encode(np.arange(8.0).reshape(4, 2))
    >>> Y[1] += 5.0                                             # worker 1 lies
    >>> res = gc.decode_adversarial(code, [0, 1, 2, 3], Y[[0, 1, 2, 3]])
    >>> res.adversarial, res.corrected, np.round(res.gradient, 9).tolist()
    ((1,), True, [12.0, 16.0])
    """

    gradient: np.ndarray | None
    adversarial: tuple[int, ...]
    corrected: bool
    detected: bool
    responders: tuple[int, ...] = field(default_factory=tuple)


def decode_adversarial(code: AdversarialCode, responders: Responders, messages: MatrixLike, *,
                       rtol: float | None = None, length: int | None = None) -> AdversarialDecodeResult:
    r"""Decode with up to ``code.adversaries`` wrong messages: find them, correct them, or report that it can't.

    Searches the sets ``T`` of responders in order of size (then lexicographically) for the smallest one whose
    removal leaves messages that one polynomial of degree ``< K`` explains (exactly for rational codes; for floats,
    every message within ``tol (sum_c |M_lc| |y_c| + |y_l|)`` of its prediction ``sum_c M_lc y_c`` from ``K``
    others, the discrepancy a relative error ``tol`` in every message can explain, with ``tol`` the tolerance of
    the library's acceptance rule for the messages' dtype), up to
    ``|T| <= min(a, |R| - K - a)``; the proof in the module docstring shows ``T`` is then exactly the set of wrong
    workers. ``|R| >= K + a`` responders are needed to detect up to ``a`` wrong messages (fewer raise
    :class:`~gradcodes.DecodingError`), ``K + 2a`` (the ``n - s`` the code is built for) to correct them; in
    between, the search stops at ``|R| - K - a`` and reports more wrong messages as detected, not corrected.
    Cost ``sum_{t <= a} C(|R|, t)`` small consistency checks (on two fixed combinations of the columns, then
    confirmed on all of them).

    Parameters
    ----------
    code : AdversarialCode
    responders : iterable of int
        The workers whose messages arrived (at least ``K + a``; ``K + 2a`` to correct ``a`` wrong messages).
    messages : array_like, (len(responders), q) or (n, q)
        Their messages (rows in the order of ``responders``), or the full buffer (row ``i`` = worker ``i``).
    rtol : float, optional
        Float codes: relative tolerance of the consistency check, stated for float64 like every ``rtol`` of the
        library (default ``code.rtol``, 1e-8); messages of another dtype keep the same share of their digits, as
        in the acceptance rule (2.4e-4 for float32 messages at the default). Each column's checks are tightened
        until a wrong message among those the decode uses can move the decoded sum by at most ``tol k max_j
        |g_j|``, the scale every decode is held to (a bound for one wrong message; several that cancel each
        other's discrepancies are not covered by it); where that leaves less room than honest rounding needs,
        the decode raises :class:`~gradcodes.DecodingError`. Honest float64 messages measure a few unit
        roundoffs; the rest of the margin is for partial gradients that honest workers compute with different
        rounding (another BLAS kernel or machine). A wrong message near the tolerance may go unnamed or be
        ascribed to another worker; the sum still meets the bound.
    length : int, optional
        Trim the decoded sum to this length.

    Returns
    -------
    AdversarialDecodeResult

    Raises
    ------
    GradcodesTypeError
        If ``code`` is not an :func:`adversarial_gc` code or ``messages`` not an array of numbers.
    GradcodesValueError
        If ``messages`` has not one row per responder (or per worker) or holds NaN or inf.
    DecodingError
        If the responders are too few to correct ``a`` wrong messages, or the messages are inconsistent with at most
        ``a`` adversaries.

    Examples
    --------
    >>> import numpy as np, gradcodes as gc
    >>> placement = [[0, 1, 2], [0, 1, 3], [0, 2, 3], [1, 2, 3], [0, 1, 2, 3]]
    >>> code = gc.adversarial_gc(placement, s=1, a=1, nodes=range(5), field="rational")
    >>> g = np.array([[1], [2], [3], [4]], dtype=object)              # four partial gradients, sum 10
    >>> Y = code.B @ g
    >>> Y[2, 0] += 7                                                 # worker 2 lies; worker 4 straggles
    >>> res = gc.decode_adversarial(code, [0, 1, 2, 3], Y[:4])
    >>> res.gradient.tolist(), res.adversarial, res.corrected
    ([Fraction(10, 1)], (2,), True)
    """
    if not isinstance(code, AdversarialCode):
        raise GradcodesTypeError(f"code must be an adversarial_gc code, got {type(code).__name__}")
    R = check_responders(responders, code.n, min_size=code.K)
    rtol = code.rtol if rtol is None else check_real("rtol", rtol, 0, 1, open_lo=True, open_hi=True)
    if length is not None:
        length = check_int("length", length, 0)
    order = list(responders) if not isinstance(responders, np.ndarray) or responders.dtype != bool else list(R)
    try:
        Y = np.asarray(messages, dtype=object if code.exact else None)
    except (TypeError, ValueError):
        raise GradcodesTypeError("messages must be an array of numbers (one row per responder)") from None
    if Y.ndim == 1:
        Y = Y[:, None]
    if Y.ndim != 2 or Y.shape[1] == 0:
        raise GradcodesValueError(f"messages must be a non-empty (rows, q) array, got shape {Y.shape}")
    if not code.exact and Y.dtype.kind not in "biuf":
        raise GradcodesTypeError(f"messages of a float code must be real numbers, got dtype {Y.dtype}")
    if Y.shape[0] == code.n and len(R) != code.n:
        Y = Y[R]
    elif Y.shape[0] == len(R):
        Y = Y[np.argsort(np.asarray(order, dtype=np.int64), kind="stable")]
    else:
        raise GradcodesValueError(f"messages must have len(responders) = {len(R)} or n = {code.n} rows, got "
                                  f"{Y.shape[0]}")
    if not code.exact:
        Y = np.asarray(Y, dtype=np.result_type(Y.dtype, np.float32))
        if not np.isfinite(Y).all():
            raise GradcodesValueError("messages must be finite (a NaN or inf message: drop that worker)")
    N, K, a = len(R), code.K, code.adversaries
    if N - K < a:
        raise DecodingError(f"responders {R.tolist()}: detecting up to a = {a} wrong messages needs at least K + a = "
                            f"{K + a} of them (K + 2a = {K + 2 * a} to correct them), got {N}; code.decode decodes "
                            f"them without that protection", R)
    alpha = [code.nodes[i] if code.exact else float(code.nodes[i]) for i in R]
    ex = [code.scale_exponents[i] for i in R]
    tmax = min(a, N - K - a)              # every T searched has |T| + a <= N - K: the proof's condition
    check_size("the adversarial sets searched", sum(math.comb(N, t) for t in range(tmax + 1)) * N * K, "work")
    probe = Y[:, :1] if Y.shape[1] == 1 else np.stack([Y.sum(axis=1), Y[:, ::2].sum(axis=1) - Y[:, 1::2].sum(axis=1)],
                                                      axis=1)
    if not code.exact:
        tol = tolerance(rtol, Y.dtype)                    # stated for float64: the same share of Y's digits
        absY = np.abs(Y).astype(np.float64)
        ref_floor = _scale_floor(code, R, absY)
        absP = absY[:, :1] if Y.shape[1] == 1 else np.repeat(absY.sum(axis=1)[:, None], 2, axis=1)
    last: list[tuple[tuple[int, ...], np.ndarray, np.ndarray]] = []   # (Q, weights, decode) of the last float check

    def consistent(keep: list[int], Z: np.ndarray, Zabs: Any = None) -> bool:
        Q, rest = keep[:K], keep[K:]
        if not rest:
            return True
        if code.exact:
            M = _fourier.interp_exact([alpha[i] for i in Q], [ex[i] for i in Q], [alpha[i] for i in rest],
                                      [ex[i] for i in rest])
            for l_, row in enumerate(M):
                pred = sum((row[i] * Z[Q[i]] for i in range(K)), Z[Q[0]] * 0)
                if any(pred[c] != Z[rest[l_], c] for c in range(Z.shape[1])):
                    return False
            return True
        exa = np.asarray(ex, dtype=np.int64)
        Mf = _fourier.interp_float(np.asarray(alpha)[Q], exa[Q], np.asarray(alpha)[rest], exa[rest])
        pred = Mf @ Z[Q].astype(np.float64)
        sigma = np.abs(Mf) @ Zabs[Q] + Zabs[rest]
        if Z is Y:                          # the confirming check on every column; the probe's is looser
            W = _float_weights(code, np.asarray(R)[Q][None, :])[0]      # (m, K): the decoding vector on Q
            last[:] = [(tuple(Q), W, W.astype(Y.dtype) @ Y[Q])]             # the decode itself, kept for the return
            factor = _shrink(W, Mf, last[0][2], sigma, ref_floor)
            if tol * factor.min() < _HONEST * unit_roundoff(Y.dtype):
                F = np.asarray(R)[Q]
                raise DecodingError(
                    f"responders {F.tolist()}: with {Y.dtype} messages a wrong message could move the decoded sum "
                    f"by {1 / factor.min():.3g} times the tolerance {tol:.3g} and still pass checks that honest "
                    f"rounding ({_HONEST} unit roundoffs) must pass: the decode cancels too much to tell them apart; "
                    f"decode float64 messages, or use a code with less cancellation", F)
            sigma = sigma * factor[None, :]
        return bool((np.abs(pred - Z[rest]) <= tol * sigma).all())

    for t in range(tmax + 1):
        for T in itertools.combinations(range(N), t):
            keep = [i for i in range(N) if i not in T]
            if code.exact and consistent(keep, probe) and consistent(keep, Y) or \
                    not code.exact and consistent(keep, probe, absP) and consistent(keep, Y, absY):
                Q = keep[:K]
                if code.exact:
                    W = _code_weights(code, [int(R[i]) for i in Q])
                    g = np.array([[sum((W[u][c] * Y[Q[c], col] for c in range(K)), Fraction(0))
                                   for col in range(Y.shape[1])] for u in range(code.m)], dtype=object).ravel()
                else:
                    if last and last[0][0] == tuple(Q):                     # computed by the confirming check
                        _, Wf, gQ = last[0]
                    else:                                                   # no check ran (a = 0, nothing left over)
                        Wf = _float_weights(code, np.asarray(R)[Q][None, :])[0]
                        gQ = Wf.astype(Y.dtype) @ Y[Q]
                    _accept(code, np.asarray(R)[Q], Wf, Y.dtype)
                    g = gQ.ravel()
                if length is not None:
                    g = g[:length]
                return AdversarialDecodeResult(g, tuple(int(R[i]) for i in T), True, bool(T), tuple(int(i) for i in R))
    return AdversarialDecodeResult(None, (), False, True, tuple(int(i) for i in R))


def _scale_floor(code: AdversarialCode, R: np.ndarray, absY: np.ndarray) -> np.ndarray:
    """A lower bound of ``k max_j |g_j|`` per column that at most ``a`` wrong messages cannot raise: ``k`` times the
    ``(a+1)``-th largest ``|y_i| / ||B_i||_1`` over the responders ``R`` (a correct message has
    ``|y_i| <= ||B_i||_1 max_j |g_j|``)."""
    norms = np.maximum(np.abs(code.float_B()[R]).sum(axis=1), np.finfo(np.float64).tiny)[:, None]
    q = absY.shape[1]
    out = np.empty(q)
    step = max(1, _FLOOR_CHUNK // max(1, len(R)))            # columns at a time: a bounded work array
    for lo in range(0, q, step):
        ratio = absY[:, lo:lo + step] / norms
        cols = np.arange(ratio.shape[1])
        for _ in range(min(code.adversaries, len(R) - 1)):   # drop the a largest of each column (a is small)
            ratio[ratio.argmax(axis=0), cols] = -np.inf
        out[lo:lo + step] = ratio.max(axis=0)
    return code.k * out


def _shrink(W: np.ndarray, M: np.ndarray, decoded: np.ndarray, sigma: np.ndarray, ref_floor: np.ndarray) -> np.ndarray:
    r"""How much the consistency checks of each column must tighten so that one hidden wrong message stays harmless.

    ``W`` (m, K): the decoding weights on the decoding set ``F``; ``M`` (rest, K): the checks' prediction weights;
    ``decoded`` (m, columns): the decode of the messages; ``sigma`` (rest, columns): the checks' scales. A check
    ``l`` (a responder outside ``F``, predicted as ``sum_c M_lc y_c``) lets through ``tol sigma_l``,
    ``sigma_l = sum_c |M_lc| |y_c| + |y_l|``: what a relative error ``tol`` in every message can explain. A shift
    ``delta`` of the message ``c`` in ``F`` passes every check when ``|M_lc delta| <= tol sigma_l`` for all ``l``,
    and moves the decoded sum by ``|W_uc delta|``: at most ``tol max_c |W_c| min_l sigma_l / |M_lc| <= tol H`` with
    ``|W_c| = max_u |W_uc|`` and ``H = min_l sigma_l max_c |W_c| / |M_lc|`` per column (a min-max above that
    max-min, in ``O(rest x columns)`` work instead of ``O(rest x K x columns)``). ``H`` exceeds the acceptance rule's
    scale of the column, ``k max_j |g_j|``, wherever the decode cancels
    (``benchmarks/numerics/adversarial_consistency.py``: up to 4e5 times). The returned factor ``min(1, ref / H)``
    per column, with ``ref`` a lower bound of that scale (the largest entry of ``decoded``, or ``ref_floor`` from the
    messages' sizes), makes what any one wrong message in ``F`` can hide move the decoded sum by at most
    ``tol k max_j |g_j|``: the tolerance every decode is held to.
    """
    ref = np.maximum(np.abs(decoded).max(axis=0), ref_floor)
    with np.errstate(divide="ignore", invalid="ignore"):
        gain = (np.abs(W).max(axis=0)[None, :] / np.abs(M)).max(axis=1)    # (rest,): max_c |W_c| / |M_lc|
        hidden = (gain[:, None] * sigma).min(axis=0)                        # (columns,)
        factor = np.where(hidden > ref, ref / hidden, 1.0)
    return np.nan_to_num(factor, nan=1.0)


def _accept(code: AdversarialCode, F: np.ndarray, W: np.ndarray, dtype: Any) -> None:
    """The library's acceptance rule for a float decode with weights ``W`` (m, K) on the workers ``F``: raise
    :class:`~gradcodes.DecodingError` unless its predicted error meets ``code.rtol`` in the messages' dtype."""
    from .._core.acceptance import check_float_decode
    from .._core.numerics import cancellation, decode_terms, residuals

    A = np.zeros((code.m, code.n))
    A[:, F] = W
    B = code.float_B()
    res = float(residuals(A[None], B, code.target)[0])
    canc = float(cancellation(A[None], B, code.k)[0])
    check_float_decode(code, np.sort(F), res, canc, code.rtol, dtype, decode_terms(A, int(code.load)))


# ----------------------------------------------------------------------------------------------- verifier
@dataclass
class AdversarialVerifyReport:
    """Result of :func:`verify_adversarial`.

    Attributes
    ----------
    ok : bool
        Every checked (straggler set, adversarial set) pair decoded to the exact sum and named exactly the
        adversaries.
    exhaustive : bool
        Every straggler set of size ``s`` and every adversarial set of size ``<= a`` among the responders was
        checked.
    checked : int
        Pairs checked.
    failures : list of (stragglers, adversaries)
        The first failing pairs (at most 10).
    detected_beyond : bool or None
        With ``beyond=True``: whether every pattern of ``a + 1`` wrong messages (where ``n - s >= K + 2a + 1``) was
        detected or corrected rather than silently miscorrected; None otherwise.

    Examples
    --------
    >>> import gradcodes as gc
    >>> placement = [[0, 1, 2], [0, 1, 3], [0, 2, 3], [1, 2, 3], [0, 1, 2, 3]]
    >>> report = gc.verify_adversarial(gc.adversarial_gc(placement, s=1, a=1))
    >>> report.ok, report.exhaustive, report.failures
    (True, True, [])
    """

    ok: bool
    exhaustive: bool
    checked: int
    failures: list[tuple[tuple[int, ...], tuple[int, ...]]]
    detected_beyond: bool | None = None

    def __bool__(self) -> bool:
        return self.ok


def verify_adversarial(code: AdversarialCode, *, limit: int = 20_000, rng: RNGLike = 0) -> AdversarialVerifyReport:
    r"""Check, in exact arithmetic, that :func:`decode_adversarial` corrects every placement of adversaries.

    For every straggler set ``S`` (``|S| = s``) and every set ``T`` of adversaries among the responders with
    ``|T| <= a``: exact integer partial gradients (seeded), the messages ``B g`` with every row of ``T`` shifted by a
    non-zero integer vector, then the decode must return ``sum_j g_j`` exactly and name ``T``. A float code is checked
    through its rational twin (same placement, nodes, ``m``). Exhaustive when the number of pairs is at most
    ``limit``; otherwise the first ``limit`` pairs in lexicographic order. ``rng`` (SPEC 7: None, an int, a
    SeedSequence or a Generator; default 0) draws the gradients and the errors.

    Parameters
    ----------
    code : AdversarialCode
        A code of :func:`adversarial_gc`.
    limit : int, default 20000
        Largest number of (straggler set, adversary set) pairs checked.
    rng : None, int, SeedSequence or Generator, default 0
        Random state (SPEC 7) of the gradients and the errors.

    Returns
    -------
    AdversarialVerifyReport
        ``ok`` (every pair checked decoded exactly and named its adversaries), ``exhaustive``, ``checked`` and the
        failures.

    Raises
    ------
    GradcodesTypeError
        If ``code`` is not an :func:`adversarial_gc` code.
    GradcodesValueError
        If ``limit < 1``.

    Examples
    --------
    >>> import gradcodes as gc
    >>> placement = [[0, 1, 2], [0, 1, 3], [0, 2, 3], [1, 2, 3], [0, 1, 2, 3]]
    >>> rep = gc.verify_adversarial(gc.adversarial_gc(placement, s=1, a=1))
    >>> rep.ok, rep.exhaustive, rep.checked
    (True, True, 25)
    """
    if not isinstance(code, AdversarialCode):
        raise GradcodesTypeError(f"code must be an adversarial_gc code, got {type(code).__name__}")
    limit = check_int("limit", limit, 1)
    gen = check_rng(rng)
    exact = code if code.exact else adversarial_gc(
        code.placement.astype(np.int64), code.stragglers, code.adversaries, m=code.m,
        nodes=code.node_kind if code.node_kind != "given" else code.nodes, field="rational")
    n, s, a = code.n, code.stragglers, code.adversaries
    total = math.comb(n, s) * sum(math.comb(n - s, t) for t in range(a + 1))
    check_size("the (straggler set, adversary set) pairs checked times n", min(total, limit) * n, "work")
    g = np.array([[Fraction(int(v))] for v in gen.integers(-9, 10, size=exact.k * exact.m)], dtype=object)
    want = [sum((g[j * exact.m + u, 0] for j in range(exact.k)), Fraction(0)) for u in range(exact.m)]
    Y0 = exact.B @ g
    checked = 0
    failures: list[tuple[tuple[int, ...], tuple[int, ...]]] = []
    for S in itertools.combinations(range(n), s):
        R = [i for i in range(n) if i not in S]
        for t in range(a + 1):
            for T in itertools.combinations(R, t):
                if checked >= limit:
                    return AdversarialVerifyReport(not failures, False, checked, failures)
                Y = Y0[R].copy()
                for i in T:
                    Y[R.index(i), 0] += int(gen.integers(1, 10)) * (1 if gen.integers(2) else -1)
                res = decode_adversarial(exact, R, Y)
                checked += 1
                if not (res.corrected and res.gradient is not None and list(res.gradient) == want
                        and res.adversarial == T):
                    if len(failures) < 10:
                        failures.append((S, T))
    return AdversarialVerifyReport(not failures, True, checked, failures)
