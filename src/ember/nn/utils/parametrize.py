"""Parametrizations: a module attribute computed from stored tensors by small modules.

``register_parametrization(module, "weight", P)`` moves ``module.weight`` to
``module.parametrizations.weight.original`` (or ``original0``, ``original1``, ... when
``P.right_inverse`` returns a tuple) and makes ``module.weight`` a property that evaluates
``P(original)`` on every access (once per ``cached()`` block). As in PyTorch, the module's class
is swapped for a subclass named ``Parametrized<Class>`` that carries the property.
"""

from __future__ import annotations

from collections.abc import Sequence
from contextlib import contextmanager

from ..._tensor import Tensor
from ...autograd.grad_mode import no_grad
from ..modules.container import ModuleDict, ModuleList
from ..modules.module import Module
from ..parameter import Parameter

__all__ = [
    "cached",
    "ParametrizationList",
    "register_parametrization",
    "is_parametrized",
    "remove_parametrizations",
    "type_before_parametrizations",
    "transfer_parametrizations_and_params",
]

_cache_enabled = 0
_cache: dict = {}


@contextmanager
def cached():
    """Evaluate each parametrized tensor once inside the block and reuse it.

    Example::
        >>> with ember.nn.utils.parametrize.cached():
        ...     y = model(x)  # model.weight computed once even if used many times
    """
    global _cache_enabled
    _cache_enabled += 1
    try:
        yield
    finally:
        _cache_enabled -= 1
        if not _cache_enabled:
            _cache.clear()


def _register_parameter_or_buffer(module: Module, name: str, value: Tensor) -> None:
    if isinstance(value, Parameter):
        module.register_parameter(name, value)
    else:
        module.register_buffer(name, value)


def _set_data(target: Tensor, value: Tensor) -> None:
    """Make ``target`` hold ``value``'s values, keeping ``target``'s identity."""
    with no_grad():
        if tuple(target.shape) == tuple(value.shape) and target.dtype == value.dtype:
            target.copy_(value)
        else:  # an unsafe parametrization may change shape or dtype
            target._data = value.detach().clone()._data
            target._vc = [0]


