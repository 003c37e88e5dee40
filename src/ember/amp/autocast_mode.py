"""``ember.autocast``: regions where chosen ops run in lower precision (mixed precision)."""

from __future__ import annotations

import copy
import functools
import warnings

from .. import _dtype as dt
from . import state as _state

_SUPPORTED = (dt.bfloat16, dt.float16)


class autocast:
    """Run the ops of the autocast policy in lower precision inside the region.

    Matrix products and convolutions run in ``dtype`` (float16 on CUDA, bfloat16 on the CPU by
    default), range-sensitive ops (losses, softmax on CUDA, ...) in float32; everything else runs
    as called. Works as a context manager and as a decorator; regions nest.

    Example::
        >>> model = ember.nn.Linear(4, 2)
        >>> with ember.autocast("cpu", dtype=ember.bfloat16):
        ...     y = model(ember.randn(3, 4))
        >>> y.dtype
        ember.bfloat16
    """

    def __init__(
        self,
        device_type: str,
        dtype: dt.dtype | None = None,
        enabled: bool = True,
        cache_enabled: bool | None = None,
    ):
        if not isinstance(device_type, str):
            raise ValueError(f"Expected `device_type` of type `str`, got: `{type(device_type)}`")
        if not _state.is_autocast_available(device_type):
            raise RuntimeError(
                f"User specified an unsupported autocast device_type '{device_type}'"
            )
        self.device = device_type
        self.fast_dtype = _state.get_autocast_dtype(device_type) if dtype is None else dtype
        self._cache_enabled = (
            _state.is_autocast_cache_enabled() if cache_enabled is None else cache_enabled
        )
        if enabled:
            if device_type == "cuda":
                from .. import cuda

                if not cuda.is_available():
                    warnings.warn(
                        "CUDA is not available or torch_xla is imported. Disabling autocast.",
                        stacklevel=2,
                    )
                    enabled = False
                elif self.fast_dtype is dt.bfloat16 and not cuda.is_bf16_supported():
                    raise RuntimeError(
                        "Current CUDA Device does not support bfloat16. Please switch dtype to "
                        "float16."
                    )
            elif self.fast_dtype not in _SUPPORTED:
                name = device_type.upper()
                warnings.warn(
                    f"In {name} autocast, but the target dtype is not supported. Disabling "
                    f"autocast.\n{name} Autocast only supports dtypes of "
                    + ", ".join(map(str, _SUPPORTED))
                    + " currently.",
                    stacklevel=2,
                )
                enabled = False
        self._enabled = enabled

    def __enter__(self) -> autocast:
        self.prev_cache_enabled = _state.is_autocast_cache_enabled()
        self.prev = _state.is_autocast_enabled(self.device)
        self.prev_fastdtype = _state.get_autocast_dtype(self.device)
        _state.set_autocast_dtype(self.device, self.fast_dtype)
        _state.autocast_increment_nesting()
        _state.set_autocast_enabled(self.device, self._enabled)
        _state.set_autocast_cache_enabled(self._cache_enabled)
        return self

    def __exit__(self, exc_type, exc_val, exc_tb) -> bool:
        if _state.state.nesting == 1:
            _state.clear_autocast_cache()
        # the flag first, then the nesting: the op patch is released once, at the outermost exit
        _state.set_autocast_enabled(self.device, self.prev)
        _state.set_autocast_dtype(self.device, self.prev_fastdtype)
        _state.set_autocast_cache_enabled(self.prev_cache_enabled)
        _state.autocast_decrement_nesting()
        return False

    def __call__(self, func):
        if not callable(func):
            raise TypeError(
                f"autocast()(func) requires a callable, but got {type(func).__name__}. "
                "Did you mean to use autocast as a context manager? For example:\n"
                "    with torch.autocast(device_type=...):\n"
                "        output = model(input)"
            )

        @functools.wraps(func)
        def decorate_autocast(*args, **kwargs):
            with copy.copy(self):  # a region of its own per call: recursion restores correctly
                return func(*args, **kwargs)

        return decorate_autocast
