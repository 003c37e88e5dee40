"""The meta device's arrays: a shape and a dtype, and no data.

A ``MetaArray`` is a NumPy array whose strides are all zero over a buffer of one element. NumPy
makes its views (reshape, transpose, slicing, broadcasting, sliding windows) as for any array,
and they cost nothing whatever the shape. Everything that would compute or copy reaches
``__array_ufunc__``, ``__array_function__`` or an overridden method, which give the result's
shape from a shape rule and its dtype from the same call on one-element probes: no memory of the
full size is ever touched, so a meta ``Linear(100_000, 100_000)`` runs forward and backward.

``MODULE`` is the meta device's array module (what ``_backend.array_module`` returns for a
``MetaArray``): NumPy's names, with the functions that make arrays making meta arrays.
Data-dependent results (``nonzero``, boolean masks, ``unique``) raise NotImplementedError, and
reading values (``item``, ``tolist``, ``float``) raises torch's errors.
"""

from __future__ import annotations

import builtins
import math
import types

import numpy as np
from numpy.lib.array_utils import normalize_axis_index, normalize_axis_tuple

NO_DATA = "Cannot copy out of meta tensor; no data!"
NO_ITEM = "Tensor.item() cannot be called on meta tensors"

_BUFFERS: dict = {}  # dtype -> the one-element buffer every meta array of that dtype views


def empty(shape, dtype=float, order: str = "C", **_ignored) -> MetaArray:
    """A meta array of ``shape`` and ``dtype``: views one element, whatever the shape."""
    dtype = np.dtype(dtype)
    shape = (int(shape),) if isinstance(shape, (int, np.integer)) else tuple(int(s) for s in shape)
    for s in shape:
        if s < 0:
            raise ValueError("negative dimensions are not allowed")
    buffer = _BUFFERS.get(dtype)
    if buffer is None:
        buffer = _BUFFERS[dtype] = np.zeros(1, dtype)
    return np.ndarray.__new__(MetaArray, shape, dtype, buffer, 0, (0,) * len(shape))


def like(value, dtype=None) -> MetaArray:
    """A meta array of ``value``'s shape (any array, number or nested list) and dtype."""
    if not isinstance(value, np.ndarray):
        value = np.asarray(value)
    return empty(value.shape, value.dtype if dtype is None else dtype)


def _data_dependent(name: str) -> NotImplementedError:
    return NotImplementedError(
        f"{name}: the output's shape depends on the tensor's values, which a meta tensor does "
        "not have"
    )


def _probe(value):
    """A one-element stand-in of ``value`` (ones, so that no kernel warns) of its dtype and
    number of dimensions; Python numbers stay numbers, keeping NumPy's weak-scalar dtypes."""
    if isinstance(value, np.ndarray):
        return np.ones(tuple(min(s, 1) for s in value.shape), value.dtype)
    if isinstance(value, (list, tuple)):
        return type(value)(_probe(v) for v in value)
    return value


def _probe_call(fn, *args, **kwargs):
    with np.errstate(all="ignore"):
        return fn(*[_probe(a) for a in args], **{k: _probe(v) for k, v in kwargs.items()})


def _dtype_of(value):
    return value.dtype if hasattr(value, "dtype") else np.asarray(value).dtype


def _as_meta(value):
    """A function's result with every array in it made meta (memory from a fallback freed)."""
    if isinstance(value, np.ndarray):
        if type(value) is MetaArray and not any(value.strides):
            return value
        return empty(value.shape, value.dtype)
    if isinstance(value, np.generic):
        return empty((), value.dtype)
    if isinstance(value, tuple):
        return (
            type(value)(*map(_as_meta, value))
            if hasattr(value, "_fields")
            else tuple(map(_as_meta, value))
        )
    if isinstance(value, list):
        return [_as_meta(v) for v in value]
    return value


def _shape(value) -> tuple:
    return value.shape if isinstance(value, np.ndarray) else np.shape(value)


def _reduced_shape(shape: tuple, axis, keepdims: bool) -> tuple:
    axes = range(len(shape)) if axis is None else normalize_axis_tuple(axis, len(shape))
    if keepdims:
        return tuple(1 if d in axes else s for d, s in enumerate(shape))
    return tuple(s for d, s in enumerate(shape) if d not in axes)


