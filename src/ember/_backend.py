"""The backend layer: devices, the array module of each device, and a few kernels NumPy lacks.

Op code never imports numpy; it asks ``array_module`` for the module that holds a tensor's data.
"""

from __future__ import annotations

import contextlib as _contextlib
import os as _os
import sys as _sys
import threading as _threading

import numpy as _np

from . import _meta

_cupy = None
_cupy_error: str | None = None


def _tune_malloc() -> None:
    """Let glibc keep freed tensor buffers for reuse instead of returning them to the OS.

    By default glibc serves blocks above its mmap threshold with fresh pages and unmaps them
    on free, so a training loop that allocates and frees the same large tensors every step
    pays a page fault per 4 KiB on each new one (about twice the cost of a float32 tanh). Large
    buffers up to 64 MiB come from the heap instead, and up to 512 MiB of free heap is kept.
    Set EMBER_MALLOC_TUNING=0 to leave the allocator as it is.
    """
    if _os.environ.get("EMBER_MALLOC_TUNING", "1") == "0" or not _sys.platform.startswith("linux"):
        return
    try:
        import ctypes

        libc = ctypes.CDLL("libc.so.6")
        m_trim_threshold, m_mmap_threshold = -1, -3
        libc.mallopt(m_mmap_threshold, 64 << 20)
        libc.mallopt(m_trim_threshold, 512 << 20)
    except (OSError, AttributeError):  # not glibc (musl, ...): nothing to tune
        pass


_tune_malloc()


def _load_cupy():
    """Import CuPy once, and remember why it is unusable when it is."""
    global _cupy, _cupy_error
    if _cupy is not None or _cupy_error is not None:
        return _cupy
    try:
        import cupy

        if cupy.cuda.runtime.getDeviceCount() < 1:
            _cupy_error = "no CUDA GPU was found"
        else:
            _cupy = cupy
            _MODULE_OF_TYPE[cupy.ndarray] = cupy
    except Exception as exc:  # ImportError, or a CUDA driver error
        _cupy_error = f"CuPy is not usable ({type(exc).__name__}: {exc})"
    return _cupy


class device:
    """Where a tensor's data lives: ``ember.device("cpu")``, ``ember.device("cuda:0")``."""

    __slots__ = ("type", "index")

    def __init__(self, type: str | device, index: int | None = None):
        if isinstance(type, device):
            self.type, self.index = type.type, type.index
            return
        if not isinstance(type, str):
            raise TypeError(f"device(): expected a string or device, got {type!r}")
        if ":" in type:
            type, _, idx = type.partition(":")
            if index is not None or not idx.isdigit():
                raise RuntimeError(f"Invalid device string: '{type}:{idx}'")
            index = int(idx)
        if type not in ("cpu", "cuda", "meta"):
            raise RuntimeError(
                f"Expected one of cpu, cuda, meta device type at start of device string: {type}"
            )
        self.type, self.index = type, index

    def __repr__(self) -> str:
        idx = "" if self.index is None else f", index={self.index}"
        return f"device(type='{self.type}'{idx})"

    def __str__(self) -> str:
        return self.type if self.index is None else f"{self.type}:{self.index}"

    def __eq__(self, other) -> bool:
        if isinstance(other, str):
            other = device(other)
        return isinstance(other, device) and (self.type, self.index) == (other.type, other.index)

    def __hash__(self) -> int:
        return hash((self.type, self.index))

    # ``with ember.device("cuda"):`` makes factories without ``device=`` place tensors there
    def __enter__(self) -> device:
        _default_device_stack.append(_default_device[0])
        _default_device[0] = self
        return self

    def __exit__(self, *exc) -> None:
        _default_device[0] = _default_device_stack.pop()


CPU = device("cpu")
META = device("meta")  # shapes and dtypes without data: ember._meta
_MODULE_OF_TYPE: dict = {_np.ndarray: _np, _meta.MetaArray: _meta.MODULE}


_default_device = [None]  # set by ember.set_default_device; None means the CPU
_default_device_stack: list = []


def set_default_device(d) -> None:
    """Where factory functions put tensors when no ``device=`` is given (None: the CPU)."""
    _default_device[0] = None if d is None else to_device(d)


def get_default_device() -> device:
    return _default_device[0] or CPU


def to_device(d) -> device:
    if d is None:
        return _default_device[0] or CPU
    if isinstance(d, device):
        return d
    if isinstance(d, int):
        return device("cuda", d)
    return device(d)


def cuda_available() -> bool:
    return _load_cupy() is not None


