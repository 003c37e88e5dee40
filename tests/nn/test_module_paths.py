"""Every module path under torch.nn.modules and torch.nn.utils that programs import exists."""

from __future__ import annotations

import importlib
import pkgutil

import pytest


def test_every_public_nn_module_path_imports(torch_mod):
    import torch.nn.modules as torch_modules

    for info in pkgutil.iter_modules(torch_modules.__path__):
        if info.name.startswith("_"):
            continue
        importlib.import_module(f"ember.nn.modules.{info.name}")


def test_modules_utils_helpers_match_torch(torch_mod):
    from torch.nn.modules import utils as tu

    from ember.nn.modules import utils as eu

    for name in ("_single", "_pair", "_triple", "_quadruple"):
        for value in (3, (1, 2, 3, 4)[: int(name.count("p") or 1)], [5]):
            assert getattr(eu, name)(value) == getattr(tu, name)(value)
    assert eu._reverse_repeat_tuple((1, 2), 2) == tu._reverse_repeat_tuple((1, 2), 2)
    assert eu._list_with_default([None, 3], [8, 4, 5]) == tu._list_with_default(
        [None, 3], [8, 4, 5]
    )
    with pytest.raises(ValueError, match="Input dimension should be at least"):
        eu._list_with_default([1, 2], [3, 4])


def test_attention_output_projection_class_lives_in_linear_as_torch(torch_mod):
    # programs name torch.nn.modules.linear.NonDynamicallyQuantizableLinear in safe_globals
    from ember.nn.modules.linear import Linear, NonDynamicallyQuantizableLinear

    names = []
    for m in (__import__("ember"), torch_mod):
        projection = type(m.nn.MultiheadAttention(4, 2).out_proj)
        names.append((projection.__module__.split(".", 1)[1], projection.__qualname__))
    assert names[0] == names[1] == ("nn.modules.linear", "NonDynamicallyQuantizableLinear")
    assert issubclass(NonDynamicallyQuantizableLinear, Linear)


def test_placeholders_and_packed_sequences_live_where_torch_defines_them():
    import ember
    from ember.nn.modules import lazy
    from ember.nn.utils import rnn

    # torch.nn.parameter defines the lazy placeholders; torch.nn.utils.rnn PackedSequence
    for name in ("UninitializedParameter", "UninitializedBuffer", "is_lazy"):
        obj = getattr(ember.nn.parameter, name)
        assert obj.__module__ == "ember.nn.parameter" and getattr(lazy, name) is obj
    assert rnn.PackedSequence.__module__ == "ember.nn.utils.rnn"
    assert rnn.invert_permutation.__module__ == "ember.nn.utils.rnn"
    packed = rnn.pack_sequence([ember.ones(3), ember.ones(2)])
    assert type(packed) is ember.nn.utils.rnn.PackedSequence
    assert packed.batch_sizes.tolist() == [2, 2, 1]
