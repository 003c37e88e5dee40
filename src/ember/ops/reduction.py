"""Reductions and scans: forward kernels and their derivatives, side by side."""

from __future__ import annotations

import math
import warnings

from .. import _backend, return_types
from .. import _dtype as dt
from .._creation import arange, zeros
from .._kernels import jit
from .._tensor import Tensor
from ..autograd.node import Node, torch_int
from ._dispatch import (
    NUMPY_ARRAY,
    array_module,
    grad_state,
    named,
    non_differentiable,
    norm_dims,
    result,
    wrap,
    wrap_dim,
)
from .elementwise import float_result, maximum, minimum, where
from .shape import _broadcast_view, cat

_HOST = array_module(NUMPY_ARRAY(0))  # NumPy (ops import no NumPy)
_add_reduce = _HOST.add.reduce


def _sum_array(data, dims: tuple, keepdim: bool, dtype=None):
    """``xp.sum`` of an array; for NumPy its ufunc's reduce, the same loop without np.sum's
    Python layers (which cost more than a small tensor's whole sum)."""
    if data.__class__ is NUMPY_ARRAY:
        if data.size >= jit.MIN_WORK and dtype is None and len(dims) == 1:
            # one axis that is not the last: a compiled pass, NumPy's order (_kernels)
            kernels = jit.module("reduction_jit", data.size)
            out = kernels.sum_axis(data, dims[0], keepdim) if kernels is not None else None
            if out is not None:
                return out
        if dtype is None and data.size >= _backend.SPLIT_FROM["reduce"]:
            # on every core, the value of one call to the bit (_backend.split_reduce)
            return _backend.split_reduce(_HOST.add, data, dims, keepdim)
        return _add_reduce(data, dims, dtype, None, keepdim)
    return array_module(data).sum(data, axis=dims, keepdims=keepdim, dtype=dtype)


def _dims(input: Tensor, dim, op: str) -> tuple:
    if isinstance(dim, (tuple, list)) and len(dim) == 0:
        dim = None
    return norm_dims(dim, input._data.ndim, op)


def expand_reduced(g: Tensor, shape: tuple, dims: tuple, keepdim: bool) -> Tensor:
    """Undo a reduction's shape: put back the reduced axes and broadcast over them."""
    if not keepdim and dims:
        kept = list(shape)
        for d in dims:
            kept[d] = 1
        g = g.reshape(tuple(kept))
    return g.expand(shape)


def _expanded_gradient(g: Tensor, shape: tuple, dims: tuple, keepdim: bool) -> Tensor:
    """``expand_reduced`` for a backward pass that records no graph (grad mode off): the
    broadcast array wrapped once, without the two view ops' bookkeeping."""
    if grad_state.enabled:
        return expand_reduced(g, shape, dims, keepdim)
    data = g._data
    if not keepdim and dims:
        kept = list(shape)
        for d in dims:
            kept[d] = 1
        data = data.reshape(kept)
    if data.shape == shape:
        return g if data is g._data else wrap(data)
    return wrap(_broadcast_view(data, shape, 0))


def _accumulation_dtype(data, dtype):
    """PyTorch sums integers and bools in int64 and half floats in float32 (returned as half)."""
    if dtype is not None:
        wanted = dt.to_dtype(dtype).np
        if wanted.itemsize == 2 and wanted.kind not in "biu":
            return dt.float32.np, wanted  # a half dtype= still accumulates in float32
        return wanted, None
    kind = data.dtype.kind
    if kind in "biu":
        return dt.int64.np, None
    if data.dtype.itemsize == 2:
        return dt.float32.np, data.dtype
    return None, None


class SumBackward0(Node):
    torch_saved = {"self_sym_sizes": "shape"}

    def backward(self, g):
        return _expanded_gradient(g, self.shape, self.dims, self.keepdim)


class SumBackward1(SumBackward0):  # PyTorch's name for a sum over given dims
    torch_saved = {
        "dim": lambda node: _saved_dims(node.dim_arg),
        "keepdim": "keepdim",
        "self_sym_sizes": "shape",
    }
    dim_arg = None


def _saved_dims(dim) -> tuple:
    """A reduction's dim argument as torch's node saves it: as given, a tuple of ints."""
    return torch_int((dim,) if isinstance(dim, int) else tuple(dim))


