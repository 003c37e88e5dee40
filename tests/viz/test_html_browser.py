"""End to end: the HTML page of a graph, opened in headless Chromium, draws every node, in
colours the browser knows, with module boxes that nest or stay apart, node boxes that never
overlap, and edges routed around the nodes."""

import re
import shutil
import subprocess

import pytest

import ember
from ember import nn
from ember.cli.demo import build_model
from ember.viz import make_dot, to_html, track_modules

BROWSER = next(
    (shutil.which(b) for b in ("chromium", "chromium-browser", "google-chrome") if shutil.which(b)),
    None,
)
pytestmark = pytest.mark.skipif(BROWSER is None, reason="no headless Chromium installed")

# run after the page's own script: writes what the browser computed into the DOM, so that
# --dump-dom shows the rendered colours, not only the attributes the script set
COMPUTED_STYLE_PROBE = """<script>
for (const rect of document.querySelectorAll("g.node rect")) {
  rect.setAttribute("data-computed-fill", getComputedStyle(rect).fill);
}
</script>
</body>"""


def _rendered_dom(page_path, tmp_path) -> str:
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
            f"--user-data-dir={tmp_path / 'profile'}",
            "--dump-dom",
            page_path.as_uri(),
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout


def _draw(graph, tmp_path) -> str:
    page = tmp_path / "graph.html"
    page.write_text(to_html(graph).replace("</body>", COMPUTED_STYLE_PROBE))
    dom = _rendered_dom(page, tmp_path)
    assert 'data-drawn="true"' in dom, "the page's script did not finish"
    return dom


def _graph_of(model, x, **kwargs):
    with track_modules(model):
        out = model(x)
        out = out[0] if isinstance(out, tuple) else out
        loss = out.square().mean()
    loss.backward(retain_graph=True)
    return make_dot(loss, params=dict(model.named_parameters()), **kwargs)


def _rgb(hex_colour: str) -> str:
    r, g, b = (int(hex_colour[i : i + 2], 16) for i in (1, 3, 5))
    return f"rgb({r}, {g}, {b})"


def _boxes(dom: str, group: str) -> dict:
    """{data-id or data-path: (x0, y0, x1, y1)} of the rects in `<g class="{group}...">`."""
    found = {}
    pattern = (
        rf'<g class="{group}[^"]*" data-(?:id|path)="([^"]*)">(?:<title>[^<]*</title>)?'
        r'<rect x="([-\d.e]+)" y="([-\d.e]+)" width="([\d.e]+)" height="([\d.e]+)"'
    )
    for key, x, y, w, h in re.findall(pattern, dom):
        x, y, w, h = map(float, (x, y, w, h))
        found[key] = (x, y, x + w, y + h)
    return found


def _overlap(a, b) -> bool:
    return a[0] < b[2] and b[0] < a[2] and a[1] < b[3] and b[1] < a[3]


def _contains(outer, inner) -> bool:
    return (
        outer[0] <= inner[0]
        and outer[1] <= inner[1]
        and inner[2] <= outer[2]
        and inner[3] <= outer[3]
    )


def _segment_crosses(p, q, box) -> bool:
    """An axis-parallel segment p-q passes through the inside of `box`."""
    x0, y0, x1, y1 = min(p[0], q[0]), min(p[1], q[1]), max(p[0], q[0]), max(p[1], q[1])
    return x0 < box[2] and box[0] < x1 + 1e-9 and y0 < box[3] and box[1] < y1 + 1e-9


def test_chromium_draws_every_node_edge_and_module_box(tmp_path):
    ember.manual_seed(0)
    model = nn.Sequential(
        nn.Conv2d(1, 2, 3), nn.ReLU(), nn.MaxPool2d(2), nn.Flatten(), nn.Linear(18, 3)
    )
    graph = _graph_of(model, ember.randn(2, 1, 8, 8), show_saved=True)
    dom = _draw(graph, tmp_path)

    drawn_nodes = re.findall(r'<g class="node [^"]*" data-id="([^"]+)"', dom)
    assert sorted(drawn_nodes) == sorted(n.id for n in graph.nodes)
    assert len(re.findall(r'<g class="edge( saved)?"><path d="M', dom)) == len(graph.edges)
    assert len(re.findall(r'<g class="cluster" data-path=', dom)) == len(graph.clusters)
    status = re.search(r'id="status">([^<]*)<', dom).group(1)
    assert status.startswith(f"{len(graph.nodes)} nodes, {len(graph.edges)} edges")
    # every box has a real size and position, and the labels are there
    for x0, y0, x1, y1 in _boxes(dom, "node").values():
        assert x1 - x0 > 10 and y1 - y0 > 10 and x0 >= 0 and y0 >= 0
    assert ">MaxPool2DWithIndicesBackward0<" in dom and ">0.weight<" in dom
    assert ">2 (MaxPool2d)<" in dom


