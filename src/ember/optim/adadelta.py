"""Adadelta, PyTorch's update rule: step sizes from the ratio of running RMS of updates and
gradients."""

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


class Adadelta(Optimizer):
    """Adadelta (Zeiler, 2012).

    Example::

        >>> opt = ember.optim.Adadelta(model.parameters(), lr=1.0, rho=0.9)
    """

    def __init__(
        self,
        params: ParamsT,
        lr: float = 1.0,
        rho: float = 0.9,
        eps: float = 1e-6,
        weight_decay: float = 0,
        foreach: bool | None = None,
        *,
        capturable: bool = False,
        maximize: bool = False,
        differentiable: bool = False,
    ):
        check_lr(lr)
        if not 0.0 <= rho <= 1.0:
            raise ValueError(f"Invalid rho value: {rho}")
        if not 0.0 <= eps:
            raise ValueError(f"Invalid epsilon value: {eps}")
        if not 0.0 <= weight_decay:
            raise ValueError(f"Invalid weight_decay value: {weight_decay}")
        super().__init__(
            params,
            dict(
                lr=lr,
                rho=rho,
                eps=eps,
                weight_decay=weight_decay,
                maximize=maximize,
                capturable=capturable,
                foreach=foreach,
                differentiable=differentiable,
            ),
        )

    @use_grad_for_differentiable
    def step(self, closure: Closure | None = None):
        loss = self._closure_loss(closure)
        for group in self.param_groups:
            lr, rho, eps = as_scalar(group["lr"]), group["rho"], group["eps"]
            wd = group["weight_decay"]
            for p, grad in params_with_grads(group):
                state = self.state[p]
                if not state:
                    state["step"] = _creation.tensor(0.0)
                    state["square_avg"] = _creation.zeros_like(p)
                    state["acc_delta"] = _creation.zeros_like(p)
                state["step"] += 1
                if wd != 0:
                    grad = grad.add(p, alpha=wd)
                square_avg, acc_delta = state["square_avg"], state["acc_delta"]
                square_avg.mul_(rho).addcmul_(grad, grad, value=1 - rho)
                std = square_avg.add(eps).sqrt_()
                # delta = sqrt(E[dx²] + eps) / sqrt(E[g²] + eps) · g
                delta = acc_delta.add(eps).sqrt_()
                if group["differentiable"]:
                    delta = delta.clone()
                delta.div_(std).mul_(grad)
                acc_delta.mul_(rho).addcmul_(delta, delta, value=1 - rho)
                p.add_(delta, alpha=-lr)
        return loss
