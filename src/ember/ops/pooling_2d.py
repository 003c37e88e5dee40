"""2-D pooling (and 1-D through it) on windows: max picks window elements with ``gather``,
average pooling averages them with masks, never looping over pixels in Python."""

from __future__ import annotations

import math

from .. import _dtype as dt
from .._kernels import jit
from .._kernels.blocked import is_plain_numpy
from .._tensor import Tensor
from ..autograd.node import Node
from ._composite import CompositeBackward, composite
from ._dispatch import array_module, grad_state, result, wrap
from ._recorded import kernel_call, recorder
from ._spatial_checks import (
    check_max_pool1d_args,
    check_pool_args,
    check_pool_output,
    pool_input_error,
    pool_tuple,
    require_floating,
)
from .pooling import adaptive_output_size


def _pool_args(kernel_size, stride, padding, dilation, op: str) -> tuple:
    """kernel, stride (the kernel's when omitted), padding and dilation as pairs."""
    kernel = pool_tuple(kernel_size, 2, "kernel_size", op)
    omitted = stride is None or (isinstance(stride, (tuple, list)) and not stride)
    stride = kernel if omitted else pool_tuple(stride, 2, "stride", op)
    padding = pool_tuple(padding, 2, "padding", op)
    return kernel, stride, padding, pool_tuple(dilation, 2, "dilation", op)


