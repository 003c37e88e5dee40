"""ember.types: torch.types' aliases for annotations."""

from __future__ import annotations

import typing

import ember


def test_aliases_accept_what_torchs_accept():
    types = ember.types
    assert set(typing.get_args(types.Number)) == {int, float, bool}
    assert isinstance(ember.device("cpu"), typing.get_args(types.Device)[0])
    assert type(None) in typing.get_args(types.Device) and str in typing.get_args(types.Device)
    assert types.IntLikeType is int and types.Tensor is ember.Tensor
