r"""Raviv, Tamo, Tandon & Dimakis: gradient codes from cyclic MDS codes, over C and R (Raviv et al. 2018).

Let ``ω = exp(2πi/n)`` and let ``Z = {m, m+1, ..., m+s-1}`` (integers, ``1 <= m``, ``m+s-1 <= n-1``) be a window
of ``s`` consecutive *frequencies*. The cyclic code

.. math:: \mathcal C_Z = \{c \in \mathbb C^n : c(\omega^f) = 0 \ \forall f \in Z\},\qquad c(x) = \sum_t c_t x^t,

has dimension ``n - s``, is MDS (BCH bound: ``s`` consecutive zeros give ``d_min = s + 1``) and contains the
all-ones vector (``1(x) = (x^n-1)/(x-1)`` vanishes at every ``ω^f``, ``f != 0``, and ``0 ∉ Z``). Its generator
``g(x) = ∏_{f∈Z} (x - ω^f)`` is a codeword of minimum weight ``s + 1`` supported on ``{0, ..., s}``; with
``c = g / g(1)`` (so ``Σ c = 1``) worker ``i`` sends the cyclic shift ``B[i, j] = c[(j - i) mod n]`` and stores
partitions ``{i, ..., i+s} mod n``: load ``s + 1``, meeting the bound.

*Why any n - s rows decode* (Raviv et al. 2018): a dependency ``Σ_{i∈F} u_i x^i g(x) ≡ 0 (mod x^n - 1)`` forces
``u(ω^f) = 0`` for the ``n - s`` frequencies outside ``Z``, which are consecutive (cyclically), so ``u`` lies in
an MDS code of minimum distance ``n - s + 1 > |F|``: ``u = 0``. Hence any ``n - s`` rows are a basis of
``C_Z ∋ 1``.

**Placement of the zero window.** ``placement="textbook"`` takes ``Z = {1, ..., s}`` (Raviv et al.): its roots crowd
``x = 1``, so ``g(1)`` is tiny next to the monic coefficients (up to about ``C(s, s/2)``), and with ``Σ c = 1``
``||c||_1 = 3e8`` at (100, 10), ``3e66`` at (500, 125): decodes cancel catastrophically from n ≈ 50.
``placement="centered"`` (default) puts the window opposite frequency 0, ``Z = {z0+1, ..., z0+s}`` with
``z0 = (n-s)//2``; then ``c >= 0`` (real case) and ``||c||_1 = Σ c = 1``, and the code survives random stragglers
to n = 500 (``docs/numerics.md``).

**Real field.** The window is closed under ``f -> n - f`` exactly when ``n - s`` is odd; the centered code then
has real coefficients. When ``n - s`` is even and ``(s + 1) | n`` the real code is *cyclic fractional
repetition*: ``c = 1 + x + ... + x^s`` (zeros at the ``s`` nontrivial ``(s+1)``-th roots of unity; not MDS, but
among any ``n - s`` rows one residue class mod ``s + 1`` is complete and its rows tile ``1``, so the decode adds
``n/(s+1)`` messages with weight 1). No other ``(n, s)`` gets a real code here.

**Decoders** (see ``docs/cyclic_mds.md``). Every decoding vector of ``C_Z`` has the form
``a = κ 1 + Σ_{f∈Z} z_f ω^{-f·}`` with ``κ = 1/c(1)``: its spectrum lives on ``{0} ∪ Z``.

* ``"spectral"`` (float default): that parametrisation with an orthonormal Fourier (real: cos/sin) basis ``K`` of
  the *numerical* left null space (the window plus the frequencies where ``|ĉ|`` is below rounding, ``d`` of them);
  ``a_S = 0`` is the ``s x d`` system ``K_S z = -κ 1``, solved by minimum-norm least squares (batched SVD).
  ``||a||^2 = κ^2 n + ||z||^2``, so this is a small-norm solution of the numerically rank-deficient problem, of the
  kind ``np.linalg.lstsq`` finds from the ``(n-s) x n`` system, at ``O(s d^2 + n d)`` per pattern. Its residual is
  tied to how well the stored ``c`` vanishes on ``Z'``: at n ≈ 50-100 with ``s = n/10`` it is 10-40x lstsq's
  (``docs/cyclic_mds.md``; ``decoder="lstsq"`` there), at n = 500 it is smaller.
* ``"barycentric"``: the unique exact solution ``a_j = κ Σ_{l∈S} L_l(y_j) (1 - (y_j / y_l)^m)`` with
  ``y_j = ω^{-j}`` and ``L_l`` the Lagrange basis on the straggler nodes; ``O(ns + n log n)`` per pattern (one FFT
  gives every ``∏_{l∈S}(y_j - y_l)``). Exact in GF(p).
* ``"product"`` (textbook placement): the erasure-locator product ``a_j = κ ∏_{l∈S} (1 - ω^{l-j})``, evaluated
  for all ``j`` by one FFT convolution of logarithms, ``O(n log n)``.
* ``"residue"`` (real cyclic FR): weight 1 on a complete residue class mod ``s + 1``.

**Exact verification.** ``gc.verify(code, field="GF")`` (or ``field=galois.GF(p)``) rebuilds the construction
over ``GF(p)`` with ``p ≡ 1 (mod n)`` (default: the smallest such prime) and ``ω = γ^{(p-1)/n}`` for a primitive
element ``γ``, and checks every responder set with no rounding at all.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from functools import partial
from typing import Any

import numpy as np

from .._base.aliases import MatrixLike
from .._base.errors import GradcodesTypeError, GradcodesValueError
from .._base.registry import Scheme, register
from .._base.validate import check_choice, check_entries, check_int, check_ns
from .._core import detlinalg as _det
from .._core.code import GradientCode, LinearCode
from .._core.decoders import Decoder, min_norm_solve, stragglers_of
from .._core.fields import PrimeField, field_of
from .._io.files import REBUILDERS

__all__ = ["cyclic_mds", "CyclicMDSCode", "gf_prime", "CyclicSpectralDecoder", "CyclicBarycentricDecoder",
           "CyclicProductDecoder", "ResidueClassDecoder"]

_FIELDS = {"complex": "complex", "C": "complex", "real": "real", "R": "real"}
_CHUNK = 64
_WORK = 1 << 18                  # elements per (g, n, t) work array of the barycentric decoder


# ----------------------------------------------------------------------------------------------- code type
class CyclicMDSCode(GradientCode):
    """A code built by :func:`cyclic_mds`: ``B`` is the circulant of one codeword ``c``.

    Parameters
    ----------
    B, s, **kwargs
        As for :class:`~gradcodes.GradientCode`.
    info : dict
        The construction's constants read by the closed-form decoders: ``"window"`` (support length ``m``),
        ``"c1"`` (``c(1)``, the sum of the codeword), ``"freqs"`` (the zero frequencies), ``"construction"``
        (``"bch"`` or ``"cyclic_fr"``) and, over GF(p), ``"omega"`` (the n-th root of unity).

    Examples
    --------
    >>> import gradcodes as gc
    >>> code = gc.cyclic_mds(5, 2, field="real")
    >>> isinstance(code, gc.CyclicMDSCode), code.field, code.load
    (True, 'real', 3)
    """

    def __init__(self, B: MatrixLike, s: int, info: dict[str, Any], **kwargs: Any) -> None:
        super().__init__(B, s, **kwargs)
        self._cyclic: dict[str, Any] = {**info, "s": self.s}


def _info(code: LinearCode) -> dict[str, Any]:
    """The construction constants of a cyclic MDS code (a TypeError for any other code)."""
    if not isinstance(code, CyclicMDSCode):
        raise GradcodesTypeError(f"this decoder needs a code built by gradcodes.cyclic_mds, got {type(code).__name__} "
                                 f"{code.name!r}")
    return code._cyclic


# ----------------------------------------------------------------------------------------------- helpers
def _window(n: int, s: int, placement: str) -> int:
    """The first frequency ``m`` of the zero window ``Z = {m, ..., m+s-1}``."""
    return 1 if placement == "textbook" else (n - s) // 2 + 1


def _float_codeword(n: int, s: int, m: int, normalize: str, real: bool) -> tuple[np.ndarray, complex]:
    """``(c, c(1))``: the coefficients (length n) of ``g(x) = ∏_{f=m}^{m+s-1} (x - ω^f)``, scaled by ``normalize``,
    and their sum in exact arithmetic (1 for ``"sum"``, ``g(1)`` for ``"monic"``).

    Computed from the values ``g(ω^u) = ∏_f (ω^u - ω^f)`` (exactly 0 on the window, products taken as sums of
    logarithms) by one inverse DFT, then truncated to the support ``{0, ..., s}``. Multiplying out the ``s``
    linear factors instead loses everything once the window is wider than half the circle (relative defect
    ``max_{f∈Z} |c(ω^f)| / ||c||_1`` of 0.9 at (128, 125) against 1e-15 here). The scale comes from the same
    logarithms (``g(1)`` for ``"sum"``), never from summing the computed coefficients: for the textbook window
    ``|g(1)|`` is far below the rounding of ``Σ_t c_t`` (``||g||_1 / |g(1)| = 3e66`` at (500, 125)).
    """
    Z = np.arange(m, m + s)
    u = np.arange(n)
    d = (u[:, None] - Z[None, :]) % n                       # ω^u - ω^f = ω^f (ω^d - 1)
    on_window = (d == 0).any(axis=1)
    # Every transcendental value is evaluated reproducibly (correctly rounded tables, exact sums of their
    # logarithms' roundings by math.fsum, products and Dot2 sums in a fixed order): the same bits on every
    # machine. log|ω^d - 1| = log(2 sin(π d / n)); the phase of ∏_f (ω^u - ω^f) is π P_u / (2n) with the integer
    # P_u = Σ_f (4 f + n + 2 d_uf).
    logtab = _det.log_two_sin_pi(n)
    dd = np.where(d == 0, 1, d)
    logmag = np.array([math.fsum(row) for row in logtab[dd].tolist()], dtype=np.float64).reshape(n)
    P = (4 * Z[None, :] + n + 2 * d).sum(axis=1)
    top = float(logmag[~on_window].max()) if (~on_window).any() else 0.0
    mag = np.where(on_window, 0.0, _det.exp(logmag - top))
    gr, gi = mag * _det.cos_pi(P, 2 * n), mag * _det.sin_pi(P, 2 * n)
    # c_t = (1/n) Σ_u g(ω^u) ω^{-ut} = e^{-top} g_t for t = 0..s (the support; the other c_t are 0 exactly)
    ut = np.arange(s + 1)[:, None] * u[None, :]
    C, S = _det.cos_pi(2 * ut, n), _det.sin_pi(2 * ut, n)
    re = _det.dot2(np.concatenate([C, S], axis=1), np.concatenate([gr, gi])[None, :]) / n
    im = _det.dot2(np.concatenate([C, -S], axis=1), np.concatenate([gi, gr])[None, :]) / n
    # g(1) = ∏_f (1 - ω^f) = exp(logmag[0] + i phase[0]) (u = 0 is never on the window: 0 ∉ Z)
    log_scale = top if normalize == "monic" else top - float(logmag[0])
    if log_scale > math.log(np.finfo(np.float64).max / 2):
        raise GradcodesValueError(f"the {normalize!r}-normalised codeword of this code overflows float64 "
                                  f"(coefficients up to ~1e{log_scale / math.log(10):.0f}) at n={n}, s={s}; use "
                                  f"placement='centered' and normalize='sum'")
    scale = float(_det.exp(np.array([log_scale]))[0])
    c0, s0 = float(_det.cos_pi(P[:1], 2 * n)[0]), float(_det.sin_pi(P[:1], 2 * n)[0])
    fr, fi = (scale, 0.0) if normalize == "monic" else (scale * c0, -(scale * s0))
    c = np.zeros(n, dtype=np.complex128)
    c.real[: s + 1] = re * fr - im * fi
    c.imag[: s + 1] = re * fi + im * fr
    if normalize == "monic":
        a = float(_det.exp(logmag[:1])[0])
        c1 = complex(a * c0, a * s0)
    else:
        c1 = 1.0 + 0j
    if real:
        return np.ascontiguousarray(c.real), c1
    return c, c1


def _circulant(c: Any) -> Any:
    """``B[i, j] = c[(j - i) mod n]`` (rows are the cyclic shifts of ``c``)."""
    n = len(c)
    idx = (np.arange(n)[None, :] - np.arange(n)[:, None]) % n
    return c[idx]


def gf_prime(n: int) -> int:
    """The smallest prime ``p ≡ 1 (mod n)`` (so that GF(p) holds a primitive n-th root of unity).

    >>> gf_prime(10), gf_prime(12), gf_prime(16)
    (11, 13, 17)
    """
    import galois

    n = check_int("n", n, 1)
    p = n + 1
    while not galois.is_prime(p):
        p += n
    return p


def _gf_field(field: Any, n: int) -> Any:
    import galois

    if isinstance(field, str):
        if field != "GF":
            raise GradcodesValueError(f"field must be 'GF' (smallest prime p ≡ 1 mod n) or a galois.GF(p) class, got "
                                      f"{field!r}")
        return galois.GF(gf_prime(n))
    if isinstance(field, type) and hasattr(field, "characteristic") and hasattr(field, "degree"):
        if field.degree != 1:
            raise GradcodesValueError(f"the cyclic code needs a prime field GF(p); got GF({field.characteristic}^"
                                      f"{field.degree})")
        if (field.characteristic - 1) % n:
            raise GradcodesValueError(f"GF({field.characteristic}) has no primitive {n}-th root of unity: need p ≡ 1 "
                                      f"(mod n={n}); the smallest such prime is {gf_prime(n)}")
        return field
    raise GradcodesTypeError(f"field must be 'GF' or a galois.GF(p) class, got {field!r}")


# ----------------------------------------------------------------------------------------------- decoders
class CyclicSpectralDecoder(Decoder):
    r"""Minimum-norm decoder in the spectral parametrisation ``a = κ 1 + K z`` (batched, ``O(s d^2 + n d)``).

    Every vector whose spectrum lives where ``ĉ(f) = c(ω^f)`` vanishes is in the left null space of ``B``. In
    floating point the *numerical* null space is larger: the centered codeword is smooth, so ``|ĉ(f)|`` is below
    rounding on a band of frequencies around the zero window ``Z``. ``K`` is an orthonormal Fourier basis (cos/sin
    pairs for real codes) of ``Z' = Z ∪ {f ≠ 0 : |ĉ(f)| <= delta |ĉ(0)|}`` (``d = |Z'|`` columns), and stragglers
    ``S`` give the ``s x d`` system ``K_S z = -κ 1_S``, solved by minimum-norm least squares (batched SVD, right-hand
    side projected first). Because ``κ 1 ⟂ K``, ``||κ 1 + K z||^2 = κ^2 n + ||z||^2``: this is the minimum-norm
    vector in the spectral parametrisation, a small-norm decoding vector like the one ``np.linalg.lstsq`` finds from
    the ``(n-s) x n`` system (not the same one: norms differ by up to 1.5x at (200, 50)), at a fraction of the cost.
    Its residual ``||a B - 1||`` is not minimised against the stored ``B``: it is 10-40x lstsq's at n ≈ 50-100,
    ``s = n/10`` (1e-8 against 4e-10 at (101, 10), real), and smaller than lstsq's at n = 500. With ``delta = 0``
    it is the exact MDS solution.

    Parameters
    ----------
    delta : float, default 3e-14
        Relative spectral threshold for the numerical null space (0: only the zero window).
    rcond : float, optional
        Relative singular-value cutoff of the small solve (default ``max(s, d) * eps``).
    """

    name = "spectral"
    description = "min-norm least squares on the s x d numerical-null-space system (batched SVD)"

    def __init__(self, delta: float = 3e-14, rcond: float | None = None) -> None:
        self.delta = float(delta)
        self.rcond = rcond

    def basis(self, code: LinearCode) -> tuple[Any, np.ndarray]:
        key = f"spectral:{self.delta!r}"
        cached = code._memo.get(key)
        if cached is None:
            n = code.n
            c = np.asarray(code.B[0])
            chat = np.fft.ifft(c) * n                                  # ĉ(f) = c(ω^f)
            f_all = np.arange(n)
            zero = set(int(f) for f in _info(code)["freqs"])
            small = np.abs(chat) <= self.delta * np.abs(chat[0])
            freqs = np.array(sorted(zero | {int(f) for f in f_all[small & (f_all != 0)]}), dtype=np.int64)
            j = np.arange(n)
            if code.field == "real":
                cols = []
                fs = set(freqs.tolist())
                for f in freqs:
                    if 2 * f < n and (n - f) in fs:
                        ang = 2 * np.pi * f * j / n
                        cols += [np.cos(ang) * np.sqrt(2 / n), np.sin(ang) * np.sqrt(2 / n)]
                    elif 2 * f == n:
                        cols.append(np.cos(np.pi * j) / np.sqrt(n))
                K = np.stack(cols, axis=1) if cols else np.zeros((n, 0))
            else:
                K = np.exp(-2j * np.pi * np.outer(j, freqs) / n) / np.sqrt(n)
            kappa = 1.0 / _info(code)["c1"]
            cached = (kappa, np.ascontiguousarray(K))
            code._memo[key] = cached
        return cached

    def matrices(self, code: LinearCode, mask: np.ndarray) -> np.ndarray:
        kappa, K = self.basis(code)
        b, n = mask.shape
        out = np.zeros((b, 1, n), dtype=K.dtype)
        counts = n - mask.sum(axis=1)
        for t in np.unique(counts):
            rows = np.flatnonzero(counts == t)
            for lo in range(0, rows.size, _CHUNK):
                r = rows[lo:lo + _CHUNK]
                A = np.full((r.size, n), kappa, dtype=K.dtype)
                if t and K.shape[1]:
                    S = stragglers_of(mask[r], int(t))
                    z = _robust_min_norm(K[S], np.full((r.size, int(t), 1), -kappa, dtype=K.dtype), self.rcond)
                    A += (K[None] @ z)[:, :, 0]
                A *= mask[r]
                out[r, 0] = A
        return out


def _robust_min_norm(M: np.ndarray, R: np.ndarray, rcond: float | None) -> np.ndarray:
    """Batched :func:`min_norm_solve`; if LAPACK's divide-and-conquer SVD fails to converge, solve the batch one
    system at a time with scipy's ``gelss`` (plain SVD) driver."""
    try:
        return min_norm_solve(M, R, rcond)
    except np.linalg.LinAlgError:
        import scipy.linalg

        cond = rcond if rcond is not None else max(M.shape[-2:]) * np.finfo(np.float64).eps
        return np.stack([scipy.linalg.lstsq(Mi, Ri, cond=cond, lapack_driver="gelss")[0] for Mi, Ri in zip(M, R,
                                                                                                       strict=True)])


