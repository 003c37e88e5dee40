"""The backward graph of a tensor as Graphviz DOT text, and SVG when ``dot`` is installed."""

from __future__ import annotations

import html
import shutil
import subprocess
from dataclasses import dataclass

from .. import _dtype as dt
from .._memory_scope import format_bytes as _fmt_bytes
from ..autograd.anomaly import isfinite_all
from ..autograd.graph import saved_arrays, saved_bytes, walk
from ..autograd.node import AccumulateGrad

INSTALL_HINT = (
    "Graphviz's `dot` was not found, so no SVG was drawn: install it (Debian/Ubuntu: "
    "`apt-get install graphviz`, macOS: `brew install graphviz`) and open the .dot file meanwhile."
)

# hex, not Graphviz colour names: the same values go to the HTML page, and browsers do not
# know names such as "darkolivegreen1" (an unknown fill is drawn black)
COLORS = {
    "op": "#d3d3d3",
    "root": "#caff70",
    "leaf": "#add8e6",
    "saved": "#ffa500",
    "module": "#ffffe0",
    "nonfinite": "#ff6b6b",
}
# what each colour means, in the order the legends (SVG and HTML) list them
LEGEND = {
    "leaf": "parameter or input (leaf)",
    "op": "backward op",
    "root": "output (the root)",
    "saved": "saved tensor",
    "module": "collapsed module",
    "nonfinite": "holds NaN/inf",
}


@dataclass
class GraphNode:
    id: str
    kind: str  # op, root, leaf, saved, module (a collapsed module)
    lines: list
    module: tuple = ()  # ((path, class name), ...) of the clusters it sits in
    nonfinite: bool = False
    detail: str = ""  # a longer description (HTML tooltip)

    @property
    def color(self) -> str:
        return COLORS["nonfinite"] if self.nonfinite else COLORS[self.kind]


@dataclass
class GraphEdge:
    src: str  # the input side
    dst: str  # the node that consumes it
    label: str = ""
    saved: bool = False  # a saved tensor's dashed edge


class DotGraph(str):
    """DOT text (a ``str``) that also carries the graph it describes, for ``to_html``."""

    nodes: list = []
    edges: list = []
    clusters: dict = {}  # module path -> (class name, parent path)

    @property
    def source(self) -> str:
        return str(self)

    def save(self, path: str) -> str:
        with open(path, "w") as f:
            f.write(self)
        return path


def _shape_text(shape, dtype) -> str:
    name = getattr(dtype, "name", str(dtype))
    return f"{tuple(shape)} {name}" if dtype is not None else f"{tuple(shape)}"


def _nonfinite(data) -> bool:
    return dt.is_floating_array_dtype(data.dtype) and data.size > 0 and not bool(isfinite_all(data))


def _grad_norm(t) -> float | None:
    return None if t._grad is None else float(t._grad.double().norm())


