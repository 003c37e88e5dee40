"""Containers: Sequential, ModuleList, ModuleDict, ParameterList, ParameterDict."""

from __future__ import annotations

from collections import OrderedDict

from ..parameter import Parameter
from .module import Module


def _renumber(modules: dict, items: list) -> None:
    """Store ``items`` under the keys "0", "1", ... (PyTorch renumbers after a removal)."""
    modules.clear()
    for i, mod in enumerate(items):
        modules[str(i)] = mod


class Sequential(Module):
    """Modules applied one after another; indexable and sliceable.

    Example::
        >>> model = ember.nn.Sequential(ember.nn.Linear(4, 8), ember.nn.ReLU())
        >>> model[0]
        Linear(in_features=4, out_features=8, bias=True)
    """

    def __init__(self, *args):
        super().__init__()
        if len(args) == 1 and isinstance(args[0], OrderedDict):
            for name, mod in args[0].items():
                self.add_module(name, mod)
        else:
            for i, mod in enumerate(args):
                self.add_module(str(i), mod)

    def forward(self, input):
        for mod in self._modules.values():
            input = mod(input)
        return input

    def _index(self, idx: int) -> str:
        n = len(self._modules)
        if not -n <= idx < n:
            raise IndexError(f"index {idx} is out of range")
        return list(self._modules)[idx % n]

    def __getitem__(self, idx):
        if isinstance(idx, slice):
            return Sequential(OrderedDict(list(self._modules.items())[idx]))
        return self._modules[self._index(idx)]

    def __setitem__(self, idx: int, module: Module) -> None:
        self._modules[self._index(idx)] = module

    def __delitem__(self, idx) -> None:
        keys = list(self._modules)[idx] if isinstance(idx, slice) else [self._index(idx)]
        for key in keys:
            del self._modules[key]
        _renumber(self._modules, list(self._modules.values()))

    def __len__(self) -> int:
        return len(self._modules)

    def __iter__(self):
        return iter(self._modules.values())

    def append(self, module: Module) -> Sequential:
        self.add_module(str(len(self)), module)
        return self

    def extend(self, modules) -> Sequential:
        for mod in modules:
            self.append(mod)
        return self

    def insert(self, index: int, module: Module) -> Sequential:
        items = list(self._modules.values())
        items.insert(index, module)
        _renumber(self._modules, items)
        return self


class ModuleList(Module):
    """A list of modules whose parameters the parent module sees."""

    def __init__(self, modules=None):
        super().__init__()
        if modules is not None:
            self.extend(modules)

    def __getitem__(self, idx):
        if isinstance(idx, slice):
            return ModuleList(list(self._modules.values())[idx])
        n = len(self)
        if not -n <= idx < n:
            raise IndexError(f"index {idx} is out of range")
        return self._modules[str(idx % n)]

    def __setitem__(self, idx: int, module: Module) -> None:
        self._modules[str(idx % len(self))] = module

    def __delitem__(self, idx) -> None:
        items = list(self._modules.values())
        del items[idx]
        _renumber(self._modules, items)

    def __len__(self) -> int:
        return len(self._modules)

    def __iter__(self):
        return iter(self._modules.values())

    def __iadd__(self, modules):
        return self.extend(modules)

    def append(self, module: Module) -> ModuleList:
        self.add_module(str(len(self)), module)
        return self

    def extend(self, modules) -> ModuleList:
        for mod in modules:
            self.append(mod)
        return self

    def insert(self, index: int, module: Module) -> None:
        items = list(self._modules.values())
        items.insert(index, module)
        _renumber(self._modules, items)


class _MappingOf:
    """The dict protocol over one of a Module's stores (``_modules`` or ``_parameters``)."""

    _store = ""

    def _items(self) -> dict:
        return self.__dict__[self._store]

    def __delitem__(self, key: str) -> None:
        del self._items()[key]

    def __len__(self) -> int:
        return len(self._items())

    def __iter__(self):
        return iter(self._items())

    def __contains__(self, key: str) -> bool:
        return key in self._items()

    def keys(self):
        return self._items().keys()

    def values(self):
        return self._items().values()

    def items(self):
        return self._items().items()

    def pop(self, key: str):
        return self._items().pop(key)

    def clear(self) -> None:
        self._items().clear()

    def update(self, values) -> None:
        for key, value in values.items() if hasattr(values, "items") else values:
            self[key] = value


class ModuleDict(_MappingOf, Module):
    """A dict of modules whose parameters the parent module sees."""

    _store = "_modules"

    def __init__(self, modules=None):
        super().__init__()
        if modules is not None:
            self.update(modules)

    def __getitem__(self, key: str) -> Module:
        return self._modules[key]

    def __setitem__(self, key: str, module: Module) -> None:
        self.add_module(key, module)


class ParameterList(Module):
    """A list of parameters registered on the module."""

    def __init__(self, values=None):
        super().__init__()
        if values is not None:
            self.extend(values)

    def __getitem__(self, idx):
        if isinstance(idx, slice):
            return ParameterList(list(self._parameters.values())[idx])
        return self._parameters[str(idx % len(self))]

    def __setitem__(self, idx: int, param) -> None:
        self.register_parameter(str(idx % len(self)), _as_parameter(param))

    def __len__(self) -> int:
        return len(self._parameters)

    def __iter__(self):
        return iter(self._parameters.values())

    def append(self, value) -> ParameterList:
        self.register_parameter(str(len(self)), _as_parameter(value))
        return self

    def extend(self, values) -> ParameterList:
        for v in values:
            self.append(v)
        return self

    def extra_repr(self) -> str:
        return "\n".join(
            f"({k}): Parameter containing: [{_describe(p)}]" for k, p in self._parameters.items()
        )


class ParameterDict(_MappingOf, Module):
    """A dict of parameters registered on the module."""

    _store = "_parameters"

    def __init__(self, parameters=None):
        super().__init__()
        if parameters is not None:
            self.update(parameters)

    def __getitem__(self, key: str):
        return self._parameters[key]

    def __setitem__(self, key: str, param) -> None:
        self.register_parameter(key, _as_parameter(param))

    def extra_repr(self) -> str:
        return "\n".join(
            f"({k}): Parameter containing: [{_describe(p)}]" for k, p in self._parameters.items()
        )


def _as_parameter(value):
    return value if isinstance(value, Parameter) else Parameter(value)


def _describe(p) -> str:
    legacy = p.dtype.legacy_name
    return f"ember.{legacy}Tensor of size {'x'.join(str(s) for s in p.shape)}"