def test_node_colours_are_rendered_as_given_not_black(tmp_path):
    ember.manual_seed(0)
    model = nn.Sequential(nn.Linear(3, 4), nn.ReLU(), nn.Linear(4, 1))
    graph = _graph_of(model, ember.randn(5, 3), show_saved=True)
    dom = _draw(graph, tmp_path)

    fills = dict(re.findall(r'data-id="([^"]+)">.*?data-computed-fill="([^"]+)"', dom))
    assert sorted(fills) == sorted(n.id for n in graph.nodes)
    kinds = {n.kind for n in graph.nodes}
    assert {"root", "op", "leaf", "saved"} <= kinds
    for node in graph.nodes:
        assert fills[node.id] == _rgb(node.color), (node.kind, node.lines[0])
        assert fills[node.id] != "rgb(0, 0, 0)"


def _mlp():
    return build_model("mlp"), ember.randn(4, 1, 8, 8)


def _cnn():
    return build_model("cnn"), ember.randn(4, 1, 8, 8)


def _lstm():
    return nn.Sequential(nn.LSTM(3, 4, num_layers=2, batch_first=True)), ember.randn(2, 3, 3)


def _transformer():
    layer = nn.TransformerEncoderLayer(d_model=8, nhead=2, dim_feedforward=16, batch_first=True)
    return nn.Sequential(layer), ember.randn(2, 3, 8)


@pytest.mark.parametrize("build", [_mlp, _cnn, _lstm, _transformer], ids=lambda f: f.__name__[1:])
@pytest.mark.parametrize("show_saved", [False, True], ids=["plain", "saved"])
def test_layout_keeps_modules_apart_nodes_apart_and_edges_off_nodes(tmp_path, build, show_saved):
    ember.manual_seed(0)
    model, x = build()
    graph = _graph_of(model, x, show_saved=show_saved)
    dom = _draw(graph, tmp_path)

    clusters = _boxes(dom, "cluster")
    assert sorted(clusters) == sorted(graph.clusters)
    for a in clusters:
        for b in clusters:
            if a >= b:
                continue
            nested = b.startswith(a + ".") or a.startswith(b + ".")
            if nested:
                outer, inner = (a, b) if b.startswith(a + ".") else (b, a)
                assert _contains(clusters[outer], clusters[inner]), (outer, inner)
            else:
                assert not _overlap(clusters[a], clusters[b]), (a, clusters[a], b, clusters[b])

    nodes = _boxes(dom, "node")
    assert sorted(nodes) == sorted(n.id for n in graph.nodes)
    ids = sorted(nodes)
    for i, a in enumerate(ids):
        for b in ids[i + 1 :]:
            assert not _overlap(nodes[a], nodes[b]), (a, nodes[a], b, nodes[b])
    # a node sits inside the boxes of its modules and outside every other module's box
    for n in graph.nodes:
        mine = {path for path, _ in n.module}
        for path, box in clusters.items():
            if path in mine:
                assert _contains(box, nodes[n.id]), (n.lines[0], path)
            else:
                assert not _overlap(box, nodes[n.id]), (n.lines[0], path)

    paths = re.findall(r'<g class="edge(?: saved)?"><path d="M([^"]+)"', dom)
    assert len(paths) == len(graph.edges)
    for edge, d in zip(graph.edges, paths):
        points = [tuple(map(float, p.split(","))) for p in d.split(" L")]
        for p, q in zip(points, points[1:]):
            # a routed edge is made of horizontal and vertical runs (a slanted one: no route)
            assert p[0] == q[0] or p[1] == q[1], (edge.src, edge.dst, d)
            for nid, box in nodes.items():
                if nid in (edge.src, edge.dst):
                    continue
                assert not _segment_crosses(p, q, box), (edge.src, edge.dst, nid)
