"""The scheme registry: every family registers its constructor once; the CLI and the tour iterate over it."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

__all__ = ["Scheme", "register", "schemes", "get_scheme"]


@dataclass(frozen=True)
class Scheme:
    """A named code construction.

    Attributes
    ----------
    name : str
        The name used on the command line (``gradcodes build NAME ...``).
    build : callable
        ``build(**kwargs) -> code``; the CLI passes the options its signature accepts (n, s, m, k, seed, ...).
    summary : str
        One line for ``gradcodes --help`` and the tour.
    tour : sequence of mappings
        Representative parameter sets shown by ``gradcodes tour``.
    evaluate : callable, optional
        ``evaluate(code) -> report`` with a ``tour_row()`` method; defaults to :func:`gradcodes.verify`.
    kind : str
        ``"exact"``, ``"tree"``, ``"adversarial"`` (approximate, judged by the worst set of ``s`` stragglers) or
        ``"approximate"`` (judged by expected error and bias under random stragglers).
    """

    name: str
    build: Callable[..., Any]
    summary: str
    tour: Sequence[Mapping[str, Any]] = field(default_factory=tuple)
    evaluate: Callable[[Any], Any] | None = None
    kind: str = "exact"


_SCHEMES: dict[str, Scheme] = {}


def register(scheme: Scheme) -> Scheme:
    """Add a scheme to the registry (a later registration of the same name replaces the earlier one)."""
    if not isinstance(scheme, Scheme):
        raise TypeError(f"register() takes a Scheme, got {type(scheme).__name__}")
    _SCHEMES[scheme.name] = scheme
    return scheme


def schemes() -> dict[str, Scheme]:
    """All registered schemes, by name, in registration order.

    >>> import gradcodes as gc
    >>> "cyclic_repetition" in gc.schemes()
    True
    """
    return dict(_SCHEMES)


def get_scheme(name: str) -> Scheme:
    """The scheme called ``name``, or a ValueError listing the valid names."""
    if name not in _SCHEMES:
        raise ValueError(f"unknown scheme {name!r}; valid schemes: {', '.join(sorted(_SCHEMES))}")
    return _SCHEMES[name]
