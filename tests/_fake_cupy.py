"""A NumPy-backed stand-in for CuPy, so ember's CUDA path runs (and is caught) without a GPU.

``ndarray`` wraps a NumPy array and behaves like ``cupy.ndarray`` where ember touches it: the
arithmetic dunders, indexing, the attributes, the methods, ``.get()``, ``__array_ufunc__`` and
``__array_function__`` (as CuPy's NEP-18 support does). Like CuPy it refuses to turn into a
NumPy array implicitly (``__array__`` raises TypeError) and refuses NumPy arrays as operands, so
any op that calls ``numpy`` on device data instead of the array's own module fails loudly.

The module object forwards every other name to NumPy, wrapping results; ``cuda`` holds a fake
runtime, streams, events and a memory pool that counts the bytes of every array made;
``ElementwiseKernel``/``ReductionKernel``/``RawKernel`` cannot run CUDA C, so a call runs the
NumPy reference that ``ember._kernels.cuda_fused`` registers under the kernel's name.

``install(monkeypatch)`` puts it in place of CuPy for one test.
"""

from __future__ import annotations

import operator
import sys
import types
import warnings
import weakref

import numpy as np

_FAKE = None  # the FakeCupy installed now (streams and devices find their state through it)

_NUMPY_REFUSED = (
    "Unsupported type <class 'numpy.ndarray'>: the fake CuPy, like CuPy, does not take NumPy "
    "arrays as operands"
)
_IMPLICIT = (
    "Implicit conversion to a NumPy array is not allowed. Please use `.get()` to construct a "
    "NumPy array explicitly."
)


# --- the array ---------------------------------------------------------------------------------


class _Device:
    __slots__ = ("id",)

    def __init__(self, index: int):
        self.id = index

    def __repr__(self) -> str:
        return f"<CUDA Device {self.id}>"

    def __eq__(self, other) -> bool:
        return isinstance(other, _Device) and other.id == self.id

    def __hash__(self) -> int:
        return hash(self.id)


class _Flags:
    """CuPy's flags: read-only, and without NumPy's ``writeable`` (a CuPy array is always
    writable). ``LENIENT_FLAGS`` adds a read-only ``writeable = True`` for runs that should get
    past the places that still read it (see ``test_fake_device``)."""

    __slots__ = ("_c", "_f", "_own")

    def __init__(self, a: np.ndarray):
        self._c, self._f, self._own = a.flags.c_contiguous, a.flags.f_contiguous, a.base is None

    c_contiguous = property(lambda self: self._c)
    f_contiguous = property(lambda self: self._f)
    owndata = property(lambda self: self._own)

    def __getattr__(self, name):
        if name == "writeable" and LENIENT_FLAGS:
            return True
        raise AttributeError(f"'cupy._core.flags.Flags' object has no attribute '{name}'")

    def __getitem__(self, key: str) -> bool:
        return {"C_CONTIGUOUS": self._c, "F_CONTIGUOUS": self._f, "OWNDATA": self._own}[key]


LENIENT_FLAGS = False


class _Memory:
    def __init__(self, a: np.ndarray):
        self.ptr = int(a.__array_interface__["data"][0])


def _unwrap(value, strict: bool = True):
    """NumPy arrays inside ``value`` (the fake's own arrays unwrapped); NumPy arrays refused."""
    cls = value.__class__
    if cls is ndarray:
        return value._a
    if cls is np.ndarray:
        if strict:
            raise TypeError(_NUMPY_REFUSED)
        return value
    if cls is list or cls is tuple:
        return cls(_unwrap(v, strict) for v in value)
    if cls is dict:
        return {k: _unwrap(v, strict) for k, v in value.items()}
    if cls is _FakeCupy or cls is _WrappedModule:
        return np
    return value


def _wrap(value):
    """The fake's arrays for NumPy results (scalars become 0-d arrays, as CuPy returns them)."""
    if isinstance(value, np.ndarray):
        if value.__class__ is not np.ndarray:
            value = value.view(np.ndarray)
        if not value.flags.writeable:  # CuPy's views (diagonal, broadcast_to) are writable
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", DeprecationWarning)  # broadcast views
                try:
                    value.flags.writeable = True
                except ValueError:  # NumPy refuses for some views of read-only memory
                    pass
        return ndarray._of(value)
    if isinstance(value, np.generic):
        return ndarray._of(np.asarray(value))
    if isinstance(value, tuple):
        return tuple(_wrap(v) for v in value)
    if isinstance(value, list):
        return [_wrap(v) for v in value]
    return value


