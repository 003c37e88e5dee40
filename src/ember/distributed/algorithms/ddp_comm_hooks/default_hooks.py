"""The standard DDP communication hooks: allreduce, and allreduce in 16-bit floats.

Each takes ``(process_group, bucket)`` (``None`` means the world) and returns a Future of the
bucket's averaged gradients, as torch's ``default_hooks``.

Example::
    >>> from ember.distributed.algorithms.ddp_comm_hooks import default_hooks
    >>> ddp.register_comm_hook(None, default_hooks.fp16_compress_hook)
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from ....futures import Future
from ...grad_bucket import GradBucket

__all__ = [
    "allreduce_hook",
    "bf16_compress_hook",
    "bf16_compress_wrapper",
    "fp16_compress_hook",
    "fp16_compress_wrapper",
]


def _group(process_group):
    from ...process_group import _default_group

    return process_group if process_group is not None else _default_group()


def _allreduce_fut(process_group, tensor) -> Future:
    """Average ``tensor`` over the group in place; a Future of it."""
    from ...collectives import all_reduce

    group = _group(process_group)
    tensor.div_(group.size())
    work = all_reduce(tensor, group=group, async_op=True)
    return work.get_future().then(lambda fut: fut.value()[0])


def allreduce_hook(process_group, bucket: GradBucket) -> Future:
    """Average the bucket over the ranks: what DDP does without a hook.

    Example::
        >>> ddp.register_comm_hook(process_group, allreduce_hook)
    """
    return _allreduce_fut(process_group, bucket.buffer())


def _compress_hook(dtype, process_group, bucket: GradBucket) -> Future:
    from ...collectives import all_reduce

    group = _group(process_group)
    buffer = bucket.buffer()
    if isinstance(buffer._data, np.ndarray):
        return _compress_on_cpu(dtype, group, buffer)
    compressed = buffer.to(dtype).div_(group.size())

    def decompress(fut: Future):
        buffer.copy_(fut.value()[0])
        return buffer

    return all_reduce(compressed, group=group, async_op=True).get_future().then(decompress)


def _compress_on_cpu(dtype, group, buffer) -> Future:
    """The same numbers as rounding to ``dtype``, dividing there and summing, without NumPy's
    slow 16-bit arithmetic: float32 holds every 16-bit value, and a quotient or sum of two
    computed in float32 and rounded once to 16 bits is the 16-bit result (24 >= 2 x 11 + 2
    bits), which is how MPI sums 16-bit tensors anyway."""
    from ...._tensor import Tensor
    from ...collectives import all_reduce

    wire = dtype.np
    wide = buffer._data.astype(wire).astype(np.float32)
    wide /= group.size()
    wide = wide.astype(wire).astype(np.float32)  # what each rank would send
    work = all_reduce(Tensor._wrap(wide), group=group, async_op=True)

    def decompress(fut: Future):
        np.copyto(buffer._data, wide.astype(wire), casting="unsafe")  # the 16-bit sum
        buffer._vc[0] += 1
        return buffer

    return work.get_future().then(decompress)


def fp16_compress_hook(process_group, bucket: GradBucket) -> Future:
    """Average the bucket sent as float16 (half the bytes), written back in its own dtype.

    Example::
        >>> ddp.register_comm_hook(process_group, fp16_compress_hook)
    """
    from ...._dtype import float16

    return _compress_hook(float16, process_group, bucket)


def bf16_compress_hook(process_group, bucket: GradBucket) -> Future:
    """Average the bucket sent as bfloat16, written back in its own dtype.

    Unlike torch's (CUDA and NCCL only), it runs on CPU tensors too: the bfloat16 values are
    summed in float32 by MPI.
    """
    from ...._dtype import bfloat16

    return _compress_hook(bfloat16, process_group, bucket)


def _compress_wrapper(dtype, hook: Callable, name: str) -> Callable:
    def wrapper(hook_state, bucket: GradBucket) -> Future:
        original = bucket.buffer()
        bucket.set_buffer(original.to(dtype))
        fut = hook(hook_state, bucket)

        def decompress(done: Future):
            original.copy_(done.value())
            return original

        return fut.then(decompress)

    wrapper.__name__ = wrapper.__qualname__ = name
    return wrapper


def fp16_compress_wrapper(hook: Callable[[Any, GradBucket], Future]) -> Callable:
    """``hook`` run on the bucket cast to float16, its result cast back.

    ``fp16_compress_wrapper(allreduce_hook)`` equals ``fp16_compress_hook``.
    """
    from ...._dtype import float16

    return _compress_wrapper(float16, hook, "fp16_compress_wrapper_hook")


def bf16_compress_wrapper(hook: Callable[[Any, GradBucket], Future]) -> Callable:
    """``hook`` run on the bucket cast to bfloat16, its result cast back."""
    from ...._dtype import bfloat16

    return _compress_wrapper(bfloat16, hook, "bf16_compress_wrapper_hook")
