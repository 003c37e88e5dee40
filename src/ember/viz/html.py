"""``to_html``: a self-contained page that draws a ``make_dot`` graph in the browser.

The page carries the graph as JSON and lays it out itself (layers by longest path, order by
barycentre, modules kept together and boxed), so it needs neither Graphviz nor a network.
"""

from __future__ import annotations

import html
import json
from importlib import resources

from .dot import DotGraph


def to_html(graph: DotGraph, title: str = "ember backward graph") -> str:
    """A standalone HTML page (SVG drawn by its own script) for a graph from ``make_dot``.

    Example::
        >>> page = ember.viz.to_html(ember.viz.make_dot(loss))
        >>> open("graph.html", "w").write(page)
    """
    if not isinstance(graph, DotGraph):
        raise TypeError(
            "to_html expects the graph returned by ember.viz.make_dot (plain DOT text carries "
            f"no structure to lay out), got {type(graph).__name__}"
        )
    data = {
        "nodes": [
            {
                "id": n.id,
                "kind": n.kind,
                "lines": n.lines,
                "color": n.color,
                "module": [list(m) for m in n.module],
                "nonfinite": n.nonfinite,
                "detail": n.detail,
            }
            for n in graph.nodes
        ],
        "edges": [
            {"src": e.src, "dst": e.dst, "label": e.label, "saved": e.saved} for e in graph.edges
        ],
    }
    # "</" inside a script would end it early
    payload = json.dumps(data).replace("</", "<\\/")
    template = resources.files(__package__).joinpath("graph.html").read_text()
    return template.replace("__TITLE__", html.escape(title)).replace("__GRAPH__", payload)
