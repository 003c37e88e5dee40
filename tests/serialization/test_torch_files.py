"""ember reads every file torch writes and torch reads back, and torch reads what ember writes:
Python values torch's weights-only loader allows, torch's own objects (dtype, Size, device),
big-endian records, legacy (non-zip) files, sparse tensors, uint16/32/64, tensors and
parameters with attributes, BatchNorm state dicts without num_batches_tracked."""

from __future__ import annotations

import collections
import io
import pickle
import zipfile

import numpy as np
import pytest

import ember
from ember.serialization import SerializationError


def _ember_file(obj, **kwargs) -> io.BytesIO:
    buf = io.BytesIO()
    ember.save(obj, buf, **kwargs)
    buf.seek(0)
    return buf


def _torch_file(torch, obj, **kwargs) -> io.BytesIO:
    buf = io.BytesIO()
    torch.save(obj, buf, **kwargs)
    buf.seek(0)
    return buf


# --- Python values -----------------------------------------------------------------------------
PYTHON_VALUES = {
    "set": {1, 2, 3},
    "complex": 1.5 - 2j,
    "bytes": b"\x00ab\xff",
    "bytearray": bytearray(b"\x00xy\xfe"),
    "Counter": collections.Counter("abracadabra"),
    "OrderedDict": collections.OrderedDict([("b", 1), ("a", [2, 3])]),
    "nested": {"lr": 0.1, "betas": (0.9, 0.999), "names": ["a", None, True], "big": 2**70},
}


@pytest.mark.parametrize("name", sorted(PYTHON_VALUES))
@pytest.mark.parametrize("legacy", [False, True], ids=["zip", "legacy"])
def test_python_values_torch_writes_load_in_ember(torch_mod, name, legacy):
    value = PYTHON_VALUES[name]
    blob = _torch_file(torch_mod, value, _use_new_zipfile_serialization=not legacy).getvalue()
    assert torch_mod.load(io.BytesIO(blob)) == value  # torch reads it back with weights_only
    loaded = ember.load(io.BytesIO(blob))
    assert loaded == value and type(loaded) is type(value)


@pytest.mark.parametrize("name", sorted(PYTHON_VALUES))
@pytest.mark.parametrize("legacy", [False, True], ids=["zip", "legacy"])
def test_python_values_ember_writes_load_in_torch(torch_mod, name, legacy):
    value = PYTHON_VALUES[name]
    loaded = torch_mod.load(_ember_file(value, _use_new_zipfile_serialization=not legacy))
    assert loaded == value and type(loaded) is type(value)


@pytest.mark.parametrize("name", sorted(PYTHON_VALUES))
@pytest.mark.parametrize("legacy", [False, True], ids=["zip", "legacy"])
def test_python_values_round_trip_in_ember(name, legacy):
    value = PYTHON_VALUES[name]
    loaded = ember.load(_ember_file(value, _use_new_zipfile_serialization=not legacy))
    assert loaded == value and type(loaded) is type(value)


def _zip_with_pickle(pickled: bytes) -> io.BytesIO:
    """A checkpoint written by ember.save with its data.pkl replaced by ``pickled``."""
    blob = _ember_file({"w": ember.arange(4.0)}).getvalue()
    out = io.BytesIO()
    with zipfile.ZipFile(io.BytesIO(blob)) as src, zipfile.ZipFile(out, "w") as dst:
        for info in src.infolist():
            data = pickled if info.filename.endswith("data.pkl") else src.read(info.filename)
            dst.writestr(info.filename, data, compress_type=zipfile.ZIP_STORED)
    out.seek(0)
    return out


def test_a_python_2_pickle_with_builtin_module_names_loads():
    # what Python 2's pickle wrote: __builtin__ for builtins, protocol 2
    pickled = (
        b"\x80\x02}q\x00(U\x01sc__builtin__\nset\n]q\x01(K\x01K\x02e\x85Rq\x02"
        b"U\x01cc__builtin__\ncomplex\nG?\xf0\x00\x00\x00\x00\x00\x00G\x00\x00\x00\x00\x00\x00"
        b"\x00\x00\x86Rq\x03u."
    )
    assert ember.load(_zip_with_pickle(pickled)) == {"s": {1, 2}, "c": 1 + 0j}


def test_torch_objects_torch_writes_load_as_embers(torch_mod):
    torch = torch_mod
    saved = {
        "dtype": torch.float16,
        "size": torch.Size([2, 3]),
        "cpu": torch.device("cpu"),
        "cuda1": torch.device("cuda", 1),
        "layout": torch.sparse_coo,
    }
    loaded = ember.load(_torch_file(torch, saved))
    assert loaded["dtype"] is ember.float16
    assert type(loaded["size"]) is ember.Size and loaded["size"] == (2, 3)
    assert loaded["cpu"] == ember.device("cpu") and loaded["cuda1"] == ember.device("cuda", 1)
    assert loaded["layout"] is ember.sparse_coo