def sum(input: Tensor, dim=None, keepdim: bool = False, *, dtype=None) -> Tensor:
    data = input._data
    dims = _dims(input, dim, "sum")
    acc, back = _accumulation_dtype(data, dtype)
    out = _sum_array(data, dims, keepdim, acc)
    if back is not None:
        out = out.astype(back)
    if dim is None:
        return result(SumBackward0, out, (input,), shape=data.shape, dims=dims, keepdim=keepdim)
    return result(
        SumBackward1, out, (input,), shape=data.shape, dims=dims, keepdim=keepdim, dim_arg=dim
    )


class SumToSizeBackward0(Node):
    def backward(self, g):
        return g.expand(self.shape)


def sum_to_size(input: Tensor, *size) -> Tensor:
    """Sum ``input`` down to ``size`` (the reverse of broadcasting)."""
    shape = tuple(size[0]) if len(size) == 1 and isinstance(size[0], (tuple, list)) else size
    data = input._data
    if not shape:  # torch sums it all, even a 0-d input (so integers become int64)
        return input.sum()
    if data.shape == shape:
        return input
    lead = data.ndim - len(shape)
    if lead < 0:
        raise RuntimeError(f"size {list(shape)} is not expandable to size {list(data.shape)}")
    axes = list(range(lead))
    for i, s in enumerate(shape):
        have = data.shape[lead + i]
        if s == 1 and have != 1:
            axes.append(lead + i)
        elif s != have:
            raise RuntimeError(f"size {list(shape)} is not expandable to size {list(data.shape)}")
    out = _sum_array(data, tuple(axes), True) if axes else data
    if axes and out.dtype.kind in "biu":
        out = out.astype("int64")  # torch's sum of integers (NumPy's of uint8 is uint64)
    out = out.reshape(shape)
    return result(SumToSizeBackward0, out, (input,), shape=data.shape)


class MeanBackward0(Node):
    torch_saved = {"self_sym_numel": "count", "self_sym_sizes": "shape"}

    def backward(self, g):
        if not self.count:  # an empty input: nothing to divide (and no 0/0 on g)
            return _expanded_gradient(g, self.shape, self.dims, self.keepdim)
        # divided before it is broadcast: the same values, one division per output element
        return _expanded_gradient(g / self.count, self.shape, self.dims, self.keepdim)


class MeanBackward1(MeanBackward0):  # PyTorch's name for a mean over given dims
    torch_saved = {
        "dim": lambda node: _saved_dims(node.dim_arg),
        "keepdim": "keepdim",
        "self_sym_numel": lambda node: math.prod(node.shape),
        "self_sym_sizes": "shape",
    }
    dim_arg = None


def _floating_input(input: Tensor, dtype, message: str, dtype_message: str) -> Tensor:
    """Cast to ``dtype`` when given; an integer or bool ``dtype`` is refused with
    ``dtype_message``, an integer or bool input with ``message`` (each ends with the name)."""
    if dtype is not None:
        input = input.to(dtype)
        if input._data.dtype.kind in "biu":
            raise RuntimeError(dtype_message + input.dtype.legacy_name)
    if input._data.dtype.kind in "biu":
        raise RuntimeError(message + input.dtype.legacy_name)
    return input


def mean(input: Tensor, dim=None, keepdim: bool = False, *, dtype=None) -> Tensor:
    input = _floating_input(
        input,
        dtype,
        "mean(): could not infer output dtype. Input dtype must be either a floating point or "
        "complex dtype. Got: ",
        "mean(): could not infer output dtype. Optional dtype must be either a floating point or "
        "complex dtype. Got: ",
    )
    data = input._data
    dims = _dims(input, dim, "mean")
    acc = dt.float32.np if data.dtype.itemsize == 2 else None
    count = 1
    for d in dims:
        count *= data.shape[d]
    out = _sum_array(data, dims, keepdim, acc)
    out = (out / count if count else out * math.nan).astype(data.dtype, copy=False)
    node = MeanBackward0 if dim is None else MeanBackward1
    return result(
        node, out, (input,), shape=data.shape, dims=dims, keepdim=keepdim, count=count, dim_arg=dim
    )


