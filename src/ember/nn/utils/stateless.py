"""The pre-2.0 home of ``functional_call`` (now ``ember.func.functional_call``), and where
both are implemented, as in PyTorch: a module called with its parameters and buffers swapped
for given tensors (``ember.func`` builds on nn, not nn on func)."""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from contextlib import contextmanager
from typing import Any

from ..._tensor import Tensor
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


_MISSING = object()  # an attribute functional_call adds for the call and removes after it


def _functional_call(
    module: Module,
    parameter_and_buffer_dicts: dict[str, Tensor] | Sequence[dict[str, Tensor]],
    args: Any = None,
    kwargs: dict[str, Any] | None = None,
    *,
    tie_weights: bool = True,
    strict: bool = False,
) -> Any:
    """``ember.func.functional_call``: this module reparametrizes, func exports it."""
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
