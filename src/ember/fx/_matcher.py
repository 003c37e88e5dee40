"""Finding a pattern graph inside a larger graph (for ``subgraph_rewriter``).

A match maps each pattern node to a graph node with the same op and target whose arguments
match in turn; pattern placeholders match any value (the same value wherever the placeholder
is reused). The search starts from the pattern's returned nodes ("anchors"), tries every
graph node that could stand for them, and follows arguments backwards. A match is kept only
if its inner nodes are used nowhere else (so replacing it changes nothing outside), fusing
it would not make a cycle, and it shares no node with an earlier match.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from .._tensor import Tensor
from .graph import Graph
from .graph_module import _get_attr
from .node import Node

__all__ = ["InternalMatch", "SubgraphMatcher"]


@dataclass
class InternalMatch:
    """One occurrence of the pattern: pattern node -> graph node, and the graph values the
    pattern's placeholders and returned nodes correspond to."""

    anchors: list[Node]
    nodes_map: dict[Node, Any] = field(default_factory=dict)
    placeholder_nodes: list[Any] = field(default_factory=list)
    returning_nodes: list[Node] = field(default_factory=list)

    def __copy__(self) -> InternalMatch:
        return InternalMatch(
            self.anchors,
            dict(self.nodes_map),
            list(self.placeholder_nodes),
            list(self.returning_nodes),
        )


