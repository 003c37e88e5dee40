"""Pooling in 1 to 3 spatial dims: max (plain, adaptive, fractional), average, power-average,
and max_unpool.

Max pooling gathers every window into a trailing axis and takes its first maximum (a NaN
wins, as in PyTorch); the gradient goes to the winner's flat position through a scatter whose
own derivative is the matching gather, so double backward works. Average pooling is separable:
each spatial axis is averaged by an (out, in) matrix (see ``resample.apply_along_axes``).
"""

from __future__ import annotations

import math

from .. import _creation
from .._tensor import Tensor
from ..autograd import forward_rules
from ..autograd.node import Node
from ._dispatch import array_module, result, wrap
from ._spatial_checks import (
    check_pool_args,
    check_pool_output,
    pool_input_error,
    pool_tuple,
    require_floating,
)
from .resample import _area_matrix, apply_along_axes
from .shape import broadcast_shapes


def _batched(input: Tensor, nd: int, op: str) -> tuple[Tensor, bool]:
    if input.dim() == nd + 1:
        return input.unsqueeze(0), True
    if input.dim() != nd + 2:
        raise RuntimeError(
            f"{op}: Expected {nd + 1}D or {nd + 2}D (batch mode) tensor for input, but got "
            f"input of size: {list(input.shape)}"
        )
    return input, False


def _unbatch(out, unbatched: bool):
    if not unbatched:
        return out
    if isinstance(out, tuple):
        return tuple(o.squeeze(0) for o in out)
    return out.squeeze(0)


# --- the scatter / gather pair behind every max pooling ---------------------------------------
class _ScatterToPlaneBackward(Node):
    torch_name = "MaxUnpoolBackward0"

    def backward(self, g):
        return gather_from_plane(g, self.index)


class _GatherFromPlaneBackward(Node):
    def name(self) -> str:
        return self.op_name

    def backward(self, g):
        return scatter_to_plane(g, self.index, self.shape)


def gather_from_plane(input: Tensor, index, op_name: str = "MaxPoolBackward0") -> Tensor:
    """out[n, c, *o] = input[n, c].flatten()[index[n, c, *o]]."""
    data = input._data
    xp = array_module(data)
    n, c = data.shape[:2]
    flat = data.reshape(n, c, math.prod(data.shape[2:]))
    wanted = index.reshape(n, c, math.prod(index.shape[2:]))
    picked = xp.take_along_axis(flat, wanted, axis=2).reshape(index.shape)
    return result(
        _GatherFromPlaneBackward,
        picked,
        (input,),
        index=index,
        shape=data.shape,
        op_name=op_name,
    )


def scatter_to_plane(values: Tensor, index, shape, accumulate: bool = True) -> Tensor:
    """An (N, C, *S) tensor of zeros with ``values`` added at flat positions ``index``.

    Without ``accumulate`` each position takes one value, the last one that names it (what
    max_unpool does with duplicate indices, as torch); with it (gradients) they add up."""
    data = values._data
    xp = array_module(data)
    n, c = shape[:2]
    out = xp.zeros((n, c, math.prod(shape[2:])), dtype=data.dtype)
    rows = xp.arange(n)[:, None, None]
    chans = xp.arange(c)[None, :, None]
    count = math.prod(index.shape[2:])
    where = (rows, chans, index.reshape(n, c, count))
    if accumulate:
        xp.add.at(out, where, data.reshape(n, c, count))
    else:
        out[where] = data.reshape(n, c, count)
    return result(
        _ScatterToPlaneBackward, out.reshape(shape), (values,), index=index, accumulate=accumulate
    )


def _scatter_to_plane_jvp(node, tangents):
    """The scatter applied to the tangent: with duplicate indices and no ``accumulate`` only
    the last value counts (the transposed gather would add every duplicate's tangent)."""
    (tangent,) = tangents
    if tangent is None:
        return None
    return scatter_to_plane(tangent, node.index, tuple(node._meta[0][0]), node.accumulate)


forward_rules.RULES[_ScatterToPlaneBackward.python_name] = _scatter_to_plane_jvp


