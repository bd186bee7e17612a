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

__all__ = ["CodedSampler", "LoaderFeed"]


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
        """Use the permutation of ``epoch`` (call at the start of every epoch, on every rank).

        Parameters
        ----------
        epoch : int
            The epoch, ``>= 0``.

        Raises
        ------
        GradcodesValueError
            If ``epoch`` is negative.

        Examples
        --------
        >>> import gradcodes as gc
        >>> sampler = CodedSampler(40, gc.cyclic_repetition(4, 1, rng=0), worker=1, batch_size=8)
        >>> first = sampler.global_batch(0).tolist()
        >>> sampler.set_epoch(1)
        >>> sampler.epoch, sampler.global_batch(0).tolist() != first       # another permutation
        (1, True)
        """
        self.epoch = check_int("epoch", epoch, 0)

    def __len__(self) -> int:
        return self.dataset_size // self.batch_size

    def global_batch(self, iteration: int) -> np.ndarray:
        """The global batch of an iteration of the current epoch (all partitions, partition by partition).

        Parameters
        ----------
        iteration : int
            The iteration within the epoch, ``0 <= iteration < len(sampler)``.

        Returns
        -------
        ndarray of int, shape (batch_size,)
            Sample indices: partition 0's ``batch_size // k`` samples, then partition 1's, and so on.

        Raises
        ------
        GradcodesValueError
            If ``iteration`` is out of range.

        Examples
        --------
        >>> import gradcodes as gc
        >>> sampler = CodedSampler(40, gc.cyclic_repetition(4, 1, rng=0), worker=1, batch_size=8, shuffle=False)
        >>> sampler.global_batch(4).tolist()                  # worker 1 computes on partitions 1 and 2
        [32, 33, 34, 35, 36, 37, 38, 39]
        """
        order = self._order()
        start = check_int("iteration", iteration, 0, len(self) - 1) * self.batch_size
        return order[start:start + self.batch_size]

    def _order(self) -> np.ndarray:
        if not self.shuffle:
            return np.arange(self.dataset_size)
        return np.random.default_rng([self.seed, self.epoch]).permutation(self.dataset_size)

    def __iter__(self) -> Iterator[list[int]]:
        return self.batches(0)

    def batches(self, start: int = 0) -> Iterator[list[int]]:
        """This worker's batches of the current epoch from iteration ``start`` on (``iter(sampler)``: from 0).

        Parameters
        ----------
        start : int, default 0
            The first iteration, ``0 <= start <= len(sampler)``.

        Yields
        ------
        list of int
            The sample indices of this worker's partitions of each global batch (see ``partition_ids``).

        Raises
        ------
        GradcodesValueError
            If ``start`` is out of range.

        Examples
        --------
        >>> import gradcodes as gc
        >>> sampler = CodedSampler(40, gc.cyclic_repetition(4, 1, rng=0), worker=1, batch_size=8, shuffle=False)
        >>> list(sampler.batches(3))                          # iterations 3 and 4 of 5
        [[26, 27, 28, 29], [34, 35, 36, 37]]
        """
        order = self._order()
        for b in range(check_int("start", start, 0, len(self)), len(self)):
            yield order[b * self.batch_size + self._offsets].tolist()


class _FromIteration:
    """The batch sampler of a worker's ``DataLoader``: its :class:`CodedSampler`'s batches of one epoch from one
    iteration on (set before each ``iter(loader)``)."""

    def __init__(self, sampler: CodedSampler) -> None:
        self.sampler = sampler
        self.start = 0

    def __iter__(self) -> Iterator[list[int]]:
        return self.sampler.batches(self.start)

    def __len__(self) -> int:
        return len(self.sampler) - self.start


#: loader arguments that :class:`LoaderFeed` sets itself
_OWN = ("batch_size", "shuffle", "sampler", "batch_sampler", "drop_last")


