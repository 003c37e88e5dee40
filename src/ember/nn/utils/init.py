"""skip_init: build a module without spending time on its initialisation."""

from __future__ import annotations

import inspect

from ..modules.module import Module

__all__ = ["skip_init"]


def skip_init(module_cls: type, *args, **kwargs) -> Module:
    """Instantiate ``module_cls`` without initialising it: built on the meta device (no
    memory, no draws from the generator), then given uninitialised memory on ``device``
    (the CPU by default) with ``to_empty``, as torch does.

    >>> layer = ember.nn.utils.skip_init(ember.nn.Linear, 5, 1)
    >>> layer.weight.shape, layer.weight.device
    (ember.Size([1, 5]), device(type='cpu'))
    """
    if not isinstance(module_cls, type) or not issubclass(module_cls, Module):
        raise RuntimeError(f"Expected a Module; got {module_cls}")
    if "device" not in inspect.signature(module_cls).parameters:
        raise RuntimeError("Module must support a 'device' arg to skip initialization")
    final_device = kwargs.pop("device", "cpu")
    kwargs["device"] = "meta"
    return module_cls(*args, **kwargs).to_empty(device=final_device)
