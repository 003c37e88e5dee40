"""Headless Chromium for the viz tests: open a page, let a probe script read back what the
browser drew (boxes of nodes, module boxes and their labels, edge labels, points along every
edge, where the graph sits on the screen), and check that geometry for overlaps."""

from __future__ import annotations

import html
import json
import re
import shutil
import subprocess

import pytest

BROWSER = next(
    (shutil.which(b) for b in ("chromium", "chromium-browser", "google-chrome") if shutil.which(b)),
    None,
)
needs_browser = pytest.mark.skipif(
    BROWSER is None,
    reason="no headless Chromium (Debian: apt-get install chromium)",
)
WINDOW = (1400, 900)

# shared by both probes: boxes as [x0, y0, x1, y1] in the graph's own coordinates (the group
# that holds the drawing), and points every 2 px along a path
PROBE_HELPERS = """
const box = (el) => { const b = el.getBBox(); return [b.x, b.y, b.x + b.width, b.y + b.height]; };
const along = (path) => {
  const n = path.getTotalLength(), pts = [];
  for (let d = 0; d < n; d += 2) { const p = path.getPointAtLength(d); pts.push([p.x, p.y]); }
  const p = path.getPointAtLength(n); pts.push([p.x, p.y]);
  return pts;
};
const report = (out) => {
  const pre = document.createElement("pre");
  pre.id = "probe";
  pre.textContent = JSON.stringify(out);
  document.body.appendChild(pre);
};
"""

# for graph.html: also where the drawing sits in the window, before and after the window
# narrows (the page refits on resize)
HTML_PROBE = (
    "<script>(function () {"
    + PROBE_HELPERS
    + """
const canvas = document.getElementById("canvas"), view = document.getElementById("viewport");
const screen = () => {
  const c = canvas.getBoundingClientRect(), v = view.getBoundingClientRect();
  return { canvas: [c.left, c.top, c.right, c.bottom], graph: [v.left, v.top, v.right, v.bottom],
    transform: view.getAttribute("transform") };
};
const out = {
  nodes: Object.fromEntries([...document.querySelectorAll("g.node")].map(
    (g) => [g.dataset.id, box(g.querySelector("rect"))])),
  clusters: Object.fromEntries([...document.querySelectorAll("g.cluster")].map(
    (g) => [g.dataset.path, box(g.querySelector("rect"))])),
  labels: Object.fromEntries([...document.querySelectorAll("g.cluster")].map(
    (g) => [g.dataset.path, box(g.querySelector("text"))])),
  edges: [...document.querySelectorAll("g.edge")].map((g) => ({
    src: g.dataset.src, dst: g.dataset.dst, points: along(g.querySelector("path")),
    arrow: g.querySelector("path").hasAttribute("marker-end"),
    label: g.querySelector("text") ? box(g.querySelector("text")) : null })),
  legend: [...document.querySelectorAll("#legend span")].map((s) => [
    getComputedStyle(s.querySelector("i")).backgroundColor, s.textContent]),
  fills: Object.fromEntries([...document.querySelectorAll("g.node")].map(
    (g) => [g.dataset.id, getComputedStyle(g.querySelector("rect")).fill])),
  status: document.getElementById("status").textContent,
  drawn: document.getElementById("graph").getAttribute("data-drawn"),
  fit: screen(),
};
canvas.style.width = "600px";
window.dispatchEvent(new Event("resize"));
out.narrow = screen();
report(out);
})();</script>"""
)

# for Graphviz's SVG: nodes by their <title>, modules by their path (the text of a label
# before " ("); a module's label is the text of its label node "cluster_K_label" or, for a
# container, the cluster's own label; an edge has the corners of its arrowhead
SVG_PROBE = (
    "<script>(function () {"
    + PROBE_HELPERS
    + """
const title = (g) => g.querySelector("title").textContent;
const shape = (g) => g.querySelector("path, polygon, ellipse");
const nodes = {}, labels = {}, clusters = {}, names = {};
for (const g of document.querySelectorAll("g.node")) {
  const text = g.querySelector("text");
  if (title(g).endsWith("_label")) {
    labels[text.textContent.split(" (")[0]] = box(text);
    names[title(g).slice(0, -"_label".length)] = text.textContent.split(" (")[0];
  } else nodes[title(g)] = box(shape(g));
}
for (const g of document.querySelectorAll("g.cluster")) {
  const text = g.querySelector("text"); // a container's own label
  const path = text ? text.textContent.split(" (")[0] : names[title(g)];
  clusters[path] = box(shape(g));
  if (text) labels[path] = box(text);
}
const edges = [...document.querySelectorAll("g.edge")].filter((g) => g.querySelector("path"))
  .map((g) => {
    const [src, dst] = title(g).split("->");
    const head = g.querySelector("polygon");
    const text = g.querySelector("text");
    return { src, dst, points: along(g.querySelector("path")),
      head: head ? [...head.points].map((p) => [p.x, p.y]) : [], arrow: head !== null,
      label: text ? box(text) : null };
  });
report({ nodes, clusters, labels, edges });
})();</script>"""
)