def _check_dtype(a: np.ndarray) -> None:
    if a.dtype.name == "bfloat16":
        raise TypeError("Unsupported dtype bfloat16")  # as CuPy 13/14 answers


_counted: dict = {}  # id of a NumPy buffer -> bytes held for it in the fake pool


def _count(a: np.ndarray) -> None:
    """Note a new device buffer in the fake pool, and free it when the buffer goes."""
    base = a
    while isinstance(base.base, np.ndarray):
        base = base.base
    key = id(base)
    if key in _counted or _FAKE is None or base.nbytes == 0:
        return
    size = base.nbytes
    fake = _FAKE
    allocator = fake.cuda.allocator
    (allocator or fake.pool.malloc)(size)
    _counted[key] = size

    def release(key=key, size=size, pool=fake.pool):
        _counted.pop(key, None)
        pool.free(size)

    weakref.finalize(base, release)


def _binary(ufunc, reflected: bool = False):
    def method(self, other):
        other = _unwrap(other)
        if reflected:
            return _wrap(ufunc(other, self._a))
        return _wrap(ufunc(self._a, other))

    return method


def _inplace(ufunc):
    def method(self, other):
        ufunc(self._a, _unwrap(other), out=self._a)
        return self

    return method


class ndarray:
    """A device array of the fake CuPy: a NumPy array that will not leave the device unasked."""

    __slots__ = ("_a", "__weakref__")
    __array_priority__ = 100

    def __init__(self, shape, dtype=float, memptr=None, strides=None, order="C"):
        self._a = np.empty(shape, dtype=dtype, order=order)
        _check_dtype(self._a)
        _count(self._a)

    @classmethod
    def _of(cls, a: np.ndarray) -> ndarray:
        _check_dtype(a)
        out = object.__new__(cls)
        out._a = a
        _count(a)
        return out

    # the boundary with NumPy
    def __array__(self, *args, **kwargs):
        raise TypeError(_IMPLICIT)

    def get(self, stream=None, order="C", out=None, blocking=True) -> np.ndarray:
        return np.array(self._a, order=order)

    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        inputs = _unwrap(inputs)
        out = kwargs.get("out")
        kwargs = _unwrap(kwargs)
        result = getattr(ufunc, method)(*inputs, **kwargs)
        if out is not None:
            return out[0] if isinstance(out, tuple) and len(out) == 1 else out
        return _wrap(result)

    def __array_function__(self, func, types, args, kwargs):
        return _call(func, args, kwargs)

    def __dlpack__(self, *args, **kwargs):
        kwargs.pop("stream", None)
        return self._a.__dlpack__(*args, **kwargs)

    def __dlpack_device__(self):
        return (2, 0)  # kDLCUDA, device 0

    # attributes
    shape = property(lambda self: self._a.shape)
    dtype = property(lambda self: self._a.dtype)
    ndim = property(lambda self: self._a.ndim)
    size = property(lambda self: self._a.size)
    strides = property(lambda self: self._a.strides)
    itemsize = property(lambda self: self._a.itemsize)
    nbytes = property(lambda self: self._a.nbytes)
    flags = property(lambda self: _Flags(self._a))
    data = property(lambda self: _Memory(self._a))
    device = property(lambda self: _Device(0))
    T = property(lambda self: _wrap(self._a.T))
    mT = property(lambda self: _wrap(np.swapaxes(self._a, -1, -2)))

    @property
    def real(self):
        return _wrap(self._a.real)

    @real.setter
    def real(self, value):
        self._a.real = _unwrap(value)

    @property
    def imag(self):
        return _wrap(self._a.imag)

    @imag.setter
    def imag(self, value):
        self._a.imag = _unwrap(value)

    @property
    def __cuda_array_interface__(self) -> dict:
        a = self._a
        return {"shape": a.shape, "typestr": a.dtype.str, "data": (self.data.ptr, False),
                "strides": None if a.flags.c_contiguous else a.strides, "version": 3}  # fmt: skip

    @property
    def base(self):
        return None if self._a.base is None else _wrap(self._a.base)

    def __getattr__(self, name):
        # methods (sum, reshape, astype, view, ...) run on the NumPy array, results wrapped;
        # NumPy's own protocols (__array_interface__, __array_struct__) must not leak through
        if name.startswith("__") or name in ("ctypes", "tofile", "dumps", "dump"):
            raise AttributeError(f"'cupy.ndarray' object has no attribute '{name}'")
        attr = getattr(self._a, name)
        if callable(attr):
            return lambda *args, **kwargs: _wrap(attr(*_unwrap(args), **_unwrap(kwargs)))
        return attr

    # the Python protocols
    def __len__(self) -> int:
        return len(self._a)

    def __iter__(self):
        return (_wrap(row) for row in self._a)

    def __getitem__(self, key):
        return _wrap(self._a[_unwrap(key, strict=False)])

    def __setitem__(self, key, value):
        self._a[_unwrap(key, strict=False)] = _unwrap(value)

    def __bool__(self) -> bool:
        return bool(self._a)

    def __float__(self) -> float:
        return float(self._a)

    def __int__(self) -> int:
        return int(self._a)

    def __complex__(self) -> complex:
        return complex(self._a)

    def __index__(self) -> int:
        return operator.index(self._a)

    def __repr__(self) -> str:
        return repr(self._a).replace("array(", "fake_cupy.array(", 1)

    __str__ = lambda self: str(self._a)  # noqa: E731
    __hash__ = None

    def __copy__(self):
        return _wrap(self._a.copy())

    def __deepcopy__(self, memo):
        return _wrap(self._a.copy())

    def __reduce__(self):
        raise TypeError("the fake CuPy arrays are not pickled: use .get()")

    def __neg__(self):
        return _wrap(-self._a)

    def __pos__(self):
        return _wrap(+self._a)

    def __abs__(self):
        return _wrap(abs(self._a))

    def __invert__(self):
        return _wrap(~self._a)

    __add__, __radd__, __iadd__ = _binary(np.add), _binary(np.add, True), _inplace(np.add)
    __sub__, __rsub__ = _binary(np.subtract), _binary(np.subtract, True)
    __isub__ = _inplace(np.subtract)
    __mul__, __rmul__ = _binary(np.multiply), _binary(np.multiply, True)
    __imul__ = _inplace(np.multiply)
    __truediv__, __rtruediv__ = _binary(np.true_divide), _binary(np.true_divide, True)
    __itruediv__ = _inplace(np.true_divide)
    __floordiv__, __rfloordiv__ = _binary(np.floor_divide), _binary(np.floor_divide, True)
    __ifloordiv__ = _inplace(np.floor_divide)
    __mod__, __rmod__ = _binary(np.remainder), _binary(np.remainder, True)
    __imod__ = _inplace(np.remainder)
    __pow__, __rpow__, __ipow__ = _binary(np.power), _binary(np.power, True), _inplace(np.power)
    __matmul__, __rmatmul__ = _binary(np.matmul), _binary(np.matmul, True)
    __and__, __rand__, __iand__ = (
        _binary(np.bitwise_and),
        _binary(np.bitwise_and, True),
        _inplace(np.bitwise_and),
    )
    __or__, __ror__, __ior__ = (
        _binary(np.bitwise_or),
        _binary(np.bitwise_or, True),
        _inplace(np.bitwise_or),
    )
    __xor__, __rxor__, __ixor__ = (
        _binary(np.bitwise_xor),
        _binary(np.bitwise_xor, True),
        _inplace(np.bitwise_xor),
    )
    __lshift__, __rshift__ = _binary(np.left_shift), _binary(np.right_shift)
    __lt__, __le__ = _binary(np.less), _binary(np.less_equal)
    __gt__, __ge__ = _binary(np.greater), _binary(np.greater_equal)
    __eq__, __ne__ = _binary(np.equal), _binary(np.not_equal)


