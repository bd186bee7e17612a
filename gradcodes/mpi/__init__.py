"""gradcodes.mpi: run gradient codes on MPI (mpi4py), master--worker and CodedReduce trees.

Install with ``pip install 'gradcodes[mpi-local]'`` (mpi4py and the MPICH wheel, giving ``mpiexec`` in the
environment) or ``'gradcodes[mpi]'`` (mpi4py only, for a site MPI). Importing this package does not import mpi4py;
MPI is initialised by the first runtime object. Launch every script with ``mpiexec -n SIZE python -m mpi4py
script.py`` so that an exception on any rank ends the whole job. See ``docs/runtime.md``.

* :func:`train`: the high-level loop (parameters sent by the master each iteration, an optimizer ``step``
  callback, measurements in a :class:`RunResult`).
* :class:`Master` (``broadcast``, ``aggregate(iteration) -> gradient, info``, ``stop``) and :class:`Worker`
  (``step``, ``run``): the pieces for a custom loop.
* :class:`PartialMaster` and :class:`PartialWorker`: partial-straggler protocols
  (:func:`gradcodes.partial_straggler_code`), a message after every finished chunk.
* Straggler injection: :class:`ShiftedExponential`, :class:`FixedDelay`, :class:`Hang`, :class:`ModelDelay` (the
  simulator's worker models: unequal speeds, persistent stragglers, replayed traces).
"""

from .._runtime.codec import WorkerEncoder
from .._runtime.delays import Combined, Delay, FixedDelay, Hang, ModelDelay, NoDelay, ShiftedExponential
from .._runtime.layout import Layout, layout_for
from ._comm import StragglerTimeout
from ._master import AggregateInfo, Master
from ._partial import PartialMaster, PartialWorker
from ._result import RunResult, predict
from ._train import allreduce_train, train
from ._worker import Worker

__all__ = ["train", "allreduce_train", "Master", "Worker", "AggregateInfo", "RunResult", "predict",
           "StragglerTimeout", "Delay", "NoDelay", "ShiftedExponential", "FixedDelay", "Hang", "Combined",
           "ModelDelay",
           "Layout", "layout_for", "WorkerEncoder", "PartialMaster", "PartialWorker"]
