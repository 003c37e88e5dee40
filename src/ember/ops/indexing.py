"""Indexing, gather/scatter, masking, sorting and padding, with their derivatives."""

from __future__ import annotations

import builtins
import math

from .. import _backend, return_types
from .. import _dtype as dt
from .._creation import zeros
from .._kernels import jit
from .._kernels.blocked import is_plain_numpy
from .._tensor import Tensor
from .._type_info import finfo, iinfo
from ..autograd import forward_rules
from ..autograd.node import Node
from ._dispatch import (
    NUMPY_ARRAY,
    array_module,
    check_same_device,
    grad_state,
    result,
    to_tensor,
    wrap,
    wrap_dim,
)
from .padding_modes import pad_by_mode
from .shape import broadcast_shapes, make_view

_HOST = array_module(NUMPY_ARRAY(0))  # NumPy (ops import no NumPy)
sort_result = return_types.sort
topk_result = return_types.topk


# --------------------------------------------------------------------------------------------
# __getitem__ / index_put
# --------------------------------------------------------------------------------------------
def _is_basic(key: tuple) -> bool:
    for k in key:
        if not (
            k is None
            or k is Ellipsis
            or isinstance(k, slice)
            or (isinstance(k, int) and not isinstance(k, bool))
        ):
            return False
    return True


def _is_integer_scalar_tensor(k) -> bool:
    return isinstance(k, Tensor) and k._data.ndim == 0 and k._data.dtype.kind == "i"


def _index_array(xp, k, op: str):
    if isinstance(k, Tensor):
        data = k._data
    elif isinstance(k, (list, tuple)):
        data = xp.asarray(k)
    else:
        data = k
    if hasattr(data, "dtype"):
        if data.dtype.kind == "i" and data.dtype.itemsize < 4 and data.ndim == 0:
            data = data.astype(dt.int64.np)  # a 0-d tensor of any integer type reads as an int
        if data.dtype.kind not in "biu" or (data.dtype.kind == "i" and data.dtype.itemsize < 4):
            raise IndexError("tensors used as indices must be long, int, byte or bool tensors")
        if data.dtype.kind == "u" and data.dtype.itemsize == 1:
            data = data.astype(bool)
    return data


def normalize_key(input: Tensor, key, op: str = "index", check_bounds: bool = True):
    """A NumPy index equal to PyTorch's reading of ``key``; and whether it is basic (a view).
    ``check_bounds=False`` leaves tensor indices unchecked (index_put checks them last)."""
    if not isinstance(key, tuple):
        key = (key,)
    if builtins.any(_is_integer_scalar_tensor(k) for k in key):
        # a 0-d integer tensor indexes like the Python int it holds (a view), as in PyTorch
        key = tuple(int(k._data) if _is_integer_scalar_tensor(k) else k for k in key)
    if _is_basic(key):
        _check_basic_bounds(input._data.shape, key)
        return key, True
    xp = array_module(input._data)
    out = []
    for k in key:
        if k is None or k is Ellipsis:
            out.append(k)
        elif isinstance(k, slice):
            _check_step(k)
            out.append(k)
        elif isinstance(k, bool):
            out.append(xp.asarray(k))
        elif isinstance(k, int):
            out.append(k)
        else:
            out.append(_index_array(xp, k, op))
    key = tuple(out)
    if check_bounds:
        _check_advanced_bounds(input._data.shape, key)
    return key, False


def _clipped_key(shape: tuple, key: tuple) -> tuple:
    """``key`` with out-of-range integer indices moved in range: only its result shape counts."""
    positions = [p for p, k in enumerate(key) if k is not None and k is not Ellipsis]
    out = list(key)
    for p, (k, d) in zip(positions, _expanded_dims(shape, key)):
        if hasattr(k, "dtype") and k.dtype.kind in "iu" and k.size and shape[d]:
            out[p] = array_module(k).clip(k, -shape[d], shape[d] - 1)
    return tuple(out)


def _expanded_dims(shape: tuple, key: tuple):
    """Pair each key element with the dimension it indexes (None for new axes)."""
    consumed = 0
    for k in key:
        if k is None or k is Ellipsis:
            continue
        if hasattr(k, "dtype") and k.dtype.kind == "b":
            consumed += builtins.max(k.ndim, 1) if k.ndim else 0
        else:
            consumed += 1
    if consumed > len(shape):
        raise IndexError(f"too many indices for tensor of dimension {len(shape)}")
    dim = 0
    for k in key:
        if k is None:
            continue
        if k is Ellipsis:
            dim += len(shape) - consumed
            continue
        if hasattr(k, "dtype") and k.dtype.kind == "b":
            if k.ndim:
                for j in range(k.ndim):
                    if k.shape[j] != shape[dim + j]:
                        raise IndexError(
                            f"The shape of the mask {list(k.shape)} at index {j} does not "
                            f"match the shape of the indexed tensor {list(shape)} at index "
                            f"{dim + j}"
                        )
            yield k, dim
            dim += k.ndim
            continue
        yield k, dim
        dim += 1


def _check_basic_bounds(shape: tuple, key: tuple) -> None:
    for k, d in _expanded_dims(shape, key):
        if isinstance(k, int):
            if not -shape[d] <= k < shape[d]:
                raise IndexError(
                    f"index {k} is out of bounds for dimension {d} with size {shape[d]}"
                )
        elif k.__class__ is slice and k.step is not None:
            _check_step(k)


def _check_step(k: slice) -> None:
    """PyTorch has no negative strides: a slice steps forward (``flip`` reverses)."""
    if k.step is not None and k.step < 0:
        raise ValueError("step must be greater than zero")


def _check_advanced_bounds(shape: tuple, key: tuple) -> None:
    for k, d in _expanded_dims(shape, key):
        if isinstance(k, int):
            size = shape[d]
            if not -size <= k < size:
                raise IndexError(f"index {k} is out of bounds for dimension {d} with size {size}")
        elif hasattr(k, "dtype") and k.dtype.kind in "iu" and k.size:
            size = shape[d]
            lo, hi = int(k.min()), int(k.max())
            if lo < -size or hi >= size:
                bad = hi if hi >= size else lo
                raise IndexError(f"index {bad} is out of bounds for dimension {d} with size {size}")


class IndexBackward0(Node):
    def backward(self, g):
        if self._saved_versions:
            self.unpack_saved()  # the index tensors: changed in place since, they raise
        data = g._data
        if self.basic and not grad_state.enabled and data.__class__ is NUMPY_ARRAY:
            # no graph wanted: a basic key is a view, so the gradient is written into zeros
            # on the arrays (what index_put does, without two ops' dispatch)
            base = array_module(data).zeros(self.shape, data.dtype)
            base[self.key] = data
            return wrap(base)
        base = zeros(self.shape, dtype=g.dtype, device=g.device)
        return index_put(base, self.key, g, accumulate=not self.basic)


# Basic indexing is one view here; PyTorch records it as a chain of select/slice/unsqueeze
# and names the node after the last of them. The node keeps that name (same backward).
class SliceBackward0(IndexBackward0):
    pass


class SelectBackward0(IndexBackward0):
    pass


class UnsqueezeBackward0(IndexBackward0):
    pass


class AliasBackward0(IndexBackward0):
    pass


def _basic_node_class(raw_key, shape: tuple):
    items = raw_key if isinstance(raw_key, tuple) else (raw_key,)
    if len(items) == 1 and isinstance(items[0], slice) and items[0] == slice(None):
        return SliceBackward0
    consuming = builtins.sum(1 for k in items if k is not None and k is not Ellipsis)
    last, dim = AliasBackward0, 0
    for k in items:
        if k is None:
            last = UnsqueezeBackward0
        elif k is Ellipsis:
            dim += len(shape) - consuming
        elif isinstance(k, slice):
            size = shape[dim] if dim < len(shape) else 0
            if k.indices(size) != (0, size, 1):
                last = SliceBackward0
            dim += 1
        else:
            last = SelectBackward0
            dim += 1
    return last