class SubgraphMatcher:
    """Finds the occurrences of ``pattern`` in a graph (see the module docstring)."""

    def __init__(
        self,
        pattern: Graph,
        match_output: bool = False,
        match_placeholder: bool = False,
        remove_overlapping_matches: bool = True,
        ignore_literals: bool = False,
    ) -> None:
        self.pattern = pattern
        self.match_output = match_output
        self.match_placeholder = match_placeholder
        self.remove_overlapping_matches = remove_overlapping_matches
        self.ignore_literals = ignore_literals
        if len(pattern.nodes) == 0:
            raise ValueError("SubgraphMatcher cannot be initialized with an empty pattern")
        for node in pattern.nodes:
            if node.op != "output" and not node.users and node.op != "placeholder":
                raise ValueError(
                    "SubgraphMatcher cannot be initialized with an pattern with dead code"
                )
        self.pattern_placeholder_nodes = [n for n in pattern.nodes if n.op == "placeholder"]
        output_node = pattern.output_node()
        self.pattern_returning_nodes = output_node.all_input_nodes
        if match_output:
            self.pattern_anchors = [output_node]
        else:
            self.pattern_anchors = [n for n in output_node.all_input_nodes if len(n.users) == 1]

    def _nodes_are_equal(self, pn: Node, gn: Node) -> bool:
        if not self.match_placeholder and pn.op == "placeholder":
            return True
        if pn.op != gn.op:
            return False
        if pn.op in ("placeholder", "output"):
            return True
        if pn.op == "get_attr":
            return self._attributes_match(pn, gn)
        return pn.target == gn.target

    def _attributes_match(self, pn: Node, gn: Node) -> bool:
        pn_value = _get_attr(pn.graph.owning_module, pn.target)
        gn_value = _get_attr(gn.graph.owning_module, gn.target)
        if type(pn_value) is not type(gn_value):
            return False
        if isinstance(pn_value, Tensor):
            return True
        raise RuntimeError(f"Unsupported type {pn_value} when matching attributes")

    def _match_literals(self, pn: Any, gn: Any, match: InternalMatch) -> bool:
        if isinstance(pn, Node):
            if pn.op != "placeholder":
                return False
            if pn in match.nodes_map:
                return match.nodes_map[pn] == gn
            match.nodes_map[pn] = gn
            return True
        if isinstance(gn, Node):
            return False
        try:
            return type(gn) is type(pn) and bool(gn == pn)
        except Exception:
            return False

    def _match_args(self, pattern_args: Any, graph_args: Any, match: InternalMatch) -> bool:
        if len(pattern_args) != len(graph_args):
            return False
        for pa, ga in zip(pattern_args, graph_args):
            if isinstance(pa, Node) and isinstance(ga, Node):
                matched = self._match_nodes(pa, ga, match)
            elif isinstance(pa, (list, tuple)) and isinstance(ga, (list, tuple)):
                matched = self._match_args(pa, ga, match)
            else:
                matched = self._match_literals(pa, ga, match) or self.ignore_literals
            if not matched:
                return False
        return True

    def _match_nodes(self, pn: Node, gn: Node, match: InternalMatch) -> bool:
        if pn in match.nodes_map:
            return match.nodes_map[pn] is gn
        if any(v is gn for v in match.nodes_map.values()):
            return False
        if not self._nodes_are_equal(pn, gn):
            return False
        saved = dict(match.nodes_map)
        match.nodes_map[pn] = gn
        if pn.op == "placeholder":
            return True
        same_shape = len(pn.args) == len(gn.args) and list(pn.kwargs) == list(gn.kwargs)
        if same_shape and self._match_args(
            [*pn.args, *pn.kwargs.values()], [*gn.args, *gn.kwargs.values()], match
        ):
            return True
        match.nodes_map.clear()
        match.nodes_map.update(saved)
        return False

    def _is_contained(self, nodes_map: dict[Node, Any]) -> bool:
        """Inner matched nodes (not returned by the pattern) are used only inside the match."""
        lookup = {gn: pn for pn, gn in nodes_map.items() if pn.op != "placeholder"}
        for gn, pn in lookup.items():
            if pn in self.pattern_returning_nodes:
                continue
            if any(user not in lookup for user in gn.users):
                return False
        return True

    def match(self, graph: Graph) -> list[InternalMatch]:
        """Every occurrence of the pattern in ``graph``, in the order found."""
        candidates = [
            (anchor, [n for n in graph.nodes if self._nodes_are_equal(anchor, n)])
            for anchor in self.pattern_anchors
        ]
        candidates = [(anchor, nodes) for anchor, nodes in candidates if nodes]
        matches: list[InternalMatch] = []

        def backtrack(index: int, current: InternalMatch) -> None:
            if index == len(candidates):
                current.placeholder_nodes = [
                    current.nodes_map[pn] for pn in self.pattern_placeholder_nodes
                ]
                current.returning_nodes = [
                    current.nodes_map[pn] for pn in self.pattern_returning_nodes
                ]
                matches.append(current)
                return
            anchor, nodes = candidates[index]
            for node in nodes:
                attempt = InternalMatch(current.anchors, dict(current.nodes_map))
                if self._match_nodes(anchor, node, attempt):
                    backtrack(index + 1, attempt)

        if candidates and len(candidates) == len(self.pattern_anchors):
            backtrack(0, InternalMatch(anchors=self.pattern_anchors))
        matches = [m for m in matches if self._is_contained(m.nodes_map)]
        matches = [m for m in matches if _forms_no_cycle(_compute_nodes(m))]
        if self.remove_overlapping_matches:
            matches = _without_overlaps(matches)
        return matches


def _compute_nodes(match: InternalMatch) -> list[Node]:
    return [gn for pn, gn in match.nodes_map.items() if pn.op not in ("placeholder", "output")]


def _forms_no_cycle(partition: list[Node]) -> bool:
    """Whether the nodes could become one node: no path leaves them and comes back in."""
    inside = set(partition)
    frontier = [user for node in partition for user in node.users if user not in inside]
    seen: set[Node] = set()
    while frontier:
        node = frontier.pop()
        if node in seen:
            continue
        seen.add(node)
        for user in node.users:
            if user in inside:
                return False
            frontier.append(user)
    return True


def _without_overlaps(matches: list[InternalMatch]) -> list[InternalMatch]:
    kept: list[InternalMatch] = []
    taken: set[Node] = set()
    for match in matches:
        nodes = _compute_nodes(match)
        if any(n in taken for n in nodes):
            continue
        kept.append(match)
        taken.update(nodes)
    return kept
