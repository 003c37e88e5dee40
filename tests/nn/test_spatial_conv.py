"""N-d convolutions: conv1d/2d/3d and their transposes, gradcheck and differential tests."""

import numpy as np
import pytest

import ember
from tests.helpers import arrays_for, check_gradients, compare_with_torch

X1 = arrays_for([(2, 4, 7)], -1, 1)[0]
X3 = arrays_for([(2, 4, 4, 3, 5)], -1, 1)[0]
W = arrays_for([(6, 2, 3, 2, 2)], -1, 1, seed=1)[0]
B = arrays_for([(6,)], -1, 1, seed=2)[0]

F = lambda m: m.nn.functional  # noqa: E731

CONVS = {
    "conv3d": lambda m, x, w, b: F(m).conv3d(
        x, w, b, stride=(2, 1, 1), padding=1, dilation=(1, 2, 1), groups=2
    ),
    "conv3d_same": lambda m, x, w, b: F(m).conv3d(x, w, None, padding="same", groups=2),
    "conv3d_unbatched": lambda m, x, w, b: F(m).conv3d(x[0], w, b, padding=(0, 1, 0), groups=2),
    "conv_transpose3d": lambda m, x, w, b: F(m).conv_transpose3d(
        x, w.reshape(4, 3, 3, 2, 2), b[:3], stride=2, padding=(1, 0, 0), output_padding=(1, 1, 0)
    ),
    "conv_transpose3d_groups": lambda m, x, w, b: F(m).conv_transpose3d(
        x, w.reshape(4, 3, 3, 2, 2), None, stride=(1, 2, 1), groups=2, dilation=(2, 1, 1)
    ),
}
CONVS_1D = {
    "conv1d": lambda m, x, w, b: F(m).conv1d(x, w[:, :, 0, 0], b, stride=2, padding=1, groups=2),
    "conv1d_same_dilated": lambda m, x, w, b: F(m).conv1d(
        x, w[:, :, 0, 0], b, padding="same", dilation=2, groups=2
    ),
    "conv_transpose1d": lambda m, x, w, b: F(m).conv_transpose1d(
        x, w[:, :, :, 0, 0].reshape(4, 3, 3), b[:3], stride=3, output_padding=2
    ),
    "conv_transpose1d_groups": lambda m, x, w, b: F(m).conv_transpose1d(
        x, w[:, :, :, 0, 0].reshape(4, 3, 3), None, stride=2, padding=2, groups=2, dilation=2
    ),
}


@pytest.mark.parametrize("name", sorted(CONVS))
def test_conv3d_family_gradcheck_and_torch(name):
    fn = CONVS[name]
    small = X3[:1, :, :2, :2, :2] if "transpose" in name else X3[:1, :, :3, :2, :2]
    check_gradients(fn, [small, W, B], gradgrad=False)
    compare_with_torch(fn, [X3, W, B])


def test_conv3d_double_backward():
    fn = lambda m, x, w, b: m.nn.functional.conv3d(  # noqa: E731
        x, w, b, stride=(1, 2, 1), padding=1, dilation=(2, 1, 1), groups=2
    )
    check_gradients(fn, [X3[:1, :2, :2, :3, :2], W[:2, :1, :2, :2, :1], B[:2]])
    compare_with_torch(fn, [X3, W, B])


@pytest.mark.parametrize("name", sorted(CONVS_1D))
def test_conv1d_family_gradcheck_and_torch(name):
    fn = CONVS_1D[name]
    check_gradients(fn, [X1[:1, :, :5], W, B])
    compare_with_torch(fn, [X1, W, B])


def test_conv_transpose_gradcheck_noncontiguous():
    fn = CONVS_1D["conv_transpose1d"]
    check_gradients(fn, [X1[:2, :, :3], W, B], gradgrad=False, noncontiguous=True)


def test_conv3d_float32_matches_torch():
    compare_with_torch(CONVS["conv3d"], [X3, W, B], dtype=np.float32, atol=1e-5, rtol=1e-4)


@pytest.mark.parametrize("mode", ["zeros", "reflect", "replicate", "circular"])
@pytest.mark.parametrize("dims", [1, 3])
def test_conv_modules_padding_modes_match_torch(torch_mod, mode, dims):
    cls = {1: "Conv1d", 3: "Conv3d"}[dims]
    padding = "same" if mode == "reflect" else 1
    kw = dict(kernel_size=2 if padding == "same" else 3, padding=padding, padding_mode=mode)
    mine = getattr(ember.nn, cls)(4, 6, groups=2, **kw).double()
    ref = getattr(torch_mod.nn, cls)(4, 6, groups=2, **kw).double()
    with torch_mod.no_grad():
        ref.weight.copy_(torch_mod.tensor(mine.weight.detach().numpy()))
        ref.bias.copy_(torch_mod.tensor(mine.bias.detach().numpy()))
    x = X1 if dims == 1 else X3
    y_mine, y_ref = mine(ember.tensor(x)), ref(torch_mod.tensor(x))
    np.testing.assert_allclose(y_mine.detach().numpy(), y_ref.detach().numpy(), atol=1e-10)
    assert repr(mine) == repr(ref)