def test_ember_objects_load_in_torch_as_torchs(torch_mod):
    torch = torch_mod
    saved = {
        "dtype": ember.float16,
        "size": ember.Size([2, 3]),
        "cpu": ember.device("cpu"),
        "cuda1": ember.device("cuda", 1),
        "layout": ember.sparse_coo,
        "strided": ember.strided,
    }
    loaded = torch.load(_ember_file(saved))  # weights_only: torch's names only
    assert loaded["dtype"] is torch.float16
    assert type(loaded["size"]) is torch.Size and loaded["size"] == (2, 3)
    assert loaded["cpu"] == torch.device("cpu") and loaded["cuda1"] == torch.device("cuda", 1)
    assert loaded["layout"] is torch.sparse_coo and loaded["strided"] is torch.strided


def test_ember_objects_round_trip_in_ember():
    saved = {"dtype": ember.bfloat16, "size": ember.Size([4]), "dev": ember.device("cpu")}
    loaded = ember.load(_ember_file(saved))
    assert loaded["dtype"] is ember.bfloat16 and type(loaded["size"]) is ember.Size
    assert loaded["dev"] == ember.device("cpu")


# --- big-endian records ---------------------------------------------------------------------
def _big_endian_copy(blob: bytes, component_sizes: dict) -> bytes:
    """``blob`` as a big-endian machine would write it: each storage record byteswapped (per
    component: a complex number swaps its real and imaginary halves separately, as torch does)
    and the byteorder record saying 'big'."""
    out = io.BytesIO()
    with zipfile.ZipFile(io.BytesIO(blob)) as src, zipfile.ZipFile(out, "w") as dst:
        for info in src.infolist():
            data = src.read(info.filename)
            if info.filename.endswith("/byteorder"):
                data = b"big"
            elif "/data/" in info.filename:
                size = component_sizes[info.filename.rsplit("/", 1)[1]]
                data = np.frombuffer(data, dtype=f"u{size}").byteswap().tobytes()
            dst.writestr(info.filename, data, compress_type=zipfile.ZIP_STORED)
    return out.getvalue()


def test_big_endian_records_are_byteswapped_as_torch_does(torch_mod):
    torch = torch_mod
    saved = {
        "f32": torch.tensor([1.5, -2.0, 3.25]),
        "f64": torch.tensor([1e300, -2.5], dtype=torch.float64),
        "f16": torch.tensor([0.5, 65504.0], dtype=torch.float16),
        "i64": torch.tensor([1, -2, 2**40]),
        "i16": torch.tensor([258, -3], dtype=torch.int16),
        "c64": torch.tensor([1 + 2j, -3.5j], dtype=torch.complex64),
        "bf16": torch.tensor([1.0, -0.5], dtype=torch.bfloat16),
        "u8": torch.tensor([1, 255], dtype=torch.uint8),
        "flag": torch.tensor([True, False]),
    }
    # storages are numbered in the order they are pickled
    sizes = dict(zip("012345678", [4, 8, 2, 8, 2, 4, 2, 1, 1]))
    blob = _big_endian_copy(_torch_file(torch, saved).getvalue(), sizes)
    by_torch = torch.load(io.BytesIO(blob))
    by_ember = ember.load(io.BytesIO(blob))
    for key, original in saved.items():
        assert by_torch[key].tolist() == original.tolist()  # the crafted file is right
        assert by_ember[key].tolist() == original.tolist(), key
    by_ember["f32"].add_(1.0)  # the swapped storage is ordinary memory
    assert by_ember["f32"].tolist() == [2.5, -1.0, 4.25]


def test_a_byteorder_record_other_than_little_or_big_is_refused():
    blob = _ember_file({"w": ember.ones(2)}).getvalue()
    out = io.BytesIO()
    with zipfile.ZipFile(io.BytesIO(blob)) as src, zipfile.ZipFile(out, "w") as dst:
        for info in src.infolist():
            data = src.read(info.filename)
            dst.writestr(info.filename, b"middle" if info.filename.endswith("byteorder") else data)
    with pytest.raises(SerializationError, match="Unknown endianness type: middle"):
        ember.load(io.BytesIO(out.getvalue()))


