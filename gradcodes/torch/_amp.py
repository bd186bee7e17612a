"""Mixed precision for :func:`gradcodes.torch.train`: autocast on the workers, the master's ``GradScaler``.

``train(..., autocast=torch.float16, grad_scaler=lambda: torch.amp.GradScaler("cpu"))`` runs every worker's forward
pass and loss under ``torch.autocast(device_type, dtype)``. The master owns the scaler (loss scaling: Micikevicius
et al. 2018, Section 3.2; the scale lowered at every overflow and raised after a run of finite steps, as
``torch.amp.GradScaler`` does): its current scale travels to the workers in the
header of every parameter message (``gradcodes.torch._children.scale_word``; a float64 word, and scales are
powers of two, so the workers use exactly the master's), the workers backpropagate the loss multiplied by it and
send the scaled coded messages, and the master decodes the scaled gradient, then calls ``scaler.unscale_``,
clips, and calls ``scaler.step`` and ``scaler.update`` exactly as a single process does.

**The inf rule.** With a scaler, a message with a NaN or infinite entry is an overflow signal, not a faulty worker:
it is accepted as an answer (``nonfinite="overflow"`` of ``gradcodes._runtime.engine.Collection``: a partition
that overflows overflows on every worker that holds it, so waiting for finite holders would only run into the
timeout), the decoded gradient is not finite, and the scaler skips the step and lowers the scale, as single-process
mixed precision does when any part of the batch overflows. Without a scaler a NaN/inf message is a straggler's.

**The guard.** A worker that sends NaN whatever the scale (a faulty one), or a model whose gradient overflows even
unscaled, would make the scaler skip every step from then on while halving the scale. An overflow at a scale of
:data:`MIN_SCALE` (1) or below cannot come from the scaling (the scaled gradient is no larger than the gradient),
so it ends the run with :class:`~gradcodes.GradcodesRuntimeError` naming the ranks whose messages were not finite
in the overflows since the last finite step. From the default initial scale, ``2**16``, a worker that always sends
NaN is caught at the 17th step.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from typing import Any

from .._base.errors import GradcodesRuntimeError, GradcodesTypeError, GradcodesValueError

__all__ = ["MIN_SCALE", "check_precision", "autocast_context", "Scaling"]

#: an overflow at this loss scale or below ends the run (the gradient is not finite even unscaled)
MIN_SCALE = 1.0


def check_precision(autocast: Any, grad_scaler: Any, dtype: Any, code: Any) -> None:
    """Refuse, on every rank before any message, an ``autocast`` that is not float16 or bfloat16, a ``grad_scaler``
    that is not callable, a scaler with float16/bfloat16 parameters (``GradScaler`` unscales float32 or float64
    gradients only) and a scaler with an ``adversarial_gc`` code."""
    import torch

    from .._families.adversarial import AdversarialCode

    if autocast is not None and autocast not in (torch.float16, torch.bfloat16):
        raise GradcodesValueError(f"autocast must be None, torch.float16 or torch.bfloat16, got {autocast!r}")
    if grad_scaler is None:
        return
    if not callable(grad_scaler):
        raise GradcodesTypeError("grad_scaler must be a callable that builds the scaler on the master, e.g. "
                                 f"lambda: torch.amp.GradScaler('cpu'); got {type(grad_scaler).__name__}")
    if dtype not in (torch.float32, torch.float64):
        raise GradcodesValueError(f"grad_scaler needs float32 or float64 parameters (a GradScaler unscales their "
                                  f"gradients; with autocast the forward pass runs in float16), the parameters are "
                                  f"{dtype}")
    if isinstance(code, AdversarialCode):
        raise GradcodesValueError("grad_scaler is not supported with an adversarial_gc code: its decode finds wrong "
                                  "messages by comparing them, which overflow (NaN/inf) messages defeat")


def autocast_context(dtype: Any, device: Any) -> Callable[[], Any]:
    """A factory of the context each forward pass runs in: ``torch.autocast(device.type, dtype)``, or nothing."""
    import torch

    if dtype is None:
        return contextlib.nullcontext
    return lambda: torch.autocast(device_type=torch.device(device).type, dtype=dtype)


class Scaling:
    """The master's ``GradScaler`` around one run: the scale of each step, ``unscale_``, the guard, ``step`` and
    ``update``.

    Parameters
    ----------
    scaler : torch.amp.GradScaler
        Built by the user's ``grad_scaler()`` on the master (its state loaded from a checkpoint, if any, before
        :meth:`start`).
    optimizer : torch.optim.Optimizer
    device : torch.device
        The parameters' device (the scaler's lazy initialisation allocates its scale there).
    """

    def __init__(self, scaler: Any, optimizer: Any, device: Any) -> None:
        for name in ("scale", "unscale_", "step", "update", "get_scale", "state_dict", "load_state_dict"):
            if not callable(getattr(scaler, name, None)):
                raise GradcodesTypeError(f"grad_scaler() must return a torch.amp.GradScaler (no method {name!r}), "
                                         f"got {type(scaler).__name__}")
        self.scaler, self.opt, self.device = scaler, optimizer, device
        #: rank -> its non-finite messages in the run's overflow steps, the overflow steps, the steps
        self._culprits: dict[int, int] = {}
        self._overflows = 0
        self._steps = 0

    def start(self) -> None:
        """Initialise the scaler's scale (``GradScaler`` does it lazily at its first ``scale`` call, which only
        the workers make here)."""
        import torch

        self.scaler.scale(torch.zeros((), device=self.device))

    def scale(self) -> float:
        """The scale of the next step (sent with the parameters)."""
        return float(self.scaler.get_scale())

    def unscale(self, step: int, scale: float, info: Any) -> None:
        """After the decode: ``scaler.unscale_``; an overflow at a scale of :data:`MIN_SCALE` or below raises."""
        self._steps += 1
        if info.overflow:
            self._overflows += 1
            for w in info.nonfinite:
                self._culprits[w + 1] = self._culprits.get(w + 1, 0) + 1
            if scale <= MIN_SCALE:
                ranks = ", ".join(f"rank {r} in {c}" for r, c in sorted(self._culprits.items())) or "none"
                raise GradcodesRuntimeError(
                    f"gradcodes.torch.train: step {step}: the decoded gradient is not finite at loss scale {scale:g} "
                    f"(at most {MIN_SCALE:g}: the gradient overflows even unscaled, and the scaler would skip every "
                    f"step from now on). Non-finite messages in the {self._overflows} overflow steps of the "
                    f"{self._steps} steps of this process: {ranks}. A worker whose messages are non-finite whenever "
                    f"it answers is faulty; if every worker's are, the model has diverged")
        self.scaler.unscale_(self.opt)

    def step(self) -> None:
        """``scaler.step(optimizer)`` (skipped when the gradient is not finite) and ``scaler.update()``."""
        self.scaler.step(self.opt)
        self.scaler.update()
