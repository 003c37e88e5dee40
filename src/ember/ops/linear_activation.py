"""``relu(x Wᵀ + b)`` as one node: the first half of a transformer's feed-forward block.

With ember's compiled kernels the forward is the GEMM and one pass for the bias and the ReLU
(``ember._kernels.linear_jit``), and the backward one pass for the ReLU's mask and the bias
gradient, then the two GEMMs; the values are those of ``relu(linear(x, W, b))`` to the bit.
Without the kernels (no numba, CuPy, other dtypes, small calls) it is that composition.
A recorded graph is torch's (linear's nodes, then ReluBackward0) whichever way the forward
ran: the fused forward's arrays are those nodes' outputs.
"""

from __future__ import annotations

import math

from .._kernels import jit
from .._kernels.blocked import is_plain_numpy
from .._tensor import Tensor
from ..autograd.node import Node
from ._dispatch import array_module, grad_state, record, result, wrap
from ._recorded import KernelCall as _KernelCall
from ._recorded import kernel_call as _kernel_call
from ._recorded import recorder as _recorder
from .elementwise import ReluNode, threshold_backward
from .linalg import linear, linear_result
from .linear_gemm import linear_product

__all__ = ["linear_relu"]

_LINEAR_CODE = linear.__code__


class LinearReluBackward0(Node):
    """y = relu(x Wᵀ + b): gz = g·(y > 0); gx = gz W, gW = gzᵀ x, gb = Σ_rows gz."""

    def backward(self, g):
        x, w = self.unpack_saved()
        y = self.saved_output()
        edges = self._edges
        width = y.shape[-1]
        rows = math.prod(y.shape[:-1])
        if grad_state.enabled:  # create_graph: ember ops, differentiable again
            gz = threshold_backward(g, y, 0).reshape(rows, width)
            gb = gz.sum(0) if edges[2] is not None else None
        else:
            data = g._data
            xp = array_module(data)
            gz, gb = _kernel_call(
                xp,
                _KernelCall(self.kernels.relu_backward),
                xp.ascontiguousarray(data).reshape(rows, width),
                y._data.reshape(rows, width),
            )
            gz, gb = wrap(gz), (wrap(gb) if edges[2] is not None else None)
        gx = gw = None
        if edges[0] is not None:
            gx = (gz @ w).reshape(tuple(y.shape[:-1]) + (w.shape[1],))
        if edges[1] is not None:
            gw = gz.mT @ x.reshape(rows, x.shape[-1])
        return gx, gw, gb


def _kernels(x, w, b):
    """ember._kernels.linear_jit when it can run ``relu(x Wᵀ + b)``: NumPy arrays (or
    ember.compile's recording of them) of one float dtype, x C-contiguous with W's columns,
    b of W's rows, and enough work; else None."""
    if not (is_plain_numpy(x) or _recorder(array_module(x)) is not None):
        return None
    if x.dtype.char not in "fd":  # float32, float64
        return None
    if type(w) is not type(x) or type(b) is not type(x) or not x.flags.c_contiguous:
        return None
    if w.dtype != x.dtype or b.dtype != x.dtype:
        return None
    if x.ndim < 2 or w.ndim != 2 or x.shape[-1] != w.shape[1] or b.shape != (w.shape[0],):
        return None
    return jit.module("linear_jit", x.size // max(1, x.shape[-1]) * w.shape[0])


def _recorded_as_torch(input: Tensor, weight: Tensor, bias: Tensor, out) -> Tensor:
    """The fused forward's ``out`` (rows, out_features) with the graph of
    ``linear(input, weight, bias).relu()``: linear's nodes (views, addmm on W.t()), then
    ReluBackward0. The pre-activation tensor shares relu's array: no node reads its values
    (addmm saves x and Wᵀ, relu its result)."""
    x = input._data
    if x.ndim == 2:
        pre = linear_result(input, weight, bias, out)
    else:
        rows = linear_result(input.reshape(-1, x.shape[-1]), weight, bias, out)
        pre = rows.view(x.shape[:-1] + (out.shape[1],))
    return record(ReluNode(), pre._data, (pre,), (), True)


def linear_relu(input: Tensor, weight: Tensor, bias: Tensor) -> Tensor:
    """``relu(linear(input, weight, bias))``, one node where the compiled kernels run it.

    Example::
        >>> from ember.ops.linear_activation import linear_relu
        >>> x, w, b = ember.randn(4, 3), ember.randn(2, 3), ember.randn(2)
        >>> linear_relu(x, w, b).shape
        ember.Size([4, 2])
    """
    x, w, b = input._data, weight._data, bias._data
    # autocast and the profiler swap linear's code for theirs while on: keep to linear then
    kernels = _kernels(x, w, b) if linear.__code__ is _LINEAR_CODE else None
    if kernels is None:
        return linear(input, weight, bias).relu()
    xp = array_module(x)
    out = linear_product(xp, x.reshape(-1, x.shape[-1]), w)
    _kernel_call(xp, kernels.bias_relu_, out, b)
    if grad_state.enabled and (input._rg or weight._rg or bias._rg):
        return _recorded_as_torch(input, weight, bias, out)
    out = out.reshape(x.shape[:-1] + (w.shape[0],))
    saved = (input if weight._rg else None, weight if input._rg else None)
    return result(
        LinearReluBackward0,
        out,
        (input, weight, bias),
        saved,
        save_output=True,
        kernels=kernels,
    )
