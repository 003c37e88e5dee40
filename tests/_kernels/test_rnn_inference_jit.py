"""LSTM layers without saving for backward (``ember.ops.rnn._lstm_inference``): one compiled
loop whose steps form their pre-activations from the input rows and the state in one packed
product. Equal to the NumPy path (``jit.disabled()``) and to torch over float32 and float64,
hidden sizes that leave padded panels and row tails, batch splits, empty batches and
non-contiguous inputs; a training forward of the same layer gives the same outputs."""

import numpy as np
import pytest

import ember
from ember._kernels import jit
from ember.ops import rnn as rnn_ops

pytest.importorskip("numba")

TOLERANCE = {"float32": 2e-5, "float64": 1e-12}


@pytest.fixture
def loops():
    module = jit.module("rnn_jit")
    if module is None:
        pytest.skip("compiled kernels are off (EMBER_JIT=0)")
    if module.gemm_for(np.float32) is None:
        pytest.skip("NumPy's OpenBLAS cannot be reached here")
    return module


def _layer(dtype, inputs, hidden, seed=0, **options):
    layer = ember.nn.LSTM(inputs, hidden, **options).to(getattr(ember, dtype))
    rng = np.random.default_rng(seed)
    with ember.no_grad():
        for p in layer.parameters():
            p.copy_(ember.tensor(rng.uniform(-0.6, 0.6, tuple(p.shape)).astype(dtype)))
    return layer


def _outputs(layer, x, hx=None):
    with ember.no_grad():
        out, (h, c) = layer(x, hx)
    data = out.data if isinstance(out, ember.nn.utils.rnn.PackedSequence) else out
    return [data.numpy(), h.numpy(), c.numpy()]


def _assert_close(a_list, b_list, dtype):
    tol = TOLERANCE[dtype]
    for a, b in zip(a_list, b_list, strict=True):
        assert a.dtype == b.dtype and a.shape == b.shape
        np.testing.assert_allclose(a, b, rtol=tol, atol=tol)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("hidden,batch", [(5, 7), (16, 9), (3, 1)])
def test_inference_loop_equals_the_numpy_path(loops, monkeypatch, dtype, hidden, batch):
    calls = []
    original = loops.lstm_inference_loop
    monkeypatch.setattr(loops, "lstm_inference_loop", lambda *a: calls.append(1) or original(*a))
    layer = _layer(dtype, 4, hidden, num_layers=2, bidirectional=True)
    rng = np.random.default_rng(1)
    x = ember.tensor(rng.standard_normal((6, batch, 4)).astype(dtype))
    states = [ember.tensor(rng.standard_normal((4, batch, hidden)).astype(dtype)) for _ in "hc"]
    fused = _outputs(layer, x, tuple(states))
    assert len(calls) == 4  # every layer and direction
    with jit.disabled():
        _assert_close(fused, _outputs(layer, x, tuple(states)), dtype)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_inference_loop_split_over_the_batch_equals_one_loop(loops, monkeypatch, dtype):
    layer = _layer(dtype, 3, 6)
    rng = np.random.default_rng(2)
    x = ember.tensor(rng.standard_normal((5, 4, 3)).astype(dtype))
    packed = ember.nn.utils.rnn.pack_padded_sequence(
        x, ember.tensor([3, 5, 1, 4]), enforce_sorted=False
    )
    whole = _outputs(layer, packed)

    def three_spans(batch, work):  # one of a single row: spans whose steps run out early
        return [(0, 1), (1, 2), (2, batch)]

    monkeypatch.setattr(rnn_ops, "_batch_spans", three_spans)
    _assert_close(whole, _outputs(layer, packed), dtype)


def test_inference_equals_the_training_forward_and_torch(loops, torch_mod):
    dtype = "float32"  # float64: the tests above (the loops' compile time is kept to one type)
    options = dict(num_layers=2, batch_first=True)
    layer = _layer(dtype, 5, 12, **options)
    t_layer = torch_mod.nn.LSTM(5, 12, **options).to(getattr(torch_mod, dtype))
    with torch_mod.no_grad():
        for name, p in t_layer.named_parameters():
            p.copy_(torch_mod.tensor(getattr(layer, name).detach().numpy()))
    # batch_first: the layer sees the transposed (non-contiguous) input
    x = np.random.default_rng(3).standard_normal((9, 11, 5)).astype(dtype)
    inference = _outputs(layer, ember.tensor(x))
    out, (h, c) = layer(ember.tensor(x))
    _assert_close(inference, [out.detach().numpy(), h.detach().numpy(), c.detach().numpy()], dtype)
    with torch_mod.no_grad():
        t_out, (t_h, t_c) = t_layer(torch_mod.tensor(x))
    _assert_close(inference, [t_out.numpy(), t_h.numpy(), t_c.numpy()], dtype)


def test_inference_with_an_empty_batch_and_without_bias(loops):
    layer = _layer("float32", 3, 4, bias=False)
    out, h, c = _outputs(layer, ember.zeros(5, 0, 3))
    assert out.shape == (5, 0, 4) and h.shape == c.shape == (1, 0, 4)
    x = ember.tensor(np.random.default_rng(4).standard_normal((5, 2, 3)).astype("float32"))
    fused = _outputs(layer, x)
    with jit.disabled():
        _assert_close(fused, _outputs(layer, x), "float32")


def test_projection_layers_keep_the_numpy_path(loops, monkeypatch):
    monkeypatch.setattr(loops, "lstm_inference_loop", None)  # would fail if called
    layer = _layer("float64", 3, 6, proj_size=2)
    x = ember.tensor(np.random.default_rng(5).standard_normal((4, 2, 3)))
    with jit.disabled():
        want = _outputs(layer, x)
    _assert_close(_outputs(layer, x), want, "float64")
