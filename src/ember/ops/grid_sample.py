"""grid_sample and affine_grid: sampling an image at arbitrary (normalised) coordinates.

Built from differentiable ember ops (coordinate arithmetic, floor, gathers), so gradients flow
to both the input and the grid, and to any order. Each output value sums 2^d (linear), 1
(nearest) or 4^d (cubic) taps, each a gather from the flattened spatial plane.
"""

from __future__ import annotations

import itertools
import math
import warnings

from .._tensor import Tensor
from ._dispatch import array_module, wrap
from ._spatial_checks import require_floating
from .resample import _CUBIC_A


def _default_align_corners(align_corners) -> bool:
    if align_corners is None:
        warnings.warn(
            "Default grid_sample and affine_grid behavior has changed to align_corners=False "
            "since 1.3.0. Please specify align_corners=True if the old behavior is desired. "
            "See the documentation of grid_sample for details.",
            stacklevel=3,
        )
        return False
    return bool(align_corners)


def _unnormalise(coord: Tensor, size: int, align_corners: bool) -> Tensor:
    """[-1, 1] -> pixel coordinates: corner pixel centres (align_corners) or image edges."""
    if align_corners:
        return (coord + 1) * ((size - 1) / 2)
    return ((coord + 1) * size - 1) / 2


def _reflect(coord: Tensor, twice_low: int, twice_high: int) -> Tensor:
    """Fold coordinates back into [low, high] by mirroring at both ends, repeatedly."""
    if twice_low == twice_high:
        return coord * 0
    low = twice_low / 2
    span = (twice_high - twice_low) / 2
    distance = (coord - low).abs()
    extra = distance.fmod(span)
    flips = (distance / span).floor()._detach()
    even = flips.fmod(2) == 0
    from .elementwise import where

    return where(even, extra + low, span - extra + low)


def _apply_padding(coord: Tensor, size: int, padding_mode: str, align_corners: bool) -> Tensor:
    if padding_mode == "border":
        return coord.clamp(0, size - 1)
    if padding_mode == "reflection":
        if align_corners:
            coord = _reflect(coord, 0, 2 * (size - 1))
        else:
            coord = _reflect(coord, -1, 2 * size - 1)
        return coord.clamp(0, size - 1)
    return coord


def _cubic_weights(t: Tensor) -> list[Tensor]:
    """Cubic convolution weights of the four taps around a point ``t`` past the second tap."""
    a = _CUBIC_A

    def near(x):
        return ((a + 2) * x - (a + 3)) * x * x + 1

    def far(x):
        return ((a * x - 5 * a) * x + 8 * a) * x - 4 * a

    return [far(t + 1), near(t), near(1 - t), far(2 - t)]


