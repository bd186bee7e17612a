"""Certified seeds of :func:`gradcodes.grouped_random`, found once by ``python benchmarks/certify_seeds.py``.

Key ``(n_g, s, extra)``: a group of ``n_g`` workers coded by ``cyclic_repetition(n_g, s + extra, seed=seed)`` and
decoded by :class:`~gradcodes._families.grouped_random.RowSpaceDecoder` against ``s`` stragglers. Each entry's
``error_estimate`` is the worst predicted float64 error ``u canc + residual`` over all ``C(n_g, s)`` straggler sets,
found by an exhaustive :func:`gradcodes.verify` (``sets`` of them, ``seconds`` on the machine that ran it);
``candidates`` lists the worst error of every seed tried. Re-check every entry with
``python benchmarks/certify_seeds.py --check`` (exhaustive again; the small ones are re-checked by the tests).
"""

from __future__ import annotations

from typing import Any

CERTIFIED: dict[tuple[int, int, int], dict[str, Any]] = {
    # one candidate (seed 0), exhaustive: 13,884,156 sets in 1925.5 s at load average 14 (shared 2 cores)
    (33, 25, 1): {"seed": 0, "error_estimate": 1.3126919804539157e-11, "worst_residual": 1.1738165994756855e-11,
                  "worst_cancellation": 12508.782280489864, "proven": True, "sets": 13884156, "total": 13884156,
                  "seconds": 1925.5, "candidates": {"0": 1.3126919804539157e-11}},
}
