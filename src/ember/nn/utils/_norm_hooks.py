"""What the hook-based ``weight_norm`` and ``spectral_norm`` share: their forward pre-hook on a
module, found by its class and the name of the parameter it reparametrises."""

from __future__ import annotations

from ..modules.module import Module


def check_not_registered(module: Module, hook_type: type, name: str, what: str) -> None:
    """Raise PyTorch's error when ``module`` already has a ``hook_type`` hook on ``name``."""
    for hook in module._forward_pre_hooks.values():
        if isinstance(hook, hook_type) and hook.name == name:
            raise RuntimeError(f"Cannot register two {what} hooks on the same parameter {name}")


def remove_hook(module: Module, hook_type: type, name: str, what: str) -> Module:
    """Undo the ``hook_type`` hook on ``name`` (its ``remove``) and drop it from ``module``."""
    for key, hook in list(module._forward_pre_hooks.items()):
        if isinstance(hook, hook_type) and hook.name == name:
            hook.remove(module)
            del module._forward_pre_hooks[key]
            return module
    raise ValueError(f"{what} of '{name}' not found in {module}")