def _prod_except_self(x: Tensor, d: int) -> Tensor:
    """∏_{k≠i} x_k along d without division: exclusive cumulative products from both ends."""
    n = x.shape[d]
    ones = x.narrow(d, 0, 1) * 0 + 1
    before = x.narrow(d, 0, n - 1).cumprod(d)
    after = x.flip(d).narrow(d, 0, n - 1).cumprod(d).flip(d)
    return cat([ones, before], d) * cat([after, ones], d)


class ProdBackward0(Node):
    def backward(self, g):
        (x,) = self.unpack_saved()
        dims, keepdim = self.dims, self.keepdim
        g = expand_reduced(g, x.shape, dims, keepdim)
        if x.numel() == 0:
            return g
        if not bool((x._data == 0).any()):
            y = expand_reduced(self.saved_output(), x.shape, dims, keepdim)
            return g * y / x
        if len(dims) == 1:
            return g * _prod_except_self(x, dims[0])
        flat = x.reshape(-1)
        return g * _prod_except_self(flat, 0).reshape(x.shape)


def prod(input: Tensor, dim=None, keepdim: bool = False, *, dtype=None) -> Tensor:
    data = input._data
    if isinstance(dim, (tuple, list)):
        raise TypeError("prod(): argument 'dim' must be int, not tuple")
    dims = _dims(input, dim, "prod")
    acc, back = _accumulation_dtype(data, dtype)
    xp = array_module(data)
    out = xp.prod(data, axis=dims, keepdims=keepdim, dtype=acc)
    if back is not None:
        out = out.astype(back)
    return result(ProdBackward0, out, (input,), (input,), True, dims=dims, keepdim=keepdim)


class AmaxBackward0(Node):
    def backward(self, g):
        (x,) = self.unpack_saved()
        y = expand_reduced(self.saved_output(), x.shape, self.dims, self.keepdim)
        mask = x == y
        g = expand_reduced(g, x.shape, self.dims, self.keepdim)
        # ties share the gradient evenly
        count = mask.sum(self.dims, keepdim=True)
        return g * mask / count


class AminBackward0(AmaxBackward0):
    pass


def _extreme(name, kernel, node_cls):
    ufunc = _HOST.maximum if kernel == "max" else _HOST.minimum

    def op(input: Tensor, dim=(), keepdim: bool = False) -> Tensor:
        data = input._data
        dims = _dims(input, dim, name)
        if data.size == 0:
            if dim is None or (isinstance(dim, (tuple, list)) and len(dim) == 0):
                raise RuntimeError(
                    f"{name}(): Expected reduction dim to be specified for input.numel() == 0. "
                    "Specify the reduction dim with the 'dim' argument."
                )
            for d in dims:
                if data.shape[d] == 0:
                    raise IndexError(f"{name}(): Expected reduction dim {d} to have non-zero size.")
        if data.__class__ is NUMPY_ARRAY and data.size >= _backend.SPLIT_FROM["reduce"] and dims:
            out = _backend.split_reduce(ufunc, data, dims, keepdim)  # on every core
        else:
            out = getattr(array_module(data), kernel)(data, axis=dims, keepdims=keepdim)
        return result(node_cls, out, (input,), (input,), True, dims=dims, keepdim=keepdim)

    named(op, name)
    return op


amax = _extreme("amax", "max", AmaxBackward0)
amin = _extreme("amin", "min", AminBackward0)


class MaxBackward0(Node):  # max/min along a dim: the gradient goes to the selected index
    def backward(self, g):
        shape, d, keepdim = self.shape, self.dim, self.keepdim
        idx = self.indices
        if not keepdim:
            g = g.unsqueeze(d)
            idx = idx.unsqueeze(d)
        return zeros(shape, dtype=g.dtype, device=g.device).scatter(d, idx, g)


class MinBackward0(MaxBackward0):
    pass


class MaxBackward1(AmaxBackward0):  # full max: evenly distributed over ties
    pass


class MinBackward1(AmaxBackward0):
    pass


