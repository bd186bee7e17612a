"""CodedReduce (Reisizadeh, Prakash, Pedarsani & Avestimehr): gradient codes composed along a regular tree.

The master is the root of the ``(b, L)``-regular tree (``b = branching``, the paper's ``n``); every node at levels
``0..L-1`` has ``b`` children and levels ``1..L`` are the ``N = b + b^2 + ... + b^L`` workers. Every parent spreads
the data it is responsible for over its children with an inner ``(b, s)`` gradient code, every worker also computes
a share of its own, and each parent decodes from any ``b - s`` children and adds its own message (hierarchical
decoding). Every worker then computes the same fraction ``r_CR`` of the dataset, the smallest possible on the
tree (the converse in :func:`coded_reduce_load`).

The code is split by responsibility: ``coded_reduce_alloc`` (the optimal load and CR.Allocate),
``coded_reduce_code`` (the :class:`CodedReduceCode` type and its hierarchical decoder), ``coded_reduce_tree`` (the
tree's addresses, allocation lists and straggler patterns, a base of that type), ``coded_reduce_verify``
(verification under the tree's straggler model) and this module (the constructor and its registration).

Nodes are addressed by tuples of child indices ``(t_1, ..., t_l)`` (the master is ``()``); workers are numbered in
breadth-first order: with ``b = branching`` children per node, the children of the master are workers ``0..b-1``
and the children of worker ``i`` are workers ``(i+1) b .. (i+1) b + b - 1``. With *parent* ``t = 0`` the master and
``t = i + 1`` worker ``i``, the children of parent ``t`` are workers ``t b .. t b + b - 1``.
"""

from __future__ import annotations

from fractions import Fraction
from typing import Any

import numpy as np

from .._base.aliases import RNGLike
from .._base.errors import GradcodesTypeError, GradcodesValueError
from .._base.registry import SAMPLED, Scheme, register
from .._base.validate import (
    check_entries,
    check_int,
    check_rng,
    check_size,
    check_tree_size,
)
from .._core.code import GradientCode
from .._core.fields import RationalField
from .._core.sparse import csr_from_rows, use_sparse
from .._io.files import REBUILDERS, CodeFileError, rebuild_saved
from .coded_reduce_alloc import _allocate, _check_tree, _min_units, _tree_fractions, coded_reduce_load, tree_shape
from .coded_reduce_code import CodedReduceCode, TreeDecoder
from .coded_reduce_verify import TreeVerifyReport, _exhaustive_masks, verify_tree  # noqa: F401

__all__ = ["coded_reduce", "coded_reduce_load", "CodedReduceCode", "TreeDecoder", "TreeVerifyReport",
           "verify_tree"]

# ----------------------------------------------------------------------------------------------------------
# the constructor


def _default_inner(n: int, s: int, field: str, rng: Any) -> GradientCode:
    from .repetition import cyclic_repetition, fractional_repetition

    if n % (s + 1) == 0:
        return fractional_repetition(n, s, field=field)
    if field == "real":
        # The usual suggestions are the real cyclic MDS code (n - s odd) or Tandon's cyclic repetition with a random H.
        # Their cancellation grows with n and s (worst searched: MDS 2.6e3 at (25, 6), 1e6 at (31, 14); random
        # cyclic repetition 14 at (3, 1), 2e3 at (10, 4)) and multiplies along the tree ((3, 6, 1): 7e7, fails
        # float64; (30, 2, 15): 7e11, fails). The Ye-Abbe Fourier code with m = 1 has the same load s + 1, every
        # (n, s), and a proven cancellation bound (64 at (25, 6), 3.8e3 at (31, 14); at most 2x the MDS code's on
        # the small cases measured).
        from .ye_abbe import ye_abbe

        return ye_abbe(n, s, 1)
    if field == "rational":
        # An exact H (integers, H 1 = 0) drawn from the seed; any n - s rows of the code must span 1, which
        # holds with probability 1 for continuous H but only generically for integer H, so the drawn code is
        # verified exactly and redrawn if needed. (A float H converted to Fractions would not satisfy
        # H 1 = 0 exactly.)
        from .._verify.verifier import verify

        rng = check_rng(rng)
        for _ in range(50):
            H = rng.integers(-50, 51, size=(s, n - 1))
            H = np.concatenate([H, -H.sum(axis=1, keepdims=True)], axis=1)
            try:
                code = cyclic_repetition(n, s, H=H.tolist(), field="rational")
            except ValueError:
                continue
            if verify(code, limit=20_000).exact:
                return code
        raise GradcodesValueError(f"could not draw an exact rational cyclic-repetition inner code for n={n}, s={s}; "
                                  "pass inner= explicitly")
    raise GradcodesValueError(
        f"field must be 'real' or 'rational', got {field!r}")  # pragma: no cover - checked by caller


