"""The ONNX mapping table: ember op name -> function emitting the op's ONNX nodes.

Each entry is ``symbolic(g, a, result)``: ``g`` the ``GraphBuilder``, ``a`` the call's
arguments by the op's parameter names (defaults filled in), ``result`` what ember computed
(its dtype and shapes, read for static facts such as split sizes). It returns the output
name, or one name per tensor in ``result``. Shapes are written with 0 (copy this dim) and -1
wherever that keeps batch and sequence axes dynamic.
"""

from __future__ import annotations

import math

import numpy as np

from .._tensor import Tensor
from ._graph import GraphBuilder, OnnxExporterError, dtype_of, ndim_of, positive_axis

INT64_MAX = np.iinfo(np.int64).max
SYMBOLICS: dict = {}


def _register(*names):
    def decorate(fn):
        for name in names:
            SYMBOLICS[name] = fn
        return fn

    return decorate


def _tuple(value, n: int) -> list:
    if isinstance(value, (list, tuple)):
        return [int(v) for v in value]
    return [int(value)] * n


def _dims_arg(value) -> list | None:
    """``dim`` arguments as a list (None stays None)."""
    if value is None:
        return None
    if isinstance(value, (list, tuple)):
        return [int(v) for v in value]
    return [int(value)]


def _shape_arg(shape) -> list:
    """``reshape(x, 2, 3)`` and ``reshape(x, (2, 3))`` alike."""
    if len(shape) == 1 and isinstance(shape[0], (list, tuple)):
        shape = shape[0]
    return [int(s) for s in shape]


# --- elementwise ---------------------------------------------------------------------------
def _binary(op_type):
    def symbolic(g: GraphBuilder, a, result):
        dtype = dtype_of(result)
        return g.node(op_type, [g.operand(a["input"], dtype), g.operand(a["other"], dtype)])

    return symbolic


for _name, _op in {"mul": "Mul", "maximum": "Max", "minimum": "Min"}.items():
    SYMBOLICS[_name] = _binary(_op)


def _scaled(g, x, alpha, dtype):
    name = g.operand(x, dtype)
    if alpha != 1:
        name = g.node("Mul", [name, g.operand(alpha, dtype)])
    return name


@_register("add")
def _add(g, a, result):
    dtype = dtype_of(result)
    other = _scaled(g, a["other"], a.get("alpha", 1), dtype)
    return g.node("Add", [g.operand(a["input"], dtype), other])


@_register("sub")
def _sub(g, a, result):
    dtype = dtype_of(result)
    other = _scaled(g, a["other"], a.get("alpha", 1), dtype)
    return g.node("Sub", [g.operand(a["input"], dtype), other])


@_register("rsub")
def _rsub(g, a, result):
    dtype = dtype_of(result)
    x = _scaled(g, a["input"], a.get("alpha", 1), dtype)
    return g.node("Sub", [g.operand(a["other"], dtype), x])


@_register("reflected_div")  # number / tensor
def _reflected_div(g, a, result):
    dtype = dtype_of(result)
    return g.node("Div", [g.operand(a["other"], dtype), g.operand(a["input"], dtype)])


@_register("div")
def _div(g, a, result):
    dtype = dtype_of(result)
    mode = a.get("rounding_mode")
    x, y = a["input"], a["other"]
    if mode is None or np.issubdtype(dtype, np.floating):
        out = g.node("Div", [g.operand(x, dtype), g.operand(y, dtype)])
        if mode == "floor":
            out = g.node("Floor", [out])
        elif mode == "trunc":
            raise OnnxExporterError("div with rounding_mode='trunc' on floats has no mapping")
        return out
    if mode == "trunc":
        return g.node("Div", [g.operand(x, dtype), g.operand(y, dtype)])
    # floor division of integers: through float64, exact for |values| < 2**53
    quotient = g.node("Div", [g.operand(x, np.float64), g.operand(y, np.float64)])
    return g.cast(g.node("Floor", [quotient]), dtype)


@_register("pow")
def _pow(g, a, result):
    dtype = dtype_of(result)
    exponent = a.get("exponent", a.get("other"))
    base = a["input"]
    if not isinstance(exponent, Tensor) and exponent == 2:
        x = g.operand(base, dtype)
        return g.node("Mul", [x, x])
    return g.node("Pow", [g.operand(base, dtype), g.operand(exponent, dtype)])


@_register("rpow")
def _rpow(g, a, result):
    dtype = dtype_of(result)
    return g.node("Pow", [g.operand(a["other"], dtype), g.operand(a["input"], dtype)])


