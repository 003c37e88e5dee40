"""The examples run as they are, write only into the folder they are given, and the
PyTorch-style script runs under PyTorch too with nothing but its import lines changed."""

import importlib.util
import os
import runpy
import subprocess
import sys
from pathlib import Path

import pytest

EXAMPLES = Path(__file__).parent.parent / "examples"
PYTORCH_STYLE = EXAMPLES / "pytorch_style_training.py"

# the only lines that differ between the ember and the PyTorch versions of the script
EMBER_TO_TORCH_IMPORTS = {
    "import ember as torch": "import torch",
    "import ember.nn as nn": "import torch.nn as nn",
    "import ember.nn.functional as F": "import torch.nn.functional as F",
    "from ember.utils.data import DataLoader, TensorDataset, random_split": (
        "from torch.utils.data import DataLoader, TensorDataset, random_split"
    ),
}


def _as_torch_script(source: str) -> str:
    lines = source.splitlines()
    swapped = [EMBER_TO_TORCH_IMPORTS.get(line, line) for line in lines]
    changed = [a for a, b in zip(lines, swapped) if a != b]
    assert sorted(changed) == sorted(EMBER_TO_TORCH_IMPORTS), "the import lines moved"
    # past the docstring, nothing else in the script names ember
    body = "\n".join(swapped).split('"""', 2)[2]
    assert "ember" not in body, [line for line in body.splitlines() if "ember" in line]
    return "\n".join(swapped) + "\n"


def _run(script: Path, *args: str, cwd: Path) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=str(EXAMPLES))
    done = subprocess.run(
        [sys.executable, str(script), *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return done


def _accuracies(stdout: str) -> list:
    return [float(line.rsplit(" ", 1)[1]) for line in stdout.splitlines() if "accuracy" in line]


def test_pytorch_style_script_trains(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    sys.path.insert(0, str(EXAMPLES))
    try:
        module = runpy.run_path(str(PYTORCH_STYLE))
        accuracy = module["main"](epochs=3, out_dir=str(tmp_path / "out"))
    finally:
        sys.path.remove(str(EXAMPLES))
    assert accuracy > 0.9
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == ["digits.npz", "model.pt"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out"]  # nothing else in the cwd


def test_pytorch_style_script_prints_the_epochs_mean_loss(tmp_path, monkeypatch, capsys):
    sys.path.insert(0, str(EXAMPLES))
    try:
        module = runpy.run_path(str(PYTORCH_STYLE))
        functional = module["F"]
        cross_entropy = functional.cross_entropy
        batches = []  # (loss, batch size) of every training step

        def recording_cross_entropy(logits, target, **kwargs):
            loss = cross_entropy(logits, target, **kwargs)
            batches.append((loss.item(), len(target)))
            return loss

        monkeypatch.setattr(functional, "cross_entropy", recording_cross_entropy)
        module["main"](epochs=1, out_dir=str(tmp_path / "out"))
    finally:
        sys.path.remove(str(EXAMPLES))
    mean = sum(v * n for v, n in batches) / sum(n for _, n in batches)
    assert abs(mean - batches[-1][0]) > 1e-3  # the last batch's loss would read differently
    line = next(x for x in capsys.readouterr().out.splitlines() if x.startswith("epoch 1:"))
    assert f"mean training loss {mean:.4f}," in line


def test_pytorch_style_script_writes_into_the_folder_it_is_given(tmp_path):
    done = _run(PYTORCH_STYLE, "--epochs", "1", "--out", str(tmp_path / "run"), cwd=tmp_path)
    assert f"writing into {tmp_path / 'run'}/" in done.stdout
    assert sorted(p.name for p in (tmp_path / "run").iterdir()) == ["digits.npz", "model.pt"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["run"]


def test_pytorch_style_script_differs_from_pytorch_only_in_its_imports():
    _as_torch_script(PYTORCH_STYLE.read_text())


@pytest.mark.skipif(importlib.util.find_spec("torch") is None, reason="torch is not installed")
def test_pytorch_style_script_runs_under_torch_with_only_the_imports_changed(tmp_path):
    script = tmp_path / "pytorch_style_training_torch.py"
    script.write_text(_as_torch_script(PYTORCH_STYLE.read_text()))
    torch_run = _run(script, "--epochs", "2", "--out", str(tmp_path / "torch"), cwd=tmp_path)
    ember_run = _run(PYTORCH_STYLE, "--epochs", "2", "--out", str(tmp_path / "ember"), cwd=tmp_path)
    torch_acc, ember_acc = _accuracies(torch_run.stdout), _accuracies(ember_run.stdout)
    assert len(torch_acc) == len(ember_acc) == 2
    # different random streams for init and shuffling: close, not equal
    assert torch_acc[-1] > 0.85 and ember_acc[-1] > 0.85
    import torch

    state = torch.load(tmp_path / "torch" / "model.pt")
    assert state["fc2.weight"].shape == (10, 64)


def test_linear_regression_example_learns_the_line(capsys):
    runpy.run_path(str(EXAMPLES / "linear_regression.py"), run_name="__main__")
    out = capsys.readouterr().out
    assert "learned w = 2.0" in out and "b = 0.9" in out
