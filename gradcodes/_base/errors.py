"""The exception hierarchy: every error gradcodes raises derives from :class:`GradcodesError`.

Each concrete error also keeps the builtin base that callers caught before the common base existed, so both
``except gradcodes.GradcodesError`` and ``except ValueError`` (or ``TypeError``, ``RuntimeError``) work::

    GradcodesError (Exception)
    +-- GradcodesValueError (ValueError)      bad argument values (a parameter outside its valid range)
    |   +-- DecodingError                     a responder set the code cannot decode (to the tolerance)
    |   |   +-- NonFiniteMessageError         a responder's message holds NaN or infinity
    |   +-- CodeFileError                     a code file that cannot be read safely
    |   +-- SizeLimitError                    a size beyond a bound of gradcodes.limits
    +-- GradcodesTypeError (TypeError)        bad argument types
    +-- GradcodesRuntimeError (RuntimeError)  a broken internal contract (a user decoder's output, a failed draw)
    +-- StragglerTimeout (RuntimeError)       gradcodes.mpi: too few responders within the timeout

This module imports nothing, so that every other module (and ``gradcodes.mpi``) can import it first.
"""

from __future__ import annotations

__all__ = ["GradcodesError", "GradcodesValueError", "GradcodesTypeError", "GradcodesRuntimeError"]


class GradcodesError(Exception):
    """Base class of every exception raised by gradcodes.

    Catch it to handle any library error at once; every subclass also derives from the builtin exception that
    describes it (:class:`ValueError`, :class:`TypeError` or :class:`RuntimeError`).

    Examples
    --------
    >>> import gradcodes as gc
    >>> try:
    ...     gc.cyclic_repetition(4, 4)
    ... except gc.GradcodesError as exc:
    ...     print(type(exc).__name__, isinstance(exc, ValueError))
    GradcodesValueError True
    """


class GradcodesValueError(GradcodesError, ValueError):
    """An argument with a valid type but an invalid value (the message names the parameter and its range).

    Examples
    --------
    >>> import gradcodes as gc
    >>> issubclass(gc.GradcodesValueError, ValueError) and issubclass(gc.GradcodesValueError, gc.GradcodesError)
    True
    """


class GradcodesTypeError(GradcodesError, TypeError):
    """An argument of the wrong type (the message names the parameter and the types it accepts).

    Examples
    --------
    >>> import gradcodes as gc
    >>> issubclass(gc.GradcodesTypeError, TypeError) and issubclass(gc.GradcodesTypeError, gc.GradcodesError)
    True
    """


class GradcodesRuntimeError(GradcodesError, RuntimeError):
    """A failure that is not the caller's argument: a user-supplied decoder breaking its contract, or a random
    draw that did not succeed within its tries.

    Examples
    --------
    >>> import gradcodes as gc
    >>> issubclass(gc.GradcodesRuntimeError, RuntimeError)
    True
    """


# shown (tracebacks, reprs, pickles) under the public names they are imported by
GradcodesError.__module__ = "gradcodes"
GradcodesValueError.__module__ = "gradcodes"
GradcodesTypeError.__module__ = "gradcodes"
GradcodesRuntimeError.__module__ = "gradcodes"