class LoaderFeed:
    """A worker's batches of any global iteration from a map-style dataset, through a ``torch.utils.data.DataLoader``.

    The loader's batch sampler yields the worker's samples of each global batch (:class:`CodedSampler`, partition
    by partition), so its loader processes read only this worker's samples, ahead of time
    (``prefetch_factor``). :meth:`get` returns the batch of iteration ``t``: the loader's next batch when the
    worker goes through the iterations in order; after a jump (the worker skipped iterations it was not sent)
    the few batches in between are read and dropped, and a new epoch or a longer jump starts a new pass from
    iteration ``t``.

    Parameters
    ----------
    dataset : torch.utils.data.Dataset
        Map-style: ``dataset[i]`` is one sample ``(input, target)``; ``len(dataset)`` samples.
    sampler : CodedSampler
        This worker's sampler (its ``dataset_size`` is ``len(dataset)``).
    loader_kwargs : dict, optional
        Passed to ``DataLoader`` (``num_workers``, ``collate_fn``, ``pin_memory``, ``persistent_workers``,
        ``prefetch_factor``, ``worker_init_fn``, ``multiprocessing_context``, ...); it must not set
        ``batch_size``, ``shuffle``, ``sampler``, ``batch_sampler`` or ``drop_last``. With ``num_workers > 0``
        ``persistent_workers`` defaults to True (the loader processes start once, not at every epoch).
    device : torch.device, optional
        Tensors of a batch are moved there (``non_blocking``); None leaves them.

    Examples
    --------
    >>> import torch
    >>> import gradcodes as gc
    >>> from torch.utils.data import TensorDataset
    >>> data = TensorDataset(torch.arange(40.0), torch.arange(40))
    >>> code = gc.cyclic_repetition(4, 1, rng=0)
    >>> feed = LoaderFeed(data, CodedSampler(40, code, 1, batch_size=8, shuffle=False))
    >>> feed.get(0)[1].tolist(), feed.get(3)[1].tolist()
    ([2, 3, 4, 5], [26, 27, 28, 29])
    """

    #: a jump of more iterations than this starts a new pass instead of reading the batches in between
    SKIP = 4

    def __init__(self, dataset: Any, sampler: CodedSampler, loader_kwargs: dict[str, Any] | None = None, *,
                 device: Any = None) -> None:
        from torch.utils.data import DataLoader

        kw = dict(loader_kwargs or {})
        own = sorted(set(kw) & set(_OWN))
        if own:
            raise GradcodesValueError(f"loader_kwargs must not set {own}: the coded sampler chooses each worker's "
                                      f"samples of every global batch")
        if kw.get("num_workers", 0) > 0:
            kw.setdefault("persistent_workers", True)
        if len(dataset) != sampler.dataset_size:
            raise GradcodesValueError(f"the sampler is for {sampler.dataset_size} samples, the dataset has "
                                      f"{len(dataset)}")
        self.sampler = sampler
        self._batches = _FromIteration(sampler)
        self.loader = DataLoader(dataset, batch_sampler=self._batches, **kw)
        self.device = device
        self._it: Iterator[Any] | None = None
        self._epoch = -1
        self._next = 0

    def _restart(self, epoch: int, start: int) -> None:
        self.sampler.set_epoch(epoch)
        self._batches.start = start
        self._it = iter(self.loader)
        self._epoch, self._next = epoch, start

    def start(self, t: int = 0) -> None:
        """Start the first pass, from global iteration ``t`` (a resumed run: its first step): the loader
        processes, if any, start now (before a worker starts its communication threads, which a forked process
        should not inherit mid-wait). Does nothing once a pass has started.

        Parameters
        ----------
        t : int, default 0
            The global iteration (over all epochs) of the first batch.

        Raises
        ------
        GradcodesValueError
            If ``t`` is negative.

        Examples
        --------
        >>> import torch
        >>> import gradcodes as gc
        >>> from torch.utils.data import TensorDataset
        >>> data = TensorDataset(torch.arange(40.0), torch.arange(40))
        >>> feed = LoaderFeed(data, CodedSampler(40, gc.cyclic_repetition(4, 1, rng=0), 1, batch_size=8,
        ...                                      shuffle=False))
        >>> feed.start(7)                                     # epoch 1, iteration 2
        >>> feed.get(7)[1].tolist()
        [18, 19, 20, 21]
        """
        if self._it is None:
            self._restart(*divmod(check_int("t", t, 0), len(self.sampler)))

    def get(self, t: int) -> Any:
        """The worker's batch of global iteration ``t`` (the loader's collated batch, on ``device``).

        Parameters
        ----------
        t : int
            The global iteration, over all epochs (epoch ``t // len(sampler)``).

        Returns
        -------
        object
            The loader's collated batch (for a ``TensorDataset``: a list of tensors), moved to ``device``.

        Raises
        ------
        GradcodesValueError
            If ``t`` is negative.

        Examples
        --------
        >>> import torch
        >>> import gradcodes as gc
        >>> from torch.utils.data import TensorDataset
        >>> data = TensorDataset(torch.arange(40.0), torch.arange(40))
        >>> feed = LoaderFeed(data, CodedSampler(40, gc.cyclic_repetition(4, 1, rng=0), 1, batch_size=8,
        ...                                      shuffle=False))
        >>> x, y = feed.get(1)
        >>> x.tolist(), y.tolist()
        ([10.0, 11.0, 12.0, 13.0], [10, 11, 12, 13])
        """
        epoch, b = divmod(check_int("t", t, 0), len(self.sampler))
        if self._it is None or epoch != self._epoch or b < self._next or b - self._next > self.SKIP:
            self._restart(epoch, b)
        assert self._it is not None
        while self._next < b:
            next(self._it)
            self._next += 1
        batch = next(self._it)
        self._next += 1
        return _to(batch, self.device)


def _to(batch: Any, device: Any) -> Any:
    """``batch`` with its tensors (also inside tuples, lists and dicts) on ``device``."""
    if device is None:
        return batch
    if hasattr(batch, "to") and callable(batch.to):
        return batch.to(device, non_blocking=True)
    if isinstance(batch, (tuple, list)):
        return type(batch)(_to(b, device) for b in batch)
    if isinstance(batch, dict):
        return {k: _to(v, device) for k, v in batch.items()}
    return batch