def _window_max(x: Tensor, positions, valid, op_name: str) -> tuple[Tensor, Tensor]:
    """Max over windows given, per spatial axis, positions (..., O, K) and in-bounds masks.

    Leading dims of the position arrays are () or (N, C) (fractional pooling draws windows per
    plane). Returns the maxima and their flat positions in the input plane (int64)."""
    data = x._data
    xp = array_module(data)
    n, c = data.shape[:2]
    sizes = data.shape[2:]
    nd = len(sizes)
    lead = positions[0].ndim - 2
    flat = 0
    ok = True
    for a in range(nd):
        # place axis a's (O, K) at output slot a and window slot nd + a
        shape = [1] * (2 * nd)
        shape[a], shape[nd + a] = positions[a].shape[-2:]
        pos = positions[a].reshape(positions[a].shape[:lead] + tuple(shape))
        flat = flat * sizes[a] + xp.clip(pos, 0, sizes[a] - 1)
        ok = ok & valid[a].reshape(tuple(shape))
    full = (n, c) + tuple(broadcast_shapes(flat.shape[lead:], ok.shape[lead:]))
    out_shape = full[2 : 2 + nd]
    taps = math.prod(full[2 + nd :])
    flat = xp.broadcast_to(flat, full).reshape((n, c, math.prod(full[2:])))
    windows = xp.take_along_axis(data.reshape(n, c, math.prod(sizes)), flat, axis=2)
    windows = windows.reshape((n, c) + out_shape + (taps,))
    flat = flat.reshape(windows.shape)
    floating = data.dtype.kind not in "iub"  # bfloat16 (ml_dtypes) has kind "V"
    if not bool(xp.all(ok)):
        lowest = -xp.inf if floating else xp.iinfo(data.dtype).min
        windows = xp.where(xp.broadcast_to(ok, full).reshape(windows.shape), windows, lowest)
    if windows.shape[-1] == 0 or 0 in windows.shape:
        index = xp.zeros((n, c) + out_shape, dtype=xp.int64)
    else:
        which = xp.argmax(windows, axis=-1)[..., None]  # the first maximum, or the first NaN
        if floating:
            nan = xp.isnan(windows)
            if bool(nan.any()):  # PyTorch's loop takes every NaN it meets: the last one wins
                last = windows.shape[-1] - 1 - xp.argmax(nan[..., ::-1], axis=-1)[..., None]
                which = xp.where(nan.any(axis=-1, keepdims=True), last, which)
        index = xp.take_along_axis(flat, which, axis=-1)[..., 0].astype(xp.int64)
    values = gather_from_plane(x, index, op_name)
    return values, wrap(index)


def _pool_args(kernel_size, stride, padding, dilation, nd: int, op: str) -> tuple:
    """kernel, stride (the kernel's when omitted), padding and dilation as ``nd`` ints."""
    kernel = pool_tuple(kernel_size, nd, "kernel_size", op)
    omitted = stride is None or (isinstance(stride, (tuple, list)) and not stride)
    stride = kernel if omitted else pool_tuple(stride, nd, "stride", op)
    padding = pool_tuple(padding, nd, "padding", op)
    return kernel, stride, padding, pool_tuple(dilation, nd, "dilation", op)


def _check_pool_input(input: Tensor, kernel, stride, padding, dilation, op: str) -> None:
    """torch's checks of the window and (3-d) of the input, in its order."""
    nd = len(kernel)
    if nd == 1:  # 1-d poolings are torch's 2-d ones over a (1, L) plane
        check_pool_args((1, *kernel), (1, *stride), (0, *padding), (1, *dilation))
        return
    if nd == 3 and input.dim() not in (4, 5):
        raise RuntimeError("non-empty 4D or 5D (batch mode) tensor expected for input")
    input_error = pool_input_error(tuple(input.shape), nd, op) if nd == 3 else None
    check_pool_args(kernel, stride, padding, dilation, input_error)


