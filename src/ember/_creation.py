"""Tensor factories: from data, filled, ranges and random, with PyTorch's dtype inference."""

from __future__ import annotations

import math

from . import _backend, _meta
from . import _dtype as dt
from . import _memory_format as _mf
from ._random import argument_checks as random_checks
from ._random import default_generator, resolve_generator
from ._random import generator as _random_generator
from ._size_argument import parse_size
from ._tensor import Tensor
from .autograd import forward_rules as _forward_rules
from .autograd.node import TENSOR_LAYER as _TENSOR_LAYER
from .autograd.node import Node
from .ops._dispatch import result as _record

_wrap = Tensor._wrap


def _finish(data, requires_grad: bool) -> Tensor:
    t = _wrap(data)
    if requires_grad:
        t.requires_grad = True
    return t


def _xp(device):
    return _backend.require_module(_backend.to_device(device))


def _place(data, device):
    d = _backend.to_device(device)
    return _backend.move(data, d) if d.type != "cpu" else data


def _sampler(generator, device):
    """What draws a factory's samples: the generator, or on the meta device a stand-in that
    gives shapes without values (and leaves the generator's stream where it was)."""
    if _backend.to_device(device).type == "meta":
        return _meta.GENERATOR
    return resolve_generator(generator)


def _flatten_tensors(data):
    """Lists that contain tensors become plain nested lists of numbers."""
    if isinstance(data, Tensor):
        return data.tolist()
    if isinstance(data, (list, tuple)):
        return [_flatten_tensors(d) for d in data]
    return data


def _infer_dtype(np_array, from_python: bool) -> dt.dtype:
    kind = np_array.dtype.kind
    if from_python:
        if kind == "f":
            return dt.get_default_dtype()
        if kind == "u" and np_array.dtype.itemsize == 8 and np_array.size:
            if int(np_array.max()) > 2**63 - 1:  # NumPy made uint64 for a Python int >= 2**63
                raise ValueError("Overflow when unpacking long long")
        if kind in "iu":
            return dt.int64
        if kind == "b":
            return dt.bool_
    if kind == "c":
        if from_python:
            return dt.get_default_complex_dtype()
        return dt.from_numpy_dtype(np_array.dtype)
    if kind == "O" or kind in "US":
        raise TypeError(f"Could not infer dtype of {np_array.dtype}")
    return dt.from_numpy_dtype(np_array.dtype)


def tensor(
    data, *, dtype=None, device=None, requires_grad: bool = False, pin_memory: bool = False
) -> Tensor:
    """A new tensor holding a copy of ``data`` (numbers, nested lists, arrays, tensors).

    Example::
        >>> ember.tensor([[1, 2], [3, 4.5]])
        tensor([[1.0000, 2.0000],
                [3.0000, 4.5000]])
    """
    import numpy as np

    if isinstance(data, Tensor):
        arr = data._data
        out = arr.astype(dt.to_dtype(dtype).np) if dtype is not None else arr.copy()
        if device is not None:
            out = _backend.move(out, _backend.to_device(device))
        return _finish(out, requires_grad)
    from_python = not isinstance(data, np.ndarray) and not hasattr(data, "__cuda_array_interface__")
    if hasattr(data, "__cuda_array_interface__") and not isinstance(data, np.ndarray):
        arr = data.get()
    else:
        if from_python and isinstance(data, (list, tuple)):
            data = _flatten_tensors(data)
        if isinstance(data, np.generic):
            from_python = False
        arr = np.array(data)
    target = dt.to_dtype(dtype) if dtype is not None else _infer_dtype(arr, from_python)
    if arr.dtype != target.np:
        arr = arr.astype(target.np)
    elif not from_python:
        arr = arr.copy()
    return _finish(_place(arr, device), requires_grad)


def as_tensor(data, dtype=None, device=None) -> Tensor:
    """Like ``tensor`` but shares memory with a NumPy array or tensor when it can."""
    import numpy as np

    if isinstance(data, Tensor):
        return data.to(dtype=dtype, device=device)
    if isinstance(data, np.ndarray) and (
        device is None or _backend.to_device(device).type == "cpu"
    ):
        data = _plain_array(data)
        target = dt.to_dtype(dtype) if dtype is not None else dt.from_numpy_dtype(data.dtype)
        if target.np == data.dtype:
            return _wrap(data)
        return _wrap(data.astype(target.np))
    return tensor(data, dtype=dtype, device=device)


