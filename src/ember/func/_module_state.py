"""Modules as functions of their state: functional_call (implemented in nn.utils.stateless, as
PyTorch's), stack_module_state (ensembles for vmap) and replace_all_batch_norm_modules_."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from .._tensor import Tensor
from ..nn.modules.module import Module
from ..nn.modules.normalization import _BatchNorm
from ..nn.utils.stateless import _functional_call
from ..ops.shape import stack


def functional_call(
    module: Module,
    parameter_and_buffer_dicts: dict[str, Tensor] | Sequence[dict[str, Tensor]],
    args: Any = None,
    kwargs: dict[str, Any] | None = None,
    *,
    tie_weights: bool = True,
    strict: bool = False,
) -> Any:
    """Call ``module`` with its parameters and buffers (by their ``named_parameters`` names)
    replaced by the given tensors, one dict or a tuple of dicts with distinct keys; the module
    is left as it was. ``args`` that is not a tuple is one argument.

    Example::
        >>> model = ember.nn.Linear(2, 1)
        >>> params = {"weight": ember.ones(1, 2), "bias": ember.zeros(1)}
        >>> ember.func.functional_call(model, params, (ember.tensor([[1.0, 2.0]]),))
        tensor([[3.]])
    """
    return _functional_call(
        module, parameter_and_buffer_dicts, args, kwargs, tie_weights=tie_weights, strict=strict
    )


def stack_module_state(models: Sequence[Module]) -> tuple[dict[str, Tensor], dict[str, Tensor]]:
    """``(params, buffers)``: each model's parameters and buffers stacked along a new first
    dimension, by name, for an ensemble run with ``vmap`` over ``functional_call``. Stacked
    parameters are new leaves that require grad (an optimizer can train them).

    Example::
        >>> models = [ember.nn.Linear(3, 2) for _ in range(4)]
        >>> params, buffers = ember.func.stack_module_state(models)
        >>> params["weight"].shape
        ember.Size([4, 2, 3])
    """
    if len(models) == 0:
        raise RuntimeError("stack_module_state: Expected at least one model, got 0.")
    if not (all(m.training for m in models) or not any(m.training for m in models)):
        raise RuntimeError(
            "stack_module_state: Expected all models to have the same training/eval mode."
        )
    if not all(type(m) is type(models[0]) for m in models):
        raise RuntimeError("stack_module_state: Expected all models to be of the same class.")
    all_params = [dict(m.named_parameters()) for m in models]
    all_buffers = [dict(m.named_buffers()) for m in models]
    params = {k: _stacked_leaf([p[k] for p in all_params], k) for k in all_params[0]}
    buffers = {k: _stacked_leaf([b[k] for b in all_buffers], k) for k in all_buffers[0]}
    return params, buffers


def _stacked_leaf(tensors: list, name: str) -> Tensor:
    requires_grad = [t.requires_grad for t in tensors]
    if any(requires_grad) and not all(requires_grad):
        raise RuntimeError(f"Expected {name} from each model to have the same .requires_grad")
    stacked = stack(tensors)
    if all(requires_grad):
        stacked = stacked.detach().requires_grad_()
    return stacked


def replace_all_batch_norm_modules_(root: Module) -> Module:
    """Make every batch norm in ``root`` use batch statistics only: running_mean and
    running_var become None and track_running_stats False (vmap's slices would otherwise
    update shared running statistics in place). Returns ``root``.

    Example::
        >>> net = ember.func.replace_all_batch_norm_modules_(ember.nn.BatchNorm1d(3))
        >>> net.running_mean is None and not net.track_running_stats
        True
    """
    for module in root.modules():
        if isinstance(module, _BatchNorm) and module.track_running_stats:
            module.running_mean = None
            module.running_var = None
            module.num_batches_tracked = None
            module.track_running_stats = False
    return root
