"""Factories read their size as torch's argument parser does (ember._size_argument)."""

import numpy as np
import pytest

import ember

# (id, call on a module, exception type, ember's message)
BAD = [
    ("ones(2.5)", lambda m: m.ones(2.5), TypeError,
     "ones(): argument 'size' (position 1) must be tuple of ints, not float"),
    ("zeros(2.5)", lambda m: m.zeros(2.5), TypeError,
     "zeros(): argument 'size' (position 1) must be tuple of ints, not float"),
    ("empty((2.5,))", lambda m: m.empty((2.5,)), TypeError,
     "empty(): argument 'size' (position 1) must be tuple of ints, but found element of type "
     "float at pos 0"),
    ("ones([2.5])", lambda m: m.ones([2.5]), TypeError, "found element of type float at pos 0"),
    ("ones(2, 2.5)", lambda m: m.ones(2, 2.5), TypeError,
     "ones(): argument 'size' failed to unpack the object at pos 2 with error \"type must be "
     "tuple of ints,but got float\""),
    ("ones((2, 2.5))", lambda m: m.ones((2, 2.5)), TypeError,
     "failed to unpack the object at pos 2"),
    ("ones(2, None)", lambda m: m.ones(2, None), TypeError, "but got NoneType"),
    ("ones(2.5, 2)", lambda m: m.ones(2.5, 2), TypeError,
     "ones() takes 1 positional argument but 2 were given"),
    ("ones(size=2.5)", lambda m: m.ones(size=2.5), TypeError,
     "ones(): argument 'size' must be tuple of ints, not float"),
    ("ones(size=2)", lambda m: m.ones(size=2), TypeError, "must be tuple of ints, not int"),
    ("ones(True)", lambda m: m.ones(True), TypeError, "must be tuple of ints, not bool"),
    ("ones(None)", lambda m: m.ones(None), TypeError, "must be tuple of ints, not NoneType"),
    ("ones('a')", lambda m: m.ones("a"), TypeError, "must be tuple of ints, not str"),
    ("ones(np.float64)", lambda m: m.ones(np.float64(2.0)), TypeError,
     "must be tuple of ints, not numpy.float64"),
    ("ones(np.array)", lambda m: m.ones(np.array([2, 3])), TypeError,
     "must be tuple of ints, not numpy.ndarray"),
    ("ones(float tensor)", lambda m: m.ones(m.tensor(2.0)), TypeError,
     "must be tuple of ints, not Tensor"),
    ("ones(1-d tensor)", lambda m: m.ones(m.tensor([2, 3])), TypeError,
     "must be tuple of ints, not Tensor"),
    ("full(2, 1.)", lambda m: m.full(2, 1.0), TypeError,
     "full(): argument 'size' (position 1) must be tuple of ints, not int"),
    ("full((2, 2.5), 1.)", lambda m: m.full((2, 2.5), 1.0), TypeError,
     "full(): argument 'size' failed to unpack the object at pos 2"),
    ("rand(2.5)", lambda m: m.rand(2.5), TypeError,
     "rand(): argument 'size' (position 1) must be tuple of ints, not float"),
    ("randn((2.5,))", lambda m: m.randn((2.5,)), TypeError,
     "randn(): argument 'size' (position 1) must be tuple of ints, but found element"),
    ("new_ones(2.5)", lambda m: m.empty(2).new_ones(2.5), TypeError,
     "new_ones(): argument 'size' (position 1) must be tuple of ints, not float"),
    ("new_zeros((2, 2.5))", lambda m: m.empty(2).new_zeros((2, 2.5)), TypeError,
     "new_zeros(): argument 'size' failed to unpack the object at pos 2"),
    ("ones(-1)", lambda m: m.ones(-1), RuntimeError,
     "Trying to create tensor with negative dimension -1: [-1]"),
    ("randn(2, -3)", lambda m: m.randn(2, -3), RuntimeError,
     "Trying to create tensor with negative dimension -3: [2, -3]"),
    ("full((-1,), 2.)", lambda m: m.full((-1,), 2.0), RuntimeError,
     "Trying to create tensor with negative dimension -1: [-1]"),
    ("zeros(2, -1)", lambda m: m.zeros(2, -1), RuntimeError,
     "zeros: Dimension size must be non-negative."),
]  # fmt: skip


@pytest.mark.parametrize(
    ("call", "error", "message"), [b[1:] for b in BAD], ids=[b[0] for b in BAD]
)
def test_bad_sizes_raise(call, error, message):
    with pytest.raises(error) as info:
        call(ember)
    assert message in str(info.value)


@pytest.mark.parametrize(
    ("call", "error", "message"), [b[1:] for b in BAD], ids=[b[0] for b in BAD]
)
def test_bad_sizes_raise_as_torch(call, error, message, torch_mod):
    with pytest.raises(error) as info:
        call(torch_mod)
    assert message in str(info.value)


GOOD = [
    ("ones(2, 3)", lambda m: m.ones(2, 3), (2, 3)),
    ("ones((2, 3))", lambda m: m.ones((2, 3)), (2, 3)),
    ("ones([2, 3])", lambda m: m.ones([2, 3]), (2, 3)),
    ("ones(Size)", lambda m: m.ones(m.Size([2, 3])), (2, 3)),
    ("ones(size=(2, 3))", lambda m: m.ones(size=(2, 3)), (2, 3)),
    ("ones(())", lambda m: m.ones(()), ()),
    ("ones(numpy ints)", lambda m: m.ones(np.int64(2), np.int32(3)), (2, 3)),
    ("ones(0-d int tensor)", lambda m: m.ones(m.tensor(2)), (2,)),
    ("ones(2, 0-d int tensor)", lambda m: m.ones(2, m.tensor(3)), (2, 3)),
    ("ones(2, True)", lambda m: m.ones(2, True), (2, 1)),  # a bool after the first is an int
    ("full([2, 3], 1.)", lambda m: m.full([2, 3], 1.0), (2, 3)),
    ("randint(3, (2,))", lambda m: m.randint(3, (2,)), (2,)),
    ("new_empty(2, 3)", lambda m: m.empty(1).new_empty(2, 3), (2, 3)),
]


@pytest.mark.parametrize(("call", "shape"), [g[1:] for g in GOOD], ids=[g[0] for g in GOOD])
def test_good_sizes_make_their_shape(call, shape):
    assert tuple(call(ember).shape) == shape


@pytest.mark.parametrize(("call", "shape"), [g[1:] for g in GOOD], ids=[g[0] for g in GOOD])
def test_good_sizes_make_their_shape_in_torch(call, shape, torch_mod):
    assert tuple(call(torch_mod).shape) == shape
