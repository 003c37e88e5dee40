"""ember.ops.embedding: values and gradients against torch's F.embedding (padding_idx,
scale_grad_by_freq, max_norm, sparse=True), float64 gradcheck and gradgradcheck, the CSR
path for large lookups, errors, and SGD on sparse gradients."""

import numpy as np
import pytest

import ember
import ember.sparse  # noqa: F401 - installs the sparse gradient embedding(sparse=True) makes
from ember.ops import embedding as embedding_module
from ember.ops.embedding import embedding
from tests.helpers import check_gradients

KWARGS = [
    {},
    dict(padding_idx=2),
    dict(padding_idx=-1),
    dict(scale_grad_by_freq=True),
    dict(scale_grad_by_freq=True, padding_idx=0),
]
INDEX_SHAPES = [(7,), (3, 5), (), (0, 3), (2, 2, 3)]


def _run(m, fn, weight, indices, grad_out, index_dtype="int64", **kwargs):
    w = m.tensor(weight, requires_grad=True)
    out = fn(m.tensor(indices, dtype=getattr(m, index_dtype)), w, **kwargs)
    out.backward(m.tensor(grad_out))
    return out, w


def _torch_embedding(torch_mod):
    return torch_mod.nn.functional.embedding


@pytest.mark.parametrize("kwargs", KWARGS)
@pytest.mark.parametrize("shape", INDEX_SHAPES)
def test_values_and_dense_gradient_equal_torch(kwargs, shape, torch_mod):
    rng = np.random.default_rng(0)
    weight = rng.standard_normal((6, 4))
    indices = rng.integers(0, 6, shape)
    grad_out = rng.standard_normal(shape + (4,))
    oe, we = _run(ember, embedding, weight, indices, grad_out, **kwargs)
    ot, wt = _run(torch_mod, _torch_embedding(torch_mod), weight, indices, grad_out, **kwargs)
    assert tuple(oe.shape) == tuple(ot.shape) and oe.dtype == ember.float64
    np.testing.assert_array_equal(oe.detach().numpy(), ot.detach().numpy())
    np.testing.assert_allclose(we.grad.numpy(), wt.grad.numpy(), rtol=1e-13, atol=1e-15)
    assert oe.grad_fn.name() == "EmbeddingBackward0"


@pytest.mark.parametrize("kwargs", [{}, dict(padding_idx=3), dict(scale_grad_by_freq=True)])
def test_large_lookups_take_the_csr_path_and_equal_torch(kwargs, torch_mod, monkeypatch):
    rng = np.random.default_rng(1)
    weight = rng.standard_normal((500, 64)).astype(np.float32)
    indices = rng.integers(0, 500, (40, 16))
    grad_out = rng.standard_normal((40, 16, 64)).astype(np.float32)
    assert grad_out.size >= embedding_module._CSR_FROM_ELEMENTS
    _, we = _run(ember, embedding, weight, indices, grad_out, index_dtype="int32", **kwargs)
    _, wt = _run(torch_mod, _torch_embedding(torch_mod), weight, indices, grad_out, **kwargs)
    assert we.grad.dtype == ember.float32
    np.testing.assert_allclose(we.grad.numpy(), wt.grad.numpy(), rtol=1e-5, atol=1e-5)
    # the add.at path gives the same sums
    monkeypatch.setattr(embedding_module, "_CSR_FROM_ELEMENTS", 1 << 62)
    _, small = _run(ember, embedding, weight, indices, grad_out, **kwargs)
    np.testing.assert_allclose(small.grad.numpy(), we.grad.numpy(), rtol=1e-5, atol=1e-5)


# padding_idx and scale_grad_by_freq change the gradient on purpose, so gradcheck sees them
# only where they change nothing (the padding row not looked up, every index distinct)
GRADCHECK_CASES = [
    ([[0, 2, 2], [4, 0, 1]], {}),
    ([[0, 2, 2], [4, 0, 1]], dict(padding_idx=3)),
    ([[0, 2], [4, 1]], dict(scale_grad_by_freq=True, padding_idx=-2)),
]


@pytest.mark.parametrize("indices,kwargs", GRADCHECK_CASES)
@pytest.mark.parametrize("noncontiguous", [False, True])
def test_gradcheck_and_gradgradcheck(indices, kwargs, noncontiguous):
    indices = ember.tensor(indices)
    check_gradients(
        lambda m, w: embedding(indices, w, **kwargs),
        [np.random.default_rng(2).standard_normal((5, 3))],
        noncontiguous=noncontiguous,
    )


