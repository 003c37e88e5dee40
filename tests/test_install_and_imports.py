"""What an install brings (pyproject.toml) and what ``import ember`` loads: optional packages are
imported when first used, so that ``import ember`` costs little more than ``import numpy``."""

import subprocess
import sys
from pathlib import Path

import pytest

PYPROJECT = Path(__file__).resolve().parents[1] / "pyproject.toml"

# imported by ember only inside the functions that need them
OPTIONAL = (
    "scipy",
    "matplotlib",
    "PIL",
    "tqdm",
    "numba",
    "llvmlite",
    "onnx",
    "onnxruntime",
    "mpi4py",
    "ml_dtypes",
    "threadpoolctl",
    "cupy",
    "tensorboard",
    "google.protobuf",
)

# what a PyTorch training script imports
NAMESPACES = (
    "ember",
    "ember.nn",
    "ember.nn.functional",
    "ember.optim",
    "ember.optim.lr_scheduler",
    "ember.autograd",
    "ember.amp",
    "ember.utils.data",
    "ember.distributed",
    "ember.func",
    "ember.linalg",
    "ember.fft",
    "ember.special",
    "ember.distributions",
    "ember.onnx",
    "ember.jit",
    "ember.profiler",
    "ember.cuda",
    "ember.cli",
)


def test_importing_ember_and_its_namespaces_imports_no_optional_package():
    code = (
        "import importlib, sys\n"
        f"for name in {NAMESPACES!r}:\n"
        "    importlib.import_module(name)\n"
        f"print(sorted(m for m in {OPTIONAL!r} if m in sys.modules))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"


def _pyproject() -> dict:
    tomllib = pytest.importorskip("tomllib")  # Python 3.11+
    if not PYPROJECT.exists():
        pytest.skip("run from an installed package: no pyproject.toml beside the tests")
    return tomllib.loads(PYPROJECT.read_text())


def _names(requirements) -> set:
    out = set()
    for requirement in requirements:
        if isinstance(requirement, str):
            name = requirement.split(";")[0]
            for stop in "<>=!~[ ":
                name = name.split(stop)[0]
            out.add(name.lower().replace("_", "-"))
    return out


def test_bfloat16_comes_with_the_default_install():
    # CPU autocast's dtype: every PyTorch user of autocast("cpu") meets it
    assert "ml-dtypes" in _names(_pyproject()["project"]["dependencies"])


def test_uv_run_installs_no_dependency_group_unless_asked():
    # `uv run ember demo` installs the demo's needs only; `uv run --group test pytest` the tools
    config = _pyproject()
    assert config["tool"]["uv"]["default-groups"] == []
    assert {"pytest", "hypothesis"} <= _names(config["dependency-groups"]["test"])
    assert not {"pytest", "hypothesis", "ruff"} & _names(config["project"]["dependencies"])


def test_test_group_brings_every_extra_that_runs_on_a_cpu():
    config = _pyproject()
    extras = set(config["project"]["optional-dependencies"]) - {"gpu"}
    (own,) = [r for r in config["dependency-groups"]["test"] if r.startswith("ember[")]
    assert set(own[len("ember[") : own.index("]")].split(",")) == extras
