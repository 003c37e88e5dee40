"""Adagrad: per-element steps scaled by the root of the summed squared gradients, PyTorch's
update rule."""

from __future__ import annotations

from .. import _creation
from .._tensor import Tensor
from ._fused import adagrad_step, raw_arrays, scratch_of
from ._validation import as_scalar, check_fused, check_lr, check_non_negative
from .optimizer import Closure, Optimizer, ParamsT, apply_weight_decay, use_grad_for_differentiable


class Adagrad(Optimizer):
    """Adagrad (Duchi et al., 2011), with ``lr_decay`` and an initial accumulator value;
    its state is created for every parameter up front, as PyTorch's.

    Example::

        >>> opt = ember.optim.Adagrad(model.parameters(), lr=1e-2, lr_decay=1e-4)
    """

    def __init__(
        self,
        params: ParamsT,
        lr=1e-2,
        lr_decay: float = 0,
        weight_decay: float = 0,
        initial_accumulator_value: float = 0,
        eps: float = 1e-10,
        foreach=None,
        *,
        maximize: bool = False,
        differentiable: bool = False,
        fused=None,
    ):
        check_lr(lr)
        check_non_negative(
            lr_decay=lr_decay,
            weight_decay=weight_decay,
            initial_accumulator_value=initial_accumulator_value,
            epsilon=eps,
        )
        super().__init__(
            params,
            dict(
                lr=lr,
                lr_decay=lr_decay,
                eps=eps,
                weight_decay=weight_decay,
                initial_accumulator_value=initial_accumulator_value,
                foreach=foreach,
                maximize=maximize,
                differentiable=differentiable,
                fused=fused,
            ),
        )
        check_fused(fused, foreach, differentiable)
        for group in self.param_groups:
            for p in group["params"]:
                self.state[p].update(self._new_state(group, p))

    def _initial_state(self, group: dict, param: Tensor) -> dict:
        return {"sum": _creation.full_like(param, group["initial_accumulator_value"])}

    @use_grad_for_differentiable
    def step(self, closure: Closure | None = None):
        loss = self._closure_loss(closure)
        scratch = scratch_of(self)
        for group in self.param_groups:
            lr = as_scalar(group["lr"])
            raw = not group["differentiable"]
            for p, grad, state in self._params_with_state(group, negate=False):
                arrays = raw_arrays(p, grad) if raw else None
                if arrays is None or not adagrad_step(p, arrays, state, group, lr, scratch):
                    self._step_with_tensor_ops(p, grad, state, group, lr)
        return loss

    def _step_with_tensor_ops(self, p: Tensor, grad: Tensor, state: dict, group: dict, lr):
        """The update as tensor ops: recorded under ``differentiable=True``, and for what the
        raw path does not take (CuPy arrays, other dtypes)."""
        if group["maximize"]:
            grad = -grad
        step = state["step"].item()
        grad = apply_weight_decay(p, grad, group["weight_decay"])
        clr = lr / (1 + (step - 1) * group["lr_decay"])
        state["sum"].addcmul_(grad, grad, value=1)
        std = state["sum"].sqrt()
        std = std + group["eps"] if group["differentiable"] else std.add_(group["eps"])
        p.addcdiv_(grad, std, value=-clr)
