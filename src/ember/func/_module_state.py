"""Modules as functions of their state: functional_call, stack_module_state (ensembles for
vmap) and replace_all_batch_norm_modules_."""

from __future__ import annotations

from collections.abc import Sequence
from contextlib import contextmanager
from typing import Any

from .._tensor import Tensor
from ..nn.modules.module import Module
from ..nn.modules.normalization import _BatchNorm
from ..ops.shape import stack

_MISSING = object()  # an attribute functional_call adds for the call and removes after it


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
    if isinstance(parameter_and_buffer_dicts, dict):
        tensors = parameter_and_buffer_dicts
    elif isinstance(parameter_and_buffer_dicts, Sequence):
        dicts = parameter_and_buffer_dicts
        if not all(isinstance(d, dict) for d in dicts):
            raise ValueError(
                "Expected all elements of parameter_and_buffer_dicts to be dictionaries"
            )
        counts: dict = {}
        for d in dicts:
            for k in d:
                counts[k] = counts.get(k, 0) + 1
        repeated = [k for k, n in counts.items() if n > 1]
        if repeated:
            raise ValueError(
                f"{repeated} appeared in multiple dictionaries; behavior of functional call is "
                "ambiguous"
            )
        tensors = {k: v for d in dicts for k, v in d.items()}
    else:
        raise ValueError(
            "Expected parameter_and_buffer_dicts to be a dict, or a list/tuple of dicts, but "
            f"got {type(parameter_and_buffer_dicts)}"
        )
    if args is None:
        args = ()
    elif not isinstance(args, tuple):
        args = (args,)
    with _reparametrized(module, tensors, tie_weights, strict):
        return module(*args, **(kwargs or {}))


def _named_tensors(module: Module) -> dict:
    named = dict(module.named_parameters(remove_duplicate=False))
    named.update(module.named_buffers(remove_duplicate=False))
    return named


def _with_tied_names(module: Module, tensors: dict) -> dict:
    """``tensors`` plus, for each name given, the names tied to the same tensor in ``module``
    (a language model's shared embedding and output weight)."""
    names_of: dict = {}
    for name, t in _named_tensors(module).items():
        names_of.setdefault(id(t), set()).add(name)
    tied = {n: names for names in names_of.values() if len(names) > 1 for n in names}
    out = dict(tensors)
    for given in [n for n in tensors if n in tied]:
        names = tied[given]
        values = [tensors[n] for n in names if n in tensors]
        if len({id(v) for v in values}) > 1:
            raise ValueError(
                f"functional_call got multiple values for keys {sorted(names)}, which are "
                "tied. Consider using tie_weights=False"
            )
        for n in names:
            out[n] = tensors[given]
    return out


@contextmanager
def _reparametrized(module: Module, given: dict, tie_weights: bool, strict: bool):
    tensors = _with_tied_names(module, given) if tie_weights else given
    if strict:
        valid = set(_named_tensors(module))
        missing, unexpected = sorted(valid - set(tensors)), sorted(set(tensors) - valid)
        errors = []
        if unexpected:
            errors.append(f"Unexpected key(s): {', '.join(map(repr, unexpected))}.")
        if missing:
            errors.append(f"Missing key(s): {', '.join(map(repr, missing))}.")
        if errors:
            raise RuntimeError(
                f"Error(s) in reparametrizing for {module._get_name()}:\n\t" + "\n\t".join(errors)
            )
    originals: dict = {}
    try:
        for name, value in tensors.items():
            originals[name] = _swap(module, name, value)
        yield
    finally:
        now = {name: _swap(module, name, old) for name, old in originals.items()}
        # what the module assigned during the call (self.x = self.x + 1) goes back to the
        # caller's dict, as in PyTorch
        for name in given:
            if name in now and now[name] is not _MISSING:
                given[name] = now[name]


def _swap(module: Module, name: str, value):
    """Put ``value`` at the dotted ``name`` of ``module`` (a parameter, a buffer or a plain
    attribute; _MISSING removes it) and return what was there."""
    path, _, leaf = name.rpartition(".")
    owner = module.get_submodule(path) if path else module
    if value is not _MISSING and value is not None and not isinstance(value, Tensor):
        raise TypeError(f"{value} is not an instance of torch.Tensor")
    for store in (owner._parameters, owner._buffers):
        if leaf in store:
            old = store[leaf]
            if value is _MISSING:
                del store[leaf]
            else:
                store[leaf] = value
            return old
    old = getattr(owner, leaf, _MISSING)
    if old is not _MISSING and old is not None and not isinstance(old, Tensor):
        raise TypeError(f"attribute `{leaf}`: {old} is not an instance of torch.Tensor")
    if value is not _MISSING:
        setattr(owner, leaf, value)
    elif hasattr(owner, leaf):
        delattr(owner, leaf)
    return old


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
