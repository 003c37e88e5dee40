"""relu(x Wᵀ + b) as one node: the compiled bias-ReLU passes against NumPy (to the bit), the op
against the composition relu(linear(...)) with kernels off and against torch, its gradients
(gradcheck, second order), and TransformerEncoderLayer's use of it."""

import numpy as np
import pytest

import ember
import ember.nn.functional as F
from ember._kernels import jit
from ember.autograd import gradcheck, gradgradcheck
from ember.ops.linear_activation import linear_relu

pytest.importorskip("numba")
from ember._kernels import linear_jit as kernels  # noqa: E402

DTYPES = ["float32", "float64"]


@pytest.fixture(autouse=True)
def kernels_for_small_arrays(monkeypatch):
    """The kernels for these small test arrays too (they start at jit.MIN_WORK elements)."""
    monkeypatch.setattr(jit, "MIN_WORK", 1)


def _special(a):
    if a.size >= 4:
        flat = a.reshape(-1)
        flat[:4] = [np.nan, np.inf, -np.inf, -0.0]
    return a


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(5, 7), (1, 1), (300, 33), (0, 4), (3, 0)])
@pytest.mark.parametrize("parallel", [True, False])
def test_bias_relu_kernel_equals_numpy_to_the_bit(dtype, shape, parallel):
    rng = np.random.default_rng(0)
    out = _special(rng.standard_normal(shape).astype(dtype))
    bias = rng.standard_normal(shape[1]).astype(dtype)
    expected = np.maximum(out + bias, 0)
    kernels.bias_relu_(out, bias, parallel)
    np.testing.assert_array_equal(out, expected)
    assert np.array_equal(np.signbit(out), np.signbit(expected))


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(5, 7), (1, 1), (300, 33), (0, 4), (3, 0)])
def test_relu_backward_kernel_equals_numpy_to_the_bit(dtype, shape):
    rng = np.random.default_rng(1)
    grad = _special(rng.standard_normal(shape).astype(dtype))
    out = np.maximum(rng.standard_normal(shape), 0).astype(dtype)
    out.flat[::7] = np.nan  # a NaN output lets its gradient through, as torch's relu
    grad_in, grad_bias = kernels.relu_backward(grad, out)
    expected = np.where(out <= 0, np.zeros((), dtype), grad)  # masked NaN, inf grads: 0
    np.testing.assert_array_equal(grad_in, expected)
    np.testing.assert_array_equal(grad_bias, expected.sum(0))


def test_kernels_refuse_mismatched_arrays():
    with pytest.raises(ValueError, match="bias"):
        kernels.bias_relu_(np.zeros((2, 3), np.float32), np.zeros(4, np.float32))
    with pytest.raises(ValueError, match="one dtype"):
        kernels.bias_relu_(np.zeros((2, 3), np.float32), np.zeros(3, np.float64))
    with pytest.raises(ValueError, match="gradient"):
        kernels.relu_backward(np.zeros((2, 3)), np.zeros((3, 2)))


def _fused_name(work: bool = True) -> str:
    """The node linear_relu records: torch's graph (linear, then ReluBackward0) whenever it
    records one; the kernels run where no graph is recorded."""
    return "ReluBackward0"


def _inputs(dtype, lead=(3, 5), features=(7, 9), seed=2):
    rng = np.random.default_rng(seed)
    x = ember.tensor(rng.standard_normal(lead + features[:1]).astype(dtype), requires_grad=True)
    w = ember.tensor(rng.standard_normal(features[::-1]).astype(dtype), requires_grad=True)
    b = ember.tensor(rng.standard_normal(features[1]).astype(dtype), requires_grad=True)
    return x, w, b


def _forward_and_grads(x, w, b, seed=3):
    out = linear_relu(x, w, b)
    g = np.random.default_rng(seed).standard_normal(tuple(out.shape)).astype(out.dtype.name)
    grads = ember.autograd.grad(out, (x, w, b), ember.tensor(g))
    return out.detach().numpy(), [t.numpy() for t in grads], out


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("lead", [(3, 5), (11,), (0, 4)])
def test_op_equals_the_composition_with_kernels_off(dtype, lead):
    x, w, b = _inputs(dtype, lead)
    fast, fast_grads, out = _forward_and_grads(x, w, b)
    # no rows: no work for a kernel (jit.module's threshold), the composition runs
    assert out.grad_fn.name() == _fused_name(out.numel() > 0)
    with jit.disabled():
        slow, slow_grads, out = _forward_and_grads(x, w, b)
        assert out.grad_fn.name() == "ReluBackward0"
    np.testing.assert_array_equal(fast, slow)
    for a, c in zip(fast_grads, slow_grads):
        np.testing.assert_array_equal(a, c)
    with ember.no_grad():  # no graph: the kernels' forward, the composition's values
        np.testing.assert_array_equal(linear_relu(x, w, b).numpy(), slow)


