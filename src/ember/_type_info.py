"""``ember.finfo`` and ``ember.iinfo``: the numerical limits of a dtype, as torch's."""

from __future__ import annotations

import numpy as np

from . import _dtype as dt


def _require_dtype(function: str, value) -> dt.dtype:
    if not isinstance(value, dt.dtype):
        raise TypeError(
            f"{function}(): argument 'type' (position 1) must be ember.dtype, "
            f"not {type(value).__name__}"
        )
    return value


def _g(value: float) -> str:
    return f"{value:g}"


def _numpy_finfo(np_dtype):
    try:
        return np.finfo(np_dtype)
    except ValueError:  # bfloat16: NumPy does not know it, ml_dtypes does
        import ml_dtypes

        return ml_dtypes.finfo(np_dtype)


class finfo:
    """Limits of a floating dtype (``ember.finfo(ember.float32).eps``); the default dtype when
    none is given, the real part's for a complex one.

    Example::
        >>> ember.finfo(ember.float16).max
        65504.0
    """

    def __init__(self, type: dt.dtype | None = None) -> None:
        kind = dt.get_default_dtype() if type is None else _require_dtype("finfo", type)
        if not (kind.is_floating_point or kind.is_complex):
            raise TypeError(
                "ember.finfo() requires a floating point input type. Use ember.iinfo to handle "
                "'ember.finfo'"
            )
        real = kind.to_real()
        info = _numpy_finfo(real.np)
        self.bits = real.itemsize * 8
        self.eps = float(info.eps)
        self.max = float(info.max)
        self.min = float(info.min)
        self.tiny = self.smallest_normal = float(info.smallest_normal)
        self.resolution = 10.0 ** -int(info.precision)
        self.dtype = real.name

    def __eq__(self, other) -> bool:
        return isinstance(other, finfo) and self.dtype == other.dtype

    __hash__ = None

    def __repr__(self) -> str:
        return (
            f"finfo(resolution={_g(self.resolution)}, min={_g(self.min)}, max={_g(self.max)}, "
            f"eps={_g(self.eps)}, smallest_normal={_g(self.smallest_normal)}, "
            f"tiny={_g(self.tiny)}, dtype={self.dtype})"
        )


class iinfo:
    """Limits of an integer dtype (``ember.iinfo(ember.int8).max == 127``)."""

    def __init__(self, type: dt.dtype) -> None:
        kind = _require_dtype("iinfo", type)
        if kind is dt.bool_:
            raise TypeError("ember.bool is not supported by ember.iinfo")
        if kind.category != dt.INT:
            raise TypeError(
                "ember.iinfo() requires an integer input type. Use ember.finfo to handle "
                "'ember.iinfo'"
            )
        info = np.iinfo(kind.np)
        self.bits = kind.itemsize * 8
        self.max = int(info.max)
        self.min = int(info.min)
        self.dtype = kind.name

    def __eq__(self, other) -> bool:
        return isinstance(other, iinfo) and self.dtype == other.dtype

    __hash__ = None

    def __repr__(self) -> str:
        return f"iinfo(min={_g(self.min)}, max={_g(self.max)}, dtype={self.dtype})"
