import json
import os
import signal
import stat

import numpy as np
import pytest

import ember
from ember import cli

from .helpers import process_marker, processes_marked, run_ember, start_ember


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
    _check_onnx_matches(out, model)


def _check_onnx_matches(out, model):
    """model.onnx runs in ONNX Runtime, any batch size, and agrees with the checkpoint."""
    ort = pytest.importorskip("onnxruntime")
    import numpy as np

    assert "onnxruntime.InferenceSession" in (out / "README.txt").read_text()
    session = ort.InferenceSession(str(out / "model.onnx"), providers=["CPUExecutionProvider"])
    images = np.random.default_rng(0).random((5, 1, 8, 8)).astype(np.float32)
    (logits,) = session.run(None, {"input": images})
    model.eval()
    expected = model(ember.tensor(images)).detach().numpy()
    np.testing.assert_allclose(logits, expected, rtol=1e-4, atol=1e-5)


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


def test_graph_picture_is_svg_with_graphviz_or_a_note_without(tmp_path, capsys, monkeypatch):
    import shutil

    if shutil.which("dot"):
        cli.main(["demo", "--epochs", "1", "--out", str(tmp_path / "svg"), "--no-progress"])
        svg = (tmp_path / "svg" / "graph.svg").read_text()
        assert svg.lstrip().startswith("<?xml") and "AddmmBackward0" in svg
        capsys.readouterr()
    monkeypatch.setattr(shutil, "which", lambda name: None)
    cli.main(["demo", "--epochs", "1", "--out", str(tmp_path / "dot"), "--no-progress"])
    printed = capsys.readouterr()
    assert "Graphviz" not in printed.out
    assert "ember demo: graph.svg skipped: Graphviz's `dot` was not found" in printed.err
    assert not (tmp_path / "dot" / "graph.svg").exists()
    assert (tmp_path / "dot" / "graph.dot").exists()


def test_the_graphviz_note_comes_after_the_run_on_stderr_and_points_at_graph_html(tmp_path):
    """Not in the middle of the progress line on stdout: after the results, on stderr."""
    out = tmp_path / "run"
    result = run_ember("demo", "--epochs", "2", "--out", out, env={"PATH": str(tmp_path)})
    assert result.returncode == 0, result.stderr
    assert "Graphviz" not in result.stdout and "graph.dot" not in result.stderr
    note = [line for line in result.stderr.splitlines() if "Graphviz" in line]
    assert note == [
        "ember demo: graph.svg skipped: Graphviz's `dot` was not found; graph.html draws the "
        "graph in a browser (for graph.svg, install Graphviz: `apt-get install graphviz` on "
        "Debian/Ubuntu, `brew install graphviz` on macOS)"
    ]
    assert (out / "graph.html").exists() and not (out / "graph.svg").exists()


def test_one_epoch_run_reads_well_and_says_how_to_load_the_model(tmp_path):
    out = tmp_path / "run"
    result = run_ember("demo", "--epochs", "1", "--out", out)
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[1].startswith("epoch 1/1: loss ") and ", held-out acc 0." in lines[1]
    assert " after 1 epoch (" in result.stdout  # not "1 epochs"
    checkpoint = out / "model.safetensors"
    snippet = (
        "import ember.cli\n"
        'model = ember.cli.build_model("mlp")\n'
        f'model.load_state_dict(ember.load("{checkpoint}"))\n'
    )
    assert lines[-4:] == ["load the model back in Python:"] + [
        "    " + line for line in snippet.splitlines()
    ]
    readme = (out / "README.txt").read_text()
    assert "".join("    " + line + "\n" for line in snippet.splitlines()) in readme
    assert "after 1 epoch (" in readme and "ember demo --model mlp --epochs 1" in readme
    namespace = {}
    exec(snippet, namespace)  # the three lines work as printed
    assert isinstance(namespace["model"], ember.nn.Sequential)
    # stderr is not a terminal here: no progress bar redrawing itself with carriage returns
    assert "\r" not in result.stderr


def test_outputs_honour_the_umask(tmp_path):
    old = os.umask(0o022)
    try:
        assert cli.main(["demo", "--epochs", "1", "--out", str(tmp_path / "run")]) == 0
    finally:
        os.umask(old)
    out = tmp_path / "run"
    assert stat.S_IMODE(out.stat().st_mode) == 0o755
    for path in out.iterdir():
        assert stat.S_IMODE(path.stat().st_mode) == 0o644, path.name


def test_a_second_run_replaces_the_results_and_drops_stale_ones(tmp_path, monkeypatch):
    out = tmp_path / "run"
    out.mkdir()
    (out / "graph.svg").write_text("<svg>from an earlier run</svg>")
    (out / "notes.txt").write_text("the user's own file")
    import shutil

    monkeypatch.setattr(shutil, "which", lambda name: None)  # no Graphviz: no graph.svg
    assert cli.main(["demo", "--epochs", "1", "--out", str(out)]) == 0
    names = sorted(p.name for p in out.iterdir())
    assert "graph.svg" not in names and "notes.txt" in names and "model.safetensors" in names
    assert sorted(p.name for p in tmp_path.iterdir()) == ["run"]  # the staging folder is gone


