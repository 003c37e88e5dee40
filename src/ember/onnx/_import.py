"""``ember.onnx.load``: an ONNX model as an ember Module that runs its graph with ember ops.

Floating-point initializers become ``nn.Parameter``s (so the model can be fine-tuned), other
initializers buffers. ``forward`` walks the nodes in a run order through ``IMPORTERS`` (ONNX op
type -> function on ember tensors), so gradients flow through every op. Covers what
``ember.onnx.export`` writes and the common ops of exported classifiers (torch.onnx's too).

What an importer cannot map (an attribute, an optional input) is refused at load by its entry
in ``LOAD_CHECKS``; what makes a model invalid for any runtime is checked in ``_load_checks``.
"""

from __future__ import annotations

import math

import numpy as np

from onnx import helper

from . import _load_checks
from ._state import OnnxImportError

IMPORTERS: dict = {}
# op type -> fn(attrs, inputs, outputs, ranks) -> the reason ember cannot run the node, or None;
# ``inputs``/``outputs`` are the node's value names ("" for an absent optional one), ``ranks``
# the rank of each input where the file makes it known (None elsewhere)
LOAD_CHECKS: dict = {}


def _importer(*op_types):
    def decorate(fn):
        for op_type in op_types:
            IMPORTERS[op_type] = fn
        return fn

    return decorate


def _load_check(*op_types):
    def decorate(fn):
        for op_type in op_types:
            LOAD_CHECKS[op_type] = fn
        return fn

    return decorate


def _given(names: list, position: int) -> bool:
    """Whether the node names a value at input or output ``position``."""
    return len(names) > position and bool(names[position])


def _e():
    from .. import _op_namespace as ember

    return ember


def _F():
    from ..nn import functional

    return functional


class NodeContext:
    """What an importer may ask about its node besides inputs and attributes."""

    __slots__ = ("op_type", "opset", "n_outputs")

    def __init__(self, op_type: str, opset: int, n_outputs: int):
        self.op_type, self.opset, self.n_outputs = op_type, opset, n_outputs

    @staticmethod
    def tensor(array: np.ndarray):
        """A tensor attribute's values (checked at load) as a tensor of its own."""
        return _e().from_numpy(array.copy())


def _ints(t) -> list:
    """An int64 tensor (a shape, axes, indices) as Python ints."""
    return [int(v) for v in np.asarray(t._data).reshape(-1)]


def _shape_ints(ctx, t, what: str = "shape") -> list:
    """A shape (or axes, starts...) input as Python ints; ONNX Runtime refuses one that is
    not 1-D, as here."""
    if t.dim() != 1:
        raise RuntimeError(
            f"ember.onnx: {ctx.op_type}: the {what} input must be 1-D, not of shape "
            f"{tuple(t.shape)}"
        )
    return _ints(t)


def _check_indices(ctx, index, size: int) -> None:
    """Indices within [-size, size - 1], as ONNX Runtime requires them."""
    if index.numel() and (bool((index < -size).any()) or bool((index >= size).any())):
        bad = next(int(i) for i in _ints(index) if not -size <= i < size)
        raise RuntimeError(
            f"ember.onnx: {ctx.op_type}: index {bad} is out of bounds; it must be within "
            f"[{-size}, {size - 1}]"
        )


def _ember_dtype(onnx_type: int):
    np_dtype = helper.tensor_dtype_to_np_dtype(onnx_type)
    return _e().from_numpy(np.zeros(0, dtype=np_dtype)).dtype


# --- elementwise ---------------------------------------------------------------------------
def _binary(fn):
    return lambda ctx, x, attrs: [fn(x[0], x[1])]


def _unary(fn):
    return lambda ctx, x, attrs: [fn(x[0])]


