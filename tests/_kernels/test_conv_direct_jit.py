"""Direct unit-stride convolutions (ember._kernels.conv_direct_jit, taken by conv_pipeline)
against the NumPy path (im2col + GEMM, jit.disabled): forward, input and weight gradients in
float32/float64, dilation, asymmetric padding, widths and channel counts that
fill no whole register block, bias or none, batch 1, an empty batch, non-contiguous inputs,
and gradcheck to second order in float64; 1-d, 1x1, strided and grouped convolutions keep
the GEMM."""

import numpy as np
import pytest

import ember
from ember._kernels import conv_pipeline, jit

pytest.importorskip("numba")

CASES = [
    # (input shape, weight shape, padding pairs, dilation)
    ((3, 32, 32, 32), (32, 32, 3, 3), ((1, 1), (1, 1)), (1, 1)),
    ((2, 5, 17, 13), (7, 5, 3, 2), ((0, 2), (1, 0)), (2, 1)),  # 7 channels: a partial block
    ((2, 3, 20, 9), (9, 3, 5, 5), ((2, 2), (2, 2)), (1, 2)),
    ((1, 1, 28, 28), (32, 1, 3, 3), ((0, 0), (0, 0)), (1, 1)),  # batch 1, one channel
    ((0, 6, 11, 9), (5, 6, 3, 3), ((1, 1), (1, 1)), (1, 1)),  # an empty batch
    ((4, 16, 61), (32, 16, 5), ((0, 0),), (1,)),  # 1-d: the GEMM
]


@pytest.fixture
def always_compiled(monkeypatch):
    """Small calls take the kernels too (below MIN_WORK they keep to NumPy), and so do CPUs
    without AVX2 and FMA (NUMBA_CPU_NAME=generic), where the kernel is slow but must be right."""
    from ember._kernels import conv_direct_jit

    monkeypatch.setattr(jit, "MIN_WORK", 0)
    monkeypatch.setattr(conv_direct_jit, "PAYS", True)


def _both_paths(x, w, b, pads, dilation, needs):
    kernel, stride = w.shape[2:], (1,) * (w.ndim - 2)
    geometry = (kernel, stride, pads, dilation)
    results = []
    for off in (False, True):
        with jit.disabled() if off else _nothing():
            (y,) = conv_pipeline.forward(x, w.reshape(w.shape[0], -1), b, *geometry)
            g = np.cos(np.arange(y.size)).reshape(y.shape).astype(x.dtype)
            grads = conv_pipeline.backward(x, w, g, *geometry, *needs, b is not None)
        results.append((y,) + tuple(grads))
    return results


class _nothing:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("needs", [(True, True), (True, False)])
@pytest.mark.parametrize(("x_shape", "w_shape", "pads", "dilation"), CASES)
def test_matches_the_numpy_path(x_shape, w_shape, pads, dilation, needs, dtype, always_compiled):
    rng = np.random.default_rng(0)
    x = rng.standard_normal(x_shape).astype(dtype)
    w = rng.standard_normal(w_shape).astype(dtype)
    b = rng.standard_normal(w_shape[0]).astype(dtype)
    got, want = _both_paths(x, w, b, pads, dilation, needs)
    tol = dict(rtol=1e-5, atol=1e-4) if dtype == "float32" else dict(rtol=1e-12, atol=1e-12)
    assert len(got) == len(want)
    for mine, expected in zip(got, want):
        assert mine.dtype == expected.dtype and mine.shape == expected.shape
        np.testing.assert_allclose(mine, expected, **tol)


def test_the_direct_kernel_is_taken(always_compiled, monkeypatch):
    calls = []
    direct = conv_pipeline._direct_forward
    monkeypatch.setattr(conv_pipeline, "_direct_forward", lambda *a: calls.append(1) or direct(*a))
    x = np.ones((2, 4, 9, 9))
    w = np.ones((4, 4, 3, 3))
    (y,) = conv_pipeline.forward(x, w.reshape(4, -1), None, (3, 3), (1, 1), ((1, 1),) * 2, (1, 1))
    geometry = ((3, 3), (1, 1), ((1, 1),) * 2, (1, 1))
    conv_pipeline.backward(x, w, y, *geometry, True, True, False)
    assert len(calls) == 1  # with the weight gradient, g's columns serve both gradients
    conv_pipeline.backward(x, w, y, *geometry, True, False, False)
    assert len(calls) == 2  # the input gradient alone
    assert y[0, 0, 4, 4] == 36 and y[0, 0, 0, 0] == 16  # 4 channels x 9 taps, a corner 4 x 4


