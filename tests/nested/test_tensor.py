"""A nested tensor's metadata, autograd state, conversions and errors."""

import numpy as np
import pytest

import ember

from .helpers import arrays, as_nested, nested, raises_like, shape_text


def test_strided_sizes_as_torch_reports_them():
    nt = nested(ember, arrays(), "strided")
    assert nt.size(0) == 3 and nt.size(2) == 4 and nt.size(-1) == 4 and nt.dim() == 3
    with pytest.raises(RuntimeError, match="Given dimension 1 is irregular"):
        nt.size(1)
    with pytest.raises(RuntimeError, match="doesn't support sizes"):
        nt.shape  # noqa: B018
    assert nt._nested_tensor_size().tolist() == [[2, 4], [3, 4], [1, 4]]


def test_jagged_metadata():
    nt = nested(ember, arrays(), "jagged")
    assert shape_text(nt.size()) == "(3, j, 4)" and nt.ndim == 3 and nt.numel() == 24
    assert nt.dtype == ember.float32 and nt.device == ember.device("cpu")
    assert nt.is_nested and not ember.ones(2).is_nested
    assert isinstance(nt, ember.Tensor) and nt.layout == ember.jagged
    with pytest.raises(IndexError, match="Dimension out of range"):
        nt.size(3)


def test_leaf_nested_tensor_gets_a_nested_grad():
    nt = nested(ember, arrays(), "jagged", requires_grad=True)
    nt.to_padded_tensor(0.0).pow(2).sum().backward()
    grad = nt.grad
    assert grad.is_nested and grad is nt.grad and grad.shape == nt.shape
    for g, c in zip(grad.unbind(), nt.unbind()):
        np.testing.assert_allclose(g.numpy(), 2 * c.detach().numpy())


def test_strided_leaf_grad_and_zeroing():
    nt = nested(ember, arrays(), "strided", requires_grad=True)
    (nt * 3).to_padded_tensor(0.0).sum().backward()
    assert [g.tolist() for g in nt.grad.unbind()] == [
        np.full(s, 3.0).tolist() for s in [(2, 4), (3, 4), (1, 4)]
    ]
    nt.grad = None
    assert nt.grad is None


def test_detach_clone_requires_grad_():
    nt, _ = as_nested(ember, arrays())
    d = nt.detach()
    assert d.is_nested and not d.requires_grad and d.is_leaf and d.shape == nt.shape
    c = nt.clone()
    assert c.requires_grad and c.grad_fn is not None
    leaf = nested(ember, arrays()).requires_grad_()
    assert leaf.requires_grad and leaf.is_leaf


def test_backward_needs_a_nested_gradient():
    nt, _ = as_nested(ember, arrays())
    with pytest.raises(RuntimeError, match="implicitly created only for scalar outputs"):
        nt.backward()
    with pytest.raises(RuntimeError, match="nested structures differ"):
        nt.backward(nested(ember, arrays()))


def test_register_hook_sees_a_nested_grad():
    nt, leaves = as_nested(ember, arrays())
    seen = []
    nt.register_hook(lambda g: seen.append(g.is_nested) or g * 2)
    nt.values().sum().backward()
    assert seen == [True]
    np.testing.assert_array_equal(leaves[0].grad.numpy(), np.full((2, 4), 2.0))


def test_indexing_iteration_and_conversions():
    nt = nested(ember, arrays())
    np.testing.assert_array_equal(nt[1].numpy(), arrays()[1])
    assert [c.shape for c in nt] == [(2, 4), (3, 4), (1, 4)]
    with pytest.raises(IndexError):
        nt[3]  # noqa: B018
    for call in (nt.tolist, nt.numpy, nt.item, lambda: bool(nt)):
        with pytest.raises(RuntimeError):
            call()
    with pytest.raises(
        RuntimeError, match="unbind\\(\\): only supported for NestedTensor on dim=0"
    ):
        nt.unbind(1)


def test_metadata_and_errors_match_torch(torch_nested):
    torch = torch_nested
    for layout in ("strided", "jagged"):
        e, t = nested(ember, arrays(), layout), nested(torch, arrays(), layout)
        assert (e.dim(), e.numel(), e.is_nested, e.is_leaf, e.requires_grad) == (
            t.dim(),
            t.numel(),
            t.is_nested,
            t.is_leaf,
            t.requires_grad,
        )
        assert str(e.layout).replace("ember", "torch") == str(t.layout)
        for d in (0, 2, -1):
            assert e.size(d) == t.size(d)
        raises_like(lambda t=t: t.unbind(1), lambda e=e: e.unbind(1))
        raises_like(lambda t=t: t.backward(), lambda e=e: e.backward(), same_message=False)
    raises_like(
        lambda: nested(torch, arrays(), "strided").size(1),
        lambda: nested(ember, arrays(), "strided").size(1),
    )
    e, t = nested(ember, arrays()), nested(torch, arrays())
    assert shape_text(e.shape) == shape_text(t.shape)
    raises_like(lambda: t.item(), lambda: e.item())