def _basic_steps(raw_key, shape: tuple):
    """Torch's chain for a tuple of ints, slices, None and Ellipsis: one (dim, item) per
    select, slice or unsqueeze it records, full slices skipped; None for other keys."""
    consuming = 0
    for k in raw_key:
        if k.__class__ is int or k.__class__ is slice:
            consuming += 1
        elif k is not None and k is not Ellipsis:
            return None
    if consuming > len(shape):
        return None  # normalize_key raises torch's error
    steps, dim, source_dim = [], 0, 0  # dim in the tensor built so far, dim of the input
    for k in raw_key:
        if k is None:
            steps.append((dim, None))
            dim += 1
        elif k is Ellipsis:
            dim += len(shape) - consuming
            source_dim += len(shape) - consuming
        elif k.__class__ is slice:
            size = shape[source_dim]
            if k.indices(size) != (0, size, 1):
                steps.append((dim, k))
            dim += 1
            source_dim += 1
        else:
            steps.append((dim, k))
            source_dim += 1
    return steps


def getitem(input: Tensor, key) -> Tensor:
    raw_key = key
    if raw_key.__class__ is tuple and len(raw_key) > 1 and input._rg and grad_state.enabled:
        steps = _basic_steps(raw_key, input._data.shape)
        if steps is not None and len(steps) > 1:  # one node per step, as torch records
            _check_basic_bounds(input._data.shape, raw_key)
            out = input
            for dim, item in steps:
                out = getitem(out, (slice(None),) * dim + (item,))
            return out
    key, basic = normalize_key(input, key)
    data = input._data[key]
    if basic:
        node_cls = _basic_node_class(raw_key, input._data.shape)
        out = result(node_cls, data, (input,), shape=input._data.shape, key=key, basic=True)
        make_view(out, input, (getitem, (key,)))
        return out
    # the key's arrays are the index tensors' own: saved with their versions, an in-place
    # change of an index before backward raises instead of moving the gradient
    saved = _index_tensors(raw_key) if input._rg else ()
    shape = input._data.shape
    return result(IndexBackward0, data, (input,), saved, shape=shape, key=key, basic=False)


def _index_tensors(raw_key) -> tuple:
    """The tensors of a key that index as arrays (a 0-d integer tensor reads as an int)."""
    if raw_key.__class__ is Tensor:  # the common x[idx]: no generator
        return (raw_key,)
    items = raw_key if isinstance(raw_key, tuple) else (raw_key,)
    return tuple(k for k in items if isinstance(k, Tensor) and not _is_integer_scalar_tensor(k))


class IndexPutBackward0(Node):
    def backward(self, g):
        if self._saved_versions:
            # the index tensors are saved: an in-place change since forward would silently
            # route the gradient to other positions, so it raises as in PyTorch
            self.unpack_saved()
        key, accumulate = self.key, self.accumulate
        edges = self._edges
        g_self = None
        if edges[0] is not None:
            g_self = g if accumulate else index_put(g, key, g[key] * 0)
        g_values = g[key] if edges[1] is not None else None
        return g_self, g_values


def _prepared_put(input: Tensor, indices, values):
    """index_put's checks, in PyTorch's order: the normalized key, whether it is basic, the key
    as given, the value as a tensor of the input's dtype (the graph's input) and its array
    broadcast to what the key selects."""
    raw = indices if isinstance(indices, tuple) else (indices,)
    key, basic = normalize_key(input, raw, check_bounds=False)
    if not basic:  # too many indices, mask shapes and integer bounds come first
        shape = input._data.shape
        for k, d in _expanded_dims(shape, key):
            if isinstance(k, int) and not -shape[d] <= k < shape[d]:
                raise IndexError(
                    f"index {k} is out of bounds for dimension {d} with size {shape[d]}"
                )
    if not basic and isinstance(values, Tensor) and values._data.dtype != input._data.dtype:
        raise RuntimeError(
            "Index put requires the source and destination dtypes match, got "
            f"{input.dtype.legacy_name} for the destination and {values.dtype.legacy_name} "
            "for the source."
        )
    values = to_tensor(values, input)
    if values._data.dtype != input._data.dtype:
        values = values.to(input.dtype)
    xp = array_module(input._data)
    data = input._data
    # PyTorch checks the value's shape before the indices' bounds
    try:
        target_shape = data[key if basic else _clipped_key(data.shape, key)].shape
    except NotImplementedError:  # a mask into a meta tensor: how many it picks is unknown
        target_shape = values._data.shape  # (unchecked, as torch's meta kernel)
    while values._data.ndim > len(target_shape) and values._data.shape[0] == 1:
        values = values.squeeze(0)  # PyTorch drops leading unit dims of the value
    try:
        v = xp.broadcast_to(values._data, target_shape)
    except ValueError:
        raise RuntimeError(
            f"shape mismatch: value tensor of shape {list(values._data.shape)} cannot be "
            f"broadcast to indexing result of shape {list(target_shape)}"
        ) from None
    if not basic:
        _check_advanced_bounds(data.shape, key)
    return key, raw, values, v


def _put(out, key, v, accumulate: bool) -> None:
    if accumulate:
        array_module(out).add.at(out, key, v)
    else:
        out[key] = v


def index_put(input: Tensor, indices, values, accumulate: bool = False) -> Tensor:
    """Out-of-place ``input[indices] = values`` (``+=`` with accumulate, duplicates summed)."""
    key, raw, values, v = _prepared_put(input, indices, values)
    out = input._data.copy()
    _put(out, key, v, accumulate)
    saved_indices = tuple(k for k in raw if isinstance(k, Tensor))
    return result(
        IndexPutBackward0,
        out,
        (input, values),
        saved_indices,
        key=key,
        accumulate=accumulate,
    )


def index_put_into(input: Tensor, indices, values, accumulate: bool = False) -> bool:
    """``input[indices] = values`` written into input's own memory, only where the key points,
    as PyTorch's kernel writes: processes writing other elements of one shared tensor keep
    their writes, and one element costs no copy of the whole. False (nothing written) where the
    copying path must run instead: no NumPy array, or memory that is not writeable (its error)."""
    data = input._data
    if not is_plain_numpy(data):
        return False
    key, _, _, v = _prepared_put(input, indices, values)
    if not data.flags.writeable:
        return False
    if _HOST.may_share_memory(data, v):
        v = v.copy()  # t[1:] = t[:-1] reads the old values, as the copying path does
    _put(data, key, v, accumulate)
    return True


def _setitem_arguments(input: Tensor, key, values) -> tuple:
    """A raw ``__setitem__`` key (ints, slices, tensors ...) and value as index_put takes them."""
    key = key if isinstance(key, tuple) else (key,)
    masks = [k for k in key if isinstance(k, Tensor) and k._data.dtype.kind in "bu"]
    tensors = [k for k in key if isinstance(k, Tensor)]
    if (
        isinstance(values, Tensor)
        and values._data.size == 1
        and len(tensors) == 1
        and masks
        and masks[0]._data.ndim
    ):
        # PyTorch fills through one mask with one value (masked_fill_, which casts the value)
        normalized, _ = normalize_key(input, key, check_bounds=False)
        for _ in _expanded_dims(input._data.shape, normalized):  # the mask's shape first
            pass
        if masks[0]._data.dtype.kind == "u":
            raise RuntimeError(
                "masked_fill_ only supports boolean masks, but got mask with dtype unsigned char"
            )
        values = values.to(input.dtype)
    return key, values


def index_put_key(input: Tensor, key, values) -> Tensor:
    """``index_put`` for a raw ``__setitem__`` key (ints, slices, tensors ...)."""
    return index_put(input, *_setitem_arguments(input, key, values))


