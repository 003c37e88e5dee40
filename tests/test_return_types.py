"""ember.return_types: the named tuples of ops print, compare and unpack as torch's."""

from __future__ import annotations

import pytest

import ember


def _cases(m):
    x = m.tensor([[1.0, 3.0, 2.0], [4.0, 0.5, 6.0]])
    return {
        "max": lambda: x.max(1),
        "min": lambda: m.min(x, 0),
        "sort": lambda: x.sort(),
        "topk": lambda: x.topk(2),
        "kthvalue": lambda: x.kthvalue(2, 1),
        "mode": lambda: x.mode(1),
        "median": lambda: x.median(1),
        "nanmedian": lambda: x.nanmedian(1),
        "cummax": lambda: x.cummax(1),
        "cummin": lambda: x.cummin(1),
        "aminmax": lambda: x.aminmax(),
        "frexp": lambda: x.frexp(),
        "linalg_qr": lambda: m.linalg.qr(x.T),
        "linalg_slogdet": lambda: m.linalg.slogdet(x[:, :2]),
    }


@pytest.mark.parametrize("op", list(_cases(ember)))
def test_named_results_print_and_unpack_as_torchs(torch_mod, op):
    ours, theirs = _cases(ember)[op](), _cases(torch_mod)[op]()
    assert type(ours).__name__ == type(theirs).__name__
    assert type(ours).__module__ == "ember.return_types"
    assert repr(ours) == repr(theirs).replace("torch.", "ember.")
    assert str(ours) == repr(ours)
    assert len(ours) == len(theirs) and isinstance(ours, tuple)


def test_fields_by_name_and_position():
    values, indices = ember.tensor([[1.0, 3.0]]).max(1)
    result = ember.tensor([[1.0, 3.0]]).max(1)
    assert result.values.tolist() == values.tolist() == [3.0]
    assert result[1].tolist() == indices.tolist() == [1]
    assert ember.return_types.max is type(result)
