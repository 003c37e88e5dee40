"""Shape ops built from other ops: stacking and splitting variants, grids, differences,
integration, strided windows. Their gradients come from the ops they are made of.
"""

from __future__ import annotations

import builtins
import itertools
import math
import warnings

from .. import _dtype as dt
from .._tensor import Tensor
from ._dispatch import array_module, wrap, wrap_dim
from .indexing import getitem, index_put, index_put_into, index_select, writes_alone
from .shape import (
    _each,
    atleast_2d,
    cat,
    check_non_empty,
    diag,
    flatten,
    narrow,
    reshape,
    stack,
)


# --------------------------------------------------------------------------------------------
# Stacking and splitting
# --------------------------------------------------------------------------------------------
def atleast_3d(*tensors):
    def one(t: Tensor) -> Tensor:
        if t.dim() == 0:
            return t.reshape(1, 1, 1)
        if t.dim() == 1:
            return t.reshape(1, -1, 1)
        if t.dim() == 2:
            return t.unsqueeze(-1)
        return t

    return _each(one, tensors)


def column_stack(tensors) -> Tensor:
    check_non_empty("column_stack", tensors)
    cols = [t.reshape(-1, 1) if t.dim() <= 1 else t for t in tensors]
    return cat(cols, 1)


def row_stack(tensors) -> Tensor:
    check_non_empty("vstack", tensors)  # torch's row_stack is vstack, and says so
    return cat([atleast_2d(t) for t in tensors], 0)


def dstack(tensors) -> Tensor:
    check_non_empty("dstack", tensors)
    return cat([atleast_3d(t) for t in tensors], 2)


def tensor_split(input: Tensor, indices_or_sections, dim: int = 0) -> tuple:
    """Split into ``n`` nearly equal parts (the first ``size % n`` one larger) or at indices."""
    d = wrap_dim(dim, builtins.max(input.dim(), 1), "tensor_split")
    size = input.shape[d]
    spec = indices_or_sections
    if isinstance(spec, Tensor):
        if spec.dim() > 1 or spec.dtype.category != dt.INT:
            raise RuntimeError(
                "tensor_split expected tensor_indices_or_sections to be a zero-dimensional or "
                "one-dimensional tensor, but got a tensor with "
                f"{spec.dim()} dims"
            )
        spec = spec.item() if spec.dim() == 0 else spec.tolist()
    if isinstance(spec, int):
        if spec <= 0:
            raise RuntimeError(f"number of sections must be larger than 0, got {spec}")
        base, extra = divmod(size, spec)
        bounds, start = [], 0
        for i in range(spec):
            stop = start + base + (1 if i < extra else 0)
            bounds.append((start, stop))
            start = stop
    else:
        cuts = [0] + [builtins.min(builtins.max(int(i), 0), size) for i in spec] + [size]
        bounds = [(cuts[i], builtins.max(cuts[i], cuts[i + 1])) for i in range(len(cuts) - 1)]
    return tuple(narrow(input, d, start, stop - start) for start, stop in bounds)


