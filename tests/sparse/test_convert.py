"""to_dense / to_sparse / coalesce / indices / values / transpose / to, with gradients,
against PyTorch."""

import numpy as np
import pytest

import ember

from .helpers import INDICES, VALUES, assert_same, pair, raises_like, same_repr


def test_to_dense_sums_duplicates(torch_sparse):
    e, t = pair(torch_sparse)
    assert_same(e.to_dense(), t.to_dense())


def test_to_dense_gradient_is_sparse_on_the_coalesced_pattern(torch_sparse):
    e, t = pair(torch_sparse, requires_grad=True)
    (e.to_dense() ** 2).sum().backward()
    (t.to_dense() ** 2).sum().backward()
    assert e.to_dense().grad_fn.name() == "ToDenseBackward0"
    assert e.grad.is_sparse
    same_repr(e.grad, t.grad)


def test_unmasked_to_dense_gradient_holds_every_nonzero(torch_sparse):
    e, t = pair(torch_sparse, requires_grad=True)
    (e.to_dense(masked_grad=False) * ember.arange(6.0).reshape(2, 3)).sum().backward()
    (t.to_dense(masked_grad=False) * torch_sparse.arange(6.0).reshape(2, 3)).sum().backward()
    same_repr(e.grad, t.grad)


def test_gradient_reaches_the_values_tensor(torch_sparse):
    v = ember.tensor(VALUES, requires_grad=True)
    tv = torch_sparse.tensor(VALUES, requires_grad=True)
    (ember.sparse_coo_tensor(INDICES, v, (2, 3)).to_dense() ** 2).sum().backward()
    (torch_sparse.sparse_coo_tensor(INDICES, tv, (2, 3)).to_dense() ** 2).sum().backward()
    np.testing.assert_allclose(v.grad.numpy(), tv.grad.numpy())


def test_gradients_from_two_paths_accumulate_and_across_backward_calls(torch_sparse):
    e, t = pair(torch_sparse, requires_grad=True)
    for x in (e, t):
        for _ in range(2):
            (x.to_dense() * 3 + (x * 2).to_dense()).sum().backward()
    same_repr(e.grad, t.grad)


def test_coalesce_values_indices_and_gradient(torch_sparse):
    e, t = pair(torch_sparse, requires_grad=True)
    ec, tc = e.coalesce(), t.coalesce()
    same_repr(ec, tc)
    assert ec.coalesce() is ec
    np.testing.assert_array_equal(ec.indices().numpy(), tc.indices().numpy())
    (ec.values() * ember.tensor([1.0, 2.0, 3.0])).sum().backward()
    (tc.values() * torch_sparse.tensor([1.0, 2.0, 3.0])).sum().backward()
    assert ec.values().grad_fn.name() == "ValuesBackward0"
    same_repr(e.grad, t.grad)


@pytest.mark.parametrize("sparse_dim", [None, 1, 2])
def test_to_sparse_of_dense_and_gradient(torch_sparse, sparse_dim):
    data = np.array([[[0.0, 1.0], [0.0, 0.0]], [[2.0, 0.0], [3.0, 4.0]]], dtype=np.float32)
    x = ember.tensor(data, requires_grad=True)
    tx = torch_sparse.tensor(data, requires_grad=True)
    if sparse_dim is None:
        e, t = x.to_sparse(), tx.to_sparse()
    else:
        e, t = x.to_sparse(sparse_dim), tx.to_sparse(sparse_dim)
    same_repr(e, t)
    (e.to_dense() * ember.tensor(data + 1)).sum().backward()
    (t.to_dense() * torch_sparse.tensor(data + 1)).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), tx.grad.numpy())


