"""How DDP calls a communication hook on a bucket, and checks the hook and what it returns."""

from __future__ import annotations

import inspect

from ... import _distributed_hook


def check_comm_hook(hook) -> None:
    """torch's checks of a hook before it is registered: callable, with sensible annotations."""
    if not callable(hook):
        raise TypeError("Communication hook must be callable.")
    try:
        sig = inspect.signature(hook)
    except (TypeError, ValueError):
        return  # a builtin without a signature: nothing to check
    dist = _distributed_hook.distributed()
    GradBucket, Future = dist.GradBucket, dist.Future
    bucket = sig.parameters.get("bucket")
    # a string annotation (``from __future__ import annotations``) is judged by its name
    if bucket is not None and bucket.annotation not in (inspect.Parameter.empty, GradBucket):
        if not (isinstance(bucket.annotation, str) and bucket.annotation.endswith("GradBucket")):
            raise ValueError("Communication hook: bucket annotation should be dist.GradBucket.")
    returned = sig.return_annotation
    if returned is not inspect.Signature.empty:
        named = returned if isinstance(returned, str) else getattr(returned, "__origin__", None)
        if not (named is Future or (isinstance(named, str) and "Future" in named)):
            raise ValueError(
                "Communication hook: return annotation should be "
                "torch.futures.Future[torch.Tensor]."
            )


def run_comm_hook(comm_hook: tuple, bucket, bucket_count: int):
    """Call ``hook(state, GradBucket)`` on a DDP bucket whose ``flat`` is filled; its Future."""
    from ..._tensor import Tensor

    dist = _distributed_hook.distributed()
    hook, state = comm_hook
    flat = bucket.flat
    gradients = [
        Tensor._wrap(flat[at : at + p._data.size].reshape(p._data.shape))
        for p, at in zip(bucket.params, bucket.offsets)
    ]
    grad_bucket = dist.GradBucket(
        bucket.index, bucket_count, Tensor._wrap(flat), gradients, list(bucket.params)
    )
    fut = hook(state, grad_bucket)
    if not isinstance(fut, dist.Future):
        kind = type(fut)
        raise RuntimeError(
            "DDP communication hook's callback must return a torch.futures.Future object, but "
            f"got {kind.__module__}.{kind.__qualname__}"
        )
    return fut


def comm_hook_result(fut, bucket):
    """The flat gradients a hook's Future gives, checked against the bucket's size."""
    from ..._tensor import Tensor

    value = fut.wait()
    if not isinstance(value, Tensor):
        raise RuntimeError(
            f"Unable to cast {value!r} to Tensor: a DDP communication hook's Future must hold "
            f"the bucket's gradients as one tensor of {bucket.size} elements"
        )
    data = value._data
    if data.size != bucket.size:
        raise RuntimeError(
            f"DDP communication hook: the Future's tensor has {data.size} elements but bucket "
            f"{bucket.index} holds {bucket.size}"
        )
    return data.reshape(-1)
