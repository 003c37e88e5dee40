"""Number-format and number-theory elementwise ops: copysign, ldexp/frexp, gcd/lcm, heaviside,
nextafter, angle conversions, bit shifts. Differentiable ones are composites of ember ops."""

from __future__ import annotations

import math

from .. import _dtype as dt
from .. import return_types
from .._tensor import Tensor
from ._dispatch import array_module, non_differentiable, promote, to_tensor, wrap
from .elementwise import _integers_to_float, float_result, logaddexp, signbit, trunc, where

LN2 = math.log(2.0)


def copysign(input, other) -> Tensor:
    """|input| with the sign of ``other`` (the sign bit, so -0.0 counts as negative)."""
    a, b = _integers_to_float("copysign", to_tensor(input), other)
    a, b = promote("copysign", a, b)
    a = float_result("copysign", a)
    b = float_result("copysign", b) if isinstance(b, Tensor) else b
    negative = signbit(b) if isinstance(b, Tensor) else math.copysign(1.0, b) < 0
    if isinstance(negative, Tensor):
        return where(negative, -a.abs(), a.abs())
    return -a.abs() if negative else a.abs()


def deg2rad(input: Tensor) -> Tensor:
    return float_result("deg2rad", input) * (math.pi / 180.0)


def rad2deg(input: Tensor) -> Tensor:
    return float_result("rad2deg", input) * (180.0 / math.pi)


def ldexp(input: Tensor, other) -> Tensor:
    """input · 2^other, in the promoted floating dtype of both."""
    other = to_tensor(other, input)
    if input.dtype.is_floating_point and other._data.dtype.kind == "b":
        # PyTorch's kernel for a floating mantissa takes integer exponents, not bools
        raise NotImplementedError("\"ldexp_cpu_exp\" not implemented for 'Bool'")
    input = to_tensor(input)
    if input.dtype.is_floating_point and other._data.dtype.kind in "iu":
        return input * (2.0 ** other.to(input.dtype))  # integer exponents keep input's dtype
    # otherwise, as PyTorch: 2 ** other in other's floating dtype (the default one for
    # integers), then the product with the usual promotion
    exponent = other if other.dtype.is_floating_point else other.to(dt.get_default_dtype())
    return input * (2.0**exponent)


def frexp(input: Tensor):
    """(mantissa, exponent) with input = mantissa · 2^exponent, |mantissa| in [0.5, 1)."""

    if input._data.dtype.kind != "f":
        raise RuntimeError(
            f"torch.frexp() only supports floating-point dtypes but got {input.dtype.legacy_name}"
        )
    xp = array_module(input._data)
    mantissa, exponent = xp.frexp(input._data)
    frexp_result = return_types.frexp
    return frexp_result(wrap(mantissa), wrap(exponent.astype(dt.int32.np)))


def _integer_op(op: str, kernel: str, input, other) -> Tensor:
    a, b = promote(op, to_tensor(input), to_tensor(other, input))
    if a._data.dtype.kind not in "iub":
        raise RuntimeError(f"\"{op}_cpu\" not implemented for '{a.dtype.legacy_name}'")
    xp = array_module(a._data)
    return wrap(getattr(xp, kernel)(a._data, b._data))


def gcd(input: Tensor, other) -> Tensor:
    return _integer_op("gcd", "gcd", input, other)


def lcm(input: Tensor, other) -> Tensor:
    return _integer_op("lcm", "lcm", input, other)


def bitwise_left_shift(input, other) -> Tensor:
    return _integer_op("lshift", "left_shift", input, other)


def bitwise_right_shift(input, other) -> Tensor:
    return _integer_op("rshift", "right_shift", input, other)


def heaviside(input: Tensor, values: Tensor) -> Tensor:
    """0 where input < 0, ``values`` where input == 0, 1 where input > 0."""
    if not isinstance(values, Tensor):
        raise TypeError("heaviside(): argument 'values' must be Tensor")
    if input.dtype != values.dtype:
        raise RuntimeError("heaviside is not yet implemented for tensors with different dtypes")
    xp = array_module(input._data)
    out = xp.heaviside(input._data, values._data).astype(input._data.dtype, copy=False)
    return non_differentiable("heaviside", wrap(out), input, values)


def nextafter(input: Tensor, other) -> Tensor:
    a, b = promote("nextafter", input, to_tensor(other, input))
    if a._data.dtype.kind in "biu":
        raise NotImplementedError(f"\"nextafter_cpu\" not implemented for '{a.dtype.legacy_name}'")
    xp = array_module(a._data)
    return non_differentiable("nextafter", wrap(xp.nextafter(a._data, b._data)), a, b)


def logaddexp2(input, other) -> Tensor:
    """log2(2^input + 2^other)."""
    a = float_result("logaddexp2", to_tensor(input))
    b = float_result("logaddexp2", to_tensor(other, a))
    return logaddexp(a * LN2, b * LN2) / LN2


def fix(input: Tensor) -> Tensor:
    return trunc(input)


def sgn(input: Tensor) -> Tensor:
    """The sign; z/|z| for complex tensors."""
    from .complex import sgn as complex_sgn

    return complex_sgn(input)


def isreal(input: Tensor) -> Tensor:
    """True where the imaginary part is zero (everywhere for real tensors)."""
    xp = array_module(input._data)
    if input.dtype.is_complex:
        return wrap(xp.imag(input._data) == 0)
    return wrap(xp.ones(input._data.shape, dtype=bool))
