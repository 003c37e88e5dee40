"""torch's globals in a checkpoint, rebuilt as ember objects.

A pickle written by ``torch.save`` (or ``ember.save``) names torch's rebuild functions
(``torch._utils._rebuild_tensor_v2``), storage classes (``torch.FloatStorage``), dtypes, and a
few classes (``torch.Size``, ``torch.device``). ``TORCH_GLOBALS`` maps each name torch's
weights-only loader allows to ember's counterpart; names of things ember lacks (quantized and
nested tensors, float8 dtypes) map to ``Missing``, which raises a SerializationError naming them
when the checkpoint uses one.
"""

from __future__ import annotations

import codecs
import functools
from collections import Counter, OrderedDict

from .. import _backend, _creation, _legacy
from .. import _dtype as dt
from .._tensor import Size, Tensor
from ..nn.parameter import Parameter
from ..sparse import _layout
from ..sparse._construct import sparse_coo_tensor
from . import _storage
from ._errors import SerializationError


class Missing:
    """A torch global ember has no counterpart for; using it raises."""

    def __init__(self, torch_name: str, what: str):
        self.torch_name, self.what = torch_name, what

    def __call__(self, *args, **kwargs):
        raise SerializationError(
            f"ember.load: the checkpoint needs {self.torch_name} ({self.what}), which ember "
            "does not have"
        )

    def __repr__(self) -> str:
        return f"<{self.torch_name}: not in ember>"


class StorageType:
    """``torch.FloatStorage`` and friends in a persistent id: the storage's element type."""

    def __init__(self, torch_name: str, dtype: dt.dtype | None):
        self.torch_name, self.dtype = torch_name, dtype

    def __repr__(self) -> str:
        return f"StorageType({self.torch_name})"


UNTYPED_STORAGE = StorageType("torch.storage.UntypedStorage", dt.uint8)  # bytes


# --- the rebuild functions of torch._utils ------------------------------------------------------
def _apply_metadata(t: Tensor, metadata) -> Tensor:
    """torch's conj/neg bits, applied (ember keeps no lazy conjugate or negative views)."""
    if not metadata:
        return t
    if not isinstance(metadata, dict):
        raise SerializationError(f"ember.load: invalid tensor metadata {metadata!r}")
    if metadata.get("neg") or metadata.get("conj"):
        _refuse_expanded(t, "a conjugate or negative view")
    data = t._data
    if metadata.get("neg"):
        data = -data
    if metadata.get("conj"):
        data = data.conj()
    return Tensor._wrap(data)


def _refuse_expanded(t: Tensor, what: str) -> None:
    if isinstance(t, Tensor) and _storage.is_expanded(t):
        raise SerializationError(
            f"ember.load: {what} of an expanded record ({t._data.size} elements over fewer "
            "stored ones) is refused: rebuilding it would copy every element"
        )


def _leaf(t: Tensor, requires_grad) -> Tensor:
    if requires_grad:
        t.requires_grad_(True)
    return t


def rebuild_tensor(storage, storage_offset, size, stride):
    return _storage.view(storage, getattr(storage, "dtype", None), storage_offset, size, stride)


def rebuild_tensor_v2(
    storage, storage_offset, size, stride, requires_grad=False, backward_hooks=None, metadata=None
):
    t = rebuild_tensor(storage, storage_offset, size, stride)
    return _leaf(_apply_metadata(t, metadata), requires_grad)


def rebuild_tensor_v3(
    storage, storage_offset, size, stride, requires_grad, backward_hooks, dtype, metadata=None
):
    """A tensor of ``dtype`` over an untyped (byte) storage: how torch saves uint16/32/64."""
    if not isinstance(dtype, dt.dtype):
        raise SerializationError(f"ember.load: invalid dtype {dtype!r} in a tensor record")
    t = _storage.view(storage, dtype, storage_offset, size, stride)
    return _leaf(_apply_metadata(t, metadata), requires_grad)


def rebuild_meta_tensor_no_storage(dtype, size, stride, requires_grad=False):
    """A meta tensor: torch saves its dtype, size and strides, and no storage."""
    if not isinstance(dtype, dt.dtype):
        raise SerializationError(f"ember.load: invalid dtype {dtype!r} in a meta tensor record")
    size = _storage.check_size(size, "a meta tensor record")
    _storage.check_size(stride, "a meta tensor record's stride")
    meta = _backend.require_module(_backend.META)
    return _leaf(Tensor._wrap(meta.empty(size, dtype=dtype.np)), requires_grad)


def rebuild_parameter(data, requires_grad, backward_hooks, *args):
    if not isinstance(data, Tensor):
        raise SerializationError(f"ember.load: a parameter record holds {type(data).__name__}")
    return Parameter(data, bool(requires_grad))


