"""Pointwise losses on 0-d tensors: values, gradients and gradcheck, and against torch."""

import numpy as np
import pytest

import ember

ZERO_DIM_LOSSES = [
    "mse_loss",
    "l1_loss",
    "smooth_l1_loss",
    "huber_loss",
    "soft_margin_loss",
    "binary_cross_entropy",
    "binary_cross_entropy_with_logits",
]


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("name", ZERO_DIM_LOSSES)
def test_pointwise_losses_take_zero_dim_tensors(name, reduction):
    # arithmetic on 0-d NumPy arrays gives NumPy scalars, which the losses once failed on
    x = ember.tensor(0.3, dtype=ember.float64, requires_grad=True)
    y = ember.tensor(0.5, dtype=ember.float64)
    loss = getattr(ember.nn.functional, name)(x, y, reduction=reduction)
    assert loss.shape == () and loss.dtype == ember.float64
    loss.backward()
    assert x.grad.shape == ()
    assert ember.autograd.gradcheck(
        lambda a: getattr(ember.nn.functional, name)(a, y, reduction=reduction), (x,)
    )


@pytest.mark.parametrize("name", ZERO_DIM_LOSSES)
def test_zero_dim_losses_match_torch(name, torch_mod):
    results = []
    for lib in (ember, torch_mod):
        x = lib.tensor(0.3, dtype=lib.float64, requires_grad=True)
        loss = getattr(lib.nn.functional, name)(x, lib.tensor(0.5, dtype=lib.float64))
        loss.backward()
        results.append((loss.item(), x.grad.item()))
    np.testing.assert_allclose(results[0], results[1], rtol=1e-12)
