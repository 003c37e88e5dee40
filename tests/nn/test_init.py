import math

import numpy as np
import pytest

import ember
from ember.nn import init


@pytest.mark.parametrize(
    "nonlinearity,param",
    [
        ("linear", None),
        ("conv2d", None),
        ("sigmoid", None),
        ("tanh", None),
        ("relu", None),
        ("leaky_relu", None),
        ("leaky_relu", 0.2),
        ("selu", None),
    ],
)
def test_calculate_gain_matches_torch(nonlinearity, param, torch_mod):
    assert init.calculate_gain(nonlinearity, param) == pytest.approx(
        torch_mod.nn.init.calculate_gain(nonlinearity, param)
    )


def _stats(t):
    a = t.detach().numpy().ravel()
    return a.min(), a.max(), a.mean(), a.std()


def test_uniform_normal_constant_eye():
    ember.manual_seed(0)
    t = ember.empty(200, 300)
    lo, hi, mean, _ = _stats(init.uniform_(t, -2, 3))
    assert -2 <= lo and hi < 3 and mean == pytest.approx(0.5, abs=0.02)
    _, _, mean, std = _stats(init.normal_(t, 1.0, 0.5))
    assert mean == pytest.approx(1.0, abs=0.01) and std == pytest.approx(0.5, rel=0.02)
    assert init.constant_(t, 0.3).detach().numpy().max() == pytest.approx(0.3)
    assert init.zeros_(t).sum().item() == 0 and init.ones_(t).mean().item() == 1
    np.testing.assert_array_equal(init.eye_(ember.empty(3, 4)).detach().numpy(), np.eye(3, 4))


@pytest.mark.parametrize("shape", [(256, 128), (64, 32, 3, 3)])
def test_fan_based_initialisers_have_torch_scales(shape, torch_mod):
    fan_in = shape[1] * int(np.prod(shape[2:]))
    fan_out = shape[0] * int(np.prod(shape[2:]))
    t = ember.empty(*shape)
    cases = [
        (lambda: init.xavier_uniform_(t, gain=2.0), 2.0 * math.sqrt(2.0 / (fan_in + fan_out))),
        (lambda: init.xavier_normal_(t), math.sqrt(2.0 / (fan_in + fan_out))),
        (lambda: init.kaiming_uniform_(t, a=0, nonlinearity="relu"), math.sqrt(2.0 / fan_in)),
        (
            lambda: init.kaiming_normal_(t, mode="fan_out", nonlinearity="relu"),
            math.sqrt(2.0 / fan_out),
        ),
    ]
    for fill, std in cases:
        assert _stats(fill())[3] == pytest.approx(std, rel=0.05)
    assert init._calculate_fan_in_and_fan_out(t) == (fan_in, fan_out)
    assert torch_mod.nn.init._calculate_fan_in_and_fan_out(torch_mod.empty(*shape)) == (
        fan_in,
        fan_out,
    )


def test_trunc_normal_and_orthogonal():
    ember.manual_seed(1)
    t = init.trunc_normal_(ember.empty(10000), mean=0.0, std=1.0, a=-0.5, b=1.0)
    lo, hi, _, _ = _stats(t)
    assert -0.5 <= lo and hi <= 1.0
    q = init.orthogonal_(ember.empty(6, 4), gain=2.0).detach().numpy()
    np.testing.assert_allclose(q.T @ q, 4 * np.eye(4), atol=1e-5)
    q = init.orthogonal_(ember.empty(3, 5)).detach().numpy()
    np.testing.assert_allclose(q @ q.T, np.eye(3), atol=1e-5)


def test_layers_are_initialised_like_torch(torch_mod):
    cases = [
        (lambda m: m.nn.Linear(100, 50), {"weight": 1 / math.sqrt(3) / 10, "bias": None}),
        (lambda m: m.nn.Conv2d(8, 16, 3), {"weight": 1 / math.sqrt(3) / math.sqrt(72)}),
        (lambda m: m.nn.Embedding(50, 40), {"weight": 1.0}),
        (lambda m: m.nn.LSTM(20, 30), {"weight_ih_l0": 1 / math.sqrt(30) / math.sqrt(3)}),
    ]
    for make, expected in cases:
        e, t = make(ember), make(torch_mod)
        for name, std in expected.items():
            pe, pt = dict(e.named_parameters())[name], dict(t.named_parameters())[name]
            assert pe.shape == tuple(pt.shape)
            se, st = _stats(pe)[3], pt.detach().numpy().std()
            assert se == pytest.approx(st, rel=0.15)
            if std is not None:
                assert se == pytest.approx(std, rel=0.15)
    bn_e, bn_t = ember.nn.BatchNorm2d(3), torch_mod.nn.BatchNorm2d(3)
    for k, v in bn_t.state_dict().items():
        np.testing.assert_array_equal(bn_e.state_dict()[k].numpy(), v.numpy())
    mha_e = ember.nn.MultiheadAttention(8, 2)
    assert mha_e.in_proj_bias.abs().sum().item() == 0
