"""NAdam: Adam with Nesterov momentum and a momentum-decay schedule, PyTorch's update rule."""

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


class NAdam(Optimizer):
    """NAdam (Dozat, 2016); ``decoupled_weight_decay=True`` gives NAdamW.

    Example::

        >>> opt = ember.optim.NAdam(model.parameters(), lr=2e-3, momentum_decay=4e-3)
    """

    def __init__(
        self,
        params: ParamsT,
        lr: float = 2e-3,
        betas: tuple[float, float] = (0.9, 0.999),
        eps: float = 1e-8,
        weight_decay: float = 0,
        momentum_decay: float = 4e-3,
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
        if not 0.0 <= momentum_decay:
            raise ValueError(f"Invalid momentum_decay value: {momentum_decay}")
        super().__init__(
            params,
            dict(
                lr=lr,
                betas=betas,
                eps=eps,
                weight_decay=weight_decay,
                momentum_decay=momentum_decay,
                decoupled_weight_decay=decoupled_weight_decay,
                maximize=maximize,
                foreach=foreach,
                capturable=capturable,
                differentiable=differentiable,
            ),
        )

    @use_grad_for_differentiable
    def step(self, closure: Closure | None = None):
        loss = self._closure_loss(closure)
        for group in self.param_groups:
            beta1, beta2 = group["betas"]
            lr, eps, wd = as_scalar(group["lr"]), group["eps"], group["weight_decay"]
            psi = group["momentum_decay"]
            for p, grad in params_with_grads(group):
                state = self.state[p]
                if not state:
                    state["step"] = _creation.tensor(0.0)
                    # a scalar tensor of the default dtype, as PyTorch, so the running
                    # product rounds the same way
                    state["mu_product"] = _creation.tensor(1.0)
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
                # mu_t = beta1 · (1 - 0.5 · 0.96^(t · psi))
                mu = beta1 * (1.0 - 0.5 * 0.96 ** (step * psi))
                mu_next = beta1 * (1.0 - 0.5 * 0.96 ** ((step + 1) * psi))
                state["mu_product"].mul_(mu)
                denom = exp_avg_sq.div(1 - beta2**step).sqrt()
                if group["differentiable"]:
                    # PyTorch's differentiable path: the factors stay scalar tensors, and
                    # nothing saved for backward is changed in place
                    mu_product = state["mu_product"]
                    denom = denom.add(eps)
                    # (scalar / tensor is reciprocal-then-multiply there; kept for equal rounding)
                    grad_factor = (1.0 - mu_product).reciprocal() * (-lr * (1.0 - mu))
                    avg_factor = (1.0 - mu_product * mu_next).reciprocal() * (-lr * mu_next)
                    p.addcdiv_(grad * grad_factor, denom)
                    p.addcdiv_(exp_avg * avg_factor, denom)
                    continue
                mu_product = state["mu_product"].item()
                denom.add_(eps)
                p.addcdiv_(grad, denom, value=-lr * (1.0 - mu) / (1.0 - mu_product))
                p.addcdiv_(exp_avg, denom, value=-lr * mu_next / (1.0 - mu_product * mu_next))
        return loss
