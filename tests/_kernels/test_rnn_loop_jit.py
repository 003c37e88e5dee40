"""The compiled time loops of the fused recurrent layers (``ember._kernels.rnn_jit``):
their GEMM through NumPy's OpenBLAS equals NumPy's matmul, and whole layers through the loops
equal the per-step kernels, the NumPy path (``jit.disabled()``) and torch, forward and
backward, over float32 and float64, packed, bidirectional, stacked and batch-first inputs."""

import contextlib

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


@contextlib.contextmanager
def _per_step_kernels():
    """The per-step kernels (one Python call each for the GEMM and the gates), no loops."""
    saved = rnn_ops._loops
    rnn_ops._loops = lambda xp, dtype: (None, None)
    try:
        yield
    finally:
        rnn_ops._loops = saved


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_product_rows_equals_numpy_matmul(loops, dtype):
    rng = np.random.default_rng(0)
    a = rng.standard_normal((11, 7)).astype(dtype)
    b = rng.standard_normal((7, 13)).astype(dtype)
    checker = jit.njit(lambda gemm, a, start, rows, b, out: loops.product_rows(
        gemm, a, start, rows, b, out
    ))  # fmt: skip
    for start, rows in ((0, 11), (3, 5), (10, 1), (4, 0)):
        out = np.full((6 if rows < 11 else 11, 13), np.nan, dtype=dtype)
        checker(loops.gemm_for(dtype), a, start, rows, b, out)
        want = a[start : start + rows] @ b
        np.testing.assert_allclose(out[:rows], want, rtol=TOLERANCE[dtype], atol=TOLERANCE[dtype])
        assert np.isnan(out[rows:]).all()  # rows past ``rows`` untouched


def test_product_rows_refuses_a_matrix_that_is_not_c_contiguous(loops):
    from numba.core.errors import TypingError

    a = np.ones((4, 3))
    checker = jit.njit(lambda gemm, a, b, out: loops.product_rows(gemm, a, 0, 4, b, out))
    with pytest.raises(TypingError, match="not C-contiguous"):
        checker(loops.gemm_for(np.float64), a, np.ones((5, 3)).T, np.empty((4, 5)))


def _layer_results(name, dtype, options, make_input, train):
    """Output, final states and (when ``train``) every gradient of one layer, as arrays."""
    layer = getattr(ember.nn, name)(3, 6, **options).to(getattr(ember, dtype))
    rng = np.random.default_rng(3)
    with ember.no_grad():
        for p in layer.parameters():
            p.copy_(ember.tensor(rng.uniform(-0.5, 0.5, tuple(p.shape)).astype(dtype)))
    x, hx = make_input(dtype)
    with contextlib.nullcontext() if train else ember.no_grad():
        out, state = layer(x, hx)
    data = out.data if isinstance(out, ember.nn.utils.rnn.PackedSequence) else out
    states = list(state) if isinstance(state, tuple) else [state]
    results = [data.detach().numpy()] + [s.detach().numpy() for s in states]
    if train:
        weights = rng.standard_normal(tuple(data.shape)).astype(dtype)
        loss = (data * ember.tensor(weights)).sum() + sum((s * s).sum() for s in states)
        loss.backward()
        results += [p.grad.numpy() for p in layer.parameters()]
    return results


def _padded(batch_first=False, with_state=None):
    def make(dtype):
        rng = np.random.default_rng(1)
        shape = (5, 4, 3) if batch_first else (4, 5, 3)
        x = ember.tensor(rng.standard_normal(shape).astype(dtype))
        if with_state is None:
            return x, None
        states = [ember.tensor(rng.standard_normal(s).astype(dtype)) for s in with_state]
        return x, tuple(states) if len(states) == 2 else states[0]

    return make


def _packed(dtype):
    rng = np.random.default_rng(2)
    x = ember.tensor(rng.standard_normal((5, 4, 3)).astype(dtype))
    lengths = ember.tensor([3, 5, 1, 4])
    return ember.nn.utils.rnn.pack_padded_sequence(x, lengths, enforce_sorted=False), None


CASES = [
    ("LSTM", {"num_layers": 2, "bidirectional": True}, _packed),
    ("LSTM", {"batch_first": True}, _padded(batch_first=True, with_state=[(1, 5, 6), (1, 5, 6)])),
    ("GRU", {"num_layers": 2}, _packed),
    ("GRU", {"bidirectional": True}, _padded(with_state=[(2, 5, 6)])),
    ("RNN", {"bidirectional": True, "num_layers": 2}, _packed),
    ("RNN", {"nonlinearity": "relu", "bias": False}, _padded()),
]


@pytest.mark.parametrize("train", [False, True], ids=["no_grad", "train"])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("name,options,make_input", CASES)
def test_loops_equal_per_step_kernels_and_numpy_path(name, options, make_input, dtype, train):
    looped = _layer_results(name, dtype, options, make_input, train)
    with _per_step_kernels():
        stepped = _layer_results(name, dtype, options, make_input, train)
    with jit.disabled():
        numpy_path = _layer_results(name, dtype, options, make_input, train)
    tol = TOLERANCE[dtype]
    for a, b, c in zip(looped, stepped, numpy_path, strict=True):
        assert a.dtype == b.dtype == c.dtype and a.shape == b.shape == c.shape
        np.testing.assert_allclose(a, b, rtol=tol, atol=tol)
        np.testing.assert_allclose(a, c, rtol=tol, atol=tol)


