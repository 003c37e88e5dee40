"""``GradBucket``: what a DDP communication hook is given, one bucket of gradients at a time."""

from __future__ import annotations

import enum


class BuiltinCommHookType(enum.Enum):
    """The hooks ``DistributedDataParallel._register_builtin_comm_hook`` knows by name."""

    ALLREDUCE = 0
    FP16_COMPRESS = 1


class GradBucket:
    """One bucket of DDP gradients: a flat ``buffer()`` and the parameters it holds.

    ``buffer()`` holds this rank's gradients side by side (not yet averaged); ``gradients()``
    are views into it shaped as ``parameters()``. A hook returns a Future whose value is a
    tensor of ``buffer()``'s size: the gradients DDP writes back into ``.grad``.

    Example::
        >>> def noop(state, bucket: dist.GradBucket):
        ...     fut = ember.futures.Future()
        ...     fut.set_result(bucket.buffer())
        ...     return fut
    """

    def __init__(self, index: int, bucket_count: int, buffer, gradients: list, parameters: list):
        self._index = index
        self._bucket_count = bucket_count
        self._buffer = buffer
        self._gradients = gradients
        self._parameters = parameters

    def index(self) -> int:
        """This bucket's index; bucket 0 holds the gradients backward makes first."""
        return self._index

    def buffer(self):
        """The flat 1-D tensor of the bucket's gradients."""
        return self._buffer

    def gradients(self) -> list:
        """Each parameter's gradient, a view into ``buffer()``."""
        return list(self._gradients)

    def parameters(self) -> list:
        """The parameters whose gradients the bucket holds, in registration order."""
        return list(self._parameters)

    def is_last(self) -> bool:
        """Whether this is the last bucket of the iteration to be reduced."""
        return self._index == self._bucket_count - 1

    def set_buffer(self, buffer) -> None:
        """Replace the tensor ``buffer()`` returns (a hook compressing the bucket uses it)."""
        self._buffer = buffer

    def __repr__(self) -> str:
        return f"GradBucket(index={self._index}, numel={self._buffer.numel()})"
