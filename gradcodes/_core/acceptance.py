"""When a decode is accepted: :class:`DecodingError`, :class:`DecodeInfo` and the floating-point acceptance checks.

A floating-point decode is accepted when its predicted relative error in the messages' dtype is within the code's
tolerance for that dtype (:func:`gradcodes._core.numerics.accepts`); :func:`check_float_decode` and
:func:`check_underflow` raise :class:`DecodingError` naming the responder set and the cause otherwise.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from .._base.errors import GradcodesValueError
from .numerics import accepts, error_estimate, tolerance, unit_roundoff

if TYPE_CHECKING:
    from .code_base import CodeBase

__all__ = ["DecodingError", "NonFiniteMessageError", "DecodeInfo", "check_float_decode", "check_underflow"]

class DecodingError(GradcodesValueError):
    """A responder set from which the code cannot recover the gradient (to the tolerance).

    A :class:`ValueError` (as it always was) and a :class:`gradcodes.GradcodesError`. ``responders`` lists the
    responder set (or None) and ``residual`` the residual ``||A_F B - E||`` when one was computed.
    """

    def __init__(self, message: str, responders: np.ndarray | Sequence[int] | None = None,
                 residual: float | None = None) -> None:
        super().__init__(message)
        self.responders = None if responders is None else [int(r) for r in responders]
        self.residual = residual

    def __reduce__(self) -> tuple[Any, ...]:
        return (type(self), (self.args[0] if self.args else "", self.responders, self.residual))


class NonFiniteMessageError(DecodingError):
    """A responder's message holds NaN or infinity, so no decode from this responder set is meaningful (a
    :class:`DecodingError`; ``responders`` lists the responders whose messages are not finite).

    Examples
    --------
    >>> import numpy as np, gradcodes as gc
    >>> code = gc.uncoded(3)
    >>> Y = code.encode(np.ones((3, 4)))
    >>> Y[1, 2] = np.nan
    >>> try:
    ...     code.decode([0, 1, 2], Y)
    ... except gc.DecodingError as exc:
    ...     print(type(exc).__name__, exc.responders)
    NonFiniteMessageError [1]
    """


@dataclass(frozen=True)
class DecodeInfo:
    """What a decode reports about its own accuracy.

    Attributes
    ----------
    responders : tuple of int
        The responders used.
    decoder : str
        The decoder's name.
    residual : float
        ``||A_F B - E||_inf`` (0 for exact decoders that succeeded).
    cancellation : float
        The worst column of ``|A_F| |B|`` (summed over the ``m`` pieces; >= 1; 1 means no cancellation;
        docs/acceptance.md).
    error_estimate : float
        A bound on the relative error of the decoded sum for every gradient (relative to ``max sum_j |g_j|``):
        ``gamma_{t+2} cancellation + residual + gamma64_{t+1} (cancellation + 1)`` with ``t`` the rounded
        operations per coordinate, ``gamma`` in the unit roundoff of the messages' dtype (``gamma64`` in float64's;
        docs/acceptance.md, "The bound of one decode"), plus the underflow floor; 0 for exact arithmetic.
    exact : bool
        True when the decode ran in exact arithmetic.

    Examples
    --------
    >>> import numpy as np, gradcodes as gc
    >>> code = gc.cyclic_repetition(5, 2, rng=0)
    >>> Y = code.encode(np.arange(10.0).reshape(5, 2))        # five partial gradients of length 2
    >>> g, info = code.decode([0, 2, 4], Y[[0, 2, 4]], return_info=True)
    >>> info.responders, info.decoder, info.exact, bool(info.error_estimate < 1e-12)
    ((0, 2, 4), 'nullspace', False, True)
    """

    responders: tuple[int, ...]
    decoder: str
    residual: float
    cancellation: float
    error_estimate: float
    exact: bool


_FLOAT_KINDS = "fc"
#: Below this message length a compiled sparse product beats a loop over the non-zeros of ``B``.



def check_float_decode(code: CodeBase, F: np.ndarray, res: float, canc: float, rtol: float, dtype: Any,
                       terms: int) -> None:
    """Raise :class:`DecodingError` unless a floating-point decode meets its tolerance in ``dtype``.

    The message names the cause (overflow, not in the span, or cancellation), the float64 alternative when the
    messages are in a lower precision, and a code without cancellation.
    """
    dt = np.dtype(dtype) if np.dtype(dtype).kind in "fc" else np.dtype(np.float64)
    if accepts(canc, res, rtol, dt, terms):
        return
    tol = tolerance(rtol, dt)
    est = float(error_estimate(canc, res, dt, terms))
    what = f"to rtol={rtol:g}" if tol == rtol else f"to the {dt} tolerance {tol:.3g} (rtol={rtol:g} for float64)"
    if not np.isfinite(res) or not np.isfinite(canc) or res > 1e100:
        why = "the decoding vector overflows float64"
    elif res > tol:
        why = "the sum is not in the span of their rows (to float64 accuracy)"
    else:
        why = (f"cancellation: the decoding coefficients amplify the rounding errors of {dt} messages (unit "
               f"roundoff {unit_roundoff(dt):.2g}) by a factor {canc:.3g}")
        if unit_roundoff(dt) > unit_roundoff(np.float64):
            est64 = float(error_estimate(canc, res, np.float64, terms))
            if accepts(canc, res, rtol, np.float64, terms):
                why += f"; float64 messages decode within rtol (predicted error {est64:.2g})"
            else:
                why += f"; float64 messages would not meet rtol either (predicted error {est64:.2g})"
        s = getattr(code, "s", None)
        if isinstance(s, int) and code.n > s:
            why += (f"; a code without cancellation decodes exactly in any precision, e.g. "
                    f"gradcodes.stable_binary({code.n}, {s}) (0/1 decoding)")
    raise DecodingError(f"responders {F.tolist()} cannot recover the gradient {what}: {why} (residual "
                        f"||A_F B - E|| = {res:.3g}, cancellation {canc:.3g}, predicted error {est:.3g})", F, res)


def check_underflow(F: np.ndarray, res: float, canc: float, floor: float, amax: float, rtol: float, dtype: Any,
                    terms: int) -> None:
    """Raise :class:`DecodingError` when subnormal rounding (``floor``, see
    :func:`gradcodes._core.numerics.underflow_error`) pushes a decode past its tolerance in ``dtype``."""
    if floor <= 0:
        return
    dt = np.dtype(dtype)
    tol = tolerance(rtol, dt)
    est = float(error_estimate(canc, res, dt, terms)) + floor
    if est <= tol:
        return
    raise DecodingError(f"responders {F.tolist()}: the decoded sum is near the underflow threshold of {dt} (largest "
                        f"|g| about {amax:.3g}, smallest normal {float(np.finfo(dt).tiny):.3g}), where rounding is "
                        f"absolute: predicted relative error {est:.3g} > tolerance {tol:.3g}; rescale the gradients "
                        f"or decode float64 messages", F, res)


# shown (tracebacks, reprs, pickles) under the public names they are imported by
DecodingError.__module__ = "gradcodes"
NonFiniteMessageError.__module__ = "gradcodes"
