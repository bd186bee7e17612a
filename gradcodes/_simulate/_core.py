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

import math
import numbers
from collections.abc import Sequence
from fractions import Fraction
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    from .._core.code import LinearCode

from .._base.aliases import RNGLike
from .._base.errors import GradcodesTypeError, GradcodesValueError
from .._base.validate import check_rng, check_size, check_tree_size
from ._models import _rng_for
from ._policies import FixedK, WaitPolicy, as_policy
from ._result import SchemeResult, SimulationResult
from ._schemes import _sim_master_worker, _sim_policy, _sim_ring, _sim_tree
from ._workers import PersistentStragglers, ShiftedExponentialWorkers, WorkerModel

__all__ = ["simulate", "cr_time_bounds", "SCHEME_NAMES", "LABELS"]

SCHEME_NAMES = ("CR", "UMW", "GC", "SGD", "RAR")
#: Every label (the default ``schemes`` are :data:`SCHEME_NAMES`; ``"TAR"`` is simulated on request).
LABELS = (*SCHEME_NAMES, "TAR")

_SCHEME_HELP = {
    "CR": "CodedReduce on the (branching, L)-regular tree, s stragglers per parent",
    "UMW": "uncoded master-worker: load 1/N, the master waits for all N messages",
    "GC": "master-worker gradient coding: load (s_gc+1)/N, the master waits for N - s_gc messages",
    "SGD": "ignore-stragglers SGD: load 1/N, the master waits for N - s_gc messages (inexact)",
    "RAR": "ring all-reduce: load 1/N, all N compute, then 2(N-1) steps of alpha + (t_c - alpha)/N (+ t_step)",
    "TAR": "tree all-reduce: load 1/N, all N compute, then 2 ceil(log2 N) gradient-sized steps of t_c",
}


# ----------------------------------------------------------------------------------------------------------
# validation helpers (kept local so the simulator has no dependency on the code classes)


def _int(name: str, value: Any, lo: int, hi: int | None = None) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise GradcodesTypeError(f"{name} must be an int, got {type(value).__name__}")
    value = int(value)
    if value < lo or (hi is not None and value > hi):
        rng = f"in [{lo}, {hi}]" if hi is not None else f">= {lo}"
        raise GradcodesValueError(f"{name} must be an integer {rng}, got {value}")
    return value


def _real(name: str, value: Any, *, positive: bool = False, allow_inf: bool = False) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating, Fraction)):
        raise GradcodesTypeError(f"{name} must be a real number, got {type(value).__name__}")
    v = float(value)
    if math.isnan(v) or (math.isinf(v) and not allow_inf):
        raise GradcodesValueError(f"{name} must be finite, got {value}")
    if positive and not v > 0:
        raise GradcodesValueError(f"{name} must be > 0, got {value}")
    if not positive and v < 0:
        raise GradcodesValueError(f"{name} must be >= 0, got {value}")
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
    """'CR' for a CodedReduce tree code, 'PS' for a partial-straggler protocol, 'GC' for an exact master-worker code,
    'AC' for an approximate code, else None."""
    from .._core.code import ApproximateCode, GradientCode
    from .._families.coded_reduce import CodedReduceCode
    from .._families.partial_stragglers import PartialStragglerCode

    if isinstance(obj, PartialStragglerCode):       # rows are messages, not workers: the per-chunk model
        return "PS"
    if isinstance(obj, CodedReduceCode):
        return "CR"
    if isinstance(obj, GradientCode):
        return "GC"
    if isinstance(obj, ApproximateCode):
        return "AC"
    return None


class _Workers:
    """A stand-in code for the labelled master--worker schemes (``n`` workers, ``s`` stragglers)."""

    def __init__(self, n: int, s: int) -> None:
        self.n, self.s, self.name = n, s, "workers"


def _rate(a: float, mu: Any) -> float:
    """The checked straggling rate ``mu`` (default ``1/a``, which needs ``a > 0``)."""
    if mu is None:
        if a == 0:
            raise GradcodesValueError("mu must be given when a == 0 (the default mu = 1/a needs a > 0)")
        mu = 1.0 / a
    return _real("mu", mu, positive=True, allow_inf=True)


def _scalar_or_none(value: Any) -> bool:
    return value is None or np.ndim(value) == 0


