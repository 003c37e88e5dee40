"""ember.autograd.graph: the node type and small helpers for walking a graph."""

from __future__ import annotations

from .node import Node

__all__ = ["Node", "walk"]


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
