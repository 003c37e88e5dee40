"""Export reads each op's own signature even when autocast's trampoline is still on it (an
autocast region closed inside a profile leaves it until the op's next call)."""

import numpy as np
import pytest

import ember
import ember.nn as nn
import ember.nn.functional as F
from ember.amp import _patch
from ember.onnx import _export

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")


def _leave_autocast_trampoline_on_conv2d() -> None:
    from ember.profiler import profile

    prof = profile()
    region = ember.amp.autocast("cpu")
    region.__enter__()
    prof.__enter__()
    region.__exit__(None, None, None)
    prof.__exit__(None, None, None)


def test_unpatched_sees_through_autocast_trampoline():
    _leave_autocast_trampoline_on_conv2d()
    if not _patch._is_ours(F.conv2d.__code__):
        pytest.skip("autocast restored conv2d eagerly: nothing left to see through")
    names = list(_export._signature(F.conv2d).parameters)
    assert names[:3] == ["input", "weight", "bias"]


def test_export_after_autocast_inside_profile_matches_onnxruntime(tmp_path, monkeypatch):
    # signatures read fresh, as in a process whose first export comes after that region
    monkeypatch.setattr(_export, "_canonical", {})
    from ember.profiler import _ops

    monkeypatch.setattr(_ops, "_signatures", {})
    ember.manual_seed(0)
    model = nn.Sequential(nn.Conv2d(2, 3, 3, padding=1), nn.ReLU(), nn.Linear(5, 4)).eval()
    x = ember.randn(1, 2, 5, 5)
    _leave_autocast_trampoline_on_conv2d()
    path = tmp_path / "model.onnx"
    ember.onnx.export(model, (x,), path, input_names=["x"])
    session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    (got,) = session.run(None, {"x": x.numpy()})
    with ember.no_grad():
        expected = model(x).numpy()
    np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-5)
    # the trampoline's lazy restore still works after the export
    model(x)
    assert not _patch._is_ours(F.conv2d.__code__)