def _call(func, args, kwargs):
    """``func`` (a NumPy function) on the fake's arrays; ``out=`` answers with the fake array."""
    out = kwargs.get("out")
    result = func(*_unwrap(args), **_unwrap(kwargs))
    if out is not None:
        return out
    return _wrap(result)


# --- the module ----------------------------------------------------------------------------------


class _Wrapped:
    """A NumPy function (or ufunc) seen through the fake module."""

    def __init__(self, func):
        self._func = func
        self.__name__ = getattr(func, "__name__", "function")

    def __call__(self, *args, **kwargs):
        return _call(self._func, args, kwargs)

    def __getattr__(self, name):  # ufunc.reduce / .at / .outer / .accumulate
        attr = getattr(self._func, name)
        if callable(attr) and not isinstance(attr, type):
            return _Wrapped(attr)
        return attr


class _WrappedModule:
    """A NumPy submodule (linalg, fft, lib.stride_tricks) whose functions take the fake arrays."""

    def __init__(self, module):
        self._module = module

    def __getattr__(self, name):
        attr = getattr(self._module, name)
        if isinstance(attr, types.ModuleType):
            return _WrappedModule(attr)
        if callable(attr) and not isinstance(attr, type):
            return _Wrapped(attr)
        return attr


def asarray(a, dtype=None, order=None, *, blocking=False):
    """Device data from anything: the fake's arrays stay (cast if asked), host data is copied."""
    if isinstance(a, ndarray):
        return a if dtype is None or a.dtype == np.dtype(dtype) else a.astype(dtype)
    host = np.array(_unwrap(a, strict=False), dtype=dtype, order=order or "K")
    return ndarray._of(host)


