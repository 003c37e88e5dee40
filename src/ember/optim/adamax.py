"""Adamax: Adam with the infinity norm in place of the second moment, PyTorch's update rule."""

from __future__ import annotations

from .. import _creation
from .optimizer import (
    Closure,
    Optimizer,
    ParamsT,
    as_scalar,
    check_lr,
    params_with_grads,
    use_grad_for_differentiable,
)


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
        check_lr(lr)
        if not 0.0 <= eps:
            raise ValueError(f"Invalid epsilon value: {eps}")
        if not 0.0 <= betas[0] < 1.0:
            raise ValueError(f"Invalid beta parameter at index 0: {betas[0]}")
        if not 0.0 <= betas[1] < 1.0:
            raise ValueError(f"Invalid beta parameter at index 1: {betas[1]}")
        if not 0.0 <= weight_decay:
            raise ValueError(f"Invalid weight_decay value: {weight_decay}")
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

    @use_grad_for_differentiable
    def step(self, closure: Closure | None = None):
        loss = self._closure_loss(closure)
        for group in self.param_groups:
            beta1, beta2 = group["betas"]
            lr, eps, wd = as_scalar(group["lr"]), group["eps"], group["weight_decay"]
            for p, grad in params_with_grads(group):
                state = self.state[p]
                if not state:
                    state["step"] = _creation.tensor(0.0)
                    state["exp_avg"] = _creation.zeros_like(p)
                    state["exp_inf"] = _creation.zeros_like(p)
                state["step"] += 1
                step = state["step"].item()
                if wd != 0:
                    grad = grad.add(p, alpha=wd)
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
