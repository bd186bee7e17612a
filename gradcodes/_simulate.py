"""Iteration-time simulator for CodedReduce and the master--worker / all-reduce baselines.

The models follow the CodedReduce paper (Reisizadeh, Prakash, Pedarsani & Avestimehr, arXiv 1902.01981):

* **Computation (shifted exponential).** A worker that processes ``l`` data points finishes at
  ``T = a*l + Exp(mean l/mu)``, i.e. ``P(T <= t) = 1 - exp(-(mu/l)(t - a*l))`` for ``t >= a*l``; the mean is
  ``a*l*(1 + 1/(a*mu))``. Draws are i.i.d. across workers and iterations. ``mu = inf`` removes the
  exponential part (deterministic times).
* **Communication (single port).** A node receives one gradient-sized message at a time, each taking
  ``t_c``. Children's messages are received in the order the children become ready:
  ``R_1 = c_(1) + t_c``, ``R_j = max(R_{j-1}, c_(j)) + t_c``; a parent that needs ``K`` messages has them at
  ``R_K``. With ``overlap=True`` (default) reception overlaps the node's own computation and the node is
  ready at ``max(T_v, R_K)``; with ``overlap=False`` it starts receiving only after computing
  (``R_0 = T_v``). The master computes nothing and finishes at ``R_K`` over its children.

The recursion has the closed form ``R_K = K t_c + max_{j <= K} (c_(j) - (j-1) t_c)`` (a running maximum),
so every scheme is simulated with numpy arrays of shape ``(iterations, nodes)`` and no Python loop over
iterations or over messages.
"""

from __future__ import annotations

import argparse
import math
import numbers
import zlib
from collections.abc import Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    from ._code import LinearCode

from ._typing import RNGLike, Unset
from ._validate import SEED_UNSET, check_rng, check_size, check_tree_size, take_rng

__all__ = ["simulate", "SimulationResult", "SchemeResult", "add_simulate_parser"]

SCHEME_NAMES = ("CR", "UMW", "GC", "SGD", "RAR")

_SCHEME_HELP = {
    "CR": "CodedReduce on the (n, L)-regular tree, s stragglers per parent",
    "UMW": "uncoded master-worker: load 1/N, the master waits for all N messages",
    "GC": "master-worker gradient coding: load (s_gc+1)/N, the master waits for N - s_gc messages",
    "SGD": "ignore-stragglers SGD: load 1/N, the master waits for N - s_gc messages (inexact)",
    "RAR": "ring all-reduce: load 1/N, all N compute, then 2(N-1) steps of t_c/N + t_step",
}

# Bound the size of the per-chunk arrays (iterations x workers) to keep memory small for big trees.
_CHUNK_ELEMENTS = 2_000_000


@dataclass
class SchemeResult:
    """Monte Carlo result for one scheme.

    Attributes
    ----------
    name : str
        Scheme label.
    mean, stderr : float
        Sample mean of the iteration time and its standard error (``std(ddof=1)/sqrt(iters)``).
    iters : int
        Number of simulated iterations.
    workers : int
        Number of workers.
    load : float
        Data points processed by each worker per iteration.
    messages : int
        Number of messages the master (or, for CR, each parent) waits for.
    times : numpy.ndarray or None
        Per-iteration times, shape ``(iters,)`` (with ``return_samples=True``).
    responders : numpy.ndarray or None
        Per-iteration bool mask of shape ``(iters, workers)``: the workers whose message was *used*
        (for CR, a node is used if its parent used it and the parent is used; for GC/SGD the first
        ``N - s`` arrivals; everyone for UMW/RAR). Filled with ``return_responders=True``.
    details : dict
        Scheme parameters (n, L, s, t_step, ...).
    """

    name: str
    mean: float
    stderr: float
    iters: int
    workers: int
    load: float
    messages: int
    times: np.ndarray | None = None
    responders: np.ndarray | None = None
    details: dict[str, Any] = field(default_factory=dict)

    def __str__(self) -> str:
        return f"{self.name}: E[T] = {self.mean:.4f} ± {self.stderr:.4f} s"