def _unary(op_type, **attributes):
    def symbolic(g, a, result):
        return g.node(op_type, [g.operand(a["input"], dtype_of(result))], **attributes)

    return symbolic


for _name, _op in {
    "neg": "Neg",
    "exp": "Exp",
    "log": "Log",
    "sqrt": "Sqrt",
    "tanh": "Tanh",
    "sigmoid": "Sigmoid",
    "relu": "Relu",
    "abs": "Abs",
    "erf": "Erf",
    "sin": "Sin",
    "cos": "Cos",
    "floor": "Floor",
    "ceil": "Ceil",
    "sign": "Sign",
    "sgn": "Sign",  # of real tensors (ONNX has no complex type)
    "reciprocal": "Reciprocal",
    "hardswish": "HardSwish",
    "selu": "Selu",
    "softsign": "Softsign",
}.items():
    SYMBOLICS[_name] = _unary(_op)
SYMBOLICS["hardsigmoid"] = _unary("HardSigmoid", alpha=1.0 / 6.0, beta=0.5)


@_register("rsqrt")
def _rsqrt(g, a, result):
    return g.node("Reciprocal", [g.node("Sqrt", [g.value(a["input"])])])


@_register("gelu")
def _gelu(g, a, result):
    dtype = dtype_of(result)
    x = g.value(a["input"])
    half = g.operand(0.5, dtype)
    one = g.operand(1.0, dtype)
    if a.get("approximate", "none") == "tanh":
        # 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))
        cube = g.node("Mul", [g.node("Mul", [x, x]), x])
        inner = g.node("Add", [x, g.node("Mul", [cube, g.operand(0.044715, dtype)])])
        inner = g.node("Mul", [inner, g.operand(math.sqrt(2.0 / math.pi), dtype)])
        gate = g.node("Add", [one, g.node("Tanh", [inner])])
    else:
        # 0.5 x (1 + erf(x / sqrt 2))
        scaled = g.node("Mul", [x, g.operand(1.0 / math.sqrt(2.0), dtype)])
        gate = g.node("Add", [one, g.node("Erf", [scaled])])
    return g.node("Mul", [g.node("Mul", [x, half]), gate])


@_register("silu")
def _silu(g, a, result):
    x = g.value(a["input"])
    return g.node("Mul", [x, g.node("Sigmoid", [x])])


@_register("mish")
def _mish(g, a, result):
    x = g.value(a["input"])
    return g.node("Mul", [x, g.node("Tanh", [g.node("Softplus", [x])])])


@_register("leaky_relu")
def _leaky_relu(g, a, result):
    return g.node("LeakyRelu", [g.value(a["input"])], alpha=float(a.get("negative_slope", 0.01)))


@_register("elu")
def _elu(g, a, result):
    return g.node("Elu", [g.value(a["input"])], alpha=float(a.get("alpha", 1.0)))


@_register("celu")
def _celu(g, a, result):
    return g.node("Celu", [g.value(a["input"])], alpha=float(a.get("alpha", 1.0)))


@_register("softplus")
def _softplus(g, a, result):
    # (1/beta) log(1 + exp(beta x)), and x itself where beta x > threshold
    dtype = dtype_of(result)
    x = g.value(a["input"])
    beta, threshold = float(a.get("beta", 1.0)), float(a.get("threshold", 20.0))
    scaled = g.node("Mul", [x, g.operand(beta, dtype)]) if beta != 1 else x
    soft = g.node("Softplus", [scaled])
    if beta != 1:
        soft = g.node("Div", [soft, g.operand(beta, dtype)])
    linear = g.node("Greater", [scaled, g.operand(threshold, dtype)])
    return g.node("Where", [linear, x, soft])


@_register("clamp", "clip")
def _clamp(g, a, result):
    dtype = dtype_of(result)
    out = g.operand(a["input"], dtype)
    low, high = a.get("min"), a.get("max")
    if low is not None:
        out = g.node("Max", [out, g.operand(low, dtype)])
    if high is not None:
        out = g.node("Min", [out, g.operand(high, dtype)])
    return out


@_register("hardtanh")
def _hardtanh(g, a, result):
    a = {"input": a["input"], "min": a.get("min_val", -1.0), "max": a.get("max_val", 1.0)}
    return _clamp(g, a, result)


@_register("relu6")
def _relu6(g, a, result):
    return _clamp(g, {"input": a["input"], "min": 0.0, "max": 6.0}, result)