def _is_int(value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _split_by(op: str, input: Tensor, spec, dim: int, min_dim: int) -> tuple:
    if not (_is_int(spec) or isinstance(spec, (list, tuple)) and all(_is_int(i) for i in spec)):
        raise TypeError(
            f"{op}() received an invalid combination of arguments - got (Tensor, "
            f"{type(spec).__name__}), but expected one of:\n * (Tensor input, int sections)\n"
            " * (Tensor input, tuple of ints indices)"
        )
    if input.dim() < min_dim:
        raise RuntimeError(
            f"torch.{op} requires a tensor with at least {min_dim} dimension, but got a tensor "
            f"with {input.dim()} dimensions!"
        )
    if isinstance(spec, int) and (spec == 0 or input.shape[dim] % spec != 0):
        raise RuntimeError(
            f"torch.{op} attempted to split along dimension {dim}, but the size of the "
            f"dimension {input.shape[dim]} is not divisible by the split_size {spec}!"
        )
    return tensor_split(input, spec, dim)


def hsplit(input: Tensor, indices_or_sections) -> tuple:
    return _split_by("hsplit", input, indices_or_sections, 1 if input.dim() > 1 else 0, 1)


def vsplit(input: Tensor, indices_or_sections) -> tuple:
    return _split_by("vsplit", input, indices_or_sections, 0, 2)


def dsplit(input: Tensor, indices_or_sections) -> tuple:
    return _split_by("dsplit", input, indices_or_sections, 2, 3)


def split_with_sizes(input: Tensor, split_sizes, dim: int = 0) -> tuple:
    d = wrap_dim(dim, builtins.max(input.dim(), 1), "split_with_sizes")
    if builtins.sum(split_sizes) != input.shape[d]:
        raise RuntimeError(
            "split_with_sizes expects split_sizes to sum exactly to "
            f"{input.shape[d]} (input tensor's size at dimension {d}), but got "
            f"split_sizes={list(split_sizes)}"
        )
    return input.split(list(split_sizes), d)


def ravel(input: Tensor) -> Tensor:
    return reshape(input, (-1,))


def rot90(input: Tensor, k: int = 1, dims=(0, 1)) -> Tensor:
    """Rotate by 90° ``k`` times in the plane of ``dims`` (from the first towards the second)."""
    if len(dims) != 2:
        raise RuntimeError(f"expected total rotation dims == 2, but got dims = {len(dims)}")
    if input.dim() < 2:
        raise RuntimeError(f"expected total dims >= 2, but got total dims = {input.dim()}")
    a, b = (wrap_dim(d, input.dim(), "rot90") for d in dims)
    if a == b:
        raise RuntimeError(
            f"expected rotation dims to be different, but got dim0 = {a} and dim1 = {b}"
        )
    k %= 4
    if k == 1:
        return input.flip(b).transpose(a, b)
    if k == 2:
        return input.flip((a, b))
    if k == 3:
        return input.flip(a).transpose(a, b)
    return input.clone()


def diagflat(input: Tensor, offset: int = 0) -> Tensor:
    return diag(flatten(input), offset)


# --------------------------------------------------------------------------------------------
# Grids and index sets
# --------------------------------------------------------------------------------------------
def meshgrid(*tensors, indexing: str | None = None) -> tuple:
    if len(tensors) == 1 and isinstance(tensors[0], (list, tuple)):
        tensors = tuple(tensors[0])
    if indexing is None:
        warnings.warn(
            "torch.meshgrid: in an upcoming release, it will be required to pass the indexing "
            "argument.",
            UserWarning,
            stacklevel=2,
        )
        indexing = "ij"
    if indexing not in ("ij", "xy"):
        raise RuntimeError(
            f'torch.meshgrid: indexing must be one of "xy" or "ij", but received: {indexing}'
        )
    for t in tensors:
        if t.dim() > 1:
            raise RuntimeError(
                f"torch.meshgrid: Expected 0D or 1D tensor in the tensor list but got: {t.dim()}D"
            )
    if len({t.dtype for t in tensors}) > 1:
        raise RuntimeError("meshgrid expects all tensors to have the same dtype")
    flat = [t.reshape(-1) for t in tensors]
    swap = indexing == "xy" and len(flat) >= 2
    if swap:
        flat[0], flat[1] = flat[1], flat[0]
    shape = tuple(t.shape[0] for t in flat)
    grids = []
    for i, t in enumerate(flat):
        view = [1] * len(flat)
        view[i] = -1
        grids.append(t.reshape(view).expand(shape))
    if swap:
        grids[0], grids[1] = grids[1], grids[0]
    return tuple(grids)


def cartesian_prod(*tensors) -> Tensor:
    if len(tensors) == 1:
        return tensors[0]
    grids = meshgrid(*tensors, indexing="ij")
    return stack([g.reshape(-1) for g in grids], 1)


def combinations(input: Tensor, r: int = 2, with_replacement: bool = False) -> Tensor:
    if input.dim() != 1:
        raise RuntimeError(f"Expect a 1D vector, but got shape {list(input.shape)}")
    if r < 0:
        raise RuntimeError(f"Expect a non-negative number, but got {r}")
    if r == 0:
        return input.new_empty(0)
    pick = itertools.combinations_with_replacement if with_replacement else itertools.combinations
    rows = list(pick(range(input.shape[0]), r))
    xp = array_module(input._data)
    # no combinations still selects (an empty index): the result stays in the graph, as torch's
    index = wrap(xp.asarray(rows, dtype=dt.int64.np).reshape(-1))
    return index_select(input, 0, index).reshape(-1, r)


def _tri_indices(op: str, row: int, col: int, offset: int, lower: bool, dtype, device):
    from .._creation import tensor

    xp = array_module(tensor(0, device=device)._data)
    if lower:
        r, c = xp.tril_indices(row, offset, col)
    else:
        r, c = xp.triu_indices(row, offset, col)
    out = xp.stack([r, c]).astype((dt.to_dtype(dtype) if dtype else dt.int64).np)
    return wrap(out)


def tril_indices(row: int, col: int, offset: int = 0, *, dtype=None, device=None, layout=None):
    """The (2, N) coordinates of the lower triangle of a row x col matrix, row by row."""
    return _tri_indices("tril_indices", row, col, offset, True, dtype, device)


def triu_indices(row: int, col: int, offset: int = 0, *, dtype=None, device=None, layout=None):
    """The (2, N) coordinates of the upper triangle of a row x col matrix, row by row."""
    return _tri_indices("triu_indices", row, col, offset, False, dtype, device)


def unravel_index(indices, shape) -> tuple:
    from .._creation import tensor

    if not isinstance(indices, Tensor):
        indices = tensor(indices)
    if indices.dtype.category != dt.INT:
        raise TypeError(f"expected 'indices' to be integer dtype, but got {indices.dtype}")
    shape = (shape,) if isinstance(shape, int) else tuple(shape)
    data = indices._data.astype(dt.int64.np)  # the wrap-around below must not overflow int8
    xp = array_module(data)
    total = math.prod(shape)
    if data.size and (int(data.min()) < -total or int(data.max()) >= total):
        raise RuntimeError("index is out of bounds for tensor of shape " + str(list(shape)))
    coords = xp.unravel_index(xp.where(data < 0, data + total, data), shape)
    return tuple(wrap(c.astype(dt.int64.np)) for c in coords)


# --------------------------------------------------------------------------------------------
# Differences and integration
# --------------------------------------------------------------------------------------------
def diff(input: Tensor, n: int = 1, dim: int = -1, prepend=None, append=None) -> Tensor:
    if input.dim() == 0:
        raise RuntimeError("diff expects input to be at least one-dimensional")
    d = wrap_dim(dim, input.dim(), "diff")
    if n < 0:
        raise RuntimeError(f"order must be non-negative but got {n}")
    if n == 0:  # as ATen: the input itself (a copy), prepend and append unused
        return input.clone()
    parts = [p for p in (prepend, input, append) if p is not None]
    x = cat(parts, d) if len(parts) > 1 else input
    for _ in range(n):
        size = x.shape[d]
        if size == 0:
            break
        after, before = narrow(x, d, 1, size - 1), narrow(x, d, 0, size - 1)
        # bool has no subtraction: ATen's step is "differs", logical_xor
        x = after.logical_xor(before) if x.dtype == dt.bool_ else after - before
    return x


def trapezoid(y: Tensor, x=None, *, dx=None, dim: int = -1) -> Tensor:
    """∫ y along ``dim`` by the trapezoidal rule, over sample points ``x`` or a spacing ``dx``."""
    d = wrap_dim(dim, builtins.max(y.dim(), 1), "trapezoid")
    n = y.shape[d]
    if n == 0:
        return y.sum(d)
    left, right = narrow(y, d, 0, n - 1), narrow(y, d, 1, n - 1)
    if x is None or not isinstance(x, Tensor):
        spacing = 1.0 if (x is None and dx is None) else (dx if x is None else x)
        return (left + right).sum(d) * (spacing / 2)
    dxs = diff(x, dim=-1 if x.dim() == 1 else d)
    if x.dim() == 1:
        shape = [1] * y.dim()
        shape[d] = n - 1
        dxs = dxs.reshape(shape)
    return ((left + right) * dxs).sum(d) / 2


trapz = trapezoid


def cumulative_trapezoid(y: Tensor, x=None, *, dx=None, dim: int = -1) -> Tensor:
    d = wrap_dim(dim, builtins.max(y.dim(), 1), "cumulative_trapezoid")
    n = y.shape[d]
    if n == 0:
        return y
    left, right = narrow(y, d, 0, n - 1), narrow(y, d, 1, n - 1)
    if x is None or not isinstance(x, Tensor):
        spacing = 1.0 if (x is None and dx is None) else (dx if x is None else x)
        return ((left + right) * (spacing / 2)).cumsum(d)
    dxs = diff(x, dim=-1 if x.dim() == 1 else d)
    if x.dim() == 1:
        shape = [1] * y.dim()
        shape[d] = n - 1
        dxs = dxs.reshape(shape)
    return ((left + right) * dxs / 2).cumsum(d)


# --------------------------------------------------------------------------------------------
# Strided windows: element positions come from the kernel, values through indexing
# --------------------------------------------------------------------------------------------
def _storage_of(data):
    """The flat array a NumPy view looks into, and where the view starts in it (in elements);
    None where that is not a plain same-dtype contiguous array (CuPy, reinterpreted bytes)."""
    root = data
    while getattr(root, "base", None) is not None and hasattr(root.base, "__array_interface__"):
        root = root.base
    if root is data:
        return None
    if getattr(root, "dtype", None) != data.dtype or not root.flags.c_contiguous:
        return None
    start = data.__array_interface__["data"][0] - root.__array_interface__["data"][0]
    return root.reshape(-1), start // data.itemsize


def as_strided(input: Tensor, size, stride, storage_offset=None) -> Tensor:
    """The elements of ``input``'s storage at ``offset + Σ i_k stride_k``, as torch: positions
    count from the start of the storage (a view's own offset is the default ``offset``, not a
    base added to it). Differentiable: each position takes its gradient from the element of
    ``input`` that lives there (positions outside ``input`` but inside its storage read the
    storage and take none)."""
    size, stride = tuple(int(s) for s in size), tuple(int(s) for s in stride)
    if len(size) != len(stride):
        raise RuntimeError(f"mismatch in length of strides and shape: {len(stride)} != {len(size)}")
    if builtins.any(s < 0 for s in stride):
        raise RuntimeError(
            f"as_strided: Negative strides are not supported at the moment, got strides: "
            f"{list(stride)}"
        )
    data = input._data
    xp = array_module(data)
    storage = _storage_of(data)
    start = 0 if storage is None else storage[1]
    offset = start if storage_offset is None else int(storage_offset)
    positions = xp.full(size, offset, dtype=dt.int64.np)
    for axis, (n, step) in enumerate(zip(size, stride)):
        shape = [1] * len(size)
        shape[axis] = n
        positions = positions + (xp.arange(n, dtype=dt.int64.np) * step).reshape(shape)
    room = input.numel() if storage is None else storage[0].size
    if positions.size and int(positions.max()) >= room:
        raise RuntimeError(
            f"setStorage: sizes {list(size)}, strides {list(stride)}, storage offset {offset}, "
            f"and itemsize {input.element_size()} requiring a storage size of "
            f"{(int(positions.max()) + 1) * input.element_size()} are out of bounds for "
            f"storage of size {room * input.element_size()}"
        )
    flat = input.reshape(-1)
    if storage is None or (start == 0 and data.flags.c_contiguous):
        return getitem(flat, wrap(positions))
    # which element of input (in row-major order) sits at each storage position, or -1
    where_is = xp.full(room, -1, dtype=dt.int64.np)
    placed = xp.full(data.shape, start, dtype=dt.int64.np)
    for axis, step in enumerate(data.strides):
        shape = [1] * data.ndim
        shape[axis] = data.shape[axis]
        placed = placed + (xp.arange(data.shape[axis]) * (step // data.itemsize)).reshape(shape)
    where_is[placed.reshape(-1)] = xp.arange(data.size, dtype=dt.int64.np)
    element = where_is[positions]
    inside = element >= 0
    picked = getitem(flat, wrap(xp.where(inside, element, 0)))
    if bool(inside.all()):
        return picked
    from .elementwise import where

    return where(wrap(inside), picked, wrap(storage[0][positions]))


def unfold(input: Tensor, dimension: int, size: int, step: int) -> Tensor:
    """``Tensor.unfold``: all windows of ``size`` along ``dimension`` every ``step`` elements,
    as a new last dim."""
    d = wrap_dim(dimension, builtins.max(input.dim(), 1), "unfold")
    length = input.shape[d] if input.dim() else 1
    if size > length:
        raise RuntimeError(
            f"maximum size for tensor at dimension {d} is {length} but size is {size}"
        )
    if step <= 0:
        raise RuntimeError(f"step is {step} but must be > 0")
    x = input if input.dim() else input.reshape(1)
    xp = array_module(x._data)
    count = (length - size) // step + 1
    starts = xp.arange(count, dtype=dt.int64.np) * step
    index = (starts[:, None] + xp.arange(size, dtype=dt.int64.np)[None, :]).reshape(-1)
    windows = index_select(x, d, wrap(index))
    shape = list(x.shape)
    if input.dim() == 0:  # torch: a 0-d input gives shape (size,), not (1, size)
        return windows.reshape(size)
    shape[d : d + 1] = [count, size]
    return windows.reshape(shape).movedim(d + 1, -1)


# --------------------------------------------------------------------------------------------
# index_copy and put: writes through index_put (whose gradient routes around the overwritten
# positions)
# --------------------------------------------------------------------------------------------
def _index_copy_checked(input: Tensor, dim: int, index: Tensor, source: Tensor):
    """index_copy's checks: (the tensor written, a 0-d input as one of shape (1,) as torch
    treats it; index_put's key; the source shaped for it)."""
    d = wrap_dim(dim, builtins.max(input.dim(), 1), "index_copy")
    if index.dim() > 1 or index.dtype != dt.int64:
        raise IndexError(
            f"index_copy_(): Index should have dimension 1 or 0 (got {index.dim()})"
            if index.dim() > 1
            else "index_copy_(): Expected a long tensor for index, but got "
            f"{index.dtype.legacy_name}"
        )
    n = input.shape[d] if input.dim() else 1
    data = index._data
    if data.size and (int(data.min()) < 0 or int(data.max()) >= n):
        raise IndexError(
            f"index_copy_(): index {int(data.max())} is out of bounds for "
            f"dimension {d} with size {n}"
        )
    target = input
    if input.dim() == 0:  # (and its source as one of shape (1,))
        target, d, source = input.reshape(1), 0, source.reshape(-1)
    key = (slice(None),) * d + (index.reshape(-1),)
    return target, key, source if source.dim() == target.dim() else source.unsqueeze(d)


def index_copy(input: Tensor, dim: int, index: Tensor, source: Tensor) -> Tensor:
    target, key, src = _index_copy_checked(input, dim, index, source)
    out = index_put(target, key, src)
    return out.reshape(()) if input.dim() == 0 else out


def index_copy_into(input: Tensor, dim: int, index: Tensor, source: Tensor) -> bool:
    """``input.index_copy_(...)`` outside the graph, written at the indexed slices only (see
    :func:`~ember.ops.indexing.writes_alone`); False where the copying path must run."""
    if not writes_alone(input, index, source):
        return False
    return index_put_into(*_index_copy_checked(input, dim, index, source))


def _put_checked(input: Tensor, index: Tensor) -> None:
    numel = input.numel()
    data = index._data
    if data.size and (int(data.min()) < -numel or int(data.max()) >= numel):
        raise IndexError(
            f"out of range: tried to access index {int(data.max())} on a tensor "
            f"of {numel} elements."
        )


def put(input: Tensor, index: Tensor, source: Tensor, accumulate: bool = False) -> Tensor:
    _put_checked(input, index)
    flat = input.reshape(-1)
    out = index_put(flat, (index.reshape(-1),), source.reshape(-1), accumulate)
    return out.reshape(input.shape)


def put_into(input: Tensor, index: Tensor, source: Tensor, accumulate: bool = False) -> bool:
    """``input.put_(...)`` outside the graph, written at the indexed elements only (see
    :func:`~ember.ops.indexing.writes_alone`); False where the copying path must run."""
    if not (writes_alone(input, index, source) and input._data.flags.c_contiguous):
        return False  # (a flat view of the input's memory needs C order)
    _put_checked(input, index)
    flat = input.reshape(-1)
    return index_put_into(flat, (index.reshape(-1),), source.reshape(-1), accumulate)


def as_strided_scatter(input: Tensor, src: Tensor, size, stride, storage_offset=None) -> Tensor:
    """A copy of ``input`` with ``src`` written where ``as_strided(input, size, stride,
    storage_offset)`` would look (differentiable in both)."""
    xp = array_module(input._data)
    size, stride = tuple(int(s) for s in size), tuple(int(s) for s in stride)
    offset = 0 if storage_offset is None else int(storage_offset)
    last = offset + builtins.sum((n - 1) * step for n, step in zip(size, stride))
    if builtins.all(size) and len(size) == len(stride) and last >= input.numel():
        # as_strided of the positions below would say it in their itemsize, not input's
        itemsize = input.element_size()
        raise RuntimeError(
            f"setStorage: sizes {list(size)}, strides {list(stride)}, storage offset {offset}, "
            f"and itemsize {itemsize} requiring a storage size of {(last + 1) * itemsize} are "
            f"out of bounds for storage of size {input.numel() * itemsize}"
        )
    positions = as_strided(
        wrap(xp.arange(input.numel(), dtype=dt.int64.np)), size, stride, storage_offset
    )
    if tuple(src.shape) != tuple(positions.shape):
        raise RuntimeError(
            f"expected src to have a size equal to the slice of self. src size = "
            f"{list(src.shape)}, slice size = {list(positions.shape)}"
        )
    flat = index_put(input.reshape(-1), (positions.reshape(-1),), src.reshape(-1))
    return flat.reshape(input.shape)


def nonzero_static(input: Tensor, *, size: int, fill_value: int = -1) -> Tensor:
    """``nonzero`` with exactly ``size`` rows: cut, or padded with ``fill_value``."""
    from .indexing import nonzero

    if size < 0:
        raise RuntimeError(f"nonzero_static: 'size' must be an non-negative integer, got {size}")
    found = nonzero(input)._data
    xp = array_module(found)
    out = xp.full((size, found.shape[1]), fill_value, dtype=found.dtype)
    count = builtins.min(size, found.shape[0])
    out[:count] = found[:count]
    return wrap(out)
