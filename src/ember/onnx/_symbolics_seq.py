"""Table entries for sequence models: recurrent modules as ONNX ``LSTM``/``GRU``/``RNN``
nodes, and ``multi_head_attention_forward`` as a subgraph with dynamic batch and length."""

from __future__ import annotations

import math

import numpy as np

from ._graph import GraphBuilder, OnnxExporterError, host_array

# torch's gate blocks in ONNX's order: LSTM (i, f, g, o) -> (i, o, f, c); GRU (r, z, n) -> (z, r, h)
_GATE_ORDER = {"LSTM": [0, 3, 1, 2], "GRU": [1, 0, 2], "RNN_TANH": [0], "RNN_RELU": [0]}
_ONNX_OP = {"LSTM": "LSTM", "GRU": "GRU", "RNN_TANH": "RNN", "RNN_RELU": "RNN"}


def _reorder(array: np.ndarray, mode: str) -> np.ndarray:
    blocks = np.split(array, len(_GATE_ORDER[mode]), axis=0)
    return np.concatenate([blocks[i] for i in _GATE_ORDER[mode]], axis=0)


def _recurrent(g: GraphBuilder, a, result):
    module, args, kwargs = a["module"], a["args"], a.get("kwargs") or {}
    mode = module.mode
    x = args[0]
    hx = args[1] if len(args) > 1 else kwargs.get("hx")
    if not hasattr(x, "_data") or x.dim() != 3:
        raise OnnxExporterError(f"{type(module).__name__}: only batched (3-D) tensor input exports")
    if module.proj_size:
        raise OnnxExporterError("LSTM with proj_size has no ONNX mapping")
    directions = 2 if module.bidirectional else 1
    hidden = module.hidden_size
    data = g.value(x)
    if module.batch_first:
        data = g.node("Transpose", [data], perm=[1, 0, 2])
    h0 = c0 = None
    if hx is not None:
        h0, c0 = hx if mode == "LSTM" else (hx, None)
    h_outs, c_outs = [], []
    for layer in range(module.num_layers):
        weights, recurrences, biases = [], [], []
        for direction in range(directions):
            suffix = f"_l{layer}" + ("_reverse" if direction else "")
            w_ih = host_array(getattr(module, "weight_ih" + suffix))
            w_hh = host_array(getattr(module, "weight_hh" + suffix))
            weights.append(_reorder(w_ih, mode))
            recurrences.append(_reorder(w_hh, mode))
            if module.bias:
                b_ih = host_array(getattr(module, "bias_ih" + suffix))
                b_hh = host_array(getattr(module, "bias_hh" + suffix))
                biases.append(np.concatenate([_reorder(b_ih, mode), _reorder(b_hh, mode)]))
        inputs = [
            data,
            g.const(np.stack(weights), f"{mode}_l{layer}_W"),
            g.const(np.stack(recurrences), f"{mode}_l{layer}_R"),
            g.const(np.stack(biases), f"{mode}_l{layer}_B") if biases else "",
            "",  # sequence_lens: every sequence runs to the full length
        ]
        layer_states = [layer * directions, (layer + 1) * directions]
        for state in (h0, c0):
            if state is None:
                inputs.append("")
            else:
                inputs.append(
                    g.node(
                        "Slice",
                        [
                            g.value(state),
                            g.ints(layer_states[:1]),
                            g.ints(layer_states[1:]),
                            g.ints([0]),
                        ],
                    )
                )
        if mode != "LSTM":
            inputs = inputs[:6]
        attributes = {
            "hidden_size": hidden,
            "direction": "bidirectional" if directions == 2 else "forward",
        }
        if mode == "GRU":
            attributes["linear_before_reset"] = 1
        if mode.startswith("RNN"):
            attributes["activations"] = ["Relu" if mode == "RNN_RELU" else "Tanh"] * directions
        while inputs and inputs[-1] == "":
            inputs.pop()
        outs = g.node(_ONNX_OP[mode], inputs, n_outputs=3 if mode == "LSTM" else 2, **attributes)
        y = outs[0]  # (seq, directions, batch, hidden)
        h_outs.append(outs[1])
        if mode == "LSTM":
            c_outs.append(outs[2])
        data = g.reshape(g.node("Transpose", [y], perm=[0, 2, 1, 3]), [0, 0, -1])
    output = g.node("Transpose", [data], perm=[1, 0, 2]) if module.batch_first else data
    h_n = g.node("Concat", h_outs, axis=0) if len(h_outs) > 1 else g.node("Identity", h_outs)
    if mode != "LSTM":
        return [output, h_n]
    c_n = g.node("Concat", c_outs, axis=0) if len(c_outs) > 1 else g.node("Identity", c_outs)
    return [output, h_n, c_n]