def require_module(d: device):
    """The array module for device ``d``, or a clear error saying why it cannot be had."""
    if d.type == "cpu":
        return _np
    if d.type == "meta":
        return _meta.MODULE
    cupy = _load_cupy()
    if cupy is None:
        raise RuntimeError(
            f"Cannot use device '{d}': {_cupy_error}. ember runs CUDA tensors on CuPy; "
            "install cupy (for example `pip install cupy-cuda12x`) on a machine with an "
            "NVIDIA GPU, or use device='cpu'."
        )
    return cupy


def current_cuda_device() -> device:
    """``cuda:<index>`` of the current GPU: what a bare ``"cuda"`` means when moving a tensor."""
    cupy = require_module(device("cuda"))
    return device("cuda", int(cupy.cuda.runtime.getDevice()))


def array_module(data):
    """NumPy for CPU arrays, CuPy for GPU arrays, ``_meta.MODULE`` for meta arrays."""
    return _MODULE_OF_TYPE[type(data)]


def device_of(data) -> device:
    if type(data) is _np.ndarray:
        return CPU
    if type(data) is _meta.MetaArray:
        return META
    if isinstance(data, _np.ndarray):  # subclasses: ember.compile's traced arrays
        return CPU
    return device("cuda", data.device.id)


def row_major_strides(shape: tuple) -> tuple:
    """The element strides of a dense row-major array of ``shape`` (a size-0 or size-1
    dimension keeps the step of the next, as torch's contiguous strides)."""
    strides, step = [], 1
    for n in reversed(shape):
        strides.append(step)
        step *= max(n, 1)
    return tuple(reversed(strides))


def writeable(data) -> bool:
    """Whether ``data`` may be written in place: its ``flags.writeable`` (NumPy's broadcast views
    and diagonals are read-only, sparse storage says False); CuPy arrays have no read-only state
    and no such flag: always True.

    >>> import numpy
    >>> writeable(numpy.broadcast_to(numpy.ones(1), (3,)))
    False
    """
    if isinstance(data, _np.ndarray):  # subclasses too (ember.compile's traced arrays)
        return data.flags.writeable
    return getattr(data.flags, "writeable", True)


def as_array(value):
    """Make sure a kernel result is an array (NumPy turns 0-d results into scalars)."""
    if type(value) is _np.ndarray:
        return value
    if type(value) in _MODULE_OF_TYPE:
        return value
    return _np.asarray(value)


def move(data, d: device):
    """Copy an array to device ``d`` (a no-op when it is already there)."""
    if d.type == "meta":  # keeps the shape and dtype only
        return data if type(data) is _meta.MetaArray else _meta.empty(data.shape, data.dtype)
    if type(data) is _meta.MetaArray:
        raise NotImplementedError(_meta.NO_DATA)
    xp = require_module(d)
    if xp is _np:
        if type(data) is _np.ndarray:
            return data
        return data.get()
    if d.index is None:  # the current GPU
        return xp.asarray(data)
    with xp.cuda.Device(d.index):
        return xp.asarray(data)


# --- what CuPy lacks, and host round trips -------------------------------------------------
# CuPy's linalg raises NumPy's LinAlgError (singular or non-positive-definite input)
KernelLinAlgError = _np.linalg.LinAlgError


def errstate(xp, **kwargs):
    """``numpy.errstate(**kwargs)`` for NumPy arrays; nothing for CuPy, whose kernels never warn.

    >>> import numpy
    >>> with errstate(numpy, divide="ignore"):
    ...     numpy.log(numpy.zeros(1))
    array([-inf])
    """
    if _cupy is not None and xp is _cupy:
        return _contextlib.nullcontext()
    return _np.errstate(**kwargs)  # also while ember.compile records (its module stands in)


def to_host(array):
    """``array`` as a NumPy array: itself on the CPU, a copy from a GPU.

    For algorithms that only exist on the host (LAPACK routines CuPy lacks, Python loops over
    a few pivots); ``from_host`` takes the result back.
    """
    if isinstance(array, _np.ndarray):  # subclasses too (ember.compile's traced arrays)
        return array
    return move(array, CPU)


def from_host(array, like):
    """A NumPy ``array`` on the device of ``like``: itself when ``like`` is on the CPU."""
    if isinstance(like, _np.ndarray):
        return array if type(like) is not _meta.MetaArray else _meta.like(array)
    return move(array, device_of(like))


_scipy_special = []  # scipy.special, imported on the first erf/erfc so `import ember` stays fast


