"""PyTorch's zip checkpoint format: ember writes what torch.load reads and reads what torch.save
writes; weights_only as PyTorch 2.6+; malformed files raise SerializationError."""

from __future__ import annotations

import io
import pickle
import zipfile

import numpy as np
import pytest

import ember
from ember.serialization import SerializationError


class Point:  # a user class for the allowlist tests
    def __init__(self, x=0):
        self.x = x


def _roundtrip_bytes(obj) -> io.BytesIO:
    buf = io.BytesIO()
    ember.save(obj, buf)
    buf.seek(0)
    return buf


def test_torch_reads_what_ember_writes(torch_mod):
    base = ember.arange(12.0).reshape(3, 4)
    obj = {
        "view": base[:, 1:3],
        "base": base,
        "param": ember.nn.Parameter(ember.ones(2)),
        "ints": ember.tensor([1, 2, 3]),
        "half": ember.ones(2, dtype=ember.float16),
        "bf16": ember.ones(2, dtype=ember.bfloat16),
        "flag": ember.tensor([True, False]),
        "epoch": 3,
        "nested": [ember.zeros(0), (ember.tensor(2.5),)],
    }
    loaded = torch_mod.load(_roundtrip_bytes(obj))
    assert loaded["view"].tolist() == base[:, 1:3].tolist()
    assert (
        loaded["view"].untyped_storage().data_ptr() == loaded["base"].untyped_storage().data_ptr()
    )
    assert isinstance(loaded["param"], torch_mod.nn.Parameter) and loaded["param"].requires_grad
    assert loaded["half"].dtype == torch_mod.float16 and loaded["bf16"].dtype == torch_mod.bfloat16
    assert loaded["flag"].tolist() == [True, False] and loaded["epoch"] == 3
    assert loaded["nested"][0].shape == (0,) and loaded["nested"][1][0].item() == 2.5


def test_ember_round_trip_of_any_picklable_object(tmp_path):
    path = tmp_path / "ckpt.pt"
    state = {"w": ember.randn(3, 3), "array": np.arange(3), "name": "run-1"}
    ember.save(state, path)
    with pytest.raises(pickle.UnpicklingError, match="Weights only load failed"):
        ember.load(path)
    loaded = ember.load(path, weights_only=False)
    assert loaded["w"].tolist() == state["w"].tolist()
    assert loaded["array"].tolist() == [0, 1, 2] and loaded["name"] == "run-1"


def test_whole_model_saved_and_loaded_back(tmp_path):
    model = ember.nn.Sequential(ember.nn.Linear(3, 4), ember.nn.ReLU(), ember.nn.Linear(4, 2))
    ember.save(model, tmp_path / "model.pt")
    restored = ember.load(tmp_path / "model.pt", weights_only=False)
    x = ember.randn(5, 3)
    np.testing.assert_array_equal(restored(x).detach().numpy(), model(x).detach().numpy())
    restored(x).sum().backward()
    assert restored[0].weight.grad is not None


def test_torch_model_pickle_loads_as_the_ember_class(torch_mod):
    net = torch_mod.nn.Linear(3, 2)
    buf = io.BytesIO()
    torch_mod.save(net, buf)
    buf.seek(0)
    loaded = ember.load(buf, weights_only=False)
    assert isinstance(loaded, ember.nn.Linear)
    x = np.random.default_rng(0).standard_normal((4, 3)).astype(np.float32)
    np.testing.assert_allclose(
        loaded(ember.tensor(x)).detach().numpy(),
        net(torch_mod.tensor(x)).detach().numpy(),
        rtol=1e-6,
    )


def test_weights_only_refuses_unknown_globals_with_torch_wording(tmp_path):
    ember.save({"p": Point(3)}, tmp_path / "p.pt")
    with pytest.raises(pickle.UnpicklingError) as info:
        ember.load(tmp_path / "p.pt")
    message = str(info.value)
    assert "Weights only load failed" in message
    assert f"Unsupported global: GLOBAL {__name__}.Point was not an allowed global" in message
    assert "add_safe_globals" in message


