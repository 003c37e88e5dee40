"""Adadelta, PyTorch's update rule: step sizes from the ratio of running RMS of updates and
gradients."""

from __future__ import annotations

from .. import _creation
from .._tensor import Tensor
from ._validation import as_scalar, check_lr, check_non_negative
from .optimizer import Closure, Optimizer, ParamsT, apply_weight_decay, use_grad_for_differentiable


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
        check_non_negative(epsilon=eps, weight_decay=weight_decay)
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

    def _initial_state(self, group: dict, param: Tensor) -> dict:
        return {"square_avg": _creation.zeros_like(param), "acc_delta": _creation.zeros_like(param)}

    @use_grad_for_differentiable
    def step(self, closure: Closure | None = None):
        loss = self._closure_loss(closure)
        for group in self.param_groups:
            lr, rho, eps = as_scalar(group["lr"]), group["rho"], group["eps"]
            wd = group["weight_decay"]
            for p, grad, state in self._params_with_state(group):
                grad = apply_weight_decay(p, grad, wd)
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
