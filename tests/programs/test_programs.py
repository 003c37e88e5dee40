"""Programs in the style of pytorch/examples run with ``import ember as torch``, and the same
source runs under PyTorch with only the imports changed (when torch is installed)."""

from __future__ import annotations

import math
import sys
import types
from pathlib import Path

import pytest

HERE = Path(__file__).parent


def _load(name: str, library: str) -> types.ModuleType:
    """The program as a module, importing ``library`` where it says ember."""
    source = (HERE / f"{name}.py").read_text()
    if library == "torch":
        pytest.importorskip("torch")
        source = source.replace("ember", "torch")
    module = types.ModuleType(f"program_{name}_{library}")
    module.__file__ = str(HERE / f"{name}.py")
    sys.modules[module.__name__] = module
    exec(compile(source, module.__file__, "exec"), module.__dict__)
    return module


LIBRARIES = ["ember", "torch"]


@pytest.mark.parametrize("library", LIBRARIES)
def test_regression_fits_the_polynomial(library):
    first, last = _load("regression", library).main(["--max-steps", "1500"])
    assert last < first / 10


@pytest.mark.parametrize("library", LIBRARIES)
def test_time_sequence_prediction_with_lstm_cells_and_lbfgs(library):
    losses, test_loss = _load("time_sequence_prediction", library).main(
        ["--steps", "1", "--length", "16"]
    )
    assert losses[0] < 1.0 and math.isfinite(test_loss)


@pytest.mark.parametrize("library", LIBRARIES)
@pytest.mark.parametrize("model", ["LSTM", "GRU", "Transformer"])
def test_word_language_model_learns(library, model, tmp_path):
    args = ["--model", model, "--epochs", "3", "--lr", "5", "--save", str(tmp_path / "model.pt")]
    val_losses = _load("word_language_model", library).main(args)
    assert min(val_losses[1:]) < val_losses[0]


@pytest.mark.parametrize("library", LIBRARIES)
def test_vae_loss_falls(library):
    history = _load("vae", library).main(["--epochs", "2", "--samples", "256"])
    assert history[-1][1] < history[0][1] * 1.05 and history[-1][0] < 500


@pytest.mark.parametrize("library", LIBRARIES)
def test_mnist_cnn_learns_the_synthetic_classes(library):
    results = _load("mnist", library).main(["--epochs", "2", "--samples", "320"])
    (loss0, _acc0), (loss_end, acc_end) = results[0], results[-1]
    assert loss_end < loss0 and acc_end > 0.5


def test_programs_only_name_ember_in_their_imports():
    for path in HERE.glob("*.py"):
        if path.name.startswith(("test_", "__")):
            continue
        for line in path.read_text().splitlines():
            if "ember" in line:
                assert line.startswith(("import ember", "from ember")), (path.name, line)
