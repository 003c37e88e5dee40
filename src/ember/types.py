"""``ember.types``: the type aliases of ``torch.types`` for annotating code that takes numbers,
devices and files. ember has no symbolic shapes, so the ``*LikeType`` aliases are the plain
Python types."""

from __future__ import annotations

import os
from typing import IO, Union

from ._backend import device as _device
from ._dtype import dtype as _dtype
from ._tensor import Size, Tensor

Number = int | float | bool
Device = _device | str | int | None
FileLike = Union[str, os.PathLike, IO[bytes]]  # noqa: UP007 - typing.IO does not take |
IntLikeType = int
FloatLikeType = float
BoolLikeType = bool

__all__ = [
    "BoolLikeType",
    "Device",
    "FileLike",
    "FloatLikeType",
    "IntLikeType",
    "Number",
    "Size",
    "Tensor",
    "_dtype",
]