def rebuild_parameter_with_state(data, requires_grad, backward_hooks, state):
    return set_tensor_state(rebuild_parameter(data, requires_grad, backward_hooks), state)


_OWN_FIELDS = frozenset({"_data", "_vc"})  # set on every tensor by Tensor._wrap


def user_attributes(t: Tensor) -> dict:
    """The attributes a user set on ``t`` (``t.note = ...``): torch saves them with the tensor."""
    cls = type(t)
    return {k: v for k, v in vars(t).items() if k not in _OWN_FIELDS and not hasattr(cls, k)}


def set_tensor_state(t: Tensor, state) -> Tensor:
    """Set the saved attributes of a tensor (a dict, or torch's (dict, slots) pair); a name of
    ember's own (``_data``, ``grad``, a method) is refused rather than overwritten."""
    slots = None
    if isinstance(state, tuple):
        if len(state) != 2:
            raise SerializationError(f"ember.load: invalid serialized tensor state {state!r}")
        state, slots = state
    for part in (state, slots):
        if not part:
            continue
        if not isinstance(part, dict):
            raise SerializationError(f"ember.load: invalid serialized tensor state {part!r}")
        for name, value in part.items():
            if not isinstance(name, str) or name in _OWN_FIELDS or hasattr(type(t), name):
                raise SerializationError(
                    f"ember.load: a saved tensor attribute is named {name!r}, a field of "
                    "ember's own tensors; it is not set"
                )
            setattr(t, name, value)
    return t


def rebuild_from_type_v2(func, new_type, args, state):
    """A tensor rebuilt by ``func`` with the attributes a user set on it (torch's path for
    tensors with a ``__dict__`` and for subclasses)."""
    if func not in _TENSOR_REBUILDERS:
        raise SerializationError(
            f"ember.load: _rebuild_from_type_v2 of {func!r}, not a tensor rebuild function"
        )
    if new_type not in (Tensor, Parameter):
        raise SerializationError(
            f"ember.load: the checkpoint holds a tensor of class {new_type!r}; ember rebuilds "
            "Tensor and Parameter"
        )
    t = func(*args)
    if new_type is Parameter and not isinstance(t, Parameter):
        t = Parameter(t, t.requires_grad)
    return set_tensor_state(t, state)


def rebuild_sparse_tensor(layout, data):
    if layout is not _layout.sparse_coo:
        raise SerializationError(f"ember.load: a sparse tensor of layout {layout!r}")
    if not isinstance(data, tuple) or len(data) not in (3, 4):
        raise SerializationError("ember.load: a sparse tensor record is malformed")
    indices, values, size = data[:3]
    coalesced = data[3] if len(data) == 4 else None
    _refuse_expanded(indices, "a sparse tensor's indices")
    _refuse_expanded(values, "a sparse tensor's values")
    return sparse_coo_tensor(
        indices, values, _storage.check_size(size), check_invariants=True, is_coalesced=coalesced
    )


def rebuild_device_tensor_from_cpu_tensor(data, dtype, device, requires_grad):
    _refuse_expanded(data, "a device tensor")
    return _leaf(data.to(dtype=dtype, device=device), requires_grad)


def rebuild_device_tensor_from_numpy(data, dtype, device, requires_grad):
    return _leaf(_creation.from_numpy(data).to(dtype=dtype, device=device), requires_grad)


_TENSOR_REBUILDERS = (
    rebuild_tensor,
    rebuild_tensor_v2,
    rebuild_tensor_v3,
    rebuild_parameter,
    rebuild_parameter_with_state,
    rebuild_sparse_tensor,
    rebuild_device_tensor_from_cpu_tensor,
    rebuild_device_tensor_from_numpy,
)


def get_layout(name: str):
    """torch.serialization._get_layout: a layout from its name ("torch.sparse_coo")."""
    layouts = {"torch.strided": _layout.strided, "torch.sparse_coo": _layout.sparse_coo}
    if name in layouts:
        return layouts[name]
    if name in ("torch.sparse_csr", "torch.sparse_csc", "torch.sparse_bsr", "torch.sparse_bsc"):
        raise SerializationError(
            f"ember.load: the checkpoint holds a {name} tensor; ember has the sparse_coo layout "
            "only (save it from torch as .to_sparse_coo())"
        )
    raise SerializationError(f"ember.load: unknown layout {name!r}")


