"""One module per code family; each constructor returns a code of the core types and registers its scheme.

To add a family: write ``gradcodes/_families/<family>.py`` with a validated constructor returning a
:class:`~gradcodes.GradientCode` (or :class:`~gradcodes.ApproximateCode`), its closed-form decoders as
:class:`~gradcodes.Decoder` subclasses, and a ``register(Scheme(...))`` call; then import it below and export the
constructor from ``gradcodes/__init__.py``. The import order below is the order of ``gradcodes tour``.
"""

# ruff: noqa: I001  (import order = registration order = tour order: from the simplest code up)
from .repetition import cyclic_repetition, fractional_repetition, uncoded                     # Tandon et al.
from .cyclic_mds import CyclicMDSCode, cyclic_mds                                             # Raviv et al.
from .binary import grouped_mds, stable_binary                                                # stable codes
from .recommend import recommend                                                              # lowest proven load
from .grouped_random import grouped_random                                                    # proven by blocks
from .ye_abbe import YeAbbeCode, ye_abbe                                                      # Ye & Abbe
from . import coded_reduce as _coded_reduce  # noqa: F401  (registers the "coded_reduce" tree scheme)
from .expander import (ExpanderCode, approximation_error, expander_code, random_regular_graph,  # Raviv et al.
                       worst_case_error)
from .margulis import margulis_code, margulis_gabber_galil_graph                             # Margulis (Raviv et al.)
from .bipartite_expander import bipartite_expander_code, random_biregular_graph               # bipartite graphs
from .graph_assignment import graph_assignment_code                                          # Glasgow & Wootters
from .expander_graphs import BipartiteExpanderCode, ComponentDecoder, GraphAssignmentCode, graph_assignment_error
from .heterogeneous import (HeterogeneousCode, NegativeCoefficientWarning, heterogeneous, optimal_row_sums,
                            song_choi_allocation)
from .adversarial import AdversarialCode, adversarial_comm_cost, adversarial_gc  # Jahani-Nezhad & Maddah-Ali
from .adversarial_decode import decode_adversarial, verify_adversarial
from .heterogeneous_exact import (HeterogeneousExactCode, LagrangeDecoder, heterogeneous_exact,  # Wang et al.
                                  heterogeneous_loads, min_time_heterogeneous)
from .heterogeneous_robust import (RobustHeterogeneousCode, robust_heterogeneous_exact,  # robust variant
                                   worst_time_heterogeneous)
from .bibd import BIBDCode, BIBDDecoder, bibd_code, block_design, stochastic_bibd             # Kadhe et al.
from .product import ProductCode, product_code                                               # Sakorikar & Wang
from .baselines import bernoulli_gc, erasurehead, ignore_stragglers, optimal_decoding, stochastic_gc
from .partial_stragglers import ChunkDecoder, PartialStragglerCode, partial_straggler_code
from .multi_message import multi_message_code, multi_message_time                            # Ozfatura et al.

__all__ = [
    "cyclic_repetition", "fractional_repetition", "uncoded",
    "cyclic_mds", "CyclicMDSCode", "grouped_mds", "grouped_random", "recommend", "stable_binary",
    "ye_abbe", "YeAbbeCode",
    "approximation_error", "worst_case_error", "expander_code", "ExpanderCode", "HeterogeneousCode",
    "NegativeCoefficientWarning", "heterogeneous", "optimal_row_sums", "song_choi_allocation",
    "margulis_code", "margulis_gabber_galil_graph", "bipartite_expander_code", "BipartiteExpanderCode",
    "random_biregular_graph", "graph_assignment_code", "GraphAssignmentCode", "ComponentDecoder",
    "graph_assignment_error",
    "adversarial_gc", "AdversarialCode", "adversarial_comm_cost", "decode_adversarial", "verify_adversarial",
    "HeterogeneousExactCode", "LagrangeDecoder", "heterogeneous_exact", "heterogeneous_loads", "min_time_heterogeneous",
    "RobustHeterogeneousCode", "robust_heterogeneous_exact", "worst_time_heterogeneous",
    "BIBDCode", "BIBDDecoder", "bibd_code", "block_design", "stochastic_bibd", "ProductCode", "product_code",
    "bernoulli_gc", "erasurehead", "ignore_stragglers", "optimal_decoding", "random_regular_graph", "stochastic_gc",
    "partial_straggler_code", "PartialStragglerCode", "ChunkDecoder", "multi_message_code", "multi_message_time",
]
