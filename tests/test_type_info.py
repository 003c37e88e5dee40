"""ember.finfo / ember.iinfo against torch's: every attribute, repr, equality and errors."""

from __future__ import annotations

import pytest

import ember

FLOATS = ["float16", "bfloat16", "float32", "float64", "complex64", "complex128"]
INTS = ["uint8", "int8", "int16", "int32", "int64"]


@pytest.mark.parametrize("name", FLOATS)
def test_finfo_matches_torch(torch_mod, name):
    got, want = ember.finfo(getattr(ember, name)), torch_mod.finfo(getattr(torch_mod, name))
    for attribute in ("bits", "eps", "max", "min", "tiny", "smallest_normal", "resolution"):
        assert getattr(got, attribute) == getattr(want, attribute), attribute
    assert got.dtype == want.dtype
    assert repr(got) == repr(want)


@pytest.mark.parametrize("name", INTS)
def test_iinfo_matches_torch(torch_mod, name):
    got, want = ember.iinfo(getattr(ember, name)), torch_mod.iinfo(getattr(torch_mod, name))
    assert (got.bits, got.min, got.max, got.dtype) == (want.bits, want.min, want.max, want.dtype)
    assert repr(got) == repr(want)


def test_finfo_defaults_to_the_default_dtype():
    assert ember.finfo().dtype == "float32"
    ember.set_default_dtype(ember.float64)
    try:
        assert ember.finfo().eps == 2.0**-52
    finally:
        ember.set_default_dtype(ember.float32)
    assert ember.finfo(ember.float16) == ember.finfo(ember.float16) != ember.finfo(ember.float32)


def test_wrong_kinds_raise_torchs_type_errors():
    with pytest.raises(TypeError, match="requires a floating point input type"):
        ember.finfo(ember.int32)
    with pytest.raises(TypeError, match="requires an integer input type"):
        ember.iinfo(ember.float32)
    with pytest.raises(TypeError, match="bool is not supported by ember.iinfo"):
        ember.iinfo(ember.bool)
    with pytest.raises(TypeError, match=r"finfo\(\): argument 'type' \(position 1\) must be"):
        ember.finfo("float32")
