import numpy as np
import pytest

import ember
from tests.helpers import arrays_for, check_gradients, compare_with_torch

X4 = arrays_for([(2, 4, 6, 5)], -1, 1)[0]
W4 = arrays_for([(6, 2, 3, 2)], -1, 1, seed=1)[0]
B6 = arrays_for([(6,)], -1, 1, seed=2)[0]

CONVS = {
    "conv2d": lambda m, x, w, b: m.nn.functional.conv2d(
        x, w, b, stride=(2, 1), padding=1, dilation=(1, 2), groups=2
    ),
    "conv2d_same": lambda m, x, w, b: m.nn.functional.conv2d(x, w, None, padding="same", groups=2),
    "conv2d_valid": lambda m, x, w, b: m.nn.functional.conv2d(
        x[:1, :2], w[:, :1].sum(1, True).repeat(1, 2, 1, 1), b, padding="valid"
    ),
    "conv1d": lambda m, x, w, b: m.nn.functional.conv1d(
        x[:, :, 0], w[:, :, 0], b, stride=2, padding=1, groups=2
    ),
    "conv_transpose2d": lambda m, x, w, b: m.nn.functional.conv_transpose2d(
        x, w.reshape(4, 3, 3, 2), b[:3], stride=2, padding=1, output_padding=1
    ),
    "conv_transpose2d_groups": lambda m, x, w, b: m.nn.functional.conv_transpose2d(
        x, w.reshape(4, 3, 3, 2), None, stride=(1, 2), groups=2, dilation=(2, 1)
    ),
    "unfold_fold": lambda m, x, w, b: m.nn.functional.fold(
        m.nn.functional.unfold(x, (2, 3), padding=1, stride=(1, 2)),
        tuple(x.shape[2:]),
        (2, 3),
        padding=1,
        stride=(1, 2),
    ),
}


@pytest.mark.parametrize("name", sorted(CONVS))
def test_convolutions_gradcheck_and_torch(name):
    fn = CONVS[name]
    small = [X4[:1, :, :4, :4], W4, B6]
    check_gradients(fn, small)
    compare_with_torch(fn, [X4, W4, B6])


POOLS = {
    "max2d": lambda m, x: m.nn.functional.max_pool2d(x, 2),
    "max2d_full": lambda m, x: m.nn.functional.max_pool2d(
        x, (3, 2), (2, 1), 1, (1, 2), ceil_mode=True
    ),
    "max2d_indices": lambda m, x: m.nn.functional.max_pool2d(
        x, 2, return_indices=True, ceil_mode=True
    ),
    "max1d": lambda m, x: m.nn.functional.max_pool1d(x[:, :, 0], 3, 2, 1),
    "avg2d": lambda m, x: m.nn.functional.avg_pool2d(x, 3, 2, 1, ceil_mode=True),
    "avg2d_exclude_pad": lambda m, x: m.nn.functional.avg_pool2d(
        x, 2, 1, 1, count_include_pad=False
    ),
    "avg2d_divisor": lambda m, x: m.nn.functional.avg_pool2d(x, 2, divisor_override=3),
    "avg1d": lambda m, x: m.nn.functional.avg_pool1d(x[:, :, 0], 2),
    "adaptive": lambda m, x: m.nn.functional.adaptive_avg_pool2d(x, (4, 3)),
    "adaptive_1": lambda m, x: m.nn.functional.adaptive_avg_pool2d(x, 1),
    "unbatched": lambda m, x: m.nn.functional.max_pool2d(x[0], 2),
}


@pytest.mark.parametrize("name", sorted(POOLS))
def test_pooling_gradcheck_and_torch(name):
    fn = POOLS[name]
    grad_fn = (lambda m, x: fn(m, x)[0]) if name == "max2d_indices" else fn
    check_gradients(grad_fn, [X4])
    compare_with_torch(fn, [X4])


NORMS = {
    "batch_norm_train": lambda m, x, w, b: m.nn.functional.batch_norm(
        x, m.zeros(4, dtype=x.dtype), m.ones(4, dtype=x.dtype), w[:4], b[:4], training=True
    ),
    "batch_norm_eval": lambda m, x, w, b: m.nn.functional.batch_norm(
        x,
        m.tensor([0.1, -0.2, 0.3, 0.0], dtype=x.dtype),
        m.tensor([0.5, 1.5, 1.0, 2.0], dtype=x.dtype),
        w[:4],
        b[:4],
        training=False,
    ),
    "layer_norm": lambda m, x, w, b: m.nn.functional.layer_norm(x, (5,), w[:5], b[:5]),
    "layer_norm_2d": lambda m, x, w, b: m.nn.functional.layer_norm(x, tuple(x.shape[2:])),
    "group_norm": lambda m, x, w, b: m.nn.functional.group_norm(x, 2, w[:4], b[:4]),
}