@dataclass
class SimulationResult:
    """Results of :func:`simulate`: a mapping from scheme label to :class:`SchemeResult`.

    Index it by label (``res["CR"].mean``), iterate over ``res.schemes``, print it for a table, or call
    :meth:`speedup` for ratios of expected times.
    """

    schemes: dict[str, SchemeResult]
    params: dict[str, Any]

    def __getitem__(self, name: str) -> SchemeResult:
        if name not in self.schemes and isinstance(name, str) and name.upper() in self.schemes:
            name = name.upper()                  # labels are accepted in any case by simulate()
        if name not in self.schemes:
            raise KeyError(f"no scheme {name!r}; simulated: {list(self.schemes)}")
        return self.schemes[name]

    def __iter__(self):
        return iter(self.schemes.values())

    def __len__(self) -> int:
        return len(self.schemes)

    def speedup(self, reference: str = "CR") -> dict[str, float]:
        """Return ``E[T_other] / E[T_reference]`` for every other scheme."""
        if reference not in self.schemes and reference.upper() in self.schemes:
            reference = reference.upper()
        if reference not in self.schemes:
            raise ValueError(f"reference must be one of the simulated schemes {list(self.schemes)}, got {reference!r}")
        ref = self.schemes[reference].mean
        return {k: v.mean / ref for k, v in self.schemes.items() if k != reference}

    def table(self, reference: str | None = None) -> str:
        """A plain-text table: scheme, workers, load (points), messages, E[T] ± s.e. [, speedup]."""
        ref = None
        if reference is not None and reference in self.schemes:
            ref = self.schemes[reference].mean
        head = f"{'scheme':<14}{'workers':>8}{'load/worker':>13}{'msgs':>6}{'E[T] (s)':>12}{'± s.e.':>10}"
        if ref is not None:
            head += f"{f'{reference} speedup':>13}"
        lines = [head, "-" * len(head)]
        for r in self.schemes.values():
            row = (f"{r.name:<14}{r.workers:>8}{r.load:>13.6g}{r.messages:>6}"
                   f"{r.mean:>12.4f}{r.stderr:>10.4f}")
            if ref is not None:
                row += f"{r.mean / ref:>13.2f}"
            lines.append(row)
        return "\n".join(lines)

    def __str__(self) -> str:
        return self.table("CR" if "CR" in self.schemes else None)


# ----------------------------------------------------------------------------------------------------------
# the two models


def _computation(rng: np.random.Generator, shape: tuple[int, ...], points: float, a: float,
                 mu: float) -> np.ndarray:
    """Shifted exponential computation times ``a*l + Exp(mean l/mu)``."""
    base = a * points
    if math.isinf(mu) or points == 0:
        return np.full(shape, base)
    return base + rng.exponential(points / mu, size=shape)


def _reception(children: np.ndarray, K: int, t_c: float, start: np.ndarray | None = None,
               want_order: bool = False) -> tuple[np.ndarray, np.ndarray | None]:
    """Single-port reception of the first ``K`` messages.

    ``children`` has shape ``(..., c)`` (ready times of a parent's ``c`` children). Returns the time ``R_K``
    at which the K-th message has been received (shape ``(...)``) and, if asked, the indices of the ``K``
    children used (the first ``K`` to become ready; ties go to the smaller index).
    ``start`` (shape ``(...)``) is the time the parent starts receiving (no overlap); ``None`` = time 0.
    """
    if want_order:
        order = np.argsort(children, axis=-1, kind="stable")[..., :K]
        first = np.take_along_axis(children, order, axis=-1)
    else:
        order = None
        first = np.sort(children, axis=-1)[..., :K]
    # R_K = K t_c + max_{j<=K} (c_(j) - (j-1) t_c)   (j is 1-based)
    shift = t_c * np.arange(K, dtype=float)
    R = K * t_c + np.max(first - shift, axis=-1)
    if start is not None:
        R = np.maximum(R, start + K * t_c)
    return R, order


# ----------------------------------------------------------------------------------------------------------
# schemes


def _rng_for(seed: np.random.SeedSequence, label: str) -> np.random.Generator:
    """One independent stream per scheme label, so a scheme's samples don't depend on the others."""
    return np.random.default_rng(np.random.SeedSequence(seed.entropy,
                                                        spawn_key=(zlib.crc32(label.encode()),)))


