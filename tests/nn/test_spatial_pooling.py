"""Pooling in 1 to 3 dims: max (plain, adaptive, fractional), average, LP, max_unpool."""

import numpy as np
import pytest

import ember
from tests.helpers import arrays_for, check_gradients, compare_with_torch

X3 = arrays_for([(2, 3, 5, 6, 7)], -1, 1)[0]
SMALL3 = X3[:1, :1, :3, :4, :4]
X1 = X3[:, :, 0, 0]
X2 = X3[:, :, 0]
SAMPLES = np.random.default_rng(3).uniform(0, 1, (2, 3, 3))

F = lambda m: m.nn.functional  # noqa: E731


def _samples(m, x, nd):
    return m.tensor(SAMPLES[: x.shape[0], : x.shape[1], :nd], dtype=x.dtype)


POOLS = {
    "max_pool3d": (lambda m, x: F(m).max_pool3d(x, 2), 3),
    "max_pool3d_full": (
        lambda m, x: F(m).max_pool3d(x, (3, 2, 2), (2, 1, 2), 1, (1, 2, 1), True, True),
        3,
    ),
    "max_pool1d_with_indices": (lambda m, x: F(m).max_pool1d_with_indices(x, 3, 2, 1), 1),
    "avg_pool3d": (lambda m, x: F(m).avg_pool3d(x, 3, 2, 1, ceil_mode=True), 3),
    "avg_pool3d_exclude_pad": (
        lambda m, x: F(m).avg_pool3d(x, 2, 1, 1, count_include_pad=False),
        3,
    ),
    "avg_pool3d_divisor": (lambda m, x: F(m).avg_pool3d(x, (2, 1, 2), divisor_override=3), 3),
    "adaptive_avg_pool1d": (lambda m, x: F(m).adaptive_avg_pool1d(x, 4), 1),
    "adaptive_avg_pool3d": (lambda m, x: F(m).adaptive_avg_pool3d(x, (2, None, 3)), 3),
    "adaptive_max_pool1d": (lambda m, x: F(m).adaptive_max_pool1d(x, 3, return_indices=True), 1),
    "adaptive_max_pool2d": (lambda m, x: F(m).adaptive_max_pool2d(x, (3, 4)), 2),
    "adaptive_max_pool3d": (
        lambda m, x: F(m).adaptive_max_pool3d_with_indices(x, (2, 3, 3)),
        3,
    ),
    "lp_pool1d": (lambda m, x: F(m).lp_pool1d(x, 2, 3, 2), 1),
    "lp_pool2d": (lambda m, x: F(m).lp_pool2d(x.abs() + 0.5, 3.0, (2, 3), ceil_mode=True), 2),
    "lp_pool3d": (lambda m, x: F(m).lp_pool3d(x, 2, 2), 3),
    "fractional_max_pool2d": (
        lambda m, x: F(m).fractional_max_pool2d(
            x, 2, output_size=(3, 2), return_indices=True, _random_samples=_samples(m, x, 2)
        ),
        2,
    ),
    "fractional_max_pool3d": (
        lambda m, x: F(m).fractional_max_pool3d(
            x, (2, 1, 2), output_ratio=0.5, _random_samples=_samples(m, x, 3)
        ),
        3,
    ),
}


def _input(nd, small=False):
    x = SMALL3 if small else X3
    return {1: x[:, :, 0, 0], 2: x[:, :, 0], 3: x}[nd]


@pytest.mark.parametrize("name", sorted(POOLS))
def test_pooling_matches_torch(name):
    fn, nd = POOLS[name]
    compare_with_torch(fn, [_input(nd)])


@pytest.mark.parametrize("name", sorted(POOLS))
def test_pooling_gradcheck(name):
    fn, nd = POOLS[name]
    first = lambda m, x: fn(m, x)[0] if isinstance(fn(m, x), tuple) else fn(m, x)  # noqa: E731
    check_gradients(first, [_input(nd, small=True)], gradgrad=nd < 3)


def test_pooling_unbatched_and_float32_match_torch():
    compare_with_torch(lambda m, x: F(m).max_pool3d(x[0], 2, ceil_mode=True), [X3])
    compare_with_torch(lambda m, x: F(m).adaptive_max_pool2d(x[0], 2), [X2], dtype=np.float32)
    compare_with_torch(
        lambda m, x: F(m).avg_pool3d(x, 2), [X3], dtype=np.float32, atol=1e-6, rtol=1e-5
    )


