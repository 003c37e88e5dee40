"""Resampling: interpolate (nearest, linear, cubic, area), pixel and channel shuffles.

Every interpolation mode PyTorch offers without antialiasing is separable: each spatial axis is
resampled on its own by an (out, in) weight matrix (or, for the nearest modes, an index
gather). Matrix products and index_select are differentiable to any order, so the backward of
each mode is the transposed matrix, and double backward comes for free.
"""

from __future__ import annotations

import math

from .. import _dtype as dt
from .._tensor import Tensor
from ._dispatch import array_module, wrap
from ._spatial_checks import require_floating

_LINEAR_MODES = {"linear": 1, "bilinear": 2, "trilinear": 3, "bicubic": 2}
_MODES = ("nearest", "linear", "bilinear", "bicubic", "trilinear", "area", "nearest-exact")
_CUBIC_A = -0.75  # the cubic convolution constant PyTorch (and OpenCV) use


def _output_sizes(input: Tensor, size, scale_factor, recompute_scale_factor) -> tuple:
    """(output sizes, scales used to map coordinates or None per axis), PyTorch's rules."""
    nd = input.dim() - 2
    if size is not None and scale_factor is not None:
        raise ValueError("only one of size or scale_factor should be defined")
    if size is not None:
        sizes = list(size) if isinstance(size, (tuple, list)) else [size] * nd
        if len(sizes) != nd:
            raise ValueError(
                "Input and output must have the same number of spatial dimensions, but got input "
                f"with spatial dimensions of {list(input.shape[2:])} and output size of {size}. "
                "Please provide input tensor in (N, C, d1, d2, ...,dK) format and output size in "
                "(o1, o2, ...,oK) format."
            )
        return tuple(int(s) for s in sizes), (None,) * nd
    if scale_factor is None:
        raise ValueError("either size or scale_factor should be defined")
    scales = list(scale_factor) if isinstance(scale_factor, (tuple, list)) else [scale_factor] * nd
    if len(scales) != nd:
        raise ValueError(
            "Input and scale_factor must have the same number of spatial dimensions, but got "
            f"input with spatial dimensions of {list(input.shape[2:])} and scale_factor of "
            f"shape {scale_factor}. Please provide input tensor in (N, C, d1, d2, ...,dK) format "
            "and scale_factor in (s1, s2, ...,sK) format."
        )
    sizes = tuple(math.floor(float(n) * float(s)) for n, s in zip(input.shape[2:], scales))
    if recompute_scale_factor:
        return sizes, (None,) * nd
    return sizes, tuple(float(s) for s in scales)


def _source_scale(in_size: int, out_size: int, scale, align_corners: bool) -> float:
    """How far apart output samples are in input coordinates."""
    if align_corners:
        return (in_size - 1) / (out_size - 1) if out_size > 1 else 0.0
    return 1.0 / scale if scale is not None and scale > 0 else in_size / out_size


def _nearest_index(in_size: int, out_size: int, scale, exact: bool, xp):
    """Input position of each output position; float32 arithmetic, as PyTorch's kernels."""
    float32 = dt.float32.np
    step = float32.type(1.0 / scale if scale is not None and scale > 0 else in_size / out_size)
    positions = xp.arange(out_size, dtype=float32)
    if exact:
        positions = positions + float32.type(0.5)
    return xp.minimum(xp.floor(positions * step).astype(dt.int64.np), in_size - 1)


def _taps_matrix(taps, in_size: int):
    """The dense (out, in) matrix of taps [(positions, weights), ...] (repeats add up)."""
    xp = array_module(taps[0][0])
    out_size = taps[0][0].size
    m = xp.zeros((out_size, in_size))
    rows = xp.arange(out_size)
    for positions, weights in taps:
        xp.add.at(m, (rows, positions), weights)
    return m


def _nearest_taps(index) -> list:
    return [(index, array_module(index).ones(index.size))]


def _linear_taps(in_size: int, out_size: int, scale, align_corners: bool, xp) -> list:
    """Linear interpolation: two taps per output, [(input positions, weights), ...]."""
    step = _source_scale(in_size, out_size, scale, align_corners)
    dst = xp.arange(out_size, dtype=dt.float64.np)
    src = dst * step if align_corners else xp.maximum((dst + 0.5) * step - 0.5, 0.0)
    left = xp.minimum(xp.floor(src).astype(dt.int64.np), in_size - 1)
    right = xp.minimum(left + 1, in_size - 1)
    frac = src - left
    return [(left, 1.0 - frac), (right, frac)]


