"""index_add along dim 0 runs the compiled in-order row add when numba is there: same values
as the NumPy path (np.add.at) and as torch, duplicates included."""

import numpy as np
import pytest

import ember
from ember._kernels import jit

pytest.importorskip("numba")


def _case(dtype, shape=(7, 3, 2), n=11, seed=0):
    rng = np.random.default_rng(seed)
    base = rng.standard_normal(shape).astype(dtype)
    index = rng.integers(0, shape[0], n)
    src = rng.standard_normal((n, *shape[1:])).astype(dtype)
    return base, index, src


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("alpha", [1, -2.5])
@pytest.mark.parametrize("index_dtype", [np.int64, np.int32])
def test_matches_the_numpy_path_bit_for_bit(dtype, alpha, index_dtype):
    base, index, src = _case(dtype)
    args = (ember.tensor(base), 0, ember.tensor(index.astype(index_dtype)), ember.tensor(src))
    fast = ember.index_add(*args, alpha=alpha)
    with jit.disabled():
        slow = ember.index_add(*args, alpha=alpha)
    np.testing.assert_array_equal(fast.numpy(), slow.numpy())


def test_non_contiguous_source_and_empty_index():
    base, index, src = _case(np.float32, shape=(5, 4), n=6)
    src_t = ember.tensor(np.ascontiguousarray(src.T)).t()  # a transposed view
    out = ember.index_add(ember.tensor(base), 0, ember.tensor(index), src_t)
    expected = base.copy()
    np.add.at(expected, index, src)
    np.testing.assert_array_equal(out.numpy(), expected)
    empty = ember.index_add(
        ember.tensor(base), 0, ember.tensor(np.zeros(0, np.int64)), ember.zeros(0, 4)
    )
    np.testing.assert_array_equal(empty.numpy(), base)


def test_out_of_range_index_is_still_an_error():
    base, _, src = _case(np.float32, shape=(4, 2), n=3)
    with pytest.raises((IndexError, RuntimeError)):
        ember.index_add(ember.tensor(base), 0, ember.tensor([0, 4, 1]), ember.tensor(src))


def test_index_select_backward_and_torch_agree():
    torch = pytest.importorskip("torch")
    base, index, src = _case(np.float64, shape=(6, 3), n=9, seed=3)
    x = ember.tensor(base, requires_grad=True)
    x.index_select(0, ember.tensor(index)).mul(ember.tensor(src)).sum().backward()
    tx = torch.tensor(base, requires_grad=True)
    tx.index_select(0, torch.tensor(index)).mul(torch.tensor(src)).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), tx.grad.numpy(), rtol=1e-12)
    got = ember.index_add(ember.tensor(base), 0, ember.tensor(index), ember.tensor(src), alpha=2)
    want = torch.index_add(torch.tensor(base), 0, torch.tensor(index), torch.tensor(src), alpha=2)
    np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-12)
