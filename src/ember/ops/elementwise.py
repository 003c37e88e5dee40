"""Elementwise ops: forward kernels and their derivatives, side by side.

Each backward formula is written with ember ops, so running it under ``create_graph=True``
records a graph and higher derivatives come for free. Broadcast gradients are reduced by the
engine, not here.
"""

from __future__ import annotations

import builtins
import math

from .. import _backend
from .. import _dtype as dt
from .._kernels.pointwise_backward import backward_map as _backward_map
from .._tensor import Tensor
from .._type_info import finfo, iinfo
from ..autograd.node import Node, torch_node_name
from . import complex as _complex
from ._dispatch import (
    _SCALAR_ARRAYS as _SCALARS,
)
from ._dispatch import (
    NUMBERS,
    NUMPY_ARRAY,
    array_module,
    broadcast_error,
    cast,
    data_of,
    float_result,
    grad_state,
    named,
    no_grad_result,
    non_differentiable,
    promote,
    record,
    result,
    to_tensor,
    wrap,
)

_conj = _complex.conj_of
# NumPy's ufuncs (ops import no NumPy), for calls split over ember's pool: a large array's
# pass runs on every core (_backend.split_ufunc: the values of one call, bit for bit)
_HOST = array_module(NUMPY_ARRAY(0))
_SPLIT_FROM = _backend.SPLIT_FROM
_split_ufunc = _backend.split_ufunc
LN2 = math.log(2.0)
LN10 = math.log(10.0)
TWO_OVER_SQRT_PI = 2.0 / math.sqrt(math.pi)


# --------------------------------------------------------------------------------------------
# Unary ops: name -> (kernel(xp, x), derivative(g, x, y), saves, computes in floating point)
# ``saves`` says which of input x and output y the derivative reads.
# --------------------------------------------------------------------------------------------
def _zeros(g, x, y):
    return g * 0


UNARY = {
    "neg": (lambda xp, x: -x, lambda g, x, y: -g, "", False),
    "exp": (lambda xp, x: xp.exp(x), lambda g, x, y: g * y, "y", True),  # d exp = exp
    "exp2": (lambda xp, x: xp.exp2(x), lambda g, x, y: g * y * LN2, "y", True),
    "expm1": (lambda xp, x: xp.expm1(x), lambda g, x, y: g * (y + 1), "y", True),
    "log": (lambda xp, x: xp.log(x), lambda g, x, y: g / x, "x", True),  # d log = 1/x
    "log2": (lambda xp, x: xp.log2(x), lambda g, x, y: g / (x * LN2), "x", True),
    "log10": (lambda xp, x: xp.log10(x), lambda g, x, y: g / (x * LN10), "x", True),
    "log1p": (lambda xp, x: xp.log1p(x), lambda g, x, y: g / (x + 1), "x", True),
    "sqrt": (lambda xp, x: xp.sqrt(x), lambda g, x, y: g / (y * 2), "y", True),
    # d x^-1/2 = -1/2 x^-3/2 = -y³/2
    "rsqrt": (lambda xp, x: 1 / xp.sqrt(x), lambda g, x, y: g * (y * y * y) * -0.5, "y", True),
    "square": (lambda xp, x: x * x, lambda g, x, y: g * (x * 2), "x", False),
    "abs": (lambda xp, x: xp.abs(x), lambda g, x, y: g * x.sign(), "x", False),
    "sign": (lambda xp, x: _sign_kernel(xp, x), _zeros, "", False),
    "sin": (lambda xp, x: xp.sin(x), lambda g, x, y: g * x.cos(), "x", True),
    "cos": (lambda xp, x: xp.cos(x), lambda g, x, y: -(g * x.sin()), "x", True),
    "tan": (lambda xp, x: xp.tan(x), lambda g, x, y: g * (y * y + 1), "y", True),  # 1 + tan²
    "asin": (lambda xp, x: xp.arcsin(x), lambda g, x, y: g / (1 - x * x).sqrt(), "x", True),
    "acos": (lambda xp, x: xp.arccos(x), lambda g, x, y: -(g / (1 - x * x).sqrt()), "x", True),
    "atan": (lambda xp, x: xp.arctan(x), lambda g, x, y: g / (x * x + 1), "x", True),
    "sinh": (lambda xp, x: xp.sinh(x), lambda g, x, y: g * x.cosh(), "x", True),
    "cosh": (lambda xp, x: xp.cosh(x), lambda g, x, y: g * x.sinh(), "x", True),
    "tanh": (lambda xp, x: xp.tanh(x), lambda g, x, y: tanh_backward(g, y), "y", True),
    "asinh": (lambda xp, x: xp.arcsinh(x), lambda g, x, y: g / (x * x + 1).sqrt(), "x", True),
    "acosh": (lambda xp, x: xp.arccosh(x), lambda g, x, y: g / (x * x - 1).sqrt(), "x", True),
    "atanh": (lambda xp, x: xp.arctanh(x), lambda g, x, y: g / (1 - x * x), "x", True),
    "sigmoid": (
        lambda xp, x: _sigmoid_kernel(xp, x),
        lambda g, x, y: sigmoid_backward(g, y),
        "y",
        True,
    ),
    # d erf = 2/√π e^{-x²}
    "erf": (
        lambda xp, x: _backend.erf(xp, x),
        lambda g, x, y: g * ((-(x * x)).exp() * TWO_OVER_SQRT_PI),
        "x",
        True,
    ),
    "erfc": (
        lambda xp, x: _backend.erfc(xp, x),
        lambda g, x, y: g * ((-(x * x)).exp() * -TWO_OVER_SQRT_PI),
        "x",
        True,
    ),
    "relu": (
        lambda xp, x: _relu(xp, x),
        lambda g, x, y: threshold_backward(g, y, 0),
        "y",
        False,
    ),
    "reciprocal": (lambda xp, x: 1 / x, lambda g, x, y: g * -(y * y), "y", True),
    # integers are their own floor; bfloat16's NumPy kind is "V", so test for integers
    "floor": (lambda xp, x: x.copy() if x.dtype.kind in "iu" else xp.floor(x), _zeros, "", False),
    "ceil": (lambda xp, x: x.copy() if x.dtype.kind in "iu" else xp.ceil(x), _zeros, "", False),
    "trunc": (lambda xp, x: x.copy() if x.dtype.kind in "iu" else xp.trunc(x), _zeros, "", False),
    "frac": (lambda xp, x: x - xp.trunc(x), lambda g, x, y: g, "", False),
}

# torch's node where it is not the op's own name (square is recorded as pow(x, 2))
NODE_NAMES = {"relu": "ReluBackward0", "sigmoid": "SigmoidBackward0", "square": "PowBackward0"}

# PyTorch has no bool kernel for these (the kernel name its error message gives)
NO_BOOL_KERNEL = {
    "abs": "abs_cpu",
    "floor": "floor_vml_cpu",
    "ceil": "ceil_vml_cpu",
    "trunc": "trunc_vml_cpu",
    "frac": "frac_cpu",
}


def _integer_input_error(name: str, input: Tensor) -> Exception | None:
    """PyTorch's refusal of a bool or integer input to a non-floating unary op, if any."""
    kind = input._data.dtype.kind
    if kind == "b" and name in NO_BOOL_KERNEL or name == "frac":
        kernel = NO_BOOL_KERNEL[name]
        return NotImplementedError(f"\"{kernel}\" not implemented for '{input.dtype.legacy_name}'")
    if kind == "b" and name == "neg":
        return RuntimeError(
            "Negation, the `-` operator, on a bool tensor is not supported. If you are "
            "trying to invert a mask, use the `~` or `logical_not()` operator instead."
        )
    if kind == "b" and name == "relu":
        return RuntimeError("Boolean inputs not supported for relu")
    return None


# --------------------------------------------------------------------------------------------
# Fused backward kernels of common activations: one op instead of three in every backward
# pass, each differentiable again through its own formula (as PyTorch's tanh_backward ...).
# --------------------------------------------------------------------------------------------
def _same_arrays(first, *others) -> bool:
    """Arrays of one class, float32/float64 dtype and shape (not 0-d), so that a formula may
    run on them directly with ``out=``."""
    if first.dtype.char not in "fd" or not first.ndim:
        return False
    kind, dtype, shape = first.__class__, first.dtype, first.shape
    return all(a.__class__ is kind and a.dtype == dtype and a.shape == shape for a in others)


