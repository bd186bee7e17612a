"""Encode proportional to load: the sparse paths equal the dense product on every registered family."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest

import gradcodes as gc
from gradcodes._core.apply import combine_rows, csr, runs


def small_codes():
    """One small code per registered scheme (its first tour entry), plus m > 1 and rational codes."""
    out = []
    for name, scheme in gc.schemes().items():
        params = dict(scheme.tour[0]) if scheme.tour else {}
        out.append(pytest.param(scheme.build, params, id=name))
    out.append(pytest.param(gc.ye_abbe, {"n": 7, "s": 2, "m": 2}, id="ye_abbe-m2"))
    out.append(pytest.param(gc.cyclic_mds, {"n": 9, "s": 2}, id="cyclic_mds-complex"))
    return out


def dense_reference(code, G):
    """The old dense encode ``B @ G`` in float64 (complex128 for complex codes), padding included."""
    k, p = G.shape
    q = -(-p // code.m)
    Gp = np.zeros((k, q * code.m))
    Gp[:, :p] = G
    return code.float_B().astype(np.complex128 if code.field == "complex" else np.float64) @ \
        Gp.reshape(k * code.m, q)


@pytest.mark.parametrize("build, params", small_codes())
@pytest.mark.parametrize("p", [1, 7, 3000])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_encode_equals_dense_product(build, params, p, dtype):
    code = build(**params)
    if code.field.startswith("GF("):
        pytest.skip("GF(p) codes do not encode float data")
    rng = np.random.default_rng(p)
    G = rng.standard_normal((code.k, p)).astype(dtype)
    Y = code.encode(G)
    ref = dense_reference(code, G.astype(np.float64))
    kind = "c" if code.field == "complex" else "f"
    assert Y.dtype == (np.result_type(dtype, np.complex64) if kind == "c" else dtype)
    u = np.finfo(dtype).eps
    scale = np.abs(code.float_B()).sum(axis=1, keepdims=True) * np.abs(G).max()
    assert np.all(np.abs(Y - ref) <= 4 * code.load * u * scale + 1e-300)
    W = np.stack([code.encode_worker(i, G[code.supports[i]], length=p) for i in range(code.n)])
    assert W.dtype == Y.dtype
    assert np.all(np.abs(W - ref) <= 4 * code.load * u * scale + 1e-300)
    buf = np.empty_like(Y)
    assert code.encode(G, out=buf) is buf
    np.testing.assert_array_equal(buf, Y)


def test_encode_worker_m_blocks_and_padding():
    code = gc.ye_abbe(7, 2, 3)                        # m = 3: messages of length ceil(p/3)
    G = np.arange(code.k * 10, dtype=np.float64).reshape(code.k, 10)
    Y = code.encode(G)
    assert Y.shape == (7, 4)
    for i in range(code.n):
        out = np.full(4, np.nan)
        y = code.encode_worker(i, [G[j] for j in code.supports[i]], out=out)
        assert y is out
        np.testing.assert_allclose(y, Y[i], rtol=1e-12, atol=1e-9)


def test_encode_exact_rationals_sparse():
    code = gc.GradientCode([[1, -1, 0], [0, 1, Fraction(1, 2)], [2, 0, 1]], s=1)
    G = np.array([[Fraction(1, 3), 2], [Fraction(-1, 7), 0], [5, Fraction(1, 2)]], dtype=object)
    Y = code.encode(G)
    assert Y.dtype == object
    np.testing.assert_array_equal(Y, code.B @ G)
    np.testing.assert_array_equal(code.encode_worker(1, G[code.supports[1]]), (code.B @ G)[1])


def test_encode_worker_bad_arguments():
    code = gc.cyclic_repetition(6, 2, rng=0)
    G = np.ones((3, 5), dtype=np.float32)
    with pytest.raises(ValueError, match="i must be"):
        code.encode_worker(6, G)
    with pytest.raises(TypeError, match="i must be"):
        code.encode_worker(1.0, G)
    with pytest.raises(ValueError, match="partials must hold the worker's 3"):
        code.encode_worker(0, G[:2])
    with pytest.raises(ValueError, match="same length"):
        code.encode_worker(0, [np.ones(5), np.ones(4), np.ones(5)])
    with pytest.raises(ValueError, match="same dtype"):
        code.encode_worker(0, [np.ones(5), np.ones(5, dtype=np.float32), np.ones(5)])
    with pytest.raises(ValueError, match="out must have shape"):
        code.encode_worker(0, G, out=np.empty(5))                 # float64 buffer for float32 data
    with pytest.raises(ValueError, match="length=4 does not match"):
        code.encode_worker(0, G, length=4)
    with pytest.raises(ValueError, match="out must have shape"):
        code.encode(np.ones((6, 5)), out=np.empty((6, 4)))
    with pytest.raises(TypeError, match="partials must have a float"):
        code.encode_worker(0, np.array([["a"] * 5] * 3))


def test_kernels():
    assert runs(np.array([0, 1, 2, 5])) == [(0, 0, 3), (3, 5, 1)]
    indptr, indices, data = csr(np.array([[0.0, 1.0, -2.0], [0.0, 0.0, 0.0]]))
    assert indptr.tolist() == [0, 2, 2] and indices.tolist() == [1, 2] and data.tolist() == [1.0, -2.0]
    X = np.arange(12, dtype=np.float32).reshape(4, 3)
    out = np.empty(3, dtype=np.float32)
    combine_rows(out, [1, -1, 0.5], X, [0, 3, 2])
    np.testing.assert_array_equal(out, X[0] - X[3] + 0.5 * X[2])
    combine_rows(out, [], X, [])
    np.testing.assert_array_equal(out, 0)


@pytest.mark.parametrize("build, params", small_codes())
def test_compiled_encode_equals_the_numpy_loop(build, params, monkeypatch):
    """The column-blocked compiled kernel and the numpy loop over the non-zeros (the previous encode) give the same
    messages on every registered family (to the rounding of the sum: the kernel may fuse multiply-adds)."""
    import gradcodes._core.apply as ap
    import gradcodes._core.code_encode as E

    monkeypatch.setattr(ap, "_KERNEL_MIN_WORK", 0)
    code = build(**params)
    if code.field.startswith("GF("):
        pytest.skip("GF(p) codes do not encode float data")
    G = np.random.default_rng(3).standard_normal((code.k, 5001)).astype(np.float32)
    fast = code.encode(G)
    monkeypatch.setattr(E, "_USE_NUMBA", False)
    slow = code.encode(G)
    assert fast.dtype == slow.dtype and fast.shape == slow.shape
    u = np.finfo(np.float32).eps
    scale = np.abs(code.float_B()).sum(axis=1, keepdims=True) * np.abs(G).max()
    assert np.all(np.abs(fast - slow) <= 2 * code.load * u * scale)


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.complex64, np.complex128])
@pytest.mark.parametrize("threads", [1, 2, 3])
def test_csr_product_blocks_threads_and_empty_rows(dtype, threads, monkeypatch):
    import gradcodes._core.apply as ap

    monkeypatch.setattr(ap, "_BLOCK_BYTES", 1)                  # the smallest blocks (256 columns): many of them
    monkeypatch.setattr(ap, "_KERNEL_MIN_WORK", 0)
    rng = np.random.default_rng(0)
    B = (rng.random((30, 40)) < 0.1) * rng.standard_normal((30, 40))
    B[7] = 0                                                    # a worker storing nothing
    if np.dtype(dtype).kind == "c":
        B = B * np.exp(1j * rng.random((30, 40)))
    B = B.astype(dtype)
    X = rng.standard_normal((40, 3001)).astype(dtype)
    Y = np.full((30, 3001), np.nan, dtype=dtype)
    indptr, indices, data = csr(B)
    assert ap.csr_product(indptr, indices, data, X, Y, threads=threads) is Y
    ref = B.astype(np.complex128) @ X.astype(np.complex128)
    tol = 8 * np.finfo(dtype).eps * (np.abs(B) @ np.abs(X)).max()
    assert np.abs(Y - ref).max() <= tol and np.all(Y[7] == 0)
    Z = ap.csr_product(indptr, indices, data, X, np.empty_like(Y), use_numba=False)
    assert np.abs(Z - ref).max() <= tol


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_csr_product_is_the_sequential_sum_bitwise(dtype, monkeypatch):
    """Rows with 0 to 20 non-zeros (every split into passes of 8, 4, 2 and 1 terms): the compiled kernel's result
    is bit for bit the sum in the order of the row's non-zeros, ``((c0 x0 + c1 x1) + c2 x2) + ...``, in the data's
    dtype (a kernel that reorders, fuses or widens the sum fails)."""
    import gradcodes._core.apply as ap

    monkeypatch.setattr(ap, "_KERNEL_MIN_WORK", 0)
    rng = np.random.default_rng(5)
    n, N, q = 21, 40, 1000
    B = np.zeros((n, N))
    for i in range(n):                                          # row i has i non-zeros, columns in random order
        B[i, rng.choice(N, i, replace=False)] = rng.standard_normal(i)
    B = B.astype(dtype)
    X = (rng.standard_normal((N, q)) * 10.0 ** rng.integers(-3, 4, (N, 1))).astype(dtype)
    indptr, indices, data = csr(B)
    for threads, block in ((1, 256), (2, 512), (1, None)):
        Y = ap.csr_product(indptr, indices, data, X, np.full((n, q), np.nan, dtype=dtype), threads=threads,
                           block=block)
        for i in range(n):
            cols = indices[indptr[i]:indptr[i + 1]]
            ref = np.zeros(q, dtype=dtype)
            for t, j in enumerate(cols):
                term = np.multiply(data[indptr[i] + t], X[j])
                ref = term if t == 0 else np.add(ref, term)
            assert ref.dtype == dtype and np.array_equal(Y[i], ref), (i, threads, block)


def test_encode_kernel_is_not_compiled_at_import():
    import subprocess
    import sys

    code = "import gradcodes, sys; print('numba' in sys.modules)"
    assert subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          check=True).stdout.strip() == "False"
