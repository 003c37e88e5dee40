"""Legacy names that old PyTorch programs still use: tensor types, Variable, the alpha-first
overload of add/sub."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import ember


def test_legacy_type_of_sizes_is_uninitialised_with_that_shape_and_dtype():
    x = ember.FloatTensor(2, 3)
    assert x.shape == (2, 3) and x.dtype == ember.float32
    assert ember.LongTensor(4).dtype == ember.int64
    assert ember.DoubleTensor().shape == (0,)


def test_legacy_type_of_values_copies_them_in_its_dtype():
    assert ember.LongTensor([1, 2]).tolist() == [1, 2]
    assert ember.ByteTensor([1, 255]).dtype == ember.uint8
    assert ember.BoolTensor([True, False]).tolist() == [True, False]
    x = ember.FloatTensor(np.array([1.5, 2.5]))
    assert x.dtype == ember.float32 and x.tolist() == [1.5, 2.5]


def test_isinstance_checks_dtype_and_device():
    assert isinstance(ember.zeros(2), ember.FloatTensor)
    assert not isinstance(ember.zeros(2), ember.DoubleTensor)
    assert isinstance(ember.zeros(2, dtype=ember.int64), ember.LongTensor)
    assert not isinstance(np.zeros(2), ember.FloatTensor)


def test_legacy_type_refuses_mixed_arguments():
    with pytest.raises(TypeError, match="sizes"):
        ember.FloatTensor(2, "a")


def test_type_strings_round_trip():
    x = ember.zeros(2)
    assert x.type() == "ember.FloatTensor"
    assert x.type("torch.DoubleTensor").dtype == ember.float64
    assert x.type(ember.LongTensor.dtype).dtype == ember.int64


def test_variable_is_a_tensor_that_shares_data():
    t = ember.ones(2)
    v = ember.autograd.Variable(t, requires_grad=True)
    assert v.requires_grad and not t.requires_grad
    assert isinstance(v, ember.autograd.Variable) and isinstance(t, ember.autograd.Variable)
    (v * 3).sum().backward()
    assert v.grad.tolist() == [3.0, 3.0]
    v.data.add_(1)
    assert t.tolist() == [2.0, 2.0]
    with pytest.raises(TypeError, match="Variable data has to be a tensor"):
        ember.autograd.Variable([1.0])


def test_alpha_first_add_overload_warns_and_matches_the_keyword_form(torch_mod):
    for name in ("add", "sub", "add_", "sub_"):
        x, y = ember.tensor([1.0, 2.0]), ember.tensor([10.0, 20.0])
        tx, ty = torch_mod.tensor([1.0, 2.0]), torch_mod.tensor([10.0, 20.0])
        with pytest.warns(UserWarning, match=f"This overload of {name} is deprecated"):
            out = getattr(x, name)(2, y)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            expected = getattr(tx, name)(2, ty)
        assert out.tolist() == expected.tolist()
        assert x.tolist() == tx.tolist()


def test_load_state_dict_prints_all_keys_matched():
    m = ember.nn.Linear(2, 2)
    assert repr(m.load_state_dict(m.state_dict())) == "<All keys matched successfully>"
    partial = m.load_state_dict({"weight": m.weight.detach()}, strict=False)
    assert partial.missing_keys == ["bias"] and "missing_keys=['bias']" in repr(partial)
