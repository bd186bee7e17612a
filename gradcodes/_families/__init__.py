"""One module per code family; each constructor returns a code of the core types and registers its scheme.

To add a family: write ``gradcodes/_families/<family>.py`` with a validated constructor returning a
:class:`~gradcodes.GradientCode` (or :class:`~gradcodes.ApproximateCode`), its closed-form decoders as
:class:`~gradcodes.Decoder` subclasses, and a ``register(Scheme(...))`` call; then import it below and export the
constructor from ``gradcodes/__init__.py``.
"""

from .repetition import cyclic_repetition, fractional_repetition, uncoded
from .ye_abbe import ye_abbe

__all__ = ["cyclic_repetition", "fractional_repetition", "uncoded"]
__all__ += ["ye_abbe"]