# --- ufuncs ------------------------------------------------------------------------------------
def _parse_signature(signature: str) -> tuple:
    """``"(n?,k),(k,m?)->(n?,m?)"`` to ([['n?', 'k'], ['k', 'm?']], [['n?', 'm?']])."""
    inputs, outputs = signature.replace(" ", "").split("->")

    def operands(text):
        return [[d for d in part.split(",") if d] for part in text[1:-1].split("),(")]

    return operands(inputs), operands(outputs)


def _gufunc_shapes(ufunc, inputs) -> list:
    """The output shapes of a generalised ufunc (matmul) from its signature."""
    core_in, core_out = _parse_signature(ufunc.signature)
    sizes, missing, loops = {}, set(), []
    for i, (value, dims) in enumerate(zip(inputs, core_in, strict=True)):
        shape = _shape(value)
        if len(shape) < len(dims):  # an optional core dim is absent (matmul's 1-d operands)
            optional = [d for d in dims if d.endswith("?")]
            missing.update(optional)
            dims = [d for d in dims if not d.endswith("?")]
        if len(shape) < len(dims):
            raise ValueError(
                f"{ufunc.__name__}: Input operand {i} does not have enough dimensions (has "
                f"{len(shape)}, gufunc core with signature {ufunc.signature} requires "
                f"{len(dims)})"
            )
        core = shape[len(shape) - len(dims) :]
        loops.append(shape[: len(shape) - len(dims)])
        for j, (name, size) in enumerate(zip(dims, core, strict=True)):
            if name.isdigit():
                if size != int(name):
                    raise ValueError(
                        f"{ufunc.__name__}: Input operand {i} has a mismatch in its core "
                        f"dimension {j}, with gufunc signature {ufunc.signature} (size {size} is "
                        f"different from {name})"
                    )
            elif sizes.setdefault(name, size) != size:
                raise ValueError(
                    f"{ufunc.__name__}: Input operand {i} has a mismatch in its core dimension "
                    f"{j}, with gufunc signature {ufunc.signature} (size {size} is different "
                    f"from {sizes[name]})"
                )
    loop = np.broadcast_shapes(*loops)
    return [
        loop + tuple(int(d) if d.isdigit() else sizes[d] for d in dims if d not in missing)
        for dims in core_out
    ]


def _ufunc(ufunc, method: str, inputs: tuple, kwargs: dict):
    out = kwargs.pop("out", None)
    if method == "at":
        return None  # writes into its first operand: nothing to write
    if method == "__call__":
        if ufunc.signature is not None:
            shapes = _gufunc_shapes(ufunc, inputs)
        else:
            operands = list(inputs)
            if kwargs.get("where") is not None and kwargs["where"] is not True:
                operands.append(kwargs["where"])
            shapes = [np.broadcast_shapes(*(_shape(x) for x in operands))] * ufunc.nout
        probe = _probe_call(ufunc, *inputs, **kwargs)
    elif method in ("reduce", "accumulate"):
        array = inputs[0]
        axis = kwargs.get("axis", 0) if len(inputs) < 2 else inputs[1]
        probe = _probe_call(getattr(ufunc, method), array, *inputs[1:], **kwargs)
        if method == "accumulate":
            shapes = [_shape(array)]
        else:
            shapes = [_reduced_shape(_shape(array), axis, kwargs.get("keepdims", False))]
    elif method == "outer":
        shapes = [_shape(inputs[0]) + _shape(inputs[1])] * ufunc.nout
        probe = _probe_call(ufunc.outer, *inputs, **kwargs)
    else:
        raise NotImplementedError(f"{ufunc.__name__}.{method} is not supported on meta tensors")
    if out is not None:
        return out[0] if len(out) == 1 else out
    probes = probe if ufunc.nout > 1 else (probe,)
    results = tuple(empty(s, _dtype_of(p)) for s, p in zip(shapes, probes, strict=True))
    if ufunc is np.logical_and and method == "reduce":
        results[0].truth = True  # ``if x.all():`` holds (see MetaArray.__bool__)
    return results if ufunc.nout > 1 else results[0]


