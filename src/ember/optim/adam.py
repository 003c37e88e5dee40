"""Adam and AdamW (with AMSGrad), PyTorch's update rules."""

from __future__ import annotations

import math
from collections.abc import Iterator

from .. import _backend, _creation
from .._kernels import jit
from .._tensor import Tensor
from ._fused import adam_step, raw_arrays, scratch_of
from ._validation import as_scalar, check_adam_hyperparameters, check_fused
from .optimizer import Closure, Optimizer, ParamsT, apply_weight_decay, use_grad_for_differentiable


def initial_moments(param: Tensor) -> dict:
    """The Adam family's first and second moments of a parameter's gradient, zero at first."""
    return {"exp_avg": _creation.zeros_like(param), "exp_avg_sq": _creation.zeros_like(param)}


def params_with_moments(optimizer: Optimizer, group: dict) -> Iterator[tuple[Tensor, Tensor, dict]]:
    """The Adam family's common start of a step: (parameter, gradient, state) for each
    parameter of ``group`` with a gradient, its ``step`` counted, weight decay applied (to
    the weights when the group has ``decoupled_weight_decay``) and its moments updated,
    ``m ← β1·m + (1-β1)·g`` and ``v ← β2·v + (1-β2)·g²``."""
    beta1, beta2 = group["betas"]
    lr, wd = as_scalar(group["lr"]), group["weight_decay"]
    # absent from a state dict saved before the option existed: PyTorch's default
    decoupled = group.get("decoupled_weight_decay", False)
    for p, grad, state in optimizer._params_with_state(group):
        grad = apply_weight_decay(p, grad, wd, decoupled=decoupled, lr=lr)
        update_moments(state, grad, beta1, beta2)
        yield p, grad, state


def update_moments(state: dict, grad: Tensor, beta1: float, beta2: float) -> None:
    """``m ← β1·m + (1-β1)·g`` (as PyTorch's lerp) and ``v ← β2·v + (1-β2)·g²``."""
    state["exp_avg"].lerp_(grad, 1 - beta1)
    state["exp_avg_sq"].mul_(beta2).addcmul_(grad, grad, value=1 - beta2)


def _cuda_adam_step(p: Tensor, grad: Tensor, state: dict, group: dict, lr) -> bool:
    """The step of a CUDA parameter in one fused kernel; False where it does not apply (a CPU
    parameter, differentiable=True, half precision): the caller then uses tensor ops."""
    cupy = _backend._cupy
    if cupy is None or p._data.__class__ is not cupy.ndarray:
        return False
    from ..ops import cuda_fused as fused_ops

    return fused_ops.adam_step(p, grad, state, group, lr)