def register_elementwise() -> None:
    """Fill IMPORTERS with the elementwise ops (at first load: they need ember imported)."""
    ember = _e()
    F = _F()
    binary = {
        "Add": ember.add,
        "Sub": ember.sub,
        "Mul": ember.mul,
        "Pow": ember.pow,
        "MatMul": ember.matmul,
        "Equal": ember.eq,
        "Less": ember.lt,
        "LessOrEqual": ember.le,
        "Greater": ember.gt,
        "GreaterOrEqual": ember.ge,
        "And": ember.logical_and,
        "Or": ember.logical_or,
    }
    for op_type, fn in binary.items():
        IMPORTERS[op_type] = _binary(fn)
    unary = {
        "Neg": ember.neg,
        "Exp": ember.exp,
        "Log": ember.log,
        "Sqrt": ember.sqrt,
        "Tanh": ember.tanh,
        "Sigmoid": ember.sigmoid,
        "Relu": F.relu,
        "Abs": ember.abs,
        "Erf": ember.erf,
        "Sin": ember.sin,
        "Cos": ember.cos,
        "Floor": ember.floor,
        "Ceil": ember.ceil,
        "Sign": ember.sign,
        "Reciprocal": ember.reciprocal,
        "Not": ember.logical_not,
        "Softsign": F.softsign,
        "Softplus": F.softplus,
        "Mish": F.mish,
        "Identity": lambda x: x,
    }
    for op_type, fn in unary.items():
        IMPORTERS[op_type] = _unary(fn)


@_importer("Div")
def _div(ctx, x, attrs):
    a, b = x
    if a.dtype.is_floating_point:
        return [a / b]
    return [_e().div(a, b, rounding_mode="trunc")]


@_importer("Max", "Min")
def _max_min(ctx, x, attrs):
    fn = _e().maximum if ctx.op_type == "Max" else _e().minimum
    out = x[0]
    for other in x[1:]:
        out = fn(out, other)
    return [out]


@_importer("Sum", "Mean")
def _sum_mean(ctx, x, attrs):
    out = x[0]
    for other in x[1:]:
        out = out + other
    return [out / len(x) if ctx.op_type == "Mean" else out]


@_importer("Where")
def _where(ctx, x, attrs):
    return [_e().where(x[0], x[1], x[2])]


@_importer("LeakyRelu")
def _leaky_relu(ctx, x, attrs):
    return [_F().leaky_relu(x[0], attrs.get("alpha", 0.01))]


@_importer("Elu")
def _elu(ctx, x, attrs):
    return [_F().elu(x[0], attrs.get("alpha", 1.0))]


@_importer("Celu")
def _celu(ctx, x, attrs):
    return [_F().celu(x[0], attrs.get("alpha", 1.0))]


@_importer("Selu")
def _selu(ctx, x, attrs):
    alpha = attrs.get("alpha", 1.67326319217681884765625)
    gamma = attrs.get("gamma", 1.05070102214813232421875)
    return [gamma * _e().where(x[0] > 0, x[0], alpha * (_e().exp(x[0]) - 1))]


@_importer("HardSigmoid")
def _hard_sigmoid(ctx, x, attrs):
    return [_e().clamp(x[0] * attrs.get("alpha", 0.2) + attrs.get("beta", 0.5), 0.0, 1.0)]


@_importer("HardSwish")
def _hard_swish(ctx, x, attrs):
    return [_F().hardswish(x[0])]


@_importer("Gelu")
def _gelu(ctx, x, attrs):
    return [_F().gelu(x[0], approximate=attrs.get("approximate", "none"))]


@_importer("Clip")
def _clip(ctx, x, attrs):
    out = x[0]
    low = x[1] if len(x) > 1 else None
    high = x[2] if len(x) > 2 else None
    if low is None and "min" in attrs:
        out = _e().clamp(out, min=attrs["min"])
    if high is None and "max" in attrs:
        out = _e().clamp(out, max=attrs["max"])
    for bound, name in ((low, "min"), (high, "max")):
        if bound is not None and bound.numel() != 1:  # as ONNX Runtime: "min should be a scalar"
            raise RuntimeError(
                f"ember.onnx: Clip: {name} must hold one value, not a tensor of shape "
                f"{tuple(bound.shape)}"
            )
    if low is not None:
        out = _e().maximum(out, low.to(out.dtype))
    if high is not None:
        out = _e().minimum(out, high.to(out.dtype))
    return [out]


@_load_check("Cast")
def _check_cast(attrs, inputs, outputs, ranks):
    to = attrs["to"]
    if not _load_checks.is_onnx_type(to):
        return f"Cast to {to}, which is not an ONNX data type"
    if to not in _load_checks.EMBER_TYPES:
        return f"Cast to {_load_checks.type_name(to)}, a type ember tensors cannot hold"
    return None


