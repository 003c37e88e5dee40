"""SparseAdam: Adam that only touches the rows a gradient reaches, PyTorch's update rule.

A sparse COO gradient (``embedding(..., sparse=True)``) is coalesced and its rows updated as
PyTorch does. A dense gradient is also taken (PyTorch refuses it): the rows along dim 0
holding any non-zero stand for the gradient's indices, so a row PyTorch would carry as an
explicit all-zero entry is skipped there (its moments are not decayed).
"""

from __future__ import annotations

import math

from .. import _creation
from .._backend import array_module
from .._kernels import jit
from .._tensor import Tensor
from ..autograd.grad_mode import no_grad
from ._validation import as_scalar, check_betas
from .optimizer import Closure, Optimizer, ParamsT, params_with_grads


class SparseAdam(Optimizer):
    """Masked Adam for embedding-style gradients.

    Example::

        >>> opt = ember.optim.SparseAdam(embedding.parameters(), lr=1e-3)
    """

    def __init__(
        self,
        params: ParamsT,
        lr: float = 1e-3,
        betas: tuple[float, float] = (0.9, 0.999),
        eps: float = 1e-8,
        maximize: bool = False,
    ):
        if isinstance(lr, Tensor) and lr.numel() != 1:
            raise ValueError("Tensor lr must be 1-element")
        if not 0.0 < lr:
            raise ValueError(f"Invalid learning rate: {lr}")
        if not 0.0 < eps:
            raise ValueError(f"Invalid epsilon value: {eps}")
        check_betas(betas)
        super().__init__(params, dict(lr=lr, betas=betas, eps=eps, maximize=maximize))
        sparse_params = [
            [i, j]
            for i, group in enumerate(self.param_groups)
            for j, p in enumerate(group["params"])
            if p.is_sparse
        ]
        if sparse_params:
            raise ValueError(
                f"Sparse params at indices {sparse_params}: SparseAdam requires dense parameter "
                "tensors"
            )
        complex_params = [
            [i, j]
            for i, group in enumerate(self.param_groups)
            for j, p in enumerate(group["params"])
            if p.is_complex()
        ]
        if complex_params:
            raise ValueError(
                f"Complex params at indices {complex_params}: SparseAdam does not support "
                "complex parameters"
            )

    @no_grad()
    def step(self, closure: Closure | None = None):
        loss = self._closure_loss(closure)
        for group in self.param_groups:
            beta1, beta2 = group["betas"]
            lr, eps = as_scalar(group["lr"]), group["eps"]
            for p, grad in params_with_grads(group):
                state = self.state[p]
                if not state:
                    state["step"] = 0
                    state["exp_avg"] = _creation.zeros_like(p)
                    state["exp_avg_sq"] = _creation.zeros_like(p)
                state["step"] += 1
                if grad.is_sparse:
                    _sparse_rows_step(p, grad, state, lr, beta1, beta2, eps)
                    continue
                if p.dim() == 0:
                    rows = grad.ne(0)
                else:
                    rows = grad.ne(0).reshape(p.shape[0], -1).any(dim=1)
                    rows = rows.reshape((p.shape[0],) + (1,) * (p.dim() - 1)).expand(p.shape)
                if not rows.any().item():
                    continue
                exp_avg, exp_avg_sq = state["exp_avg"], state["exp_avg_sq"]
                # old <- old + (1 - b) · (new - old), on the gradient's rows only
                avg_update = grad.sub(exp_avg).mul_(1 - beta1).masked_fill_(~rows, 0)
                sq_update = grad.pow(2).sub_(exp_avg_sq).mul_(1 - beta2).masked_fill_(~rows, 0)
                exp_avg.add_(avg_update)
                exp_avg_sq.add_(sq_update)
                step = state["step"]
                step_size = lr * math.sqrt(1 - beta2**step) / (1 - beta1**step)
                update = exp_avg.div(exp_avg_sq.sqrt().add_(eps)).mul_(-step_size)
                p.add_(update.masked_fill_(~rows, 0))
        return loss


def _sparse_rows_step(p, grad, state: dict, lr, beta1, beta2, eps) -> None:
    """PyTorch's sparse update on the coalesced gradient's entries (explicit zeros included)."""
    storage = grad.coalesce()._data
    index = tuple(storage.indices)
    values = storage.values
    if values.size == 0:
        return
    m, v, w = state["exp_avg"]._data, state["exp_avg_sq"]._data, p._data
    step = state["step"]
    step_size = lr * math.sqrt(1 - beta2**step) / (1 - beta1**step)
    kernels = jit.module("embedding_jit", values.size) if len(index) == 1 else None
    if kernels is not None and kernels.sparse_adam_rows(
        index[0], values, m, v, w, beta1, beta2, eps, step_size
    ):  # one compiled pass over the rows instead of five gathers and three scatters
        for t in (state["exp_avg"], state["exp_avg_sq"], p):
            t._vc[0] += 1
        return
    # m, v ← old + (1 - β)·(new - old) at the gradient's entries; numer, denom from the new ones
    m_update = (values - m[index]) * (1 - beta1)
    v_update = (values**2 - v[index]) * (1 - beta2)
    m[index] += m_update
    v[index] += v_update
    numer = m[index]
    denom = array_module(w).sqrt(v[index]) + eps
    w[index] += -step_size * (numer / denom)
    for t in (state["exp_avg"], state["exp_avg_sq"], p):
        t._vc[0] += 1
