"""Convolutions chunk by chunk (ember._kernels.conv_pipeline) against the whole-batch GEMM path
they replace and torch: float32/float64, 1-3 d, strides, dilations, asymmetric padding, both
input-gradient routes, bias, unbatched, zero-size and non-contiguous inputs, several chunks on
two threads, gradcheck to second order, and ember.compile recording each pass as one call."""

import numpy as np
import pytest

import ember
from ember import _backend
from ember._kernels import conv_pipeline

CASES = [
    # (input shape, weight shape, keyword arguments)
    ((3, 6, 11, 9), (5, 6, 3, 3), dict(padding=1)),  # the input gradient as a convolution
    ((3, 6, 11, 9), (6, 6, 4, 2), dict(padding="same")),  # asymmetric padding
    ((3, 6, 11, 9), (4, 6, 3, 3), dict(padding=2, dilation=2)),
    ((3, 6, 11, 9), (4, 6, 3, 3), dict(padding=3)),  # padding beyond d·(k-1): col2im
    ((3, 2, 11, 9), (8, 2, 3, 3), dict(padding=1)),  # few input channels: col2im
    ((3, 6, 12, 9), (4, 6, 3, 2), dict(padding=(1, 0), stride=(2, 3))),  # strided: col2im
    ((5, 4, 10, 10), (4, 4, 2, 2), dict(stride=2)),  # windows that tile the input
    ((6, 11, 9), (4, 6, 3, 3), dict(padding=1)),  # unbatched
    ((3, 8, 41), (8, 8, 5), dict(padding=2)),  # 1-d
    ((3, 8, 41), (4, 8, 1), dict()),  # 1x1
    ((2, 4, 5, 6, 7), (4, 4, 3, 3, 3), dict(padding=1)),  # 3-d
    ((0, 6, 11, 9), (5, 6, 3, 3), dict(padding=1)),  # an empty batch
]
DTYPES = ["float32", "float64"]


def _conv(nd):
    return getattr(ember.nn.functional, f"conv{nd}d")


def _run(x, w, b, kwargs, weights):
    """Output and input, weight, bias gradients of ember's convolution."""
    nd = w.ndim - 2
    ours = [ember.tensor(a, requires_grad=True) for a in (x, w, b)]
    y = _conv(nd)(*ours, **kwargs)
    (y * ember.tensor(weights)).sum().backward()
    return [y.detach().numpy()] + [t.grad.numpy() for t in ours]


