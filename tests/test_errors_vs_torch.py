"""The key phrases of PyTorch's error messages, checked on ember and on real torch alike."""

import pytest

import ember

CASES = [
    # (what goes wrong, the call, the phrase both libraries must say)
    ("matmul shapes", lambda m: m.ones(2, 3).mm(m.ones(4, 5)), "cannot be multiplied"),
    ("expand", lambda m: m.ones(2, 3).expand(4, 3), "The expanded size of the tensor"),
    ("reshape", lambda m: m.ones(2, 3).reshape(5), "is invalid for input of size 6"),
    ("view", lambda m: m.ones(3, 4).t().view(12), "view size is not compatible"),
    ("cat", lambda m: m.cat([m.ones(2, 3), m.ones(2, 4)]), "Sizes of tensors must match"),
    ("add_shapes", lambda m: m.ones(2, 3) + m.ones(4, 3), "must match the size of tensor b"),
    ("mul_shapes", lambda m: m.ones(2) * m.ones(3), "must match the size of tensor b"),
    ("gt_shapes", lambda m: m.ones(2) > m.ones(3), "must match the size of tensor b"),
    ("stack", lambda m: m.stack([m.ones(2), m.ones(3)]), "stack expects each tensor to be equal"),
    ("dim range", lambda m: m.ones(2).sum(3), "Dimension out of range"),
    ("index", lambda m: m.ones(2, 3)[0, 5], "out of bounds for dimension 1 with size 3"),
    ("too many idx", lambda m: m.ones(2)[0, 0], "too many indices for tensor of dimension 1"),
    ("gather idx", lambda m: m.ones(2, 3).gather(1, m.tensor([[5]])), "out of bounds"),
    ("dot", lambda m: m.ones(2, 2).dot(m.ones(2)), "1D tensors expected"),
    (
        "matmul 0-d",
        lambda m: m.ones(()) @ m.ones(2),
        "both arguments to matmul need to be at least 1D",
    ),
    ("item", lambda m: m.ones(2).item(), "cannot be converted to Scalar"),
    ("bool", lambda m: bool(m.ones(2)), "Boolean value of Tensor with more than one value"),
    ("int grad", lambda m: m.tensor([1, 2]).requires_grad_(), "only Tensors of floating point"),
    ("mean int", lambda m: m.tensor([1, 2]).mean(), "could not infer output dtype"),
    (
        "leaf inplace",
        lambda m: m.ones(2, requires_grad=True).add_(1),
        "a leaf Variable that requires grad",
    ),
    (
        "view of leaf inplace",
        lambda m: m.ones(2, 2, requires_grad=True)[0].mul_(2),
        "a view of a leaf Variable that requires grad",
    ),
    (
        "non-scalar backward",
        lambda m: (m.ones(2, requires_grad=True) * 2).backward(),
        "grad can be implicitly created only for scalar outputs",
    ),
    (
        "no grad_fn",
        lambda m: m.ones(2).sum().backward(),
        "does not require grad and does not have a grad_fn",
    ),
    (
        "cast in-place",
        lambda m: m.tensor([1, 2]).add_(1.5),
        "can't be cast to the desired output type",
    ),
    (
        "numpy grad",
        lambda m: m.ones(2, requires_grad=True).numpy(),
        "Can't call numpy() on Tensor that requires grad",
    ),
    (
        "neg bool",
        lambda m: -m.tensor([True]),
        "Negation, the `-` operator, on a bool tensor is not supported",
    ),
    (
        "sub bool",
        lambda m: m.tensor([True]) - m.tensor([False]),
        "Subtraction, the `-` operator, with two bool tensors",
    ),
    ("negative size", lambda m: m.zeros(-1), "Dimension size must be non-negative"),
    (
        "split sizes",
        lambda m: m.ones(5).split([2, 2]),
        "split_with_sizes expects split_sizes to sum exactly",
    ),
    (
        "masked_fill mask",
        lambda m: m.ones(2).masked_fill(m.ones(2), 0),
        "only supports boolean masks",
    ),
    (
        "int pow",
        lambda m: m.tensor([2]) ** -1,
        "Integers to negative integer powers are not allowed",
    ),
    ("len 0-d", lambda m: len(m.tensor(1.0)), "len() of a 0-d tensor"),
    ("cumsum_ bool", lambda m: m.tensor([True]).cumsum_(0), '"cumsum_out_cpu" not implemented'),
    ("cumprod_ bool", lambda m: m.tensor([True]).cumprod_(0), "not implemented for 'Bool'"),
    (
        "cumsum_ dtype",
        lambda m: m.ones(2).cumsum_(0, dtype=m.int64),
        "input tensor dtype float and output tensor dtype long int should match",
    ),
]


