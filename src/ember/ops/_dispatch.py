"""What every op shares: wrapping results, recording graph nodes, and operand promotion.

An op computes its result on arrays, then calls ``record`` when some input requires grad and
grad mode is on. ``record`` stores the edges to the inputs' nodes, the saved tensors with their
versions, and the output's shape and dtype; the node's class holds the backward formula.
"""

from __future__ import annotations

from .. import _backend
from .. import _dtype as dt
from .._tensor import Tensor, _wrap_dim, refresh_view_grad_fn
from ..autograd import _cuts, _watch
from ..autograd import grad_mode as _gm

_new = object.__new__
as_array = _backend.as_array
array_module = _backend.array_module
grad_state = _gm.state
watch = _watch.watch
FLOAT, INT, BOOL = dt.FLOAT, dt.INT, dt.BOOL
SCALAR_TYPES = (int, float, bool)  # complex numbers take their own branch in promote_scalar
NUMBERS = frozenset((int, float, bool, complex))


_ARRAY_TYPES = _backend._MODULE_OF_TYPE  # array type -> module (CuPy's is added in place)


def wrap(data) -> Tensor:
    """A plain tensor around a kernel's result (NumPy returns 0-d results as scalars)."""
    if data.__class__ not in _ARRAY_TYPES:
        data = as_array(data)
    t = _new(Tensor)
    t._data = data
    t._vc = [0]
    if watch.on:
        _watch.tensor_created(t)
    return t


def _edge_of(t):
    fn = t._grad_fn if t._base is None else refresh_view_grad_fn(t)
    if fn is not None:
        return (fn, t._out_nr)
    acc = t._grad_acc
    return (acc if acc is not None else t._accumulator(), 0)


def _edge_or_none(t):
    if t is None or t.__class__ in NUMBERS or not t._rg:
        return None
    return _edge_of(t)


def record(node, data, inputs: tuple, saved: tuple = (), save_output: bool = False) -> Tensor:
    """Wrap ``data`` as the output of ``node`` whose inputs are ``inputs`` (tensors or None)."""
    # inputs are Tensors, None, or Python numbers (which carry no _rg and get no edge);
    # plain loops: for one or two inputs they beat a comprehension's extra frame, and the
    # commonest op (one input, a non-view tensor) builds its edges without a list
    if len(inputs) == 1:
        t = inputs[0]
        if t.__class__ is Tensor and t._base is None and t._rg:
            fn = t._grad_fn
            node._edges = ((fn, t._out_nr) if fn is not None else _edge_of(t),)
        else:
            node._edges = (_edge_or_none(t),)
    else:
        edges = []
        for t in inputs:
            if t is None or t.__class__ in NUMBERS or not t._rg:
                edges.append(None)
            elif t._base is None and t._grad_fn is not None:
                edges.append((t._grad_fn, t._out_nr))
            else:
                edges.append(_edge_of(t))
        node._edges = tuple(edges)
    if data.__class__ not in _ARRAY_TYPES:
        data = as_array(data)
    if saved:
        node._saved = saved
        versions = []
        for t in saved:
            versions.append(None if t is None or t.__class__ in NUMBERS else t._vc[0])
        node._saved_versions = versions
    out = _new(Tensor)
    out._data = data
    vc = out._vc = [0]
    out._rg = True
    out._grad_fn = node
    node._meta = ((data.shape, data.dtype),)
    if save_output:
        node._saved_out = (data, vc, 0)
    if watch.on:
        _watch.node_created(node, out, saved)
    return out


def record_output(node, data, nr: int, saved: tuple = ()) -> Tensor:
    """Output ``nr`` (1 on) of a node with several outputs, whose first :func:`record` made;
    ``saved``: as the node's, for the graph watcher."""
    out = _new(Tensor)
    out._data = data
    out._vc = [0]
    out._rg = True
    out._grad_fn = node
    out._out_nr = nr
    if watch.on:
        _watch.node_created(node, out, saved)
    return out


def result(node_cls, data, inputs: tuple, saved: tuple = (), save_output: bool = False, **attrs):
    """``record`` when some input needs grad, otherwise a plain tensor. ``attrs`` go on the node."""
    if grad_state.enabled:
        for t in inputs:
            if t is not None and t.__class__ not in NUMBERS and t._rg:
                node = node_cls()
                if attrs:
                    node.__dict__.update(attrs)
                return record(node, data, inputs, saved, save_output)
        return wrap(data)
    out = wrap(data)
    for t in inputs:
        if t is not None and t.__class__ not in NUMBERS and t._rg:
            _cuts.note_inputs("no_grad", node_cls, inputs, out, out_site=False)
            break
    return out


