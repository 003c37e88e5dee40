"""``ember.Generator`` and the default generator: PyTorch's CPU generator, state included."""

from __future__ import annotations

import os

import numpy as np

from .mt19937 import MT19937
from .sampler import TorchSampler

_DEFAULT_SEED = 67280421310721  # PyTorch's default_rng_seed_val

# This package draws on arrays, below the Tensor layer; ember._creation registers how a state
# becomes torch's ByteTensor and which class a state given back may be.
as_state_tensor = None  # uint8 array -> Tensor
tensor_class: type | None = None


class Generator:
    """A source of random numbers that draws PyTorch's CPU streams.

    ``Generator().manual_seed(s)`` and ``torch.Generator().manual_seed(s)`` give the same
    values to ``rand``, ``randint``, ``randperm``, ``randn``, ``uniform_``, ``normal_``, ...,
    and ``get_state()`` is torch's 5056-byte ByteTensor, so states move between the two.

    Example::
        >>> g = ember.Generator().manual_seed(0)
        >>> ember.rand(2, generator=g)  # tensor([0.4963, 0.7682]), as torch
    """

    def __init__(self, device="cpu"):
        self.device = device
        self._engine = MT19937(_DEFAULT_SEED)
        # what resolve_generator hands out (ember.compile swaps it for a recording proxy)
        self._rng = TorchSampler(self._engine)

    def manual_seed(self, seed: int) -> Generator:
        """Seed with ``seed`` (negative values wrap to 64 bits, as torch); returns ``self``."""
        seed = int(seed)
        if not -(1 << 63) <= seed < (1 << 64):
            raise RuntimeError(
                f"Overflow when unpacking long long: seed {seed} is outside [-2**63, 2**64)"
            )
        self._engine.seed(seed % (1 << 64))
        return self

    def seed(self) -> int:
        """Seed from the operating system's entropy; returns the seed used."""
        seed = int.from_bytes(os.urandom(8), "little") & ((1 << 63) - 1)
        self._engine.seed(seed)
        return seed

    def initial_seed(self) -> int:
        return self._engine.initial_seed

    def get_state(self):
        """torch's CPUGeneratorImplState as a uint8 tensor of 5056 bytes."""
        return as_state_tensor(self._engine.to_bytes())

    def set_state(self, new_state) -> Generator:
        """Restore a state from :meth:`get_state` or from ``torch.get_rng_state()``."""
        self._engine.from_bytes(_state_bytes(new_state))
        return self

    def clone_state(self) -> Generator:
        twin = Generator(self.device)
        twin.set_state(self.get_state())
        return twin

    @property
    def numpy_generator(self) -> TorchSampler:
        return self._rng

    def __repr__(self) -> str:
        return f"<ember.Generator device={self.device}>"


def _state_bytes(new_state) -> np.ndarray:
    if tensor_class is not None and isinstance(new_state, tensor_class):
        if new_state.dtype.name != "uint8":
            raise TypeError("RNG state must be a torch.ByteTensor")
        return np.ascontiguousarray(new_state.detach().cpu()._data, dtype=np.uint8).reshape(-1)
    if type(new_state).__module__.startswith("torch") and hasattr(new_state, "numpy"):
        if str(new_state.dtype) != "torch.uint8":
            raise TypeError("RNG state must be a torch.ByteTensor")
        return np.asarray(new_state.numpy(), dtype=np.uint8).reshape(-1)
    raise TypeError(f"expected a torch.ByteTensor, but got {type(new_state).__name__}")


default_generator = Generator()

# Called with the generator before each draw while ember.func.vmap watches its randomness
# (it raises in 'error' mode, replays a slice's draws in 'same' mode); None otherwise.
draw_hook = None


def resolve_generator(generator) -> TorchSampler:
    """The sampler of ``generator``, or of the default generator when it is None."""
    generator = generator or default_generator
    if draw_hook is not None:
        draw_hook(generator)
    return generator._rng


def manual_seed(seed: int) -> Generator:
    """Seed the default generator (and CuPy's, when a GPU is in use); returns it.

    Example::
        >>> ember.manual_seed(0)
        >>> ember.rand(3)  # tensor([0.4963, 0.7682, 0.0885]), torch's values
    """
    from .. import _backend

    if _backend._cupy is not None:
        _backend._cupy.random.seed(int(seed) % (1 << 32))
    return default_generator.manual_seed(seed)


def seed() -> int:
    """Seed the default generator non-deterministically; returns the seed."""
    return default_generator.seed()


def initial_seed() -> int:
    """The seed the default generator was last seeded with."""
    return default_generator.initial_seed()


def get_rng_state():
    """The default generator's state: torch's 5056-byte ByteTensor layout."""
    return default_generator.get_state()


def set_rng_state(new_state) -> None:
    """Restore the default generator from :func:`get_rng_state` (or torch's)."""
    default_generator.set_state(new_state)
