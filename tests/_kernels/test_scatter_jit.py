"""The compiled scatter_add (``ember._kernels.scatter_jit``): the sums of ``np.add.at`` to
the bit, torch's values, and gather's gradient through it."""

from __future__ import annotations

import numpy as np
import pytest

import ember
from ember._kernels import jit, scatter_jit

pytest.importorskip("numba")


@pytest.fixture(autouse=True)
def kernels_for_small_arrays(monkeypatch):
    monkeypatch.setattr(jit, "MIN_WORK", 1)


CASES = [  # out shape, dim, index length along dim
    ((50,), 0, 200),
    ((6, 40), 1, 90),
    ((30, 7), 0, 64),
    ((3, 5, 20, 4), 2, 33),
    ((2, 3, 9), -1, 5),
]


def _scatter(case, dtype, index_dtype, disabled=False):
    shape, dim, length = case
    rng = np.random.default_rng(length)
    d = dim % len(shape)
    index_shape = shape[:d] + (length,) + shape[d + 1 :]
    index = rng.integers(0, shape[d], index_shape).astype(index_dtype)  # many repeats
    src = rng.standard_normal(index_shape).astype(dtype)
    base = rng.standard_normal(shape).astype(dtype)

    def run():
        out = ember.tensor(base).scatter_add(dim, ember.tensor(index), ember.tensor(src))
        return out.numpy()

    if disabled:
        with jit.disabled():
            return run(), (base, dim, index, src)
    return run(), (base, dim, index, src)


@pytest.mark.parametrize("case", CASES)
@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("index_dtype", ["int64", "int32"])
def test_kernel_sums_equal_add_at_to_the_bit(case, dtype, index_dtype):
    got, _ = _scatter(case, dtype, index_dtype)
    want, _ = _scatter(case, dtype, index_dtype, disabled=True)
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("case", CASES)
def test_kernel_matches_torch(case):
    torch = pytest.importorskip("torch")
    got, (base, dim, index, src) = _scatter(case, "float64", "int64")
    want = torch.tensor(base).scatter_add(dim, torch.tensor(index), torch.tensor(src))
    np.testing.assert_allclose(got, want.numpy(), rtol=1e-12, atol=1e-12)


def test_gather_gradient_and_the_fallbacks():
    rng = np.random.default_rng(0)
    x = ember.tensor(rng.standard_normal((4, 30)), requires_grad=True)
    index = ember.tensor(rng.integers(0, 30, (4, 50)))
    x.gather(1, index).sum().backward()
    expected = np.zeros((4, 30))
    np.add.at(expected, (np.arange(4)[:, None], index.numpy()), 1.0)
    np.testing.assert_array_equal(x.grad.numpy(), expected)
    # an index narrower than the output along another dim: add.at's path
    small = ember.zeros(5, 6).scatter_add(0, ember.tensor([[1, 2, 1]]), ember.ones(1, 3))
    assert small.numpy()[1].tolist() == [1, 0, 1, 0, 0, 0]
    with pytest.raises(RuntimeError, match="out of bounds"):
        ember.zeros(5).scatter_add(0, ember.tensor([5]), ember.ones(1))


@pytest.mark.parametrize("case", CASES)
@pytest.mark.parametrize("index_dtype", ["int64", "int32"])
def test_gather_kernel_equals_indexing_and_torch(case, index_dtype):
    shape, dim, length = case
    d = dim % len(shape)
    rng = np.random.default_rng(length)
    index = rng.integers(0, shape[d], shape[:d] + (length,) + shape[d + 1 :]).astype(index_dtype)
    data = rng.standard_normal(shape).astype("float32")
    view = ember.tensor(np.ascontiguousarray(data.T)).T  # non-contiguous: copied first
    got = view.gather(dim, ember.tensor(index)).numpy()
    with jit.disabled():
        want = ember.tensor(data).gather(dim, ember.tensor(index)).numpy()
    np.testing.assert_array_equal(got, want)
    torch = pytest.importorskip("torch")
    expected = torch.tensor(data).gather(dim, torch.tensor(index.astype("int64"))).numpy()
    np.testing.assert_array_equal(got, expected)


