"""Grouped (depthwise among them) and transposed convolutions chunk by chunk
(ember._kernels.conv_pipeline with groups, ember._kernels.conv_transposed) against the
composite path they replace (still CuPy's) and torch: float32/float64, 1-3 d, strides,
dilations, output_padding beyond padding, bias, unbatched, zero-size and non-contiguous
inputs, several chunks on two threads, gradcheck to second order, one node, ember.compile."""

import numpy as np
import pytest

import ember
from ember._kernels import conv_pipeline

GROUPED = [
    # (input shape, weight shape, keyword arguments)
    ((3, 8, 11, 9), (8, 2, 3, 3), dict(padding=1, groups=4)),  # input gradient as a conv
    ((3, 8, 11, 9), (8, 1, 3, 3), dict(padding=1, groups=8)),  # depthwise
    ((3, 8, 11, 9), (16, 1, 3, 3), dict(padding=1, groups=8)),  # depthwise, multiplier 2
    ((3, 8, 12, 9), (4, 4, 3, 2), dict(padding=(1, 0), stride=(2, 3), groups=2)),  # col2im
    ((3, 6, 11, 9), (6, 2, 3, 2), dict(padding="same", dilation=2, groups=3)),
    ((3, 6, 11, 9), (6, 2, 3, 3), dict(padding=3, groups=3)),  # padding beyond d·(k-1)
    ((6, 11, 9), (12, 2, 3, 3), dict(padding=1, groups=3)),  # unbatched
    ((3, 6, 17), (6, 1, 5), dict(padding=2, groups=6)),  # 1-d depthwise
    ((2, 4, 5, 6, 7), (4, 2, 3, 3, 3), dict(padding=1, groups=2)),  # 3-d
    ((0, 8, 11, 9), (8, 2, 3, 3), dict(padding=1, groups=4)),  # an empty batch
]
TRANSPOSED = [
    ((3, 8, 11, 9), (8, 4, 4, 4), dict(stride=2, padding=1)),
    ((3, 8, 11, 9), (8, 3, 3, 3), dict(padding=1)),  # unit stride
    ((3, 8, 11, 9), (8, 2, 3, 3), dict(stride=2, padding=1, output_padding=1, groups=2)),
    ((3, 8, 11, 9), (8, 3, 3, 3), dict(stride=(2, 3), output_padding=(1, 2))),  # beyond padding
    ((3, 8, 11, 9), (8, 3, 3, 2), dict(padding=(1, 0), output_padding=(1, 0), dilation=2)),
    ((3, 8, 11, 9), (8, 3, 3, 3), dict(stride=3, output_padding=2, dilation=2)),
    ((8, 11, 9), (8, 1, 3, 3), dict(stride=2, padding=1, groups=8)),  # unbatched depthwise
    ((3, 6, 17), (6, 4, 5), dict(stride=2, padding=2, output_padding=1)),  # 1-d
    ((2, 4, 5, 6, 7), (4, 2, 3, 3, 3), dict(stride=2, padding=1, groups=2)),  # 3-d
    ((0, 8, 11, 9), (8, 4, 4, 4), dict(stride=2, padding=1)),  # an empty batch
]
DTYPES = ["float32", "float64"]


def _function(lib, nd, transposed):
    return getattr(lib.nn.functional, f"conv_transpose{nd}d" if transposed else f"conv{nd}d")


