"""DDP's buckets: the gradients that travel in one collective, and the collectives on them.

The collectives are ember.distributed's, reached through ``ember._distributed_hook``: a DDP
exists only with a process group, and one exists only once ember.distributed is imported (it
registers there then), so this layer never imports it.
"""

from __future__ import annotations

import functools

from ... import _distributed_hook


class Bucket:
    """Parameters whose gradients travel in one allreduce."""

    __slots__ = (
        "index",
        "params",
        "offsets",
        "size",
        "dtype",
        "xp",
        "left",
        "flat",
        "views",
        "work",
    )

    def __init__(self, index: int, params: list, dtype):
        from ..._backend import array_module

        self.index = index
        self.params = params
        self.dtype = dtype
        self.xp = array_module(params[0]._data)  # NumPy, or CuPy for a module on a GPU
        self.offsets, total = [], 0
        for p in params:
            self.offsets.append(total)
            total += p._data.size
        self.size = total
        self.left = len(params)
        self.flat = None  # the gradients side by side, reduced in one collective
        self.views = None  # with gradient_as_bucket_view: each parameter's part of ``flat``
        self.work = None  # the allreduce's Work, or the comm hook's Future

    def new_flat(self):
        """The buffer of this backward: a fresh one, or the persistent one ``.grad`` views."""
        if self.views is None:
            return self.xp.zeros(self.size, self.dtype)
        return self.flat

    def make_views(self) -> None:
        """Keep ``flat`` across iterations and cut one view per parameter out of it."""
        self.flat = self.xp.zeros(self.size, self.dtype)
        self.views = [
            self.flat[at : at + p._data.size].reshape(p._data.shape)
            for p, at in zip(self.params, self.offsets)
        ]


def coalesced_broadcast(pg, tensors: list, root: int = 0) -> None:
    """Broadcast many tensors from group rank ``root`` as one message per device and dtype."""
    from ..._backend import array_module
    from ..._tensor import Tensor

    broadcast = _distributed_hook.distributed().broadcast
    by_kind: dict = {}
    for t in tensors:
        by_kind.setdefault((str(t.device), t._data.dtype.str), []).append(t)
    for group in by_kind.values():
        xp = array_module(group[0]._data)
        flat = xp.concatenate([t._data.reshape(-1) for t in group])
        broadcast(Tensor._wrap(flat), group=pg, group_src=root)
        at = 0
        for t in group:
            n = t._data.size
            xp.copyto(t._data, flat[at : at + n].reshape(t._data.shape))
            t._vc[0] += 1
            at += n


def all_reduce_async(flat, pg):
    """Start summing the flat array over the group (MPI for CPU arrays, NCCL for CUDA ones)."""
    from ..._tensor import Tensor

    return _distributed_hook.distributed().all_reduce(Tensor._wrap(flat), group=pg, async_op=True)


def watched(fn):
    """``fn``, which blocks in collectives, with its time watched by ember.distributed's
    watchdog (its ``watched``, applied when called: the watchdog is not loaded at definition)."""
    name = fn.__qualname__

    @functools.wraps(fn)
    def call(*args, **kwargs):
        return _distributed_hook.distributed().watched_call(name, fn, args, kwargs)

    return call