def grid_sample(
    input: Tensor,
    grid: Tensor,
    mode: str = "bilinear",
    padding_mode: str = "zeros",
    align_corners: bool | None = None,
) -> Tensor:
    """Sample (N, C, H, W) input at grid (N, Ho, Wo, 2) points (x, y) in [-1, 1]; or 5-D input at
    (N, Do, Ho, Wo, 3) points (x, y, z). Returns (N, C, Ho, Wo) or (N, C, Do, Ho, Wo)."""
    if mode not in ("bilinear", "nearest", "bicubic"):
        raise ValueError(
            f"nn.functional.grid_sample(): expected mode to be 'bilinear', 'nearest' or "
            f"'bicubic', but got: '{mode}'"
        )
    if padding_mode not in ("zeros", "border", "reflection"):
        raise ValueError(
            "nn.functional.grid_sample(): expected padding_mode to be 'zeros', 'border', or "
            f"'reflection', but got: '{padding_mode}'"
        )
    align_corners = _default_align_corners(align_corners)
    require_floating(input, "grid_sampler")
    nd = input.dim() - 2
    if nd not in (2, 3) or grid.dim() != input.dim():
        raise RuntimeError(
            f"grid_sampler(): expected 4D or 5D input and grid with same number of dimensions, "
            f"but got input with sizes {list(input.shape)} and grid with sizes {list(grid.shape)}"
        )
    if input.shape[0] != grid.shape[0]:
        raise RuntimeError(
            "grid_sampler(): expected grid and input to have same batch size, but got input with "
            f"sizes {list(input.shape)} and grid with sizes {list(grid.shape)}"
        )
    if grid.shape[-1] != nd:
        raise RuntimeError(
            f"grid_sampler(): expected grid to have size {nd} in last dimension, but got grid "
            f"with sizes {list(grid.shape)}"
        )
    if mode == "bicubic" and nd != 2:
        raise RuntimeError("grid_sampler(): bicubic interpolation only supports 4D input")
    if input.dtype != grid.dtype:
        raise RuntimeError(
            "grid_sampler(): expected input and grid to have same dtype, but input has "
            f"{input.dtype} and grid has {grid.dtype}"
        )
    n, c = input.shape[:2]
    sizes = tuple(input.shape[2:])  # (H, W) or (D, H, W)
    out_shape = tuple(grid.shape[1:-1])
    plane = input.reshape(n, c, math.prod(sizes))
    # grid's last axis is (x, y[, z]): the reverse of the input's spatial order
    coords = []
    for axis in range(nd):
        size = sizes[axis]
        coord = _unnormalise(grid[..., nd - 1 - axis], size, align_corners)
        if mode != "bicubic":
            coord = _apply_padding(coord, size, padding_mode, align_corners)
        coords.append(coord)

    def tap(positions) -> Tensor:
        """Input values at integer positions (one (N, *out) tensor per axis), zero outside."""
        inside = None
        flat = None
        for axis, pos in enumerate(positions):
            ok = (pos >= 0) & (pos <= sizes[axis] - 1)
            inside = ok if inside is None else inside & ok
            # int64 before the flat index: half types hold integers exactly only up to 2048
            clipped = pos.clamp(0, sizes[axis] - 1).long()
            flat = clipped if flat is None else flat * sizes[axis] + clipped
        count = math.prod(out_shape)
        index = flat.reshape(n, 1, count).expand(n, c, count)
        values = plane.gather(2, index).reshape((n, c) + out_shape)
        return values * inside.unsqueeze(1).to(input.dtype)

    if mode == "nearest":
        # the grid gets an explicit zero gradient (as in PyTorch), not none at all
        connected = coords[0] * 0 + 1
        return tap([coord._detach().round() for coord in coords]) * connected.unsqueeze(1)
    if mode == "bilinear":
        lows = [coord._detach().floor() for coord in coords]
        fracs = [coord - low for coord, low in zip(coords, lows)]
        out = None
        for corner in itertools.product((0, 1), repeat=nd):
            weight = None
            for axis, bit in enumerate(corner):
                w = fracs[axis] if bit else 1 - fracs[axis]
                weight = w if weight is None else weight * w
            term = tap([low + bit for low, bit in zip(lows, corner)]) * weight.unsqueeze(1)
            out = term if out is None else out + term
        return out
    lows = [coord._detach().floor() for coord in coords]
    weights = [_cubic_weights(coord - low) for coord, low in zip(coords, lows)]
    out = None
    for ky, kx in itertools.product(range(4), repeat=2):
        positions = []
        for axis, k in enumerate((ky, kx)):
            pos = lows[axis] - 1 + k
            if padding_mode != "zeros":
                pos = _apply_padding(pos, sizes[axis], padding_mode, align_corners)._detach()
                pos = pos.round()  # reflected integer taps stay integers (up to rounding)
            positions.append(pos)
        term = tap(positions) * (weights[0][ky] * weights[1][kx]).unsqueeze(1)
        out = term if out is None else out + term
    return out


def affine_grid(theta: Tensor, size, align_corners: bool | None = None) -> Tensor:
    """The (N, H, W, 2) (or (N, D, H, W, 3)) sampling grid of affine maps ``theta``
    (N, 2, 3) (or (N, 3, 4)) for an output of ``size`` (N, C, H, W) (or (N, C, D, H, W))."""
    if not theta.is_floating_point():
        raise ValueError(f"Expected theta to have floating point type, but got {theta.dtype}")
    size = tuple(size)
    align_corners = _default_align_corners(align_corners)
    if len(size) == 4:
        if theta.dim() != 3 or tuple(theta.shape[-2:]) != (2, 3):
            raise ValueError(
                "Expected a batch of 2D affine matrices of shape Nx2x3 for size "
                f"{size}. Got {tuple(theta.shape)}."
            )
        spatial = size[2:]
    elif len(size) == 5:
        if theta.dim() != 3 or tuple(theta.shape[-2:]) != (3, 4):
            raise ValueError(
                "Expected a batch of 3D affine matrices of shape Nx3x4 for size "
                f"{size}. Got {tuple(theta.shape)}."
            )
        spatial = size[2:]
    else:
        raise NotImplementedError(
            f"affine_grid only supports 4D and 5D sizes, for 2D and 3D affine transforms, "
            f"respectively. Got size {size}."
        )
    if min(size) <= 0:
        raise ValueError(f"Expected non-zero, positive output size. Got {size}")
    if theta.shape[0] != size[0]:
        raise ValueError(
            f"Expected theta batch size {theta.shape[0]} to match output size batch {size[0]}"
        )

    xp = array_module(theta._data)

    def axis(steps: int):
        if steps == 1:
            return xp.zeros(1)
        line = xp.linspace(-1.0, 1.0, steps)
        return line if align_corners else line * ((steps - 1) / steps)

    # base[..., :] = (x, y[, z], 1) at every output position (a constant, on theta's device)
    mesh = xp.meshgrid(*[axis(s) for s in spatial], indexing="ij")  # (D,) H, W order
    base = xp.stack(list(reversed(mesh)) + [xp.ones(tuple(spatial))], axis=-1)
    base = wrap(base.astype(theta._data.dtype))
    flat = base.reshape(1, -1, len(spatial) + 1)
    grid = flat @ theta.mT  # (N, ∏spatial, nd)
    return grid.reshape((size[0],) + tuple(spatial) + (len(spatial),))
