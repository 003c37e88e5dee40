"""Sparse arithmetic against PyTorch: sparse + sparse, dense + sparse, scalar *, /, unary -."""

import numpy as np
import pytest

import ember

from .helpers import assert_same, pair, raises_like, same_repr

OTHER = ([[1, 0], [1, 1]], [7.0, 8.0])


@pytest.mark.parametrize(
    "op",
    [
        lambda s, m: s * 2,
        lambda s, m: 2 * s,
        lambda s, m: s * m.tensor(2.0),
        lambda s, m: s / 2,
        lambda s, m: -s,
        lambda s, m: s.mul(3),
        lambda s, m: s.div(4),
        lambda s, m: s + s,
        lambda s, m: s - s,
        lambda s, m: s.add(s, alpha=2),
        lambda s, m: s.coalesce() * 0,
    ],
)
def test_sparse_results_and_gradients_match_torch(torch_sparse, op):
    e, t = pair(torch_sparse, requires_grad=True)
    ey, ty = op(e, ember), op(t, torch_sparse)
    same_repr(ey, ty)
    weights = np.arange(6.0, dtype=np.float32).reshape(2, 3)
    (ey.to_dense() * ember.tensor(weights)).sum().backward()
    (ty.to_dense() * torch_sparse.tensor(weights)).sum().backward()
    same_repr(e.grad, t.grad)


def test_sum_of_two_coalesced_tensors_is_coalesced_as_torch(torch_sparse):
    a, ta = pair(torch_sparse, requires_grad=True)
    b, tb = pair(torch_sparse, *OTHER, requires_grad=True)
    ey = a.coalesce() + b.coalesce()
    ty = ta.coalesce() + tb.coalesce()
    same_repr(ey, ty)
    (ey.to_dense() ** 2).sum().backward()
    (ty.to_dense() ** 2).sum().backward()
    same_repr(a.grad, ta.grad)
    same_repr(b.grad, tb.grad)


def test_sum_of_uncoalesced_tensors_has_torch_values(torch_sparse):
    a, ta = pair(torch_sparse)
    b, tb = pair(torch_sparse, *OTHER)
    ey, ty = a + b, ta + tb
    assert not ey.is_coalesced()
    assert_same(ey.coalesce(), ty.coalesce())
    ey, ty = a.sub(b, alpha=2), ta.sub(tb, alpha=2)
    assert_same(ey.coalesce(), ty.coalesce())


@pytest.mark.parametrize("op", [lambda d, s: d + s, lambda d, s: d - s])
def test_dense_plus_sparse_is_dense_with_torch_gradients(torch_sparse, op):
    e, t = pair(torch_sparse, requires_grad=True)
    d = ember.ones(2, 3, requires_grad=True)
    td = torch_sparse.ones(2, 3, requires_grad=True)
    ey, ty = op(d, e), op(td, t)
    assert_same(ey, ty)
    assert ey.grad_fn.name() == ty.grad_fn.name()
    (ey * ey).sum().backward()
    (ty * ty).sum().backward()
    same_repr(e.grad, t.grad)
    np.testing.assert_allclose(d.grad.numpy(), td.grad.numpy())


def test_sparse_plus_dense_is_dense_where_torch_refuses(torch_sparse):
    # PyTorch asks for dense + sparse; ember's engine needs both orders (see _arith.add)
    e, t = pair(torch_sparse, requires_grad=True)
    d = ember.full((2, 3), 2.0, requires_grad=True)
    td = torch_sparse.full((2, 3), 2.0, requires_grad=True)
    ey, ty = e - d, -(td - t)
    assert_same(ey, ty)
    assert ey.grad_fn.name() == "SubBackward0"
    (ey * ey).sum().backward()
    (ty * ty).sum().backward()
    assert_same(e.grad, t.grad)
    np.testing.assert_allclose(d.grad.numpy(), td.grad.numpy())


def test_sparse_and_dense_gradients_of_one_leaf_add_up_as_torch(torch_sparse):
    e, t = pair(torch_sparse, requires_grad=True)
    for m, s in ((ember, e), (torch_sparse, t)):
        dense = m.ones(3, 2)
        for _ in range(2):  # within one backward, then across two
            (s.to_dense().sum() + m.mm(s, dense).sum() + s.to_dense().sum()).backward()
    assert_same(e.grad, t.grad)


@pytest.mark.parametrize(
    "op",
    [
        lambda s, m: s + 1,
        lambda s, m: 1 + s,
        lambda s, m: s + m.sparse_coo_tensor([[0, 1]], [1.0, 2.0], (3, 3)),
    ],
)
def test_unsupported_additions_raise_as_torch(torch_sparse, op):
    e, t = pair(torch_sparse)
    raises_like(lambda: op(t, torch_sparse), lambda: op(e, ember))


def test_mixed_dtypes_promote_as_torch(torch_sparse):
    a, ta = pair(torch_sparse)
    b, tb = pair(torch_sparse, dtype="float64")
    same_repr(a + b, ta + tb)