def test_the_loops_run_every_step(loops, monkeypatch):
    calls = []
    for name in ("lstm_inference_loop", "lstm_forward_loop_saving", "lstm_backward_loop"):
        original = getattr(loops, name)

        def spy(*args, _original=original, _name=name):
            calls.append((_name, len(args[1])))
            return _original(*args)

        monkeypatch.setattr(loops, name, spy)
    layer = ember.nn.LSTM(3, 4)
    x = ember.randn(6, 2, 3)
    with ember.no_grad():
        layer(x)
    layer(x)[0].sum().backward()
    assert calls == [
        ("lstm_inference_loop", 6),
        ("lstm_forward_loop_saving", 6),
        ("lstm_backward_loop", 6),
    ]


def test_without_numpy_blas_the_per_step_kernels_run(loops, monkeypatch):
    monkeypatch.setattr(loops, "_gemms", {"float64": None})
    assert loops.gemm_for(np.float64) is None
    layer = ember.nn.GRU(3, 4).double()
    x = ember.randn(5, 2, 3, dtype=ember.float64)
    with ember.no_grad():
        out = layer(x)[0].numpy()
        with jit.disabled():
            want = layer(x)[0].numpy()
    np.testing.assert_allclose(out, want, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_stacked_bidirectional_lstm_through_the_loops_matches_torch(dtype, torch_mod):
    options = dict(num_layers=2, bidirectional=True, batch_first=True)
    e_layer = ember.nn.LSTM(3, 7, **options).to(getattr(ember, dtype))
    t_layer = torch_mod.nn.LSTM(3, 7, **options).to(getattr(torch_mod, dtype))
    with torch_mod.no_grad():
        for p_name, p in t_layer.named_parameters():
            p.copy_(torch_mod.tensor(getattr(e_layer, p_name).detach().numpy()))
    x = np.random.default_rng(4).standard_normal((3, 9, 3)).astype(dtype)
    results = []
    for lib, layer in ((ember, e_layer), (torch_mod, t_layer)):
        xt = lib.tensor(x, requires_grad=True)
        out, (h, c) = layer(xt)
        ((out * out).sum() + h.sum() + c.sum()).backward()
        grads = [p.grad.numpy() for _, p in sorted(layer.named_parameters())]
        results.append([out.detach().numpy(), xt.grad.numpy(), *grads])
    tol = 1e-5 if dtype == "float32" else 1e-12
    for a, b in zip(*results, strict=True):
        np.testing.assert_allclose(a, b, rtol=tol, atol=tol)


def test_gradcheck_through_the_loops_float64(loops):
    layer = ember.nn.LSTM(2, 3, bidirectional=True).double()
    x = ember.randn(4, 2, 2, dtype=ember.float64, requires_grad=True)
    h0 = ember.randn(2, 2, 3, dtype=ember.float64, requires_grad=True)
    c0 = ember.randn(2, 2, 3, dtype=ember.float64, requires_grad=True)

    def fn(x, h0, c0):
        out, (h, c) = layer(x, (h0, c0))
        return out, h, c

    assert ember.autograd.gradcheck(fn, (x, h0, c0))


def _three_spans(batch: int, work: int) -> list:
    """Uneven spans (one of a single row), so that packed steps leave some spans empty."""
    cuts = sorted({0, min(1, batch), batch // 2, batch})
    return list(zip(cuts[:-1], cuts[1:], strict=True)) or [(0, batch)]


@pytest.mark.parametrize("train", [False, True], ids=["no_grad", "train"])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("name,options,make_input", CASES)
def test_loops_split_over_the_batch_equal_one_loop(
    loops, name, options, make_input, dtype, train, monkeypatch
):
    whole = _layer_results(name, dtype, options, make_input, train)
    spans_seen = []

    def spans(batch, work):
        spans_seen.append(_three_spans(batch, work))
        return spans_seen[-1]

    monkeypatch.setattr(rnn_ops, "_batch_spans", spans)
    split = _layer_results(name, dtype, options, make_input, train)
    assert spans_seen and all(len(s) == 3 for s in spans_seen)  # every loop did split
    tol = TOLERANCE[dtype]
    for a, b in zip(whole, split, strict=True):
        assert a.dtype == b.dtype and a.shape == b.shape
        np.testing.assert_allclose(a, b, rtol=tol, atol=tol)


def test_batch_spans_need_threads_rows_and_work(monkeypatch):
    from ember import _backend

    monkeypatch.setattr(_backend, "get_num_threads", lambda: 2)
    big = rnn_ops.SPLIT_MIN_MACS
    assert rnn_ops._batch_spans(32, big) == [(0, 16), (16, 32)]
    assert rnn_ops._batch_spans(17, big) == [(0, 9), (9, 17)]
    assert rnn_ops._batch_spans(32, big - 1) == [(0, 32)]  # too little work
    assert rnn_ops._batch_spans(2 * rnn_ops.SPLIT_MIN_ROWS - 1, big) == [(0, 15)]  # few rows
    monkeypatch.setattr(_backend, "get_num_threads", lambda: 1)
    assert rnn_ops._batch_spans(32, big) == [(0, 32)]


def test_an_error_in_a_split_loop_reaches_the_caller(loops, monkeypatch):
    monkeypatch.setattr(rnn_ops, "_batch_spans", _three_spans)
    original = loops.gru_forward_loop

    def failing(gemm, starts, sizes, *args):
        if starts[0] > 0:  # a span past the first
            raise RuntimeError("second span failed")
        return original(gemm, starts, sizes, *args)

    monkeypatch.setattr(loops, "gru_forward_loop", failing)
    layer = ember.nn.GRU(3, 4)
    with ember.no_grad(), pytest.raises(RuntimeError, match="second span failed"):
        layer(ember.randn(2, 4, 3))
