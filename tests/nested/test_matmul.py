"""matmul/@, bmm, F.linear and nn.Linear with nested tensors."""

import numpy as np
import pytest

import ember

from .helpers import arrays, as_nested, assert_close, nested, raises_like, shape_text

WEIGHT = np.arange(20.0, dtype=np.float32).reshape(5, 4) / 10  # Linear(4, 5)
BIAS = np.arange(5.0, dtype=np.float32)


@pytest.mark.parametrize("layout", ["strided", "jagged"])
def test_linear_applies_to_every_position(layout):
    data = arrays()
    out = ember.nn.functional.linear(
        nested(ember, data, layout), ember.tensor(WEIGHT), ember.tensor(BIAS)
    )
    assert out.is_nested and out.size(-1) == 5
    for got, a in zip(out.unbind(), data):
        np.testing.assert_allclose(got.numpy(), a @ WEIGHT.T + BIAS, rtol=1e-5, atol=1e-6)


def test_matmul_with_a_dense_matrix_and_with_nested():
    data = arrays()
    nt = nested(ember, data)
    out = nt @ ember.tensor(WEIGHT.T)
    assert shape_text(out.shape) == "(3, j, 5)" and out.shape[1] == nt.shape[1]
    for got, a in zip(out.unbind(), data):
        np.testing.assert_allclose(got.numpy(), a @ WEIGHT.T, rtol=1e-5, atol=1e-6)
    strided = nested(ember, data, "strided")
    gram = ember.matmul(strided, strided.transpose(1, 2))
    assert [c.shape for c in gram.unbind()] == [(2, 2), (3, 3), (1, 1)]
    np.testing.assert_allclose(gram.unbind()[1].numpy(), data[1] @ data[1].T, rtol=1e-5)
    per_position = nt.unflatten(-1, [2, 2]) @ nt.unflatten(-1, [2, 2]).transpose(-1, -2)
    assert per_position.shape[1] == nt.shape[1]
    a = data[2].reshape(1, 2, 2)
    np.testing.assert_allclose(
        per_position.unbind()[2].numpy(), a @ a.transpose(0, 2, 1), rtol=1e-5
    )
    batched = ember.bmm(nt, ember.ones(3, 4, 2))
    np.testing.assert_allclose(batched.unbind()[0].numpy(), data[0] @ np.ones((4, 2)), rtol=1e-5)


def test_linear_module_gradients_reach_weights_and_components():
    ember.manual_seed(0)
    layer = ember.nn.Linear(4, 5)
    nt, leaves = as_nested(ember, arrays())
    layer(nt).relu().values().sum().backward()
    w = layer.weight.detach().numpy()
    b = layer.bias.detach().numpy()
    x = np.concatenate(arrays())
    active = (x @ w.T + b > 0).astype(np.float32)
    np.testing.assert_allclose(layer.weight.grad.numpy(), active.T @ x, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(layer.bias.grad.numpy(), active.sum(0), rtol=1e-5)
    np.testing.assert_allclose(leaves[0].grad.numpy(), active[:2] @ w, rtol=1e-5, atol=1e-6)


def test_matmul_errors():
    nt = nested(ember, arrays())
    with pytest.raises(RuntimeError, match="matmul\\(\\): not supported between inputs"):
        nt @ nt.transpose(1, 2)  # a result ragged in two dimensions
    with pytest.raises(RuntimeError, match="dense tensor times a NestedTensor"):
        ember.matmul(ember.ones(2, 3), nt)
    with pytest.raises(RuntimeError, match="ragged dimension is the last"):
        ember.nn.functional.linear(nt.transpose(1, 2), ember.ones(5, 4))


@pytest.mark.parametrize("layout", ["strided", "jagged"])
def test_linear_relu_and_matmul_gradients_match_torch(torch_nested, layout):
    torch = torch_nested
    results = {}
    for lib in (ember, torch):
        nt, leaves = as_nested(lib, arrays(), layout)
        weight = lib.tensor(WEIGHT, requires_grad=True)
        bias = lib.tensor(BIAS, requires_grad=True)
        hidden = lib.nn.functional.linear(nt, weight, bias)
        if layout == "jagged":
            mixed = hidden @ lib.tensor(WEIGHT)  # (3, j, 5) @ (5, 4)
            batched = lib.bmm(nt, lib.ones(3, 4, 2))
        else:
            mixed = lib.matmul(hidden, hidden.transpose(1, 2))
            batched = lib.bmm(nt, nt.transpose(1, 2))
        outs = [hidden, mixed, batched]
        sum(o.to_padded_tensor(0.0).sum() for o in outs).backward()
        results[lib] = (outs, weight.grad, bias.grad, [leaf.grad for leaf in leaves])
    assert_close(results[ember], results[torch], atol=1e-4)


def test_jagged_nested_times_nested_per_position_matches_torch(torch_nested):
    torch = torch_nested
    results = {}
    for lib in (ember, torch):
        nt, leaves = as_nested(lib, arrays())
        x = nt.unflatten(-1, [2, 2])  # (3, j, 2, 2): a 2x2 matrix at every position
        out = x @ x.transpose(-1, -2)
        out.values().sum().backward()
        results[lib] = (out, [leaf.grad for leaf in leaves])
    assert shape_text(results[ember][0].shape) == shape_text(results[torch][0].shape)
    assert_close(results[ember], results[torch])


def test_matmul_error_matches_torch(torch_nested):
    torch = torch_nested
    raises_like(
        lambda: (lambda x: x @ x.transpose(1, 2))(nested(torch, arrays())),
        lambda: (lambda x: x @ x.transpose(1, 2))(nested(ember, arrays())),
    )