def _scipy_kernel(name: str, x):
    if not _scipy_special:
        import scipy.special

        _scipy_special.append(scipy.special)
    # scipy has float32/float64 loops only: half precision (and bfloat16) goes through float32
    work = x.astype(_np.float32) if x.dtype.itemsize < 4 else x
    out = getattr(_scipy_special[0], name)(work)
    if type(out) is not _meta.MetaArray:  # (NumPy turns 0-d results into scalars)
        out = _np.asarray(out)
    return out.astype(x.dtype, copy=False)


def erf(xp, x):
    """Error function: scipy.special on the CPU, cupyx.scipy.special on CUDA."""
    if _cupy is None or xp is not _cupy:
        return _scipy_kernel("erf", x)
    from cupyx.scipy.special import erf as cupy_erf

    return cupy_erf(x)


def erfc(xp, x):
    if _cupy is None or xp is not _cupy:
        return _scipy_kernel("erfc", x)
    from cupyx.scipy.special import erfc as cupy_erfc

    return cupy_erfc(x)


# --- intra-op threads: one count for NumPy's BLAS and ember's own pool ---------------------
# ``set_num_threads(n)`` sets both, as PyTorch's sets OpenMP and MKL. The BLAS is reached
# through threadpoolctl when it is installed (every BLAS loaded so far: OpenBLAS, MKL, BLIS),
# else through NumPy's OpenBLAS directly (``numpy_blas``), else left alone. At import nothing
# changes: the BLAS keeps its own default (one thread per core), as PyTorch's intra-op pool.
#
# ember's pool splits costly elementwise kernels (tanh, gelu, norms ...) over threads; NumPy
# releases the GIL inside ufunc loops. Measured on a 2-core machine (float32, forward+backward,
# pool on / off): 1.1-1.4x slower up to 2^18 elements, 0.9-1.08x at 2^20, 0.90-0.93x at 2^22;
# the hand-off to a thread (a queue, a lock, a wake-up) costs more than a smaller kernel takes,
# and a BLAS worker still spinning after a matmul takes the core the pool wants. So the pool
# only takes arrays of PARALLEL_MIN_ELEMENTS or more.
PARALLEL_MIN_ELEMENTS = 1 << 21
_num_threads = [0]
_pool_lock = _threading.Lock()
_pool = [None]


def _default_threads() -> int:
    try:
        return max(1, len(_os.sched_getaffinity(0)))
    except AttributeError:  # not Linux
        return max(1, _os.cpu_count() or 1)


def get_num_threads() -> int:
    """The number of intra-op threads (BLAS and ember's pool); the usable cores by default.

    Example::
        >>> ember.set_num_threads(2)
        >>> ember.get_num_threads()
        2
    """
    if not _num_threads[0]:
        _num_threads[0] = _default_threads()
    return _num_threads[0]


def set_num_threads(n: int) -> None:
    """Use ``n`` intra-op threads: in the BLAS NumPy calls (matmul, linalg) and in ember's
    pool for large elementwise kernels, as ``torch.set_num_threads`` sets OpenMP and MKL.

    Example::
        >>> ember.set_num_threads(1)  # e.g. one process per core
    """
    if n.__class__ is bool or not isinstance(n, int):
        raise RuntimeError(f"set_num_threads expects an int, but got {type(n).__name__}")
    if n < 1:
        raise RuntimeError("set_num_threads expects a positive integer")
    with _pool_lock:
        _num_threads[0] = n
        if _pool[0] is not None:
            _pool[0].shutdown(wait=False)
            _pool[0] = None
    set_blas_threads(n)


def set_blas_threads(n: int) -> str | None:
    """Limit the BLAS libraries loaded so far to ``n`` threads; returns how ("threadpoolctl",
    "numpy-openblas") or None when no BLAS could be reached."""
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:
        blas = numpy_blas()
        if blas is None:
            return None
        blas.set_num_threads(n)
        return "numpy-openblas"
    threadpool_limits(limits=n, user_api="blas")
    return "threadpoolctl"


def _thread_pool():
    if _pool[0] is None:
        with _pool_lock:
            if _pool[0] is None:
                from concurrent.futures import ThreadPoolExecutor

                _pool[0] = ThreadPoolExecutor(get_num_threads() - 1, thread_name_prefix="ember")
    return _pool[0]