@_importer("Cast")
def _cast(ctx, x, attrs):
    return [x[0].to(_ember_dtype(attrs["to"]))]


@_importer("Dropout")
def _dropout(ctx, x, attrs):
    return [x[0], _e().ones(x[0].shape, dtype=_e().bool)]


# --- linear algebra -------------------------------------------------------------------------
@_importer("Gemm")
def _gemm(ctx, x, attrs):
    a, b = x[0], x[1]
    if attrs.get("transA", 0):
        a = a.t()
    if attrs.get("transB", 0):
        b = b.t()
    out = a @ b
    if attrs.get("alpha", 1.0) != 1.0:
        out = out * attrs["alpha"]
    if len(x) > 2 and x[2] is not None:
        bias = x[2]
        # ONNX broadcasts C to (M, N) one way only (ONNX Runtime: "Invalid bias shape")
        if bias.dim() > 2 or any(
            c not in (1, n) for c, n in zip(bias.shape[::-1], out.shape[::-1])
        ):
            raise RuntimeError(
                f"ember.onnx: Gemm: the bias of shape {tuple(bias.shape)} does not broadcast to "
                f"the product's shape {tuple(out.shape)}"
            )
        out = out + bias * attrs.get("beta", 1.0)
    return [out]


@_importer("Einsum")
def _einsum(ctx, x, attrs):
    return [_e().einsum(attrs["equation"], *x)]


# --- reductions and softmax -----------------------------------------------------------------
def _reduce_axes(ctx, x, attrs):
    if len(x) > 1 and x[1] is not None:
        axes = _shape_ints(ctx, x[1], "axes")
    else:
        axes = attrs.get("axes")
    if not axes:
        if attrs.get("noop_with_empty_axes", 0):
            return None, False
        axes = list(range(x[0].dim()))
    return [int(a) for a in axes], True


def _reduction(name):
    def importer(ctx, x, attrs):
        axes, reduce = _reduce_axes(ctx, x, attrs)
        if not reduce:
            return [x[0]]
        keep = bool(attrs.get("keepdims", 1))
        ember = _e()
        data = x[0]
        if name == "sum":
            return [ember.sum(data, axes, keepdim=keep)]
        if name == "mean":
            if data.numel() == 0:  # ONNX Runtime's mean of nothing is 0, not NaN
                return [ember.sum(data, axes, keepdim=keep)]
            return [ember.mean(data, axes, keepdim=keep)]
        if name == "max":
            return [ember.amax(data, axes, keepdim=keep)]
        if name == "min":
            return [ember.amin(data, axes, keepdim=keep)]
        if name == "prod":
            out = data
            for a in sorted(axes, reverse=True):
                out = ember.prod(out, a, keepdim=keep)
            return [out]
        if name == "sumsquare":
            return [ember.sum(data * data, axes, keepdim=keep)]
        if name == "l2":
            return [ember.sqrt(ember.sum(data * data, axes, keepdim=keep))]
        return [ember.logsumexp(data, axes, keepdim=keep)]

    return importer


for _op, _name in {
    "ReduceSum": "sum",
    "ReduceMean": "mean",
    "ReduceMax": "max",
    "ReduceMin": "min",
    "ReduceProd": "prod",
    "ReduceSumSquare": "sumsquare",
    "ReduceL2": "l2",
    "ReduceLogSumExp": "logsumexp",
}.items():
    IMPORTERS[_op] = _reduction(_name)


@_load_check("ArgMax", "ArgMin")
def _check_arg(attrs, inputs, outputs, ranks):
    return "select_last_index has no ember mapping" if attrs.get("select_last_index", 0) else None


