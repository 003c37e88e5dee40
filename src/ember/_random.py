"""Random number generators: ``ember.Generator`` over NumPy's PCG64, and the global seed."""

from __future__ import annotations

import json
import time

import numpy as _np


class Generator:
    """A source of random numbers, seeded like PyTorch's (``manual_seed`` returns itself).

    Example::
        >>> g = ember.Generator().manual_seed(0)
        >>> ember.rand(2, generator=g)  # the same two numbers every run
    """

    def __init__(self, device="cpu"):
        self.device = device
        self._seed = 67280421310721  # PyTorch's default initial seed
        self._rng = _np.random.Generator(_np.random.PCG64(self._seed))

    def manual_seed(self, seed: int) -> Generator:
        seed = int(seed)
        if seed < 0:
            seed += 1 << 64
        self._seed = seed
        self._rng = _np.random.Generator(_np.random.PCG64(seed))
        return self

    def seed(self) -> int:
        seed = time.time_ns() & ((1 << 63) - 1)
        self.manual_seed(seed)
        return seed

    def initial_seed(self) -> int:
        return self._seed

    def get_state(self):
        from ._creation import tensor

        state = json.dumps({"seed": self._seed, "bit_generator": self._rng.bit_generator.state})
        return tensor(list(state.encode()), dtype="uint8")

    def set_state(self, new_state) -> Generator:
        raw = bytes(new_state.tolist()) if hasattr(new_state, "tolist") else bytes(new_state)
        state = json.loads(raw.decode())
        self._seed = state["seed"]
        bit_generator = _np.random.PCG64()
        bit_generator.state = state["bit_generator"]
        self._rng = _np.random.Generator(bit_generator)
        return self

    @property
    def numpy_generator(self) -> _np.random.Generator:
        return self._rng


default_generator = Generator()


def resolve_generator(generator) -> _np.random.Generator:
    return (generator or default_generator)._rng


def manual_seed(seed: int) -> Generator:
    """Seed the default generator (and CuPy's, when a GPU is in use)."""
    from . import _backend

    if _backend._cupy is not None:
        _backend._cupy.random.seed(int(seed) % (1 << 32))
    return default_generator.manual_seed(seed)


def seed() -> int:
    return default_generator.seed()


def initial_seed() -> int:
    return default_generator.initial_seed()


def get_rng_state():
    return default_generator.get_state()


def set_rng_state(new_state) -> None:
    default_generator.set_state(new_state)