def run_spans(work, spans: list, blas: bool = True) -> list:
    """``work(*span)`` for every span, the first on this thread and the others on ember's pool;
    the results in order, once every span has finished (also when one raised). With ``blas``
    (spans that call it) NumPy's OpenBLAS runs on one thread meanwhile: its own threads would
    oversubscribe the cores, and its worker spins for a while after a threaded GEMM."""
    if len(spans) < 2:
        return [work(*span) for span in spans]
    from concurrent.futures import wait

    with one_blas_thread(blas):
        futures = [_thread_pool().submit(work, *span) for span in spans[1:]]
        try:
            first = work(*spans[0])
        finally:
            wait(futures)
    return [first] + [future.result() for future in futures]


def parallel_map(kernel, xp, data, ufunc=None):
    """``kernel(xp, data)`` computed in chunks on several threads when ``data`` is large.

    With ``ufunc`` (a NumPy ufunc equal to the kernel) each chunk is written in place.
    """
    threads = get_num_threads()
    if (
        threads < 2
        or data.size < PARALLEL_MIN_ELEMENTS
        or xp is not _np
        or not data.flags.c_contiguous
    ):
        return kernel(xp, data)
    flat = data.reshape(-1)
    first = kernel(xp, flat[:1])  # the result dtype, from one element
    out = _np.empty(data.size, dtype=first.dtype)
    step = -(-data.size // threads)
    bounds = [(start, min(start + step, data.size)) for start in range(0, data.size, step)]

    def work(span):
        start, stop = span
        if ufunc is not None:
            ufunc(flat[start:stop], out=out[start:stop])
        else:
            out[start:stop] = kernel(xp, flat[start:stop])

    futures = [_thread_pool().submit(work, span) for span in bounds[1:]]
    work(bounds[0])
    for f in futures:
        f.result()
    return out.reshape(data.shape)


def compiled_kernels(module: str, data, *others, dtypes: str = "fd"):
    """The compiled kernel module ``ember._kernels.<module>`` (``ember._kernels.jit``) when
    kernels are on, ``data`` holds ``jit.MIN_WORK`` elements or more, and ``data`` and ``others``
    are plain NumPy arrays of one shape and of one dtype among ``dtypes`` (NumPy type
    characters), else None: the caller's NumPy path runs."""
    if data.__class__ is not _np.ndarray or data.dtype.char not in dtypes:
        return None
    for other in others:
        if other.__class__ is not _np.ndarray or other.dtype != data.dtype:
            return None
        if other.shape != data.shape:
            return None
    from ._kernels import jit

    return jit.module(module, data.size)


def compiled_map(kernel, data, *others, constants: tuple = ()):
    """A fresh array of ``data``'s shape and dtype from ``kernel(start, stop, *inputs, out,
    *constants)``, a compiled kernel over flat C-contiguous copies of ``data`` and ``others``
    (checked by :func:`compiled_kernels`: one shape, one dtype), split over ember's pool."""
    from ._kernels import jit

    inputs = [_np.ascontiguousarray(a).reshape(-1) for a in (data, *others)]
    out = _np.empty(data.shape, data.dtype)
    jit.parallel_for(kernel, data.size, *inputs, out.reshape(-1), *constants)
    return out


# --- NumPy's BLAS: one-pass y += a·x for optimizer updates, and its thread count -----------
# NumPy exposes no axpy: ``p -= lr * g`` reads and writes twice and rounds twice. Linux wheels
# of NumPy load an OpenBLAS whose CBLAS symbols ctypes can call directly; its axpy is one pass
# with a fused multiply-add, the rounding of PyTorch's vectorised CPU ``add_(alpha=)``. Where
# no such library is loaded (other platforms, MKL builds) ``numpy_blas()`` is None and callers
# use NumPy ufuncs.


class NumpyBlas:
    """axpy / axpby and the thread count of the OpenBLAS that NumPy loaded."""

    def __init__(self, lib, prefix: str, suffix: str, int_type) -> None:
        import ctypes

        self.path = lib._name
        # the symbols' spelling and integer width, for kernels that call more of the library
        self.prefix, self.suffix, self.int_type = prefix, suffix, int_type
        self._axpy, self._axpby = {}, {}
        pointer = ctypes.c_void_p
        for char, real in (("f", ctypes.c_float), ("d", ctypes.c_double)):
            letter = "s" if char == "f" else "d"
            axpy = getattr(lib, f"{prefix}cblas_{letter}axpy{suffix}")
            axpy.argtypes = [int_type, real, pointer, int_type, pointer, int_type]
            axpy.restype = None
            self._axpy[char] = axpy
            # axpby is an OpenBLAS extension: optional
            axpby = getattr(lib, f"{prefix}cblas_{letter}axpby{suffix}", None)
            if axpby is not None:
                axpby.argtypes = [int_type, real, pointer, int_type, real, pointer, int_type]
                axpby.restype = None
                self._axpby[char] = axpby
        self.has_axpby = len(self._axpby) == 2
        self._set_threads = getattr(lib, f"{prefix}openblas_set_num_threads{suffix}")
        self._set_threads.argtypes = [ctypes.c_int]
        self._set_threads.restype = None
        self._get_threads = getattr(lib, f"{prefix}openblas_get_num_threads{suffix}")
        self._get_threads.restype = ctypes.c_int

    def axpy(self, alpha: float, x, y) -> None:
        """``y += alpha * x`` in place; both C-contiguous float32 or float64 of one dtype."""
        n = y.size
        if n:
            fn = self._axpy[y.dtype.char]
            self._one_thread(fn, n, alpha, x.ctypes.data, 1, y.ctypes.data, 1)

    def axpby(self, alpha: float, x, beta: float, y) -> None:
        """``y = alpha * x + beta * y`` in place, one pass (rounded as ``y *= beta`` then a
        fused ``y += alpha * x``); only where ``has_axpby``."""
        n = y.size
        if n:
            fn = self._axpby[y.dtype.char]
            self._one_thread(fn, n, alpha, x.ctypes.data, 1, beta, y.ctypes.data, 1)

    def _one_thread(self, fn, n, *args) -> None:
        # A level-1 kernel is memory-bound: a second thread gains little, and on a busy
        # machine a descheduled worker stalls the whole call (measured: 0.16 ms became 16 ms).
        threads = self._get_threads() if n > _BLAS_THREADED_FROM else 1
        if threads > 1:
            self._set_threads(1)
        try:
            fn(n, *args)
        finally:
            if threads > 1:
                self._set_threads(threads)

    def get_num_threads(self) -> int:
        return int(self._get_threads())

    def set_num_threads(self, n: int) -> None:
        self._set_threads(int(n))


@_contextlib.contextmanager
def one_blas_thread(active: bool = True):
    """NumPy's OpenBLAS on one thread inside the block (the count restored afterwards); nothing
    happens when ``active`` is false or that library cannot be reached."""
    blas = numpy_blas() if active else None
    threads = blas.get_num_threads() if blas is not None else 1
    if threads > 1:
        blas.set_num_threads(1)
    try:
        yield
    finally:
        if threads > 1:
            blas.set_num_threads(threads)


_BLAS_THREADED_FROM = 10000  # OpenBLAS runs axpy/axpby on one thread up to this length
_numpy_blas: list = []


def _find_numpy_blas() -> NumpyBlas | None:
    if not _sys.platform.startswith("linux") or _os.environ.get("EMBER_NUMPY_BLAS", "1") == "0":
        return None
    import ctypes

    try:
        with open("/proc/self/maps") as maps:
            paths = {line.split(None, 5)[-1].strip() for line in maps if "openblas" in line}
    except OSError:
        return None
    # (symbol prefix, suffix, integer type): NumPy's wheels (ILP64, prefixed), then plain builds
    # NumPy's wheels prefix their symbols and suffix the 64-bit-integer (ILP64) ones; plain
    # builds do neither. The integer width is read from the library's own configuration,
    # never guessed: a 32-bit count where the library reads 64 bits would be garbage.
    layouts = (("scipy_", "64_"), ("", "64_"), ("scipy_", ""), ("", ""))
    # NumPy's own copy first (SciPy's wheels bring another, loaded once scipy.linalg is)
    found = (p for p in paths if ".so" in p and _os.path.exists(p))
    for path in sorted(found, key=lambda p: ("numpy" not in p, p)):
        try:
            lib = ctypes.CDLL(path)  # already loaded by NumPy: the same handle, no second copy
        except OSError:
            continue
        for prefix, suffix in layouts:
            config = getattr(lib, f"{prefix}openblas_get_config{suffix}", None)
            if config is None:
                continue
            config.restype = ctypes.c_char_p
            wide = b"USE64BITINT" in (config() or b"")
            try:
                return NumpyBlas(lib, prefix, suffix, ctypes.c_int64 if wide else ctypes.c_int)
            except AttributeError:
                continue
    return None


def numpy_blas() -> NumpyBlas | None:
    """The OpenBLAS NumPy uses, or None where it cannot be reached (then use NumPy ufuncs)."""
    if not _numpy_blas:
        with _pool_lock:
            if not _numpy_blas:
                _numpy_blas.append(_find_numpy_blas())
    return _numpy_blas[0]
