"""Uncoded computation with multi-message communication (Ozfatura, Gündüz & Ulukus 2019).

Ozfatura, Gündüz & Ulukus, "Speeding up distributed gradient descent by utilizing non-persistent stragglers",
IEEE ISIT 2019 (arXiv:1808.02240); journal version "Straggler-aware distributed learning:
communication-computation latency trade-off", Entropy 22(5):544, 2020 (arXiv:2004.04948). The data set is split
into ``k = n`` partitions; worker ``i`` holds the ``r`` partitions ``i, i+1, ..., i+r-1 (mod n)`` (computation load
``r``), computes them one after the other in that cyclically shifted order and sends every partial gradient
**uncoded, as soon as it is computed** (up to ``r`` messages per worker and iteration). The master has the full
gradient once every partition has arrived at least once, so a slow worker's finished partitions still count (a
*non-persistent* straggler), while single-message gradient coding with the same load (cyclic repetition, Tandon et
al. 2017) waits for ``n - r + 1`` workers to finish their whole load.

This protocol is exactly the partial-straggler protocol of Ramamoorthy, Meng & Girimaji (2024) with the cyclic
assignment of load ``r`` (``s = r - 1`` full stragglers), communication factor ``m = 1`` (each message is one
partial gradient: its row of ``B`` is a unit vector) and the natural order: :func:`multi_message_code` returns that
:class:`~gradcodes.PartialStragglerCode`, with its chunk decoder, verifier, simulator and MPI support.

Completion time (:func:`multi_message_time`). Worker ``i`` computes every partition in ``X_i`` seconds, one speed
per worker and iteration, ``X_i = a + Exp(rate mu)`` i.i.d. (the shifted-exponential model of
:class:`~gradcodes.ShiftedExponentialWorkers` with one data point per partition and
``gc.simulate_partial(..., chunk_times="even")``). Partition ``j`` arrives at ``min_t (t+1) X_{j-t}`` and the
iteration ends at ``T = max_j min_{0<=t<r} (t+1) X_{j-t}``. With ``Z_i = min(r, floor(x / X_i))`` the partitions
worker ``i`` has finished by time ``x``, ``T <= x`` iff the cyclic intervals ``[i, i+Z_i)`` cover all ``n``
partitions; scanning the ring with the state "partitions ahead already covered" (``0..r-1``) gives the exact law

.. math:: P(T \\le x) = \\operatorname{tr} M(x)^n, \\quad
          M(x)_{c,c'} = \\sum_{z=0}^{r} P(Z = z)\\,[\\max(c, z) \\ge 1]\\,[\\max(c, z) - 1 = c'],

(the trace picks, for every draw, the one start state consistent with the wrap-around, as ``n >= r``), and
``E[T] = a + \\int_a^\\infty (1 - \\operatorname{tr} M(x)^n)\\, dx`` is evaluated by adaptive quadrature on the pieces
between the kinks ``x = z a``. The single-message protocol's time is the ``(n - r + 1)``-th order statistic of
``r X_i``, in closed form ``r (a + (H_n - H_{r-1}) / mu)``; fractional repetition (``r | n``) with the earliest
decodable set ends when every group of ``r`` workers has one finished worker, ``r a + H_{n/r} / mu``.
"""

from __future__ import annotations

import math

import numpy as np

from .._base.errors import GradcodesValueError
from .._base.validate import check_choice, check_int, check_real
from .._core.numerics import DEFAULT_RTOL
from .partial_stragglers import PartialStragglerCode, partial_straggler_code

__all__ = ["multi_message_code", "multi_message_time"]

#: Largest ``n`` of :func:`multi_message_time` (its harmonic sums take O(n) time).
MAX_WORKERS = 10**6


def multi_message_code(n: int, r: int, *, field: str = "real", rtol: float = DEFAULT_RTOL) -> PartialStragglerCode:
    """Uncoded computation with multi-message communication (Ozfatura, Gündüz & Ulukus, ISIT 2019).

    ``k = n`` partitions; worker ``i`` computes partitions ``i, i+1, ..., i+r-1 (mod n)`` in this order and sends
    each partial gradient as soon as it is computed. The master decodes once every partition has arrived once.
    The returned code is ``gc.partial_straggler_code(n, r - 1, 1, order="natural")`` (equal to it): ``n r``
    message rows, each a unit vector (message ``code.message(i, t)`` is partition ``(i + t) mod n``), decoded by
    the chunk decoder; any ``n - r + 1`` workers' full loads also decode, as for cyclic repetition.

    Parameters
    ----------
    n : int >= 1
        Workers (and partitions ``k = n``).
    r : int in [1, n]
        Computation load: partitions per worker (and workers per partition).
    field : {"real", "rational"}, default "real"
        ``"rational"``: ``B`` and the decoder over Fractions (exact decodes and proofs).
    rtol : float in (0, 1), default 1e-8
        Acceptance tolerance of float64 decodes.

    Returns
    -------
    PartialStragglerCode

    See Also
    --------
    multi_message_time : the expected completion time in the shifted-exponential model.
    gradcodes.simulate_partial : Monte Carlo against the single-message protocol on the same draws.

    Examples
    --------
    Four workers, load 2. Worker 1 and worker 3 have finished both partitions, workers 0 and 2 none: partitions
    1, 2 (from worker 1) and 3, 0 (from worker 3) have all arrived.

    >>> import numpy as np
    >>> import gradcodes as gc
    >>> code = gc.multi_message_code(4, 2)
    >>> code.order
    ((0, 1), (1, 2), (2, 3), (3, 0))
    >>> code.decodable_progress([0, 2, 0, 2]), code.decodable_progress([2, 1, 1, 0])
    (True, False)
    >>> G = np.arange(8.0).reshape(4, 2)                 # one partial gradient per partition
    >>> Y = code.encode(G)                               # row code.message(i, t): partition (i + t) mod 4
    >>> arrived = [code.message(1, 0), code.message(1, 1), code.message(3, 0), code.message(3, 1)]
    >>> code.decode(arrived, Y)
    array([12., 16.])
    """
    n = check_int("n", n, 1)
    r = check_int("r", r, 1, n)
    field = check_choice("field", field, ("real", "rational"))
    return partial_straggler_code(n, r - 1, 1, order="natural", field=field, rtol=rtol)