class TanhBackwardBackward0(Node):
    def backward(self, gg):
        g, y = self.unpack_saved()
        edges = self._edges
        # out = g (1 - y²):  d/dg = 1 - y²,  d/dy = -2 g y
        if not grad_state.enabled and _same_arrays(gg._data, g._data, y._data):
            # no graph to record (a Hessian-vector product's second pass): the same
            # operations in the same order on the arrays, without six ops' dispatch
            gg_data = gg._data
            if not gg_data.flags.c_contiguous and y._data.flags.c_contiguous:
                # a transposed gradient (a weight gradient's, flowing back): mixed layouts
                # make every op below a strided loop; one copy costs less than that
                gg_data = array_module(gg_data).ascontiguousarray(gg_data)
            dg = dy = None
            if edges[0] is not None:
                dg = y._data * y._data
                xp = array_module(dg)
                xp.subtract(1, dg, out=dg)
                xp.multiply(gg_data, dg, out=dg)
            if edges[1] is not None:
                dy = gg_data * g._data
                dy *= y._data
                dy *= -2
            return (None if dg is None else wrap(dg)), (None if dy is None else wrap(dy))
        return (
            gg * (1 - y * y) if edges[0] is not None else None,
            gg * g * y * -2 if edges[1] is not None else None,
        )


# The fused backward formulas write their temporaries in place (out=) from this size: below
# it NumPy's keyword handling costs more than the allocations it saves (a 1-element tanh
# backward: 4 us in place, 2 us as one expression; the roundings are the same).
IN_PLACE_FROM = 1 << 12


def _relu(xp, x):
    """max(x, 0); one compiled pass on a large C-contiguous float array (NumPy's maximum takes
    ~5x an add's time), the same values; other layouts keep NumPy's (and their strides)."""
    if x.size >= COMPILED_FROM and x.flags.c_contiguous:
        kernels = _backend.compiled_kernels("activation_jit", x)
        if kernels is not None:
            return _backend.compiled_map(kernels.relu, x)
    return xp.maximum(x, 0)


def _compiled_backward(name: str, g, y):
    """``activation_jit.<name>(g, y)`` (the NumPy path's roundings) on a large float array, split
    over ember's pool; None where the kernels are off or do not apply."""
    if y.size < COMPILED_FROM:
        return None
    kernels = _backend.compiled_kernels("activation_jit", g, y)
    if kernels is None:
        return None
    one = y.dtype.type(1)
    return _backend.compiled_map(getattr(kernels, name), g, y, constants=(one,))


def _fusable(g, y) -> bool:
    """Large C-contiguous NumPy arrays of one shape and dtype: a fused backward formula may
    run over them span by span (flat views), split over ember's pool."""
    return (
        y.size >= _SPLIT_FROM["binary"]
        and g.__class__ is NUMPY_ARRAY
        and y.__class__ is NUMPY_ARRAY
        and g.dtype == y.dtype
        and g.flags.c_contiguous
        and y.flags.c_contiguous
    )


def tanh_backward(grad: Tensor, output: Tensor) -> Tensor:
    """grad · (1 - output²), the gradient of tanh given its output."""
    g, y = grad._data, output._data
    fused = _compiled_backward("tanh_backward", g, y)
    if fused is not None:
        data = fused
    elif y.size < IN_PLACE_FROM or g.shape != y.shape:  # 0-d results are scalars: no out=
        data = g * (1 - y * y)
    elif _fusable(g, y):
        data = _HOST.empty_like(y)
        gf, yf, df = g.reshape(-1), y.reshape(-1), data.reshape(-1)

        def span(lo, hi):  # the three passes, one span at a time while it is in cache
            d, ys = df[lo:hi], yf[lo:hi]
            _HOST.multiply(ys, ys, out=d)
            _HOST.subtract(1, d, out=d)
            _HOST.multiply(gf[lo:hi], d, out=d)

        _backend.split_flat(span, y.size, _SPLIT_FROM["binary"])
    else:
        data = y * y
        xp = array_module(data)
        xp.subtract(1, data, out=data)
        xp.multiply(g, data, out=data)
    return result(TanhBackwardBackward0, data, (grad, output), (grad, output))


class SigmoidBackwardBackward0(Node):
    def backward(self, gg):
        g, y = self.unpack_saved()
        edges = self._edges
        # out = g y (1 - y):  d/dg = y (1 - y),  d/dy = g (1 - 2y)
        return (
            gg * y * (1 - y) if edges[0] is not None else None,
            gg * g * (1 - y * 2) if edges[1] is not None else None,
        )


def sigmoid_backward(grad: Tensor, output: Tensor) -> Tensor:
    """grad · output · (1 - output), the gradient of sigmoid given its output."""
    g, y = grad._data, output._data
    fused = _compiled_backward("sigmoid_backward", g, y)
    if fused is not None:
        data = fused
    elif y.ndim == 0 or g.shape != y.shape:
        data = g * y * (1 - y)
    elif y.size < IN_PLACE_FROM:
        data = g * ((1 - y) * y)  # the in-place path's order
    elif _fusable(g, y):
        data = _HOST.empty_like(y)
        gf, yf, df = g.reshape(-1), y.reshape(-1), data.reshape(-1)

        def span(lo, hi):  # the three passes, one span at a time while it is in cache
            d = df[lo:hi]
            _HOST.subtract(1, yf[lo:hi], out=d)
            _HOST.multiply(d, yf[lo:hi], out=d)
            _HOST.multiply(gf[lo:hi], d, out=d)

        _backend.split_flat(span, y.size, _SPLIT_FROM["binary"])
    else:
        xp = array_module(y)
        data = xp.subtract(1, y)
        xp.multiply(data, y, out=data)
        xp.multiply(g, data, out=data)
    return result(SigmoidBackwardBackward0, data, (grad, output), (grad, output))


class ThresholdBackwardBackward0(Node):
    def backward(self, gg):
        (y,) = self.unpack_saved()
        # piecewise constant in y: its gradient is zero (a zero tensor, as torch gives)
        g_y = y.new_zeros(y.shape) if self.needs(1) else None
        return threshold_backward(gg, y, self.threshold), g_y


def threshold_backward(grad: Tensor, output: Tensor, threshold: float) -> Tensor:
    """0 where output <= threshold, else grad (the gradient of relu and threshold; a NaN
    output lets its gradient through, as torch)."""
    g, y = grad._data, output._data
    data = None
    if threshold == 0 and g.flags.c_contiguous and y.flags.c_contiguous:
        data = _compiled_backward("relu_backward", g, y)
    if data is None:
        data = _backend.zero_where(y <= threshold, g)
    return result(ThresholdBackwardBackward0, data, (grad, output), (output,), threshold=threshold)


def _sign_kernel(xp, x):
    if dt.is_floating_array_dtype(x.dtype):  # PyTorch: sign(nan) = 0
        return (x > 0).astype(x.dtype) - (x < 0).astype(x.dtype)
    if x.dtype.kind == "b":
        return x.copy()
    return xp.sign(x)


def _sigmoid_kernel(xp, x):
    # σ(x) = 1/(1+e^-x), evaluated without overflow for large |x|
    e = xp.exp(-xp.abs(x))
    return xp.where(x >= 0, 1 / (1 + e), e / (1 + e)).astype(x.dtype, copy=False)


# compute-bound kernels worth splitting over threads for large tensors
# (name -> the array-module ufunc equal to the kernel, or None for composite kernels)
HEAVY = {
    "exp": "exp",
    "exp2": "exp2",
    "expm1": "expm1",
    "log": "log",
    "log2": "log2",
    "log10": "log10",
    "log1p": "log1p",
    "sin": "sin",
    "cos": "cos",
    "tan": "tan",
    "asin": "arcsin",
    "acos": "arccos",
    "atan": "arctan",
    "sinh": "sinh",
    "cosh": "cosh",
    "tanh": "tanh",
    "asinh": "arcsinh",
    "acosh": "arccosh",
    "atanh": "arctanh",
    "sigmoid": None,
    "sqrt": "sqrt",
    "rsqrt": None,
    "erf": None,
}

# float32 kernels of ember._kernels.activation_jit (one pass, split over ember's pool) and the
# size from which each runs. Measured CPU time per element against the NumPy path: erf 1/10
# (SciPy's float32 erf is scalar), sigmoid 1/7 (one pass instead of five), tanh and the fused
# tanh and sigmoid backward 1/2 to 2/3 (memory-bound: the gain shows from 2^16 elements); below
# these sizes the kernels' dispatch (5-8 microseconds) costs more than they save. jit.MIN_WORK
# (2^16) still applies on top: below it numba is never loaded, whatever these say.
COMPILED_FROM = 1 << 16  # the fused backward formulas
COMPILED_UNARY = {"tanh": 1 << 14, "sigmoid": 1 << 12, "erf": 1 << 10}

# memory-bound unary kernels that are one ufunc on floating arrays: split from
# SPLIT_FROM["unary"] elements (the HEAVY ones from SPLIT_FROM["costly"])
CHEAP_UFUNCS = {
    "neg": "negative",
    "abs": "absolute",
    "floor": "floor",
    "ceil": "ceil",
    "trunc": "trunc",
}