@pytest.mark.parametrize("name", sorted(NORMS))
def test_normalisation_gradcheck_and_torch(name):
    fn = NORMS[name]
    w, b = arrays_for([(6,), (6,)], 0.5, 1.5, seed=3)
    check_gradients(fn, [X4[:, :, :3, :], w, b], gradgrad=name != "layer_norm_2d")
    compare_with_torch(fn, [X4, w, b])


def _copy_from_torch(e_mod, t_mod):
    e_mod.load_state_dict(
        {k: ember.tensor(v.detach().numpy()) for k, v in t_mod.state_dict().items()}
    )


def test_batchnorm_module_running_stats_and_eval_match_torch(torch_mod):
    x = np.random.default_rng(0).standard_normal((8, 3, 4, 4)).astype(np.float32)
    for momentum in (0.1, None):
        e, t = (
            ember.nn.BatchNorm2d(3, momentum=momentum),
            torch_mod.nn.BatchNorm2d(3, momentum=momentum),
        )
        for _ in range(3):
            ye, yt = e(ember.tensor(x)), t(torch_mod.tensor(x))
            np.testing.assert_allclose(
                ye.detach().numpy(), yt.detach().numpy(), rtol=1e-4, atol=1e-5
            )
        for name in ("running_mean", "running_var"):
            np.testing.assert_allclose(
                getattr(e, name).numpy(), getattr(t, name).numpy(), rtol=1e-5, atol=1e-6
            )
        assert e.num_batches_tracked.item() == 3
        e.eval(), t.eval()
        np.testing.assert_allclose(
            e(ember.tensor(x)).detach().numpy(),
            t(torch_mod.tensor(x)).detach().numpy(),
            rtol=1e-4,
            atol=1e-5,
        )


def test_modules_match_torch_with_copied_weights(torch_mod):
    def build(m):
        return m.nn.Sequential(
            m.nn.Conv2d(1, 4, 3, padding=1),
            m.nn.BatchNorm2d(4),
            m.nn.ReLU(),
            m.nn.MaxPool2d(2),
            m.nn.Conv2d(4, 6, 3, stride=1, padding="same", bias=False),
            m.nn.GroupNorm(2, 6),
            m.nn.AvgPool2d(2),
            m.nn.AdaptiveAvgPool2d((1, 1)),
            m.nn.Flatten(),
            m.nn.LayerNorm(6),
            m.nn.Linear(6, 3),
        )

    t = build(torch_mod)
    e = build(ember)
    _copy_from_torch(e, t)
    x = np.random.default_rng(0).standard_normal((2, 1, 8, 8)).astype(np.float32)
    ye, yt = e(ember.tensor(x)), t(torch_mod.tensor(x))
    np.testing.assert_allclose(ye.detach().numpy(), yt.detach().numpy(), rtol=1e-4, atol=1e-5)
    ye.pow(2).sum().backward()
    yt.pow(2).sum().backward()
    for (name, pe), pt in zip(e.named_parameters(), t.parameters()):
        np.testing.assert_allclose(
            pe.grad.numpy(), pt.grad.numpy(), rtol=1e-3, atol=1e-4, err_msg=name
        )
    assert repr(e) == repr(t)


def test_embedding_padding_row_gets_no_gradient(torch_mod):
    def run(m):
        m.manual_seed(0)
        emb = m.nn.Embedding(5, 3, padding_idx=1)
        with m.no_grad():
            emb.weight.copy_(m.arange(15.0).reshape(5, 3))
        out = emb(m.tensor([[0, 1, 1], [4, 0, 2]]))
        (out * out).sum().backward()
        return out.detach().numpy(), emb.weight.grad.numpy(), repr(emb)

    e, t = run(ember), run(torch_mod)
    np.testing.assert_allclose(e[0], t[0])
    np.testing.assert_allclose(e[1], t[1])
    assert e[2] == t[2]
    assert ember.nn.Embedding(4, 2, padding_idx=0).weight[0].tolist() == [0.0, 0.0]


