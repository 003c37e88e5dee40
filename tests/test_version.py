"""ember.version as torch.version: attributes, and the CUDA version CuPy reports."""

import subprocess
import sys
import types

import ember


def test_attributes_as_torch_version():
    v = ember.version
    assert v.__version__ == ember.__version__
    assert v.debug is False and v.hip is None
    assert isinstance(v.git_version, str)
    assert v.cuda is None or isinstance(v.cuda, str)


def test_cuda_version_from_cupy(monkeypatch):
    from ember import _backend, version

    runtime = types.SimpleNamespace(runtimeGetVersion=lambda: 12040)
    fake = types.SimpleNamespace(cuda=types.SimpleNamespace(runtime=runtime))
    monkeypatch.setattr(_backend, "_load_cupy", lambda: fake)
    assert version._cuda_version() == "12.4"
    monkeypatch.setattr(_backend, "_load_cupy", lambda: None)
    assert version._cuda_version() is None


def test_version_loads_lazily():
    code = "import sys, ember; assert 'ember.version' not in sys.modules; ember.version.debug"
    subprocess.run([sys.executable, "-c", code], check=True)
