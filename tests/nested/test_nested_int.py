"""The symbolic size of a jagged tensor's ragged dimension."""

import pytest

import ember

from .helpers import arrays, nested


def test_each_offsets_tensor_gets_one_nested_int():
    nt = nested(ember, arrays())
    j = nt.size(1)
    assert repr(j).startswith("j") and j == nt.shape[1] and j == (nt * 2).size(1)
    assert j != 2 and not (j == 3)
    other = nested(ember, arrays())
    assert other.size(1) != j  # same lengths, another offsets tensor: another structure
    assert int(repr(other.size(1))[1:]) > int(repr(j)[1:])


def test_nested_int_arithmetic_and_comparisons():
    nt = nested(ember, arrays())
    j = nt.size(1)
    assert repr(3 * j) == f"3*{j!r}" and 3 * j == j * 3 and 3 * j != j
    assert j >= 2 and j > 1 and hash(j) == hash(nt.shape[1]) and {j, nt.shape[1]} == {j}
    with pytest.raises(ValueError, match="indeterminate"):
        j >= 3  # noqa: B015
    with pytest.raises(RuntimeError, match="no single integer value"):
        int(j)


def test_nested_int_matches_torch_behaviour(torch_nested):
    torch = torch_nested
    e, t = nested(ember, arrays()), nested(torch, arrays())
    je, jt = e.size(1), t.size(1)
    assert (je == je, je == 2, je >= 2, je > 1) == (jt == jt, jt == 2, jt >= 2, jt > 1)
    with pytest.raises(ValueError):
        jt >= 3  # noqa: B015
    with pytest.raises(ValueError):
        je >= 3  # noqa: B015
