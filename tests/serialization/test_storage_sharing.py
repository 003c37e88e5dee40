"""Storage sharing survives a round trip: tensors that view one storage when saved view one
storage when loaded (a write through one shows in the other), and tied weights stay tied, for
files written by ember.save or torch.save and read by either."""

from __future__ import annotations

import io

import numpy as np

import ember
import ember.nn as nn


def _ember_file(obj) -> io.BytesIO:
    buf = io.BytesIO()
    ember.save(obj, buf)
    buf.seek(0)
    return buf


def _torch_file(torch, obj, **kwargs) -> io.BytesIO:
    buf = io.BytesIO()
    torch.save(obj, buf, **kwargs)
    buf.seek(0)
    return buf


def _views_of_one_base(lib):
    x = lib.arange(6.0)
    grid = x.reshape(2, 3)
    return {"a": x, "b": x[2:4], "column": grid[:, 1], "transposed": grid.t()}


def _assert_loaded_views_share(out) -> None:
    assert out["b"].tolist() == [2.0, 3.0]
    assert out["column"].tolist() == [1.0, 4.0]
    assert out["transposed"].stride() == (1, 3)
    out["b"][0] = 100.0  # writes through to the base and every other view
    assert out["a"].tolist() == [0.0, 1.0, 100.0, 3.0, 4.0, 5.0]
    out["a"].add_(1.0)
    assert out["b"].tolist() == [101.0, 4.0]
    assert out["column"].tolist() == [2.0, 5.0]
    assert out["transposed"].tolist() == [[1.0, 4.0], [2.0, 5.0], [101.0, 6.0]]


def test_views_saved_by_ember_load_in_ember_as_views_of_one_storage():
    _assert_loaded_views_share(ember.load(_ember_file(_views_of_one_base(ember))))


def test_views_saved_by_torch_load_in_ember_as_views_of_one_storage(torch_mod):
    _assert_loaded_views_share(ember.load(_torch_file(torch_mod, _views_of_one_base(torch_mod))))


def test_views_in_a_legacy_torch_file_load_in_ember_as_views_of_one_storage(torch_mod):
    blob = _torch_file(
        torch_mod, _views_of_one_base(torch_mod), _use_new_zipfile_serialization=False
    )
    _assert_loaded_views_share(ember.load(blob))


def test_views_saved_by_ember_load_in_torch_as_views_of_one_storage(torch_mod):
    _assert_loaded_views_share(torch_mod.load(_ember_file(_views_of_one_base(ember))))


def test_a_loaded_view_keeps_sharing_when_saved_again():
    once = ember.load(_ember_file(_views_of_one_base(ember)))
    _assert_loaded_views_share(ember.load(_ember_file(once)))


def test_a_loaded_tensor_owns_its_own_version_counter_as_in_torch():
    out = ember.load(_ember_file(_views_of_one_base(ember)))
    out["a"].add_(1.0)
    assert out["a"]._version == 1 and out["b"]._version == 0


def test_a_view_saved_alone_keeps_its_offset_into_the_whole_storage():
    x = ember.arange(6.0)
    loaded = ember.load(_ember_file(x[2:4]))
    assert loaded.tolist() == [2.0, 3.0]
    assert loaded.storage_offset() == 2


class TiedLM(nn.Module):
    """An embedding and an output layer that share one weight (weight tying)."""

    def __init__(self):
        super().__init__()
        self.embedding = nn.Embedding(10, 4)
        self.head = nn.Linear(4, 10, bias=False)
        self.head.weight = self.embedding.weight


def _torch_tied(torch):
    model = torch.nn.Sequential(torch.nn.Embedding(10, 4), torch.nn.Linear(4, 10, bias=False))
    model[1].weight = model[0].weight
    return model


def test_tied_weights_in_an_ember_state_dict_stay_tied():
    state = ember.load(_ember_file(TiedLM().state_dict()))
    assert np.shares_memory(state["embedding.weight"].numpy(), state["head.weight"].numpy())
    state["embedding.weight"][0, 0] = 7.0
    assert state["head.weight"][0, 0].item() == 7.0
    fresh = TiedLM()
    fresh.load_state_dict(state)
    assert fresh.head.weight is fresh.embedding.weight
    assert fresh.head.weight[0, 0].item() == 7.0


def test_a_whole_tied_ember_model_loads_tied():
    model = ember.load(_ember_file(TiedLM()), weights_only=False)
    assert model.head.weight is model.embedding.weight
    assert isinstance(model.head.weight, nn.Parameter)


def test_tied_weights_in_a_torch_state_dict_stay_tied_in_ember(torch_mod):
    state = ember.load(_torch_file(torch_mod, _torch_tied(torch_mod).state_dict()))
    assert np.shares_memory(state["0.weight"].numpy(), state["1.weight"].numpy())


def test_a_whole_tied_torch_model_loads_tied_in_ember(torch_mod):
    model = ember.load(_torch_file(torch_mod, _torch_tied(torch_mod)), weights_only=False)
    assert isinstance(model, nn.Sequential)
    assert model[1].weight is model[0].weight


def test_tied_weights_in_an_ember_state_dict_stay_tied_in_torch(torch_mod):
    state = torch_mod.load(_ember_file(TiedLM().state_dict()))
    assert state["embedding.weight"].data_ptr() == state["head.weight"].data_ptr()


def test_views_of_a_cuda_tensor_share_one_storage_in_the_file_and_after_loading(monkeypatch):
    import zipfile

    from tests import _fake_cupy

    _fake_cupy.install(monkeypatch, lenient_flags=True)  # CuPy's arrays, faked on NumPy
    x = ember.arange(6.0, device="cuda")
    blob = _ember_file({"a": x, "b": x[2:4], "column": x.reshape(2, 3)[:, 1]})
    with zipfile.ZipFile(io.BytesIO(blob.getvalue())) as archive:
        assert [n for n in archive.namelist() if "/data/" in n] == ["archive/data/0"]
    out = ember.load(blob)
    assert out["a"].is_cuda and out["b"].is_cuda
    out["b"][0] = 100.0
    assert out["a"].cpu().tolist() == [0.0, 1.0, 100.0, 3.0, 4.0, 5.0]
    assert out["column"].cpu().tolist() == [1.0, 4.0]