@_register("where")
def _where(g, a, result):
    if a.get("input") is None:
        raise OnnxExporterError("where(condition) with one argument (nonzero) has no mapping")
    dtype = dtype_of(result)
    condition = g.operand(a["condition"], np.bool_)
    return g.node("Where", [condition, g.operand(a["input"], dtype), g.operand(a["other"], dtype)])


def _comparison(op_type, negate=False):
    def symbolic(g, a, result):
        x, y = a["input"], a["other"]
        dtypes = [dtype_of(v) if isinstance(v, Tensor) else None for v in (x, y)]
        common = np.result_type(*[d for d in dtypes if d is not None])
        out = g.node(op_type, [g.operand(x, common), g.operand(y, common)])
        return g.node("Not", [out]) if negate else out

    return symbolic


for _name, _op in {
    "lt": "Less",
    "le": "LessOrEqual",
    "gt": "Greater",
    "ge": "GreaterOrEqual",
    "eq": "Equal",
}.items():
    SYMBOLICS[_name] = _comparison(_op)
SYMBOLICS["ne"] = _comparison("Equal", negate=True)


@_register("logical_not", "bitwise_not", "invert")
def _logical_not(g, a, result):
    if dtype_of(result) != np.bool_:
        raise OnnxExporterError("bitwise not of integers has no mapping")
    return g.node("Not", [g.operand(a["input"], np.bool_)])


# --- casts and identities -------------------------------------------------------------------
@_register(
    "to",
    "float",
    "double",
    "half",
    "int",
    "long",
    "bool",
    "type_as",
    "contiguous",
    "clone",
    "detach",
    "cpu",
    "cuda",
)
def _cast_or_identity(g, a, result):
    x = a["input"]
    if dtype_of(x) == dtype_of(result):
        return g.node("Identity", [g.value(x)])
    return g.cast(g.value(x), dtype_of(result))


@_register(
    "dropout", "alpha_dropout", "feature_alpha_dropout", "dropout1d", "dropout2d", "dropout3d"
)
def _dropout(g, a, result):
    if a.get("training", False) and a.get("p", 0.5) > 0:
        raise OnnxExporterError(
            "dropout in training mode has no deterministic mapping; export in eval mode"
        )
    return g.node("Identity", [g.value(a["input"])])


# --- linear algebra -------------------------------------------------------------------------
@_register("linear")
def _linear(g, a, result):
    x, weight, bias = a["input"], a["weight"], a.get("bias")
    if ndim_of(x) == 2 and ndim_of(weight) == 2:
        inputs = [g.value(x), g.value(weight)] + ([g.value(bias)] if bias is not None else [])
        return g.node("Gemm", inputs, transB=1)
    if ndim_of(weight) == 1:
        out = g.node("MatMul", [g.value(x), g.value(weight)])
    else:
        out = g.node("MatMul", [g.value(x), g.node("Transpose", [g.value(weight)], perm=[1, 0])])
    return g.node("Add", [out, g.value(bias)]) if bias is not None else out


@_register("linear_relu")  # a transformer feed-forward's first half, one node in ember
def _linear_relu(g, a, result):
    return g.node("Relu", [_linear(g, a, result)])


@_register("matmul", "mm", "bmm")
def _matmul(g, a, result):
    dtype = dtype_of(result)
    other = a.get("other", a.get("mat2"))
    return g.node("MatMul", [g.operand(a["input"], dtype), g.operand(other, dtype)])


@_register("rmatmul")
def _rmatmul(g, a, result):
    dtype = dtype_of(result)
    return g.node("MatMul", [g.operand(a["other"], dtype), g.operand(a["input"], dtype)])


@_register("einsum")
def _einsum(g, a, result):
    operands = a["operands"]
    if len(operands) == 1 and isinstance(operands[0], (list, tuple)):
        operands = operands[0]
    dtype = dtype_of(result)
    equation = a["equation"].replace(" ", "")
    return g.node("Einsum", [g.operand(t, dtype) for t in operands], equation=equation)


# --- reductions -----------------------------------------------------------------------------
def _reduction(op_type):
    def symbolic(g, a, result):
        x = a["input"]
        axes = _dims_arg(a.get("dim"))
        if axes == []:
            axes = None
        return g.reduce(op_type, g.operand(x, dtype_of(result)), axes, a.get("keepdim", False))

    return symbolic


SYMBOLICS["sum"] = _reduction("ReduceSum")
SYMBOLICS["mean"] = _reduction("ReduceMean")
SYMBOLICS["amax"] = _reduction("ReduceMax")
SYMBOLICS["amin"] = _reduction("ReduceMin")
SYMBOLICS["logsumexp"] = _reduction("ReduceLogSumExp")
SYMBOLICS["prod"] = _reduction("ReduceProd")


