"""Adam and AdamW (with AMSGrad), PyTorch's update rules."""

from __future__ import annotations

import math

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


class Adam(Optimizer):
    """Adam; ``decoupled_weight_decay=True`` (or AdamW) applies decay to the weights directly."""

    def __init__(
        self,
        params: ParamsT,
        lr=1e-3,
        betas=(0.9, 0.999),
        eps: float = 1e-8,
        weight_decay: float = 0,
        amsgrad: bool = False,
        *,
        foreach=None,
        maximize: bool = False,
        capturable: bool = False,
        differentiable: bool = False,
        fused=None,
        decoupled_weight_decay: bool = False,
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
                amsgrad=amsgrad,
                maximize=maximize,
                foreach=foreach,
                capturable=capturable,
                differentiable=differentiable,
                fused=fused,
                decoupled_weight_decay=decoupled_weight_decay,
            ),
        )
        check_fused(fused, foreach, differentiable)

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
                    if group["amsgrad"]:
                        state["max_exp_avg_sq"] = _creation.zeros_like(p)
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
                differentiable = group["differentiable"]
                second_moment = exp_avg_sq
                if group["amsgrad"]:
                    max_sq = state["max_exp_avg_sq"]
                    # under differentiable=True, tensors that a later step changes in place
                    # are cloned before an op saves them for backward
                    max_sq.copy_((max_sq.clone() if differentiable else max_sq).maximum(exp_avg_sq))
                    second_moment = max_sq
                if differentiable:
                    # PyTorch's differentiable path does the step-size arithmetic on the step
                    # tensor (its dtype), and folds the step size into the denominator
                    # (scalar / tensor is reciprocal-then-multiply there; kept for equal rounding)
                    step_t = state["step"]
                    step_size_neg = ((1 - beta1**step_t).reciprocal() * lr).neg()
                    scale = (1 - beta2**step_t).sqrt() * step_size_neg
                    denom = (second_moment.sqrt() / scale).add_(step_size_neg.reciprocal() * eps)
                    p.addcdiv_(exp_avg.clone(), denom)
                    continue
                step_size = lr / (1 - beta1**step)
                bias_correction2_sqrt = math.sqrt(1 - beta2**step)
                denom = (second_moment.sqrt() / bias_correction2_sqrt).add_(eps)
                p.addcdiv_(exp_avg, denom, value=-step_size)
        return loss


class AdamW(Adam):
    """Adam with decoupled weight decay (default 1e-2), PyTorch's AdamW."""

    def __init__(
        self,
        params: ParamsT,
        lr=1e-3,
        betas=(0.9, 0.999),
        eps: float = 1e-8,
        weight_decay: float = 1e-2,
        amsgrad: bool = False,
        *,
        maximize: bool = False,
        foreach=None,
        capturable: bool = False,
        differentiable: bool = False,
        fused=None,
    ):
        super().__init__(
            params,
            lr,
            betas,
            eps,
            weight_decay,
            amsgrad,
            foreach=foreach,
            maximize=maximize,
            capturable=capturable,
            differentiable=differentiable,
            fused=fused,
            decoupled_weight_decay=True,
        )