def _make_unary(name, kernel, derivative, saves, floating):
    save_x, save_y = "x" in saves, "y" in saves
    heavy = name in HEAVY
    parallel_map = _backend.parallel_map
    threshold = _backend.PARALLEL_MIN_ELEMENTS
    compiled_name = name + "_float32"
    compiled_from = COMPILED_UNARY.get(name, math.inf)  # inf: no compiled kernel
    ufunc = getattr(_HOST, HEAVY.get(name) or CHEAP_UFUNCS.get(name) or "", None)
    split_class = "costly" if heavy else "unary"
    floor = builtins.min(threshold, compiled_from, 1 << 12)  # no large-array path below
    # the smallest size that takes a large-array path (read per call: tests move the limits)

    def large_from():
        split_from = _SPLIT_FROM[split_class] if ufunc is not None or heavy else math.inf
        return builtins.min(threshold, compiled_from, split_from)

    def backward(self, g):
        x = self.unpack_saved()[0] if save_x else None
        y = self.saved_output() if save_y else None
        return derivative(g, x, y)

    node_name = NODE_NAMES.get(name, torch_node_name(name))
    fields = {"self": 0} if save_x else {"result": "result"} if save_y else {}
    if name == "square":  # torch's pow(x, 2)
        fields = {"self": 0, "exponent": ("value", 2)}
    node_cls = type(
        node_name,
        (Node,),
        {"backward": backward, "__module__": __name__, "torch_saved": fields},
    )

    modules = _backend._MODULE_OF_TYPE

    def op(input: Tensor) -> Tensor:
        data = input._data
        kind = data.dtype.kind
        if kind == "c":
            return _complex.unary(name, kernel, derivative, saves, input)
        if kind in "biu":
            if floating:
                input = float_result(name, input)
                data = input._data
            else:
                error = _integer_input_error(name, input)
                if error is not None:
                    raise error
                if name == "square" and kind == "b":  # PyTorch squares bools as int64
                    input = input.long()
                    data = input._data
        if data.size >= floor and data.size >= large_from():
            out = None
            if data.size >= compiled_from:
                kernels = _backend.compiled_kernels("activation_jit", data, dtypes="f")
                if kernels is not None:
                    out = _backend.compiled_map(getattr(kernels, compiled_name), data)
            if out is None:
                xp = modules[data.__class__]
                if (
                    ufunc is not None
                    and data.__class__ is NUMPY_ARRAY
                    and data.dtype.kind == "f"
                    and data.size >= _SPLIT_FROM[split_class]
                ):
                    out = _split_ufunc(ufunc, data, min_size=_SPLIT_FROM[split_class])
                elif heavy and data.size >= _SPLIT_FROM["costly"]:
                    out = parallel_map(kernel, xp, data)  # a composite kernel, span by span
                else:
                    out = kernel(xp, data)
        else:
            out = kernel(modules[data.__class__], data)
        if input._rg:
            if grad_state.enabled:
                return record(node_cls(), out, (input,), (input,) if save_x else (), save_y)
            return no_grad_result(node_cls, out, (input,))
        return wrap(out)

    named(op, name)
    op.__doc__ = f"Elementwise ``{name}`` (PyTorch's ``ember.{name}``), differentiable."
    return op, node_cls


for _name, _entry in UNARY.items():
    globals()[_name], globals()[_name.capitalize() + "Node"] = _make_unary(_name, *_entry)

arcsin, arccos, arctan, negative = asin, acos, atan, neg  # noqa: F821 - made above
sgn = sign  # noqa: F821


def positive(input: Tensor) -> Tensor:
    if input._data.dtype.kind == "b":
        raise RuntimeError("The `+` operator, on a bool tensor is not supported.")
    return input


def round(input: Tensor, *, decimals: int = 0) -> Tensor:
    xp = array_module(input._data)
    data = input._data
    kind = data.dtype.kind
    if kind == "b":
        raise NotImplementedError("\"round_vml_cpu\" not implemented for 'Bool'")
    out = data.copy() if kind in "iu" else xp.round(data, decimals)
    return result(RoundBackward0, out, (input,))


class RoundBackward0(Node):
    def backward(self, g):
        return g * 0


class LogitBackward0(Node):
    def backward(self, g):
        (x,) = self.unpack_saved()
        eps = self.eps
        # d logit = 1/(x(1-x)); zero outside [eps, 1-eps] when clamped
        grad = g / (x * (1 - x))
        if eps is not None:
            grad = grad.masked_fill((x < eps) | (x > 1 - eps), 0.0)
        return grad


def logit(input: Tensor, eps: float | None = None) -> Tensor:
    input = float_result("logit", input)
    data = input._data
    xp = array_module(data)
    work = data.astype(xp.float32) if data.dtype.itemsize < 4 else data  # half types: float32
    z = xp.clip(work, eps, 1 - eps) if eps is not None else work
    out = xp.log(z / (1 - z)).astype(data.dtype, copy=False)  # rounded once
    return result(LogitBackward0, out, (input,), (input,), eps=eps)


class NanToNumBackward0(Node):
    def backward(self, g):
        (x,) = self.unpack_saved()
        return g * x.isfinite()


def nan_to_num(input: Tensor, nan: float = 0.0, posinf=None, neginf=None) -> Tensor:
    data = input._data
    xp = array_module(data)
    if input.dtype is dt.bfloat16:  # NumPy's nan_to_num passes over ml_dtypes' bfloat16
        top = finfo(dt.bfloat16).max
        wide = data.astype("float32")
        posinf, neginf = top if posinf is None else posinf, -top if neginf is None else neginf
        out = xp.nan_to_num(wide, nan=nan, posinf=posinf, neginf=neginf).astype(data.dtype)
        return result(NanToNumBackward0, out, (input,), (input,))
    if data.dtype.kind != "f":
        return result(NanToNumBackward0, data.copy(), (input,), (input,))
    out = xp.nan_to_num(data, nan=nan, posinf=posinf, neginf=neginf)
    return result(NanToNumBackward0, out, (input,), (input,))


# --------------------------------------------------------------------------------------------
# Binary ops. Operands are promoted to PyTorch's result dtype; a Python number stays a number
# and the formulas use it as a constant.
# --------------------------------------------------------------------------------------------
def _number_as_tensor(value):
    """A Python number an op saved, as torch saves it: a 0-d tensor (None stays None)."""
    if value is None or isinstance(value, Tensor):
        return value
    return wrap(_backend.as_array(value))


class AddBackward0(Node):
    torch_saved = {"alpha": "alpha"}

    def backward(self, g):
        alpha = self.alpha
        return g, (g if alpha == 1 or self._edges[1] is None else g * alpha)


class SubBackward0(Node):
    torch_saved = {"alpha": "alpha"}

    def backward(self, g):
        if self._edges[1] is None:
            return g, None
        alpha = self.alpha
        return g, (-g if alpha == 1 else g * -alpha)


class AddNumberBackward(Node):  # tensor + number: the hot case (edges: the tensor, None)
    torch_name = "AddBackward0"
    torch_saved = {"alpha": ("value", 1)}

    def backward(self, g):
        return g, None


class SubNumberBackward(AddNumberBackward):
    torch_name = "SubBackward0"


class RsubBackward1(Node):  # number - tensor * alpha; torch's one input is the tensor
    torch_saved = {"alpha": "alpha"}

    def backward(self, g):
        alpha = self.alpha
        return -g if alpha == 1 else g * -alpha


def _large(a, b, op_class: str = "binary") -> bool:
    """Whether ``a (op) b`` is a NumPy pass worth splitting over ember's pool."""
    limit = _SPLIT_FROM[op_class]
    if a.__class__ is NUMPY_ARRAY:
        return a.size >= limit or (b.__class__ is NUMPY_ARRAY and b.size >= limit)
    return b.__class__ is NUMPY_ARRAY and b.size >= limit and a.__class__ in NUMBERS


def add(input, other, *, alpha=1, out=None) -> Tensor:
    if other.__class__ is float and input.__class__ is Tensor and alpha == 1:
        ad = input._data
        if ad.dtype.kind == "f" and ad.__class__ is NUMPY_ARRAY:  # the cache holds NumPy's
            scalar = _SCALARS.get((other, ad.dtype))
            if scalar is None:
                scalar = data_of(other, ad)
            if ad.size < _SPLIT_FROM["binary"]:
                data = ad + scalar
            else:
                data = _split_ufunc(_HOST.add, ad, scalar)
            if input._rg:
                if grad_state.enabled:
                    return record(AddNumberBackward(), data, (input, None))
                return no_grad_result(AddBackward0, data, (input,))
            return wrap(data)
    a, b = promote("add", input, other)
    if a.__class__ is not Tensor and not isinstance(a, Tensor):
        a, b = b, a  # a + b is symmetric: keep the tensor first
    ad = a._data
    bd = data_of(b, ad)
    try:
        if alpha != 1:
            data = ad + bd * alpha
        elif _large(ad, bd):
            data = _split_ufunc(_HOST.add, ad, bd)
        else:
            data = ad + bd
    except ValueError:
        raise broadcast_error("add", ad, bd) from None
    if a._rg or (b.__class__ not in NUMBERS and b._rg):
        if grad_state.enabled:
            node = AddBackward0()
            node.alpha = alpha
            return record(node, data, (a, b))
        return no_grad_result(AddBackward0, data, (a, b))
    return wrap(data)


