"""Codes stored sparse (gradcodes._core.sparse): the same code as the dense one, at a cost proportional to the
non-zeros.

A code built from a scipy.sparse matrix keeps canonical compressed rows; the naturally sparse families store their
matrices sparse from ``_sparse.SPARSE_FROM`` dense entries on. Everything observable must be bit for bit what the
dense code gives (matrix, equality and hash, encodes, decodes, decoding matrices, verdicts), and at sizes the dense
form cannot hold, construction, verification by theorem, decoding, encoding and files must work on the non-zeros.
"""

from __future__ import annotations

import os
import pickle
import warnings

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, settings
from hypothesis import strategies as st

import gradcodes as gc
from gradcodes._core import sparse as _sparse
from gradcodes._families.coded_reduce_verify import tree_theorem


@pytest.fixture
def sparse_everywhere(monkeypatch):
    """Families store every matrix sparse (the dense construction is the reference)."""
    monkeypatch.setattr(_sparse, "SPARSE_FROM", 0)


def _pair(build, *args, **kwargs):
    dense = build(*args, **kwargs)
    old = _sparse.SPARSE_FROM
    _sparse.SPARSE_FROM = 0
    try:
        sparse = build(*args, **kwargs)
    finally:
        _sparse.SPARSE_FROM = old
    assert not dense.sparse and sparse.sparse
    return dense, sparse


def _assert_same(dense, sparse, rng_seed=0):
    assert dense == sparse and hash(dense) == hash(sparse)
    assert dense.B.dtype == sparse.B.dtype and dense.B.tobytes() == sparse.B.tobytes()
    assert np.array_equal(dense.loads, sparse.loads) and np.array_equal(dense.replication, sparse.replication)
    assert all(np.array_equal(a, b) for a, b in zip(dense.supports, sparse.supports, strict=True))
    rng = np.random.default_rng(rng_seed)
    G = rng.standard_normal((dense.k, 7)).astype(np.float32)
    # the same product path whatever the storage (a BLAS product for more than half non-zeros, else the sparse
    # sum): the two paths add in different orders, equal bits on one OpenBLAS kernel and not on another (SkylakeX)
    assert (dense._sparse_B(G) is None) == (sparse._sparse_B(G) is None)
    Y = dense.encode(G)
    assert Y.tobytes() == sparse.encode(G).tobytes()
    i = int(rng.integers(dense.n))
    assert dense.encode_worker(i, G[dense.supports[i]]).tobytes() == \
        sparse.encode_worker(i, G[sparse.supports[i]]).tobytes()
    s = getattr(dense, "s", 0)
    F = np.sort(rng.choice(dense.n, dense.n - s, replace=False))
    if hasattr(dense, "random_patterns"):
        F = np.flatnonzero(dense.random_patterns(1, rng=rng_seed)[0])
    assert dense.decoding_matrix(F).tobytes() == sparse.decoding_matrix(F).tobytes()
    try:
        g1, info1 = dense.decode(F, Y[F], return_info=True)
    except gc.DecodingError:                     # refused in float32 (cancellation): refused by both storages
        with pytest.raises(gc.DecodingError):
            sparse.decode(F, Y[F])
        return
    g2, info2 = sparse.decode(F, Y[F], return_info=True)
    assert g1.tobytes() == g2.tobytes()
    assert info1.residual == info2.residual


@settings(max_examples=15, deadline=None)
@given(st.integers(1, 6), st.integers(0, 4), st.integers(1, 3))
def test_fractional_repetition_sparse_is_the_dense_code(groups, s, per):
    n = groups * (s + 1)
    _assert_same(*_pair(gc.fractional_repetition, n, s, groups * per))


