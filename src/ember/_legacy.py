"""PyTorch's legacy tensor types: ``ember.FloatTensor(2, 3)``, ``isinstance(x, ember.LongTensor)``.

Each legacy type names one dtype on one device. Calling it builds a tensor (sizes give an
uninitialised tensor, a sequence or array gives its values); ``isinstance`` checks dtype and
device, as PyTorch's ``torch.FloatTensor`` does.
"""

from __future__ import annotations

from . import _dtype as dt
from ._tensor import Tensor


class _LegacyTensorType(type):
    def __instancecheck__(cls, obj) -> bool:
        return (
            isinstance(obj, Tensor)
            and obj.dtype is cls.dtype
            and obj.device.type == cls.device_type
        )

    def __call__(cls, *args, device=None):
        from . import _creation

        device = device if device is not None else cls.device_type
        if not args:
            return _creation.empty(0, dtype=cls.dtype, device=device)
        if len(args) == 1 and not isinstance(args[0], int):
            data = args[0]
            if isinstance(data, Tensor):
                if data.dtype is not cls.dtype:
                    raise TypeError(
                        f"expected {cls.dtype} (got {data.dtype}) for {cls.__qualname__}"
                    )
                return data
            if isinstance(data, tuple) and all(isinstance(s, int) for s in data):
                return _creation.empty(*data, dtype=cls.dtype, device=device)
            return _creation.tensor(data, dtype=cls.dtype, device=device)
        if not all(isinstance(s, int) for s in args):
            raise TypeError(
                f"{cls.__qualname__}(): takes sizes (ints) or one sequence of values, got "
                f"{tuple(type(a).__name__ for a in args)}"
            )
        return _creation.empty(*args, dtype=cls.dtype, device=device)

    def __repr__(cls) -> str:
        prefix = "ember.cuda." if cls.device_type == "cuda" else "ember."
        return f"<class '{prefix}{cls.__qualname__}'>"


def _make(dtype: dt.dtype, device_type: str) -> type:
    name = dt.LEGACY_NAMES[dtype.name] + "Tensor"
    return _LegacyTensorType(name, (), {"dtype": dtype, "device_type": device_type})


CPU_TYPES = {dt.LEGACY_NAMES[d.name] + "Tensor": _make(d, "cpu") for d in dt.ALL}
CUDA_TYPES = {dt.LEGACY_NAMES[d.name] + "Tensor": _make(d, "cuda") for d in dt.ALL}

globals().update(CPU_TYPES)
__all__ = sorted(CPU_TYPES)
