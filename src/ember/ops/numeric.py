"""Number-format and number-theory elementwise ops: copysign, ldexp/frexp, gcd/lcm, heaviside,
nextafter, angle conversions, bit shifts. Differentiable ones are composites of ember ops."""

from __future__ import annotations

import math

from .. import _dtype as dt
from .. import return_types
from .._tensor import Tensor
from ..autograd.grad_mode import no_grad
from ..autograd.node import Node
from ._dispatch import (
    array_module,
    broadcast_error,
    non_differentiable,
    promote,
    result,
    to_tensor,
    wrap,
)
from .elementwise import _integers_to_float, _require_tensor_input, float_result, logaddexp, trunc

LN2 = math.log(2.0)


def _require_tensor(op: str, name: str, position: int, value) -> None:
    """torch's parser refuses a number where its signature has only a Tensor."""
    if not isinstance(value, Tensor):
        raise TypeError(
            f"{op}(): argument '{name}' (position {position}) must be Tensor, "
            f"not {type(value).__name__}"
        )


class CopysignBackward0(Node):  # tensor other: torch gives it a zero gradient
    def backward(self, g):
        (a,) = self.unpack_saved()
        g_a = g * (self.saved_output() / a).masked_fill(a == 0, 0.0) if self.needs(0) else None
        g_other = _zeros_as(self.other) if self.needs(1) else None
        return g_a, g_other


class CopysignBackward1(Node):  # a number for other
    def backward(self, g):
        (a,) = self.unpack_saved()
        return g * (self.saved_output() / a).masked_fill(a == 0, 0.0)


def _zeros_as(meta) -> Tensor:
    shape, dtype, xp = meta
    return wrap(xp.zeros(shape, dtype=dtype))


def copysign(input, other) -> Tensor:
    """|input| with the sign of ``other`` (the sign bit, so -0.0 counts as negative).

    Gradients as torch: result/input for input (0 where input is 0), zeros for other."""
    _require_tensor_input("copysign", input, other)
    a, b = _integers_to_float("copysign", to_tensor(input), other)
    a, b = promote("copysign", a, b)
    a = float_result("copysign", a)
    b = float_result("copysign", b) if isinstance(b, Tensor) else b
    xp = array_module(a._data)
    if isinstance(b, Tensor):
        try:
            data = xp.copysign(a._data, b._data)
        except ValueError:
            raise broadcast_error("copysign", a._data, b._data) from None
        other = (b._data.shape, b._data.dtype, xp)  # what other's zero gradient looks like
        return result(CopysignBackward0, data, (a, b), (a,), True, other=other)
    data = xp.copysign(a._data, a._data.dtype.type(b))
    return result(CopysignBackward1, data, (a,), (a,), True)


def deg2rad(input: Tensor) -> Tensor:
    return float_result("deg2rad", input) * (math.pi / 180.0)


def rad2deg(input: Tensor) -> Tensor:
    return float_result("rad2deg", input) * (180.0 / math.pi)


class LdexpBackward0(Node):
    """torch's formulas: d/dinput = pow(2, other), d/dother = result · ln 2."""

    def backward(self, g):
        (other,) = self.unpack_saved()
        g_input = g * _two_to(other) if self.needs(0) else None
        g_other = g * self.saved_output() * LN2 if self.needs(1) else None
        return g_input, g_other


def _two_to(other: Tensor) -> Tensor:
    """at::pow(2, other): for integer exponents an integer power, as torch computes it (a
    negative exponent gives 0, and 2**63 and beyond wrap in int64)."""
    if other.dtype.is_floating_point or other.is_complex():
        return 2.0**other
    xp = array_module(other._data)
    e = other._data.astype(dt.int64.np)
    inside = (e >= 0) & (e < 64)
    return wrap(xp.where(inside, xp.left_shift(1, xp.where(inside, e, 0)), 0))


