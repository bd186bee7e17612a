"""The scheme registry: every family registers its constructor once; the CLI and the tour iterate over it."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from .errors import GradcodesTypeError, GradcodesValueError

__all__ = ["Expect", "Scheme", "register", "schemes", "get_scheme", "DEFAULT_EXPECT", "SAMPLED"]


@dataclass(frozen=True)
class Expect:
    """The outcomes a tour row may have, and why.

    ``gradcodes tour`` exits 0 when every row's result is one of its expected ``results`` and 1 otherwise. A
    *demonstration* row is expected to show a failure or a limitation (for example a code that loses digits); the
    table marks it and prints the ``reason``.

    Attributes
    ----------
    results : frozenset of str
        The acceptable results: verdicts of :func:`gradcodes.verify` or :func:`gradcodes.verify_tree` (``"ok"``,
        ``"exact"``, ``"unproven"``, ``"FAILS"``, ``"inaccurate"``, ...), ``"unbiased"`` / ``"BIASED"`` for
        approximate codes judged under random stragglers, ``"proven"`` / ``"bounded"`` / ``"lower bound only"`` /
        ``"bound violated"`` for approximate codes judged by their worst straggler set
        (``ApproximationReport.result``).
    reason : str
        Why these results are expected (shown for demonstration rows and for unexpected results).
    demonstration : bool
        The row demonstrates a failure or a limitation on purpose.

    Examples
    --------
    >>> from gradcodes._base.registry import Expect
    >>> e = Expect(frozenset({"ok", "unproven"}), "sampled when the enumeration exceeds the time budget")
    >>> "unproven" in e.results, e.demonstration
    (True, False)
    """

    results: frozenset[str]
    reason: str = ""
    demonstration: bool = False

    def __post_init__(self) -> None:
        if isinstance(self.results, str) or not self.results:
            raise GradcodesValueError(f"results must be a non-empty set of result strings, got {self.results!r}")
        object.__setattr__(self, "results", frozenset(self.results))


#: The expected results of a row by the scheme's kind, when its registration gives none.
DEFAULT_EXPECT: dict[str, Expect] = {
    "exact": Expect(frozenset({"ok", "exact"}), "a proven exact code"),
    "tree": Expect(frozenset({"ok", "exact"}), "a proven tree code"),
    "partial": Expect(frozenset({"ok", "exact"}), "a per-chunk protocol proven over every chunk-arrival pattern"),
    "adversarial": Expect(frozenset({"proven", "bounded", "lower bound only"}),
                          "worst error proven, or a lower bound found by search under a certified upper bound"),
    "approximate": Expect(frozenset({"unbiased"}), "an unbiased approximate code"),
}
#: A row too large to enumerate within the verifier's time budget on every machine: proven or sampled.
SAMPLED = Expect(frozenset({"ok", "exact", "unproven", "unproven (borderline)"}),
                 "proven when every set fits the verifier's time budget, otherwise sampled (unproven, not a proof)")


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
        ``"exact"``, ``"tree"``, ``"partial"`` (several messages per worker: its rows are messages, so a set of
        ``n - s`` rows is not the recovery condition), ``"adversarial"`` (approximate, judged by the worst set of
        ``s`` stragglers) or ``"approximate"`` (judged by expected error and bias under random stragglers).
    expect : sequence of Expect or None
        The expected outcome of each tour row, in the order of ``tour`` (empty, or one entry per row; ``None``
        takes the kind's default from ``DEFAULT_EXPECT``).

    Examples
    --------
    >>> import gradcodes as gc
    >>> scheme = gc.schemes()["fractional_repetition"]
    >>> scheme.kind, scheme.build(n=6, s=2).load
    ('exact', 3)
    """

    name: str
    build: Callable[..., Any]
    summary: str
    tour: Sequence[Mapping[str, Any]] = field(default_factory=tuple)
    evaluate: Callable[[Any], Any] | None = None
    kind: str = "exact"
    expect: Sequence[Expect | None] = field(default_factory=tuple)

    def expected(self, index: int) -> Expect:
        """The expected outcome of tour row ``index``.

        Parameters
        ----------
        index : int
            A row of ``tour``.

        Returns
        -------
        Expect
            The given expectation, or the default of the scheme's kind.

        Examples
        --------
        >>> import gradcodes as gc
        >>> sorted(gc.schemes()["uncoded"].expected(0).results)
        ['exact', 'ok']
        """
        given = self.expect[index] if index < len(self.expect) else None
        return given if given is not None else DEFAULT_EXPECT.get(self.kind, DEFAULT_EXPECT["exact"])


_SCHEMES: dict[str, Scheme] = {}


def register(scheme: Scheme) -> Scheme:
    """Add a scheme to the registry (a later registration of the same name replaces the earlier one).

    Registered schemes are built by ``gradcodes build NAME``, listed by ``gradcodes tour`` and drawn by
    :func:`gradcodes.testing.codes`.

    Parameters
    ----------
    scheme : Scheme
        The construction, its summary and its tour parameters.

    Returns
    -------
    Scheme
        ``scheme`` itself (so ``register`` can wrap a definition).

    Raises
    ------
    GradcodesTypeError
        If ``scheme`` is not a :class:`Scheme`.
    GradcodesValueError
        If ``scheme.expect`` is given and has not one entry per tour row.

    Examples
    --------
    >>> import gradcodes as gc
    >>> doubled = gc.Scheme("uncoded_k2", lambda n: gc.uncoded(n, 2 * n), "two partitions per worker",
    ...                     tour=({"n": 4},))
    >>> doubled.build(n=4).k
    8
    >>> uncoded = gc.schemes()["uncoded"]
    >>> gc.register(uncoded) is uncoded        # registering again replaces it by itself
    True
    """
    if not isinstance(scheme, Scheme):
        raise GradcodesTypeError(f"register() takes a Scheme, got {type(scheme).__name__}")
    if scheme.expect and len(scheme.expect) != len(scheme.tour):
        raise GradcodesValueError(
            f"scheme {scheme.name!r}: expect must have one entry per tour row ({len(scheme.tour)}), "
            f"got {len(scheme.expect)}")
    _SCHEMES[scheme.name] = scheme
    return scheme


def schemes() -> dict[str, Scheme]:
    """All registered schemes, by name, in registration order.

    Returns
    -------
    dict of str to Scheme
        A copy: changing it does not change the registry (use :func:`register`).

    Examples
    --------
    >>> import gradcodes as gc
    >>> "cyclic_repetition" in gc.schemes()
    True
    """
    return dict(_SCHEMES)


def get_scheme(name: str) -> Scheme:
    """The scheme called ``name``, or a ValueError listing the valid names."""
    if name not in _SCHEMES:
        raise GradcodesValueError(f"unknown scheme {name!r}; valid schemes: {', '.join(sorted(_SCHEMES))}")
    return _SCHEMES[name]