def no_grad_result(node_cls, data, inputs: tuple) -> Tensor:
    """The output of an op run under no_grad on an input that requires grad (noted)."""
    out = wrap(data)
    _cuts.note_inputs("no_grad", node_cls, inputs, out, out_site=False)
    return out


def non_differentiable(op: str, out: Tensor, *inputs) -> Tensor:
    """Note a non-differentiable op (comparison, argmax, integer cast) on grad inputs."""
    if grad_state.enabled:
        for t in inputs:
            if t.__class__ is Tensor and t._rg:
                _cuts.note_inputs("non-differentiable", op, inputs, out)
                break
    return out


def named(fn, name: str):
    """Give a function made by a factory its op's name, down to its code object, so that
    tracebacks and the profiler tell ops made by the same factory apart."""
    fn.__name__ = fn.__qualname__ = name
    fn.__code__ = fn.__code__.replace(co_name=name)
    return fn


def broadcast_error(op: str, *arrays) -> RuntimeError:
    """PyTorch's message for operands whose shapes do not broadcast."""
    shapes = [getattr(a, "shape", ()) for a in arrays]
    a, b = shapes[0], shapes[1] if len(shapes) > 1 else ()
    for i in range(1, max(len(a), len(b)) + 1):
        x = a[-i] if i <= len(a) else 1
        y = b[-i] if i <= len(b) else 1
        if x != y and x != 1 and y != 1:
            dim = max(len(a), len(b)) - i
            return RuntimeError(
                f"{op}: The size of tensor a ({x}) must match the size of tensor b ({y}) at "
                f"non-singleton dimension {dim}"
            )
    shown = ", ".join(str(list(s)) for s in shapes)
    return RuntimeError(f"{op}: shapes {shown} cannot be broadcast together")


def check_same_device(op: str, a: Tensor, b: Tensor) -> None:
    if type(a._data) is not type(b._data) and a.device != b.device:
        if "meta" in (a.device.type, b.device.type):  # torch's meta kernels say it this way
            raise RuntimeError(
                f"Tensor on device {b.device} is not on the expected device {a.device}!"
            )
        raise RuntimeError(
            f"{op}: Expected all tensors to be on the same device, but found at least two "
            f"devices, {a.device} and {b.device}!"
        )


def _on_one_device(op: str, a: Tensor, b: Tensor) -> tuple:
    """(a, b) on one device: a 0-d CPU tensor joins the other's device as a scalar would (as
    torch; its gradient flows back to the CPU), any other mix raises torch's error."""
    a_device, b_device = a.device, b.device
    if a_device == b_device:
        return a, b
    if a_device.type == "cpu" and a._data.ndim == 0:
        return a.to(b_device), b
    if b_device.type == "cpu" and b._data.ndim == 0:
        return a, b.to(a_device)
    check_same_device(op, a, b)
    return a, b


def to_tensor(value, like: Tensor | None = None) -> Tensor:
    """Python numbers, lists and arrays to a tensor (on ``like``'s device)."""
    if isinstance(value, Tensor):
        return value
    from .._creation import tensor

    device = like.device if like is not None else None
    return tensor(value, device=device)


def cast(t: Tensor, to: dt.dtype) -> Tensor:
    if t._data.dtype == to.np:
        return t
    if to.category == dt.COMPLEX:  # differentiable, real inputs get the real part back
        from .complex import cast as complex_cast

        return complex_cast(t, to)
    return t.to(to)


def promote(op: str, a, b):
    """Bring two operands to PyTorch's result dtype. Returns (a, b) as tensors or (tensor, number).

    Python numbers stay numbers when the tensor's dtype already holds their category: NumPy's
    weak-scalar rules then give the same dtype as PyTorch.
    """
    if isinstance(b, Tensor):
        if not isinstance(a, Tensor):
            return promote_scalar(op, b, a, reflected=True)
        if type(a._data) is not type(b._data):
            a, b = _on_one_device(op, a, b)
        if a._data.dtype is b._data.dtype or a._data.dtype == b._data.dtype:
            return a, b
        rt = dt.result_type(a, b)
        return cast(a, rt), cast(b, rt)
    return promote_scalar(op, a, b)


