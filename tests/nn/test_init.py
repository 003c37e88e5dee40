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


ALL_GAINS = [
    "linear",
    "conv1d",
    "conv3d",
    "conv_transpose1d",
    "conv_transpose2d",
    "conv_transpose3d",
    "sigmoid",
    "tanh",
    "relu",
    "leaky_relu",
    "selu",
]


def test_calculate_gain_every_nonlinearity_and_errors_match_torch(torch_mod):
    for name in ALL_GAINS:
        assert init.calculate_gain(name) == torch_mod.nn.init.calculate_gain(name), name
    assert init.calculate_gain("leaky_relu", 3) == torch_mod.nn.init.calculate_gain("leaky_relu", 3)
    for lib in (init, torch_mod.nn.init):
        with pytest.raises(ValueError, match="Unsupported nonlinearity foo"):
            lib.calculate_gain("foo")
        with pytest.raises(ValueError, match="negative_slope True not a valid number"):
            lib.calculate_gain("leaky_relu", True)


@pytest.mark.parametrize(
    "shape,groups", [((4, 4, 3), 1), ((6, 2, 3, 3), 2), ((3, 5, 2, 3, 1), 1), ((4, 2, 3), 4)]
)
def test_dirac_is_exactly_torchs(shape, groups, torch_mod):
    e = init.dirac_(ember.empty(*shape), groups=groups)
    t = torch_mod.nn.init.dirac_(torch_mod.empty(*shape), groups=groups)
    np.testing.assert_array_equal(e.numpy(), t.numpy())
    np.testing.assert_array_equal(init.eye_(ember.empty(3, 5)).numpy(), np.eye(3, 5))


def test_sparse_zeroes_the_same_fraction_of_every_column():
    w = init.sparse_(ember.empty(20, 30), sparsity=0.25, std=0.5).numpy()
    assert ((w == 0).sum(0) == 5).all()
    assert w[w != 0].std() == pytest.approx(0.5, rel=0.15)


def test_trunc_normal_matches_the_truncated_distribution():
    from scipy.stats import truncnorm

    values = init.trunc_normal_(ember.empty(40000), mean=1.0, std=2.0, a=0.0, b=3.0).numpy()
    dist = truncnorm((0.0 - 1.0) / 2.0, (3.0 - 1.0) / 2.0, loc=1.0, scale=2.0)
    assert 0.0 <= values.min() and values.max() <= 3.0
    assert values.mean() == pytest.approx(dist.mean(), abs=0.02)
    assert values.std() == pytest.approx(dist.std(), abs=0.02)
    # far in the tail, where redrawing would hardly ever land: still inside [a, b], with a warning
    with pytest.warns(UserWarning, match="mean is more than 2 std from"):
        tail = init.trunc_normal_(ember.empty(1000), a=6.0, b=7.0).numpy()
    assert (tail >= 6.0).all() and (tail <= 7.0).all()


def test_orthogonal_of_a_conv_weight_and_generators():
    w = init.orthogonal_(ember.empty(4, 2, 3, 3), gain=0.5).numpy().reshape(4, 18)
    np.testing.assert_allclose(w @ w.T, 0.25 * np.eye(4), atol=1e-6)
    draws = []
    for _ in range(2):
        g = ember.Generator().manual_seed(7)
        draws.append(
            [
                f(ember.empty(5, 4), generator=g).numpy()
                for f in (init.uniform_, init.normal_, init.xavier_uniform_, init.orthogonal_)
            ]
        )
    for a, b in zip(*draws):
        np.testing.assert_array_equal(a, b)
    assert not np.array_equal(draws[0][0], draws[0][1])


def test_deprecated_aliases_warn_like_torch(torch_mod):
    for old in ("uniform", "normal", "xavier_uniform", "kaiming_normal", "orthogonal", "sparse"):
        args = (0.5,) if old == "sparse" else ()
        message = f"`nn.init.{old}` is now deprecated in favor of `nn.init.{old}_`"
        with pytest.warns(FutureWarning, match=message):
            out = getattr(init, old)(ember.empty(6, 4), *args)
        assert out.shape == (6, 4)
    with pytest.warns(FutureWarning, match="constant"):
        assert init.constant(ember.empty(2), 3.0).tolist() == [3.0, 3.0]


def test_init_errors_match_torch(torch_mod):
    for lib, mk in ((init, ember.empty), (torch_mod.nn.init, torch_mod.empty)):
        cases = [
            (lambda: lib.sparse_(mk(2, 3, 4), 0.1), "Only tensors with 2 dimensions"),
            (lambda: lib.dirac_(mk(3, 3)), "Only tensors with 3, 4, or 5 dimensions"),
            (lambda: lib.dirac_(mk(3, 3, 3), groups=2), "dim 0 must be divisible by groups"),
            (lambda: lib.eye_(mk(3)), "Only tensors with 2 dimensions"),
            (lambda: lib.orthogonal_(mk(3)), "Only tensors with 2 or more dimensions"),
            (lambda: lib.kaiming_normal_(mk(3, 4), mode="fan_avg"), r"Mode fan_avg not supported"),
            (lambda: lib.xavier_normal_(mk(3)), "Fan in and fan out can not be computed"),
        ]
        for call, phrase in cases:
            with pytest.raises(ValueError, match=phrase):
                call()
        with pytest.warns(UserWarning, match="Initializing zero-element tensors is a no-op"):
            lib.kaiming_uniform_(mk(0, 3))
