"""Number-format and number-theory ops (ops/numeric.py), searching (ops/search.py) and
scatter_reduce / index_reduce (ops/scatter_reduce.py), against torch."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import ember
from tests.helpers import arrays_for, check_gradients, compare_with_torch

A, B = arrays_for([(3, 4), (3, 4)], seed=9)


@pytest.mark.parametrize(
    "fn",
    [
        lambda m, x, y: m.copysign(x, y.detach()),
        lambda m, x, y: m.copysign(x, -0.0),
        lambda m, x, y: m.deg2rad(x),
        lambda m, x, y: m.rad2deg(x),
        lambda m, x, y: m.ldexp(x, y.round()),
        lambda m, x, y: m.logaddexp2(x, y),
        lambda m, x, y: m.fix(x * 3),
        lambda m, x, y: m.sgn(x) * x,
    ],
)
def test_differentiable_numeric_ops_match_torch(fn):
    compare_with_torch(fn, [A, B])


def test_numeric_gradcheck():
    check_gradients(lambda m, x, y: m.copysign(x, y), arrays_for([(3, 1), (4,)], avoid=[0]))
    check_gradients(lambda m, x, y: m.logaddexp2(x, y), arrays_for([(2, 3), (3,)]))


def test_integer_and_bit_ops_match_torch(torch_mod):
    a, b = np.array([12, 18, -7, 0]), np.array([8, 12, 21, 5])
    for name in ("gcd", "lcm", "bitwise_left_shift", "bitwise_right_shift"):
        bb = np.abs(b) % 4 if "shift" in name else b
        e = getattr(ember, name)(ember.tensor(a), ember.tensor(bb))
        t = getattr(torch_mod, name)(torch_mod.tensor(a), torch_mod.tensor(bb))
        assert e.tolist() == t.tolist(), name
    assert (ember.tensor([1, 2]) << 2).tolist() == [4, 8]
    with pytest.raises(RuntimeError, match="not implemented for 'Float'"):
        ember.gcd(ember.ones(2), ember.ones(2))


def test_frexp_heaviside_nextafter(torch_mod):
    x = np.array([0.0, -3.5, 1e-3, 8.0])
    em, ee = ember.frexp(ember.tensor(x))
    tm, te = torch_mod.frexp(torch_mod.tensor(x))
    assert em.tolist() == tm.tolist() and ee.tolist() == te.tolist() and ee.dtype == ember.int32
    v = np.array([0.5, 0.5, 0.5, 0.5])
    assert (
        ember.heaviside(ember.tensor(x), ember.tensor(v)).tolist()
        == torch_mod.heaviside(torch_mod.tensor(x), torch_mod.tensor(v)).tolist()
    )
    assert (
        ember.nextafter(ember.tensor(x), ember.tensor(v)).tolist()
        == torch_mod.nextafter(torch_mod.tensor(x), torch_mod.tensor(v)).tolist()
    )


@pytest.mark.parametrize("right", [False, True])
def test_searchsorted_and_bucketize_match_torch(torch_mod, right):
    seq = np.array([[1.0, 3.0, 5.0, 7.0], [2.0, 4.0, 6.0, 8.0]])
    vals = np.array([[3.0, 6.0, 9.0], [1.0, 4.0, 8.0]])
    e = ember.searchsorted(ember.tensor(seq), ember.tensor(vals), right=right)
    t = torch_mod.searchsorted(torch_mod.tensor(seq), torch_mod.tensor(vals), right=right)
    assert e.tolist() == t.tolist() and e.dtype == ember.int64
    e = ember.bucketize(ember.tensor(vals), ember.tensor(seq[0]), right=right, out_int32=True)
    t = torch_mod.bucketize(
        torch_mod.tensor(vals), torch_mod.tensor(seq[0]), right=right, out_int32=True
    )
    assert e.tolist() == t.tolist() and e.dtype == ember.int32
    with pytest.raises(RuntimeError, match="side and right can't be set to opposites"):
        ember.searchsorted(ember.tensor(seq[0]), ember.tensor(vals), right=True, side="left")


def test_isin_matches_torch(torch_mod):
    e = ember.isin(ember.tensor([1, 2, 3, 4]), ember.tensor([2, 4]), invert=True)
    t = torch_mod.isin(torch_mod.tensor([1, 2, 3, 4]), torch_mod.tensor([2, 4]), invert=True)
    assert e.tolist() == t.tolist()
    assert ember.isin(ember.tensor([1, 2]), 2).tolist() == [False, True]


REDUCES = ["sum", "prod", "mean", "amax", "amin"]


@pytest.mark.parametrize("reduce", REDUCES)
@pytest.mark.parametrize("include_self", [True, False])
def test_scatter_reduce_matches_torch_with_gradients(reduce, include_self):
    index = np.array([[0, 1, 0, 2], [2, 2, 1, 0]])

    def fn(m, x, src):
        return m.scatter_reduce(x, 1, m.tensor(index), src, reduce, include_self=include_self)

    x, src = arrays_for([(2, 3), (2, 4)], seed=11)
    compare_with_torch(fn, [x, src])
    src_with_ties = src.copy()
    src_with_ties[0, 2] = src_with_ties[0, 0]
    x_zero = x.copy()
    x_zero[0, 0] = 0.0
    src_with_ties[1, 3] = 0.0
    compare_with_torch(fn, [x_zero, src_with_ties])


@pytest.mark.parametrize("reduce", REDUCES)
def test_scatter_reduce_gradcheck(reduce):
    index = ember.tensor([[0, 1, 0], [1, 1, 0]])
    check_gradients(
        lambda m, x, s: m.scatter_reduce(x, 1, index, s, reduce),
        arrays_for([(2, 2), (2, 3)], seed=12),
        gradgrad=reduce in ("sum", "mean"),
    )


@pytest.mark.parametrize("reduce", ["prod", "mean", "amax", "amin"])
def test_index_reduce_matches_torch(reduce):
    def fn(m, x, s):
        return x.index_reduce(0, m.tensor([0, 2, 0]), s, reduce)

    compare_with_torch(fn, arrays_for([(3, 2), (3, 2)], seed=13))


def test_scatter_reduce_rejects_unknown_reduction():
    with pytest.raises(RuntimeError, match="reduce argument must be either sum, prod, mean"):
        ember.scatter_reduce(ember.zeros(2), 0, ember.tensor([0]), ember.ones(1), "max")


def test_top_level_in_place_functions_and_aliases():
    x = ember.tensor([-1.0, 4.0])
    assert ember.abs_(x) is x and x.tolist() == [1.0, 4.0]
    ember.sqrt_(x)
    assert x.tolist() == [1.0, 2.0]
    y = ember.tensor([1.0, 2.0])
    y.eq_(ember.tensor([1.0, 3.0]))
    assert y.tolist() == [1.0, 0.0] and y.dtype == ember.float32
    assert ember.tensor([-2.0]).absolute().item() == 2.0
    z = ember.tensor([1.0, 2.0, 3.0])
    z.cumsum_(0)
    assert z.tolist() == [1.0, 3.0, 6.0]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert ember.tensor([0.5]).arctanh().item() == pytest.approx(np.arctanh(0.5))


def _first_and_second_order(m, fn, *values):
    leaves = [m.tensor(v, dtype=m.float64, requires_grad=True) for v in values]
    out = fn(m, *leaves)
    firsts = m.autograd.grad(out.sum(), leaves, create_graph=True, allow_unused=True)
    result = [out.detach().numpy()]
    for g in firsts:
        result.append(None if g is None else g.detach().numpy())
        if g is not None and g.requires_grad:
            seconds = m.autograd.grad(g.sum(), leaves, retain_graph=True, allow_unused=True)
            result.extend(None if s is None else s.numpy() for s in seconds)
    return result, type(out.grad_fn).__name__


@pytest.mark.parametrize(
    "fn, values",
    [
        (lambda m, a, b: m.copysign(a, b), ([1.0, -2.0, 0.0, -0.0], [-1.0, 1.0, -1.0, 2.0])),
        (lambda m, a: m.copysign(a, -1.0), ([1.0, -2.0, 0.0, -0.0],)),
        (lambda m, a, b: m.ldexp(a, b), ([1.0, -2.0, 0.5], [1.0, 2.0, -1.0])),
        # torch's pow(2, other) for an integer exponent: 2**-1 is 0, 2**70 wraps to 0
        (lambda m, a: m.ldexp(a, m.tensor([1, 2, -1, 70])), ([1.0, -2.0, 0.5, 3.0],)),
        (lambda m, a, b: m.atan2(a, b), ([0.0, 1.0, 0.0, -0.0], [0.0, 1.0, -0.0, 0.0])),
    ],
)
def test_gradients_and_their_gradients_follow_torchs_formulas(torch_mod, fn, values):
    ours, our_node = _first_and_second_order(ember, fn, *values)
    theirs, their_node = _first_and_second_order(torch_mod, fn, *values)
    assert our_node == their_node
    assert len(ours) == len(theirs)
    for e, t in zip(ours, theirs):
        assert (e is None) == (t is None)
        if e is not None:
            np.testing.assert_array_equal(e, t)  # zeros (not None) for copysign's other


def test_frexp_mantissa_and_nextafter_take_torchs_gradients(torch_mod):
    compare_with_torch(lambda m, x: m.frexp(x).mantissa, [np.array([3.0, -0.25, 10.0])])
    compare_with_torch(
        lambda m, x, y: m.nextafter(x, y), [np.array([3.0, -0.25]), np.array([1.0, 2.0])]
    )
    x = ember.tensor([3.0, -0.25], requires_grad=True)
    mantissa, exponent = ember.frexp(x)
    assert mantissa.grad_fn.name() == "FrexpBackward0" and not exponent.requires_grad
    (g,) = ember.autograd.grad(ember.nextafter(ember.ones(2), x).sum(), x)
    assert g.tolist() == [0.0, 0.0]  # zeros for other, not None
    check_gradients(lambda m, x: m.frexp(x)[0], [np.array([3.0, -0.3, 10.0])])


def test_numbers_where_torch_takes_only_tensors_raise_its_type_error(torch_mod):
    t = [1, 2, 3]
    calls = [
        lambda m: m.gcd(2, m.tensor(t)),
        lambda m: m.lcm(m.tensor(t), 2),
        lambda m: m.ldexp(m.tensor(t), 2),
        lambda m: m.copysign(2, m.tensor([1.0])),
        lambda m: m.fmod(2, 3),
        lambda m: m.float_power(2, 3),
    ]
    for call in calls:
        with pytest.raises(TypeError) as ours:
            call(ember)
        with pytest.raises(TypeError) as theirs:
            call(torch_mod)
        assert str(ours.value).split("(")[0] == str(theirs.value).split("(")[0]


def test_float_power_of_complex_and_its_in_place_dtype_rule_match_torch(torch_mod):
    for m in (ember, torch_mod):
        z = m.float_power(m.tensor([1 + 1j, 2.0], dtype=m.complex64), 2)
        assert str(z.dtype).endswith("complex128")
        w = m.float_power(m.tensor([2.0, 3.0]), 1j)
        assert str(w.dtype).endswith("complex128")
        with pytest.raises(RuntimeError, match="has dtype Float but the operation's result"):
            m.tensor([2.0]).float_power_(2)
        assert m.tensor([2.0], dtype=m.float64).float_power_(3).item() == 8.0
    np.testing.assert_allclose(
        ember.float_power(ember.tensor([2.0, 3.0]), 1j).numpy(),
        torch_mod.float_power(torch_mod.tensor([2.0, 3.0]), 1j).numpy(),
    )


def test_sgn_of_complex_everywhere_and_ldexp_with_a_complex_exponent(torch_mod):
    values = [1 + 1j, 0j, -2 + 0j]
    for m in (ember, torch_mod):
        x = m.tensor(values)
        out = m.empty(3, dtype=m.complex64)
        m.sgn(x, out=out)
        got = [m.sgn(x).numpy(), x.sgn().numpy(), x.clone().sgn_().numpy(), out.numpy()]
        got.append(m.ldexp(m.tensor([1.5 - 1j]), m.tensor([1.0 + 0.5j])).numpy())
        if m is ember:
            ours = got
    for a, b in zip(ours, got):
        np.testing.assert_allclose(a, b, rtol=1e-6)