def _chunks(iters: int, width: int):
    size = max(1, _CHUNK_ELEMENTS // max(width, 1))
    for lo in range(0, iters, size):
        yield lo, min(iters, lo + size)


def _sim_tree(rng, iters, n, L, s, points, a, mu, t_c, overlap, want_resp):
    N = n * (n**L - 1) // (n - 1)
    K = n - s
    times = np.empty(iters)
    resp = np.zeros((iters, N), dtype=bool) if want_resp else None
    offsets = [0]
    for lev in range(1, L + 1):
        offsets.append(offsets[-1] + n**lev)  # level lev occupies [offsets[lev-1], offsets[lev])
    for lo, hi in _chunks(iters, N):
        b = hi - lo
        ready = _computation(rng, (b, n**L), points, a, mu)  # leaves
        used_orders = {}
        for lev in range(L - 1, -1, -1):  # parents at level lev
            kids = ready.reshape(b, n**lev, n)
            if lev >= 1:
                T = _computation(rng, (b, n**lev), points, a, mu)
                R, order = _reception(kids, K, t_c, None if overlap else T, want_resp)
                ready = np.maximum(T, R)
            else:
                R, order = _reception(kids, K, t_c, None, want_resp)
                times[lo:hi] = R[:, 0]
            if want_resp:
                used_orders[lev + 1] = order  # (b, n**lev, K): children used at level lev+1
        if want_resp:
            parent_used = np.ones((b, 1), dtype=bool)
            for lev in range(1, L + 1):
                used = np.zeros((b, n ** (lev - 1), n), dtype=bool)
                np.put_along_axis(used, used_orders[lev], True, axis=-1)
                used &= parent_used[:, :, None]
                used = used.reshape(b, n**lev)
                resp[lo:hi, offsets[lev - 1]:offsets[lev]] = used
                parent_used = used
    return times, resp


def _sim_master_worker(rng, iters, N, K, points, a, mu, t_c, want_resp):
    times = np.empty(iters)
    resp = np.zeros((iters, N), dtype=bool) if want_resp else None
    for lo, hi in _chunks(iters, N):
        T = _computation(rng, (hi - lo, N), points, a, mu)
        R, order = _reception(T, K, t_c, None, want_resp and K < N)
        times[lo:hi] = R
        if want_resp:
            if K < N:
                np.put_along_axis(resp[lo:hi], order, True, axis=-1)
            else:
                resp[lo:hi] = True
    return times, resp


def _sim_ring(rng, iters, N, points, a, mu, t_c, t_step, want_resp):
    times = np.empty(iters)
    comm = 2 * (N - 1) * (t_c / N + t_step)
    for lo, hi in _chunks(iters, N):
        T = _computation(rng, (hi - lo, N), points, a, mu)
        times[lo:hi] = T.max(axis=1) + comm
    resp = np.ones((iters, N), dtype=bool) if want_resp else None
    return times, resp


# ----------------------------------------------------------------------------------------------------------
# validation helpers (kept local so the simulator has no dependency on the code classes)


def _int(name: str, value: Any, lo: int, hi: int | None = None) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise TypeError(f"{name} must be an int, got {type(value).__name__}")
    value = int(value)
    if value < lo or (hi is not None and value > hi):
        rng = f"in [{lo}, {hi}]" if hi is not None else f">= {lo}"
        raise ValueError(f"{name} must be an integer {rng}, got {value}")
    return value


def _real(name: str, value: Any, *, positive: bool = False, allow_inf: bool = False) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating, Fraction)):
        raise TypeError(f"{name} must be a real number, got {type(value).__name__}")
    v = float(value)
    if math.isnan(v) or (math.isinf(v) and not allow_inf):
        raise ValueError(f"{name} must be finite, got {value}")
    if positive and not v > 0:
        raise ValueError(f"{name} must be > 0, got {value}")
    if not positive and v < 0:
        raise ValueError(f"{name} must be >= 0, got {value}")
    return v


