"""``weights_only=True``: exactly torch's allowed globals, torch's opcodes, no BUILD on tensors,
every refusal torch's ``UnpicklingError`` with torch's message; and nothing an allowed global
builds from a small file can exhaust memory."""

from __future__ import annotations

import io
import pickle
import subprocess
import sys
import textwrap
import zipfile

import pytest

import ember
from ember.serialization import SerializationError, _weights_only


def _zip_with_pickle(pickled: bytes, saved=None) -> bytes:
    """A checkpoint of ``saved`` written by ember.save, its data.pkl replaced by ``pickled``."""
    buf = io.BytesIO()
    ember.save({"w": ember.arange(4.0)} if saved is None else saved, buf)
    out = io.BytesIO()
    with zipfile.ZipFile(io.BytesIO(buf.getvalue())) as src, zipfile.ZipFile(out, "w") as dst:
        for info in src.infolist():
            data = pickled if info.filename.endswith("data.pkl") else src.read(info.filename)
            dst.writestr(info.filename, data, compress_type=zipfile.ZIP_STORED)
    return out.getvalue()


def test_the_allowed_globals_are_exactly_torchs(torch_mod):
    from torch._weights_only_unpickler import _get_allowed_globals

    assert _weights_only.allowed_global_names() == set(_get_allowed_globals())


def test_range_slice_and_frozenset_are_not_allowed():
    names = _weights_only.allowed_global_names()
    assert {"builtins.range", "builtins.slice", "builtins.frozenset"}.isdisjoint(names)
    assert {"builtins.set", "builtins.complex", "builtins.bytearray", "_codecs.encode"} <= names


SET_OF_A_BILLION = b"\x80\x02cbuiltins\nset\ncbuiltins\nrange\nJ\x00\xca\x9a;\x85R\x85R."


