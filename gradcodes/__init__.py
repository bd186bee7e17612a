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

from ._bounds import min_load
from ._code import ApproximateCode, DecodeInfo, DecodingError, GradientCode, LinearCode
from ._decoders import Decoder, ExactDecoder, LeastSquaresDecoder, NullSpaceDecoder
from ._families import cyclic_repetition, fractional_repetition, uncoded
from ._families.ye_abbe import ye_abbe
from ._io import load, save
from ._registry import Scheme, register, schemes
from ._verify import VerifyReport, verify

__version__ = "0.1.0"

__all__ = [
    "ApproximateCode", "DecodeInfo", "Decoder", "DecodingError", "ExactDecoder", "GradientCode",
    "LeastSquaresDecoder", "LinearCode", "NullSpaceDecoder", "Scheme", "VerifyReport",
    "cyclic_repetition", "fractional_repetition", "load", "min_load", "register", "save", "schemes",
    "uncoded", "verify",
]
__all__ += ["ye_abbe"]
