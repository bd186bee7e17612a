"""One module per code family; each constructor returns a code of the core types and registers its scheme.

To add a family: write ``gradcodes/_families/<family>.py`` with a validated constructor returning a
:class:`~gradcodes.GradientCode` (or :class:`~gradcodes.ApproximateCode`), its closed-form decoders as
:class:`~gradcodes.Decoder` subclasses, and a ``register(Scheme(...))`` call; then import it below and export the
constructor from ``gradcodes/__init__.py``.
"""

from . import coded_reduce as _coded_reduce  # noqa: F401  (issue 5: registers the "coded_reduce" scheme)
from .baselines import (  # noqa: I001
                        bernoulli_gc,
                        erasurehead,
                        ignore_stragglers,
                        optimal_decoding,
                        random_regular_graph,
                        stochastic_gc,
)
from .binary import grouped_mds, recommend, stable_binary  # issue 3
from .cyclic_mds import cyclic_mds  # issue 3
from .expander import approximation_error, evaluate_approximation, expander_code  # issue 3
from .heterogeneous import NegativeCoefficientWarning, heterogeneous, optimal_row_sums, song_choi_allocation  # noqa: I001
from .repetition import cyclic_repetition, fractional_repetition, uncoded
from .ye_abbe import ye_abbe

__all__ = ["cyclic_repetition", "fractional_repetition", "uncoded"]
__all__ += ["NegativeCoefficientWarning", "heterogeneous", "optimal_row_sums", "song_choi_allocation",
            "bernoulli_gc", "erasurehead", "ignore_stragglers", "optimal_decoding", "random_regular_graph",
            "stochastic_gc"]
__all__ += ["cyclic_mds", "expander_code", "approximation_error", "evaluate_approximation", "recommend",
            "stable_binary", "grouped_mds"]  # issue 3
__all__ += ["ye_abbe"]