def index_put_key_into(input: Tensor, key, values) -> bool:
    """``index_put_into`` for a raw ``__setitem__`` key."""
    return index_put_into(input, *_setitem_arguments(input, key, values))


def writes_alone(input: Tensor, *others) -> bool:
    """Whether an op outside the graph may write into ``input``'s own memory where it changes
    it (as PyTorch's kernels write): a writeable NumPy array that shares no memory with the
    ``others`` (tensors, arrays or numbers: an index, a source, a mask), which the copying
    path reads first. Writers of other elements of one shared tensor (threads, processes)
    keep their writes that way, where a whole copy written back would undo them."""
    data = input._data
    if not is_plain_numpy(data) or not data.flags.writeable:
        return False
    for other in others:
        array = getattr(other, "_data", None)
        if array is not None and _HOST.may_share_memory(data, array):
            return False
    return True


# --------------------------------------------------------------------------------------------
# gather / scatter / index_select / index_add
# --------------------------------------------------------------------------------------------
def _along_dim_key(xp, index, dim: int) -> tuple:
    """A fancy index addressing ``out[i0, ..., index[i], ..., in]`` for every position of index."""
    key = []
    for k in range(index.ndim):
        if k == dim:
            key.append(index)
        else:
            shape = [1] * index.ndim
            shape[k] = index.shape[k]
            key.append(xp.arange(index.shape[k]).reshape(shape))
    return tuple(key)


_INDEX_DTYPES = (dt.int64.np, dt.int32.np)


def _check_index_tensor(
    op: str, input: Tensor, dim: int, index: Tensor, src=None, bounds: bool = True
) -> None:
    """PyTorch's checks of gather/scatter's index: src dtype, then (unless the index is empty)
    index dtype, rank, sizes and (unless not ``bounds``: a kernel checks them) bounds."""
    idx = index._data
    if isinstance(src, Tensor) and src._data.dtype != input._data.dtype:
        raise RuntimeError("scatter(): Expected self.dtype to be equal to src.dtype")
    if idx.size == 0:
        return
    if idx.dtype not in _INDEX_DTYPES:
        raise RuntimeError(
            f"{'gather' if op == 'gather' else 'scatter'}(): Expected dtype int32/int64 for index"
        )
    shape = input._data.shape
    if idx.ndim != len(shape) and not (idx.ndim <= 1 and len(shape) <= 1):
        which = "input" if op == "gather" else "self"
        raise RuntimeError(
            f"Index tensor must have the same number of dimensions as {which} tensor"
        )
    src_shape = src._data.shape if isinstance(src, Tensor) else None
    if src_shape is not None and builtins.max(len(src_shape), 1) != builtins.max(idx.ndim, 1):
        raise RuntimeError("Index tensor must have the same number of dimensions as src tensor")
    for k in range(idx.ndim):
        too_big_self = k != dim and k < len(shape) and idx.shape[k] > shape[k]
        too_big_src = src_shape is not None and k < len(src_shape) and idx.shape[k] > src_shape[k]
        if op == "gather" and too_big_self:
            raise RuntimeError(
                f"Size does not match at dimension {k} expected index {list(idx.shape)} to be "
                f"no larger than self {list(shape)} apart from dimension {dim}"
            )
        if op != "gather" and (too_big_self or too_big_src):
            raise RuntimeError(
                f"Expected index {list(idx.shape)} to be no larger than self {list(shape)} "
                f"apart from dimension {dim} and to be no larger size than src "
                f"{list(src_shape if src_shape is not None else idx.shape)}"
            )
    if bounds:
        _check_bounds(idx, shape[dim] if shape else 1, dim)


def _check_bounds(idx, size: int, dim: int) -> None:
    """PyTorch's bounds error of gather/scatter (negative indices do not wrap here)."""
    lo, hi = int(idx.min()), int(idx.max())
    if lo < 0 or hi >= size:
        raise RuntimeError(
            f"index {hi if hi >= size else lo} is out of bounds for dimension {dim} with size "
            f"{size}"
        )


class GatherBackward0(Node):
    torch_saved = {"dim": "dim", "index": 0, "sparse_grad": ("value", False)}

    def backward(self, g):
        self.unpack_saved()  # the index, checked against in-place changes since forward
        if not grad_state.enabled:  # no graph to build: the compiled scatter into zeros
            out = _scattered_into_zeros(self.shape, self.dim, self.index._data, g._data)
            if out is not None:
                return wrap(out)
        out = zeros(self.shape, dtype=g.dtype, device=g.device)
        return out.scatter_add(self.dim, self.index, g)


def _scattered_into_zeros(shape, d: int, index, g):
    """``zeros(shape).scatter_add(d, index, g)`` as one compiled pass on NumPy arrays, or None
    where the kernels do not apply (the index was bounds-checked by the forward)."""
    if not (len(shape) and is_plain_numpy(g)):
        return None
    xp = array_module(g)
    out = xp.zeros(shape, dtype=g.dtype)
    kernels = _along_dim_kernels(out, index, d, work=out.size)
    if kernels is None or not kernels.scatter_add_(out, d, index, g):
        return None
    return out


class SortBackward0(GatherBackward0):  # sort's values: a gather of the input by the indices
    torch_saved = {"dim": "dim", "indices": 0, "self_sym_sizes": "shape"}


class TopkBackward0(SortBackward0):
    pass


class CummaxBackward0(GatherBackward0):
    torch_saved = {"dim": "dim", "indices": 0}


class CumminBackward0(CummaxBackward0):
    pass


def gather(input: Tensor, dim: int, index: Tensor, *, sparse_grad: bool = False) -> Tensor:
    return gathered(input, dim, index, GatherBackward0)


def gathered(input: Tensor, dim: int, index: Tensor, node_cls) -> Tensor:
    """``gather`` recorded as ``node_cls``: torch's name for the op that gathers (sort, topk
    and cummax/cummin give their values this way)."""
    if index._data.__class__ is not input._data.__class__:
        check_same_device("gather", input, index)
    d = wrap_dim(dim, builtins.max(input._data.ndim, 1), "gather")
    xp = array_module(input._data)
    data = input._data
    if index._data.size == 0:  # PyTorch checks nothing more for an empty index
        out = xp.empty(index._data.shape, dtype=data.dtype)
        return result(node_cls, out, (input,), (index,), shape=data.shape, dim=d, index=index)
    _check_index_tensor("gather", input, d, index, bounds=False)
    if data.ndim == 0:
        _check_bounds(index._data, 1, d)
        return result(
            node_cls,
            data.reshape(1)[index._data.reshape(-1)].reshape(index._data.shape),
            (input,),
            (index,),
            shape=data.shape,
            dim=d,
            index=index,
        )
    idx = index._data
    out = _compiled_gather(data, idx, d)
    if out is None:
        _check_bounds(idx, data.shape[d], d)
        key = _along_dim_key(xp, idx.reshape(1) if idx.ndim == 0 else idx, d)
        out = data[key].reshape(idx.shape)
    return result(node_cls, out, (input,), (index,), shape=data.shape, dim=d, index=index)


def _compiled_gather(data, idx, d: int):
    """gather by ember._kernels.scatter_jit (any dtype of 1 to 8 bytes, on NumPy arrays), or
    None where it does not apply or an index is out of bounds (the caller raises)."""
    if not (is_plain_numpy(data) and is_plain_numpy(idx)) or idx.ndim != data.ndim:
        return None
    if data.dtype.itemsize not in (1, 2, 4, 8) or idx.dtype not in _INDEX_DTYPES:
        return None
    kernels = jit.module("scatter_jit", idx.size)
    if kernels is None:
        return None
    if any(i != s for k, (i, s) in enumerate(zip(idx.shape, data.shape)) if k != d):
        # an index narrower than the input along another dim reads that corner of it
        data = data[tuple(slice(None) if k == d else slice(0, i) for k, i in enumerate(idx.shape))]
    return kernels.gather(data, d, idx)