def coded_reduce(branching: int, L: int, s: int, inner: GradientCode | None = None, *, P: int | None = None,
                 field: str | None = None, rng: RNGLike = None) -> CodedReduceCode:
    r"""CodedReduce: gradient codes composed along the ``(b, L)``-regular tree (Reisizadeh et al., CodedReduce).

    The master is the root; every node at levels ``0..L-1`` has ``b = branching`` children (the paper's ``n``); the
    ``N = b + ... + b^L`` workers are the nodes at levels ``1..L`` (``code.n == N``: as everywhere in gradcodes,
    ``n`` of a code is its number of workers). The dataset is cut into ``P`` units. **CR.Allocate** gives every
    node an ordered list of (unit, coefficient) pairs: the master's is every unit with coefficient 1; a node
    at level ``1 <= l < L`` keeps the first ``r P`` entries as its own share and cuts the rest into ``k`` equal
    chunks ``C_0..C_{k-1}``; child ``t`` gets the chunks ``kappa`` with ``B_inner[t, kappa] != 0``, in
    increasing ``kappa``, scaled by ``B_inner[t, kappa]``; a leaf owns its whole list. Every worker computes
    ``r P`` units (:func:`coded_reduce_load`), the optimum on the tree.

    **CR.Execute**: a worker computes ``sum c g_u`` over its own share; an internal node waits for any ``b-s``
    children ``F`` and sends its own message plus ``sum_{t in F} a_F[t] msg_t``; the master's
    ``sum_{t in F} a_F[t] msg_t`` is exactly ``sum_u g_u`` (induction: ``sum_t a_F[t] B_inner[t, kappa] = 1``).

    Parameters
    ----------
    branching : int
        Children per node (the tree's branching factor ``n`` in Reisizadeh et al.), ``>= 2``
        (``n`` is the number of workers everywhere else).
    L : int
        Levels of workers, ``L >= 1`` (``L = 1`` is master--worker gradient coding with the inner code).
    s : int
        Stragglers tolerated among the children of every parent, ``0 <= s <= b - 1``.
    inner : GradientCode, optional
        Any exact ``(b, s)`` gradient code with ``m = 1`` and equal row weights. Default: fractional
        repetition if ``(s+1) | b``; else, over the reals, the Ye–Abbe Fourier code ``ye_abbe(b, s, 1)`` (load
        ``s + 1``, proven cancellation bound; the usual suggestions are the real cyclic MDS code or a random cyclic
        repetition, whose cancellation grows faster and compounds along the tree); with ``field="rational"``,
        Tandon's cyclic repetition with a random integer ``H`` drawn from ``rng``.
    P : int, optional
        Number of data units, a positive multiple of the smallest admissible ``P_min`` (default ``P_min``).
    field : {"real", "rational"}, optional
        Field of the default inner code (``"rational"`` for exact arithmetic). With ``inner`` given the tree
        takes the inner code's field, and a different ``field`` is an error. Default ``"real"``.
    rng : None, int, numpy.random.SeedSequence or numpy.random.Generator, optional
        Random state of the default rational cyclic-repetition inner code (unused otherwise), as scientific
        Python's SPEC 7 recommends.

    Returns
    -------
    CodedReduceCode
        ``n`` = ``N`` workers, ``k`` = ``P`` units, ``load`` = ``r P``.

    Raises
    ------
    GradcodesValueError
        If a parameter is out of its range (the message names the parameter and the range), or ``inner`` or ``P`` does
        not fit the tree.
    GradcodesTypeError
        If ``inner`` is not an exact :class:`GradientCode`.

    Examples
    --------
    A worked example (branching 3, L = 2, s = 1), in exact arithmetic:

    >>> import gradcodes as gc
    >>> inner = gc.cyclic_repetition(3, 1, H=[[1, 1, -2]], field="rational")
    >>> code = gc.coded_reduce(3, 2, 1, inner)
    >>> code.N, code.P, code.r, code.load
    (12, 15, Fraction(4, 15), 4)
    >>> [(u, str(c)) for u, c in code.assigned(code.worker((0, 1)))]
    [(6, '-1'), (7, '-1'), (8, '-1/2'), (9, '-1/2')]
    >>> gc.verify_tree(code).exact        # all 256 straggler patterns recover the sum exactly
    True

    Encode and decode through the flattened code (worker 1 and worker 3 straggle):

    >>> import numpy as np
    >>> G = np.arange(45.0).reshape(15, 3)           # one partial gradient per data unit
    >>> code = gc.coded_reduce(3, 2, 1)              # default inner code: ye_abbe(3, 1, 1)
    >>> Y = code.encode(G)
    >>> responders = [i for i in range(12) if i not in (1, 3)]
    >>> np.allclose(code.decode(responders, Y), G.sum(axis=0))
    True
    """
    n, L, s = _check_tree(branching, L, s)
    check_rng(rng)                       # validated even when the default inner code does not use it
    if inner is None:
        fld = "real" if field is None else field
        if fld not in ("real", "rational"):
            raise GradcodesValueError(f"field must be 'real' or 'rational', got {field!r}")
        inner = _default_inner(n, s, fld, rng)
    else:
        if not isinstance(inner, GradientCode):
            raise GradcodesTypeError(f"inner must be an exact GradientCode (e.g. gc.cyclic_repetition(n, s)), got "
                                     f"{type(inner).__name__}")
        if inner.n != n:
            raise GradcodesValueError(f"inner must have n={n} workers (one per child), got an inner code with "
                                      f"n={inner.n}")
        if inner.s != s:
            raise GradcodesValueError(
                f"inner must tolerate exactly s={s} stragglers, got an inner code with s={inner.s}")
        if inner.m != 1:
            raise GradcodesValueError(f"inner must have m=1 (whole-gradient messages), got m={inner.m}")
        if field is not None and field != inner.field:
            raise GradcodesValueError(
                f"field={field!r} contradicts the inner code's field {inner.field!r}; the tree "
                "takes the inner code's field (omit field, or build the inner code over that field)")
    if inner.field not in ("real", "complex", "rational"):
        raise GradcodesValueError(f"inner must be over the real, complex or rational field, got {inner.field}")
    loads = np.asarray(inner.loads)
    if np.any(loads != loads[0]):
        raise GradcodesValueError(f"inner must give every worker the same number of partitions (equal loads on the "
                                  f"tree), got loads {loads.tolist()}")
    k = inner.k
    q = Fraction(int(loads[0]), k)
    r, D = _tree_fractions(q, L)
    P_min = _min_units(k, r, D)
    if P is None:
        P = P_min
    else:
        P = check_int("P", P, 1)
        if P % P_min:
            raise GradcodesValueError(f"P must be a positive multiple of P_min={P_min} for (branching, L, s)="
                                      f"({n}, {L}, {s}) with this inner code, got P={P}")
    N_tree = check_tree_size(n, L)
    sparse = inner.field != "rational" and use_sparse(N_tree, P)
    if sparse:                 # N r P non-zeros, stored sparse (gradcodes._core.sparse); the lists are that size too
        check_size(f"the non-zeros of the tree code's matrix ({N_tree:,} x {P:,})",
                   int((N_tree - n**L) * r * P + n**L * D[-1] * P), "entries")
    else:
        check_entries(N_tree, P, exact=inner.field == "rational", what="the tree code's matrix (N x P)")
    Bi = inner.B
    if inner.field == "rational":
        zero: Any = Fraction(0)
        Bi = np.asarray(Bi, dtype=object)
    else:
        Bi = np.asarray(Bi)
        zero = Bi.dtype.type(0)
    supports = [np.flatnonzero(np.asarray(row != 0)) for row in Bi]
    units, coefs = _allocate(n, L, P, r, Bi, supports, zero)
    N = len(units)
    own_len = int(r * P)
    n_leaf = n**L
    B: Any
    if sparse:
        shares = [slice(None) if v >= N - n_leaf else slice(0, own_len) for v in range(N)]
        lengths = np.array([units[v][sh].size for v, sh in enumerate(shares)], dtype=np.int64)
        indptr = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
        B = csr_from_rows(indptr, np.concatenate([units[v][sh] for v, sh in enumerate(shares)]),
                          np.concatenate([coefs[v][sh] for v, sh in enumerate(shares)]), (N, P))
    elif inner.field == "rational":
        B = RationalField().zeros((N, P))
    else:
        B = np.zeros((N, P), dtype=Bi.dtype)
    if not sparse:
        for v in range(N):
            share = slice(None) if v >= N - n_leaf else slice(0, own_len)
            B[v, units[v][share]] = coefs[v][share]
    params = {"branching": n, "L": L, "s": s, "P": P, "inner": _inner_record(inner)}
    return CodedReduceCode(B, branching=n, L=L, s=s, inner=inner, P=P, lists=(units, coefs),
                           params=params)