@pytest.mark.parametrize(
    ("stop", "code", "words"),
    [(signal.SIGINT, 130, "interrupted (Ctrl-C)"), (signal.SIGTERM, 143, "terminated (SIGTERM)")],
)
def test_an_interrupted_run_leaves_the_previous_results(tmp_path, stop, code, words):
    out = tmp_path / "run"
    out.mkdir()
    (out / "model.safetensors").write_bytes(b"a good model")
    process = start_ember("demo", "--epochs", "100000", "--out", out)
    assert process.stdout.readline().startswith("ember demo: mlp")
    assert process.stdout.readline().startswith("epoch 1/100000")  # training, graph written
    process.send_signal(stop)
    stdout, stderr = process.communicate(timeout=60)
    assert process.returncode == code
    assert stderr == f"ember demo: {words}; {out} was left as it was\n"
    assert sorted(p.name for p in out.iterdir()) == ["model.safetensors"]
    assert (out / "model.safetensors").read_bytes() == b"a good model"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["run"]


def test_a_diverging_run_says_so_exits_1_and_leaves_the_previous_results(tmp_path):
    out = tmp_path / "run"
    out.mkdir()
    (out / "model.safetensors").write_bytes(b"a good model")
    result = run_ember("demo", "--lr", "1e6", "--epochs", "1", "--out", out)
    assert result.returncode == 1
    assert result.stdout.splitlines()[-1].startswith("epoch 1/1: loss ")  # no results line
    assert result.stderr.count("\n") == 1 and "Traceback" not in result.stderr
    assert result.stderr.startswith("ember demo: training diverged: the last epoch's loss is ")
    assert "(guessing gives 2.30)" in result.stderr
    assert result.stderr.endswith(f"try a smaller --lr than 1e+06; {out} was left as it was\n")
    assert sorted(p.name for p in out.iterdir()) == ["model.safetensors"]
    assert (out / "model.safetensors").read_bytes() == b"a good model"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["run"]


def test_a_run_that_learns_is_not_called_diverged():
    history = {"train_loss": [2.1, 0.4], "test_loss": [2.0, 0.5], "test_acc": [0.5, 0.9]}
    assert cli.demo._divergence(history, lr=3e-3) is None
    for bad in (float("nan"), float("inf"), 5.0):
        history["test_loss"][-1] = bad
        assert "held-out loss" in cli.demo._divergence(history, lr=3e-3)


def test_a_failed_write_is_one_line_and_leaves_the_previous_results(tmp_path, monkeypatch, capsys):
    out = tmp_path / "run"
    out.mkdir()
    (out / "model.safetensors").write_bytes(b"a good model")

    def disk_full(history, path):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(cli.demo, "plot_curves", disk_full)
    assert cli.main(["demo", "--epochs", "1", "--out", str(out)]) == 1
    err = capsys.readouterr().err
    assert (
        err
        == f"ember demo: could not write the results to {out}: [Errno 28] No space left on device\n"
    )
    assert sorted(p.name for p in out.iterdir()) == ["model.safetensors"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["run"]


def test_data_parallel_demo_reaches_the_single_process_accuracy(tmp_path):
    out = tmp_path / "ddp"
    code = cli.main(
        ["demo", "--nproc", "2", "--epochs", "8", "--out", str(out), "--no-progress", "--seed", "1"]
    )
    assert code == 0
    metrics = json.loads((out / "metrics.json").read_text())
    assert metrics["held_out_accuracy"] > 0.9
    assert not (out / ".summary").exists()
    model = cli.build_model("mlp")
    model.load_state_dict(ember.load(out / "model.safetensors"))  # plain keys, no "module."


def _without_mpi4py(folder) -> dict:
    """An environment in which ``import mpi4py`` fails, as where the extra is not installed."""
    package = folder / "hide" / "mpi4py"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text(
        "raise ModuleNotFoundError(\"No module named 'mpi4py'\", name='mpi4py')\n"
    )
    return {"PYTHONPATH": str(folder / "hide")}


def test_data_parallel_without_the_distributed_extra_is_one_line_before_anything_starts(tmp_path):
    out = tmp_path / "run"
    out.mkdir()
    (out / "model.safetensors").write_bytes(b"a good model")
    env = _without_mpi4py(tmp_path)
    result = run_ember("demo", "--nproc", "2", "--epochs", "1", "--out", out, env=env)
    assert result.returncode == 2 and result.stdout == ""
    assert result.stderr == (
        "ember demo: --nproc 2: data-parallel training needs the distributed extra (mpi4py is "
        "not installed): pip install 'ember[distributed]', or leave out --nproc\n"
    )
    assert sorted(p.name for p in out.iterdir()) == ["model.safetensors"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["hide", "run"]  # no staging folder


def test_ctrl_c_in_a_data_parallel_run_is_one_line_and_stops_every_worker(tmp_path):
    if not ember.distributed.is_available():
        pytest.skip("mpi4py is not installed")
    out = tmp_path / "run"
    out.mkdir()
    (out / "model.safetensors").write_bytes(b"a good model")
    marker = process_marker()
    process = start_ember(
        "demo", "--nproc", "2", "--epochs", "100000", "--out", out, env=marker, own_session=True
    )
    # rank 0 says this once both workers have joined the process group
    assert process.stdout.readline().startswith("ember demo: mlp"), process.stderr.read()
    os.killpg(process.pid, signal.SIGINT)  # as Ctrl-C in the terminal
    stdout, stderr = process.communicate(timeout=60)
    assert process.returncode == 130
    assert stderr == f"ember demo: interrupted (Ctrl-C); {out} was left as it was\n"
    assert "BAD TERMINATION" not in stdout and "YOUR APPLICATION" not in stdout
    assert processes_marked(marker) == []
    assert (out / "model.safetensors").read_bytes() == b"a good model"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["run"]
