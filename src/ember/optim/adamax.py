"""Adamax: Adam with the infinity norm in place of the second moment, PyTorch's update rule."""

from __future__ import annotations

from .. import _creation
from .._tensor import Tensor
from ._validation import as_scalar, check_adam_hyperparameters
from .optimizer import Closure, Optimizer, ParamsT, apply_weight_decay, use_grad_for_differentiable


class Adamax(Optimizer):
    """Adamax (Kingma & Ba, 2014, section 7).

    Example::

        >>> opt = ember.optim.Adamax(model.parameters(), lr=2e-3)
    """

    def __init__(
        self,
        params: ParamsT,
        lr: float = 2e-3,
        betas: tuple[float, float] = (0.9, 0.999),
        eps: float = 1e-8,
        weight_decay: float = 0,
        foreach: bool | None = None,
        *,
        maximize: bool = False,
        differentiable: bool = False,
        capturable: bool = False,
    ):
        check_adam_hyperparameters(lr, betas, eps, weight_decay)
        super().__init__(
            params,
            dict(
                lr=lr,
                betas=betas,
                eps=eps,
                weight_decay=weight_decay,
                foreach=foreach,
                maximize=maximize,
                differentiable=differentiable,
                capturable=capturable,
            ),
        )

    def _initial_state(self, group: dict, param: Tensor) -> dict:
        return {"exp_avg": _creation.zeros_like(param), "exp_inf": _creation.zeros_like(param)}

    @use_grad_for_differentiable
    def step(self, closure: Closure | None = None):
        loss = self._closure_loss(closure)
        for group in self.param_groups:
            beta1, beta2 = group["betas"]
            lr, eps, wd = as_scalar(group["lr"]), group["eps"], group["weight_decay"]
            for p, grad, state in self._params_with_state(group):
                step = state["step"].item()
                grad = apply_weight_decay(p, grad, wd)
                exp_avg, exp_inf = state["exp_avg"], state["exp_inf"]
                exp_avg.lerp_(grad, 1 - beta1)
                # u_t = max(beta2 · u_{t-1}, |g| + eps)
                if group["differentiable"]:
                    exp_inf.copy_(exp_inf.mul(beta2).maximum(grad.abs().add_(eps)))
                else:
                    exp_inf.copy_(exp_inf.mul_(beta2).maximum(grad.abs().add_(eps)))
                clr = lr / (1 - beta1**step)
                p.addcdiv_(exp_avg, exp_inf, value=-clr)
        return loss
