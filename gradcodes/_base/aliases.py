"""Type aliases of the public signatures (for type checkers and readers; numpy.typing for arrays).

* :data:`RNGLike` — what every ``rng`` parameter accepts, as scientific Python's SPEC 7 recommends;
* :data:`Responders` — responder sets: worker indices in any order, or a boolean mask of length ``n``;
* :data:`FieldLike` — a field name or a galois ``GF(p)`` class;
* :data:`MatrixLike` — an encoding matrix: anything numpy reads as an array, or nested sequences of Fractions;
* :data:`ProbabilitiesLike` — straggle probabilities (floats, Fractions or strings such as ``"1/10"``);
* :data:`Array` — what the code types return: an ndarray (float, complex, object of Fractions, or a galois
  ``FieldArray``, which subclasses ndarray).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from fractions import Fraction
from typing import Any, TypeAlias

import numpy as np
from numpy.typing import ArrayLike, DTypeLike, NDArray

__all__ = ["ArrayLike", "DTypeLike", "NDArray", "RNGLike", "Responders", "FieldLike", "MatrixLike", "Array",
           "ProbabilitiesLike"]

#: None (fresh entropy), a non-negative int, a SeedSequence, a BitGenerator or a Generator.
RNGLike: TypeAlias = None | int | np.integer | np.random.SeedSequence | np.random.BitGenerator | np.random.Generator

#: Worker indices (any iterable of ints, in any order) or a boolean mask of length n.
Responders: TypeAlias = Iterable[int] | NDArray[np.bool_] | NDArray[np.integer]

#: ``"real"``, ``"complex"``, ``"rational"``, ``"GF(p)"`` or a galois field class such as ``galois.GF(7)``.
FieldLike: TypeAlias = str | type

#: An encoding matrix or data: array-likes, or nested sequences mixing Fractions (or sympy Rationals) with ints,
#: which type checkers infer as ``list[object]``; the entries are checked at run time.
MatrixLike: TypeAlias = ArrayLike | Sequence[object]

#: Straggle probabilities: numbers in (0, 1) as floats, Fractions or strings such as ``"1/10"``.
ProbabilitiesLike: TypeAlias = ArrayLike | Sequence[Fraction | float | str]

#: An array of any dtype (float32/float64/complex, object arrays of Fractions, galois GF(p) arrays).
Array: TypeAlias = NDArray[Any]