def _max_min(reduce_op, arg_op, binary_op):
    def symbolic(g, a, result):
        x, dim = a["input"], a.get("dim")
        if isinstance(dim, Tensor) or isinstance(a.get("other"), Tensor):
            other = dim if isinstance(dim, Tensor) else a["other"]
            dtype = dtype_of(result)
            return g.node(binary_op, [g.operand(x, dtype), g.operand(other, dtype)])
        if dim is None:
            return g.reduce(reduce_op, g.value(x), None, False)
        keep = int(bool(a.get("keepdim", False)))
        values = g.reduce(reduce_op, g.value(x), [int(dim)], keep)
        indices = g.node(arg_op, [g.value(x)], axis=int(dim), keepdims=keep, select_last_index=0)
        return [values, indices]

    return symbolic


SYMBOLICS["max"] = _max_min("ReduceMax", "ArgMax", "Max")
SYMBOLICS["min"] = _max_min("ReduceMin", "ArgMin", "Min")


def _arg(op_type):
    def symbolic(g, a, result):
        x, dim = g.value(a["input"]), a.get("dim")
        if dim is None:
            return g.node(op_type, [g.reshape(x, [-1])], axis=0, keepdims=0)
        return g.node(op_type, [x], axis=int(dim), keepdims=int(bool(a.get("keepdim", False))))

    return symbolic


SYMBOLICS["argmax"] = _arg("ArgMax")
SYMBOLICS["argmin"] = _arg("ArgMin")


def _variance(g, a, result, root: bool):
    x = a["input"]
    dtype = dtype_of(result)
    axes = _dims_arg(a.get("dim"))
    axes = list(range(ndim_of(x))) if not axes else [positive_axis(d, ndim_of(x)) for d in axes]
    correction = a.get("correction")
    if correction is None:
        unbiased = a.get("unbiased")
        correction = 0 if unbiased is False else 1
    count = int(np.prod([x.shape[d] for d in axes]))
    name = g.value(x)
    mean = g.reduce("ReduceMean", name, axes, True)
    diff = g.node("Sub", [name, mean])
    squares = g.reduce("ReduceSum", g.node("Mul", [diff, diff]), axes, a.get("keepdim", False))
    var = g.node("Div", [squares, g.operand(max(count - correction, 0), dtype)])
    return g.node("Sqrt", [var]) if root else var


SYMBOLICS["var"] = lambda g, a, result: _variance(g, a, result, False)
SYMBOLICS["std"] = lambda g, a, result: _variance(g, a, result, True)


def _softmax(op_type):
    def symbolic(g, a, result):
        return g.node(op_type, [g.operand(a["input"], dtype_of(result))], axis=_softmax_dim(a))

    return symbolic


SYMBOLICS["softmax"] = _softmax("Softmax")
SYMBOLICS["log_softmax"] = _softmax("LogSoftmax")


def _softmax_dim(a) -> int:
    dim = a.get("dim")
    if dim is None:
        dim = 0 if ndim_of(a["input"]) in (0, 1, 3) else 1
    return int(dim)


# --- shapes ---------------------------------------------------------------------------------
def _reshape_to(g, x, target) -> str:
    """Reshape ``x`` to ``target`` (a -1 allowed), writing 0 (copy) where a dim is unchanged
    at the same position so that dynamic axes stay dynamic."""
    shape = list(x.shape)
    dims = [0 if i < len(shape) and t == shape[i] and t != -1 else t for i, t in enumerate(target)]
    if 0 in [t for t in target]:  # a real zero-size dim would be read as "copy"
        dims = list(target)
    return g.reshape(g.value(x), dims)


@_register("reshape", "view")
def _reshape(g, a, result):
    if "shape" not in a:
        raise OnnxExporterError("view(dtype) has no mapping")
    target = _shape_arg(a["shape"])
    if (
        len(target)
        and all(isinstance(t, int) for t in target)
        and not isinstance(a["shape"], Tensor)
    ):
        return _reshape_to(g, a["input"], target)
    raise OnnxExporterError("reshape to a non-integer shape has no mapping")


@_register("view_as", "reshape_as")
def _reshape_as(g, a, result):
    return g.node("Reshape", [g.value(a["input"]), g.node("Shape", [g.value(a["other"])])])


