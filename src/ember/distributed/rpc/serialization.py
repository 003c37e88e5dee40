"""How RPC messages become bytes: pickle, with tensors, RRefs and ember's functions handled here.

Tensors travel by value (their data as a NumPy array, whether they require grad, whether they
are a ``Parameter``); CUDA tensors arrive on the CPU. A tensor that appears twice in one message
arrives as one tensor. Tensors that require grad are listed in the order met, so that the sender
and the receiver can record the same list for distributed autograd. RRefs travel as (owner,
id) and are rebuilt by the ``rref`` module's hooks. ember's public functions (``ember.add``)
travel by name: some are wrappers that plain pickle cannot find under their ``__module__``.
"""

from __future__ import annotations

import importlib
import io
import pickle
import sys
import types
from collections.abc import Callable

from ember import nn

from ... import _op_namespace as ember

# modules whose public functions are sent by name (``rpc_sync("w1", ember.add, ...)``)
_FUNCTION_MODULES = ("ember", "ember.nn.functional", "ember.linalg", "ember.special", "ember.fft")
_FUNCTION_TYPES = (types.FunctionType, types.BuiltinFunctionType)


class _RRefHooks:
    """How RRefs are sent: the ``rref`` module registers them (it imports this module)."""

    rref_class: type | None = None
    # (rref, destination id, in a request?) -> what identifies it there
    to_wire: Callable | None = None
    from_wire: Callable | None = None  # (that, source id) -> the RRef on this worker


def register_rref_hooks(rref_class: type, to_wire: Callable, from_wire: Callable) -> None:
    _RRefHooks.rref_class, _RRefHooks.to_wire, _RRefHooks.from_wire = rref_class, to_wire, from_wire


def _ember_function_name(function) -> tuple[str, str] | None:
    """Where ``function`` is public in ember, looked up by name each time: ember rebinds some of
    them (``ember.nested`` wraps ``ember.add`` when first used), so no table would stay right."""
    name = getattr(function, "__name__", None)
    if not isinstance(name, str):
        return None
    for module_name in _FUNCTION_MODULES:
        module = sys.modules.get(module_name)
        if module is not None and getattr(module, name, None) is function:
            return (module_name, name)
    return None


class MessagePickler(pickle.Pickler):
    """Pickles one message for worker ``destination``; ``grad_tensors`` lists the tensors in it
    that require grad (the originals, still in their graphs)."""

    def __init__(self, file, destination: int, request: bool = True, buffer_callback=None) -> None:
        super().__init__(file, protocol=5, buffer_callback=buffer_callback)
        self.destination = destination
        self.request = request  # a request (else a response): RRefs' lifetimes differ
        self.grad_tensors: list = []
        self._tensor_index: dict[int, int] = {}
        self._tensors: list = []  # keeps them alive while their ids index _tensor_index

    def persistent_id(self, obj):
        if isinstance(obj, ember.Tensor):
            return self._tensor_id(obj)
        rref_class = _RRefHooks.rref_class
        if rref_class is not None and isinstance(obj, rref_class):
            return ("rref", _RRefHooks.to_wire(obj, self.destination, self.request))
        if isinstance(obj, _FUNCTION_TYPES):
            named = _ember_function_name(obj)
            if named is not None:
                return ("function", named)
        return None

    def _tensor_id(self, tensor):
        index = self._tensor_index.get(id(tensor))
        if index is not None:
            return ("same", index)
        self._tensor_index[id(tensor)] = len(self._tensors)
        self._tensors.append(tensor)
        requires_grad = tensor.requires_grad
        if requires_grad:
            self.grad_tensors.append(tensor)
        array = tensor.detach().cpu().numpy()
        return ("tensor", array, requires_grad, isinstance(tensor, nn.Parameter))


class RecvRpc(ember.autograd.Function):
    """Where a received tensor's gradient leaves this worker (``RecvRpcBackward``, as torch's):
    the tensor the message brought is a leaf behind this node, so the one the program gets is
    no leaf and may be changed in place, as in torch."""

    @staticmethod
    def forward(ctx, received):
        return received.detach()  # the same memory: the leaf only collects the gradient

    @staticmethod
    def backward(ctx, grad):
        return grad


class MessageUnpickler(pickle.Unpickler):
    """Loads one message from worker ``source``; ``grad_tensors`` lists the tensors it rebuilt
    that require grad, in the sender's order. With ``recording`` (the message belongs to a
    distributed autograd context) those are leaves, and the message holds ``RecvRpcBackward``
    outputs of them instead (except ``Parameter``s, which stay leaves)."""

    def __init__(self, file, source: int, recording: bool = False, buffers=()) -> None:
        super().__init__(file, buffers=buffers)
        self.source = source
        self.recording = recording
        self.grad_tensors: list = []
        self._tensors: list = []

    def persistent_load(self, pid):
        kind = pid[0]
        if kind == "tensor":
            _, array, requires_grad, is_parameter = pid
            if not array.flags.writeable:  # its data came as a frame of its own (read-only)
                array = array.copy()
            tensor = ember.from_numpy(array)
            if is_parameter:
                tensor = nn.Parameter(tensor, requires_grad=requires_grad)
            elif requires_grad:
                tensor.requires_grad_(True)
            if requires_grad:
                self.grad_tensors.append(tensor)
                if self.recording and not is_parameter:
                    tensor = RecvRpc.apply(tensor)
            self._tensors.append(tensor)
            return tensor
        if kind == "same":
            return self._tensors[pid[1]]
        if kind == "rref":
            return _RRefHooks.from_wire(pid[1], self.source)
        if kind == "function":
            module_name, attr = pid[1]
            return getattr(importlib.import_module(module_name), attr)
        raise pickle.UnpicklingError(f"ember.distributed.rpc: unknown persistent id {kind!r}")


class Pickled:
    """A pickled message: the pickle stream, and the large contiguous arrays in it (tensors'
    data) as buffers of their own, sent as they are instead of copied into the stream."""

    __slots__ = ("data", "buffers")

    def __init__(self, data, buffers: list) -> None:
        self.data = data
        self.buffers = buffers


def dumps(obj, destination: int, request: bool = True) -> tuple[Pickled, list]:
    """``obj`` pickled for worker ``destination`` (in a request, or a response), and the
    tensors in it that require grad."""
    stream = io.BytesIO()
    buffers: list = []
    pickler = MessagePickler(stream, destination, request, buffer_callback=buffers.append)
    pickler.dump(obj)
    return Pickled(stream.getbuffer(), [b.raw() for b in buffers]), pickler.grad_tensors


def loads(message: Pickled, source: int, recording: bool = False) -> tuple[object, list]:
    """The object in ``message`` from worker ``source``, and the tensors rebuilt that require
    grad (the leaves behind ``RecvRpcBackward`` nodes, with ``recording``)."""
    unpickler = MessageUnpickler(
        io.BytesIO(message.data), source, recording, buffers=message.buffers
    )
    return unpickler.load(), unpickler.grad_tensors
