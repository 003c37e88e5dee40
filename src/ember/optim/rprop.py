"""Rprop: per-element step sizes grown or shrunk by the sign agreement of successive
gradients, PyTorch's update rule."""

from __future__ import annotations

from .. import _creation
from .._tensor import Tensor
from ._validation import as_scalar, check_lr, complex_fill_value
from .optimizer import Closure, Optimizer, ParamsT, use_grad_for_differentiable


class Rprop(Optimizer):
    """Resilient backpropagation (Riedmiller & Braun, 1993).

    Example::

        >>> opt = ember.optim.Rprop(model.parameters(), lr=1e-2, etas=(0.5, 1.2))
    """

    def __init__(
        self,
        params: ParamsT,
        lr: float = 1e-2,
        etas: tuple[float, float] = (0.5, 1.2),
        step_sizes: tuple[float, float] = (1e-6, 50),
        *,
        capturable: bool = False,
        foreach: bool | None = None,
        maximize: bool = False,
        differentiable: bool = False,
    ):
        check_lr(lr)
        if not 0.0 < etas[0] < 1.0 < etas[1]:
            raise ValueError(f"Invalid eta values: {etas[0]}, {etas[1]}")
        super().__init__(
            params,
            dict(
                lr=lr,
                etas=etas,
                step_sizes=step_sizes,
                foreach=foreach,
                maximize=maximize,
                differentiable=differentiable,
                capturable=capturable,
            ),
        )

    def _initial_state(self, group: dict, param: Tensor) -> dict:
        # a gradient has its parameter's shape, dtype and device
        return {
            "prev": _creation.zeros_like(param),
            # a complex parameter's real and imaginary parts each start at lr, as in torch
            "step_size": _creation.full_like(
                param, complex_fill_value(param, as_scalar(group["lr"]))
            ),
        }

    @use_grad_for_differentiable
    def step(self, closure: Closure | None = None):
        loss = self._closure_loss(closure)
        for group in self.param_groups:
            etaminus, etaplus = group["etas"]
            step_size_min, step_size_max = group["step_sizes"]
            for p, grad, state in self._params_with_state(group):
                prev, step_size = state["prev"], state["step_size"]
                # same sign: grow the step; sign flip: shrink it and skip this update
                factor = grad.mul(prev.clone() if group["differentiable"] else prev).sign()
                shrink = factor.lt(0)
                factor.masked_fill_(factor.gt(0), etaplus)
                factor.masked_fill_(shrink, etaminus)
                factor.masked_fill_(factor.eq(0), 1)
                step_size.mul_(factor).clamp_(step_size_min, step_size_max)
                grad = grad.masked_fill(shrink, 0)
                p.addcmul_(grad.sign(), step_size, value=-1)
                prev.copy_(grad)
        return loss
