"""Hypothesis strategies and assertion helpers for testing gradient codes in your own CI.

In the manner of ``hypothesis.extra.numpy``: strategies that draw straggler and responder sets (including the
adversarial ones: cyclic windows of consecutive stragglers and the sets the verifier reports as worst), valid
parameters and codes of every registered family, and partial gradients of a chosen dtype; and assertions that
fail with the responder set and the residual. This module imports hypothesis (``pip install 'gradcodes[testing]'``);
``import gradcodes`` does not import it.

Examples
--------
>>> import gradcodes as gc
>>> from gradcodes.testing import assert_recovers
>>> assert_recovers(gc.fractional_repetition(6, 1), [0, 2, 3, 4, 5])   # worker 1 straggles
"""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from .._base.aliases import MatrixLike, ProbabilitiesLike, Responders
from .._base.arrays import is_foreign, to_numpy
from .._base.errors import GradcodesValueError
from .._base.registry import schemes
from .._core.code import LinearCode

__all__ = ["straggler_sets", "responder_sets", "windows", "verifier_flagged", "scheme_parameters", "codes",
           "partial_gradients", "assert_recovers", "assert_unbiased"]


def _check(n: int, s: int) -> None:
    if not (isinstance(n, int) and n >= 1):
        raise GradcodesValueError(f"n must be an integer >= 1, got {n!r}")
    if not (isinstance(s, int) and 0 <= s < n):
        raise GradcodesValueError(f"s must be an integer in [0, n - 1] = [0, {n - 1}], got {s!r}")


def windows(n: int, s: int) -> st.SearchStrategy[tuple[int, ...]]:
    """Straggler sets ``{t, t+1, ..., t+s-1} mod n``: the consecutive windows that break cyclic codes first.

    Parameters
    ----------
    n : int
        Number of workers, ``n >= 1``.
    s : int
        Stragglers per set, ``0 <= s <= n - 1``.

    Returns
    -------
    hypothesis.strategies.SearchStrategy of tuple of int
        Sorted tuples of ``s`` cyclically consecutive workers.

    Raises
    ------
    GradcodesValueError
        If ``n`` is not an integer ``>= 1`` or ``s`` not an integer in ``[0, n - 1]``.

    Examples
    --------
    >>> from hypothesis import given, settings
    >>> from gradcodes.testing import windows
    >>> @settings(max_examples=20, derandomize=True, deadline=None)
    ... @given(windows(6, 3))
    ... def test_window(S):
    ...     assert len(S) == 3 and (S[-1] - S[0]) % 6 in (2, 4, 5)     # 3 consecutive workers mod 6
    >>> test_window()
    """
    _check(n, s)
    return st.integers(0, n - 1).map(lambda t: tuple(sorted((t + i) % n for i in range(s))))


def verifier_flagged(code: LinearCode) -> list[tuple[int, ...]]:
    """The straggler sets :func:`gradcodes.verify` reports: the worst residual, the worst cancellation, failures.

    Parameters
    ----------
    code : LinearCode
        The code to verify (an exhaustive verification runs, so keep it small).

    Returns
    -------
    list of tuple of int
        The distinct straggler sets (sorted tuples) of the verifier's worst and failing responder sets.

    Examples
    --------
    >>> import gradcodes as gc
    >>> from gradcodes.testing import verifier_flagged
    >>> verifier_flagged(gc.fractional_repetition(6, 2))
    [(0, 1)]
    """
    from .._verify.verifier import verify

    rep = verify(code, stop_on_failure=False)
    every = set(range(code.n))
    flagged = [rep.worst_responders, rep.worst_cancellation_responders, *rep.failures]
    return sorted({tuple(sorted(every - set(r))) for r in flagged if r is not None})


