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
from ..autograd.node import Node
from ._dispatch import array_module, result, wrap
from ._spatial_checks import check_pool_args, require_floating
from .resample import _area_matrix, apply_along_axes
from .shape import broadcast_shapes


def _tuple(value, n: int, name: str) -> tuple:
    if isinstance(value, (tuple, list)):
        if len(value) == 1 and n > 1:
            value = tuple(value) * n
        if len(value) != n:
            raise RuntimeError(f"{name} must either be a single int, or a tuple of {n} ints")
        return tuple(int(v) for v in value)
    return (int(value),) * n


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
    return result(_ScatterToPlaneBackward, out.reshape(shape), (values,), index=index)


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


def _check_pool_args(kernel, stride, padding, dilation, op: str) -> None:
    if len(kernel) == 1:  # 1-d poolings are torch's 2-d ones over a (1, L) plane
        check_pool_args((1, *kernel), (1, *stride), (0, *padding), (1, *dilation))
    else:
        check_pool_args(kernel, stride, padding, dilation)


def _pooled_size(size: int, k: int, s: int, p: int, d: int, ceil_mode: bool, op: str) -> int:
    span = size + 2 * p - d * (k - 1) - 1
    out = (-(-span // s) if ceil_mode else span // s) + 1
    if ceil_mode and (out - 1) * s >= size + p:
        out -= 1  # the last window must start inside the input or the left padding
    if out <= 0:
        raise RuntimeError(
            f"{op}: Given input size: {size}. Calculated output size: {out}. Output size is "
            "too small"
        )
    return out


def max_pool_nd(
    input, kernel_size, stride, padding, dilation, ceil_mode, return_indices, nd: int, op: str
):
    """Max pooling over the last ``nd`` dims of (N, C, *S) or (C, *S)."""
    x, unbatched = _batched(input, nd, op)
    kernel = _tuple(kernel_size, nd, "kernel_size")
    stride = kernel if stride is None or stride == [] else _tuple(stride, nd, "stride")
    padding, dilation = _tuple(padding, nd, "padding"), _tuple(dilation, nd, "dilation")
    _check_pool_args(kernel, stride, padding, dilation, op)
    xp = array_module(x._data)
    positions, valid = [], []
    for size, k, s, p, d in zip(x.shape[2:], kernel, stride, padding, dilation):
        o = _pooled_size(size, k, s, p, d, ceil_mode, op)
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


def _adaptive_sizes(x: Tensor, output_size, nd: int) -> tuple:
    sizes = tuple(output_size) if isinstance(output_size, (tuple, list)) else (output_size,) * nd
    if len(sizes) != nd:
        raise RuntimeError(f"adaptive pool: output_size must be {nd} elements, got {sizes}")
    sizes = tuple(x.shape[2 + i] if s is None else int(s) for i, s in enumerate(sizes))
    if any(s < 0 for s in sizes):
        raise RuntimeError(f"adaptive pool: output_size must be non-negative, got {sizes}")
    return sizes


def _check_adaptive_input(input: Tensor, nd: int, op: str) -> None:
    if input.dim() in (nd + 1, nd + 2) and any(s == 0 for s in input.shape[input.dim() - nd :]):
        raise RuntimeError(
            f"{op}(): Expected input to have non-zero size for non-batch dimensions, but input "
            f"has sizes {list(input.shape)} with dimension {input.dim() - nd} being empty"
        )


def adaptive_max_pool(input: Tensor, output_size, return_indices: bool, nd: int, op: str):
    """Max over PyTorch's adaptive windows."""
    _check_adaptive_input(input, nd, op)
    x, unbatched = _batched(input, nd, op)
    sizes = _adaptive_sizes(x, output_size, nd)
    xp = array_module(x._data)
    windows = [_adaptive_windows(n, o, xp) for n, o in zip(x.shape[2:], sizes)]
    positions = [p for p, _ in windows]
    valid = [v for _, v in windows]
    out, index = _window_max(x, positions, valid, f"AdaptiveMaxPool{nd}DBackward0")
    return _unbatch((out, index) if return_indices else out, unbatched)


def adaptive_avg_pool(input: Tensor, output_size, nd: int, op: str) -> Tensor:
    """Mean over PyTorch's adaptive windows, one (out, in) matrix per axis."""
    _check_adaptive_input(input, nd, op)
    require_floating(input, op)
    x, unbatched = _batched(input, nd, op)
    sizes = _adaptive_sizes(x, output_size, nd)
    xp = array_module(x._data)
    matrices = [None if n == o else _area_matrix(n, o, xp) for n, o in zip(x.shape[2:], sizes)]
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
    require_floating(input, op)
    x, unbatched = _batched(input, nd, op)
    kernel = _tuple(kernel_size, nd, "kernel_size")
    stride = kernel if stride is None or stride == [] else _tuple(stride, nd, "stride")
    padding = _tuple(padding, nd, "padding")
    _check_pool_args(kernel, stride, padding, (1,) * nd, op)
    if divisor_override is not None and divisor_override == 0:
        raise RuntimeError("divisor must be not zero")
    xp = array_module(x._data)
    matrices = []
    for a, (size, k, s, p) in enumerate(zip(x.shape[2:], kernel, stride, padding)):
        out = _pooled_size(size, k, s, p, 1, ceil_mode, op)
        scale = None
        if divisor_override:
            scale = 1.0 / divisor_override if a == 0 else 1.0
        matrices.append(_avg_matrix(size, k, s, p, out, count_include_pad, scale, xp))
    return _unbatch(apply_along_axes(x, matrices), unbatched)


def lp_pool_nd(input: Tensor, norm_type, kernel_size, stride, ceil_mode: bool, nd: int, op: str):
    """(Σ over each window of x^p)^(1/p), PyTorch's formula: a sum of powers through average
    pooling, negative sums clamped to zero."""
    from .activation import relu

    require_floating(input, op)
    kernel = _tuple(kernel_size, nd, "kernel_size")
    pooled = avg_pool_nd(input.pow(norm_type), kernel, stride, 0, ceil_mode, True, None, nd, op)
    return (pooled.sign() * relu(pooled.abs())).mul(math.prod(kernel)).pow(1.0 / norm_type)


def max_unpool_nd(
    input: Tensor, indices: Tensor, kernel_size, stride, padding, output_size, nd: int, op: str
) -> Tensor:
    """Place each value at the flat position ``indices`` names in a zero (N, C, *S) output."""
    kernel = _tuple(kernel_size, nd, "kernel_size")
    stride = kernel if stride is None or stride == [] else _tuple(stride, nd, "stride")
    padding = _tuple(padding, nd, "padding")
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
    kernel = _tuple(kernel_size, nd, "kernel_size")
    if output_size is None and output_ratio is None:
        raise ValueError(
            f"fractional_max_pool{nd}d requires specifying either an output_size or an output_ratio"
        )
    if output_size is None:
        ratio = _ratio_tuple(output_ratio, nd)
        sizes = tuple(int(n * r) for n, r in zip(x.shape[2:], ratio))
    else:
        sizes = _tuple(output_size, nd, "output_size")
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
