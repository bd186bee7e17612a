"""The verifier's default budget: a *count* of straggler patterns from a fixed cost model, never a clock.

With ``limit=None`` and ``time_budget=None`` (the defaults of :func:`gradcodes.verify`, :func:`gradcodes.verify_tree`,
the partial-straggler verifier and ``gradcodes verify``), every pattern is enumerated when there are at most
:func:`default_limit` of them: :data:`DEFAULT_SECONDS` divided by the predicted microseconds per pattern of
:func:`pattern_cost_us`. The prediction is a deterministic function of the code's parameters (``n``, ``s``,
``k``, ``m``, the non-zeros of ``B``, the field, the decoder and which enumeration path serves it), so the same
call gives the same verdict on any machine, under any load, with any number of workers: a slower or busier
machine takes longer and says the same. A wall-clock budget (the rate measured on the first batches) is used only
when the caller passes ``time_budget=`` seconds.

**The model.** Microseconds per pattern on one core, ``base + slope * work``, per path:

=================== ============================================== ======= =========
path                work                                           base    slope
=================== ============================================== ======= =========
``screen``          ``n s m`` (compiled null-space screen)         1.0     0.0005
``reference``       ``m (n k + nnz)`` (batched decode + residual)  2.5     0.00025
``lstsq``           ``m n^3`` (a dense least-squares per set)      30.0    0.002
``rational``        ``m (n k + nnz)`` (exact integer residuals)    20.0    2.2
``gf``              ``m (n k + nnz)`` (GF(p) decodes)              50.0    0.06
``tree``            ``N P`` (tree decode of a responder mask)      5.0     0.01
``tree_rational``   ``N P`` (the same, exact)                      25.0    0.05
=================== ============================================== ======= =========

complex codes cost twice their real counterpart. ``screen`` applies to float64 real codes with the null-space
decoder, ``dim K = s``, and at least ``gradcodes._verify.cost._KERNEL_MIN_SETS`` sets (the engine's own switch);
``reference`` to every other float decoder (null-space, spectral, group, Ye-Abbe, row-space, chunks) except least
squares. **Measured** once with ``python benchmarks/verify/verify_cost_model.py`` (one worker, ``search=False``, every
set enumerated, the median of 3 runs per code) on the project's 2-core x86-64 machine (Python 3.11, numpy 2.4
with OpenBLAS, numba); the script prints measured against predicted microseconds per set for a panel of codes of each
path, and the constants above were rounded from its output (``benchmarks/verify/results/verify_cost_model.txt``), so
the default reaches about :data:`DEFAULT_SECONDS` seconds of one core of that machine: ``C(45, 3) = 14,190``
sets of ``cyclic_repetition(45, 3)`` (about 0.05 s) are enumerated, ``C(60, 6)`` (5e7) are not.

**The search** (:func:`gradcodes._verify.search.restart_search`, when the sets are sampled) is bounded the same
way by default: :func:`search_moves` moves, each predicted at ``(n - s) (3 + 0.0025 (s^3 / 3 + s^2))``
microseconds (``n - s`` batched ``s x s`` solves; measured by the same script), for :data:`SEARCH_SECONDS` s;
``search_seconds=`` makes it a wall-clock budget instead.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

__all__ = ["DEFAULT_SECONDS", "COSTS", "SEARCH_SECONDS", "pattern_cost_us", "default_limit", "flat_path",
           "flat_cost_us", "flat_default_limit", "limit_note", "search_moves"]

#: below this many sets the screening kernel is not worth its set-up (and numba's first-use compilation); the
#: verifier's switch (:mod:`gradcodes._verify.verifier`) reads it here, so the cost model and the engine agree
_KERNEL_MIN_SETS = 50_000

#: seconds of one core of the calibration machine that the default budget stands for
DEFAULT_SECONDS = 10.0

#: seconds of one core of the calibration machine that the default restart search stands for
SEARCH_SECONDS = 1.0
#: ``(base, slope)`` in microseconds per solve of one search move (module docstring)
SEARCH_COST = (3.0, 0.0025)

#: ``path: (base, slope)`` of :func:`pattern_cost_us` in microseconds (module docstring: how they were measured)
COSTS: dict[str, tuple[float, float]] = {
    "screen": (1.0, 0.0005),
    "reference": (2.5, 0.00025),
    "lstsq": (30.0, 0.002),
    "rational": (20.0, 2.2),
    "gf": (50.0, 0.06),
    "tree": (5.0, 0.01),
    "tree_rational": (25.0, 0.05),
}


def pattern_cost_us(path: str, *, n: int, s: int, k: int, m: int = 1, nnz: int | None = None,
                    complex_: bool = False) -> float:
    """Predicted microseconds per pattern of the enumeration path ``path`` (module docstring).

    ``nnz`` defaults to ``n k`` (a dense ``B``); for a tree, ``n`` is its number of workers ``N`` and ``k`` its
    number of partitions ``P``.

    >>> pattern_cost_us("reference", n=45, s=3, k=45, nnz=180)
    3.05125
    """
    base, slope = COSTS[path]
    nz = n * k if nnz is None else nnz
    if path == "screen":
        work = n * s * m
    elif path == "lstsq":
        work = m * n ** 3
    elif path in ("tree", "tree_rational"):
        work = n * k
    else:
        work = m * (n * k + nz)
    return (base + slope * work) * (2.0 if complex_ else 1.0)


def default_limit(cost_us: float, seconds: float = DEFAULT_SECONDS) -> int:
    """The default budget in patterns: ``floor(seconds * 1e6 / cost_us)`` (at least 1).

    >>> default_limit(3.05125)
    3277345
    """
    return max(1, int(seconds * 1e6 // max(cost_us, 1e-9)))


def flat_path(code: Any, dec: Any, total: int) -> str:
    """The enumeration path (a key of :data:`COSTS`) that serves ``code`` with decoder ``dec`` when its ``total``
    straggler sets are enumerated: decided from the code and the decoder, as the engine decides."""
    from .._core.decoders import LeastSquaresDecoder
    from .fast import NullSpaceScreen

    field = str(code.field)
    if field == "rational":
        return "rational"
    if field.startswith("GF("):
        return "gf"
    if isinstance(dec, LeastSquaresDecoder):
        return "lstsq"
    if total >= _KERNEL_MIN_SETS and NullSpaceScreen.applies(code, dec):
        return "screen"
    return "reference"


def flat_cost_us(code: Any, dec: Any) -> float:
    """Predicted microseconds per straggler set of a flat code's enumeration under decoder ``dec``
    (:func:`pattern_cost_us` on the path of :func:`flat_path`)."""
    total = math.comb(code.n, code.s)
    nnz = int(np.count_nonzero(code.support_matrix))
    return pattern_cost_us(flat_path(code, dec, total), n=code.n, s=code.s, k=code.k, m=code.m, nnz=nnz,
                           complex_=code.field == "complex")


def flat_default_limit(code: Any, dec: Any, seconds: float = DEFAULT_SECONDS) -> int:
    """:func:`default_limit` of a flat code's ``C(n, s)`` straggler sets under decoder ``dec`` (``seconds``: of
    one core of the calibration machine)."""
    return default_limit(flat_cost_us(code, dec), seconds)


def limit_note(total: int, noun: str, budget: int) -> str:
    """The report's note when the default budget does not cover the enumeration."""
    from .._base.output import count_text

    hint = str(total) if total < 10**30 else count_text(total)
    return (f"not exhaustive: {count_text(total)} {noun} exceed the default budget of {budget:,} (a fixed cost model, "
            f"about {DEFAULT_SECONDS:g} s of one core, the same on every machine); pass "
            f"limit={hint} for a full check, or time_budget= seconds for a wall-clock budget")


def search_moves(n: int, s: int, seconds: float = SEARCH_SECONDS) -> int:
    """Moves of the default restart search: ``seconds`` over the predicted cost of one move (module docstring).

    >>> search_moves(40, 5)
    9022
    """
    base, slope = SEARCH_COST
    per_move = max(n - s, 1) * (base + slope * (s ** 3 / 3 + s * s))
    return max(1, int(seconds * 1e6 // per_move))