def _cubic_taps(in_size: int, out_size: int, scale, align_corners: bool, xp) -> list:
    """Cubic convolution: four taps per output, positions clamped at the borders."""
    step = _source_scale(in_size, out_size, scale, align_corners)
    dst = xp.arange(out_size, dtype=dt.float64.np)
    src = dst * step if align_corners else (dst + 0.5) * step - 0.5
    base = xp.floor(src)
    t = src - base
    a = _CUBIC_A

    def near(x):  # |x| <= 1
        return ((a + 2) * x - (a + 3)) * x * x + 1

    def far(x):  # 1 < |x| < 2
        return ((a * x - 5 * a) * x + 8 * a) * x - 4 * a

    weights = (far(t + 1), near(t), near(1 - t), far(2 - t))
    first = base.astype(dt.int64.np) - 1
    return [(xp.clip(first + k, 0, in_size - 1), w) for k, w in enumerate(weights)]


def _antialias_matrix(in_size: int, out_size: int, scale, align_corners: bool, cubic: bool, xp):
    """(out, in) weights of antialiased resampling (PIL's rule, as PyTorch): when shrinking,
    the filter (triangle, or cubic with a = -0.5) is stretched by the shrink factor so every
    input pixel contributes; each row's weights are normalised to sum to one."""
    step = _source_scale(in_size, out_size, scale, align_corners)
    stretch = step if step >= 1.0 else 1.0
    support = (2.0 if cubic else 1.0) * stretch
    a = -0.5

    def kernel(x):
        x = xp.abs(x)
        if not cubic:
            return xp.maximum(0.0, 1.0 - x)
        near = ((a + 2) * x - (a + 3)) * x * x + 1
        far = (((x - 5) * x + 8) * x - 4) * a
        return xp.where(x < 1, near, xp.where(x < 2, far, 0.0))

    # one row at a time: each row sums its own window, as PyTorch's kernel does
    m = xp.zeros((out_size, in_size))
    for i in range(out_size):
        centre = step * (i + 0.5)
        first = max(int(centre - support + 0.5), 0)
        last = min(int(centre + support + 0.5), in_size)
        w = kernel((xp.arange(first, last) - centre + 0.5) / stretch)
        total = w.sum()
        m[i, first:last] = w / total if total else w
    return m