# --- shape rules of NumPy functions -------------------------------------------------------------
def _concatenate(arrays, axis=0, out=None, dtype=None, casting="same_kind"):
    arrays = list(arrays)
    if not arrays:
        raise ValueError("need at least one array to concatenate")
    shapes = [_shape(a) for a in arrays]
    if axis is None:
        shapes = [(int(np.prod(s)),) for s in shapes]
        axis = 0
    first = shapes[0]
    axis = normalize_axis_index(axis, len(first))
    total = 0
    for i, shape in enumerate(shapes):
        if len(shape) != len(first):
            raise ValueError(
                "all the input arrays must have same number of dimensions, but the array at "
                f"index 0 has {len(first)} dimension(s) and the array at index {i} has "
                f"{len(shape)} dimension(s)"
            )
        for d, (a, b) in enumerate(zip(first, shape, strict=True)):
            if d != axis and a != b:
                raise ValueError(
                    "all the input array dimensions except for the concatenation axis must "
                    f"match exactly, but along dimension {d}, the array at index 0 has size {a} "
                    f"and the array at index {i} has size {b}"
                )
        total += shape[axis]
    if out is not None:
        return out
    kind = np.dtype(dtype) if dtype is not None else np.result_type(*map(_dtype_of, arrays))
    return empty(first[:axis] + (total,) + first[axis + 1 :], kind)


def _dot(a, b, out=None):
    sa, sb = _shape(a), _shape(b)
    if not sa or not sb:
        shape = sa or sb
    else:
        inner = sb[-2] if len(sb) > 1 else sb[-1]
        if sa[-1] != inner:
            raise ValueError(
                f"shapes {sa} and {sb} not aligned: {sa[-1]} (dim {len(sa) - 1}) != {inner} "
                f"(dim {max(len(sb) - 2, 0)})"
            )
        shape = sa[:-1] + sb[:-2] + sb[-1:] if len(sb) > 1 else sa[:-1]
    if out is not None:
        return out
    return empty(shape, _dtype_of(_probe_call(np.dot, a, b)))


def _einsum(*operands, out=None, dtype=None, order="K", casting="safe", optimize=False):
    if not isinstance(operands[0], str):
        raise NotImplementedError("einsum's sublist form is not supported on meta tensors")
    subscripts, arrays = operands[0].replace(" ", ""), operands[1:]
    inputs, arrow, output = subscripts.partition("->")
    terms = inputs.split(",")
    if len(terms) != len(arrays):
        raise ValueError("more operands provided to einstein sum function than specified")
    sizes, ellipsis_shapes = {}, []
    for term, array in zip(terms, arrays, strict=True):
        shape = _shape(array)
        letters = term.replace("...", "")
        if "..." in term:
            before = term.index("...")
            n_broadcast = len(shape) - len(letters)
            ellipsis_shapes.append(shape[before : before + n_broadcast])
            shape = shape[:before] + shape[before + n_broadcast :]
        elif len(letters) != len(shape):
            raise ValueError(
                f"operand has more dimensions than subscripts given in einstein sum, but no "
                f"'...' ellipsis provided to broadcast the extra dimensions ({term!r}, {shape})"
            )
        for letter, size in zip(letters, shape, strict=True):
            known = sizes.get(letter, 1)
            if known != size and known != 1 and size != 1:
                raise ValueError(
                    f"operands could not be broadcast together with remapped shapes: label "
                    f"{letter!r} has sizes {known} and {size}"
                )
            sizes[letter] = max(known, size) if known != size else size
    broadcast = np.broadcast_shapes(*ellipsis_shapes) if ellipsis_shapes else ()
    if not arrow:  # implicit output: the labels seen once, in alphabetical order
        once = sorted(
            c for c in set(inputs.replace("...", "").replace(",", "")) if inputs.count(c) == 1
        )
        output = ("..." if ellipsis_shapes else "") + "".join(once)
    shape = []
    for part in output.split("..."):
        shape.extend(sizes[c] for c in part)
        shape.extend(broadcast)
    if "..." in output:
        del shape[len(shape) - len(broadcast) :]
    else:
        shape = [sizes[c] for c in output]
    if out is not None:
        return out
    kind = np.dtype(dtype) if dtype is not None else np.result_type(*map(_dtype_of, arrays))
    return empty(tuple(shape), kind)


def _where(condition, *values):
    if not values:
        raise _data_dependent("where")
    shape = np.broadcast_shapes(*(_shape(v) for v in (condition, *values)))
    return empty(shape, _dtype_of(_probe_call(np.where, condition, *values)))


