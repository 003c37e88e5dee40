"""The fused recurrent layers (one graph node per layer and direction, ``ember.ops.rnn``):
equal to the composite of ember step ops, to torch, and differentiable twice."""

from __future__ import annotations

import functools

import numpy as np
import pytest

import ember
from ember.nn.modules.rnn import _composite_direction
from ember.ops import rnn as fused_rnn
from ember.ops.rnn import rnn_sequence

MODES = {"LSTM": ("LSTM", {}), "GRU": ("GRU", {}), "RNN_TANH": ("RNN", {})}
MODES["RNN_RELU"] = ("RNN", {"nonlinearity": "relu"})
# (layer options, input kind, h0 given): padded, batch_first, packed with unequal lengths
OPTIONS = [
    ({}, "padded", False),
    ({"batch_first": True}, "padded", True),
    ({"bidirectional": True, "num_layers": 2}, "packed", True),
    ({"bias": False, "num_layers": 2, "bidirectional": True}, "padded", False),
    ({"bidirectional": True, "batch_first": True}, "packed", False),
]
CASES = [(mode, *opts) for mode in MODES for opts in OPTIONS]
CASES.append(("LSTM", {"proj_size": 2, "num_layers": 2, "bidirectional": True}, "packed", True))
CASES.append(("LSTM", {"proj_size": 2, "batch_first": True}, "padded", True))
LENGTHS = [5, 2, 4]  # unsorted: the packed path sorts and unsorts
INPUT, HIDDEN = 3, 4


def _case_id(case) -> str:
    mode, options, kind, h0 = case
    opts = ",".join(f"{k}={v}" for k, v in options.items())
    return f"{mode}-{opts}-{kind}-{'h0' if h0 else 'noh0'}"


def _layer(nn, mode: str, options: dict):
    name, extra = MODES[mode]
    return getattr(nn, name)(INPUT, HIDDEN, **extra, **options)


def _data(mode: str, options: dict, kind: str, h0: bool, seed: int = 0):
    """NumPy input, states and output weights for one case."""
    rng = np.random.default_rng(seed)
    batch, steps = len(LENGTHS), max(LENGTHS)
    shape = (batch, steps, INPUT) if options.get("batch_first") else (steps, batch, INPUT)
    x = rng.standard_normal(shape)
    directions = 2 if options.get("bidirectional") else 1
    layers = options.get("num_layers", 1) * directions
    real_hidden = options.get("proj_size") or HIDDEN
    states = []
    if h0:
        states.append(rng.standard_normal((layers, batch, real_hidden)))
        if mode == "LSTM":
            states.append(rng.standard_normal((layers, batch, HIDDEN)))
    return x, states


def _run(lib, layer, mode: str, options: dict, kind: str, x, states):
    """Forward then backward of a weighted sum of every output; returns the outputs (arrays)
    and the gradients of the input, the states and the parameters (arrays, by name)."""
    xt = lib.tensor(x, requires_grad=True)
    st = [lib.tensor(s, requires_grad=True) for s in states]
    hx = None
    if st:
        hx = tuple(st) if mode == "LSTM" else st[0]
    if kind == "packed":
        rnn_utils = lib.nn.utils.rnn
        inp = rnn_utils.pack_padded_sequence(
            xt, LENGTHS, batch_first=options.get("batch_first", False), enforce_sorted=False
        )
        out, state = layer(inp, hx)
        out = out.data
    else:
        out, state = layer(xt, hx)
    outs = [out] + (list(state) if mode == "LSTM" else [state])
    rng = np.random.default_rng(7)
    loss = sum(
        (o * lib.tensor(rng.standard_normal(tuple(o.shape)), dtype=o.dtype)).sum() for o in outs
    )
    loss.backward()
    values = [o.detach().numpy() for o in outs]
    grads = {"input": xt.grad.numpy()}
    for i, s in enumerate(st):
        grads[f"state{i}"] = s.grad.numpy()
    for name, p in layer.named_parameters():
        grads[name] = p.grad.numpy()
    return values, grads


