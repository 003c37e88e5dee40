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
        rtol=1e-5,  # float32 GEMMs of two BLAS builds may round the last bit apart
        atol=1e-7,
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


def _loaded_storage(array):
    """A storage as the loader hands it to torch's rebuild functions."""
    from ember.serialization._storage import LoadedStorage

    return LoadedStorage(array, ember.float32, "cpu")


def test_records_that_reach_past_their_storage_are_refused():
    from ember.serialization._rebuild import rebuild_tensor_v2 as _rebuild_tensor_v2

    storage = _loaded_storage(np.zeros(4, dtype=np.float32))
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


def _load_traced(blob: bytes):
    """``ember.load`` of ``blob`` and the peak memory it allocated (tracemalloc sees NumPy)."""
    import tracemalloc

    tracemalloc.start()
    try:
        out = ember.load(io.BytesIO(blob))
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    return out, peak


def test_an_expanded_record_loads_as_a_view_not_a_copy():
    # one stored float seen as 20000 x 20000: materialised it would take 1.6 GB
    blob = _roundtrip_bytes(ember.ones(1).expand(20000, 20000)).getvalue()
    assert len(blob) < 2000
    loaded, peak = _load_traced(blob)
    assert peak < 1_000_000, f"load allocated {peak} bytes"
    assert tuple(loaded.shape) == (20000, 20000)
    assert loaded.stride() == (0, 0)
    assert loaded[19999, 19999].item() == 1.0
    with pytest.raises(RuntimeError, match="more than one element of the written-to tensor"):
        loaded.add_(1)


def test_an_expanded_record_written_by_torch_loads_as_a_view(torch_mod):
    buf = io.BytesIO()
    torch_mod.save({"w": torch_mod.arange(3.0).expand(30000, 3)}, buf)
    loaded, peak = _load_traced(buf.getvalue())
    assert peak < 200_000
    assert loaded["w"].stride() == (0, 1)
    assert loaded["w"][29999].tolist() == [0.0, 1.0, 2.0]


def test_overlapping_record_larger_than_its_storage_stays_a_view():
    from ember.serialization._rebuild import rebuild_tensor_v2 as _rebuild_tensor_v2

    array = np.arange(200_000, dtype=np.float32)
    storage = _loaded_storage(array)
    # strides (1, 1): 10^10 elements over 200,000 stored floats, no zero stride
    t = _rebuild_tensor_v2(storage, 0, (100_000, 100_000), (1, 1))
    assert tuple(t.shape) == (100_000, 100_000)
    assert t[99_999, 99_999].item() == 199_998.0
    # an overlapping record is a view of its storage, writable as in torch
    t = _rebuild_tensor_v2(storage, 0, (2, 3), (1, 1))
    assert t.tolist() == [[0.0, 1.0, 2.0], [1.0, 2.0, 3.0]]
    t[0, 0] = 5.0
    assert array[0] == 5.0


def test_strides_past_int64_are_refused_as_torch():
    from ember.serialization._rebuild import rebuild_tensor_v2 as _rebuild_tensor_v2

    storage = _loaded_storage(np.zeros(4, dtype=np.float32))
    with pytest.raises(SerializationError, match="Storage size calculation overflowed"):
        _rebuild_tensor_v2(storage, 0, (1, 1), (2**64, 1))


def test_a_compressed_data_pkl_is_refused():
    blob = _roundtrip_bytes({"w": ember.arange(4.0)}).getvalue()
    with zipfile.ZipFile(io.BytesIO(blob)) as archive:
        pickled = archive.read("archive/data.pkl")
    packed = _rewrite(blob, "archive/data.pkl", pickled, zipfile.ZIP_DEFLATED)
    with pytest.raises(SerializationError, match="data.pkl is compressed"):
        ember.load(io.BytesIO(packed))


def test_a_memo_index_in_the_pickle_cannot_allocate_gigabytes():
    # LONG_BINPUT at index 2**28: CPython's C unpickler would zero-fill a 4 GB memo table
    bomb = b"\x80\x02K\x01r" + (2**28).to_bytes(4, "little") + b"."
    blob = _roundtrip_bytes({"w": ember.arange(4.0)}).getvalue()
    loaded, peak = _load_traced(_rewrite(blob, "archive/data.pkl", bomb))
    assert loaded == 1
    assert peak < 1_000_000


def test_a_bytearray_longer_than_the_pickle_is_refused_before_allocating():
    # BYTEARRAY8 declaring 2 GB: the stock unpickler allocates it before reading (fuzz case
    # pt-pickle:1481 declared 4.7 TB). weights_only refuses the protocol-5 opcode outright, as
    # torch does; weights_only=False runs Python's unpickler, bounded.
    blob = _roundtrip_bytes({"w": ember.arange(4.0)}).getvalue()
    bomb = _rewrite(
        blob, "archive/data.pkl", b"\x80\x05\x96" + (2**31).to_bytes(8, "little") + b"."
    )
    with pytest.raises(pickle.UnpicklingError, match="Unsupported operand 150"):
        ember.load(io.BytesIO(bomb))
    with pytest.raises(SerializationError, match="declares a 2147483648-byte bytearray"):
        ember.load(io.BytesIO(bomb), weights_only=False)
    honest = b"\x80\x05\x96" + (3).to_bytes(8, "little") + b"abc."
    loaded = ember.load(io.BytesIO(_rewrite(blob, "archive/data.pkl", honest)), weights_only=False)
    assert loaded == b"abc"


def test_requires_grad_on_an_integer_record_raises_serialization_error():
    # fuzz case pt-pickle:571: NEWFALSE turned NEWTRUE on an int64 tensor's requires_grad
    blob = _roundtrip_bytes({"w": ember.arange(4)}).getvalue()
    with zipfile.ZipFile(io.BytesIO(blob)) as archive:
        pickled = archive.read("archive/data.pkl")
    assert pickled.count(b"\x89") == 1
    flipped = _rewrite(blob, "archive/data.pkl", pickled.replace(b"\x89", b"\x88"))
    with pytest.raises(SerializationError, match="floating point and complex dtype"):
        ember.load(io.BytesIO(flipped))


@pytest.mark.parametrize(
    "pickled",
    [
        b"\x80\x02}q\x00(X\x01\x00\x00\x00wq\x01",  # truncated mid-dict: EOFError inside
        b"\x80\x02]q\x00(K\x01K\x02e\x86.",  # TUPLE2 on a too-short stack: IndexError
        b"\x80\x02ctorch._utils\n_rebuild_tensor_v2\nK\x01\x85R.",  # wrong arguments
        b"\x80\x02ccollections\nOrderedDict\n)RK\x01b.",  # BUILD with an int state
        b"\x80\x02ctorch\nFloatStorage\n.",  # a storage type with no persistent id
        b"\x80\x02(X\x07\x00\x00\x00storageq\x00K\x01X\x01\x00\x00\x000tQ.",  # bad pid
    ],
)
def test_broken_pickles_raise_serialization_error(pickled):
    blob = _roundtrip_bytes({"w": ember.arange(4.0)}).getvalue()
    broken = _rewrite(blob, "archive/data.pkl", pickled)
    try:
        ember.load(io.BytesIO(broken))
    except pickle.UnpicklingError as exc:  # SerializationError or torch's own refusal
        assert isinstance(exc, SerializationError) or "Weights only" in str(exc)
