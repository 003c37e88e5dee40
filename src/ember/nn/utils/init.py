"""skip_init: build a module without spending time on its initialisation."""

from __future__ import annotations

import inspect

from ..modules.module import Module

__all__ = ["skip_init"]


def skip_init(module_cls: type, *args, **kwargs) -> Module:
    """Instantiate ``module_cls``; its parameters hold unspecified values (like ``empty``).

    ember has no meta device, so the constructor runs normally; programs must not rely on
    the values, exactly as with PyTorch.
    """
    if not isinstance(module_cls, type) or not issubclass(module_cls, Module):
        raise RuntimeError(f"Expected a Module; got {module_cls}")
    if "device" not in inspect.signature(module_cls).parameters:
        raise RuntimeError("Module must support a 'device' arg to skip initialization")
    return module_cls(*args, **kwargs)