def array(a, dtype=None, copy=True, order="K", ndmin=0):
    host = np.array(_unwrap(a, strict=False), dtype=dtype, copy=True, order=order, ndmin=ndmin)
    return ndarray._of(host)


def asnumpy(a, stream=None, order="C", out=None, blocking=True):
    if isinstance(a, ndarray):
        return a.get()
    return np.asarray(a, order=order)


def ascontiguousarray(a, dtype=None):
    return _wrap(np.ascontiguousarray(_unwrap(a), dtype=dtype))


class _HostCapsule:
    """A capsule of the fake's (host) memory handed to NumPy, which only imports CPU data."""

    def __init__(self, capsule):
        self._capsule = capsule

    def __dlpack__(self, *args, **kwargs):
        return self._capsule

    def __dlpack_device__(self):
        return (1, 0)


def from_dlpack(obj):
    if isinstance(obj, ndarray):
        return _wrap(np.from_dlpack(obj._a))
    if obj.__dlpack_device__()[0] != 2:
        raise RuntimeError("the fake CuPy, as CuPy, takes only CUDA DLPack tensors here")
    return _wrap(np.from_dlpack(_HostCapsule(obj.__dlpack__())))


def fuse(*args, **kwargs):
    """``cupy.fuse``: the function itself (NumPy runs it unfused)."""
    if len(args) == 1 and callable(args[0]) and not kwargs:
        return args[0]
    return lambda fn: fn


# --- kernels: CUDA C cannot run here, so a kernel call runs the registered NumPy reference ------

_REFERENCES: dict = {}  # kernel name -> NumPy function with the kernel's calling convention
compiled_sources: list = []  # (kind, name, source) of every kernel built, for tests to inspect
launched: list = []  # the name of every RawKernel launch, in order (install() empties it)


def _reference(name: str):
    if name not in _REFERENCES:
        from ember._kernels import cuda_fused as kernels

        _REFERENCES.update(kernels.NUMPY_REFERENCES)
    if name not in _REFERENCES:
        raise NotImplementedError(f"the fake CuPy has no NumPy reference for kernel {name!r}")
    return _REFERENCES[name]


class ElementwiseKernel:
    def __init__(self, in_params, out_params, operation, name="kernel", **kwargs):
        self.name, self.in_params, self.out_params = name, in_params, out_params
        compiled_sources.append(("elementwise", name, operation))

    def __call__(self, *args, **kwargs):
        n_in = len([p for p in self.in_params.split(",") if p.strip()])
        n_out = len([p for p in self.out_params.split(",") if p.strip()])
        result = _reference(self.name)(*_unwrap(args[:n_in]))
        results = result if isinstance(result, tuple) else (result,)
        given = args[n_in:]
        if given:
            for out, value in zip(given, results, strict=False):
                out._a[...] = value
            return given[0] if n_out == 1 else tuple(given)
        wrapped = tuple(_wrap(np.asarray(r)) for r in results)
        return wrapped[0] if n_out == 1 else wrapped


