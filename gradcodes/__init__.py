"""gradcodes: gradient coding — exact and approximate straggler-tolerant gradient codes.

A synchronous distributed-training step with ``n`` workers can finish from the first ``n - s`` of them and still
obtain the exact sum of the partial gradients: worker ``i`` holds redundant data partitions and sends the coded
combination ``y_i = B_i G`` (row ``i`` of an encoding matrix ``B``); the master decodes with ``a_F`` such that
``a_F B = 1``.

>>> import numpy as np, gradcodes as gc
>>> code = gc.cyclic_repetition(6, 2, rng=0)
>>> G = np.random.default_rng(1).normal(size=(6, 5))      # 6 partial gradients of length 5
>>> Y = code.encode(G)                                      # 6 worker messages
>>> bool(np.allclose(code.decode([0, 2, 3, 5], Y), G.sum(axis=0)))   # workers 1 and 4 straggle
True
"""

from ._base.errors import GradcodesError, GradcodesRuntimeError, GradcodesTypeError, GradcodesValueError
from ._base.registry import Scheme, register, schemes
from ._base.validate import Limits, SizeLimitError, limits
from ._core.acceptance import NonFiniteMessageError
from ._core.code import ApproximateCode, DecodeInfo, DecodingError, GradientCode, LinearCode, Recommendation
from ._core.decodable import Decodability
from ._core.decoders import Decoder, ExactDecoder, LeastSquaresDecoder, NullSpaceDecoder
from ._families import (
    CyclicMDSCode,
    ExpanderCode,
    HeterogeneousCode,
    NegativeCoefficientWarning,
    YeAbbeCode,
    approximation_error,
    bernoulli_gc,
    cyclic_mds,
    cyclic_repetition,
    erasurehead,
    expander_code,
    fractional_repetition,
    grouped_mds,
    grouped_random,
    heterogeneous,
    ignore_stragglers,
    optimal_decoding,
    optimal_row_sums,
    random_regular_graph,
    recommend,
    song_choi_allocation,
    stable_binary,
    stochastic_gc,
    uncoded,
    worst_case_error,
    ye_abbe,
)
from ._families.adversarial import (
    AdversarialCode,
    InterpolationDecoder,
    adversarial_comm_cost,
    adversarial_gc,
)
from ._families.adversarial_decode import (
    AdversarialDecodeResult,
    AdversarialVerifyReport,
    decode_adversarial,
    verify_adversarial,
)
from ._families.bibd import BIBDCode, BIBDDecoder, bibd_code, block_design, stochastic_bibd
from ._families.bipartite_expander import bipartite_expander_code, random_biregular_graph
from ._families.coded_reduce import CodedReduceCode, TreeVerifyReport, coded_reduce, coded_reduce_load, verify_tree
from ._families.expander_graphs import (
    BipartiteExpanderCode,
    ComponentDecoder,
    GraphAssignmentCode,
    graph_assignment_error,
)
from ._families.graph_assignment import graph_assignment_code
from ._families.heterogeneous_exact import (
    HeterogeneousExactCode,
    LagrangeDecoder,
    heterogeneous_exact,
    heterogeneous_loads,
    min_time_heterogeneous,
)
from ._families.heterogeneous_robust import (
    RobustHeterogeneousCode,
    robust_heterogeneous_exact,
    worst_time_heterogeneous,
)
from ._families.margulis import margulis_code, margulis_gabber_galil_graph
from ._families.multi_message import multi_message_code, multi_message_time
from ._families.partial_stragglers import ChunkDecoder, PartialStragglerCode, chunk_order, partial_straggler_code, q_max
from ._families.partial_stragglers_verify import verify_partial
from ._families.product import ProductCode, product_code
from ._io.files import CodeFileError, load, load_code, save, save_code
from ._simulate import (
    AdaptiveK,
    BackupWorkers,
    EarliestDecodable,
    FixedK,
    KAsync,
    PartialSimulation,
    PersistentStragglers,
    SchemeResult,
    ShiftedExponentialWorkers,
    SimulationResult,
    TraceReplay,
    TrainingResult,
    WaitPolicy,
    WorkerModel,
    simulate,
    simulate_partial,
    simulate_training,
)
from ._verify.approx_eval import (
    ApproxReport,
    FixedWeightDecoder,
    closed_form_error,
    evaluate_approximate,
    exponential_straggle_probabilities,
    min_load_heterogeneous,
    straggle_probabilities,
)
from ._verify.approx_worst import ApproximationReport
from ._verify.blocks import BlockDecoder, BlockVerifyReport, blocks_of, by_blocks
from ._verify.bounds import min_load
from ._verify.parallel import CheckpointError
from ._verify.verifier import VerifyReport, verify