@pytest.mark.parametrize(
    "dtype", ["bool", "int8", "uint8", "int16", "float16", "int32", "int64", "float64"]
)
def test_gather_kernel_copies_every_width_as_torch(dtype):
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(1)
    data = (rng.standard_normal((7, 33)) * 50).astype(dtype)
    index = rng.integers(0, 33, (7, 20))
    got = ember.tensor(data).gather(1, ember.tensor(index))
    assert str(got.dtype).split(".")[1] == str(torch.tensor(data).dtype).split(".")[1]
    want = torch.tensor(data).gather(1, torch.tensor(index)).numpy()
    np.testing.assert_array_equal(got.numpy(), want)


@pytest.mark.parametrize("bad", [-1, 33, 1000])
@pytest.mark.parametrize("index_dtype", ["int64", "int32"])
@pytest.mark.parametrize("shape,dim", [((4, 33), 1), ((33, 3, 2), 0), ((2, 33, 5), -2)])
def test_kernels_raise_torchs_bounds_error(bad, index_dtype, shape, dim):
    torch = pytest.importorskip("torch")
    index = np.zeros(shape, index_dtype)
    index.reshape(-1)[-1] = bad  # the last row: the kernel has written the others
    x = np.ones(shape, "float32")
    for fn in (
        lambda m: m.tensor(x).gather(dim, m.tensor(index)),
        lambda m: m.tensor(x).scatter_add(dim, m.tensor(index), m.tensor(x)),
    ):
        with pytest.raises(RuntimeError) as want:
            fn(torch)
        with pytest.raises(RuntimeError) as got:
            fn(ember)
        assert str(got.value) == str(want.value)


def test_gather_gradient_from_a_broadcast_gradient_and_a_narrow_index():
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(2)
    data = rng.standard_normal((6, 5, 40))
    index = rng.integers(0, 40, (4, 5, 70))  # narrower than the input along dim 0
    grads = []
    for m in (ember, torch):
        x = m.tensor(data, requires_grad=True)
        y = x.gather(2, m.tensor(index))
        (y.sum() * 3).backward()  # the gradient: a broadcast view of one number
        grads.append((y.detach().numpy(), x.grad.numpy()))
    np.testing.assert_array_equal(grads[0][0], grads[1][0])
    np.testing.assert_allclose(grads[0][1], grads[1][1], rtol=1e-12)


def test_integer_scatter_add_wraps_as_torch():
    torch = pytest.importorskip("torch")
    base = np.full((3, 8), 120, "int8")
    index = np.tile(np.arange(8), (3, 2))
    src = np.full((3, 16), 5, "int8")
    got = ember.tensor(base).scatter_add(1, ember.tensor(index), ember.tensor(src)).numpy()
    want = torch.tensor(base).scatter_add(1, torch.tensor(index), torch.tensor(src)).numpy()
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("shape", [(0, 2, 16), (3, 0, 4), (2, 3, 0)])
def test_zero_size_index_adds_and_gathers_nothing(shape):
    index = np.zeros(shape[:2] + (min(shape[2], 5),), np.int64)
    out = np.zeros(shape, np.float32)
    assert scatter_jit.scatter_add_(out, 2, index, np.ones(index.shape, np.float32))
    assert out.shape == shape and not out.any()
    got = scatter_jit.gather(np.ones(shape, np.float32), 2, index)
    assert got is not None and got.shape == index.shape


def test_gather_backward_of_a_zero_size_batch():
    x = ember.zeros(0, 2, 16, requires_grad=True)
    x.gather(2, ember.zeros(0, 2, 9, dtype=ember.int64)).sum().backward()
    assert tuple(x.grad.shape) == (0, 2, 16)