def straggler_sets(n: int, s: int, *, min_size: int | None = None, code: LinearCode | None = None,
                   adversarial: bool = True) -> st.SearchStrategy[tuple[int, ...]]:
    """Sorted tuples of distinct straggling workers, of size ``min_size..s`` (default exactly ``s``).

    With ``adversarial=True`` (default) the draws mix uniform sets with cyclic windows (:func:`windows`) and, when
    ``code`` is given, the sets the verifier flags as worst (:func:`verifier_flagged`).

    Parameters
    ----------
    n : int
        Number of workers, ``n >= 1``.
    s : int
        Largest number of stragglers, ``0 <= s <= n - 1``.
    min_size : int, optional
        Smallest number of stragglers, ``0 <= min_size <= s`` (default ``s``).
    code : LinearCode, optional
        With ``adversarial=True``, also draw the sets :func:`verifier_flagged` reports for this code.
    adversarial : bool, default True
        Mix in cyclic windows (and the flagged sets); ``False``: uniform sets only.

    Returns
    -------
    hypothesis.strategies.SearchStrategy of tuple of int
        Sorted tuples of distinct workers in ``range(n)``.

    Raises
    ------
    GradcodesValueError
        If ``n``, ``s`` or ``min_size`` is out of its range.

    Examples
    --------
    >>> import gradcodes as gc
    >>> from hypothesis import given, settings
    >>> from gradcodes.testing import straggler_sets, assert_recovers
    >>> code = gc.cyclic_repetition(6, 2, rng=0)
    >>> @settings(max_examples=20, derandomize=True, deadline=None)
    ... @given(straggler_sets(6, 2, min_size=0, code=code))
    ... def test_recovers(S):
    ...     assert_recovers(code, [i for i in range(6) if i not in S])
    >>> test_recovers()
    """
    _check(n, s)
    lo = s if min_size is None else min_size
    if not 0 <= lo <= s:
        raise GradcodesValueError(f"min_size must be in [0, s] = [0, {s}], got {min_size!r}")
    uniform = st.lists(st.integers(0, n - 1), min_size=lo, max_size=s, unique=True).map(lambda x: tuple(sorted(x)))
    if not adversarial:
        return uniform
    parts = [uniform, windows(n, s)]
    if code is not None:
        flagged = verifier_flagged(code)
        if flagged:
            parts.append(st.sampled_from(flagged))
    return st.one_of(*parts)


def responder_sets(n: int, s: int, **kwargs: Any) -> st.SearchStrategy[tuple[int, ...]]:
    """The complements of :func:`straggler_sets` (same keywords): sorted tuples of responding workers.

    Parameters
    ----------
    n : int
        Number of workers, ``n >= 1``.
    s : int
        Largest number of stragglers, ``0 <= s <= n - 1``.
    **kwargs
        ``min_size``, ``code`` and ``adversarial``, as for :func:`straggler_sets`.

    Returns
    -------
    hypothesis.strategies.SearchStrategy of tuple of int
        Sorted tuples of the workers not in a drawn straggler set.

    Raises
    ------
    GradcodesValueError
        If ``n`` is not an integer ``>= 1`` or ``s`` not an integer in ``[0, n - 1]``.

    Examples
    --------
    >>> import gradcodes as gc
    >>> from hypothesis import given, settings
    >>> from gradcodes.testing import responder_sets, assert_recovers
    >>> code = gc.fractional_repetition(6, 1)
    >>> @settings(max_examples=20, derandomize=True, deadline=None)
    ... @given(responder_sets(6, 1))
    ... def test_recovers(F):
    ...     assert len(F) == 5
    ...     assert_recovers(code, F)
    >>> test_recovers()
    """
    return straggler_sets(n, s, **kwargs).map(lambda S: tuple(i for i in range(n) if i not in set(S)))


def scheme_parameters(name: str, *, max_n: int = 30) -> st.SearchStrategy[dict[str, Any]]:
    """Valid keyword parameters of the registered family ``name`` (from :func:`gradcodes.schemes`), ``n <= max_n``.

    Parameters
    ----------
    name : str
        A registered family, a key of :func:`gradcodes.schemes`.
    max_n : int, default 30
        Largest number of workers drawn.

    Returns
    -------
    hypothesis.strategies.SearchStrategy of dict
        The family's registered parameter sets (``Scheme.tour``) with ``n <= max_n``.

    Raises
    ------
    GradcodesValueError
        If ``name`` is not registered or it has no registered parameters with ``n <= max_n``.

    Examples
    --------
    >>> import gradcodes as gc
    >>> from hypothesis import given, settings
    >>> from gradcodes.testing import scheme_parameters
    >>> @settings(max_examples=5, derandomize=True, deadline=None)
    ... @given(scheme_parameters("cyclic_repetition", max_n=20))
    ... def test_load(params):
    ...     assert gc.cyclic_repetition(**params, rng=0).load == params["s"] + 1
    >>> test_load()
    """
    reg = schemes()
    if name not in reg:
        raise GradcodesValueError(f"name must be one of {sorted(reg)}, got {name!r}")
    params = [dict(p) for p in reg[name].tour if int(p.get("n", 0)) <= max_n]
    if not params:
        raise GradcodesValueError(f"scheme {name!r} has no registered parameters with n <= max_n = {max_n}")
    return st.sampled_from(params)