def sub(input, other, *, alpha=1) -> Tensor:
    if other.__class__ is float and input.__class__ is Tensor and alpha == 1:
        ad = input._data
        if ad.dtype.kind == "f" and ad.__class__ is NUMPY_ARRAY:  # the cache holds NumPy's
            scalar = _SCALARS.get((other, ad.dtype))
            if scalar is None:
                scalar = data_of(other, ad)
            if ad.size < _SPLIT_FROM["binary"]:
                data = ad - scalar
            else:
                data = _split_ufunc(_HOST.subtract, ad, scalar)
            if input._rg and grad_state.enabled:
                return record(SubNumberBackward(), data, (input, None))
            return wrap(data)
    if (
        input.__class__ is bool
        or other.__class__ is bool
        or (isinstance(input, Tensor) and input._data.dtype.kind == "b")
        or (isinstance(other, Tensor) and other._data.dtype.kind == "b")
    ):
        _refuse_bool_subtraction(input, other)
    a, b = promote("sub", input, other)
    if not isinstance(a, Tensor):
        return _rsub(b, a, alpha)
    ad = a._data
    bd = data_of(b, ad)
    try:
        if alpha != 1:
            data = ad - bd * alpha
        elif _large(ad, bd):
            data = _split_ufunc(_HOST.subtract, ad, bd)
        else:
            data = ad - bd
    except ValueError:
        raise broadcast_error("sub", ad, bd) from None
    if grad_state.enabled and (a._rg or (b.__class__ not in NUMBERS and b._rg)):
        node = SubBackward0()
        node.alpha = alpha
        return record(node, data, (a, b))
    return wrap(data)


def _is_bool(x) -> bool:
    return x.__class__ is bool or (isinstance(x, Tensor) and x._data.dtype.kind == "b")


def _refuse_bool_subtraction(input, other) -> None:
    """PyTorch refuses subtraction with any bool operand, tensor or number."""
    a_bool, b_bool = _is_bool(input), _is_bool(other)
    if a_bool and b_bool:
        raise RuntimeError(
            "Subtraction, the `-` operator, with two bool tensors is not supported. Use the "
            "`^` or `logical_xor()` operator instead."
        )
    if a_bool or b_bool:
        raise RuntimeError(
            "Subtraction, the `-` operator, with a bool tensor is not supported. If you are "
            "trying to invert a mask, use the `~` or `logical_not()` operator instead."
        )


def _rsub(t: Tensor, s, alpha=1) -> Tensor:
    td = t._data
    data = data_of(s, td) - td * alpha if alpha != 1 else data_of(s, td) - td
    return result(RsubBackward1, data, (t,), alpha=alpha)


def _require_tensor_input(op: str, input, other) -> None:
    """(Tensor, Tensor) and (Tensor, Number) are torch's only signatures for ``op``."""
    if not isinstance(input, Tensor):
        got = ", ".join(type(v).__name__ for v in (input, other))
        raise TypeError(
            f"{op}() received an invalid combination of arguments - got ({got}), but expected "
            f"one of: (Tensor input, Tensor other), (Tensor input, Number other)"
        )


def rsub(input, other, *, alpha=1) -> Tensor:
    _require_tensor_input("rsub", input, other)
    return sub(other, input, alpha=alpha)


subtract = sub


class MulBackward0(Node):
    torch_saved = {
        "self": 0,
        "other": ("tensor", lambda node: _number_as_tensor(node.unpack_saved()[1])),
    }

    def backward(self, g):
        a, b = self.unpack_saved()
        if g._data.dtype.kind == "c":  # complex: each operand passes back g·conj(other)
            a, b = _conj(a), _conj(b)
        edges = self._edges
        return (g * b if edges[0] is not None else None), (g * a if edges[1] is not None else None)


def _half_by_number(ufunc, ad, number):
    """A float16/bfloat16 NumPy array times or over a Python number as ATen's mul and div
    kernels compute it: the number read in float32 (not first rounded to the 2-byte dtype, as
    NumPy and add/sub do), the result rounded once. (x * 0.1 in bfloat16 differs from NumPy's
    in a third of the elements.)"""
    f32 = _HOST.float32
    return ufunc(ad.astype(f32), f32(number)).astype(ad.dtype)


def _half_and_number(ad, b) -> bool:
    return (
        ad.__class__ is NUMPY_ARRAY
        and ad.dtype.itemsize == 2
        and b.__class__ in (float, int)
        and dt.is_floating_array_dtype(ad.dtype)
    )


def mul(input, other) -> Tensor:
    if other.__class__ is float and input.__class__ is Tensor:
        ad = input._data
        # the hot case: floating NumPy tensor times a Python float (the cache holds NumPy's)
        if ad.dtype.kind == "f" and ad.__class__ is NUMPY_ARRAY and ad.dtype.itemsize > 2:
            scalar = _SCALARS.get((other, ad.dtype))
            if scalar is None:
                scalar = data_of(other, ad)
            if ad.size < _SPLIT_FROM["binary"]:
                data = ad * scalar
            else:
                data = _split_ufunc(_HOST.multiply, ad, scalar)
            if input._rg:
                if grad_state.enabled:
                    node = MulByNumberBackward()
                    node.other = other
                    return record(node, data, (input, None))
                return no_grad_result(MulBackward0, data, (input,))
            return wrap(data)
    a, b = promote("mul", input, other)
    if not isinstance(a, Tensor):
        a, b = b, a
    ad = a._data
    bd = data_of(b, ad)
    try:
        if _half_and_number(ad, b):
            data = _half_by_number(_HOST.multiply, ad, b)
        else:
            data = _split_ufunc(_HOST.multiply, ad, bd) if _large(ad, bd) else ad * bd
    except ValueError:
        raise broadcast_error("mul", ad, bd) from None
    b_rg = b.__class__ not in NUMBERS and b._rg
    if a._rg or b_rg:
        if grad_state.enabled:
            # like PyTorch, save each operand only when the other one needs its gradient
            return record(MulBackward0(), data, (a, b), (a if b_rg else None, b if a._rg else None))
        return no_grad_result(MulBackward0, data, (a, b))
    return wrap(data)


multiply = mul


class MulByNumberBackward(Node):  # tensor * number: the hot case, nothing saved
    torch_name = "MulBackward0"
    torch_saved = {
        "self": ("tensor", lambda node: None),  # saved only when other needs a gradient
        "other": ("tensor", lambda node: _number_as_tensor(node.other)),
    }

    def backward(self, g):
        return g * self.other, None


class DivBackward0(Node):
    torch_saved = {
        "self": 0,
        "other": ("tensor", lambda node: _number_as_tensor(node.unpack_saved()[1])),
    }

    def backward(self, g):
        a, b = self.unpack_saved()
        if g._data.dtype.kind == "c":  # complex: the derivatives are conjugated
            a, b = _conj(a), _conj(b)
        edges = self._edges
        ga = g / b if edges[0] is not None else None
        gb = -g * a / (b * b) if edges[1] is not None else None  # d(a/b)/db = -a/b²
        return ga, gb


class DivBackward1(Node):  # rounding_mode given: piecewise constant
    def backward(self, g):
        return g * 0, (g * 0 if self._edges[1] is not None else None)


def div(input, other, *, rounding_mode: str | None = None) -> Tensor:
    if rounding_mode is None and (
        (isinstance(input, Tensor) and input._data.dtype.kind in "biu")
        or (isinstance(other, Tensor) and other._data.dtype.kind in "biu")
    ):
        input, other = _integers_to_float("div", input, other)
    a, b = promote("div", input, other)
    if rounding_mode is None:
        if isinstance(a, Tensor):
            a = float_result("div", a)
        elif a.__class__ is not complex:
            a = float(a)
        if isinstance(b, Tensor):
            b = float_result("div", b)
        elif not isinstance(a, Tensor) or a._data.dtype.kind == "f":
            b = b if isinstance(b, (float, complex)) else float(b)
        like = a._data if isinstance(a, Tensor) else b._data
        ad, bd = data_of(a, like), data_of(b, like)
        try:
            if isinstance(a, Tensor) and _half_and_number(ad, b):
                data = _half_by_number(_HOST.true_divide, ad, b)
            elif _large(ad, bd):
                data = _split_ufunc(_HOST.true_divide, ad, bd)
            else:
                data = ad / bd
        except ValueError:
            raise broadcast_error("div", data_of(a, like), data_of(b, like)) from None
        b_rg = isinstance(b, Tensor) and b._rg
        return result(DivBackward0, data, (a, b), (a if b_rg else None, b))
    if rounding_mode not in ("trunc", "floor"):
        raise RuntimeError(
            "div expected rounding_mode to be one of None, 'trunc', or 'floor' but found "
            f"'{rounding_mode}'"
        )
    like = a._data if isinstance(a, Tensor) else b._data
    ad, bd = data_of(a, like), data_of(b, like)
    xp = array_module(like)
    is_int = like.dtype.kind in "biu"
    if is_int:
        _check_bool_operands(f"div_{rounding_mode}_cpu", a, b)
        try:
            _check_integer_divisor(xp, bd, ad)
        except ValueError:
            raise broadcast_error("div", ad, bd) from None
    if rounding_mode == "floor":
        data = xp.floor_divide(ad, bd)  # NumPy's float floor division is torch's (inf // 4 = nan)
    elif is_int:
        q = xp.floor_divide(ad, bd)
        data = q + ((xp.remainder(ad, bd) != 0) & ((xp.asarray(ad) < 0) != (xp.asarray(bd) < 0)))
        data = data.astype(q.dtype)
    else:
        data = xp.trunc(ad / bd)
    return result(DivBackward1, data, (a, b))