def _inner_record(inner: GradientCode) -> dict[str, Any]:
    """A JSON-serialisable record of the inner code (its family, parameters and exact matrix)."""
    return {"family": inner.family, "params": dict(inner.params), "field": inner.field, "s": int(inner.s),
            "B": [[str(x) if inner.field == "rational" else repr(complex(x) if inner.field == "complex"
                                                                  else float(x)) for x in row]
                  for row in np.asarray(inner.B)]}


def _from_record(branching: int | None = None, L: int = 1, s: int = 0, P: int | None = None,
                 inner: dict[str, Any] | None = None, n: int | None = None) -> CodedReduceCode:
    """Rebuild a saved tree code (``gradcodes.load_code``, which has checked the record's sizes against the saved
    matrix): the inner code from its family's rebuilder when that gives the saved inner matrix exactly, else a
    plain GradientCode with the saved inner matrix (generic decoders); never a search. Files written before the
    branching factor had its own name record it as ``n``."""
    if branching is None:
        if n is None:
            raise CodeFileError("a coded_reduce record must give branching")
        branching = n
    if inner is None:
        return coded_reduce(branching, L, s, P=P)
    parse = {"rational": Fraction, "complex": complex}.get(inner["field"], float)
    Bi = np.asarray([[parse(x) for x in row] for row in inner["B"]],
                    dtype=object if inner["field"] == "rational" else None)
    code = rebuild_saved(inner["family"], dict(inner["params"]), Bi, exact_values=True, stacklevel=6)
    if not isinstance(code, GradientCode):
        code = GradientCode(Bi, inner["s"], field=inner["field"], name=inner["family"], family=inner["family"])
    return coded_reduce(branching, L, s, code, P=P)