def _seed_entropy(rng: Any) -> int | None:
    """``rng`` (None, a non-negative int, a SeedSequence or BitGenerator, or a Generator, which is advanced) as
    SeedSequence entropy."""
    if rng is None:
        return None
    if isinstance(rng, numbers.Integral) and not isinstance(rng, bool):
        check_rng(rng)                                         # a clear error for negative seeds
        return int(rng)
    return int(check_rng(rng).integers(2**63))


def _code_kind(obj: Any) -> str | None:
    """'CR' for a CodedReduce tree code, 'GC' for an exact master-worker code, else None."""
    from ._families.coded_reduce import CodedReduceCode

    if isinstance(obj, CodedReduceCode):
        return "CR"
    try:
        from ._code import GradientCode
    except ImportError:  # pragma: no cover - core always present in the package
        return None
    if isinstance(obj, GradientCode):
        return "GC"
    return None


def simulate(
    schemes: str | LinearCode | Sequence[str | LinearCode] = SCHEME_NAMES,
    *,
    n: int = 12,
    L: int = 2,
    s: int = 5,
    s_gc: int | None = None,
    m_data: float = 49_920,
    a: float = 5e-5,
    mu: float | None = None,
    t_c: float = 0.05,
    t_step: float = 0.0,
    overlap: bool = True,
    iters: int = 10_000,
    rng: RNGLike = None,
    return_samples: bool = False,
    return_responders: bool = False,
    seed: RNGLike | Unset = SEED_UNSET,
) -> SimulationResult:
    r"""Monte Carlo expected iteration time of CodedReduce and the baselines.

    Every scheme processes a dataset of ``m_data`` points per iteration under the shifted-exponential
    computation model and the single-port communication model (module docstring; Reisizadeh et al., CodedReduce).
    With ``N = n + n^2 + ... + n^L`` workers:

    ==========  ===========================  ==========================================================
    scheme      points per worker            finishing time
    ==========  ===========================  ==========================================================
    ``"CR"``    :math:`r_{CR}\,m`            each parent receives the first ``n-s`` children's messages
                                             (recursively up the tree), the master likewise
    ``"UMW"``   :math:`m/N`                  the master receives all ``N`` messages
    ``"GC"``    :math:`(s_{gc}+1)m/N`        the master receives the first ``N - s_gc`` messages
    ``"SGD"``   :math:`m/N`                  the master receives the first ``N - s_gc`` (inexact sum)
    ``"RAR"``   :math:`m/N`                  :math:`\max_i T_i + 2(N-1)(t_c/N + t_{step})`
    ==========  ===========================  ==========================================================

    Parameters
    ----------
    schemes : str, code, or sequence of them
        Scheme labels from ``("CR", "UMW", "GC", "SGD", "RAR")`` and/or code objects: a
        :class:`~gradcodes.CodedReduceCode` is simulated as CR with its own ``(n, L, s)`` and load; an
        exact :class:`~gradcodes.GradientCode` as master--worker GC with its own ``n``, ``s``, load
        fraction ``load/k`` and message time ``t_c/m`` (a code with ``m > 1``, e.g. :func:`gradcodes.ye_abbe`,
        sends ``1/m`` of a gradient), so any code can be compared. Codes with equal names get labels
        ``"GC[name]"``, ``"GC[name]#2"``, ...
    n, L, s : int
        The tree for ``"CR"`` (``n >= 2``, ``L >= 1``, ``0 <= s <= n-1``); ``N`` also sets the number of
        workers of the other labelled schemes.
    s_gc : int, optional
        Stragglers tolerated (GC) or ignored (SGD) by the master--worker schemes. Default
        ``floor(s*N/n)`` (the same resiliency ``s/n``; 65 for ``n=12, s=5, L=2``).
    m_data : float
        Data points per iteration (the whole dataset), > 0.
    a : float
        Deterministic computation time per data point (s), >= 0.
    mu : float, optional
        Rate of the exponential part per data point (1/s); ``inf`` for deterministic times. Default
        ``1/a`` (``a*mu = 1``, the CodedReduce paper's setting).
    t_c : float
        Time to receive one gradient-sized message (s), >= 0.
    t_step : float
        Extra fixed cost of each of the ``2(N-1)`` ring all-reduce steps (s), >= 0. The CodedReduce
        paper's RAR cost model is not known; with ``t_step = 0`` RAR beats CR in the paper's
        setting, so this parameter is exposed and reported rather than hidden.
    overlap : bool
        Whether a CR node receives its children's messages while computing (default) or only after.
    iters : int
        Monte Carlo iterations, >= 2 (the standard error needs two samples).
    rng : None, int, numpy.random.SeedSequence or numpy.random.Generator, optional
        Random state (scientific Python's SPEC 7): a non-negative int seed; a SeedSequence, BitGenerator or
        Generator (advanced) gives one. Each scheme gets its own stream derived from ``(seed, label)``, so a
        scheme's samples do not depend on which other schemes are simulated. ``None``: fresh entropy (not
        reproducible). ``seed=`` is a deprecated alias.
    return_samples, return_responders : bool
        Keep the per-iteration times / the per-iteration masks of used workers in the result.

    Returns
    -------
    SimulationResult
        ``res[label]`` has ``mean`` and ``stderr`` (standard error of the mean) and more.

    Notes
    -----
    Bounds for CR (derived from the models): with ``l = r m``, ``a l + L(n-s) t_c <= T_CR`` always and
    ``E[T_CR] <= a l + (l/mu) H_N + L(n-s) t_c``. For RAR, ``E[T] = a l + (l/mu) H_N + 2(N-1)(t_c/N +
    t_step)`` exactly. With ``mu = inf`` every time is deterministic.

    Examples
    --------
    >>> import gradcodes as gc
    >>> res = gc.simulate(["CR", "UMW"], iters=2000, rng=1)
    >>> round(res["CR"].mean, 1), round(res["UMW"].mean, 1)
    (1.1, 7.8)
    >>> det = gc.simulate("CR", mu=float("inf"), iters=10, rng=0)   # a r m + L (n - s) t_c
    >>> round(det["CR"].mean, 6), det["CR"].stderr
    (1.116, 0.0)
    """
    n = _int("n", n, 2)
    L = _int("L", L, 1)
    s = _int("s", s, 0, n - 1)
    N = check_tree_size(n, L, "entries")
    if s_gc is None:
        s_gc = (s * N) // n
    s_gc = _int("s_gc", s_gc, 0, N - 1)
    m_data = _real("m_data", m_data, positive=True)
    a = _real("a", a)
    if mu is None:
        if a == 0:
            raise ValueError("mu must be given when a == 0 (the default mu = 1/a needs a > 0)")
        mu = 1.0 / a
    mu = _real("mu", mu, positive=True, allow_inf=True)
    t_c = _real("t_c", t_c)
    t_step = _real("t_step", t_step)
    iters = _int("iters", iters, 2)
    check_size("iters (simulated iterations)", iters, "entries")
    check_size("the simulated worker times iters * N", iters * N, "work")
    rng = take_rng(rng, seed)
    entropy = _seed_entropy(rng)
    if not isinstance(overlap, (bool, np.bool_)):
        raise TypeError(f"overlap must be a bool, got {type(overlap).__name__}")
    given: Any = schemes                    # checked item by item below
    if isinstance(given, (str, bytes)) or _code_kind(given) is not None:
        given = [given]
    try:
        items: list[Any] = list(given)
    except TypeError:
        raise TypeError(f"schemes must be a label, a code, or a sequence of them; got {given!r}") from None
    if not items:
        raise ValueError("schemes must not be empty")
    ss = np.random.SeedSequence(entropy)
    from ._families.coded_reduce import coded_reduce_load

    out: dict[str, SchemeResult] = {}
    codes: dict[str, Any] = {}
    for item in items:
        kind = _code_kind(item)
        if kind is None:
            from ._code import LinearCode

            if isinstance(item, LinearCode):
                raise TypeError(f"schemes: a {type(item).__name__} cannot be simulated (only an exact GradientCode, "
                                "as master-worker GC, or a CodedReduceCode); use the label 'SGD' for ignoring "
                                "stragglers")
            if not isinstance(item, str) or item.upper() not in SCHEME_NAMES:
                raise ValueError(f"unknown scheme {item!r}; valid labels are {SCHEME_NAMES} "
                                 "or a CodedReduceCode / GradientCode instance")
            label = item.upper()
        else:
            label = f"{kind}[{item.name}]" if getattr(item, "name", None) else kind
            if label in out and all(c is not item for c in codes.values()):
                base, j = label, 2
                while label in out:
                    label, j = f"{base}#{j}", j + 1
        if label in out:
            raise ValueError(f"scheme {label!r} given twice")
        rng = _rng_for(ss, label)
        details: dict[str, Any] = {}
        if kind == "CR" or label == "CR":
            if kind == "CR":
                tn, tL, ts = item.branching, item.L, item.s
                frac = Fraction(int(item.load), int(item.k))
            else:
                tn, tL, ts = n, L, s
                frac = coded_reduce_load(n, L, s)
            workers = tn * (tn**tL - 1) // (tn - 1)
            points = float(frac * Fraction(m_data))
            times, resp = _sim_tree(rng, iters, tn, tL, ts, points, a, mu, t_c, overlap, return_responders)
            msgs = tn - ts
            details = {"n": tn, "L": tL, "s": ts, "r": frac, "overlap": overlap}
        elif kind == "GC" or label == "GC":
            comm = 1
            if kind == "GC":
                workers, sg, comm = int(item.n), int(item.s), int(item.m)
                frac = Fraction(int(item.load), int(item.k))
            else:
                workers, sg = N, s_gc
                frac = Fraction(sg + 1, N)
            points = float(frac * Fraction(m_data))
            msgs = workers - sg
            # a code with communication factor m sends 1/m of a gradient: t_c / m per message (Ye & Abbe 2018)
            times, resp = _sim_master_worker(rng, iters, workers, msgs, points, a, mu, t_c / comm,
                                             return_responders)
            details = {"s": sg, "m": comm, "load_fraction": frac}
        elif label == "UMW":
            workers, points, msgs = N, m_data / N, N
            times, resp = _sim_master_worker(rng, iters, N, N, points, a, mu, t_c, return_responders)
            details = {"load_fraction": Fraction(1, N)}
        elif label == "SGD":
            workers, points, msgs = N, m_data / N, N - s_gc
            times, resp = _sim_master_worker(rng, iters, N, msgs, points, a, mu, t_c, return_responders)
            details = {"s": s_gc, "load_fraction": Fraction(1, N), "exact": False}
        else:  # RAR
            workers, points, msgs = N, m_data / N, 2 * (N - 1)
            times, resp = _sim_ring(rng, iters, N, points, a, mu, t_c, t_step, return_responders)
            details = {"t_step": t_step, "load_fraction": Fraction(1, N)}
        mean = float(times.mean())
        stderr = float(times.std(ddof=1) / math.sqrt(iters))
        if kind is not None:
            codes[label] = item
        out[label] = SchemeResult(label, mean, stderr, iters, workers, points, msgs,
                                  times if return_samples else None, resp, details)
    params = {"n": n, "L": L, "s": s, "N": N, "s_gc": s_gc, "m_data": m_data, "a": a, "mu": mu, "t_c": t_c,
              "t_step": t_step, "overlap": overlap, "iters": iters, "seed": entropy}
    return SimulationResult(out, params)