def _describe(tensor, params, show_saved) -> tuple[list, list]:
    names = {id(p): n for n, p in (params or {}).items()}
    root = tensor.grad_fn
    nodes, edges, ids = [], [], {}
    order = walk(tensor)
    for node in order:
        ids[node] = f"n{len(ids)}"
    for node in order:
        nid = ids[node]
        module = node._module or ()
        if isinstance(node, AccumulateGrad):
            leaf = node.variable
            name = names.get(id(leaf), "leaf") if leaf is not None else "(freed leaf)"
            lines = [name]
            bad = False
            if leaf is not None:
                lines.append(_shape_text(leaf.shape, leaf.dtype))
                norm = _grad_norm(leaf)
                if norm is not None:
                    lines.append(f"grad norm {norm:.4g}")
                bad = _nonfinite(leaf._data) or (
                    leaf._grad is not None and _nonfinite(leaf._grad._data)
                )
                if bad:
                    lines.append("NaN/inf!")
            if not module and name != "leaf" and "." in name:
                module = tuple(
                    (".".join(name.split(".")[: i + 1]), "")
                    for i in range(len(name.split(".")) - 1)
                )
            nodes.append(GraphNode(nid, "leaf", lines, module, bad, f"leaf {name}"))
        else:
            arrays = saved_arrays(node)
            lines = [node.name()]
            nbytes = saved_bytes([node])
            if nbytes:
                lines.append(f"saved {_fmt_bytes(nbytes)}")
            bad = any(_nonfinite(a) for a in arrays)
            kind = "op"
            if node is root:
                kind = "root"
                lines.append(f"out {_shape_text(tensor.shape, tensor.dtype)}")
                bad = bad or _nonfinite(tensor._data)
            if bad:
                lines.append("NaN/inf!")
            detail = f"{node.name()}: {len(arrays)} saved tensors, {_fmt_bytes(nbytes)}"
            nodes.append(GraphNode(nid, kind, lines, module, bad, detail))
            if show_saved:
                for i, data in enumerate(arrays):
                    sid = f"{nid}s{i}"
                    is_out = node._saved_out is not None and data is node._saved_out[0]
                    label = "result" if is_out else f"saved[{i}]"
                    text = [label, _shape_text(data.shape, _dtype_of(data.dtype))]
                    text.append(_fmt_bytes(int(data.nbytes)))
                    bad_saved = _nonfinite(data)
                    nodes.append(GraphNode(sid, "saved", text, module, bad_saved, label))
                    edges.append(GraphEdge(sid, nid, "", saved=True))
        for edge in node._edges:
            if edge is None:
                continue
            child, nr = edge
            shape, dtype = child._meta[nr]
            label = _shape_text(shape, _dtype_of(dtype) if dtype is not None else None)
            edges.append(GraphEdge(ids[child], nid, label))
    return nodes, edges


def _dtype_of(np_dtype):
    from .._dtype import FROM_NUMPY

    return FROM_NUMPY.get(np_dtype, np_dtype)


def _collapse(nodes: list, edges: list, max_depth: int) -> tuple[list, list]:
    """Draw every module nested deeper than ``max_depth`` as one node."""
    keep, rep, groups = [], {}, {}
    for n in nodes:
        if len(n.module) <= max_depth:
            keep.append(n)
            rep[n.id] = n.id
            continue
        path, cls = n.module[max_depth]
        group = groups.get(path)
        if group is None:
            label = f"{path} ({cls})" if cls else path
            group = groups[path] = GraphNode(
                f"m{len(groups)}", "module", [label], n.module[:max_depth], False, ""
            )
            group.counts = {"op": 0, "leaf": 0, "saved": 0, "root": 0}
            keep.append(group)
        group.counts[n.kind] += 1
        group.nonfinite = group.nonfinite or n.nonfinite
        if n.kind == "root":
            group.kind = "root"
        rep[n.id] = group.id
    for group in groups.values():
        c = group.counts
        ops, leaves = c["op"] + c["root"], c["leaf"]
        group.lines.append(f"{ops} op{'s' * (ops != 1)}, {leaves} parameter{'s' * (leaves != 1)}")
        group.detail = f"{group.lines[0]}: collapsed (max_depth={max_depth})"
        if group.nonfinite:
            group.lines.append("NaN/inf!")
    merged, seen = [], set()
    for e in edges:
        a, b = rep[e.src], rep[e.dst]
        if a == b or (a, b) in seen:
            continue
        seen.add((a, b))
        merged.append(GraphEdge(a, b, e.label, e.saved))
    return keep, merged


def label_anchors(nodes: list, edges: list) -> dict:
    """{module path: the nodes its label sits left of, in their row}, for the SVG and the page.

    A module's first row: of its nodes that no other node of it feeds, those on top (a node's
    depth is its longest path from an input; an input sits just above its first consumer, as
    the layouts rank it). The label goes left of their inputs (parameters) when they have
    some, else left of the first of them; there edges run around it, as around any node.
    """
    preds: dict = {n.id: [] for n in nodes}
    succs: dict = {n.id: [] for n in nodes}
    for e in edges:
        succs[e.src].append(e.dst)
        preds[e.dst].append(e.src)
    depth = dict.fromkeys(preds, 0)
    waiting = {i: len(p) for i, p in preds.items()}
    ready = [i for i, k in waiting.items() if k == 0]
    for i in ready:  # Kahn's order: the list grows while it is read
        for d in succs[i]:
            depth[d] = max(depth[d], depth[i] + 1)
            waiting[d] -= 1
            if waiting[d] == 0:
                ready.append(d)

    def level(i: str) -> int:
        return min(depth[d] for d in succs[i]) - 1 if succs[i] and not preds[i] else depth[i]

    members: dict = {}
    for n in nodes:
        for path, _ in n.module:
            members.setdefault(path, []).append(n.id)
    anchors = {}
    for path, ids in members.items():
        inside = set(ids)
        entries = [i for i in ids if not any(p in inside for p in preds[i])]
        top = min((level(i) for i in entries), default=0)
        first = [i for i in entries if level(i) == top]
        inputs = [i for i in first if not preds[i]]
        anchors[path] = inputs or (first or ids)[:1]
    return anchors