def _take(a, indices, axis=None, out=None, mode="raise"):
    index_shape = _shape(indices)
    if axis is None:
        shape = index_shape
    else:
        axis = normalize_axis_index(axis, a.ndim)
        shape = a.shape[:axis] + index_shape + a.shape[axis + 1 :]
    return out if out is not None else empty(shape, a.dtype)


def _repeat(a, repeats, axis=None):
    if isinstance(repeats, MetaArray):  # counts held by a meta tensor: unknown
        raise _data_dependent("repeat")
    counts = np.asarray(repeats)
    shape = (a.size,) if axis is None else a.shape
    axis = 0 if axis is None else normalize_axis_index(axis, a.ndim)
    total = int(counts.sum()) if counts.size > 1 else shape[axis] * int(counts.reshape(-1)[0])
    return empty(shape[:axis] + (total,) + shape[axis + 1 :], a.dtype)


def _pad(array, pad_width, mode="constant", **kwargs):
    widths = np.broadcast_to(np.asarray(pad_width, dtype=np.int64), (array.ndim, 2))
    shape = tuple(int(s + lo + hi) for s, (lo, hi) in zip(array.shape, widths, strict=True))
    return empty(shape, array.dtype)


def _along_axis(fn, index_dtype: bool = False):
    """A rule for functions whose result has the input's shape, or its flattening for
    ``axis=None``: sort, argsort, cumsum, cumprod."""

    def rule(a, *args, **kwargs):
        axis = kwargs.get("axis", args[0] if args else -1)
        probe = _probe_call(fn, a, *args, **kwargs)
        out = kwargs.get("out")
        if out is not None:
            return out
        shape = (int(a.size),) if axis is None else _shape(a)
        return empty(shape, np.intp if index_dtype else _dtype_of(probe))

    return rule


def _elementwise(fn):
    """A rule for functions that work element by element (round, clip): the broadcast shape
    of the array arguments."""

    def rule(a, *args, **kwargs):
        probe = _probe_call(fn, a, *args, **kwargs)
        out = kwargs.get("out")
        if out is not None:
            return out
        shapes = [_shape(v) for v in (a, *args) if isinstance(v, np.ndarray)]
        return empty(np.broadcast_shapes(*shapes), _dtype_of(probe))

    return rule


def _arg_reduction(fn):
    def rule(a, axis=None, out=None, *, keepdims=False):
        _probe_call(fn, a, axis=axis, keepdims=keepdims)
        return out if out is not None else empty(_reduced_shape(a.shape, axis, keepdims), np.intp)

    return rule


def _like_factory(a, dtype=None, order="K", subok=True, shape=None, *args, **kwargs):
    return empty(_shape(a) if shape is None else shape, _dtype_of(a) if dtype is None else dtype)


def _full_like(a, fill_value, dtype=None, order="K", subok=True, shape=None, **kwargs):
    return _like_factory(a, dtype, shape=shape)


def _copy(a, order="K", subok=False, **kwargs):
    return empty(_shape(a), _dtype_of(a))


def _nothing(*args, **kwargs):
    return None  # writes into meta arrays: there is nothing to write


def _sliding_window_view(x, window_shape, axis=None, *, subok=False, writeable=False):
    window = (window_shape,) if isinstance(window_shape, int) else tuple(window_shape)
    axes = tuple(range(x.ndim)) if axis is None else normalize_axis_tuple(axis, x.ndim, True)
    shape = list(x.shape)
    for ax, n in zip(axes, window, strict=True):
        if shape[ax] < n:
            raise ValueError("window shape cannot be larger than input array shape")
        shape[ax] -= n - 1
    return empty(tuple(shape) + window, x.dtype)


def as_strided(x, shape=None, strides=None, subok=False, writeable=True):
    """``numpy.lib.stride_tricks.as_strided`` for meta arrays: only the shape counts (a plain
    view with real strides over a one-element buffer would read outside it)."""
    if type(x) is not MetaArray:
        return np.lib.stride_tricks.as_strided(x, shape, strides, subok, writeable)
    return empty(x.shape if shape is None else shape, x.dtype)