@pytest.mark.parametrize("nd", [1, 2, 3])
def test_max_unpool_inverts_max_pool_like_torch(torch_mod, nd):
    def crop(a):  # even sizes: every input position lies in some window
        return a[
            :, :, : 2 if a is SMALL3 else 4, : 4 if a is SMALL3 else 6, : 4 if a is SMALL3 else 6
        ][(slice(None), slice(None)) + (0,) * (3 - nd)]

    x = crop(X3)

    def fn(m, x):
        pool = getattr(F(m), f"max_pool{nd}d")
        out, idx = pool(x, 2, stride=2, return_indices=True)
        unpool = getattr(F(m), f"max_unpool{nd}d")
        size = [s + 1 for s in x.shape[2:]] if nd == 2 else None  # within stride of default
        return unpool(out * 2, idx, 2, output_size=size)

    compare_with_torch(fn, [x])
    check_gradients(fn, [crop(SMALL3)])


def test_max_pool_nan_wins_and_ties_pick_first(torch_mod):
    x = np.array([[[[[1.0, 3.0], [3.0, np.nan]], [[0.0, 3.0], [2.0, 1.0]]]]])
    for m in (ember, torch_mod):
        out, idx = F(m).max_pool3d(m.tensor(x), (1, 2, 2), return_indices=True)
        assert np.isnan(out[0, 0, 0, 0, 0].item()) and idx.tolist()[0][0][0][0][0] == 3
        assert out[0, 0, 1, 0, 0].item() == 3.0 and idx.tolist()[0][0][1][0][0] == 5


def test_max_pool_last_nan_wins_and_minus_inf_windows_keep_their_first_element(torch_mod):
    """PyTorch's loop takes every NaN it meets, and starts a window from its first element
    inside the input: one of -inf (next to -inf padding) keeps that element's index."""
    row = np.array([np.nan, 1.0, np.nan, 2.0, -np.inf, -np.inf])
    x = np.stack([row, row[::-1]])[None, None]  # (1, 1, 2, 6)

    def indices(m):
        t, f = m.tensor(x), F(m)
        return [
            f.max_pool2d(t, (1, 4), return_indices=True)[1].tolist(),
            f.max_pool2d(t, 3, 1, 1, return_indices=True)[1].tolist(),
            f.max_pool2d(t, (2, 3), (1, 2), (1, 1), (1, 2), True, True)[1].tolist(),
            f.max_pool1d(t[0], 4, 2, return_indices=True)[1].tolist(),
            f.max_pool3d(t[:, :, None], (1, 1, 4), return_indices=True)[1].tolist(),
            f.adaptive_max_pool2d(t, (1, 2), return_indices=True)[1].tolist(),
            f.max_pool2d(m.tensor(np.full((1, 1, 2, 2), -np.inf)), 3, 1, 1, return_indices=True)[
                1
            ].tolist(),
        ]

    assert indices(ember) == indices(torch_mod)


@pytest.mark.parametrize(
    "cls,args,x",
    [
        ("MaxPool3d", (2, 1, 1), X3),
        ("AvgPool3d", ((2, 3, 2), 2), X3),
        ("AdaptiveAvgPool1d", (3,), X1),
        ("AdaptiveAvgPool3d", ((None, 2, 2),), X3),
        ("AdaptiveMaxPool1d", (2,), X1),
        ("AdaptiveMaxPool2d", ((3, None),), X2),
        ("AdaptiveMaxPool3d", (2, True), X3),
        ("LPPool1d", (2, 2), X1),
        ("LPPool2d", (1, 2, 1), X2),
        ("LPPool3d", (2, (1, 2, 2)), X3),
    ],
)
def test_pooling_modules_match_torch(torch_mod, cls, args, x):
    mine, ref = getattr(ember.nn, cls)(*args), getattr(torch_mod.nn, cls)(*args)
    assert repr(mine) == repr(ref)
    a, b = mine(ember.tensor(x)), ref(torch_mod.tensor(x))
    a, b = (a, b) if isinstance(a, tuple) else ((a,), (b,))
    for u, v in zip(a, b):
        np.testing.assert_allclose(u.numpy(), v.numpy(), atol=1e-12)