def _embed(small: Tensor, shape: tuple) -> Tensor:
    """Put ``small`` in the leading corner of a zero tensor of ``shape``."""
    if tuple(small.shape) == tuple(shape):
        return small
    key = tuple(slice(0, s) for s in small.shape)
    return index_put(zeros(shape, dtype=small.dtype, device=small.device), key, small)


def _scatter_target(xp, out, index, d: int):
    """Where scatter writes and the key addressing it; a 0-d ``out`` is written as one element
    of a 1-d view (its index may be 0-d or hold one element), as is a 0-d index of a 1-d one."""
    if out.ndim == 0:
        return out.reshape(1), (index.reshape(-1),)
    if index.ndim == 0:  # a 0-d index into a 1-d tensor names one element
        return out, (index.reshape(1),)
    return out, _along_dim_key(xp, index, d)


def _src_part(src: Tensor, index) -> Tensor:
    if src._data.shape == index._data.shape:
        return src
    if src._data.ndim == 0 or index._data.ndim == 0:
        return src.reshape(-1)[: builtins.max(index._data.size, 1)].reshape(index._data.shape)
    return getitem(src, tuple(slice(0, s) for s in index._data.shape))


class ScatterBackward0(Node):  # scatter with a tensor src
    def backward(self, g):
        self.unpack_saved()  # the index
        d, index = self.dim, self.index
        g_self = g.scatter(d, index, 0.0) if self._edges[0] is not None else None
        g_src = None
        if self._edges[1] is not None:
            g_src = _embed(g.gather(d, index), self.src_shape)
        return g_self, g_src


class ScatterBackward1(Node):  # scatter with a number
    def backward(self, g):
        self.unpack_saved()  # the index
        return g.scatter(self.dim, self.index, 0.0)


class ScatterAddBackward0(Node):
    def backward(self, g):
        self.unpack_saved()  # the index
        g_src = None
        if self._edges[1] is not None:
            g_src = _embed(g.gather(self.dim, self.index), self.src_shape)
        return g, g_src


def _scatter_checked(input: Tensor, dim: int, index: Tensor, src, reduce):
    """scatter's checks, in PyTorch's order: (dim, src), or None when nothing is written."""
    if index._data.__class__ is not input._data.__class__:
        check_same_device("scatter", input, index)
    d = wrap_dim(dim, builtins.max(input._data.ndim, 1), "scatter")
    if index._data.size == 0 and not isinstance(src, Tensor):  # torch checks nothing then
        return None
    _check_index_tensor("scatter", input, d, index, src)
    if index._data.size == 0:  # nothing is written (and nothing more is checked)
        return None
    if reduce is not None and reduce not in ("add", "multiply"):
        raise RuntimeError(f"reduce argument must be either add or multiply, got {reduce}")
    return d, src


def _scatter_write(out, d: int, index: Tensor, src, reduce) -> None:
    """scatter's writes into the array ``out``, in place."""
    xp = array_module(out)
    target, key = _scatter_target(xp, out, index._data, d)
    if isinstance(src, Tensor):
        src = _src_part(src, index)._data.astype(out.dtype, copy=False)
        if out.ndim == 0 and reduce is None:
            src = src.reshape(-1)
    if reduce == "add":
        xp.add.at(target, key, src)
    elif reduce == "multiply":
        xp.multiply.at(target, key, src)
    else:
        target[key] = src


def scatter(input: Tensor, dim: int, index: Tensor, src=None, *, value=None, reduce=None):
    src = value if src is None else src
    checked = _scatter_checked(input, dim, index, src, reduce)
    if checked is None:
        return input.clone()
    d, src = checked
    out = input._data.copy()
    _scatter_write(out, d, index, src, reduce)
    if not isinstance(src, Tensor):
        return result(ScatterBackward1, out, (input,), (index,), dim=d, index=index)
    if reduce is not None:
        return wrap(out)
    return result(
        ScatterBackward0, out, (input, src), (index,), dim=d, index=index, src_shape=src._data.shape
    )


def scatter_into(input: Tensor, dim: int, index: Tensor, src=None, *, value=None, reduce=None):
    """``input.scatter_(...)`` outside the graph, written where the index points (see
    :func:`writes_alone`); False where the copying path must run."""
    src = value if src is None else src
    if not writes_alone(input, index, src):
        return False
    checked = _scatter_checked(input, dim, index, src, reduce)
    if checked is not None:
        _scatter_write(input._data, checked[0], index, src, reduce)
    return True


_SUMMED_BY_KERNEL = "fdbhilqB"  # float32/64 and the integer dtypes torch has


def _along_dim_kernels(out, index, d: int, work: int | None = None, copied: bool = False):
    """ember._kernels.scatter_jit's scatter_add_ for a C-contiguous NumPy ``out`` (or one the
    caller ``copied`` first; 1-d or more, float or integer: it is written in place) whose
    int32/int64 ``index`` matches its shape but along ``d``, with enough elements (``work``,
    else the index's) to pay for it, when compiled kernels are on; else None (``add.at``)."""
    if (
        not (is_plain_numpy(out) and is_plain_numpy(index))
        or out.dtype.char not in _SUMMED_BY_KERNEL
    ):
        return None
    if out.ndim == 0 or index.ndim != out.ndim or not (copied or out.flags.c_contiguous):
        return None
    if index.dtype not in _INDEX_DTYPES:
        return None
    if any(i != o for k, (i, o) in enumerate(zip(index.shape, out.shape)) if k != d):
        return None
    return jit.module("scatter_jit", index.size if work is None else work)


def _scatter_add_write(input: Tensor, out, d: int, index: Tensor, src: Tensor, copied: bool):
    """scatter_add's checks (PyTorch's order) and its sums into the array ``out`` (a copy of
    input's, ``copied``, or its own memory); False when there was nothing to add."""
    idx = index._data
    kernels = None if idx.size == 0 else _along_dim_kernels(out, idx, d, copied=copied)
    # the kernel checks the bounds as it goes
    _check_index_tensor("scatter_add", input, d, index, src, bounds=kernels is None)
    if idx.size == 0:
        return False
    if copied:
        out = out.copy()  # C order
    part = _src_part(src, index)._data.astype(out.dtype, copy=False)
    if kernels is not None:
        if not kernels.scatter_add_(out, d, idx, part):
            _check_bounds(idx, out.shape[d], d)
    else:
        target, key = _scatter_target(array_module(out), out, idx, d)
        array_module(out).add.at(target, key, part)
    return out


def scatter_add(input: Tensor, dim: int, index: Tensor, src: Tensor) -> Tensor:
    d = wrap_dim(dim, builtins.max(input._data.ndim, 1), "scatter_add")
    out = _scatter_add_write(input, input._data, d, index, src, copied=True)
    if out is False:
        return input.clone()
    return result(
        ScatterAddBackward0,
        out,
        (input, src),
        (index,),
        dim=d,
        index=index,
        src_shape=src._data.shape,
    )


def scatter_add_into(input: Tensor, dim: int, index: Tensor, src: Tensor) -> bool:
    """``input.scatter_add_(...)`` outside the graph, summed into input's own memory where the
    index points (see :func:`writes_alone`); False where the copying path must run."""
    if not writes_alone(input, index, src):
        return False
    d = wrap_dim(dim, builtins.max(input._data.ndim, 1), "scatter_add")
    _scatter_add_write(input, input._data, d, index, src, copied=False)
    return True