def test_to_sparse_coo_and_layout_argument(torch_sparse):
    x = ember.tensor([[0.0, 1.0], [2.0, 0.0]])
    tx = torch_sparse.tensor([[0.0, 1.0], [2.0, 0.0]])
    same_repr(x.to_sparse_coo(), tx.to_sparse_coo())
    same_repr(x.to_sparse(layout=ember.sparse_coo), tx.to_sparse(layout=torch_sparse.sparse_coo))
    s = x.to_sparse()
    assert s.to_sparse() is s


def test_dense_side_of_the_sparse_api(torch_sparse):
    x, tx = ember.ones(2, 3), torch_sparse.ones(2, 3)
    assert x.layout == ember.strided and repr(x.layout) == "ember.strided"
    assert not x.is_sparse
    assert x.to_dense() is x
    assert (x.sparse_dim(), x.dense_dim()) == (tx.sparse_dim(), tx.dense_dim())
    for op in ("coalesce", "indices", "values", "is_coalesced"):
        raises_like(getattr(tx, op), getattr(x, op))
    with pytest.raises(NotImplementedError, match="_nnz"):
        x._nnz()


@pytest.mark.parametrize(
    "case",
    [
        lambda m, s: s.indices(),
        lambda m, s: s.values(),
        lambda m, s: s.to_dense(dtype=m.float64),
        lambda m, s: s.to_sparse(1),
        lambda m, s: m.ones(2, 2).to_sparse(3),
        lambda m, s: s.numpy(),
    ],
)
def test_conversion_errors_match_torch(torch_sparse, case):
    e, t = pair(torch_sparse)
    raises_like(lambda: case(torch_sparse, t), lambda: case(ember, e))


def test_transpose_and_gradient(torch_sparse):
    e, t = pair(torch_sparse, requires_grad=True)
    et, tt = e.t(), t.t()
    same_repr(et, tt)
    same_repr(e.transpose(0, 1), t.transpose(0, 1))
    (et.to_dense() * ember.arange(6.0).reshape(3, 2)).sum().backward()
    (tt.to_dense() * torch_sparse.arange(6.0).reshape(3, 2)).sum().backward()
    same_repr(e.grad, t.grad)


def test_to_dtype_clone_and_detach(torch_sparse):
    e, t = pair(torch_sparse, requires_grad=True)
    same_repr(e.double(), t.double())
    same_repr(e.to(ember.float64), t.to(torch_sparse.float64))
    same_repr(e.clone(), t.clone())
    d = e.detach()
    assert d.is_sparse and not d.requires_grad and d._data is e._data
    e.double().to_dense().sum().backward()
    t.double().to_dense().sum().backward()
    same_repr(e.grad, t.grad)


def test_item_of_a_one_element_sparse_tensor(torch_sparse):
    e, t = pair(torch_sparse, [[0]], [2.5], (1,))
    assert e.item() == t.item()


def test_zero_drops_every_entry_as_torch(torch_sparse):
    e, t = pair(torch_sparse, requires_grad=True)
    e.to_dense().sum().backward()
    t.to_dense().sum().backward()
    same_repr(e.grad.zero_(), t.grad.zero_())
    assert e.grad.is_coalesced()
    with pytest.raises(RuntimeError, match="in-place"):
        e.zero_()


def test_large_and_special_value_reprs_match_torch(torch_sparse):
    rng = np.random.default_rng(0)
    small = rng.integers(0, 5, size=(2, 6))
    cases = [
        (rng.integers(0, 50, size=(2, 1200)), rng.standard_normal(1200), (50, 50)),
        (small, rng.standard_normal(6) * 1e5, (5, 5)),
        (small, rng.standard_normal((6, 400)), (5, 5, 400)),
        (small, np.array([1e-7, 1, 2, np.nan, np.inf, -3]), (5, 5)),
    ]
    for indices, values, size in cases:
        values = values.astype(np.float32)
        e = ember.sparse_coo_tensor(ember.tensor(indices), ember.tensor(values), size)
        t = torch_sparse.sparse_coo_tensor(
            torch_sparse.tensor(indices), torch_sparse.tensor(values), size
        )
        same_repr(e, t)
