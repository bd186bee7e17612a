"""The master's record of a coded training run (:class:`TrainResult`) and the hooks of its loop
(:class:`Callback`)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ._master import AggregateInfo

__all__ = ["TrainResult", "Callback"]


@dataclass
class TrainResult:
    """The master's record of a run: per-iteration wall time (evaluation excluded), accuracy, responders.

    ``failures`` names the ranks that failed after the master's last iteration (their process ended or raised
    after its last message, or they did not say goodbye within the grace after the stop message: frozen in their
    compute, stopped, or gone) and how: the run had finished, so :func:`train` returns this result (and warns)
    instead of raising. A worker that failed during the run and was skipped as a straggler is named here too
    (it never says goodbye).

    Attributes
    ----------
    scheme : str
        The run's name: :func:`train`'s ``name`` or the code's name; ``"DDP allreduce"`` for :func:`ddp_train`.
    times : list of float
        Seconds of every step, evaluation excluded.
    accuracy : list of float
        ``evaluate(model)`` after every step (empty without ``evaluate``).
    infos : list of AggregateInfo
        What the master's aggregation reported at every step of this process.
    skipped : int
        Parameter sends the master skipped because the worker had not yet taken its previous parameters.
    failures : dict of int to str
        Ranks that failed after the last iteration, and how (above).
    lr, grad_norm, loss_scale, overflow, start
        As commented in the class body: the learning rate, the gradient norm before clipping, the loss scale
        and the overflowed steps of every step, and the first step this process ran.

    Examples
    --------
    :func:`train` returns one on the master; built by hand here:

    >>> from gradcodes.torch import TrainResult
    >>> res = TrainResult("cyclic_repetition(4, 1)", times=[0.5, 0.25, 0.25], accuracy=[0.6, 0.85, 0.92])
    >>> res.mean_iteration, res.time_to(0.8)
    (0.3333333333333333, 0.75)
    """

    scheme: str
    times: list[float] = field(default_factory=list)
    accuracy: list[float] = field(default_factory=list)
    infos: list[AggregateInfo] = field(default_factory=list)
    skipped: int = 0
    failures: dict[int, str] = field(default_factory=dict)
    #: the learning rate of the optimizer's first parameter group at each step (before the scheduler stepped)
    lr: list[float] = field(default_factory=list)
    #: with ``clip_grad_norm``: the decoded gradient's norm at each step, before clipping
    grad_norm: list[float] = field(default_factory=list)
    #: with ``grad_scaler``: the loss scale each step's messages were computed with
    loss_scale: list[float] = field(default_factory=list)
    #: with ``grad_scaler``: the steps whose decoded gradient was not finite (an overflow: the scaler skipped the
    #: optimizer step and lowered the scale)
    overflow: list[int] = field(default_factory=list)
    #: the first step this process ran: 0, or a resumed run's checkpoint step (``times``, ``accuracy``, ``lr``
    #: ``grad_norm``, ``loss_scale`` and ``overflow`` then hold the earlier steps' records from the checkpoint,
    #: ``infos`` only this process's)
    start: int = 0

    def time_to(self, accuracy: float) -> float:
        """Cumulative seconds until the accuracy first reached ``accuracy`` (inf if never).

        Parameters
        ----------
        accuracy : float
            The target accuracy.

        Returns
        -------
        float
            The sum of ``times`` up to and including the first step whose accuracy is at least ``accuracy``;
            ``inf`` if no step reached it.

        Examples
        --------
        >>> from gradcodes.torch import TrainResult
        >>> res = TrainResult("code", times=[0.5, 0.25, 0.25], accuracy=[0.6, 0.85, 0.92])
        >>> res.time_to(0.8), res.time_to(0.99)
        (0.75, inf)
        """
        total = 0.0
        for t, a in zip(self.times, self.accuracy, strict=True):
            total += t
            if a >= accuracy:
                return total
        return float("inf")

    @property
    def mean_iteration(self) -> float:
        return sum(self.times) / max(len(self.times), 1)


class Callback:
    """Hooks of :func:`train` on the master, for logging, evaluation and early stopping: subclass and override
    either method (an object with either method, under these names, will do).

    Examples
    --------
    Stop once the test accuracy reached 0.9, and log the loss-free facts of every step:

    >>> class EarlyStop(Callback):
    ...     def __init__(self, target):
    ...         self.target = target
    ...     def on_step(self, step, model, info):
    ...         print(step, info.responders)
    ...     def on_step_end(self, step, model, result):
    ...         return bool(result.accuracy) and result.accuracy[-1] >= self.target
    >>> EarlyStop(0.9).on_step_end(3, None, TrainResult("code", accuracy=[0.5, 0.93]))
    True
    """

    def on_step(self, step: int, model: Any, info: AggregateInfo) -> None:
        """After the decode, before clipping and the optimizer step: ``.grad`` holds the decoded gradient of the
        mean loss over the global batch of ``step``; ``info`` says who answered (:class:`AggregateInfo`).

        The default does nothing.

        Parameters
        ----------
        step : int
            The step (global iteration).
        model : torch.nn.Module
            The master's model, its ``.grad`` the decoded gradient.
        info : AggregateInfo
            The aggregation's report: responders, dropped senders, time.

        Examples
        --------
        >>> from gradcodes.torch import AggregateInfo, Callback
        >>> class Log(Callback):
        ...     def on_step(self, step, model, info):
        ...         print(f"step {step}: workers {info.responders}")
        >>> Log().on_step(3, None, AggregateInfo(3, [2, 0, 1]))
        step 3: workers [2, 0, 1]
        """

    def on_step_end(self, step: int, model: Any, result: TrainResult) -> bool | None:
        """After the optimizer step, the scheduler and ``evaluate`` (``result`` holds this step's time, accuracy
        and learning rate). Return True to stop training: the workers are stopped and :func:`train` returns.

        Parameters
        ----------
        step : int
            The step (global iteration) just finished.
        model : torch.nn.Module
            The master's model, after the optimizer step.
        result : TrainResult
            The run's record so far, this step included.

        Returns
        -------
        bool or None
            True to stop training; the default returns None (go on).

        Examples
        --------
        >>> from gradcodes.torch import Callback, TrainResult
        >>> Callback().on_step_end(0, None, TrainResult("code", times=[0.1], accuracy=[0.5])) is None
        True
        """
        return None
