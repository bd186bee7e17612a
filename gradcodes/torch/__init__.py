"""gradcodes.torch: coded data-parallel training of PyTorch models on ``torch.distributed`` (Gloo on CPU).

Install with ``pip install 'gradcodes[torch]'``. ``import gradcodes`` never imports torch; this package does
when its functions run. Launch with ``torchrun --standalone --nproc-per-node N+1 script.py`` (rank 0 is the
master, rank ``i + 1`` worker ``i``); ``torchrun ... -m gradcodes.torch`` runs the built-in job (a small CNN on
scikit-learn's 8x8 digits, time to accuracy per scheme against DDP). See ``docs/torch.md``.

* Data and loss: :class:`CodedSampler` (each worker's samples of each global batch, per partition),
  :class:`LoaderFeed` (a worker's batches of a map-style ``Dataset`` through a ``DataLoader``),
  :func:`loss_weights` and :func:`coded_loss` (the message as the gradient of one weighted loss),
  :class:`CodedGradient` (a worker's message, also for ``m > 1``).
* Aggregation: :class:`Master` and :class:`Worker` (point-to-point, first decodable responders, stale and NaN
  messages dropped, a timeout error naming the missing ranks, the same code on every rank checked at set-up,
  ``adversarial_gc`` codes decoded adversarially, any float dtype, frozen parameters left alone), :func:`train`
  (datasets, schedulers, clipping, :class:`Callback` hooks, BatchNorm buffers, the final parameters on every
  rank, checkpoint and resume) and the :func:`ddp_train` baseline, :class:`TrainResult`, :class:`FlatParams`.
* Straggler injection: the delay models of :mod:`gradcodes.mpi` (``ShiftedExponential``, ``FixedDelay``,
  ``Hang``) and its ``StragglerTimeout``, importable from here too.
"""

from .._runtime.delays import FixedDelay as FixedDelay
from .._runtime.delays import Hang as Hang
from .._runtime.delays import ShiftedExponential as ShiftedExponential
from .._runtime.engine import StragglerTimeout as StragglerTimeout
from ._coded import CodedGradient
from ._data import CodedSampler, LoaderFeed
from ._loss import coded_loss, loss_weights
from ._master import AggregateInfo, Master
from ._params import FlatParams
from ._result import Callback, TrainResult
from ._train import ddp_train, train
from ._worker import Worker

__all__ = ["CodedSampler", "LoaderFeed", "Callback", "loss_weights", "coded_loss", "CodedGradient", "Master",
           "Worker", "AggregateInfo", "FlatParams", "train", "ddp_train", "TrainResult"]
