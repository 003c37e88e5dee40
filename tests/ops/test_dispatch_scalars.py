"""ops/_dispatch.promote_scalar: Python integers with integer tensors wrap into the tensor's
dtype as torch's do; ``~`` refuses floating tensors with torch's TypeError."""

import operator

import pytest

import ember

INT_DTYPES = ["uint8", "int8", "int16", "int32", "int64"]
SCALARS = [300, -1, -300, 70000, 2**31, 2**40, -(2**40), 2**63 - 1, -(2**63)]
OPS = {
    "add": operator.add,
    "sub": operator.sub,
    "mul": operator.mul,
    "rsub": lambda t, s: s - t,
    "radd": lambda t, s: s + t,
    "and": operator.and_,
    "or": operator.or_,
}


def test_uint8_plus_300_wraps_as_torch():
    out = ember.tensor([1], dtype=ember.uint8) + 300
    assert out.dtype == ember.uint8 and out.tolist() == [45]
    out = ember.tensor([1, 5], dtype=ember.int8) * -300
    assert out.dtype == ember.int8 and out.tolist() == [-44, 36]
    assert (ember.tensor([7], dtype=ember.int32) + 2**32).tolist() == [7]


@pytest.mark.parametrize("name", INT_DTYPES)
@pytest.mark.parametrize("op", sorted(OPS))
def test_integer_scalars_out_of_range_match_torch(torch_mod, name, op):
    fn = OPS[op]
    for s in SCALARS:
        want = fn(
            torch_mod.tensor(
                [1, 5, -3 if name != "uint8" else 200], dtype=getattr(torch_mod, name)
            ),
            s,
        )
        got = fn(
            ember.tensor([1, 5, -3 if name != "uint8" else 200], dtype=getattr(ember, name)), s
        )
        assert got.dtype.name == str(want.dtype).split(".")[-1], (s, op)
        assert got.tolist() == want.tolist(), (s, op)


@pytest.mark.parametrize("dtype", ["float32", "float64", "float16", "complex64"])
def test_invert_of_a_non_integer_tensor_raises_torchs_type_error(torch_mod, dtype):
    message = "only implemented on integer and Boolean-type tensors"
    with pytest.raises(TypeError, match=message):
        ~torch_mod.ones(2, dtype=getattr(torch_mod, dtype))
    with pytest.raises(TypeError, match=message):
        ~ember.ones(2, dtype=getattr(ember, dtype))


def test_invert_of_integer_and_bool_tensors():
    assert (~ember.tensor([0, 5], dtype=ember.int16)).tolist() == [-1, -6]
    assert (~ember.tensor([0, 5], dtype=ember.uint8)).tolist() == [255, 250]
    assert (~ember.tensor([True, False])).tolist() == [False, True]


_EXPONENTS = [2, 0, 127, 128, 255, 256, 300, -1, 2**31, 2**40, 2**63, 2**64, -(2**63) - 1]


@pytest.mark.parametrize("name", ["uint8", "int8", "int16", "int32", "int64"])
def test_integer_powers_refuse_exponents_torch_cannot_convert(torch_mod, name):
    """Unlike the other operators, pow converts its Python int exponent to the tensor's type
    and refuses overflow and negative powers as torch does."""
    for exponent in _EXPONENTS:
        outcomes = []
        for m in (torch_mod, ember):
            try:
                outcomes.append((m.tensor([2, 3], dtype=getattr(m, name)) ** exponent).tolist())
            except (RuntimeError, OverflowError) as error:
                outcomes.append((type(error).__name__, str(error).split("(")[0]))
        assert outcomes[0] == outcomes[1], (name, exponent)


@pytest.mark.parametrize("op", ["maximum", "minimum", "atan2"])
def test_two_tensor_ops_take_no_python_numbers(torch_mod, op):
    for m in (torch_mod, ember):
        with pytest.raises(TypeError, match=rf"{op}\(\): argument 'other' \(position 2\) must be"):
            getattr(m, op)(m.ones(2), 2)
        with pytest.raises(TypeError, match=rf"{op}\(\): argument 'input' \(position 1\) must be"):
            getattr(m, op)(2.0, m.ones(2))