def _out_of_range(idx, size: int):
    """The first index outside [0, size), or None (index_select and index_add never wrap)."""
    if idx.size == 0:
        return None
    lo, hi = int(idx.min()), int(idx.max())
    if lo >= 0 and hi < size:
        return None
    return hi if hi >= size else lo


class IndexSelectBackward0(Node):
    def backward(self, g):
        self.unpack_saved()  # the index
        out = zeros(self.shape, dtype=g.dtype, device=g.device)
        return out.index_add(self.dim, self.index, g)


def index_select(input: Tensor, dim: int, index: Tensor) -> Tensor:
    data, idx = input._data, index._data
    if idx.__class__ is not data.__class__:
        check_same_device("index_select", input, index)
    d = wrap_dim(dim, builtins.max(data.ndim, 1), "index_select")
    if idx.ndim > 1:
        raise IndexError("index_select(): Index is supposed to be a vector")
    if idx.dtype not in _INDEX_DTYPES:
        raise RuntimeError("index_select(): Expected dtype int32 or int64 for index")
    if data.ndim == 0 and idx.size != 1:
        raise RuntimeError(
            f"index_select(): Index to scalar can have only 1 value, got {idx.size} value(s)"
        )
    size = data.shape[d] if data.ndim else 1
    bad = _out_of_range(idx, size)
    if bad is not None:
        # PyTorch's kernels differ in how they say it: RuntimeError from its dim-1 kernel and
        # from the empty-tensor check, IndexError from the others
        if data.ndim > 1 and (data.size == 0 or d == 1):
            if size == 0:
                raise RuntimeError("index_select(): self indexing axis dim should be positive")
            raise RuntimeError(f"INDICES element is out of DATA bounds, id={bad} axis_dim={size}")
        raise IndexError(f"index out of range in self (index_select: index {bad}, size {size})")
    xp = array_module(data)
    out = xp.take(data, idx.reshape(-1), axis=d) if data.ndim else data.copy()
    return result(
        IndexSelectBackward0, out, (input,), (index,), shape=data.shape, dim=d, index=index
    )


class IndexAddBackward0(Node):
    def backward(self, g):
        self.unpack_saved()  # the index
        g_src = None
        if self._edges[1] is not None:
            g_src = g.index_select(self.dim, self.index)
            if self.alpha != 1:
                g_src = g_src * self.alpha
            g_src = g_src.reshape(self.src_shape)
        return g, g_src


def _index_add_checked(input: Tensor, dim: int, index: Tensor, source: Tensor, alpha):
    """index_add's checks: (dim, alpha in the tensor's type)."""
    if index._data.__class__ is not input._data.__class__:
        check_same_device("index_add", input, index)
    d = wrap_dim(dim, builtins.max(input._data.ndim, 1), "index_add")
    _check_index_add(input, d, index, source)
    alpha = _checked_scalar(alpha, input.dtype)
    if input.dtype.category <= dt.INT:  # alpha in the tensor's type: truncated, wrapped
        alpha = int(alpha.real if isinstance(alpha, complex) else alpha)
    return d, alpha


def index_add(input: Tensor, dim: int, index: Tensor, source: Tensor, *, alpha=1) -> Tensor:
    d, alpha = _index_add_checked(input, dim, index, source, alpha)
    out = input._data.copy()
    if out.size:
        _add_at_index(array_module(out), out, d, index._data, source._data, alpha)
    return result(
        IndexAddBackward0,
        out,
        (input, source),
        (index,),
        dim=d,
        index=index,
        alpha=alpha,
        src_shape=source._data.shape,
    )


def index_add_into(input: Tensor, dim: int, index: Tensor, source: Tensor, *, alpha=1) -> bool:
    """``input.index_add_(...)`` outside the graph, added into input's own memory at the
    indexed slices only (see :func:`writes_alone`); False where the copying path must run."""
    if not writes_alone(input, index, source):
        return False
    d, alpha = _index_add_checked(input, dim, index, source, alpha)
    data = input._data
    if data.size:
        _add_at_index(_HOST, data, d, index._data, source._data, alpha)
    return True


def _add_at_index(xp, out, d: int, index, source, alpha) -> None:
    """``out`` += ``alpha`` · ``source`` at ``index`` along dim ``d``, in place."""
    src = source if alpha == 1 else source * alpha
    src = src.astype(out.dtype, copy=False)
    kernels = jit.module("embedding_jit", src.size) if d == 0 and out.ndim else None
    if out.ndim == 0:
        xp.add.at(out.reshape(1), index.reshape(-1), src.reshape(-1))
    elif kernels is not None and kernels.index_axpy(index, 1.0, src, out):
        pass  # rows added in order by a compiled loop (np.add.at goes element by element)
    else:
        xp.add.at(out, (slice(None),) * d + (index.reshape(-1),), src)


def _check_index_add(input: Tensor, d: int, index: Tensor, source: Tensor) -> None:
    data, idx, src = input._data, index._data, source._data
    if idx.ndim > 1:
        raise IndexError(
            f"index_add_(): Index is supposed to be a vector, but got dim: {idx.ndim} with "
            f"type: {index.dtype.legacy_name} and size: {list(idx.shape)}"
        )
    if idx.dtype not in _INDEX_DTYPES:
        raise RuntimeError(
            f"index_add_(): Expected dtype int32/int64 for index but got: {index.dtype.legacy_name}"
        )
    if src.dtype != data.dtype:
        raise RuntimeError(
            f"index_add_(): self ({input.dtype.legacy_name}) and source "
            f"({source.dtype.legacy_name}) must have the same scalar type"
        )
    if src.ndim == 0 and idx.size != 1:
        raise IndexError(f"Dimension specified as {d} but tensor has no dimensions")
    if src.ndim and d >= src.ndim:
        raise RuntimeError(
            f"index_add_(): Indexing dim {d} is out of bounds of the source tensor with dim "
            f"{src.ndim}"
        )
    along = src.shape[d] if src.ndim else 1
    if idx.size != along:
        raise RuntimeError(
            f"index_add_(): Number of indices ({idx.size}) should be equal to "
            f"source.size(dim): ({along}), for dim: {d}"
        )
    rest_self = [s for k, s in enumerate(data.shape) if k != d]
    rest_src = [s for k, s in enumerate(src.shape) if k != d]
    if rest_self != rest_src or data.ndim != src.ndim:
        raise RuntimeError(
            "source tensor shape must match self tensor shape, excluding the specified "
            f"dimension. Got self.shape = {list(data.shape)} source.shape = {list(src.shape)}"
        )
    size = data.shape[d] if data.ndim else 1
    bad = _out_of_range(idx, size)
    if bad is None or (data.ndim > 1 and data.size == 0):  # PyTorch skips an empty self
        return
    # PyTorch adds int64 indices along its first or last dim through index_put (RuntimeError);
    # its other kernels say IndexError
    if data.ndim <= 1 or idx.dtype != dt.int64.np or 0 < d < data.ndim - 1:
        raise IndexError(f"index out of range in self (index_add: index {bad}, size {size})")
    raise RuntimeError(f"index {bad} is out of bounds for dimension {d} with size {size}")


# --------------------------------------------------------------------------------------------
# Masks
# --------------------------------------------------------------------------------------------
class MaskedFillBackward0(Node):
    def backward(self, g):
        self.unpack_saved()  # the mask, checked against in-place changes since forward
        mask = self.mask
        g_self = g.masked_fill(mask, 0.0) if self._edges[0] is not None else None
        g_value = None
        if len(self._edges) > 1 and self._edges[1] is not None:
            g_value = (g * mask).sum()
        return (g_self, g_value) if len(self._edges) > 1 else g_self


class MaskedFillBackward1(MaskedFillBackward0):  # a tensor value: inputs (self, value)
    pass


def _checked_fill_value(input: Tensor, value):
    if not isinstance(value, Tensor):
        return _checked_scalar(value, input.dtype)
    if value._data.ndim == 0:
        _checked_scalar(value.item(), input.dtype)
    return value