@_register("flatten")
def _flatten(g, a, result):
    x = a["input"]
    ndim = ndim_of(x)
    if ndim == 0:
        return g.reshape(g.value(x), [1])
    start, end = (
        positive_axis(a.get("start_dim", 0), ndim),
        positive_axis(a.get("end_dim", -1), ndim),
    )
    if end == ndim - 1:
        return g.reshape(g.value(x), [0] * start + [-1])
    return g.reshape(g.value(x), [0] * start + [-1] + list(x.shape[end + 1 :]))


@_register("unflatten")
def _unflatten(g, a, result):
    x = a["input"]
    dim = positive_axis(a["dim"], ndim_of(x))
    target = [0] * dim + [int(s) for s in a["sizes"]] + list(x.shape[dim + 1 :])
    return g.reshape(g.value(x), target)


@_register("unsqueeze")
def _unsqueeze(g, a, result):
    return g.unsqueeze(g.value(a["input"]), [positive_axis(a["dim"], ndim_of(result))])


@_register("squeeze")
def _squeeze(g, a, result):
    x = a["input"]
    dims = _dims_arg(a.get("dim"))
    if dims is None:
        dims = list(range(ndim_of(x)))
    axes = [
        positive_axis(d, ndim_of(x)) for d in dims if x.shape[positive_axis(d, ndim_of(x))] == 1
    ]
    if not axes:
        return g.node("Identity", [g.value(x)])
    return g.node("Squeeze", [g.value(x), g.ints(axes, "axes")])


@_register("transpose")
def _transpose(g, a, result):
    x = a["input"]
    ndim = ndim_of(x)
    d0 = positive_axis(a.get("dim0", a.get("axis0", 0)), ndim)
    d1 = positive_axis(a.get("dim1", a.get("axis1", 0)), ndim)
    perm = list(range(ndim))
    perm[d0], perm[d1] = perm[d1], perm[d0]
    return g.node("Transpose", [g.value(x)], perm=perm)


@_register("t")
def _t(g, a, result):
    x = a["input"]
    if ndim_of(x) < 2:
        return g.node("Identity", [g.value(x)])
    return g.node("Transpose", [g.value(x)], perm=[1, 0])


@_register("permute")
def _permute(g, a, result):
    x = a["input"]
    perm = [positive_axis(d, ndim_of(x)) for d in _shape_arg(a["dims"])]
    return g.node("Transpose", [g.value(x)], perm=perm)


@_register("cat")
def _cat(g, a, result):
    tensors = [t for t in a["tensors"] if not (ndim_of(t) == 1 and t.shape[0] == 0)]
    dtype = dtype_of(result)
    axis = positive_axis(a.get("dim", 0), ndim_of(result))
    return g.node("Concat", [g.operand(t, dtype) for t in tensors], axis=axis)


@_register("stack")
def _stack(g, a, result):
    dtype = dtype_of(result)
    axis = positive_axis(a.get("dim", 0), ndim_of(result))
    parts = [g.unsqueeze(g.operand(t, dtype), [axis]) for t in a["tensors"]]
    return g.node("Concat", parts, axis=axis)


@_register("split", "chunk", "tensor_split", "unbind")
def _split(g, a, result):
    x = a.get("input", a.get("tensor"))
    dim = positive_axis(a.get("dim", 0), ndim_of(x))
    pieces = list(result)
    if len(pieces) == 1:
        out = g.node("Identity", [g.value(x)])
    else:
        sizes = [p.shape[dim] if ndim_of(p) == ndim_of(x) else 1 for p in pieces]
        out = g.node("Split", [g.value(x), g.ints(sizes, "split")], n_outputs=len(pieces), axis=dim)
    out = [out] if isinstance(out, str) else out
    if pieces and ndim_of(pieces[0]) < ndim_of(x):  # unbind drops the dim
        out = [g.node("Squeeze", [o, g.ints([dim], "axes")]) for o in out]
    return out


@_register("expand")
def _expand(g, a, result):
    x = a["input"]
    sizes = _shape_arg(a["sizes"])
    shape = list(x.shape)
    offset = len(sizes) - len(shape)
    # 1 keeps the input's dim through broadcasting, so dynamic axes stay dynamic
    dims = [
        1 if s == -1 or (i >= offset and shape[i - offset] == s) else s for i, s in enumerate(sizes)
    ]
    return g.node("Expand", [g.value(x), g.ints(dims, "shape")])


@_register("expand_as", "broadcast_to")
def _expand_as(g, a, result):
    other = a.get("other")
    if isinstance(other, Tensor):
        return g.node("Expand", [g.value(a["input"]), g.node("Shape", [g.value(other)])])
    return _expand(g, {"input": a["input"], "sizes": (list(result.shape),)}, result)


