"""nested_tensor, as_nested_tensor, nested_tensor_from_jagged, narrow, masked_select."""

import numpy as np
import pytest

import ember

from .helpers import arrays, as_nested, assert_close, nested, raises_like, shape_text

LAYOUTS = ["strided", "jagged"]


@pytest.mark.parametrize("layout", LAYOUTS)
def test_nested_tensor_copies_components_into_a_leaf(layout):
    data = arrays()
    parts = [ember.tensor(a) for a in data]
    nt = ember.nested.nested_tensor(parts, layout=getattr(ember, layout))
    assert nt.is_nested and nt.is_leaf and not nt.requires_grad
    assert nt.layout == getattr(ember, layout) and nt.dim() == 3 and len(nt) == 3
    for got, want in zip(nt.unbind(), data):
        np.testing.assert_array_equal(got.numpy(), want)
    parts[0].mul_(0.0)  # a copy: the nested tensor keeps its values
    np.testing.assert_array_equal(nt.unbind()[0].numpy(), data[0])


@pytest.mark.parametrize("layout", LAYOUTS)
def test_nested_tensor_dtype_and_requires_grad(layout):
    nt = ember.nested.nested_tensor(
        [[1, 2], [3]], dtype=ember.float64, layout=getattr(ember, layout), requires_grad=True
    )
    assert nt.dtype == ember.float64 and nt.requires_grad and nt.is_leaf
    assert [c.tolist() for c in nt.unbind()] == [[1.0, 2.0], [3.0]]
    ints = ember.nested.nested_tensor([[1, 2], [3]], layout=getattr(ember, layout))
    assert ints.dtype == ember.int64 and ints.device == ember.device("cpu")


def test_jagged_offsets_and_shape():
    nt = nested(ember, arrays(), "jagged")
    assert nt.offsets().tolist() == [0, 2, 5, 6]
    assert nt.lengths() is None
    assert nt.values().shape == (6, 4)
    assert shape_text(nt.shape) == "(3, j, 4)"


def test_as_nested_tensor_keeps_history_to_components():
    nt, leaves = as_nested(ember, arrays(), "jagged")
    assert not nt.is_leaf and nt.requires_grad
    (nt.values() * 2).sum().backward()
    for leaf in leaves:
        np.testing.assert_array_equal(leaf.grad.numpy(), np.full(leaf.shape, 2.0))


def test_as_nested_tensor_backward_with_a_nested_gradient():
    a = ember.arange(3.0, requires_grad=True)
    b = ember.arange(5.0, requires_grad=True)
    nt = ember.nested.as_nested_tensor([a, b])
    nt.backward(ember.nested.nested_tensor([ember.ones_like(a), ember.zeros_like(b)]))
    assert a.grad.tolist() == [1.0, 1.0, 1.0]
    assert b.grad.tolist() == [0.0] * 5


@pytest.mark.parametrize("layout", LAYOUTS)
def test_as_nested_tensor_of_a_dense_batch(layout):
    dense = ember.arange(24.0).reshape(2, 3, 4).requires_grad_()
    nt = ember.nested.as_nested_tensor(dense, layout=getattr(ember, layout))
    assert [c.shape for c in nt.unbind()] == [(3, 4), (3, 4)]
    nt.to_padded_tensor(0.0).sum().backward()
    np.testing.assert_array_equal(dense.grad.numpy(), np.ones((2, 3, 4)))


def test_nested_tensor_from_jagged_views_values():
    values = ember.arange(12.0).reshape(6, 2).requires_grad_()
    offsets = ember.tensor([0, 2, 3, 6])
    nt = ember.nested.nested_tensor_from_jagged(values, offsets)
    assert nt.offsets() is offsets and not nt.is_leaf
    assert [c.shape[0] for c in nt.unbind()] == [2, 1, 3]
    again = ember.nested.nested_tensor_from_jagged(values * 2, offsets)
    assert again.shape == nt.shape  # one offsets tensor: one nested int
    (nt + again).values().sum().backward()
    np.testing.assert_array_equal(values.grad.numpy(), np.full((6, 2), 3.0))


def test_nested_tensor_from_jagged_with_holes_and_lengths_only():
    values = ember.arange(12.0).reshape(6, 2)
    nt = ember.nested.nested_tensor_from_jagged(
        values, ember.tensor([0, 2, 3, 6]), ember.tensor([1, 1, 2])
    )
    assert [c.tolist() for c in nt.unbind()] == [
        [[0.0, 1.0]],
        [[4.0, 5.0]],
        [[6.0, 7.0], [8.0, 9.0]],
    ]
    assert not nt.is_contiguous() and nt.lengths().tolist() == [1, 1, 2]
    from_lengths = ember.nested.nested_tensor_from_jagged(values, lengths=ember.tensor([2, 4]))
    assert from_lengths.offsets().tolist() == [0, 2, 6]


def test_nested_tensor_from_jagged_jagged_dim():
    values = ember.arange(24.0).reshape(2, 6, 2)
    nt = ember.nested.nested_tensor_from_jagged(values, ember.tensor([0, 4, 6]), jagged_dim=2)
    assert shape_text(nt.shape) == "(2, 2, j, 2)"
    assert nt.unbind()[1].tolist() == values[:, 4:6].tolist()