def codes(kind: str | None = "exact", *, names: list[str] | None = None,
          max_n: int = 30) -> st.SearchStrategy[LinearCode]:
    """Codes built from the registry: every family of ``kind`` (``"exact"``, ``"tree"``, ``"partial"``,
    ``"adversarial"``, ``"approximate"`` or None for all), or the families ``names``, at registered parameters with
    ``n <= max_n``. The ``"exact"`` codes recover from every set of ``n - s`` responders; ``"partial"`` ones (a
    message per finished chunk) from every admitted chunk-arrival pattern.

    Parameters
    ----------
    kind : {"exact", "tree", "partial", "adversarial", "approximate"} or None, default "exact"
        The kind of registered families drawn (None: every kind); ignored with ``names``.
    names : list of str, optional
        Draw only these registered families.
    max_n : int, default 30
        Largest number of workers.

    Returns
    -------
    hypothesis.strategies.SearchStrategy of LinearCode
        Codes built at the families' registered parameters.

    Raises
    ------
    GradcodesValueError
        If no registered family matches, or none has registered parameters with ``n <= max_n``.

    Examples
    --------
    >>> from hypothesis import given, settings
    >>> from gradcodes.testing import codes, straggler_sets, assert_recovers
    >>> @settings(max_examples=5, derandomize=True, deadline=None)
    ... @given(codes(names=["fractional_repetition", "cyclic_repetition"], max_n=20), straggler_sets(20, 1))
    ... def test_recovers(code, S):
    ...     assert_recovers(code, [i for i in range(code.n) if i not in S])
    >>> test_recovers()
    """
    reg = schemes()
    chosen = sorted(names) if names is not None else sorted(k for k, v in reg.items() if kind is None or v.kind == kind)
    if not chosen:
        raise GradcodesValueError(f"no registered family of kind {kind!r}")
    pairs = [(name, dict(p)) for name in chosen for p in reg[name].tour if int(p.get("n", 0)) <= max_n]
    if not pairs:
        raise GradcodesValueError(f"no registered parameters with n <= max_n = {max_n} for {chosen}")
    return st.sampled_from(pairs).map(lambda np_: reg[np_[0]].build(**np_[1]))


def partial_gradients(code: LinearCode, *, dtype: npt.DTypeLike = np.float64,
                      length: int | st.SearchStrategy[int] = 4, bound: float = 1e3) -> st.SearchStrategy[np.ndarray]:
    """Arrays ``G`` of shape ``(code.k, length)`` and dtype ``dtype``: finite values in ``[-bound, bound]``.

    ``length`` is the gradient length (an int or a strategy of ints), as ``length=`` of
    :meth:`gradcodes.LinearCode.decode` (``p`` names straggle probabilities, as in :func:`assert_unbiased`).

    Parameters
    ----------
    code : LinearCode
        The code whose ``k`` partitions the arrays have.
    dtype : dtype, default float64
        A floating or complex dtype.
    length : int or hypothesis.strategies.SearchStrategy of int, default 4
        Coordinates per partial gradient.
    bound : float, default 1e3
        Largest absolute value of an entry.

    Returns
    -------
    hypothesis.strategies.SearchStrategy of numpy.ndarray
        Arrays of shape ``(code.k, length)``.

    Raises
    ------
    GradcodesValueError
        If ``dtype`` is neither a floating nor a complex dtype.

    Examples
    --------
    >>> import numpy as np, gradcodes as gc
    >>> from hypothesis import given, settings
    >>> from gradcodes.testing import partial_gradients, assert_recovers
    >>> code = gc.fractional_repetition(4, 1)
    >>> @settings(max_examples=5, derandomize=True, deadline=None)
    ... @given(partial_gradients(code, dtype=np.float32, length=2))
    ... def test_float32(G):
    ...     assert G.shape == (4, 2) and G.dtype == np.float32
    ...     assert_recovers(code, [0, 2, 3], G)
    >>> test_float32()
    """
    dt = np.dtype(dtype)
    if dt.kind not in "fc":
        raise GradcodesValueError(f"dtype must be a floating or complex dtype, got {dt}")
    single = dt in (np.float32, np.complex64)
    elements: st.SearchStrategy[Any]
    if dt.kind == "c":
        elements = st.complex_numbers(max_magnitude=bound, allow_nan=False, allow_infinity=False,
                                      width=64 if single else 128)
    else:
        elements = st.floats(-bound, bound, allow_nan=False, allow_subnormal=False, width=32 if single else 64)
    ps = st.just(length) if isinstance(length, int) else length
    return ps.flatmap(lambda q: hnp.arrays(dt, (code.k, q), elements=elements))