def cr_time_bounds(n: int, L: int, s: int, *, m_data: float, a: float, mu: float | None = None,
                   t_c: float) -> tuple[float, float]:
    r"""Bounds on the CR iteration time under the simulator's models (derived).

    Returns ``(lower, upper)`` with ``lower = a l + L (n-s) t_c <= T_CR`` (always, every realisation) and
    ``E[T_CR] <= upper = a l + (l/mu) H_N + L (n-s) t_c``, where ``l = r_CR m_data`` and ``H_N`` is the
    ``N``-th harmonic number.

    Examples
    --------
    >>> from gradcodes._simulate import cr_time_bounds
    >>> lo, hi = cr_time_bounds(12, 2, 5, m_data=49_920, a=5e-5, t_c=0.05)
    >>> round(lo, 3), round(hi, 3)
    (1.116, 3.458)
    """
    from ._families.coded_reduce import coded_reduce_load

    r = coded_reduce_load(n, L, s)
    N = n * (n**L - 1) // (n - 1)
    m_data = _real("m_data", m_data, positive=True)
    a = _real("a", a)
    t_c = _real("t_c", t_c)
    if mu is None:
        if a == 0:
            raise ValueError("mu must be given when a == 0 (the default mu = 1/a needs a > 0)")
        mu = 1.0 / a
    mu = _real("mu", mu, positive=True, allow_inf=True)
    ell = float(r) * m_data
    H = sum(1.0 / i for i in range(1, N + 1))
    lower = a * ell + L * (n - s) * t_c
    upper = lower + (0.0 if math.isinf(mu) else ell / mu * H)
    return lower, upper


