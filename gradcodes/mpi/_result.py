"""Per-iteration measurements of a run and the matching :func:`gradcodes.simulate` prediction."""

from __future__ import annotations

import csv
import json
import math
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from .._base.aliases import RNGLike
from .._base.validate import check_rng

if TYPE_CHECKING:
    from .._core.code import LinearCode
    from .._runtime.delays import Delay

__all__ = ["RunResult", "predict"]


@dataclass
class RunResult:
    """Measurements of one run (on the master).

    Attributes
    ----------
    scheme : str
        The code's name (or ``"allreduce"``).
    layout : str
        ``"flat"``, ``"tree"`` or ``"allreduce"``.
    workers, need : int
        Number of workers; messages the master waited for.
    time, wait, decode : ndarray, shape (iterations,)
        Seconds per iteration (broadcast to aggregated gradient), of which waiting for messages and combining
        (``"allreduce"``: worker 1's iteration, of which its time inside ``Allreduce``; no decode).
    used : ndarray of bool, shape (iterations, children)
        Which of the master's children were used (level-1 workers for a tree).
    loss : ndarray or None
        ``loss(params)`` after each step, when a loss was given.
    error_estimate : ndarray
        The code's predicted relative error of each decode (NaN when not available).
    delay : str
        The injected straggling.
    predicted : float or None
        :func:`gradcodes.simulate`'s mean iteration time for the same code and delay model, when it models it.
    params : dict
        Everything needed to repeat the run.
    stale : int
        Messages from earlier iterations the master dropped.
    failures : dict of int to str
        Workers (rank: what happened) that did not say goodbye within the grace after the master's last
        iteration (frozen in their compute, stopped or gone): the run had finished, so :func:`gradcodes.mpi.train`
        returns this result (and warns) instead of raising.

    Examples
    --------
    :func:`gradcodes.mpi.train` returns one on the master; built by hand here:

    >>> import numpy as np
    >>> from gradcodes.mpi import RunResult
    >>> run = RunResult("cyclic_repetition", "flat", 4, 3, time=np.array([0.2, 0.1, 0.12]),
    ...                 wait=np.array([0.1, 0.05, 0.06]), decode=np.full(3, 0.001),
    ...                 used=np.array([[1, 1, 1, 0], [1, 0, 1, 1], [0, 1, 1, 1]], dtype=bool))
    >>> run.iterations, run.elapsed.round(2).tolist(), run.failures
    (3, [0.2, 0.3, 0.42], {})
    """

    scheme: str
    layout: str
    workers: int
    need: int
    time: np.ndarray
    wait: np.ndarray
    decode: np.ndarray
    used: np.ndarray
    loss: np.ndarray | None = None
    error_estimate: np.ndarray | None = None
    delay: str = "none"
    predicted: float | None = None
    params: dict[str, Any] = field(default_factory=dict)
    stale: int = 0
    failures: dict[int, str] = field(default_factory=dict)

    @property
    def iterations(self) -> int:
        return int(self.time.size)

    @property
    def elapsed(self) -> np.ndarray:
        """Cumulative wall time at the end of each iteration (seconds)."""
        return np.cumsum(self.time)

    def summary(self, skip: int = 1) -> dict[str, Any]:
        """Mean and median iteration time (the first ``skip`` iterations, which include set-up, are left out).

        Parameters
        ----------
        skip : int, default 1
            Iterations left out at the start.

        Returns
        -------
        dict
            The scheme, layout, sizes and the means and medians of the times.

        Examples
        --------
        >>> import numpy as np
        >>> from gradcodes.mpi import RunResult
        >>> run = RunResult("cyclic_repetition", "flat", 4, 3, time=np.array([0.2, 0.1, 0.12]),
        ...                 wait=np.array([0.1, 0.05, 0.06]), decode=np.full(3, 0.001),
        ...                 used=np.array([[1, 1, 1, 0], [1, 0, 1, 1], [0, 1, 1, 1]], dtype=bool))  # as train returns
        >>> s = run.summary()                      # iterations 1 and 2
        >>> s["iterations"], round(s["mean_time"], 6), s["mean_workers_used"]
        (3, 0.11, 3.0)
        """
        t = self.time[skip:] if self.time.size > skip else self.time
        out = {"scheme": self.scheme, "layout": self.layout, "workers": self.workers, "need": self.need,
               "iterations": self.iterations, "mean_time": float(np.mean(t)), "median_time": float(np.median(t)),
               "mean_wait": float(np.mean(self.wait[skip:] if self.wait.size > skip else self.wait)),
               "mean_decode": float(np.mean(self.decode[skip:] if self.decode.size > skip else self.decode)),
               "mean_workers_used": float(self.used.sum(axis=1).mean()) if self.used.size else float("nan"),
               "predicted": self.predicted, "delay": self.delay, "stale_dropped": self.stale}
        if self.loss is not None and self.loss.size:
            out["final_loss"] = float(self.loss[-1])
        if self.predicted:
            out["measured_over_predicted"] = float(np.mean(t)) / self.predicted
        return out

    def table(self, rows: int = 10) -> str:
        """A per-iteration table (first ``rows`` iterations) and a summary line.

        Parameters
        ----------
        rows : int, default 10
            Iterations shown.

        Returns
        -------
        str
            A header line, the table and the summary line.

        Examples
        --------
        >>> import numpy as np
        >>> from gradcodes.mpi import RunResult
        >>> run = RunResult("cyclic_repetition", "flat", 4, 3, time=np.array([0.2, 0.1, 0.12]),
        ...                 wait=np.array([0.1, 0.05, 0.06]), decode=np.full(3, 0.001),
        ...                 used=np.array([[1, 1, 1, 0], [1, 0, 1, 1], [0, 1, 1, 1]], dtype=bool))  # as train returns
        >>> print(run.table(rows=1).splitlines()[0])
        cyclic_repetition (flat, 4 workers, waits for 3; delay: none)
        """
        from .._base.output import format_table

        table = []
        for t in range(min(rows, self.iterations)):
            row = {"iter": str(t), "time (s)": f"{self.time[t]:.4f}", "wait (s)": f"{self.wait[t]:.4f}",
                   "decode (s)": f"{self.decode[t]:.5f}", "used": str(int(self.used[t].sum()))}
            if self.loss is not None:
                row["loss"] = f"{self.loss[t]:.6g}"
            table.append(row)
        cols = ["iter", "time (s)", "wait (s)", "decode (s)", "used"] + (["loss"] if self.loss is not None else [])
        lines = [f"{self.scheme} ({self.layout}, {self.workers} workers, waits for {self.need}; delay: "
                 f"{self.delay})", format_table(table, cols, right=cols)]
        s = self.summary()
        tail = f"mean {s['mean_time']:.4f} s/iteration, median {s['median_time']:.4f} s"
        if self.predicted:
            ratio = s["mean_time"] / self.predicted
            tail += f"; gc.simulate predicts {self.predicted:.4f} s (measured/predicted {ratio:.2f})"
        lines.append(tail)
        return "\n".join(lines)

    def __str__(self) -> str:
        return self.table()

    def records(self) -> list[dict[str, Any]]:
        """One dict per iteration (for CSV).

        Returns
        -------
        list of dict
            Keys ``iteration``, ``time``, ``elapsed``, ``wait``, ``decode``, ``used`` (and ``loss``,
            ``error_estimate`` when recorded).

        Examples
        --------
        >>> import numpy as np
        >>> from gradcodes.mpi import RunResult
        >>> run = RunResult("cyclic_repetition", "flat", 4, 3, time=np.array([0.2, 0.1, 0.12]),
        ...                 wait=np.array([0.1, 0.05, 0.06]), decode=np.full(3, 0.001),
        ...                 used=np.array([[1, 1, 1, 0], [1, 0, 1, 1], [0, 1, 1, 1]], dtype=bool))  # as train returns
        >>> run.records()[0]["used"]                 # the workers used, space-separated
        '0 1 2'
        """
        out = []
        for t in range(self.iterations):
            r = {"iteration": t, "time": float(self.time[t]), "elapsed": float(self.elapsed[t]),
                 "wait": float(self.wait[t]), "decode": float(self.decode[t]),
                 "used": " ".join(str(i) for i in np.flatnonzero(self.used[t]))}
            if self.loss is not None:
                r["loss"] = float(self.loss[t])
            if self.error_estimate is not None:
                r["error_estimate"] = float(self.error_estimate[t])
            out.append(r)
        return out

    def to_csv(self, path: str) -> None:
        """Write one row per iteration.

        Parameters
        ----------
        path : str
            The CSV file written (replaced if it exists).

        Examples
        --------
        >>> import numpy as np
        >>> from gradcodes.mpi import RunResult
        >>> run = RunResult("cyclic_repetition", "flat", 4, 3, time=np.array([0.2, 0.1, 0.12]),
        ...                 wait=np.array([0.1, 0.05, 0.06]), decode=np.full(3, 0.001),
        ...                 used=np.array([[1, 1, 1, 0], [1, 0, 1, 1], [0, 1, 1, 1]], dtype=bool))  # as train returns
        >>> import os, tempfile
        >>> path = os.path.join(tempfile.mkdtemp(), "run.csv")
        >>> run.to_csv(path)
        >>> open(path).readline().strip()
        'iteration,time,elapsed,wait,decode,used'
        """
        rec = self.records()
        with open(path, "w", newline="") as fh:
            w = csv.DictWriter(fh, fieldnames=list(rec[0]) if rec else ["iteration"])
            w.writeheader()
            w.writerows(rec)

    def to_json(self, path: str | None = None) -> str:
        """The summary, parameters and per-iteration records as JSON (written to ``path`` if given).

        Parameters
        ----------
        path : str, optional
            A file to write the JSON to.

        Returns
        -------
        str
            The JSON text.

        Examples
        --------
        >>> import numpy as np
        >>> from gradcodes.mpi import RunResult
        >>> run = RunResult("cyclic_repetition", "flat", 4, 3, time=np.array([0.2, 0.1, 0.12]),
        ...                 wait=np.array([0.1, 0.05, 0.06]), decode=np.full(3, 0.001),
        ...                 used=np.array([[1, 1, 1, 0], [1, 0, 1, 1], [0, 1, 1, 1]], dtype=bool))  # as train returns
        >>> import json
        >>> sorted(json.loads(run.to_json()))
        ['failures', 'iterations', 'params', 'summary']
        """
        def clean(v: Any) -> Any:
            if isinstance(v, float) and not math.isfinite(v):
                return None
            return v
        doc = {"summary": {k: clean(v) for k, v in self.summary().items()}, "params": self.params,
               "failures": {str(r): what for r, what in self.failures.items()},
               "iterations": [{k: clean(v) for k, v in r.items()} for r in self.records()]}
        text = json.dumps(doc, indent=1, default=str)
        if path is not None:
            with open(path, "w") as fh:
                fh.write(text)
        return text