@_register("narrow")
def _narrow(g, a, result):
    x = a["input"]
    dim = positive_axis(a["dim"], ndim_of(x))
    start = int(a["start"])
    if start < 0:
        start += x.shape[dim]
    ends = g.ints([start + int(a["length"])], "ends")
    return g.node("Slice", [g.value(x), g.ints([start], "starts"), ends, g.ints([dim], "axes")])


@_register("gather")
def _gather(g, a, result):
    x = a["input"]
    index = g.operand(a["index"], np.int64)
    return g.node("GatherElements", [g.value(x), index], axis=positive_axis(a["dim"], ndim_of(x)))


@_register("index_select")
def _index_select(g, a, result):
    x = a["input"]
    index = g.operand(a["index"], np.int64)
    return g.node("Gather", [g.value(x), index], axis=positive_axis(a["dim"], ndim_of(x)))


@_register("embedding")
def _embedding(g, a, result):
    if a.get("max_norm") is not None:
        raise OnnxExporterError("embedding with max_norm (renormalizes weights) has no mapping")
    return g.node("Gather", [g.value(a["weight"]), g.operand(a["input"], np.int64)], axis=0)


@_register("getitem")
def _getitem(g, a, result):
    """Basic and single-tensor indexing: Slice for slices, Gather for ints and an integer
    tensor, Unsqueeze for None."""
    x = a["input"]
    key = a["key"]
    key = key if isinstance(key, tuple) else (key,)
    ndim = ndim_of(x)
    used = sum(1 for k in key if k is not None and k is not Ellipsis and not _is_bool(k))
    if any(_is_bool(k) for k in key):
        raise OnnxExporterError("boolean-mask indexing has a data-dependent shape; no mapping")
    expanded = []
    for k in key:
        if k is Ellipsis:
            expanded += [slice(None)] * (ndim - used)
        else:
            expanded.append(k)
    expanded += [slice(None)] * (ndim - sum(1 for k in expanded if k is not None))
    name = g.value(x)
    starts, ends, axes, steps = [], [], [], []
    gathers, new_axes = [], []
    axis = out = 0
    tensor_indices = 0
    for k in expanded:
        if k is None:
            new_axes.append(out)
            out += 1
            continue
        if isinstance(k, slice):
            if k != slice(None):
                step = 1 if k.step is None else int(k.step)
                start = k.start if k.start is not None else (0 if step > 0 else -1)
                stop = k.stop
                if stop is None:
                    stop = INT64_MAX if step > 0 else -INT64_MAX
                starts.append(int(start))
                ends.append(int(stop))
                axes.append(axis)
                steps.append(step)
            out += 1
        elif isinstance(k, Tensor):
            tensor_indices += 1
            gathers.append((axis, g.operand(k, np.int64)))
            out += ndim_of(k)
        else:
            gathers.append((axis, g.ints([int(k)], "index")))
        axis += 1
    if tensor_indices > 1:
        raise OnnxExporterError("indexing with more than one tensor has no mapping")
    if starts:
        name = g.node(
            "Slice",
            [
                name,
                g.ints(starts, "starts"),
                g.ints(ends, "ends"),
                g.ints(axes, "axes"),
                g.ints(steps, "steps"),
            ],
        )
    for gather_axis, index in reversed(gathers):
        if index.startswith("index"):  # a Python int drops its dim
            name = g.node("Gather", [name, index], axis=gather_axis)
            name = g.node("Squeeze", [name, g.ints([gather_axis], "axes")])
        else:
            name = g.node("Gather", [name, index], axis=gather_axis)
    if new_axes:
        name = g.unsqueeze(name, new_axes)
    return name


def _is_bool(k) -> bool:
    return isinstance(k, bool) or (isinstance(k, Tensor) and dtype_of(k) == np.bool_)