def masked_fill(input: Tensor, mask: Tensor, value) -> Tensor:
    node_cls = MaskedFillBackward1 if isinstance(value, Tensor) else MaskedFillBackward0
    value = _checked_fill_value(input, value)
    return _fill_where(input, mask, value, node_cls, (mask,))


def masked_fill_into(input: Tensor, mask: Tensor, value) -> bool:
    """``input.masked_fill_(mask, value)`` outside the graph, written where the mask is True
    only (see :func:`writes_alone`); False where the copying path must run."""
    if not writes_alone(input, mask, value):
        return False
    value = _checked_fill_value(input, value)
    mask, fill, shape = _fill_checked(input, mask, value)
    if shape != input._data.shape:
        return False  # the copying path says that self cannot take the broadcast shape
    _HOST.copyto(input._data, fill, where=mask._data)
    return True


# the C++ type names of torch's checked scalar conversion (c10::checked_convert)
_CHECKED_TYPE_NAMES = {
    "float32": "float", "float64": "double", "float16": "c10::Half",
    "bfloat16": "c10::BFloat16", "int64": "int64_t", "int32": "int", "int16": "int16_t",
    "int8": "int8_t", "uint8": "uint8_t", "uint16": "uint16_t", "uint32": "uint32_t",
    "uint64": "uint64_t",
}  # fmt: skip


def _checked_scalar(value, dtype: dt.dtype):
    """A Python number as torch converts it to ``dtype``: what would overflow (an imaginary
    part into a real type, a number beyond the type's range) raises; a negative int wraps
    into an unsigned type."""
    name = _CHECKED_TYPE_NAMES.get(dtype.name)
    if name is None:  # bool and complex types take any number
        return value
    overflow = RuntimeError(f"value cannot be converted to type {name} without overflow")
    if isinstance(value, complex):
        if value.imag:
            raise overflow
        value = value.real
    if dtype.category == dt.FLOAT:
        if math.isfinite(value) and builtins.abs(value) > float(finfo(dtype).max):
            raise overflow
        return value
    info = iinfo(dtype)
    low = -info.max if info.min == 0 else info.min  # unsigned: negatives wrap
    if not low <= value <= info.max:
        raise overflow
    if isinstance(value, int) and value < 0 and info.min == 0:
        return value + info.max + 1
    return value


def _fill_checked(input: Tensor, mask: Tensor, value):
    """masked_fill's checks: (the mask on input's device, the fill value as an array of
    input's dtype, the broadcast shape of input and mask)."""
    if mask._data.__class__ is not input._data.__class__:
        if mask._data.ndim:
            check_same_device("masked_fill", input, mask)
        mask = mask.to(input.device)  # a 0-d CPU mask joins as a scalar would, as torch
    if mask._data.dtype.kind != "b":
        raise RuntimeError(
            f"masked_fill_ only supports boolean masks, but got mask with dtype {mask.dtype.name}"
        )
    xp = array_module(input._data)
    try:
        shape = xp.broadcast_shapes(input._data.shape, mask._data.shape)
    except ValueError:
        raise RuntimeError(
            f"The size of tensor a ({input._data.shape}) must match the size of tensor b "
            f"({mask._data.shape})"
        ) from None
    if isinstance(value, Tensor):
        if value._data.ndim != 0:
            raise RuntimeError(
                "masked_fill_ only supports a 0-dimensional value tensor, but got tensor with "
                f"{value._data.ndim} dimension(s)."
            )
        return mask, value._data.astype(input._data.dtype), shape
    return mask, xp.asarray(value, dtype=input._data.dtype), shape


def _fill_where(input: Tensor, mask: Tensor, value, node_cls, saved: tuple) -> Tensor:
    """masked_fill recorded as ``node_cls`` saving ``saved`` (the mask, or index_fill's index)."""
    mask, fill, shape = _fill_checked(input, mask, value)
    # select: NumPy's where branches per element, and a random mask mispredicts
    out = _backend.select(mask._data, fill, input._data)
    if isinstance(value, Tensor):
        return result(node_cls, out, (input, value), saved, mask=mask)
    if out.shape != shape:
        out = array_module(out).broadcast_to(out, shape).copy()
    return result(node_cls, out, (input,), saved, mask=mask)


class IndexFillBackward0(MaskedFillBackward0):
    """index_fill as a masked_fill; the index is saved (the mask is built from it)."""


def _index_fill_mask(input: Tensor, dim: int, index: Tensor) -> Tensor:
    d = wrap_dim(dim, builtins.max(input._data.ndim, 1), "index_fill")
    mask = zeros(input._data.shape, dtype=dt.bool_, device=input.device)
    if input._data.ndim == 0:  # torch treats a 0-d input as one of shape (1,)
        mask._data[...] = index._data.size > 0
    else:
        mask._data[(slice(None),) * d + (index._data.reshape(-1),)] = True
    return mask


def index_fill(input: Tensor, dim: int, index: Tensor, value) -> Tensor:
    mask = _index_fill_mask(input, dim, index)
    return _fill_where(input, mask, value, IndexFillBackward0, (index,))


def index_fill_into(input: Tensor, dim: int, index: Tensor, value) -> bool:
    """``input.index_fill_(...)`` outside the graph, written at the indexed slices only (see
    :func:`writes_alone`); False where the copying path must run."""
    if not writes_alone(input, index, value):
        return False
    return masked_fill_into(input, _index_fill_mask(input, dim, index), value)


def masked_select(input: Tensor, mask: Tensor) -> Tensor:
    shape = broadcast_shapes(input.shape, mask.shape)
    return getitem(input.expand(shape), mask.expand(shape))


class MaskedScatterBackward0(Node):
    def backward(self, g):
        self.unpack_saved()  # the mask
        mask = self.mask
        g_self = g.masked_fill(mask, 0.0)
        g_src = None
        if self._edges[1] is not None:
            picked = getitem(g, mask.expand(g.shape))
            flat = _embed(picked, (self.src_numel,))
            g_src = flat.reshape(self.src_shape)
        return g_self, g_src


def masked_scatter(input: Tensor, mask: Tensor, source: Tensor) -> Tensor:
    if mask._data.dtype.kind != "b":
        raise RuntimeError(
            "masked_scatter_ only supports boolean masks, but got mask with dtype "
            f"{mask.dtype.legacy_name}"
        )
    xp = array_module(input._data)
    shape = broadcast_shapes(input._data.shape, mask._data.shape)  # input and mask broadcast
    if tuple(shape) != input._data.shape:
        input = input.expand(shape)
    m = xp.broadcast_to(mask._data, shape)
    n = int(m.sum())
    if n > source._data.size:
        raise RuntimeError(
            "masked_scatter: expected source to have at least as many elements as ones in mask"
        )
    out = input._data.copy()
    out[m] = source._data.reshape(-1)[:n]
    return result(
        MaskedScatterBackward0,
        out,
        (input, source),
        (mask,),
        mask=mask,
        src_numel=source._data.size,
        src_shape=source._data.shape,
    )


