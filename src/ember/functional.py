"""``ember.functional``: the functions PyTorch keeps in ``torch.functional`` (programs reach them
as ``torch.functional.einsum`` or ``from torch.functional import split``). They are ember's
top-level functions, the same objects."""

from __future__ import annotations

import ember as _ember

__all__ = [
    "atleast_1d",
    "atleast_2d",
    "atleast_3d",
    "broadcast_shapes",
    "broadcast_tensors",
    "cartesian_prod",
    "block_diag",
    "cdist",
    "chain_matmul",
    "einsum",
    "istft",
    "lu",
    "norm",
    "meshgrid",
    "pca_lowrank",
    "split",
    "stft",
    "svd_lowrank",
    "tensordot",
    "unique",
    "unique_consecutive",
    "unravel_index",
]


def __getattr__(name: str):
    if name in __all__:
        return getattr(_ember, name)
    raise AttributeError(f"module 'ember.functional' has no attribute '{name}'")


def __dir__():
    return sorted(__all__)
