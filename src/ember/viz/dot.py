"""The backward graph of a tensor as Graphviz DOT text, and SVG when ``dot`` is installed."""

from __future__ import annotations

import shutil
import subprocess

from ..autograd.graph import walk
from ..autograd.node import AccumulateGrad

INSTALL_HINT = (
    "Graphviz's `dot` was not found, so no SVG was drawn: install it (Debian/Ubuntu: "
    "`apt-get install graphviz`, macOS: `brew install graphviz`) and open the .dot file meanwhile."
)


def _quote(text: str) -> str:
    # a label may hold DOT's own "\n" line breaks: only quotes need escaping
    return '"' + text.replace('"', '\\"') + '"'


def make_dot(tensor, params: dict | None = None) -> str:
    """DOT text for the graph that produced ``tensor``: op nodes, leaves (named when ``params``
    maps names to parameters), edges labelled with the shape that flows along them.

    Example::
        >>> dot = ember.viz.make_dot(loss, params=dict(model.named_parameters()))
    """
    names = {id(p): n for n, p in (params or {}).items()}
    lines = [
        "digraph backward {",
        '  graph [rankdir=BT, fontname="Helvetica"];',
        '  node [shape=box, style="rounded,filled", fontname="Helvetica", fontsize=10];',
    ]
    root = tensor.grad_fn
    ids = {}
    for node in walk(tensor):
        ids[node] = f"n{len(ids)}"
        if isinstance(node, AccumulateGrad):
            leaf = node.variable
            label = names.get(id(leaf), "leaf") if leaf is not None else "leaf"
            if leaf is not None:
                label += f"\\n{tuple(leaf.shape)}"
            lines.append(f"  {ids[node]} [label={_quote(label)}, fillcolor=lightblue];")
        else:
            color = "darkolivegreen1" if node is root else "lightgrey"
            lines.append(f"  {ids[node]} [label={_quote(node.name())}, fillcolor={color}];")
    for node, node_id in ids.items():
        for edge in node._edges:
            if edge is None:
                continue
            child, nr = edge
            shape, dtype = child._meta[nr]
            label = f"{tuple(shape)}"
            lines.append(f"  {ids[child]} -> {node_id} [label={_quote(label)}, fontsize=8];")
    lines.append("}")
    return "\n".join(lines) + "\n"


def to_svg(dot_text: str) -> str | None:
    """Render DOT text with Graphviz; None (and no error) when ``dot`` is not installed."""
    exe = shutil.which("dot")
    if exe is None:
        return None
    done = subprocess.run(
        [exe, "-Tsvg"], input=dot_text, capture_output=True, text=True, check=True, timeout=120
    )
    return done.stdout