@_importer("ArgMax", "ArgMin")
def _arg(ctx, x, attrs):
    ember = _e()
    data, axis, keep = x[0], attrs.get("axis", 0), bool(attrs.get("keepdims", 1))
    fn = ember.argmax if ctx.op_type == "ArgMax" else ember.argmin
    if not data.is_floating_point() or data.numel() == 0:
        return [fn(data, axis, keepdim=keep)]
    # as ONNX Runtime scans: the first value stays until a later one compares greater (less),
    # so a NaN first wins and a NaN later is passed over (torch would pick any NaN)
    index = fn(
        ember.nan_to_num(data, nan=-math.inf if ctx.op_type == "ArgMax" else math.inf),
        axis,
        keepdim=keep,
    )
    first_is_nan = ember.isnan(data.narrow(axis, 0, 1))
    if not keep:
        first_is_nan = first_is_nan.squeeze(axis)
    return [ember.where(first_is_nan, ember.zeros_like(index), index)]


@_importer("Softmax", "LogSoftmax")
def _softmax(ctx, x, attrs):
    axis = attrs.get("axis", -1 if ctx.opset >= 13 else 1)
    fn = _F().softmax if ctx.op_type == "Softmax" else _F().log_softmax
    if ctx.opset >= 13:
        return [fn(x[0], axis)]
    shape = x[0].shape  # before opset 13: over the flattened trailing dims
    flat = x[0].reshape(int(np.prod(shape[:axis])), -1)
    return [fn(flat, 1).reshape(shape)]


# --- shapes ---------------------------------------------------------------------------------
@_importer("Shape")
def _shape(ctx, x, attrs):
    dims = list(x[0].shape)
    start, end = attrs.get("start", 0), attrs.get("end")
    dims = dims[start:end] if end is not None else dims[start:]
    return [_e().tensor(dims, dtype=_e().int64)]


@_importer("Size")
def _size(ctx, x, attrs):
    return [_e().tensor(x[0].numel(), dtype=_e().int64)]


@_importer("Reshape")
def _reshape(ctx, x, attrs):
    shape = _shape_ints(ctx, x[1])
    if not attrs.get("allowzero", 0):
        if any(s == 0 for s in shape[x[0].dim() :]):
            raise RuntimeError(
                f"ember.onnx: Reshape: the shape {shape} copies a dim (0) beyond the input's "
                f"rank {x[0].dim()}"
            )
        shape = [x[0].shape[i] if s == 0 else s for i, s in enumerate(shape)]
    return [x[0].reshape(shape)]


@_importer("Flatten")
def _flatten(ctx, x, attrs):
    axis = attrs.get("axis", 1)
    axis = axis + x[0].dim() if axis < 0 else axis
    return [x[0].reshape(int(np.prod(x[0].shape[:axis])), -1)]


@_load_check("Transpose")
def _check_transpose(attrs, inputs, outputs, ranks):
    perm = list(attrs.get("perm", []))
    if perm and sorted(perm) != list(range(len(perm))):  # ONNX Runtime refuses it at load
        return f"perm {perm} is not a permutation of 0 to {len(perm) - 1}"
    if perm and ranks[0] is not None and len(perm) != ranks[0]:
        return f"perm {perm} orders {len(perm)} dims; the input has {ranks[0]}"
    return None


@_importer("Transpose")
def _transpose(ctx, x, attrs):
    perm = attrs.get("perm") or list(range(x[0].dim()))[::-1]
    return [x[0].permute(*perm)]


def _axes(x, attrs) -> list:
    return _ints(x[1]) if len(x) > 1 and x[1] is not None else list(attrs.get("axes", []))


@_importer("Unsqueeze")
def _unsqueeze(ctx, x, attrs):
    out = x[0]
    rank = out.dim() + len(_axes(x, attrs))
    for a in sorted(a + rank if a < 0 else a for a in _axes(x, attrs)):
        out = out.unsqueeze(a)
    return [out]


@_importer("Squeeze")
def _squeeze(ctx, x, attrs):
    axes = _axes(x, attrs)
    if not axes:
        return [x[0].squeeze()]
    out = x[0]
    for a in sorted((a + out.dim() if a < 0 else a for a in axes), reverse=True):
        out = out.squeeze(a)
    return [out]


@_importer("Concat")
def _concat(ctx, x, attrs):
    return [_e().cat([t for t in x if t is not None], attrs["axis"])]