def promote_scalar(op: str, t: Tensor, s, reflected: bool = False):
    cls = s.__class__
    kind = t._data.dtype.kind
    # the common cases first: a float with a floating tensor, a small int with any number dtype
    if cls is float:
        if kind == "f":
            return (s, t) if reflected else (t, s)
    elif cls is int and (kind == "f" or (kind in "iu" and _fits(s, t._data.dtype))):
        return (s, t) if reflected else (t, s)
    if cls is not float and cls is not int and cls is not bool and cls is not complex:
        if isinstance(s, SCALAR_TYPES):
            s = cls.__mro__[-2](s) if cls not in (bool,) else bool(s)
        elif hasattr(s, "item") and getattr(s, "ndim", 0) == 0 and not isinstance(s, Tensor):
            s = s.item()
        else:
            s = to_tensor(s, t)
            return promote(op, s, t) if reflected else promote(op, t, s)
    if s.__class__ is complex:
        if t._data.dtype.kind != "c":
            t = cast(t, dt.result_type(t, s))
        return (s, t) if reflected else (t, s)
    cat = t.dtype.category
    s_cat = BOOL if s.__class__ is bool else (INT if s.__class__ is int else FLOAT)
    if s_cat > cat:
        t = cast(t, dt.result_type(t, s))
    elif s_cat == INT and cat == INT and s.__class__ is int:
        if not _fits(s, t._data.dtype):
            s = _wrapped(s, t._data.dtype)
    return (s, t) if reflected else (t, s)


def _fits(value: int, np_dtype) -> bool:
    bits = np_dtype.itemsize * 8
    if np_dtype.kind == "u":
        return 0 <= value < (1 << bits)
    return -(1 << (bits - 1)) <= value < (1 << (bits - 1))


def _wrapped(value: int, np_dtype) -> int:
    """``value`` modulo 2**bits in the dtype's range: torch casts an integer scalar to an integer
    tensor's dtype that way (``uint8 tensor + 300`` adds 44)."""
    bits = np_dtype.itemsize * 8
    value &= (1 << bits) - 1
    if np_dtype.kind == "i" and value >= 1 << (bits - 1):
        value -= 1 << bits
    return value


_SCALAR_ARRAYS: dict = {}
NUMPY_ARRAY = _NUMPY_ARRAY = next(iter(_backend._MODULE_OF_TYPE))


def data_of(x, like=None):
    """The array of a tensor; a Python number as a cached 0-d array of ``like``'s dtype.

    NumPy converts a bare Python number on every call; a cached 0-d array of the same dtype
    gives the same result (the dtype was settled by ``promote``) for less.
    """
    if isinstance(x, Tensor):
        return x._data
    if like is None or like.__class__ is not _NUMPY_ARRAY:
        return x
    key = (x, like.dtype)
    arr = _SCALAR_ARRAYS.get(key)
    if arr is None:
        if len(_SCALAR_ARRAYS) > 4096:
            _SCALAR_ARRAYS.clear()
        arr = array_module(like).asarray(x, dtype=like.dtype)
        arr.flags.writeable = False
        if x.__class__ is float and x != x:  # nan never equals itself: do not cache it
            return arr
        _SCALAR_ARRAYS[key] = arr
    return arr


def float_result(op: str, t: Tensor) -> Tensor:
    """Integer inputs to a floating op (sqrt, exp, true division) compute in the default dtype."""
    if t._data.dtype.kind in "biu":
        return t.to(dt.get_default_dtype())
    return t


def norm_dims(dim, ndim: int, op: str = "") -> tuple:
    """dim=None / int / tuple to a sorted tuple of non-negative axes."""
    if dim is None:
        return tuple(range(ndim))
    if ndim == 0:  # a scalar's only dim is 0 (or -1), and reducing over it changes nothing
        for d in (dim,) if isinstance(dim, int) else dim:
            _wrap_dim(d, 0, op)
        return ()
    if isinstance(dim, int):
        return (_wrap_dim(dim, ndim, op),)
    dims = tuple(_wrap_dim(d, ndim, op) for d in dim)
    if len(set(dims)) != len(dims):
        raise RuntimeError(f"{op}: dim {dims} appears multiple times in the list of dims")
    return tuple(sorted(dims))


wrap_dim = _wrap_dim
