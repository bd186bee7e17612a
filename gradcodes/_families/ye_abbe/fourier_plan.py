"""Choosing the Fourier functionals and the stride of a Ye–Abbe code (top frequencies, or spread ones)."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ..._base.errors import GradcodesValueError
from ..._core import detlinalg as _det
from ..._core.fields import RealField
from .fourier import _fourier_A, _fourier_B, _FourierPlan, _Trig


def _snap(x: float, half: bool) -> int:
    """Twice the grid frequency nearest to ``|x|`` (grid = integers, or half integers when ``half``)."""
    x = abs(x)
    return 2 * math.floor(x) + 1 if half else 2 * math.floor(x + 0.5)


def _fourier_functionals(n: int, s: int, m: int, spacing: float) -> tuple[tuple[int, str, int], ...] | None:
    """Symmetric frequency set of spacing ``spacing``; None if it does not fit the band or collides."""
    N = n - s
    half = N % 2 == 0
    fmax2 = N - 1                                                    # 2 * (N-1)/2
    pos = [(t - (m - 1) / 2) * spacing for t in range(m)]
    out: list[tuple[int, str, int]] = []
    seen: set[int] = set()
    for x in pos:
        if x < 0:
            continue
        f2 = _snap(x, half)
        if f2 in seen or f2 > fmax2:
            return None
        seen.add(f2)
        if x == 0:                                                   # the centre of an odd-sized set
            out.append((0, "dc", 0) if not half else (f2, "mix", 2 * n - 1))
        else:
            out += [(f2, "cos", 0), (f2, "sin", 0)]
    return tuple(out) if len(out) == m else None


def _fourier_top(n: int, s: int, m: int, shift: int = 1) -> tuple[tuple[int, str, int], ...]:
    """The top ``m`` real Fourier coefficients of the band (the analogue of Ye–Abbe's "top coefficients")."""
    out: list[tuple[int, str, int]] = []
    f2 = n - s - 1
    while len(out) < m:
        if f2 == 0:
            out.append((0, "dc", 0))
            break
        if m - len(out) == 1:
            out.append((f2, "mix", shift))
        else:
            out += [(f2, "cos", 0), (f2, "sin", 0)]
        f2 -= 2
    return tuple(out)


def _positions(d: int, m: int) -> tuple[int, ...]:
    return tuple(int(v) for v in np.round(np.linspace(0, d - 1, m)).astype(int))


def _b_side(plan: _FourierPlan, max_cond: float | None = 1e6) -> tuple[float, np.ndarray] | None:
    """``(max_i ||B_i||_1, B)`` for a plan in float64, or None when some ``M_j`` is (nearly) singular."""
    try:
        B = _fourier_B(plan, RealField(), max_cond=max_cond)
    except (ValueError, np.linalg.LinAlgError):
        return None
    if not np.all(np.isfinite(B)):
        return None
    return float(np.abs(B).sum(axis=1).max()), B


def _consecutive_estimate(plan: _FourierPlan, B: np.ndarray) -> float:
    """Worst float64 error estimate ``u * canc + residual`` over the n consecutive straggler sets."""
    n, s, m = plan.n, plan.s, plan.m
    bk = RealField()
    tr = _Trig(n, bk)
    K = tr.kernel(plan)
    S = np.sort((np.arange(n)[:, None] + np.arange(s)[None, :]) % n, axis=1)
    worst = 0.0
    row_l1 = np.abs(B).sum(axis=1)
    E = np.tile(np.eye(m), (1, n))
    step = max(1, 2_000_000 // max(1, n * max(s, 1)))
    for lo in range(0, n, step):
        A = _fourier_A(plan, bk, tr, K, S[lo:lo + step])
        # products with sums in index order (no BLAS): the estimate, hence the choice below, is the same everywhere
        canc = _det.matmul(np.abs(A), row_l1[:, None])[..., 0].max(axis=1) / n
        res = np.abs(_det.matmul(A.reshape(-1, n), B).reshape(A.shape[0], m, -1) - E).max(axis=(1, 2))
        worst = max(worst, float(np.max(1.1e-16 * canc + res)))
    return worst


def _stride_candidates(n: int, count: int = 24) -> list[int]:
    """Strides coprime to n spread over [1, n/2] (q and n - q give mirror-image codes)."""
    coprime = [q for q in range(1, n // 2 + 1) if math.gcd(q, n) == 1] or [1]
    if len(coprime) <= count:
        return coprime
    idx = np.unique(np.round(np.linspace(0, len(coprime) - 1, count)).astype(int))
    return [coprime[i] for i in idx]


def _fourier_plan(n: int, s: int, m: int, spacing: Any = None, stride: int | None = None) -> _FourierPlan:
    """Choose the functionals and the stride.

    ``spacing=None``: the top ``m`` frequencies (a bounded decoder for *every* straggler set, see the module notes)
    and, unless given, the stride minimising ``max_i ||B_i||_1`` (the only stride-dependent factor of the
    cancellation). ``spacing="auto"`` or a number: spread frequencies in natural order (stride 1 unless given).
    """
    d = s + m
    pos = _positions(d, m)
    if spacing is None:
        # the search costs about n (m^3 + d m) per candidate: fewer strides for very large m
        count = int(min(24, max(2, 2e8 // (n * (m**3 + d * m)))))
        strides = _stride_candidates(n, count) if stride is None else [stride]
        shifts = [1, 2, n, 2 * n - 1] if any(k == "mix" for _, k, _ in _fourier_top(n, s, m)) else [1]
        ranked: list[tuple[float, int, _FourierPlan]] = []
        for q in strides:
            for sh in shifts:
                plan = _FourierPlan(n, s, m, _fourier_top(n, s, m, sh), pos, q, top=True)
                got = _b_side(plan, max_cond=None)                 # no SVD while ranking
                if got is not None:
                    ranked.append((got[0], len(ranked), plan))
        # smallest ||B|| first; norms equal to rounding (e.g. d = n, where every stride gives the same code up to
        # a relabelling) keep the candidate order, so the choice does not hinge on the last bit
        tie = min((t[0] for t in ranked), default=0.0) * (1 + 1e-9)
        for *_, plan in sorted(ranked, key=lambda t: (t[0] > tie, t[0] if t[0] > tie else 0.0, t[1])):
            if _b_side(plan) is not None:
                return plan
        raise GradcodesValueError(
            f"no stride in {strides} gives well-conditioned Fourier functionals for n={n}, s={s}, "
            f"m={m}; try another stride")
    q = 1 if stride is None else stride
    if spacing != "auto" or m == 1:
        funcs = _fourier_functionals(n, s, m, 1.0 if spacing == "auto" else spacing)
        if funcs is None:
            raise GradcodesValueError(f"spacing={spacing} does not fit {m} distinct frequencies in the band "
                                      f"|f| <= {(n - s - 1) / 2} (n={n}, s={s})")
        return _FourierPlan(n, s, m, funcs, pos, q)
    dmax = (n - s - 1) / max(m - 1, 1) + 1
    cands = sorted(set(np.unique(np.round(np.geomspace(1, dmax, 14), 1)).tolist()) | {round(n / 7, 1)})
    found: tuple[float, _FourierPlan] | None = None
    for c in cands:
        funcs = _fourier_functionals(n, s, m, c)
        if funcs is None:
            continue
        plan = _FourierPlan(n, s, m, funcs, pos, q)
        got = _b_side(plan)
        if got is None:
            continue
        est = _consecutive_estimate(plan, got[1])
        if found is None or est < found[0]:
            found = (est, plan)
    if found is None:  # pragma: no cover - spacing 1 always fits
        raise GradcodesValueError(f"no valid Fourier functionals for n={n}, s={s}, m={m}")
    return found[1]

