r"""The error of approximate gradient codes, shared by every :class:`~gradcodes.ApproximateCode` family: the error
``||A_F B - E||_2`` of one responder set (:func:`approximation_error`), the worst over the sets of ``n - s``
responders (:func:`worst_case_error`, exhaustive or sampled plus local search, with the code's own bound when it has
one), and the two decoders of approximate codes: *optimal* (least squares on the responders, minimum norm; exact
for rational codes) and *fixed* (``u_F = (n/|F|) 1_F``, no solve). Raviv, Tamo, Tandon & Dimakis (2018) define
both decoders for expander codes; Glasgow & Wootters (2021) study the optimal one.
"""

from __future__ import annotations

import itertools
import math
import time
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

import numpy as np

from .._base.aliases import Responders, RNGLike, Unset
from .._base.errors import GradcodesTypeError, GradcodesValueError
from .._base.validate import SEED_UNSET, check_int, check_rng, check_size
from .._core.code import LinearCode
from .._core.decoders import Decoder, min_norm_solve
from .._core.fields import RationalField, solve_left
from .search import swap_neighbours
from .verifier import random_straggler_sets

__all__ = ["OptimalDecoder", "FixedDecoder", "approximation_error", "worst_case_error", "ApproximationReport"]


class OptimalDecoder(Decoder):
    """Optimal decoding ``argmin_{supp u ⊆ F} ||u B - E||_2``: minimum-norm least squares (exact for rational codes).

    Float codes: batched SVD with the right-hand side projected first (``gelsd``-like). Rational codes: the normal
    equations ``u_F (B_F B_F^T) = E B_F^T`` solved exactly (one solution when ``B_F`` has dependent rows; the error
    ``||u B - E||`` is the same for every least-squares solution).
    """

    name = "optimal"
    description = "least squares on the responders (minimum norm)"

    def matrices(self, code: LinearCode, mask: np.ndarray) -> Any:
        b, n = mask.shape
        if code.exact:
            out = RationalField().zeros((b, code.m, n))
            for i in range(b):
                F = np.flatnonzero(mask[i])
                if F.size == 0:
                    continue
                BF = code.B[F]
                X = solve_left(BF @ BF.T, code.target @ BF.T)
                if X is not None:
                    out[i][:, F] = X
            return out
        B = code.B
        E = code.target
        out = np.zeros((b, code.m, n), dtype=np.result_type(B.dtype, np.float64))
        step = max(1, min(256, (1 << 22) // B.size))            # (step, k m, n) work array: <= 32 MB
        for lo in range(0, b, step):
            mk = mask[lo:lo + step]
            Bt = B.T[None, :, :] * mk[:, None, :]
            X = min_norm_solve(Bt, np.broadcast_to(E.T.astype(Bt.dtype), (mk.shape[0], *E.T.shape)))
            out[lo:lo + mk.shape[0]] = np.swapaxes(X, 1, 2) * mk[:, None, :]
        return out


class FixedDecoder(Decoder):
    """Fixed decoding ``u_F = (n / |F|) 1_F`` (no solve; unbiased for uniformly random stragglers)."""

    name = "fixed"
    description = "u_F = (n/|F|) 1_F"

    def matrices(self, code: LinearCode, mask: np.ndarray) -> Any:
        b, n = mask.shape
        cnt = mask.sum(axis=1)
        if code.m != 1:
            raise GradcodesValueError("the fixed decoder is defined for m = 1")
        if code.exact:
            out = RationalField().zeros((b, 1, n))
            for i in range(b):
                if cnt[i]:
                    out[i, 0, mask[i]] = Fraction(n, int(cnt[i]))
            return out
        w = np.where(cnt > 0, n / np.maximum(cnt, 1), 0.0)
        return (mask * w[:, None]).astype(np.float64)[:, None, :]


def _errors(code: LinearCode, mask: np.ndarray, dec: Decoder) -> np.ndarray:
    """``||A_F B - E||`` (2-norm, Frobenius for m > 1) for a batch of responder masks."""
    A = dec.matrices(code, mask)
    if code.exact:
        out = np.empty(mask.shape[0])
        for i in range(mask.shape[0]):
            R = A[i] @ code.B - code.target
            out[i] = math.sqrt(float(sum(v * v for v in R.flat)))
        return out
    b = mask.shape[0]
    R = (A.reshape(b * code.m, code.n) @ code.B).reshape(b, code.m, -1) - code.target
    return np.sqrt((np.abs(R) ** 2).sum(axis=(1, 2)))


def approximation_error(code: LinearCode, responders: Responders, decoder: str | Decoder | None = None) -> float:
    """``||A_F B - E||_2`` for one responder set: the error of the decoded sum per unit of ``||G||_2``.

    Works for any code (approximate or exact; an exact code gives its residual in the 2-norm).

    Parameters
    ----------
    code : LinearCode
        Usually an :class:`~gradcodes.ApproximateCode`.
    responders : iterable of int or bool mask
        The workers whose messages arrived.
    decoder : str or Decoder, optional
        Default: the code's default decoder.

    Examples
    --------
    >>> import numpy as np, gradcodes as gc
    >>> gc.approximation_error(gc.ApproximateCode(np.eye(4)), [0, 1, 2], decoder="lstsq")
    1.0
    """
    if not isinstance(code, LinearCode):
        raise GradcodesTypeError(f"code must be a gradcodes code, got {type(code).__name__}")
    F, mask = code._mask(responders)
    return float(_errors(code, mask[None], code._decoder(decoder))[0])


@dataclass
class ApproximationReport:
    """Worst and average error of an approximate code over responder sets with ``s`` stragglers.

    Attributes
    ----------
    worst_error : float
        Largest ``||A_F B - E||_2`` found (over all sets when ``exhaustive``); ``worst_responders`` is that set.
    average_error : float
        Mean error over the checked sets (the exact mean over all ``C(n, s)`` sets when ``exhaustive``, else over
        uniformly random sets, with standard error ``average_stderr``).
    bound : float or None
        The code's own worst-case bound when it provides one (``code.spectral_bound(s)``).
    """

    name: str
    n: int
    s: int
    decoder: str
    exhaustive: bool
    patterns_checked: int
    patterns_total: int
    worst_error: float
    worst_responders: tuple[int, ...]
    average_error: float
    average_stderr: float
    bound: float | None
    load: int
    seconds: float
    strategies: dict[str, int] = field(default_factory=dict)

    def __str__(self) -> str:
        scope = "all" if self.exhaustive else "searched"
        lines = [f"{self.name} (n={self.n}, s={self.s}, load={self.load}, decoder={self.decoder})",
                 f"  worst error   {self.worst_error:.4g} over {scope} {self.patterns_checked:,} of "
                 f"{self.patterns_total:,} straggler sets",
                 f"  average error {self.average_error:.4g}" + ("" if self.exhaustive else
                                                              f" ± {self.average_stderr:.2g} (random sets)")]
        if self.bound is not None:
            holds = self.worst_error <= self.bound * (1 + 1e-9)
            lines.append(f"  bound         {self.bound:.4g} ({'holds' if holds else 'VIOLATED'})")
        lines.append(f"  time          {self.seconds:.2f} s")
        return "\n".join(lines)

    def tour_row(self) -> dict[str, Any]:
        """The columns of ``gradcodes tour``."""
        return {"scheme": self.name, "n": self.n, "s": self.s, "m": 1, "load / bound": f"{self.load} / -",
                "sets checked": f"{self.patterns_checked:,}", "exhaustive": "yes" if self.exhaustive else "no",
                "result": f"approx: worst {self.worst_error:.2g}, mean {self.average_error:.2g}"
                          + ("" if self.bound is None else f", bound {self.bound:.2g}"),
                "worst residual": f"{self.worst_error:.1e}", "seconds": f"{self.seconds:.2f}"}


def worst_case_error(code: LinearCode, s: int | None = None, *, decoder: str | Decoder | None = None,
                           limit: int = 20_000, samples: int = 1000, search: bool = True, rng: RNGLike = None,
                           batch_size: int = 256, search_steps: int = 10, neighbours: int = 64,
                           seed: RNGLike | Unset = SEED_UNSET) -> ApproximationReport:
    """Worst-case and average error of a code over the responder sets with exactly ``s`` stragglers.

    Exhaustive (exact worst case and exact average) when ``C(n, s) <= limit``; otherwise ``samples`` uniformly
    random sets (the average, with its standard error) plus a greedy local search for the worst set (swap one
    straggler for one responder while the error grows), so the worst case is then a lower bound on the true one.
    Works for any :class:`~gradcodes.ApproximateCode` (and for exact codes, where it measures residuals).

    Parameters
    ----------
    code : LinearCode
    s : int, optional
        Number of stragglers, ``0 <= s <= n - 1`` (default: the code's ``s``).
    decoder : str or Decoder, optional
        Default: the code's default decoder.
    limit, samples, search, rng, batch_size
        Exhaustive threshold, random sets, local search on/off, random state (None, an int, a SeedSequence or a
        Generator; ``seed=`` is a deprecated alias), sets per batch.
    search_steps, neighbours
        Local search budget: at most ``search_steps`` moves, each trying ``neighbours`` random swaps.

    Returns
    -------
    ApproximationReport
        ``worst_error`` (exact when ``exhaustive``, else a lower bound found by sampling and search),
        ``average_error`` (with ``average_stderr`` when sampled), the worst set and the sets checked.

    Raises
    ------
    GradcodesTypeError
        ``code`` is not a gradcodes code.
    GradcodesValueError
        ``s`` outside ``[0, n - 1]``, or another argument outside its valid range (named in the message).

    Examples
    --------
    >>> import gradcodes as gc
    >>> r = gc.worst_case_error(gc.expander_code(12, 3, s=3, rng=0))       # C(12, 3) = 220 sets: all of them
    >>> r.exhaustive, r.patterns_checked, round(float(r.worst_error), 3)
    (True, 220, 1.134)
    >>> big = gc.worst_case_error(gc.expander_code(40, 4, s=10, rng=0), limit=1000, samples=200, rng=1)
    >>> big.exhaustive, big.patterns_total                 # sampled and searched: worst_error is a lower bound
    (False, 847660528)
    """
    if not isinstance(code, LinearCode):
        raise GradcodesTypeError(f"code must be a gradcodes code, got {type(code).__name__}")
    n = code.n
    if s is None:
        s = getattr(code, "s", None)
        if s is None:
            raise GradcodesValueError("s (the number of stragglers) is required: the code does not declare one")
    s = check_int("s", s, 0, n - 1)
    limit = check_int("limit", limit, 0)
    samples = check_int("samples", samples, 1)
    batch_size = check_int("batch_size", batch_size, 1)
    search_steps = check_int("search_steps", search_steps, 0)
    neighbours = check_int("neighbours", neighbours, 1)
    rng = check_rng(rng, seed)
    dec = code._decoder(decoder)
    total = math.comb(n, s)
    check_size("the straggler sets checked (min(limit, C(n, s)) + samples + search_steps * neighbours) times n",
               (min(limit, total) + samples + search_steps * neighbours) * n, "work")
    start = time.perf_counter()
    strategies: dict[str, int] = {}

    def run(S: np.ndarray) -> np.ndarray:
        mask = np.ones((S.shape[0], n), dtype=bool)
        if s:
            np.put_along_axis(mask, S, False, axis=1)
        return _errors(code, mask, dec)

    worst, worst_S = -1.0, np.zeros(s, dtype=np.int64)
    if total <= limit:
        combos = itertools.combinations(range(n), s)
        tot, count = 0.0, 0
        while True:
            chunk = list(itertools.islice(combos, batch_size))
            if not chunk:
                break
            S = np.array(chunk, dtype=np.int64).reshape(len(chunk), s)
            e = run(S)
            i = int(np.argmax(e))
            if e[i] > worst:
                worst, worst_S = float(e[i]), S[i]
            tot += float(e.sum())
            count += len(chunk)
        strategies["exhaustive"] = count
        avg, stderr, exhaustive = tot / count, 0.0, True
    else:
        S = random_straggler_sets(n, s, samples, rng)
        e = np.concatenate([run(S[lo:lo + batch_size]) for lo in range(0, samples, batch_size)])
        strategies["random"] = samples
        avg, stderr = float(e.mean()), float(e.std(ddof=1) / math.sqrt(samples)) if samples > 1 else 0.0
        i = int(np.argmax(e))
        worst, worst_S = float(e[i]), S[i]
        count = samples
        if search and s:
            cur, cur_e = worst_S.copy(), worst
            evaluated = 0
            for _ in range(search_steps):
                cand = swap_neighbours(cur, n, rng, neighbours)
                ce = np.concatenate([run(cand[lo:lo + batch_size]) for lo in range(0, len(cand), batch_size)])
                evaluated += len(cand)
                j = int(np.argmax(ce))
                if not ce[j] > cur_e:
                    break
                cur, cur_e = cand[j], float(ce[j])
            strategies["search"] = evaluated
            count += evaluated
            if cur_e > worst:
                worst, worst_S = cur_e, cur
        exhaustive = False
    bound_fn = getattr(code, "spectral_bound", None)
    bound = float(bound_fn(s)) if callable(bound_fn) else None
    responders = tuple(int(i) for i in np.setdiff1d(np.arange(n), worst_S))
    return ApproximationReport(name=code.name, n=n, s=s, decoder=dec.name, exhaustive=exhaustive,
                               patterns_checked=count, patterns_total=total, worst_error=worst,
                               worst_responders=responders, average_error=avg, average_stderr=stderr, bound=bound,
                               load=code.load, seconds=time.perf_counter() - start, strategies=strategies)