divide = true_divide = div


def reflected_div(input: Tensor, other) -> Tensor:
    """``number / tensor``: torch computes it as ``tensor.reciprocal() * number`` (that graph,
    and those roundings)."""
    return mul(input.reciprocal(), other)


def _integers_to_float(op: str, input, other):
    """Operands of a floating op whose common dtype is integral go to the default float dtype
    each from its own values (uint8 3 / int32 -5 is -0.6, not 3 / 251), as in PyTorch."""
    a_int = isinstance(input, Tensor) and input._data.dtype.kind in "biu"
    b_int = isinstance(other, Tensor) and other._data.dtype.kind in "biu"
    if not (a_int or b_int):
        return input, other
    rt = dt.result_type(input, other)
    if rt.category > dt.INT:
        return input, other
    if a_int:
        input = float_result(op, input)
    if b_int:
        other = float_result(op, other)
    return input, other


def _check_integer_divisor(xp, divisor, dividend=None) -> None:
    """Integer division by zero raises in PyTorch (NumPy would return 0 with a warning);
    an empty result divides nothing, so it does not raise."""
    divisor = xp.asarray(divisor)
    if dividend is not None:
        shape = xp.broadcast_shapes(getattr(dividend, "shape", ()), divisor.shape)
        if 0 in shape:
            return
    if bool((divisor == 0).any()):
        raise RuntimeError("ZeroDivisionError")


def _check_bool_operands(kernel: str, a, b) -> None:
    """PyTorch has no bool kernel for integer-style division and powers."""
    if data_of(a).dtype.kind == "b" if isinstance(a, Tensor) else data_of(b).dtype.kind == "b":
        raise NotImplementedError(f"\"{kernel}\" not implemented for 'Bool'")


def floor_divide(input, other) -> Tensor:
    return div(input, other, rounding_mode="floor")


class PowBackward0(Node):  # tensor ** number
    torch_saved = {"self": 0, "exponent": "exponent"}

    def backward(self, g):
        (x,) = self.unpack_saved()
        e = self.exponent
        if e == 0:
            return g * 0
        if e in (2, 3) and not grad_state.enabled:  # one pass, as the formula rounds
            name = "square_backward" if e == 2 else "cube_backward"
            fused = _backward_map(name, g._data, x._data, (e,))
            if fused is not None:
                return wrap(fused)
        return g * _conj(x ** (e - 1) * e)  # d x^e = e x^(e-1)


class PowBackward1(Node):  # tensor ** tensor
    torch_saved = {"self": 0, "exponent": 1, "result": "result"}

    def backward(self, g):
        a, b = self.unpack_saved()
        edges = self._edges
        ga = gb = None
        if edges[0] is not None:
            ga = g * _conj(b * a ** (b - 1))
        if edges[1] is not None:
            y = self.saved_output()
            # d a^b/db = a^b log a, taken as 0 where a == 0 and b >= 0 (the limit)
            gb = g * _conj(y * a.log())
            if a._data.dtype.kind != "c":
                gb = gb.masked_fill((a == 0) & (b >= 0), 0.0)
        return ga, gb


class PowBackward2(Node):  # number ** tensor; torch's one input is the exponent
    torch_saved = {"self": "base", "exponent": 0, "result": "result"}

    def backward(self, g):
        y = self.saved_output()
        base = self.base
        if base == 0:
            (b,) = self.unpack_saved()
            return (g * y * -math.inf).masked_fill(b >= 0, 0.0)
        return g * _conj(y * math.log(base))


_C_INTEGER_NAMES = {"uint8": "uint8_t", "int8": "int8_t", "int16": "int16_t", "int32": "int"}


def _check_integer_exponent(dtype, exponent: int) -> None:
    """torch converts a Python int exponent to the integer tensor's type, refusing overflow
    (other operators wrap the scalar instead)."""
    if exponent < -(2**63):
        raise OverflowError("can't convert negative int to unsigned")
    if exponent < 0:
        raise RuntimeError("Integers to negative integer powers are not allowed.")
    if exponent >= 2**64:  # not even an unsigned 64-bit integer
        raise OverflowError("int too big to convert")
    if exponent >= 2**63:
        raise RuntimeError("value cannot be converted to type int64_t without overflow")
    if dtype.name == "int64":
        return
    info = iinfo(dt.from_numpy_dtype(dtype))
    if not info.min <= exponent <= info.max:
        raise RuntimeError(
            f"value cannot be converted to type {_C_INTEGER_NAMES[dtype.name]} without overflow"
        )


def _cube(ad):
    """ad·ad·ad: one compiled pass over a large float array, else NumPy's two."""
    kernels = _backend.compiled_kernels("pointwise_jit", ad)
    return ad * ad * ad if kernels is None else _backend.compiled_map(kernels.cube, ad)


def pow(input, exponent) -> Tensor:
    if isinstance(input, Tensor) and not isinstance(exponent, Tensor):
        if isinstance(exponent, bool):
            if input._data.dtype.kind == "b":  # a bool tensor to a bool power stays bool
                xp = array_module(input._data)
                data = input._data.copy() if exponent else xp.ones_like(input._data)
                return result(PowBackward0, data, (input,), (input,), exponent=int(exponent))
            exponent = int(exponent)
        if isinstance(exponent, int) and input._data.dtype.kind in "iu":
            _check_integer_exponent(input._data.dtype, exponent)
        a, e = promote("pow", input, exponent)
        ad = a._data
        if ad.dtype.kind in "iu" and isinstance(e, int) and e < 0:
            raise RuntimeError("Integers to negative integer powers are not allowed.")
        xp = array_module(ad)
        floating = ad.dtype.kind == "f"
        if e == 2:
            data = ad * ad
        elif e == 0.5 and floating:
            data = xp.sqrt(ad)
        elif floating and e in (3, -2, -0.5):  # torch's products, not the C library's pow
            data = _cube(ad) if e == 3 else ad * ad if e == -2 else xp.sqrt(ad)
            if e != 3:  # (a 0-d product is a NumPy scalar, which takes no out=)
                data = xp.reciprocal(data, out=data if isinstance(data, xp.ndarray) else None)
        else:
            data = ad ** data_of(e, ad)  # a 0-d array of ad's dtype: bfloat16 stays bfloat16
        return result(PowBackward0, data, (a,), (a,), exponent=e)
    a, b = promote("pow", input, exponent)
    if (a if isinstance(a, Tensor) else b)._data.dtype.kind == "b":
        raise NotImplementedError("\"pow\" not implemented for 'Bool'")
    if isinstance(a, Tensor):
        ad, bd = a._data, b._data
        if ad.dtype.kind in "iu":
            data = _integer_power(array_module(ad), ad, bd)
        else:
            data = ad**bd
        return result(PowBackward1, data, (a, b), (a, b), save_output=True)
    bd = b._data
    if bd.dtype.kind in "iu":
        data = _integer_power(array_module(bd), _scalar_array(a, b), bd)
    else:
        data = a**bd
    if not isinstance(data, type(b._data)) or data.dtype != b._data.dtype:
        data = _backend.as_array(data).astype(b._data.dtype, copy=False)
    return result(PowBackward2, data, (b,), (b,), save_output=True, base=a)


def _integer_power(xp, base, exponent):
    """Integer powers with tensor exponents: a negative exponent gives 1/base truncated
    (1 and -1 keep their magnitude, every other base gives 0), as in PyTorch."""
    negative = exponent < 0
    if not negative.any():
        return base**exponent
    out = base ** xp.where(negative, 0, exponent)
    odd = (exponent % 2) != 0
    inverse = xp.where(base == 1, 1, xp.where(base == -1, xp.where(odd, -1, 1), 0))
    return xp.where(negative, inverse, out).astype(out.dtype, copy=False)


