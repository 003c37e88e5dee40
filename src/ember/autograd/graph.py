"""ember.autograd.graph: the node type and small helpers for walking a graph."""

from __future__ import annotations

from ._watch import memory_root
from .node import Node

__all__ = ["Node", "saved_tensors_bytes", "walk"]


def walk(root) -> list:
    """Every node reachable from ``root`` (a tensor or a node), without recursion."""
    node = getattr(root, "grad_fn", root)
    if node is None:
        return []
    seen, stack, order = {node}, [node], []
    while stack:
        current = stack.pop()
        order.append(current)
        for edge in current._edges:
            if edge is not None and edge[0] not in seen:
                seen.add(edge[0])
                stack.append(edge[0])
    return order


def saved_arrays(node) -> list:
    """The arrays ``node`` saved for its backward (none once backward freed them)."""
    arrays = []
    saved = node._saved
    if saved:
        for t in saved:
            data = getattr(t, "_data", None)
            if data is not None:
                arrays.append(data)
    if node._saved_out is not None:
        arrays.append(node._saved_out[0])
    return arrays


def saved_bytes(nodes) -> int:
    """Bytes of memory kept alive by what ``nodes`` saved, each buffer counted once."""
    roots = {}
    for node in nodes:
        for data in saved_arrays(node):
            root = memory_root(data)
            roots[id(root)] = root.nbytes
    return sum(roots.values())


def saved_tensors_bytes(t) -> int:
    """Bytes held by the saved tensors of the graph behind ``t`` (shared buffers once).

    Example::
        >>> y = (x * x).tanh().sum()
        >>> ember.autograd.graph.saved_tensors_bytes(y)   # x, and tanh's output
        8000
    """
    return saved_bytes(walk(t))
