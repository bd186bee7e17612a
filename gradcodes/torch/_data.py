"""Data for coded training: which samples each worker computes on, and each sample's partition.

Every iteration draws a global batch of ``batch_size`` samples (a permutation of the dataset per epoch, keyed by
``(seed, epoch)``, as ``torch.utils.data.DistributedSampler`` does) and splits it into the code's ``k``
partitions of equal size; worker ``i`` computes on the samples of the partitions ``code.supports[i]``
(Tandon et al. 2017, Section 2). Every rank computes the same split, so no index is communicated.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np

from .._base.errors import GradcodesValueError
from .._base.validate import check_int

__all__ = ["CodedSampler"]


class CodedSampler:
    """Batch sampler giving worker ``worker`` the samples of its partitions of each global batch.

    Parameters
    ----------
    dataset_size : int
        Number of samples in the dataset.
    code : LinearCode
        The gradient code (``n`` workers, ``k`` partitions).
    worker : int or None
        This worker, ``0 <= worker < code.n``; None gives the whole global batch (the master's reference, or a
        single process).
    batch_size : int
        Samples per iteration over all partitions; a multiple of ``code.k`` (each partition gets
        ``batch_size // k`` samples).
    seed : int, default 0
        The permutation of epoch ``e`` is ``default_rng([seed, e]).permutation(dataset_size)``.
    shuffle : bool, default True
        False keeps the dataset order.

    Attributes
    ----------
    partition_ids : ndarray of int
        The partition of each sample of a yielded batch (the same every iteration): the batch lists partition
        ``supports[worker][0]``'s samples first, then the next partition's, and so on.

    Examples
    --------
    >>> import gradcodes as gc
    >>> code = gc.cyclic_repetition(4, 1, rng=0)
    >>> sampler = CodedSampler(40, code, worker=1, batch_size=8, shuffle=False)
    >>> len(sampler), next(iter(sampler)), sampler.partition_ids.tolist()
    (5, [2, 3, 4, 5], [1, 1, 2, 2])
    """

    def __init__(self, dataset_size: int, code: Any, worker: int | None, *, batch_size: int, seed: int = 0,
                 shuffle: bool = True) -> None:
        self.dataset_size = check_int("dataset_size", dataset_size, 1)
        self.code = code
        k = int(code.k)
        self.batch_size = check_int("batch_size", batch_size, k, self.dataset_size)
        if self.batch_size % k:
            raise GradcodesValueError(f"batch_size must be a multiple of the code's k={k} partitions, got {batch_size}")
        self.worker = None if worker is None else check_int("worker", worker, 0, int(code.n) - 1)
        self.seed = check_int("seed", seed, 0)
        self.shuffle = bool(shuffle)
        self.epoch = 0
        self.per_partition = self.batch_size // k
        parts = np.arange(k) if self.worker is None else np.asarray(code.supports[self.worker], dtype=np.int64)
        self.partitions = parts
        self.partition_ids = np.repeat(parts, self.per_partition)
        self._offsets = (parts[:, None] * self.per_partition + np.arange(self.per_partition)).reshape(-1)

    def set_epoch(self, epoch: int) -> None:
        """Use the permutation of ``epoch`` (call at the start of every epoch, on every rank)."""
        self.epoch = check_int("epoch", epoch, 0)

    def __len__(self) -> int:
        return self.dataset_size // self.batch_size

    def global_batch(self, iteration: int) -> np.ndarray:
        """The global batch of an iteration of the current epoch (all partitions, partition by partition)."""
        order = self._order()
        start = check_int("iteration", iteration, 0, len(self) - 1) * self.batch_size
        return order[start:start + self.batch_size]

    def _order(self) -> np.ndarray:
        if not self.shuffle:
            return np.arange(self.dataset_size)
        return np.random.default_rng([self.seed, self.epoch]).permutation(self.dataset_size)

    def __iter__(self) -> Iterator[list[int]]:
        order = self._order()
        for b in range(len(self)):
            yield order[b * self.batch_size + self._offsets].tolist()