def _max_min(name, kernel, argkernel, full_node, dim_node):
    def op(input: Tensor, dim=None, keepdim: bool = False, *, out=None):
        if isinstance(dim, Tensor):
            return (maximum if name == "max" else minimum)(input, dim)
        data = input._data
        xp = array_module(data)
        if dim is None:
            if data.size == 0:
                raise RuntimeError(
                    f"{name}(): Expected reduction dim to be specified for input.numel() == 0. "
                    "Specify the reduction dim with the 'dim' argument."
                )
            out_data = getattr(xp, kernel)(data)
            return result(
                full_node,
                out_data,
                (input,),
                (input,),
                True,
                dims=tuple(range(data.ndim)),
                keepdim=False,
            )
        d = wrap_dim(dim, data.ndim, name)
        if data.ndim == 0:
            pair = getattr(return_types, name)
            return pair(input.clone(), wrap(xp.zeros((), dtype=dt.int64.np)))
        if data.shape[d] == 0:
            raise IndexError(f"{name}(): Expected reduction dim {d} to have non-zero size.")
        idx = getattr(xp, argkernel)(data, axis=d, keepdims=keepdim)
        vals = xp.take_along_axis(data, idx if keepdim else xp.expand_dims(idx, d), axis=d)
        if not keepdim:
            vals = vals.squeeze(d)
        indices = wrap(idx.astype(dt.int64.np, copy=False))
        values = result(
            dim_node, vals, (input,), shape=data.shape, dim=d, keepdim=keepdim, indices=indices
        )
        return getattr(return_types, name)(values, indices)

    named(op, name)
    return op


max = _max_min("max", "max", "argmax", MaxBackward1, MaxBackward0)
min = _max_min("min", "min", "argmin", MinBackward1, MinBackward0)


def _arg(name, kernel):
    def op(input: Tensor, dim=None, keepdim: bool = False) -> Tensor:
        data = input._data
        xp = array_module(data)
        if data.dtype.kind == "b":
            raise RuntimeError(f"{name}(): does not support bool input")
        if dim is None:
            if data.size == 0:
                raise IndexError(
                    f"{name}(): Expected reduction dim to be specified for input.numel() == 0."
                )
            out = getattr(xp, kernel)(data.reshape(-1))
            if keepdim:
                out = xp.asarray(out).reshape((1,) * data.ndim)
        else:
            d = wrap_dim(dim, data.ndim, name)
            if data.ndim == 0:
                return wrap(xp.zeros((), dtype=dt.int64.np))
            if data.shape[d] == 0:
                raise IndexError(f"{name}(): Expected reduction dim {d} to have non-zero size.")
            out = getattr(xp, kernel)(data, axis=d, keepdims=keepdim)
        return non_differentiable(
            name, wrap(xp.asarray(out).astype(dt.int64.np, copy=False)), input
        )

    named(op, name)
    return op


argmax = _arg("argmax", "argmax")
argmin = _arg("argmin", "argmin")


def _correction(unbiased, correction):
    if correction is not None:
        return correction
    if unbiased is None:
        return 1
    return 1 if unbiased else 0


def _var_args(dim, unbiased, correction):
    if isinstance(dim, bool):  # var(input, unbiased)
        return None, dim, correction
    return dim, unbiased, correction


def _var_backward(g: Tensor, x: Tensor, node) -> Tensor:
    """d var/dx = 2(x - x̄)/(N - c), as torch: with no dim and N - c <= 0 the factor is
    infinite (NaN where x = x̄); along dims 2/(N - c) keeps its sign (and 2/0 is inf)."""
    g = expand_reduced(g, x.shape, node.dims, node.keepdim)
    mean_x = x.mean(node.dims, keepdim=True)
    if node.whole and node.denom <= 0:
        nan, inf = x.new_full((), math.nan), x.new_full((), math.inf)
        return g * where(x == mean_x, nan, inf)
    factor = 2.0 / node.denom if node.denom else math.inf
    return g * (x - mean_x) * factor


class VarBackward0(Node):
    def backward(self, g):
        (x,) = self.unpack_saved()
        return _var_backward(g, x, self)


class StdBackward0(Node):
    def backward(self, g):
        (x,) = self.unpack_saved()
        y = self.saved_output()
        # d std = d var / (2 std); 0 where std is 0
        g_var = (g / (y * 2)).masked_fill(y == 0, 0.0)
        return _var_backward(g_var, x, self)


