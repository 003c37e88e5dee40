"""Table entries for the rest of ``nn.functional`` and the less common tensor ops: the
remaining activations, resampling, distances, sorting, masking, cumulative and triangular
ops. Same form as ``_symbolics``: ``symbolic(g, a, result)`` -> output name(s)."""

from __future__ import annotations

import math

import numpy as np

from ._graph import OnnxExporterError, dtype_of, ndim_of, positive_axis

INT64_MAX = np.iinfo(np.int64).max


def _x(g, a):
    return g.value(a["input"])


# --- activations ----------------------------------------------------------------------------
def _prelu(g, a, result):
    x, weight = a["input"], a["weight"]
    slope = g.value(weight)
    if ndim_of(x) >= 2 and weight.numel() > 1:  # one slope per channel (dim 1)
        slope = g.reshape(slope, [-1] + [1] * (ndim_of(x) - 2))
    return g.node("PRelu", [g.value(x), slope])


def _softmin(g, a, result):
    dim = a.get("dim")
    if dim is None:
        dim = 0 if ndim_of(a["input"]) in (0, 1, 3) else 1
    return g.node("Softmax", [g.node("Neg", [_x(g, a)])], axis=int(dim))


def _logsigmoid(g, a, result):
    # log σ(x) = -softplus(-x)
    return g.node("Neg", [g.node("Softplus", [g.node("Neg", [_x(g, a)])])])


def _shrink(soft: bool):
    def symbolic(g, a, result):
        lambd = float(a.get("lambd", 0.5))
        return g.node("Shrink", [_x(g, a)], lambd=lambd, bias=lambd if soft else 0.0)

    return symbolic


def _tanhshrink(g, a, result):
    x = _x(g, a)
    return g.node("Sub", [x, g.node("Tanh", [x])])


def _glu(g, a, result):
    x = a["input"]
    dim = positive_axis(a.get("dim", -1), ndim_of(x))
    half = x.shape[dim] // 2
    first, second = g.node("Split", [g.value(x), g.ints([half, half])], n_outputs=2, axis=dim)
    return g.node("Mul", [first, g.node("Sigmoid", [second])])


def _rrelu(g, a, result):
    if a.get("training"):
        raise OnnxExporterError("rrelu in training mode (random slopes) has no mapping")
    slope = (float(a.get("lower", 0.125)) + float(a.get("upper", 1 / 3))) / 2
    return g.node("LeakyRelu", [_x(g, a)], alpha=slope)


def _threshold(g, a, result):
    dtype = dtype_of(result)
    x = _x(g, a)
    above = g.node("Greater", [x, g.operand(a["threshold"], dtype)])
    return g.node("Where", [above, x, g.operand(a["value"], dtype)])


# --- resampling -----------------------------------------------------------------------------
def _pixel_shuffle(g, a, result):
    if ndim_of(a["input"]) != 4:
        raise OnnxExporterError("pixel_shuffle exports for 4-D input only")
    return g.node("DepthToSpace", [_x(g, a)], blocksize=int(a["upscale_factor"]), mode="CRD")