def _assert_close(a, b, tol: float) -> None:
    values_a, grads_a = a
    values_b, grads_b = b
    for va, vb in zip(values_a, values_b, strict=True):
        np.testing.assert_allclose(va, vb, rtol=tol, atol=tol)
    assert grads_a.keys() == grads_b.keys()
    for name in grads_a:
        np.testing.assert_allclose(grads_a[name], grads_b[name], rtol=tol, atol=tol, err_msg=name)


def _node_names(tensor) -> set:
    seen, stack, names = set(), [tensor.grad_fn], set()
    while stack:
        node = stack.pop()
        if node is None or id(node) in seen:
            continue
        seen.add(id(node))
        names.add(node.name())
        stack.extend(edge[0] for edge in node.next_functions if edge[0] is not None)
    return names


@pytest.mark.parametrize("case", CASES, ids=_case_id)
def test_fused_equals_composite_float64(case, monkeypatch):
    mode, options, kind, h0 = case
    layer = _layer(ember.nn, mode, options).double()
    x, states = _data(mode, options, kind, h0)
    fused = _run(ember, layer, mode, options, kind, x, states)
    layer.zero_grad()
    monkeypatch.setattr(fused_rnn, "_fusable", lambda inputs: False)
    composite = _run(ember, layer, mode, options, kind, x, states)
    _assert_close(fused, composite, 1e-10)


@pytest.mark.filterwarnings("ignore:LSTM with projections")
@pytest.mark.parametrize("case", CASES, ids=_case_id)
def test_fused_matches_torch_float32(case, torch_mod):
    mode, options, kind, h0 = case
    e_layer = _layer(ember.nn, mode, options)
    t_layer = _layer(torch_mod.nn, mode, options)
    with torch_mod.no_grad():
        for name, p in t_layer.named_parameters():
            p.copy_(torch_mod.tensor(getattr(e_layer, name).detach().numpy()))
    x, states = _data(mode, options, kind, h0)
    x, states = x.astype(np.float32), [s.astype(np.float32) for s in states]
    _assert_close(
        _run(ember, e_layer, mode, options, kind, x, states),
        _run(torch_mod, t_layer, mode, options, kind, x, states),
        1e-5,
    )


@pytest.mark.parametrize("mode", list(MODES))
def test_layer_records_one_node_per_layer_and_direction(mode):
    layer = _layer(ember.nn, mode, {"num_layers": 2, "bidirectional": True})
    out, _ = layer(ember.randn(6, 2, INPUT))
    names = _node_names(out)
    fused = {n for n in names if n.endswith("SequenceBackward0")}
    assert fused == {_fused_name(mode)}
    assert len(names) < 15  # was ~a dozen nodes per time step


def _fused_name(mode: str) -> str:
    return {
        "LSTM": "LSTMSequenceBackward0",
        "GRU": "GRUSequenceBackward0",
        "RNN_TANH": "RNNTanhSequenceBackward0",
        "RNN_RELU": "RNNReluSequenceBackward0",
    }[mode]


def _sequence_fn(mode: str, sizes: list, reverse: bool, proj: int):
    """rnn_sequence over (x, h0[, c0], W_ih, W_hh, b_ih, b_hh[, W_hr]) as a function of them."""
    offsets = list(np.cumsum([0] + sizes[:-1]))
    composite = functools.partial(_composite_direction, mode, sizes, offsets, reverse)

    def fn(x, h0, *rest):
        c0 = rest[0] if mode == "LSTM" else None
        weights = rest[1:] if mode == "LSTM" else rest
        w_hr = weights[4] if proj else None
        outs = rnn_sequence(
            mode, x, h0, c0, tuple(weights[:4]) + (w_hr,), sizes, offsets, reverse, composite
        )
        return tuple(o for o in outs if o is not None)

    return fn