def take_along_dim(input: Tensor, indices: Tensor, dim=None) -> Tensor:
    if dim is None:
        return gather(input.reshape(-1), 0, indices.reshape(-1))
    if indices._data.ndim != input._data.ndim:
        raise RuntimeError(
            "torch.take_along_dim(): input and indices should have the same number of "
            f"dimensions, but got {input._data.ndim} dimensions for input, and "
            f"{indices._data.ndim} dimensions for indices"
        )
    if indices._data.dtype != dt.int64.np:
        raise RuntimeError(
            "torch.take_along_dim(): dtype of indices should be Long but got "
            f"{indices.dtype.legacy_name}"
        )
    if input._data.ndim == 0:
        raise IndexError(f"Dimension specified as {dim} but tensor has no dimensions")
    d = wrap_dim(dim, input._data.ndim, "take_along_dim")
    a_shape, i_shape = list(input.shape), list(indices.shape)
    a_shape[d], i_shape[d] = 1, 1
    common = list(broadcast_shapes(a_shape, i_shape))
    a_target, i_target = list(common), list(common)
    a_target[d], i_target[d] = input.shape[d], indices.shape[d]
    # negative indices count from the end here; the wrapped copy is what gather saves (as in
    # torch, a later in-place change of ``indices`` does not reach the backward)
    idx = indices._data
    indices = wrap(array_module(idx).where(idx < 0, idx + input.shape[d], idx))
    return gather(input.expand(a_target), d, indices.expand(i_target))


def take(input: Tensor, index: Tensor) -> Tensor:
    idx = index._data
    if idx.dtype != dt.int64.np:
        raise RuntimeError(
            f"take(): Expected a long tensor for index, but got {index.dtype.legacy_name}"
        )
    n = input._data.size
    if idx.size and n == 0:
        raise IndexError("take(): tried to take from an empty tensor")
    if idx.size and (int(idx.min()) < -n or int(idx.max()) >= n):
        bad = int(idx.max()) if int(idx.max()) >= n else int(idx.min())
        raise IndexError(f"out of range: tried to access index {bad} on a tensor of {n} elements.")
    return getitem(input.reshape(-1), index)


# --------------------------------------------------------------------------------------------
# Sorting and selection: indices come from the kernel, values through gather (so the gradient
# is gather's: the value's gradient goes back to the position it came from).
# --------------------------------------------------------------------------------------------
def argsort(input: Tensor, dim: int = -1, descending: bool = False, stable: bool = False):
    data = input._data
    xp = array_module(data)
    d = wrap_dim(dim, builtins.max(data.ndim, 1), "argsort")
    if data.ndim == 0:
        return wrap(xp.zeros((), dtype=dt.int64.np))
    if descending:
        # negate the key so that equal elements keep their order (stable descending)
        floating = data.dtype.kind not in "iub"  # kind "V": ml_dtypes' bfloat16 is floating too
        key = (
            -data
            if floating
            else (~data if data.dtype.kind == "b" else -(data.astype(dt.int64.np)))
        )
        if floating:
            key = xp.where(xp.isnan(data), -xp.inf, key)
        idx = xp.argsort(key, axis=d, kind="stable")
    else:
        idx = xp.argsort(data, axis=d, kind="stable")
    return wrap(idx.astype(dt.int64.np, copy=False))


def sort(input: Tensor, dim: int = -1, descending: bool = False, stable: bool = False):
    indices = argsort(input, dim, descending, stable)
    if input._data.ndim == 0:
        return sort_result(input.clone(), indices)
    return sort_result(gathered(input, dim, indices, SortBackward0), indices)


def msort(input: Tensor) -> Tensor:
    return sort(input, 0).values


def topk(input: Tensor, k: int, dim: int = -1, largest: bool = True, sorted: bool = True):
    data = input._data
    d = wrap_dim(dim, builtins.max(data.ndim, 1), "topk")
    if data.dtype.kind == "b":
        raise RuntimeError("topk does not support bool dtypes on CPU")
    size = data.shape[d] if data.ndim else 1
    if not 0 <= k <= size:
        raise RuntimeError("selected index k out of range")
    if data.ndim and 0 < k and 4 * k <= size:  # a few of many: select, then sort only those
        found = _compiled_topk(data, d, k, largest)
        if found is not None:
            values, indices = found[0], wrap(found[1])
            out = result(
                TopkBackward0, values, (input,), (indices,), shape=data.shape, dim=d, index=indices
            )
            return topk_result(out, indices)
        picked = _top_positions(data, d, k, largest)
        if picked is not None:
            indices = wrap(picked)
            return topk_result(gathered(input, d, indices, TopkBackward0), indices)
    indices = argsort(input, d, descending=largest)
    if data.ndim == 0:
        return topk_result(input.clone(), indices)
    indices = narrow_indices(indices, d, k)
    return topk_result(gathered(input, d, indices, TopkBackward0), indices)


_TOPK_KERNEL_MAX_K = 64  # a line costs up to k moves an element: past this, partitioning wins


def _compiled_topk(data, d: int, k: int, largest: bool):
    """(values, indices) from ember._kernels.topk_jit for a float32/64 or integer NumPy array
    and a small k, or None (no kernel, or a NaN: argsort orders those)."""
    if k > _TOPK_KERNEL_MAX_K or not is_plain_numpy(data) or data.dtype.char not in "fdbhilqB":
        return None
    kernels = jit.module("topk_jit", data.size)
    return None if kernels is None else kernels.topk(data, d, k, largest)


def _top_positions(data, d: int, k: int, largest: bool):
    """argsort's first k positions along ``d`` (stable: among equal values the lower index
    first, and the lower indices picked at the boundary) without sorting the whole axis: the
    k-th key by partition, the keys before it and as many of the equal ones as fit, in index
    order, then a stable sort of those k. None with a NaN (argsort orders those)."""
    xp = array_module(data)
    floating = data.dtype.kind not in "iub"  # kind "V": ml_dtypes' bfloat16 is floating too
    if floating and bool(xp.isnan(data).any()):
        return None
    moved = xp.moveaxis(data, d, -1)
    rows = moved.reshape(-1, moved.shape[-1])
    key = rows if not largest else (-rows if floating else -(rows.astype("int64")))
    positions = xp.argpartition(key, k - 1, axis=-1)[:, :k]
    kth = xp.take_along_axis(key, positions[:, k - 1 :], axis=-1)
    taken = (xp.take_along_axis(key, positions, axis=-1) == kth).sum(axis=-1)
    if bool(((key == kth).sum(axis=-1) == taken).all()):
        positions = xp.sort(positions, axis=-1)  # every key equal to the k-th one is taken
    else:  # ties across the boundary: the lowest positions among the equal keys
        before = key < kth
        room = k - before.sum(axis=-1, keepdims=True)
        equal = key == kth
        chosen = before | (equal & (xp.cumsum(equal, axis=-1) <= room))
        positions = xp.nonzero(chosen)[1].reshape(rows.shape[0], k)
    order = xp.argsort(xp.take_along_axis(key, positions, axis=-1), axis=-1, kind="stable")
    picked = xp.take_along_axis(positions, order, axis=-1).astype("int64", copy=False)
    return xp.moveaxis(picked.reshape(moved.shape[:-1] + (k,)), -1, d)


def narrow_indices(indices: Tensor, d: int, k: int) -> Tensor:
    key = (slice(None),) * d + (slice(0, k),)
    return wrap(indices._data[key].copy())


def kthvalue(input: Tensor, k: int, dim: int = -1, keepdim: bool = False):
    data = input._data
    d = wrap_dim(dim, builtins.max(data.ndim, 1), "kthvalue")
    if data.ndim and data.shape[d] == 0:
        raise IndexError(f"kthvalue(): Expected reduction dim {d} to have non-zero size.")
    if data.dtype.kind == "b" and data.ndim:
        raise NotImplementedError("\"kthvalue_cpu\" not implemented for 'Bool'")
    if not 1 <= k <= (data.shape[d] if data.ndim else 1):
        raise RuntimeError(f"kthvalue(): selected number k out of range for dimension {d}")
    if data.ndim == 0:
        return return_types.kthvalue(
            input.clone(), wrap(array_module(data).zeros((), dtype=dt.int64.np))
        )
    indices = argsort(input, d)
    idx = wrap(indices._data[(slice(None),) * d + (slice(k - 1, k),)].copy())
    values = gather(input, d, idx)
    if not keepdim:
        values, idx = values.squeeze(d), idx.squeeze(d)
    return return_types.kthvalue(values, idx)