def _data(x_shape, w_shape, kwargs, transposed, dtype, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal(x_shape).astype(dtype)
    w = rng.standard_normal(w_shape).astype(dtype)
    out_ch = w_shape[1] * kwargs.get("groups", 1) if transposed else w_shape[0]
    return rng, x, w, rng.standard_normal(out_ch).astype(dtype)


def _run(lib, x, w, b, kwargs, transposed, weights=None):
    """Output and input, weight, bias gradients, and the output's node."""
    leaves = [lib.tensor(a, requires_grad=True) for a in (x, w, b)]
    y = _function(lib, w.ndim - 2, transposed)(*leaves, **kwargs)
    if weights is None:
        weights = np.cos(np.arange(y.numel())).reshape(tuple(y.shape)).astype(x.dtype)
    (y * lib.tensor(weights)).sum().backward()
    return [y.detach().numpy()] + [t.grad.numpy() for t in leaves], y.grad_fn


def _composite(monkeypatch):
    """The composite path the pipeline replaced (still CuPy's)."""
    monkeypatch.setattr(conv_pipeline, "supports", lambda *arrays: False)


CASES = [(*case, False) for case in GROUPED] + [(*case, True) for case in TRANSPOSED]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize(("x_shape", "w_shape", "kwargs", "transposed"), CASES)
def test_matches_the_composite_path_and_torch(x_shape, w_shape, kwargs, transposed, dtype):
    torch = pytest.importorskip("torch")
    _, x, w, b = _data(x_shape, w_shape, kwargs, transposed, dtype)
    got, node = _run(ember, x, w, b, kwargs, transposed)
    with pytest.MonkeyPatch.context() as patch:
        _composite(patch)
        before, _ = _run(ember, x, w, b, kwargs, transposed)
    expected, _ = _run(torch, x, w, b, kwargs, transposed)
    assert node.name() == "ConvolutionBackward0"
    tol = dict(rtol=1e-4, atol=1e-4) if dtype == "float32" else dict(rtol=1e-10, atol=1e-10)
    for mine, old, want in zip(got, before, expected, strict=True):
        assert mine.dtype == np.dtype(dtype) and mine.shape == want.shape
        np.testing.assert_allclose(mine, old, **tol)
        np.testing.assert_allclose(mine, want, **tol)


@pytest.mark.parametrize("transposed", [False, True])
def test_non_contiguous_inputs_match_torch(transposed, torch_mod):
    rng = np.random.default_rng(4)
    x = rng.standard_normal((4, 12, 9, 8)).astype(np.float32)  # permuted to (4, 8, 12, 9)
    w = rng.standard_normal((3, 3, 2, 8)).astype(np.float32)  # permuted to (8, 2, 3, 3)
    results = []
    for lib in (ember, torch_mod):
        leaves = [lib.tensor(a, requires_grad=True) for a in (x, w)]
        xs, ws = leaves[0].permute(0, 3, 1, 2), leaves[1].permute(3, 2, 0, 1)
        kwargs = dict(padding=1, groups=4) if not transposed else dict(stride=2, groups=4)
        y = _function(lib, 2, transposed)(xs, ws, **kwargs)
        g = np.sin(np.arange(y.numel())).reshape(tuple(y.shape)[:2] + tuple(y.shape)[:1:-1])
        y.backward(lib.tensor(g.astype(np.float32)).transpose(2, 3))  # a strided gradient
        results.append([y.detach().numpy()] + [t.grad.numpy() for t in leaves])
    for a, e in zip(*results):
        np.testing.assert_allclose(a, e, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("transposed", [False, True])
def test_several_chunks_on_two_threads_equal_one_chunk(transposed, monkeypatch):
    kwargs = dict(stride=2, padding=1, groups=2) if transposed else dict(padding=1, groups=5)
    w_shape = (10, 3, 3, 3) if transposed else (10, 2, 3, 3)
    _, x, w, b = _data((7, 10, 9, 8), w_shape, kwargs, transposed, "float64", seed=3)
    one_chunk, _ = _run(ember, x, w, b, kwargs, transposed)
    monkeypatch.setattr(conv_pipeline, "CHUNK_BYTES", 1)  # one image per chunk
    threads = ember.get_num_threads()
    try:
        ember.set_num_threads(2)
        split, _ = _run(ember, x, w, b, kwargs, transposed)
    finally:
        ember.set_num_threads(threads)
    for a, e in zip(split, one_chunk):
        np.testing.assert_allclose(a, e, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize(
    ("w_shape", "kwargs", "transposed"),
    [
        ((4, 1, 3, 2), dict(padding=1, groups=2), False),
        ((4, 1, 3, 3), dict(stride=2, padding=(0, 1), groups=2), False),
        ((2, 2, 3, 2), dict(stride=2, padding=1, output_padding=1, groups=2), True),
        ((2, 3, 2, 3), dict(padding=(1, 0), dilation=2), True),
    ],
)
def test_gradcheck_to_second_order(w_shape, kwargs, transposed):
    rng = np.random.default_rng(6)
    out_ch = w_shape[1] * kwargs.get("groups", 1) if transposed else w_shape[0]
    inputs = [
        ember.tensor(rng.standard_normal(shape), requires_grad=True)
        for shape in ((1, 2, 4, 3), w_shape, (out_ch,))
    ]
    conv = _function(ember, 2, transposed)
    fn = lambda x, w, b: conv(x, w, b, **kwargs)  # noqa: E731
    assert ember.autograd.gradcheck(fn, inputs)
    assert ember.autograd.gradgradcheck(fn, inputs)


@pytest.mark.parametrize("transposed", [False, True])
def test_compiled_step_replays_each_pass_as_one_call(transposed):
    from ember.ops.conv import _PipelineCall

    rng = np.random.default_rng(7)
    ember.manual_seed(0)
    layer = (ember.nn.ConvTranspose2d if transposed else ember.nn.Conv2d)(
        4, 6, 3, padding=1, groups=2
    )
    params = [p.detach().clone() for p in layer.parameters()]
    batches = [ember.tensor(rng.standard_normal((2, 4, 7, 6)).astype(np.float32)) for _ in range(4)]

    def step(x):
        layer.zero_grad()
        layer(x).square().mean().backward()
        return layer.weight.grad.clone()

    eager = [step(x).numpy() for x in batches]
    with ember.no_grad():
        for p, saved in zip(layer.parameters(), params):
            p.copy_(saved)
    compiled = ember.compile(step)
    got = [compiled(x).numpy() for x in batches]
    assert compiled.replays >= 2 and compiled.fallbacks == 0
    for plan in (p for p in compiled.plans.values() if hasattr(p, "steps")):
        calls = [s for s in plan.steps if isinstance(s[1], _PipelineCall)]
        assert len(calls) == 2  # forward and backward
    for a, e in zip(got, eager):
        np.testing.assert_array_equal(a, e)
