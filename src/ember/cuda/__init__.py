"""ember.cuda: devices, streams, events and memory statistics of CUDA GPUs, through CuPy.

Without CuPy or a GPU every query answers as PyTorch's CPU-only build does: ``is_available()``
is False, ``device_count()`` 0, the memory counters 0, and what needs a device raises.

Example::
    >>> ember.cuda.is_available()
    False
    >>> ember.cuda.memory_allocated()
    0
"""

from __future__ import annotations

from .. import _backend
from .._errors import OutOfMemoryError
from ._compat import (
    can_device_access_peer,
    get_per_process_memory_fraction,
    get_rng_state,
    get_rng_state_all,
    initial_seed,
    is_tf32_supported,
    max_memory_cached,
    memory_cached,
    memory_stats_as_nested_dict,
    reset_max_memory_cached,
    seed_all,
    set_per_process_memory_fraction,
    set_rng_state,
    set_rng_state_all,
    set_stream,
)
from ._memory import (
    empty_cache,
    max_memory_allocated,
    max_memory_reserved,
    mem_get_info,
    memory_allocated,
    memory_reserved,
    memory_stats,
    memory_summary,
    reset_accumulated_memory_stats,
    reset_max_memory_allocated,
    reset_peak_memory_stats,
)
from ._streams import Event, Stream, StreamContext, current_stream, default_stream, stream

__all__ = [
    "OutOfMemoryError",
    "Event",
    "Stream",
    "StreamContext",
    "current_device",
    "current_stream",
    "default_stream",
    "device",
    "device_count",
    "empty_cache",
    "get_device_capability",
    "get_device_name",
    "get_device_properties",
    "init",
    "is_available",
    "is_bf16_supported",
    "is_initialized",
    "manual_seed",
    "manual_seed_all",
    "max_memory_allocated",
    "max_memory_reserved",
    "mem_get_info",
    "memory_allocated",
    "memory_reserved",
    "memory_stats",
    "memory_summary",
    "reset_accumulated_memory_stats",
    "reset_max_memory_allocated",
    "reset_peak_memory_stats",
    "seed",
    "set_device",
    "stream",
    "synchronize",
]


def is_available() -> bool:
    """True when CuPy imports and sees at least one NVIDIA GPU."""
    return _backend.cuda_available()


def is_initialized() -> bool:
    """Whether ember has loaded CuPy and found a GPU."""
    return _backend._cupy is not None


def init() -> None:
    """Load CuPy and check for a GPU now rather than on first use."""
    require()


def require():
    """The CuPy module, or an error saying why CUDA cannot be used here."""
    cupy = _backend._load_cupy()
    if cupy is None:
        raise AssertionError(
            f"Torch not compiled with CUDA enabled: ember runs CUDA on CuPy and {_reason()}. "
            "Install the gpu extra (`pip install ember[gpu]`) on a machine with an NVIDIA GPU."
        )
    return cupy


def _reason() -> str:
    return _backend._cupy_error or "CuPy is not usable"


def device_count() -> int:
    """The number of CUDA GPUs CuPy sees (0 without CuPy or a GPU)."""
    if not is_available():
        return 0
    return int(_backend._cupy.cuda.runtime.getDeviceCount())


def _device_index(device, optional: bool = True) -> int:
    """A device index from an int, ``"cuda:1"``, an ember device or None (the current one)."""
    if device is None:
        return current_device() if not optional else -1
    if isinstance(device, int):
        return device
    d = _backend.to_device(device)
    if d.type != "cuda":
        raise ValueError(f"Expected a cuda device, but got: {d}")
    if d.index is None:
        return current_device() if not optional else -1
    return d.index


def current_device() -> int:
    """The index of the GPU new CUDA tensors go to."""
    return int(require().cuda.runtime.getDevice())


def set_device(device) -> None:
    """Make ``device`` the current GPU (a negative index does nothing, as in PyTorch)."""
    index = _device_index(device)
    if index >= 0:
        require().cuda.runtime.setDevice(index)


