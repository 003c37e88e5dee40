"""``custom_fwd`` / ``custom_bwd``: autocast-aware ``forward`` and ``backward`` of a custom
``ember.autograd.Function``.

``custom_fwd`` notes whether autocast was on when ``forward`` ran (or, with ``cast_inputs``,
runs ``forward`` with autocast off on inputs cast to that dtype); ``custom_bwd`` runs
``backward`` in the same autocast state, so the gradient is computed as the forward was.
"""

from __future__ import annotations

import functools

from .. import _dtype as dt
from .._tensor import Tensor
from . import state as _state
from .autocast_mode import autocast


def _cast(value, device_type: str, dtype: dt.dtype):
    """Floating tensors on ``device_type`` (not float64) in ``dtype``, through lists, tuples and
    dicts; everything else as it is."""
    if isinstance(value, Tensor):
        eligible = (
            value.is_floating_point()
            and value.device.type == device_type
            and value.dtype is not dt.float64
        )
        return value.to(dtype) if eligible else value
    if isinstance(value, dict):
        return {k: _cast(v, device_type, dtype) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(_cast(v, device_type, dtype) for v in value)
    return value


def custom_fwd(fwd=None, *, device_type: str, cast_inputs: dt.dtype | None = None):
    """Decorate a custom Function's ``forward`` to work with autocast.

    Example::
        >>> class Square(ember.autograd.Function):
        ...     @staticmethod
        ...     @ember.amp.custom_fwd(device_type="cpu", cast_inputs=ember.float32)
        ...     def forward(ctx, x):
        ...         ctx.save_for_backward(x)
        ...         return x * x
        ...     @staticmethod
        ...     @ember.amp.custom_bwd(device_type="cpu")
        ...     def backward(ctx, g):
        ...         (x,) = ctx.saved_tensors
        ...         return 2 * x * g
    """
    if not isinstance(device_type, str):
        raise ValueError(f"Expected `device_type` of type `str`, got: `{type(device_type)}`")
    if fwd is None:
        return functools.partial(custom_fwd, device_type=device_type, cast_inputs=cast_inputs)

    @functools.wraps(fwd)
    def decorate_fwd(*args, **kwargs):
        ctx = args[0]
        ctx._dtype = _state.get_autocast_dtype(device_type)
        if cast_inputs is None:
            ctx._fwd_used_autocast = _state.is_autocast_enabled(device_type)
            return fwd(*args, **kwargs)
        autocast_context = _state.is_autocast_enabled(device_type)
        ctx._fwd_used_autocast = False
        if autocast_context:
            with autocast(device_type=device_type, enabled=False):
                return fwd(
                    *_cast(args, device_type, cast_inputs),
                    **_cast(kwargs, device_type, cast_inputs),
                )
        return fwd(*args, **kwargs)

    return decorate_fwd


def custom_bwd(bwd=None, *, device_type: str):
    """Decorate a custom Function's ``backward`` to run in the autocast state of its forward."""
    if not isinstance(device_type, str):
        raise ValueError(f"Expected `device_type` of type `str`, got: `{type(device_type)}`")
    if bwd is None:
        return functools.partial(custom_bwd, device_type=device_type)

    @functools.wraps(bwd)
    def decorate_bwd(*args, **kwargs):
        ctx = args[0]
        with autocast(device_type=device_type, enabled=ctx._fwd_used_autocast, dtype=ctx._dtype):
            return bwd(*args, **kwargs)

    return decorate_bwd
