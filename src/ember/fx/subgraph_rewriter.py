"""``replace_pattern``: find every occurrence of a pattern in a GraphModule and replace it.

Example::
    >>> import ember, ember.fx
    >>> def f(x):
    ...     return ember.neg(ember.relu(x)) + 1
    >>> gm = ember.fx.symbolic_trace(f)
    >>> def pattern(x):
    ...     return ember.neg(ember.relu(x))
    >>> def replacement(x):
    ...     return ember.relu(ember.neg(x))
    >>> len(ember.fx.replace_pattern(gm, pattern, replacement))
    1
    >>> gm(ember.tensor([1.0, -2.0]))
    tensor([1., 3.])
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, NamedTuple

from .. import nn
from ._matcher import InternalMatch, SubgraphMatcher
from ._symbolic_trace import symbolic_trace
from .graph import Graph
from .graph_module import GraphModule
from .node import Node

__all__ = ["Match", "replace_pattern", "replace_pattern_with_filters", "ReplacedPatterns"]


class Match(NamedTuple):
    """A replaced occurrence: the pattern's anchor (its returned node) and the map from
    pattern nodes to the graph nodes they matched."""

    anchor: Node
    nodes_map: dict[Node, Node]


@dataclass
class ReplacedPatterns:
    anchor: Node
    nodes_map: dict[Node, Node]
    replacements: list[Node]


def _graph_of(obj: Callable[..., Any] | Graph | GraphModule) -> Graph:
    if isinstance(obj, GraphModule):
        return obj.graph
    if isinstance(obj, Graph):
        return obj
    return symbolic_trace(obj).graph


def _try_get_attr(module: nn.Module, target: str) -> Any | None:
    path, _, name = target.rpartition(".")
    try:
        owner = module.get_submodule(path)
    except AttributeError:
        return None
    return getattr(owner, name, None)


def _replace_attributes(gm: GraphModule, replacement: nn.Module) -> None:
    """Give ``gm`` the submodules and attributes the inserted replacement nodes fetch."""
    gm.delete_all_unused_submodules()
    if isinstance(replacement, GraphModule):
        replacement.graph.lint()
    for node in gm.graph.nodes:
        if node.op not in ("call_module", "get_attr"):
            continue
        if _try_get_attr(gm, node.target) is not None:
            continue
        replacement_attr = _try_get_attr(replacement, node.target)
        if replacement_attr is None:
            raise RuntimeError(
                f'Attempted to create a "{node.op}" node during subgraph rewriting with target '
                f"{node.target}, but the referenced attribute does not exist in the replacement "
                "GraphModule"
            )
        new_attr = copy.deepcopy(replacement_attr)
        if isinstance(replacement_attr, nn.Module):
            gm.add_submodule(node.target, new_attr)
        else:
            setattr(gm, node.target, new_attr)
    gm.graph.lint()


def replace_pattern(
    gm: GraphModule,
    pattern: Callable[..., Any] | GraphModule,
    replacement: Callable[..., Any] | GraphModule,
) -> list[Match]:
    """Replace each occurrence of ``pattern`` in ``gm`` by ``replacement`` (functions or
    GraphModules with the same inputs); returns the matches replaced, and recompiles ``gm``.

    An occurrence counts only if the values it computes inside are not used elsewhere, and
    occurrences do not overlap.
    """
    return [
        Match(anchor=m.anchor, nodes_map=m.nodes_map)
        for m in _replace_pattern(gm, pattern, replacement)
    ]


def replace_pattern_with_filters(
    gm: GraphModule,
    pattern: Callable[..., Any] | Graph | GraphModule,
    replacement: Callable[..., Any] | Graph | GraphModule,
    match_filters: list[Callable[[InternalMatch, Graph, Graph], bool]] | None = None,
    ignore_literals: bool = False,
) -> list[ReplacedPatterns]:
    """``replace_pattern`` keeping only matches every ``match_filters(match, graph,
    pattern_graph)`` accepts; ``ignore_literals`` lets constants differ."""
    return _replace_pattern(gm, pattern, replacement, match_filters, ignore_literals)


def _replace_pattern(
    gm: GraphModule,
    pattern: Callable[..., Any] | Graph | GraphModule,
    replacement: Callable[..., Any] | Graph | GraphModule,
    match_filters: list[Callable[[InternalMatch, Graph, Graph], bool]] | None = None,
    ignore_literals: bool = False,
) -> list[ReplacedPatterns]:
    original_graph = gm.graph
    pattern_graph = _graph_of(pattern)
    matcher = SubgraphMatcher(pattern_graph, ignore_literals=ignore_literals)
    matches = [
        m
        for m in matcher.match(original_graph)
        if all(keep(m, original_graph, pattern_graph) for keep in match_filters or [])
    ]
    replacement_graph = _graph_of(replacement)
    replacement_placeholders = [n for n in replacement_graph.nodes if n.op == "placeholder"]
    # A node an earlier replacement removed, and the node that now stands for it.
    changed: dict[Node, Node] = {}
    results = []
    for match in matches:
        if len(match.placeholder_nodes) != len(replacement_placeholders):
            raise ValueError(
                f"the pattern has {len(match.placeholder_nodes)} inputs but the replacement has "
                f"{len(replacement_placeholders)}"
            )
        val_map: dict[Node, Any] = {}
        for rn, gn in zip(replacement_placeholders, match.placeholder_nodes):
            if isinstance(gn, Node):
                val_map[rn] = changed.get(gn, gn)
                if val_map[rn] is not gn:
                    index = match.placeholder_nodes.index(gn)
                    match.placeholder_nodes[index] = val_map[rn]
                    for pn, mapped in match.nodes_map.items():
                        if mapped is gn:
                            match.nodes_map[pn] = val_map[rn]
                            break
            else:
                val_map[rn] = gn

        # Insert before the first user of the matched outputs (or after the match's last node).
        users = {user for n in match.returning_nodes for user in n.users}
        insert_point = next((n for n in original_graph.nodes if n in users), None)
        if insert_point is None:
            following = None
            for n in reversed(original_graph.nodes):
                if n in match.returning_nodes:
                    insert_point = following
                    break
                following = n
        if insert_point is None:
            raise RuntimeError("The insert point can't be None")
        with original_graph.inserting_before(insert_point):
            copied = original_graph.graph_copy(replacement_graph, val_map)
        if isinstance(copied, Node):
            copied = (copied,)
        replacement_nodes = [v for v in val_map.values() if v not in match.placeholder_nodes]
        if len(match.returning_nodes) != len(copied):
            raise ValueError(
                f"the pattern returns {len(match.returning_nodes)} values but the replacement "
                f"returns {len(copied)}"
            )
        for gn, new_node in zip(match.returning_nodes, copied):
            gn.replace_all_uses_with(new_node)
            changed[gn] = new_node
        for pn in reversed(pattern_graph.nodes):
            if pn.op not in ("placeholder", "output"):
                original_graph.erase_node(match.nodes_map[pn])
        results.append(ReplacedPatterns(match.anchors[0], match.nodes_map, replacement_nodes))
    gm.recompile()
    if isinstance(replacement, nn.Module):
        _replace_attributes(gm, replacement)
    return results