def test_a_set_of_a_billion_numbers_is_refused_before_building_anything(tmp_path):
    path = tmp_path / "bomb.pt"
    path.write_bytes(_zip_with_pickle(SET_OF_A_BILLION))
    assert len(SET_OF_A_BILLION) < 60
    # under a 2 GB address-space cap: building the set would take ~60 GB (before, this child
    # raised MemoryError after 3 s; uncapped, the machine ran out of memory)
    child = textwrap.dedent(f"""
        import pickle, resource
        resource.setrlimit(resource.RLIMIT_AS, (2 << 30, 2 << 30))
        import ember
        try:
            ember.load({str(path)!r})
            print("LOADED")
        except pickle.UnpicklingError as exc:
            print(str(exc).split("WeightsUnpickler error: ")[1].splitlines()[0])
    """)
    done = subprocess.run(
        [sys.executable, "-c", child], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.startswith(
        "Unsupported global: GLOBAL range was not an allowed global by default."
    )


def test_build_on_a_tensor_is_refused():
    # a tensor rebuilt from the checkpoint, then BUILD with {"_data": "abc"}: loaded before as a
    # tensor whose data was a string
    buf = io.BytesIO()
    ember.save(ember.arange(4.0), buf)
    with zipfile.ZipFile(io.BytesIO(buf.getvalue())) as archive:
        pickled = archive.read("archive/data.pkl")
    assert pickled.endswith(b".")
    poisoned = pickled[:-1] + b"}X\x05\x00\x00\x00_dataX\x03\x00\x00\x00abcsb."
    with pytest.raises(pickle.UnpicklingError, match="Weights only load failed") as info:
        ember.load(io.BytesIO(_zip_with_pickle(poisoned)))
    assert "Can only build Tensor" not in str(info.value)  # the refusal names what happened
    assert "BUILD on a tensor" in str(info.value)


# (pickle, the WeightsUnpickler error torch raises for it, as ember words it)
REFUSALS = {
    "range": (
        b"\x80\x02cbuiltins\nrange\nK\x05\x85R.",
        "Unsupported global: GLOBAL range was not an allowed global by default. Please use "
        "`ember.serialization.add_safe_globals([range])` or the "
        "`ember.serialization.safe_globals([range])` context manager to allowlist this global "
        "if you trust this class/function.",
    ),
    "xrange": (b"\x80\x02c__builtin__\nxrange\nK\x05\x85R.", "GLOBAL range was not an allowed"),
    "slice": (b"\x80\x02c__builtin__\nslice\nK\x05\x85R.", "GLOBAL slice was not an allowed"),
    "frozenset": (b"\x80\x02c__builtin__\nfrozenset\n]\x85R.", "GLOBAL frozenset was not an"),
    "numpy": (b"\x80\x02cnumpy\ndtype\n.", "GLOBAL numpy.dtype was not an allowed global"),
    "blocked module": (
        b"\x80\x02cposix\nsystem\nX\x02\x00\x00\x00ls\x85R.",
        "Trying to load unsupported GLOBAL posix.system whose module posix is blocked.",
    ),
    "append to a dict": (b"\x80\x02}K\x01a.", "Can only append to lists, but got <class 'dict'>"),
    "appends to a tuple": (
        b"\x80\x02)(K\x01e.",
        "Can only extend lists, but got <class 'tuple'>",
    ),
    "setitem on a list": (
        b"\x80\x02]K\x01K\x02s.",
        "Can only SETITEM for dict, collections.OrderedDict, collections.Counter, but got "
        "<class 'list'>",
    ),
    "setitems on a set": (
        b"\x80\x02\x8f(K\x01K\x02u.",
        "Can only SETITEMS for dict, collections.OrderedDict, collections.Counter, but got "
        "<class 'set'>",
    ),
    "a protocol-4 frame": (
        b"\x80\x04\x95\x05\x00\x00\x00\x00\x00\x00\x00K\x01.",
        "Unsupported operand 149",
    ),
    "a DICT opcode": (b"\x80\x02(d.", "Unsupported operand 100"),
    "reduce on a number": (
        b"\x80\x02K\x01)R.",
        "Trying to call reduce for unrecognized function 1",
    ),
    "newobj of a number": (
        b"\x80\x02K\x01)\x81.",
        "Can only create new object for nn.Parameter or classes allowlisted via "
        "`add_safe_globals` but got 1",
    ),
    "build on a dict": (
        b"\x80\x02}}b.",
        "Can only build Tensor, Parameter, OrderedDict or types allowlisted via "
        "`add_safe_globals`, but got <class 'dict'>",
    ),
    "a string persistent id": (
        b"\x80\x02X\x01\x00\x00\x00aQ.",
        "persistent_load id must be tuple or int, but got <class 'str'>",
    ),
    "a module persistent id": (
        b"\x80\x02X\x06\x00\x00\x00module\x85Q.",
        "Only persistent_load of storage is allowed, but got <class 'str'>",
    ),
}


def _weights_unpickler_error(message: str) -> str:
    """The part of a weights-only refusal that names what was refused."""
    detail = message.split("WeightsUnpickler error: ")[-1] if "WeightsUnpickler" in message else ""
    if not detail.strip():  # the blocked-module form has no such marker
        detail = message
    return detail.strip().split("\n\nCheck the documentation")[0].strip()


@pytest.mark.parametrize("case", sorted(REFUSALS))
def test_every_refusal_is_an_unpickling_error_with_torchs_message(case):
    pickled, expected = REFUSALS[case]
    with pytest.raises(pickle.UnpicklingError) as info:
        ember.load(io.BytesIO(_zip_with_pickle(pickled)))
    message = str(info.value)
    assert message.startswith("Weights only load failed.")
    assert expected in _weights_unpickler_error(message)
    assert message.endswith("https://pytorch.org/docs/stable/generated/torch.load.html.")


@pytest.mark.parametrize("case", sorted(REFUSALS))
def test_torch_refuses_the_same_files_with_the_same_message(torch_mod, case):
    pickled, expected = REFUSALS[case]
    with pytest.raises(pickle.UnpicklingError) as info:
        torch_mod.load(io.BytesIO(_zip_with_pickle(pickled)))
    torch_words = _weights_unpickler_error(str(info.value))
    assert expected.replace("ember.serialization", "torch.serialization") in torch_words


def test_the_message_layout_follows_torchs(torch_mod):
    for case in ("range", "blocked module", "append to a dict"):
        blob = _zip_with_pickle(REFUSALS[case][0])
        with pytest.raises(pickle.UnpicklingError) as by_torch:
            torch_mod.load(io.BytesIO(blob))
        with pytest.raises(pickle.UnpicklingError) as by_ember:
            ember.load(io.BytesIO(blob))
        as_torch = str(by_ember.value).replace("ember.serialization", "torch.serialization")
        as_torch = as_torch.replace("`ember.load`", "`torch.load`")
        assert as_torch == str(by_torch.value), case


def test_allowlisted_globals_still_load_and_blocked_modules_stay_blocked():
    import os

    blob = _zip_with_pickle(b"\x80\x02cbuiltins\nrange\nK\x03\x85R.")
    with ember.serialization.safe_globals([range]):
        assert ember.load(io.BytesIO(blob)) == range(3)
    with ember.serialization.safe_globals([os.system]):
        with pytest.raises(pickle.UnpicklingError, match="whose module posix is blocked"):
            ember.load(io.BytesIO(_zip_with_pickle(REFUSALS["blocked module"][0])))


# --- what torch allows, bounded: nothing small grows huge ------------------------------------
MEMORY_BOMBS = {
    # bytearray(2**40): an allowed global called with a size instead of data
    "bytearray of a size": b"\x80\x02cbuiltins\nbytearray\n\x8a\x06\x00\x00\x00\x00\x00\x01\x85R.",
    # _codecs.encode(..., 'hex') nested 40 times doubles the bytes each time
    "codecs encode beyond latin1": b"\x80\x02c_codecs\nencode\nX\x01\x00\x00\x00aX\x03\x00\x00"
    b"\x00hex\x86R.",
}


@pytest.mark.parametrize("case", sorted(MEMORY_BOMBS))
def test_allowed_globals_cannot_be_turned_into_memory_bombs(case):
    with pytest.raises(pickle.UnpicklingError, match="Weights only load failed"):
        ember.load(io.BytesIO(_zip_with_pickle(MEMORY_BOMBS[case])))


def test_a_set_of_an_expanded_tensor_is_refused():
    # set() over a stride-0 tensor of 2**40 elements would make 2**40 tensors
    expanded = ember.ones(1).expand(2**40)
    buf = io.BytesIO()
    ember.save(expanded, buf)
    with zipfile.ZipFile(io.BytesIO(buf.getvalue())) as archive:
        tensor = archive.read("archive/data.pkl")
    pickled = b"\x80\x02c__builtin__\nset\n" + tensor[2:-1] + b"\x85R."
    with pytest.raises(pickle.UnpicklingError, match=r"set\(Tensor\) is refused"):
        ember.load(io.BytesIO(_zip_with_pickle(pickled, expanded)))


def test_weights_only_false_still_loads_any_pickle():
    blob = _zip_with_pickle(b"\x80\x02c__builtin__\nfrozenset\n]K\x01a\x85R.")
    assert ember.load(io.BytesIO(blob), weights_only=False) == frozenset({1})


def test_serialization_error_is_still_an_unpickling_error():
    assert issubclass(SerializationError, pickle.UnpicklingError)