def float_power(input, exponent) -> Tensor:
    """``input ** exponent`` computed in float64 (complex128 if either is complex), as
    PyTorch's float_power."""
    if not isinstance(input, Tensor) and not isinstance(exponent, Tensor):
        raise TypeError(
            "float_power() received an invalid combination of arguments - got "
            f"({type(input).__name__}, {type(exponent).__name__}), but expected one of: "
            "(Tensor input, Tensor exponent), (Number self, Tensor exponent), "
            "(Tensor input, Number exponent)"
        )
    wide = dt.complex128 if _float_power_is_complex(input, exponent) else dt.float64
    input = to_tensor(input, exponent).to(wide) if not isinstance(input, Tensor) else input.to(wide)
    if isinstance(exponent, Tensor):
        exponent = exponent.to(wide)
    return pow(input, exponent)


def _float_power_is_complex(input, exponent) -> bool:
    return any(
        (v.dtype.is_complex if isinstance(v, Tensor) else isinstance(v, complex))
        for v in (input, exponent)
    )


def float_power_(self: Tensor, exponent) -> Tensor:
    """In-place float_power: only a float64 (complex128) base holds the result."""
    wide = dt.complex128 if _float_power_is_complex(self, exponent) else dt.float64
    if self.dtype != wide:
        raise RuntimeError(
            f"the base given to float_power_ has dtype {self.dtype.legacy_name} but the "
            f"operation's result requires dtype {wide.legacy_name}"
        )
    return float_power(self, exponent)


class Atan2Backward0(Node):
    def backward(self, g):
        a, b = self.unpack_saved()
        # d atan2(a,b) = (b da - a db)/(a²+b²); torch takes 1/(a²+b²) as 0 at the origin
        denom = a * a + b * b
        recip = denom.reciprocal().masked_fill(denom == 0, 0.0)
        g_a = g * b * recip if self.needs(0) else None
        g_b = g * -a * recip if self.needs(1) else None
        return g_a, g_b


def atan2(input, other) -> Tensor:
    _require_tensors("atan2", input, other)
    a, b = _integers_to_float("atan2", input, other)
    a, b = promote("atan2", a, b)
    a, b = float_result("atan2", a), float_result("atan2", b)
    xp = array_module(a._data)
    return result(Atan2Backward0, xp.arctan2(a._data, b._data), (a, b), (a, b))


arctan2 = atan2


class MaximumBackward0(Node):
    def backward(self, g):
        a, b = self.unpack_saved()
        # ties split the gradient evenly, as PyTorch does
        half = (a == b) * 0.5
        wins = (a > b) + half
        return g * wins, g * (1 - wins)


class MinimumBackward0(Node):
    def backward(self, g):
        a, b = self.unpack_saved()
        half = (a == b) * 0.5
        wins = (a < b) + half
        return g * wins, g * (1 - wins)


def _require_tensors(name: str, input, other) -> None:
    """torch's binding of these two-tensor ops takes no Python numbers."""
    if isinstance(input, Tensor) and isinstance(other, Tensor):
        return
    for position, (argument, value) in enumerate((("input", input), ("other", other)), 1):
        if not isinstance(value, Tensor):
            raise TypeError(
                f"{name}(): argument '{argument}' (position {position}) must be Tensor, "
                f"not {type(value).__name__}"
            )


def _selection(name: str, kernel: str, node_cls):
    def op(input, other) -> Tensor:
        _require_tensors(name, input, other)
        a, b = promote(name, input, other)
        if a._data.dtype.kind == "c":
            raise RuntimeError(f"{name} not implemented for complex tensors.")
        ad, bd = a._data, b._data
        try:
            if _large(ad, bd):
                data = _split_ufunc(getattr(_HOST, kernel), ad, bd)
            else:
                data = getattr(array_module(ad), kernel)(ad, bd)
        except ValueError:
            raise broadcast_error(name, ad, bd) from None
        return result(node_cls, data, (a, b), (a, b))

    named(op, name)
    op.__doc__ = f"Elementwise ``{name}`` of two tensors (ties share the gradient evenly)."
    return op


maximum = _selection("maximum", "maximum", MaximumBackward0)
minimum = _selection("minimum", "minimum", MinimumBackward0)
fmax = _selection("fmax", "fmax", MaximumBackward0)  # like maximum, but NaN loses
fmin = _selection("fmin", "fmin", MinimumBackward0)


class FmodBackward0(Node):  # fmod(tensor, number): d/dself = 1
    def backward(self, g):
        return g


class FmodBackward1(Node):  # fmod(tensor, tensor)
    def backward(self, g):
        a, b = self.unpack_saved()
        gb = None
        if self._edges[1] is not None:
            gb = g * -(a / b).trunc()
        return g, gb


class RemainderBackward0(FmodBackward0):  # remainder(tensor, number)
    pass


class RemainderBackward1(Node):  # remainder(tensor, tensor)
    def backward(self, g):
        a, b = self.unpack_saved()
        gb = None
        if self._edges[1] is not None:
            gb = g * -(a / b).floor()
        return g, gb


def _make_division_remainder(name: str, by_number: type, by_tensor: type, tensor_first: bool):
    """fmod or remainder (``name``, also the NumPy function: the remainder with the sign of
    the dividend, or of the divisor), made by one factory so that the op's own call is its
    body; the nodes are those for a number and a tensor divisor; ``tensor_first``: torch's
    signatures take a tensor dividend only (fmod)."""

    def op(input, other) -> Tensor:
        if tensor_first:
            _require_tensor_input(name, input, other)
        a, b = promote(name, input, other)
        if not isinstance(a, Tensor):
            a = wrap(_scalar_array(a, b))  # the number takes the tensor's (promoted) dtype
        xp = array_module(a._data)
        if a._data.dtype.kind in "biu":
            _check_bool_operands(f"{name}_cpu", a, b)
            try:
                _check_integer_divisor(xp, data_of(b), a._data)
            except ValueError:
                raise broadcast_error(name, a._data, data_of(b)) from None
        try:
            data = getattr(xp, name)(a._data, data_of(b, a._data))
        except ValueError:
            raise broadcast_error(name, a._data, data_of(b)) from None
        if not isinstance(b, Tensor):
            return result(by_number, data, (a,))
        return result(by_tensor, data, (a, b), (a, b))

    return named(op, name)


fmod = _make_division_remainder("fmod", FmodBackward0, FmodBackward1, tensor_first=True)
remainder = _make_division_remainder(
    "remainder", RemainderBackward0, RemainderBackward1, tensor_first=False
)


class HypotBackward0(Node):
    def backward(self, g):
        a, b = self.unpack_saved()
        y = self.saved_output()
        return g * a / y, g * b / y


def _floating_only(name: str, t: Tensor) -> None:
    """PyTorch has no bool or integer kernel for this op."""
    if t._data.dtype.kind in "biu":
        raise NotImplementedError(f"\"{name}_cpu\" not implemented for '{t.dtype.legacy_name}'")


def hypot(input, other) -> Tensor:
    a, b = promote("hypot", input, to_tensor(other, input))
    _floating_only("hypot", a)
    xp = array_module(a._data)
    return result(HypotBackward0, xp.hypot(a._data, b._data), (a, b), (a, b), save_output=True)


class LogaddexpBackward0(Node):
    def backward(self, g):
        a, b = self.unpack_saved()
        # d/da log(e^a + e^b) = σ(a - b), conjugated for complex values
        return g * _conj((a - b).sigmoid()), g * _conj((b - a).sigmoid())


def _complex_logaddexp(xp, a, b):
    """torch's complex logaddexp: log1p(exp(min - max)) + max, min and max by real part, with
    its cases for NaN (either part) and for equal infinite real parts."""
    a, b = xp.broadcast_arrays(a, b)
    a_first = a.real < b.real
    low, high = xp.where(a_first, a, b), xp.where(a_first, b, a)
    with _HOST.errstate(all="ignore"):
        out = xp.log1p(xp.exp(low - high)) + high
        infinite = ~xp.isfinite(low.real) & (low.real == high.real)
        out = xp.where(infinite & (low.real < 0), low, out)
        out = xp.where(infinite & (low.real > 0), xp.log(xp.exp(low) + xp.exp(high)), out)
    nan = xp.isnan(a) | xp.isnan(b)
    return xp.where(nan, xp.asarray(complex(math.nan, math.nan), dtype=out.dtype), out)


def logaddexp(input, other) -> Tensor:
    a, b = promote("logaddexp", input, to_tensor(other, input))
    _floating_only("logaddexp", a)
    xp = array_module(a._data)
    if a._data.dtype.kind == "c":
        data = _complex_logaddexp(xp, a._data, b._data)
    else:
        data = xp.logaddexp(a._data, b._data)
    return result(LogaddexpBackward0, data, (a, b), (a, b))


# --------------------------------------------------------------------------------------------
# Ternary and selection ops
# --------------------------------------------------------------------------------------------
class WhereBackward0(Node):  # inputs (self, other); the condition is saved, not an input
    torch_saved = {"condition": 0}

    def backward(self, g):
        (cond,) = self.unpack_saved()
        edges = self._edges
        ga = g.masked_fill(~cond, 0.0) if edges[0] is not None else None
        gb = g.masked_fill(cond, 0.0) if edges[1] is not None else None
        return ga, gb


