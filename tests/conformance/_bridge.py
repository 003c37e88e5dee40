"""The bridge between PyTorch's OpInfo database and ember.

Three jobs: find ember's counterpart of an OpInfo's function / method / in-place variant;
carry a SampleInput (tensors with their dtype, shape, strides and storage offset; dtypes,
devices, memory formats, sizes, generators; nested containers) from torch to ember; and
carry results back so that torch's own ``assert_close`` compares them.

Wrappers that OpInfo defines in Python (``lambda x, *a: torch.foo(x, *a)``) are re-created
with their torch globals and closure cells swapped for ember's, so the same Python code
runs against ember.
"""

from __future__ import annotations

import builtins
import functools
import importlib
import types

import numpy as np
import torch

import ember

# torch namespaces whose public callables we index by identity, in order of preference
_NAMESPACES = (
    "",
    "nn.functional",
    "linalg",
    "special",
    "fft",
    "masked",
    "sparse",
    "nn.init",
    "signal.windows",
    "func",
    "autograd",
)


class MissingInEmber(Exception):
    """ember has no counterpart of a torch callable (reported as a disagreement)."""


def _torch_module(path: str):
    return importlib.import_module("torch" + ("." + path if path else ""))


@functools.cache
def _reverse_index() -> dict[int, tuple[str, str]]:
    """id(torch callable) -> (namespace, name): the name under which a PyTorch user calls it."""
    index: dict[int, tuple[str, str]] = {}
    for ns in _NAMESPACES:
        try:
            module = _torch_module(ns)
        except ImportError:
            continue
        for name in dir(module):
            if name.startswith("_"):
                continue
            obj = getattr(module, name, None)
            if callable(obj) and not isinstance(obj, type):
                index.setdefault(id(obj), (ns, name))
    for name in dir(torch.Tensor):
        if name.startswith("__") and name not in _DUNDER_METHODS:
            continue
        obj = getattr(torch.Tensor, name, None)
        if callable(obj):
            index.setdefault(id(obj), ("Tensor", name))
    return index


_DUNDER_METHODS = {
    "__getitem__", "__setitem__", "__add__", "__radd__", "__sub__", "__rsub__", "__mul__",
    "__rmul__", "__truediv__", "__rtruediv__", "__floordiv__", "__rfloordiv__", "__mod__",
    "__rmod__", "__pow__", "__rpow__", "__matmul__", "__rmatmul__", "__and__", "__rand__",
    "__or__", "__ror__", "__xor__", "__rxor__", "__lshift__", "__rlshift__", "__rshift__",
    "__rrshift__", "__neg__", "__invert__", "__abs__", "__eq__", "__ne__", "__lt__", "__le__",
    "__gt__", "__ge__", "__iadd__", "__isub__", "__imul__", "__itruediv__", "__ifloordiv__",
    "__imod__", "__ipow__", "__iand__", "__ior__", "__ixor__", "__ilshift__", "__irshift__",
    "__rdiv__", "__div__", "__bool__", "__float__", "__int__", "__len__", "__contains__",
}  # fmt: skip


def ember_attribute(namespace: str, name: str):
    """ember's object at ``namespace.name`` (namespace "" is the top level, "Tensor" methods)."""
    obj = ember.Tensor if namespace == "Tensor" else ember
    if namespace and namespace != "Tensor":
        for part in namespace.split("."):
            obj = getattr(obj, part, None)
            if obj is None:
                raise MissingInEmber(f"ember.{namespace}")
    if not hasattr(obj, name):
        where = (
            "ember.Tensor"
            if namespace == "Tensor"
            else "ember" + ("." + namespace if namespace else "")
        )
        raise MissingInEmber(f"{where}.{name}")
    return getattr(obj, name)


def _method_caller(name: str):
    def call(self, *args, **kwargs):
        if not isinstance(self, ember.Tensor) and hasattr(ember.Tensor, name):
            # torch.Tensor.__radd__(2, t) as torch runs it: the Tensor's method, not int's
            return getattr(ember.Tensor, name)(self, *args, **kwargs)
        try:
            method = getattr(self, name)
        except AttributeError:
            raise MissingInEmber(f"ember.Tensor.{name}") from None
        return method(*args, **kwargs)

    call.__name__ = name
    return call


