"""End to end: the HTML page of a graph, opened in headless Chromium, draws every node in its
colour, top-down like the SVG, with module boxes that nest or stay apart, edges that pass no
node, module label or edge label, arrowheads apart, and the whole graph fitted to the window
on load and after a resize. The geometry is read back from what the browser drew."""

import pytest

import ember
from ember import nn
from ember.viz import make_dot, to_html, track_modules
from ember.viz.dot import legend_entries
from tests.viz.browser import (
    contains,
    flows_top_down,
    needs_browser,
    overlap,
    overlaps_found,
    probe_page,
)
from tests.viz.graphs import GRAPHS, demo_graph

pytestmark = needs_browser


def _rgb(hex_colour: str) -> str:
    r, g, b = (int(hex_colour[i : i + 2], 16) for i in (1, 3, 5))
    return f"rgb({r}, {g}, {b})"


def test_page_draws_every_node_edge_and_module_in_its_colour(tmp_path):
    graph = demo_graph("cnn", show_saved=True)
    drawn = probe_page(to_html(graph), tmp_path)

    assert drawn["drawn"] == "true"
    assert sorted(drawn["nodes"]) == sorted(n.id for n in graph.nodes)
    assert len(drawn["edges"]) == len(graph.edges)
    assert sorted(drawn["clusters"]) == sorted(graph.clusters)
    assert drawn["status"].startswith(f"{len(graph.nodes)} nodes, {len(graph.edges)} edges")
    kinds = {n.kind for n in graph.nodes}
    assert {"root", "op", "leaf", "saved"} <= kinds
    for node in graph.nodes:
        assert drawn["fills"][node.id] == _rgb(node.color), (node.kind, node.lines[0])
    # the legend names each colour on the page, in the same words as the SVG's
    assert drawn["legend"] == [[_rgb(c), text] for c, text in legend_entries(graph.nodes)]
    assert [text for _, text in drawn["legend"]][:4] == [
        "parameter or input (leaf)",
        "backward op",
        "output (the root)",
        "saved tensor",
    ]


@pytest.mark.parametrize("show_saved", [False, True], ids=["plain", "saved"])
@pytest.mark.parametrize("kind", sorted(GRAPHS))
def test_layout_flows_top_down_and_nothing_overlaps(tmp_path, kind, show_saved):
    graph = GRAPHS[kind](show_saved)
    drawn = probe_page(to_html(graph), tmp_path)

    assert overlaps_found(drawn) == []
    assert flows_top_down(drawn)  # inputs on top, the output at the bottom, as in the SVG
    clusters, nodes = drawn["clusters"], drawn["nodes"]
    for a in clusters:
        for b in clusters:
            if a >= b:
                continue
            if b.startswith(a + ".") or a.startswith(b + "."):
                outer, inner = (a, b) if b.startswith(a + ".") else (b, a)
                assert contains(clusters[outer], clusters[inner]), (outer, inner)
            else:
                assert not overlap(clusters[a], clusters[b]), (a, b)
    # a node sits inside the boxes of its modules and outside every other module's box
    for n in graph.nodes:
        mine = {path for path, _ in n.module}
        for path, box in clusters.items():
            assert contains(box, nodes[n.id]) if path in mine else not overlap(box, nodes[n.id])
    # each module's label sits at the top of its box, in its first row
    for path, label in drawn["labels"].items():
        members = [nodes[n.id] for n in graph.nodes if path in {p for p, _ in n.module}]
        assert label[1] < min(m[1] for m in members) + 8, path


def _fits(screen: dict, max_scale: float = 1.5) -> None:
    canvas, graph = screen["canvas"], screen["graph"]
    assert contains([c + d for c, d in zip(canvas, (-1, -1, 1, 1))], graph), screen
    scale = float(screen["transform"].split("scale(")[1].rstrip(")"))
    width, height = canvas[2] - canvas[0], canvas[3] - canvas[1]
    fills = graph[2] - graph[0] >= 0.95 * width or graph[3] - graph[1] >= 0.95 * height
    assert fills or scale == pytest.approx(max_scale), screen


@pytest.mark.parametrize("kind", ["mlp", "cnn"])
def test_graph_fits_the_window_on_load_and_after_a_resize(tmp_path, kind):
    drawn = probe_page(to_html(demo_graph(kind)), tmp_path)
    _fits(drawn["fit"])
    _fits(drawn["narrow"])  # the probe narrows the canvas to 600 px and fires "resize"
    assert drawn["narrow"]["canvas"][2] - drawn["narrow"]["canvas"][0] == 600
    assert drawn["narrow"]["graph"][2] - drawn["narrow"]["graph"][0] < 600


def test_a_module_run_between_others_is_drawn_unboxed_without_overlaps(tmp_path):
    # a path that leaves a module and comes back into it: no box can hold the module without
    # edges crossing boxes, so the page draws the graph without boxes and says why
    ember.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 4), nn.Tanh())
    with track_modules(model):
        y = ember.randn(2, 4)
        for _ in range(3):
            y = model(y)
        loss = y.sum()
    graph = make_dot(loss, params=dict(model.named_parameters()))
    drawn = probe_page(to_html(graph), tmp_path)
    assert drawn["clusters"] == {} and drawn["labels"] == {}
    assert drawn["status"].endswith(
        "2 modules (not boxed: a module runs more than once, between others)"
    )
    assert sorted(drawn["nodes"]) == sorted(n.id for n in graph.nodes)
    assert overlaps_found(drawn) == [] and flows_top_down(drawn)
