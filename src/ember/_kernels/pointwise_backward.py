"""Running a compiled backward kernel ``g · f'(x)`` of ``pointwise_jit`` over NumPy arrays, with
the gradient ``sum()`` hands down (one value broadcast to every element, all strides 0) read
as that value: making it an array first would cost a pass over memory, and the kernel one
more array to read. Light to import (no numba): the ops call it on every backward.
"""

from __future__ import annotations

import numpy as np

from .. import _backend


def constant_value(array):
    """The one value of ``array`` when it is a NumPy broadcast of one element (every stride 0,
    as the gradient of ``sum()`` and ``mean()``), else None."""
    if array.__class__ is not np.ndarray or array.size == 0 or any(array.strides):
        return None
    return array[(0,) * array.ndim]


def backward_map(name: str, g, x, constants: tuple = (), dtypes: str = "fd"):
    """``pointwise_jit.<name>(g, x, out, *constants)`` as a fresh array shaped as ``x``, or
    ``<name>_constant_grad(x, out, g, *constants)`` when ``g`` is one value broadcast; the
    constants cast to ``x``'s dtype first (as NumPy casts a Python float against a float32
    array). None when the kernels are off or do not apply (``x`` not a plain NumPy array of a
    dtype in ``dtypes``, ``g`` of another shape or dtype, too few elements): the caller's
    formula runs."""
    kernels = _backend.compiled_kernels("pointwise_jit", x, dtypes=dtypes)
    if kernels is None or g.__class__ is not np.ndarray:
        return None
    if g.shape != x.shape or g.dtype != x.dtype:
        return None
    typed = tuple(x.dtype.type(c) for c in constants)
    constant = constant_value(g)
    if constant is not None:
        kernel = getattr(kernels, name + "_constant_grad")
        return _backend.compiled_map(kernel, x, constants=(constant, *typed))
    return _backend.compiled_map(getattr(kernels, name), g, x, constants=typed)
