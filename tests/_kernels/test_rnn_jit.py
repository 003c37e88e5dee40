"""The compiled gate kernels of the fused recurrent layers (``ember._kernels.rnn_jit``): equal
to the NumPy path (``jit.disabled()``) and to torch, forward and backward, over float32 and
float64, odd and zero sizes, shrinking (packed) batches and non-contiguous operands."""

import contextlib
import functools

import numpy as np
import pytest

import ember
from ember._kernels import jit
from ember.nn.modules.rnn import _composite_direction
from ember.ops.rnn import rnn_sequence

pytest.importorskip("numba")

GATES = {"LSTM": 4, "GRU": 3, "RNN_TANH": 1, "RNN_RELU": 1}
TOLERANCE = {"float32": 2e-5, "float64": 1e-12}


def _inputs(mode, sizes, features, hidden, dtype, bias=True, seed=0, strided=False):
    """(x, h0, c0, W_ih, W_hh, b_ih, b_hh) as leaf tensors (c0, biases None where absent)."""
    rng = np.random.default_rng(seed)
    batch, rows, gates = max(sizes, default=0), sum(sizes), GATES[mode] * hidden
    shapes = [(rows, features), (batch, hidden), (batch, hidden) if mode == "LSTM" else None]
    shapes += (
        [(gates, features), (gates, hidden)] + [(gates,), (gates,)] * bias + [None] * (1 - bias) * 2
    )

    def leaf(shape):
        if shape is None:
            return None
        a = rng.uniform(-1, 1, shape).astype(dtype)
        if strided and len(shape) == 2:  # the same values, transposed storage
            return ember.tensor(np.ascontiguousarray(a.T)).t().requires_grad_()
        return ember.tensor(a, requires_grad=True)

    return [leaf(s) for s in shapes]


def _forward_backward(mode, inputs, sizes, reverse, out_grad=True):
    """The layer's outputs and every input's gradient (arrays), through ``rnn_sequence``."""
    offsets = [int(v) for v in np.cumsum([0] + sizes[:-1])] if sizes else []
    composite = functools.partial(_composite_direction, mode, sizes, offsets, reverse)
    x, h0, c0, *weights = inputs
    outs = rnn_sequence(mode, x, h0, c0, (*weights, None), sizes, offsets, reverse, composite)
    outs = [o for o in outs if o is not None]
    rng = np.random.default_rng(7)
    # the output's gradient non-contiguous (through a transpose); or no gradient for it at all
    first = (outs[0].t() * ember.tensor(rng.standard_normal(outs[0].shape[::-1]))).sum()
    loss = sum((o * ember.tensor(rng.standard_normal(o.shape))).sum() for o in outs[1:])
    if out_grad:
        loss = loss + first.to(loss.dtype)
    present = [t for t in inputs if t is not None]
    grads = ember.autograd.grad(loss, present, allow_unused=True)
    arrays = [o.detach().numpy() for o in outs]
    return arrays + [g.numpy() if g is not None else None for g in grads], outs[0].grad_fn


def _compare(mode, dtype, sizes, reverse=False, **options):
    out_grad = options.pop("out_grad", True)
    results = []
    for context in (contextlib.nullcontext, jit.disabled):
        with context():
            inputs = _inputs(mode, sizes, dtype=dtype, **options)
            got, node = _forward_backward(mode, inputs, sizes, reverse, out_grad)
            results.append(got)
    assert node.name().endswith("SequenceBackward0")
    tol = TOLERANCE[dtype]
    for kernel, numpy_path in zip(*results, strict=True):
        if kernel is None:
            assert numpy_path is None
            continue
        assert kernel.dtype == numpy_path.dtype and kernel.shape == numpy_path.shape
        np.testing.assert_allclose(kernel, numpy_path, rtol=tol, atol=tol)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("mode", list(GATES))
def test_kernels_equal_the_numpy_path_on_a_shrinking_batch(mode, dtype):
    _compare(mode, dtype, [5, 5, 3, 2, 1], reverse=True, features=3, hidden=7)


@pytest.mark.parametrize("mode", list(GATES))
def test_kernels_equal_the_numpy_path_without_bias_strided_and_no_output_grad(mode):
    for dtype in ("float32", "float64"):
        _compare(
            mode, dtype, [3, 3, 3], features=4, hidden=5, bias=False, strided=True, out_grad=False
        )