REBUILDERS["coded_reduce"] = _from_record


def _scheme_build(branching: int | None = None, L: int | None = None, s: int | None = None,
                  inner: GradientCode | None = None, *, P: int | None = None, field: str | None = None,
                  seed: RNGLike = 0, n: int | None = None) -> CodedReduceCode:
    """The registry's builder (command lines): :func:`coded_reduce` with ``rng=seed`` (0 by default, so that builds
    are reproducible, as for every registered scheme). ``n`` is the number of workers, as for every scheme
    (``N = b + b^2 + ... + b^L``): with ``n``, give ``branching`` or ``L`` and the other follows."""
    if n is not None:
        branching, L = tree_shape(n, branching, L)
    what = {"branching": "--param branching=B (children per node)", "L": "--param L=DEPTH (the tree's depth)",
            "s": "-s S (stragglers per parent)"}
    missing = [what[name] for name, v in (("branching", branching), ("L", L), ("s", s)) if v is None]
    if missing:
        raise GradcodesTypeError(f"coded_reduce needs {', '.join(missing)}; -n N workers with one of branching and L "
                                 f"gives the other (N = b + b^2 + ... + b^L)")
    return coded_reduce(branching, L, s, inner, P=P, field=field, rng=seed)  # type: ignore[arg-type]


# ----------------------------------------------------------------------------------------------------------
register(Scheme(
    name="coded_reduce",
    build=_scheme_build,
    summary="CodedReduce: (b, s) gradient codes composed along the tree with branching factor b and depth L (optimal "
            "load r_CR)",
    tour=({"branching": 3, "L": 2, "s": 1}, {"branching": 4, "L": 2, "s": 1}, {"branching": 12, "L": 2, "s": 5}),
    expect=(None, None, SAMPLED),
    evaluate=verify_tree,
    kind="tree",
))