def ldexp(input: Tensor, other) -> Tensor:
    """input · 2^other, in the promoted floating dtype of both."""
    _require_tensor("ldexp", "input", 1, input)
    _require_tensor("ldexp", "other", 2, other)
    other = to_tensor(other, input)
    if input.dtype.is_floating_point and other._data.dtype.kind == "b":
        # PyTorch's kernel for a floating mantissa takes integer exponents, not bools
        raise NotImplementedError("\"ldexp_cpu_exp\" not implemented for 'Bool'")
    input = to_tensor(input)
    with no_grad():
        if input.dtype.is_floating_point and other._data.dtype.kind in "iu":
            out = input * (2.0 ** other.to(input.dtype))  # integer exponents keep input's dtype
        else:
            # as PyTorch: 2 ** other in other's floating dtype (the default one for integers),
            # then the product with the usual promotion
            inexact = other.dtype.is_floating_point or other.dtype.is_complex
            exponent = other if inexact else other.to(dt.get_default_dtype())
            out = input * (2.0**exponent)
    return result(LdexpBackward0, out._data, (input, other), (other,), save_output=True)


def frexp(input: Tensor):
    """(mantissa, exponent) with input = mantissa · 2^exponent, |mantissa| in [0.5, 1)."""

    if not input.dtype.is_floating_point:
        raise RuntimeError(
            f"torch.frexp() only supports floating-point dtypes but got {input.dtype.legacy_name}"
        )
    data = input._data
    xp = array_module(data)
    if data.dtype.kind != "f":  # bfloat16: float32 holds it exactly, and its mantissa too
        mantissa, exponent = xp.frexp(data.astype(dt.float32.np))
        mantissa = mantissa.astype(data.dtype)
    else:
        mantissa, exponent = xp.frexp(data)
    exponent = wrap(exponent.astype(dt.int32.np))
    mantissa = result(FrexpBackward0, mantissa, (input,), exponent=exponent)
    return return_types.frexp(mantissa, exponent)


class FrexpBackward0(Node):  # d mantissa/d input = 2^-exponent
    def backward(self, g):
        return g / self.exponent.to(g.dtype).exp2()


def _integer_op(op: str, kernel: str, input, other) -> Tensor:
    a, b = promote(op, to_tensor(input), to_tensor(other, input))
    if a._data.dtype.kind not in "iu":  # torch has no bool kernel for gcd, lcm or shifts
        raise NotImplementedError(f"\"{op}_cpu\" not implemented for '{a.dtype.legacy_name}'")
    xp = array_module(a._data)
    return wrap(getattr(xp, kernel)(a._data, b._data))


def gcd(input: Tensor, other: Tensor) -> Tensor:
    _require_tensor("gcd", "input", 1, input)
    _require_tensor("gcd", "other", 2, other)
    return _integer_op("gcd", "gcd", input, other)


def lcm(input: Tensor, other: Tensor) -> Tensor:
    _require_tensor("lcm", "input", 1, input)
    _require_tensor("lcm", "other", 2, other)
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
    x = input._data
    # torch's (x == 0 ? values : x > 0): NaN gives 0, where NumPy's heaviside gives NaN
    out = xp.where(x == 0, values._data, x > 0).astype(x.dtype, copy=False)
    return non_differentiable("heaviside", wrap(out), input, values)


def nextafter(input: Tensor, other) -> Tensor:
    a, b = promote("nextafter", input, to_tensor(other, input))
    if a._data.dtype.kind in "biu":
        raise NotImplementedError(f"\"nextafter_cpu\" not implemented for '{a.dtype.legacy_name}'")
    xp = array_module(a._data)
    return result(NextafterBackward0, xp.nextafter(a._data, b._data), (a, b))


class NextafterBackward0(Node):  # torch's formulas: the step is taken as constant
    def backward(self, g):
        g_other = g.new_zeros(g.shape) if self.needs(1) else None
        return (g if self.needs(0) else None), g_other


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
