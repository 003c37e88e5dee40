"""ember.viz: DOT content for an MLP and a CNN, clusters per module, depth limit, NaN marks."""

import math
import re
import shutil

import pytest

import ember
from ember import nn
from ember.viz import DotGraph, make_dot, to_html, to_svg, track_modules
from ember.viz.dot import COLORS, label_anchors, legend_entries


def _mlp():
    ember.manual_seed(0)
    return nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 3))


def _cnn():
    ember.manual_seed(0)
    return nn.Sequential(
        nn.Conv2d(1, 2, 3), nn.ReLU(), nn.MaxPool2d(2), nn.Flatten(), nn.Linear(2 * 3 * 3, 3)
    )


def _labels(graph: DotGraph) -> list:
    return ["\n".join(n.lines) for n in graph.nodes]


def _node(graph, first_line):
    return next(n for n in graph.nodes if n.lines[0] == first_line)


def test_mlp_nodes_name_ops_and_parameters_with_shapes():
    model = _mlp()
    loss = model(ember.randn(5, 4)).sum()
    graph = make_dot(loss, params=dict(model.named_parameters()))
    ops = [n.lines[0] for n in graph.nodes if n.kind in ("op", "root")]
    # torch's graph: each Linear is addmm(bias, x, weight.t()), the transpose a node of its own
    assert sorted(ops) == [
        "AddmmBackward0",
        "AddmmBackward0",
        "ReluBackward0",
        "SumBackward0",
        "TBackward0",
        "TBackward0",
    ]
    assert _node(graph, "SumBackward0").kind == "root"
    assert "out () float32" in _node(graph, "SumBackward0").lines
    leaves = {n.lines[0]: n.lines[1] for n in graph.nodes if n.kind == "leaf"}
    assert leaves == {
        "0.weight": "(8, 4) float32",
        "0.bias": "(8,) float32",
        "2.weight": "(3, 8) float32",
        "2.bias": "(3,) float32",
    }
    assert '"0.weight\\n(8, 4) float32"' in graph  # the DOT text itself


def test_edges_carry_shape_and_dtype():
    model = _mlp()
    loss = model(ember.randn(5, 4)).sum()
    graph = make_dot(loss, params=dict(model.named_parameters()))
    by_id = {n.id: n for n in graph.nodes}
    labelled = {(by_id[e.src].lines[0], by_id[e.dst].lines[0]): e.label for e in graph.edges}
    assert labelled[("ReluBackward0", "AddmmBackward0")] == "(5, 8) float32"
    assert labelled[("AddmmBackward0", "SumBackward0")] == "(5, 3) float32"
    assert labelled[("2.weight", "TBackward0")] == "(3, 8) float32"
    transposed = sorted(
        e.label
        for e in graph.edges
        if (by_id[e.src].lines[0], by_id[e.dst].lines[0]) == ("TBackward0", "AddmmBackward0")
    )
    assert transposed == ["(4, 8) float32", "(8, 3) float32"]  # each weight, transposed
    # an HTML-like label: the text in a cell right of a blank one, where the edge runs
    assert re.search(r"n\d+ -> n\d+ \[label=<<table .*<td>\(5, 8\) float32</td>", graph)


def test_nodes_carry_saved_bytes_and_show_saved_draws_them():
    x = ember.randn(10, 10, requires_grad=True)  # 400 bytes
    y = (x * x).tanh().sum()
    graph = make_dot(y)
    assert "saved 400 B" in _node(graph, "MulBackward0").lines  # x twice: one buffer
    assert "saved 400 B" in _node(graph, "TanhBackward0").lines  # its output
    detailed = make_dot(y, show_saved=True)
    saved = [n for n in detailed.nodes if n.kind == "saved"]
    assert sorted(n.lines[0] for n in saved) == ["result", "saved[0]", "saved[1]"]
    assert all(n.lines[1] == "(10, 10) float32" for n in saved)
    assert sum(e.saved for e in detailed.edges) == 3
    assert "style=dashed" in detailed
    y.backward()
    assert not any("saved" in line for n in make_dot(y).nodes for line in n.lines[1:])


