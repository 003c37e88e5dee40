"""ember._einops.hook: einops finds ember's backend whichever is imported first, and
``import ember`` alone does not import einops."""

from __future__ import annotations

import subprocess
import sys

import pytest

pytest.importorskip("einops")


def _run(code: str) -> str:
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True
    )
    return done.stdout.strip()


def test_import_ember_does_not_import_einops():
    assert _run("import sys, ember; print('einops' in sys.modules)") == "False"


@pytest.mark.parametrize("first", ["ember", "einops"])
def test_einops_works_on_ember_tensors_whichever_is_imported_first(first):
    second = "einops" if first == "ember" else "ember"
    code = (
        f"import {first}, {second}\n"
        "x = ember.arange(6.0).reshape(2, 3)\n"
        "print(einops.rearrange(x, 'a b -> (b a)').tolist())"
    )
    assert _run(code) == "[0.0, 3.0, 1.0, 4.0, 2.0, 5.0]"


def test_import_ember_as_torch_with_einops_layers_torch_when_torch_is_absent():
    code = (
        "import importlib.util, sys\n"
        "sys.modules['torch'] = None\n"  # as if PyTorch were not installed
        "import ember as torch\n"
        "from einops.layers.torch import Rearrange\n"
        "layer = Rearrange('b c -> c b')\n"
        "print(isinstance(layer, torch.nn.Module), layer(torch.ones(2, 3)).shape)"
    )
    assert _run(code) == "True ember.Size([3, 2])"
