"""Adafactor: Adam-like steps with a factored (row × column) second moment, PyTorch's rule."""

from __future__ import annotations

import numpy as np

from .. import _creation
from .._tensor import Tensor
from ..autograd.grad_mode import no_grad
from ._validation import as_scalar
from .optimizer import Closure, Optimizer, ParamsT, apply_weight_decay, params_with_grads


class Adafactor(Optimizer):
    """Adafactor (Shazeer & Stern, 2018) as PyTorch's ``torch.optim.Adafactor``: relative
    step sizes, ``beta2_t = 1 - t^beta2_decay``, update clipping at ``d``; no first moment.

    Example::

        >>> opt = ember.optim.Adafactor(model.parameters(), lr=1e-2)
    """

    def __init__(
        self,
        params: ParamsT,
        lr: float = 1e-2,
        beta2_decay: float = -0.8,
        eps: tuple[float | None, float] = (None, 1e-3),
        d: float = 1.0,
        weight_decay: float = 0.0,
        *,
        foreach: bool | None = None,
        maximize: bool = False,
    ):
        if isinstance(lr, Tensor) and lr.numel() != 1:
            raise ValueError("Tensor lr must be 1-element")
        if not 0.0 <= lr:
            raise ValueError(f"Learning rate should be >= 0 but is: {lr}")
        if not 0.0 >= beta2_decay:
            raise ValueError(f"beta2_decay should be <= 0 but is: {beta2_decay}")
        if eps[0] is not None and not 0.0 <= eps[0]:
            raise ValueError(f"epsilon1 should be >= 0 but is: {eps[0]}")
        if not 0.0 <= eps[1]:
            raise ValueError(f"epsilon2 should be >= 0 but is: {eps[1]}")
        if not 1.0 <= d:
            raise ValueError(f"Clipping threshold d should be >= 1 but is: {d}")
        if not 0.0 <= weight_decay:
            raise ValueError(f"weight_decay should be >= 0 but is: {weight_decay}")
        super().__init__(
            params,
            dict(
                lr=lr,
                beta2_decay=beta2_decay,
                eps=eps,
                d=d,
                weight_decay=weight_decay,
                foreach=foreach,
                maximize=maximize,
            ),
        )

    @no_grad()
    def step(self, closure: Closure | None = None):
        loss = self._closure_loss(closure)
        for group in self.param_groups:
            lr, d, wd = as_scalar(group["lr"]), group["d"], group["weight_decay"]
            eps1, eps2 = group["eps"]
            for p, grad in params_with_grads(group):
                if p.is_complex():
                    raise RuntimeError("Adafactor does not support complex parameters")
                state = self.state[p]
                if not state:
                    state["step"] = _creation.tensor(0.0)
                    if grad.dim() > 1:
                        state["row_var"] = grad.new_zeros((*grad.shape[:-1], 1))
                        state["col_var"] = grad.new_zeros((*grad.shape[:-2], 1, grad.shape[-1]))
                    else:
                        state["variance"] = _creation.zeros_like(grad)
                if eps1 is None:
                    # PyTorch takes it from the first parameter's dtype for the whole group
                    eps1 = float(np.finfo(p.dtype.np).eps)
                state["step"] += 1
                step = state["step"].item()
                one_minus_beta2 = step ** group["beta2_decay"]
                rho = min(lr, 1 / (step**0.5))
                # relative step size: scaled by the parameter's RMS, at least eps2
                alpha = max(eps2, p.norm(2).item() / (p.numel() ** 0.5)) * rho
                # decoupled: shrinks the weights, the gradient is left as it is
                apply_weight_decay(p, grad, wd, decoupled=True, lr=lr)
                if grad.dim() > 1:
                    row_var, col_var = state["row_var"], state["col_var"]
                    row_mean = grad.norm(dim=-1, keepdim=True).square_().div_(grad.shape[-1])
                    row_var.lerp_(row_mean, one_minus_beta2)
                    col_mean = grad.norm(dim=-2, keepdim=True).square_().div_(grad.shape[-2])
                    col_var.lerp_(col_mean, one_minus_beta2)
                    var_estimate = row_var @ col_var
                    var_estimate.div_(row_var.mean(dim=-2, keepdim=True).clamp_(min=eps1))
                else:
                    variance = state["variance"]
                    variance.lerp_(grad * grad, one_minus_beta2)
                    var_estimate = variance.clone()
                update = var_estimate.clamp_(min=eps1 * eps1).rsqrt_().mul_(grad)
                denom = max(1.0, update.norm(2).item() / ((update.numel() ** 0.5) * d))
                p.add_(update, alpha=-alpha / denom)
        return loss