def test_leaves_show_gradient_norms_after_backward():
    model = _mlp()
    loss = model(ember.randn(5, 4)).sum()
    params = dict(model.named_parameters())
    assert not any("grad norm" in line for line in _labels(make_dot(loss, params=params)))
    loss.backward()
    graph = make_dot(loss, params=params)
    for name, p in params.items():
        expected = math.sqrt(float((p.grad.double() ** 2).sum()))
        assert f"grad norm {expected:.4g}" in _node(graph, name).lines


def test_nan_and_inf_are_highlighted():
    w = ember.tensor([1.0, float("nan")], requires_grad=True)
    x = ember.tensor([0.0, 1.0], requires_grad=True)
    y = (w * x.log()).sum()  # log(0) = -inf is saved by the product
    graph = make_dot(y, params={"w": w, "x": x})
    assert _node(graph, "w").nonfinite and "NaN/inf!" in _node(graph, "w").lines
    assert not _node(graph, "x").nonfinite
    assert _node(graph, "MulBackward0").nonfinite
    assert _node(graph, "SumBackward0").nonfinite  # the output is NaN
    assert "#ff6b6b" in graph


def test_cnn_graph_has_conv_pool_and_linear_nodes():
    model = _cnn()
    out = model(ember.randn(2, 1, 8, 8)).sum()
    graph = make_dot(out, params=dict(model.named_parameters()))
    names = {n.lines[0] for n in graph.nodes}
    assert {"MaxPool2DWithIndicesBackward0", "ReluBackward0", "AddmmBackward0"} <= names
    assert {"0.weight", "0.bias", "4.weight", "4.bias"} <= names
    assert _node(graph, "0.weight").lines[1] == "(2, 1, 3, 3) float32"
    by_id = {n.id: n for n in graph.nodes}
    pool_in = [e for e in graph.edges if by_id[e.dst].lines[0] == "MaxPool2DWithIndicesBackward0"]
    assert [e.label for e in pool_in] == ["(2, 2, 6, 6) float32"]


def test_track_modules_groups_nodes_into_clusters_per_module():
    model = nn.Sequential(nn.Sequential(nn.Linear(4, 8), nn.Tanh()), nn.Linear(8, 2))
    x = ember.randn(3, 4)
    with track_modules(model):
        loss = model(x).sum()
    graph = make_dot(loss, params=dict(model.named_parameters()))
    assert graph.clusters == {
        "0": ("Sequential", ""),
        "0.0": ("Linear", "0"),
        "0.1": ("Tanh", "0"),
        "1": ("Linear", ""),
    }
    assert _node(graph, "TanhBackward0").module == (("0", "Sequential"), ("0.1", "Tanh"))
    assert _node(graph, "0.0.weight").module[-1] == ("0.0", "Linear")
    assert _node(graph, "SumBackward0").module == ()
    assert 'label="0.1 (Tanh)"' in graph and graph.count("subgraph cluster_") == 4
    # hooks are gone afterwards: a new forward is not tagged
    assert model(x).grad_fn._module is None


def test_graph_runs_top_down_with_each_module_label_left_of_its_first_row():
    model = nn.Sequential(nn.Sequential(nn.Linear(4, 8), nn.Tanh()), nn.Linear(8, 2))
    with track_modules(model):
        loss = model(ember.randn(3, 4)).sum()
    graph = make_dot(loss, params=dict(model.named_parameters()))
    assert "rankdir=TB" in graph  # inputs on top, the output at the bottom, as on the page
    ids = {n.lines[0]: n.id for n in graph.nodes}
    anchors = label_anchors(graph.nodes, graph.edges)
    # the weight passes through TBackward0: a row above the bias, alone in the first row
    assert anchors["0.0"] == [ids["0.0.weight"]]
    assert anchors["0.1"] == [ids["TanhBackward0"]]  # no parameters: its first node
    assert anchors["1"] == [ids["1.weight"]]
    assert anchors["0"] == anchors["0.0"]  # a container: its first submodule's row
    # the label is a text node that shares its row and sits left of it ...
    tanh = re.search(r"(cluster_\d+)_label \[label=\"0\.1 \(Tanh\)\"", graph).group(1)
    assert f"{{ rank=same; {tanh}_label; {ids['TanhBackward0']}; }}" in graph
    assert f"{tanh}_label -> {ids['TanhBackward0']} [style=invis];" in graph
    # ... except a container's: Graphviz keeps it at the top left of the box
    assert 'label="0 (Sequential)"; labelloc=t; labeljust=l;' in graph


