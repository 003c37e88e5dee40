"""RMSprop (centered, with momentum), PyTorch's update rule."""

from __future__ import annotations

from .. import _creation
from .._tensor import Tensor
from ._fused import raw_arrays, rmsprop_step, scratch_of
from ._validation import as_scalar, check_lr, check_non_negative
from .optimizer import Closure, Optimizer, ParamsT, apply_weight_decay, use_grad_for_differentiable


class RMSprop(Optimizer):
    """RMSprop (Hinton); ``centered`` normalises by the variance instead of the raw second
    moment, ``momentum`` adds a buffer over the normalised steps.

    Example::

        >>> opt = ember.optim.RMSprop(model.parameters(), lr=1e-2, alpha=0.99)
    """

    def __init__(
        self,
        params: ParamsT,
        lr=1e-2,
        alpha: float = 0.99,
        eps: float = 1e-8,
        weight_decay: float = 0,
        momentum: float = 0,
        centered: bool = False,
        capturable: bool = False,
        foreach=None,
        maximize: bool = False,
        differentiable: bool = False,
    ):
        check_lr(lr)
        check_non_negative(epsilon=eps, momentum=momentum, weight_decay=weight_decay, alpha=alpha)
        super().__init__(
            params,
            dict(
                lr=lr,
                alpha=alpha,
                eps=eps,
                weight_decay=weight_decay,
                momentum=momentum,
                centered=centered,
                capturable=capturable,
                foreach=foreach,
                maximize=maximize,
                differentiable=differentiable,
            ),
        )

    def _initial_state(self, group: dict, param: Tensor) -> dict:
        state = {"square_avg": _creation.zeros_like(param)}
        if group["momentum"] > 0:
            state["momentum_buffer"] = _creation.zeros_like(param)
        if group["centered"]:
            state["grad_avg"] = _creation.zeros_like(param)
        return state

    @use_grad_for_differentiable
    def step(self, closure: Closure | None = None):
        loss = self._closure_loss(closure)
        scratch = scratch_of(self)
        for group in self.param_groups:
            lr = as_scalar(group["lr"])
            raw = not group["differentiable"]
            for p, grad, state in self._params_with_state(group, negate=False):
                arrays = raw_arrays(p, grad) if raw else None
                if arrays is None or not rmsprop_step(p, arrays, state, group, lr, scratch):
                    self._step_with_tensor_ops(p, grad, state, group, lr)
        return loss

    def _step_with_tensor_ops(self, p: Tensor, grad: Tensor, state: dict, group: dict, lr):
        """The update as tensor ops: recorded under ``differentiable=True``, and for what the
        raw path does not take (CuPy arrays, other dtypes)."""
        alpha, eps = group["alpha"], group["eps"]
        wd, momentum, centered = group["weight_decay"], group["momentum"], group["centered"]
        if group["maximize"]:
            grad = -grad
        grad = apply_weight_decay(p, grad, wd)
        square_avg = state["square_avg"]
        square_avg.mul_(alpha).addcmul_(grad, grad, value=1 - alpha)
        if centered:
            grad_avg = state["grad_avg"]
            grad_avg.lerp_(grad, 1 - alpha)
            avg = square_avg.addcmul(grad_avg, grad_avg, value=-1).sqrt_()
        else:
            avg = square_avg.sqrt()
        # sqrt saves its output: keep it intact when the step is differentiated
        avg = avg.add(eps) if group["differentiable"] else avg.add_(eps)
        if momentum > 0:
            buf = state["momentum_buffer"]
            buf.mul_(momentum).addcdiv_(grad, avg)
            p.add_(buf, alpha=-lr)
        else:
            p.addcdiv_(grad, avg, value=-lr)
