"""Malformed safetensors files: every one raises SerializationError naming the problem."""

from __future__ import annotations

import io
import json
import struct

import pytest

import ember
from ember.serialization import SerializationError


def _file(header, data: bytes = b"") -> io.BytesIO:
    head = header if isinstance(header, bytes) else json.dumps(header).encode()
    return io.BytesIO(struct.pack("<Q", len(head)) + head + data)


def _entry(**fields):
    entry = {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]}
    entry.update(fields)
    return {k: v for k, v in entry.items() if v is not None}


MALFORMED = {
    "missing and extra keys": (
        {"w": {"dtype": "F32", "shapes": [2], "data_offsets": [0, 8]}},
        r"missing: \['shape'\], unexpected: \['shapes'\]",
    ),
    "missing key only": ({"w": _entry(shape=None)}, r"missing: \['shape'\]"),
    "extra key only": ({"w": _entry(strides=[1])}, r"unexpected: \['strides'\]"),
    "entry not an object": ({"w": [1, 2]}, "not a JSON object"),
    "dtype not a string": ({"w": _entry(dtype=["F32"])}, "unsupported dtype"),
    "shape of floats": ({"w": _entry(shape=[2.0])}, "invalid shape"),
    "shape of bools": ({"w": _entry(shape=[True, True])}, "invalid shape"),
    "absurd shape": ({"w": _entry(shape=[2**62, 2**62])}, "expected .* for shape"),
    "shape past int64": ({"w": _entry(shape=[2**64])}, "invalid shape"),
    "absurd shape holding nothing": (
        {"w": _entry(shape=[2**40, 2**40, 0], data_offsets=[0, 0])},
        r"shape \[1099511627776, 1099511627776, 0\] is too large",
    ),
    "absurd shape holding nothing, zero first": (
        {"w": _entry(shape=[0, 2**40, 2**40], data_offsets=[0, 0])},
        "is too large",
    ),
    "too many dims": ({"w": _entry(shape=[1] * 65, data_offsets=[0, 4])}, "invalid shape"),
    "offsets of strings": ({"w": _entry(data_offsets=["0", "8"])}, "invalid data_offsets"),
    "metadata a list": ({"__metadata__": [1, 2], "w": _entry()}, "__metadata__ must be"),
    "metadata a number": ({"__metadata__": 5, "w": _entry()}, "__metadata__ must be"),
    "metadata of numbers": ({"__metadata__": {"a": 1}, "w": _entry()}, "__metadata__ must be"),
    "deep nesting": (b"[" * 100_000 + b"]" * 100_000, "not JSON"),
    "an integer of 5000 digits": (b'{"w": ' + b"9" * 5000 + b"}", "not JSON"),
    "invalid utf-8": (b'{"\xff": 1}', "not JSON"),
    "structure not JSON": (
        {"__metadata__": {"ember.structure": "{"}, "w": _entry()},
        "structure metadata is not JSON",
    ),
    "structure deeply nested": (
        {"__metadata__": {"ember.structure": "[" * 100_000 + "]" * 100_000}, "w": _entry()},
        "structure metadata",
    ),
    "structure names a missing tensor": (
        {"__metadata__": {"ember.structure": '{"__tensor__": "v"}'}, "w": _entry()},
        "structure metadata is malformed",
    ),
    "structure with unhashable keys": (
        {"__metadata__": {"ember.structure": '{"__dict__": [[[1], 2]]}'}, "w": _entry()},
        "structure metadata is malformed",
    ),
    "structure of the wrong shape": (
        {"__metadata__": {"ember.structure": '{"__dict__": 5}'}, "w": _entry()},
        "structure metadata is malformed",
    ),
}


@pytest.mark.parametrize("case", sorted(MALFORMED))
def test_malformed_safetensors_raise_serialization_error(case):
    header, message = MALFORMED[case]
    with pytest.raises(SerializationError, match=message):
        ember.load(_file(header, b"\0" * 8))


def test_a_valid_file_with_string_metadata_still_loads():
    loaded = ember.load(_file({"__metadata__": {"a": "b"}, "w": _entry()}, b"\0" * 8))
    assert loaded["w"].tolist() == [0.0, 0.0]
    loaded = ember.load(_file({"__metadata__": None, "w": _entry()}, b"\0" * 8))
    assert loaded["w"].tolist() == [0.0, 0.0]


def test_serialization_error_is_torch_s_unpickling_error_and_a_runtime_error():
    import pickle

    assert issubclass(SerializationError, pickle.UnpicklingError)
    assert issubclass(SerializationError, RuntimeError)


def test_wide_unsigned_tensors_round_trip_as_safetensors_codes():
    import numpy as np

    for name, code in (("uint16", "U16"), ("uint32", "U32"), ("uint64", "U64")):
        t = ember.from_numpy(np.array([0, 7, np.iinfo(name).max], dtype=name))
        buf = io.BytesIO()
        ember.serialization._safetensors.save({"t": t}, buf)
        header = json.loads(buf.getvalue()[8 : 8 + struct.unpack("<Q", buf.getvalue()[:8])[0]])
        assert header["t"]["dtype"] == code
        loaded = ember.load(io.BytesIO(buf.getvalue()))["t"]
        assert loaded.dtype is getattr(ember, name) and loaded.tolist() == t.tolist()