@_importer("Split")
def _split(ctx, x, attrs):
    axis = attrs.get("axis", 0)
    if len(x) > 1 and x[1] is not None:
        sizes = _ints(x[1])
    elif "split" in attrs:
        sizes = list(attrs["split"])
    else:
        n = attrs.get("num_outputs", ctx.n_outputs)
        size = math.ceil(x[0].shape[axis] / n)
        sizes = [size] * (n - 1) + [x[0].shape[axis] - size * (n - 1)]
    return list(_e().split(x[0], sizes, axis))


@_importer("Slice")
def _slice(ctx, x, attrs):
    data = x[0]
    if len(x) > 1:
        starts, ends = _shape_ints(ctx, x[1], "starts"), _shape_ints(ctx, x[2], "ends")
        axes = list(range(len(starts)))
        if len(x) > 3 and x[3] is not None:
            axes = _shape_ints(ctx, x[3], "axes")
        steps = [1] * len(starts)
        if len(x) > 4 and x[4] is not None:
            steps = _shape_ints(ctx, x[4], "steps")
    else:
        starts, ends = attrs["starts"], attrs["ends"]
        axes = attrs.get("axes", list(range(len(starts))))
        steps = [1] * len(starts)
    key = [slice(None)] * data.dim()
    for start, end, axis, step in zip(starts, ends, axes, steps):
        axis = axis + data.dim() if axis < 0 else axis
        size = data.shape[axis]
        if step < 0:
            raise OnnxImportError("Slice with a negative step has no ember mapping")
        start = min(max(start + size if start < 0 else start, 0), size)
        end = min(max(end + size if end < 0 else end, 0), size)
        key[axis] = slice(start, end, step)
    return [data[tuple(key)]]


@_importer("Gather")
def _gather(ctx, x, attrs):
    data, index = x
    axis = attrs.get("axis", 0)
    axis = axis + data.dim() if axis < 0 else axis
    _check_indices(ctx, index, data.shape[axis])
    index = _e().where(index < 0, index + data.shape[axis], index)
    if index.dim() == 0:
        return [data.select(axis, int(index.item()))]
    flat = data.index_select(axis, index.reshape(-1))
    shape = list(data.shape[:axis]) + list(index.shape) + list(data.shape[axis + 1 :])
    return [flat.reshape(shape)]


@_importer("GatherElements")
def _gather_elements(ctx, x, attrs):
    data, index = x
    axis = attrs.get("axis", 0)
    _check_indices(ctx, index, data.shape[axis])
    index = _e().where(index < 0, index + data.shape[axis], index)
    return [data.gather(axis, index)]


@_importer("Expand")
def _expand(ctx, x, attrs):
    shape = np.broadcast_shapes(tuple(x[0].shape), tuple(_shape_ints(ctx, x[1])))
    return [x[0].expand(*shape)]


@_importer("Tile")
def _tile(ctx, x, attrs):
    return [x[0].repeat(*_ints(x[1]))]


_CONSTANT_KEYS = ("value", "value_float", "value_int", "value_floats", "value_ints")


@_load_check("Constant")
def _check_constant(attrs, inputs, outputs, ranks):
    if len(attrs) != 1:
        return f"a Constant takes exactly one value attribute, this one has {sorted(attrs)}"
    if next(iter(attrs)) not in _CONSTANT_KEYS:
        return f"Constant with {sorted(attrs)} has no ember mapping (strings, sparse values)"
    return None


@_importer("Constant")
def _constant(ctx, x, attrs):
    if "value" in attrs:
        return [ctx.tensor(attrs["value"])]
    for key in ("value_float", "value_int"):
        if key in attrs:
            return [_e().tensor(attrs[key])]
    return [_e().tensor(list(attrs.get("value_floats", attrs.get("value_ints"))))]


@_importer("ConstantOfShape")
def _constant_of_shape(ctx, x, attrs):
    value = attrs.get("value")
    fill = ctx.tensor(value) if value is not None else _e().zeros(1)
    return [fill.reshape(-1)[0].expand(*_shape_ints(ctx, x[0])).clone()]


@_importer("Range")
def _range(ctx, x, attrs):
    start, limit, delta = (t.item() for t in x)
    return [_e().arange(start, limit, delta, dtype=x[0].dtype)]


_PAD_MODES = {"constant": "constant", "reflect": "reflect", "edge": "replicate"}


