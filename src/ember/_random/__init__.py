"""Random numbers: PyTorch's CPU generator (mt19937 and torch's transforms) on NumPy.

Every draw in ember goes through ``resolve_generator(generator)``, which returns the
generator's :class:`~ember._random.sampler.TorchSampler`.
"""

from .generator import (
    Generator,
    default_generator,
    get_rng_state,
    initial_seed,
    manual_seed,
    resolve_generator,
    seed,
    set_rng_state,
)
from .mt19937 import MT19937
from .sampler import TorchSampler

__all__ = [
    "Generator",
    "MT19937",
    "TorchSampler",
    "default_generator",
    "get_rng_state",
    "initial_seed",
    "manual_seed",
    "resolve_generator",
    "seed",
    "set_rng_state",
]
