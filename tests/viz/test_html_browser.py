"""End to end: the HTML page of a graph, opened in headless Chromium, draws every node."""

import re
import shutil
import subprocess

import pytest

import ember
from ember import nn
from ember.viz import make_dot, to_html, track_modules

BROWSER = next(
    (shutil.which(b) for b in ("chromium", "chromium-browser", "google-chrome") if shutil.which(b)),
    None,
)
pytestmark = pytest.mark.skipif(BROWSER is None, reason="no headless Chromium installed")


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


def test_chromium_draws_every_node_edge_and_module_box(tmp_path):
    ember.manual_seed(0)
    model = nn.Sequential(
        nn.Conv2d(1, 2, 3), nn.ReLU(), nn.MaxPool2d(2), nn.Flatten(), nn.Linear(18, 3)
    )
    with track_modules(model):
        loss = model(ember.randn(2, 1, 8, 8)).square().mean()
    loss.backward(retain_graph=True)
    graph = make_dot(loss, params=dict(model.named_parameters()), show_saved=True)
    page = tmp_path / "graph.html"
    page.write_text(to_html(graph))
    dom = _rendered_dom(page, tmp_path)

    assert 'data-drawn="true"' in dom, "the page's script did not finish"
    drawn_nodes = re.findall(r'<g class="node [^"]*" data-id="([^"]+)"', dom)
    assert sorted(drawn_nodes) == sorted(n.id for n in graph.nodes)
    assert len(re.findall(r'<g class="edge( saved)?"><path d="M', dom)) == len(graph.edges)
    assert len(re.findall(r'<g class="cluster">', dom)) == len(graph.clusters)
    status = re.search(r'id="status">([^<]*)<', dom).group(1)
    assert status.startswith(f"{len(graph.nodes)} nodes, {len(graph.edges)} edges")
    # every box has a real size and position, and the labels are there
    for x, y, w, h in re.findall(
        r'<rect x="([-\d.]+)" y="([-\d.]+)" width="([\d.]+)" height="([\d.]+)" fill=', dom
    ):
        assert float(w) > 10 and float(h) > 10 and float(x) >= 0 and float(y) >= 0
    assert ">MaxPool2DWithIndicesBackward0<" in dom and ">0.weight<" in dom
    assert ">2 (MaxPool2d)<" in dom