# --- legacy (non-zip) files -----------------------------------------------------------------
def test_legacy_files_torch_writes_load_in_ember(torch_mod):
    torch = torch_mod
    saved = {
        "w": torch.arange(6.0).reshape(2, 3),
        "half": torch.ones(2, dtype=torch.float16),
        "bf16": torch.tensor([1.5], dtype=torch.bfloat16),
        "param": torch.nn.Parameter(torch.tensor([1.0, 2.0])),
        "epoch": 3,
    }
    blob = _torch_file(torch, saved, _use_new_zipfile_serialization=False)
    assert blob.getvalue()[:2] == b"\x80\x02"  # not a zip
    loaded = ember.load(blob)  # weights_only, as torch allows for this format
    assert loaded["w"].tolist() == [[0.0, 1.0, 2.0], [3.0, 4.0, 5.0]]
    assert loaded["half"].dtype is ember.float16 and loaded["bf16"].tolist() == [1.5]
    assert isinstance(loaded["param"], ember.nn.Parameter) and loaded["param"].requires_grad
    assert loaded["epoch"] == 3


def test_legacy_files_ember_writes_load_in_torch(torch_mod):
    base = ember.arange(6.0)
    blob = _ember_file(
        {"a": base, "b": base[1:3], "p": ember.nn.Parameter(ember.ones(2))},
        _use_new_zipfile_serialization=False,
    )
    assert blob.getvalue()[:4] != b"PK\x03\x04"
    loaded = torch_mod.load(blob)
    assert loaded["b"].tolist() == [1.0, 2.0]
    loaded["b"][0] = 9.0
    assert loaded["a"][1].item() == 9.0
    assert isinstance(loaded["p"], torch_mod.nn.Parameter)


def test_a_legacy_file_with_code_is_refused_with_torchs_message(torch_mod):
    blob = _torch_file(torch_mod, {"f": np.float64}, _use_new_zipfile_serialization=False)
    with pytest.raises(pickle.UnpicklingError, match="Unsupported global: GLOBAL numpy.float64"):
        ember.load(blob)


def test_a_truncated_legacy_file_raises_serialization_error():
    blob = _ember_file({"w": ember.arange(8.0)}, _use_new_zipfile_serialization=False).getvalue()
    with pytest.raises(SerializationError):
        ember.load(io.BytesIO(blob[:-5]))


# --- sparse tensors -----------------------------------------------------------------------------
def test_a_sparse_coo_tensor_torch_writes_loads_in_ember(torch_mod):
    torch = torch_mod
    sparse = torch.sparse_coo_tensor([[0, 1, 1], [2, 0, 2]], [3.0, 4.0, 5.0], (2, 3))
    loaded = ember.load(_torch_file(torch, {"s": sparse, "c": sparse.coalesce()}))
    assert loaded["s"].layout is ember.sparse_coo
    assert loaded["s"].to_dense().tolist() == sparse.to_dense().tolist()
    assert not loaded["s"].is_coalesced() and loaded["c"].is_coalesced()


def test_a_sparse_coo_tensor_ember_writes_loads_in_torch(torch_mod):
    sparse = ember.sparse_coo_tensor([[0, 1], [2, 0]], [3.0, 4.0], (2, 3))
    loaded = torch_mod.load(_ember_file(sparse))
    assert loaded.layout is torch_mod.sparse_coo
    assert loaded.to_dense().tolist() == [[0.0, 0.0, 3.0], [4.0, 0.0, 0.0]]


def test_a_sparse_coo_tensor_round_trips_in_ember():
    sparse = ember.sparse_coo_tensor([[0, 1], [2, 0]], [3.0, 4.0], (2, 3)).coalesce()
    loaded = ember.load(_ember_file(sparse))
    assert loaded.layout is ember.sparse_coo and loaded.is_coalesced()
    assert loaded.to_dense().tolist() == [[0.0, 0.0, 3.0], [4.0, 0.0, 0.0]]


def test_a_sparse_layout_ember_lacks_is_refused_by_name(torch_mod):
    blob = _torch_file(torch_mod, torch_mod.eye(2).to_sparse_csr())
    with pytest.raises(SerializationError, match="torch.sparse_csr"):
        ember.load(blob)


# --- uint16, uint32, uint64 ---------------------------------------------------------------------
WIDE_UNSIGNED = {"uint16": 2**16 - 1, "uint32": 2**32 - 1, "uint64": 2**64 - 1}


