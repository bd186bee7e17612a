"""One field layer: the families build their zeros, ones and constants through gradcodes._core.fields, not by hand."""

from __future__ import annotations

import re
from fractions import Fraction
from pathlib import Path

import galois
import numpy as np

from gradcodes._core.fields import PrimeField, RationalField, RealField, field_for, field_of

FAMILIES = Path(__file__).resolve().parent.parent / "gradcodes" / "_families"

#: hand-built exact arrays: Fraction-filled object arrays and galois' own constructors
HAND_BUILT = re.compile(r"np\.full\([^\n]*Fraction\(|\.fill\(Fraction\(|\[\.\.\.\] = Fraction\(|"
                        r"np\.array\(Fraction\(\d\), dtype=object\)|\bGF\.(Zeros|Ones)\(|\.Zeros\(")


def test_families_use_the_field_layer():
    offenders = [f"{path.relative_to(FAMILIES.parent.parent)}:{i}: {line.strip()}"
                 for path in sorted(FAMILIES.rglob("*.py"))
                 for i, line in enumerate(path.read_text().splitlines(), 1) if HAND_BUILT.search(line)]
    assert not offenders, "build exact arrays with gradcodes._core.fields (field_for / field_of / PrimeField):\n" + \
        "\n".join(offenders)


def test_field_for_and_field_of_agree():
    for exact, cls in ((True, RationalField), (False, RealField)):
        F = field_for(exact)
        assert type(F) is cls and F.exact is exact
        z = F.zeros((2, 3))
        assert z.shape == (2, 3) and type(field_of(z)) is cls
        assert all(v == 0 for v in z.flat)
    assert all(type(v) is Fraction for v in field_for(True).zeros(4).flat)
    assert field_for(False).zeros(2).dtype == np.float64
    GF = galois.GF(7)
    assert type(field_of(PrimeField(GF).zeros(3))) is PrimeField
    assert isinstance(PrimeField(GF).zeros(3), GF)
