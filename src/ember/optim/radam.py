"""RAdam: Adam with the variance of the adaptive learning rate rectified, PyTorch's rule."""

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


class RAdam(Optimizer):
    """RAdam (Liu et al., 2019); ``decoupled_weight_decay=True`` gives RAdamW.

    Example::

        >>> opt = ember.optim.RAdam(model.parameters(), lr=1e-3)
    """

    def __init__(
        self,
        params: ParamsT,
        lr: float = 1e-3,
        betas: tuple[float, float] = (0.9, 0.999),
        eps: float = 1e-8,
        weight_decay: float = 0,
        decoupled_weight_decay: bool = False,
        *,
        foreach: bool | None = None,
        maximize: bool = False,
        capturable: bool = False,
        differentiable: bool = False,
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
                maximize=maximize,
                foreach=foreach,
                capturable=capturable,
                decoupled_weight_decay=decoupled_weight_decay,
                differentiable=differentiable,
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
                    state["exp_avg_sq"] = _creation.zeros_like(p)
                state["step"] += 1
                step = state["step"].item()
                if wd != 0:
                    if group["decoupled_weight_decay"]:
                        p.mul_(1 - lr * wd)
                    else:
                        grad = grad.add(p, alpha=wd)
                exp_avg, exp_avg_sq = state["exp_avg"], state["exp_avg_sq"]
                exp_avg.lerp_(grad, 1 - beta1)
                exp_avg_sq.mul_(beta2).addcmul_(grad, grad, value=1 - beta2)
                bias_correction1 = 1 - beta1**step
                bias_correction2 = 1 - beta2**step
                corrected_exp_avg = exp_avg / bias_correction1
                # length of the approximated simple moving average, and its limit
                rho_inf = 2 / (1 - beta2) - 1
                rho_t = rho_inf - 2 * step * (beta2**step) / bias_correction2
                if rho_t > 5.0:
                    rect_sq = (rho_t - 4) * (rho_t - 2) * rho_inf
                    rect = (rect_sq / ((rho_inf - 4) * (rho_inf - 2) * rho_t)) ** 0.5
                    root = exp_avg_sq.sqrt()
                    root = root.add(eps) if group["differentiable"] else root.add_(eps)
                    adaptive_lr = bias_correction2**0.5 / root
                    p.add_(corrected_exp_avg * lr * adaptive_lr * rect, alpha=-1.0)
                else:
                    p.add_(corrected_exp_avg * lr, alpha=-1.0)
        return loss