def test_safe_globals_context_and_registry(tmp_path):
    ember.save({"p": Point(3)}, tmp_path / "p.pt")
    with ember.serialization.safe_globals([Point]):
        assert ember.load(tmp_path / "p.pt")["p"].x == 3
    with pytest.raises(pickle.UnpicklingError):
        ember.load(tmp_path / "p.pt")
    ember.serialization.add_safe_globals([Point])
    try:
        assert Point in ember.serialization.get_safe_globals()
        assert ember.load(tmp_path / "p.pt")["p"].x == 3
    finally:
        ember.serialization.clear_safe_globals()
    assert ember.serialization.get_safe_globals() == []


def test_map_location_and_file_errors(tmp_path):
    ember.save({"w": ember.ones(2)}, tmp_path / "w.pt")
    assert ember.load(tmp_path / "w.pt", map_location="cpu")["w"].device == ember.device("cpu")
    seen = []
    ember.load(tmp_path / "w.pt", map_location=lambda t, loc: seen.append(loc) or t)
    assert seen == ["cpu"]
    with pytest.raises(FileNotFoundError):
        ember.load(tmp_path / "missing.pt")


def _rewrite(blob: bytes, name: str, payload: bytes, compress=zipfile.ZIP_STORED) -> bytes:
    src = zipfile.ZipFile(io.BytesIO(blob))
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as dst:
        for info in src.infolist():
            data = payload if info.filename == name else src.read(info.filename)
            kind = compress if info.filename == name else zipfile.ZIP_STORED
            dst.writestr(info.filename, data, compress_type=kind)
    return out.getvalue()


def test_malformed_checkpoints_raise_serialization_error():
    blob = _roundtrip_bytes({"w": ember.arange(4.0)}).getvalue()
    short = _rewrite(blob, "archive/data/0", b"\0" * 8)
    with pytest.raises(SerializationError, match="holds 8 bytes, expected 16"):
        ember.load(io.BytesIO(short))
    packed = _rewrite(blob, "archive/data/0", b"\0" * 16, zipfile.ZIP_DEFLATED)
    with pytest.raises(SerializationError, match="compressed"):
        ember.load(io.BytesIO(packed))
    truncated = _rewrite(blob, "archive/data.pkl", b"\x80\x02}q\x00")
    with pytest.raises(SerializationError, match="malformed"):
        ember.load(io.BytesIO(truncated))
    with pytest.raises(SerializationError, match="not a readable PyTorch checkpoint"):
        ember.load(io.BytesIO(b"PK\x03\x04garbage"))


def test_records_that_reach_past_their_storage_are_refused():
    from ember.serialization._torch_zip import _rebuild_tensor_v2

    storage = (np.zeros(4, dtype=np.float32), 4)
    with pytest.raises(SerializationError, match="reaches past its storage"):
        _rebuild_tensor_v2(storage, 2, (3,), (1,))
    with pytest.raises(SerializationError, match="invalid storage offset"):
        _rebuild_tensor_v2(storage, -1, (2,), (1,))
    with pytest.raises(SerializationError, match="negative size or stride"):
        _rebuild_tensor_v2(storage, 0, (2,), (-1,))


def test_safetensors_paths_still_write_safetensors(tmp_path):
    ember.save({"w": ember.ones(2)}, tmp_path / "w.safetensors", metadata={"k": "v"})
    raw = (tmp_path / "w.safetensors").read_bytes()
    assert raw[:4] != b"PK\x03\x04"
    assert ember.load(tmp_path / "w.safetensors")["w"].tolist() == [1.0, 1.0]
    with pytest.raises(ValueError, match="only stored in .safetensors"):
        ember.save({"w": ember.ones(2)}, tmp_path / "w.pt", metadata={"k": "v"})