@pytest.mark.parametrize("dims", [1, 2, 3])
def test_conv_transpose_modules_output_size_and_repr(torch_mod, dims):
    cls = f"ConvTranspose{dims}d"
    mine = getattr(ember.nn, cls)(4, 2, 3, stride=2, padding=1).double()
    ref = getattr(torch_mod.nn, cls)(4, 2, 3, stride=2, padding=1).double()
    assert repr(mine) == repr(ref)
    assert tuple(mine.weight.shape) == tuple(ref.weight.shape)
    shape = (1, 4) + (3,) * dims
    out = mine(ember.zeros(*shape, dtype=ember.float64), output_size=[6] * dims)
    assert tuple(out.shape) == (1, 2) + (6,) * dims
    with pytest.raises(ValueError, match="requested an output size"):
        mine(ember.zeros(*shape, dtype=ember.float64), output_size=[8] * dims)


def test_conv3d_shape_errors_match_torch(torch_mod):
    for m in (ember, torch_mod):
        with pytest.raises(RuntimeError, match=r"Expected 4D \(unbatched\) or 5D \(batched\)"):
            m.nn.functional.conv3d(m.zeros(1, 2, 3), m.zeros(1, 2, 1, 1, 1))
        with pytest.raises(RuntimeError, match="to have 4 channels, but got 2 channels"):
            m.nn.functional.conv3d(m.zeros(1, 2, 3, 3, 3), m.zeros(1, 4, 1, 1, 1))
        with pytest.raises(RuntimeError, match="Kernel size can't be greater"):
            m.nn.functional.conv3d(m.zeros(1, 2, 3, 3, 3), m.zeros(1, 2, 4, 1, 1))
        with pytest.raises(RuntimeError, match="output padding must be smaller"):
            m.nn.functional.conv_transpose1d(m.zeros(1, 2, 3), m.zeros(2, 1, 2), output_padding=1)
    with pytest.raises(ValueError, match='Only "zeros" padding mode'):
        ember.nn.ConvTranspose3d(2, 2, 1, padding_mode="reflect")


def test_conv3d_module_trains():
    model = ember.nn.Conv3d(2, 3, 2)
    model(ember.randn(2, 2, 3, 3, 3)).sum().backward()
    assert model.weight.grad.shape == model.weight.shape
    assert model.bias.grad.tolist() == [16.0, 16.0, 16.0]  # N · ∏ output size


CONV_ARGUMENT_ERRORS = {
    "stride_zero": (
        lambda F, x, w: F.conv2d(x, w, stride=0),
        "non-positive stride is not supported",
    ),
    "dilation_zero": (
        lambda F, x, w: F.conv2d(x, w, dilation=0),
        r"dilation should be greater than zero, but got \[0, 0\]",
    ),
    "dilation_negative": (
        lambda F, x, w: F.conv2d(x, w, dilation=-1),
        "dilation should be greater",
    ),
    "padding_negative": (lambda F, x, w: F.conv2d(x, w, padding=(1, -1)), "negative padding"),
    "bias_shape": (
        lambda F, x, w: F.conv2d(x, w, bias=x.new_ones(2)),
        r"expected bias to be 1-dimensional with 1 elements, but got bias of size \[2\]",
    ),
    "bias_2d": (
        lambda F, x, w: F.conv1d(x[:, :, 0], w[:, :, 0], bias=x.new_ones(1, 1)),
        "1-dimensional",
    ),
    "conv1d_dilation_zero": (
        lambda F, x, w: F.conv1d(x[:, :, 0], w[:, :, 0], dilation=0),
        r"dilation should be greater than zero, but got \[1, 0\]",
    ),
    "conv3d_stride_zero": (
        lambda F, x, w: F.conv3d(x[..., None], w[..., None], stride=0),
        "non-positive",
    ),
    "transposed_stride_zero": (
        lambda F, x, w: F.conv_transpose2d(x, w, stride=0),
        "non-positive stride is not supported",
    ),
    "transposed_dilation_zero": (
        lambda F, x, w: F.conv_transpose2d(x, w, dilation=0),
        "dilation should be greater than zero, but got dilation_height: 0, dilation_width: 0",
    ),
    "transposed_padding_negative": (
        lambda F, x, w: F.conv_transpose2d(x, w, padding=-1),
        "negative padding is not supported",
    ),
    "transposed_output_padding_negative": (
        lambda F, x, w: F.conv_transpose2d(x, w, output_padding=-1),
        "negative output_padding is not supported",
    ),
    "transposed_bias_shape": (
        lambda F, x, w: F.conv_transpose2d(x, w, bias=x.new_ones(2)),
        r"Given transposed=1, weight of size \[1, 1, 3, 3\], expected bias",
    ),
    "order_padding_before_stride": (
        lambda F, x, w: F.conv2d(x, w, stride=0, padding=-1),
        "negative padding is not supported",
    ),
    "groups_before_stride": (
        lambda F, x, w: F.conv2d(x, w, groups=0, stride=0),
        "non-positive groups is not supported",
    ),
}


@pytest.mark.parametrize("name", sorted(CONV_ARGUMENT_ERRORS))
def test_bad_convolution_arguments_raise_torchs_runtime_error(torch_mod, name):
    fn, message = CONV_ARGUMENT_ERRORS[name]
    for m in (ember, torch_mod):
        x, w = m.ones(1, 1, 5, 5), m.ones(1, 1, 3, 3)
        with pytest.raises(RuntimeError, match=message):
            fn(m.nn.functional, x, w)
