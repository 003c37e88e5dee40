"""NAdam: Adam with Nesterov momentum and a momentum-decay schedule, PyTorch's update rule."""

from __future__ import annotations

from .. import _creation
from .._tensor import Tensor
from ._validation import as_scalar, check_adam_hyperparameters, check_non_negative
from .adam import initial_moments, params_with_moments
from .optimizer import Closure, Optimizer, ParamsT, use_grad_for_differentiable


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
        check_adam_hyperparameters(lr, betas, eps, weight_decay)
        check_non_negative(momentum_decay=momentum_decay)
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

    def _initial_state(self, group: dict, param: Tensor) -> dict:
        # mu_product a scalar tensor of the default dtype, as PyTorch, so the running
        # product rounds the same way
        return {"mu_product": _creation.tensor(1.0), **initial_moments(param)}

    @use_grad_for_differentiable
    def step(self, closure: Closure | None = None):
        loss = self._closure_loss(closure)
        for group in self.param_groups:
            beta1, beta2 = group["betas"]
            lr, eps = as_scalar(group["lr"]), group["eps"]
            psi = group["momentum_decay"]
            for p, grad, state in params_with_moments(self, group):
                step = state["step"].item()
                exp_avg, exp_avg_sq = state["exp_avg"], state["exp_avg_sq"]
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