asarray = as_tensor


def from_numpy(ndarray) -> Tensor:
    """A tensor sharing memory with ``ndarray``: writes to one show in the other."""
    import numpy as np

    if not isinstance(ndarray, np.ndarray):
        raise TypeError(f"expected np.ndarray (got {type(ndarray).__name__})")
    dt.from_numpy_dtype(ndarray.dtype)
    return _wrap(_plain_array(ndarray))


def _plain_array(array):
    """``array`` as a plain ndarray over the same memory: a subclass (``np.memmap``,
    ``np.matrix``, ...) would otherwise travel through every op that meets the tensor."""
    import numpy as np

    if type(array) in _backend._MODULE_OF_TYPE:  # ndarray itself, or ember.compile's recording
        return array
    return array.view(np.ndarray)


def from_dlpack(ext) -> Tensor:
    """Zero-copy import of any object that speaks DLPack (NumPy, PyTorch, CuPy, JAX...)."""
    import numpy as np

    device_type = ext.__dlpack_device__()[0] if hasattr(ext, "__dlpack_device__") else 1
    if device_type == 1:  # kDLCPU
        data = np.from_dlpack(ext)
    else:
        cupy = _backend.require_module(_backend.device("cuda"))
        data = cupy.from_dlpack(ext)
    dt.from_numpy_dtype(data.dtype)
    return _wrap(data)


def _factory(fill):
    def make(
        *listed,
        size=None,
        dtype=None,
        device=None,
        requires_grad: bool = False,
        out=None,
        layout=None,
        pin_memory=False,
        memory_format=None,
    ) -> Tensor:
        d = dt.to_dtype(dtype) if dtype is not None else dt.get_default_dtype()
        xp = _xp(device)
        with _device_ctx(xp, device):
            data = fill(xp, parse_size(make.__name__, listed, size), d.np)
            if memory_format is not None:
                fmt = _mf.check(memory_format, make.__name__)
                if fmt is _mf.preserve_format:
                    raise RuntimeError("unsupported memory format Preserve")
                data = _mf.arrange(data, fmt)
        return _finish(data, requires_grad)

    return make


def _device_ctx(xp, device):
    import contextlib

    d = _backend.to_device(device)
    if d.type == "cuda":
        return xp.cuda.Device(d.index or 0)
    return contextlib.nullcontext()


zeros = _factory(lambda xp, shape, d: xp.zeros(shape, dtype=d))
ones = _factory(lambda xp, shape, d: xp.ones(shape, dtype=d))
empty = _factory(lambda xp, shape, d: xp.empty(shape, dtype=d))
zeros.__name__, ones.__name__, empty.__name__ = "zeros", "ones", "empty"


def full(size, fill_value, *, dtype=None, device=None, requires_grad: bool = False) -> Tensor:
    if not isinstance(fill_value, (int, float, bool, complex, Tensor)) and not hasattr(
        fill_value, "item"
    ):
        raise TypeError(
            f"full(): argument 'fill_value' (position 2) must be Number, not "
            f"{type(fill_value).__name__}"
        )
    if dtype is None:
        dtype = dt.scalar_dtype(fill_value.item() if isinstance(fill_value, Tensor) else fill_value)
    d = dt.to_dtype(dtype)
    xp = _xp(device)
    value = fill_value.item() if isinstance(fill_value, Tensor) else fill_value
    return _finish(
        xp.full(parse_size("full", (size,), varargs=False), value, dtype=d.np),
        requires_grad,
    )


def _laid_out_like(out: Tensor, input: Tensor, memory_format, name: str) -> Tensor:
    """``out`` (a fresh row-major result of a ``*_like`` call) laid out as torch lays it out:
    ``preserve_format`` keeps a dense input's strides, else the format asked for."""
    fmt = _mf.check(memory_format, name)
    data = _mf.arrange(out._data, fmt, like=input._data if fmt is _mf.preserve_format else None)
    if data is out._data:
        return out
    return _finish(data, out.requires_grad)


