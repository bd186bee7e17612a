"""A worker's coded message from its samples of a global batch, on ``torch``: :class:`CodedGradient` (loss weighting
for ``m = 1``, one backward pass per partition combined with the coefficients of ``B`` for ``m > 1``, for float32
codes whose coefficients are not all 0 or 1, and for models with BatchNorm layers)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .._base.errors import GradcodesValueError
from ._amp import autocast_context
from ._data import CodedSampler
from ._loss import coded_loss, loss_weights
from ._params import FlatParams

__all__ = ["CodedGradient"]


def _batch_norms(model: Any) -> list[str]:
    """Names of the modules of ``model`` that normalise over the batch (BatchNorm of any dimension, SyncBatchNorm)."""
    from torch.nn.modules.batchnorm import _BatchNorm

    return [name or type(mod).__name__ for name, mod in model.named_modules() if isinstance(mod, _BatchNorm)]


class CodedGradient:
    """Worker ``worker``'s coded message from its samples of a global batch.

    ``loss_fn(outputs, targets)`` must return per-sample losses (``reduction="none"``). Two ways to compute the
    message ``y_i = sum_{j, u} B[i, j m + u] g_j^{(u)}`` (Tandon et al. 2017; Ye & Abbe 2018 for ``m > 1``):

    * ``"loss"`` (``m = 1`` only): the gradient of the loss weighted by :func:`gradcodes.torch.loss_weights`,
      one backward pass and no encode step;
    * ``"partitions"``: one backward pass per stored partition (its share of the mean loss, the weight ``1/N``
      of the single-process loss), the partition gradients combined with the coefficients of ``B`` in float64 in
      a buffer allocated once, and the message rounded once to the parameters' dtype.

    In float64 both agree to rounding. In float32 the weighted backward pass rounds at the scale of the message
    ``sum_j B_ij g_j``, and the decode's cancellation (``sum_i |a_i| |y_i|`` against ``|sum_j g_j|``) amplifies
    those roundings: for ``cyclic_repetition(3, 1)`` on the digits CNN the decoded gradient was 3e-6 away from the
    single-process one, and 5e-7 with ``"partitions"``, whose only amplified error is the message's final
    rounding (``benchmarks/numerics/torch_float32.py``). ``encoding="auto"`` (the default) takes ``"loss"`` when it
    cannot be amplified (float64 parameters, or every coefficient of ``B`` 0 or 1) and ``"partitions"``
    otherwise; ``m > 1`` always takes ``"partitions"``. Its cost is ``load`` smaller backward passes instead of one
    (the same samples) and two buffers of the parameters' size.

    A model with BatchNorm layers always takes ``"partitions"`` (``"loss"`` is refused): the batch statistics of
    one forward pass over all of a worker's samples would depend on which partitions the worker holds, so the
    partition gradients of different workers would not be the same functions and the decode would not be the
    gradient of any loss. One forward pass per partition normalises each partition over its own
    ``batch_size / k`` samples (ghost batch normalisation, the ghost batches being the partitions), the same on
    every worker (``docs/torch.md``, "Buffers").

    ``autocast`` (``torch.float16`` or ``torch.bfloat16``) runs every forward pass and ``loss_fn`` under
    ``torch.autocast``; the backward passes and the message stay in the parameters' dtype.

    Calling it, ``coded(inputs, targets, out)``, writes the message for the worker's batch ``inputs``/``targets``
    (from the sampler, partition by partition) into ``out``, a vector of the parameters' dtype and length
    ``ceil(size / m)``.

    Parameters
    ----------
    model : torch.nn.Module
        The model (its trainable parameters: :class:`~gradcodes.torch.FlatParams`); its ``.grad`` are overwritten.
    loss_fn : callable
        ``loss_fn(outputs, targets)``: per-sample losses (``reduction="none"``).
    code : LinearCode
        The gradient code, the same on every rank.
    worker : int
        This worker, ``0 <= worker < code.n``.
    sampler : CodedSampler
        This worker's sampler (its batch size and the partitions of its samples).
    encoding : {"auto", "loss", "partitions"}, default "auto"
        How the message is computed, as above.
    autocast : torch.dtype, optional
        ``torch.float16`` or ``torch.bfloat16``: the forward passes under ``torch.autocast``.

    Raises
    ------
    GradcodesValueError
        If ``encoding`` is not one of the three, or is ``"loss"`` for a code with ``m > 1`` or a model with
        BatchNorm layers.

    Examples
    --------
    >>> import torch, gradcodes as gc
    >>> from gradcodes.torch import CodedGradient, CodedSampler
    >>> code = gc.cyclic_repetition(4, 1, rng=0)
    >>> model = torch.nn.Linear(3, 1, dtype=torch.float64)
    >>> loss_fn = lambda out, target: ((out - target) ** 2).sum(dim=1)      # per-sample losses
    >>> gen = torch.Generator().manual_seed(0)
    >>> X = torch.randn(8, 3, dtype=torch.float64, generator=gen)
    >>> y = torch.randn(8, 1, dtype=torch.float64, generator=gen)
    >>> sampler = CodedSampler(8, code, worker=1, batch_size=8, shuffle=False)
    >>> idx = next(iter(sampler))                                 # worker 1's samples: partitions 1 and 2
    >>> coded = CodedGradient(model, loss_fn, code, 1, sampler)
    >>> out = torch.empty(coded.flat.size, dtype=torch.float64)
    >>> coded(X[idx], y[idx], out)
    >>> by_parts = CodedGradient(model, loss_fn, code, 1, sampler, encoding="partitions")
    >>> out2 = torch.empty_like(out)
    >>> by_parts(X[idx], y[idx], out2)
    >>> coded.encoding, by_parts.encoding, torch.allclose(out, out2)        # float64: the two agree
    ('loss', 'partitions', True)
    """

    def __init__(self, model: Any, loss_fn: Callable[[Any, Any], Any], code: Any, worker: int,
                 sampler: CodedSampler, *, encoding: str = "auto", autocast: Any = None) -> None:
        import numpy as np
        import torch

        self.model, self.loss_fn, self.code, self.worker = model, loss_fn, code, int(worker)
        self.flat = FlatParams(list(model.parameters()))
        self.autocast = autocast_context(autocast, self.flat.device)
        self.batch_size = sampler.batch_size
        self.per_partition = sampler.per_partition
        self.parts = sampler.partitions
        self.m = int(code.m)
        if encoding not in ("auto", "loss", "partitions"):
            raise GradcodesValueError(f"encoding must be 'auto', 'loss' or 'partitions', got {encoding!r}")
        if encoding == "loss" and self.m != 1:
            raise GradcodesValueError(f"encoding='loss' needs m = 1, this code has m = {self.m}")
        norms = _batch_norms(model)
        if encoding == "loss" and norms:
            raise GradcodesValueError(f"encoding='loss' computes one forward pass over all of a worker's samples, and "
                                      f"the BatchNorm layers {norms} would normalise over partitions that differ "
                                      f"between workers: use encoding='auto' or 'partitions'")
        if encoding == "auto":
            B = np.asarray(code.float_B())
            plain = (self.flat.dtype == torch.float64 or bool(np.isin(B, (0.0, 1.0)).all())) and not norms
            encoding = "loss" if self.m == 1 and plain else "partitions"
        self.encoding = encoding
        dev = self.flat.device
        if encoding == "loss":
            self.weights = loss_weights(code, worker, sampler.partition_ids, sampler.batch_size,
                                        dtype=self.flat.dtype, device=dev)
            return
        P, m = self.flat.size, self.m
        q = -(-P // m)
        row = np.asarray(code.float_B(np.float64))[self.worker].reshape(int(code.k), m)
        #: per stored partition: (block u, length, coefficient) of its non-zero coefficients (float64)
        self.plan = [[(u, max(0, min(q, P - u * q)), float(row[j, u])) for u in range(m) if row[j, u] != 0]
                     for j in self.parts]
        self.q = q
        self.row = torch.zeros(P, dtype=self.flat.dtype, device=dev)
        self.acc = torch.zeros(q, dtype=torch.float64, device=dev)

    def __call__(self, inputs: Any, targets: Any, out: Any, *, scale: float = 1.0,
                 micro: tuple[int, int] = (0, 1)) -> None:
        """Write the message for ``inputs``/``targets`` (this worker's batch from the sampler) into ``out``.

        ``scale``: the loss is multiplied by it before the backward pass (a loss scaler's scale, a power of two).
        ``micro=(a, k)``: this batch is the ``a``-th of ``k`` whose messages are summed, each of the mean loss
        divided by ``k`` (gradient accumulation: the message of the mean loss over the ``k`` batches); the
        first zeroes the sum, the last writes it into ``out``, the others leave ``out`` alone.
        """
        a, k = micro
        f = float(scale) / k
        if self.encoding == "loss":
            if a == 0:
                self.model.zero_grad(set_to_none=False)
            with self.autocast():
                losses = self.loss_fn(self.model(inputs), targets)
            loss = coded_loss(losses, self.weights)
            (loss if f == 1.0 else loss * f).backward()
            if a == k - 1:
                self.flat.read_grads(out)
            return
        b, q = self.per_partition, self.q
        if a == 0:
            self.acc.zero_()
        for r, plan in enumerate(self.plan):
            if not plan:
                continue
            self.model.zero_grad(set_to_none=False)
            sl = slice(r * b, (r + 1) * b)
            with self.autocast():
                losses = self.loss_fn(self.model(inputs[sl]), targets[sl])
            loss = losses.sum() / self.batch_size
            (loss if f == 1.0 else loss * f).backward()
            self.flat.read_grads(self.row)
            for u, L, c in plan:
                if L:
                    self.acc[:L].add_(self.row[u * q:u * q + L], alpha=c)
        if a == k - 1:
            out.copy_(self.acc)
