"""ASGD: SGD with Polyak-Ruppert averaging of the iterates, PyTorch's update rule."""

from __future__ import annotations

from .. import _creation
from .._tensor import Tensor
from ._validation import as_scalar, check_lr, check_non_negative
from .optimizer import Closure, Optimizer, ParamsT, apply_weight_decay, use_grad_for_differentiable


class ASGD(Optimizer):
    """Averaged SGD (Polyak & Juditsky, 1992); the average lives in ``state[p]["ax"]``.

    Example::

        >>> opt = ember.optim.ASGD(model.parameters(), lr=1e-2, t0=100)
    """

    def __init__(
        self,
        params: ParamsT,
        lr: float = 1e-2,
        lambd: float = 1e-4,
        alpha: float = 0.75,
        t0: float = 1e6,
        weight_decay: float = 0,
        foreach: bool | None = None,
        maximize: bool = False,
        differentiable: bool = False,
        capturable: bool = False,
    ):
        check_lr(lr)
        check_non_negative(weight_decay=weight_decay)
        super().__init__(
            params,
            dict(
                lr=lr,
                lambd=lambd,
                alpha=alpha,
                t0=t0,
                weight_decay=weight_decay,
                foreach=foreach,
                maximize=maximize,
                differentiable=differentiable,
                capturable=capturable,
            ),
        )

    def _initial_state(self, group: dict, param: Tensor) -> dict:
        # eta and mu are scalar tensors of the default dtype, as PyTorch keeps them, so
        # their rounding matches
        return {
            "eta": _creation.tensor(float(as_scalar(group["lr"]))),
            "mu": _creation.tensor(1.0),
            "ax": _creation.zeros_like(param),
        }

    @use_grad_for_differentiable
    def step(self, closure: Closure | None = None):
        loss = self._closure_loss(closure)
        for group in self.param_groups:
            lr, lambd = as_scalar(group["lr"]), group["lambd"]
            alpha, t0 = group["alpha"], group["t0"]
            wd = group["weight_decay"]
            for p, grad, state in self._params_with_state(group):
                step = state["step"].item()
                grad = apply_weight_decay(p, grad, wd)
                eta, mu = state["eta"].item(), state["mu"].item()
                p.mul_(1 - lambd * eta)
                p.add_(grad, alpha=-eta)
                ax = state["ax"]
                if mu != 1:
                    ax.add_(p.sub(ax).mul_(mu))
                else:
                    ax.copy_(p)
                # through a default-dtype scalar as PyTorch, which rounds the new values to
                # it even when a loaded state holds them in the parameters' dtype; its foreach
                # path computes eta on the step tensor itself, rounding every operation (and
                # `lr / tensor` is torch's `tensor.reciprocal() * lr`); the power goes through
                # float64 because NumPy's float32 power is off by an ulp where torch's is not
                if group.get("foreach"):
                    base = 1 + lambd * lr * state["step"]
                    decay = (base.double() ** alpha).to(base.dtype)
                    state["eta"].copy_(decay.reciprocal() * lr)
                else:
                    state["eta"].copy_(_creation.tensor(lr / ((1 + lambd * lr * step) ** alpha)))
                state["mu"].copy_(_creation.tensor(1 / max(1, step - t0)))
        return loss
