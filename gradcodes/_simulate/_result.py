"""Results of :func:`gradcodes.simulate`: :class:`SchemeResult` per scheme, :class:`SimulationResult` for a run."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .._base.errors import GradcodesValueError

__all__ = ["SchemeResult", "SimulationResult"]


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
        Scheme parameters (n, L, s, t_step, policy, model, mean_messages, ...).
    error : float or None
        Approximate codes: the mean over iterations of ``||A_F B - E||`` for the responders used (the expected
        error of the decoded sum per unit of gradient norm); None for exact schemes.

    Examples
    --------
    >>> import gradcodes as gc
    >>> gc_row = gc.simulate(iters=200, rng=0).schemes["GC"]
    >>> gc_row.name, gc_row.iters
    ('GC', 200)
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
    error: float | None = None

    def __str__(self) -> str:
        tail = "" if self.error is None else f", E[error] = {self.error:.3g}"
        return f"{self.name}: E[T] = {self.mean:.4f} ± {self.stderr:.4f} s{tail}"


@dataclass
class SimulationResult:
    """Results of :func:`simulate`: a mapping from scheme label to :class:`SchemeResult`.

    Index it by label (``res["CR"].mean``), iterate over ``res.schemes``, print it for a table, or call
    :meth:`speedup` for ratios of expected times.

    Attributes
    ----------
    schemes : dict of str to SchemeResult
        One result per simulated scheme, by label (``"CR"``, ``"GC"``, ...), in the order simulated.
    params : dict
        The parameters of the run, after defaults: ``n``, ``L``, ``s``, ``N``, ``s_gc``, ``m_data``, ``a``,
        ``mu``, ``t_c``, ``t_step``, ``alpha``, ``overlap``, ``iters``, ``seed`` (the entropy of the random
        state), ``policy``, ``model`` and ``deadline``.

    Examples
    --------
    >>> import gradcodes as gc
    >>> res = gc.simulate(iters=200, rng=0)
    >>> sorted(res.schemes) == sorted(["CR", "UMW", "GC", "SGD", "RAR"]), res.schemes["GC"].iters
    (True, 200)
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
        """Return ``E[T_other] / E[T_reference]`` for every other scheme.

        Parameters
        ----------
        reference : str, default "CR"
            A simulated scheme's label (case-insensitive).

        Returns
        -------
        dict of str to float
            Every other scheme's mean iteration time over the reference's (above 1: slower than it).

        Raises
        ------
        GradcodesValueError
            If ``reference`` was not simulated.

        Examples
        --------
        >>> import gradcodes as gc
        >>> res = gc.simulate(iters=200, rng=0)
        >>> sorted(res.speedup("CR"))
        ['GC', 'RAR', 'SGD', 'UMW']
        """
        if reference not in self.schemes and reference.upper() in self.schemes:
            reference = reference.upper()
        if reference not in self.schemes:
            raise GradcodesValueError(f"reference must be one of the simulated schemes {list(self.schemes)}, got "
                                      f"{reference!r}")
        ref = self.schemes[reference].mean
        return {k: v.mean / ref for k, v in self.schemes.items() if k != reference}

    def table(self, reference: str | None = None) -> str:
        """A plain-text table: scheme, workers, load (points), messages, E[T] ± s.e. [, speedup].

        Parameters
        ----------
        reference : str, optional
            A simulated scheme's label: adds a column of speed-ups against it.

        Returns
        -------
        str
            One row per scheme, under a header and a rule.

        Examples
        --------
        >>> import gradcodes as gc
        >>> print(gc.simulate(iters=200, rng=0).table("CR").splitlines()[0])
        scheme ... CR speedup
        """
        from .._base.output import format_table

        ref = None
        if reference is not None and reference in self.schemes:
            ref = self.schemes[reference].mean
        rows = []
        for r in self.schemes.values():
            row = {"scheme": r.name, "workers": str(r.workers), "load/worker": f"{r.load:.6g}",
                   "msgs": str(r.messages), "E[T] (s)": f"{r.mean:.4f}", "± s.e.": f"{r.stderr:.4f}"}
            if ref is not None:
                row[f"{reference} speedup"] = f"{r.mean / ref:.2f}"
            rows.append(row)
        return format_table(rows, right=[c for c in (rows[0] if rows else {}) if c != "scheme"])

    def notes(self) -> list[str]:
        """Lines that say what a reader of the table needs to know to read it (the models behind surprising rows).

        Returns
        -------
        list of str
            Empty when nothing in the table needs explaining.

        Examples
        --------
        >>> import gradcodes as gc
        >>> gc.simulate(iters=200, rng=0).notes()[0]
        'note: RAR (ring all-reduce) is charged no per-message latency here ...'
        """
        out = []
        if "RAR" in self.schemes and self.params.get("alpha", 0.0) == 0 and self.params.get("t_step", 0.0) == 0:
            out += ["note: RAR (ring all-reduce) is charged no per-message latency here (alpha = 0, t_step = 0),",
                    "  only bandwidth, so its 2(N - 1) steps cost little; at the paper's setting an alpha of about",
                    "  5.9 ms makes it 1.8x slower than CR (alpha=... in Python, --alpha on the command line;",
                    "  docs/simulate.md). It waits for all N."]
        return out

    def __str__(self) -> str:
        return "\n".join([self.table("CR" if "CR" in self.schemes else None), *self.notes()])

