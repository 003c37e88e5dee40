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


_helpers: list = []  # one queue per helper thread of share_spans


def _helper_loop(queue) -> None:
    while True:
        queue.get()()


def _helper_queues(threads: int) -> list:
    """The queues of ``threads - 1`` helper threads (started on first use): a put wakes one
    for a few microseconds, where a thread pool's future and its bookkeeping cost ~20."""
    if len(_helpers) < threads - 1:
        with _pool_lock:
            import queue as _queue

            while len(_helpers) < threads - 1:
                q = _queue.SimpleQueue()
                name = f"ember-split-{len(_helpers)}"
                _threading.Thread(target=_helper_loop, args=(q,), name=name, daemon=True).start()
                _helpers.append(q)
    return _helpers


if hasattr(_os, "register_at_fork"):  # a forked child (DataLoader workers) has no helpers
    _os.register_at_fork(after_in_child=_helpers.clear)


def share_spans(work, spans: list, threads: int) -> list:
    """``work(*span)`` for every span, taken in turn by this thread and ``threads - 1`` helpers
    from ember's pool; the results in order, once every span has finished.

    Spans are handed out one at a time rather than fixed per thread: on a busy machine a
    helper may not get a core for milliseconds, and a fixed half would leave this thread
    waiting for it (measured at load 10 on 2 cores: a split multiply 3-20x slower than one
    call). Here this thread takes every span no helper has taken, and waits only for spans
    a helper has started.
    """
    count = len(spans)
    if count < 2 or threads < 2:
        return [work(*span) for span in spans]
    import itertools

    results = [None] * count
    errors: list = []
    claim, finish = itertools.count(), itertools.count(1)  # next() is atomic under the GIL
    done = _threading.Event()
    # the job as drain reaches it, emptied once every span has finished: a helper woken only
    # after that still holds drain, and through it must not keep the operands alive
    job = [work, spans, results, errors]

    def drain():
        while True:
            i = next(claim)
            if i >= count:
                return
            work, spans, results, errors = job
            try:
                results[i] = work(*spans[i])
            except BaseException as exc:  # re-raised on the calling thread
                errors.append(exc)
            finally:
                del work, spans, results, errors
                if next(finish) == count:
                    done.set()

    for queue in _helper_queues(threads)[: min(threads, count) - 1]:
        queue.put(drain)
    drain()
    done.wait()
    job.clear()
    if errors:
        raise errors[0]
    return results


def parallel_map(kernel, xp, data, ufunc=None):
    """``kernel(xp, data)``, split over ember's pool when ``data`` is a large NumPy array: with
    ``ufunc`` (a NumPy ufunc equal to the kernel) by :func:`split_ufunc`, else (a composite
    elementwise kernel: several passes) span by span on C-contiguous data, each span's passes
    while it is in cache; from ``SPLIT_FROM["costly"]`` elements."""
    if ufunc is not None and xp is _np:
        return split_ufunc(ufunc, data, min_size=SPLIT_FROM["costly"])
    if (
        data.size < SPLIT_FROM["costly"]
        or data.__class__ is not _np.ndarray
        or not data.flags.c_contiguous
        or get_num_threads() < 2
    ):
        return kernel(xp, data)
    flat = data.reshape(-1)
    first = kernel(xp, flat[:1])  # the result dtype, from one element
    out = _np.empty(data.size, dtype=first.dtype)

    def work(start, stop):
        out[start:stop] = kernel(xp, flat[start:stop])

    split_flat(work, data.size)
    return out.reshape(data.shape)


def split_flat(work, size: int, min_size: int = 0) -> None:
    """``work(start, stop)`` over ``[0, size)``: in spans shared by ember's pool from
    ``min_size`` elements (a fused pass over flat C-contiguous arrays, each span's steps run
    while it is in cache), else once on this thread."""
    threads = get_num_threads()
    if threads < 2 or size < min_size:
        work(0, size)
    else:
        share_spans(work, _flat_spans(size, threads), threads)