class Adam(Optimizer):
    """Adam; ``decoupled_weight_decay=True`` (or AdamW) applies decay to the weights directly."""

    def __init__(
        self,
        params: ParamsT,
        lr=1e-3,
        betas=(0.9, 0.999),
        eps: float = 1e-8,
        weight_decay: float = 0,
        amsgrad: bool = False,
        *,
        foreach=None,
        maximize: bool = False,
        capturable: bool = False,
        differentiable: bool = False,
        fused=None,
        decoupled_weight_decay: bool = False,
    ):
        if isinstance(lr, Tensor) and foreach and not capturable:
            raise ValueError(
                "lr as a Tensor is not supported for capturable=False and foreach=True"
            )
        check_adam_hyperparameters(lr, betas, eps, weight_decay)
        betas = _checked_tensor_betas(betas, foreach, capturable)
        super().__init__(
            params,
            dict(
                lr=lr,
                betas=betas,
                eps=eps,
                weight_decay=weight_decay,
                amsgrad=amsgrad,
                maximize=maximize,
                foreach=foreach,
                capturable=capturable,
                differentiable=differentiable,
                fused=fused,
                decoupled_weight_decay=decoupled_weight_decay,
            ),
        )
        check_fused(fused, foreach, differentiable)

    def _initial_state(self, group: dict, param: Tensor) -> dict:
        state = initial_moments(param)
        if group["amsgrad"]:
            state["max_exp_avg_sq"] = _creation.zeros_like(param)
        return state

    @use_grad_for_differentiable
    def step(self, closure: Closure | None = None):
        loss = self._closure_loss(closure)
        scratch = scratch_of(self)
        for group in self.param_groups:
            lr = as_scalar(group["lr"])
            raw = not group["differentiable"]
            # the group's elements decide (jit.MIN_WORK): one kernel for all its parameters
            kernels = (
                jit.module("optim_jit", sum(p._data.size for p in group["params"])) if raw else None
            )
            for p, grad, state in self._params_with_state(group, negate=False):
                arrays = raw_arrays(p, grad) if raw else None
                if arrays is None or not adam_step(p, arrays, state, group, lr, scratch, kernels):
                    if not _cuda_adam_step(p, grad, state, group, lr):
                        self._step_with_tensor_ops(p, grad, state, group, lr)
        return loss

    def _step_with_tensor_ops(self, p: Tensor, grad: Tensor, state: dict, group: dict, lr):
        """The update as tensor ops: recorded under ``differentiable=True``, and for what the
        raw path does not take (CuPy arrays, other dtypes)."""
        beta1, beta2 = group["betas"]
        eps, differentiable = group["eps"], group["differentiable"]
        if group["maximize"]:
            grad = -grad
        decoupled = group.get("decoupled_weight_decay", False)
        grad = apply_weight_decay(p, grad, group["weight_decay"], decoupled=decoupled, lr=lr)
        update_moments(state, grad, beta1, beta2)
        step = state["step"].item()
        exp_avg, exp_avg_sq = state["exp_avg"], state["exp_avg_sq"]
        second_moment = exp_avg_sq
        if group["amsgrad"]:
            max_sq = state["max_exp_avg_sq"]
            # under differentiable=True, tensors that a later step changes in place are
            # cloned before an op saves them for backward
            max_sq.copy_((max_sq.clone() if differentiable else max_sq).maximum(exp_avg_sq))
            second_moment = max_sq
        if differentiable:
            # PyTorch's differentiable path does the step-size arithmetic on the step tensor
            # (its dtype), and folds the step size into the denominator (scalar / tensor is
            # reciprocal-then-multiply there; kept for equal rounding)
            step_t = state["step"]
            step_size_neg = ((1 - beta1**step_t).reciprocal() * lr).neg()
            scale = (1 - beta2**step_t).sqrt() * step_size_neg
            denom = (second_moment.sqrt() / scale).add_(step_size_neg.reciprocal() * eps)
            p.addcdiv_(exp_avg.clone(), denom)
            return
        step_size = lr / (1 - beta1**step)
        bias_correction2_sqrt = math.sqrt(1 - beta2**step)
        denom = (second_moment.sqrt() / bias_correction2_sqrt).add_(eps)
        p.addcdiv_(exp_avg, denom, value=-step_size)


def _checked_tensor_betas(betas, foreach, capturable) -> tuple:
    """torch's rules for betas given as tensors (both or neither, one element each, not with
    foreach unless capturable); one-element tensors come back 0-d, as torch stores them."""
    floats = isinstance(betas[0], float) and isinstance(betas[1], float)
    if not floats and not (isinstance(betas[0], Tensor) and isinstance(betas[1], Tensor)):
        raise ValueError("betas must be either both floats or both Tensors")
    if floats:
        return tuple(betas)
    for index in (0, 1):
        if foreach and not capturable:
            raise ValueError(
                f"betas[{index}] as a Tensor is not supported for capturable=False and foreach=True"
            )
        if betas[index].numel() != 1:
            raise ValueError(f"Tensor betas[{index}] must be 1-element")
    return tuple(b.squeeze() if b.dim() else b for b in betas)


class AdamW(Adam):
    """Adam with decoupled weight decay (default 1e-2), PyTorch's AdamW."""

    def __init__(
        self,
        params: ParamsT,
        lr=1e-3,
        betas=(0.9, 0.999),
        eps: float = 1e-8,
        weight_decay: float = 1e-2,
        amsgrad: bool = False,
        *,
        maximize: bool = False,
        foreach=None,
        capturable: bool = False,
        differentiable: bool = False,
        fused=None,
    ):
        super().__init__(
            params,
            lr,
            betas,
            eps,
            weight_decay,
            amsgrad,
            foreach=foreach,
            maximize=maximize,
            capturable=capturable,
            differentiable=differentiable,
            fused=fused,
            decoupled_weight_decay=True,
        )
