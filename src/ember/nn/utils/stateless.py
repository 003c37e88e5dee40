"""The pre-2.0 home of ``functional_call`` (now ``ember.func.functional_call``)."""

from __future__ import annotations

import warnings

from ..modules.module import Module

__all__ = ["functional_call"]


def functional_call(
    module: Module,
    parameters_and_buffers: dict,
    args=None,
    kwargs=None,
    *,
    tie_weights: bool = True,
    strict: bool = False,
):
    """Deprecated alias of :func:`ember.func.functional_call`."""
    from ...func import functional_call as _functional_call

    warnings.warn(
        "`torch.nn.utils.stateless.functional_call` is deprecated as of PyTorch 2.0 and will "
        "be removed in a future version of PyTorch. Please use `torch.func.functional_call` "
        "instead which is a drop-in replacement.",
        FutureWarning,
        stacklevel=2,
    )
    return _functional_call(
        module,
        parameters_and_buffers,
        () if args is None else args,
        kwargs,
        tie_weights=tie_weights,
        strict=strict,
    )
