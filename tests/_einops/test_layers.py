"""einops' layers as ember modules (ember._einops.layers), as einops.layers.torch for torch."""

from __future__ import annotations

import importlib.util

import numpy as np
import pytest

import ember

einops = pytest.importorskip("einops")
from einops.layers.ember import EinMix, Rearrange, Reduce  # noqa: E402

TORCH = importlib.util.find_spec("torch") is not None


def test_without_torch_einops_layers_torch_are_embers():
    if TORCH:
        pytest.skip("with PyTorch installed, einops.layers.torch stays PyTorch's")
    from einops.layers import torch as layers

    assert layers.Rearrange is Rearrange and issubclass(layers.EinMix, ember.nn.Module)


def _model(nn, layers):
    return nn.Sequential(
        nn.Conv2d(1, 4, 3, padding=1),
        layers.Reduce("b c (h 2) (w 2) -> b c h w", "max"),
        layers.Rearrange("b c h w -> b (c h w)"),
        nn.Linear(4 * 4 * 4, 5),
        layers.Rearrange("b (g d) -> b g d", g=1),
        layers.EinMix("b g d -> b g e", weight_shape="d e", bias_shape="e", d=5, e=3),
    )


def test_a_model_with_einops_layers_matches_torch(torch_mod):
    from einops.layers import torch as torch_layers

    theirs = _model(torch_mod.nn, torch_layers)
    from einops.layers import ember as ember_layers

    ours = _model(ember.nn, ember_layers)
    state = {k: ember.tensor(v.detach().numpy()) for k, v in theirs.state_dict().items()}
    ours.load_state_dict(state)
    x = np.random.default_rng(0).standard_normal((2, 1, 8, 8)).astype(np.float32)
    out, expected = ours(ember.tensor(x)), theirs(torch_mod.tensor(x))
    tolerance = {"rtol": 1e-4, "atol": 1e-5}
    np.testing.assert_allclose(out.detach().numpy(), expected.detach().numpy(), **tolerance)
    out.square().sum().backward()
    expected.square().sum().backward()
    for (name, p), q in zip(ours.named_parameters(), theirs.parameters()):
        np.testing.assert_allclose(p.grad.numpy(), q.grad.numpy(), **tolerance, err_msg=name)


def test_layers_train_and_print_as_einops_layers():
    from einops.layers import ember as layers

    model = _model(ember.nn, layers)
    assert "Rearrange('b c h w -> b (c h w)')" in repr(model)
    assert "Reduce('b c (h 2) (w 2) -> b c h w', 'max')" in repr(model)
    names = [name for name, _ in model.named_parameters()]
    assert "5.weight" in names and "5.bias" in names
    optimizer = ember.optim.Adam(model.parameters(), lr=1e-2)
    x, y = ember.randn(8, 1, 8, 8), ember.randn(8, 1, 3)
    losses = []
    for _ in range(20):
        optimizer.zero_grad()
        loss = ember.nn.functional.mse_loss(model(x), y)
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    assert losses[-1] < 0.5 * losses[0]


def test_a_layer_on_a_wrong_rank_fails_as_einops_torch_layer():
    with pytest.raises(KeyError):  # einops' layers look the recipe up by rank, torch's too
        Rearrange("b c h w -> b (c h w)")(ember.zeros(2, 3))
    with pytest.raises(einops.EinopsError, match="Error while preparing"):
        Rearrange("b c -> b d")
    assert tuple(Reduce("b n -> b", "sum")(ember.ones(2, 3)).shape) == (2,)
    mix = EinMix("b n -> b m", weight_shape="n m", n=3, m=4)
    assert tuple(mix(ember.ones(2, 3)).shape) == (2, 4)