def test_legend_names_the_colours_the_graph_uses():
    model = _mlp()
    loss = model(ember.randn(5, 4)).sum()
    params = dict(model.named_parameters())
    plain = make_dot(loss, params=params)
    assert legend_entries(plain.nodes) == [
        (COLORS["leaf"], "parameter or input (leaf)"),
        (COLORS["op"], "backward op"),
        (COLORS["root"], "output (the root)"),
    ]
    saved = make_dot(loss, params=params, show_saved=True)
    assert (COLORS["saved"], "saved tensor") in legend_entries(saved.nodes)
    w = ember.tensor([float("nan")], requires_grad=True)
    assert (COLORS["nonfinite"], "holds NaN/inf") in legend_entries(make_dot((w * 2).sum()).nodes)
    # in the DOT text: a table node ranked with the output, one coloured cell per entry
    legend = next(line for line in plain.splitlines() if line.startswith("  legend ["))
    for colour, text in legend_entries(plain.nodes):
        assert f'<td bgcolor="{colour}"' in legend and f">{text}</td>" in legend
    assert "{ rank=max; legend; }" in plain


def test_max_depth_collapses_deep_modules_so_a_large_graph_stays_readable():
    blocks = [
        nn.Sequential(nn.Linear(8, 8), nn.Tanh(), nn.Linear(8, 8), nn.ReLU()) for _ in range(8)
    ]
    model = nn.Sequential(*[nn.Sequential(*blocks[i : i + 2]) for i in range(0, 8, 2)])
    x = ember.randn(2, 8)
    with track_modules(model):
        y = x
        for _ in range(32):  # run the stack 32 times: over a thousand nodes
            y = model(y)
        loss = y.sum()
    full = make_dot(loss, params=dict(model.named_parameters()))
    assert len(full.nodes) > 1000
    top = make_dot(loss, params=dict(model.named_parameters()), max_depth=0)
    assert len(top.nodes) == 4 + 1  # four top-level modules and the sum
    assert {n.lines[0] for n in top.nodes if n.kind == "module"} == {
        "0 (Sequential)",
        "1 (Sequential)",
        "2 (Sequential)",
        "3 (Sequential)",
    }
    assert "384 ops, 8 parameters" in _node(top, "0 (Sequential)").lines  # 4 per Linear
    one = make_dot(loss, params=dict(model.named_parameters()), max_depth=1)
    assert len(one.nodes) == 8 + 1 and len(one.clusters) == 4


def test_to_svg_renders_or_returns_none(monkeypatch):
    model = _mlp()
    graph = make_dot(model(ember.randn(2, 4)).sum(), params=dict(model.named_parameters()))
    if shutil.which("dot"):
        svg = to_svg(graph)
        assert svg.lstrip().startswith("<?xml") and "AddmmBackward0" in svg and "0.weight" in svg
    monkeypatch.setattr(shutil, "which", lambda name: None)
    assert to_svg(graph) is None


@pytest.mark.skipif(shutil.which("dot") is None, reason="Graphviz's dot is not installed")
def test_svg_legend_shows_each_colour_with_its_meaning():
    model = _cnn()
    loss = model(ember.randn(2, 1, 8, 8)).sum()
    graph = make_dot(loss, params=dict(model.named_parameters()), show_saved=True)
    svg = to_svg(graph)
    legend = svg[svg.index("<title>legend</title>") :].split("</g>")[0]
    assert ">colours</text>" in legend
    for colour, text in legend_entries(graph.nodes):
        assert f'fill="{colour}"' in legend and f">{text}</text>" in legend


def test_to_html_is_self_contained():
    model = _mlp()
    with track_modules(model):
        loss = model(ember.randn(2, 4)).sum()
    page = to_html(make_dot(loss, params=dict(model.named_parameters())), title="mlp</script>")
    assert page.startswith("<!DOCTYPE html>")
    assert "http://" not in page.replace("http://www.w3.org/2000/svg", "")
    assert "https://" not in page and "<link" not in page
    assert '"AddmmBackward0"' in page and '"0.weight"' in page
    # the layout library inline, with its licence: the one file works when copied elsewhere
    assert "<script src" not in page
    assert "@dagrejs/dagre 3.1.3" in page and "Permission is hereby granted" in page
    assert "mlp&lt;/script&gt;" in page
    with pytest.raises(TypeError, match="make_dot"):
        to_html("digraph { a -> b }")
