"""``ember.save``'s pickler: any picklable object, with ember's tensors, dtypes, sizes, devices
and layouts written under torch's names, exactly as ``torch.save`` writes them, so that
``torch.load`` (weights-only too) reads ember's files.

Tensors become torch's rebuild calls over persistent storage ids; tensors viewing one array share
one storage (``_storage.StorageTable``). Attributes a user set on a tensor or parameter ride
along, as torch saves them.
"""

from __future__ import annotations

import pickle
from collections import OrderedDict

from .. import _backend
from .. import _dtype as dt
from .._tensor import Size, Tensor
from ..nn.parameter import Parameter
from ..sparse import _layout
from ._rebuild import user_attributes
from ._storage import SavedStorage, StorageTable


class Global:
    """Stands for ``module.name`` in the pickle without importing it (torch need not exist)."""

    def __init__(self, module: str, name: str):
        self.module, self.name = module, name

    def __call__(self, *args):  # pickle insists that a reduce function be callable
        raise TypeError(f"{self.module}.{self.name} is only a name in a pickle")


_REBUILD_TENSOR_V2 = Global("torch._utils", "_rebuild_tensor_v2")
_REBUILD_TENSOR_V3 = Global("torch._utils", "_rebuild_tensor_v3")
_REBUILD_PARAMETER = Global("torch._utils", "_rebuild_parameter")
_REBUILD_PARAMETER_WITH_STATE = Global("torch._utils", "_rebuild_parameter_with_state")
_REBUILD_FROM_TYPE_V2 = Global("torch._tensor", "_rebuild_from_type_v2")
_REBUILD_SPARSE_TENSOR = Global("torch._utils", "_rebuild_sparse_tensor")
_REBUILD_META_TENSOR = Global("torch._utils", "_rebuild_meta_tensor_no_storage")
_GET_LAYOUT = Global("torch.serialization", "_get_layout")
_TORCH_TENSOR = Global("torch", "Tensor")
_TORCH_SIZE = Global("torch", "Size")
_TORCH_DEVICE = Global("torch", "device")
_UNTYPED_STORAGE = Global("torch.storage", "UntypedStorage")
_STORAGE_TYPES = {d: Global("torch", dt.LEGACY_NAMES[d.name] + "Storage") for d in dt.ALL}


class TorchPickler(pickle._Pickler):  # the Python pickler: it lets us write torch's globals
    """Pickles ``obj`` as torch.save does; ``legacy`` writes the persistent ids of torch's
    pre-zip format (a sixth, view, field)."""

    dispatch = dict(pickle._Pickler.dispatch)

    def __init__(self, file, protocol: int, legacy: bool = False):
        super().__init__(file, protocol)
        self.table = StorageTable()
        self.legacy = legacy

    @property
    def storages(self) -> list[SavedStorage]:
        return list(self.table.storages.values())

    def _write_global(self, obj) -> None:
        module, name = (obj.module, obj.name) if isinstance(obj, Global) else ("torch", obj.name)
        self.write(pickle.GLOBAL + f"{module}\n{name}\n".encode())
        self.memoize(obj)

    dispatch[Global] = _write_global
    dispatch[dt.dtype] = _write_global  # ember.float32 -> torch.float32
    dispatch[type(dt.bfloat16)] = _write_global

    def persistent_id(self, obj):
        if type(obj) is not SavedStorage:
            return None
        if obj.dtype in dt.BAREBONES_UNSIGNED:  # torch keeps these in untyped (byte) storages
            storage_type, numel = _UNTYPED_STORAGE, int(obj.flat.size) * obj.dtype.itemsize
        else:
            storage_type, numel = _STORAGE_TYPES[obj.dtype], int(obj.flat.size)
        pid = ("storage", storage_type, obj.key, obj.location, numel)
        return pid + (None,) if self.legacy else pid

    def reducer_override(self, obj):
        cls = type(obj)
        if isinstance(obj, Tensor):
            return self._reduce_tensor(obj)
        if cls is Size:
            return (_TORCH_SIZE, (tuple(obj),))
        if cls is _backend.device:
            return (_TORCH_DEVICE, (obj.type,) if obj.index is None else (obj.type, obj.index))
        if cls is _layout.layout:
            return (_GET_LAYOUT, ("torch." + str.__str__(obj),))
        return NotImplemented

    def _reduce_tensor(self, t: Tensor):
        if t.layout is _layout.sparse_coo:
            coo = t._data
            data = (Tensor._wrap(coo.indices), Tensor._wrap(coo.values), Size(coo.shape))
            return (_REBUILD_SPARSE_TENSOR, (_layout.sparse_coo, data + (coo.coalesced,)))
        state = user_attributes(t)
        if isinstance(t, Parameter):
            plain = Tensor._wrap(t._data)
            if state:
                args = (plain, t.requires_grad, OrderedDict(), state)
                return (_REBUILD_PARAMETER_WITH_STATE, args)
            return (_REBUILD_PARAMETER, (plain, t.requires_grad, OrderedDict()))
        if t.device.type == "meta":  # no storage: its dtype, size and strides (as torch)
            rebuild = _REBUILD_META_TENSOR
            args = (t.dtype, tuple(t.shape), t.stride(), t.requires_grad)
            if state:
                return (_REBUILD_FROM_TYPE_V2, (rebuild, _TORCH_TENSOR, args, state))
            return (rebuild, args)
        storage, offset, strides = self.table.storage_of(t)
        args = (storage, offset, tuple(t.shape), strides, t.requires_grad, OrderedDict())
        rebuild = _REBUILD_TENSOR_V2
        if t.dtype in dt.BAREBONES_UNSIGNED:
            rebuild, args = _REBUILD_TENSOR_V3, args + (t.dtype,)
        if state:
            return (_REBUILD_FROM_TYPE_V2, (rebuild, _TORCH_TENSOR, args, state))
        return (rebuild, args)