def _ember_wrapper_set_seed(op, *args, **kwargs):
    """torch.testing._utils.wrapper_set_seed over ember: the op runs from seed 42, the global
    generator's state is restored afterwards."""
    state = ember.get_rng_state()
    try:
        ember.manual_seed(42)
        return op(*args, **kwargs)
    finally:
        ember.set_rng_state(state)


@functools.cache
def _substitutes() -> dict:
    """torch's testing helpers that touch torch internals, by id, with ember's equivalents."""
    from torch.testing import _utils

    return {id(_utils.wrapper_set_seed): _ember_wrapper_set_seed}


def to_ember_callable(fn):
    """ember's counterpart of a torch callable (a builtin, a Tensor method or a Python wrapper)."""
    if fn is None:
        return None
    substitute = _substitutes().get(id(fn))
    if substitute is not None:
        return substitute
    found = _reverse_index().get(id(fn))
    if found is not None:
        namespace, name = found
        if namespace == "Tensor":
            ember_attribute("Tensor", name)  # raise MissingInEmber early
            return _method_caller(name)
        return ember_attribute(namespace, name)
    if isinstance(fn, functools.partial):
        return functools.partial(
            to_ember_callable(fn.func), *to_ember(fn.args), **to_ember(fn.keywords)
        )
    if isinstance(fn, types.FunctionType):
        return _rebind(fn)
    if isinstance(fn, (types.BuiltinFunctionType, types.MethodDescriptorType)):
        name = getattr(fn, "__name__", repr(fn))
        if isinstance(fn, types.MethodDescriptorType) or getattr(fn, "__self__", None) is None:
            return _method_caller(name)
        raise MissingInEmber(f"no ember counterpart of {fn!r}")
    if isinstance(fn, types.MethodWrapperType) or type(fn).__name__ == "wrapper_descriptor":
        return _method_caller(fn.__name__)
    raise MissingInEmber(f"no ember counterpart of {type(fn).__name__} {fn!r}")


class _EmberGlobals(dict):
    """A function's module globals seen through ember: torch names resolve to ember's."""

    def __init__(self, original: dict):
        super().__init__()
        self._original = original

    def __getitem__(self, key):
        if dict.__contains__(self, key):
            return dict.__getitem__(self, key)
        value = self._original[key]  # KeyError -> NameError, as for any global
        converted = _convert_global(value)
        dict.__setitem__(self, key, converted)
        return converted

    def __contains__(self, key):
        return key in self._original

    def get(self, key, default=None):
        try:
            return self[key]
        except KeyError:
            return default


_GLOBALS_CACHE: dict[int, _EmberGlobals] = {}
_REBOUND: dict[int, tuple] = {}  # id -> (the torch-side function, its ember twin)


def _convert_global(value):
    if isinstance(value, types.ModuleType):
        if value.__name__ == "torch" or value.__name__.startswith("torch."):
            return _ember_module(value.__name__)
        return value
    if isinstance(
        value, (torch.dtype, torch.device, torch.Tensor, torch.memory_format, torch.layout)
    ):
        return to_ember(value)
    if value is torch.Tensor:
        return ember.Tensor
    if callable(value) and not isinstance(value, type):
        module = getattr(value, "__module__", None) or ""
        if id(value) in _reverse_index() or id(value) in _substitutes():
            return to_ember_callable(value)
        if isinstance(value, types.FunctionType) and module.startswith("torch.testing"):
            return _rebind(value)
    return value


def _ember_module(torch_name: str):
    name = "ember" + torch_name[len("torch") :]
    try:
        return importlib.import_module(name)
    except ImportError:
        return _MissingModule(name)


class _MissingModule:
    def __init__(self, name):
        self._name = name

    def __getattr__(self, attr):
        raise MissingInEmber(f"{self._name}.{attr}")


