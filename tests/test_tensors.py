"""Foreign arrays in the core API (gradcodes._base.arrays): torch tensors, DLPack and __array__ objects go in, the
input's type, dtype and device come out; float32 stays float32 and the acceptance rule is the messages' dtype's."""

import subprocess
import sys

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import gradcodes as gc
from gradcodes._base.arrays import like_input, to_numpy
from gradcodes.testing import assert_recovers

torch = pytest.importorskip("torch")


class ArrayOnly:
    """An array type that numpy does not know, offering only __array__."""

    def __init__(self, a):
        self.a = a

    def __array__(self, dtype=None, copy=None):
        return self.a if dtype is None else self.a.astype(dtype)


class DLPackOnly:
    """An array type offering only the DLPack protocol."""

    def __init__(self, a):
        self.a = a

    def __dlpack__(self, **kwargs):
        return self.a.__dlpack__(**kwargs)

    def __dlpack_device__(self):
        return self.a.__dlpack_device__()


CODES = [lambda: gc.cyclic_repetition(6, 2, rng=0), lambda: gc.fractional_repetition(6, 2),
         lambda: gc.ye_abbe(5, 2, 2)]


@pytest.mark.parametrize("make", CODES)
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_encode_decode_tensors_match_numpy(make, dtype):
    code = make()
    G = torch.randn(code.k, 9, dtype=dtype, generator=torch.Generator().manual_seed(1))
    Y = code.encode(G)
    assert isinstance(Y, torch.Tensor) and Y.dtype == dtype
    np.testing.assert_array_equal(Y.numpy(), code.encode(G.numpy()))
    F = list(range(code.n - code.s))
    g = code.decode(F, Y[F], length=9)
    assert isinstance(g, torch.Tensor) and g.dtype == dtype and g.shape == (9,)
    np.testing.assert_array_equal(g.numpy(), code.decode(F, Y.numpy()[F], length=9))
    tol = 1e-5 if dtype == torch.float32 else 1e-12
    torch.testing.assert_close(g, G.sum(0), rtol=tol, atol=tol * float(G.abs().sum()))


@pytest.mark.parametrize("make", CODES)
def test_encode_worker_tensors(make):
    code = make()
    G = torch.randn(code.k, 7, generator=torch.Generator().manual_seed(2))
    Y = code.encode(G)
    for i in range(code.n):
        sup = code.supports[i]
        for partials in (G[sup], [G[j] for j in sup]):
            y = code.encode_worker(i, partials)
            assert isinstance(y, torch.Tensor) and y.dtype == torch.float32
            torch.testing.assert_close(y, Y[i], rtol=1e-5, atol=1e-5)


def test_out_tensor_is_written_and_returned():
    code = gc.cyclic_repetition(5, 1, rng=0)
    G = torch.randn(5, 4)
    out = torch.empty(5, 4)
    assert code.encode(G, out=out) is out
    torch.testing.assert_close(out, code.encode(G))
    buf = torch.empty(4)
    assert code.encode_worker(3, G[code.supports[3]], out=buf) is buf
    torch.testing.assert_close(buf, out[3])
    with pytest.raises(ValueError, match="out must have shape"):
        code.encode(G, out=torch.empty(5, 4, dtype=torch.float64))


def test_zero_copy_on_cpu_and_grad_tensors():
    G = torch.randn(4, 3, requires_grad=True)
    view = to_numpy(G)
    assert np.shares_memory(view, G.detach().numpy())
    back = like_input(view, G)
    assert isinstance(back, torch.Tensor) and back.data_ptr() == G.data_ptr()
    code = gc.cyclic_repetition(4, 1, rng=0)
    assert not code.encode(G).requires_grad


def test_masks_responders_and_dtype_as_tensors():
    code = gc.cyclic_repetition(5, 1, rng=0)
    G = torch.randn(5, 3, dtype=torch.float64)
    Y = code.encode(G)
    mask = torch.tensor([True, False, True, True, True])
    g, info = code.decode(mask, Y, return_info=True)
    assert isinstance(g, torch.Tensor) and info.responders == (0, 2, 3, 4)
    torch.testing.assert_close(g, G.sum(0))
    A = code.decoding_matrix(torch.tensor([0, 2, 3, 4]))
    assert isinstance(A, torch.Tensor)
    np.testing.assert_array_equal(A.numpy(), code.decoding_matrix([0, 2, 3, 4]))
    A32 = code.decoding_matrix([0, 2, 3, 4], dtype=torch.float32)
    assert isinstance(A32, torch.Tensor)


def test_float32_acceptance_rule_applies_to_tensors():
    """The dtype-aware rule: a set refused for float32 numpy messages is refused for float32 tensors too, and
    accepted for float64 tensors like float64 numpy messages."""
    code = gc.cyclic_repetition(16, 6, rng=0, refine=0)
    F = [0, 1, 2, 3, 4, 5, 6, 7, 10, 15]
    G = np.random.default_rng(0).standard_normal((16, 3))
    Y32 = code.encode(G.astype(np.float32))
    with pytest.raises(gc.DecodingError):
        code.decode(F, Y32[F])
    with pytest.raises(gc.DecodingError):
        code.decode(F, torch.from_numpy(Y32[F]))
    g = code.decode(F, torch.from_numpy(code.encode(G)[F]))
    np.testing.assert_array_equal(g.numpy(), code.decode(F, code.encode(G)[F]))


@pytest.mark.parametrize("wrap", [ArrayOnly, DLPackOnly])
def test_array_protocol_objects(wrap):
    code = gc.cyclic_repetition(5, 1, rng=0)
    G = np.random.default_rng(1).standard_normal((5, 3)).astype(np.float32)
    Y = code.encode(wrap(G))
    assert isinstance(Y, np.ndarray) and Y.dtype == np.float32
    np.testing.assert_array_equal(Y, code.encode(G))
    np.testing.assert_array_equal(code.decode([0, 1, 2, 3], wrap(Y[:4])), code.decode([0, 1, 2, 3], Y[:4]))


def test_numpy_dtype_arguments_are_not_arrays():
    """np.float32 (a class with an __array__ attribute) passed as dtype= stays a dtype."""
    code = gc.cyclic_repetition(4, 1, rng=0)
    for dt in (np.float32, np.dtype(np.float32), "float32"):
        A = code.decoding_matrix([0, 1, 2], dtype=dt)
        assert isinstance(A, np.ndarray)
        np.testing.assert_array_equal(A, code.decoding_matrix([0, 1, 2]))


def test_unsupported_tensor_dtype_is_named():
    code = gc.cyclic_repetition(5, 1, rng=0)
    with pytest.raises(TypeError, match="bfloat16"):
        code.encode(torch.zeros(5, 3, dtype=torch.bfloat16))
    with pytest.raises(TypeError, match="must be an array"):
        to_numpy(object(), "partials")


@settings(max_examples=20, deadline=None)
@given(st.integers(0, 2**31 - 1), st.sampled_from([torch.float32, torch.float64]))
def test_assert_recovers_takes_tensors(seed, dtype):
    code = gc.cyclic_repetition(6, 2, rng=0)
    G = torch.randn(6, 4, dtype=dtype, generator=torch.Generator().manual_seed(seed))
    assert_recovers(code, [5, 1, 2, 3], G)


def test_import_gradcodes_does_not_import_torch():
    out = subprocess.run([sys.executable, "-c", "import sys, gradcodes; "
                          "print('torch' in sys.modules)"], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