def _projection(g, x, weight, bias, hint) -> str:
    out = g.node("MatMul", [x, g.const(np.ascontiguousarray(weight.T), hint + "_weight_T")])
    if bias is not None:
        out = g.node("Add", [out, g.const(bias, hint + "_bias")])
    return out


def _array(t):
    return None if t is None else host_array(t)


def _multi_head_attention(g: GraphBuilder, a, result):
    """Scaled dot-product attention over heads on (L, N, E) inputs, as torch computes it:
    project, split heads, softmax(q k^T / sqrt(d) + mask) v, merge heads, project."""
    query, key, value = a["query"], a["key"], a["value"]
    if query.dim() != 3:
        raise OnnxExporterError("multi-head attention: only batched (L, N, E) inputs export")
    for unsupported in ("bias_k", "bias_v", "static_k", "static_v"):
        if a.get(unsupported) is not None:
            raise OnnxExporterError(f"multi-head attention with {unsupported} has no mapping")
    if a.get("add_zero_attn"):
        raise OnnxExporterError("multi-head attention with add_zero_attn has no mapping")
    if a.get("training") and a.get("dropout_p", 0.0) > 0:
        raise OnnxExporterError("multi-head attention dropout in training mode has no mapping")
    heads = int(a["num_heads"])
    embed = query.shape[2]
    head_dim = embed // heads
    dtype = query._data.dtype
    if a.get("use_separate_proj_weight"):
        weights = [_array(a[f"{p}_proj_weight"]) for p in "qkv"]
    else:
        weights = np.split(_array(a["in_proj_weight"]), 3, axis=0)
    in_bias = _array(a.get("in_proj_bias"))
    biases = np.split(in_bias, 3) if in_bias is not None else [None] * 3

    def heads_of(x, w, b, hint):  # (L, N, E) -> (N, H, L, d)
        projected = _projection(g, g.value(x), w, b, hint)
        return g.node(
            "Transpose", [g.reshape(projected, [0, 0, heads, head_dim])], perm=[1, 2, 0, 3]
        )

    q = heads_of(query, weights[0], biases[0], "attention_q")
    k = heads_of(key, weights[1], biases[1], "attention_k")
    v = heads_of(value, weights[2], biases[2], "attention_v")
    q = g.node("Mul", [q, g.operand(1.0 / math.sqrt(head_dim), dtype)])
    scores = g.node("MatMul", [q, g.node("Transpose", [k], perm=[0, 1, 3, 2])])  # (N, H, L, S)
    attn_mask = a.get("attn_mask")
    if attn_mask is not None:
        mask = _additive_mask(g, attn_mask, dtype)
        if attn_mask.dim() == 3:  # (N*H, L, S)
            mask = g.reshape(mask, [-1, heads, attn_mask.shape[1], attn_mask.shape[2]])
        scores = g.node("Add", [scores, mask])
    elif a.get("is_causal"):
        raise OnnxExporterError(
            "multi-head attention with is_causal and no attn_mask has no mapping"
        )
    padding = a.get("key_padding_mask")
    if padding is not None:
        scores = g.node("Add", [scores, g.unsqueeze(_additive_mask(g, padding, dtype), [1, 2])])
    weights_out = g.node("Softmax", [scores], axis=-1)
    attended = g.node("MatMul", [weights_out, v])  # (N, H, L, d)
    merged = g.reshape(g.node("Transpose", [attended], perm=[2, 0, 1, 3]), [0, 0, embed])
    out = _projection(
        g, merged, _array(a["out_proj_weight"]), _array(a.get("out_proj_bias")), "attention_out"
    )
    if not a.get("need_weights", True):
        return [out]
    if a.get("average_attn_weights", True):
        return [out, g.reduce("ReduceMean", weights_out, [1], False)]
    return [out, weights_out]


def _additive_mask(g, mask, dtype) -> str:
    """A boolean mask (True: not attended) as 0 / -inf; a float mask is added as is."""
    if mask._data.dtype == np.bool_:
        return g.node("Where", [g.value(mask), g.operand(-np.inf, dtype), g.operand(0.0, dtype)])
    return g.operand(mask, dtype)


def register_sequence_ops(table: dict) -> None:
    for mode in _GATE_ORDER:
        table[mode] = _recurrent
    table["multi_head_attention_forward"] = _multi_head_attention
