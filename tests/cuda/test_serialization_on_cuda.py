"""ember.save / ember.load of CUDA tensors (fake CuPy): the storage's location ("cuda:0") is
recorded as torch records it, load puts tensors back there, and map_location overrides."""

import io

import numpy as np
import pytest

import ember
import ember.nn as nn
from ember import _backend

NO_CUDA = "Attempting to deserialize object on a CUDA device but"


def _saved(obj) -> io.BytesIO:
    buf = io.BytesIO()
    ember.save(obj, buf)
    buf.seek(0)
    return buf


def test_load_restores_cuda_tensors_and_parameters(fake_cuda):
    layer = nn.Linear(3, 2).cuda()
    out = ember.load(_saved({"w": ember.arange(4.0, device="cuda"), "c": ember.ones(2)}))
    assert out["w"].is_cuda and out["w"].cpu().tolist() == [0.0, 1.0, 2.0, 3.0]
    assert out["c"].device == ember.device("cpu")
    params = ember.load(_saved(layer.weight), weights_only=False)
    assert isinstance(params, nn.Parameter) and params.is_cuda and params.requires_grad
    assert params.is_leaf
    np.testing.assert_array_equal(
        params.detach().cpu().numpy(), layer.weight.detach().cpu().numpy()
    )
    grad_leaf = ember.load(_saved(ember.ones(2, device="cuda", requires_grad=True)))
    assert grad_leaf.is_cuda and grad_leaf.requires_grad and grad_leaf.is_leaf


def test_map_location_forms(fake_cuda):
    blob = _saved({"g": ember.full((2,), 3.0, device="cuda"), "c": ember.ones(2)}).getvalue()

    def load(map_location):
        return ember.load(io.BytesIO(blob), map_location=map_location)

    for target in ("cpu", ember.device("cpu")):
        assert {t.device.type for t in load(target).values()} == {"cpu"}
    assert all(t.is_cuda for t in load("cuda").values())
    mapped = load({"cuda:0": "cpu"})
    assert mapped["g"].device.type == "cpu" and mapped["g"].tolist() == [3.0, 3.0]
    assert load({"cpu": "cuda:0"})["c"].is_cuda and load({"cpu": "cuda:0"})["g"].is_cuda
    seen = []
    kept = load(lambda t, location: seen.append(location))  # None: the saved location
    assert sorted(seen) == ["cpu", "cuda:0"]
    assert kept["g"].is_cuda and not kept["c"].is_cuda
    assert load(lambda t, location: t.cpu())["g"].device.type == "cpu"


def test_load_without_cuda_raises_torchs_error(fake_cuda, monkeypatch):
    blob = _saved({"g": ember.ones(2, device="cuda")}).getvalue()
    monkeypatch.setattr(_backend, "cuda_available", lambda: False)
    with pytest.raises(RuntimeError, match=NO_CUDA + r" ember.cuda.is_available\(\) is False"):
        ember.load(io.BytesIO(blob))
    assert ember.load(io.BytesIO(blob), map_location="cpu")["g"].tolist() == [1.0, 1.0]


def test_torch_reads_the_cuda_location_ember_writes(fake_cuda, torch_mod):
    blob = _saved({"g": ember.arange(3.0, device="cuda")}).getvalue()
    if not torch_mod.cuda.is_available():
        with pytest.raises(RuntimeError, match=NO_CUDA + r" torch.cuda.is_available\(\) is False"):
            torch_mod.load(io.BytesIO(blob))
    seen = []
    out = torch_mod.load(io.BytesIO(blob), map_location=lambda s, loc: seen.append(loc) or s)
    assert seen == ["cuda:0"] and out["g"].tolist() == [0.0, 1.0, 2.0]
