"""Shape ops: views (sharing memory and version counter) and copies, with their derivatives.

A view records its base tensor and the steps that rebuild it from the base, so that an in-place
op on the view can rewrite the base's graph (PyTorch's CopySlices).
"""

from __future__ import annotations

import builtins

from .. import _backend
from .. import _dtype as dt
from .._creation import zeros
from .._tensor import Size, Tensor
from ..autograd import _watch, forward_rules
from ..autograd.node import TENSOR_LAYER, Node, torch_int
from ._dispatch import (
    NUMPY_ARRAY,
    array_module,
    check_same_device,
    grad_state,
    no_grad_result,
    non_differentiable,
    record,
    result,
    watch,
    wrap,
    wrap_dim,
)
from ._linalg_common import MultiOutputNode, record_outputs


def make_view(out: Tensor, src: Tensor, step) -> Tensor:
    """Mark ``out`` as a view of ``src``; ``step`` = (function, args) rebuilds it from ``src``."""
    base = src._base
    if base is None:
        out._base = src
        out._view_fn = (step,)
    else:
        out._base = base
        out._view_fn = src._view_fn + (step,)
    out._vc = src._vc
    out._view_version = src._vc[0]
    if watch.on:
        _watch.view_made(out)
    return out


def _view_result(node_cls, data, src: Tensor, step, **attrs) -> Tensor:
    out = result(node_cls, data, (src,), **attrs)
    xp = array_module(data)
    if data.size == 0 or data.base is not None and xp.may_share_memory(data, src._data):
        make_view(out, src, step)
    return out


def _shape_arg(shape) -> tuple:
    if len(shape) == 1 and isinstance(shape[0], (tuple, list)):
        shape = shape[0]
    return tuple(int(s) for s in shape)