def _var_forward(input: Tensor, dim, unbiased, keepdim, correction, op):
    dim, unbiased, correction = _var_args(dim, unbiased, correction)
    data = input._data
    if data.dtype.kind in "biu":
        raise RuntimeError(
            f"{op}(): input dtype should be either floating point or complex. "
            f"Got {input.dtype.legacy_name} instead."
        )
    dims = _dims(input, dim, op)
    c = _correction(unbiased, correction)
    n = 1
    for d in dims:
        n *= data.shape[d]
    xp = array_module(data)
    denom = n - c
    if denom <= 0:
        warnings.warn(
            f"{op}(): degrees of freedom is <= 0. Correction should be strictly less than the "
            "reduction factor (input numel divided by output numel).",
            stacklevel=4,
        )
    # PyTorch takes the mean in the input's dtype and sums the squared deviations in double:
    # squares that overflow float32 still give a finite std (a sum that overflows gives inf).
    # A float32 result that is not finite is recomputed that way; half floats always are.
    if data.dtype.kind != "c" and data.dtype.itemsize < 4:
        var_data = _two_pass_var(xp, data.astype(dt.float64.np), dims, keepdim, denom)
    else:
        var_data = _two_pass_var(xp, data, dims, keepdim, denom)
        if data.dtype == dt.float32.np and not bool(xp.isfinite(var_data).all()):
            var_data = _two_pass_var(xp, data, dims, keepdim, denom, dt.float64.np)
    attrs = dict(dims=dims, keepdim=keepdim, denom=denom, whole=dim is None or data.ndim == 0)
    return data, var_data, attrs, xp


def _real_dtype(np_dtype):
    """A complex input's variance is real: complex64 -> float32, complex128 -> float64."""
    return np_dtype.type(0).real.dtype if np_dtype.kind == "c" else np_dtype


def _two_pass_var(xp, data, dims, keepdim, denom, deviations_dtype=None):
    with _backend.errstate(xp, over="ignore", invalid="ignore"):
        mean = xp.mean(data, axis=dims, keepdims=True)
        if deviations_dtype is not None:
            data, mean = data.astype(deviations_dtype), mean.astype(deviations_dtype)
        centred = data - mean
        if centred.dtype.kind == "c":  # |x - x̄|², real as torch's complex variance is
            centred = xp.abs(centred)
        ss = xp.sum(centred * centred, axis=dims, keepdims=keepdim)
    with _backend.errstate(xp, divide="ignore", invalid="ignore", over="ignore"):
        # torch divides by max(N - c, 0): no degrees of freedom give inf (NaN for 0/0)
        return ss / denom if denom > 0 else ss / xp.zeros((), ss.dtype)


def _var(input: Tensor, dim, unbiased, keepdim: bool, correction, op: str) -> Tensor:
    data, var_data, attrs, xp = _var_forward(input, dim, unbiased, keepdim, correction, op)
    with _backend.errstate(xp, over="ignore"):
        var_data = var_data.astype(_real_dtype(data.dtype), copy=False)
    return result(VarBackward0, var_data, (input,), (input,), **attrs)


def _std(input: Tensor, dim, unbiased, keepdim: bool, correction, op: str) -> Tensor:
    data, var_data, attrs, xp = _var_forward(input, dim, unbiased, keepdim, correction, op)
    out = xp.sqrt(var_data).astype(_real_dtype(data.dtype), copy=False)
    return result(StdBackward0, out, (input,), (input,), True, **attrs)


def var(input: Tensor, dim=None, unbiased=None, keepdim: bool = False, *, correction=None):
    return _var(input, dim, unbiased, keepdim, correction, "var")


def std(input: Tensor, dim=None, unbiased=None, keepdim: bool = False, *, correction=None):
    return _std(input, dim, unbiased, keepdim, correction, "std")


def var_mean(input: Tensor, dim=None, unbiased=None, keepdim: bool = False, *, correction=None):
    return (
        _var(input, dim, unbiased, keepdim, correction, "var_mean"),
        mean(input, _var_args(dim, unbiased, correction)[0], keepdim),
    )


def std_mean(input: Tensor, dim=None, unbiased=None, keepdim: bool = False, *, correction=None):
    return (
        _std(input, dim, unbiased, keepdim, correction, "std_mean"),
        mean(input, _var_args(dim, unbiased, correction)[0], keepdim),
    )


