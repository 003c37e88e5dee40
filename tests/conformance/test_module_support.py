"""tests/conformance/_module_support.py: the converter, the comparisons and the judge that the
ModuleInfo / OptimizerInfo suites rest on must themselves catch what they are meant to."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

import ember  # noqa: E402
from tests.conformance._module_support import (  # noqa: E402
    compare_values,
    judge,
    no_less_accurate,
    read_known_failures,
    recording_constructor_args,
    to_ember,
)


def test_compare_values_catches_dtype_shape_value_and_structure():
    want = (torch.tensor([1.0, 2.0]), None)
    assert compare_values((ember.tensor([1.0, 2.0]), None), want, "out") == []
    assert compare_values((ember.tensor([1.0, 2.5]), None), want, "out")
    assert compare_values((ember.tensor([1.0, 2.0], dtype=ember.float64), None), want, "out")
    assert compare_values((ember.tensor([[1.0, 2.0]]), None), want, "out")
    assert compare_values([ember.tensor([1.0, 2.0]), None], want, "out") == []  # list ~ tuple
    assert compare_values((ember.tensor([1.0, 2.0]),), want, "out")
    assert compare_values({"lr": 0.1}, {"lr": torch.tensor(0.1)}, "group")  # float vs tensor


def test_no_less_accurate_accepts_only_results_as_close_to_float64_as_torch():
    exact = torch.tensor([100.0], dtype=torch.float64)
    torch_half = torch.tensor([100.5], dtype=torch.float16)
    assert no_less_accurate(ember.tensor([100.25]).half(), torch_half, exact, "out") == []
    assert no_less_accurate(ember.tensor([99.0]).half(), torch_half, exact, "out")


def test_judge_fails_unlisted_disagreements_and_listed_agreements(tmp_path):
    listing = tmp_path / "known.txt"
    listing.write_text("# header\nnn.Foo :: float32-train-0-a  # why\nnn.Foo :: gone  # why\n")
    known = read_known_failures(listing)
    results = {"float32-train-0-a": [], "float32-train-1-b": ["output differs"]}
    lines = judge("nn.Foo", results, known)
    assert any(line.startswith("float32-train-1-b: output differs") for line in lines)
    assert any("agrees now" in line for line in lines)
    assert any(line.startswith("gone:") for line in lines)
    assert judge("nn.Foo", {"float32-train-0-a": ["x"], "gone": ["y"]}, known) == []


def test_converter_keeps_identity_and_builds_recorded_modules():
    param = torch.nn.Parameter(torch.ones(2))
    twice = to_ember([param, param])
    assert twice[0] is twice[1] and isinstance(twice[0], ember.nn.Parameter)
    with recording_constructor_args():
        layer = torch.nn.TransformerEncoderLayer(4, 2, 8, 0.0, torch.nn.functional.gelu)
    converted = to_ember(layer)
    assert type(converted) is ember.nn.TransformerEncoderLayer
    assert converted.activation is ember.nn.functional.gelu
    assert sorted(converted.state_dict()) == sorted(layer.state_dict())
    torch.nn.Linear(2, 3)  # outside the block torch builds modules as ever
