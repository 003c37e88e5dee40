"""out= on top-level functions: written in place, resized, cast, refused under autograd —
all as torch does."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import ember

X = np.array([[0.5, -1.5, 2.0], [3.0, 0.25, -0.75]])
Y = np.array([[1.0, 2.0, -1.0], [0.5, -2.0, 4.0]])

CASES = [
    ("add", lambda m: (m.tensor(X), m.tensor(Y))),
    ("mul", lambda m: (m.tensor(X), 3.0)),
    ("sub", lambda m: (m.tensor(X), m.tensor(Y))),
    ("div", lambda m: (m.tensor(X), m.tensor(Y))),
    ("maximum", lambda m: (m.tensor(X), m.tensor(Y))),
    ("exp", lambda m: (m.tensor(X),)),
    ("sqrt", lambda m: (m.tensor(np.abs(X)),)),
    ("tanh", lambda m: (m.tensor(X),)),
    ("clamp", lambda m: (m.tensor(X), -1.0, 1.0)),
    ("matmul", lambda m: (m.tensor(X), m.tensor(Y.T))),
    ("mm", lambda m: (m.tensor(X), m.tensor(Y.T))),
    ("cat", lambda m: ([m.tensor(X), m.tensor(Y)], 1)),
    ("stack", lambda m: ([m.tensor(X), m.tensor(Y)],)),
    ("sum", lambda m: (m.tensor(X), 1)),
    ("mean", lambda m: (m.tensor(X), 0)),
    ("cumsum", lambda m: (m.tensor(X), 1)),
    ("where", lambda m: (m.tensor(X) > 0, m.tensor(X), m.tensor(Y))),
    ("gt", lambda m: (m.tensor(X), m.tensor(Y))),
    ("tril", lambda m: (m.tensor(X),)),
    ("outer", lambda m: (m.tensor(X[0]), m.tensor(Y[0]))),
    ("quantile", lambda m: (m.tensor(X), 0.5)),
    ("arange", lambda m: (5,)),
]


@pytest.mark.parametrize("name,make", CASES, ids=[c[0] for c in CASES])
def test_out_matches_torch(torch_mod, name, make):
    expected = getattr(torch_mod, name)(*make(torch_mod))
    t_out = torch_mod.empty(0, dtype=expected.dtype)
    dtype = getattr(ember, str(expected.dtype).split(".")[-1])
    e_out = ember.empty(0, dtype=dtype)
    e_ret = getattr(ember, name)(*make(ember), out=e_out)
    getattr(torch_mod, name)(*make(torch_mod), out=t_out)
    assert e_ret is e_out
    assert tuple(e_out.shape) == tuple(t_out.shape)
    np.testing.assert_allclose(e_out.numpy(), t_out.numpy())


def test_out_of_right_shape_is_written_in_place_and_shared_with_views():
    base = ember.zeros(2, 3)
    row = base[1]
    ember.add(ember.ones(3), 1.0, out=row)
    assert base.tolist() == [[0, 0, 0], [2, 2, 2]]


def test_out_of_other_nonempty_shape_is_resized_with_a_warning():
    out = ember.zeros(5)
    with pytest.warns(UserWarning, match="was resized since it had shape \\[5\\]"):
        ember.exp(ember.zeros(2), out=out)
    assert out.tolist() == [1.0, 1.0]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        ember.exp(ember.zeros(3), out=ember.empty(0))


def test_out_casts_within_a_category_and_refuses_a_narrower_one():
    out = ember.empty(2, dtype=ember.float64)
    ember.mul(ember.ones(2), 2.0, out=out)
    assert out.dtype == ember.float64 and out.tolist() == [2.0, 2.0]
    with pytest.raises(RuntimeError, match="result type Float can't be cast to the desired"):
        ember.exp(ember.ones(2), out=ember.empty(2, dtype=ember.int64))


def test_out_refuses_autograd_as_torch(torch_mod):
    msg = "functions with out=... arguments don't support automatic differentiation"
    with pytest.raises(RuntimeError, match=msg):
        ember.mul(ember.ones(2, requires_grad=True), 2.0, out=ember.empty(2))
    with pytest.raises(RuntimeError, match=msg):
        ember.mul(ember.ones(2), 2.0, out=ember.empty(2, requires_grad=True))
    with ember.no_grad():
        out = ember.mul(ember.ones(2, requires_grad=True), 2.0, out=ember.empty(2))
    assert not out.requires_grad and out.tolist() == [2.0, 2.0]


def test_out_tuple_for_functions_with_two_results():
    values, indices = ember.empty(0), ember.empty(0, dtype=ember.int64)
    res = ember.sort(ember.tensor([3.0, 1.0, 2.0]), out=(values, indices))
    assert res.values is values and res.indices is indices
    assert values.tolist() == [1.0, 2.0, 3.0] and indices.tolist() == [1, 2, 0]
    v, i = ember.empty(0), ember.empty(0, dtype=ember.int64)
    ember.max(ember.tensor([[1.0, 5.0], [7.0, 2.0]]), 1, out=(v, i))
    assert v.tolist() == [5.0, 7.0] and i.tolist() == [1, 0]


def test_multinomial_out_must_be_long_whatever_its_values(torch_mod):
    # torch's multinomial checks out='s dtype before drawing (a float64 out is refused even
    # though the indices would cast to it)
    for lib in (ember, torch_mod):
        probs = lib.ones(1, 2, dtype=lib.float64)
        with pytest.raises(RuntimeError, match="multinomial expects Long tensor out, got: Double"):
            lib.multinomial(probs, 2, out=lib.empty(1, 2, dtype=lib.float64))
        out = lib.empty(1, 2, dtype=lib.long)
        assert lib.multinomial(probs, 2, out=out) is out
        assert sorted(out.tolist()[0]) == [0, 1]


def test_out_overlapping_itself_is_refused_as_torch():
    x = ember.tensor([1.0, 2.0, 3.0])
    expanded = ember.zeros(1).expand(2)
    with pytest.raises(RuntimeError, match="more than one element of the written-to tensor"):
        ember.index_select(x, 0, ember.tensor([0, 2]), out=expanded)


@pytest.mark.parametrize(
    "call",
    [
        lambda x, o: ember.gather(x, 0, ember.tensor([0, 1]), out=o),
        lambda x, o: ember.take(x, ember.tensor([0, 1]), out=o),
        lambda x, o: ember.masked_select(x, x > 0, out=o),
    ],
)
def test_out_sharing_memory_with_the_input_is_refused_as_torch(call):
    x = ember.tensor([1.0, 2.0, 3.0, 4.0])
    with pytest.raises(RuntimeError, match="input tensor and the written-to tensor"):
        call(x, x[:2])


def test_unbind_copy_out_fills_the_list_and_returns_none():
    x = ember.tensor(X)
    out = [ember.zeros(3), ember.zeros(3)]
    assert ember.unbind_copy(x, 0, out=out) is None
    np.testing.assert_array_equal(out[1].numpy(), X[1])
    with pytest.raises(RuntimeError, match="expected an out= argument of size 2, got size 1"):
        ember.unbind_copy(x, 0, out=[ember.zeros(3)])


def test_split_with_sizes_copy_out_fills_the_list_and_returns_none():
    x = ember.tensor(X)
    out = [ember.zeros(2, 1), ember.zeros(2, 2)]
    assert ember.split_with_sizes_copy(x, [1, 2], 1, out=out) is None
    np.testing.assert_array_equal(out[1].numpy(), X[:, 1:])


def test_nonzero_out_must_be_one_tensor():
    x = ember.tensor([0.0, 1.0])
    with pytest.raises(TypeError, match="argument 'out' must be Tensor, not tuple"):
        ember.nonzero(x, as_tuple=True, out=(ember.zeros(1, dtype=ember.int64),))
    with pytest.raises(RuntimeError, match="does not support the out kwarg when as_tuple"):
        ember.nonzero(x, as_tuple=True, out=ember.zeros(1, dtype=ember.int64))


def test_cat_into_an_empty_input_raises_overlap():
    # torch resizes the empty out before its overlap check: the input is then written to
    x, y = ember.zeros(0), ember.randn(4, 6)
    with pytest.raises(RuntimeError, match="the written-to tensor refer to a single memory"):
        ember.cat((x, y), dim=0, out=x)
    assert ember.cat((x, x), out=x).shape == (0,)


@pytest.mark.parametrize(
    ("name", "call", "message"),
    [
        ("gather", lambda s, i, o: ember.gather(s, 0, i, out=o),
         "Expected out tensor to have dtype float, but got double instead"),
        ("take", lambda s, i, o: ember.take(s, i, out=o),
         "self.dtype = Float and out.dtype = Double"),
        ("index_select", lambda s, i, o: ember.index_select(s, 0, i, out=o),
         r"index_select\(\): self and result must have the same scalar type"),
    ],
)  # fmt: skip
def test_out_of_another_dtype_refused_where_torch_does_not_cast(name, call, message):
    src, index = ember.tensor([1.0, 2.0, 3.0]), ember.tensor([2, 0])
    with pytest.raises(RuntimeError, match=message):
        call(src, index, ember.empty(2, dtype=ember.float64))
    out = ember.empty(2)
    assert call(src, index, out) is out and out.tolist() == [3.0, 1.0]


def test_bernoulli_out_may_be_its_input_but_not_an_expanded_tensor():
    x = ember.full((3,), 0.5)
    assert ember.bernoulli(x, out=x) is x
    with pytest.raises(RuntimeError, match="more than one element of the written-to tensor"):
        ember.bernoulli(ember.full((3,), 0.5), out=ember.zeros(1).expand(3))