def assert_recovers(code: LinearCode, responders: Responders, G: MatrixLike | None = None, *,
                    rtol: float | None = None) -> None:
    """Assert that ``code`` recovers ``sum(G)`` from ``responders``; the message names the set and the residual.

    ``G`` defaults to a fixed float64 ``(k, 3)`` array. The tolerance is the decode's own error estimate
    (times 4) unless ``rtol`` is given; an exact code must recover exactly.

    Parameters
    ----------
    code : LinearCode
        The code under test.
    responders : iterable of int
        The workers whose messages arrive (any order).
    G : array_like, shape (k, length), optional
        Partial gradients (numpy, or a tensor of another array library).
    rtol : float, optional
        Tolerance on the error relative to ``max_x sum_j |G_j(x)|``.

    Raises
    ------
    AssertionError
        If the responders cannot decode or the decoded sum is off by more than the tolerance.

    Examples
    --------
    >>> import gradcodes as gc
    >>> from gradcodes.testing import assert_recovers
    >>> assert_recovers(gc.cyclic_repetition(5, 2, rng=0), [0, 2, 4])
    >>> assert_recovers(gc.uncoded(3), [0, 1])
    Traceback (most recent call last):
    ...
    AssertionError: responders (0, 1): no decode (...)
    """
    from .._core.code import DecodingError

    R = tuple(int(i) for i in responders)
    if G is None:
        G = np.random.default_rng(0).standard_normal((code.k, 3))
    G = to_numpy(G, "G") if is_foreign(G) else np.asarray(G) if not isinstance(G, np.ndarray) else G
    try:
        g, info = code.decode(list(R), code.encode(G), return_info=True, rows="full")   # R in any order
    except (DecodingError, ValueError) as exc:   # too few responders, or they cannot decode
        raise AssertionError(f"responders {R}: no decode ({exc})") from None
    exact = np.asarray(G, dtype=np.complex128).sum(axis=0)
    scale = max(float(np.abs(np.asarray(G, dtype=np.complex128)).sum(axis=0).max()), np.finfo(float).tiny)
    got = np.asarray(g, dtype=np.complex128).reshape(-1)[: exact.size]   # m > 1 codes may pad to m blocks
    err = float(np.abs(got - exact).max()) / scale
    tol = rtol if rtol is not None else 4 * float(info.error_estimate) + np.finfo(np.asarray(g).dtype).eps
    if not err <= tol:
        raise AssertionError(f"responders {R}: relative error {err:.3g} > tolerance {tol:.3g} "
                             f"(residual ||A_F B - E|| = {info.residual}, decoder {info.decoder!r})")


def assert_unbiased(code: LinearCode, p: ProbabilitiesLike | None = None, *, atol: float = 1e-9,
                    max_enumerate: int = 16) -> None:
    """Assert that an approximate code's estimate is unbiased under independent straggling with probabilities
    ``p`` (``E[ghat] = g`` for ``g_j = e_j``), exactly by enumeration when ``n <= max_enumerate``.

    Fails with the bias vector's norm and the partitions whose bias exceeds ``atol``.

    Parameters
    ----------
    code : LinearCode
        An approximate code (its default decoder is used).
    p : float or array_like of float, optional
        Straggle probability of every worker, or of each (as for :func:`gradcodes.evaluate_approximate`).
    atol : float, default 1e-9
        Largest bias allowed per partition.
    max_enumerate : int, default 16
        Enumerate every response pattern exactly up to this many workers; sample beyond.

    Raises
    ------
    AssertionError
        If some partition's bias exceeds ``atol``.

    Examples
    --------
    >>> import gradcodes as gc
    >>> from gradcodes.testing import assert_unbiased
    >>> assert_unbiased(gc.stochastic_gc(6, 2, 0.2, rng=0), p=0.2)
    """
    from .._verify.approx_eval import evaluate_approximate

    rep = evaluate_approximate(code, p=p, max_enumerate=max_enumerate)
    bias = np.asarray(rep.bias, dtype=float)
    bad = np.flatnonzero(np.abs(bias) > atol)
    if bad.size:
        raise AssertionError(f"biased: ||E[ghat] - g|| = {rep.bias_norm:.3g} ({rep.method}, {rep.patterns} "
                             f"response patterns); partitions {bad[:10].tolist()} off by "
                             f"{bias[bad[:10]].tolist()}")