def test_fractional_and_unpool_modules():
    pool = ember.nn.FractionalMaxPool2d(2, output_ratio=(0.5, 0.5), return_indices=True)
    out, idx = pool(ember.tensor(X2))
    assert tuple(out.shape) == (2, 3, 3, 3)
    flat = ember.tensor(X2).reshape(2, 3, -1)
    np.testing.assert_array_equal(
        flat.gather(2, idx.reshape(2, 3, -1)).numpy(), out.reshape(2, 3, -1).numpy()
    )
    unpooled = ember.nn.MaxUnpool2d(2)(out, idx, output_size=X2.shape)
    assert tuple(unpooled.shape) == X2.shape and float(unpooled.abs().sum()) == float(
        out.abs().sum()
    )
    with pytest.raises(ValueError, match="requires specifying either an output size"):
        ember.nn.FractionalMaxPool3d(2)


def test_pooling_errors_match_torch(torch_mod):
    for m in (ember, torch_mod):
        with pytest.raises(RuntimeError, match="pad should be at most half"):
            F(m).max_pool3d(m.zeros(1, 1, 4, 4, 4), 2, padding=2)
        with pytest.raises(RuntimeError, match="pad should be at most half"):
            F(m).avg_pool3d(m.zeros(1, 1, 4, 4, 4), 2, padding=2)
        with pytest.raises(RuntimeError, match="Expected shape of indices"):
            F(m).max_unpool2d(m.zeros(1, 1, 2, 2), m.zeros(1, 1, 2, 1, dtype=m.int64), 2)
        with pytest.raises(RuntimeError, match="Found an invalid max index"):
            F(m).max_unpool1d(m.zeros(1, 1, 2), m.tensor([[[0, 9]]]), 2)
        with pytest.raises(ValueError, match="invalid output_size"):
            F(m).max_unpool1d(m.zeros(1, 1, 2), m.zeros(1, 1, 2, dtype=m.int64), 2, output_size=[9])


def test_max_unpool_duplicate_indices_assign_the_last_value_like_torch(torch_mod):
    for m in (ember, torch_mod):
        out1 = F(m).max_unpool1d(m.tensor([[[1.0, 2.0, 3.0, 4.0]]]), m.tensor([[[0, 0, 1, 1]]]), 2)
        assert out1.tolist() == [[[2.0, 4.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0]]]
        values = m.tensor([[[[1.0, 2.0], [3.0, 4.0]]]])
        out2 = F(m).max_unpool2d(values, m.tensor([[[[0, 0], [5, 5]]]]), 2)
        assert out2.flatten().tolist()[:6] == [2.0, 0.0, 0.0, 0.0, 0.0, 4.0]
        out3 = F(m).max_unpool3d(values[None], m.tensor([[[[[3, 3], [3, 3]]]]]), (1, 2, 2))
        assert float(out3.sum()) in (1.0, 2.0, 3.0, 4.0)  # one of them (torch's 3-d: any)


def test_avg_pool_of_int64_truncates_each_mean_like_torch(torch_mod):
    x1 = [[[-3, 0, 4, 5, -7, 2, 9]]]
    x2 = [[[[1, 2, -5], [4, 6, 7], [-1, -2, -8]]]]
    cases = [
        (x1, lambda m, x: F(m).avg_pool1d(x, 2)),
        (x1, lambda m, x: F(m).avg_pool1d(x, 3, 2, 1, count_include_pad=False)),
        (x1, lambda m, x: F(m).avg_pool1d(x, 2, ceil_mode=True)),
        (x2, lambda m, x: F(m).avg_pool2d(x, 2, 1)),
        (x2, lambda m, x: F(m).avg_pool2d(x, 2, 1, 1)),
        (x2, lambda m, x: F(m).avg_pool2d(x, 2, 1, divisor_override=3)),
        (x2, lambda m, x: m.nn.AvgPool2d(2, 2, 1, count_include_pad=False)(x[0])),
    ]
    for data, fn in cases:
        e, t = fn(ember, ember.tensor(data)), fn(torch_mod, torch_mod.tensor(data))
        assert e.dtype == ember.int64 and e.tolist() == t.tolist()
    for m in (ember, torch_mod):
        for dtype in (m.int32, m.uint8, m.bool):
            with pytest.raises(NotImplementedError, match='"avg_pool2d" not implemented for'):
                F(m).avg_pool1d(m.ones(1, 1, 4, dtype=dtype), 2)
        with pytest.raises(NotImplementedError, match="not implemented for 'Long'"):
            F(m).adaptive_avg_pool2d(m.ones(1, 1, 4, 4, dtype=m.int64), 2)