def predict(code: LinearCode | str, delay: Delay, *, workers: int, need: int, t_c: float = 0.0, iters: int = 20_000,
            rng: RNGLike = None, policy: Any = None) -> float | None:
    """:func:`gradcodes.simulate`'s mean iteration time for a run, or None when it does not model the run.

    Modelled: a :class:`~gradcodes.mpi.ModelDelay` (unequal, persistent or replayed workers) with an exact code, a
    :class:`~gradcodes.mpi.ShiftedExponential` delay with an exact code (GC), a CodedReduce tree
    (CR), ignore-stragglers (SGD, any code waiting for fewer than ``n`` with load ``1/n``) and ``"allreduce"``
    (RAR). ``t_c`` is the per-message time of the simulator's single-port model (calibrated from a run without
    delays, see ``docs/runtime.md``). ``rng`` is the simulator's random state (SPEC 7; default None: fresh
    entropy). ``policy`` is the master's wait policy (default: the
    simulator's, the earliest decodable set for exact codes).

    Parameters
    ----------
    code : LinearCode or "allreduce"
        The code the run used (or the ``"allreduce"`` baseline).
    delay : Delay
        The run's injected straggling.
    workers : int
        Number of workers of the run.
    need : int
        Messages the master waits for (``n - s`` for an exact code).
    t_c : float, default 0
        Per-message time (seconds).
    iters : int, default 20000
        Simulated iterations.
    rng : None, int, SeedSequence or Generator, optional
        The simulator's random state (SPEC 7).
    policy : WaitPolicy, optional
        The master's wait policy.

    Returns
    -------
    float or None
        The predicted mean iteration time (seconds), None for a run the simulator does not model (for example one
        without injected delays).

    Examples
    --------
    >>> import gradcodes as gc
    >>> from gradcodes.mpi import predict, ShiftedExponential, NoDelay
    >>> code = gc.cyclic_repetition(6, 2, rng=0)
    >>> t = predict(code, ShiftedExponential(a=1e-3, mu=1e3, m_data=1, rng=0), workers=6, need=4, iters=2000, rng=0)
    >>> f"{t * 1e3:.2f} ms"
    '0.97 ms'
    >>> predict(code, NoDelay(), workers=6, need=4) is None
    True
    """
    from .. import CodedReduceCode, GradientCode
    from .._runtime.delays import ModelDelay, ShiftedExponential
    from .._simulate import simulate

    gen = check_rng(rng)
    if isinstance(delay, ModelDelay) and isinstance(code, GradientCode):
        # the same worker model (unequal, persistent or replayed) in the simulator
        res = simulate(code, branching=2, L=1, s=0, m_data=delay.m_data, model=delay.model, t_c=t_c, iters=iters,
                       rng=gen, policy=policy)
        return float(next(iter(res)).mean)
    if not isinstance(delay, ShiftedExponential):
        return None

    def run(schemes: Any, n: int, s_gc: int | None = None) -> float:
        res = simulate(schemes, branching=n, L=1, s=0, s_gc=s_gc, m_data=delay.m_data, a=delay.a, mu=delay.mu, t_c=t_c,
                       iters=iters, rng=gen, policy=policy if isinstance(schemes, GradientCode) else None)
        return float(next(iter(res)).mean)

    if isinstance(code, str):
        return run("RAR", workers) if code == "allreduce" else None
    if isinstance(code, (GradientCode, CodedReduceCode)):
        return run(code, 2)
    if int(code.load) == 1 and code.k == code.n:
        return run("SGD", workers, workers - need)
    return None
