"""How tensors cross to another process: by a handle on shared memory, never by a copy.

``init_reductions()`` registers ``reduce_tensor`` with ``multiprocessing``'s ``ForkingPickler``,
which every queue, pipe, pool, manager and spawned ``Process`` of the standard library pickles
with (torch registers its reductions the same way). A tensor that is not in shared memory yet
is moved there first (``share_memory_``, in place, as torch does), then sent as its segment's
handle and its view (byte offset, shape, strides, dtype): the receiver maps the same pages, so
in-place writes on either side are seen by the other. The handle is a duplicated descriptor
(``file_descriptor``) or a ``/dev/shm`` name (``file_system``), see ``ember._shared_memory``.
"""

from __future__ import annotations

from multiprocessing import context, reduction, util

import numpy as np

from .. import _shared_memory
from .._tensor import Tensor
from ..nn.parameter import Buffer, Parameter


def reduce_tensor(tensor: Tensor):
    if tensor.requires_grad and tensor.grad_fn is not None:
        raise RuntimeError(
            "Cowardly refusing to serialize non-leaf tensor which requires_grad, since autograd "
            "does not support crossing process boundaries.  If you just want to transfer the "
            "data, call detach() on the tensor before serializing (e.g., putting it on the queue)."
        )
    if tensor.device.type == "cuda":
        raise RuntimeError(
            "ember.multiprocessing: CUDA tensors cannot be sent to another process (ember has no "
            "CUDA IPC); send tensor.cpu() and move it back to the GPU there"
        )
    if not isinstance(tensor._data, np.ndarray):
        raise RuntimeError(
            f"ember.multiprocessing: a tensor with layout {tensor.layout} cannot be sent to "
            "another process; send its dense form (to_dense()) or its components"
        )
    tensor.share_memory_()
    data = tensor._data
    segment, offset = _shared_memory.segment_of(data)
    if segment.strategy == "file_descriptor":
        handle = ("file_descriptor", reduction.DupFd(segment.fd))
    else:
        _shared_memory.add_reference(segment.name, +1)  # the handle's own, until received
        handed = getattr(context.get_spawning_popen(), "handed_names", None)
        if handed is not None:  # spawn() releases it if its worker dies before receiving
            handed.append(segment.name)
        handle = ("file_system", segment.name)
    attributes = {k: v for k, v in vars(tensor).items() if not k.startswith("_")}
    view = (offset, data.shape, data.strides, data.dtype)
    arguments = (type(tensor), handle, segment.size, view, tensor.requires_grad, attributes)
    return rebuild_tensor, arguments


def rebuild_tensor(cls, handle, size: int, view, requires_grad: bool, attributes: dict) -> Tensor:
    kind, value = handle
    if kind == "file_descriptor":
        segment, memory = _shared_memory.receive_fd(value.detach(), size)
    else:
        segment, memory = _shared_memory.receive_name(value, size)
    offset, shape, strides, dtype = view
    data = _shared_memory.view(segment, memory, offset, shape, strides, dtype)
    tensor = cls._wrap(data)
    if requires_grad:
        tensor.requires_grad = True
    for name, value in attributes.items():
        setattr(tensor, name, value)
    return tensor


def _finalizer(memory, callback, *args):
    """A segment's release that also runs when a multiprocessing child ends (os._exit)."""
    return util.Finalize(memory, callback, args=args, exitpriority=0)


def _after_fork(segment) -> None:
    util.register_after_fork(segment, _in_forked_child)


def _in_forked_child(segment) -> None:
    """A forked child maps its parent's segments too: it counts, and releases, its own use."""
    memory = segment.mmap_ref()
    if memory is None or segment.strategy != "file_system":
        return  # a descriptor closes with the child; the kernel frees the memory after the last
    _shared_memory.add_reference(segment.name, +1)
    _finalizer(memory, _shared_memory._release, id(memory))


def _tensor_classes() -> list[type]:
    found, todo = [], [Tensor, Parameter, Buffer]
    while todo:
        cls = todo.pop()
        if cls not in found:
            found.append(cls)
            todo.extend(cls.__subclasses__())
    return found


def init_reductions() -> None:
    """Send ember tensors (and their subclasses defined so far) through shared memory."""
    for cls in _tensor_classes():
        reduction.ForkingPickler.register(cls, reduce_tensor)
    _shared_memory.finalizer = _finalizer
    _shared_memory.after_fork = _after_fork
    for segment in list(_shared_memory._segments.values()):
        _after_fork(segment)
