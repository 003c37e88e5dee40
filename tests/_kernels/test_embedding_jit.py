"""The compiled embedding scatter-adds (ember._kernels.embedding_jit) against the NumPy paths
(``jit.disabled()``) and torch: dense gradients with padding_idx / scale_grad_by_freq, expanded
and non-contiguous gradients, zero sizes, out-of-range indices, and SGD on sparse gradients."""

import numpy as np
import pytest

import ember
from ember._kernels import jit
from ember.ops.embedding import embedding

pytest.importorskip("numba")
if not jit.enabled():
    pytest.skip("compiled kernels are switched off (EMBER_JIT=0)", allow_module_level=True)
kernels = jit.module("embedding_jit")

DTYPES = ["float32", "float64"]
KWARGS = [{}, dict(padding_idx=3), dict(scale_grad_by_freq=True, padding_idx=0)]


def _weight_grad(weight, indices, grad_out, **kwargs):
    w = ember.tensor(weight, requires_grad=True)
    embedding(ember.tensor(indices), w, **kwargs).backward(grad_out)
    return w.grad.numpy()


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("kwargs", KWARGS)
@pytest.mark.parametrize("shape,width", [((7,), 5), ((9, 13), 3), ((0, 4), 6), ((4, 3), 0)])
def test_dense_gradient_equals_the_numpy_path_bit_for_bit(dtype, kwargs, shape, width):
    rng = np.random.default_rng(0)
    weight = rng.standard_normal((11, width)).astype(dtype)
    indices = rng.integers(0, 11, shape)
    grad_out = ember.tensor(rng.standard_normal(shape + (width,)).astype(dtype))
    fast = _weight_grad(weight, indices, grad_out, **kwargs)
    with jit.disabled():
        slow = _weight_grad(weight, indices, grad_out, **kwargs)
    assert fast.dtype == slow.dtype == np.dtype(dtype)
    np.testing.assert_array_equal(fast, slow)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("kwargs", KWARGS)
def test_expanded_and_transposed_gradients_equal_torch(dtype, kwargs, torch_mod):
    # the mean over tokens hands back an expanded (zero-stride) gradient; a transpose gives
    # a non-contiguous one; both reach the kernel without a copy
    rng = np.random.default_rng(1)
    weight = rng.standard_normal((300, 70)).astype(dtype)
    indices = rng.integers(0, 300, (33, 17))
    results = []
    for m in (ember, torch_mod):
        w = m.tensor(weight, requires_grad=True)
        out = m.nn.functional.embedding(m.tensor(indices), w, **kwargs)
        (out.mean(1).sum() + (out.transpose(0, 1) * 2).sum() * 0.5).backward()
        results.append(w.grad.numpy() if m is ember else w.grad.detach().numpy())
    tol = 1e-5 if dtype == "float32" else 1e-12
    np.testing.assert_allclose(results[0], results[1], rtol=tol, atol=tol)


@pytest.mark.parametrize("threads", [1, 2, 3])
def test_large_gradient_split_over_threads_equals_the_numpy_path(threads, monkeypatch):
    monkeypatch.setattr(kernels, "PARALLEL_FROM", 1000)
    rng = np.random.default_rng(2)
    indices = rng.integers(0, 1000, (64, 40))  # duplicates in every thread's span
    grad = rng.standard_normal((64, 40, 129)).astype(np.float32)
    before = ember.get_num_threads()
    ember.set_num_threads(threads)
    try:
        fast = kernels.sum_rows_by_index(indices.reshape(-1), grad, 1000, padding_idx=7)
    finally:
        ember.set_num_threads(before)
    with jit.disabled():
        slow = _weight_grad(
            np.zeros((1000, 129), np.float32), indices, ember.tensor(grad), padding_idx=7
        )
    np.testing.assert_array_equal(fast, slow)


def test_out_of_range_index_goes_back_to_the_numpy_path():
    grad = np.ones((3, 4))
    assert kernels.sum_rows_by_index(np.array([0, 5, 1]), grad, 5) is None
    assert kernels.sum_rows_by_index(np.array([0, -1, 1]), grad, 5) is None
    out = np.zeros((5, 4))
    assert not kernels.index_axpy(np.array([0, 5, 1]), -0.1, grad, out)
    assert not (out != 0).any()


def test_arrays_it_does_not_take_go_back_to_the_numpy_path():
    index = np.array([0, 1])
    assert kernels.sum_rows_by_index(index, np.ones((2, 3), np.float16), 2) is None
    assert kernels.sum_rows_by_index(index.astype(np.int8), np.ones((2, 3)), 2) is None
    assert not kernels.index_axpy(index, 1.0, np.ones((2, 3), np.float32), np.zeros((2, 3)))
    assert not kernels.index_axpy(index, 1.0, np.ones((2, 3)), np.zeros((3, 2)).T)