@_load_check("Pad")
def _check_pad(attrs, inputs, outputs, ranks):
    if _given(inputs, 3):
        return "Pad with axes has no ember mapping"
    if attrs.get("mode", "constant") not in _PAD_MODES:
        return f"Pad mode {attrs['mode']!r} has no ember mapping (constant, reflect, edge)"
    return None


@_importer("Pad")
def _pad(ctx, x, attrs):
    pads = _ints(x[1]) if len(x) > 1 else list(attrs["pads"])
    value = x[2].item() if len(x) > 2 and x[2] is not None else attrs.get("value", 0.0)
    rank = x[0].dim()
    torch_pads = []
    for axis in reversed(range(rank)):  # torch lists pads from the last dim
        torch_pads += [pads[axis], pads[axis + rank]]
    mode = _PAD_MODES[attrs.get("mode", "constant")]
    while len(torch_pads) > 2 and torch_pads[-2:] == [0, 0]:
        torch_pads = torch_pads[:-2]
    return [_F().pad(x[0], torch_pads, mode=mode, value=value if mode == "constant" else None)]


# --- convolution, pooling, normalization ----------------------------------------------------
def _symmetric_pads(data, attrs, kernel, strides, dilations, fill):
    """ONNX pads (begins + ends; or auto_pad) as torch's symmetric padding, padding the
    input explicitly first when the two sides differ."""
    spatial = len(kernel)
    auto = attrs.get("auto_pad", "NOTSET")
    if auto in ("SAME_UPPER", "SAME_LOWER"):
        pads_begin, pads_end = [], []
        for size, k, s, d in zip(data.shape[2:], kernel, strides, dilations):
            out = math.ceil(size / s)
            total = max((out - 1) * s + (k - 1) * d + 1 - size, 0)
            small, large = total // 2, total - total // 2
            pads_begin.append(small if auto == "SAME_UPPER" else large)
            pads_end.append(large if auto == "SAME_UPPER" else small)
    elif auto == "VALID":
        pads_begin = pads_end = [0] * spatial
    else:
        pads = list(attrs.get("pads", [0] * (2 * spatial)))
        pads_begin, pads_end = pads[:spatial], pads[spatial:]
    if pads_begin == pads_end:
        return data, pads_begin
    torch_pads = []
    for b, e in zip(reversed(pads_begin), reversed(pads_end)):
        torch_pads += [b, e]
    return _F().pad(data, torch_pads, value=fill), [0] * spatial


@_load_check("Conv")
def _check_conv(attrs, inputs, outputs, ranks):
    data_rank, weight_rank = ranks[0], ranks[1]
    if weight_rank is not None and not 3 <= weight_rank <= 5:
        return (
            f"its weight '{inputs[1]}' has rank {weight_rank}; ember runs 1-, 2- and 3-d "
            "convolutions (weights of rank 3 to 5)"
        )
    if None not in (data_rank, weight_rank) and data_rank != weight_rank:
        return (
            f"its input '{inputs[0]}' has rank {data_rank} but its weight '{inputs[1]}' has "
            f"rank {weight_rank} (the two must have as many spatial dimensions)"
        )
    return None


def _check_conv_ranks(ctx, data, weight) -> None:
    """At run time, the rank check ``_check_conv`` could not make at load."""
    if data.dim() != weight.dim() or not 3 <= weight.dim() <= 5:
        raise RuntimeError(
            f"ember.onnx: {ctx.op_type}: the input has shape {tuple(data.shape)} and the weight "
            f"{tuple(weight.shape)}; their ranks must be equal, 3 to 5"
        )


@_importer("Conv")
def _conv(ctx, x, attrs):
    data, weight = x[0], x[1]
    _check_conv_ranks(ctx, data, weight)
    bias = x[2] if len(x) > 2 else None
    kernel = list(weight.shape[2:])
    spatial = len(kernel)
    strides = list(attrs.get("strides", [1] * spatial))
    dilations = list(attrs.get("dilations", [1] * spatial))
    data, padding = _symmetric_pads(data, attrs, kernel, strides, dilations, 0.0)
    conv = getattr(_F(), f"conv{spatial}d")
    return [conv(data, weight, bias, strides, padding, dilations, attrs.get("group", 1))]


