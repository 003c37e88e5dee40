"""Optimizer: parameter groups, per-parameter state, step hooks and (de)serialisation."""

from __future__ import annotations

import functools
import warnings
from collections import defaultdict
from collections.abc import Callable, Iterable, Iterator
from copy import deepcopy
from itertools import chain
from typing import Any, Union

import numpy as np

from .. import _creation
from .._tensor import Tensor
from ..autograd import _cuts
from ..autograd.grad_mode import no_grad
from ..autograd.node import RemovableHandle, _HookDict
from ..ops.complex import view_as_complex, view_as_real
from ._validation import as_scalar, check_fused, check_lr


class _Required:
    def __repr__(self) -> str:
        return "<required parameter>"


required = _Required()

# what an optimizer accepts as ``params``: tensors, (name, tensor) pairs or group dicts
ParamsT = Union[Iterable[Tensor], Iterable[tuple[str, Tensor]], Iterable[dict[str, Any]]]
# ``step(closure)``: re-evaluates the model and returns the loss
Closure = Callable[[], Any]

_global_step_pre_hooks = _HookDict()
_global_step_post_hooks = _HookDict()


def register_optimizer_step_pre_hook(hook) -> RemovableHandle:
    """Call ``hook(optimizer, args, kwargs)`` before every optimizer's ``step``."""
    handle = RemovableHandle(_global_step_pre_hooks)
    _global_step_pre_hooks[handle.id] = hook
    return handle


def register_optimizer_step_post_hook(hook) -> RemovableHandle:
    """Call ``hook(optimizer, args, kwargs)`` after every optimizer's ``step``."""
    handle = RemovableHandle(_global_step_post_hooks)
    _global_step_post_hooks[handle.id] = hook
    return handle


def params_with_grads(group: dict):
    """(parameter, gradient) for each parameter of ``group`` that has one; the gradient is
    negated when the group maximizes."""
    negate = group.get("maximize", False)
    for p in group["params"]:
        if p._grad is not None:
            yield p, (-p._grad if negate else p._grad)


def _raw_grads(group: dict):
    for p in group["params"]:
        if p._grad is not None:
            yield p, p._grad


def _as_real_pairs(p: Tensor, grad: Tensor, state: dict):
    """A complex parameter updated as torch does: its real and imaginary parts as independent
    reals (``view_as_real`` of it, its gradient and its complex state, which stays complex in
    the state dict); a state entry the update replaces is written back as complex."""
    views = {
        key: view_as_real(value) if isinstance(value, Tensor) and value.is_complex() else value
        for key, value in state.items()
    }
    given = dict(views)
    yield view_as_real(p), view_as_real(grad), views
    for key, value in views.items():
        if value is not given.get(key):
            complex_before = isinstance(state.get(key), Tensor) and state[key].is_complex()
            state[key] = view_as_complex(value) if complex_before else value


def advance_step(state: dict) -> None:
    """``state["step"] += 1``, written into the step tensor's array when it is a plain
    writable one (a tensor op costs more than the rest of a small parameter's update)."""
    step = state["step"]
    data = getattr(step, "_data", None)
    if type(data) is np.ndarray and data.flags.writeable and not step._rg:
        data += 1
        step._vc[0] += 1
    else:
        state["step"] = step + 1 if not isinstance(step, Tensor) else step.add_(1)


def apply_weight_decay(
    param: Tensor, grad: Tensor, weight_decay: float, *, decoupled: bool = False, lr: float = 0.0
) -> Tensor:
    """Weight decay as PyTorch's optimizers apply it; returns the gradient to step with.

    L2 (default) adds ``weight_decay · param`` to the gradient; ``decoupled`` (AdamW-style)
    shrinks the weights in place, ``param ← param · (1 - lr · weight_decay)``, and leaves the
    gradient as it is.
    """
    if weight_decay == 0:
        return grad
    if decoupled:
        param.mul_(1 - lr * weight_decay)
        return grad
    return grad.add(param, alpha=weight_decay)


def use_grad_for_differentiable(step):
    """Run ``step`` with grad mode on when the optimizer was built with
    ``differentiable=True`` (so the update itself is recorded and can be differentiated,
    e.g. for meta-learning), off otherwise."""

    @functools.wraps(step)
    def wrapper(self, *args, **kwargs):
        from ..autograd.grad_mode import set_grad_enabled

        with set_grad_enabled(bool(self.defaults.get("differentiable", False))):
            return step(self, *args, **kwargs)

    return wrapper


