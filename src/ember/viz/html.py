"""``to_html``: a self-contained page that draws a ``make_dot`` graph in the browser.

The page carries the graph as JSON and the dagre layout library inline (``dagre.min.js``,
MIT, vendored next to this file), so it needs neither Graphviz nor a network and still works
when the one file is copied elsewhere. It draws top-down like ``to_svg``.
"""

from __future__ import annotations

import html
import json
import re
from importlib import resources

from .dot import DotGraph, label_anchors, legend_entries


def _modules_stay_together(nodes: list, edges: list) -> bool:
    """Whether no path leaves a module and comes back into it (as when a module runs several
    times with other modules in between). dagre's compound layout cannot box such a module
    without edges crossing boxes, and can take long to fail at it: the page draws it unboxed."""
    succs: dict = {}
    for e in edges:
        succs.setdefault(e.src, []).append(e.dst)
    members: dict = {}
    for n in nodes:
        for path, _ in n.module:
            members.setdefault(path, set()).add(n.id)
    for inside in members.values():
        outside = [d for s in inside for d in succs.get(s, ()) if d not in inside]
        seen = set(outside)
        while outside:
            for d in succs.get(outside.pop(), ()):
                if d in inside:
                    return False
                if d not in seen:
                    seen.add(d)
                    outside.append(d)
    return True


def to_html(graph: DotGraph, title: str = "ember backward graph") -> str:
    """A standalone HTML page for a graph from ``make_dot``: laid out by dagre (inline, so the
    one file works offline and when copied elsewhere), top-down like ``to_svg``, edges routed
    around nodes and labels, fitted to the window on load and on resize (the wheel zooms, a
    drag pans, "fit" or a double-click fits again), with a search box and a colour legend.

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
        "legend": legend_entries(graph.nodes),
        "labelAnchors": label_anchors(graph.nodes, graph.edges),
        "boxable": _modules_stay_together(graph.nodes, graph.edges),
    }
    files = resources.files(__package__)
    # "</" inside a script would end it early
    values = {
        "TITLE": html.escape(title),
        "GRAPH": json.dumps(data).replace("</", "<\\/"),
        "DAGRE": files.joinpath("dagre.min.js").read_text(),  # holds no "</"
    }
    # one pass, so that a title or a label that happens to read "__GRAPH__" stays text
    template = files.joinpath("graph.html").read_text()
    return re.sub(r"__(TITLE|GRAPH|DAGRE)__", lambda m: values[m.group(1)], template)
