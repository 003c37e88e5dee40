"""Adagrad: per-element steps scaled by the root of the summed squared gradients, PyTorch's
update rule."""

from __future__ import annotations

from .. import _creation
from .optimizer import (
    Closure,
    Optimizer,
    ParamsT,
    as_scalar,
    check_fused,
    check_lr,
    params_with_grads,
    use_grad_for_differentiable,
)


class Adagrad(Optimizer):
    """Adagrad (Duchi et al., 2011), with ``lr_decay`` and an initial accumulator value;
    its state is created for every parameter up front, as PyTorch's.

    Example::

        >>> opt = ember.optim.Adagrad(model.parameters(), lr=1e-2, lr_decay=1e-4)
    """

    def __init__(
        self,
        params: ParamsT,
        lr=1e-2,
        lr_decay: float = 0,
        weight_decay: float = 0,
        initial_accumulator_value: float = 0,
        eps: float = 1e-10,
        foreach=None,
        *,
        maximize: bool = False,
        differentiable: bool = False,
        fused=None,
    ):
        check_lr(lr)
        if not 0.0 <= lr_decay:
            raise ValueError(f"Invalid lr_decay value: {lr_decay}")
        if not 0.0 <= weight_decay:
            raise ValueError(f"Invalid weight_decay value: {weight_decay}")
        if not 0.0 <= initial_accumulator_value:
            raise ValueError(
                f"Invalid initial_accumulator_value value: {initial_accumulator_value}"
            )
        if not 0.0 <= eps:
            raise ValueError(f"Invalid epsilon value: {eps}")
        super().__init__(
            params,
            dict(
                lr=lr,
                lr_decay=lr_decay,
                eps=eps,
                weight_decay=weight_decay,
                initial_accumulator_value=initial_accumulator_value,
                foreach=foreach,
                maximize=maximize,
                differentiable=differentiable,
                fused=fused,
            ),
        )
        check_fused(fused, foreach, differentiable)
        for group in self.param_groups:
            for p in group["params"]:
                state = self.state[p]
                state["step"] = _creation.tensor(0.0)
                state["sum"] = _creation.full_like(p, group["initial_accumulator_value"])

    @use_grad_for_differentiable
    def step(self, closure: Closure | None = None):
        loss = self._closure_loss(closure)
        for group in self.param_groups:
            for p, grad in params_with_grads(group):
                state = self.state[p]
                state["step"] += 1
                step = state["step"].item()
                if group["weight_decay"] != 0:
                    grad = grad.add(p, alpha=group["weight_decay"])
                clr = as_scalar(group["lr"]) / (1 + (step - 1) * group["lr_decay"])
                state["sum"].addcmul_(grad, grad, value=1)
                std = state["sum"].sqrt()
                std = std + group["eps"] if group["differentiable"] else std.add_(group["eps"])
                p.addcdiv_(grad, std, value=-clr)
        return loss