def _with_step_hooks(step):
    """Wrap a class's ``step`` so the global and per-optimizer step hooks run around it."""

    @functools.wraps(step)
    def wrapper(self, *args, **kwargs):
        pre = getattr(self, "_optimizer_step_pre_hooks", {})
        for hook in chain(_global_step_pre_hooks.values(), pre.values()):
            result = hook(self, args, kwargs)
            if result is not None:
                if not (isinstance(result, tuple) and len(result) == 2):
                    raise RuntimeError(
                        f"{step} must return None or a tuple of (new_args, new_kwargs), but got "
                        f"{result}."
                    )
                args, kwargs = result
        out = step(self, *args, **kwargs)
        post = getattr(self, "_optimizer_step_post_hooks", {})
        for hook in chain(post.values(), _global_step_post_hooks.values()):
            hook(self, args, kwargs)
        return out

    wrapper.hooked = True
    return wrapper


def _cast_state(param: Tensor, value, key=None, capturable_or_fused: bool = False):
    """A loaded state value moved to ``param``'s device and, for floating parameters, dtype;
    ``step`` keeps its dtype (as PyTorch), containers are cast member by member."""
    if isinstance(value, Tensor):
        if key == "step":
            if capturable_or_fused:
                from .. import _dtype

                return value.to(dtype=_dtype.float32, device=param.device)
            return value
        if param.is_floating_point():
            return value.to(dtype=param.dtype, device=param.device)
        return value.to(device=param.device)
    if isinstance(value, dict):
        return {k: _cast_state(param, v, k, capturable_or_fused) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(_cast_state(param, v, None, capturable_or_fused) for v in value)
    return value


class Optimizer:
    """Base class: subclasses implement ``step`` over ``self.param_groups``.

    ``params`` is an iterable of Tensors, of (name, Tensor) pairs (the names are kept in
    ``param_groups[i]["param_names"]``) or of dicts, each one parameter group with its own
    options overriding ``defaults``.
    """

    def __init__(self, params: ParamsT, defaults: dict):
        self.defaults = defaults
        self._optimizer_step_pre_hooks = _HookDict()
        self._optimizer_step_post_hooks = _HookDict()
        self._optimizer_state_dict_pre_hooks = _HookDict()
        self._optimizer_state_dict_post_hooks = _HookDict()
        self._optimizer_load_state_dict_pre_hooks = _HookDict()
        self._optimizer_load_state_dict_post_hooks = _HookDict()
        if not getattr(type(self).step, "hooked", False):
            type(self).step = _with_step_hooks(type(self).step)
        if isinstance(params, Tensor):
            raise TypeError(
                "params argument given to the optimizer should be an iterable of Tensors or "
                f"dicts, but got {type(params).__name__}"
            )
        self.state: dict = defaultdict(dict)
        self.param_groups: list = []
        groups = list(params)
        if len(groups) == 0:
            raise ValueError("optimizer got an empty parameter list")
        if not isinstance(groups[0], dict):
            groups = [{"params": groups}]
        for group in groups:
            self.add_param_group(group)

    def add_param_group(self, param_group: dict) -> None:
        """Add a group (e.g. layers unfrozen during fine-tuning) with its own options."""
        if not isinstance(param_group, dict):
            raise TypeError(f"param_group must be a dict, but got {type(param_group)}")
        params = param_group["params"]
        if isinstance(params, Tensor):
            params = [params]
        elif isinstance(params, set):
            raise TypeError(
                "optimizer parameters need to be organized in ordered collections, but the "
                "ordering of tensors in sets will change between runs. Please use a list instead."
            )
        else:
            params = list(params)
        names = [p[0] for p in params if isinstance(p, tuple)]
        params = [p[1] if isinstance(p, tuple) else p for p in params]
        param_group["params"] = params
        if names:
            if len(names) != len(params):
                raise ValueError(
                    "all optimizer params should be with/without names. Some param names are "
                    "missing"
                )
            param_group["param_names"] = names
        for p in params:
            if not isinstance(p, Tensor):
                raise TypeError(
                    f"optimizer can only optimize Tensors, but one of the params is "
                    f"{type(p).__module__}.{type(p).__name__}"
                )
            if not self.defaults.get("differentiable", None) and not (p.is_leaf or p.retains_grad):
                raise ValueError("can't optimize a non-leaf Tensor")
        for key, default in self.defaults.items():
            if default is required and key not in param_group:
                raise ValueError(
                    f"parameter group didn't specify a value of required optimization parameter "
                    f"{key}"
                )
            param_group.setdefault(key, default)
        if len({id(p) for p in params}) != len(params):
            warnings.warn(
                "optimizer contains a parameter group with duplicate parameters; in future, "
                "this will cause an error",
                stacklevel=3,
            )
        existing = set()
        for group in self.param_groups:
            existing.update(id(p) for p in group["params"])
            if ("param_names" in param_group) != ("param_names" in group):
                which = "with names" if "param_names" in param_group else "without names"
                raise ValueError(
                    "all optimizer param groups should be with/without names. "
                    f"cannot add param group {which} to the optimizer"
                )
        if existing & {id(p) for p in params}:
            raise ValueError("some parameters appear in more than one parameter group")
        self.param_groups.append(param_group)

    def zero_grad(self, set_to_none: bool = True) -> None:
        """Reset every parameter's gradient: to None (default) or to zeros in place."""
        _cuts.note_zeroed((p for g in self.param_groups for p in g["params"]), set_to_none)
        for group in self.param_groups:
            for p in group["params"]:
                if p._grad is None:
                    continue
                if set_to_none:
                    p._grad = None
                else:
                    if p._grad.grad_fn is not None:
                        p._grad.detach_()
                    p._grad.zero_()

    # -- hooks ---------------------------------------------------------------------------

    @staticmethod
    def _add_hook(hooks: _HookDict, hook, prepend: bool = False) -> RemovableHandle:
        handle = RemovableHandle(hooks)
        hooks[handle.id] = hook
        if prepend:
            for key in [k for k in hooks if k != handle.id]:
                hooks[key] = hooks.pop(key)
        return handle

    def register_step_pre_hook(self, hook) -> RemovableHandle:
        """``hook(optimizer, args, kwargs)`` before ``step``; it may return new (args, kwargs)."""
        return self._add_hook(self._optimizer_step_pre_hooks, hook)

    def register_step_post_hook(self, hook) -> RemovableHandle:
        """``hook(optimizer, args, kwargs)`` after ``step``."""
        return self._add_hook(self._optimizer_step_post_hooks, hook)

    def register_state_dict_pre_hook(self, hook, prepend: bool = False) -> RemovableHandle:
        """``hook(optimizer)`` before ``state_dict`` builds its result."""
        return self._add_hook(self._optimizer_state_dict_pre_hooks, hook, prepend)

    def register_state_dict_post_hook(self, hook, prepend: bool = False) -> RemovableHandle:
        """``hook(optimizer, state_dict)`` after; a returned dict replaces the result."""
        return self._add_hook(self._optimizer_state_dict_post_hooks, hook, prepend)

    def register_load_state_dict_pre_hook(self, hook, prepend: bool = False) -> RemovableHandle:
        """``hook(optimizer, state_dict)`` before loading; a returned dict is loaded instead."""
        return self._add_hook(self._optimizer_load_state_dict_pre_hooks, hook, prepend)

    def register_load_state_dict_post_hook(self, hook, prepend: bool = False) -> RemovableHandle:
        """``hook(optimizer)`` after loading."""
        return self._add_hook(self._optimizer_load_state_dict_post_hooks, hook, prepend)

    # -- serialisation -------------------------------------------------------------------

    def state_dict(self) -> dict:
        """``state`` keyed by parameter index and ``param_groups`` with indices, as PyTorch."""
        for hook in self._optimizer_state_dict_pre_hooks.values():
            hook(self)
        index: dict = {}
        groups = []
        for group in self.param_groups:
            packed = {k: v for k, v in group.items() if k != "params"}
            for p in group["params"]:
                index.setdefault(id(p), len(index))
            packed["params"] = [index[id(p)] for p in group["params"]]
            groups.append(packed)
        state = {index[id(p)]: s for p, s in self.state.items() if id(p) in index}
        result = {"state": state, "param_groups": groups}
        for hook in self._optimizer_state_dict_post_hooks.values():
            replaced = hook(self, result)
            if replaced is not None:
                result = replaced
        return result

    def load_state_dict(self, state_dict: dict) -> None:
        """Load a ``state_dict()`` (ember's or a PyTorch one with ember tensors): state
        tensors move to each parameter's device and floating dtype, except ``step``."""
        state_dict = state_dict.copy()
        for hook in self._optimizer_load_state_dict_pre_hooks.values():
            replaced = hook(self, state_dict)
            if replaced is not None:
                state_dict = replaced
        state_dict = deepcopy(state_dict)
        groups = state_dict["param_groups"]
        if len(groups) != len(self.param_groups):
            raise ValueError("loaded state dict has a different number of parameter groups")
        for mine, theirs in zip(self.param_groups, groups):
            if len(mine["params"]) != len(theirs["params"]):
                raise ValueError(
                    "loaded state dict contains a parameter group that doesn't match the size "
                    "of optimizer's group"
                )
        by_index = {}
        special_step = {}
        for mine, theirs in zip(self.param_groups, groups):
            for p, i in zip(mine["params"], theirs["params"]):
                by_index[i] = p
                special_step[i] = bool(theirs.get("capturable") or theirs.get("fused"))
        self.state = defaultdict(dict)
        for i, s in state_dict["state"].items():
            key = int(i) if not isinstance(i, int) else i
            if key in by_index:
                p = by_index[key]
                self.state[p] = _cast_state(p, s, None, special_step[key])
            else:
                self.state[i] = s
        for mine, theirs in zip(self.param_groups, groups):
            params = mine["params"]
            names = mine.get("param_names")
            mine.clear()
            mine.update({k: v for k, v in theirs.items() if k != "params"})
            mine["params"] = params
            if names is not None and "param_names" not in theirs:
                mine["param_names"] = names
        for hook in self._optimizer_load_state_dict_post_hooks.values():
            hook(self)

    # -- the update ----------------------------------------------------------------------

    def step(self, closure: Closure | None = None):
        """One optimisation step; ``closure`` re-evaluates the model and returns the loss."""
        raise NotImplementedError

    def _initial_state(self, group: dict, param: Tensor) -> dict:
        """The state a parameter starts with besides its ``step`` count (an optimizer that
        steps through ``_params_with_state`` says which buffers it keeps)."""
        raise NotImplementedError

    def _new_state(self, group: dict, param: Tensor) -> dict:
        # ``step`` a scalar float tensor first, as PyTorch's state dicts lay it out
        return {"step": _creation.tensor(0.0), **self._initial_state(group, param)}

    def _params_with_state(
        self, group: dict, negate: bool = True
    ) -> Iterator[tuple[Tensor, Tensor, dict]]:
        """(parameter, gradient, state) for each parameter of ``group`` with a gradient (negated
        when the group maximizes, unless ``negate`` is False); its state is created on the first
        step and its ``step`` count advanced by one before the parameter is handed out."""
        grads = params_with_grads(group) if negate else _raw_grads(group)
        for p, grad in grads:
            state = self.state[p]
            if not state:
                state.update(self._new_state(group, p))
            advance_step(state)
            if p.is_complex():
                yield from _as_real_pairs(p, grad, state)
            else:
                yield p, grad, state

    def _closure_loss(self, closure):
        if closure is None:
            return None
        from ..autograd.grad_mode import enable_grad

        with enable_grad():
            return closure()

    def __getstate__(self) -> dict:
        return {
            "defaults": self.defaults,
            "state": self.state,
            "param_groups": self.param_groups,
        }

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(state)
        for name in (
            "_optimizer_step_pre_hooks",
            "_optimizer_step_post_hooks",
            "_optimizer_state_dict_pre_hooks",
            "_optimizer_state_dict_post_hooks",
            "_optimizer_load_state_dict_pre_hooks",
            "_optimizer_load_state_dict_post_hooks",
        ):
            self.__dict__.setdefault(name, _HookDict())

    def __repr__(self) -> str:
        lines = [f"{type(self).__name__} ("]
        for i, group in enumerate(self.param_groups):
            lines.append(f"Parameter Group {i}")
            for key in sorted(k for k in group if k != "params"):
                lines.append(f"    {key}: {group[key]}")
        lines.append(")")
        return "\n".join(lines)


__all__ = [
    "Closure",
    "Optimizer",
    "ParamsT",
    "as_scalar",
    "check_fused",
    "check_lr",
    "no_grad",
    "use_grad_for_differentiable",
    "register_optimizer_step_post_hook",
    "register_optimizer_step_pre_hook",
    "required",
]
