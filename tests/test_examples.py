"""The examples run as they are (the PyTorch-style script only changes its import line)."""

import runpy
import sys
from pathlib import Path

EXAMPLES = Path(__file__).parent.parent / "examples"


def test_pytorch_style_script_trains(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    sys.path.insert(0, str(EXAMPLES))
    try:
        module = runpy.run_path(str(EXAMPLES / "pytorch_style_training.py"))
        accuracy = module["main"](epochs=3, out=str(tmp_path / "m.safetensors"))
    finally:
        sys.path.remove(str(EXAMPLES))
    assert accuracy > 0.9


def test_linear_regression_example_learns_the_line(capsys):
    runpy.run_path(str(EXAMPLES / "linear_regression.py"), run_name="__main__")
    out = capsys.readouterr().out
    assert "learned w = 2.0" in out and "b = 0.9" in out