class ReductionKernel:
    def __init__(self, in_params, out_params, map_expr, reduce_expr, post_map_expr, identity,
                 name="reduce_kernel", **kwargs):  # fmt: skip
        self.name = name
        compiled_sources.append(("reduction", name, map_expr))

    def __call__(self, *args, axis=None, keepdims=False, **kwargs):
        return _wrap(_reference(self.name)(*_unwrap(args), axis=axis, keepdims=keepdims))


class RawKernel:
    def __init__(self, code, name, options=(), **kwargs):
        self.code, self.name = code, name
        compiled_sources.append(("raw", name, code))

    def __call__(self, grid, block, args, shared_mem=0, **kwargs):
        launched.append(self.name)
        _reference(self.name)(*_unwrap(args))  # writes its outputs in place, as the kernel does


# --- cuda: runtime, devices, streams, events, the memory pools -----------------------------------


class FakeRuntime:
    def __init__(self):
        self.device = 0
        self.synchronized = 0

    def getDeviceCount(self):
        return 2

    def getDevice(self):
        return self.device

    def setDevice(self, index):
        self.device = index

    def getDeviceProperties(self, index):
        return {
            "name": b"NVIDIA H200",
            "major": 9,
            "minor": 0,
            "totalGlobalMem": 141 << 30,
            "multiProcessorCount": 132,
        }

    def memGetInfo(self):
        return (100 << 30, 141 << 30)

    def deviceSynchronize(self):
        self.synchronized += 1


class FakePool:
    def __init__(self):
        self.used = 0
        self.held = 0

    def used_bytes(self):
        return self.used

    def total_bytes(self):
        return self.held

    def malloc(self, size):
        self.used += size
        self.held = max(self.held, self.used)
        return ("memory", size)

    def free(self, size):
        self.used -= size

    def free_all_blocks(self):
        self.held = self.used


class FakeStream:
    count = 0

    def __init__(self, non_blocking=False, priority=None, ptr=None):
        FakeStream.count += 1
        self.ptr = ptr if ptr is not None else 0x1000 + FakeStream.count
        self.done = True
        self.device_id = 0
        self.waited = []

    def synchronize(self):
        pass

    def wait_event(self, event):
        self.waited.append(event)

    def __enter__(self):
        _FAKE.current.append(self)

    def __exit__(self, *exc):
        _FAKE.current.pop()


class FakeEvent:
    def __init__(self, block=False, disable_timing=True, interprocess=False):
        self.timing = not disable_timing
        self.recorded_on = None
        self.done = True

    def record(self, stream=None):
        self.recorded_on = stream

    def synchronize(self):
        pass


class FakeDevice:
    def __init__(self, index=0):
        self.index = index
        self.id = index

    def __enter__(self):
        self.prev = _FAKE.cuda.runtime.device
        _FAKE.cuda.runtime.device = self.index

    def __exit__(self, *exc):
        _FAKE.cuda.runtime.device = self.prev

    def synchronize(self):
        pass


class FakeCuda:
    def __init__(self):
        self.runtime = FakeRuntime()
        self.allocator = None
        self.Device = FakeDevice
        self.Stream = FakeStream
        self.Stream.null = FakeStream(ptr=0)
        self.Event = FakeEvent
        self.compiler = types.SimpleNamespace()

    def set_allocator(self, fn):
        self.allocator = fn

    def get_current_stream(self):
        return _FAKE.current[-1] if _FAKE.current else self.Stream.null

    def get_elapsed_time(self, start, end):
        return 1.5


class FakeRandom(_WrappedModule):
    """``cupy.random`` over a seeded NumPy RandomState; the seeds given are noted."""

    def __init__(self):
        super().__init__(np.random)
        self.seeds = []
        self._state = np.random.RandomState(0)

    def seed(self, value=None):
        self.seeds.append(value)
        self._state = np.random.RandomState(value)

    def __getattr__(self, name):
        if hasattr(np.random.RandomState, name):
            return _Wrapped(getattr(self._state, name))
        return super().__getattr__(name)


