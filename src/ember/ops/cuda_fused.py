"""The fused CUDA kernels of ``ember._kernels.cuda_fused`` as differentiable ember ops.

Each function returns ``None`` when its kernel does not apply (a CPU tensor, another dtype,
label smoothing, ...): the caller then runs its usual path. The graph nodes run the fused
backward kernel when no graph of the backward is wanted, and otherwise differentiate the
composite of ember ops, so ``create_graph=True`` and double backward work as on the CPU.

The op files call them first, one line each::

    fused = cuda_fused.cross_entropy(input, target, weight, ignore_index, reduction, smoothing)
    if fused is not None:
        return fused
"""

from __future__ import annotations

import math

from .. import _backend
from .._kernels import cuda_fused as kernels
from .._tensor import Tensor
from ..autograd.node import Node
from ._dispatch import grad_state, result, wrap


def _cupy_module(*tensors):
    """CuPy when every tensor given (None skipped) is a CuPy array of one device, else None."""
    cupy = _backend._cupy
    if cupy is None:
        return None
    first = None
    for t in tensors:
        if t is None:
            continue
        if not isinstance(t, Tensor) or type(t._data) is not cupy.ndarray:
            return None
        if first is None:
            first = t.device
        elif t.device != first:
            return None
    return cupy if first is not None else None


def _composite_grads(node: Node, compute, inputs: tuple, g):
    """Differentiate ``compute(*inputs)`` (ember ops) for ``g``: the create_graph path."""
    from ..autograd import grad as autograd_grad

    edges = node._edges
    wanted = [i for i, edge in enumerate(edges) if edge is not None]
    out = compute(*inputs)
    grads = autograd_grad(out, [inputs[i] for i in wanted], g, create_graph=True, allow_unused=True)
    found = [None] * len(edges)
    for i, grad in zip(wanted, grads):
        found[i] = grad
    return tuple(found)


# --- cross-entropy ----------------------------------------------------------------------------


class FusedCrossEntropyBackward(Node):
    def name(self) -> str:
        return "NllLossBackward0"

    def backward(self, g):
        (x,) = self.unpack_saved()
        if grad_state.enabled:
            return _composite_grads(self, self.composite, (x,), g)
        xp = _backend.array_module(x._data)
        gx = kernels.fused_cross_entropy_backward(xp, x._data, self.target, self.fused, g._data)
        return (wrap(gx),)

    def composite(self, x):
        from .activation import log_softmax
        from .loss import nll_loss

        return nll_loss(
            log_softmax(x, 1),
            self.target_tensor,
            self.weight,
            ignore_index=self.ignore_index,
            reduction=self.reduction,
        )


def cross_entropy(
    input: Tensor,
    target: Tensor,
    weight: Tensor | None = None,
    ignore_index: int = -100,
    reduction: str = "mean",
    label_smoothing: float = 0.0,
) -> Tensor | None:
    """Cross-entropy of (N, C) CUDA logits against (N,) class indices in one kernel, or None."""
    xp = _cupy_module(input, target, weight)
    if xp is None or label_smoothing != 0.0 or (weight is not None and weight.requires_grad):
        return None
    fused = kernels.fused_cross_entropy(
        xp, input._data, target._data, None if weight is None else weight._data, ignore_index,
        reduction,
    )  # fmt: skip
    if fused is None:
        return None
    loss, saved = fused
    return result(
        FusedCrossEntropyBackward,
        loss,
        (input,),
        (input,),
        target=target._data,
        target_tensor=target,
        weight=weight,
        fused=saved,
        ignore_index=ignore_index,
        reduction=reduction,
    )


# --- layer norm -------------------------------------------------------------------------------


def _layer_norm_composite(shape: tuple, eps: float):
    dims = tuple(range(-len(shape), 0))

    def compute(x, weight=None, bias=None):
        centred = x - x.mean(dims, keepdim=True)
        out = centred * ((centred * centred).mean(dims, keepdim=True) + eps).rsqrt()
        if weight is not None:
            out = out * weight
        if bias is not None:
            out = out + bias
        return out

    return compute


class FusedLayerNormBackward(Node):
    def name(self) -> str:
        return "NativeLayerNormBackward0"

    def backward(self, g):
        x, weight, bias = self.unpack_saved()
        if grad_state.enabled:
            compute = _layer_norm_composite(self.shape, self.eps)
            return _composite_grads(self, compute, (x, weight, bias), g)
        xp = _backend.array_module(x._data)
        gx, gw, gb = kernels.fused_layer_norm_backward(
            xp,
            x._data,
            g._data,
            self.mean,
            self.rstd,
            None if weight is None else weight._data,
            None if bias is None else bias._data,
        )
        edges = self._edges
        return (
            wrap(gx) if edges[0] is not None else None,
            wrap(gw) if gw is not None and edges[1] is not None else None,
            wrap(gb) if gb is not None and edges[2] is not None else None,
        )


def layer_norm(
    input: Tensor, normalized_shape, weight: Tensor | None, bias: Tensor | None, eps: float
):
    """(output, mean, rstd) of layer norm over the trailing ``normalized_shape`` dims of a CUDA
    tensor in one kernel (mean and rstd as arrays of one value per row), or None."""
    xp = _cupy_module(input, weight, bias)
    if xp is None:
        return None
    shape = (normalized_shape,) if isinstance(normalized_shape, int) else tuple(normalized_shape)
    fused = kernels.fused_layer_norm(
        xp,
        input._data,
        math.prod(shape),
        None if weight is None else weight._data,
        None if bias is None else bias._data,
        eps,
    )
    if fused is None:
        return None
    out, mean, rstd = fused
    y = result(
        FusedLayerNormBackward,
        out,
        (input, weight, bias),
        (input, weight, bias),
        mean=mean,
        rstd=rstd,
        shape=shape,
        eps=eps,
    )
    return y, mean, rstd


# --- Adam / AdamW -----------------------------------------------------------------------------


def adam_step(param: Tensor, grad: Tensor, state: dict, group: dict, lr: float) -> bool:
    """One Adam/AdamW step of a CUDA parameter in one kernel (state's ``step`` already counted);
    False when the kernel does not apply (the caller steps with tensor ops)."""
    max_sq = state.get("max_exp_avg_sq") if group["amsgrad"] else None
    moments = (state["exp_avg"], state["exp_avg_sq"], max_sq)
    if group.get("differentiable") or _cupy_module(param, grad, *moments) is None:
        return False
    if any(t is not None and t._rg for t in (grad, *moments)):
        return False
    xp = _backend._cupy
    beta1, beta2 = group["betas"]
    done = kernels.fused_adam_step(
        xp,
        param._data,
        grad._data,
        moments[0]._data,
        moments[1]._data,
        None if max_sq is None else max_sq._data,
        step=int(state["step"].item()),
        lr=float(lr),
        beta1=float(beta1),
        beta2=float(beta2),
        eps=float(group["eps"]),
        weight_decay=float(group["weight_decay"]),
        decoupled=bool(group.get("decoupled_weight_decay", False)),
        maximize=bool(group["maximize"]),
    )
    if done is None:
        return False
    for t in (param, *moments):  # written in place, as the tensor ops' versions would count
        if t is not None:
            t._vc[0] += 1
    return True