_RULES = {
    np.concatenate: _concatenate,
    np.dot: _dot,
    np.einsum: _einsum,
    np.where: _where,
    np.take: _take,
    np.repeat: _repeat,
    np.pad: _pad,
    np.sort: _along_axis(np.sort),
    np.argsort: _along_axis(np.argsort, index_dtype=True),
    np.partition: lambda a, kth, axis=-1, **kw: empty(_shape(a), a.dtype),
    np.argpartition: lambda a, kth, axis=-1, **kw: empty(_shape(a), np.intp),
    np.tril: lambda m, k=0: empty(_shape(m), m.dtype),
    np.triu: lambda m, k=0: empty(_shape(m), m.dtype),
    np.cumsum: _along_axis(np.cumsum),
    np.cumprod: _along_axis(np.cumprod),
    np.round: _elementwise(np.round),
    np.around: _elementwise(np.around),
    np.clip: _elementwise(np.clip),
    np.argmax: _arg_reduction(np.argmax),
    np.argmin: _arg_reduction(np.argmin),
    np.empty_like: _like_factory,
    np.zeros_like: _like_factory,
    np.ones_like: _like_factory,
    np.full_like: _full_like,
    np.copy: _copy,
    np.copyto: _nothing,
    np.put: _nothing,
    np.put_along_axis: _nothing,
    np.putmask: _nothing,
    np.place: _nothing,
    np.fill_diagonal: _nothing,
    np.lib.stride_tricks.sliding_window_view: _sliding_window_view,
    np.count_nonzero: lambda a, axis=None, *, keepdims=False: empty(
        _reduced_shape(_shape(a), axis, keepdims), np.intp
    ),
    np.isclose: lambda a, b, *args, **kwargs: empty(
        np.broadcast_shapes(_shape(a), _shape(b)), bool
    ),
    np.searchsorted: lambda a, v, side="left", sorter=None: empty(_shape(v), np.intp),
}
_DATA_DEPENDENT = {
    np.nonzero,
    np.argwhere,
    np.flatnonzero,
    np.unique,
    np.extract,
    np.compress,
    np.array_equal,
    np.allclose,
    np.bincount,
    np.histogram,
    np.trim_zeros,
}


# --- indexing ---------------------------------------------------------------------------------
def _index_shape(shape: tuple, key) -> tuple:
    """The shape of ``array[key]`` by NumPy's rules, for keys with integer index arrays."""
    key = key if isinstance(key, tuple) else (key,)
    consumed = sum(0 if k is None or k is Ellipsis else (k.ndim if _is_bool(k) else 1) for k in key)
    if consumed > len(shape):
        raise IndexError(
            f"too many indices for array: array is {len(shape)}-dimensional, but {consumed} "
            "were indexed"
        )
    if Ellipsis in [k for k in key if not isinstance(k, np.ndarray)]:
        at = next(i for i, k in enumerate(key) if k is Ellipsis)
        key = key[:at] + (slice(None),) * (len(shape) - consumed) + key[at + 1 :]
    else:
        key = key + (slice(None),) * (len(shape) - consumed)
    advanced = [i for i, k in enumerate(key) if _is_array(k) or isinstance(k, (int, np.integer))]
    arrays = [k for k in key if _is_array(k)]
    if not arrays:  # basic indexing: integers and slices
        advanced = []
    broadcast = np.broadcast_shapes(*(_shape(key[i]) for i in advanced)) if advanced else ()
    out, dim, placed = [], 0, False
    adjacent = not advanced or advanced == list(range(advanced[0], advanced[-1] + 1))
    for i, k in enumerate(key):
        if k is None:
            out.append(1)
            continue
        n = shape[dim]
        if i in advanced:
            if isinstance(k, (int, np.integer)) and not -n <= k < n:
                raise IndexError(f"index {k} is out of bounds for axis {dim} with size {n}")
            if adjacent and not placed:
                out.extend(broadcast)
                placed = True
        elif isinstance(k, slice):
            out.append(len(range(*k.indices(n))))
        elif isinstance(k, (int, np.integer)):
            if not -n <= k < n:
                raise IndexError(f"index {k} is out of bounds for axis {dim} with size {n}")
        else:
            raise IndexError(
                "only integers, slices (`:`), ellipsis (`...`), numpy.newaxis (`None`) and "
                "integer or boolean arrays are valid indices"
            )
        dim += 1
    if not adjacent:
        out = list(broadcast) + out
    return tuple(out)


