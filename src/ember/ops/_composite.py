"""One graph node for an op computed by several ember ops (convolution: im2col, GEMM, bias).

PyTorch records a convolution as one ``ConvolutionBackward0``; ember computes it with a few
differentiable ops. ``composite`` runs those ops on detached aliases of the inputs, so that
they form a private graph, and records a single node on the real inputs. Its backward runs the
private graph (each intermediate is computed once, as before); under ``create_graph`` it
differentiates the composite again on the real inputs, so that double backward reaches them.
"""

from __future__ import annotations

from .._tensor import Tensor
from ..autograd import grad_mode
from ..autograd.node import Node
from ._dispatch import NUMBERS, grad_state, record


class CompositeBackward(Node):
    """Saves the real inputs (``saved_tensors``) and the private graph (``inner``)."""

    def backward(self, g):
        from ..autograd import grad as autograd_grad
        from ..autograd.engine import retaining_graph

        inputs = self.unpack_saved()  # raises PyTorch's error once the graph was freed
        edges = self._edges
        wanted = [i for i, edge in enumerate(edges) if edge is not None]
        if grad_state.enabled:  # create_graph: a graph that reaches the real inputs
            out = self.fn(*inputs)
            leaves = [inputs[i] for i in wanted]
            grads = autograd_grad(out, leaves, g, create_graph=True, allow_unused=True)
        else:
            inner_inputs, inner_out = self.inner
            leaves = [inner_inputs[i] for i in wanted]
            retain = retaining_graph()
            grads = autograd_grad(inner_out, leaves, g, retain_graph=retain, allow_unused=True)
            if not retain:
                self.inner = None
        result = [None] * len(edges)
        for i, grad in zip(wanted, grads):
            result[i] = grad
        return tuple(result)


def _needs_grad(t) -> bool:
    return t is not None and t.__class__ not in NUMBERS and t._rg


def composite(node_cls, fn, inputs: tuple) -> Tensor:
    """``fn(*inputs)`` recorded as one ``node_cls`` node (a ``CompositeBackward`` subclass)."""
    if not grad_state.enabled or not any(_needs_grad(t) for t in inputs):
        return fn(*inputs)
    inner_inputs = tuple(t._detach().requires_grad_(True) if _needs_grad(t) else t for t in inputs)
    with grad_mode.enable_grad():
        inner_out = fn(*inner_inputs)
    node = node_cls()
    node.fn, node.inner = fn, (inner_inputs, inner_out)
    out = record(node, inner_out._data, inputs, saved=inputs)
    out._vc = inner_out._vc  # writing into the result in place is seen by the private graph
    return out