@settings(max_examples=15, deadline=None)
@given(st.integers(2, 40), st.data())
def test_stable_binary_sparse_is_the_dense_code(n, data):
    s = data.draw(st.integers(0, n - 1))
    k = data.draw(st.one_of(st.none(), st.integers(n // (s + 1), 2 * n)))
    _assert_same(*_pair(gc.stable_binary, n, s, k))


@pytest.mark.parametrize("n, s", [(23, 4), (50, 12), (40, 9), (61, 4)])
def test_grouped_mds_sparse_is_the_dense_code(n, s):
    _assert_same(*_pair(gc.grouped_mds, n, s))


@pytest.mark.parametrize("args", [(3, 2, 1), (4, 2, 1), (5, 2, 2), (4, 3, 1)])
def test_coded_reduce_sparse_is_the_dense_code(args):
    dense, sparse = _pair(gc.coded_reduce, *args)
    _assert_same(dense, sparse)
    assert gc.verify(dense).verdict == gc.verify(sparse, limit=10**6).verdict


def test_uncoded_sparse_is_the_dense_code():
    _assert_same(*_pair(gc.uncoded, 12))


# ------------------------------------------------------------------ the constructor and the accessor
def test_constructor_canonicalises_scipy_input():
    D = np.array([[0.0, 2.0, 0.0], [1.5, 0.0, -1.0], [0.0, 0.0, 3.0]])
    # duplicates (summed), an explicit zero, unsorted indices, integer-free float data given as COO
    coo = sp.coo_array((np.array([1.0, 1.0, 1.5, -1.0, 0.0, 3.0]),
                        (np.array([0, 0, 1, 1, 2, 2]), np.array([1, 1, 0, 2, 0, 2]))), shape=(3, 3))
    code = gc.GradientCode(coo, s=0)
    dense = gc.GradientCode(D, s=0)
    assert code.sparse and code.nnz == 4 and code == dense and hash(code) == hash(dense)
    indptr, indices, data = code._csr_parts()
    assert indptr.tolist() == [0, 1, 3, 4] and indices.tolist() == [1, 0, 2, 2]
    assert data.dtype == np.float64 and data.tolist() == [2.0, 1.5, -1.0, 3.0]
    assert not data.flags.writeable
    ints = gc.GradientCode(sp.csr_array(np.eye(3, dtype=np.int64)), s=0)
    assert ints.field == "real" and ints.B.dtype == np.float64 and ints == gc.GradientCode(np.eye(3), s=0)
    cplx = gc.GradientCode(sp.csr_array(np.array([[1j, 0], [0, 1]])), s=0)
    assert cplx.field == "complex" and cplx.B.dtype == np.complex128


def test_constructor_copies_the_users_matrix():
    M = sp.csr_array(np.eye(4))
    code = gc.GradientCode(M, s=0)
    M.data[:] = 7.0                                   # the user's matrix changes; the code does not
    assert np.array_equal(code.B, np.eye(4))


def test_constructor_refuses_bad_sparse_input():
    with pytest.raises(ValueError, match="finite"):
        gc.GradientCode(sp.csr_array(np.array([[np.inf, 1.0]])), s=0)
    with pytest.raises(ValueError, match="complex entries"):
        gc.GradientCode(sp.csr_array(np.array([[1j, 1.0]])), s=0, field="real")
    with pytest.raises(ValueError, match="multiple of m"):
        gc.GradientCode(sp.csr_array(np.eye(3)), s=0, m=2)


def test_B_sparse_accessor_is_canonical_and_a_copy():
    code = gc.stable_binary(13, 3)
    S = code.B_sparse
    assert isinstance(S, sp.csr_array) and S.has_canonical_format and S.dtype == np.float64
    assert np.array_equal(S.toarray(), code.B)
    S.data[:] = 5.0
    assert np.array_equal(code.B_sparse.toarray(), code.B) and code.nnz == int(np.count_nonzero(code.B))
    with pytest.raises(TypeError, match="floating-point sparse form"):
        _ = gc.fractional_repetition(4, 1, field="rational").B_sparse


def test_negative_zero_keeps_dense_codes_apart():
    B = np.eye(3)
    C = B.copy()
    C[0, 1] = -0.0
    assert gc.GradientCode(B, s=0) != gc.GradientCode(C, s=0)
    assert gc.GradientCode(sp.csr_array(B), s=0) == gc.GradientCode(B, s=0)


def test_pickle_keeps_a_sparse_code_sparse():
    code = gc.GradientCode(gc.stable_binary(13, 3).B_sparse, s=3)
    back = pickle.loads(pickle.dumps(code))
    assert back.sparse and back == code and "_B" not in back.__dict__
    assert not back._csr[0].flags.writeable


def test_dense_form_of_a_huge_sparse_code_names_the_size():
    code = gc.fractional_repetition(20000, 19)            # 400,000 non-zeros; 4e8 dense entries
    assert code.sparse and code.nnz == 400_000 and code.load == 20
    with pytest.raises(gc.SizeLimitError, match=r"20,000 x 20,000.*B_sparse"):
        _ = code.B
    with pytest.raises(gc.SizeLimitError, match="support matrix"):
        _ = code.support_matrix
    with gc.limits.raised(entries=10**6):
        with pytest.raises(gc.SizeLimitError, match="non-zeros"):
            gc.fractional_repetition(200000, 9)            # 2e6 non-zeros > 1e6


def test_residual_and_cancellation_on_the_non_zeros_match_the_dense_ones():
    rng = np.random.default_rng(3)
    for _ in range(20):
        n, k, m = (int(x) for x in rng.integers(2, 9, size=3))
        D = rng.standard_normal((n, k * m)) * (rng.random((n, k * m)) < 0.4)
        A = rng.standard_normal((m, n)) * (rng.random((m, n)) < 0.7)
        E = gc._core.numerics.target_matrix(k, m)
        res, canc = _sparse.residual_cancellation(A, _sparse.csr_of_dense(D), (n, k * m), E, k)
        assert res == pytest.approx(float(gc._core.numerics.residuals(A[None], D, E)[0]), rel=1e-12, abs=1e-15)
        assert canc == pytest.approx(float(gc._core.numerics.cancellation(A[None], D, k)[0]), rel=1e-12)


def test_sparse_custom_code_verifies_like_the_dense_one():
    dense = gc.cyclic_repetition(9, 2, rng=0)
    sparse = gc.GradientCode(dense.B_sparse, s=2)
    d, s = gc.verify(gc.GradientCode(dense.B, s=2)), gc.verify(sparse)
    assert d.verdict == s.verdict == "ok" and d.patterns_checked == s.patterns_checked
    # the dense screen's BLAS products and the sparse residual on the non-zeros round differently: the reported
    # residuals agree on some OpenBLAS kernels (Haswell) and not on others (SkylakeX); both are rounding-sized
    assert max(d.worst_residual, s.worst_residual) < 1e-12


# ------------------------------------------------------------------ verification by theorem at scale
def test_verify_by_theorem_at_100000_workers():
    code = gc.stable_binary(100_000, 100)
    assert code.sparse and code.load == 102
    rep = gc.verify(code)
    assert bool(rep) and rep.verdict == "ok" and rep.patterns_checked == 0
    assert rep.method.startswith("theorem: proof by blocks")
    fr = gc.verify(gc.stable_binary(100_000, 100), decoder="group")
    assert bool(fr) and fr.method.startswith("theorem: fractional repetition") and fr.patterns_checked == 0
    assert fr.worst_residual == 0.0 and fr.worst_cancellation == 1.0


def test_grouped_mds_verified_by_blocks_at_scale():
    rep = gc.verify(gc.grouped_mds(20_000, 20))
    assert bool(rep) and rep.method.startswith("theorem: proof by blocks")


def test_tree_verified_by_composition_at_scale():
    code = gc.coded_reduce(32, 3, 3)                       # 33,824 workers, fractional repetition inside
    assert code.sparse and code.N == 33_824
    rep = gc.verify(code)
    assert bool(rep) and rep.patterns_checked == 0 and rep.method.startswith("theorem: CodedReduce composition")
    assert rep.allocation_ok and rep.loads_equal


def test_theorems_refuse_a_changed_matrix():
    code = gc.fractional_repetition(2000, 9)
    S = code.B_sparse
    S.data[5] = 2.0                                        # one entry off the 0/1 pattern
    bad = gc.GradientCode(S, s=9, decoders=[code.decoders["group"]], default_decoder="group")
    assert code.decoders["group"].theorem(code, 1.1e-16, 1e-8) is not None
    assert code.decoders["group"].theorem(bad, 1.1e-16, 1e-8) is None
    T = gc.stable_binary(2000, 9).B_sparse.tolil()
    T[3, 500] = 1.0                                        # a worker stores one more partition
    moved = gc.GradientCode(T.tocsr(), s=9, decoders=[code.decoders["group"]], default_decoder="group")
    assert code.decoders["group"].theorem(moved, 1.1e-16, 1e-8) is None
    tree = gc.coded_reduce(4, 2, 1)
    assert tree_theorem(tree, 1e-8) is not None
    assert tree_theorem(gc.coded_reduce(3, 2, 1), 1e-8) is None      # Ye-Abbe inner code: no 0/1 theorem
    B = tree.B.copy()
    B[5, np.flatnonzero(B[5])[0]] = 2.0
    changed = gc.CodedReduceCode(B, branching=4, L=2, s=1, inner=tree.inner, P=tree.P, lists=tree._lists)
    assert tree_theorem(changed, 1e-8) is None


def test_decode_and_encode_worker_at_scale():
    code = gc.stable_binary(100_000, 100)
    rng = np.random.default_rng(0)
    F = np.setdiff1d(np.arange(code.n), rng.choice(code.n, 100, replace=False))
    # gradients are integers (exact sums): the decode equals the sum of the partials exactly
    G = rng.integers(-50, 50, size=(code.k, 4)).astype(np.float64)
    Y = np.zeros((code.n, 4))
    for i in F[::997]:
        Y[i] = code.encode_worker(int(i), G[code.supports[i]])
        assert np.array_equal(Y[i], G[code.supports[i]].sum(axis=0))
    a = code.decoding_matrix(F)[0]
    used = np.flatnonzero(a)
    assert np.all(a[used] == 1) and used.size == code.n // 101
    Y[used] = np.stack([G[code.supports[i]].sum(axis=0) for i in used])
    assert np.array_equal(code.decode(F, Y[F]), G.sum(axis=0))


# ------------------------------------------------------------------ files
def test_sparse_file_is_proportional_to_the_non_zeros(tmp_path):
    path = tmp_path / "big.npz"
    code = gc.fractional_repetition(20000, 19)             # 3.2 GB dense; 400,000 non-zeros
    gc.save_code(code, path)
    size = os.path.getsize(path)
    assert size < 16 * code.nnz + 8 * (code.n + 1) + 10_000
    back = gc.load_code(path)
    assert back.sparse and back == code and back.default_decoder == "group"


def _rewrite(path, out, **changes):
    with np.load(path) as f:
        arrays = {key: f[key] for key in f.files}
    arrays.update(changes)
    np.savez(out, **arrays)


@pytest.mark.parametrize("change, message", [
    (lambda a: {"B_indices": a["B_indices"][::-1].copy()}, "increase strictly"),
    (lambda a: {"B_indices": a["B_indices"] + 10**6}, "column indices"),
    (lambda a: {"B_indptr": a["B_indptr"][::-1].copy()}, "B_indptr"),
    (lambda a: {"B_data": np.where(np.arange(a["B_data"].size) == 0, 0.0, a["B_data"])}, "non-zero"),
    (lambda a: {"B_data": np.full(a["B_data"].size, np.nan)}, "finite"),
    (lambda a: {"B_data": a["B_data"][:-1]}, "entries"),
    (lambda a: {"B_indptr": np.zeros(5, dtype=np.int64)}, "rows"),
])
def test_corrupted_sparse_files_are_refused(tmp_path, sparse_everywhere, change, message):
    path, bad = tmp_path / "c.npz", tmp_path / "bad.npz"
    gc.save_code(gc.fractional_repetition(12, 2), path)
    with np.load(path) as f:
        arrays = {key: f[key] for key in f.files}
    _rewrite(path, bad, **change(arrays))
    with pytest.raises(gc.CodeFileError, match=message):
        gc.load_code(bad)


def test_sparse_file_bounds_count_non_zeros(tmp_path):
    path = tmp_path / "c.npz"
    gc.save_code(gc.fractional_repetition(20000, 19), path)
    with pytest.raises(gc.CodeFileError, match="non-zeros, more than the bound"):
        gc.load_code(path, max_entries=100_000)
    assert gc.load_code(path, max_entries=400_000).nnz == 400_000


def test_edited_sparse_file_gets_no_proof(tmp_path, sparse_everywhere):
    path, bad = tmp_path / "c.npz", tmp_path / "bad.npz"
    gc.save_code(gc.fractional_repetition(12, 2), path)
    with np.load(path) as f:
        data = f["B_data"].copy()
    data[0] = 2.0
    _rewrite(path, bad, B_data=data)
    with pytest.warns(RuntimeWarning, match="differs"):
        code = gc.load_code(bad)
    assert set(code.decoders) == {"nullspace", "lstsq"} and code.sparse
    assert "theorem" not in gc.verify(code).method


def test_dense_file_of_a_code_now_stored_sparse_keeps_its_decoders(tmp_path, monkeypatch):
    path = tmp_path / "old.npz"
    monkeypatch.setattr(_sparse, "SPARSE_FROM", 10**30)            # written by a release that stored it dense
    code = gc.stable_binary(1200, 9)
    gc.save_code(code, path)
    monkeypatch.setattr(_sparse, "SPARSE_FROM", 10**6)
    with np.load(path) as f:
        assert "B" in f.files and "B_indptr" not in f.files
    with warnings.catch_warnings():
        warnings.simplefilter("error")                             # no "differs" warning: the decoders stay
        back = gc.load_code(path)
    assert back.sparse and back == code and back.default_decoder == "blocks" and "group" in back.decoders


def test_mpi_set_up_reads_the_non_zeros_only():
    """An MPI worker's plan and the ranks' code fingerprint come from the non-zeros of a code stored sparse (the
    set-up densified B on every rank), and equal those of the same code stored dense."""
    from gradcodes._runtime.codec import WorkerEncoder
    from gradcodes._runtime.setup import fingerprint

    dense = gc.fractional_repetition(12, 2)
    sparse = gc.GradientCode(dense.B_sparse, 2, decoders=dense.decoders.values(), default_decoder="group")
    assert sparse.sparse and not dense.sparse
    assert fingerprint(sparse) == fingerprint(dense)
    for w in range(12):
        a, b = WorkerEncoder(dense, w, 10, np.float32), WorkerEncoder(sparse, w, 10, np.float32)
        assert a.weights.dtype == b.weights.dtype == np.float32 and np.array_equal(a.weights, b.weights)
    big = gc.stable_binary(20_000, 100)                       # 4e8 dense entries: over gradcodes.limits.entries
    assert big.sparse
    with pytest.raises(gc.SizeLimitError):
        _ = big.B
    enc = WorkerEncoder(big, 7, 10, np.float64)
    assert np.count_nonzero(enc.weights) == int(big.loads[7])
    assert len(fingerprint(big)) == 16
