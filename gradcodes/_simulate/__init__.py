"""The iteration-time simulator (:func:`gradcodes.simulate`), one module per concern:

* ``_core``      -- :func:`simulate` (argument checks, the schemes' dispatch), :func:`cr_time_bounds`;
* ``_models``    -- the shifted-exponential computation and single-port communication models;
* ``_schemes``   -- the schemes' vectorised iteration times (CodedReduce trees, master--worker, ring all-reduce);
* ``_workers``   -- worker models: unequal speeds, persistent (Markov) stragglers, replayed traces;
* ``_policies``  -- wait policies shared with the MPI runtime (earliest decodable, first k, backup workers,
  adaptive k, K-async);
* ``_partial``   -- :func:`simulate_partial`: partial-straggler protocols (a message per chunk);
* ``_training``  -- simulated SGD under a wait policy (error against simulated wall-clock time);
* ``_result``    -- :class:`SchemeResult`, :class:`SimulationResult`;
* ``_cli``       -- ``gradcodes simulate``.
"""

from ._cli import add_simulate_parser, run_simulate_cli
from ._core import SCHEME_NAMES, cr_time_bounds, simulate
from ._models import _CHUNK_ELEMENTS
from ._partial import PartialSimulation, simulate_partial
from ._policies import AdaptiveK, BackupWorkers, EarliestDecodable, FixedK, KAsync, WaitPolicy
from ._result import SchemeResult, SimulationResult
from ._training import TrainingResult, simulate_training
from ._workers import PersistentStragglers, ShiftedExponentialWorkers, TraceReplay, WorkerModel

__all__ = ["simulate", "SimulationResult", "SchemeResult", "add_simulate_parser", "run_simulate_cli",
           "cr_time_bounds", "SCHEME_NAMES", "_CHUNK_ELEMENTS", "WaitPolicy", "EarliestDecodable", "FixedK",
           "BackupWorkers", "AdaptiveK", "KAsync", "simulate_training", "TrainingResult", "WorkerModel",
           "ShiftedExponentialWorkers", "PersistentStragglers", "TraceReplay", "simulate_partial",
           "PartialSimulation"]