def legend_entries(nodes: list) -> list[tuple[str, str]]:
    """(colour, meaning) for each kind of node in ``nodes``, and for NaN/inf when one has it."""
    kinds = {n.kind for n in nodes} | ({"nonfinite"} if any(n.nonfinite for n in nodes) else set())
    return [(COLORS[kind], text) for kind, text in LEGEND.items() if kind in kinds]


def _legend_node(nodes: list) -> str:
    """A table node naming the colours, ranked with the output at the bottom of the picture."""
    rows = "".join(
        f'<tr><td bgcolor="{colour}" width="14" height="10"></td>'
        f'<td align="left">{html.escape(text)}</td></tr>'
        for colour, text in legend_entries(nodes)
    )
    table = (
        '<table border="0" cellborder="0" cellspacing="3" cellpadding="1">'
        f'<tr><td colspan="2" align="left"><b>colours</b></td></tr>{rows}</table>'
    )
    return (
        f'  legend [shape=box, style="rounded", color=grey70, fontsize=9, label=<{table}>];\n'
        "  { rank=max; legend; }"
    )


def _edge_label(text: str) -> str:
    """An edge label with 6 pt of room on its left, where the edge runs: a curving edge, or
    a viewer whose font is wider than Graphviz measured, would otherwise touch the text."""
    return (
        '<<table border="0" cellpadding="0" cellspacing="0"><tr><td width="6"></td>'
        f"<td>{html.escape(text)}</td></tr></table>>"
    )


def _quote(text: str) -> str:
    text = text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")
    return '"' + text + '"'