def forget_rebound_wrappers() -> None:
    """Drop the cache of re-created wrappers (and the closures, samples and tensors they hold)."""
    _REBOUND.clear()


def _rebind(fn: types.FunctionType) -> types.FunctionType:
    """``fn`` re-created over ember: its globals and closure cells hold ember's objects."""
    cached = _REBOUND.get(id(fn))
    if cached is not None and cached[0] is fn:  # ids of dead closures are reused
        return cached[1]
    original_globals = fn.__globals__
    glb = _GLOBALS_CACHE.get(id(original_globals))
    if glb is None or glb._original is not original_globals:
        glb = _GLOBALS_CACHE[id(original_globals)] = _EmberGlobals(original_globals)
        dict.__setitem__(glb, "__builtins__", builtins)
    closure = None
    if fn.__closure__:
        cells = []
        for cell in fn.__closure__:
            try:
                contents = cell.cell_contents
            except ValueError:  # an empty cell (a recursive inner function)
                cells.append(types.CellType())
                continue
            cells.append(types.CellType(_convert_global(to_ember(contents))))
        closure = tuple(cells)
    new = types.FunctionType(fn.__code__, glb, fn.__name__, fn.__defaults__, closure)
    new.__kwdefaults__ = to_ember(fn.__kwdefaults__)
    _REBOUND[id(fn)] = (fn, new)
    return new


# ----------------------------------------------------------------------------------------
# values: torch -> ember


def ember_dtype(dtype: torch.dtype):
    name = str(dtype).split(".")[-1]
    if not hasattr(ember, name):
        raise MissingInEmber(f"ember.{name}")
    return getattr(ember, name)


def _tensor_to_ember(t: torch.Tensor, memo: dict):
    key = id(t)
    if key in memo:
        return memo[key]
    if t.layout in _COMPRESSED_LAYOUTS:
        return _compressed_to_ember(t, memo)
    if t.layout != torch.strided:
        raise MissingInEmber(f"{t.layout} tensors")
    requires_grad = t.requires_grad
    with torch.no_grad():
        src = t.detach()
        if src.is_conj():
            src = src.resolve_conj()
        if src.is_neg():
            src = src.resolve_neg()
        itemsize = src.element_size()
        storage = src.untyped_storage()
        storage_len = storage.nbytes() // itemsize
        # tensors of one torch storage share one copied array, so that ember sees the same
        # aliasing (an out= that is a view of an input, an input viewed twice) as torch
        storage_key = ("storage", storage.data_ptr(), storage.nbytes(), src.dtype)
        shareable = not (t.is_conj() or t.is_neg())  # else src is a fresh resolved copy
        base = memo.get(storage_key) if shareable else None
        if base is None:
            flat = src.as_strided((storage_len,), (1,), 0)
            if src.dtype == torch.bfloat16:
                import ml_dtypes

                base = flat.view(torch.int16).numpy().copy().view(ml_dtypes.bfloat16)
            else:
                base = flat.numpy().copy()
            if storage_len and shareable:
                memo[storage_key] = base
    if storage_len == 0:
        array = np.empty(tuple(src.shape), dtype=base.dtype)
    else:
        array = np.lib.stride_tricks.as_strided(
            base[src.storage_offset() :],
            shape=tuple(src.shape),
            strides=tuple(s * itemsize for s in src.stride()),
        )
    result = ember.from_numpy(array)
    if requires_grad:
        result.requires_grad_(True)
    memo[key] = result
    return result


_COMPRESSED_LAYOUTS = {
    torch.sparse_csr: ("crow_indices", "col_indices"),
    torch.sparse_bsr: ("crow_indices", "col_indices"),
    torch.sparse_csc: ("ccol_indices", "row_indices"),
    torch.sparse_bsc: ("ccol_indices", "row_indices"),
}