def where(condition, input=None, other=None):
    if input is None and other is None:
        return condition.nonzero(as_tuple=True)
    cond = to_tensor(condition)
    if cond._data.dtype.name == "uint8":  # a byte mask still works (PyTorch warns)
        cond = wrap(cond._data.astype(bool))
    if cond._data.dtype.kind != "b":
        raise RuntimeError(
            f"where expected condition to be a boolean tensor, but got a tensor with dtype "
            f"{cond.dtype.name.capitalize()}"
        )
    if isinstance(input, Tensor) and isinstance(other, Tensor):
        a, b = promote("where", input, other)
    elif isinstance(input, Tensor):
        a, b = promote("where", input, other)
    elif isinstance(other, Tensor):
        b, a = promote("where", other, input)
    else:
        rt = dt.result_type(input, other)
        a = to_tensor(input, cond).to(rt)
        b = to_tensor(other, cond).to(rt)
    a = a if isinstance(a, Tensor) else wrap(_scalar_array(a, b))
    b = b if isinstance(b, Tensor) else wrap(_scalar_array(b, a))
    try:
        data = _backend.select(cond._data, a._data, b._data)
    except ValueError:
        raise broadcast_error("where", a._data, b._data) from None
    return result(WhereBackward0, data, (a, b), (cond,))


def _scalar_array(value, like: Tensor):
    xp = array_module(like._data)
    return xp.asarray(value, dtype=like._data.dtype)


class ClampBackward1(Node):  # number bounds (torch's clamp overload 1)
    torch_saved = {"self": 0, "min": "min", "max": "max"}

    def backward(self, g):
        (x,) = self.unpack_saved()
        return g.masked_fill(~_clamp_kept(x, self.min, self.max), 0.0)


class ClampMinBackward0(ClampBackward1):  # clamp_min(x, number)
    torch_saved = {"self": 0, "min": "min"}


class ClampMaxBackward0(ClampBackward1):  # clamp_max(x, number)
    torch_saved = {"self": 0, "max": "max"}


def _clamp_kept(x: Tensor, lo, hi) -> Tensor:
    """Where clamp passes x through: min <= x <= max (False for NaN x, and wherever
    min > max, where the result is max)."""
    if lo is None:
        return x <= hi
    if hi is None:
        return x >= lo
    return (x >= lo) & (x <= hi)


class ClampBackward0(Node):  # tensor bounds, torch's clamp_backward_min_max
    torch_saved = {"self": 0, "min": 1, "max": 2}

    def backward(self, g):
        x, lo, hi = self.unpack_saved()
        g_x = g.masked_fill(~_clamp_kept(x, lo, hi), 0.0) if self._edges[0] is not None else None
        g_lo = g_hi = None
        if lo is not None and self._edges[1] is not None:
            # min is the result where x < min, unless max < min overrides it
            taken = (x < lo) if hi is None else (x < lo) & (lo < hi)
            g_lo = g.masked_fill(~taken, 0.0)
        if hi is not None and self._edges[2] is not None:
            taken = (x > hi) if lo is None else (x > hi) | (hi < lo)
            g_hi = g.masked_fill(~taken, 0.0)
        return g_x, g_lo, g_hi


_C_INT_NAMES = {"uint8": "uint8_t", "int8": "int8_t", "int16": "int16_t", "int32": "int"}


def _integer_bound(bound, t: Tensor):
    """A Python int bound in an integer tensor's type: negative values wrap into unsigned
    types (two's complement), anything else that does not fit raises, as in PyTorch."""
    np_dtype = t._data.dtype
    bits = np_dtype.itemsize * 8
    if np_dtype.kind == "u":
        fits = -(1 << bits) < bound < (1 << bits)
    else:
        fits = -(1 << (bits - 1)) <= bound < (1 << (bits - 1))
    if not fits:
        name = _C_INT_NAMES.get(t.dtype.name, "int64_t")
        raise RuntimeError(f"value cannot be converted to type {name} without overflow")
    return np_dtype.type(bound % (1 << bits)) if bound < 0 and np_dtype.kind == "u" else bound


def clamp(input: Tensor, min=None, max=None) -> Tensor:
    return _clamp(input, min, max, ClampBackward1)


def _clamp(input: Tensor, min, max, number_node) -> Tensor:
    """clamp; ``number_node``: the node class for number bounds (clamp's, clamp_min's or
    clamp_max's: torch records each under its own name)."""
    if min is None and max is None:
        raise RuntimeError("torch.clamp: At least one of 'min' or 'max' must not be None")
    xp = array_module(input._data)
    if isinstance(min, Tensor) or isinstance(max, Tensor):
        lo = to_tensor(min, input) if min is not None else None
        hi = to_tensor(max, input) if max is not None else None
        # the result takes the promoted dtype of the input and both bounds
        rt = dt.result_type(*(t for t in (input, lo, hi) if t is not None))
        input = input if input.dtype is rt else input.to(rt)
        data = input._data
        if lo is not None:
            data = xp.maximum(data, lo._data.astype(data.dtype, copy=False))
        if hi is not None:
            data = xp.minimum(data, hi._data.astype(data.dtype, copy=False))
        return result(ClampBackward0, data, (input, lo, hi), (input, lo, hi))
    data = input._data
    kind = data.dtype.kind
    if kind in "biu":
        bounds = [b for b in (min, max) if b is not None]
        if kind == "b" and builtins.all(b.__class__ is bool for b in bounds):
            kernel = (
                "clamp_scalar_cpu"
                if len(bounds) == 2
                else ("clamp_min_scalar_cpu" if min is not None else "clamp_max_scalar_cpu")
            )
            raise NotImplementedError(f"\"{kernel}\" not implemented for 'Bool'")
        rt = dt.result_type(input, *bounds)
        if rt is not input.dtype:
            input = input.to(rt)
            data = input._data
        if data.dtype.kind in "iu":
            min = _integer_bound(min, input) if isinstance(min, int) else min
            max = _integer_bound(max, input) if isinstance(max, int) else max
    if min is not None:
        data = xp.maximum(data, min)
    if max is not None:
        data = xp.minimum(data, max)
    if data.dtype != input._data.dtype:
        data = data.astype(input._data.dtype)
    return result(number_node, data, (input,), (input,), min=min, max=max)


clip = clamp


def clamp_min(input: Tensor, min) -> Tensor:
    return _clamp(input, min, None, ClampMinBackward0)


def clamp_max(input: Tensor, max) -> Tensor:
    return _clamp(input, None, max, ClampMaxBackward0)


class LerpBackward1(Node):  # lerp(start, end, weight tensor); 0: a number weight
    def backward(self, g):
        start, end, weight = self.unpack_saved()
        w = self.weight if weight is None else weight
        edges = self._edges
        g_start = g * (1 - w) if edges[0] is not None else None
        g_end = g * w if edges[1] is not None else None
        if len(edges) == 2:
            return g_start, g_end
        g_w = g * (end - start) if edges[2] is not None else None
        return g_start, g_end, g_w


class LerpBackward0(LerpBackward1):
    pass


def _lerp_kernel(start, end, weight):
    """torch's two-sided formula: from start for |weight| < 0.5, from end otherwise (exact at
    weight 1, and an infinite start does not turn end into NaN there)."""
    xp = array_module(start)
    diff = end - start
    out = xp.where(xp.abs(weight) < 0.5, start + weight * diff, end - diff * (1 - weight))
    return out.astype(start.dtype, copy=False)


def lerp(input: Tensor, end: Tensor, weight) -> Tensor:
    if not isinstance(end, Tensor):
        end = to_tensor(end, input).to(input.dtype)
    if input.dtype is not end.dtype:  # PyTorch does not promote lerp's operands
        raise RuntimeError(f"expected dtype {input.dtype} for `end` but got dtype {end.dtype}")
    start = input
    kind = start._data.dtype.kind
    _check_broadcast("lerp", start, end, weight)
    if isinstance(weight, Tensor):
        if kind in "biu":
            raise NotImplementedError(
                f"\"lerp_kernel_tensor\" not implemented for '{start.dtype.legacy_name}'"
            )
        if weight.dtype is not start.dtype:
            if weight.ndim:
                raise RuntimeError(
                    f"expected dtype {start.dtype} for `weight` but got dtype {weight.dtype}"
                )
            # a 0-d weight takes part in promotion as a 0-d tensor does: it sets the dtype
            # only when start and end are 0-d too
            common = dt.result_type(start, end, weight)
            start, end, weight = cast(start, common), cast(end, common), cast(weight, common)
        data = _lerp_kernel(start._data, end._data, weight._data)
        return result(LerpBackward1, data, (start, end, weight), (start, end, weight))
    if kind in "biu":
        raise NotImplementedError(
            f"\"lerp_kernel_scalar\" not implemented for '{start.dtype.legacy_name}'"
        )
    data = _lerp_kernel(start._data, end._data, data_of(weight, start._data))
    return result(LerpBackward0, data, (start, end), (start, end, None), weight=weight)