@_load_check("ConvTranspose")
def _check_conv_transpose(attrs, inputs, outputs, ranks):
    if attrs.get("auto_pad", "NOTSET") != "NOTSET" or "output_shape" in attrs:
        return "ConvTranspose with auto_pad or output_shape has no ember mapping"
    pads = list(attrs.get("pads", []))
    if pads[: len(pads) // 2] != pads[len(pads) // 2 :]:
        return "ConvTranspose with asymmetric pads has no ember mapping"
    return _check_conv(attrs, inputs, outputs, ranks)


@_importer("ConvTranspose")
def _conv_transpose(ctx, x, attrs):
    data, weight = x[0], x[1]
    _check_conv_ranks(ctx, data, weight)
    bias = x[2] if len(x) > 2 else None
    spatial = weight.dim() - 2
    pads = list(attrs.get("pads", [0] * (2 * spatial)))
    conv = getattr(_F(), f"conv_transpose{spatial}d")
    return [
        conv(
            data,
            weight,
            bias,
            list(attrs.get("strides", [1] * spatial)),
            pads[:spatial],
            list(attrs.get("output_padding", [0] * spatial)),
            attrs.get("group", 1),
            list(attrs.get("dilations", [1] * spatial)),
        )
    ]


@_load_check("MaxPool")
def _check_max_pool(attrs, inputs, outputs, ranks):
    return "MaxPool with an Indices output has no ember mapping" if _given(outputs, 1) else None


@_importer("MaxPool", "AveragePool")
def _pool(ctx, x, attrs):
    kernel = list(attrs["kernel_shape"])
    spatial = len(kernel)
    strides = list(attrs.get("strides", [1] * spatial))
    dilations = list(attrs.get("dilations", [1] * spatial))
    is_max = ctx.op_type == "MaxPool"
    count_include_pad = bool(attrs.get("count_include_pad", 0))
    fill = -math.inf if is_max else 0.0
    data, padding = _symmetric_pads(x[0], attrs, kernel, strides, dilations, fill)
    ceil_mode = bool(attrs.get("ceil_mode", 0))
    if is_max:
        pool = getattr(_F(), f"max_pool{spatial}d")
        return [pool(data, kernel, strides, padding, dilations, ceil_mode)]
    pool = getattr(_F(), f"avg_pool{spatial}d")
    return [pool(data, kernel, strides, padding, ceil_mode, count_include_pad)]


@_importer("GlobalAveragePool", "GlobalMaxPool")
def _global_pool(ctx, x, attrs):
    axes = list(range(2, x[0].dim()))
    if ctx.op_type == "GlobalAveragePool":
        return [_e().mean(x[0], axes, keepdim=True)]
    return [_e().amax(x[0], axes, keepdim=True)]


@_importer("BatchNormalization")
def _batch_norm(ctx, x, attrs):
    data, scale, bias, mean, var = x[:5]
    eps = attrs.get("epsilon", 1e-5)
    return [_F().batch_norm(data, mean, var, scale, bias, False, 0.0, eps)]


@_importer("LayerNormalization")
def _layer_norm(ctx, x, attrs):
    data = x[0]
    axis = attrs.get("axis", -1)
    axis = axis + data.dim() if axis < 0 else axis
    bias = x[2] if len(x) > 2 else None
    eps = attrs.get("epsilon", 1e-5)
    return [_F().layer_norm(data, tuple(data.shape[axis:]), x[1], bias, eps)]


@_importer("InstanceNormalization")
def _instance_norm(ctx, x, attrs):
    return [_F().instance_norm(x[0], weight=x[1], bias=x[2], eps=attrs.get("epsilon", 1e-5))]


# --- recurrent layers -----------------------------------------------------------------------
_ACTIVATIONS = {"Sigmoid": "sigmoid", "Tanh": "tanh", "Relu": "relu"}


@_load_check("LSTM", "GRU", "RNN")
def _check_recurrent(attrs, inputs, outputs, ranks):
    # ONNX Runtime's kernels refuse a missing or non-positive hidden_size too
    if "hidden_size" not in attrs:
        return "the attribute hidden_size is missing (ONNX Runtime needs it too)"
    if attrs["hidden_size"] <= 0:
        return f"hidden_size is {attrs['hidden_size']}; it must be positive"
    if _given(inputs, 4):
        return "sequence_lens has no ember mapping"
    if _given(inputs, 7):
        return "peephole weights (input P) have no ember mapping"
    for name in ("clip", "input_forget", "activation_alpha", "activation_beta"):
        if attrs.get(name):
            return f"the attribute {name} has no ember mapping"
    unknown = [a for a in attrs.get("activations", []) if a not in _ACTIVATIONS]
    if unknown:
        return f"activation {unknown[0]} has no ember mapping ({', '.join(_ACTIVATIONS)})"
    return None


@_importer("LSTM", "GRU", "RNN")
def _recurrent(ctx, x, attrs):
    """ONNX's LSTM (gates i, o, f, c), GRU (z, r, h) and RNN, one time step at a time."""
    ember = _e()
    op = ctx.op_type
    data, w, r = x[0], x[1], x[2]
    b = x[3] if len(x) > 3 else None
    h0 = x[5] if len(x) > 5 else None
    c0 = x[6] if len(x) > 6 else None
    if attrs.get("layout", 0):
        data = data.transpose(0, 1)
    hidden = attrs["hidden_size"]
    direction = attrs.get("direction", "forward")
    directions = 2 if direction == "bidirectional" else 1
    steps, batch = data.shape[0], data.shape[1]
    activations = attrs.get("activations")
    default = {"LSTM": ["Sigmoid", "Tanh", "Tanh"], "GRU": ["Sigmoid", "Tanh"], "RNN": ["Tanh"]}
    activations = list(activations or [])
    ys, hs, cs = [], [], []
    for d in range(directions):
        acts = activations[d * len(default[op]) :][: len(default[op])] or default[op]
        f, g = getattr(ember, _ACTIVATIONS[acts[0]]), None
        if len(acts) > 1:
            g = getattr(ember, _ACTIVATIONS[acts[1]])
        h_act = getattr(ember, _ACTIVATIONS[acts[2]]) if len(acts) > 2 else g
        wd, rd = w[d], r[d]
        gates = wd.shape[0] // hidden
        wb = b[d][: gates * hidden] if b is not None else None
        rb = b[d][gates * hidden :] if b is not None else None
        h = h0[d] if h0 is not None else ember.zeros(batch, hidden, dtype=data.dtype)
        c = c0[d] if c0 is not None else ember.zeros(batch, hidden, dtype=data.dtype)
        reverse = direction == "reverse" or d == 1
        projected = _F().linear(data, wd, wb)  # (seq, batch, gates*hidden)
        outputs = [None] * steps
        for t in reversed(range(steps)) if reverse else range(steps):
            xt = projected[t]
            if op == "LSTM":
                z = xt + _F().linear(h, rd, rb)
                i, o, fg, cc = z.chunk(4, -1)
                c = f(fg) * c + f(i) * g(cc)
                h = f(o) * h_act(c)
            elif op == "GRU":
                xz, xr, xh = xt.chunk(3, -1)
                if attrs.get("linear_before_reset", 0):
                    hz, hr, hh = _F().linear(h, rd, rb).chunk(3, -1)
                    zt, rt = f(xz + hz), f(xr + hr)
                    candidate = g(xh + rt * hh)
                else:
                    rz, rr, rh = rd.chunk(3, 0)
                    bz, br, bh = rb.chunk(3) if rb is not None else (None, None, None)
                    zt = f(xz + _F().linear(h, rz, bz))
                    rt = f(xr + _F().linear(h, rr, br))
                    candidate = g(xh + _F().linear(rt * h, rh, bh))
                h = (1 - zt) * candidate + zt * h
            else:
                h = f(xt + _F().linear(h, rd, rb))
            outputs[t] = h
        ys.append(ember.stack(outputs, 0))
        hs.append(h)
        cs.append(c)
    y = ember.stack(ys, 1)  # (seq, directions, batch, hidden)
    y_h, y_c = ember.stack(hs, 0), ember.stack(cs, 0)
    if attrs.get("layout", 0):
        y, y_h, y_c = y.permute(2, 0, 1, 3), y_h.transpose(0, 1), y_c.transpose(0, 1)
    return [y, y_h, y_c] if op == "LSTM" else [y, y_h]
