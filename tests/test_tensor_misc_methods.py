"""Metadata, memory and legacy Tensor methods (_tensor_misc_methods.py), and the top-level
functions that forward to methods (_method_functions.py), against torch."""

from __future__ import annotations

import numpy as np
import pytest

import ember


def test_queries_match_torch(torch_mod):
    for make in (lambda m: m.ones(2, 3), lambda m: m.arange(6).reshape(2, 3).t()):
        e, t = make(ember), make(torch_mod)
        assert e.get_device() == t.get_device() == -1
        assert e.is_cpu is t.is_cpu is True
        assert e.is_signed() == t.is_signed()
        assert e.dim_order() == t.dim_order()
        assert e.is_same_size(e) and not e.is_same_size(e.reshape(-1))
        assert e.is_sparse is t.is_sparse is False
    assert ember.ones(1, dtype=ember.uint8).is_signed() is False
    assert ember.arange(6.0)[2:].storage_offset() == torch_mod.arange(6.0)[2:].storage_offset()
    assert ember.is_nonzero(ember.tensor([3])) and not ember.is_nonzero(ember.tensor(0.0))
    for bad, msg in [(ember.ones(2), "more than one value"), (ember.ones(0), "no values")]:
        with pytest.raises(RuntimeError, match=msg):
            bad.is_nonzero()


def test_real_only_complex_helpers(torch_mod):
    x = ember.tensor([-1.5, 0.0, 2.0], requires_grad=True)
    assert x.real is x and x.conj() is x and not x.is_conj() and x.resolve_conj() is x
    with pytest.raises(RuntimeError, match="imag is not implemented for tensors with non-complex"):
        _ = x.imag
    t = torch_mod.tensor([-1.5, 0.0, 2.0])
    np.testing.assert_allclose(x.angle().detach().numpy(), t.angle().numpy())
    x.angle().sum().backward()
    assert x.grad.tolist() == [0.0, 0.0, 0.0]


def test_in_place_shape_changes(torch_mod):
    x = ember.ones(1, 3, 1)
    assert x.squeeze_() is x and x.shape == (3,)
    x.unsqueeze_(0)
    assert x.shape == (1, 3)
    x.t_()
    assert x.shape == (3, 1)
    y = ember.arange(6.0).reshape(2, 3)
    y.transpose_(0, 1)
    assert y.tolist() == torch_mod.arange(6.0).reshape(2, 3).t().tolist()
    leaf = ember.ones(2, 1, requires_grad=True)
    with pytest.raises(RuntimeError, match="leaf Variable that requires grad"):
        leaf.squeeze_()
    z = leaf * 2
    z.squeeze_(1)
    z.sum().backward()
    assert leaf.grad.tolist() == [[2.0], [2.0]]


def test_resize_keeps_leading_elements():
    x = ember.arange(6.0)
    x.resize_(2, 2)
    assert x.tolist() == [[0.0, 1.0], [2.0, 3.0]]
    x.resize_(3, 3)
    assert x.shape == (3, 3) and x.reshape(-1)[:4].tolist() == [0.0, 1.0, 2.0, 3.0]
    with pytest.raises(RuntimeError, match="cannot resize variables that require grad"):
        ember.ones(2, requires_grad=True).resize_(3)


def test_apply_map_new_and_fill_diagonal(torch_mod):
    x = ember.tensor([1.0, 2.0])
    x.apply_(lambda v: v * 10)
    assert x.tolist() == [10.0, 20.0]
    x.map_(ember.tensor([1.0, 2.0]), lambda a, b: a - b)
    assert x.tolist() == [9.0, 18.0]
    n = x.new(2, 3)
    assert n.shape == (2, 3) and n.dtype == x.dtype
    assert x.new([1, 2]).dtype == ember.float32
    for rows, wrap in [(7, True), (7, False), (3, False)]:
        e, t = ember.zeros(rows, 3), torch_mod.zeros(rows, 3)
        e.fill_diagonal_(5.0, wrap=wrap)
        t.fill_diagonal_(5.0, wrap=wrap)
        assert e.tolist() == t.tolist()
    cube, tcube = ember.zeros(2, 2, 2), torch_mod.zeros(2, 2, 2)
    cube.fill_diagonal_(1.0)
    tcube.fill_diagonal_(1.0)
    assert cube.tolist() == tcube.tolist()


def test_random_methods_and_where_dist(torch_mod):
    ember.manual_seed(0)
    b = ember.full((1000,), 0.3).bernoulli()
    assert set(np.unique(b.numpy())) <= {0.0, 1.0} and 0.2 < float(b.mean()) < 0.4
    m = ember.tensor([0.0, 1.0, 0.0]).multinomial(4, replacement=True)
    assert m.tolist() == [1, 1, 1, 1]
    a, c = ember.tensor([1.0, -2.0]), ember.tensor([3.0, 1.0])
    assert a.where(a > 0, c).tolist() == [1.0, 1.0]
    assert a.dist(c).item() == pytest.approx(
        torch_mod.tensor([1.0, -2.0]).dist(torch_mod.tensor([3.0, 1.0])).item()
    )


def test_top_level_forwarders():
    x = ember.tensor([[1.0, 2.0], [3.0, 4.0]])
    assert ember.is_same_size(x, x) and ember.get_device(x) == -1
    assert ember.narrow_copy(x, 0, 1, 1).tolist() == [[3.0, 4.0]]
    assert ember.fill(x, 7.0).tolist() == [[7.0, 7.0], [7.0, 7.0]] and x[0, 0].item() == 1.0
    assert ember.is_complex(x) is False and ember.is_storage(x) is False
    assert ember.real(x) is x


def test_as_strided_in_place_takes_storage_offset_by_keyword(torch_mod):
    for m in (ember, torch_mod):
        assert m.arange(10.0).as_strided_((2,), (1,), storage_offset=3).tolist() == [3.0, 4.0]
        assert m.as_strided_(m.arange(10.0), (2,), (2,), storage_offset=1).tolist() == [1.0, 3.0]


def test_narrow_copy_checks_dim_and_length_its_own_way():
    x = ember.zeros(10, 5, 20)
    with pytest.raises(RuntimeError, match=r"Expected dim < static_cast<int64_t>\(self_sizes"):
        x.narrow_copy(3, 0, 0)
    with pytest.raises(RuntimeError, match=r"start \(8\) \+ length \(-1\) exceeds dimension size"):
        ember.zeros(10).narrow_copy(0, -2, -1)
    assert ember.arange(10).narrow_copy(0, 2, 3).tolist() == [2, 3, 4]
