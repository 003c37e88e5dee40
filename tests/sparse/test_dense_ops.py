"""Dense ops given a sparse tensor raise NotImplementedError naming the op; dense tensors
are unchanged by the sparse install."""

import numpy as np
import pytest

import ember

from .helpers import pair


@pytest.mark.parametrize(
    "op, name",
    [
        (lambda s: s.exp(), "exp"),
        (lambda s: ember.exp(s), "exp"),
        (lambda s: s.cumsum(0), "cumsum"),
        (lambda s: s.view(6), "reshape"),
        (lambda s: s.reshape(6), "reshape"),
        (lambda s: s.mean(), "sum"),
        (lambda s: s[0], "indexing"),
        (lambda s: s * ember.ones(2, 3), "mul of a sparse tensor by a non-scalar"),
        (lambda s: s * s, "mul of two sparse tensors"),
        (lambda s: ember.mm(s.t(), s), "matmul of two sparse tensors"),
    ],
)
def test_dense_op_on_a_sparse_tensor_names_the_op(op, name):
    s = ember.sparse_coo_tensor([[0, 1], [2, 0]], [1.0, 2.0], (2, 3))
    with pytest.raises(NotImplementedError) as err:
        op(s)
    assert str(err.value).startswith(name) or f"{name}:" in str(err.value)
    assert "sparse" in str(err.value)


def test_sparse_tensors_refuse_numpy_and_tolist_as_torch(torch_sparse):
    e, t = pair(torch_sparse)
    for call in ("numpy", "tolist"):
        with pytest.raises(Exception) as want:
            getattr(t, call)()
        with pytest.raises(type(want.value), match="(?i)sparse|storage"):
            getattr(e, call)()


def test_dense_ops_unchanged_after_install(torch_sparse):
    a = np.arange(6.0, dtype=np.float32).reshape(2, 3)
    x = ember.tensor(a, requires_grad=True)
    y = (x @ ember.tensor(a.T)).exp().sum()
    y.backward()
    tx = torch_sparse.tensor(a, requires_grad=True)
    (tx @ torch_sparse.tensor(a.T)).exp().sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), tx.grad.numpy(), rtol=1e-5)
    assert x.layout == "strided" and x.layout is ember.strided
    assert type(x) is ember.Tensor and not x.is_sparse


def test_deepcopy_of_a_sparse_leaf():
    import copy

    s = ember.sparse_coo_tensor([[0, 1]], [1.0, 2.0], (3,), requires_grad=True)
    c = copy.deepcopy(s)
    assert c.is_sparse and c.requires_grad and c._data is not s._data
    np.testing.assert_array_equal(c.to_dense().detach().numpy(), [1.0, 2.0, 0.0])
