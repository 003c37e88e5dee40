"""The rest of ``torch.cuda``'s surface: deprecated memory aliases, the per-process memory
limit (CuPy's pool limit), peer access, RNG state, and the legacy CUDA tensor types."""

from __future__ import annotations

import warnings
from collections import OrderedDict

from .. import _backend
from ._memory import max_memory_reserved, memory_reserved, memory_stats, reset_peak_memory_stats


def memory_cached(device=None) -> int:
    """Deprecated name of ``memory_reserved``."""
    warnings.warn(
        "torch.cuda.memory_cached has been renamed to torch.cuda.memory_reserved",
        FutureWarning,
        stacklevel=2,
    )
    return memory_reserved(device)


def max_memory_cached(device=None) -> int:
    """Deprecated name of ``max_memory_reserved``."""
    warnings.warn(
        "torch.cuda.max_memory_cached has been renamed to torch.cuda.max_memory_reserved",
        FutureWarning,
        stacklevel=2,
    )
    return max_memory_reserved(device)


def reset_max_memory_cached(device=None) -> None:
    """Deprecated: resets the peak statistics (``reset_peak_memory_stats``)."""
    warnings.warn(
        "torch.cuda.reset_max_memory_cached now calls torch.cuda.reset_peak_memory_stats, "
        "which resets /all/ peak memory stats.",
        FutureWarning,
        stacklevel=2,
    )
    reset_peak_memory_stats(device)


def memory_stats_as_nested_dict(device=None) -> dict:
    """``memory_stats`` with its dotted keys as nested dicts (empty without a GPU)."""
    nested: dict = {}
    for key, value in memory_stats(device).items():
        node = nested
        parts = key.split(".")
        for part in parts[:-1]:
            node = node.setdefault(part, OrderedDict())
        node[parts[-1]] = value
    return nested


def _cupy():
    from . import require

    return require()


def set_per_process_memory_fraction(fraction: float, device=None) -> None:
    """Cap CuPy's memory pool at ``fraction`` of the device's memory."""
    cupy = _cupy()
    if not 0 <= fraction <= 1:
        raise ValueError(f"Invalid fraction value: {fraction}. Allowed range: 0~1")
    cupy.get_default_memory_pool().set_limit(fraction=fraction)


def get_per_process_memory_fraction(device=None) -> float:
    cupy = _cupy()
    limit = cupy.get_default_memory_pool().get_limit()
    total = cupy.cuda.Device().mem_info[1]
    return 1.0 if limit == 0 else limit / total


def can_device_access_peer(device, peer_device) -> bool:
    cupy = _cupy()
    from . import _device_index

    a, b = _device_index(device, optional=False), _device_index(peer_device, optional=False)
    return bool(cupy.cuda.runtime.deviceCanAccessPeer(a, b))


def is_tf32_supported() -> bool:
    """Ampere (compute capability 8.0) and newer GPUs have TF32 tensor cores."""
    from . import get_device_capability, is_available

    return is_available() and get_device_capability()[0] >= 8


_initial_seed = [None]


def initial_seed() -> int:
    _cupy()
    return _initial_seed[0] if _initial_seed[0] is not None else 0


def seed_all() -> None:
    """Seed every GPU's generator from a random number (nothing without a GPU)."""
    from . import device_count, is_available

    if is_available():
        cupy = _backend._cupy
        for index in range(device_count()):
            with cupy.cuda.Device(index):
                cupy.random.seed()


def get_rng_state(device="cuda"):
    """The state of CuPy's generator on ``device`` (CuPy's own layout, not torch's Philox)."""
    cupy = _cupy()
    return cupy.random.get_random_state()


def get_rng_state_all() -> list:
    from . import device_count, is_available

    if not is_available():
        return []
    cupy = _backend._cupy
    states = []
    for index in range(device_count()):
        with cupy.cuda.Device(index):
            states.append(cupy.random.get_random_state())
    return states


def set_rng_state(new_state, device="cuda") -> None:
    cupy = _cupy()
    cupy.random.set_random_state(new_state)


def set_rng_state_all(new_states) -> None:
    cupy = _cupy()
    for index, state in enumerate(new_states):
        with cupy.cuda.Device(index):
            cupy.random.set_random_state(state)


def set_stream(stream) -> None:
    """Make ``stream`` current (nothing for None, as PyTorch)."""
    if stream is None:
        return
    stream.__enter__()
