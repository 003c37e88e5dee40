"""``ember.utils.dlpack``: zero-copy exchange with NumPy, PyTorch, CuPy, JAX... through DLPack.

``from_dlpack`` takes any object with ``__dlpack__`` (a NumPy or CuPy array, a torch tensor)
or a DLPack capsule (what ``to_dlpack`` here or ``torch.utils.dlpack.to_dlpack`` returns); the
tensor it gives shares the producer's memory, on the CPU or the GPU the data is on.

Example::
    >>> import numpy as np
    >>> a = np.zeros(3, dtype=np.float32)
    >>> t = ember.utils.dlpack.from_dlpack(a)
    >>> a[0] = 5
    >>> t
    tensor([5., 0., 0.])
"""

from __future__ import annotations

import ctypes

from .._creation import from_dlpack as _from_dlpack_object
from .._tensor import Tensor

__all__ = ["from_dlpack", "to_dlpack"]


def _is_capsule(obj) -> bool:
    return type(obj).__name__ == "PyCapsule"


_get_name = ctypes.pythonapi.PyCapsule_GetName
_get_name.restype, _get_name.argtypes = ctypes.c_char_p, [ctypes.py_object]
_get_pointer = ctypes.pythonapi.PyCapsule_GetPointer
_get_pointer.restype, _get_pointer.argtypes = ctypes.c_void_p, [ctypes.py_object, ctypes.c_char_p]

# where DLTensor.device sits: DLManagedTensor starts with its DLTensor {void* data; DLDevice};
# DLManagedTensorVersioned puts version, manager_ctx, deleter and flags (8 bytes each) first
_DEVICE_OFFSET = {b"dltensor": 8, b"dltensor_versioned": 40}


class _Capsule:
    """A DLPack capsule seen as a producer object (``__dlpack__`` hands out the capsule)."""

    def __init__(self, capsule):
        name = _get_name(capsule)
        if name not in _DEVICE_OFFSET:
            raise RuntimeError(
                "from_dlpack received a capsule that is not an unconsumed DLPack tensor "
                f"(its name is {name!r}); a DLPack capsule can be consumed only once"
            )
        address = _get_pointer(capsule, name) + _DEVICE_OFFSET[name]
        device = (ctypes.c_int32 * 2).from_address(address)
        self._capsule, self._device = capsule, (int(device[0]), int(device[1]))

    def __dlpack__(self, *args, **kwargs):
        return self._capsule

    def __dlpack_device__(self) -> tuple:
        return self._device


def from_dlpack(ext) -> Tensor:
    """A tensor sharing memory with ``ext``: an object with ``__dlpack__`` or a DLPack capsule."""
    if _is_capsule(ext):
        ext = _Capsule(ext)
    elif not hasattr(ext, "__dlpack__"):
        raise TypeError(
            f"from_dlpack expects an object with __dlpack__ or a DLPack capsule, got "
            f"{type(ext).__name__}"
        )
    return _from_dlpack_object(ext)


def to_dlpack(tensor: Tensor):
    """A DLPack capsule sharing ``tensor``'s memory (the legacy exchange; prefer passing the
    tensor itself to the consumer's ``from_dlpack``)."""
    if not isinstance(tensor, Tensor):
        raise TypeError(f"to_dlpack expects a Tensor, got {type(tensor).__name__}")
    return tensor.detach()._data.__dlpack__()