# --- one splitting primitive for elementwise ufuncs and reductions -------------------------
# NumPy releases the GIL inside a ufunc's loop, so chunks of one call run on several cores at
# once when each writes its own slice of one preallocated output (``out=``). Every element
# goes through the same loop as in one call, so the values are identical (the tests check it
# bit for bit); the output's layout is the one NumPy gives (C order), or the call is not split.
# From how many elements a split pays, per op class: measured with
# benchmarks/split_threshold.py (split / one call, float32, 2 threads; the minima over 20
# alternating calls) on a 2-core Zen 4 VM, 2026-12-02 18:52 UTC, at load 9 from other
# sessions (the script ran in its own session at high priority, see benchmarks/README.md),
# with NumPy's AVX-512 loops and with them off (NPY_DISABLE_CPU_FEATURES="X86_V4 AVX512_ICL",
# NUMBA_CPU_NAME=haswell OPENBLAS_CORETYPE=Haswell: the AVX2 family's code). A split costs
# ~12 us of CPU a call (waking a helper, the bookkeeping) and ~3 us a span. tanh: 0.63-0.83
# from 2^19 (both code paths), exp from 2^20; multiply, add, negative, greater and sum only
# break even from 2^21 to 2^22 (there a pass runs at the VM's memory bandwidth, which a
# second core barely raises). Below these sizes the split is slower than one call.
SPLIT_FROM = {
    "binary": 1 << 21,  # add, sub, mul, div, maximum ... (memory-bound)
    "unary": 1 << 21,  # neg, abs, floor ... (memory-bound)
    "costly": 1 << 19,  # exp, log, sin, tanh ... (compute-bound)
    "compare": 1 << 21,  # lt, eq ... (bool output: a quarter of the bytes written)
    "reduce": 1 << 21,  # sum, mean, amax ... over axes
}
_SPAN_ALIGN = 1024  # chunk boundaries on multiples of this many elements (whole cache lines)
_SPANS_PER_THREAD = 2  # handed out one at a time (share_spans): a slow thread takes fewer
_MIN_SPAN = 1 << 16  # elements: below this a span's Python (~3 us) weighs on its work