class _FakeCupy:
    """The module object: CuPy's own names here, NumPy's through ``__getattr__``."""

    ndarray = ndarray
    asarray = staticmethod(asarray)
    array = staticmethod(array)
    asnumpy = staticmethod(asnumpy)
    ascontiguousarray = staticmethod(ascontiguousarray)
    from_dlpack = staticmethod(from_dlpack)
    fuse = staticmethod(fuse)
    ElementwiseKernel = ElementwiseKernel
    ReductionKernel = ReductionKernel
    RawKernel = RawKernel
    __name__ = "cupy"
    __version__ = "14.0.0+fake"

    def __init__(self):
        self.cuda = FakeCuda()
        self.random = FakeRandom()
        self.pool = FakePool()
        self.pinned = FakePool()
        self.current = []
        self.linalg = _WrappedModule(np.linalg)
        self.fft = _WrappedModule(np.fft)
        self.lib = _WrappedModule(np.lib)

    def get_default_memory_pool(self):
        return self.pool

    def get_default_pinned_memory_pool(self):
        return self.pinned

    def get_array_module(self, *args):
        return self if any(isinstance(a, ndarray) for a in args) else np

    def __getattr__(self, name):
        attr = getattr(np, name)
        if isinstance(attr, types.ModuleType):
            return _WrappedModule(attr)
        if callable(attr) and not isinstance(attr, type):
            return _Wrapped(attr)
        return attr


def _special_module():
    import scipy.special

    special = types.ModuleType("cupyx.scipy.special")
    for name in ("erf", "erfc", "erfinv", "erfcinv", "gammaln", "digamma", "polygamma", "i0",
                 "i0e", "i1", "i1e", "ndtr", "ndtri", "log_ndtr", "expit", "logit", "xlogy",
                 "xlog1py", "zeta", "entr", "gammainc", "gammaincc", "sinc", "multigammaln",
                 "log_softmax", "softmax", "logsumexp", "erfcx", "spherical_yn"):  # fmt: skip
        if hasattr(scipy.special, name):
            setattr(special, name, _Wrapped(getattr(scipy.special, name)))
    return special


def _linalg_module():
    import scipy.linalg

    return _WrappedModule(scipy.linalg)


def install(monkeypatch, lenient_flags: bool = False) -> _FakeCupy:
    """Make ember see the fake CuPy (and ``cupyx``) for the rest of one test."""
    global _FAKE
    monkeypatch.setattr(sys.modules[__name__], "LENIENT_FLAGS", lenient_flags)
    from ember import _backend
    from ember.cuda import _memory

    fake = _FakeCupy()
    _FAKE = fake
    launched.clear()
    monkeypatch.setattr(_backend, "_cupy", fake)
    monkeypatch.setattr(_backend, "_cupy_error", None)
    monkeypatch.setitem(_backend._MODULE_OF_TYPE, ndarray, fake)
    monkeypatch.setattr(_memory, "_peaks", {})
    monkeypatch.setattr(_memory, "_tracking", [None])
    cupyx = types.ModuleType("cupyx")
    cupyx.scipy = types.ModuleType("cupyx.scipy")
    cupyx.scipy.special = _special_module()
    cupyx.scipy.linalg = _linalg_module()
    monkeypatch.setitem(sys.modules, "cupyx", cupyx)
    monkeypatch.setitem(sys.modules, "cupyx.scipy", cupyx.scipy)
    monkeypatch.setitem(sys.modules, "cupyx.scipy.special", cupyx.scipy.special)
    monkeypatch.setitem(sys.modules, "cupyx.scipy.linalg", cupyx.scipy.linalg)
    monkeypatch.setitem(sys.modules, "cupy", fake)
    _forget_cached_modules(monkeypatch)
    return fake


def _forget_cached_modules(monkeypatch) -> None:
    """ember caches the special-function module per array module: start each test afresh."""
    try:
        from ember.ops import special
    except ImportError:  # pragma: no cover
        return
    for name in ("_MODULES", "_modules", "_cache"):
        if isinstance(getattr(special, name, None), dict):
            monkeypatch.setattr(special, name, {})