def test_strided_grouped_1x1_and_1d_keep_the_gemm(always_compiled, monkeypatch):
    monkeypatch.setattr(conv_pipeline, "_direct_forward", None)  # would fail if called
    x = np.ones((2, 4, 9, 9), np.float32)
    w = np.ones((4, 4, 3, 3), np.float32)
    (y,) = conv_pipeline.forward(x, w.reshape(4, -1), None, (3, 3), (2, 2), ((1, 1),) * 2, (1, 1))
    assert y.shape == (2, 4, 5, 5)
    wg = np.ones((4, 2, 3, 3), np.float32)
    pads = ((1, 1),) * 2
    (y,) = conv_pipeline.forward(x, wg.reshape(4, -1), None, (3, 3), (1, 1), pads, (1, 1), 2)
    assert y.shape == (2, 4, 9, 9)
    (y,) = conv_pipeline.forward(
        x, w[:, :, :1, :1].reshape(4, -1), None, (1, 1), (1, 1), ((0, 0),) * 2, (1, 1)
    )
    assert y.shape == (2, 4, 9, 9)
    (y,) = conv_pipeline.forward(
        x[:, :, 0], w[:, :, 0].reshape(4, -1), None, (3,), (1,), ((1, 1),), (1,)
    )
    assert y.shape == (2, 4, 9)


def test_non_contiguous_input_matches(always_compiled):
    rng = np.random.default_rng(1)
    base = rng.standard_normal((8, 2, 12, 10)).astype(np.float32)
    x = ember.tensor(base).permute(1, 0, 3, 2)  # (2, 8, 10, 12), not contiguous
    w = ember.tensor(rng.standard_normal((6, 8, 3, 3)).astype(np.float32), requires_grad=True)
    xr = x.detach().requires_grad_(True)
    y = ember.nn.functional.conv2d(xr, w, padding=1)
    y.sum().backward()
    with jit.disabled():
        xc = ember.tensor(np.ascontiguousarray(x.numpy()), requires_grad=True)
        wc = ember.tensor(w.detach().numpy(), requires_grad=True)
        yc = ember.nn.functional.conv2d(xc, wc, padding=1)
        yc.sum().backward()
    np.testing.assert_allclose(y.detach().numpy(), yc.detach().numpy(), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(xr.grad.numpy(), xc.grad.numpy(), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(w.grad.numpy(), wc.grad.numpy(), rtol=1e-5, atol=1e-4)


@pytest.mark.parametrize(
    ("x_shape", "w_shape", "kwargs"),
    [
        ((2, 3, 6, 5), (5, 3, 3, 3), dict(padding=1)),
        ((1, 2, 7, 6), (3, 2, 2, 3), dict(padding="same", dilation=2)),
        ((2, 3, 11), (4, 3, 3), dict(padding=1)),
    ],
)
def test_gradcheck_float64(x_shape, w_shape, kwargs, always_compiled):
    rng = np.random.default_rng(2)
    nd = len(w_shape) - 2
    conv = getattr(ember.nn.functional, f"conv{nd}d")
    inputs = [
        ember.tensor(rng.standard_normal(s), requires_grad=True)
        for s in (x_shape, w_shape, w_shape[:1])
    ]
    assert ember.autograd.gradcheck(lambda x, w, b: conv(x, w, b, **kwargs), inputs)
    assert ember.autograd.gradgradcheck(lambda x, w, b: conv(x, w, b, **kwargs), inputs)


def test_convolve_image_refuses_reads_past_the_image():
    from ember._kernels import conv_direct_jit

    packed = np.zeros((1, 2, 3, 3, conv_direct_jit.BLOCK), np.float32)
    places = conv_direct_jit.places_per_step(np.float32)
    out = np.zeros((conv_direct_jit.BLOCK, places), np.float32)
    framed = np.zeros(2 * 25, np.float32)  # no slack after the last plane
    with pytest.raises(ValueError, match="do not fit"):
        conv_direct_jit.convolve_image(framed, 25, 5, 3, 3, 1, 1, packed, out)