def test_adaptive_avg_pool2d_to_zero_size_gives_an_empty_output(torch_mod):
    for m in (ember, torch_mod):
        x = m.ones(1, 2, 3, 3)
        assert tuple(F(m).adaptive_avg_pool2d(x, 0).shape) == (1, 2, 0, 0)
        assert tuple(F(m).adaptive_avg_pool2d(x, (0, 2)).shape) == (1, 2, 0, 2)
        assert tuple(F(m).adaptive_avg_pool2d(x, (None, 0)).shape) == (1, 2, 3, 0)


POOL_ARGUMENT_ERRORS = {
    "max_kernel_zero": (lambda f, x: f.max_pool2d(x, 0), "stride should not be zero"),
    "max_stride_zero": (lambda f, x: f.max_pool2d(x, 2, stride=0), "stride should not be zero"),
    "max_kernel_zero_stride_one": (
        lambda f, x: f.max_pool2d(x, 0, 1),
        "kernel size should be greater than zero, but got kH: 0 kW: 0",
    ),
    "max_stride_negative": (
        lambda f, x: f.max_pool2d(x, 2, -1),
        "stride should be greater than zero, but got dH: -1 dW: -1",
    ),
    "max_dilation_zero": (
        lambda f, x: f.max_pool2d(x, 2, dilation=0),
        "dilation should be greater than zero, but got dilationH: 0 dilationW: 0",
    ),
    "max_padding_negative": (
        lambda f, x: f.max_pool2d(x, 2, padding=-1),
        "pad must be non-negative, but got pad: -1",
    ),
    "max_padding_of_dilated_kernel": (
        lambda f, x: f.max_pool2d(x, 3, padding=2, dilation=2),
        "pad should be smaller than or equal to half of kernel size, but got padW = 2, padH = 2",
    ),
    "max3d_kernel_zero": (lambda f, x: f.max_pool3d(x[None], 0), "stride should not be zero"),
    "max3d_dilation_zero": (
        lambda f, x: f.max_pool3d(x[None], 1, dilation=0),
        "dilation should be greater than zero, but got dilationT: 0",
    ),
    "max1d_kernel_zero": (
        lambda f, x: f.max_pool1d(x[0], 0),
        r"max_pool1d\(\) kernel_size must be greater than zero, but got 0",
    ),
    "max1d_stride_zero": (
        lambda f, x: f.max_pool1d(x[0], 2, 0),
        r"max_pool1d\(\) stride must be greater than zero, but got 0",
    ),
    "max1d_with_indices_kernel_zero": (
        lambda f, x: f.max_pool1d(x[0], 0, return_indices=True),
        "stride should not be zero",
    ),
    "avg_kernel_zero": (lambda f, x: f.avg_pool2d(x, 0), "stride should not be zero"),
    "avg1d_kernel_zero": (lambda f, x: f.avg_pool1d(x[0], 0), "stride should not be zero"),
    "avg_padding_negative": (lambda f, x: f.avg_pool2d(x, 2, padding=-1), "pad must be non-neg"),
    "lp_kernel_zero": (lambda f, x: f.lp_pool2d(x, 2, 0), "stride should not be zero"),
}


@pytest.mark.parametrize("name", sorted(POOL_ARGUMENT_ERRORS))
def test_bad_pooling_arguments_raise_torchs_runtime_error(torch_mod, name):
    fn, message = POOL_ARGUMENT_ERRORS[name]
    for m in (ember, torch_mod):
        with pytest.raises(RuntimeError, match=message):
            fn(F(m), m.ones(1, 1, 6, 6))
    with pytest.raises(RuntimeError, match="stride should not be zero"):
        ember.nn.MaxPool2d(0)(ember.ones(1, 1, 6, 6))