# ----------------------------------------------------------------------------------------------------------
# CLI


def add_simulate_parser(subparsers: Any) -> argparse.ArgumentParser:
    """Add the ``simulate`` subcommand to an ``argparse`` subparsers object (called by ``gradcodes.cli``)."""
    p = subparsers.add_parser(
        "simulate",
        help="Monte Carlo iteration time of CodedReduce vs master-worker, SGD and ring all-reduce",
        description="Expected iteration time under the shifted-exponential computation and single-port "
                    "communication models (CodedReduce paper). Defaults: the CodedReduce paper's setting "
                    "(N = 156 = 12 + 144, s = 5, t_c = 0.05 s, a = 5e-5 s/point, a*mu = 1, 49,920 points).",
    )
    p.add_argument("--schemes", default=",".join(SCHEME_NAMES),
                   help="comma-separated subset of " + ",".join(SCHEME_NAMES) + " (default: all)")
    p.add_argument("-n", type=int, default=12, help="children per tree node (default 12)")
    p.add_argument("-L", type=int, default=2, help="tree depth (default 2)")
    p.add_argument("-s", type=int, default=5, help="stragglers tolerated per parent (default 5)")
    p.add_argument("--s-gc", type=int, default=None,
                   help="stragglers tolerated/ignored by GC and SGD (default floor(s*N/n))")
    p.add_argument("--m-data", type=float, default=49_920, help="data points per iteration (default 49920)")
    p.add_argument("-a", type=float, default=5e-5, help="seconds per data point (default 5e-5)")
    p.add_argument("--mu", type=float, default=None,
                   help="exponential rate per data point; 'inf' = deterministic (default 1/a)")
    p.add_argument("--t-c", type=float, default=0.05, help="seconds per message (default 0.05)")
    p.add_argument("--t-step", type=float, default=0.0, help="extra cost per ring all-reduce step (default 0)")
    p.add_argument("--no-overlap", action="store_true",
                   help="CR parents receive only after finishing their own computation")
    p.add_argument("--iters", type=int, default=10_000, help="Monte Carlo iterations (default 10000)")
    p.add_argument("--seed", type=int, default=0, help="random seed (default 0)")
    p.set_defaults(func=run_simulate_cli)
    return p


def run_simulate_cli(args: argparse.Namespace) -> int:
    """Run ``gradcodes simulate`` from parsed arguments; prints the table. Returns the exit status."""
    labels = [x.strip() for x in args.schemes.split(",") if x.strip()]
    res = simulate(labels, n=args.n, L=args.L, s=args.s, s_gc=args.s_gc, m_data=args.m_data, a=args.a,
                   mu=args.mu, t_c=args.t_c, t_step=args.t_step, overlap=not args.no_overlap,
                   iters=args.iters, rng=args.seed)
    if getattr(args, "json", False):
        from .cli import _emit

        _emit(args, res)
        return 0
    p = res.params
    print(f"tree n={p['n']} L={p['L']} s={p['s']} (N={p['N']}), s_gc={p['s_gc']}, m_data={p['m_data']:g}, "
          f"a={p['a']:g} s/pt, mu={p['mu']:g}/s, t_c={p['t_c']:g} s, t_step={p['t_step']:g} s, "
          f"iters={p['iters']}, seed={p['seed']}")
    print(res.table("CR" if "CR" in res.schemes else None))
    return 0
