"""RAdam: Adam with the variance of the adaptive learning rate rectified, PyTorch's rule."""

from __future__ import annotations

from .._tensor import Tensor
from ._validation import as_scalar, check_adam_hyperparameters
from .adam import initial_moments, params_with_moments
from .optimizer import Closure, Optimizer, ParamsT, use_grad_for_differentiable


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
        check_adam_hyperparameters(lr, betas, eps, weight_decay)
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

    def _initial_state(self, group: dict, param: Tensor) -> dict:
        return initial_moments(param)

    @use_grad_for_differentiable
    def step(self, closure: Closure | None = None):
        loss = self._closure_loss(closure)
        for group in self.param_groups:
            beta1, beta2 = group["betas"]
            lr, eps = as_scalar(group["lr"]), group["eps"]
            for p, _grad, state in params_with_moments(self, group):
                step = state["step"].item()
                exp_avg, exp_avg_sq = state["exp_avg"], state["exp_avg_sq"]
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