def _infer_shape(shape: tuple, numel: int, op: str, src_shape) -> tuple:
    if -1 in shape:
        if shape.count(-1) > 1:
            raise RuntimeError("only one dimension can be inferred")
        known = 1
        for s in shape:
            if s != -1:
                known *= s
        if known == 0 and numel == 0:
            raise RuntimeError(
                f"cannot reshape tensor of 0 elements into shape {list(shape)} because the "
                "unspecified dimension size -1 can be any value and is ambiguous"
            )
        if known == 0 or numel % known:
            raise RuntimeError(f"shape '{list(shape)}' is invalid for input of size {numel}")
        shape = tuple(numel // known if s == -1 else s for s in shape)
    total = 1
    for s in shape:
        if s < 0:
            raise RuntimeError(f"invalid shape dimension {s}")
        total *= s
    if total != numel:
        raise RuntimeError(f"shape '{list(shape)}' is invalid for input of size {numel}")
    return shape


class ViewBackward0(Node):
    torch_saved = {"self_sym_sizes": "shape"}

    def backward(self, g):
        if not grad_state.enabled:  # no graph wanted: the array's reshape, without dispatch
            return wrap(g._data.reshape(self.shape))
        return g.reshape(self.shape)


class ReshapeAliasBackward0(ViewBackward0):  # reshape of a non-contiguous tensor, as a view
    torch_saved = {"self_sym_sizes": "shape"}


class UnsafeViewBackward0(ViewBackward0):  # reshape of a copy (torch's clone + _unsafe_view)
    torch_saved = {"self_sym_sizes": "shape"}


class UnsqueezeBackward0(ViewBackward0):
    torch_saved = {"dim": "dim"}


class SqueezeBackward0(ViewBackward0):  # squeeze(); 1: squeeze(dim), 2: squeeze(dims)
    torch_saved = {"self_sym_sizes": "shape"}


class SqueezeBackward1(ViewBackward0):
    torch_saved = {"dim": "dim", "self_sym_sizes": "shape"}


class SqueezeBackward2(ViewBackward0):
    torch_saved = {"dim": "dim", "self_sym_sizes": "shape"}


def reshape(input: Tensor, *shape) -> Tensor:
    data = input._data
    shape = _infer_shape(_shape_arg(shape), data.size, "reshape", data.shape)
    if data.flags.c_contiguous:
        return _reshaped_view(ViewBackward0, input, shape, (reshape, (shape,)))
    out = data.reshape(shape)
    if data.size == 0 or array_module(data).may_share_memory(out, data):
        return _view_result(
            ReshapeAliasBackward0, out, input, (reshape, (shape,)), shape=data.shape
        )
    # no view exists: torch copies (CloneBackward0) and views the copy (UnsafeViewBackward0)
    copy = clone(input)
    return result(UnsafeViewBackward0, copy._data.reshape(shape), (copy,), shape=data.shape)


def _reshaped_view(node_cls, input: Tensor, shape: tuple, step, **attrs) -> Tensor:
    """``input`` (contiguous, or a squeeze/unsqueeze of it) as a view of another shape."""
    data = input._data
    out = data.reshape(shape)
    return _view_result(node_cls, out, input, step, shape=data.shape, **attrs)


def view(input: Tensor, *shape) -> Tensor:
    if len(shape) == 1 and (isinstance(shape[0], dt.dtype) or shape[0] in (float, int, bool)):
        return view_dtype(input, shape[0])
    data = input._data
    shape = _infer_shape(_shape_arg(shape), data.size, "view", data.shape)
    out = data.reshape(shape)
    xp = array_module(data)
    if data.size and not xp.may_share_memory(out, data):  # reshape had to copy: no view exists
        raise RuntimeError(
            "view size is not compatible with input tensor's size and stride (at least one "
            "dimension spans across two contiguous subspaces). Use .reshape(...) instead."
        ) from None
    node = result(ViewBackward0, out, (input,), shape=data.shape)
    return make_view(node, input, (view, (shape,)))


def view_dtype(input: Tensor, dtype) -> Tensor:
    d = dt.to_dtype(dtype)
    if d.itemsize != input._data.itemsize:
        raise RuntimeError("view(dtype): only dtypes of the same element size are supported")
    return make_view(wrap(input._data.view(d.np)), input, (view_dtype, (d,)))


def view_as(input: Tensor, other: Tensor) -> Tensor:
    return view(input, other._data.shape)


def reshape_as(input: Tensor, other: Tensor) -> Tensor:
    return reshape(input, other._data.shape)


class AliasBackward0(Node):
    torch_saved = {}

    def backward(self, g):
        return g


def _alias(input: Tensor) -> Tensor:
    """A new tensor object over the same data (a view of the whole tensor)."""
    out = result(AliasBackward0, input._data.view(), (input,))
    return make_view(out, input, (_alias, ()))


def flatten(input: Tensor, start_dim: int = 0, end_dim: int = -1) -> Tensor:
    shape = input._data.shape
    if not shape:
        wrap_dim(start_dim, 1, "flatten")
        wrap_dim(end_dim, 1, "flatten")
        return reshape(input, (1,))
    s = wrap_dim(start_dim, len(shape), "flatten")
    e = wrap_dim(end_dim, len(shape), "flatten")
    if s > e:
        raise RuntimeError("flatten() has invalid args: start_dim cannot come after end_dim")
    if s == e:  # nothing to merge: torch returns the input itself
        return input
    n = 1
    for d in shape[s : e + 1]:
        n *= d
    return reshape(input, shape[:s] + (n,) + shape[e + 1 :])


def unflatten(input: Tensor, dim: int, sizes) -> Tensor:
    shape = input._data.shape
    d = wrap_dim(dim, len(shape), "unflatten")
    sizes = _infer_shape(tuple(sizes), shape[d], "unflatten", shape)
    return reshape(input, shape[:d] + sizes + shape[d + 1 :])


def squeeze(input: Tensor, dim=None) -> Tensor:
    shape = input._data.shape
    if dim is None:
        new = tuple(s for s in shape if s != 1)
    else:
        dims = (dim,) if isinstance(dim, int) else tuple(dim)
        dims = _distinct_dims([wrap_dim(d, len(shape), "squeeze") for d in dims])
        new = tuple(s for i, s in enumerate(shape) if not (i in dims and s == 1))
    node_cls = (
        SqueezeBackward0
        if dim is None
        else SqueezeBackward1
        if isinstance(dim, int)
        else SqueezeBackward2
    )
    saved_dim = None if dim is None else torch_int(dim)
    return _reshaped_view(node_cls, input, new, (squeeze, (dim,)), dim=saved_dim)


def _distinct_dims(dims: list) -> set:
    seen = set()
    for d in dims:
        if d in seen:
            raise RuntimeError(f"dim {d} appears multiple times in the list of dims")
        seen.add(d)
    return seen


def unsqueeze(input: Tensor, dim: int) -> Tensor:
    shape = input._data.shape
    d = wrap_dim(dim, len(shape) + 1, "unsqueeze")
    return _reshaped_view(
        UnsqueezeBackward0,
        input,
        shape[:d] + (1,) + shape[d:],
        (unsqueeze, (d,)),
        dim=torch_int(dim),
    )


class PermuteBackward0(Node):
    torch_saved = {"dims": "dims"}

    def backward(self, g):
        inverse = [0] * len(self.dims)
        for i, d in enumerate(self.dims):
            inverse[d] = i
        if not grad_state.enabled:  # no graph wanted: the view of the array is enough
            return wrap(g._data.transpose(inverse))
        return g.permute(inverse)


class TransposeBackward0(Node):
    torch_saved = {"dim0": "dim0", "dim1": "dim1"}

    def backward(self, g):
        if not grad_state.enabled:  # no graph wanted: the view of the array is enough
            if g._data.ndim == 0:  # a scalar's t(): nothing moves
                return g
            return wrap(g._data.swapaxes(self.dim0, self.dim1))
        return g.transpose(self.dim0, self.dim1)


def permute(input: Tensor, *dims) -> Tensor:
    data = input._data
    if not dims:
        raise TypeError('permute() missing 1 required positional arguments: "dims"')
    dims = _shape_arg(dims)
    if len(dims) != data.ndim:
        raise RuntimeError(
            f"permute(sparse_coo): number of dimensions in the tensor input does not match "
            f"the length of the desired ordering of dimensions i.e. input.dim() = {data.ndim} "
            f"is not equal to len(dims) = {len(dims)}"
        )
    dims = tuple(wrap_dim(d, data.ndim, "permute") for d in dims)
    if len(set(dims)) != len(dims):
        raise RuntimeError("permute(): duplicate dims are not allowed.")
    out = data.transpose(dims)
    node = result(PermuteBackward0, out, (input,), dims=dims)
    return make_view(node, input, (permute, dims))


def transpose(input: Tensor, dim0: int, dim1: int) -> Tensor:
    data = input._data
    n = data.ndim
    d0, d1 = wrap_dim(dim0, n, "transpose"), wrap_dim(dim1, n, "transpose")
    if n == 0:  # dims 0 and -1 of a scalar: nothing moves
        return _alias(input)
    axes = list(range(n))
    axes[d0], axes[d1] = axes[d1], axes[d0]
    out = data.transpose(axes)
    node = result(TransposeBackward0, out, (input,), dim0=d0, dim1=d1)
    return make_view(node, input, (transpose, (d0, d1)))


swapaxes = swapdims = transpose


class TBackward0(TransposeBackward0):
    torch_saved = {}
    dim0, dim1 = 0, 1  # a matrix's; a vector's t() sets dim1 = 0


def t(input: Tensor) -> Tensor:
    if input._data.ndim > 2:
        raise RuntimeError(
            f"t() expects a tensor with <= 2 dimensions, but self is {input._data.ndim}D"
        )
    if input._data.ndim < 2:  # torch still records the (identity) transpose
        node = result(TBackward0, input._data.view(), (input,), dim0=0, dim1=0)
        return make_view(node, input, (t, ()))
    node = result(TBackward0, input._data.T, (input,))
    return make_view(node, input, (t, ()))


def movedim(input: Tensor, source, destination) -> Tensor:
    n = input._data.ndim
    src = (source,) if isinstance(source, int) else tuple(source)
    dst = (destination,) if isinstance(destination, int) else tuple(destination)
    if len(src) != len(dst):
        raise RuntimeError(
            f"movedim: Invalid source or destination dims: source ({list(src)} dims) should "
            f"contain the same number of dims as destination ({list(dst)} dims)"
        )
    wrapped_src = [wrap_dim(d, n, "movedim") for d in src]
    wrapped_dst = [wrap_dim(d, n, "movedim") for d in dst]
    for name, given, wrapped in (("source", src, wrapped_src), ("destination", dst, wrapped_dst)):
        if len(set(wrapped)) != len(wrapped):
            raise RuntimeError(f"movedim: repeated dim in `{name}` ({list(given)})")
    src, dst = wrapped_src, wrapped_dst
    if n == 0:
        return _alias(input)
    order = [d for d in range(n) if d not in src]
    for position, d in sorted(zip(dst, src)):
        order.insert(position, d)
    return permute(input, order)


moveaxis = movedim


def matrix_transpose(input: Tensor) -> Tensor:
    if input._data.ndim < 2:
        raise RuntimeError(
            "tensor.mT is only supported on matrices or batches of matrices. "
            f"Got {input._data.ndim}-D tensor."
        )
    return transpose(input, -2, -1)


def full_transpose(input: Tensor) -> Tensor:
    n = input._data.ndim
    return permute(input, tuple(range(n - 1, -1, -1))) if n > 1 else _alias(input)


class ExpandBackward0(Node):
    torch_saved = {"self_sym_sizes": "shape"}

    def backward(self, g):
        return g.sum_to_size(self.shape)


def expand(input: Tensor, *sizes) -> Tensor:
    data = input._data
    sizes = _shape_arg(sizes)
    if len(sizes) < data.ndim:
        raise RuntimeError(
            f"expand: the number of sizes provided ({len(sizes)}) must be greater or equal to "
            f"the number of dimensions in the tensor ({data.ndim})"
        )
    lead = len(sizes) - data.ndim
    target = []
    for i, s in enumerate(sizes):
        if i < lead:
            if s < 0:
                raise RuntimeError(
                    f"expand: the expanded size of the tensor ({s}) isn't allowed in a "
                    f"leading, non-existing dimension {i}"
                )
            target.append(s)
            continue
        have = data.shape[i - lead]
        if s == -1:
            s = have
        if have != s and have != 1:
            raise RuntimeError(
                f"The expanded size of the tensor ({s}) must match the existing size ({have}) "
                f"at non-singleton dimension {i}.  Target sizes: {list(sizes)}.  Tensor sizes: "
                f"{list(data.shape)}"
            )
        target.append(s)
    target = tuple(target)
    # to its own shape too, torch records the expand
    out = data.view() if target == data.shape else _broadcast_view(data, target, lead)
    node = result(ExpandBackward0, out, (input,), shape=data.shape)
    return make_view(node, input, (expand, (target,)))


def _broadcast_view(data, target: tuple, lead: int):
    """A read-only view of ``data`` broadcast to ``target`` (stride 0 along new dims)."""
    if data.__class__ is NUMPY_ARRAY and data.flags.c_contiguous:
        # NumPy's broadcast_to builds an nditer in Python; the ndarray constructor is C
        strides = [0] * lead
        for have, want, stride in zip(data.shape, target[lead:], data.strides):
            strides.append(stride if have == want else 0)
        out = NUMPY_ARRAY(target, data.dtype, buffer=data, strides=tuple(strides))
        out.flags.writeable = False
        return out
    return array_module(data).broadcast_to(data, target)


def expand_as(input: Tensor, other: Tensor) -> Tensor:
    return expand(input, other._data.shape)


def broadcast_to(input: Tensor, size) -> Tensor:
    return expand(input, (size,) if isinstance(size, int) else tuple(size))


def broadcast_shapes(*shapes) -> tuple:
    shapes = [(s,) if isinstance(s, int) else tuple(s) for s in shapes]
    ndim = builtins.max((len(s) for s in shapes), default=0)
    out = [1] * ndim
    for s in shapes:
        for i, d in enumerate(s):
            j = ndim - len(s) + i
            if out[j] == 1:
                out[j] = d
            elif d != 1 and d != out[j]:
                raise RuntimeError(
                    f"Shape mismatch: objects cannot be broadcast to a single shape. Mismatch "
                    f"is at dim {j}: {out[j]} vs {d}"
                )
    return Size(out)


def broadcast_tensors(*tensors):
    shape = broadcast_shapes(*(t.shape for t in tensors))
    return tuple(t.expand(shape) for t in tensors)


class RepeatBackward0(Node):
    def backward(self, g):
        reps, shape = self.repeats, self.shape
        lead = len(reps) - len(shape)
        padded = (1,) * lead + tuple(shape)
        split = []
        for r, s in zip(reps, padded):
            split += [r, s]
        g = g.reshape(split).sum(tuple(range(0, 2 * len(reps), 2)))
        return g.reshape(shape)


def repeat(input: Tensor, *repeats) -> Tensor:
    data = input._data
    reps = _shape_arg(repeats)
    if len(reps) < data.ndim:
        raise RuntimeError(
            "Number of dimensions of repeat dims can not be smaller than number of dimensions "
            "of tensor"
        )
    xp = array_module(data)
    padded = data.reshape((1,) * (len(reps) - data.ndim) + data.shape)
    out = xp.tile(padded, reps)
    return result(RepeatBackward0, out, (input,), repeats=reps, shape=data.shape)


def tile(input: Tensor, *sizes, dims=None) -> Tensor:
    # as repeat, the method takes sizes as varargs too (x.tile(2), x.tile(2, 2))
    dims = _shape_arg(sizes) if dims is None else tuple(dims)
    if len(dims) < input._data.ndim:
        dims = (1,) * (input._data.ndim - len(dims)) + dims
    return repeat(input, dims)


class CatBackward0(Node):
    torch_saved = {"dim": "dim"}

    def backward(self, g):
        d, sizes = self.dim, self.sizes
        out = []
        start = 0
        for i, s in enumerate(sizes):
            out.append(g.narrow(d, start, s) if self._edges[i] is not None else None)
            start += s
        return tuple(out)


def cat(tensors, dim: int = 0) -> Tensor:
    if isinstance(tensors, Tensor):
        raise TypeError(
            "cat(): argument 'tensors' (position 1) must be tuple of Tensors, not Tensor"
        )
    tensors = list(tensors)
    for i, t in enumerate(tensors):
        if not isinstance(t, Tensor):
            raise TypeError(
                f"expected Tensor as element {i} in argument 0, but got {type(t).__name__}"
            )
    if not tensors:
        raise ValueError("torch.cat(): expected a non-empty list of Tensors")
    for i, t in enumerate(tensors):
        if t._data.ndim == 0:
            raise RuntimeError(f"zero-dimensional tensor (at position {i}) cannot be concatenated")
    # the result dtype comes from every tensor, even the skipped ones
    rt = tensors[0].dtype
    for t in tensors[1:]:
        rt = dt.promote_types(rt, t.dtype)
    # PyTorch skips 1-d empty tensors, a legacy rule kept for compatibility
    kept = [t for t in tensors if not (t._data.ndim == 1 and t._data.shape[0] == 0)]
    if not kept:  # all skipped: an empty result, still a CatBackward0 of every input, any dim
        tensors = [t if t._data.dtype == rt.np else t.to(rt) for t in tensors]
        out = array_module(tensors[0]._data).empty((0,), dtype=rt.np)
        return result(CatBackward0, out, tuple(tensors), dim=0, sizes=[0] * len(tensors))
    ref = kept[0]._data
    d = wrap_dim(dim, ref.ndim, "cat")
    for i, t in enumerate(kept):
        tdata = t._data
        if tdata.__class__ is not ref.__class__:
            check_same_device("cat", kept[0], t)
        if tdata.ndim != ref.ndim:
            raise RuntimeError(
                f"Tensors must have same number of dimensions: got {ref.ndim} and {tdata.ndim}"
            )
        for j in range(ref.ndim):
            if j != d and tdata.shape[j] != ref.shape[j]:
                raise RuntimeError(
                    f"Sizes of tensors must match except in dimension {d}. Expected size "
                    f"{ref.shape[j]} but got size {tdata.shape[j]} for tensor number {i} in "
                    "the list."
                )
    kept = [t if t._data.dtype == rt.np else t.to(rt) for t in kept]
    xp = array_module(ref)
    out = xp.concatenate([t._data for t in kept], axis=d)
    return result(CatBackward0, out, tuple(kept), dim=d, sizes=[t._data.shape[d] for t in kept])


concat = concatenate = cat


def stack(tensors, dim: int = 0) -> Tensor:
    tensors = list(tensors)
    if not tensors:
        raise RuntimeError("stack expects a non-empty TensorList")
    shape = tensors[0]._data.shape
    d = wrap_dim(dim, len(shape) + 1, "stack")
    for i, t in enumerate(tensors):
        if t._data.shape != shape:
            raise RuntimeError(
                f"stack expects each tensor to be equal size, but got {list(shape)} at entry 0 "
                f"and {list(t._data.shape)} at entry {i}"
            )
    rt = tensors[0].dtype
    for t in tensors[1:]:
        rt = dt.promote_types(rt, t.dtype)
    tensors = [t if t._data.dtype == rt.np else t.to(rt) for t in tensors]
    ref = tensors[0]
    for t in tensors[1:]:
        if t._data.__class__ is not ref._data.__class__:
            check_same_device("stack", ref, t)
    out = array_module(ref._data).stack([t._data for t in tensors], axis=d)
    return result(StackBackward0, out, tuple(tensors), dim=d)


class StackBackward0(Node):
    torch_saved = {"dim": "dim"}

    def backward(self, g):
        d = self.dim
        return tuple(
            g.select(d, i) if edge is not None else None for i, edge in enumerate(self._edges)
        )


def check_non_empty(name: str, tensors) -> None:
    """torch's check of the stacking functions (cat says it its own way)."""
    if not len(tensors):
        raise RuntimeError(f"{name} expects a non-empty TensorList")


def hstack(tensors) -> Tensor:
    check_non_empty("hstack", tensors)
    tensors = [atleast_1d(t) for t in tensors]
    return cat(tensors, 0 if tensors[0].ndim == 1 else 1)


def vstack(tensors) -> Tensor:
    check_non_empty("vstack", tensors)
    return cat([atleast_2d(t) for t in tensors], 0)


def _each(one, tensors: tuple):
    """atleast_*d's calling forms: one tensor, several, or one list or tuple of them."""
    if len(tensors) == 1 and isinstance(tensors[0], (list, tuple)):
        return tuple(one(t) for t in tensors[0])
    return one(tensors[0]) if len(tensors) == 1 else tuple(one(t) for t in tensors)


def _at_least_1d(t: Tensor) -> Tensor:
    return reshape(t, (1,)) if t._data.ndim == 0 else t


def _at_least_2d(t: Tensor) -> Tensor:
    t = _at_least_1d(t)
    return unsqueeze(t, 0) if t._data.ndim == 1 else t


def atleast_1d(*tensors):
    """Tensors with at least one dim; a list or several tensors give a tuple."""
    return _each(_at_least_1d, tensors)


def atleast_2d(*tensors):
    """Tensors with at least two dims (a vector becomes a row)."""
    return _each(_at_least_2d, tensors)


class SliceBackward0(Node):
    torch_saved = {
        "dim": "dim",
        "start": "start",
        "end": lambda node: node.start + node.length,
        "step": ("value", 1),
        "self_sym_sizes": "shape",
    }

    def backward(self, g):
        out = zeros(self.shape, dtype=g.dtype, device=g.device)
        return out.slice_scatter(g, self.dim, self.start, self.start + self.length)


def narrow(input: Tensor, dim: int, start, length: int) -> Tensor:
    data = input._data
    if data.ndim == 0:
        raise RuntimeError("narrow() cannot be applied to a 0-dim tensor.")
    d = wrap_dim(dim, data.ndim, "narrow")
    if isinstance(start, Tensor):
        if start._data.ndim or start.dtype.category != dt.INT:  # a bool is not integral
            raise RuntimeError("start must be an 0-dim integral Tensor.")
    start = int(start)
    size = data.shape[d]
    if not -size <= start <= size:
        raise IndexError(
            f"start out of range (expected to be in range of [{-size}, {size}], but got {start})"
        )
    if start < 0:
        start += size
    if length < 0:
        raise RuntimeError("narrow(): length must be non-negative.")
    if start + length > size:
        raise RuntimeError(f"start ({start}) + length ({length}) exceeds dimension size ({size}).")
    key = (slice(None),) * d + (slice(start, start + length),)
    node = result(
        SliceBackward0, data[key], (input,), shape=data.shape, dim=d, start=start, length=length
    )
    return make_view(node, input, (narrow, (d, start, length)))


class SliceScatterBackward0(Node):
    def backward(self, g):
        key = self.key
        edges = self._edges
        g_self = None
        if edges[0] is not None:
            g_self = g.slice_scatter(g[key] * 0, self.dim, self.start, self.end, self.step)
        g_src = g[key] if edges[1] is not None else None
        return g_self, g_src


def slice_scatter(
    input: Tensor, src: Tensor, dim: int = 0, start=None, end=None, step: int = 1
) -> Tensor:
    """A copy of ``input`` with ``input[..., start:end:step, ...]`` (along ``dim``) = ``src``."""
    data = input._data
    d = wrap_dim(dim, builtins.max(data.ndim, 1), "slice_scatter")
    if step is None:
        step = 1
    if step <= 0:
        raise RuntimeError("slice step must be positive")
    s, e, _ = slice(start, end).indices(data.shape[d])
    e = builtins.max(e, s)
    out = data.copy()
    key = (slice(None),) * d + (slice(s, e, step),)
    target = out[key].shape
    if tuple(src._data.shape) != tuple(target):
        raise RuntimeError(
            f"expected src to have a size equal to the slice of self. src size = "
            f"{list(src._data.shape)}, slice size = {list(target)}"
        )
    out[key] = src._data
    return result(
        SliceScatterBackward0, out, (input, src), dim=d, start=s, end=e, step=step, key=key
    )


def split(tensor: Tensor, split_size_or_sections, dim: int = 0):
    if tensor._data.ndim == 0:
        raise RuntimeError("split expects at least a 1-dimensional tensor")
    size = tensor._data.shape[wrap_dim(dim, tensor._data.ndim, "split")]
    if isinstance(split_size_or_sections, int):
        step = split_size_or_sections
        if step < 0:
            raise RuntimeError(
                f"split expects split_size be non-negative, but got split_size={step}"
            )
        if step == 0 and size:
            raise RuntimeError(
                f"split_size can only be 0 if dimension size is 0, but got dimension size of {size}"
            )
        sizes = [builtins.min(step, size - i) for i in range(0, size, step)] if size else [0]
    else:
        sizes = list(split_size_or_sections)
        if builtins.sum(sizes) != size:
            raise RuntimeError(
                f"split_with_sizes expects split_sizes to sum exactly to {size} (input tensor's "
                f"size at dimension {dim}), but got split_sizes={sizes}"
            )
    node_cls = (
        SplitBackward0 if isinstance(split_size_or_sections, int) else SplitWithSizesBackward0
    )
    return _split_views(node_cls, tensor, wrap_dim(dim, tensor._data.ndim, "split"), sizes)


class SplitBackward0(MultiOutputNode):
    """split and chunk: the pieces are views of the input and outputs of one node, as torch
    records them; the gradient is the pieces' gradients concatenated (zeros for None)."""

    torch_saved = {"dim": "dim", "self_sym_sizes": "shape", "split_size": lambda n: n.sizes[0]}

    def backward(self, *grads):
        d, shape = self.dim, self.shape
        like = next(g for g in grads if g is not None)
        pieces = []
        for g, size in zip(grads, self.sizes):
            if g is None:
                g = zeros(
                    shape[:d] + (size,) + shape[d + 1 :], dtype=like.dtype, device=like.device
                )
            pieces.append(g)
        return cat(pieces, d)


class SplitWithSizesBackward0(SplitBackward0):  # split with a list of sizes
    torch_saved = {"dim": "dim", "self_sym_sizes": "shape", "split_sizes": lambda n: tuple(n.sizes)}


def _split_views(node_cls, input: Tensor, d: int, sizes: list) -> tuple:
    data = input._data
    datas, start = [], 0
    for size in sizes:
        datas.append(data[(slice(None),) * d + (slice(start, start + size),)])
        start += size
    outs = record_outputs(node_cls, tuple(datas), (input,), dim=d, sizes=sizes, shape=data.shape)
    start = 0
    for out, size in zip(outs, sizes):
        make_view(out, input, (narrow, (d, start, size)))
        start += size
    return outs


def chunk(input: Tensor, chunks: int, dim: int = 0):
    if input._data.ndim == 0:
        raise RuntimeError("chunk expects at least a 1-dimensional tensor")
    if chunks <= 0:
        raise RuntimeError("chunk expects `chunks` to be greater than 0, got: " + str(chunks))
    size = input._data.shape[wrap_dim(dim, input._data.ndim, "chunk")]
    if size == 0:  # an empty dim gives `chunks` empty pieces
        return tuple(narrow(input, dim, 0, 0) for _ in range(chunks))
    return split(input, -(-size // chunks), dim)


class SelectBackward0(Node):
    torch_saved = {"dim": "dim", "index": "index", "self_sym_sizes": "shape"}

    def backward(self, g):
        out = zeros(self.shape, dtype=g.dtype, device=g.device)
        return out.select_scatter(g, self.dim, self.index)


def select(input: Tensor, dim: int, index: int) -> Tensor:
    data = input._data
    d = wrap_dim(dim, data.ndim, "select")
    size = data.shape[d]
    index = int(index)
    if index < -size or index >= size:
        raise IndexError(
            f"select(): index {index} out of range for tensor of size {list(data.shape)} at "
            f"dimension {d}"
        )
    if index < 0:
        index += size
    key = (slice(None),) * d + (index,)
    node = result(SelectBackward0, data[key], (input,), shape=data.shape, dim=d, index=index)
    return make_view(node, input, (select, (d, index)))


class SelectScatterBackward0(Node):
    def backward(self, g):
        d, i = self.dim, self.index
        g_self = g.select_scatter(g.select(d, i) * 0, d, i)
        return g_self, g.select(d, i) if self._edges[1] is not None else None


def select_scatter(input: Tensor, src: Tensor, dim: int, index: int) -> Tensor:
    data = input._data
    d = wrap_dim(dim, data.ndim, "select_scatter")
    out = data.copy()
    out[(slice(None),) * d + (index,)] = src._data
    return result(SelectScatterBackward0, out, (input, src), dim=d, index=index)


class UnbindBackward0(MultiOutputNode):
    """unbind: each slice is a view of the input and an output of one node, as torch records
    it; the gradient is the slices' gradients stacked (zeros for None)."""

    torch_saved = {"dim": "dim"}

    def backward(self, *grads):
        like = next(g for g in grads if g is not None)
        shape = like.shape
        return stack(
            [
                g if g is not None else zeros(shape, dtype=like.dtype, device=like.device)
                for g in grads
            ],
            self.dim,
        )


def unbind(input: Tensor, dim: int = 0):
    data = input._data
    d = wrap_dim(dim, data.ndim, "unbind")
    if data.ndim == 0:
        raise IndexError("Dimension specified as 0 but tensor has no dimensions")
    n = data.shape[d]
    datas = tuple(data[(slice(None),) * d + (i,)] for i in range(n))
    if not n:
        return ()
    outs = record_outputs(UnbindBackward0, datas, (input,), dim=d)
    for i, out in enumerate(outs):
        make_view(out, input, (select, (d, i)))
    return outs


class FlipBackward0(Node):
    def backward(self, g):
        return g.flip(self.dims)


def flip(input: Tensor, *listed, dims=None) -> Tensor:
    """Reverse the order along ``dims`` (``flip(x, (0, 1))``, ``x.flip(0, 1)`` or
    ``flip(x, dims=[0])``)."""
    data = input._data
    if dims is None:
        dims = listed[0] if len(listed) == 1 and not isinstance(listed[0], int) else listed
    elif listed:
        raise TypeError("flip() got multiple values for argument 'dims'")
    dims = (dims,) if isinstance(dims, int) else tuple(dims)
    dims = tuple(wrap_dim(d, data.ndim, "flip") for d in dims)
    _distinct_dims(dims)
    xp = array_module(data)
    out = xp.flip(data, dims).copy() if dims and data.ndim else data.copy()
    return result(FlipBackward0, out, (input,), dims=dims)


def fliplr(input: Tensor) -> Tensor:
    if input._data.ndim < 2:
        raise RuntimeError("Input must be >= 2-d.")
    return flip(input, (1,))


def flipud(input: Tensor) -> Tensor:
    if input._data.ndim < 1:
        raise RuntimeError("Input must be >= 1-d.")
    return flip(input, (0,))


class RollBackward0(Node):
    def backward(self, g):
        shifts = tuple(-s for s in self.shifts)
        return g.roll(shifts, self.dims)


def roll(input: Tensor, shifts, dims=None) -> Tensor:
    data = input._data
    xp = array_module(data)
    shifts_t = (shifts,) if isinstance(shifts, int) else tuple(shifts)
    if not shifts_t:
        raise RuntimeError("`shifts` required")
    if dims is None:
        out = xp.roll(data.reshape(-1), shifts_t[0]).reshape(data.shape)
        return result(RollFlatBackward0, out, (input,), shift=shifts_t[0], shape=data.shape)
    dims_t = (dims,) if isinstance(dims, int) else tuple(dims)
    if len(shifts_t) != len(dims_t):
        raise RuntimeError(
            f"shifts and dimensions must align. shifts: {len(shifts_t)}, dims:{len(dims_t)}"
        )
    if data.size == 0:  # PyTorch returns an empty tensor before looking at dims
        return result(RollBackward0, data.copy(), (input,), shifts=shifts_t, dims=dims_t)
    if data.ndim == 0:
        raise IndexError(f"Dimension specified as {dims_t[0]} but tensor has no dimensions")
    dims_t = tuple(wrap_dim(d, data.ndim, "roll") for d in dims_t)
    out = xp.roll(data, shifts_t, dims_t)
    return result(RollBackward0, out, (input,), shifts=shifts_t, dims=dims_t)


class RollFlatBackward0(Node):
    def backward(self, g):
        return g.reshape(-1).roll(-self.shift).reshape(self.shape)


class TrilBackward0(Node):
    def backward(self, g):
        return g.tril(self.diagonal)


class TriuBackward0(Node):
    def backward(self, g):
        return g.triu(self.diagonal)


def tril(input: Tensor, diagonal: int = 0) -> Tensor:
    if input._data.ndim < 2:
        raise RuntimeError("tril: input tensor must have at least 2 dimensions")
    xp = array_module(input._data)
    return result(TrilBackward0, xp.tril(input._data, diagonal), (input,), diagonal=diagonal)


def triu(input: Tensor, diagonal: int = 0) -> Tensor:
    if input._data.ndim < 2:
        raise RuntimeError("triu: input tensor must have at least 2 dimensions")
    xp = array_module(input._data)
    return result(TriuBackward0, xp.triu(input._data, diagonal), (input,), diagonal=diagonal)


def _diagonal_view(data, offset: int, d1: int, d2: int):
    """A writable view of a diagonal (NumPy hands out a read-only one)."""
    view = data.diagonal(offset, d1, d2)
    if _backend.writeable(data) and not _backend.writeable(view):
        try:
            view.flags.writeable = True
        except ValueError:  # the memory below is read-only itself (an expanded tensor)
            pass
    return view


class DiagonalBackward0(Node):
    def backward(self, g):
        out = zeros(self.shape, dtype=g.dtype, device=g.device)
        return out.diagonal_scatter(g, self.offset, self.dim1, self.dim2)


def diagonal(input: Tensor, offset: int = 0, dim1: int = 0, dim2: int = 1) -> Tensor:
    data = input._data
    d1, d2 = wrap_dim(dim1, data.ndim, "diagonal"), wrap_dim(dim2, data.ndim, "diagonal")
    if d1 == d2:
        raise RuntimeError(f"diagonal dimensions cannot be identical {dim1}, {dim2}")
    out = _diagonal_view(data, offset, d1, d2)
    node = result(
        DiagonalBackward0, out, (input,), shape=data.shape, offset=offset, dim1=d1, dim2=d2
    )
    if out.size:
        make_view(node, input, (diagonal, (offset, d1, d2)))
    return node


class DiagonalScatterBackward0(Node):
    def backward(self, g):
        o, d1, d2 = self.offset, self.dim1, self.dim2
        diag = g.diagonal(o, d1, d2)
        return g.diagonal_scatter(diag * 0, o, d1, d2), (
            diag if self._edges[1] is not None else None
        )


def diagonal_scatter(
    input: Tensor, src: Tensor, offset: int = 0, dim1: int = 0, dim2: int = 1
) -> Tensor:
    data = input._data
    d1, d2 = wrap_dim(dim1, data.ndim), wrap_dim(dim2, data.ndim)
    out = data.copy()
    view = _diagonal_view(out, offset, d1, d2)
    if view.size:
        view[...] = src._data
    return result(DiagonalScatterBackward0, out, (input, src), offset=offset, dim1=d1, dim2=d2)


def diag_embed(input: Tensor, offset: int = 0, dim1: int = -2, dim2: int = -1) -> Tensor:
    nd = input._data.ndim + 1
    d1, d2 = wrap_dim(dim1, nd), wrap_dim(dim2, nd)
    if d1 == d2:
        raise RuntimeError(f"diagonal dimensions cannot be identical {dim1}, {dim2}")
    n = input._data.shape[-1] + builtins.abs(offset)
    shape = input._data.shape[:-1] + (n, n)
    base = zeros(shape, dtype=input.dtype, device=input.device)
    out = base.diagonal_scatter(input, offset, -2, -1)
    if (d1, d2) != (nd - 2, nd - 1):
        out = movedim(out, (nd - 2, nd - 1), (d1, d2))
    return out


def diag(input: Tensor, diagonal: int = 0) -> Tensor:
    nd = input._data.ndim
    if nd == 1:
        return diag_embed(input, diagonal)
    if nd == 2:
        return globals()["diagonal"](input, diagonal).clone()
    raise RuntimeError("diag(): Supports 1D or 2D tensors. Got " + f"{nd}D")


class CloneBackward0(Node):
    torch_saved = {}

    def backward(self, g):
        return g


def clone(input: Tensor, *, memory_format=None) -> Tensor:
    return result(CloneBackward0, input._data.copy(), (input,))


def contiguous(input: Tensor, memory_format=None) -> Tensor:
    if input._data.flags.c_contiguous:
        return input
    xp = array_module(input._data)
    return result(CloneBackward0, xp.ascontiguousarray(input._data), (input,))


class ToCopyBackward0(Node):
    def backward(self, g):
        return g.to(dtype=self.dtype, device=self.device)


def to_dtype_device(input: Tensor, dtype=None, device=None, copy: bool = False) -> Tensor:
    """The work of ``Tensor.to``: cast and/or move, differentiable."""
    data = input._data
    target_dtype = dt.to_dtype(dtype) if dtype is not None else None
    target_device = _backend.to_device(device) if device is not None else None
    if target_device is not None and target_device.index is None and target_device.type == "cuda":
        target_device = _backend.current_cuda_device()
    same_dtype = target_dtype is None or target_dtype.np == data.dtype
    same_device = target_device is None or target_device == input.device
    if same_dtype and same_device and not copy:
        return input
    if not same_dtype and (target_dtype.is_complex or input.dtype.is_complex):
        from .complex import cast as complex_cast

        moved = input if same_device else to_dtype_device(input, None, device)
        return complex_cast(moved, target_dtype)
    out = data
    if not same_device:
        out = _backend.move(out, target_device)
    if target_dtype is not None and (not same_dtype or copy):
        out = out.astype(target_dtype.np)
    elif copy and out is data:
        out = data.copy()
    if (
        grad_state.enabled
        and input._rg
        and (target_dtype is None or target_dtype.category == dt.FLOAT)
    ):
        node = ToCopyBackward0()
        node.dtype = input.dtype
        node.device = input.device
        return record(node, out, (input,))
    if input._rg:
        if not grad_state.enabled:
            return no_grad_result(ToCopyBackward0, out, (input,))
        return non_differentiable(f"cast to {target_dtype.name}", wrap(out), input)
    return wrap(out)


def repeat_interleave(input: Tensor, repeats=None, dim=None, *, output_size=None) -> Tensor:
    """Repeat each element ``repeats`` times along ``dim`` (flattened when dim is None)."""
    from .indexing import index_select

    if repeats is None:  # repeat_interleave(repeats): indices repeated by their counts
        counts = input._data
        xp = array_module(counts)
        return wrap(xp.repeat(xp.arange(counts.size), counts).astype(dt.int64.np))
    if dim is None:
        input = reshape(input, (-1,))
        dim = 0
    d = wrap_dim(dim, input._data.ndim, "repeat_interleave")
    xp = array_module(input._data)
    n = input._data.shape[d]
    reps = repeats._data if isinstance(repeats, Tensor) else repeats
    index = xp.repeat(xp.arange(n), reps)
    return index_select(input, d, wrap(index.astype(dt.int64.np)))


def _cat_jvp(node, tangents):
    """cat's tangent: the inputs' tangents concatenated, zeros for an input without one."""
    shape = list(forward_rules.out_shape(node))
    like = forward_rules.first_tangent(tangents)
    parts = []
    for t, size in zip(tangents, node.sizes):
        if t is None:
            shape[node.dim] = size
            t = zeros(tuple(shape), dtype=like.dtype, device=like.device)
        parts.append(t)
    return forward_rules.to_output(node, cat(parts, node.dim))


forward_rules.RULES["CatBackward0"] = _cat_jvp

TENSOR_LAYER.stack = stack  # autograd.grad(is_grads_batched=True) stacks through it