def test_double_backward_equals_torch(torch_mod):
    """torch's double backward leaves scale_grad_by_freq out (embedding_dense_double_backward
    takes no such flag): ember's does too, so d/dg below equals torch's."""
    rng = np.random.default_rng(3)
    weight, indices = rng.standard_normal((5, 3)), [[0, 2, 2], [4, 0, 1]]
    results = []
    for m, fn in ((ember, embedding), (torch_mod, _torch_embedding(torch_mod))):
        w = m.tensor(weight, requires_grad=True)
        g = m.tensor(rng.standard_normal((2, 3, 3)) * 0 + 1.5, requires_grad=True)
        out = fn(m.tensor(indices), w * w, scale_grad_by_freq=True, padding_idx=4)
        (gw,) = m.autograd.grad(out, w, g, create_graph=True)
        d_w, d_g = m.autograd.grad((gw**2).sum(), (w, g))
        results.append([gw.detach().numpy(), d_w.numpy(), d_g.numpy()])
    for e, t in zip(*results):
        np.testing.assert_allclose(e, t, rtol=1e-12)


@pytest.mark.parametrize("padding_idx", [None, 1])
def test_sparse_gradient_equals_torch_coalesced(padding_idx, torch_mod):
    rng = np.random.default_rng(4)
    weight, indices = rng.standard_normal((6, 3)), [[1, 2, 1], [5, 1, 0]]
    grads = []
    for m, fn in ((ember, embedding), (torch_mod, _torch_embedding(torch_mod))):
        w = m.tensor(weight, requires_grad=True)
        for scale in (1.0, 2.0):  # two backward passes: the sparse gradients accumulate
            (
                fn(m.tensor(indices), w, padding_idx=padding_idx, sparse=True) * scale
            ).sum().backward()
        assert w.grad.is_sparse and w.grad.layout == m.sparse_coo
        assert tuple(w.grad.shape) == (6, 3)
        grads.append(w.grad.coalesce())
    e, t = grads
    np.testing.assert_array_equal(e.indices().numpy(), t.indices().numpy())
    np.testing.assert_allclose(e.values().numpy(), t.values().numpy(), rtol=1e-13)


def test_sparse_gradient_of_one_pass_has_one_entry_per_lookup(torch_mod):
    w = ember.ones(5, 2, requires_grad=True)
    embedding(ember.tensor([[1, 2], [1, 0]]), w, sparse=True, padding_idx=0).sum().backward()
    assert not w.grad.is_coalesced() and w.grad._nnz() == 3
    assert w.grad.to_dense().numpy().tolist() == [[0, 0], [2, 2], [1, 1], [0, 0], [0, 0]]


def test_sparse_with_scale_grad_by_freq_raises_as_torch(torch_mod):
    for m, fn in ((ember, embedding), (torch_mod, _torch_embedding(torch_mod))):
        w = m.ones(5, 2, requires_grad=True)
        out = fn(m.tensor([1, 1]), w, sparse=True, scale_grad_by_freq=True)
        with pytest.raises(RuntimeError, match="scale_grad_by_freq not supported with sparse"):
            out.sum().backward()


@pytest.mark.parametrize("maximize", [False, True])
@pytest.mark.parametrize("rows,width,lookups", [(300, 80, (30, 8)), (10, 3, (4, 2))])
def test_sgd_steps_on_sparse_gradients_equal_torch(maximize, rows, width, lookups, torch_mod):
    """Large gradients sum their rows through a CSR matrix, small ones through add.at."""
    rng = np.random.default_rng(5)
    weight = rng.standard_normal((rows, width))
    batches = [rng.integers(0, rows, lookups) for _ in range(3)]
    results = []
    for m, fn in ((ember, embedding), (torch_mod, _torch_embedding(torch_mod))):
        w = m.tensor(weight, requires_grad=True)
        opt = m.optim.SGD([w], lr=0.1, maximize=maximize)
        for idx in batches:
            opt.zero_grad()
            (fn(m.tensor(idx), w, sparse=True) ** 2).sum().backward()
            opt.step()
        results.append((w.detach().numpy(), w._version))
    np.testing.assert_allclose(results[0][0], results[1][0], rtol=1e-12, atol=1e-14)
    assert results[0][1] == results[1][1]


