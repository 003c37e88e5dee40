"""Pointwise ops on nested tensors: unary, binary with nested/dense/scalar, conversions."""

import numpy as np
import pytest

import ember
import ember.nn.functional as F

from .helpers import arrays, as_nested, assert_close, nested, raises_like

UNARY = {
    "relu": lambda m, x: m.relu(x),
    "F.relu": lambda m, x: m.nn.functional.relu(x),
    "gelu": lambda m, x: m.nn.functional.gelu(x),
    "gelu_tanh": lambda m, x: m.nn.functional.gelu(x, approximate="tanh"),
    "sigmoid": lambda m, x: m.sigmoid(x),
    "tanh": lambda m, x: x.tanh(),
    "exp": lambda m, x: m.exp(x),
    "abs": lambda m, x: abs(x),
    "neg": lambda m, x: -x,
    "silu": lambda m, x: m.nn.functional.silu(x),
    "sin": lambda m, x: m.sin(x),
    "cos": lambda m, x: x.cos(),
    "sqrt": lambda m, x: m.sqrt(x.abs() + 1),
    "leaky_relu": lambda m, x: m.nn.functional.leaky_relu(x, 0.2),
    "ReLU module": lambda m, x: m.nn.ReLU()(x),
    "dropout eval": lambda m, x: m.nn.functional.dropout(x, 0.5, training=False),
}
BINARY = {
    "x * 2": lambda m, x, y: x * 2,
    "2 * x": lambda m, x, y: 2 * x,
    "x + 1": lambda m, x, y: x + 1,
    "1 - x": lambda m, x, y: 1 - x,
    "x / 4": lambda m, x, y: x / 4,
    "x ** 2": lambda m, x, y: x**2,
    "x * y": lambda m, x, y: x * y,
    "x + y": lambda m, x, y: x + y,
    "x - y": lambda m, x, y: x - y,
    "x / y": lambda m, x, y: x / (y.abs() + 1),
    "add alpha": lambda m, x, y: m.add(x, y, alpha=2),
    "maximum": lambda m, x, y: m.maximum(x, y),
}


def _pair(lib, layout):
    x, leaves = as_nested(lib, arrays(seed=0), layout)
    y = x * 0.5 + 0.25  # the same structure (same offsets for jagged)
    return x, y, leaves


@pytest.mark.parametrize("name", UNARY)
def test_unary_equals_the_op_on_each_component(name):
    data = arrays()
    out = UNARY[name](ember, nested(ember, data))
    assert out.is_nested and out.layout == ember.jagged
    for got, a in zip(out.unbind(), data):
        want = UNARY[name](ember, ember.tensor(a))
        np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-6)


@pytest.mark.parametrize("name", BINARY)
@pytest.mark.parametrize("layout", ["strided", "jagged"])
def test_binary_equals_the_op_on_each_component(name, layout):
    x, y, _ = _pair(ember, layout)
    out = BINARY[name](ember, x, y)
    for got, xc, yc in zip(out.unbind(), x.unbind(), y.unbind()):
        np.testing.assert_allclose(
            got.detach().numpy(), BINARY[name](ember, xc, yc).detach().numpy()
        )


def test_dense_operand_broadcasts_over_the_values():
    x = nested(ember, arrays())
    scale = ember.arange(4.0)
    for got, a in zip((x * scale).unbind(), arrays()):
        np.testing.assert_allclose(got.numpy(), a * np.arange(4.0))
    per_item = ember.tensor([1.0, 2.0, 3.0]).reshape(3, 1, 1)
    for i, got in enumerate((per_item + x).unbind()):
        np.testing.assert_allclose(got.numpy(), arrays()[i] + i + 1)


def test_mismatched_structures_raise():
    x, y = nested(ember, arrays()), nested(ember, arrays())
    with pytest.raises(RuntimeError, match="cannot call binary pointwise function add.Tensor"):
        x + y
    s1 = nested(ember, arrays(), "strided")
    s2 = nested(ember, arrays(shapes=[(2, 4), (1, 4), (3, 4)]), "strided")
    with pytest.raises(RuntimeError, match="does not support broadcasting"):
        s1 * s2
    with pytest.raises(RuntimeError, match="cannot call binary pointwise function mul"):
        x * ember.ones(3, 3, 4)


def test_in_place_ops_write_the_values():
    x = nested(ember, arrays())
    x.mul_(0.0).add_(1.0)
    assert all(c.tolist() == np.ones(c.shape).tolist() for c in x.unbind())
    F.relu(x - 2, inplace=False)
    y = x - 2
    assert F.relu(y, inplace=True) is y and y.values().abs().sum().item() == 0.0


def test_conversions_keep_the_structure():
    x = nested(ember, arrays())
    for out in (x.to(ember.float64), x.double(), x.to(dtype=ember.float64)):
        assert out.dtype == ember.float64 and out.shape == x.shape
    assert x.float() is not None and x.to(x).dtype == ember.float32
    z = ember.zeros_like(x)
    assert z.shape == x.shape and z.values().abs().sum().item() == 0.0
    assert (x > 0).dtype == ember.bool and (x > 0).shape == x.shape


@pytest.mark.parametrize("layout", ["strided", "jagged"])
def test_pointwise_values_and_gradients_match_torch(torch_nested, layout):
    torch = torch_nested
    binary, unary = [], []  # torch lacks some (strided: sigmoid, exp, pow...): skipped
    for names, table, arity in ((binary, BINARY, 2), (unary, UNARY, 1)):
        for name, op in table.items():
            x, y, _ = _pair(torch, layout)
            try:
                op(torch, *(x, y)[:arity]).to_padded_tensor(0.0).sum().backward()
                names.append(name)
            except NotImplementedError:
                pass
    assert len(binary) >= 6 and len(unary) >= 3
    results = {}
    for lib in (ember, torch):
        x, y, leaves = _pair(lib, layout)
        outs = [BINARY[n](lib, x, y) for n in binary] + [UNARY[n](lib, x) for n in unary]
        total = sum(o.to_padded_tensor(0.0).sum() for o in outs)
        total.backward()
        results[lib] = (outs, [leaf.grad for leaf in leaves])
    assert_close(results[ember], results[torch], atol=1e-4)


def test_dense_broadcast_and_errors_match_torch(torch_nested):
    torch = torch_nested
    results = {}
    for lib in (ember, torch):
        x, _, leaves = _pair(lib, "jagged")
        w = lib.arange(4.0, requires_grad=True)
        per_item = lib.tensor([1.0, 2.0, 3.0]).reshape(3, 1, 1)
        out = (x * w + per_item).to_padded_tensor(0.0)
        out.sum().backward()
        results[lib] = (out, w.grad, [leaf.grad for leaf in leaves])
    assert_close(results[ember], results[torch])
    raises_like(
        lambda: nested(torch, arrays()) + nested(torch, arrays()),
        lambda: nested(ember, arrays()) + nested(ember, arrays()),
    )