def test_narrow_jagged_is_a_view_of_the_base():
    base = ember.arange(20.0).reshape(4, 5)
    nt = ember.nested.narrow(
        base, 1, ember.tensor([0, 1, 2, 3]), ember.tensor([2, 2, 1, 1]), layout=ember.jagged
    )
    assert [c.tolist() for c in nt.unbind()] == [[0.0, 1.0], [6.0, 7.0], [12.0], [18.0]]
    assert nt.offsets().tolist() == [0, 6, 12, 18, 19] and not nt.is_contiguous()
    base.mul_(2.0)
    assert nt.unbind()[1].tolist() == [12.0, 14.0]


def test_narrow_strided_copies():
    base = ember.arange(20.0).reshape(4, 5)
    nt = ember.nested.narrow(base, 1, 1, 2)
    assert [c.tolist() for c in nt.unbind()] == [[1.0, 2.0], [6.0, 7.0], [11.0, 12.0], [16.0, 17.0]]


def test_masked_select_gives_one_component_per_row():
    t = ember.arange(6.0).reshape(2, 3)
    nt = ember.nested.masked_select(t, t > 1)
    assert [c.tolist() for c in nt.unbind()] == [[2.0], [3.0, 4.0, 5.0]]


def test_construction_errors():
    with pytest.raises(RuntimeError, match="empty tensor list"):
        ember.nested.nested_tensor([], layout=ember.jagged)
    with pytest.raises(RuntimeError, match="zero-dim tensors"):
        ember.nested.nested_tensor([ember.tensor(1.0)], layout=ember.jagged)
    with pytest.raises(RuntimeError, match="single ragged dimension"):
        ember.nested.nested_tensor([ember.ones(2, 3), ember.ones(4, 4)], layout=ember.jagged)
    with pytest.raises(RuntimeError, match="Found dimension 1 for Tensor at index 1"):
        ember.nested.nested_tensor([ember.ones(2, 3), ember.ones(4)])
    with pytest.raises(RuntimeError, match="unsupported for nested tensors"):
        ember.nested.nested_tensor([ember.ones(2)], layout=ember.sparse_coo)
    with pytest.raises(TypeError, match="Expected first argument to be a tensor"):
        ember.nested.as_nested_tensor([1.0, 2.0])
    with pytest.raises(RuntimeError, match="At least one of offsets or lengths"):
        ember.nested.nested_tensor_from_jagged(ember.ones(3, 2))
    with pytest.raises(ValueError, match="Expected jagged_dim >=1"):
        ember.nested.nested_tensor_from_jagged(ember.ones(3, 2), ember.tensor([0, 3]), jagged_dim=0)
    with pytest.raises(RuntimeError, match="jagged layout only supports dim=1"):
        ember.nested.narrow(ember.ones(3, 4), 0, 0, 1, layout=ember.jagged)


@pytest.mark.parametrize("layout", LAYOUTS)
def test_constructors_match_torch(torch_nested, layout):
    torch = torch_nested
    data = arrays()
    assert_close(nested(ember, data, layout), nested(torch, data, layout))
    assert_close(as_nested(ember, data, layout)[0], as_nested(torch, data, layout)[0])
    dense = np.arange(24.0, dtype=np.float32).reshape(2, 3, 4)
    assert_close(
        ember.nested.as_nested_tensor(ember.tensor(dense), layout=getattr(ember, layout)),
        torch.nested.as_nested_tensor(torch.tensor(dense), layout=getattr(torch, layout)),
    )


def test_from_jagged_narrow_masked_select_match_torch(torch_nested):
    torch = torch_nested
    values = np.arange(12.0, dtype=np.float32).reshape(6, 2)
    for lib_args in ([[0, 2, 3, 6]], [[0, 2, 3, 6], [1, 1, 2]]):
        e = ember.nested.nested_tensor_from_jagged(
            ember.tensor(values), *[ember.tensor(a) for a in lib_args]
        )
        t = torch.nested.nested_tensor_from_jagged(
            torch.tensor(values), *[torch.tensor(a) for a in lib_args]
        )
        assert_close(e, t)
        assert e.is_contiguous() == t.is_contiguous()
    base = np.arange(20.0, dtype=np.float32).reshape(4, 5)
    starts, lengths = [0, 1, 2, 3], [2, 2, 1, 1]
    e = ember.nested.narrow(
        ember.tensor(base), 1, ember.tensor(starts), ember.tensor(lengths), layout=ember.jagged
    )
    t = torch.nested.narrow(
        torch.tensor(base), 1, torch.tensor(starts), torch.tensor(lengths), layout=torch.jagged
    )
    assert_close(e, t)
    assert e.offsets().tolist() == t.offsets().tolist()
    mask = base % 3 == 0
    assert_close(
        ember.nested.masked_select(ember.tensor(base), ember.tensor(mask)),
        torch.nested.masked_select(torch.tensor(base), torch.tensor(mask)),
    )


def test_construction_errors_match_torch(torch_nested):
    torch = torch_nested
    for lib_call in (
        lambda m: m.nested.nested_tensor([], layout=m.jagged),
        lambda m: m.nested.nested_tensor([m.ones(2, 3), m.ones(4, 4)], layout=m.jagged),
        lambda m: m.nested.nested_tensor([m.ones(2, 3), m.ones(4)]),
        lambda m: m.nested.nested_tensor([m.ones(2, 3), m.ones(4)], layout=m.jagged),
        lambda m: m.nested.as_nested_tensor(m.ones(3)),
        lambda m: m.nested.nested_tensor_from_jagged(m.ones(3, 2)),
        lambda m: m.nested.narrow(m.ones(3, 4), 0, 0, 1, layout=m.jagged),
    ):
        raises_like(lambda: lib_call(torch), lambda: lib_call(ember))