def test_sgd_with_momentum_on_a_sparse_gradient_equals_torch(torch_mod):
    results = []
    for m, fn in ((ember, embedding), (torch_mod, _torch_embedding(torch_mod))):
        w = m.tensor(np.arange(12.0).reshape(4, 3), requires_grad=True)
        opt = m.optim.SGD([w], lr=0.1, momentum=0.9)
        for idx in ([0, 2], [2, 2, 3]):
            opt.zero_grad()
            (fn(m.tensor(idx), w, sparse=True) ** 2).sum().backward()
            opt.step()
        results.append(w.detach().numpy())
    np.testing.assert_allclose(results[0], results[1], rtol=1e-12)


@pytest.mark.parametrize("norm_type", [2.0, 1.0, 3.0, float("inf")])
def test_max_norm_renormalises_looked_up_rows_in_place_as_torch(norm_type, torch_mod):
    rng = np.random.default_rng(6)
    weight = rng.standard_normal((6, 4)) * 2
    indices = [[0, 3, 3], [5, 0, 1]]
    results = []
    for m, fn in ((ember, embedding), (torch_mod, _torch_embedding(torch_mod))):
        w = m.tensor(weight, requires_grad=True)
        out = fn(m.tensor(indices), w, max_norm=1.5, norm_type=norm_type)
        out.sum().backward()
        results.append((out.detach().numpy(), w.detach().numpy(), w.grad.numpy(), w._version))
    for e, t in zip(results[0][:3], results[1][:3]):
        np.testing.assert_allclose(e, t, rtol=1e-12)
    assert results[0][3] == results[1][3]
    # rows never looked up keep their values
    np.testing.assert_array_equal(results[0][1][[2, 4]], weight[[2, 4]])


def test_ops_without_grad_make_no_node():
    out = embedding(ember.tensor([1, 0]), ember.ones(3, 2))
    assert out.grad_fn is None and not out.requires_grad
    with ember.no_grad():
        out = embedding(ember.tensor([1, 0]), ember.ones(3, 2, requires_grad=True))
    assert out.grad_fn is None


ERRORS = [
    (lambda m: (m.tensor([1.0]), m.ones(5, 3)), {}, RuntimeError, "'indices' to have one of the"),
    (lambda m: (m.tensor([1], dtype=m.int16), m.ones(5, 3)), {}, RuntimeError, "ShortTensor"),
    (lambda m: (m.tensor([5]), m.ones(5, 3)), {}, IndexError, "index out of range in self"),
    (lambda m: (m.tensor([-1]), m.ones(5, 3)), {}, IndexError, "index out of range in self"),
    (lambda m: (m.tensor([1]), m.ones(5)), {}, RuntimeError, "'weight' must be 2-D"),
    (lambda m: (m.tensor([1]), m.ones(5, 3)), dict(padding_idx=5), AssertionError, "Padding_idx"),
    (lambda m: (m.tensor([1]), m.ones(5, 3)), dict(padding_idx=-6), AssertionError, "Padding_idx"),
]


@pytest.mark.parametrize("make,kwargs,error,message", ERRORS)
def test_bad_input_raises_torch_errors(make, kwargs, error, message, torch_mod):
    for m, fn in ((ember, embedding), (torch_mod, _torch_embedding(torch_mod))):
        with pytest.raises(error, match=message):
            fn(*make(m), **kwargs)


@pytest.mark.parametrize("kwargs", [dict(lr=0.05), dict(lr=0.1, betas=(0.5, 0.7), maximize=True)])
def test_sparse_adam_on_sparse_gradients_equals_torch(kwargs, torch_mod):
    rng = np.random.default_rng(7)
    weight = rng.standard_normal((10, 3))
    batches = [[1, 3, 3], [0, 3], [9, 1, 2]]
    results = []
    for m, fn in ((ember, embedding), (torch_mod, _torch_embedding(torch_mod))):
        w = m.tensor(weight, requires_grad=True)
        opt = m.optim.SparseAdam([w], **kwargs)
        for idx in batches:
            opt.zero_grad()
            (fn(m.tensor(idx), w, sparse=True) ** 2).sum().backward()
            opt.step()
        results.append((w.detach().numpy(), opt.state[w]["exp_avg_sq"].numpy(), w._version))
    np.testing.assert_allclose(results[0][0], results[1][0], rtol=1e-13)
    np.testing.assert_allclose(results[0][1], results[1][1], rtol=1e-13)
    assert results[0][2] == results[1][2]
    assert results[0][0][5].tolist() == weight[5].tolist()  # never looked up