def _levels(x: float, r: int, a: float, mu: float) -> np.ndarray:
    """P(Z = z), z = 0..r: the number of partitions a worker has finished by time x (Z = min(r, floor(x / X)))."""
    ge = np.zeros(r + 2)
    ge[0] = 1.0
    for z in range(1, r + 1):
        y = x / z - a
        if y >= 0:
            ge[z] = 1.0 if mu == np.inf else -np.expm1(-mu * y)
    return ge[:-1] - ge[1:]


def _cdf(x: float, n: int, r: int, a: float, mu: float) -> float:
    """P(T <= x) = trace(M(x)^n) (module notes)."""
    p = _levels(x, r, a, mu)
    M = np.zeros((r, r))
    for c in range(r):
        for z in range(r + 1):
            top = max(c, z)
            if top >= 1:
                M[c, top - 1] += p[z]
    return float(np.trace(np.linalg.matrix_power(M, n)))


def multi_message_time(n: int, r: int, *, a: float = 1.0, mu: float = 1.0, protocol: str = "multi") -> float:
    r"""Expected iteration time of uncoded multi-message communication, or of single-message schemes of load ``r``.

    Model: worker ``i`` needs ``X_i`` seconds per partition, ``X_i = a + Exp(rate mu)`` independent across
    workers, one draw per worker and iteration (a slow worker is slow for all its partitions); messages arrive
    instantly. See docs/multi_message.md, "2. Expected iteration time", for the derivations.

    * ``"multi"`` (Ozfatura, Gündüz & Ulukus 2019, :func:`multi_message_code`):
      ``T = max_j min_{0<=t<r} (t+1) X_{j-t}``; ``E[T] = a + \int_a^\infty (1 - \mathrm{tr}\, M(x)^n) dx`` with the
      ``r x r`` transfer matrix ``M(x)`` of the coverage of the ring, integrated by adaptive quadrature (QUADPACK,
      absolute and relative tolerance 1e-11 per piece).
    * ``"single"`` (cyclic repetition, one message per worker after its whole load, the first ``n - r + 1``
      workers): ``E[T] = r (a + (H_n - H_{r-1}) / mu)``, closed form.
    * ``"fractional"`` (fractional repetition, ``r`` divides ``n``, earliest decodable set: one finished worker in
      every group of ``r``): ``E[T] = r a + H_{n/r} / mu``, closed form.

    Parameters
    ----------
    n : int in [1, 10**6]
        Workers (and partitions).
    r : int in [1, n]
        Computation load (partitions per worker).
    a : float >= 0, default 1
        Deterministic seconds per partition.
    mu : float > 0, default 1
        Rate of the exponential part per partition (``inf``: deterministic workers).
    protocol : {"multi", "single", "fractional"}, default "multi"

    Returns
    -------
    float
        ``E[T]`` in seconds.

    Raises
    ------
    GradcodesValueError
        If a parameter is out of its range (the message names the parameter and the range), ``mu <= 0``, or ``r`` does
        not divide ``n`` for fractional repetition.

    Examples
    --------
    Two workers holding both partitions (``a = 0``, ``mu = 1``): multi-message communication takes
    ``E[min(max, 2 min)] = 1/2 + 1/3 = 5/6`` s on average, one message per worker ``E[2 min] = 1`` s.

    >>> import gradcodes as gc
    >>> round(gc.multi_message_time(2, 2, a=0.0), 12), gc.multi_message_time(2, 2, a=0.0, protocol="single")
    (0.833333333333, 1.0)
    """
    n = check_int("n", n, 1, MAX_WORKERS)
    r = check_int("r", r, 1, n)
    a = check_real("a", a, 0)
    if isinstance(mu, bool) or not isinstance(mu, (int, float, np.integer, np.floating)):
        raise GradcodesValueError(f"mu must be a real number > 0 (or inf), got {mu!r}")
    mu = float(mu)
    if not mu > 0:
        raise GradcodesValueError(f"mu must be > 0 (or inf), got {mu!r}")
    protocol = check_choice("protocol", protocol, ("multi", "single", "fractional"))
    inv_mu = 0.0 if mu == np.inf else 1.0 / mu
    if protocol == "single":
        return r * (a + math.fsum(1.0 / i for i in range(r, n + 1)) * inv_mu)
    if protocol == "fractional":
        if n % r:
            raise GradcodesValueError(f"r must divide n for fractional repetition, got n={n}, r={r}")
        return r * a + math.fsum(1.0 / i for i in range(1, n // r + 1)) * inv_mu
    if mu == np.inf:
        return a                            # every worker's first partition arrives at a
    from scipy.integrate import quad

    def tail(x: float) -> float:
        return 1.0 - _cdf(x, n, r, a, mu)

    cuts = [z * a for z in range(1, r + 1)] if a > 0 else [0.0]
    total = a
    for lo, hi in zip(cuts[:-1], cuts[1:], strict=True):
        total += quad(tail, lo, hi, epsabs=1e-11, epsrel=1e-11, limit=200)[0]
    total += quad(tail, cuts[-1], np.inf, epsabs=1e-11, epsrel=1e-11, limit=200)[0]
    return float(total)

