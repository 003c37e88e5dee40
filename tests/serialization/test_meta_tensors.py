"""Saving meta tensors: torch's ``_rebuild_meta_tensor_no_storage`` record (dtype, size,
strides, no storage), read back as meta tensors; files cross between ember and torch."""

import io
import zipfile

import pytest

import ember


def _saved(lib, obj) -> bytes:
    buffer = io.BytesIO()
    lib.save(obj, buffer)
    return buffer.getvalue()


def _state(lib):
    with lib.device("meta"):
        layer = lib.nn.Linear(4, 3)
    state = dict(layer.state_dict())
    state["counts"] = lib.empty(2, 5, dtype=lib.int64, device="meta")
    return state


def _summary(state) -> dict:
    return {
        k: (tuple(v.shape), str(v.dtype).split(".")[-1], v.device.type) for k, v in state.items()
    }


def test_meta_tensors_round_trip_without_data():
    state = _state(ember)
    state["cpu"] = ember.arange(3.0)
    data = _saved(ember, state)
    names = zipfile.ZipFile(io.BytesIO(data)).namelist()
    assert [n for n in names if "/data/" in n and not n.endswith("serialization_id")] == [
        "archive/data/0"  # the CPU tensor's storage only
    ]
    loaded = ember.load(io.BytesIO(data))
    assert _summary(loaded) == _summary(state)
    assert ember.equal(loaded["cpu"], ember.arange(3.0))


def test_a_meta_parameter_keeps_requires_grad():
    layer = ember.nn.Linear(2, 2, device="meta")
    loaded = ember.load(io.BytesIO(_saved(ember, {"p": layer.weight})), weights_only=False)
    assert isinstance(loaded["p"], ember.nn.Parameter) and loaded["p"].is_meta
    assert loaded["p"].requires_grad


def test_files_cross_between_ember_and_torch(torch_mod):
    expected = _summary(_state(torch_mod))
    assert _summary(torch_mod.load(io.BytesIO(_saved(ember, _state(ember))))) == expected
    assert _summary(ember.load(io.BytesIO(_saved(torch_mod, _state(torch_mod))))) == expected


def test_a_bad_meta_record_is_refused():
    from ember.serialization._errors import SerializationError
    from ember.serialization._rebuild import rebuild_meta_tensor_no_storage

    with pytest.raises(SerializationError, match="invalid dtype"):
        rebuild_meta_tensor_no_storage("float32", (2,), (1,))
    with pytest.raises(SerializationError, match="invalid size"):
        rebuild_meta_tensor_no_storage(ember.float32, (2.5,), (1,))