@pytest.mark.parametrize(
    "mode,reverse,proj",
    [("LSTM", True, 1), ("GRU", True, 0), ("RNN_TANH", False, 0), ("RNN_RELU", True, 0)],
)
def test_gradcheck_and_gradgradcheck_float64(mode, reverse, proj):
    gates = {"LSTM": 4, "GRU": 3}.get(mode, 1)
    sizes = [2, 1, 1]  # a packed batch that shrinks
    hidden = 2
    real = proj or hidden
    shapes = [(sum(sizes), 2), (2, real)] + ([(2, hidden)] if mode == "LSTM" else [])
    shapes += [(gates * hidden, 2), (gates * hidden, real), (gates * hidden,), (gates * hidden,)]
    shapes += [(proj, hidden)] if proj else []
    rng = np.random.default_rng(3)
    inputs = tuple(ember.tensor(rng.uniform(-1, 1, s), requires_grad=True) for s in shapes)
    fn = _sequence_fn(mode, sizes, reverse, proj)
    assert fn(*inputs)[0].grad_fn.name() == _fused_name(mode)
    assert ember.autograd.gradcheck(fn, inputs)
    assert ember.autograd.gradgradcheck(fn, inputs)


def test_double_backward_through_layer_equals_composite(monkeypatch):
    def grad_norm():
        ember.manual_seed(0)
        layer = ember.nn.LSTM(2, 3, num_layers=2).double()
        x = ember.randn(4, 2, 2, dtype=ember.float64, requires_grad=True)
        out, (h, c) = layer(x)
        (gx,) = ember.autograd.grad((out**2).sum() + c.sum(), x, create_graph=True)
        (gx**2).sum().backward()
        return gx.detach().numpy(), x.grad.numpy(), layer.weight_hh_l0.grad.numpy()

    fused = grad_norm()
    monkeypatch.setattr(fused_rnn, "_fusable", lambda inputs: False)
    for a, b in zip(fused, grad_norm(), strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-12)


