"""Muon: momentum whose update is orthogonalised by a Newton-Schulz iteration, for 2-D
weights, PyTorch's update rule (the iteration runs in bfloat16 as PyTorch's does)."""

from __future__ import annotations

import math

from .. import _creation
from .._tensor import Tensor
from ..autograd.grad_mode import no_grad
from ._validation import as_scalar
from .optimizer import Closure, Optimizer, ParamsT

EPS = 1e-7
DEFAULT_A = 3.4445
DEFAULT_B = -4.775
DEFAULT_C = 2.0315
DEFAULT_NS_STEPS = 5


def _bf16(t):
    """Round to bfloat16 and back to float32: the value a bfloat16 kernel would store."""
    return t.bfloat16().float()


def _zeropower_via_newtonschulz(grad, ns_coefficients, ns_steps: int, eps: float):
    """Approximately the orthogonal factor U·Vᵀ of ``grad = U·S·Vᵀ``, by ``ns_steps``
    iterations of the quintic X <- a·X + (b·XXᵀ + c·(XXᵀ)²)·X; each product is rounded to
    bfloat16 as PyTorch's bfloat16 matmuls (float32 accumulation) do."""
    if ns_steps >= 100:
        raise ValueError("Number of steps must be less than 100 for computational efficiency")
    if len(grad.shape) != 2:
        raise ValueError("Input tensor gradient must be a 2D matrix")
    if len(ns_coefficients) != 3:
        raise ValueError("Coefficients must be a tuple of exactly 3 values")
    a, b, c = ns_coefficients
    x = grad.bfloat16().float()
    tall = grad.shape[0] > grad.shape[1]
    if tall:
        x = x.T
    x = _bf16(x / _bf16(_bf16(x.norm()).clamp(min=eps)))
    for _ in range(ns_steps):
        gram = _bf16(x @ x.T)
        gram_update = _bf16(b * gram + c * (gram @ gram))
        x = _bf16(a * x + gram_update @ x)
    return x.T if tall else x


def _adjust_lr(lr: float, adjust_lr_fn: str | None, shape) -> float:
    rows, cols = shape[:2]
    if adjust_lr_fn is None or adjust_lr_fn == "original":
        ratio = math.sqrt(max(1, rows / cols))  # Keller Jordan's scaling
    elif adjust_lr_fn == "match_rms_adamw":
        ratio = 0.2 * math.sqrt(max(rows, cols))  # Moonshot's: the RMS of an AdamW step
    else:
        ratio = 1.0
    return lr * ratio


class Muon(Optimizer):
    """Muon for 2-D parameters (hidden-layer weights); use AdamW for biases, embeddings and
    other parameters.

    Example::

        >>> hidden = [p for p in model.parameters() if p.ndim == 2]
        >>> opt = ember.optim.Muon(hidden, lr=0.02, momentum=0.95)
    """

    def __init__(
        self,
        params: ParamsT,
        lr: float = 1e-3,
        weight_decay: float = 0.1,
        momentum: float = 0.95,
        nesterov: bool = True,
        ns_coefficients: tuple[float, float, float] = (DEFAULT_A, DEFAULT_B, DEFAULT_C),
        eps: float = EPS,
        ns_steps: int = DEFAULT_NS_STEPS,
        adjust_lr_fn: str | None = None,
    ):
        if isinstance(lr, Tensor) and lr.numel() != 1:
            raise ValueError("Tensor lr must be 1-element")
        if not 0.0 <= lr:
            raise ValueError(f"Learning rate should be >= 0 but is: {lr}")
        if not 0.0 <= momentum:
            raise ValueError(f"momentum should be >= 0 but is: {momentum}")
        if not 0.0 <= weight_decay:
            raise ValueError(f"weight decay should be >= 0 but is: {weight_decay}")
        if adjust_lr_fn is not None and adjust_lr_fn not in ("original", "match_rms_adamw"):
            raise ValueError(f"Adjust learning rate function {adjust_lr_fn} is not supported")
        super().__init__(
            params,
            dict(
                lr=lr,
                weight_decay=weight_decay,
                momentum=momentum,
                nesterov=nesterov,
                ns_coefficients=ns_coefficients,
                eps=eps,
                ns_steps=ns_steps,
                adjust_lr_fn=adjust_lr_fn,
            ),
        )
        for group in self.param_groups:
            for p in group["params"]:
                if p.dim() != 2:
                    raise ValueError(
                        "Muon only supports 2D parameters whereas we found a parameter with "
                        f"size: {p.size()}"
                    )

    @no_grad()
    def step(self, closure: Closure | None = None):
        loss = self._closure_loss(closure)
        for group in self.param_groups:
            lr, wd, momentum = as_scalar(group["lr"]), group["weight_decay"], group["momentum"]
            for p in group["params"]:
                grad = p._grad
                if grad is None:
                    continue
                if p.is_complex():
                    raise RuntimeError("Muon does not support complex parameters")
                if grad.dim() != 2:
                    raise ValueError("Param gradient must be a 2D matrix")
                state = self.state[p]
                if "momentum_buffer" not in state:
                    state["momentum_buffer"] = _creation.zeros_like(grad)
                buf = state["momentum_buffer"]
                buf.lerp_(grad, 1 - momentum)
                update = grad.lerp(buf, momentum) if group["nesterov"] else buf
                update = _zeropower_via_newtonschulz(
                    update, group["ns_coefficients"], group["ns_steps"], group["eps"]
                )
                p.mul_(1 - lr * wd)
                p.add_(update, alpha=-_adjust_lr(lr, group["adjust_lr_fn"], p.shape))
        return loss