def _compressed_to_ember(t: torch.Tensor, memo: dict):
    """A CSR/CSC/BSR/BSC tensor rebuilt in ember from its index arrays and values."""
    compressed, plain = (getattr(t, name)() for name in _COMPRESSED_LAYOUTS[t.layout])
    with torch.no_grad():
        parts = [_tensor_to_ember(x.detach(), {}) for x in (compressed, plain, t.values())]
    result = ember.sparse_compressed_tensor(
        *parts, tuple(t.shape), layout=getattr(ember, str(t.layout).split(".")[-1])
    )
    if t.requires_grad:
        result.requires_grad_(True)
    memo[id(t)] = result
    return result


def to_ember(value, memo: dict | None = None):
    """``value`` (a sample's input, args or kwargs) with every torch object replaced by ember's."""
    if memo is None:
        memo = {}
    if isinstance(value, torch.Tensor):
        return _tensor_to_ember(value, memo)
    if isinstance(value, torch.Size):
        return ember.Size(tuple(value))
    if isinstance(value, torch.dtype):
        return ember_dtype(value)
    if isinstance(value, torch.device):
        return ember.device(str(value))
    if isinstance(value, torch.memory_format):
        return getattr(ember, str(value).split(".")[-1])
    if isinstance(value, torch.layout):
        return getattr(ember, str(value).split(".")[-1])
    if isinstance(value, torch.Generator):
        generator = ember.Generator()
        generator.set_state(ember.tensor(value.get_state().numpy()))
        return generator
    if isinstance(value, tuple):
        items = [to_ember(v, memo) for v in value]
        if hasattr(value, "_fields"):  # a namedtuple
            return type(value)(*items)
        return tuple(items)
    if isinstance(value, list):
        return [to_ember(v, memo) for v in value]
    if isinstance(value, dict):
        return {k: to_ember(v, memo) for k, v in value.items()}
    if isinstance(value, torch.nn.Module):
        return _module_to_ember(value)
    if callable(value) and (
        id(value) in _reverse_index()
        or (isinstance(value, types.FunctionType) and (value.__module__ or "").startswith("torch"))
    ):
        return to_ember_callable(value)
    return value


def _module_to_ember(module):
    """A parameter-free torch module (``distance_function=nn.PairwiseDistance()``) as ember's
    module of the same name, holding the same settings."""
    cls = getattr(ember.nn, type(module).__name__, None)
    if cls is None or next(module.parameters(), None) is not None:
        raise MissingInEmber(f"ember.nn.{type(module).__name__} from a torch module")
    twin = cls.__new__(cls)
    ember.nn.Module.__init__(twin)
    for name, setting in vars(module).items():
        if not name.startswith("_"):
            setattr(twin, name, to_ember(setting))
    return twin


# ----------------------------------------------------------------------------------------
# values: ember -> torch (to compare with torch's own assert_close)


def torch_dtype(dtype) -> torch.dtype:
    return getattr(torch, dtype.name if hasattr(dtype, "name") else str(dtype).split(".")[-1])


def ember_tensor_to_torch(t) -> torch.Tensor:
    array = np.asarray(t.detach().cpu().numpy())
    name = str(t.dtype).split(".")[-1]
    if name == "bfloat16":
        return torch.from_numpy(array.view(np.int16).copy()).view(torch.bfloat16)
    return (
        torch.from_numpy(array.copy()).to(getattr(torch, name))
        if array.size
        else torch.empty(array.shape, dtype=getattr(torch, name))
    )


def to_torch(value):
    """An ember result carried back: tensors become torch tensors, containers stay containers."""
    if isinstance(value, ember.Tensor):
        return ember_tensor_to_torch(value)
    if isinstance(value, ember.Size):
        return torch.Size(tuple(value))
    if isinstance(value, tuple):
        return tuple(to_torch(v) for v in value)
    if isinstance(value, list):
        return [to_torch(v) for v in value]
    if (
        type(value).__module__.startswith("ember")
        and hasattr(value, "name")
        and hasattr(value, "itemsize")
    ):
        return torch_dtype(value)
    return value


def is_ember_tensor(value) -> bool:
    return isinstance(value, ember.Tensor)