def _like(factory):
    def make(
        input: Tensor,
        *,
        dtype=None,
        layout=None,
        device=None,
        requires_grad: bool = False,
        memory_format=None,
        pin_memory=False,
    ) -> Tensor:
        out = factory(
            input._data.shape,
            dtype=dtype or input.dtype,
            device=device or input.device,
            requires_grad=requires_grad,
        )
        return _laid_out_like(out, input, memory_format, factory.__name__ + "_like")

    return make


zeros_like = _like(zeros)
ones_like = _like(ones)
empty_like = _like(empty)


def full_like(
    input: Tensor,
    fill_value,
    *,
    dtype=None,
    layout=None,
    device=None,
    requires_grad: bool = False,
    memory_format=None,
) -> Tensor:
    out = full(
        input._data.shape,
        fill_value,
        dtype=dtype or input.dtype,
        device=device or input.device,
        requires_grad=requires_grad,
    )
    return _laid_out_like(out, input, memory_format, "full_like")


def arange(
    start, end=None, step=1, *, dtype=None, device=None, requires_grad: bool = False
) -> Tensor:
    """Values from ``start`` to ``end`` (exclusive) by ``step``; int64 unless a bound is a float."""
    if end is None:
        start, end = 0, start
    values = [v.item() if isinstance(v, Tensor) else v for v in (start, end, step)]
    start, end, step = values
    if step == 0:
        raise RuntimeError("step must be nonzero")
    for bound in (start, end):
        if isinstance(bound, float) and not math.isfinite(bound):
            raise RuntimeError(f"unsupported range: {_bound_text(start)} -> {_bound_text(end)}")
    if (end - start) * step < 0 and end != start:
        raise RuntimeError("upper bound and lower bound inconsistent with step sign")
    if dtype is None:
        is_float = any(isinstance(v, float) for v in values)
        d = dt.get_default_dtype() if is_float else dt.int64
    else:
        d = dt.to_dtype(dtype)
    if d.category in (dt.BOOL, dt.COMPLEX):
        raise NotImplementedError(f"\"arange_cpu\" not implemented for '{d.legacy_name}'")
    n = max(math.ceil((end - start) / step), 0)
    xp = _xp(device)
    if d.category == dt.FLOAT:
        data = (xp.arange(n, dtype="float64") * step + start).astype(d.np)
    else:  # torch counts in int64 from the truncated start and step
        first, stride = int(start), int(step)
        if d is dt.int64:  # ... and sizes an int64 range from the truncated end too
            if stride == 0:
                raise ValueError("step must be nonzero")
            n = max(-((first - int(end)) // stride), 0)
        if stride:
            data = xp.arange(first, first + n * stride, stride, dtype="int64")[:n]
        else:  # a step truncated to 0 repeats the start
            data = xp.full(n, first, dtype="int64")
        data = data.astype(d.np, copy=False)
    return _finish(data, requires_grad)


def _bound_text(value) -> str:
    """A range bound as torch's message prints it (inf, -inf, nan, 2, 0.5)."""
    if isinstance(value, float) and (value.is_integer() or not math.isfinite(value)):
        return str(int(value)) if math.isfinite(value) else str(value)
    return str(value)


def _check_spaced_arguments(op: str, start, end, steps) -> None:
    """torch's parser takes an int (or a 0-d tensor) for steps, and 0-d tensors for the ends."""
    if isinstance(steps, float) or isinstance(steps, bool):
        got = ", ".join(type(v).__name__ for v in (start, end, steps))
        raise TypeError(
            f"{op}() received an invalid combination of arguments - got ({got}), but expected "
            "(Tensor start, Tensor end, int steps) or (Number start, Number end, int steps)"
        )
    shapes = [(name, v.dim()) for name, v in (("start", start), ("end", end))
              if isinstance(v, Tensor) and v.dim() != 0]  # fmt: skip
    if shapes:
        got = " and ".join(f"{name} with {n} dimension(s)" for name, n in shapes)
        raise RuntimeError(
            f"{op} only supports 0-dimensional start and end tensors, but got {got}."
        )


def _range_end(value, d: dt.dtype, xp):
    """A linspace end converted to an integer dtype as torch converts a Scalar: a float
    truncates and must fit, an int wraps (uint8 takes -3 as 253)."""
    if isinstance(value, float) and d.category != dt.BOOL:
        info = xp.iinfo(d.np)
        if not info.min - 1 < value < info.max + 1:
            raise RuntimeError(f"value cannot be converted to type {d.np.name} without overflow")
    return int(xp.asarray(int(value.real)).astype(d.np))


def _spaced(start, end, steps, d: dt.dtype, xp, exponents: bool = False):
    """torch's CPU range kernels: start and end converted to the output dtype, the first half
    counted up from start and the second half down from end, so that both ends come out exact.

    linspace counts in the output dtype (float64 for integers), each value one fused
    multiply-add (formed here in a wider type and rounded once); logspace (``exponents``)
    counts its exponents in float64 (complex128) from unrounded float ends, product and sum
    rounded apart."""
    start, end = (v.item() if isinstance(v, Tensor) else v for v in (start, end))
    if not isinstance(steps, int) or isinstance(steps, bool):
        steps = int(steps)
    if steps < 0:
        raise RuntimeError("number of steps must be non-negative")
    if d.category in (dt.FLOAT, dt.COMPLEX):
        if not exponents:
            start, end = d.np.type(start), d.np.type(end)
        compute = d.np
    else:  # an integer dtype converts the ends first (linspace(0.5, 2.5, 3) counts 0 .. 2)
        start, end = _range_end(start, d, xp), _range_end(end, d, xp)
        compute = xp.dtype("float64")
    if exponents:
        compute = xp.dtype("complex128" if d.category == dt.COMPLEX else "float64")
    start, end = compute.type(start), compute.type(end)
    if steps <= 1:
        return xp.full(steps, start, dtype=compute)
    step = (end - start) / compute.type(steps - 1)
    wide = compute
    if exponents:
        pass
    elif compute.itemsize <= 4 or compute.char == "F":
        wide = xp.dtype("complex128" if compute.kind == "c" else "float64")
    elif hasattr(xp, "longdouble") and compute.char in "dD":  # NumPy's extended precision
        wide = xp.dtype("clongdouble" if compute.kind == "c" else "longdouble")
    index = xp.arange(steps).astype(wide)
    start, end, step = wide.type(start), wide.type(end), wide.type(step)
    up = start + step * index
    down = end - step * (wide.type(steps - 1) - index)
    return xp.where(xp.arange(steps) < steps // 2, up, down).astype(compute)


def _spaced_dtype(dtype, start, end) -> dt.dtype:
    if dtype is not None:
        return dt.to_dtype(dtype)
    default = dt.get_default_dtype()
    if any(
        isinstance(v, complex) or (isinstance(v, Tensor) and v.is_complex()) for v in (start, end)
    ):
        return default.to_complex()
    return default


def linspace(
    start, end, steps: int, *, dtype=None, device=None, requires_grad: bool = False
) -> Tensor:
    """``steps`` evenly spaced values from ``start`` to ``end`` inclusive.

    >>> ember.linspace(0, 1, 5)
    tensor([0.0000, 0.2500, 0.5000, 0.7500, 1.0000])
    """
    _check_spaced_arguments("linspace", start, end, steps)
    d = _spaced_dtype(dtype, start, end)
    data = _spaced(start, end, steps, d, _xp(device))
    return _finish(data.astype(d.np), requires_grad)


def logspace(
    start,
    end,
    steps: int,
    base: float = 10.0,
    *,
    dtype=None,
    device=None,
    requires_grad: bool = False,
) -> Tensor:
    """``base`` to the powers ``linspace(start, end, steps)`` (the powers counted in the output
    dtype, or float64 for integer dtypes, as torch's CPU kernel).

    >>> ember.logspace(0, 2, 3)
    tensor([  1.,  10., 100.])
    """
    _check_spaced_arguments("logspace", start, end, steps)
    d = _spaced_dtype(dtype, start, end)
    xp = _xp(device)
    if steps == 1 and d.category != dt.COMPLEX:  # one value: base ** start, start not truncated
        first = start.item() if isinstance(start, Tensor) else start
        return _finish(xp.asarray([float(base) ** float(first)]).astype(d.np), requires_grad)
    powers = _spaced(start, end, steps, d, xp, exponents=True)
    if d.category == dt.COMPLEX:
        data = powers.dtype.type(base) ** powers
    else:  # float64 as C's pow rounds it: through NumPy's extended type (its vectorized
        # float64 power can miss by an ulp); narrower outputs do not see that ulp
        wide = xp.dtype("float64")
        if d.np.itemsize == 8 and d.category == dt.FLOAT and hasattr(xp, "longdouble"):
            wide = xp.dtype("longdouble")
        data = wide.type(base) ** powers.astype(wide)
        if d.category != dt.FLOAT:  # as C converts on x86: through int32 for narrow types
            through = "int64" if d.np.itemsize == 8 else "int32"  # (1e5 wraps in int16)
            data = data.astype("float64").astype(through)
    return _finish(data.astype(d.np), requires_grad)


def eye(
    n: int, m: int | None = None, *, dtype=None, device=None, requires_grad: bool = False
) -> Tensor:
    d = dt.to_dtype(dtype) if dtype is not None else dt.get_default_dtype()
    if n < 0:
        raise RuntimeError(f"n must be greater or equal to 0, got {n}")
    if m is not None and m < 0:
        raise RuntimeError(f"m must be greater or equal to 0, got {m}")
    xp = _xp(device)
    return _finish(xp.eye(n, m, dtype=d.np), requires_grad)


# --- random -----------------------------------------------------------------------------------
def _float_dtype(dtype, kernel: str = "check_uniform_bounds") -> dt.dtype:
    """The dtype of rand / randn / normal's samples (floating or complex: torch fills a
    complex tensor through its real view); an integer one raises the error of torch's
    ``kernel`` (the uniform or the normal one)."""
    d = dt.to_dtype(dtype) if dtype is not None else dt.get_default_dtype()
    if d.category not in (dt.FLOAT, dt.COMPLEX):
        raise NotImplementedError(f"\"{kernel}\" not implemented for '{d.legacy_name}'")
    return d


def rand(
    *listed, size=None, generator=None, dtype=None, device=None, requires_grad: bool = False
) -> Tensor:
    """Uniform samples in [0, 1)."""
    d = _float_dtype(dtype)
    rng = _sampler(generator, device)
    data = rng.random(parse_size("rand", listed, size), dtype=d.np).astype(d.np, copy=False)
    return _finish(_place(data, device), requires_grad)


def randn(
    *listed, size=None, generator=None, dtype=None, device=None, requires_grad: bool = False
) -> Tensor:
    """Standard normal samples."""
    d = _float_dtype(dtype, "normal_kernel_cpu")
    rng = _sampler(generator, device)
    shape = parse_size("randn", listed, size)
    data = rng.standard_normal(shape, dtype=d.np).astype(d.np, copy=False)
    return _finish(_place(data, device), requires_grad)


def randint(
    low,
    high=None,
    size=None,
    *,
    generator=None,
    dtype=None,
    device=None,
    requires_grad: bool = False,
) -> Tensor:
    high_position = 2
    if size is None:  # randint(high, size)
        low, high, size, high_position = 0, low, high, 1
    if high is None:
        low, high, high_position = 0, low, 1
    low = random_checks.integer_argument(low, "randint", "low", 1)
    high = random_checks.integer_argument(high, "randint", "high", high_position)
    shape = parse_size("randint", (size,), varargs=False, position=high_position + 1)
    d = dt.to_dtype(dtype) if dtype is not None else dt.int64
    # torch fills an empty tensor of the dtype with random_(low, high): its checks
    low, high = random_checks.random_bounds(low, high, d)
    rng = _sampler(generator, device)
    data = rng.integers(low, high, size=shape).astype(d.np)
    return _finish(_place(data, device), requires_grad)


def randperm(
    n: int, *, generator=None, dtype=None, device=None, requires_grad: bool = False
) -> Tensor:
    d = dt.to_dtype(dtype) if dtype is not None else dt.int64
    n = random_checks.check_randperm(n, d)
    rng = _sampler(generator, device)
    return _finish(_place(rng.permutation(n).astype(d.np), device), requires_grad)


def _random_like(input: Tensor, dtype, device, requires_grad, memory_format, name, fill):
    """A ``*_like`` random tensor as torch makes it: an empty tensor laid out like ``input``
    (its strides under ``preserve_format``), then filled in place in memory order, so a
    permuted input gets torch's values at each position."""
    blank = empty(input._data.shape, dtype=dtype or input.dtype, device=device or input.device)
    out = _laid_out_like(blank, input, memory_format, name)
    fill(out)
    return out.requires_grad_() if requires_grad else out


def _filled_like(name: str, fill):
    def make(
        input: Tensor,
        *,
        dtype=None,
        layout=None,
        device=None,
        requires_grad: bool = False,
        memory_format=None,
    ) -> Tensor:
        return _random_like(input, dtype, device, requires_grad, memory_format, name, fill)

    make.__name__ = make.__qualname__ = name
    return make


rand_like = _filled_like("rand_like", lambda t: t.uniform_())
randn_like = _filled_like("randn_like", lambda t: t.normal_())


def randint_like(
    input: Tensor,
    low,
    high=None,
    *,
    dtype=None,
    layout=None,
    device=None,
    requires_grad: bool = False,
    memory_format=None,
) -> Tensor:
    low, high = (0, low) if high is None else (low, high)
    fill = lambda t: t.random_(low, high)  # noqa: E731
    return _random_like(input, dtype, device, requires_grad, memory_format, "randint_like", fill)


class _SampleBackward(Node):
    """A sample drawn from tensor parameters (bernoulli's probabilities, normal's mean and
    std): torch records it, and its derivative for each parameter is zero."""

    def name(self) -> str:
        return self.op_name

    def backward(self, g):
        zero = g.new_zeros(g.shape)
        return tuple(zero if edge is not None else None for edge in self._edges)


class _NotImplementedBackward(Node):
    """An output torch marks as requiring grad but cannot differentiate (bernoulli with a
    number p): backward through it raises torch's error."""

    def name(self) -> str:
        return "torch::autograd::NotImplemented"

    def backward(self, g):
        raise RuntimeError(f"derivative for aten::{self.op_name} is not implemented")


def _sample_tangent(node, tangents):
    """Forward mode: a sample's tangent is zero (torch's), not absent, once a parameter has one."""
    if all(t is None for t in tangents):
        return None
    shape, np_dtype = node._meta[0]
    like = next(t for t in tangents if t is not None)
    return like.new_zeros(shape, dtype=dt.from_numpy_dtype(np_dtype))


_forward_rules.RULES["_SampleBackward"] = _sample_tangent


def _sample(data, params: tuple, op_name: str) -> Tensor:
    """``data`` as the output of a sampler whose tensor ``params`` may require grad."""
    return _record(_SampleBackward, data, params, op_name=op_name)


def normal(
    mean=0.0,
    std=1.0,
    size=None,
    *,
    generator=None,
    dtype=None,
    layout=None,
    device=None,
    pin_memory: bool = False,
    requires_grad: bool = False,
) -> Tensor:
    """Normal samples; ``mean`` and ``std`` may be tensors (broadcast) or numbers with ``size``.

    >>> ember.normal(0.0, 1.0, (2, 2), layout=ember.strided).shape
    ember.Size([2, 2])
    """
    tensor_arg = mean if isinstance(mean, Tensor) else std if isinstance(std, Tensor) else None
    rng = _sampler(generator, device if tensor_arg is None else tensor_arg.device)
    if isinstance(mean, Tensor) or isinstance(std, Tensor):
        # drawn on the host by the CPU generator (torch's stream), then moved to the device
        m = _backend.to_host(mean._data) if isinstance(mean, Tensor) else mean
        s = _backend.to_host(std._data) if isinstance(std, Tensor) else std
        ref = mean if isinstance(mean, Tensor) else std
        if isinstance(std, Tensor):
            random_checks.check_normal_std_array(s)
        else:
            random_checks.check_normal_std(s)
        import numpy as np

        shape = np.broadcast_shapes(np.shape(m), np.shape(s))
        data = (rng.standard_normal(shape, dtype=ref._data.dtype) * s + m).astype(ref._data.dtype)
        if isinstance(mean, Tensor) and isinstance(std, Tensor):
            out = _sample(_place(data, ref.device), (mean, std), "NormalBackward3")
        elif isinstance(mean, Tensor):
            out = _sample(_place(data, ref.device), (mean,), "NormalBackward1")
        else:
            out = _sample(_place(data, ref.device), (std,), "NormalBackward2")
        if requires_grad and not out.requires_grad:
            out.requires_grad = True
        return out
    random_checks.check_normal_std(std)
    d = _float_dtype(dtype, "normal_kernel_cpu")
    shape = parse_size("normal", (size,), varargs=False, position=3) if size is not None else ()
    data = rng.normal(mean, std, shape, dtype=d.np)
    return _finish(_place(data.astype(d.np, copy=False), device), requires_grad)


def bernoulli(input: Tensor, p=None, *, generator=None) -> Tensor:
    rng = _sampler(generator, input.device)
    # torch.bernoulli(probs) or the scalar-p form; drawn on the host by the CPU generator
    probs = _backend.to_host(input._data) if p is None else p
    if isinstance(probs, Tensor):
        probs = _backend.to_host(probs._data)
    if p is None or isinstance(p, Tensor):
        random_checks.check_bernoulli_probabilities(probs)
    else:
        random_checks.check_bernoulli_p(p)
    data = rng.bernoulli(probs, input._data.shape).astype(input._data.dtype)
    data = _place(data, input.device)
    if p is None:
        return _sample(data, (input,), "BernoulliBackward0")
    return _record(_NotImplementedBackward, data, (input,), op_name="bernoulli")


def multinomial(
    input: Tensor, num_samples: int, replacement: bool = False, *, generator=None
) -> Tensor:
    """Category indices drawn from the rows of ``input`` (non-negative weights), as torch's
    CPU generator draws them.

    Example::
        >>> ember.manual_seed(0)
        >>> ember.multinomial(ember.tensor([0.1, 0.0, 0.9]), 4, replacement=True)
        tensor([2, 2, 2, 2])
    """
    from ._random.multinomial import check_multinomial_args, multinomial_rows

    data = input.detach().cpu()._data
    check_multinomial_args(
        data.shape, data.dtype, input.dtype.name, int(num_samples), bool(replacement)
    )
    rows = data.reshape(math.prod(data.shape[:-1]), data.shape[-1])
    drawn = multinomial_rows(resolve_generator(generator), rows, int(num_samples), replacement)
    out = drawn.reshape(data.shape[:-1] + (int(num_samples),))
    return _wrap(_place(out, input.device))


def poisson(input: Tensor, generator=None) -> Tensor:
    """Poisson counts, one per rate in ``input`` (torch's sampler and checks)."""
    from ._random_ops import poisson as sample_poisson  # the count samplers load on first use

    return sample_poisson(input, generator)


def _state_tensor(state) -> Tensor:
    return tensor(state, dtype="uint8")


# the layers below see these factories through hooks: the autograd machinery (grad's
# grad_outputs, materialized zeros), the generators (torch's ByteTensor states)
_TENSOR_LAYER.tensor, _TENSOR_LAYER.zeros_like = tensor, zeros_like
_random_generator.as_state_tensor = _state_tensor
_random_generator.tensor_class = Tensor


__all__ = [
    "tensor",
    "as_tensor",
    "asarray",
    "from_numpy",
    "from_dlpack",
    "zeros",
    "ones",
    "empty",
    "full",
    "zeros_like",
    "ones_like",
    "empty_like",
    "full_like",
    "arange",
    "linspace",
    "logspace",
    "eye",
    "rand",
    "randn",
    "randint",
    "randperm",
    "rand_like",
    "randn_like",
    "randint_like",
    "normal",
    "bernoulli",
    "multinomial",
    "poisson",
    "default_generator",
]