class LinalgVectorNormBackward0(Node):
    def backward(self, g):
        (x,) = self.unpack_saved()
        ord_, dims, keepdim = self.ord, self.dims, self.keepdim
        g = expand_reduced(g, x.shape, dims, keepdim)
        if ord_ == 0:
            return None  # the count of non-zeros is flat: no gradient, as torch's
        if ord_ == 1:
            return g * x.sign()
        y = expand_reduced(self.saved_output(), x.shape, dims, keepdim)
        if ord_ == 2:
            # d |x|₂ = x/|x|₂; a zero norm has zero x: divide by 1 there (no 0/0 for a
            # forward-mode tangent to carry)
            return g * x / y.masked_fill(y == 0, 1.0)
        if math.isinf(ord_):
            mask = x.abs() == y
            return g * x.sign() * mask / mask.sum(dims, keepdim=True)
        # d |x|_p = sign(x)|x|^(p-1) / |x|_p^(p-1)
        grad = g * x.sign() * x.abs() ** (ord_ - 1) / y ** (ord_ - 1)
        return grad.masked_fill(y == 0, 0.0)


def vector_norm(input: Tensor, ord=2, dim=None, keepdim: bool = False, *, dtype=None) -> Tensor:
    input = _floating_input(
        input,
        dtype,
        "linalg.vector_norm: Expected a floating point or complex tensor as input. Got ",
        "linalg.vector_norm: dtype should be floating point or complex, but got ",
    )
    data = input._data
    dims = _dims(input, dim, "linalg.vector_norm")
    xp = array_module(data)
    ord_ = float(ord)
    out_dtype = data.real.dtype  # the norm of complex values is real
    if data.dtype.itemsize == 2:  # half types accumulate in float32 (as torch's), then round
        data = data.astype(xp.float32)
    a = data if ord_ == 2 and data.dtype.kind == "f" else xp.abs(data)
    if (ord_ < 0 or ord_ == math.inf) and data.size == 0:
        if dim is None:
            raise RuntimeError(
                f"linalg.vector_norm cannot compute the {ord} norm on an empty tensor because "
                "the operation does not have an identity"
            )
        for d in dims:
            if data.shape[d] == 0:
                raise RuntimeError(
                    f"linalg.vector_norm cannot compute the {ord} norm on the dimension {d} "
                    "because this dimension is empty and the operation does not have an identity"
                )
    if ord_ == math.inf:
        # (an empty input reaching here reduces only non-empty dims: its result is empty)
        out = (
            xp.max(a, axis=dims, keepdims=keepdim)
            if a.size
            else xp.sum(a, dims, None, None, keepdim)
        )
    elif ord_ == -math.inf:
        out = xp.min(a, axis=dims, keepdims=keepdim)
    elif ord_ == 0:
        out = xp.sum(a != 0, axis=dims, keepdims=keepdim).astype(out_dtype)
    elif ord_ == 1:
        out = xp.sum(a, axis=dims, keepdims=keepdim)
    elif ord_ == 2:  # x·x for real x: the same squares as |x|·|x|, one pass fewer
        squares = data * data if data.dtype.kind == "f" else a * a
        out = xp.sqrt(xp.sum(squares, axis=dims, keepdims=keepdim))
    else:
        out = xp.sum(a**ord_, axis=dims, keepdims=keepdim) ** (1.0 / ord_)
    out = xp.asarray(out).astype(out_dtype, copy=False)
    return result(
        LinalgVectorNormBackward0,
        out,
        (input,),
        (input,),
        True,
        ord=ord_,
        dims=dims,
        keepdim=keepdim,
    )


def norm(input: Tensor, p="fro", dim=None, keepdim: bool = False, dtype=None) -> Tensor:
    """``ember.norm``: vector p-norms, and 'fro' / 'nuc' over two dims."""
    if p == "fro" or p is None:
        if dim is None or isinstance(dim, int) or len(dim) <= 2:
            return vector_norm(input, 2, dim, keepdim, dtype=dtype)
    if p == "nuc":
        from .linalg_functions import matrix_norm  # differentiable twice (svdvals)

        return matrix_norm(input, "nuc", dim if dim is not None else (-2, -1), keepdim)
    if isinstance(p, str):
        raise RuntimeError(f"norm: unsupported p {p!r}")
    return vector_norm(input, p, dim, keepdim, dtype=dtype)