def simulate(
    schemes: str | LinearCode | Sequence[str | LinearCode] = SCHEME_NAMES,
    *,
    branching: int = 12,
    L: int = 2,
    s: int = 5,
    s_gc: int | None = None,
    m_data: float = 49_920,
    a: float | Sequence[float] = 5e-5,
    mu: float | Sequence[float] | None = None,
    t_c: float = 0.05,
    t_step: float = 0.0,
    alpha: float = 0.0,
    overlap: bool = True,
    iters: int = 10_000,
    rng: RNGLike = None,
    return_samples: bool = False,
    return_responders: bool = False,
    policy: str | WaitPolicy | None = None,
    model: WorkerModel | None = None,
    deadline: float | None = None,
    time_budget: float | None = None,
    progress: bool | None = None,
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
    ``"RAR"``   :math:`m/N`                  :math:`\max_i T_i + 2(N-1)(\alpha + (t_c-\alpha)/N + t_{step})`
    ``"TAR"``   :math:`m/N`                  :math:`\max_i T_i + 2\lceil\log_2 N\rceil t_c` (on request)
    ==========  ===========================  ==========================================================

    **Communication (alpha--beta).** A message of ``b`` bytes takes ``alpha + b / beta`` (latency plus bytes over
    bandwidth; Hockney 1994; Thakur, Rabenseifner & Gropp, "Optimization of collective communication operations
    in MPICH", IJHPCA 2005, Section 2). A gradient-sized message takes ``t_c = alpha + G / beta``, so a ring
    all-reduce step, which sends ``1/N`` of a gradient, takes ``alpha + (t_c - alpha) / N``; the ring needs
    ``2(N-1)`` steps (reduce-scatter then all-gather) and a binomial-tree all-reduce (reduce then broadcast)
    ``2 ceil(log2 N)`` gradient-sized steps. Every master--worker and CodedReduce message is gradient-sized
    (``t_c``, or ``t_c / m`` for a code with communication factor ``m``), so one ``alpha`` prices every scheme
    alike; ``alpha = 0`` is the bandwidth-only model.

    Parameters
    ----------
    schemes : str, code, or sequence of them
        Scheme labels from ``("CR", "UMW", "GC", "SGD", "RAR", "TAR")`` (default all but ``"TAR"``) and/or
        code objects: a
        :class:`~gradcodes.CodedReduceCode` is simulated as CR with its own ``(branching, L, s)`` and load; an
        exact :class:`~gradcodes.GradientCode` as master--worker GC with its own ``n``, ``s``, load
        fraction ``load/k`` and message time ``t_c/m`` (a code with ``m > 1``, e.g. :func:`gradcodes.ye_abbe`,
        sends ``1/m`` of a gradient), so any code can be compared; a
        :class:`~gradcodes.PartialStragglerCode` as ``"PS[name]"``, a message per chunk (the model of
        :func:`gradcodes.simulate_partial` for ``m_data / k`` points per chunk, every message ``t_c / m``, received
        one at a time), ending when every chunk has ``m`` messages; ``details["classical_mean"]`` is the classical
        protocol of the same assignment on the same draws, and its ``responders`` mark received *messages*.
        Codes with equal names get labels ``"GC[name]"``, ``"GC[name]#2"``, ...
    branching, L, s : int
        The tree for ``"CR"``: ``branching = n >= 2`` children per node, ``L >= 1`` levels, ``0 <= s <= n-1``
        stragglers per parent (CodedReduce's notation, where ``n`` is the branching factor); ``N`` also sets the
        number of workers of the other labelled schemes.
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
    alpha : float
        Latency per message (s), ``0 <= alpha <= t_c``: the alpha--beta model above. The CodedReduce paper's
        reported 1.8x speedup of CR over RAR corresponds to ``alpha`` of about 5.9 ms with ``t_c = 50`` ms (see
        ``docs/simulate.md``); ``alpha = 0`` makes RAR faster than CR in the paper's setting.
    t_step : float
        Extra fixed cost of each ring all-reduce step (s), >= 0, on top of ``alpha`` (kept for older scripts;
        ``alpha`` is the model's latency).
    overlap : bool
        Whether a CR node receives its children's messages while computing (default) or only after.
    iters : int
        Monte Carlo iterations, >= 2 (the standard error needs two samples).
    rng : None, int, numpy.random.SeedSequence or numpy.random.Generator, optional
        Random state (scientific Python's SPEC 7): a non-negative int seed; a SeedSequence, BitGenerator or
        Generator (advanced) gives one. Each scheme gets its own stream derived from ``(seed, label)``, so a
        scheme's samples do not depend on which other schemes are simulated. ``None``: fresh entropy (not
        reproducible).
    return_samples, return_responders : bool
        Keep the per-iteration times / the per-iteration masks of used workers in the result.
    policy : {"earliest", "first", "all"} or WaitPolicy, optional
        When the master of a code stops waiting (the wait policies, :class:`gradcodes.WaitPolicy`). Default for an exact
        code: ``"earliest"``, the first arrival after which the responders can decode
        (:meth:`gradcodes.LinearCode.decodable`; fractional repetition: the maximum over groups of the
        minimum within each group); ``"first"``: the first ``n - s`` messages (the classical rule, the same
        draws as before this option existed); ``"all"``; or a policy object (``FixedK(k)``,
        ``BackupWorkers(b)``). Approximate codes default to the first ``n - s`` (``n`` without ``s``).
        Labels keep their own rules.
    model : WorkerModel, optional
        Computation times of the master--worker schemes: :class:`~gradcodes.PersistentStragglers` (a two-state
        Markov chain per worker over the shifted exponential of ``a``, ``mu``), :class:`~gradcodes.TraceReplay`
        (measured per-worker, per-iteration times) or :class:`~gradcodes.ShiftedExponentialWorkers`. ``a`` and
        ``mu`` may also be sequences, one entry per worker (unequal speeds).
    deadline : float, optional
        Approximate codes: the master stops at this time (s) with the messages received by then, if that
        comes before its count; ``res[label].error`` is the mean of ``||A_F B - E||`` over the iterations. A
        partial-straggler protocol (``PS[...]``) stops at ``min(decode time, deadline)`` with the least-squares
        estimate of its received chunk messages (``PartialStragglerCode.estimate``), reported the same way.
    time_budget : float, optional
        Seconds (``>= 0``, wall clock). Runs of 64, 512, 4,096, ... iterations (every scheme) measure the time per
        iteration while the next one fits, and the simulation then runs as many of the ``iters`` iterations as fit
        in half the budget left at that rate (a margin for costs that grow faster than linearly with the arrays;
        at least 2, and the last measuring run when it has more). The result is exactly ``simulate(...,
        iters=that number)`` with the same seed, so it can be reproduced without a clock; ``params["iters"]``
        says how many ran, ``params["iters_requested"]`` how many were asked for. The number depends on the
        machine's speed.
    progress : bool, optional
        One line on stderr with the iterations and the predicted time (the measuring runs predict it); default: only
        when a time budget is given and the run is predicted to take more than 10 s.

    Returns
    -------
    SimulationResult
        ``res[label]`` has ``mean`` and ``stderr`` (standard error of the mean) and more.

    Raises
    ------
    GradcodesValueError
        If a parameter is out of its range (the message names the parameter and the range), a scheme label is unknown
        or given twice, or an option does not apply to the schemes.
    GradcodesTypeError
        If ``schemes``, ``model``, ``policy`` or ``overlap`` has the wrong type.

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
    if progress is not None and not isinstance(progress, (bool, np.bool_)):
        raise GradcodesTypeError(f"progress must be a bool or None, got {type(progress).__name__}")
    if time_budget is not None or progress:
        kw = {"schemes": schemes, "branching": branching, "L": L, "s": s, "s_gc": s_gc, "m_data": m_data, "a": a,
              "mu": mu, "t_c": t_c, "t_step": t_step, "alpha": alpha, "overlap": overlap,
              "return_samples": return_samples, "return_responders": return_responders, "policy": policy,
              "model": model, "deadline": deadline}
        return _budgeted(kw, iters, rng, time_budget, progress)
    n = _int("branching", branching, 2)
    L = _int("L", L, 1)
    s = _int("s", s, 0, n - 1)
    N = check_tree_size(n, L, "entries")
    if s_gc is None:
        s_gc = (s * N) // n
    s_gc = _int("s_gc", s_gc, 0, N - 1)
    m_data = _real("m_data", m_data, positive=True)
    scalar = _scalar_or_none(a) and _scalar_or_none(mu)
    if scalar:
        a = _real("a", a)
        mu = _rate(a, mu)
    if model is not None and not isinstance(model, WorkerModel):
        raise GradcodesTypeError(f"model must be a WorkerModel (ShiftedExponentialWorkers, PersistentStragglers, "
                        f"TraceReplay), got {type(model).__name__}")
    t_c = _real("t_c", t_c)
    t_step = _real("t_step", t_step)
    alpha = _real("alpha", alpha)
    if alpha > t_c:
        raise GradcodesValueError(f"alpha (latency per message) must be at most t_c = {t_c:g} (a gradient-sized "
                                  f"message "
                         f"takes t_c = alpha + bytes/bandwidth), got {alpha:g}")
    if deadline is not None:
        deadline = _real("deadline", deadline, positive=True)
    if policy is not None and not isinstance(policy, (str, WaitPolicy)):
        raise GradcodesTypeError(f"policy must be 'earliest', 'first', 'all' or a WaitPolicy, got "
                                 f"{type(policy).__name__}")
    iters = _int("iters", iters, 2)
    check_size("iters (simulated iterations)", iters, "entries")
    check_size("the simulated worker times iters * N", iters * N, "work")
    entropy = _seed_entropy(rng)
    if not isinstance(overlap, (bool, np.bool_)):
        raise GradcodesTypeError(f"overlap must be a bool, got {type(overlap).__name__}")
    given: Any = schemes                    # checked item by item below
    if isinstance(given, (str, bytes)) or _code_kind(given) is not None:
        given = [given]
    try:
        items: list[Any] = list(given)
    except TypeError:
        raise GradcodesTypeError(f"schemes must be a label, a code, or a sequence of them; got {given!r}") from None
    if not items:
        raise GradcodesValueError("schemes must not be empty")
    ss = np.random.SeedSequence(entropy)
    from .._families.coded_reduce import coded_reduce_load

    def worker_model(workers: int) -> WorkerModel | None:
        """The computation model of a master--worker scheme (None: the classical i.i.d. draws)."""
        base = None if scalar else ShiftedExponentialWorkers(a, mu)
        if base is not None:
            base.params(workers)                                    # validate the per-worker lengths now
        if model is None:
            return base
        if isinstance(model, PersistentStragglers) and model.base is None:
            return model.with_base(base if base is not None else ShiftedExponentialWorkers(a, mu))
        return model

    out: dict[str, SchemeResult] = {}
    codes: dict[str, Any] = {}
    for item in items:
        kind = _code_kind(item)
        if kind is None:
            from .._core.code import LinearCode

            if isinstance(item, LinearCode):
                raise GradcodesTypeError(f"schemes: a {type(item).__name__} cannot be simulated (an exact "
                                         f"GradientCode, an "
                                "ApproximateCode or a CodedReduceCode)")
            if not isinstance(item, str) or item.upper() not in LABELS:
                raise GradcodesValueError(f"unknown scheme {item!r}; valid labels are {LABELS} "
                                 "or a CodedReduceCode / GradientCode / ApproximateCode instance")
            label = item.upper()
        else:
            label = f"{kind}[{item.name}]" if getattr(item, "name", None) else kind
            if label in out and all(c is not item for c in codes.values()):
                base, j = label, 2
                while label in out:
                    label, j = f"{base}#{j}", j + 1
        if label in out:
            raise GradcodesValueError(f"scheme {label!r} given twice")
        rng = _rng_for(ss, label)
        details: dict[str, Any] = {}
        error = None
        if kind == "CR" or label == "CR":
            if not scalar or model is not None:
                raise GradcodesValueError("per-worker a/mu and worker models are simulated for master-worker schemes "
                                          "only; "
                                 "CR uses scalar a and mu")
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
            details = {"branching": tn, "L": tL, "s": ts, "r": frac, "overlap": overlap}
        elif kind == "PS":                      # a message per chunk (gradcodes._simulate._partial)
            from ._partial import _sim_partial_scheme

            workers = int(item.workers)
            chunk_model = worker_model(workers) or ShiftedExponentialWorkers(a, mu)
            times, resp, msgs, details = _sim_partial_scheme(rng, iters, item, m_data, chunk_model, t_c / int(item.m),
                                                             return_responders, policy, deadline)
            points = float(details["load_fraction"] * Fraction(m_data))
            error = details.get("expected_error")
        elif kind in ("GC", "AC") or label in ("GC", "UMW", "SGD"):
            comm = 1
            if kind in ("GC", "AC"):
                workers, comm = int(item.n), int(item.m)
                sg = int(item.s) if getattr(item, "s", None) is not None else 0
                frac = Fraction(int(item.load), int(item.k))
                if policy is None and int(getattr(item, "adversaries", 0) or 0) > 0:
                    # a code correcting `adversaries` wrong messages (gc.adversarial_gc) waits for n - stragglers,
                    # as the MPI master does: any n - s responders with a wrong ones decode (K + 2a of them)
                    sg = int(item.stragglers)
                    pol: WaitPolicy = FixedK(workers - sg)
                else:
                    pol = as_policy(policy, item)
                target: Any = item
            else:
                workers = N
                sg = {"GC": s_gc, "SGD": s_gc, "UMW": 0}[label]
                frac = Fraction(sg + 1, N) if label == "GC" else Fraction(1, N)
                pol = FixedK(None)
                target = _Workers(N, sg)
            if kind == "AC" and deadline is None and policy is None and getattr(item, "s", None) is None:
                pol = FixedK(workers)
            points = float(frac * Fraction(m_data))
            own = None
            if kind in ("GC", "AC"):
                own = _own_points(item, m_data)           # each worker computes its own load (row support)
                if own is not None:
                    details["loads"] = np.asarray(item.loads).tolist()
            wm = worker_model(workers)
            pts: Any = points if own is None else own
            # a code with communication factor m sends 1/m of a gradient: t_c / m per message (Ye & Abbe 2018)
            if isinstance(pol, FixedK) and type(pol) is FixedK and pol.k is None and wm is None and deadline is None:
                msgs = workers - sg                                  # the classical first n - s: unchanged draws
                times, resp = _sim_master_worker(rng, iters, workers, msgs, pts, a, mu, t_c / comm,
                                                 return_responders or kind == "AC")
            else:
                if deadline is not None and kind != "AC":
                    raise GradcodesValueError("deadline: only approximate codes may stop before they can decode")
                times, resp, counts = _sim_policy(rng, iters, target, pol, pts, a, mu, wm, t_c / comm,
                                                  return_responders or kind == "AC", deadline)
                msgs = int(np.max(counts))
                details["mean_messages"] = float(np.mean(counts))
            details.update({"s": sg, "m": comm, "load_fraction": frac, "policy": str(pol)})
            if wm is not None:
                details["model"] = wm.label
            if label == "SGD" or kind == "AC":
                details["exact"] = False
            if kind == "AC":
                assert resp is not None
                error = _expected_error(item, resp)
                details["expected_error"] = error
                if not return_responders:
                    resp = None
            if label == "UMW":
                details = {"load_fraction": Fraction(1, N)}
        elif label == "RAR":
            workers, points, msgs = N, m_data / N, 2 * (N - 1)
            wm = worker_model(N)
            times, resp = _sim_ring(rng, iters, N, points, a, mu, t_c, t_step, return_responders, wm, alpha)
            details = {"t_step": t_step, "alpha": alpha, "load_fraction": Fraction(1, N)}
        else:  # TAR
            steps = 2 * math.ceil(math.log2(N))
            workers, points, msgs = N, m_data / N, steps
            wm = worker_model(N)
            times, resp = _sim_ring(rng, iters, N, points, a, mu, t_c, 0.0, return_responders, wm, 0.0,
                                    comm=steps * t_c)
            details = {"alpha": alpha, "steps": steps, "load_fraction": Fraction(1, N)}
        mean = float(times.mean())
        stderr = float(times.std(ddof=1) / math.sqrt(iters))
        if kind is not None:
            codes[label] = item
        out[label] = SchemeResult(label, mean, stderr, iters, workers, points, msgs,
                                  times if return_samples else None, resp, details, error)
    params = {"branching": n, "L": L, "s": s, "N": N, "s_gc": s_gc, "m_data": m_data, "a": a, "mu": mu, "t_c": t_c,
              "t_step": t_step, "alpha": alpha, "overlap": overlap, "iters": iters, "seed": entropy,
              "policy": None if policy is None else str(policy), "model": None if model is None else model.label,
              "deadline": deadline}
    return SimulationResult(out, params)


#: iterations of the pilot run that prices an iteration for ``simulate(time_budget=)``
_PILOT = 64


def _budgeted(kw: dict[str, Any], iters: Any, rng: Any, time_budget: Any, progress: Any) -> SimulationResult:
    """:func:`simulate` under a time budget or with a progress line: a pilot run prices one iteration, then the
    iterations that fit run with the same seed (the draws of ``simulate(..., iters=that number)``)."""
    import sys
    import time

    iters = _int("iters", iters, 2)
    budget = None if time_budget is None else _real("time_budget", time_budget)   # (progress: checked by simulate)
    entropy = _seed_entropy(rng)
    if entropy is None:                                   # fresh entropy, drawn once: pilot and run share it
        entropy = int(np.random.SeedSequence().generate_state(2, np.uint64)[0] >> np.uint64(1))
    t0 = time.perf_counter()
    size = min(iters, _PILOT)
    while True:                                 # runs 8 times larger while the next one fits the budget
        t1 = time.perf_counter()
        res = simulate(**kw, iters=max(2, size), rng=entropy)
        took = time.perf_counter() - t1
        nxt = min(iters, 8 * size)
        if size >= iters or budget is None or took * nxt / size > 0.5 * (budget - (time.perf_counter() - t0)):
            break
        size = nxt
    per_iter = took / max(2, size)                       # the largest run's, set-up included: on the safe side
    left = None if budget is None else budget - (time.perf_counter() - t0)
    chosen = iters if left is None else int(min(iters, max(2.0, 0.5 * left / per_iter)))
    if chosen <= size:                                   # the last run is the answer
        chosen = max(2, size)
    predicted = 0.0 if chosen == size else chosen * per_iter
    if progress or (progress is None and predicted > 10.0):
        cut = "" if chosen == iters else f" of {iters:,} requested (time budget {budget:g} s)"
        print(f"simulate: {chosen:,} iterations{cut}, about {predicted:.1f} s at {1 / per_iter:,.0f} iterations/s",
              file=sys.stderr, flush=True)
    if chosen != max(2, size):
        res = simulate(**kw, iters=chosen, rng=entropy)
    res.params["iters_requested"] = iters
    res.params["time_budget"] = budget
    return res


def _own_points(code: Any, m_data: float) -> np.ndarray | None:
    """Each worker's data points ``(L_i / k) m_data`` (``L_i`` its row support), or None when every worker stores
    the same number of partitions (then the scalar ``(load / k) m_data`` is used, the same draws as always)."""
    loads = np.asarray(code.loads)
    if loads.size == 0 or loads.min() == loads.max():
        return None
    k = int(code.k)
    return np.array([float(Fraction(int(li), k) * Fraction(m_data)) for li in loads.tolist()])


def _expected_error(code: Any, resp: np.ndarray) -> float:
    """Mean of ``||A_F B - E||`` (Frobenius) over the iterations' responder sets (one decode per distinct set)."""
    uniq, inv = np.unique(resp, axis=0, return_inverse=True)
    errs = np.array([code.approximation_error(np.flatnonzero(row)) if row.any() else
                     float(np.sqrt(code.m * code.k)) for row in uniq])
    return float(errs[np.asarray(inv).reshape(-1)].mean())


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
    from .._families.coded_reduce import coded_reduce_load

    r = coded_reduce_load(n, L, s)
    N = n * (n**L - 1) // (n - 1)
    m_data = _real("m_data", m_data, positive=True)
    a = _real("a", a)
    t_c = _real("t_c", t_c)
    mu = _rate(a, mu)
    ell = float(r) * m_data
    H = sum(1.0 / i for i in range(1, N + 1))
    lower = a * ell + L * (n - s) * t_c
    upper = lower + (0.0 if math.isinf(mu) else ell / mu * H)
    return lower, upper