def _pool_geometry(x, kernel, stride, padding, dilation, ceil_mode, input_error=None):
    h, w = x.shape[2:]
    check_pool_args(kernel, stride, padding, dilation, input_error)
    sizes = []
    for size, k, s, p, d in zip((h, w), kernel, stride, padding, dilation):
        span = size + 2 * p - d * (k - 1) - 1
        out = (math.ceil(span / s) if ceil_mode else span // s) + 1
        if ceil_mode and (out - 1) * s >= size + p:
            out -= 1  # the last window must start inside the input or the left padding
        sizes.append(out)
    check_pool_output(x.shape[1:], sizes)
    return sizes


def _window_index(xp, h, w, kernel, stride, padding, dilation, out_hw):
    """Row and column of every window element: (oh, ow, kh*kw) each, plus in-bounds masks."""
    (kh, kw), (sh, sw), (ph, pw), (dh, dw) = kernel, stride, padding, dilation
    oh, ow = out_hw
    rows = (xp.arange(oh) * sh - ph)[:, None, None, None] + (xp.arange(kh) * dh)[
        None, None, :, None
    ]
    cols = (xp.arange(ow) * sw - pw)[None, :, None, None] + (xp.arange(kw) * dw)[
        None, None, None, :
    ]
    rows, cols = xp.broadcast_arrays(rows, cols)
    rows, cols = rows.reshape(oh, ow, kh * kw), cols.reshape(oh, ow, kh * kw)
    inside = (rows >= 0) & (rows < h) & (cols >= 0) & (cols < w)
    return rows, cols, inside


def _as_4d(input: Tensor, op: str):
    if input.dim() == 3:
        return input.unsqueeze(0), True
    if input.dim() != 4:
        raise RuntimeError(f"{op}: Expected 3D or 4D input, got {input.dim()}D")
    return input, False


def max_pool2d(
    input: Tensor,
    kernel_size,
    stride=None,
    padding=0,
    dilation=1,
    ceil_mode: bool = False,
    return_indices: bool = False,
):
    """Max over windows; the gradient goes to the chosen element (through gather)."""
    geometry = _pool_args(kernel_size, stride, padding, dilation, "max_pool2d")
    kernel, stride, padding, dilation = geometry
    if input.dim() not in (3, 4):  # torch's words for max_pool2d
        raise RuntimeError("non-empty 3D or 4D (batch mode) tensor expected for input")
    x, unbatched = _as_4d(input, "max_pool2d")
    n, c, h, w = x.shape
    oh, ow = _pool_geometry(
        x, *geometry, ceil_mode, pool_input_error(tuple(input.shape), 2, "max_pool2d")
    )
    data = x._data
    xp = array_module(data)
    (kh, kw), (sh, sw), (ph, pw), (dh, dw) = kernel, stride, padding, dilation
    overlap = sh < (kh - 1) * dh + 1 or sw < (kw - 1) * dw + 1
    kernels = _pool_kernels(data)
    if kernels is not None and _every_window_inside(
        (h, w), kernel, stride, padding, dilation, (oh, ow)
    ):
        best, index = kernel_call(
            xp, kernels.max_pool2d, data, kernel, stride, padding, dilation, (oh, ow)
        )
        out = result(
            MaxPool2DWithIndicesBackward0,
            best,
            (x,),
            index=index,
            shape=data.shape,
            overlap=overlap,
            input=x,
            geometry=(kernel, stride, padding, dilation, ceil_mode),
        )
        return _pool_outputs(out, index, unbatched, return_indices)
    # pad with -inf (and far enough for ceil_mode's last window), then visit the K window
    # elements as strided views: a running maximum and the flat input index of the winner
    bottom = max(0, (oh - 1) * sh + (kh - 1) * dh + 1 - h - ph)
    right = max(0, (ow - 1) * sw + (kw - 1) * dw + 1 - w - pw)
    lowest = -xp.inf if data.dtype.kind not in "iub" else xp.iinfo(data.dtype).min
    padded = (
        xp.pad(data, ((0, 0), (0, 0), (ph, bottom), (pw, right)), constant_values=lowest)
        if (ph or pw or bottom or right)
        else data
    )
    disjoint = (sh, sw) == (kh, kw) and (dh, dw) == (1, 1) and padded is data
    if disjoint and not return_indices and data.size:
        fast = _max_pool_disjoint(x, (kh, kw), (oh, ow))
        if fast is not None:  # None: a NaN, which the general path orders as PyTorch does
            if fast._grad_fn is not None:  # what torch's node saves, for _saved_*
                fast._grad_fn.input = x
                fast._grad_fn.geometry = (kernel, stride, padding, dilation, ceil_mode)
            return fast.squeeze(0) if unbatched else fast
    out_rows = xp.arange(oh)[:, None] * sh - ph
    out_cols = xp.arange(ow)[None, :] * sw - pw
    # PyTorch's order: a window's first element inside the input starts the running maximum;
    # a greater element or a NaN replaces it (the last NaN wins; -inf padding never does)
    best = index = None
    for i in range(kh):
        for j in range(kw):
            value = padded[
                :,
                :,
                i * dh : i * dh + sh * (oh - 1) + 1 : sh,
                j * dw : j * dw + sw * (ow - 1) + 1 : sw,
            ]
            rows, cols = out_rows + i * dh, out_cols + j * dw
            where_from = rows * w + cols
            inside = (rows >= 0) & (rows < h) & (cols >= 0) & (cols < w)
            if best is None:
                best = xp.array(value)
                index = xp.where(inside, where_from, -1)
                index = xp.array(xp.broadcast_to(index, value.shape))
                continue
            better = inside & ((index < 0) | (value > best) | (value != value))
            best = xp.where(better, value, best)
            index = xp.where(better, where_from, index)
    index = xp.ascontiguousarray(index, dtype="int64")
    out = result(
        MaxPool2DWithIndicesBackward0,
        xp.ascontiguousarray(best),
        (x,),
        index=index,
        shape=x._data.shape,
        overlap=overlap,
        input=x,
        geometry=(kernel, stride, padding, dilation, ceil_mode),
    )
    return _pool_outputs(out, index, unbatched, return_indices)


def _pool_outputs(out: Tensor, index, unbatched: bool, return_indices: bool):
    indices = wrap(index)
    if unbatched:
        out, indices = out.squeeze(0), indices.squeeze(0)
    return (out, indices) if return_indices else out


def _every_window_inside(size, kernel, stride, padding, dilation, out_size) -> bool:
    """Whether every window holds an element of the input (the kernel starts from one)."""
    return all(
        any(0 <= o * s - p + i * d < n for i in range(k))
        for n, k, s, p, d, out in zip(size, kernel, stride, padding, dilation, out_size)
        for o in range(out)
    )


def _pool_kernels(data):
    """ember._kernels.pooling_jit for float32/float64 NumPy arrays (or ember.compile's recording
    of one) with enough elements to pay for it, when compiled kernels are on; else None."""
    if not (is_plain_numpy(data) or recorder(array_module(data)) is not None):
        return None
    if data.dtype.char not in "fd":
        return None
    return jit.module("pooling_jit", data.size)


def _window_views(data, kernel, out_size) -> list:
    """The K = kh * kw strided views of non-overlapping windows (stride = kernel)."""
    (kh, kw), (oh, ow) = kernel, out_size
    return [
        data[:, :, i : i + kh * (oh - 1) + 1 : kh, j : j + kw * (ow - 1) + 1 : kw]
        for i in range(kh)
        for j in range(kw)
    ]


def _max_pool_disjoint(x: Tensor, kernel, out_size):
    """Max pooling when windows tile the input (MaxPool2d(k)): a running maximum over the K
    window views and, per output, the (first) window position it came from, as int8."""
    data = x._data
    xp = array_module(data)
    views = _window_views(data, kernel, out_size)
    best = xp.array(views[0])
    for v in views[1:]:
        xp.maximum(best, v, out=best)
    if dt.is_floating_array_dtype(data.dtype) and bool(xp.isnan(best).any()):
        return None
    if not (x._rg and grad_state.enabled):
        return result(MaxPoolWindowsBackward, best, (x,))
    # the first window position holding the maximum: count the leading positions that do not
    which = xp.zeros(best.shape, dtype=xp.int8)
    before = xp.ones(best.shape, dtype=bool)  # no maximum seen yet
    for v in views[:-1]:
        xp.logical_and(before, v != best, out=before)
        which += before
    return result(MaxPoolWindowsBackward, best, (x,), which=which, shape=data.shape, kernel=kernel)


def _max_pool_fields(indices):
    """torch's saved fields of max_pool2d: its input, flat indices and geometry."""

    def geometry(i):
        return lambda node: node.geometry[i] if node.geometry is not None else None

    return {
        "ceil_mode": geometry(4),
        "dilation": geometry(3),
        "kernel_size": geometry(0),
        "padding": geometry(2),
        "result1": ("tensor", indices),
        "self": ("tensor", lambda node: node.input),
        "stride": geometry(1),
    }


def _window_indices(node) -> Tensor:
    """The flat input index of each maximum of a tiling max pooling (torch's indices)."""
    which = node.which
    xp = array_module(which)
    kh, kw = node.kernel
    oh, ow = which.shape[2:]
    rows = xp.arange(oh)[:, None] * kh + which // kw
    cols = xp.arange(ow)[None, :] * kw + which % kw
    return wrap((rows * node.shape[3] + cols).astype("int64"))


class MaxPoolWindowsBackward(Node):
    """Max pooling over tiling windows: the gradient goes to the recorded window position."""

    torch_name = "MaxPool2DWithIndicesBackward0"
    torch_saved = _max_pool_fields(_window_indices)
    input = geometry = None

    def backward(self, g):
        return window_scatter(g, self.which, self.shape, self.kernel)


def window_scatter(g: Tensor, which, shape, kernel) -> Tensor:
    """An input-shaped tensor with g[n, c, y, x] at the window position ``which`` picked."""
    data = g._data
    xp = array_module(data)
    oh, ow = which.shape[2:]
    tiled = shape[2] == oh * kernel[0] and shape[3] == ow * kernel[1]
    out = xp.empty(shape, dtype=data.dtype) if tiled else xp.zeros(shape, dtype=data.dtype)
    views = _window_views(out, kernel, (oh, ow))
    if not dt.is_floating_array_dtype(data.dtype) or bool(xp.isfinite(data).all()):
        for k, view in enumerate(views):  # g * mask: exact zeros where g is finite
            xp.multiply(data, which == k, out=view)
    else:  # NaN or inf in g stays at the chosen positions only
        zero = xp.zeros((), dtype=data.dtype)
        for k, view in enumerate(views):
            view[...] = xp.where(which == k, data, zero)
    return result(WindowScatterBackward, out, (g,), which=which, kernel=kernel)


class WindowScatterBackward(Node):
    def backward(self, gg):
        data = gg._data
        xp = array_module(data)
        picked = xp.zeros(self.which.shape, dtype=data.dtype)
        for k, view in enumerate(_window_views(data, self.kernel, self.which.shape[2:])):
            xp.copyto(picked, view, where=self.which == k)
        return result(
            MaxPoolWindowsBackward,
            picked,
            (gg,),
            which=self.which,
            shape=data.shape,
            kernel=self.kernel,
        )


class MaxPool2DWithIndicesBackward0(Node):
    torch_saved = _max_pool_fields(lambda node: wrap(node.index))
    input = geometry = None

    def backward(self, g):
        return max_unpool(g, self.index, self.shape, self.overlap)


class MaxUnpoolBackward0(Node):
    def backward(self, g):
        n, c, h, w = g.shape
        flat = g._data.reshape(n, c, h * w)
        xp = array_module(flat)
        index = self.index
        picked = xp.take_along_axis(flat, index.reshape(n, c, -1), axis=2)
        return _gather_like(g, picked.reshape(index.shape), self.index)


def _gather_like(g: Tensor, values, index) -> Tensor:
    """g's values at the pooled positions, differentiable in g (through max_unpool again)."""
    return result(
        MaxPool2DWithIndicesBackward0, values, (g,), index=index, shape=g._data.shape, overlap=True
    )


def max_unpool(grad: Tensor, index, shape, overlap: bool) -> Tensor:
    """Send each pooled gradient back to the input position its maximum came from."""
    n, c, h, w = shape
    data = grad._data
    xp = array_module(data)
    kernels = _pool_kernels(data) if index.dtype.name == "int64" else None
    if kernels is not None:
        (out,) = kernel_call(xp, kernels.max_pool2d_backward, data, index, shape)
        return result(MaxUnpoolBackward0, out, (grad,), index=index)
    out = xp.zeros((n, c, h * w), dtype=data.dtype)
    flat_index = index.reshape(n, c, -1)
    flat_grad = data.reshape(n, c, -1)
    if overlap:  # overlapping windows can pick one input twice: add, do not overwrite
        rows = xp.arange(n)[:, None, None]
        chans = xp.arange(c)[None, :, None]
        xp.add.at(out, (rows, chans, flat_index), flat_grad)
    else:
        xp.put_along_axis(out, flat_index, flat_grad, axis=2)
    return result(MaxUnpoolBackward0, out.reshape(shape), (grad,), index=index)


def avg_pool2d(
    input: Tensor,
    kernel_size,
    stride=None,
    padding=0,
    ceil_mode: bool = False,
    count_include_pad: bool = True,
    divisor_override=None,
) -> Tensor:
    """Mean over windows, with PyTorch's rules for what the divisor counts."""
    kernel, stride, padding, _ = _pool_args(kernel_size, stride, padding, 1, "avg_pool2d")
    if input.dim() < 3:  # torch reads the size of dim -3 first
        raise IndexError(
            "Dimension specified as -3 but tensor has no dimensions"
            if input.dim() == 0
            else f"Dimension out of range (expected to be in range of [{-input.dim()}, "
            f"{input.dim() - 1}], but got -3)"
        )
    input_error = pool_input_error(tuple(input.shape), 2, "avg_pool2d", any_rank=True)
    if input.dim() > 4:  # the shape check says so, in its turn
        check_pool_args(kernel, stride, padding, (1, 1), input_error)
    x, unbatched = _as_4d(input, "avg_pool2d")
    if divisor_override is not None and divisor_override == 0:
        raise RuntimeError("divisor must be not zero")
    n, c, h, w = x.shape
    oh, ow = _pool_geometry(x, kernel, stride, padding, (1, 1), ceil_mode, input_error)
    xp = array_module(x._data)
    integer = not (x.is_floating_point() or x.is_complex())
    if integer and x.dtype != dt.int64:  # torch's CPU kernel takes int64 among the integers
        raise NotImplementedError(f"\"avg_pool2d\" not implemented for '{x.dtype.legacy_name}'")
    kernels = _pool_kernels(x._data)
    if kernels is not None and (divisor_override is None or isinstance(divisor_override, int)):
        pooling = _AvgPooling(kernel, stride, padding, divisor_override or 0, count_include_pad)
        out = pooling.forward(x, (oh, ow))
        return out.squeeze(0) if unbatched else out
    rows, cols, inside = _window_index(xp, h, w, kernel, stride, padding, (1, 1), (oh, ow))
    flat = xp.where(inside, rows * w + cols, 0).reshape(oh * ow * kernel[0] * kernel[1])
    if divisor_override:
        divisor = xp.full((oh, ow), divisor_override if integer else float(divisor_override))
    elif count_include_pad:  # padding counts, the overflow of ceil_mode does not
        in_pad = (
            (rows >= -padding[0])
            & (rows < h + padding[0])
            & (cols >= -padding[1])
            & (cols < w + padding[1])
        )
        divisor = in_pad.sum(-1)
    else:
        divisor = inside.sum(-1)
    index = wrap(flat.astype("int64"))
    if integer:  # the window's integer sum divided as C divides: truncated toward zero
        picked = x.reshape(n, c, h * w).index_select(2, index)
        picked = picked.reshape(n, c, oh, ow, kernel[0] * kernel[1])
        total = (picked._data * inside).sum(-1)
        out = wrap(xp.sign(total) * (xp.abs(total) // divisor.astype(total.dtype)))
        return out.squeeze(0) if unbatched else out
    weights = wrap((inside / divisor[..., None]).astype(x._data.dtype))  # (oh, ow, K)

    def windows_mean(x):
        picked = x.reshape(n, c, h * w).index_select(2, index)
        return (picked.reshape(n, c, oh, ow, kernel[0] * kernel[1]) * weights).sum(-1)

    out = composite(AvgPool2DCompositeBackward, windows_mean, (x,))  # one node, as torch's
    return out.squeeze(0) if unbatched else out


class AvgPool2DCompositeBackward(CompositeBackward):
    """avg_pool2d computed with ember ops (no compiled kernel) recorded as one node."""

    torch_name = "AvgPool2DBackward0"


class _AvgPooling:
    """Average pooling through ember._kernels.pooling_jit, as ATen computes it (window sums in
    order, then one division); its backward spreads each gradient / count over the window,
    and that backward's own backward is the pooling again."""

    def __init__(self, kernel, stride, padding, divisor: int, count_pad: bool):
        self.geometry = (kernel, stride, padding)
        self.divisor, self.count_pad = divisor, count_pad

    def forward(self, x: Tensor, out_size, node: type = None) -> Tensor:
        data = x._data
        (out,) = kernel_call(
            array_module(data),
            _kernel_module().avg_pool2d,
            data,
            *self.geometry,
            out_size,
            self.divisor,
            self.count_pad,
        )
        node = node or AvgPool2DBackward0
        return result(node, out, (x,), pooling=self, shape=data.shape)

    def backward(self, g: Tensor, shape) -> Tensor:
        data = g._data
        (out,) = kernel_call(
            array_module(data),
            _kernel_module().avg_pool2d_backward,
            data,
            shape,
            *self.geometry,
            self.divisor,
            self.count_pad,
        )
        return result(AvgPool2DBackwardBackward0, out, (g,), pooling=self, out_size=data.shape[2:])


def _kernel_module():
    """The kernel module a recorded kernel node calls again, even in a thread where kernels
    were switched off since (jit.disabled): its results must stay the kernels'."""
    import importlib

    return importlib.import_module("ember._kernels.pooling_jit")


class AvgPool2DBackward0(Node):
    def backward(self, g):
        return self.pooling.backward(g, self.shape)


class AdaptiveAvgPool2DBackward0(AvgPool2DBackward0):
    pass


class AvgPool2DBackwardBackward0(Node):
    def backward(self, gg):
        return self.pooling.forward(gg, self.out_size)


def _adaptive_matrix(xp, size: int, out: int, dtype):
    """Row i averages input positions floor(i·size/out) .. ceil((i+1)·size/out)."""
    m = xp.zeros((out, size), dtype=dtype)
    for i in range(out):
        start = (i * size) // out
        end = -((-(i + 1) * size) // out)
        m[i, start:end] = 1.0 / (end - start)
    return m


def adaptive_avg_pool2d(input: Tensor, output_size) -> Tensor:
    """Average over adaptive windows, as two small matrix products (rows, then columns)."""
    oh, ow = adaptive_output_size(input, output_size, 2, "adaptive_avg_pool2d")
    x, unbatched = _as_4d(input, "adaptive_avg_pool2d")
    require_floating(x, "adaptive_avg_pool2d")
    h, w = x.shape[2:]
    if (oh, ow) == (1, 1) and h * w:  # as PyTorch: a mean (MeanBackward1), one pass
        out = x.mean((-2, -1), keepdim=True)
        return out.squeeze(0) if unbatched else out
    kernels = _pool_kernels(x._data)
    if kernels is not None and oh and ow and h % oh == 0 and w % ow == 0:  # tiling windows
        pooling = _AvgPooling((h // oh, w // ow), (h // oh, w // ow), (0, 0), 0, True)
        out = pooling.forward(x, (oh, ow), AdaptiveAvgPool2DBackward0)
        return out.squeeze(0) if unbatched else out
    xp = array_module(x._data)
    rows = wrap(_adaptive_matrix(xp, h, oh, x._data.dtype))
    cols = wrap(_adaptive_matrix(xp, w, ow, x._data.dtype))
    out = rows @ x @ cols.mT
    return out.squeeze(0) if unbatched else out


def _single(value, name: str, op: str, allow_empty: bool = False) -> int | None:
    """A 1-d pooling argument as one int (None: an empty stride, the kernel's), in the words
    of torch's argument parser."""
    if not isinstance(value, (tuple, list)):
        return None if value is None else int(value)
    if allow_empty and not value:
        return None
    if len(value) != 1:
        raise RuntimeError(f"{op}() argument '{name}' should contain one int (got {len(value)})")
    return int(value[0])


def _as_2d_pool(fn, op: str, input: Tensor, kernel_size, stride, padding, *args, **kwargs):
    """A 1-d pooling as torch runs it: the 2-d one over input.unsqueeze(-2)."""
    k = _single(kernel_size, "kernel_size", op)
    s = _single(stride, "stride", op, allow_empty=True)
    p = _single(padding, "padding", op)
    if input.dim() not in (2, 3):
        raise RuntimeError(
            f"Expected 2 to 3 dimensions, but got {input.dim()}-dimensional tensor for argument "
            f"#1 'self' (while checking arguments for {op})"
        )
    out = fn(input.unsqueeze(-2), (1, k), None if s is None else (1, s), (0, p), *args, **kwargs)
    if isinstance(out, tuple):
        return tuple(o.squeeze(-2) for o in out)
    return out.squeeze(-2)


def _max_pool1d_checks(input: Tensor, kernel_size, stride, padding, dilation, ceil_mode):
    """torch's max_pool1d kernel (no indices) checks its arguments and input itself."""

    def single(value, name, rule):
        if not isinstance(value, (tuple, list)):
            return int(value)
        if len(value) != 1:
            raise RuntimeError(
                f"max_pool1d() {name} must be {rule} of size 1 but got size {len(value)}"
            )
        return int(value[0])

    k = single(kernel_size, "kernel_size", "an int, list of ints or tuple of ints")
    omitted = stride is None or (isinstance(stride, (tuple, list)) and not stride)
    s = k if omitted else single(stride, "stride", "None, an int, list of ints, or tuple of ints")
    p = single(padding, "padding", "an int, list of ints, or tuple of ints")
    d = single(dilation, "dilation", "an int, list of ints or tuple of ints")
    shape = list(input.shape)
    if input.dim() not in (2, 3) or not all(shape[input.dim() - 2 :]):
        raise RuntimeError(
            "max_pool1d: Expected 2D or 3D (batch mode) tensor with optional 0 dim batch size "
            f"for input, but got:{shape}"
        )
    check_max_pool1d_args((k,), (s,), (p,), (d,))
    span = shape[-1] + 2 * p - d * (k - 1) - 1
    out = (-(-span // s) if ceil_mode else span // s) + 1
    if ceil_mode and (out - 1) * s >= shape[-1] + p:
        out -= 1
    if out <= 0:
        raise RuntimeError(f"max_pool1d() Invalid computed output size: {out}")
    return d


def max_pool1d(
    input: Tensor,
    kernel_size,
    stride=None,
    padding=0,
    dilation=1,
    ceil_mode: bool = False,
    return_indices: bool = False,
):
    if return_indices:  # torch: max_pool1d_with_indices, the 2-d pooling's checks
        d = _single(dilation, "dilation", "max_pool1d")
    else:  # torch's own max_pool1d kernel checks first
        d = _max_pool1d_checks(input, kernel_size, stride, padding, dilation, ceil_mode)
    return _as_2d_pool(
        max_pool2d,
        "max_pool1d",
        input,
        kernel_size,
        stride,
        padding,
        (1, d),
        ceil_mode,
        return_indices,
    )


def avg_pool1d(
    input: Tensor,
    kernel_size,
    stride=None,
    padding=0,
    ceil_mode: bool = False,
    count_include_pad: bool = True,
) -> Tensor:
    return _as_2d_pool(
        avg_pool2d,
        "avg_pool1d",
        input,
        kernel_size,
        stride,
        padding,
        ceil_mode,
        count_include_pad,
    )