@pytest.mark.parametrize("name", sorted(WIDE_UNSIGNED))
def test_wide_unsigned_tensors_torch_writes_load_in_ember(torch_mod, name):
    saved = torch_mod.tensor([0, 1, WIDE_UNSIGNED[name]], dtype=getattr(torch_mod, name))
    loaded = ember.load(_torch_file(torch_mod, saved))
    assert loaded.dtype is getattr(ember, name)
    assert loaded.tolist() == [0, 1, WIDE_UNSIGNED[name]]


@pytest.mark.parametrize("name", sorted(WIDE_UNSIGNED))
def test_wide_unsigned_tensors_ember_writes_load_in_torch(torch_mod, name):
    saved = ember.from_numpy(np.array([0, 1, WIDE_UNSIGNED[name]], dtype=name))
    loaded = torch_mod.load(_ember_file(saved))
    assert loaded.dtype is getattr(torch_mod, name)
    assert loaded.tolist() == [0, 1, WIDE_UNSIGNED[name]]


@pytest.mark.parametrize("name", sorted(WIDE_UNSIGNED))
def test_wide_unsigned_tensors_round_trip_in_ember(name):
    saved = ember.from_numpy(np.array([0, 1, WIDE_UNSIGNED[name]], dtype=name))
    for blob in (_ember_file(saved), _ember_file(saved, _use_new_zipfile_serialization=False)):
        loaded = ember.load(blob)
        assert loaded.dtype is getattr(ember, name)
        assert loaded.tolist() == [0, 1, WIDE_UNSIGNED[name]]


# --- tensors and parameters with attributes -------------------------------------------------
def _with_attributes(lib):
    t = lib.ones(2)
    t.note = "tensor attribute"
    p = lib.nn.Parameter(lib.zeros(3))
    p.tag = {"lr_scale": 0.5}
    return {"t": t, "p": p}


def _assert_attributes(loaded, lib) -> None:
    assert loaded["t"].note == "tensor attribute" and loaded["t"].tolist() == [1.0, 1.0]
    assert isinstance(loaded["p"], lib.nn.Parameter) and loaded["p"].tag == {"lr_scale": 0.5}
    assert loaded["p"].requires_grad


def test_tensor_and_parameter_attributes_torch_writes_load_in_ember(torch_mod):
    _assert_attributes(ember.load(_torch_file(torch_mod, _with_attributes(torch_mod))), ember)


def test_tensor_and_parameter_attributes_ember_writes_load_in_torch(torch_mod):
    _assert_attributes(torch_mod.load(_ember_file(_with_attributes(ember))), torch_mod)


def test_tensor_and_parameter_attributes_round_trip_in_ember():
    _assert_attributes(ember.load(_ember_file(_with_attributes(ember))), ember)


def test_an_attribute_naming_ember_internals_is_refused(torch_mod):
    t = torch_mod.ones(2)
    t._data = "not an array"  # harmless in torch, ember's own field in ember
    with pytest.raises(pickle.UnpicklingError, match="_data"):
        ember.load(_torch_file(torch_mod, t))


# --- BatchNorm state dicts without num_batches_tracked -------------------------------------
def _bn_state_without_count(torch, version):
    state = torch.nn.BatchNorm1d(3).state_dict()
    del state["num_batches_tracked"]
    if version is None:
        return dict(state)  # a plain dict: no _metadata, as in very old checkpoints
    state._metadata[""]["version"] = version
    return state


@pytest.mark.parametrize("version", [None, 1])
def test_batchnorm_state_without_num_batches_tracked_loads_as_torch_accepts(torch_mod, version):
    state = _bn_state_without_count(torch_mod, version)
    torch_mod.nn.BatchNorm1d(3).load_state_dict(state)  # torch accepts it
    bn = ember.nn.BatchNorm1d(3)
    bn.num_batches_tracked.fill_(5)
    bn.load_state_dict(ember.load(_torch_file(torch_mod, state)))
    assert bn.num_batches_tracked.item() == 5  # kept, as torch keeps its own count


def test_batchnorm_state_of_version_2_without_num_batches_tracked_is_refused(torch_mod):
    state = _bn_state_without_count(torch_mod, 2)
    with pytest.raises(RuntimeError, match='Missing key.*"num_batches_tracked"'):
        torch_mod.nn.BatchNorm1d(3).load_state_dict(state)
    with pytest.raises(RuntimeError, match='Missing key.*"num_batches_tracked"'):
        ember.nn.BatchNorm1d(3).load_state_dict(ember.load(_torch_file(torch_mod, state)))


def test_an_ember_batchnorm_state_without_num_batches_tracked_loads_in_ember():
    state = ember.nn.BatchNorm2d(4).state_dict()
    del state["num_batches_tracked"]
    ember.nn.BatchNorm2d(4).load_state_dict(ember.load(_ember_file(state)))