def test_conv_reprs_and_errors_match_torch(torch_mod):
    for make in (
        lambda m: m.nn.Conv2d(
            3, 8, 3, stride=2, padding=1, dilation=2, groups=1, bias=False, padding_mode="reflect"
        ),
        lambda m: m.nn.Conv1d(2, 4, 5, padding="same"),
        lambda m: m.nn.ConvTranspose2d(4, 2, 3, stride=2, output_padding=1),
        lambda m: m.nn.MaxPool1d(3),
        lambda m: m.nn.AvgPool1d(2),
        lambda m: m.nn.LayerNorm([3, 4]),
        lambda m: m.nn.GroupNorm(2, 4),
        lambda m: m.nn.BatchNorm1d(5),
    ):
        assert repr(make(ember)) == repr(make(torch_mod))
    for m in (ember, torch_mod):
        with pytest.raises(RuntimeError, match="to have 4 channels, but got 3 channels"):
            m.nn.functional.conv2d(m.ones(1, 3, 5, 5), m.ones(2, 4, 3, 3))
        with pytest.raises(ValueError, match="expected 4D input"):
            m.nn.BatchNorm2d(3)(m.ones(2, 3))


def test_padding_modes_in_conv_match_torch(torch_mod):
    for mode in ("reflect", "replicate", "circular"):
        t = torch_mod.nn.Conv2d(2, 3, 3, padding=1, padding_mode=mode)
        e = ember.nn.Conv2d(2, 3, 3, padding=1, padding_mode=mode)
        _copy_from_torch(e, t)
        x = np.random.default_rng(1).standard_normal((1, 2, 5, 4)).astype(np.float32)
        np.testing.assert_allclose(
            e(ember.tensor(x)).detach().numpy(),
            t(torch_mod.tensor(x)).detach().numpy(),
            rtol=1e-5,
            atol=1e-6,
        )


def test_tiling_max_pool_odd_sizes_ties_and_nan_match_torch(torch_mod):
    # odd sizes leave a last row/column out; ties send the gradient to the first maximum;
    # a NaN wins its window (the general path handles it)
    base = np.random.default_rng(1).standard_normal((2, 3, 7, 5))
    tied = base.copy()
    tied[:, :, :2, :2] = 1.5
    with_nan = base.copy()
    with_nan[0, 1, 3, 2] = np.nan
    for data in (base, tied, with_nan):
        xe = ember.tensor(data, requires_grad=True)
        xt = torch_mod.tensor(data, requires_grad=True)
        ye = ember.nn.functional.max_pool2d(xe, 2)
        yt = torch_mod.nn.functional.max_pool2d(xt, 2)
        np.testing.assert_array_equal(ye.detach().numpy(), yt.detach().numpy())
        weights = np.arange(ye.numel(), dtype=np.float64).reshape(ye.shape)
        (ye * ember.tensor(weights)).sum().backward()
        (yt * torch_mod.tensor(weights)).sum().backward()
        np.testing.assert_array_equal(xe.grad.numpy(), xt.grad.numpy())


def test_tiling_max_pool_second_order():
    x = ember.tensor(np.random.default_rng(2).standard_normal((1, 2, 5, 4)), requires_grad=True)
    fn = lambda t: ember.nn.functional.max_pool2d(t, 2)
    assert fn(x).grad_fn.name() == "MaxPool2DWithIndicesBackward0"
    assert ember.autograd.gradcheck(fn, (x,))
    assert ember.autograd.gradgradcheck(fn, (x,))


@pytest.mark.parametrize(
    "make",
    [
        lambda m: m.nn.functional.conv2d(
            m.ones(1, 2, 5, 5), m.ones(3, 2, 3, 3, requires_grad=True)
        ),
        lambda m: m.nn.functional.conv1d(m.ones(1, 2, 5), m.ones(3, 2, 2, requires_grad=True)),
        lambda m: m.nn.functional.conv_transpose2d(
            m.ones(1, 2, 3, 3, requires_grad=True), m.ones(2, 3, 2, 2)
        ),
        lambda m: m.nn.Conv2d(2, 4, 3, groups=2)(m.ones(1, 2, 5, 5)),
    ],
)
def test_convolution_records_one_node_named_as_torch(torch_mod, make):
    assert make(ember).grad_fn.name() == make(torch_mod).grad_fn.name() == "ConvolutionBackward0"


def test_convolution_node_frees_and_retains_its_graph_as_torch():
    x = ember.randn(2, 3, 6, 6, requires_grad=True)
    w = ember.randn(4, 3, 3, 3, requires_grad=True)
    y = ember.nn.functional.conv2d(x, w, padding=1)
    y.sum().backward(retain_graph=True)
    y.sum().backward()
    np.testing.assert_allclose(
        w.grad.numpy(),
        2 * ember.autograd.grad(ember.nn.functional.conv2d(x, w, padding=1).sum(), w)[0].numpy(),
        rtol=1e-5,
    )
    with pytest.raises(RuntimeError, match="backward through the graph a second time"):
        y.sum().backward()