def _data(x_shape, w_shape, dtype, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal(x_shape).astype(dtype)
    w = rng.standard_normal(w_shape).astype(dtype)
    b = rng.standard_normal(w_shape[0]).astype(dtype)
    return rng, x, w, b


def _whole_batch(monkeypatch):
    """The one-GEMM path the pipeline replaced (still CuPy's)."""
    monkeypatch.setattr(conv_pipeline, "supports", lambda *arrays: False)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize(("x_shape", "w_shape", "kwargs"), CASES)
def test_matches_the_whole_batch_path_and_torch(x_shape, w_shape, kwargs, dtype, monkeypatch):
    torch = pytest.importorskip("torch")
    rng, x, w, b = _data(x_shape, w_shape, dtype)
    nd = len(w_shape) - 2
    theirs = [torch.tensor(a, requires_grad=True) for a in (x, w, b)]
    expected = getattr(torch.nn.functional, f"conv{nd}d")(*theirs, **kwargs)
    weights = rng.standard_normal(tuple(expected.shape)).astype(dtype)
    (expected * torch.tensor(weights)).sum().backward()
    got = _run(x, w, b, kwargs, weights)
    with monkeypatch.context() as patch:
        _whole_batch(patch)
        before = _run(x, w, b, kwargs, weights)
    tol = dict(rtol=1e-4, atol=1e-4) if dtype == "float32" else dict(rtol=1e-10, atol=1e-10)
    for mine, old, want in zip(got, before, [expected.detach()] + [t.grad for t in theirs]):
        assert mine.dtype == np.dtype(dtype) and mine.shape == tuple(want.shape)
        np.testing.assert_allclose(mine, old, **tol)
        np.testing.assert_allclose(mine, want.numpy(), **tol)


@pytest.mark.parametrize(
    ("x_shape", "w_shape", "kwargs"),
    [
        ((3, 6, 11, 9), (5, 6, 3, 3), dict(padding=1)),  # from the gradient's columns
        ((3, 4, 11, 9), (8, 4, 3, 3), dict(padding=1)),  # from the input's columns
        ((3, 8, 41), (8, 8, 5), dict(padding=2, dilation=3)),
    ],
)
def test_weight_gradient_alone_matches_torch(x_shape, w_shape, kwargs, torch_mod):
    rng, x, w, b = _data(x_shape, w_shape, "float64", seed=2)
    nd = len(w_shape) - 2
    results = []
    for lib in (ember, torch_mod):
        weight, bias = (lib.tensor(a, requires_grad=True) for a in (w, b))
        y = getattr(lib.nn.functional, f"conv{nd}d")(lib.tensor(x), weight, bias, **kwargs)
        y.backward(lib.tensor(np.cos(np.arange(y.numel())).reshape(tuple(y.shape))))
        results.append([weight.grad.numpy(), bias.grad.numpy()])
    for a, e in zip(*results):
        np.testing.assert_allclose(a, e, rtol=1e-10, atol=1e-10)


@pytest.mark.parametrize("dtype", DTYPES)
def test_several_chunks_on_two_threads_equal_one_chunk(dtype, monkeypatch):
    rng, x, w, b = _data((7, 5, 13, 10), (6, 5, 3, 3), dtype, seed=3)
    weights = rng.standard_normal((7, 6, 13, 10)).astype(dtype)
    kwargs = dict(padding=1)
    threads = ember.get_num_threads()
    blas = _backend.numpy_blas()
    blas_threads = blas.get_num_threads() if blas is not None else None
    one_chunk = _run(x, w, b, kwargs, weights)
    monkeypatch.setattr(conv_pipeline, "CHUNK_BYTES", 1)  # one image per chunk
    try:
        ember.set_num_threads(2)
        split = _run(x, w, b, kwargs, weights)
        if blas is not None:  # OpenBLAS went back to its thread count after the pipeline
            assert blas.get_num_threads() == 2
    finally:
        ember.set_num_threads(threads)
        if blas is not None:
            blas.set_num_threads(blas_threads)
    tol = 1e-5 if dtype == "float32" else 1e-12
    for a, e in zip(split, one_chunk):
        np.testing.assert_allclose(a, e, rtol=tol, atol=tol)


def test_non_contiguous_input_weight_and_gradient(torch_mod):
    rng = np.random.default_rng(4)
    x = rng.standard_normal((4, 12, 9, 6)).astype(np.float32)  # permuted to (4, 6, 12, 9)
    w = rng.standard_normal((3, 3, 6, 5)).astype(np.float32)  # permuted to (5, 6, 3, 3)
    g = rng.standard_normal((4, 5, 9, 12)).astype(np.float32)  # transposed to (4, 5, 12, 9)
    results = []
    for lib in (ember, torch_mod):
        leaves = [lib.tensor(a, requires_grad=True) for a in (x, w)]
        xs, ws = leaves[0].permute(0, 3, 1, 2), leaves[1].permute(3, 2, 0, 1)
        assert not xs.is_contiguous() and not ws.is_contiguous()
        y = lib.nn.functional.conv2d(xs, ws, padding=1)
        y.backward(lib.tensor(g).transpose(2, 3))
        results.append([y.detach().numpy()] + [t.grad.numpy() for t in leaves])
    for a, e in zip(*results):
        np.testing.assert_allclose(a, e, rtol=1e-4, atol=1e-4)


def test_pipeline_functions_take_strided_views():
    rng = np.random.default_rng(5)
    x = rng.standard_normal((5, 8, 10, 7))[:, ::2].transpose(0, 1, 3, 2)  # (5, 4, 7, 10)
    w = rng.standard_normal((3, 4, 3, 3))
    geometry = ((3, 3), (1, 1), ((1, 1), (1, 1)), (1, 1))
    (y,) = conv_pipeline.forward(x, w.reshape(3, -1), None, *geometry)
    (want,) = conv_pipeline.forward(np.ascontiguousarray(x), w.reshape(3, -1), None, *geometry)
    np.testing.assert_array_equal(y, want)
    g = rng.standard_normal((5, 3, 10, 7)).transpose(0, 1, 3, 2)
    got = conv_pipeline.backward(x, w, g, *geometry, True, True, True)
    want = conv_pipeline.backward(
        np.ascontiguousarray(x), w, np.ascontiguousarray(g), *geometry, True, True, True
    )
    for a, e in zip(got, want, strict=True):
        np.testing.assert_array_equal(a, e)


@pytest.mark.parametrize(
    "kwargs", [dict(padding=1), dict(stride=2, padding=(0, 1)), dict(dilation=2, padding=2)]
)
def test_gradcheck_to_second_order(kwargs):
    rng = np.random.default_rng(6)
    inputs = [
        ember.tensor(rng.standard_normal(shape), requires_grad=True)
        for shape in ((2, 2, 5, 4), (3, 2, 3, 2), (3,))
    ]
    fn = lambda x, w, b: ember.nn.functional.conv2d(x, w, b, **kwargs)  # noqa: E731
    assert ember.autograd.gradcheck(fn, inputs)
    assert ember.autograd.gradgradcheck(fn, inputs)


def test_compiled_step_replays_each_pass_as_one_call():
    from ember.ops.conv import _PipelineCall

    rng = np.random.default_rng(7)
    ember.manual_seed(0)
    conv = ember.nn.Conv2d(3, 4, 3, padding=1)
    params = [p.detach().clone() for p in conv.parameters()]
    batches = [ember.tensor(rng.standard_normal((2, 3, 7, 6)).astype(np.float32)) for _ in range(4)]

    def step(x):
        conv.zero_grad()
        conv(x).square().mean().backward()
        return conv.weight.grad.clone()

    eager = [step(x).numpy() for x in batches]
    with ember.no_grad():
        for p, saved in zip(conv.parameters(), params):
            p.copy_(saved)
    compiled = ember.compile(step)
    got = [compiled(x).numpy() for x in batches]
    assert compiled.replays >= 2 and compiled.fallbacks == 0
    for plan in (p for p in compiled.plans.values() if hasattr(p, "steps")):
        calls = [s for s in plan.steps if isinstance(s[1], _PipelineCall)]
        assert len(calls) == 2  # forward and backward
    for a, e in zip(got, eager):
        np.testing.assert_array_equal(a, e)
