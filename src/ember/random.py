"""``ember.random``: the ``torch.random`` namespace (seeding, RNG state, ``fork_rng``)."""

from __future__ import annotations

import contextlib
import warnings
from collections.abc import Iterator

from ._random import (
    Generator,
    default_generator,
    get_rng_state,
    initial_seed,
    manual_seed,
    seed,
    set_rng_state,
)

__all__ = [
    "Generator",
    "default_generator",
    "fork_rng",
    "get_rng_state",
    "initial_seed",
    "manual_seed",
    "seed",
    "set_rng_state",
    "thread_safe_generator",
]

_fork_rng_warned_already = False


@contextlib.contextmanager
def fork_rng(
    devices=None,
    enabled: bool = True,
    _caller: str = "fork_rng",
    _devices_kw: str = "devices",
    device_type: str = "cuda",
) -> Iterator:
    """Run a block with the random state forked: on exit the CPU generator (and those of the
    listed CUDA devices) are back where they were on entry.

    Example::
        >>> with ember.random.fork_rng():
        ...     ember.manual_seed(1)
        ...     noise = ember.rand(3)
        >>> ember.rand(3)  # drawn as if the block had not run
    """
    if not enabled:
        yield
        return
    device_states = []
    cuda = _cuda_random(device_type)
    if cuda is not None:
        if devices is None:
            count = cuda.device_count()
            if count > 1 and not _fork_rng_warned_already:
                _warn_many_devices(count, _caller, _devices_kw, device_type)
            devices = list(range(count))
        device_states = [(d, cuda.get_rng_state(d)) for d in devices]
    cpu_state = get_rng_state()
    try:
        yield
    finally:
        set_rng_state(cpu_state)
        for device, state in device_states:
            cuda.set_rng_state(state, device)


# device type -> the module with its RNG functions (is_available, device_count, get_rng_state,
# set_rng_state): ember.cuda registers itself, from the layer above
DEVICE_RANDOM: dict = {}


def _cuda_random(device_type: str):
    """The ``ember.cuda`` RNG functions when ``device_type`` is CUDA and a GPU is present."""
    cuda = DEVICE_RANDOM.get(device_type)
    if cuda is None:
        return None
    if not cuda.is_available() or not hasattr(cuda, "get_rng_state"):
        return None
    return cuda


def _warn_many_devices(count: int, caller: str, devices_kw: str, device_type: str) -> None:
    global _fork_rng_warned_already
    warnings.warn(
        f"{device_type.upper()} reports that you have {count} available devices, and you have "
        f"used {caller} without explicitly specifying which devices are being used. For safety, "
        f"we initialize *every* {device_type.upper()} device by default, which can be quite "
        f"slow if you have a lot of {device_type.upper()}s. If you know that you are only "
        f"making use of a few {device_type.upper()} devices, set the environment variable "
        f"{device_type.upper()}_VISIBLE_DEVICES or the '{devices_kw}' keyword argument of "
        f"{caller} with the set of devices you are actually using.",
        stacklevel=3,
    )
    _fork_rng_warned_already = True


def thread_safe_generator() -> Generator | None:
    """The calling DataLoader thread worker's own generator; None elsewhere (the main
    process and process workers), which makes random functions use the default generator.

    Example::
        >>> g = ember.random.thread_safe_generator()  # None outside thread workers
        >>> ember.randint(0, 10, (5,), generator=g)
    """
    from .utils.data import get_worker_info

    info = get_worker_info()
    if getattr(info, "worker_method", None) == "thread" and getattr(info, "rng", None) is not None:
        return info.rng.torch_generator
    return None