def _pooled_sizes(x: Tensor, kernel, stride, padding, dilation, ceil_mode: bool) -> list:
    sizes = []
    for size, k, s, p, d in zip(x.shape[2:], kernel, stride, padding, dilation):
        span = size + 2 * p - d * (k - 1) - 1
        out = (-(-span // s) if ceil_mode else span // s) + 1
        if ceil_mode and (out - 1) * s >= size + p:
            out -= 1  # the last window must start inside the input or the left padding
        sizes.append(out)
    check_pool_output(x.shape[1:], sizes)
    return sizes


def max_pool_nd(
    input, kernel_size, stride, padding, dilation, ceil_mode, return_indices, nd: int, op: str
):
    """Max pooling over the last ``nd`` dims of (N, C, *S) or (C, *S)."""
    kernel, stride, padding, dilation = _pool_args(kernel_size, stride, padding, dilation, nd, op)
    _check_pool_input(input, kernel, stride, padding, dilation, op)
    x, unbatched = _batched(input, nd, op)
    xp = array_module(x._data)
    positions, valid = [], []
    sizes = _pooled_sizes(x, kernel, stride, padding, dilation, ceil_mode)
    for size, k, s, p, d, o in zip(x.shape[2:], kernel, stride, padding, dilation, sizes):
        pos = (xp.arange(o) * s - p)[:, None] + (xp.arange(k) * d)[None, :]
        positions.append(pos)
        valid.append((pos >= 0) & (pos < size))
    out, index = _window_max(x, positions, valid, f"MaxPool{nd}DWithIndicesBackward0")
    return _unbatch((out, index) if return_indices else out, unbatched)


def _adaptive_windows(in_size: int, out_size: int, xp):
    """PyTorch's adaptive windows floor(i·in/out) .. ceil((i+1)·in/out), padded to equal length
    by repeating each window's last position (harmless for a maximum)."""
    starts = (xp.arange(out_size) * in_size) // out_size
    ends = -((-(xp.arange(out_size) + 1) * in_size) // out_size)
    k = int((ends - starts).max()) if out_size else 0
    pos = xp.minimum(starts[:, None] + xp.arange(k)[None, :], ends[:, None] - 1)
    return pos, xp.ones(pos.shape, dtype=bool)


def adaptive_output_size(input: Tensor, output_size, nd: int, op: str) -> tuple:
    """torch's checks of an adaptive pooling's input and ``output_size``, in its order (the
    functional's, then ATen's: average and max pooling check in different orders and words);
    the output size as ``nd`` ints (None keeps the input's size)."""
    avg = op.startswith("adaptive_avg")
    given = tuple(output_size) if isinstance(output_size, (tuple, list)) else None
    shape = list(input.shape)
    if nd == 1:
        if given is not None and len(given) != 1:
            raise RuntimeError(
                f"{op}() argument 'output_size' should contain one int (got {len(given)})"
            )
        size = given[0] if given is not None else output_size
        if size is None:
            raise TypeError(
                f"{op}(): argument 'output_size' (position 2) must be tuple of ints, not NoneType"
            )
        if input.dim() not in (2, 3):
            raise RuntimeError(
                f"Expected 2 to 3 dimensions, but got {input.dim()}-dimensional tensor for "
                f"argument #1 'self' (while checking arguments for {op})"
            )
        size = int(size)
        if avg and size < 0:  # torch pools the (..., 1, L) plane in 2-d
            raise RuntimeError(
                "adaptive_avg_pool2d: elements of output_size must be greater than or equal to "
                f"0 but received {{1, {size}}}"
            )
        if not avg:
            _check_adaptive_input(shape, 1, op)
        else:
            _check_adaptive_input(
                shape[:-1] + [1, shape[-1]], 2, "adaptive_avg_pool2d", spatial_only=True
            )
        if size < 0:
            raise RuntimeError(
                f"Trying to create tensor with negative dimension {size}: {shape[:-1] + [1, size]}"
            )
        return (size,)
    if given is not None:  # torch.nn.functional's _list_with_default
        if input.dim() <= len(given):
            raise ValueError(f"Input dimension should be at least {len(given) + 1}")
        given = tuple(
            shape[len(shape) - len(given) + i] if s is None else s for i, s in enumerate(given)
        )
    sizes = given if given is not None else (output_size,) * nd
    rank = f"{op}(): Expected {nd + 1}D or {nd + 2}D tensor, but got{'' if avg else ':'} {shape}"
    if avg:
        if len(sizes) != nd:
            raise RuntimeError(f"{op}: output_size must be {nd}")
        sizes = tuple(int(s) for s in sizes)
        if any(s < 0 for s in sizes):
            received = ", ".join(str(s) for s in sizes[:2]) + "".join(f",{s}" for s in sizes[2:])
            raise RuntimeError(
                f"{op}: elements of output_size must be greater than or equal to 0 but "
                f"received {{{received}}}"
            )
        if input.dim() not in (nd + 1, nd + 2):
            raise RuntimeError(rank)
        if any(s != 1 for s in sizes):  # torch takes a plain mean for an output of ones
            _check_adaptive_input(shape, nd, op, spatial_only=nd == 2)
        return sizes
    if input.dim() not in (nd + 1, nd + 2):
        raise RuntimeError(rank)
    _check_adaptive_input(shape, nd, op)
    if len(sizes) != nd:
        raise RuntimeError(f"{op}(): internal error: output_size.size() must be {nd}")
    sizes = tuple(int(s) for s in sizes)
    if any(s < 0 for s in sizes):
        out_shape = shape[: input.dim() - nd] + list(sizes)
        bad = next(s for s in sizes if s < 0)
        raise RuntimeError(f"Trying to create tensor with negative dimension {bad}: {out_shape}")
    return sizes


def _check_adaptive_input(shape: list, nd: int, op: str, spatial_only: bool = False) -> None:
    """torch's non-empty check: every dim after the first (the spatial ones only, for 2-d
    average pooling), the first empty one named."""
    if len(shape) not in (nd + 1, nd + 2):
        return
    first = len(shape) - nd if spatial_only else 1
    empty = [i for i in range(first, len(shape)) if shape[i] == 0]
    if empty:
        raise RuntimeError(
            f"{op}(): Expected input to have non-zero size for non-batch dimensions, but input "
            f"has sizes {shape} with dimension {empty[0]} being empty"
        )


def adaptive_max_pool(input: Tensor, output_size, return_indices: bool, nd: int, op: str):
    """Max over PyTorch's adaptive windows."""
    sizes = adaptive_output_size(input, output_size, nd, op)
    x, unbatched = _batched(input, nd, op)
    xp = array_module(x._data)
    windows = [_adaptive_windows(n, o, xp) for n, o in zip(x.shape[2:], sizes)]
    positions = [p for p, _ in windows]
    valid = [v for _, v in windows]
    out, index = _window_max(x, positions, valid, f"AdaptiveMaxPool{nd}DBackward0")
    return _unbatch((out, index) if return_indices else out, unbatched)


def adaptive_avg_pool(input: Tensor, output_size, nd: int, op: str) -> Tensor:
    """Mean over PyTorch's adaptive windows, one (out, in) matrix per axis."""
    sizes = adaptive_output_size(input, output_size, nd, op)
    require_floating(input, op)
    x, unbatched = _batched(input, nd, op)
    xp = array_module(x._data)
    matrices = [None if n == o else _area_matrix(n, o, xp) for n, o in zip(x.shape[2:], sizes)]
    half = x.dtype.name in ("float16", "bfloat16")
    if half:  # one rounding, as torch's float accumulation (not one per axis)
        return _unbatch(apply_along_axes(x.float(), matrices).to(x.dtype), unbatched)
    return _unbatch(apply_along_axes(x, matrices), unbatched)


def _avg_matrix(size, k, s, p, out, count_include_pad, scale, xp):
    """(out, in) weights of average pooling along one axis, with the divisor folded in."""
    start = xp.arange(out) * s - p
    end = xp.minimum(start + k, size + p)
    first, last = xp.maximum(start, 0), xp.minimum(end, size)
    if scale is None:  # every window holds an input element, so no divisor is zero
        scale = (1.0 / ((end - start) if count_include_pad else (last - first)))[:, None]
    column = xp.arange(size)
    inside = (column >= first[:, None]) & (column < last[:, None])
    return xp.where(inside, scale, 0.0)


def avg_pool_nd(
    input,
    kernel_size,
    stride,
    padding,
    ceil_mode,
    count_include_pad,
    divisor_override,
    nd: int,
    op: str,
) -> Tensor:
    """Average pooling over the last ``nd`` dims, separable into one matrix per axis."""
    integer = not (input.is_floating_point() or input.is_complex())
    if nd == 3 and integer and input.dtype.name != "int64":  # torch's CPU kernel: int64 only
        raise NotImplementedError(
            f"\"avg_pool3d_out_frame\" not implemented for '{input.dtype.legacy_name}'"
        )
    if nd != 3:
        require_floating(input, op)
    kernel, stride, padding, _ = _pool_args(kernel_size, stride, padding, 1, nd, op)
    _check_pool_input(input, kernel, stride, padding, (1,) * nd, op)
    x, unbatched = _batched(input, nd, op)
    if nd == 3 and any(n < k for n, k in zip(x.shape[2:], kernel)):
        (t, h, w), (kt, kh, kw) = x.shape[2:], kernel
        raise RuntimeError(
            f"input image (T: {t} H: {h} W: {w}) smaller than kernel size "
            f"(kT: {kt} kH: {kh} kW: {kw})"
        )
    if divisor_override is not None and divisor_override == 0:
        raise RuntimeError("divisor must be not zero")
    xp = array_module(x._data)
    sizes = _pooled_sizes(x, kernel, stride, padding, (1,) * nd, ceil_mode)
    if integer:
        return _unbatch(
            _integer_avg_pool(
                x, kernel, stride, padding, sizes, count_include_pad, divisor_override
            ),
            unbatched,
        )
    matrices = []
    for a, (size, k, s, p, out) in enumerate(zip(x.shape[2:], kernel, stride, padding, sizes)):
        scale = None
        if divisor_override:
            scale = 1.0 / divisor_override if a == 0 else 1.0
        matrices.append(_avg_matrix(size, k, s, p, out, count_include_pad, scale, xp))
    return _unbatch(apply_along_axes(x, matrices), unbatched)


def _integer_avg_pool(x, kernel, stride, padding, sizes, count_include_pad, divisor_override):
    """int64 average pooling as torch's CPU kernel: the exact window sum divided as C divides
    (toward zero) by the window's count (or ``divisor_override``). No gradient."""
    data = x._data
    xp = array_module(data)
    total = data
    counts = []
    for a, (size, k, s, p, out) in enumerate(zip(x.shape[2:], kernel, stride, padding, sizes)):
        start = xp.arange(out) * s - p
        end = xp.minimum(start + k, size + p)
        first, last = xp.maximum(start, 0), xp.minimum(end, size)
        column = xp.arange(size)
        inside = (column >= first[:, None]) & (column < last[:, None])
        total = xp.moveaxis(
            xp.tensordot(total, inside.astype(data.dtype).T, ([2 + a], [0])), -1, 2 + a
        )
        counts.append((end - start) if count_include_pad else (last - first))
    if divisor_override:
        divisor = xp.asarray(int(divisor_override), dtype=data.dtype)
    else:
        divisor = counts[0]
        for c in counts[1:]:
            divisor = xp.multiply.outer(divisor, c)
        divisor = divisor.astype(data.dtype)
    return wrap(xp.sign(total) * (xp.abs(total) // divisor))


def lp_pool_nd(input: Tensor, norm_type, kernel_size, stride, ceil_mode: bool, nd: int, op: str):
    """(Σ over each window of x^p)^(1/p), PyTorch's formula: a sum of powers through average
    pooling, negative sums clamped to zero."""
    from .activation import relu

    require_floating(input, op)
    kernel = pool_tuple(kernel_size, nd, "kernel_size", op)
    pooled = avg_pool_nd(input.pow(norm_type), kernel, stride, 0, ceil_mode, True, None, nd, op)
    return (pooled.sign() * relu(pooled.abs())).mul(math.prod(kernel)).pow(1.0 / norm_type)


def max_unpool_nd(
    input: Tensor, indices: Tensor, kernel_size, stride, padding, output_size, nd: int, op: str
) -> Tensor:
    """Place each value at the flat position ``indices`` names in a zero (N, C, *S) output."""
    kernel, stride, padding, _ = _pool_args(kernel_size, stride, padding, 1, nd, op)
    x, unbatched = _batched(input, nd, op)
    if indices.dtype.name != "int64":
        raise RuntimeError(f"elements in indices should be type int64 but got: {indices.dtype}")
    if tuple(indices.shape) != tuple(input.shape):
        raise RuntimeError(
            f"Expected shape of indices to be same as that of the input tensor "
            f"({list(input.shape)}) but got indices tensor with shape: {list(indices.shape)}"
        )
    default = tuple(
        (n - 1) * s - 2 * p + k for n, s, p, k in zip(x.shape[2:], stride, padding, kernel)
    )
    if output_size is None:
        sizes = default
    else:
        sizes = tuple(int(s) for s in output_size)
        if len(sizes) == nd + 2 or len(sizes) == nd + 1:
            sizes = sizes[-nd:]
        if len(sizes) != nd:
            raise ValueError(
                f"output_size should be a sequence containing {nd} or {nd + 2} elements, but it "
                f"has a length of '{len(output_size)}'"
            )
        for d, (size, middle) in enumerate(zip(sizes, default)):
            low, high = middle - stride[d], middle + stride[d]
            if not low < size < high:
                raise ValueError(
                    f'invalid output_size "{list(sizes)}" (dim {d} must be between {low} and '
                    f"{high})"
                )
    index = indices._data
    if unbatched:
        index = index[None]
    plane = math.prod(sizes)
    if index.size and (int(index.min()) < 0 or int(index.max()) >= plane):
        bad = int(index.max()) if int(index.max()) >= plane else int(index.min())
        raise RuntimeError(
            f"Found an invalid max index: {bad} (output volumes are of size "
            f"{'x'.join(str(s) for s in sizes)}"
        )
    out = scatter_to_plane(x, index, tuple(x.shape[:2]) + sizes, accumulate=False)
    return _unbatch(out, unbatched)


def _fractional_windows(samples, in_size: int, out_size: int, k: int, xp):
    """Per plane window starts from PyTorch's interval rule; samples: (N, C) in [0, 1)."""
    if out_size > 1:
        alpha = samples.dtype.type(in_size - k) / samples.dtype.type(out_size - 1)
        i = xp.arange(out_size - 1, dtype=samples.dtype)
        starts = ((i + samples[..., None]) * alpha).astype(xp.int64) - (
            samples[..., None] * alpha
        ).astype(xp.int64)
        last = xp.full(samples.shape + (1,), in_size - k, dtype=xp.int64)
        starts = xp.concatenate([starts, last], axis=-1)
    else:
        starts = xp.full(samples.shape + (out_size,), in_size - k, dtype=xp.int64)
    pos = starts[..., None] + xp.arange(k)
    return pos, xp.ones(pos.shape[-2:], dtype=bool)


def fractional_max_pool_nd(
    input: Tensor,
    kernel_size,
    output_size,
    output_ratio,
    return_indices: bool,
    _random_samples,
    nd: int,
    op: str,
):
    """Max over pseudo-random windows (Graham, 2014), PyTorch's interval rule."""
    x, unbatched = _batched(input, nd, op)
    kernel = pool_tuple(kernel_size, nd, "kernel_size", op)
    if output_size is None and output_ratio is None:
        raise ValueError(
            f"fractional_max_pool{nd}d requires specifying either an output_size or an output_ratio"
        )
    if output_size is None:
        ratio = _ratio_tuple(output_ratio, nd)
        sizes = tuple(int(n * r) for n, r in zip(x.shape[2:], ratio))
    else:
        sizes = pool_tuple(output_size, nd, "output_size", op)
    for n, o, k in zip(x.shape[2:], sizes, kernel):
        if o + k - 1 > n:
            raise RuntimeError(
                f"{op}(): pool size {k} too large relative to input size {n} for output size {o}"
            )
    n, c = x.shape[:2]
    if _random_samples is None:
        _random_samples = _creation.rand(n, c, nd, dtype=x.dtype, device=x.device)
    else:
        _check_random_samples(_random_samples, x, nd)
    # as torch: a longer batch of samples (an unbatched input's, say) is read from its start
    samples = _random_samples._data[:n]
    xp = array_module(x._data)
    # PyTorch reads the samples innermost axis first in 2-d (width, height) and outermost
    # first in 3-d (time, height, width)
    order = [1, 0] if nd == 2 else list(range(nd))
    positions, valid = [], []
    for a in range(nd):
        pos, ok = _fractional_windows(
            samples[..., order[a]], x.shape[2 + a], sizes[a], kernel[a], xp
        )
        positions.append(pos)
        valid.append(ok)
    out, index = _window_max(x, positions, valid, f"FractionalMaxPool{nd}DBackward0")
    return _unbatch((out, index) if return_indices else out, unbatched)


def _check_random_samples(samples: Tensor, x: Tensor, nd: int) -> None:
    """torch's rules: (at least N, C, nd) and the input's dtype."""
    if samples.dtype != x.dtype:
        raise RuntimeError("Expect _random_samples to have the same dtype as input")
    if samples.dim() != 3:
        raise RuntimeError(f"Expect _random_samples to have 3 dimensions, got {samples.dim()}")
    if samples.shape[0] < x.shape[0]:
        raise RuntimeError("Expect _random_samples.size(0) no less then input batch size.")
    if samples.shape[1] != x.shape[1]:
        raise RuntimeError("Expect _random_samples.size(1) equals to input channel size.")
    if samples.shape[2] != nd:
        raise RuntimeError(
            f"Expect _random_samples.size(2) equals to {nd}; got {samples.shape[2]}."
        )


def _ratio_tuple(ratio, nd: int) -> tuple:
    ratio = tuple(ratio) if isinstance(ratio, (tuple, list)) else (ratio,) * nd
    if any(not 0 < r < 1 for r in ratio):
        raise ValueError(f"output_ratio must be between 0 and 1 (got {ratio})")
    return ratio