# --- the names -----------------------------------------------------------------------------------
# torch's dtypes: ember's where it has one
_DTYPES = (
    "bfloat16 bits16 bits1x8 bits2x4 bits4x2 bits8 bool complex128 complex32 complex64 float16 "
    "float32 float4_e2m1fn_x2 float64 float8_e4m3fn float8_e4m3fnuz float8_e5m2 float8_e5m2fnuz "
    "float8_e8m0fnu int1 int2 int3 int4 int5 int6 int7 int8 int16 int32 int64 qint32 qint8 "
    "quint2x4 quint4x2 quint8 uint1 uint2 uint3 uint4 uint5 uint6 uint7 uint8 uint16 uint32 "
    "uint64"
).split()
# torch's legacy type-name prefixes (FloatStorage, cuda.FloatTensor, sparse.FloatTensor)
_LEGACY = "BFloat16 Bool Byte Char Double Float Half Int Long Short".split()
_QUANTIZED_STORAGES = "QInt32 QInt8 QUInt2x4 QUInt4x2 QUInt8".split()
_QSCHEMES = (
    "per_channel_affine per_channel_affine_float_qparams per_channel_symmetric "
    "per_tensor_affine per_tensor_symmetric"
).split()


def _legacy_dtype(prefix: str):
    by_legacy = {legacy: name for name, legacy in dt.LEGACY_NAMES.items()}
    return dt.BY_NAME.get(by_legacy.get(prefix, ""))


def _legacy_tensor_class(prefix: str, device_type: str):
    types = _legacy.CPU_TYPES if device_type == "cpu" else _legacy.CUDA_TYPES
    return types.get(prefix + "Tensor")


@functools.lru_cache(maxsize=1)
def torch_globals() -> dict:
    """Every global torch's weights-only loader allows, by dotted name, as ember's object."""
    names: dict = {
        "collections.OrderedDict": OrderedDict,
        "collections.Counter": Counter,
        "torch.nn.parameter.Parameter": Parameter,
        "torch.serialization._get_layout": get_layout,
        "torch.Size": Size,
        "torch.Tensor": Tensor,
        "torch.device": _backend.device,
        "_codecs.encode": codecs.encode,
        "builtins.bytearray": bytearray,
        "builtins.set": set,
        "builtins.complex": complex,
        "torch._tensor._rebuild_from_type_v2": rebuild_from_type_v2,
        "torch.storage.UntypedStorage": UNTYPED_STORAGE,
        "torch.storage.TypedStorage": Missing("torch.storage.TypedStorage", "a storage class"),
    }
    for name in _DTYPES:
        names[f"torch.{name}"] = dt.BY_NAME.get(name) or Missing(f"torch.{name}", "a dtype")
    for prefix in _LEGACY + ["ComplexDouble", "ComplexFloat"]:
        for module in ("torch", "torch.cuda"):
            torch_name = f"{module}.{prefix}Storage"
            names[torch_name] = StorageType(torch_name, _legacy_dtype(prefix))
    for prefix in _QUANTIZED_STORAGES:
        names[f"torch.{prefix}Storage"] = StorageType(f"torch.{prefix}Storage", None)
    for prefix in _LEGACY:
        for module, device_type in (("torch", "cpu"), ("torch.cuda", "cuda")):
            torch_name = f"{module}.{prefix}Tensor"
            cls = _legacy_tensor_class(prefix, device_type)
            names[torch_name] = cls or Missing(torch_name, "a tensor class")
        if prefix != "Bool":
            for module in ("torch.sparse", "torch.cuda.sparse"):
                torch_name = f"{module}.{prefix}Tensor"
                names[torch_name] = Missing(torch_name, "a legacy sparse tensor class")
    for name in _QSCHEMES:
        names[f"torch.{name}"] = Missing(f"torch.{name}", "a quantization scheme")
    rebuilders = {
        "_rebuild_tensor": rebuild_tensor,
        "_rebuild_tensor_v2": rebuild_tensor_v2,
        "_rebuild_tensor_v3": rebuild_tensor_v3,
        "_rebuild_parameter": rebuild_parameter,
        "_rebuild_parameter_with_state": rebuild_parameter_with_state,
        "_rebuild_sparse_tensor": rebuild_sparse_tensor,
        "_rebuild_device_tensor_from_cpu_tensor": rebuild_device_tensor_from_cpu_tensor,
        "_rebuild_device_tensor_from_numpy": rebuild_device_tensor_from_numpy,
        "_rebuild_qtensor": Missing("torch._utils._rebuild_qtensor", "quantized tensors"),
        "_rebuild_meta_tensor_no_storage": rebuild_meta_tensor_no_storage,
        "_rebuild_nested_tensor": Missing("torch._utils._rebuild_nested_tensor", "nested tensors"),
        "_rebuild_wrapper_subclass": Missing(
            "torch._utils._rebuild_wrapper_subclass", "tensor subclasses"
        ),
    }
    for name, fn in rebuilders.items():
        names[f"torch._utils.{name}"] = fn
    return names