def _pixel_unshuffle(g, a, result):
    x = a["input"]
    if ndim_of(x) != 4:
        raise OnnxExporterError("pixel_unshuffle exports for 4-D input only")
    r = int(a["downscale_factor"])
    _, c, h, w = x.shape
    split = g.reshape(g.value(x), [0, c, h // r, r, w // r, r])
    moved = g.node("Transpose", [split], perm=[0, 1, 3, 5, 2, 4])
    return g.reshape(moved, [0, c * r * r, h // r, w // r])


def _interpolate(g, a, result):
    x = a["input"]
    mode = a.get("mode", "nearest")
    if a.get("antialias"):
        raise OnnxExporterError("interpolate with antialias has no mapping")
    spatial = ndim_of(x) - 2
    scale_factor = a.get("scale_factor")
    if scale_factor is not None and not a.get("recompute_scale_factor"):
        scales = scale_factor if isinstance(scale_factor, (list, tuple)) else [scale_factor]
        scales = [float(s) for s in scales] * (spatial if len(scales) == 1 else 1)
    else:
        scales = [o / i for o, i in zip(result.shape[2:], x.shape[2:])]
    attributes = {}
    if mode == "nearest":
        attributes = {
            "mode": "nearest",
            "coordinate_transformation_mode": "asymmetric",
            "nearest_mode": "floor",
        }
    elif mode == "nearest-exact":
        attributes = {
            "mode": "nearest",
            "coordinate_transformation_mode": "half_pixel",
            "nearest_mode": "round_prefer_ceil",
        }
    elif mode in ("linear", "bilinear", "trilinear"):
        align = a.get("align_corners")
        attributes = {
            "mode": "linear",
            "coordinate_transformation_mode": "align_corners" if align else "pytorch_half_pixel",
        }
        if align:  # align_corners maps by sizes, not scales
            sizes = g.node(
                "Concat",
                [
                    g.node("Slice", [g.node("Shape", [g.value(x)]), g.ints([0]), g.ints([2])]),
                    g.ints(result.shape[2:]),
                ],
                axis=0,
            )
            return g.node("Resize", [g.value(x), "", "", sizes], **attributes)
    else:
        raise OnnxExporterError(f"interpolate mode {mode!r} has no mapping")
    scales_name = g.const(np.asarray([1.0, 1.0] + scales, dtype=np.float32), "scales")
    return g.node("Resize", [g.value(x), "", scales_name], **attributes)


# --- products and distances -----------------------------------------------------------------
def _bilinear(g, a, result):
    # y_o = Σ_ij x1_i W_oij x2_j + b_o
    dtype = dtype_of(result)
    inputs = [g.operand(a["input1"], dtype), g.value(a["weight"]), g.operand(a["input2"], dtype)]
    out = g.node("Einsum", inputs, equation="...i,oij,...j->...o")
    bias = a.get("bias")
    return g.node("Add", [out, g.value(bias)]) if bias is not None else out


def _cosine_similarity(g, a, result):
    # Σ (x1/max(|x1|, eps)) (x2/max(|x2|, eps)) along dim
    dtype = dtype_of(result)
    dim = int(a.get("dim", 1))
    eps = g.operand(float(a.get("eps", 1e-8)), dtype)
    units = []
    for x in (a["x1"], a["x2"]):
        name = g.operand(x, dtype)
        norm = g.node("Max", [g.reduce("ReduceL2", name, [dim], True), eps])
        units.append(g.node("Div", [name, norm]))
    return g.reduce("ReduceSum", g.node("Mul", units), [dim], False)


def _pairwise_distance(g, a, result):
    dtype = dtype_of(result)
    p = float(a.get("p", 2.0))
    diff = g.node("Sub", [g.operand(a["x1"], dtype), g.operand(a["x2"], dtype)])
    diff = g.node("Add", [diff, g.operand(float(a.get("eps", 1e-6)), dtype)])
    op = {1.0: "ReduceL1", 2.0: "ReduceL2"}.get(p)
    if op is None:
        raise OnnxExporterError(f"pairwise_distance with p={p} has no mapping")
    return g.reduce(op, diff, [-1], a.get("keepdim", False))


def _normalize(g, a, result):
    dtype = dtype_of(result)
    p = float(a.get("p", 2.0))
    op = {1.0: "ReduceL1", 2.0: "ReduceL2"}.get(p)
    if op is None:
        raise OnnxExporterError(f"normalize with p={p} has no mapping")
    x = _x(g, a)
    norm = g.reduce(op, x, [int(a.get("dim", 1))], True)
    norm = g.node("Max", [norm, g.operand(float(a.get("eps", 1e-12)), dtype)])
    return g.node("Div", [x, norm])


def _local_response_norm(g, a, result):
    size = int(a["size"])
    if size % 2 == 0:
        raise OnnxExporterError("local_response_norm with an even size has no mapping")
    return g.node(
        "LRN",
        [_x(g, a)],
        size=size,
        alpha=float(a.get("alpha", 1e-4)),
        beta=float(a.get("beta", 0.75)),
        bias=float(a.get("k", 1.0)),
    )


def _addmm(g, a, result):
    dtype = dtype_of(result)
    inputs = [
        g.operand(a["mat1"], dtype),
        g.operand(a["mat2"], dtype),
        g.operand(a["input"], dtype),
    ]
    return g.node("Gemm", inputs, alpha=float(a.get("alpha", 1)), beta=float(a.get("beta", 1)))


def _baddbmm(g, a, result):
    dtype = dtype_of(result)
    product = g.node("MatMul", [g.operand(a["batch1"], dtype), g.operand(a["batch2"], dtype)])
    if a.get("alpha", 1) != 1:
        product = g.node("Mul", [product, g.operand(a["alpha"], dtype)])
    base = g.operand(a["input"], dtype)
    if a.get("beta", 1) != 1:
        base = g.node("Mul", [base, g.operand(a["beta"], dtype)])
    return g.node("Add", [base, product])


def _sdpa(g, a, result):
    """softmax(q kᵀ · scale + mask) v over the last two dims."""
    query, key, value = a["query"], a["key"], a["value"]
    if a.get("dropout_p", 0.0) > 0:
        raise OnnxExporterError("scaled_dot_product_attention with dropout has no mapping")
    if a.get("enable_gqa"):
        raise OnnxExporterError("scaled_dot_product_attention with enable_gqa has no mapping")
    dtype = dtype_of(result)
    scale = a.get("scale")
    scale = 1.0 / math.sqrt(query.shape[-1]) if scale is None else float(scale)
    perm = list(range(ndim_of(key)))
    perm[-1], perm[-2] = perm[-2], perm[-1]
    key_t = g.node("Transpose", [g.value(key)], perm=perm)
    scores = g.node("Mul", [g.node("MatMul", [g.value(query), key_t]), g.operand(scale, dtype)])
    mask = a.get("attn_mask")
    if a.get("is_causal"):
        length, source = query.shape[-2], key.shape[-2]
        causal = np.triu(np.full((length, source), -np.inf, dtype=dtype), 1)
        scores = g.node("Add", [scores, g.const(causal, "causal_mask")])
    if mask is not None:
        if dtype_of(mask) == np.bool_:  # True: attend
            additive = g.node(
                "Where", [g.value(mask), g.operand(0.0, dtype), g.operand(-np.inf, dtype)]
            )
        else:
            additive = g.operand(mask, dtype)
        scores = g.node("Add", [scores, additive])
    weights = g.node("Softmax", [scores], axis=-1)
    return g.node("MatMul", [weights, g.value(value)])


# --- elementwise leftovers ------------------------------------------------------------------
def _unary_chain(*steps):
    """``x`` through ONNX ops and constant arithmetic: ("Op",) or ("Add", constant)."""

    def symbolic(g, a, result):
        dtype = dtype_of(result)
        name = g.operand(a["input"], dtype)
        for step in steps:
            if len(step) == 1:
                name = g.node(step[0], [name])
            else:
                op, constant, *order = step
                operands = [name, g.operand(constant, dtype)]
                name = g.node(op, operands[::-1] if order else operands)
        return name

    return symbolic


def _square(g, a, result):
    x = g.operand(a["input"], dtype_of(result))
    return g.node("Mul", [x, x])


def _trunc(g, a, result):
    x = _x(g, a)
    negative = g.node("Less", [x, g.operand(0, dtype_of(a["input"]))])
    return g.node("Where", [negative, g.node("Ceil", [x]), g.node("Floor", [x])])


def _logical(op_type):
    def symbolic(g, a, result):
        return g.node(op_type, [g.operand(a["input"], np.bool_), g.operand(a["other"], np.bool_)])

    return symbolic


def _bitwise(op_type):
    def symbolic(g, a, result):
        dtype = dtype_of(result)
        if dtype == np.bool_:
            return _logical(op_type)(g, a, result)
        if g.opset < 18:
            raise OnnxExporterError(f"bitwise ops on integers need opset 18 (got {g.opset})")
        inputs = [g.operand(a["input"], dtype), g.operand(a["other"], dtype)]
        return g.node("Bitwise" + op_type, inputs)

    return symbolic


def _fmod(g, a, result):
    dtype = dtype_of(result)
    return g.node("Mod", [g.operand(a["input"], dtype), g.operand(a["other"], dtype)], fmod=1)


def _remainder(g, a, result):
    dtype = dtype_of(result)
    x, y = g.operand(a["input"], dtype), g.operand(a["other"], dtype)
    if not np.issubdtype(dtype, np.floating):
        return g.node("Mod", [x, y], fmod=0)
    # x - floor(x / y) * y, the sign of y as in Python
    return g.node("Sub", [x, g.node("Mul", [g.node("Floor", [g.node("Div", [x, y])]), y])])


def _masked_fill(g, a, result):
    dtype = dtype_of(result)
    mask = g.operand(a["mask"], np.bool_)
    return g.node("Where", [mask, g.operand(a["value"], dtype), g.operand(a["input"], dtype)])


def _like(fill):
    def symbolic(g, a, result):
        value = fill if fill is not None else a["fill_value"]
        from onnx import numpy_helper

        tensor = numpy_helper.from_array(np.asarray([value], dtype=dtype_of(result)), "value")
        return g.node("ConstantOfShape", [g.node("Shape", [_x(g, a)])], value=tensor)

    return symbolic


# --- cumulative, sorting, reordering --------------------------------------------------------
def _cumsum(g, a, result):
    x = a["input"]
    dim = positive_axis(a["dim"], ndim_of(x))
    axis = g.const(np.asarray(dim, dtype=np.int64), "axis")  # a 0-D tensor
    return g.node("CumSum", [g.operand(x, dtype_of(result)), axis])


def _topk(g, a, result):
    x = a["input"]
    dim = positive_axis(a.get("dim", -1), ndim_of(x))
    k = g.ints([int(a["k"])], "k")
    return g.node(
        "TopK", [g.value(x), k], n_outputs=2, axis=dim, largest=int(bool(a.get("largest", True)))
    )


def _sort(g, a, result):
    x = a["input"]
    dim = positive_axis(a.get("dim", -1), ndim_of(x))
    k = g.ints([x.shape[dim]], "k")
    largest = int(bool(a.get("descending", False)))
    return g.node("TopK", [g.value(x), k], n_outputs=2, axis=dim, largest=largest)


def _flip(g, a, result):
    x = a["input"]
    dims = a["dims"] if a.get("dims") is not None else a["listed"]  # flip(x, dims=) or listed
    if isinstance(dims, int):
        dims = (dims,)
    if len(dims) == 1 and isinstance(dims[0], (list, tuple)):
        dims = dims[0]
    axes = [positive_axis(d, ndim_of(x)) for d in dims]
    n = len(axes)
    inputs = [
        g.value(x),
        g.ints([-1] * n, "starts"),
        g.ints([-INT64_MAX] * n, "ends"),
        g.ints(axes, "axes"),
        g.ints([-1] * n, "steps"),
    ]
    return g.node("Slice", inputs)


def _roll(g, a, result):
    x = a["input"]
    shifts, dims = a["shifts"], a.get("dims")
    shifts = list(shifts) if isinstance(shifts, (list, tuple)) else [shifts]
    name = g.value(x)
    if dims is None or dims == ():
        flat = g.reshape(name, [-1])
        rolled = _roll_axis(g, flat, int(shifts[0]), 0, x.numel())
        return g.node("Reshape", [rolled, g.node("Shape", [name])])
    dims = list(dims) if isinstance(dims, (list, tuple)) else [dims]
    for shift, dim in zip(shifts, dims):
        axis = positive_axis(dim, ndim_of(x))
        name = _roll_axis(g, name, int(shift), axis, x.shape[axis])
    return name


def _roll_axis(g, name, shift, axis, size):
    shift %= size
    if shift == 0:
        return name
    tail = g.node("Slice", [name, g.ints([size - shift]), g.ints([INT64_MAX]), g.ints([axis])])
    head = g.node("Slice", [name, g.ints([0]), g.ints([size - shift]), g.ints([axis])])
    return g.node("Concat", [tail, head], axis=axis)


def _repeat(g, a, result):
    x = a["input"]
    repeats = a.get("repeats", a.get("dims"))
    if isinstance(repeats, tuple) and len(repeats) == 1 and isinstance(repeats[0], (list, tuple)):
        repeats = repeats[0]
    repeats = [int(r) for r in (repeats if isinstance(repeats, (list, tuple)) else [repeats])]
    name = g.value(x)
    if len(repeats) > ndim_of(x):
        name = g.reshape(name, [1] * (len(repeats) - ndim_of(x)) + list(x.shape))
    elif len(repeats) < ndim_of(x):  # tile pads the repeats with leading ones
        repeats = [1] * (ndim_of(x) - len(repeats)) + repeats
    return g.node("Tile", [name, g.ints(repeats, "repeats")])


def _triangle(upper: bool):
    def symbolic(g, a, result):
        k = g.const(np.asarray(int(a.get("diagonal", 0)), dtype=np.int64), "k")  # 0-D
        return g.node("Trilu", [_x(g, a), k], upper=int(upper))

    return symbolic


def _one_hot(g, a, result):
    indices = a.get("tensor", a.get("input"))
    depth = result.shape[-1]
    values = g.const(np.asarray([0, 1], dtype=dtype_of(result)), "one_hot_values")
    return g.node(
        "OneHot", [g.operand(indices, np.int64), g.ints([depth], "depth"), values], axis=-1
    )


def register_nn_ops(table: dict) -> None:
    ln2 = math.log(2.0)
    table.update(
        {
            "prelu": _prelu,
            "softmin": _softmin,
            "logsigmoid": _logsigmoid,
            "hardshrink": _shrink(False),
            "softshrink": _shrink(True),
            "tanhshrink": _tanhshrink,
            "glu": _glu,
            "rrelu": _rrelu,
            "threshold": _threshold,
            "pixel_shuffle": _pixel_shuffle,
            "pixel_unshuffle": _pixel_unshuffle,
            "interpolate": _interpolate,
            "bilinear": _bilinear,
            "cosine_similarity": _cosine_similarity,
            "pairwise_distance": _pairwise_distance,
            "normalize": _normalize,
            "local_response_norm": _local_response_norm,
            "addmm": _addmm,
            "baddbmm": _baddbmm,
            "scaled_dot_product_attention": _sdpa,
            "erfc": _unary_chain(("Erf",), ("Sub", 1.0, "reversed")),
            "log1p": _unary_chain(("Add", 1.0), ("Log",)),
            "expm1": _unary_chain(("Exp",), ("Sub", 1.0)),
            "log2": _unary_chain(("Log",), ("Div", ln2)),
            "square": _square,
            "trunc": _trunc,
            "isnan": lambda g, a, result: g.node("IsNaN", [_x(g, a)]),
            "logical_and": _logical("And"),
            "logical_or": _logical("Or"),
            "logical_xor": _logical("Xor"),
            "bitwise_and": _bitwise("And"),
            "bitwise_or": _bitwise("Or"),
            "bitwise_xor": _bitwise("Xor"),
            "fmod": _fmod,
            "remainder": _remainder,
            "masked_fill": _masked_fill,
            "zeros_like": _like(0),
            "ones_like": _like(1),
            "full_like": _like(None),
            "cumsum": _cumsum,
            "topk": _topk,
            "sort": _sort,
            "flip": _flip,
            "roll": _roll,
            "repeat": _repeat,
            "tile": _repeat,
            "tril": _triangle(False),
            "triu": _triangle(True),
            "one_hot": _one_hot,
        }
    )


__all__ = ["register_nn_ops"]