def test_non_contiguous_input_takes_the_composition():
    x, w, b = _inputs("float32", (5, 3))
    out = linear_relu(x.transpose(0, 1), w, b)
    assert out.grad_fn.name() == "ReluBackward0"
    expected = F.linear(x.transpose(0, 1), w, b).relu()
    np.testing.assert_array_equal(out.detach().numpy(), expected.detach().numpy())


@pytest.mark.parametrize("dtype", DTYPES)
def test_op_matches_torch(dtype):
    torch = pytest.importorskip("torch")
    x, w, b = _inputs(dtype, (4, 6), (13, 17))
    mine, mine_grads, _ = _forward_and_grads(x, w, b)
    tx, tw, tb = (torch.tensor(t.detach().numpy(), requires_grad=True) for t in (x, w, b))
    out = torch.relu(torch.nn.functional.linear(tx, tw, tb))
    g = np.random.default_rng(3).standard_normal(tuple(out.shape)).astype(dtype)
    theirs = torch.autograd.grad(out, (tx, tw, tb), torch.tensor(g))
    tol = dict(rtol=1e-5, atol=1e-5) if dtype == "float32" else dict(rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(mine, out.detach().numpy(), **tol)
    for a, c in zip(mine_grads, theirs):
        np.testing.assert_allclose(a, c.numpy(), **tol)


def test_gradcheck_and_gradgradcheck_float64():
    x, w, b = _inputs("float64", (2, 3), (4, 5), seed=5)
    with ember.no_grad():  # keep every pre-activation away from ReLU's kink
        b.add_(ember.sign(b) * 0.5)
    assert linear_relu(x, w, b).grad_fn.name() == _fused_name()
    assert gradcheck(linear_relu, (x, w, b))
    assert gradgradcheck(linear_relu, (x, w, b))


def test_encoder_layer_runs_its_feed_forward_fused_unless_hooked():
    ember.manual_seed(0)
    layer = ember.nn.TransformerEncoderLayer(8, 2, 12, dropout=0.0, batch_first=True)
    x = ember.randn(2, 5, 8)
    assert layer._fused_linear_relu()
    fused = layer(x)
    seen = []
    handle = layer.linear1.register_forward_hook(lambda m, args, out: seen.append(out.shape))
    assert not layer._fused_linear_relu()
    hooked = layer(x)
    handle.remove()
    assert seen == [ember.Size([2, 5, 12])]
    np.testing.assert_array_equal(fused.detach().numpy(), hooked.detach().numpy())
    gelu = ember.nn.TransformerEncoderLayer(8, 2, 12, activation="gelu")
    assert not gelu._fused_linear_relu()


def test_autocast_and_the_profiler_see_the_linear_they_wrap():
    x, w, b = _inputs("float32")
    with ember.autocast("cpu", dtype=ember.bfloat16):
        out = linear_relu(x, w, b)
        assert out.dtype == ember.bfloat16
    with ember.profiler.profile() as prof:
        linear_relu(x, w, b)
    assert any("linear" in event.key for event in prof.key_averages())


def test_decoder_layer_feed_forward_fused_equals_the_modules(monkeypatch):
    ember.manual_seed(1)
    layer = ember.nn.TransformerDecoderLayer(8, 2, 12, dropout=0.0)
    tgt, memory = ember.randn(4, 3, 8), ember.randn(5, 3, 8)
    results = []
    for fused in (True, False):
        monkeypatch.setattr(type(layer), "_fused_linear_relu", lambda self, f=fused: f)
        layer.zero_grad()
        out = layer(tgt, memory)
        out.square().sum().backward()
        results.append([out.detach().numpy()] + [p.grad.numpy() for p in layer.parameters()])
    for a, b in zip(*results):
        np.testing.assert_array_equal(a, b)