def test_no_grad_runs_the_kernels_and_records_nothing(monkeypatch):
    layer = ember.nn.GRU(3, 4, num_layers=2).double()
    x = ember.randn(5, 2, 3, dtype=ember.float64)
    with ember.no_grad():
        out, h = layer(x)
    assert out.grad_fn is None and h.grad_fn is None and not out.requires_grad
    with ember.inference_mode():
        out_inf, _ = layer(x)
    monkeypatch.setattr(fused_rnn, "_fusable", lambda inputs: False)
    with ember.no_grad():
        expected, expected_h = layer(x)
    np.testing.assert_allclose(out.numpy(), expected.numpy(), rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(out_inf.numpy(), expected.numpy(), rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(h.numpy(), expected_h.numpy(), rtol=1e-12, atol=1e-12)


def test_dropout_between_layers_equals_composite(monkeypatch):
    def run():
        ember.manual_seed(0)
        layer = ember.nn.LSTM(3, 4, num_layers=3, dropout=0.5).double()
        x = ember.randn(5, 2, 3, dtype=ember.float64, requires_grad=True)
        out, _ = layer(x)
        out.sum().backward()
        return out.detach().numpy(), x.grad.numpy(), layer.weight_ih_l1.grad.numpy()

    fused = run()
    monkeypatch.setattr(fused_rnn, "_fusable", lambda inputs: False)
    for a, b in zip(fused, run(), strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-12)


def test_weight_modified_in_place_before_backward_raises():
    layer = ember.nn.RNN(3, 4)
    out, _ = layer(ember.randn(5, 2, 3))
    with ember.no_grad():
        layer.weight_hh_l0.mul_(2)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        out.sum().backward()


def test_second_backward_needs_retain_graph():
    layer = ember.nn.GRU(3, 4)
    out, h = layer(ember.randn(5, 2, 3))
    loss = out.sum() + h.sum()
    loss.backward(retain_graph=True)
    first = layer.weight_ih_l0.grad.clone()
    loss.backward()
    np.testing.assert_allclose(layer.weight_ih_l0.grad.numpy(), 2 * first.numpy(), rtol=1e-6)
    with pytest.raises(RuntimeError, match="backward through the graph a second time"):
        loss.backward()


def test_output_written_in_place_keeps_gradients_right():
    ember.manual_seed(0)
    layer = ember.nn.RNN(3, 4).double()
    x = ember.randn(5, 2, 3, dtype=ember.float64)
    out, _ = layer(x)
    expected = ember.autograd.grad(out.sum(), layer.weight_hh_l0)[0]
    out, _ = layer(x)
    out2 = out * 1
    out.data.zero_()  # the node keeps its own copy of the states it needs
    (got,) = ember.autograd.grad(out2.sum(), layer.weight_hh_l0)
    np.testing.assert_allclose(got.numpy(), expected.numpy(), rtol=1e-12)


def test_float16_takes_the_composite_path():
    layer = ember.nn.GRU(3, 4).to(ember.float16)
    out, _ = layer(ember.randn(2, 1, 3).to(ember.float16))
    assert "GRUSequenceBackward0" not in _node_names(out)
    assert out.dtype == ember.float16


def test_forward_mode_ad_takes_the_composite_path():
    import ember.autograd.forward_ad as fwAD

    layer = ember.nn.RNN(2, 3).double()
    x = ember.randn(4, 1, 2, dtype=ember.float64)
    tangent = ember.randn(4, 1, 2, dtype=ember.float64)
    with fwAD.dual_level():
        out, _ = layer(fwAD.make_dual(x, tangent))
        jvp = fwAD.unpack_dual(out).tangent
    eps = 1e-6
    with ember.no_grad():
        plus, _ = layer(x + eps * tangent)
        minus, _ = layer(x - eps * tangent)
    np.testing.assert_allclose(
        jvp.detach().numpy(), ((plus - minus) / (2 * eps)).numpy(), atol=1e-7
    )


@pytest.mark.parametrize("mode", list(MODES))
def test_zero_batch_matches_torch(mode, torch_mod):
    results = []
    for lib in (ember, torch_mod):
        layer = _layer(lib.nn, mode, {})
        try:
            out, state = layer(lib.zeros(5, 0, INPUT, requires_grad=True))
            out.sum().backward()
            results.append(("ok", tuple(out.shape)))
        except RuntimeError as exc:
            results.append(("error", str(exc).split(":")[0]))
    assert results[0][0] == results[1][0], results
    if results[0][0] == "ok":
        assert results[0][1] == results[1][1]


def test_autocast_takes_the_composite_path():
    layer = ember.nn.RNN(3, 4)
    with ember.autocast("cpu"):
        out, _ = layer(ember.randn(2, 1, 3))
    assert "RNNTanhSequenceBackward0" not in _node_names(out)
    assert out.dtype == ember.bfloat16  # the composite's matrix products ran in bfloat16


def test_noncontiguous_operands_and_input_without_grad():
    mode, sizes = "LSTM", [2, 2, 1]
    fn = _sequence_fn(mode, sizes, False, 0)
    rng = np.random.default_rng(5)
    shapes = [(2, 5), (3, 2), (3, 2), (2, 12), (3, 12), (12,), (12,)]  # transposed
    arrays = [rng.standard_normal(s) for s in shapes]
    plain = [ember.tensor(a.T.copy() if a.ndim == 2 else a) for a in arrays]
    strided = [ember.tensor(a).t() if a.ndim == 2 else ember.tensor(a) for a in arrays]
    assert not strided[0].is_contiguous()
    results = []
    for inputs in (plain, strided):
        for t in inputs[1:]:
            t.requires_grad_(True)
        outs = fn(*inputs)
        assert outs[0].grad_fn.name() == "LSTMSequenceBackward0"
        grads = ember.autograd.grad(sum(o.sum() for o in outs), inputs[1:])
        results.append([o.detach().numpy() for o in outs] + [g.numpy() for g in grads])
    for a, b in zip(*results, strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-12)