def _dump_dom(page, tmp_path) -> str:
    done = subprocess.run(
        [
            BROWSER,
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--no-first-run",
            f"--window-size={WINDOW[0]},{WINDOW[1]}",
            f"--user-data-dir={tmp_path / 'profile'}",
            "--dump-dom",
            page.as_uri(),
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout


def _probe_result(dom: str) -> dict:
    found = re.search(r'<pre id="probe">(.*?)</pre>', dom, re.DOTALL)
    assert found, "the probe did not run: the page's script failed before it"
    return json.loads(html.unescape(found.group(1)))


def probe_page(page_html: str, tmp_path) -> dict:
    """Open a graph.html page (text) in Chromium; the geometry of what it drew."""
    page = tmp_path / "graph.html"
    page.write_text(page_html.replace("</body>", HTML_PROBE + "\n</body>"))
    return _probe_result(_dump_dom(page, tmp_path))


def probe_svg(svg: str, tmp_path) -> dict:
    """Open a Graphviz SVG (text) in Chromium; the geometry of what it drew."""
    page = tmp_path / "svg.html"
    inline = svg[svg.index("<svg") :]  # the XML prologue and doctype have no place in HTML
    page.write_text(f"<!DOCTYPE html><html><body>{inline}{SVG_PROBE}</body></html>")
    return _probe_result(_dump_dom(page, tmp_path))


# --- geometry ------------------------------------------------------------------------------


def overlap(a, b) -> bool:
    return a[0] < b[2] and b[0] < a[2] and a[1] < b[3] and b[1] < a[3]


def contains(outer, inner) -> bool:
    return (
        outer[0] <= inner[0]
        and outer[1] <= inner[1]
        and inner[2] <= outer[2]
        and inner[3] <= outer[3]
    )


def shrink(b, by: float):
    return (b[0] + by, b[1] + by, b[2] - by, b[3] - by)


def inside(p, b) -> bool:
    return b[0] < p[0] < b[2] and b[1] < p[1] < b[3]


def centre_y(b) -> float:
    return (b[1] + b[3]) / 2


def overlaps_found(geometry: dict, arrow_gap: float = 8.0) -> list[str]:
    """Every overlap in a drawn graph, as sentences (an empty list: none).

    Checked: node boxes against each other; every edge (its points every 2 px, and the corners
    of its arrowhead where it is drawn apart from the path, as Graphviz does) against the
    boxes of nodes other than its two ends, against every module label
    and every edge label, and against the boxes of modules that hold neither of its ends;
    module labels against nodes, edge labels and each other, and inside their own module's
    box; edge labels against nodes and each other; the arrowheads into a node at least
    ``arrow_gap`` apart (measured where their paths end), so that they do not merge.
    """
    nodes, labels = geometry["nodes"], geometry["labels"]
    clusters, edges = geometry["clusters"], geometry["edges"]
    edge_labels = [(f"{e['src']}->{e['dst']}", e["label"]) for e in edges if e["label"]]
    found = []
    ids = sorted(nodes)
    for i, a in enumerate(ids):
        for b in ids[i + 1 :]:
            if overlap(nodes[a], nodes[b]):
                found.append(f"nodes {a} and {b} overlap")
    # a node belongs to the modules whose boxes hold it (the drawing says, so that committed
    # pictures can be checked without their graph)
    homes = {n: {c for c, box in clusters.items() if contains(box, nodes[n])} for n in nodes}
    for e in edges:
        name = f"edge {e['src']}->{e['dst']}"
        ends = homes.get(e["src"], set()) | homes.get(e["dst"], set())
        obstacles = [
            (f"node {n}", shrink(b, 0.5)) for n, b in nodes.items() if n not in (e["src"], e["dst"])
        ]
        obstacles += [(f"the label of module {c}", shrink(b, 0.5)) for c, b in labels.items()]
        obstacles += [(f"the label of edge {k}", shrink(b, 0.5)) for k, b in edge_labels]
        obstacles += [(f"module {c}", shrink(b, 1.0)) for c, b in clusters.items() if c not in ends]
        for what, b in obstacles:
            hit = next((p for p in e["points"] + e.get("head", []) if inside(p, b)), None)
            if hit is not None:
                found.append(f"{name} runs through {what} at ({hit[0]:.0f}, {hit[1]:.0f})")
    for c, b in labels.items():
        if c in clusters and not contains(clusters[c], b):
            found.append(f"the label of module {c} sticks out of its box")
        for n, nb in nodes.items():
            if overlap(b, nb):
                found.append(f"the label of module {c} overlaps node {n}")
        for k, lb in edge_labels:
            if overlap(b, lb):
                found.append(f"the label of module {c} overlaps the label of edge {k}")
        for other, ob in labels.items():
            if other < c and overlap(b, ob):
                found.append(f"the labels of modules {other} and {c} overlap")
    for i, (k, b) in enumerate(edge_labels):
        for n, nb in nodes.items():
            if overlap(b, nb):
                found.append(f"the label of edge {k} overlaps node {n}")
        for k2, b2 in edge_labels[i + 1 :]:
            if overlap(b, b2):
                found.append(f"the labels of edges {k} and {k2} overlap")
    heads: dict = {}
    for e in edges:
        if e["arrow"]:
            heads.setdefault(e["dst"], []).append((e["src"], e["points"][-1]))
    for n, ends in heads.items():
        for i, (a, p) in enumerate(ends):
            for b, q in ends[i + 1 :]:
                if abs(p[0] - q[0]) + abs(p[1] - q[1]) < arrow_gap:
                    found.append(f"the arrowheads of {a}->{n} and {b}->{n} meet")
    return found


def flows_top_down(geometry: dict) -> bool:
    """Every edge ends below where it starts: inputs on top, the output at the bottom."""
    nodes = geometry["nodes"]
    return all(centre_y(nodes[e["dst"]]) > centre_y(nodes[e["src"]]) for e in geometry["edges"])