def _log_table(n: int) -> np.ndarray:
    """``T[d] = log(ω^{-d} - 1)`` for d = 1..n-1 (T[0] = 0), so ``log(y_j - y_l) = T[j-l] - 2πi l / n``."""
    d = np.arange(n)
    T = np.zeros(n, dtype=np.complex128)
    T[1:] = np.log(2 * np.sin(np.pi * d[1:] / n)) - 1j * (np.pi / 2 + np.pi * d[1:] / n)
    return T


class CyclicBarycentricDecoder(Decoder):
    r"""The unique exact decoding vector in closed form (barycentric Lagrange; float or GF(p)).

    With ``y_j = ω^{-j}``, ``κ = 1/c(1)`` and ``L_l`` the Lagrange basis on the straggler nodes ``{y_l : l ∈ S}``,

    .. math:: a_j = κ \sum_{l∈S} L_l(y_j)\,\bigl(1 - (y_j/y_l)^m\bigr),\qquad j ∉ S,

    which vanishes on ``S`` and has its spectrum on ``{0} ∪ Z`` (``Z = {m, ..., m+s-1}``). In floating point every
    ``∏_{l∈S}(y_j - y_l)`` comes from one FFT convolution of logarithms (``O(n log n)``) and the sum costs
    ``O(ns)``; over GF(p) the same formula runs in exact field arithmetic. This is the *exact* solution: when
    ``B_F`` is numerically rank-deficient it can cancel much more than the minimum-norm ``"spectral"`` decoder.
    """

    name = "barycentric"
    description = "closed form: barycentric Lagrange on the straggler nodes, O(ns + n log n)"

    def __init__(self, gf: bool = False) -> None:
        self.gf = gf
        self.exact = gf

    def matrices(self, code: LinearCode, mask: np.ndarray) -> Any:
        if self.gf:
            return self._matrices_gf(code, mask)
        n = code.n
        m = _info(code)["window"]
        kappa = 1.0 / complex(_info(code)["c1"])
        T = _log_table(n)
        That = np.fft.fft(T)
        b = mask.shape[0]
        out = np.zeros((b, 1, n), dtype=code.B.dtype)
        counts = n - mask.sum(axis=1)
        jj = np.arange(n)
        for t in np.unique(counts):
            rows = np.flatnonzero(counts == t)
            t = int(t)
            if t == 0:
                out[rows, 0] = kappa.real if code.field == "real" else kappa
                continue
            step = max(1, min(_CHUNK, _WORK // (n * t)))                       # (g, n, t) work arrays
            with np.errstate(over="ignore", invalid="ignore"):   # huge vectors are rejected by the caller
                for lo in range(0, rows.size, step):
                    r = rows[lo:lo + step]
                    S = stragglers_of(mask[r], t)                                  # (g, t)
                    chi = (~mask[r]).astype(np.float64)
                    conv = np.fft.ifft(np.fft.fft(chi, axis=1) * That, axis=1)    # Σ_{l∈S} T[j - l]
                    phase = -2j * np.pi * S.sum(axis=1, keepdims=True) / n        # Σ_{l∈S} -2πi l/n
                    log_ell = conv + phase                                         # log ∏_{l∈S}(y_j - y_l), j ∉ S
                    # log ∏_{l'≠l}(y_l - y_l') = conv[l] - 2πi (Σ S - l)/n
                    log_w = -(np.take_along_axis(conv, S, axis=1) + phase + 2j * np.pi * S / n)
                    d = (jj[None, :, None] - S[:, None, :]) % n                   # (g, n, t)
                    log_diff = T[d] - 2j * np.pi * S[:, None, :] / n
                    L = np.exp(log_ell[:, :, None] - log_diff + log_w[:, None, :])
                    ratio = np.exp(-2j * np.pi * m * d / n)                        # (y_j / y_l)^m
                    a = np.where(mask[r], kappa * (L * (1 - ratio)).sum(axis=2), 0)  # exact zeros, even if inf
                    out[r, 0] = a.real if code.field == "real" else a
        return out

    @staticmethod
    def _matrices_gf(code: LinearCode, mask: np.ndarray) -> Any:
        GF: Any = type(code.B)                               # a galois FieldArray class
        n = code.n
        m = _info(code)["window"]
        omega = GF(_info(code)["omega"])
        y = omega ** (-np.arange(n) % n)                       # y_j = ω^{-j}
        kappa = GF(1) / GF(_info(code)["c1"])
        b = mask.shape[0]
        out = PrimeField(GF).zeros((b, 1, n))
        counts = n - mask.sum(axis=1)
        for t in np.unique(counts):
            rows = np.flatnonzero(counts == t)
            t = int(t)
            if t == 0:
                out[rows, 0] = kappa
                continue
            S = stragglers_of(mask[rows], t)
            yS = y[S]                                          # (g, t)
            D = y[None, :, None] - yS[:, None, :]              # (g, n, t)
            Dsafe = D.copy()
            Dsafe[D == 0] = 1
            ell = np.multiply.reduce(Dsafe, axis=2)            # ∏_l (y_j - y_l) (stragglers' own factor skipped)
            E = yS[:, :, None] - yS[:, None, :]                # (g, t, t)
            E[:, np.arange(t), np.arange(t)] = 1
            w = np.reciprocal(np.multiply.reduce(E, axis=2))   # 1 / ∏_{l'≠l}(y_l - y_l')
            L = ell[:, :, None] / Dsafe * w[:, None, :]
            ratio = (y[None, :, None] / yS[:, None, :]) ** m
            a = kappa * np.add.reduce(L * (GF(1) - ratio), axis=2)
            a[~mask[rows]] = 0
            out[rows, 0] = a
        return out


class CyclicProductDecoder(Decoder):
    r"""Erasure-locator product for the textbook window ``Z = {1..s}``: ``a_j = κ ∏_{l∈S} (1 - ω^{l-j})``.

    All ``n`` values come from one FFT convolution of ``log(1 - ω^{-d})`` with the straggler indicator:
    ``O(n log n)`` per pattern (``docs/numerics.md``).
    """

    name = "product"
    description = "closed form: erasure-locator product via one FFT, O(n log n) (textbook window)"

    def matrices(self, code: LinearCode, mask: np.ndarray) -> np.ndarray:
        n = code.n
        kappa = 1.0 / complex(_info(code)["c1"])
        d = np.arange(n)
        V = np.zeros(n, dtype=np.complex128)                    # V[e] = log(1 - ω^{-e}) so Σ_l V[j - l]
        V[1:] = np.log(1 - np.exp(-2j * np.pi * d[1:] / n))
        Vhat = np.fft.fft(V)
        chi = (~mask).astype(np.float64)
        conv = np.fft.ifft(np.fft.fft(chi, axis=1) * Vhat, axis=1)
        with np.errstate(over="ignore"):
            a = np.where(mask, kappa * np.exp(conv), 0)        # exact zeros on stragglers (exp may overflow)
        return a[:, None, :]


class ResidueClassDecoder(Decoder):
    """Cyclic fractional repetition: weight 1 on the rows of a complete residue class mod ``s + 1``.

    Rows ``t, t + (s+1), t + 2(s+1), ...`` store disjoint windows that tile all partitions; ``s`` stragglers miss
    at least one of the ``s + 1`` classes, and the decode adds that class's ``n/(s+1)`` messages (the smallest
    complete class is used), each with weight ``1/c_0`` (1 for ``normalize="monic"``, ``s + 1`` for ``"sum"``).
    Works in any field.
    """

    name = "residue"
    description = "0/1 weights on a complete residue class mod s+1"

    def matrices(self, code: LinearCode, mask: np.ndarray) -> Any:
        n, s = code.n, _info(code)["s"]
        q = s + 1
        b = mask.shape[0]
        cls = np.asarray(np.asarray(mask).reshape(b, n // q, q).all(axis=1))            # (b, q): class t complete?
        t = np.argmax(cls, axis=1)
        sel = np.zeros((b, n), dtype=bool)
        sel[np.arange(b)[:, None], t[:, None] + q * np.arange(n // q)[None, :]] = True
        sel &= cls[np.arange(b), t][:, None]
        if code.field.startswith("GF("):
            out = field_of(code.B).zeros((b, 1, n))
            out[:, 0][sel] = np.reciprocal(code.B[0, 0])
            return out
        return (sel / code.B[0, 0])[:, None, :]


# ----------------------------------------------------------------------------------------------- constructor
def cyclic_mds(n: int, s: int, field: str = "complex", *, placement: str = "centered",
               normalize: str = "sum") -> CyclicMDSCode:
    r"""Cyclic-MDS gradient code of Raviv, Tamo, Tandon & Dimakis (2018), over C or R.

    Row ``i`` of ``B`` is the cyclic shift by ``i`` of the minimum-weight codeword ``c`` (``s + 1`` consecutive
    nonzeros) of a cyclic MDS code that contains the all-ones vector; worker ``i`` stores partitions
    ``i, ..., i+s (mod n)``. Load ``s + 1``, meeting the bound. See the module docstring for the proof and
    ``docs/cyclic_mds.md`` for numerics.

    Parameters
    ----------
    n : int
        Number of workers (= partitions), ``n >= 1``.
    s : int
        Stragglers tolerated, ``0 <= s <= n - 1``.
    field : {"complex", "real"} (aliases "C", "R")
        ``"real"`` exists when ``n - s`` is odd (centered BCH window, MDS) or ``(s + 1) | n`` (cyclic fractional
        repetition, binary); other ``(n, s)`` raise ValueError naming the alternatives.
    placement : {"centered", "textbook"}
        Zero window opposite frequency 0 (default; stable) or ``{1, ..., s}`` (the paper's; ill-conditioned beyond
        n ≈ 50, kept for reference and for the ``"product"`` decoder). Only ``"centered"`` is real.
    normalize : {"sum", "monic"}
        Scale ``c`` so that ``Σ c = 1`` (default) or keep the monic generator's coefficients (the paper's examples).

    Returns
    -------
    CyclicMDSCode
        A :class:`~gradcodes.GradientCode` with decoders ``"spectral"`` (default, min-norm), ``"barycentric"``
        (exact closed form), ``"product"`` (textbook window), ``"residue"`` (real cyclic FR, default there), plus
        the generic ones. ``gc.verify(code, field="GF")`` re-checks the construction exactly over GF(p).

    Raises
    ------
    GradcodesValueError
        If a parameter is out of its range (the message names the parameter and the range), or ``field`` is unknown or
        does not fit the placement.

    Examples
    --------
    A real example (n = 5, s = 2): ``c = (1, φ, 1, 0, 0)``.

    >>> import numpy as np, gradcodes as gc
    >>> code = gc.cyclic_mds(5, 2, field="real", normalize="monic")
    >>> np.round(code.B[0], 6)
    array([1.      , 1.618034, 1.      , 0.      , 0.      ])
    >>> np.round(code.decoding_matrix([0, 1, 2]), 6)
    array([[ 1.      , -0.618034,  1.      ,  0.      ,  0.      ]])

    A complex code, checked for every responder set in floating point and exactly over GF(11):

    >>> code = gc.cyclic_mds(10, 3)
    >>> gc.verify(code).exact, gc.verify(code, field="GF").exact
    (True, True)
    """
    n, s = check_ns(n, s)
    check_entries(n, n)
    if not isinstance(field, str) or field not in _FIELDS:
        raise GradcodesValueError(f"field must be one of 'complex', 'real' (or 'C', 'R'), got {field!r}")
    fld = _FIELDS[field]
    check_choice("placement", placement, ("centered", "textbook"))
    check_choice("normalize", normalize, ("sum", "monic"))
    params: dict[str, Any] = {"n": n, "s": s, "field": fld, "placement": placement, "normalize": normalize}
    construction = "bch"
    if fld == "real":
        if placement != "centered":
            raise GradcodesValueError("placement='textbook' has complex coefficients; field='real' needs "
                                      "placement='centered'")
        if (n - s) % 2 == 0:
            if n % (s + 1) == 0:
                construction = "cyclic_fr"
            else:
                valid = sorted({t for t in range(n) if (n - t) % 2 == 1 or n % (t + 1) == 0})
                raise GradcodesValueError(
                    f"cyclic_mds has no real code for n={n}, s={s}: field='real' needs n - s odd (BCH) or "
                    f"(s + 1) | n (cyclic fractional repetition). Valid s for n={n}: {_ranges(valid)}. "
                    f"Alternatives: field='complex' (complex messages), gc.cyclic_repetition(n, s) (real, random), "
                    f"or gc.recommend(n, s) for the most accurate real code")
    m = _window(n, s, placement)
    if construction == "cyclic_fr":
        c = np.zeros(n)
        c[: s + 1] = 1.0 / (s + 1) if normalize == "sum" else 1.0
        c1 = 1.0 + 0j if normalize == "sum" else complex(s + 1)
    else:
        c, c1 = _float_codeword(n, s, m, normalize, real=fld == "real")
    params["_window"] = m
    params["_c1"] = c1 if fld == "complex" else c1.real
    params["_construction"] = construction
    params["_freqs"] = (np.arange(1, s + 1) * (n // (s + 1)) if construction == "cyclic_fr"
                        else np.arange(m, m + s)).tolist()
    B = _circulant(c)

    builder = partial(_build_in_field, n, s, construction, m, normalize, fld, placement)
    if construction == "cyclic_fr":
        decoders: list[Decoder] = [ResidueClassDecoder(), CyclicSpectralDecoder()]
        default = "residue"
        params["_window"] = None
    else:
        decoders = [CyclicSpectralDecoder(), CyclicBarycentricDecoder()]
        if placement == "textbook":
            decoders.append(CyclicProductDecoder())
        default = "spectral"
    name = f"cyclic_mds[{fld}" + (", textbook]" if placement == "textbook" else "]")
    if construction == "cyclic_fr":
        name = "cyclic_mds[real, cyclic FR]"
    return _make(B, s, fld, name, params, decoders, default, builder)


def _build_in_field(n: int, s: int, construction: str, m: int, normalize: str, base_field: str, placement: str,
                    gf_field: Any) -> CyclicMDSCode:
    """``code.in_field(gf_field)`` of a cyclic MDS code: the same construction over GF(p)."""
    code = _build_gf(n, s, construction, m, normalize, _gf_field(gf_field, n))
    code.params.update(base_field=base_field, placement=placement, normalize=normalize)   # for gradcodes.load_code
    return code


def _public(params: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in params.items() if not k.startswith("_")}


def _make(B: Any, s: int, fld: str, name: str, params: dict[str, Any], decoders: list[Decoder], default: str,
          builder: Callable[[Any], LinearCode]) -> CyclicMDSCode:
    return CyclicMDSCode(B, s, {k[1:]: v for k, v in params.items() if k.startswith("_")}, field=fld, name=name,
                         family="cyclic_mds", params=_public(params), decoders=decoders, default_decoder=default,
                         field_builder=builder)


def _ranges(vals: list[int]) -> str:
    """Compact text for a sorted list of ints: '0-3, 5, 7-9'."""
    if not vals:
        return "none"
    parts, start, prev = [], vals[0], vals[0]
    for v in [*vals[1:], None]:
        if v is not None and v == prev + 1:
            prev = v
            continue
        parts.append(str(start) if start == prev else f"{start}-{prev}")
        if v is not None:
            start = prev = v
    return ", ".join(parts)


def _build_gf(n: int, s: int, construction: str, m: int, normalize: str, GF: Any) -> CyclicMDSCode:
    """The same cyclic construction over GF(p), with exact decoders."""
    p = GF.characteristic
    omega = GF.primitive_element ** ((p - 1) // n)
    c = PrimeField(GF).zeros(n)
    if construction == "cyclic_fr":
        c[: s + 1] = 1
        if normalize == "sum":
            c = c / GF(s + 1)
        decoders: list[Decoder] = [ResidueClassDecoder()]
        default = "residue"
    else:
        c[0] = 1
        for t, f in enumerate(range(m, m + s)):
            r = omega ** f
            c[1:t + 2] = c[0:t + 1] - r * c[1:t + 2]
            c[0] = -r * c[0]
        if normalize == "sum":
            c = c / np.sum(c)
        decoders = [CyclicBarycentricDecoder(gf=True)]
        default = "barycentric"
    info = {"window": m, "c1": int(np.sum(c)), "omega": int(omega), "construction": construction}
    return CyclicMDSCode(_circulant(c), s, info, name=f"cyclic_mds[GF({p})]", family="cyclic_mds_gf",
                         params={"n": n, "s": s, "field": f"GF({p})"}, decoders=decoders, default_decoder=default)


def _rebuild(n: int, s: int, field: str = "complex", placement: str = "centered", normalize: str = "sum",
             **_: Any) -> CyclicMDSCode:
    return cyclic_mds(n, s, field, placement=placement, normalize=normalize)


def _rebuild_gf(n: int, s: int, field: str, base_field: str = "complex", placement: str = "centered",
                normalize: str = "sum", **_: Any) -> LinearCode:
    import galois

    p = int(field[3:-1]) if field.startswith("GF(") and field.endswith(")") else 0
    return cyclic_mds(n, s, base_field, placement=placement, normalize=normalize).in_field(galois.GF(p))


REBUILDERS.update(cyclic_mds=_rebuild, cyclic_mds_gf=_rebuild_gf)
register(Scheme("cyclic_mds", lambda n, s, field="complex": cyclic_mds(n, s, field),
                "Raviv et al. cyclic MDS (centered window): load s+1, complex or real (n-s odd or (s+1)|n)",
                tour=({"n": 12, "s": 3}, {"n": 21, "s": 4, "field": "real"}, {"n": 100, "s": 2})))
