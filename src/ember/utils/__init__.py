"""ember.utils: data loading, activation checkpointing, DLPack, benchmarking and pytrees."""

import importlib as _importlib

from . import checkpoint, data, dlpack

# loaded on first use, so that `import ember` does not pay for them
_LAZY_SUBMODULES = frozenset({"_pytree", "benchmark"})


def __getattr__(name: str):
    if name in _LAZY_SUBMODULES:
        return _importlib.import_module(f"{__name__}.{name}")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
