"""Write the intersphinx inventories the docs build reads offline (``docs/conf.py``: ``intersphinx_mapping``).

The build machines have no network, so instead of downloading each project's ``objects.inv`` the docs carry a
small inventory per project with the names the pages and docstrings reference, each with its address in that
project's public documentation (the base URL is in ``docs/conf.py``). Add a name here when a page references a
new external object (a nitpicky build, ``sphinx-build -n``, reports it), then run
``python docs/_inventories/make_inventories.py`` and commit the ``.inv`` files.
"""

from __future__ import annotations

import zlib
from pathlib import Path

HERE = Path(__file__).resolve().parent

# project -> [(name, domain:role, uri relative to the project's base URL)]; "$" stands for the name (Sphinx's rule)
INVENTORIES: dict[str, list[tuple[str, str, str]]] = {
    "python": [
        ("fractions", "py:module", "library/fractions.html#module-fractions"),
        ("fractions.Fraction", "py:class", "library/fractions.html#$"),
        ("object", "py:class", "library/functions.html#$"),
        ("tuple", "py:class", "library/stdtypes.html#$"),
        ("dict", "py:class", "library/stdtypes.html#$"),
        ("int", "py:class", "library/functions.html#$"),
        ("float", "py:class", "library/functions.html#$"),
        ("str", "py:class", "library/stdtypes.html#$"),
        ("Exception", "py:exception", "library/exceptions.html#$"),
        ("ValueError", "py:exception", "library/exceptions.html#$"),
        ("RuntimeError", "py:exception", "library/exceptions.html#$"),
        ("TypeError", "py:exception", "library/exceptions.html#$"),
        ("Warning", "py:exception", "library/exceptions.html#$"),
        ("UserWarning", "py:exception", "library/exceptions.html#$"),
        ("RuntimeWarning", "py:exception", "library/exceptions.html#$"),
        ("DeprecationWarning", "py:exception", "library/exceptions.html#$"),
        ("KeyboardInterrupt", "py:exception", "library/exceptions.html#$"),
        ("enum.Enum", "py:class", "library/enum.html#$"),
        ("typing.NamedTuple", "py:class", "library/typing.html#$"),
        ("collections.abc.Mapping", "py:class", "library/collections.abc.html#$"),
        ("collections.abc.Sequence", "py:class", "library/collections.abc.html#$"),
    ],
    "numpy": [
        ("numpy", "py:module", "reference/index.html#module-numpy"),
        ("numpy.ndarray", "py:class", "reference/generated/numpy.ndarray.html#$"),
        ("numpy.dtype", "py:class", "reference/generated/numpy.dtype.html#$"),
        ("numpy.float32", "py:class", "reference/arrays.scalars.html#$"),
        ("numpy.float64", "py:class", "reference/arrays.scalars.html#$"),
        ("numpy.random.Generator", "py:class", "reference/random/generator.html#$"),
        ("numpy.random.default_rng", "py:function", "reference/random/generator.html#$"),
        ("numpy.random.SeedSequence", "py:class",
         "reference/random/bit_generators/generated/numpy.random.SeedSequence.html#$"),
        ("numpy.random.BitGenerator", "py:class",
         "reference/random/bit_generators/generated/numpy.random.BitGenerator.html#$"),
        ("numpy.linalg.lstsq", "py:function", "reference/generated/numpy.linalg.lstsq.html#$"),
    ],
    "scipy": [
        ("scipy.sparse", "py:module", "reference/sparse.html#module-scipy.sparse"),
        ("scipy.sparse.csr_array", "py:class", "reference/generated/scipy.sparse.csr_array.html#$"),
        ("scipy.linalg", "py:module", "reference/linalg.html#module-scipy.linalg"),
    ],
    "galois": [
        ("galois", "py:module", "api/#module-galois"),
        ("galois.FieldArray", "py:class", "api/galois.FieldArray/#$"),
        ("galois.GF", "py:function", "api/galois.GF/#$"),
    ],
    "mpi4py": [
        ("mpi4py", "py:module", "mpi4py.html#module-mpi4py"),
        ("mpi4py.MPI", "py:module", "mpi4py.MPI.html#module-mpi4py.MPI"),
        ("mpi4py.MPI.Comm", "py:class", "reference/mpi4py.MPI.Comm.html#$"),
        ("mpi4py.MPI.COMM_WORLD", "py:data", "reference/mpi4py.MPI.COMM_WORLD.html#$"),
    ],
    "hypothesis": [
        ("hypothesis", "py:module", "reference/api.html#module-hypothesis"),
        ("hypothesis.given", "py:function", "reference/api.html#$"),
        ("hypothesis.strategies", "py:module", "reference/strategies.html#module-hypothesis.strategies"),
        ("hypothesis.strategies.SearchStrategy", "py:class", "reference/strategies.html#$"),
        ("hypothesis.extra.numpy", "py:module", "reference/strategies.html#module-hypothesis.extra.numpy"),
    ],
}


def inventory(project: str, entries: list[tuple[str, str, str]]) -> bytes:
    """An ``objects.inv`` (version 2) with these entries; the display name is the name itself (``-``)."""
    header = (f"# Sphinx inventory version 2\n# Project: {project}\n# Version: \n"
              "# The remainder of this file is compressed using zlib.\n").encode()
    body = "".join(f"{name} {role} 1 {uri} -\n" for name, role, uri in sorted(entries))
    return header + zlib.compress(body.encode(), 9)


def main() -> None:
    for project, entries in INVENTORIES.items():
        (HERE / f"{project}.inv").write_bytes(inventory(project, entries))


if __name__ == "__main__":
    main()
