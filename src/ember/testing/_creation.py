"""``make_tensor``: a random tensor of a given shape and dtype, as ``torch.testing.make_tensor``."""

from __future__ import annotations

import math

from .. import _dtype as dt
from .. import _op_namespace as ember


def _range(dtype, low, high, default_low, default_high):
    low = default_low if low is None else low
    high = default_high if high is None else high
    if any(isinstance(v, float) and math.isnan(v) for v in (low, high)):
        raise ValueError(f"`low` and `high` cannot be NaN, but got low={low} and high={high}")
    if low == high and dtype.is_floating_point:
        return low, high
    if low > high:
        raise ValueError(f"`low` must be less than or equal to `high`, but got {low} > {high}")
    info = ember.finfo(dtype) if dtype.is_floating_point or dtype.is_complex else ember.iinfo(dtype)
    return max(low, info.min), min(high, info.max)


def make_tensor(
    *shape,
    dtype,
    device,
    low=None,
    high=None,
    requires_grad: bool = False,
    noncontiguous: bool = False,
    exclude_zero: bool = False,
    memory_format=None,
):
    """A tensor of ``shape`` filled with values drawn uniformly from ``[low, high)``.

    Defaults: ``[-9, 9]`` for floating and complex dtypes (both parts), ``[-9, 10)`` for
    integers (``[0, 10)`` for unsigned ones), and random booleans.
    """
    if len(shape) == 1 and isinstance(shape[0], (tuple, list, ember.Size)):
        shape = tuple(shape[0])
    shape = tuple(int(s) for s in shape)
    dtype = dt.to_dtype(dtype)
    if dtype == dt.bool_:
        result = ember.randint(0, 2, shape, device=device).to(dt.bool_)
    elif dtype.is_floating_point or dtype.is_complex:
        real = dt.float64 if dtype == dt.complex128 else dt.float32
        if dtype.is_floating_point:
            real = dtype
        lo, hi = _range(real, low, high, -9, 9)
        parts = [
            ember.rand(shape, dtype=dt.float64, device=device) * (hi - lo) + lo
            for _ in range(2 if dtype.is_complex else 1)
        ]
        result = ember.complex(*parts).to(dtype) if dtype.is_complex else parts[0].to(dtype)
    else:
        default_low = 0 if dtype == dt.uint8 else -9
        lo, hi = _range(dtype, low, high, default_low, 10)
        result = ember.randint(math.ceil(lo), math.ceil(hi), shape, device=device).to(dtype)
    if exclude_zero:
        if dtype.is_floating_point:
            replacement = ember.finfo(dtype).tiny
        elif dtype.is_complex:
            tiny = ember.finfo(dt.float64 if dtype == dt.complex128 else dt.float32).tiny
            replacement = complex(tiny, tiny)
        else:
            replacement = 1
        result = ember.where(result == 0, ember.tensor(replacement, dtype=dtype), result)
    if noncontiguous and result.numel() > 1:
        result = result.repeat_interleave(2, dim=-1)[..., ::2]
    elif memory_format is not None:
        result = result.clone(memory_format=memory_format)
    if requires_grad:
        result.requires_grad_(True)
    return result
