"""grid_sample and affine_grid: sampling an image at arbitrary (normalised) coordinates.

``grid_sample`` is one graph node, as PyTorch records it (``GridSampler2DBackward0`` for 4-D
input, ``GridSampler3DBackward0`` for 5-D). For float32/float64 its forward and backward run on
the arrays, over all output points at once: each output value sums 2^d (linear), 1 (nearest)
or 4^d (cubic) taps of a channels-last copy of the input, a sparse matrix product (SciPy's; a
gather per tap elsewhere), and the input's gradient is the transposed product (the
scatter-add). Under ``create_graph``, and for half types (whose every rounding torch's kernels
share with it), the composite of differentiable ember ops is the formula
(``_composite_grid_sample``: coordinate arithmetic, floor, gathers), so gradients reach both
the input and the grid to any order.
"""

from __future__ import annotations

import itertools
import math
import warnings

from .. import _dtype
from .._tensor import Tensor
from ..autograd import grad_mode
from ..autograd.node import Node
from ._dispatch import array_module, grad_state, result, wrap
from ._recorded import KernelCall, kernel_call
from ._spatial_checks import require_floating
from .resample import _CUBIC_A

# the numbers PyTorch's kernels (and its nodes' saved fields) give the modes
_INTERPOLATION_CODES = {"bilinear": 0, "nearest": 1, "bicubic": 2}
_PADDING_CODES = {"zeros": 0, "border": 1, "reflection": 2}
_HALF_TYPES = (_dtype.float16, _dtype.bfloat16)


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
    """Cubic convolution weights of the four taps around a point ``t`` past the second tap
    (tensors, or arrays)."""
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
    (N, Do, Ho, Wo, 3) points (x, y, z). Returns (N, C, Ho, Wo) or (N, C, Do, Ho, Wo).

    >>> import ember
    >>> x = ember.arange(4.0).reshape(1, 1, 2, 2)
    >>> grid = ember.tensor([[[[0.0, 0.0]]]])  # the centre of the image
    >>> ember.nn.functional.grid_sample(x, grid, align_corners=False)
    tensor([[[[1.5000]]]])
    """
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
    for dim in range(2, input.dim()):
        if input.shape[dim] == 0:
            raise RuntimeError(
                "grid_sampler(): expected input to have non-empty spatial dimensions, but input "
                f"has sizes {list(input.shape)} with dimension {dim} being empty"
            )
    node_cls = GridSampler2DBackward0 if nd == 2 else GridSampler3DBackward0
    if input.dtype in _HALF_TYPES or input.device.type == "meta":
        # torch's kernels compute half types in their own precision, rounding every step (the
        # sample positions too), as the composite does: its values are torch's. (Meta tensors
        # have no values: the composite gives the shapes.)
        plan = None
        data = _composite_grid_sample(
            input._detach(), grid._detach(), mode, padding_mode, align_corners
        )._data
    else:
        xp = array_module(input._data)
        sizes = tuple(input.shape[2:])
        plan = _SamplingPlan(xp, grid._data, sizes, mode, padding_mode, align_corners)
        data = plan.sample(_channels_last(xp, input._data, plan))
    return result(
        node_cls,
        data,
        (input, grid),
        (input, grid),
        mode=mode,
        padding_mode=padding_mode,
        align_corners=align_corners,
        plan=plan,
    )


class GridSampler2DBackward0(Node):
    """grid_sample of 4-D input as one node. grad_input scatters g·weight back to each tap;
    grad_grid sums over channels g · d value / d coordinate (the taps' weight slopes), times
    d coordinate / d grid (the unnormalising scale, and the clip and reflection slopes, zero
    on the borders as in torch's kernel; none in nearest mode: zero). Under ``create_graph``
    (and for half types, which have no ``plan``) the composite is differentiated instead, so
    that double backward reaches both inputs."""

    torch_saved = {
        "input": 0,
        "grid": 1,
        "interpolation_mode": lambda node: _INTERPOLATION_CODES[node.mode],
        "padding_mode": lambda node: _PADDING_CODES[node.padding_mode],
        "align_corners": "align_corners",
    }
    plan = None

    def backward(self, g):
        input, grid = self.unpack_saved()  # raises PyTorch's error once the graph was freed
        plan = self.plan
        if grad_state.enabled or plan is None:
            return self._composite_backward(input, grid, g)
        edges = self._edges
        xp = array_module(input._data)
        gd = g._data
        n, c = gd.shape[:2]
        g_rows = _swap_last_axes(xp, gd.reshape(n, c, plan.points).astype(plan.dtype, copy=False))
        g_rows = g_rows.reshape(n * plan.points, c)
        grad_input = grad_grid = None
        if edges[0] is not None:
            grad_input = wrap(plan.scatter(g_rows))
        if edges[1] is not None:
            table = None if self.mode == "nearest" else _channels_last(xp, input._data, plan)
            grad_grid = wrap(plan.grid_gradient(g_rows, table))
        return grad_input, grad_grid

    def _composite_backward(self, input, grid, g) -> tuple:
        """The composite's gradients: on the real inputs under ``create_graph`` (so that double
        backward reaches them), otherwise on detached aliases (half types: see grid_sample)."""
        from ..autograd import grad as autograd_grad

        create_graph = grad_state.enabled
        inputs = (input, grid)
        if not create_graph:
            inputs = tuple(t._detach().requires_grad_(True) for t in inputs)
        wanted = [i for i, edge in enumerate(self._edges) if edge is not None]
        with grad_mode.enable_grad():
            out = _composite_grid_sample(*inputs, self.mode, self.padding_mode, self.align_corners)
        leaves = [inputs[i] for i in wanted]
        grads = autograd_grad(out, leaves, g, create_graph=create_graph, allow_unused=True)
        per_input = [None, None]
        for i, grad in zip(wanted, grads):
            per_input[i] = grad
        return tuple(per_input)

    def release(self) -> None:
        super().release()
        self.plan = None


class GridSampler3DBackward0(GridSampler2DBackward0):
    """The same node for 5-D input (torch names the two apart)."""


def _channels_last(xp, data, plan):
    """(N, C, *S) -> (N·(∏S + 1), C): one row per pixel, then one zero row per image, which
    the taps outside the image read (so no mask multiplies the gathered values)."""
    n, c = data.shape[:2]
    pixels = plan.pixels
    table = xp.empty((n, pixels + 1, c), dtype=data.dtype)
    _swap_last_axes(xp, data.reshape(n, c, pixels), out=table[:, :pixels])
    table[:, pixels] = 0
    return table.reshape(n * (pixels + 1), c)


_RUN = 64  # elements: _swap_last_axes's contiguous runs


def _swap_last_axes(xp, a, out=None):
    """(N, A, B) -> (N, B, A), C-contiguous (or written into ``out``). One strided NumPy copy
    reads a new cache line per element once the array outgrows the caches; two copies, one of
    contiguous runs of 64 elements and one transposing (64 x min(A, B)) tiles, take 2-5x less
    time for the channel counts and image sizes of grid_sample (measured, 16 to 256 channels
    and 10^3 to 10^4 pixels); few channels (a tile of short rows) stay one copy."""
    n, rows, cols = a.shape
    target = xp.empty((n, cols, rows), dtype=a.dtype) if out is None else out
    small, large = min(rows, cols), max(rows, cols)
    if xp.__name__ != "numpy" or small < 8 or large % _RUN or rows * cols < 1 << 14:
        target[...] = a.transpose(0, 2, 1)
        return target
    if rows < cols:  # (N, A, B/64, 64) -> runs (N, B/64, A, 64) -> tiles transposed
        runs = xp.ascontiguousarray(a.reshape(n, rows, cols // _RUN, _RUN).transpose(0, 2, 1, 3))
        target.reshape(n, cols // _RUN, _RUN, rows)[...] = runs.transpose(0, 1, 3, 2)
    else:  # (N, A/64, 64, B) -> tiles transposed (N, A/64, B, 64) -> runs into (N, B, A)
        tiles = xp.ascontiguousarray(a.reshape(n, rows // _RUN, _RUN, cols).transpose(0, 1, 3, 2))
        target.reshape(n, cols, rows // _RUN, _RUN)[...] = tiles.transpose(0, 2, 1, 3)
    return target


def _reflect_array(xp, coord, twice_low: int, twice_high: int):
    """Coordinates folded back into [low, high] by mirroring at both ends, repeatedly, and
    d folded / d coord (±1); torch's kernel's formulation."""
    if twice_low == twice_high:
        zeros = xp.zeros_like(coord)
        return zeros, zeros
    low = twice_low / 2
    twice_span = float(twice_high - twice_low)
    shifted = coord - low
    extra = xp.fmod(xp.abs(shifted), twice_span)
    mirrored = twice_span - extra
    flipped = extra > mirrored
    folded = xp.where(flipped, mirrored, extra)
    folded += low
    sign = xp.where(flipped ^ (shifted < 0), -1.0, 1.0).astype(coord.dtype, copy=False)
    return folded, sign


def _pad_array(xp, coord, size: int, padding_mode: str, align_corners: bool, slope: bool = False):
    """(coordinates mapped into the image by ``padding_mode``, d mapped / d coord or None for
    one; only when ``slope``). The clip's slope is zero on the borders themselves, as torch's."""
    if padding_mode == "zeros":
        return coord, None
    sign = None
    if padding_mode == "reflection":
        twice = (0, 2 * (size - 1)) if align_corners else (-1, 2 * size - 1)
        coord, sign = _reflect_array(xp, coord, *twice)
    inside = (coord > 0) & (coord < size - 1) if slope else None
    coord = xp.fmin(xp.fmax(coord, 0), size - 1)  # fmax: NaN to 0, as torch's CPU kernel
    if not slope:
        return coord, None
    grad = inside.astype(coord.dtype)
    if sign is not None:
        grad *= sign
    return coord, grad


def _cubic_slopes(t) -> list:
    """d/dt of the four ``_cubic_weights(t)`` (arrays or tensors)."""
    a = _CUBIC_A

    def near(x):  # d/dx ((a + 2)x³ - (a + 3)x² + 1)
        return (3 * (a + 2) * x - 2 * (a + 3)) * x

    def far(x):  # d/dx (ax³ - 5ax² + 8ax - 4a)
        return (3 * a * x - 10 * a) * x + 8 * a

    return [far(t + 1), near(t), -near(1 - t), -far(2 - t)]


class _SamplingPlan:
    """Where each output point reads: per axis, its taps' pixel indices and weights, and
    d coordinate / d grid; per point and combined tap, the row of the channels-last table
    (see _channels_last) it reads, the image's zero row where the tap falls outside.

    Each output point is a weighted sum of table rows: a sparse (points x table rows) matrix
    with 2^d, 1 or 4^d entries a row. On NumPy, SciPy multiplies by it (the forward) and by
    its transpose (the input's gradient: the scatter-add) in one compiled pass each; other
    array modules gather and scatter-add tap by tap."""

    def __init__(self, xp, grid, sizes: tuple, mode: str, padding_mode: str, align_corners: bool):
        nd = len(sizes)
        n = grid.shape[0]
        self.xp, self.mode, self.sizes, self.grid_shape = xp, mode, sizes, grid.shape
        self.dtype = grid.dtype
        self.out_shape = tuple(grid.shape[1:-1])
        self.pixels = pixels = math.prod(sizes)
        points = math.prod(self.out_shape)
        flat_grid = grid.reshape(n, points, nd)
        taps = 4**nd if mode == "bicubic" else (1 if mode == "nearest" else 2**nd)
        fits = n * (pixels + 1) + nd * pixels < 2**31 and n * points * taps < 2**31
        self.index_dtype = index_dtype = xp.int32 if fits else xp.int64  # SciPy's choice
        indices, self.fractions, self.axis_weights, self.slopes = [], [], [], []
        for axis, size in enumerate(sizes):
            # grid's last axis is (x, y[, z]): the reverse of the input's spatial order
            coord = flat_grid[:, :, nd - 1 - axis]
            # [-1, 1] -> pixels: corner pixel centres (align_corners) or image edges
            scale = (size - 1) / 2 if align_corners else size / 2
            coord = (coord + 1) * scale
            if not align_corners:
                coord -= 0.5
            positions, fraction, weights, slope = _axis_taps(
                xp, coord, size, mode, padding_mode, align_corners
            )
            # outside the axis, an index whose multiple by the axis's stride is `pixels`
            outside = math.prod(sizes[: axis + 1])
            indices.append([_pixel_index(xp, p, size, outside, index_dtype) for p in positions])
            self.fractions.append(fraction)
            self.axis_weights.append(weights)
            self.slopes.append(slope * scale if slope is not None else scale)
        self.choices = list(itertools.product(*(range(len(taps)) for taps in indices)))
        rows = xp.empty((n, points, len(self.choices)), dtype=index_dtype)
        offsets = xp.arange(0, n * (pixels + 1), pixels + 1, dtype=index_dtype).reshape(n, 1)
        flat = xp.empty((n, points), dtype=index_dtype)
        for k, choice in enumerate(self.choices):
            for axis, tap in enumerate(choice):
                if axis == 0:
                    flat[...] = indices[0][tap]
                else:
                    flat *= sizes[axis]
                    flat += indices[axis][tap]
            # a tap with some axis outside has a flat index of `pixels` or more: the zero row
            xp.minimum(flat, pixels, out=flat)
            flat += offsets
            rows[:, :, k] = flat
        self.points = points
        self.rows = rows.reshape(n * points, len(self.choices))
        self.weights = self.tap_weights()

    def tap_weights(self, slope_axis: int = -1):
        """(N·P, taps): each tap's weight, or its derivative along axis ``slope_axis``; None
        for nearest (weights one)."""
        if self.mode == "nearest":
            return None
        per_axis = [
            _tap_slopes(self.mode, self.fractions[axis]) if axis == slope_axis else weights
            for axis, weights in enumerate(self.axis_weights)
        ]
        n = self.grid_shape[0]
        out = self.xp.empty((n, self.points, len(self.choices)), dtype=self.dtype)
        for k, choice in enumerate(self.choices):
            product = None
            for axis, tap in enumerate(choice):
                weight = per_axis[axis][tap]
                product = weight if product is None else product * weight
            out[:, :, k] = product
        return out.reshape(self.rows.shape)

    def _sparse_product(self, dense, transposed: bool = False):
        """(points x table rows) matrix of the taps' weights (or its transpose) @ ``dense``,
        by SciPy (NumPy arrays only), as one step that ember.compile records."""
        weights = self.weights
        if weights is None:
            weights = self.xp.ones(self.rows.shape, dtype=self.dtype)
        table_rows = self.grid_shape[0] * (self.pixels + 1)
        (out,) = kernel_call(
            self.xp, _SPARSE_PRODUCT, weights, self.rows, dense, table_rows, transposed
        )
        return out

    def sample(self, table):
        """The output (N, C, *out): each point's Σ over taps of weight · table row."""
        xp = self.xp
        n, c = self.grid_shape[0], table.shape[1]
        if self.weights is None:  # nearest: one tap, weight one
            out = xp.take(table, self.rows[:, 0], axis=0)
        elif xp.__name__ == "numpy":
            out = self._sparse_product(table)
        else:
            out = None
            for k in range(self.rows.shape[1]):
                term = xp.take(table, self.rows[:, k], axis=0) * self.weights[:, k, None]
                out = term if out is None else out + term
        out = _swap_last_axes(xp, out.reshape(n, self.points, c))
        return out.reshape((n, c) + self.out_shape)

    def scatter(self, g_rows):
        """grad_input (N, C, *S) from g's channels-last rows (N·P, C): each tap's g·weight
        added to its pixel (in g's dtype, float32 or wider); the taps outside the image land
        on the zero rows, which are dropped."""
        xp = self.xp
        n, c = self.grid_shape[0], g_rows.shape[1]
        table_rows = n * (self.pixels + 1)
        if xp.__name__ == "numpy":
            grad = self._sparse_product(g_rows, transposed=True)
        else:
            grad = xp.zeros((table_rows, c), dtype=g_rows.dtype)
            for k in range(self.rows.shape[1]):
                term = g_rows if self.weights is None else g_rows * self.weights[:, k, None]
                xp.add.at(grad, self.rows[:, k], term)
        grad = _swap_last_axes(xp, grad.reshape(n, self.pixels + 1, c)[:, : self.pixels])
        return grad.reshape((n, c) + self.sizes)

    def grid_gradient(self, g_rows, table):
        """grad_grid (N, *out, nd): per tap, Σ over channels of g · value; times each axis's
        d weight / d coordinate, summed over taps, times d coordinate / d grid. Zero in
        nearest mode (as torch)."""
        xp = self.xp
        nd = len(self.sizes)
        grad = xp.zeros(self.grid_shape, dtype=g_rows.dtype)
        if self.mode == "nearest":
            return grad
        points, taps = self.rows.shape
        # einsum, not a product with ones: BLAS's threads for a matrix-vector product of a
        # short inner axis cost more than they save
        per_tap = xp.empty((points, taps), dtype=g_rows.dtype)
        for k in range(taps):
            values = xp.take(table, self.rows[:, k], axis=0)
            per_tap[:, k] = xp.einsum("pc,pc->p", values, g_rows)
        n = self.grid_shape[0]
        flat = grad.reshape(n, self.points, nd)
        for axis in range(nd):
            along = xp.einsum("pt,pt->p", per_tap, self.tap_weights(slope_axis=axis))
            flat[:, :, nd - 1 - axis] = along.reshape(n, self.points) * self.slopes[axis]
        return grad


def _sparse_product_kernel(weights, rows, dense, table_rows: int, transposed: bool) -> tuple:
    """``(M @ dense,)`` (``M.T`` if ``transposed``) for the (points x table rows) matrix ``M``
    with ``weights[p, k]`` at ``(p, rows[p, k])``: SciPy's compiled loop over the entries."""
    from scipy.sparse import csr_matrix

    points, taps = rows.shape
    indptr = array_module(rows).arange(0, points * taps + 1, taps, dtype=rows.dtype)
    matrix = csr_matrix(
        (weights.reshape(points * taps), rows.reshape(points * taps), indptr),
        shape=(points, table_rows),
    )
    return ((matrix.T if transposed else matrix) @ dense,)


_SPARSE_PRODUCT = KernelCall(_sparse_product_kernel)


def _pixel_index(xp, position, size: int, outside: int, dtype):
    """Integer pixel positions (float arrays) as indices, ``outside`` where they fall outside
    the axis (or are NaN)."""
    inside = (position >= 0) & (position <= size - 1)
    return xp.where(inside, position, outside).astype(dtype)


def _axis_taps(xp, coord, size: int, mode: str, padding_mode: str, align_corners: bool):
    """The taps of the pixel coordinates ``coord`` along one axis of ``size`` pixels:
    (their integer positions (floats), the fraction past the first of the main two (None in
    nearest mode), their weights (None: nearest), d padded / d coord (None: one))."""
    if mode == "nearest":
        coord = _pad_array(xp, coord, size, padding_mode, align_corners)[0]
        return [xp.round(coord)], None, None, None  # half to even, as torch's nearbyint
    if mode == "bilinear":
        coord, slope = _pad_array(xp, coord, size, padding_mode, align_corners, slope=True)
        low = xp.floor(coord)
        t = coord - low
        return [low, low + 1], t, [1 - t, t], slope
    # cubic pads each tap's position instead, and its coordinate has slope one
    low = xp.floor(coord)
    t = coord - low
    positions = [low + (k - 1) for k in range(4)]
    if padding_mode != "zeros":
        positions = [
            xp.round(_pad_array(xp, p, size, padding_mode, align_corners)[0])
            for p in positions  # reflected integers stay integers (up to rounding)
        ]
    return positions, t, _cubic_weights(t), None


def _tap_slopes(mode: str, t) -> list:
    """d weight / d coordinate of one axis's taps (linear: 1 - t and t)."""
    return [-1.0, 1.0] if mode == "bilinear" else _cubic_slopes(t)


def _composite_grid_sample(
    input: Tensor, grid: Tensor, mode: str, padding_mode: str, align_corners: bool
) -> Tensor:
    """grid_sample built from differentiable ember ops (arguments already checked): the
    formula the node differentiates under ``create_graph``, and the reference of its tests."""
    nd = input.dim() - 2
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
