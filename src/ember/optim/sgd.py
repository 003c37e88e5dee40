"""Stochastic gradient descent with momentum, dampening, Nesterov and weight decay."""

from __future__ import annotations

from .._kernels import jit
from .._tensor import Tensor
from ._fused import bump, raw_arrays, sgd_sparse_step, sgd_step
from ._validation import as_scalar, check_fused, check_lr
from .optimizer import (
    Closure,
    Optimizer,
    ParamsT,
    apply_weight_decay,
    required,
    use_grad_for_differentiable,
)


class SGD(Optimizer):
    """PyTorch's SGD: the same update rule, so parameters after N steps equal torch's."""

    def __init__(
        self,
        params: ParamsT,
        lr=1e-3,
        momentum: float = 0,
        dampening: float = 0,
        weight_decay: float = 0,
        nesterov: bool = False,
        *,
        maximize: bool = False,
        foreach=None,
        differentiable: bool = False,
        fused=None,
    ):
        if lr is not required:
            check_lr(lr)
        if momentum < 0.0:
            raise ValueError(f"Invalid momentum value: {momentum}")
        if weight_decay < 0.0:
            raise ValueError(f"Invalid weight_decay value: {weight_decay}")
        if nesterov and (momentum <= 0 or dampening != 0):
            raise ValueError("Nesterov momentum requires a momentum and zero dampening")
        super().__init__(
            params,
            dict(
                lr=lr,
                momentum=momentum,
                dampening=dampening,
                weight_decay=weight_decay,
                nesterov=nesterov,
                maximize=maximize,
                foreach=foreach,
                differentiable=differentiable,
                fused=fused,
            ),
        )
        check_fused(fused, foreach, differentiable)

    @use_grad_for_differentiable
    def step(self, closure: Closure | None = None):
        loss = self._closure_loss(closure)
        for group in self.param_groups:
            lr = as_scalar(group["lr"])
            raw = not group["differentiable"]
            for p in group["params"]:
                grad = p._grad
                if grad is None:
                    continue
                arrays = raw_arrays(p, grad) if raw else None
                if arrays is not None:
                    sgd_step(self, p, arrays, group, lr)
                elif grad.is_sparse and group["momentum"] == 0 and group["weight_decay"] == 0:
                    if not _sparse_step_compiled(p, grad, lr, group["maximize"]):
                        sgd_sparse_step(p, grad, lr, group["maximize"])
                else:
                    self._step_with_tensor_ops(p, grad, group, lr)
        return loss

    def _step_with_tensor_ops(self, p, grad, group: dict, lr: float) -> None:
        """The update as recorded tensor ops (``differentiable=True``), and for what the raw
        path does not take (CuPy arrays, sparse gradients with momentum or decay)."""
        momentum, dampening = group["momentum"], group["dampening"]
        if grad.is_sparse:
            grad = grad.to_dense()
        d_p = -grad if group["maximize"] else grad
        d_p = apply_weight_decay(p, d_p, group["weight_decay"])
        if momentum != 0:
            state = self.state[p]
            buf = state.get("momentum_buffer")
            if buf is None:
                buf = state["momentum_buffer"] = d_p.clone()._detach()
            else:
                buf.mul_(momentum).add_(d_p, alpha=1 - dampening)
            d_p = d_p.add(buf, alpha=momentum) if group["nesterov"] else buf
        p.add_(d_p, alpha=-lr)


def sparse_row_kernels(grad: Tensor):
    """The compiled row kernels (``embedding_jit``) for a sparse COO gradient with one sparse
    dim, an embedding's; None where they do not apply (several sparse dims, kernels off, too
    little work: ``jit.module``)."""
    storage = grad._data
    if storage.indices.shape[0] != 1:
        return None
    return jit.module("embedding_jit", storage.values.size)


def _sparse_step_compiled(param, grad, lr: float, maximize: bool) -> bool:
    """``param -= lr · grad`` for a sparse COO gradient as one compiled index-add over its
    entries, uncoalesced (PyTorch's ``add_`` of a sparse tensor adds each entry in turn);
    False where it does not apply (no numba, CuPy, other dtypes, several sparse dims)."""
    kernels = sparse_row_kernels(grad)
    if kernels is None:
        return False
    storage = grad._data
    alpha = lr if maximize else -lr
    if not kernels.index_axpy(storage.indices[0], alpha, storage.values, param._data):
        return False
    bump(param)
    return True