class LogsumexpBackward0(Node):
    def backward(self, g):
        (x,) = self.unpack_saved()
        y = expand_reduced(self.saved_output(), x.shape, self.dims, self.keepdim)
        g = expand_reduced(g, x.shape, self.dims, self.keepdim)
        return g * (x - y).exp()  # softmax of x


def logsumexp(input: Tensor, dim=None, keepdim: bool = False) -> Tensor:
    input = float_result("logsumexp", input)
    data = input._data
    dims = _dims(input, dim, "logsumexp")
    xp = array_module(data)
    if data.size == 0:
        out = xp.log(xp.sum(xp.exp(data), axis=dims, keepdims=keepdim))
    else:
        # shift by the real part only: a complex shift would move the result's phase off
        # log's principal branch, which torch returns
        m = xp.max(data.real, axis=dims, keepdims=True)
        m = xp.where(xp.isfinite(m), m, 0)
        out = xp.log(xp.sum(xp.exp(data - m), axis=dims, keepdims=True)) + m
        if not keepdim:
            out = out.squeeze(dims)
    return result(LogsumexpBackward0, out, (input,), (input,), True, dims=dims, keepdim=keepdim)


class CumsumBackward0(Node):
    def backward(self, g):
        d = self.dim
        return g.flip(d).cumsum(d).flip(d)  # reversed cumulative sum


def _running(name: str, data, dim: int, dtype):
    """The running ``name`` (cumsum or cumprod) of ``data`` along ``dim`` in torch's dtype, and
    the wrapped dim."""
    d = wrap_dim(dim, data.ndim, name)
    acc, back = _accumulation_dtype(data, dtype)
    xp = array_module(data)
    if data.ndim:
        out = getattr(xp, name)(data, axis=d, dtype=acc)
    else:
        out = data.astype(acc or data.dtype)
    if back is not None:
        out = out.astype(back)
    return out, d


def cumsum(input: Tensor, dim: int, *, dtype=None) -> Tensor:
    out, d = _running("cumsum", input._data, dim, dtype)
    return result(CumsumBackward0, out, (input,), dim=d)


class CumprodBackward0(Node):
    def backward(self, g):
        (x,) = self.unpack_saved()
        d = self.dim
        if x.ndim == 0 or x.numel() == 0:
            return g
        if not bool((x._data == 0).any()):
            y = self.saved_output()
            return (g * y).flip(d).cumsum(d).flip(d) / x  # Σ_{j≥i} g_j y_j / x_i
        # with zeros: grad_i = Σ_{j≥i} g_j ∏_{k≤j, k≠i} x_k, one cumulative product per i
        n = x.shape[d]
        view = [1] * x.ndim
        view[d] = n
        positions = arange(n, device=x.device).reshape(view)
        pieces = []
        for i in range(n):
            partial = x.masked_fill(positions == i, 1.0).cumprod(d)
            pieces.append((g * partial * (positions >= i)).sum(d, keepdim=True))
        return cat(pieces, d)


def cumprod(input: Tensor, dim: int, *, dtype=None) -> Tensor:
    out, d = _running("cumprod", input._data, dim, dtype)
    return result(CumprodBackward0, out, (input,), (input,), True, dim=d)


def all(input: Tensor, dim=None, keepdim: bool = False) -> Tensor:
    xp = array_module(input._data)
    dims = _dims(input, dim, "all")
    return wrap(_keep_uint8(input, xp.all(input._data, axis=dims, keepdims=keepdim)))


def any(input: Tensor, dim=None, keepdim: bool = False) -> Tensor:
    xp = array_module(input._data)
    dims = _dims(input, dim, "any")
    return wrap(_keep_uint8(input, xp.any(input._data, axis=dims, keepdims=keepdim)))


def _keep_uint8(input: Tensor, out):
    # PyTorch keeps uint8 for all/any of uint8 (a legacy of byte masks); bool otherwise
    return out.astype(dt.uint8.np) if input._data.dtype == dt.uint8.np else out


def count_nonzero(input: Tensor, dim=None) -> Tensor:
    xp = array_module(input._data)
    dims = _dims(input, dim, "count_nonzero")
    return wrap(xp.asarray(xp.count_nonzero(input._data, axis=dims)).astype(dt.int64.np))
