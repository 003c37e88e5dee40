"""Adagrad: per-element steps scaled by the root of the summed squared gradients, PyTorch's
update rule."""

from __future__ import annotations

from .. import _creation
from .._tensor import Tensor
from ._fused import adagrad_step, raw_arrays, scratch_of
from ._validation import as_scalar, check_fused, check_lr, check_non_negative, complex_fill_value
from .optimizer import Closure, Optimizer, ParamsT, apply_weight_decay, use_grad_for_differentiable
from .sgd import sparse_row_kernels


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
        # a complex parameter's real and imaginary parts each start at the value, as in torch
        value = complex_fill_value(param, group["initial_accumulator_value"])
        return {"sum": _creation.full_like(param, value)}

    @use_grad_for_differentiable
    def step(self, closure: Closure | None = None):
        loss = self._closure_loss(closure)
        scratch = scratch_of(self)
        for group in self.param_groups:
            lr = as_scalar(group["lr"])
            raw = not group["differentiable"]
            for p, grad, state in self._params_with_state(group, negate=False):
                if grad.is_sparse:
                    if group["weight_decay"] != 0:
                        raise RuntimeError(
                            "weight_decay option is not compatible with sparse gradients"
                        )
                    if raw and _sparse_step_compiled(p, grad, state, group, lr):
                        continue
                    # the same update on every element: untouched ones add 0 and step by 0
                    grad = grad.to_dense()
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


def _sparse_step_compiled(p: Tensor, grad: Tensor, state: dict, group: dict, lr) -> bool:
    """PyTorch's Adagrad step with a sparse gradient (coalesced; only its rows read and
    written) as one compiled pass; False where the kernels do not apply."""
    kernels = sparse_row_kernels(grad)
    if kernels is None:
        return False
    storage = grad.coalesce()._data
    values = -storage.values if group["maximize"] else storage.values
    step = state["step"].item()
    clr = lr / (1 + (step - 1) * group["lr_decay"])
    total = state["sum"]
    if not kernels.adagrad_rows(
        storage.indices[0], values, total._data, p._data, group["eps"], clr
    ):
        return False
    total._vc[0] += 1
    p._vc[0] += 1
    return True