def _area_matrix(in_size: int, out_size: int, xp):
    """(out, in) weights of adaptive average pooling: PyTorch's floor/ceil windows."""
    i = xp.arange(out_size)
    start = (i * in_size) // out_size
    end = -((-(i + 1) * in_size) // out_size)
    j = xp.arange(in_size)
    inside = (j >= start[:, None]) & (j < end[:, None])
    return xp.where(inside, 1.0 / (end - start)[:, None], 0.0)


def _matrix_taps(m) -> list:
    """The nonzero entries of each row of ``m`` as taps, padded with masked-out ones."""
    xp = array_module(m)
    rows, cols = xp.nonzero(m)
    counts = xp.bincount(rows, minlength=m.shape[0])
    width = int(counts.max()) if counts.size else 0
    starts = xp.concatenate([xp.zeros(1, dtype=counts.dtype), xp.cumsum(counts)[:-1]])
    slot = xp.arange(rows.size) - starts[rows]
    positions = xp.zeros((width, m.shape[0]), dtype=dt.int64.np)
    weights = xp.zeros((width, m.shape[0]))
    valid = xp.zeros((width, m.shape[0]), dtype=bool)
    positions[slot, rows], weights[slot, rows], valid[slot, rows] = cols, m[rows, cols], True
    return [(positions[k], weights[k], valid[k]) for k in range(width)]


def _apply_taps(input: Tensor, axis: int, taps) -> Tensor:
    """Σ over taps of input gathered at ``positions`` along ``axis`` times ``weights``: only
    the taps an output really has, so an inf or NaN reaches only the outputs that read it."""
    from .elementwise import where

    trailing = (1,) * (input.dim() - axis - 1)
    total = None
    for tap in taps:
        positions, weights = tap[0], tap[1]
        w = weights.astype(input._data.dtype).reshape((-1,) + trailing)
        term = input.index_select(axis, wrap(positions)) * wrap(w)
        if len(tap) == 3 and not bool(tap[2].all()):
            term = where(wrap(tap[2].reshape((-1,) + trailing)), term, 0.0)
        total = term if total is None else total + term
    return total


def apply_along_axes(input: Tensor, matrices, taps=None) -> Tensor:
    """Resample spatial axis i (dim 2 + i) of ``input`` by ``matrices[i]`` (out, in) arrays;
    None leaves an axis alone.

    Finite input goes through GEMMs (fast, and the backward is another GEMM). Input holding
    inf or NaN goes tap by tap instead (``taps[i]``, or the matrix's nonzeros), since in a
    GEMM 0 · inf would spread NaN over every output of the row."""
    xp = array_module(input._data)
    data = input._data
    exact = (
        dt.is_floating_array_dtype(data.dtype) and data.size and not bool(xp.isfinite(data).all())
    )
    out = input
    for i, m in enumerate(matrices):
        if m is None:
            continue
        axis = 2 + i
        if exact:
            pairs = taps[i] if taps is not None and taps[i] is not None else _matrix_taps(m)
            out = _apply_taps(out, axis, pairs)
            continue
        weights = wrap(m.astype(data.dtype))
        if axis == out.dim() - 1:
            out = out @ weights.mT
        elif axis == out.dim() - 2:
            out = weights @ out
        else:
            out = (out.movedim(axis, -1) @ weights.mT).movedim(-1, axis)
    return out


def select_along_axes(input: Tensor, indices) -> Tensor:
    """Pick positions ``indices[i]`` (int64 arrays) along spatial axis i."""
    out = input
    for i, index in enumerate(indices):
        if index is None:
            continue
        out = out.index_select(2 + i, wrap(index))
    return out


def interpolate(
    input: Tensor,
    size=None,
    scale_factor=None,
    mode: str = "nearest",
    align_corners: bool | None = None,
    recompute_scale_factor: bool | None = None,
    antialias: bool = False,
) -> Tensor:
    """Resize the spatial dims of an (N, C, *S) input (1 to 3 spatial dims).

    >>> interpolate(ember.tensor([[[1.0, 2.0]]]), scale_factor=2).tolist()
    [[[1.0, 1.0, 2.0, 2.0]]]
    """
    nd = input.dim() - 2
    if mode in ("nearest", "area", "nearest-exact"):
        if align_corners is not None:
            raise ValueError(
                "align_corners option can only be set with the interpolating modes: "
                "linear | bilinear | bicubic | trilinear"
            )
    elif align_corners is None:
        align_corners = False
    if mode not in _MODES or not 1 <= nd <= 3:
        raise NotImplementedError(
            f"Input Error: Only 3D, 4D and 5D input Tensors supported (got {input.dim()}D) for "
            "the modes: nearest | linear | bilinear | bicubic | trilinear | area | nearest-exact "
            f"(got {mode})"
        )
    needed = _LINEAR_MODES.get(mode)
    if needed is not None and needed != nd:
        raise NotImplementedError(
            f"Got {input.dim()}D input, but {mode} mode needs {needed + 2}D input"
        )
    if antialias and (mode not in ("bilinear", "bicubic") or nd != 2):
        raise ValueError(
            "Anti-alias option is restricted to bilinear, bicubic, and lanczos modes and "
            "requires a 4-D tensor as input"
        )
    if recompute_scale_factor and size is not None:
        raise ValueError("recompute_scale_factor is not meaningful with an explicit size.")
    sizes, scales = _output_sizes(input, size, scale_factor, recompute_scale_factor)
    if any(s <= 0 for s in sizes):
        raise RuntimeError(
            f"Input and output sizes should be greater than 0, but got input "
            f"({', '.join(str(s) for s in input.shape[2:])}) output "
            f"({', '.join(str(s) for s in sizes)})"
        )
    in_sizes = tuple(input.shape[2:])
    xp = array_module(input._data)
    if mode in ("nearest", "nearest-exact"):
        exact = mode == "nearest-exact"
        indices = [
            None if n == o and s in (None, 1.0) else _nearest_index(n, o, s, exact, xp)
            for n, o, s in zip(in_sizes, sizes, scales)
        ]
        if not input.is_floating_point():
            return select_along_axes(input, indices)
        # one-hot matrices: a GEMM and its transpose beat a gather whose backward scatters
        taps = [None if index is None else _nearest_taps(index) for index in indices]
        matrices = [None if t is None else _taps_matrix(t, n) for t, n in zip(taps, in_sizes)]
        return apply_along_axes(input, matrices, taps)
    if mode == "area":
        from .pooling import adaptive_avg_pool

        return adaptive_avg_pool(input, sizes, nd, f"adaptive_avg_pool{nd}d")
    require_floating(input, f"upsample_{mode}")
    if antialias:
        cubic = mode == "bicubic"
        matrices = [
            _antialias_matrix(n, o, s, align_corners, cubic, xp)
            for n, o, s in zip(in_sizes, sizes, scales)
        ]
        return apply_along_axes(input, matrices)
    build = _cubic_taps if mode == "bicubic" else _linear_taps
    taps = [build(n, o, s, align_corners, xp) for n, o, s in zip(in_sizes, sizes, scales)]
    matrices = [_taps_matrix(t, n) for t, n in zip(taps, in_sizes)]
    if input.dtype.name in ("float16", "bfloat16"):  # one rounding, as torch's float taps
        return apply_along_axes(input.float(), matrices, taps).to(input.dtype)
    return apply_along_axes(input, matrices, taps)


def _shuffle_factor(op: str, input: Tensor, factor, name: str) -> int:
    """pixel_shuffle's and pixel_unshuffle's checks, in torch's order: the input has (*, C,
    H, W) dims, and the factor ``name`` is positive; returns it as an int."""
    r = int(factor)
    if input.dim() < 3:
        raise RuntimeError(
            f"{op} expects input to have at least 3 dimensions, but got input with "
            f"{input.dim()} dimension(s)"
        )
    if r <= 0:
        raise RuntimeError(f"{op} expects a positive {name}, but got {r}")
    return r


def pixel_shuffle(input: Tensor, upscale_factor: int) -> Tensor:
    """(*, C·r², H, W) -> (*, C, H·r, W·r)."""
    r = _shuffle_factor("pixel_shuffle", input, upscale_factor, "upscale_factor")
    *lead, c, h, w = input.shape
    if c % (r * r):
        raise RuntimeError(
            "pixel_shuffle expects its input's 'channel' dimension to be divisible by the square "
            f"of upscale_factor, but input.size(-3)={c} is not divisible by {r * r}"
        )
    lead = tuple(lead)
    k = len(lead)
    x = input.reshape(lead + (c // (r * r), r, r, h, w))
    x = x.permute(*range(k), k, k + 3, k + 1, k + 4, k + 2)
    return x.reshape(lead + (c // (r * r), h * r, w * r))


def pixel_unshuffle(input: Tensor, downscale_factor: int) -> Tensor:
    """(*, C, H·r, W·r) -> (*, C·r², H, W), the inverse of pixel_shuffle."""
    r = _shuffle_factor("pixel_unshuffle", input, downscale_factor, "downscale_factor")
    *lead, c, h, w = input.shape
    if h % r:
        raise RuntimeError(
            "pixel_unshuffle expects height to be divisible by downscale_factor, but "
            f"input.size(-2)={h} is not divisible by {r}"
        )
    if w % r:
        raise RuntimeError(
            "pixel_unshuffle expects width to be divisible by downscale_factor, but "
            f"input.size(-1)={w} is not divisible by {r}"
        )
    lead = tuple(lead)
    k = len(lead)
    x = input.reshape(lead + (c, h // r, r, w // r, r))
    x = x.permute(*range(k), k, k + 2, k + 4, k + 1, k + 3)
    return x.reshape(lead + (c * r * r, h // r, w // r))


def channel_shuffle(input: Tensor, groups: int) -> Tensor:
    """Interleave the channels (dim 1) of ``groups`` groups: (N, g·k, *) viewed (N, g, k, *)
    read as (N, k, g, *)."""
    if input.dim() <= 2:
        raise RuntimeError(
            f"channel_shuffle expects input to have at least 3 dimensions, but got input with "
            f"{input.dim()} dimension(s)"
        )
    if groups <= 0:
        raise RuntimeError(
            f"Number of groups to divide channels in must be positive. Value of groups:{groups}"
        )
    n, c, *rest = input.shape
    if c % groups:
        raise RuntimeError(
            f"Number of channels must be divisible by groups. Got {c} channels and {groups} groups."
        )
    rest = tuple(rest)
    x = input.reshape((n, groups, c // groups) + rest).transpose(1, 2)
    return x.reshape((n, c) + rest)