def _second_backward(m):
    x = m.ones(2, requires_grad=True)
    y = (x * x).sum()
    y.backward()
    y.backward()


def _modified_saved(m):
    x = m.ones(2, requires_grad=True)
    h = x * 2
    y = h * h
    h.add_(1)
    y.sum().backward()


def _unused_input(m):
    x = m.ones(2, requires_grad=True)
    z = m.ones(2, requires_grad=True)
    m.autograd.grad((x * 2).sum(), [x, z])


def _grad_shape(m):
    x = m.ones(2, requires_grad=True)
    (x * 2).backward(m.ones(3))


CASES += [
    ("second backward", _second_backward, "Trying to backward through the graph a second time"),
    ("modified saved", _modified_saved, "modified by an inplace operation"),
    ("unused input", _unused_input, "appears to not have been used in the graph"),
    ("grad shape", _grad_shape, "Mismatch in shape"),
]


@pytest.mark.parametrize("name,call,phrase", CASES, ids=[c[0] for c in CASES])
def test_error_phrase_matches_torch(name, call, phrase, torch_mod):
    for m in (ember, torch_mod):
        with pytest.raises((RuntimeError, IndexError, TypeError, ValueError)) as info:
            call(m)
        assert phrase in str(info.value), f"{m.__name__}: {info.value}"


@pytest.mark.parametrize("name,call,phrase", CASES, ids=[c[0] for c in CASES])
def test_error_phrase_without_torch(name, call, phrase):
    with pytest.raises((RuntimeError, IndexError, TypeError, ValueError)) as info:
        call(ember)
    assert phrase in str(info.value)


HOSTILE = [
    ("gather_negative", lambda m: m.gather(m.arange(4.0), 0, m.tensor([-1]))),
    ("scatter_negative", lambda m: m.zeros(4).scatter(0, m.tensor([-1]), m.ones(1))),
    ("scatter_add_negative", lambda m: m.zeros(4).scatter_add(0, m.tensor([-1]), m.ones(1))),
    ("index_select_negative", lambda m: m.index_select(m.arange(4.0), 0, m.tensor([-1]))),
    ("index_add_negative", lambda m: m.arange(4.0).index_add(0, m.tensor([-1]), m.ones(1))),
    ("embedding_negative", lambda m: m.nn.functional.embedding(m.tensor([-1]), m.ones(3, 2))),
    ("one_hot_negative", lambda m: m.nn.functional.one_hot(m.tensor([-1]))),
    ("cat_empty", lambda m: m.cat([])),
    ("argmax_empty", lambda m: m.argmax(m.tensor([]))),
    ("full_string", lambda m: m.full((2,), "a")),
    ("int64_overflow", lambda m: m.tensor([2**63])),
    ("int_floor_divide_by_zero", lambda m: m.tensor([1]) // m.tensor([0])),
    ("int_remainder_by_zero", lambda m: m.tensor([1]) % m.tensor([0])),
    ("int_div_floor_by_zero", lambda m: m.tensor([5]).div(m.tensor([0]), rounding_mode="floor")),
]


@pytest.mark.parametrize("name,make", HOSTILE, ids=[h[0] for h in HOSTILE])
def test_hostile_inputs_raise_torchs_exception_type(torch_mod, name, make):
    with pytest.raises(Exception) as expected:
        make(torch_mod)
    with pytest.raises(type(expected.value)):
        make(ember)


def test_float_division_by_zero_still_gives_inf():
    assert ember.tensor([5.0]).div(ember.tensor([0.0])).item() == float("inf")
    assert ember.tensor([2**62]).item() == 2**62
