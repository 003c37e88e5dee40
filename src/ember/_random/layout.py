"""The order in which torch's in-place random kernels fill a tensor: its memory order.

A TensorIterator walks a strided tensor with the dimension of smallest stride innermost, so
``x.t().uniform_()`` writes its draws along ``x``'s rows, not along the transposed view's.
"""

from __future__ import annotations

import numpy as np


def fill_axes(shape: tuple, strides: tuple) -> tuple[int, ...] | None:
    """The axes from outermost to innermost in memory (size-1 axes keep their place), or None
    when that is plain row-major order."""
    movable = [axis for axis, size in enumerate(shape) if size > 1]
    ordered = sorted(movable, key=lambda axis: -abs(strides[axis]))  # stable: ties keep order
    if ordered == movable:
        return None
    axes = list(range(len(shape)))
    for slot, axis in zip(movable, ordered, strict=True):
        axes[slot] = axis
    return tuple(axes)


def draw_in_fill_order(draw, shape: tuple, strides: tuple) -> np.ndarray:
    """``draw(shape)`` values placed as torch's in-place kernel would write them into a tensor
    of these ``strides``."""
    axes = fill_axes(shape, strides)
    if axes is None:
        return draw(shape)
    values = draw(tuple(shape[axis] for axis in axes))
    return values.transpose(np.argsort(axes))
