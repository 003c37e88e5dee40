"""Optimizer: parameter groups, per-parameter state and their (de)serialisation."""

from __future__ import annotations

from collections import defaultdict
from copy import deepcopy

from .._tensor import Tensor
from ..autograd import _cuts


class _Required:
    def __repr__(self) -> str:
        return "<required parameter>"


required = _Required()


def as_scalar(value):
    """A one-element Tensor hyperparameter (PyTorch accepts ``lr=torch.tensor(0.01)``) as a
    Python number; anything else unchanged."""
    return value.item() if isinstance(value, Tensor) else value


def check_lr(lr) -> None:
    """PyTorch's learning-rate checks, with its messages."""
    if isinstance(lr, Tensor) and lr.numel() != 1:
        raise ValueError("Tensor lr must be 1-element")
    if not 0.0 <= as_scalar(lr):
        raise ValueError(f"Invalid learning rate: {lr}")


def check_fused(fused, foreach, differentiable) -> None:
    """``fused`` is accepted as PyTorch does (ember runs the same update either way), with
    PyTorch's checks on the flags it cannot be combined with."""
    if fused:
        if differentiable:
            raise RuntimeError("`fused` does not support `differentiable`")
        if foreach:
            raise RuntimeError("`fused` and `foreach` cannot be `True` together.")


def params_with_grads(group: dict):
    """(parameter, gradient) for each parameter of ``group`` that has one; the gradient is
    negated when the group maximizes."""
    negate = group.get("maximize", False)
    for p in group["params"]:
        if p._grad is not None:
            yield p, (-p._grad if negate else p._grad)


class Optimizer:
    """Base class: subclasses implement ``step`` over ``self.param_groups``."""

    def __init__(self, params, defaults: dict):
        self.defaults = defaults
        self.state: dict = defaultdict(dict)
        self.param_groups: list = []
        if isinstance(params, Tensor):
            raise TypeError(
                "params argument given to the optimizer should be an iterable of Tensors or "
                f"dicts, but got {type(params).__name__}"
            )
        groups = list(params)
        if len(groups) == 0:
            raise ValueError("optimizer got an empty parameter list")
        if not isinstance(groups[0], dict):
            groups = [{"params": groups}]
        for group in groups:
            self.add_param_group(group)

    def add_param_group(self, param_group: dict) -> None:
        params = param_group["params"]
        if isinstance(params, Tensor):
            param_group["params"] = [params]
        elif isinstance(params, set):
            raise TypeError("optimizer parameters need to be organized in ordered collections")
        else:
            param_group["params"] = list(params)
        for p in param_group["params"]:
            if not isinstance(p, Tensor):
                raise TypeError(
                    f"optimizer can only optimize Tensors, but one of the params is "
                    f"{type(p).__name__}"
                )
            if not p.is_leaf:
                raise ValueError("can't optimize a non-leaf Tensor")
        for key, default in self.defaults.items():
            if default is required and key not in param_group:
                raise ValueError(
                    f"parameter group didn't specify a value of required optimization parameter "
                    f"{key}"
                )
            param_group.setdefault(key, default)
        existing = {id(p) for g in self.param_groups for p in g["params"]}
        if existing & {id(p) for p in param_group["params"]}:
            raise ValueError("some parameters appear in more than one parameter group")
        self.param_groups.append(param_group)

    def zero_grad(self, set_to_none: bool = True) -> None:
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

    def state_dict(self) -> dict:
        """``state`` keyed by parameter index and ``param_groups`` with indices, as PyTorch."""
        index = {}
        groups = []
        for group in self.param_groups:
            packed = {k: v for k, v in group.items() if k != "params"}
            ids = []
            for p in group["params"]:
                index.setdefault(id(p), len(index))
                ids.append(index[id(p)])
            packed["params"] = ids
            groups.append(packed)
        state = {index[id(p)]: s for p, s in self.state.items() if id(p) in index}
        return {"state": state, "param_groups": groups}

    def load_state_dict(self, state_dict: dict) -> None:
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
        for mine, theirs in zip(self.param_groups, groups):
            for p, i in zip(mine["params"], theirs["params"]):
                by_index[i] = p
        self.state = defaultdict(dict)
        for i, s in state_dict["state"].items():
            p = by_index[int(i)]
            self.state[p] = {
                k: (
                    v.to(dtype=p.dtype if v.is_floating_point() else None, device=p.device)
                    if isinstance(v, Tensor) and k != "step"
                    else v
                )
                for k, v in s.items()
            }
        for mine, theirs in zip(self.param_groups, groups):
            params = mine["params"]
            mine.clear()
            mine.update({k: v for k, v in theirs.items() if k != "params"})
            mine["params"] = params

    def step(self, closure=None):
        raise NotImplementedError

    def _closure_loss(self, closure):
        if closure is None:
            return None
        from ..autograd.grad_mode import enable_grad

        with enable_grad():
            return closure()

    def __repr__(self) -> str:
        lines = [f"{type(self).__name__} ("]
        for i, group in enumerate(self.param_groups):
            lines.append(f"Parameter Group {i}")
            for key in sorted(k for k in group if k != "params"):
                lines.append(f"    {key}: {group[key]}")
        lines.append(")")
        return "\n".join(lines)


__all__ = ["Optimizer", "as_scalar", "check_fused", "check_lr", "required"]