class device:
    """Context manager that makes a GPU current inside the block (``None`` or -1: no change).

    Example::
        >>> with ember.cuda.device(1):
        ...     x = ember.ones(2, device="cuda")   # on cuda:1
    """

    def __init__(self, device):
        self.idx = _device_index(device)
        self.prev_idx = -1

    def __enter__(self):
        if self.idx >= 0:
            runtime = require().cuda.runtime
            self.prev_idx = int(runtime.getDevice())
            if self.prev_idx != self.idx:
                runtime.setDevice(self.idx)
        return self

    def __exit__(self, *exc) -> bool:
        if self.idx >= 0 and self.prev_idx != self.idx:
            require().cuda.runtime.setDevice(self.prev_idx)
        return False


def synchronize(device=None) -> None:
    """Wait until every kernel queued on ``device`` (default: the current GPU) has finished."""
    cupy = require()
    index = _device_index(device, optional=False)
    with cupy.cuda.Device(index):
        cupy.cuda.runtime.deviceSynchronize()


class _CudaDeviceProperties:
    """What ``get_device_properties`` answers: name, compute capability, memory, SM count."""

    def __init__(self, props: dict):
        name = props["name"]
        self.name = name.decode() if isinstance(name, bytes) else str(name)
        self.major = int(props["major"])
        self.minor = int(props["minor"])
        self.total_memory = int(props["totalGlobalMem"])
        self.multi_processor_count = int(props["multiProcessorCount"])
        self.is_integrated = int(props.get("integrated", 0))
        self.is_multi_gpu_board = int(props.get("isMultiGpuBoard", 0))
        self.L2_cache_size = int(props.get("l2CacheSize", 0))

    def __repr__(self) -> str:
        return (
            f"_CudaDeviceProperties(name='{self.name}', major={self.major}, minor={self.minor}, "
            f"total_memory={self.total_memory // (1 << 20)}MB, "
            f"multi_processor_count={self.multi_processor_count})"
        )


def get_device_properties(device=None) -> _CudaDeviceProperties:
    cupy = require()
    index = _device_index(device, optional=False)
    if not 0 <= index < device_count():
        raise AssertionError("Invalid device id")
    return _CudaDeviceProperties(cupy.cuda.runtime.getDeviceProperties(index))


def get_device_name(device=None) -> str:
    """The GPU's name, e.g. ``'NVIDIA H200'``."""
    return get_device_properties(device).name


def get_device_capability(device=None) -> tuple:
    """The GPU's compute capability as (major, minor), e.g. (9, 0) for Hopper."""
    props = get_device_properties(device)
    return props.major, props.minor


def is_bf16_supported(including_emulation: bool = True) -> bool:
    """Whether bfloat16 CUDA tensors work here: an Ampere or newer GPU, and a CuPy that can hold
    bfloat16 arrays."""
    if not is_available():
        return False
    if get_device_capability()[0] < 8:
        return False
    from .. import _dtype

    if not _dtype.is_available(_dtype.bfloat16):
        return False
    try:
        _backend._cupy.zeros(1, dtype=_dtype.bfloat16.np)
    except Exception:  # CuPy without bfloat16 support raises its own error types
        return False
    return True


def manual_seed(seed: int) -> None:
    """Seed the current GPU's generator (nothing happens without a GPU, as in PyTorch)."""
    if is_available():
        _backend._cupy.random.seed(int(seed) % (1 << 32))


def manual_seed_all(seed: int) -> None:
    """Seed the generators of every GPU."""
    if is_available():
        cupy = _backend._cupy
        for index in range(device_count()):
            with cupy.cuda.Device(index):
                cupy.random.seed(int(seed) % (1 << 32))


def seed() -> None:
    """Seed the current GPU's generator from a random number."""
    if is_available():
        _backend._cupy.random.seed()


def __getattr__(name: str):
    from .._legacy import CUDA_TYPES

    if name in CUDA_TYPES:  # ember.cuda.FloatTensor ...
        return CUDA_TYPES[name]
    if name == "amp":
        import importlib

        module = importlib.import_module(".amp", __name__)
        globals()["amp"] = module
        return module
    raise AttributeError(f"module 'ember.cuda' has no attribute '{name}'")


def _register() -> None:
    import sys

    from .. import random as _random_namespace

    _random_namespace.DEVICE_RANDOM["cuda"] = sys.modules[__name__]  # fork_rng's CUDA states


_register()