def _is_array(k) -> bool:
    return isinstance(k, (np.ndarray, list))


def _is_bool(k) -> bool:
    return isinstance(k, np.ndarray) and k.dtype == bool


class MetaArray(np.ndarray):
    """An array with a shape and a dtype and no data: zero strides over one element."""

    __array_priority__ = 2000  # beats plain arrays in mixed operators

    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        return _ufunc(ufunc, method, inputs, kwargs)

    def __array_function__(self, func, types, args, kwargs):
        rule = _RULES.get(func)
        if rule is not None:
            return rule(*args, **kwargs)
        if func in _DATA_DEPENDENT:
            raise _data_dependent(func.__name__)
        # NumPy functions written in Python call back into these rules on views of their
        # inputs; the rest compute on the one-element buffer, and only their result's shape
        # and dtype are kept
        return _as_meta(func._implementation(*args, **kwargs))

    # --- methods that copy or compute ---------------------------------------------------------
    def copy(self, order="K"):
        return empty(self.shape, self.dtype)

    __copy__ = copy

    def __deepcopy__(self, memo):
        return empty(self.shape, self.dtype)

    def __reduce__(self):
        return (empty, (self.shape, self.dtype.str))

    def astype(self, dtype, order="K", casting="unsafe", subok=True, copy=True):
        dtype = np.dtype(dtype)
        if dtype == self.dtype and not copy:
            return self
        return empty(self.shape, dtype)

    def view(self, dtype=None, type=None):
        if dtype is None or isinstance(dtype, builtins.type):  # view(MetaArray), view()
            return np.ndarray.view(self, MetaArray)
        dtype = np.dtype(dtype)
        if dtype.itemsize == self.dtype.itemsize or self.ndim == 0:
            return empty(self.shape, dtype)
        last = self.shape[-1] * self.dtype.itemsize // dtype.itemsize
        return empty(self.shape[:-1] + (last,), dtype)

    def ravel(self, order="C"):
        return self.reshape(-1)

    flatten = ravel

    def fill(self, value):
        return None

    def sort(self, axis=-1, kind=None, order=None):
        return None

    def argsort(self, axis=-1, kind=None, order=None, **kwargs):
        return _RULES[np.argsort](self, axis=axis)

    def argmax(self, axis=None, out=None, *, keepdims=False):
        return _RULES[np.argmax](self, axis, out, keepdims=keepdims)

    def argmin(self, axis=None, out=None, *, keepdims=False):
        return _RULES[np.argmin](self, axis, out, keepdims=keepdims)

    def cumsum(self, axis=None, dtype=None, out=None):
        return _RULES[np.cumsum](self, axis=axis, dtype=dtype, out=out)

    def cumprod(self, axis=None, dtype=None, out=None):
        return _RULES[np.cumprod](self, axis=axis, dtype=dtype, out=out)

    def round(self, decimals=0, out=None):
        return out if out is not None else empty(self.shape, self.dtype)

    def dot(self, b, out=None):
        return _dot(self, b, out)

    def take(self, indices, axis=None, out=None, mode="raise"):
        return _take(self, indices, axis, out, mode)

    def repeat(self, repeats, axis=None):
        return _repeat(self, repeats, axis)

    def nonzero(self):
        raise _data_dependent("nonzero")

    def __getitem__(self, key):
        if _is_bool(key) or (isinstance(key, tuple) and any(_is_bool(k) for k in key)):
            raise _data_dependent("indexing with a boolean mask")
        if _is_array(key) or (isinstance(key, tuple) and any(_is_array(k) for k in key)):
            return empty(_index_shape(self.shape, key), self.dtype)
        out = np.ndarray.__getitem__(self, key)  # a view: shape and zero strides
        return out if isinstance(out, np.ndarray) else empty((), self.dtype)  # not a scalar

    def __setitem__(self, key, value):
        return None

    # --- reading values ------------------------------------------------------------------------
    def item(self, *args):
        raise RuntimeError(NO_ITEM)  # Tensor.item, float(t), int(t) and bool(t) come here

    # An op's own checks on values (``if int(index.max()) >= n: raise``, ``if bad.any():``,
    # ``if not ok.all():``) find nothing to report on a meta tensor, as torch's meta kernels
    # skip those checks: a value read by Python is 0, and a truth value False except that of
    # an ``all()``. Tensors read theirs through ``item``, which raises.
    truth = False

    def __bool__(self) -> bool:
        return self.truth

    def __int__(self) -> int:
        return 0

    __index__ = __int__

    def __float__(self) -> float:
        return 0.0

    def __complex__(self) -> complex:
        return 0j

    def tolist(self):
        raise NotImplementedError(NO_DATA)

    def tobytes(self, order="C"):
        raise NotImplementedError(NO_DATA)

    def __repr__(self) -> str:
        return f"MetaArray(shape={self.shape}, dtype={self.dtype})"

    __str__ = __repr__