@pytest.mark.parametrize("mode", list(GATES))
def test_zero_size_batch_and_sequence(mode):
    for sizes in ([0, 0], []):
        inputs = _inputs(mode, sizes, 3, 5, "float32")
        if not sizes:  # no step at all: the initial state needs a batch
            inputs[1] = ember.zeros(2, 5, requires_grad=True)
            if inputs[2] is not None:
                inputs[2] = ember.zeros(2, 5, requires_grad=True)
        offsets = [0] * len(sizes)
        composite = functools.partial(_composite_direction, mode, sizes, offsets, False)
        x, h0, c0, *weights = inputs
        outs = rnn_sequence(mode, x, h0, c0, (*weights, None), sizes, offsets, False, composite)
        assert outs[0].shape == (0, 5)
        np.testing.assert_array_equal(outs[1].detach().numpy(), h0.detach().numpy())


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize(
    "name,options", [("LSTM", {}), ("GRU", {}), ("RNN", {}), ("RNN", {"nonlinearity": "relu"})]
)
def test_layers_with_kernels_match_torch(name, options, dtype, torch_mod):
    e_layer = getattr(ember.nn, name)(3, 9, num_layers=2, **options).to(getattr(ember, dtype))
    t_layer = getattr(torch_mod.nn, name)(3, 9, num_layers=2, **options).to(
        getattr(torch_mod, dtype)
    )
    with torch_mod.no_grad():
        for p_name, p in t_layer.named_parameters():
            p.copy_(torch_mod.tensor(getattr(e_layer, p_name).detach().numpy()))
    x = np.random.default_rng(2).standard_normal((7, 5, 3)).astype(dtype)
    results = []
    for lib, layer in ((ember, e_layer), (torch_mod, t_layer)):
        xt = lib.tensor(x, requires_grad=True)
        out, _ = layer(xt)
        (out * out).sum().backward()
        grads = [p.grad.numpy() for _, p in sorted(layer.named_parameters())]
        results.append([out.detach().numpy(), xt.grad.numpy(), *grads])
    tol = 1e-5 if dtype == "float32" else 1e-12
    for a, b in zip(*results, strict=True):
        np.testing.assert_allclose(a, b, rtol=tol, atol=tol)


@pytest.mark.parametrize("mode", list(GATES))
def test_gradcheck_with_kernels_float64(mode):
    sizes = [3, 2, 2]
    inputs = _inputs(mode, sizes, 2, 3, "float64", seed=4)
    offsets = [0, 3, 5]
    composite = functools.partial(_composite_direction, mode, sizes, offsets, False)
    present = [i for i, t in enumerate(inputs) if t is not None]

    def fn(*tensors):
        full = list(inputs)
        for i, t in zip(present, tensors):
            full[i] = t
        x, h0, c0, *weights = full
        outs = rnn_sequence(mode, x, h0, c0, (*weights, None), sizes, offsets, False, composite)
        return tuple(o for o in outs if o is not None)

    assert ember.autograd.gradcheck(fn, tuple(inputs[i] for i in present))


def test_steps_outside_the_input_raise_before_any_kernel_runs():
    inputs = _inputs("LSTM", [2, 2], 3, 4, "float32")
    composite = functools.partial(_composite_direction, "LSTM", [2, 3], [0, 2], False)
    x, h0, c0, *weights = inputs
    with pytest.raises(ValueError, match="does not fit an input of 4 rows and a batch of 2"):
        rnn_sequence("LSTM", x, h0, c0, (*weights, None), [2, 3], [0, 2], False, composite)


def test_float32_gate_tanh_is_within_a_few_ulp_and_keeps_nan():
    from ember._kernels import rnn_jit

    x = np.concatenate(
        [np.linspace(-12, 12, 20001), [0.0, -0.0, 1e-30, -1e-8, np.inf, -np.inf, np.nan]]
    ).astype(np.float32)
    h = np.zeros((1, x.size), np.float32)
    states = x[None].copy()
    rnn_jit.rnn_tanh_forward_step(0, 1, states, np.zeros_like(states), h)
    want = np.tanh(x.astype(np.float64))
    finite = ~np.isnan(want)
    np.testing.assert_allclose(states[0][finite], want[finite], rtol=4e-7, atol=2e-7)
    assert np.isnan(states[0][-1]) and (np.abs(states[0][finite]) <= 1).all()


def test_a_bias_of_the_wrong_length_raises_instead_of_broadcasting():
    inputs = _inputs("GRU", [2, 2], 3, 4, "float32")
    inputs[6] = ember.zeros(9, requires_grad=True)  # b_hh of 3·4 gates, one row short of b_hn
    composite = functools.partial(_composite_direction, "GRU", [2, 2], [0, 2], False)
    x, h0, c0, *weights = inputs
    with pytest.raises(ValueError, match=r"b_hh has shape \(9,\), expected \(12,\)"):
        rnn_sequence("GRU", x, h0, c0, (*weights, None), [2, 2], [0, 2], False, composite)


@pytest.mark.parametrize("mode", list(GATES))
def test_kernel_forward_and_numpy_backward_mix(mode):
    # both paths save the same arrays: a switch between forward and backward changes nothing
    sizes, offsets = [3, 2, 1], [0, 3, 5]
    composite = functools.partial(_composite_direction, mode, sizes, offsets, False)
    results = []
    for forward_on, backward_on in ((True, True), (True, False), (False, True)):
        inputs = _inputs(mode, sizes, 2, 5, "float64", seed=9)
        x, h0, c0, *weights = inputs
        with contextlib.nullcontext() if forward_on else jit.disabled():
            outs = rnn_sequence(mode, x, h0, c0, (*weights, None), sizes, offsets, False, composite)
        loss = sum((o * o).sum() for o in outs if o is not None)
        with contextlib.nullcontext() if backward_on else jit.disabled():
            grads = ember.autograd.grad(loss, [t for t in inputs if t is not None])
        results.append([g.numpy() for g in grads])
    for other in results[1:]:
        for a, b in zip(results[0], other, strict=True):
            np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-12)