def _span_count(size: int, threads: int) -> int:
    return max(1, min(threads * _SPANS_PER_THREAD, size // _MIN_SPAN))


def _flat_spans(size: int, threads: int) -> list:
    step = -(-size // _span_count(size, threads))
    step = -(-step // _SPAN_ALIGN) * _SPAN_ALIGN
    return [(start, min(start + step, size)) for start in range(0, size, step)]


def _row_spans(rows: int, size: int, threads: int) -> list:
    step = -(-rows // min(rows, _span_count(size, threads)))
    return [(start, min(start + step, rows)) for start in range(0, rows, step)]


def _result_dtype(ufunc, operands):
    types = []
    for operand in operands:
        dtype = getattr(operand, "dtype", None)
        if dtype is None:  # a Python number: weak, as NumPy treats it (NEP 50)
            dtype = _np.dtype(bool) if operand.__class__ is bool else operand.__class__
        types.append(dtype)
    return ufunc.resolve_dtypes((*types, None))[-1]


def _c_ordered(array) -> bool:
    """Whether NumPy lays out a result from ``array`` in C order: C-contiguous, or strides that
    fall (zero strides, broadcast axes, aside) as C order's do."""
    if array.flags.c_contiguous:
        return True
    last = None
    for n, step in zip(array.shape, array.strides):
        if n == 1 or step == 0:
            continue
        if step < 0 or (last is not None and step > last):
            return False
        last = step
    return True


def _same_memory(out, operand) -> bool:
    """``operand`` is ``out`` itself (an in-place update) rather than an overlapping view."""
    return (
        operand.shape == out.shape
        and operand.strides == out.strides
        and operand.ctypes.data == out.ctypes.data
    )


def split_ufunc(ufunc, *operands, out=None, min_size: int | None = None):
    """``ufunc(*operands, out=out)`` for a one-output NumPy ufunc, in chunks on ember's pool
    when the result holds ``min_size`` elements or more (default ``SPLIT_FROM["binary"]``) and
    every operand is a NumPy array in C order (or a number or a size-1 array); else one call.

    Contiguous operands of the result's shape are split into flat chunks; broadcast or strided
    ones along the result's first axis. The values are those of one call, bit for bit.

    >>> import numpy
    >>> a = numpy.arange(6.0).reshape(2, 3)
    >>> split_ufunc(numpy.multiply, a, 2.0, min_size=1)
    array([[ 0.,  2.,  4.],
           [ 6.,  8., 10.]])
    """
    if min_size is None:
        min_size = SPLIT_FROM["binary"]
    threads = get_num_threads()
    if threads < 2:
        return ufunc(*operands) if out is None else ufunc(*operands, out=out)
    arrays = [o for o in operands if o.__class__ is _np.ndarray and o.size != 1]
    shape = out.shape if out is not None else None
    if shape is None:
        if not arrays:
            return ufunc(*operands)
        shape = arrays[0].shape
        for o in operands:  # 0-d operands (cached numbers) leave the shape as it is
            if o.__class__ is _np.ndarray and o.ndim and o.shape != shape:
                shape = _np.broadcast_shapes(*(_np.shape(o) for o in operands))
                break
    size = 1
    for n in shape:
        size *= n
    plain = all(
        o.__class__ is _np.ndarray
        or o.__class__ in _NUMBER_TYPES
        or o.__class__.__module__ == "numpy"
        for o in operands
    )
    if size < min_size or not plain or (out is not None and out.__class__ is not _np.ndarray):
        return ufunc(*operands) if out is None else ufunc(*operands, out=out)
    flat = all(a.shape == shape and a.flags.c_contiguous for a in arrays)
    if not flat and (not all(_c_ordered(a) for a in arrays) or shape[0] < threads):
        return ufunc(*operands) if out is None else ufunc(*operands, out=out)
    if out is not None:
        if not _c_ordered(out):
            return ufunc(*operands, out=out)
        for a in arrays:  # an overlapping view: NumPy buffers the call, chunks would not
            if _np.may_share_memory(a, out) and not _same_memory(out, a):
                return ufunc(*operands, out=out)
        flat = flat and out.flags.c_contiguous
        result = out
    else:
        result = _np.empty(shape, _result_dtype(ufunc, operands))
    if flat:
        target = result.reshape(-1)
        # size-1 arrays become 0-d, so that they broadcast against every flat chunk
        pieces = [
            (o.reshape(-1) if o.size != 1 else o.reshape(())) if o.__class__ is _np.ndarray else o
            for o in operands
        ]
        cut = [p.__class__ is _np.ndarray and p.ndim == 1 for p in pieces]

        def work(start, stop):
            args = [p[start:stop] if c else p for p, c in zip(pieces, cut)]
            ufunc(*args, out=target[start:stop])

        share_spans(work, _flat_spans(size, threads), threads)
        return result
    ndim = len(shape)
    # an operand with the result's extent on axis 0 is sliced there; one without broadcasts
    sliced = [
        o.__class__ is _np.ndarray and o.ndim == ndim and o.shape[0] == shape[0] and shape[0] > 1
        for o in operands
    ]

    def work_rows(start, stop):
        args = [o[start:stop] if cut else o for o, cut in zip(operands, sliced)]
        ufunc(*args, out=result[start:stop])

    share_spans(work_rows, _row_spans(shape[0], size, threads), threads)
    return result


_NUMBER_TYPES = (bool, int, float, complex)


def _pairwise_tree(start: int, stop: int, depth: int):
    """The runs NumPy's pairwise sum adds up separately, to recursion ``depth``: a leaf
    ``(start, stop)`` or a pair ``[left, right]``. It halves a run of n numbers at n // 2
    rounded down to a multiple of 8 (its unrolling)."""
    n = stop - start
    if depth == 0 or n < 2 * _MIN_SPAN:
        return (start, stop)
    half = n // 2
    half -= half % 8
    return [
        _pairwise_tree(start, start + half, depth - 1),
        _pairwise_tree(start + half, stop, depth - 1),
    ]


def _leaves(tree) -> list:
    return [tree] if tree.__class__ is tuple else _leaves(tree[0]) + _leaves(tree[1])


def _add_up(tree, parts):
    """The partial sums ``parts`` (an iterator, leaf order) added as the recursion adds them."""
    if tree.__class__ is tuple:
        return next(parts)
    left = _add_up(tree[0], parts)
    return left + _add_up(tree[1], parts)


def split_reduce(ufunc, data, dims: tuple, keepdim: bool, min_size: int | None = None):
    """``ufunc.reduce(data, dims, keepdims=keepdim)`` in parts on ember's pool when ``data`` is a
    NumPy array of ``min_size`` elements or more (default ``SPLIT_FROM["reduce"]``), else one
    call. Two ways, both giving one call's result bit for bit:

    - every axis, ``numpy.add`` over a C-contiguous real array: NumPy sums it pairwise, halving the
      run; each thread sums one of the halves (quarters, ...) the recursion would, and the
      partial sums are added as the recursion adds them;
    - axis 0 not reduced: each thread reduces its rows (every output element is reduced by the
      same loop as in one call).

    >>> import numpy
    >>> x = numpy.arange(12.0).reshape(3, 4)
    >>> split_reduce(numpy.add, x, (1,), False, min_size=1)
    array([ 6., 22., 38.])
    """
    if min_size is None:
        min_size = SPLIT_FROM["reduce"]
    threads = get_num_threads()
    if (
        threads < 2
        or data.__class__ is not _np.ndarray
        or data.size < min_size
        or not dims
        or (ufunc is _np.add and data.dtype.kind not in "fc")  # NumPy sums small ints as int64
    ):
        return ufunc.reduce(data, dims, None, None, keepdim)
    shape = data.shape
    # (complex sums halve their run of real numbers elsewhere: not split this way)
    if (
        len(dims) == len(shape)
        and ufunc is _np.add
        and data.dtype.kind == "f"
        and data.flags.c_contiguous
    ):
        # 2 threads: quarters, 4: eighths ... (as many as share_spans wants)
        depth = (threads * _SPANS_PER_THREAD).bit_length() - 1
        flat = data.reshape(-1)
        tree = _pairwise_tree(0, flat.size, depth)
        parts = share_spans(lambda lo, hi: ufunc.reduce(flat[lo:hi]), _leaves(tree), threads)
        total = _add_up(tree, iter(parts))
        return _np.asarray(total).reshape((1,) * len(shape)) if keepdim else total
    if 0 in dims or shape[0] < threads or not _c_ordered(data):
        return ufunc.reduce(data, dims, None, None, keepdim)
    kept = tuple(1 if axis in dims else n for axis, n in enumerate(shape))
    out = _np.empty(
        kept if keepdim else tuple(n for a, n in enumerate(shape) if a not in dims), data.dtype
    )

    def work(lo, hi):
        ufunc.reduce(data[lo:hi], dims, None, out[lo:hi], keepdim)

    share_spans(work, _row_spans(shape[0], data.size, threads), threads)
    return out


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


_core_type: list = []


def openblas_core_type() -> str:
    """The kernel set NumPy's OpenBLAS chose for this CPU ("skylakex", "haswell", ...), lower
    case; "" where that library cannot be reached."""
    if not _core_type:
        import ctypes

        name = ""
        blas = numpy_blas()
        if blas is not None:
            corename = getattr(
                ctypes.CDLL(blas.path), f"{blas.prefix}openblas_get_corename{blas.suffix}", None
            )
            if corename is not None:
                corename.restype = ctypes.c_char_p
                name = (corename() or b"").decode(errors="replace").lower()
        _core_type.append(name)
    return _core_type[0]


def cpu_features() -> dict:
    """NumPy's runtime CPU dispatch table: instruction set name -> whether this CPU has it."""
    try:
        from numpy._core._multiarray_umath import __cpu_features__ as features
    except ImportError:  # pragma: no cover - NumPy < 2
        try:
            from numpy.core._multiarray_umath import __cpu_features__ as features
        except ImportError:
            features = {}
    return features


def is_ndarray(data) -> bool:
    """Whether ``data`` is exactly a NumPy array (not CuPy's, not a subclass)."""
    return data.__class__ is _np.ndarray


# --- a branchless select for NumPy --------------------------------------------------------
# NumPy's ``where`` (and ``copyto(where=)``) branches per element: on a mask without a pattern
# (a ReLU's, half its entries true at random) the mispredictions cost ~75 us on 32 x 512
# float32 against ~2 us for a copy (a 2-core Zen 4 EPYC; timed on fresh masks, since a mask
# repeated call after call is learnt by the branch predictor and looks 3x faster). Selecting
# with bit masks instead takes the same few passes whatever the mask holds.
_SAME_WIDTH_INT = {1: _np.int8, 2: _np.int16, 4: _np.int32, 8: _np.int64}


def _bit_mask(condition, ints):
    """0 where ``condition`` (a NumPy bool array) holds, all ones elsewhere, as ``ints``."""
    return _np.subtract(condition.view(_np.int8), 1, dtype=_np.int8).astype(ints, copy=False)


# the array types whose bits select() may view: NumPy's, and those a higher layer registers
# (ember.compile's recording arrays, so that a replay selects as eager code does); not the
# meta device's, which hold no bits
BIT_SELECTABLE_TYPES = {_np.ndarray}


def _bit_selectable(condition, *arrays) -> bool:
    return (
        condition.__class__ in BIT_SELECTABLE_TYPES
        and condition.dtype == _np.bool_
        and all(
            a.__class__ in BIT_SELECTABLE_TYPES
            and a.dtype == arrays[0].dtype
            and a.dtype.kind in "biufc"
            and a.dtype.itemsize in _SAME_WIDTH_INT
            for a in arrays
        )
    )


def zero_where(condition, values):
    """``where(condition, 0, values)`` in ``values``' dtype (+0, a NaN where ``condition``
    holds is cleared too): on NumPy arrays by clearing bits, no branch per element."""
    if not (_bit_selectable(condition, values) and condition.shape == values.shape):
        xp = array_module(values)
        return xp.where(condition, xp.zeros((), dtype=values.dtype), values)
    ints = _SAME_WIDTH_INT[values.dtype.itemsize]
    return _np.bitwise_and(values.view(ints), _bit_mask(condition, ints)).view(values.dtype)


def select(condition, a, b):
    """``where(condition, a, b)`` for arrays of one dtype (broadcasting as ``where``): on NumPy
    arrays of up to 8-byte elements, from bit masks (``b ^ ((a ^ b) & ~mask)``), no branch per
    element, from 4096 elements (below, ``where``'s fewer calls are faster); else ``where``."""
    if not _bit_selectable(condition, a, b) or condition.size < 4096:
        return _MODULE_OF_TYPE.get(condition.__class__, _np).where(condition, a, b)
    ints = _SAME_WIDTH_INT[a.dtype.itemsize]
    a_bits, b_bits = a.view(ints), b.view(ints)
    # mask all ones where condition fails: keep b's bits there, a's where it holds
    chosen = _np.bitwise_xor(a_bits, b_bits)
    fail = _bit_mask(condition, ints)
    if chosen.shape != _np.broadcast_shapes(chosen.shape, fail.shape):
        chosen = _np.broadcast_to(chosen, _np.broadcast_shapes(chosen.shape, fail.shape))
    picked = _np.bitwise_and(chosen, fail)  # a ^ b where it fails, 0 where it holds
    _np.bitwise_xor(picked, a_bits, out=picked)  # b where it fails, a where it holds
    return picked.view(a.dtype)