def _sgd_sparse(m, weight, indices, lr, steps=2, maximize=False, padding_idx=None):
    dtype = getattr(m, str(weight.dtype))
    emb = m.nn.Embedding(*weight.shape, sparse=True, padding_idx=padding_idx, dtype=dtype)
    with m.no_grad():
        emb.weight.copy_(m.tensor(weight))
    opt = m.optim.SGD(emb.parameters(), lr=lr, maximize=maximize)
    for step in range(steps):
        opt.zero_grad()
        (emb(m.tensor(indices)) * (step + 1.5)).pow(2).sum().backward()
        opt.step()
    return emb.weight.detach().numpy()


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("maximize", [False, True])
def test_sgd_on_sparse_gradients_equals_the_numpy_path_and_torch(dtype, maximize, torch_mod):
    rng = np.random.default_rng(3)
    weight = rng.standard_normal((50, 9)).astype(dtype)
    indices = rng.integers(0, 50, (6, 11))  # repeated rows: an uncoalesced gradient
    fast = _sgd_sparse(ember, weight, indices, 0.01, maximize=maximize, padding_idx=4)
    with jit.disabled():
        slow = _sgd_sparse(ember, weight, indices, 0.01, maximize=maximize, padding_idx=4)
    reference = _sgd_sparse(torch_mod, weight, indices, 0.01, maximize=maximize, padding_idx=4)
    tol = 1e-5 if dtype == "float32" else 1e-12
    np.testing.assert_allclose(fast, slow, rtol=tol, atol=tol)
    np.testing.assert_allclose(fast, reference, rtol=tol, atol=tol)
    assert fast.dtype == np.dtype(dtype)


def test_sgd_sparse_step_bumps_the_version_and_keeps_empty_gradients():
    emb = ember.nn.Embedding(5, 3, sparse=True)
    opt = ember.optim.SGD(emb.parameters(), lr=0.5)
    emb(ember.tensor([1, 1, 4])).sum().backward()
    before, version = emb.weight.detach().numpy().copy(), emb.weight._version
    opt.step()
    assert emb.weight._version == version + 1
    expected = before.copy()
    expected[1] -= 1.0
    expected[4] -= 0.5
    np.testing.assert_array_equal(emb.weight.detach().numpy(), expected)
    opt.zero_grad()
    emb(ember.tensor([], dtype=ember.int64)).sum().backward()
    opt.step()
    np.testing.assert_array_equal(emb.weight.detach().numpy(), expected)


@pytest.mark.parametrize("kwargs", [{}, dict(padding_idx=3)])
def test_gradcheck_and_gradgradcheck_through_the_kernel(kwargs):
    indices = ember.tensor([[0, 2, 2], [4, 0, 1]])
    weight = ember.tensor(np.random.default_rng(4).standard_normal((5, 3)), requires_grad=True)
    fn = lambda w: embedding(indices, w, **kwargs).mean(1)
    assert ember.autograd.gradcheck(fn, (weight,))
    assert ember.autograd.gradgradcheck(fn, (weight,))


def _sparse(indices, values, shape):
    return ember.sparse_coo_tensor(ember.tensor(indices), ember.tensor(values), shape)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize(
    "indices,dense_shape",
    [([[3, 0, 3, 7, 3]], (4,)), ([[3, 0, 3, 7, 3]], ()), ([[1, 0, 1, 2], [2, 2, 2, 0]], (3,))],
)
def test_to_dense_and_coalesce_equal_the_numpy_path_and_torch(
    dtype, indices, dense_shape, torch_mod
):
    rng = np.random.default_rng(5)
    nnz, sparse_dims = len(indices[0]), len(indices)
    shape = (8,) * sparse_dims + dense_shape
    values = rng.standard_normal((nnz,) + dense_shape).astype(dtype)
    fast = _sparse(indices, values, shape)
    with jit.disabled():
        slow = _sparse(indices, values, shape)
        slow_dense, slow_coalesced = slow.to_dense().numpy(), slow.coalesce()
    np.testing.assert_array_equal(fast.to_dense().numpy(), slow_dense)
    fast_coalesced = fast.coalesce()
    np.testing.assert_array_equal(fast_coalesced.values().numpy(), slow_coalesced.values().numpy())
    np.testing.assert_array_equal(
        fast_coalesced.indices().numpy(), slow_coalesced.indices().numpy()
    )
    reference = torch_mod.sparse_coo_tensor(
        torch_mod.tensor(indices), torch_mod.tensor(values), shape, check_invariants=True
    )
    np.testing.assert_allclose(
        fast_coalesced.values().numpy(), reference.coalesce().values().numpy(), rtol=1e-6
    )
    np.testing.assert_allclose(fast.to_dense().numpy(), reference.to_dense().numpy(), rtol=1e-6)


def test_to_dense_with_an_index_out_of_range_raises_as_before():
    bad = _sparse([[1, 2], [0, 9]], np.ones(2), (3, 4))
    with pytest.raises(IndexError):
        bad.to_dense()


def _sparse_adam(m, weight, indices, steps=3):
    dtype = getattr(m, str(weight.dtype))
    emb = m.nn.Embedding(*weight.shape, sparse=True, dtype=dtype)
    with m.no_grad():
        emb.weight.copy_(m.tensor(weight))
    opt = m.optim.SparseAdam(emb.parameters(), lr=0.01)
    for step in range(steps):
        opt.zero_grad()
        (emb(m.tensor(indices)) * (step + 1.5)).pow(2).sum().backward()
        opt.step()
    return emb.weight.detach().numpy(), opt.state[emb.weight]["exp_avg_sq"].numpy()