@_register("pad")
def _pad(g, a, result):
    x = a["input"]
    pad = [int(p) for p in a["pad"]]
    ndim = ndim_of(x)
    begins, ends = [0] * ndim, [0] * ndim
    for i in range(len(pad) // 2):  # pad pairs run from the last dim backwards
        begins[ndim - 1 - i], ends[ndim - 1 - i] = pad[2 * i], pad[2 * i + 1]
    mode = {"constant": "constant", "reflect": "reflect", "replicate": "edge"}.get(
        a.get("mode", "constant")
    )
    if mode is None:
        raise OnnxExporterError(f"pad mode {a.get('mode')!r} has no mapping")
    inputs = [g.value(x), g.ints(begins + ends, "pads")]
    if mode == "constant":
        inputs.append(g.operand(a.get("value") or 0, dtype_of(x)))
    return g.node("Pad", inputs, mode=mode)


# --- convolutions and pools -----------------------------------------------------------------
def _conv_attributes(a, spatial: int, weight) -> dict:
    stride = _tuple(a.get("stride", 1), spatial)
    dilation = _tuple(a.get("dilation", 1), spatial)
    padding = a.get("padding", 0)
    if padding == "valid":
        pads = [0] * (2 * spatial)
    elif padding == "same":
        totals = [d * (k - 1) for d, k in zip(dilation, weight.shape[2:])]
        pads = [t // 2 for t in totals] + [t - t // 2 for t in totals]
    else:
        p = _tuple(padding, spatial)
        pads = p + p
    return {
        "strides": stride,
        "dilations": dilation,
        "pads": pads,
        "group": int(a.get("groups", 1)),
        "kernel_shape": [int(k) for k in weight.shape[2:]],
    }


def _conv(spatial: int):
    def symbolic(g, a, result):
        weight, bias = a["weight"], a.get("bias")
        inputs = [g.value(a["input"]), g.value(weight)] + (
            [g.value(bias)] if bias is not None else []
        )
        return g.node("Conv", inputs, **_conv_attributes(a, spatial, weight))

    return symbolic


def _conv_transpose(spatial: int):
    def symbolic(g, a, result):
        weight, bias = a["weight"], a.get("bias")
        attributes = _conv_attributes(a, spatial, weight)
        attributes["output_padding"] = _tuple(a.get("output_padding", 0), spatial)
        inputs = [g.value(a["input"]), g.value(weight)] + (
            [g.value(bias)] if bias is not None else []
        )
        return g.node("ConvTranspose", inputs, **attributes)

    return symbolic


for _n in (1, 2, 3):
    SYMBOLICS[f"conv{_n}d"] = _conv(_n)
    SYMBOLICS[f"conv_transpose{_n}d"] = _conv_transpose(_n)


def _pool_window(a, spatial: int) -> dict:
    """The ``kernel_shape``/``strides``/``pads`` of a pooling call (the stride defaults to the
    kernel, as in PyTorch, when it is missing or empty)."""
    kernel = _tuple(a["kernel_size"], spatial)
    stride = a.get("stride")
    stride = kernel if stride is None or stride == [] or stride == () else _tuple(stride, spatial)
    p = _tuple(a.get("padding", 0), spatial)
    return {"kernel_shape": kernel, "strides": stride, "pads": p + p}


def _max_pool(spatial: int):
    def symbolic(g, a, result):
        if a.get("return_indices"):
            raise OnnxExporterError("max pooling with return_indices has no mapping")
        return g.node(
            "MaxPool",
            [g.value(a["input"])],
            **_pool_window(a, spatial),
            dilations=_tuple(a.get("dilation", 1), spatial),
            ceil_mode=int(bool(a.get("ceil_mode", False))),
        )

    return symbolic


def _avg_pool(spatial: int):
    def symbolic(g, a, result):
        if a.get("divisor_override") is not None:
            raise OnnxExporterError("avg pooling with divisor_override has no mapping")
        return g.node(
            "AveragePool",
            [g.value(a["input"])],
            **_pool_window(a, spatial),
            ceil_mode=int(bool(a.get("ceil_mode", False))),
            count_include_pad=int(bool(a.get("count_include_pad", True))),
        )

    return symbolic


def _adaptive_pool(spatial: int, global_op: str, pool_op: str):
    def symbolic(g, a, result):
        x = a["input"]
        if isinstance(result, tuple) or a.get("return_indices"):
            raise OnnxExporterError("adaptive max pooling with return_indices has no mapping")
        sizes = list(x.shape[-spatial:])
        wanted = a["output_size"]
        wanted = _tuple(wanted, spatial) if not isinstance(wanted, (list, tuple)) else list(wanted)
        wanted = [s if w is None else int(w) for w, s in zip(wanted, sizes)]
        if all(w == 1 for w in wanted):
            return g.node(global_op, [g.value(x)])
        if any(s % w for s, w in zip(sizes, wanted)):
            raise OnnxExporterError(
                f"adaptive pooling from {sizes} to {wanted} (sizes not divisible) has no mapping"
            )
        kernel = [s // w for s, w in zip(sizes, wanted)]
        return g.node(pool_op, [g.value(x)], kernel_shape=kernel, strides=kernel)

    return symbolic


for _n in (1, 2):
    SYMBOLICS[f"max_pool{_n}d"] = _max_pool(_n)
    SYMBOLICS[f"avg_pool{_n}d"] = _avg_pool(_n)
SYMBOLICS["adaptive_avg_pool2d"] = _adaptive_pool(2, "GlobalAveragePool", "AveragePool")


def _any_rank(make):
    """The ``*_nd(..., nd=)`` forms behind the 1d/2d/3d functions."""
    symbolics = {n: make(n) for n in (1, 2, 3)}
    return lambda g, a, result: symbolics[int(a["nd"])](g, a, result)


SYMBOLICS["max_pool_nd"] = _any_rank(_max_pool)
SYMBOLICS["avg_pool_nd"] = _any_rank(_avg_pool)
SYMBOLICS["adaptive_avg_pool"] = _any_rank(
    lambda n: _adaptive_pool(n, "GlobalAveragePool", "AveragePool")
)
SYMBOLICS["adaptive_max_pool"] = _any_rank(lambda n: _adaptive_pool(n, "GlobalMaxPool", "MaxPool"))


# --- normalization --------------------------------------------------------------------------
def _ones_or(g, t, shape, dtype, fill: float) -> str:
    return g.value(t) if t is not None else g.const(np.full(shape, fill, dtype=dtype), "fill")


@_register("batch_norm")
def _batch_norm(g, a, result):
    x = a["input"]
    mean, var = a.get("running_mean"), a.get("running_var")
    if a.get("training") or mean is None or var is None:
        raise OnnxExporterError("batch_norm with batch statistics (training) has no mapping")
    channels = x.shape[1]
    dtype = dtype_of(x)
    inputs = [
        g.value(x),
        _ones_or(g, a.get("weight"), (channels,), dtype, 1.0),
        _ones_or(g, a.get("bias"), (channels,), dtype, 0.0),
        g.value(mean),
        g.value(var),
    ]
    return g.node("BatchNormalization", inputs, epsilon=float(a.get("eps", 1e-5)))


@_register("layer_norm")
def _layer_norm(g, a, result):
    x = a["input"]
    shape = _tuple(a["normalized_shape"], 1)
    dtype = dtype_of(x)
    inputs = [
        g.value(x),
        _ones_or(g, a.get("weight"), shape, dtype, 1.0),
        _ones_or(g, a.get("bias"), shape, dtype, 0.0),
    ]
    return g.node("LayerNormalization", inputs, axis=-len(shape), epsilon=float(a.get("eps", 1e-5)))


@_register("group_norm")
def _group_norm(g, a, result):
    # (x - mean) / sqrt(var + eps) over (C/G, *spatial) of each group, then per-channel affine
    x = a["input"]
    dtype = dtype_of(x)
    groups = int(a["num_groups"])
    name = g.value(x)
    grouped = g.reshape(name, [0, groups, -1])
    mean = g.reduce("ReduceMean", grouped, [2], True)
    diff = g.node("Sub", [grouped, mean])
    var = g.reduce("ReduceMean", g.node("Mul", [diff, diff]), [2], True)
    std = g.node("Sqrt", [g.node("Add", [var, g.operand(float(a.get("eps", 1e-5)), dtype)])])
    normed = g.node("Reshape", [g.node("Div", [diff, std]), g.node("Shape", [name])])
    channel_shape = [-1] + [1] * (ndim_of(x) - 2)
    if a.get("weight") is not None:
        normed = g.node("Mul", [normed, g.reshape(g.value(a["weight"]), channel_shape)])
    if a.get("bias") is not None:
        normed = g.node("Add", [normed, g.reshape(g.value(a["bias"]), channel_shape)])
    return normed


@_register("instance_norm")
def _instance_norm(g, a, result):
    x = a["input"]
    if not a.get("use_input_stats", True):
        return _batch_norm(g, {**a, "training": False}, result)
    channels = x.shape[1]
    dtype = dtype_of(x)
    inputs = [
        g.value(x),
        _ones_or(g, a.get("weight"), (channels,), dtype, 1.0),
        _ones_or(g, a.get("bias"), (channels,), dtype, 0.0),
    ]
    return g.node("InstanceNormalization", inputs, epsilon=float(a.get("eps", 1e-5)))


from ._symbolics_nn import register_nn_ops  # noqa: E402
from ._symbolics_seq import register_sequence_ops  # noqa: E402

register_nn_ops(SYMBOLICS)
register_sequence_ops(SYMBOLICS)