class ParametrizationList(ModuleList):
    """The chain of parametrizations of one tensor, and the tensors it is computed from."""

    def __init__(self, modules: Sequence[Module], original: Tensor, unsafe: bool = False):
        if len(modules) == 0:
            raise ValueError("ParametrizationList requires one or more modules.")
        super().__init__(modules)
        self.unsafe = unsafe
        original_shape, original_dtype = tuple(original.shape), original.dtype
        with no_grad():
            new = original
            for module in reversed(list(self)):
                if hasattr(module, "right_inverse"):
                    try:
                        new = module.right_inverse(new)
                    except NotImplementedError:
                        pass
        if not isinstance(new, Tensor) and not isinstance(new, Sequence):
            raise ValueError(
                "'right_inverse' must return a Tensor or a Sequence of tensors (list, tuple...). "
                f"Got {type(new).__name__}"
            )
        self.is_tensor = isinstance(new, Tensor)
        self.ntensors = 1 if self.is_tensor else len(new)
        if self.is_tensor:
            if not unsafe and (tuple(new.shape) != original_shape or new.dtype != original_dtype):
                raise ValueError(
                    "When `right_inverse` outputs one tensor, it may not change the dtype or "
                    f"shape.\noriginal.dtype: {original_dtype}\nright_inverse(original).dtype: "
                    f"{new.dtype}\noriginal.shape: {original_shape}\n"
                    f"right_inverse(original).shape: {tuple(new.shape)}"
                )
            _set_data(original, new)
            _register_parameter_or_buffer(self, "original", original)
        else:
            for i, part in enumerate(new):
                if not isinstance(part, Tensor):
                    raise ValueError(
                        "'right_inverse' must return a Tensor or a Sequence of tensors "
                        f"(list, tuple...). Got element {i} of type {type(part).__name__}"
                    )
                if isinstance(original, Parameter):
                    part = Parameter(part.detach().clone(), original.requires_grad)
                _register_parameter_or_buffer(self, f"original{i}", part)
        if not unsafe:
            z = self()
            if not isinstance(z, Tensor):
                raise ValueError(
                    "A parametrization must return a tensor. Got " + type(z).__name__ + "."
                )
            if tuple(z.shape) != original_shape or z.dtype != original_dtype:
                raise ValueError(
                    "Registering a parametrization may not change the shape or dtype of the "
                    f"tensor, unless the `unsafe` flag is enabled.\nunparametrized dtype: "
                    f"{original_dtype}\nparametrized dtype: {z.dtype}\nunparametrized shape: "
                    f"{original_shape}\nparametrized shape: {tuple(z.shape)}"
                )

    def right_inverse(self, value: Tensor) -> None:
        """Store the tensors whose parametrized value is ``value`` (runs right_inverse back)."""
        with no_grad():
            for module in reversed(list(self)):
                if not hasattr(module, "right_inverse"):
                    raise RuntimeError(
                        f"parametrization {type(module).__name__} does not implement right_inverse."
                    )
                value = module.right_inverse(value)
            if self.is_tensor:
                if not isinstance(value, Tensor):
                    raise ValueError(f"`right_inverse` should return a tensor. Got {type(value)}")
                _set_data(self.original, value)
            else:
                if not isinstance(value, Sequence) or len(value) != self.ntensors:
                    raise ValueError(
                        f"'right_inverse' must return a sequence of tensors of length "
                        f"{self.ntensors}. Got {type(value).__name__}"
                    )
                for i, part in enumerate(value):
                    _set_data(getattr(self, f"original{i}"), part)

    def forward(self) -> Tensor:
        if self.is_tensor:
            x = self[0](self.original)
        else:
            x = self[0](*(getattr(self, f"original{i}") for i in range(self.ntensors)))
        for module in list(self)[1:]:
            x = module(x)
        return x


def _inject_new_class(module: Module) -> None:
    cls = module.__class__

    def getstate(self):
        raise RuntimeError(
            "Serialization of parametrized modules is only supported through state_dict()."
        )

    param_cls = type(f"Parametrized{cls.__name__}", (cls,), {"__getstate__": getstate})
    object.__setattr__(module, "__class__", param_cls)


def _inject_property(module: Module, tensor_name: str) -> None:
    def get_parametrized(self) -> Tensor:
        parametrization = self.parametrizations[tensor_name]
        if not _cache_enabled:
            return parametrization()
        key = (id(self), tensor_name)
        if key not in _cache:
            _cache[key] = parametrization()
        return _cache[key]

    def set_original(self, value: Tensor) -> None:
        self.parametrizations[tensor_name].right_inverse(value)

    setattr(module.__class__, tensor_name, property(get_parametrized, set_original))


def is_parametrized(module: Module, tensor_name: str | None = None) -> bool:
    """Whether ``module`` has a parametrization (on ``tensor_name``, if given)."""
    parametrizations = module.__dict__.get("_modules", {}).get("parametrizations")
    if parametrizations is None or not isinstance(parametrizations, ModuleDict):
        return False
    return len(parametrizations) > 0 if tensor_name is None else tensor_name in parametrizations