def _asarray(value, dtype=None, order=None, **kwargs):
    if isinstance(value, MetaArray):
        return value if dtype is None else value.astype(dtype, copy=False)
    if isinstance(value, (list, tuple)) and any(isinstance(v, MetaArray) for v in value):
        return _RULES[np.concatenate]([np.expand_dims(like(v), 0) for v in value]).astype(
            dtype or np.result_type(*map(_dtype_of, value))
        )
    return like(np.asarray(value, dtype=dtype))


def _array(value, dtype=None, copy=True, order="K", subok=False, ndmin=0, **kwargs):
    out = _asarray(value, dtype)
    return out.reshape((1,) * (ndmin - out.ndim) + out.shape) if ndmin > out.ndim else out


def _full(shape, fill_value, dtype=None, order="C", **kwargs):
    return empty(shape, np.asarray(fill_value).dtype if dtype is None else dtype)


def _arange(start, stop=None, step=1, dtype=None, **kwargs):
    if stop is None:
        start, stop = 0, start
    n = max(math.ceil((stop - start) / step), 0)
    return empty((n,), np.result_type(start, stop, step) if dtype is None else dtype)


def _eye(n, m=None, k=0, dtype=float, **kwargs):
    return empty((n, n if m is None else m), dtype)


class _MetaModule(types.SimpleNamespace):
    """NumPy as the meta device's array module: array makers make meta arrays; every other
    name is NumPy's own, whose functions reach ``MetaArray``'s protocols."""

    __hash__ = object.__hash__  # a module: kernels cache by it, and it equals only itself
    __eq__ = object.__eq__

    def __getattr__(self, name):
        return getattr(np, name)


_stride_tricks = types.SimpleNamespace(
    as_strided=as_strided, sliding_window_view=np.lib.stride_tricks.sliding_window_view
)
MODULE = _MetaModule(
    # not "numpy": ops then skip their NumPy-only fast paths (compiled kernels, scipy.sparse)
    __name__="ember.meta",
    empty=empty,
    zeros=empty,
    ones=empty,
    full=_full,
    empty_like=_like_factory,
    zeros_like=_like_factory,
    ones_like=_like_factory,
    full_like=_full_like,
    asarray=_asarray,
    asanyarray=_asarray,
    ascontiguousarray=_asarray,
    asfortranarray=_asarray,
    array=_array,
    arange=_arange,
    eye=_eye,
    identity=lambda n, dtype=float, **kw: empty((n, n), dtype),
    copyto=_nothing,
    lib=types.SimpleNamespace(stride_tricks=_stride_tricks),
)


def _size(size) -> tuple:
    if size is None:
        return ()
    return (int(size),) if isinstance(size, (int, np.integer)) else tuple(size)


class _MetaGenerator:
    """Stands in for the random generator on the meta device: draws have shapes and dtypes,
    no values, and the CPU generator's stream does not advance (as torch)."""

    def random(self, size=None, dtype=None, out=None):
        return empty(_size(size), np.float64 if dtype is None else dtype)

    def uniform(self, low=0.0, high=1.0, size=None, dtype=None):
        return self.random(size, dtype)

    standard_normal = exponential = random

    def normal(self, loc=0.0, scale=1.0, size=None, dtype=None, serial: bool = False):
        return self.random(size, dtype)

    def integers(self, low, high=None, size=None, dtype=np.int64, endpoint=False):
        return empty(_size(size), dtype)

    def permutation(self, x, axis: int = 0):
        return empty((int(x),), np.int64) if np.ndim(x) == 0 else like(x)

    def bernoulli(self, p, size=None, dtype=None):
        return empty(_shape(p) if size is None else _size(size), dtype or np.float64)


GENERATOR = _MetaGenerator()
