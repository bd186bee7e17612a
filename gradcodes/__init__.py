"""gradcodes: gradient coding — exact and approximate straggler-tolerant gradient codes.

A synchronous distributed-training step with ``n`` workers can finish from the first ``n - s`` of them and still
obtain the exact sum of the partial gradients: worker ``i`` holds redundant data partitions and sends the coded
combination ``y_i = B_i G`` (row ``i`` of an encoding matrix ``B``); the master decodes with ``a_F`` such that
``a_F B = 1``.

>>> import numpy as np, gradcodes as gc
>>> code = gc.cyclic_repetition(6, 2, seed=0)
>>> G = np.random.default_rng(1).normal(size=(6, 5))      # 6 partial gradients of length 5
>>> Y = code.encode(G)                                      # 6 worker messages
>>> bool(np.allclose(code.decode([0, 2, 3, 5], Y), G.sum(axis=0)))   # workers 1 and 4 straggle
True
"""

from ._approx_eval import (ApproxReport, FixedWeightDecoder, closed_form_error, evaluate_approximate,  # noqa: I001
                           exponential_straggle_probabilities, min_load_heterogeneous, straggle_probabilities)
from ._bounds import min_load
from ._code import ApproximateCode, DecodeInfo, DecodingError, GradientCode, LinearCode
from ._decoders import Decoder, ExactDecoder, LeastSquaresDecoder, NullSpaceDecoder
from ._families import cyclic_repetition, fractional_repetition, uncoded
from ._families.coded_reduce import CodedReduceCode, TreeVerifyReport, coded_reduce, coded_reduce_load, verify_tree
from ._families import (NegativeCoefficientWarning, bernoulli_gc, erasurehead, heterogeneous,  # noqa: I001
                        ignore_stragglers, optimal_decoding, optimal_row_sums, random_regular_graph,
                        song_choi_allocation, stochastic_gc)
from ._families import (approximation_error, cyclic_mds, evaluate_approximation, expander_code,  # noqa: I001
                        grouped_mds, recommend, stable_binary)  # issue 3
from ._families.ye_abbe import ye_abbe
from ._io import load, save
from ._registry import Scheme, register, schemes
from ._simulate import SimulationResult, simulate
from ._verify import VerifyReport, verify

__version__ = "0.1.0"

__all__ = [
    "ApproximateCode", "DecodeInfo", "Decoder", "DecodingError", "ExactDecoder", "GradientCode",
    "LeastSquaresDecoder", "LinearCode", "NullSpaceDecoder", "Scheme", "VerifyReport",
    "cyclic_repetition", "fractional_repetition", "load", "min_load", "register", "save", "schemes",
    "uncoded", "verify",
    "CodedReduceCode", "TreeVerifyReport", "coded_reduce", "coded_reduce_load", "verify_tree",
    "SimulationResult", "simulate",
]
__all__ += [  # issue 6: heterogeneous stragglers and approximate baselines
    "ApproxReport", "FixedWeightDecoder", "NegativeCoefficientWarning", "bernoulli_gc", "closed_form_error",
    "erasurehead", "evaluate_approximate", "exponential_straggle_probabilities", "heterogeneous",
    "ignore_stragglers", "min_load_heterogeneous", "optimal_decoding", "optimal_row_sums", "random_regular_graph",
    "song_choi_allocation", "stochastic_gc", "straggle_probabilities",
]
__all__ += ["approximation_error", "cyclic_mds", "evaluate_approximation", "expander_code", "grouped_mds",
            "recommend", "stable_binary"]  # issue 3
__all__ += ["ye_abbe"]