class AddcmulBackward0(Node):
    def backward(self, g):
        _, t1, t2 = self.unpack_saved()
        v = self.value
        edges = self._edges
        return (
            g,
            g * t2 * v if edges[1] is not None else None,
            g * t1 * v if edges[2] is not None else None,
        )


class AddcdivBackward0(Node):
    def backward(self, g):
        _, t1, t2 = self.unpack_saved()
        v = self.value
        edges = self._edges
        return (
            g,
            g * v / t2 if edges[1] is not None else None,
            g * -v * t1 / (t2 * t2) if edges[2] is not None else None,
        )


def _check_broadcast(op: str, *operands) -> None:
    """torch's RuntimeError for operands of a ternary op that do not broadcast together, before
    NumPy raises its ValueError."""
    for i, a in enumerate(operands):
        for b in operands[i + 1 :]:
            sizes = zip(reversed(getattr(a, "shape", ())), reversed(getattr(b, "shape", ())))
            if any(x != y and 1 not in (x, y) for x, y in sizes):
                raise broadcast_error(op, a, b)


def _fused_operands(op: str, input: Tensor, tensor1: Tensor, tensor2: Tensor, value):
    """addcmul/addcdiv's operands in their result dtype, and ``value`` converted to it as
    torch converts a Scalar (int64 takes 0.5 as 0); ``value`` does not take part in promotion."""
    _check_broadcast(op, tensor1, tensor2, input)
    rt = dt.result_type(input, tensor1, tensor2)
    if rt.category == dt.BOOL:
        raise NotImplementedError(f"\"{op}_cpu_out\" not implemented for 'Bool'")
    if rt.category == dt.INT:
        value = int(value.real if isinstance(value, complex) else value)
    converted = rt.np.type(value)
    return cast(input, rt), cast(tensor1, rt), cast(tensor2, rt), converted


def addcmul(input: Tensor, tensor1: Tensor, tensor2: Tensor, *, value=1) -> Tensor:
    """input + value · tensor1 · tensor2, in the three tensors' result dtype."""
    input, tensor1, tensor2, v = _fused_operands("addcmul", input, tensor1, tensor2, value)
    a, scaled, t2 = input._data, v * tensor1._data, tensor2._data
    if a.dtype.kind == "f" and a.dtype.itemsize <= 4:
        # torch's kernel: one fused multiply-add, a + (v·t1)·t2 rounded once; the product of
        # two float32 numbers is exact in float64, so the sum there rounds as the FMA does
        data = (a.astype("float64") + scaled.astype("float64") * t2).astype(a.dtype)
    else:
        data = a + scaled * t2
    return result(
        AddcmulBackward0, data, (input, tensor1, tensor2), (None, tensor1, tensor2), value=v.item()
    )


def addcdiv(input: Tensor, tensor1: Tensor, tensor2: Tensor, *, value=1) -> Tensor:
    """input + value · tensor1 / tensor2; integer tensor1 and tensor2 are refused, as torch."""
    if tensor1._data.dtype.kind in "biu" and tensor2._data.dtype.kind in "biu":
        raise RuntimeError(
            "Integer division with addcdiv is no longer supported, and in a future release "
            "addcdiv will perform a true division of tensor1 and tensor2."
        )
    input, tensor1, tensor2, v = _fused_operands("addcdiv", input, tensor1, tensor2, value)
    a = input._data
    if a.dtype.itemsize == 2 and a.dtype.kind in "fV":
        # torch's half kernels work in float32, value too (not rounded to half), round once
        t1, t2 = tensor1._data.astype("float32"), tensor2._data.astype("float32")
        v32 = t1.dtype.type(value.real if isinstance(value, complex) else value)
        data = (a.astype("float32") + v32 * t1 / t2).astype(a.dtype)
    else:
        data = a + v * tensor1._data / tensor2._data
    return result(
        AddcdivBackward0, data, (input, tensor1, tensor2), (None, tensor1, tensor2), value=v.item()
    )


# --------------------------------------------------------------------------------------------
# Comparison and logical ops: never differentiable, results are bool tensors.
# --------------------------------------------------------------------------------------------
def _compare(name, kernel, ufunc_name, ordered=True):
    ufunc = getattr(_HOST, ufunc_name)  # the kernel's ufunc, for large NumPy arrays

    def op(input, other) -> Tensor:
        _require_tensor_input(name, input, other)
        a, b = promote(name, input, other)  # a is the tensor input still
        if ordered and a._data.dtype.kind == "c":
            raise _complex.not_implemented(name, a)
        left, right = a._data, data_of(b)
        try:
            if _large(left, right, "compare"):
                out = wrap(_split_ufunc(ufunc, left, right, min_size=_SPLIT_FROM["compare"]))
            else:
                out = wrap(kernel(left, right))
        except ValueError:
            raise broadcast_error(name, a._data, data_of(b)) from None
        return non_differentiable(name, out, a, b)

    named(op, name)
    return op


eq = _compare("eq", lambda a, b: a == b, "equal", ordered=False)
ne = _compare("ne", lambda a, b: a != b, "not_equal", ordered=False)
lt = _compare("lt", lambda a, b: a < b, "less")
le = _compare("le", lambda a, b: a <= b, "less_equal")
gt = _compare("gt", lambda a, b: a > b, "greater")
ge = _compare("ge", lambda a, b: a >= b, "greater_equal")
greater, greater_equal, less, less_equal, not_equal = gt, ge, lt, le, ne


def _logical(name, attr):
    def op(input, other) -> Tensor:
        for position, (argument, value) in enumerate((("input", input), ("other", other)), 1):
            if not isinstance(value, Tensor):
                raise TypeError(
                    f"{name}(): argument '{argument}' (position {position}) must be Tensor, "
                    f"not {type(value).__name__}"
                )
        a, b = input, other
        xp = array_module(a._data)
        return wrap(getattr(xp, attr)(a._data, b._data))

    named(op, name)
    return op


logical_and = _logical("logical_and", "logical_and")
logical_or = _logical("logical_or", "logical_or")
logical_xor = _logical("logical_xor", "logical_xor")


def logical_not(input: Tensor) -> Tensor:
    return wrap(array_module(input._data).logical_not(input._data))


def _bitwise(name, kernel):
    def op(input, other) -> Tensor:
        a, b = promote(name, input, other)
        if not isinstance(a, Tensor):
            a, b = b, a
        if a._data.dtype.kind not in "biu":
            raise NotImplementedError(f"\"{name}_cpu\" not implemented for '{a.dtype.legacy_name}'")
        return wrap(kernel(a._data, data_of(b)))

    named(op, name)
    return op


bitwise_and = _bitwise("bitwise_and", lambda a, b: a & b)
bitwise_or = _bitwise("bitwise_or", lambda a, b: a | b)
bitwise_xor = _bitwise("bitwise_xor", lambda a, b: a ^ b)


def bitwise_not(input: Tensor) -> Tensor:
    if input._data.dtype.kind not in "biu":
        raise NotImplementedError(
            f"\"bitwise_not_cpu\" not implemented for '{input.dtype.legacy_name}'"
        )
    return wrap(~input._data)


def isnan(input: Tensor) -> Tensor:
    return wrap(array_module(input._data).isnan(input._data))


def isinf(input: Tensor) -> Tensor:
    return wrap(array_module(input._data).isinf(input._data))


def isfinite(input: Tensor) -> Tensor:
    return wrap(array_module(input._data).isfinite(input._data))


def isposinf(input: Tensor) -> Tensor:
    return wrap(array_module(input._data).isposinf(input._data))


def isneginf(input: Tensor) -> Tensor:
    return wrap(array_module(input._data).isneginf(input._data))


def signbit(input: Tensor) -> Tensor:
    return wrap(array_module(input._data).signbit(input._data))


def isclose(input: Tensor, other: Tensor, rtol=1e-05, atol=1e-08, equal_nan=False) -> Tensor:
    for name, tolerance in (("rtol", rtol), ("atol", atol)):
        if tolerance < 0:
            raise RuntimeError(f"{name} must be greater than or equal to zero, but got {tolerance}")
    xp = array_module(input._data)
    return wrap(xp.isclose(input._data, other._data, rtol=rtol, atol=atol, equal_nan=equal_nan))


def allclose(input: Tensor, other: Tensor, rtol=1e-05, atol=1e-08, equal_nan=False) -> bool:
    return bool(isclose(input, other, rtol, atol, equal_nan)._data.all())


def equal(input: Tensor, other: Tensor) -> bool:
    return input.shape == other.shape and bool((input._data == other._data).all())


__all__ = [n for n in list(globals()) if not n.startswith("_") and callable(globals()[n])]