__version__ = "0.1.0"

__all__ = [
    # core types and decoders
    "LinearCode", "GradientCode", "ApproximateCode", "DecodeInfo", "DecodingError",
    "Decoder", "NullSpaceDecoder", "LeastSquaresDecoder", "ExactDecoder",
    # exact constructions
    "uncoded", "fractional_repetition", "cyclic_repetition", "cyclic_mds", "stable_binary", "grouped_mds",
    "grouped_random", "recommend", "Recommendation", "ye_abbe", "coded_reduce", "CodedReduceCode", "CyclicMDSCode",
    "YeAbbeCode",
    "heterogeneous_exact", "HeterogeneousExactCode", "LagrangeDecoder", "heterogeneous_loads",
    "min_time_heterogeneous", "robust_heterogeneous_exact", "RobustHeterogeneousCode", "worst_time_heterogeneous",
    "partial_straggler_code", "PartialStragglerCode", "ChunkDecoder", "chunk_order", "q_max", "verify_partial",
    "simulate_partial", "PartialSimulation", "multi_message_code", "multi_message_time",
    # approximate constructions
    "expander_code", "ExpanderCode", "heterogeneous", "HeterogeneousCode", "optimal_row_sums", "song_choi_allocation",
    "NegativeCoefficientWarning",
    "ignore_stragglers", "stochastic_gc", "bernoulli_gc", "erasurehead", "optimal_decoding",
    "random_regular_graph",
    "margulis_code", "margulis_gabber_galil_graph", "bipartite_expander_code", "BipartiteExpanderCode",
    "random_biregular_graph", "graph_assignment_code", "GraphAssignmentCode", "ComponentDecoder",
    "graph_assignment_error",
    "adversarial_gc", "AdversarialCode", "adversarial_comm_cost", "decode_adversarial", "AdversarialDecodeResult",
    "verify_adversarial", "AdversarialVerifyReport", "InterpolationDecoder",
    "bibd_code", "BIBDCode", "BIBDDecoder", "block_design", "stochastic_bibd", "product_code", "ProductCode",
    # verification, evaluation and bounds
    "verify", "VerifyReport", "verify_tree", "TreeVerifyReport", "min_load", "coded_reduce_load",
    "by_blocks", "blocks_of", "BlockDecoder", "BlockVerifyReport",
    "approximation_error", "worst_case_error", "ApproximationReport", "evaluate_approximate", "ApproxReport",
    "closed_form_error",
    "FixedWeightDecoder", "min_load_heterogeneous", "straggle_probabilities", "exponential_straggle_probabilities",
    # simulation, files, registry
    "simulate", "SimulationResult", "SchemeResult", "Decodability", "WaitPolicy", "EarliestDecodable", "FixedK",
    "BackupWorkers", "AdaptiveK", "KAsync", "simulate_training", "TrainingResult",
    "WorkerModel", "ShiftedExponentialWorkers", "PersistentStragglers", "TraceReplay",
    "save_code", "load_code", "save", "load", "CodeFileError", "CheckpointError", "Scheme", "register", "schemes",
    # size bounds
    "limits", "Limits", "SizeLimitError",
    # errors (every one derives from GradcodesError and from the builtin exception it was before)
    "GradcodesError", "GradcodesValueError", "GradcodesTypeError", "GradcodesRuntimeError", "NonFiniteMessageError",
]
