r"""Encoding in the loss: worker ``i``'s message is the gradient of one weighted loss.

Gradients are linear, so for ``m = 1`` the message ``y_i = sum_j B[i, j] g_j`` (Tandon et al. 2017) is the
gradient of :math:`\sum_j B_{ij} L_j`, where :math:`L_j = \frac{1}{N} \sum_{r \in \text{partition } j} \ell_r` is
partition ``j``'s share of the mean loss over the global batch of ``N`` samples. Weighting each sample's loss by
``B[i, part(r)] / N`` therefore gives the message in one backward pass, with no encode step; decoding returns
:math:`\sum_j g_j`, the gradient of the mean loss over the global batch.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .._base.errors import GradcodesValueError

__all__ = ["loss_weights", "coded_loss"]


def loss_weights(code: Any, worker: int | None, partition_ids: Any, batch_size: int, *, dtype: Any = None,
                 device: Any = None) -> Any:
    """Per-sample loss weights ``B[worker, part(r)] / batch_size`` as a tensor (``worker=None``: ``1/N``).

    Only for codes with ``m = 1``; codes with ``m > 1`` take one backward pass per partition and
    :meth:`gradcodes.LinearCode.encode_worker` (see :class:`gradcodes.torch.CodedGradient`).

    Parameters
    ----------
    code : LinearCode
        A code with ``m = 1``.
    worker : int or None
        The worker whose row of ``B`` weights the samples; None: the uncoded weight ``1 / batch_size``.
    partition_ids : sequence of int or tensor
        The partition of each sample of the batch.
    batch_size : int
        The normalisation ``N`` of the mean loss.
    dtype, device : optional
        Of the returned tensor (default torch's default dtype, the CPU).

    Returns
    -------
    torch.Tensor, shape (len(partition_ids),)
        The weights to multiply the per-sample losses by (:func:`coded_loss`).

    Raises
    ------
    GradcodesValueError
        If ``code.m > 1``.

    Examples
    --------
    >>> import gradcodes as gc, torch
    >>> code = gc.fractional_repetition(4, 1)
    >>> loss_weights(code, 0, [0, 0, 1, 1], 8, dtype=torch.float64).tolist()
    [0.125, 0.125, 0.125, 0.125]
    """
    import torch

    ids = np.asarray(partition_ids, dtype=np.int64)
    if worker is None:
        w = np.full(ids.size, 1.0 / batch_size)
    else:
        if int(code.m) != 1:
            raise GradcodesValueError(f"loss weighting encodes codes with m = 1 only, this code has m = {code.m}: use "
                             f"per-partition gradients and code.encode_worker")
        w = code.float_B()[worker, ids].astype(np.float64) / batch_size
    return torch.as_tensor(w, dtype=dtype or torch.get_default_dtype(), device=device)


def coded_loss(per_sample_losses: Any, weights: Any) -> Any:
    """``sum_r weights[r] * losses[r]``: its gradient is the worker's coded message (``reduction="none"`` losses).

    Parameters
    ----------
    per_sample_losses : torch.Tensor, shape (batch,)
        The unreduced losses of a batch (a loss function with ``reduction="none"``).
    weights : torch.Tensor, shape (batch,)
        From :func:`loss_weights`.

    Returns
    -------
    torch.Tensor
        The scalar weighted loss; ``backward()`` on it leaves the worker's coded gradient in ``.grad``.

    Examples
    --------
    >>> import gradcodes as gc, torch
    >>> code = gc.fractional_repetition(4, 1)
    >>> w = loss_weights(code, 0, [0, 0, 1, 1], 4, dtype=torch.float64)
    >>> coded_loss(torch.tensor([1.0, 2.0, 3.0, 4.0], dtype=torch.float64), w).item()
    2.5
    """
    return (per_sample_losses * weights).sum()
