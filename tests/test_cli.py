import json

import numpy as np
import pytest

import ember
from ember import cli


def test_demo_runs_end_to_end_and_writes_its_outputs(tmp_path, capsys):
    out = tmp_path / "run"
    assert cli.main(["demo", "--epochs", "3", "--out", str(out), "--no-progress"]) == 0
    printed = capsys.readouterr().out
    assert "held-out accuracy" in printed
    for name in ("model.safetensors", "curves.png", "graph.dot", "graph.html", "metrics.json"):
        assert (out / name).exists(), name
    metrics = json.loads((out / "metrics.json").read_text())
    assert metrics["held_out_accuracy"] > 0.85 and len(metrics["history"]["train_loss"]) == 3
    assert (out / "curves.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    dot = (out / "graph.dot").read_text()
    assert dot.startswith("digraph") and "AddmmBackward0" in dot and "LogSoftmaxBackward0" in dot
    assert '"1.weight\\n(128, 64) float32\\ngrad norm ' in dot and "(10, 128)" in dot
    assert "subgraph cluster_" in dot and 'label="1 (Linear)"' in dot  # clusters per module
    page = (out / "graph.html").read_text()
    assert page.startswith("<!DOCTYPE html>") and '"1.weight"' in page
    model = cli.build_model("mlp")
    model.load_state_dict(ember.load(out / "model.safetensors"))


def test_same_seed_same_run(tmp_path):
    results = []
    for name in ("a", "b"):
        cli.main(
            ["demo", "--epochs", "2", "--seed", "7", "--out", str(tmp_path / name), "--no-progress"]
        )
        results.append(json.loads((tmp_path / name / "metrics.json").read_text())["history"])
    assert results[0] == results[1]


def test_cnn_demo_learns(tmp_path):
    cli.main(
        [
            "demo",
            "--model",
            "cnn",
            "--epochs",
            "3",
            "--optimizer",
            "adamw",
            "--out",
            str(tmp_path),
            "--no-progress",
        ]
    )
    metrics = json.loads((tmp_path / "metrics.json").read_text())
    assert metrics["held_out_accuracy"] > 0.8


def test_help_documents_every_option(capsys):
    with pytest.raises(SystemExit):
        cli.main(["demo", "--help"])
    text = capsys.readouterr().out
    for option in (
        "--model",
        "--epochs",
        "--batch-size",
        "--lr",
        "--optimizer",
        "--seed",
        "--out",
        "--device",
    ):
        assert option in text


def test_digits_dataset_is_shipped():
    images, labels = ember.datasets.load_digits()
    assert images.shape == (1797, 8, 8) and images.dtype == ember.uint8
    assert sorted(set(labels.tolist())) == list(range(10))
    assert int(images.max()) == 16
    _ = np


def test_graph_picture_is_svg_with_graphviz_or_a_hint_without(tmp_path, capsys, monkeypatch):
    import shutil

    if shutil.which("dot"):
        cli.main(["demo", "--epochs", "1", "--out", str(tmp_path / "svg"), "--no-progress"])
        svg = (tmp_path / "svg" / "graph.svg").read_text()
        assert svg.lstrip().startswith("<?xml") and "AddmmBackward0" in svg
    monkeypatch.setattr(shutil, "which", lambda name: None)
    cli.main(["demo", "--epochs", "1", "--out", str(tmp_path / "dot"), "--no-progress"])
    assert "Graphviz's `dot` was not found" in capsys.readouterr().out
    assert not (tmp_path / "dot" / "graph.svg").exists()
    assert (tmp_path / "dot" / "graph.dot").exists()