def _dot_text(nodes: list, edges: list) -> tuple[str, dict]:
    lines = [
        "digraph backward {",
        # top-down, inputs first and the output last, like torchviz and the HTML page
        '  graph [rankdir=TB, fontname="Helvetica", compound=true];',
        '  node [shape=box, style="rounded,filled", fontname="Helvetica", fontsize=10];',
        '  edge [fontname="Helvetica", fontsize=8];',
    ]
    by_id = {n.id: n for n in nodes}
    anchors_of = label_anchors(nodes, edges)
    # the cluster tree: module path -> (class name, child paths, member nodes)
    clusters: dict = {}
    top_members = []
    for n in nodes:
        if not n.module:
            top_members.append(n)
            continue
        parent = ""
        for path, cls in n.module:
            entry = clusters.setdefault(path, {"cls": cls, "parent": parent, "nodes": []})
            entry["cls"] = entry["cls"] or cls
            parent = path
        clusters[n.module[-1][0]]["nodes"].append(n)

    def node_line(n: GraphNode, indent: str) -> str:
        label = "\n".join(n.lines)
        shape = ", shape=ellipse" if n.kind == "saved" else ""
        shape = ", shape=box3d" if n.kind == "module" else shape
        return f'{indent}{n.id} [label={_quote(label)}, fillcolor="{n.color}"{shape}];'

    def emit(path: str, depth: int) -> None:
        entry = clusters[path]
        indent = "  " * (depth + 1)
        label = f"{path} ({entry['cls']})" if entry["cls"] else path
        name = f"cluster_{len(lines)}"
        lines.append(f"{indent}subgraph {name} {{")
        lines.append(f'{indent}  style="rounded"; color=grey50;')
        for n in entry["nodes"]:
            lines.append(node_line(n, indent + "  "))
        # Graphviz puts a cluster's own label where edges enter the box (the middle of its top
        # side, for a narrow box); a plain text node instead, left of the module's first row,
        # is a node that edges are routed around. A module whose first row lies in a submodule
        # (a container) keeps the cluster label, at the top left above its submodules' boxes:
        # dot cannot rank a node with nodes of another cluster.
        anchors = anchors_of[path]
        if all(by_id[a].module[-1][0] == path for a in anchors):
            # as tall as the row, its text at the top: the label reads as the box's title
            rows = max(len(by_id[a].lines) for a in anchors)
            height = max(0.5, (12 * rows + 8) / 72)  # inches: 12 pt a line of 10-pt text
            lines.append(
                f'{indent}  {name}_label [label={_quote(label)}, shape=plaintext, style="", '
                f"fontsize=10, fontcolor=grey30, labelloc=t, width=0, height={height:.3f}, "
                'margin="0.04,0.055"];'
            )
            lines.append(f"{indent}  {{ rank=same; {name}_label; {'; '.join(anchors)}; }}")
            for anchor in anchors:
                lines.append(f"{indent}  {name}_label -> {anchor} [style=invis];")
        else:
            lines.append(
                f"{indent}  label={_quote(label)}; labelloc=t; labeljust=l; fontsize=10; "
                "fontcolor=grey30;"
            )
        for child, sub in clusters.items():
            if sub["parent"] == path:
                emit(child, depth + 1)
        lines.append(f"{indent}}}")

    for n in top_members:
        lines.append(node_line(n, "  "))
    for path, entry in clusters.items():
        if entry["parent"] == "":
            emit(path, 0)
    for e in edges:
        attrs = [f"label={_edge_label(e.label)}"] if e.label else []
        if e.saved:
            attrs.append("style=dashed, arrowhead=none")
        lines.append(f"  {e.src} -> {e.dst} [{', '.join(attrs)}];")
    lines.append(_legend_node(nodes))
    lines.append("}")
    return "\n".join(lines) + "\n", {p: (v["cls"], v["parent"]) for p, v in clusters.items()}


def make_dot(
    tensor,
    params: dict | None = None,
    show_saved: bool = False,
    max_depth: int | None = None,
) -> DotGraph:
    """The backward graph behind ``tensor`` as DOT text (a ``DotGraph``, which is a ``str``).

    Op nodes carry PyTorch's node names and the bytes of their saved tensors; leaves carry
    their parameter name (``params=dict(model.named_parameters())``), shape, dtype and, after
    backward, the norm of their gradient; edges carry shape and dtype; NaN or inf values (in
    leaves, gradients, saved tensors, the output) turn a node red. Nodes recorded inside
    ``ember.viz.track_modules(model)`` are grouped into one cluster per module; modules nested
    deeper than ``max_depth`` are drawn as a single node each. ``show_saved=True`` adds a node
    for every saved tensor. The graph runs top-down, inputs first; each module's label is a
    text node left of the module's first row (``label_anchors``), and a legend node names the
    colours.

    Example::
        >>> with ember.viz.track_modules(model):
        ...     loss = loss_fn(model(x), y)
        >>> dot = ember.viz.make_dot(loss, params=dict(model.named_parameters()))
        >>> dot.save("graph.dot"); svg = ember.viz.to_svg(dot); page = ember.viz.to_html(dot)
    """
    nodes, edges = _describe(tensor, params, show_saved)
    if max_depth is not None:
        nodes, edges = _collapse(nodes, edges, max_depth)
    text, clusters = _dot_text(nodes, edges)
    graph = DotGraph(text)
    graph.nodes, graph.edges, graph.clusters = nodes, edges, clusters
    return graph


def to_svg(dot_text: str) -> str | None:
    """Render DOT text with Graphviz; None (and no error) when ``dot`` is not installed."""
    exe = shutil.which("dot")
    if exe is None:
        return None
    done = subprocess.run(
        [exe, "-Tsvg"], input=str(dot_text), capture_output=True, text=True, check=True, timeout=120
    )
    return done.stdout
