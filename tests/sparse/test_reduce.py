"""ember.sparse.sum / softmax / log_softmax against PyTorch, values and gradients."""

import numpy as np
import pytest

import ember

from .helpers import assert_same, pair, same_repr

HYBRID = ([[0, 1, 1, 0], [2, 0, 2, 2]], [[1.0, 2.0], [3.0, 4.0], [5.0, 6.0], [7.0, 8.0]])


def _weights(m, shape):
    return m.arange(float(np.prod(shape))).reshape(shape) / 7 - 1


@pytest.mark.parametrize(
    "hybrid, dim",
    [
        (False, None),
        (False, 0),
        (False, 1),
        (False, (0, 1)),
        (False, -1),
        (True, None),
        (True, 2),
        (True, 0),
        (True, (0, 2)),
        (True, (0, 1)),
    ],
)
def test_sparse_sum_matches_torch(torch_sparse, hybrid, dim):
    size = (2, 3, 2) if hybrid else (2, 3)
    args = HYBRID if hybrid else ()
    e, t = pair(torch_sparse, *args, size=size, requires_grad=True)
    if dim is None:
        ey, ty = ember.sparse.sum(e), torch_sparse.sparse.sum(t)
    else:
        ey, ty = ember.sparse.sum(e, dim), torch_sparse.sparse.sum(t, dim)
    if ty.is_sparse:
        same_repr(ey, ty)
    else:
        assert_same(ey, ty)
        assert ey.grad_fn.name() == ty.grad_fn.name()
    dense_e = ey.to_dense() if ey.is_sparse else ey
    dense_t = ty.to_dense() if ty.is_sparse else ty
    (dense_e * _weights(ember, tuple(ty.shape))).sum().backward()
    (dense_t * _weights(torch_sparse, tuple(ty.shape))).sum().backward()
    same_repr(e.grad, t.grad)


def test_sum_method_of_a_sparse_tensor(torch_sparse):
    e, t = pair(torch_sparse)
    assert_same(e.sum(), t.sum())
    same_repr(e.sum(1), t.sum(1))


@pytest.mark.parametrize("fn", ["softmax", "log_softmax"])
@pytest.mark.parametrize("hybrid, dim", [(False, 0), (False, 1), (False, -1), (True, 2), (True, 1)])
def test_softmax_over_stored_entries_matches_torch(torch_sparse, fn, hybrid, dim):
    # unique indices: with duplicates PyTorch's sparse softmax backward assigns gradients to
    # the wrong entries; ember's are the derivative of the function the tensor stands for
    size = (2, 3, 2) if hybrid else (2, 3)
    values = [[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]] if hybrid else [4.0, 4.0, 5.0]
    e, t = pair(torch_sparse, [[0, 1, 1], [2, 0, 2]], values, size=size, requires_grad=True)
    ey = getattr(ember.sparse, fn)(e, dim)
    # PyTorch's backward mishandles a negative dim: give it the same dim counted from 0
    ty = getattr(torch_sparse.sparse, fn)(t, dim % len(size))
    assert_same(ey, ty, atol=1e-5)
    assert ey.grad_fn.name() == ty.grad_fn.name()
    (ey.to_dense() * _weights(ember, size)).sum().backward()
    (ty.to_dense() * _weights(torch_sparse, size)).sum().backward()
    assert_same(e.grad.coalesce(), t.grad.coalesce(), atol=1e-5)


def test_sum_of_a_dense_tensor_raises_as_torch(torch_sparse):
    with pytest.raises(RuntimeError) as want:
        torch_sparse.sparse.sum(torch_sparse.ones(2))
    with pytest.raises(RuntimeError, match=str(want.value)):
        ember.sparse.sum(ember.ones(2))
