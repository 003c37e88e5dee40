"""ember.ops.aten: the ATen operators reached by name (torch.ops.aten.<op>.default)."""

import numpy as np
import pytest

import ember


@pytest.mark.parametrize("shape", [(2, 3, 5, 6), (3, 5, 6)])
def test_max_pool2d_with_indices_backward_matches_torch(shape):
    torch = pytest.importorskip("torch")
    values = np.random.default_rng(0).standard_normal(shape)
    geometry = ([3, 3], [2, 1], [1, 0], [1, 1], True)
    results = {}
    for lib in (torch, ember):
        x = lib.tensor(values, requires_grad=True)
        out, indices = lib.nn.functional.max_pool2d(x, 3, (2, 1), (1, 0), 1, True, True)
        g = lib.tensor(np.arange(out.numel(), dtype=np.float64).reshape(tuple(out.shape)))
        g.requires_grad_(True)
        spread = lib.ops.aten.max_pool2d_with_indices_backward.default(g, x, *geometry, indices)
        (gg,) = lib.autograd.grad(spread, g, lib.ones_like(spread) * 2)
        results[lib] = spread.detach().numpy(), gg.numpy()
    np.testing.assert_allclose(results[ember][0], results[torch][0])
    np.testing.assert_allclose(results[ember][1], results[torch][1])


def test_max_pool2d_with_indices_backward_gives_the_input_a_zero_gradient():
    x = ember.randn(1, 1, 4, 4, requires_grad=True)
    out, indices = ember.nn.functional.max_pool2d(x, 2, return_indices=True)
    spread = ember.ops.aten.max_pool2d_with_indices_backward(
        ember.ones_like(out), x, [2, 2], [2, 2], [0, 0], [1, 1], False, indices
    )
    assert spread.sum().item() == 4.0
    (gx,) = ember.autograd.grad(spread.sum(), x)
    assert gx.shape == x.shape and not gx.any().item()