@pytest.mark.parametrize("dtype", DTYPES)
def test_sparse_adam_equals_the_numpy_path_bit_for_bit_and_torch(dtype, torch_mod):
    rng = np.random.default_rng(6)
    weight = rng.standard_normal((40, 7)).astype(dtype)
    indices = rng.integers(0, 40, (5, 9))
    fast = _sparse_adam(ember, weight, indices)
    with jit.disabled():
        slow = _sparse_adam(ember, weight, indices)
    for a, b in zip(fast, slow):
        np.testing.assert_array_equal(a, b)
    reference = _sparse_adam(torch_mod, weight, indices)
    tol = 1e-5 if dtype == "float32" else 1e-12
    for a, b in zip(fast, reference):
        np.testing.assert_allclose(a, b, rtol=tol, atol=tol)


def _adagrad_sparse(m, weight, indices, maximize, steps=3):
    dtype = getattr(m, str(weight.dtype))
    emb = m.nn.Embedding(*weight.shape, sparse=True, dtype=dtype)
    with m.no_grad():
        emb.weight.copy_(m.tensor(weight))
    opt = m.optim.Adagrad(emb.parameters(), lr=0.1, lr_decay=0.01, maximize=maximize)
    for step in range(steps):
        opt.zero_grad()
        (emb(m.tensor(indices)) * (step + 1.5)).pow(2).sum().backward()
        opt.step()
    return emb.weight.detach().numpy(), opt.state[emb.weight]["sum"].numpy()


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("maximize", [False, True])
def test_adagrad_on_sparse_gradients_equals_the_dense_path_and_torch(dtype, maximize, torch_mod):
    rng = np.random.default_rng(7)
    weight = rng.standard_normal((30, 6)).astype(dtype)
    indices = rng.integers(0, 30, (4, 9))
    fast = _adagrad_sparse(ember, weight, indices, maximize)
    with jit.disabled():  # the gradient made dense: every element updated, the same values
        slow = _adagrad_sparse(ember, weight, indices, maximize)
    reference = _adagrad_sparse(torch_mod, weight, indices, maximize)
    tol = 1e-6 if dtype == "float32" else 1e-13
    for a, b, c in zip(fast, slow, reference):
        np.testing.assert_allclose(a, b, rtol=tol, atol=tol)
        np.testing.assert_allclose(a, c, rtol=tol, atol=tol)


def test_adagrad_with_weight_decay_refuses_sparse_gradients_as_torch():
    emb = ember.nn.Embedding(5, 3, sparse=True)
    opt = ember.optim.Adagrad(emb.parameters(), weight_decay=0.1)
    emb(ember.tensor([1, 2])).sum().backward()
    with pytest.raises(RuntimeError, match="not compatible with sparse gradients"):
        opt.step()


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("padding_idx", [None, 3])
@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("shape,width", [((33, 17), 70), ((1, 1), 1), ((5, 4), 0), ((0, 6), 5)])
def test_expanded_gradient_equals_its_copy_bit_for_bit(
    dtype, padding_idx, threads, shape, width, monkeypatch
):
    # a zero-stride gradient (a mean's, expanded over the lookups) is read one row per
    # outer index: the sums equal those of its contiguous copy, added in the same order
    monkeypatch.setattr(kernels, "PARALLEL_FROM", 100)
    rng = np.random.default_rng(6)
    indices = rng.integers(0, 50, shape)
    rows = rng.standard_normal((shape[0], 1, width)).astype(dtype)
    expanded = np.broadcast_to(rows, shape + (width,))
    before = ember.get_num_threads()
    ember.set_num_threads(threads)
    try:
        fast = kernels.sum_rows_by_index(indices, expanded, 50, padding_idx)
        copied = kernels.sum_rows_by_index(indices, np.ascontiguousarray(expanded), 50, padding_idx)
    finally:
        ember.set_num_threads(before)
    np.testing.assert_array_equal(fast, copied)
    if padding_idx is not None:
        assert not fast[padding_idx].any()


@pytest.mark.parametrize("dtype", DTYPES)
def test_sparse_add_rounds_as_torch_bit_for_bit(dtype, torch_mod):
    # PyTorch adds each entry of an uncoalesced gradient in turn with a fused multiply-add
    rng = np.random.default_rng(7)
    weight = rng.standard_normal((40, 33)).astype(dtype)
    values = rng.standard_normal((300, 33)).astype(dtype)
    index = rng.integers(0, 40, 300)
    mine = weight.copy()
    assert kernels.index_axpy(index, -0.1, values, mine)
    theirs = torch_mod.from_numpy(weight.copy())
    sparse = torch_mod.sparse_coo_tensor(
        torch_mod.from_numpy(index).reshape(1, -1), torch_mod.from_numpy(values), weight.shape
    )
    theirs.add_(sparse, alpha=-0.1)
    np.testing.assert_array_equal(mine, theirs.numpy())