def nonzero(input: Tensor, *, as_tuple: bool = False):
    xp = array_module(input._data)
    data = input._data
    if data.ndim == 0:
        data = data.reshape(1)
        found = xp.nonzero(data)
        if as_tuple:
            return (wrap(found[0].astype(dt.int64.np)),)
        return wrap(xp.zeros((int(found[0].size), 0), dtype=dt.int64.np))
    found = xp.nonzero(data)
    if as_tuple:
        return tuple(wrap(f.astype(dt.int64.np)) for f in found)
    return wrap(xp.stack(found, axis=1).astype(dt.int64.np) if found else xp.zeros((0, 0)))


def argwhere(input: Tensor) -> Tensor:
    return nonzero(input)


def _unique_rows(rows, consecutive: bool):
    """Distinct rows of a 2-D array: (first-row positions in order, inverse, counts).

    NaN is unequal to itself, so each NaN row stands alone as in torch (np.unique merges them).
    Unless ``consecutive``, rows are sorted lexicographically first (NaN last, as torch)."""
    xp = array_module(rows)
    n = rows.shape[0]
    if consecutive or n == 0:
        order = xp.arange(n)
    elif rows.shape[1] == 1:
        order = xp.argsort(rows[:, 0], kind="stable")
    else:
        order = xp.lexsort(rows.T[::-1])
    ordered = rows[order]
    starts = xp.ones(n, dtype=bool)
    if n > 1:
        starts[1:] = (ordered[1:] != ordered[:-1]).any(axis=1)
    group = xp.cumsum(starts) - 1
    inverse = xp.empty(n, dtype=dt.int64.np)
    inverse[order] = group
    first = xp.nonzero(starts)[0]
    counts = xp.diff(xp.concatenate([first, xp.asarray([n])])).astype(dt.int64.np)
    return order[first], inverse, counts


def _unique_along(input: Tensor, return_inverse, return_counts, dim, consecutive, op):
    data = input._data
    xp = array_module(data)
    if dim is None:
        taken, inverse, counts = _unique_rows(data.reshape(-1, 1), consecutive)
        values = data.reshape(-1)[taken]
        inverse = inverse.reshape(data.shape)
    else:
        if data.ndim == 0:
            raise IndexError(f"Dimension specified as {dim} but tensor has no dimensions")
        d = wrap_dim(dim, data.ndim, op)
        moved = xp.moveaxis(data, d, 0)
        if moved.size == 0 and moved.shape[0] != 0:
            raise RuntimeError(
                "There are 0 sized dimensions, and they aren't selected, so unique cannot be "
                "applied"
            )
        rows = moved.reshape(moved.shape[0], moved.size // builtins.max(moved.shape[0], 1))
        taken, inverse, counts = _unique_rows(rows, consecutive)
        values = xp.take(data, taken, axis=d)
    out = [wrap(values)]
    if return_inverse:
        out.append(wrap(inverse))
    if return_counts:
        out.append(wrap(counts))
    return out[0] if len(out) == 1 else tuple(out)


def unique(
    input: Tensor,
    sorted: bool = True,
    return_inverse: bool = False,
    return_counts: bool = False,
    dim=None,
):
    return _unique_along(input, return_inverse, return_counts, dim, False, "unique")


def unique_consecutive(input: Tensor, return_inverse=False, return_counts=False, dim=None):
    return _unique_along(input, return_inverse, return_counts, dim, True, "unique_consecutive")


# --------------------------------------------------------------------------------------------
# Padding
# --------------------------------------------------------------------------------------------
class ConstantPadNdBackward0(Node):
    def backward(self, g):
        return pad(g, [-p for p in self.pad])  # cropping undoes padding


def _pad_pairs(pad, ndim: int, op: str):
    pad = [int(p) for p in pad]
    if len(pad) % 2 or len(pad) // 2 > ndim:
        raise RuntimeError(
            f"Padding length should be less than or equal to two times the input dimension but "
            f"got padding length {len(pad)} and input of dimension {ndim}"
        )
    return [(ndim - 1 - i, pad[2 * i], pad[2 * i + 1]) for i in range(len(pad) // 2)]


def pad(input: Tensor, pad, mode: str = "constant", value=None) -> Tensor:
    """``ember.nn.functional.pad``: pad (or crop, with negative amounts) the last dims."""
    data = input._data
    pairs = _pad_pairs(pad, data.ndim, "pad")
    if mode == "constant":
        xp = array_module(data)
        crop = [slice(None)] * data.ndim
        for d, lo, hi in pairs:
            crop[d] = slice(builtins.max(-lo, 0), data.shape[d] - builtins.max(-hi, 0))
        cropped = data[tuple(crop)]
        shape = list(cropped.shape)
        place = [slice(None)] * data.ndim
        for d, lo, hi in pairs:
            lo_p, hi_p = builtins.max(lo, 0), builtins.max(hi, 0)
            shape[d] += lo_p + hi_p
            place[d] = slice(lo_p, lo_p + cropped.shape[d])
        if builtins.min(shape, default=1) < 0:
            raise RuntimeError(f"The input size {list(data.shape)} is too small for padding")
        out = xp.full(shape, 0 if value is None else value, dtype=data.dtype)
        out[tuple(place)] = cropped
        return result(ConstantPadNdBackward0, out, (input,), pad=list(pad))
    if mode not in ("reflect", "replicate", "circular"):
        raise NotImplementedError(
            f"padding mode '{mode}' is not one of constant, reflect, replicate, circular"
        )
    k = len(pairs)
    if not 1 <= k <= 3 or data.ndim not in (k + 1, k + 2):
        raise NotImplementedError(
            f"Padding size {2 * k} is not supported for {data.ndim}D input tensor.\n"
            "Supported combinations for non-constant padding:\n"
            "  - 2D or 3D input: padding size = 2 (pads last dimension)\n"
            "  - 3D or 4D input: padding size = 4 (pads last 2 dimensions)\n"
            "  - 4D or 5D input: padding size = 6 (pads last 3 dimensions)"
        )
    for d, lo, hi in pairs:
        n = data.shape[d]
        if mode == "reflect" and (lo >= n or hi >= n):
            raise RuntimeError(
                f"Argument #4: Padding size should be less than the corresponding input "
                f"dimension, but got: padding ({lo}, {hi}) at dimension {d} of input "
                f"{list(data.shape)}"
            )
        if mode == "circular" and (lo > n or hi > n):
            raise RuntimeError("Padding value causes wrapping around more than once.")
        if mode == "circular" and n + lo + hi < 0:
            raise RuntimeError("Negative padding value is resulting in an empty dimension")
    if builtins.min(builtins.min(lo, hi) for _, lo, hi in pairs) >= 0:
        return pad_by_mode(input, pairs, mode)
    out = input  # cropping too: the positions each output takes
    xp = array_module(data)
    for d, lo, hi in pairs:
        n = data.shape[d]
        positions = xp.arange(-lo, n + hi)
        if mode == "reflect":
            period = 2 * (n - 1) if n > 1 else 1
            positions = xp.abs(positions) % period
            positions = xp.where(positions >= n, period - positions, positions)
        elif mode == "replicate":
            positions = xp.clip(positions, 0, n - 1)
        else:  # circular: crop first, then wrap around what the crop kept (as torch)
            first, last = builtins.max(-lo, 0), n - builtins.max(-hi, 0)
            positions = first + (positions - first) % builtins.max(last - first, 1)
        out = index_select(out, d, wrap(positions.astype(dt.int64.np)))
    return out


def _constant_pad_jvp(node, tangents):  # the padding value is a constant: its tangent is 0
    return pad(tangents[0], list(node.pad))


forward_rules.RULES["ConstantPadNdBackward0"] = _constant_pad_jvp