def register_parametrization(
    module: Module, tensor_name: str, parametrization: Module, *, unsafe: bool = False
) -> Module:
    """Make ``module.<tensor_name>`` be ``parametrization(original)``.

    Example::
        >>> class Symmetric(ember.nn.Module):
        ...     def forward(self, X):
        ...         return X.triu() + X.triu(1).transpose(-1, -2)
        >>> m = ember.nn.Linear(3, 3)
        >>> _ = register_parametrization(m, "weight", Symmetric())
        >>> bool((m.weight == m.weight.T).all())
        True
    """
    parametrization.train(module.training)
    if is_parametrized(module, tensor_name):
        plist = module.parametrizations[tensor_name]
        if not unsafe:
            y = getattr(module, tensor_name)
            x = parametrization(y)
            if not isinstance(x, Tensor):
                raise ValueError(f"A parametrization must return a tensor. Got {type(x)}.")
            if tuple(x.shape) != tuple(y.shape) or x.dtype != y.dtype:
                raise ValueError(
                    "Registering a parametrization may not change the shape or dtype of the "
                    f"tensor, unless the `unsafe` flag is enabled.\nunparametrized dtype: "
                    f"{y.dtype}\nparametrized dtype: {x.dtype}\nunparametrized shape: "
                    f"{tuple(y.shape)}\nparametrized shape: {tuple(x.shape)}"
                )
        plist.append(parametrization)
        plist.unsafe |= unsafe
    elif tensor_name in module._buffers or tensor_name in module._parameters:
        original = getattr(module, tensor_name)
        plist = ParametrizationList([parametrization], original, unsafe=unsafe)
        delattr(module, tensor_name)
        if not is_parametrized(module):
            _inject_new_class(module)
            module.parametrizations = ModuleDict()
        _inject_property(module, tensor_name)
        module.parametrizations[tensor_name] = plist
    else:
        raise ValueError(
            f"Module '{module}' does not have a parameter, a buffer, or a parametrized "
            f"element with name '{tensor_name}'"
        )
    return module


def remove_parametrizations(
    module: Module, tensor_name: str, leave_parametrized: bool = True
) -> Module:
    """Undo ``register_parametrization``: ``tensor_name`` becomes a plain tensor again.

    With ``leave_parametrized`` it keeps its current (parametrized) value; otherwise the
    stored original.
    """
    if not is_parametrized(module, tensor_name):
        raise ValueError(f"Module {module} does not have a parametrization on {tensor_name}")
    plist = module.parametrizations[tensor_name]
    if plist.is_tensor:
        original = plist.original
        if leave_parametrized:
            with no_grad():
                value = getattr(module, tensor_name)
            _set_data(original, value)
    else:
        if not leave_parametrized:
            raise ValueError(
                "Cannot leave unparametrized (`leave_parametrized=False`) a tensor that is "
                "parametrized in terms of a sequence of tensors."
            )
        with no_grad():
            value = getattr(module, tensor_name).detach().clone()
        if isinstance(plist.original0, Parameter):
            original = Parameter(value, plist.original0.requires_grad)
        else:
            original = value
    delattr(module.__class__, tensor_name)
    del module.parametrizations[tensor_name]
    _register_parameter_or_buffer(module, tensor_name, original)
    if not is_parametrized(module):
        delattr(module, "parametrizations")
        object.__setattr__(module, "__class__", module.__class__.__bases__[0])
    return module


def type_before_parametrizations(module: Module) -> type:
    """The class of ``module`` before any parametrization swapped it."""
    return module.__class__.__bases__[0] if is_parametrized(module) else type(module)


def transfer_parametrizations_and_params(
    from_module: Module, to_module: Module, tensor_name: str | None = None
) -> Module:
    """Give ``to_module`` the same parametrizations (and original tensors) as ``from_module``."""
    if not is_parametrized(from_module):
        return to_module
    names = [tensor_name] if tensor_name is not None else list(from_module.parametrizations)
    for name in names:
        source = from_module.parametrizations[name]
        if not hasattr(to_module, name):
            setattr(to_module, name, Parameter(getattr(from_module, name).detach().clone()))
        for parametrization in source:
            register_parametrization(to_module, name, parametrization, unsafe=source.unsafe)
        target = to_module.parametrizations[name]
        with no_grad():
            if source.is_tensor:
                _set_data(target.original, source.original)
            else:
                for i in range(source.ntensors):
                    _set_data(getattr(target, f"original{i}"), getattr(source, f"original{i}"))
    return to_module
