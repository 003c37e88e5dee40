"""Linear's backward as one differentiable op, for ``create_graph`` (double backward).

Under ``create_graph`` the gradients of y = x Wᵀ + b were four recorded ops (gx = g W, a
transpose and gW = gᵀ x, gb = Σ g) and, in a Hessian-vector product's second pass, four
nodes whose transposed gradients made the next formulas run on strided arrays. Here the
three gradients are one node's outputs, and its backward is one formula per input:

    gx = g W,  gW = gᵀ x,  gb = Σᵣ g   (r: the rows)
    d/dg = ggx Wᵀ + x ggWᵀ + ggb,  d/dx = g ggW,  d/dW = gᵀ ggx

It runs on arrays when it records no graph (the usual second pass), else with ember ops, so
a third derivative works as before. Without create_graph (a training step's backward) the
gradients are the same array calls as ember ops would make (the same bits), without their
dispatch.
"""

from __future__ import annotations

from ..autograd.node import Node
from . import linalg
from ._dispatch import array_module, grad_state, wrap
from ._linalg_common import record_outputs
from .reduction import _sum_array


def applies(g, x, w) -> bool:
    """Whether the fused op takes ``LinearBackward0``'s gradients: 2-D real float operands of
    one array class and dtype (``x`` or ``w`` may be None: linear saves each only when the
    other requires grad)."""
    gd = g._data
    if gd.ndim != 2 or gd.dtype.char not in "fd":
        return False
    for t in (x, w):
        if t is not None:
            data = t._data
            if data.__class__ is not gd.__class__ or data.dtype != gd.dtype:
                return False
    return x is None or x._data.ndim == 2


class LinearBackwardBackward0(Node):
    """The gradients of linear (those in ``outputs``: "x", "w", "b") as one node's outputs;
    inputs (g, x, w)."""

    _fast = False  # several outputs: the engine hands apply() one gradient per output

    def apply(self, grads: list) -> tuple:
        ggx = ggw = ggb = None
        for kind, gg in zip(self.outputs, grads):
            if kind == "x":
                ggx = gg
            elif kind == "w":
                ggw = gg
            else:
                ggb = gg
        g, x, w = self.unpack_saved()
        need_g, need_x, need_w = (edge is not None for edge in self._edges)
        if not grad_state.enabled:
            return self._on_arrays(g, x, w, ggx, ggw, ggb, need_g, need_x, need_w)
        dg = dx = dw = None
        if need_g:
            if ggx is not None:
                dg = ggx @ w.mT
            if ggw is not None:
                term = x @ ggw.mT
                dg = term if dg is None else dg + term
            if ggb is not None:
                dg = ggb.expand(g.shape) if dg is None else dg + ggb
        if need_x and ggw is not None:
            dx = g @ ggw
        if need_w and ggx is not None:
            dw = g.mT @ ggx
        return dg, dx, dw

    @staticmethod
    def _on_arrays(g, x, w, ggx, ggw, ggb, need_g, need_x, need_w) -> tuple:
        """The same formula on the arrays, no graph recorded (a Hessian-vector product's
        second pass): contiguous results, sums in place."""
        xp = array_module(g._data)
        gemm = linalg.gemm
        dg = dx = dw = None
        if need_g:
            if ggx is not None:
                dg = gemm(xp, ggx._data, w._data.T)
            if ggw is not None:
                term = gemm(xp, x._data, ggw._data.T)
                if dg is None:
                    dg = term
                else:
                    dg += term
            if ggb is not None:
                if dg is None:
                    dg = xp.broadcast_to(ggb._data, g._data.shape)
                else:
                    dg += ggb._data
            dg = None if dg is None else wrap(dg)
        if need_x and ggw is not None:
            dx = wrap(gemm(xp, g._data, ggw._data))
        if need_w and ggx is not None:
            dw = wrap(gemm(xp, g._data.T, ggx._data))
        return dg, dx, dw


def linear_gradients(g, x, w, need_x: bool, need_w: bool, need_b: bool) -> tuple:
    """(gx, gW, gb) of y = x Wᵀ (+ b) for 2-D ``g`` and ``x`` (see :func:`applies`), each None
    where not needed; recorded as one node when grad mode is on (create_graph) and some
    operand requires grad, else plain tensors."""
    xp = array_module(g._data)
    gd = g._data
    datas, outputs = [], []
    if need_x:
        datas.append(linalg.gemm(xp, gd, w._data))
        outputs.append("x")
    if need_w:
        datas.append(linalg.gemm(xp, gd.T, x._data))
        outputs.append("w")
    if need_b:
        datas.append(_sum_array(gd, (0,), False))
        outputs.append("b")
    inputs = (g, x, w)
    outs = record_outputs(
        LinearBackwardBackward0, tuple(datas), inputs, inputs, outputs=tuple(outputs)
    )
    result = {kind: out for kind, out in zip(outputs, outs)}
    return result.get("x"), result.get("w"), result.get("b")
