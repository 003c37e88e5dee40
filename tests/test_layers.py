"""The layer contract of src/ember/README.md, checked by import-linter (pyproject.toml's
``[tool.importlinter]``): a lower layer never imports a higher one, inside functions included."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _lint(config: Path) -> subprocess.CompletedProcess:
    pytest.importorskip("importlinter")
    command = Path(sys.executable).with_name("lint-imports")
    return subprocess.run(
        [str(command), "--config", str(config), "--no-cache"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
    )


def test_the_layer_contract_holds():
    done = _lint(ROOT / "pyproject.toml")
    assert done.returncode == 0, done.stdout[-6000:] + done.stderr[-2000:]
    assert "0 broken" in done.stdout


def test_the_linter_sees_an_import_that_breaks_a_layer(tmp_path):
    # the op layer imports the autograd machinery: with the two layers swapped, that breaks
    config = tmp_path / "swapped.toml"
    config.write_text(
        '[tool.importlinter]\nroot_package = "ember"\n\n[[tool.importlinter.contracts]]\n'
        'name = "swapped"\ntype = "layers"\nlayers = ["ember.autograd", "ember.ops"]\n'
    )
    done = _lint(config)
    assert done.returncode != 0
    assert "ember.ops is not allowed to import ember.autograd" in done.stdout


def _import_knot():
    import importlib.util

    spec = importlib.util.spec_from_file_location(
        "import_knot", ROOT / "benchmarks" / "import_knot.py"
    )
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_no_import_knot_spans_two_layers_and_none_passes_60_modules():
    # issue 31: every import counted (in functions too), each knot stays inside one layer
    knot = _import_knot()
    _, graph = knot.import_graph()
    knots = [c for c in knot.strongly_connected(graph) if len(c) > 1]
    assert len(knots[0]) <= 60, knots[0]
    for members in knots:
        layers = {knot.layer_of(m) for m in members}
        assert len(layers) == 1, (sorted(layers), members)


def test_the_largest_import_knot_is_the_tensor_op_circle():
    # issue 31: the one circle the design allows (Tensor methods call ops that make Tensors) is
    # the largest; no namespace or system package (nn, amp, ...) forms a knot as large
    knot = _import_knot()
    _, graph = knot.import_graph()
    largest = knot.strongly_connected(graph)[0]
    assert {knot.layer_of(m) for m in largest} == {3}, largest
    assert "ember._tensor" in largest
