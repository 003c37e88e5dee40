"""torch's checks of the arguments of its random fills and samplers, with its messages.

torch checks a distribution's parameters before it looks at the tensor (an empty tensor, or
one of a dtype the fill refuses, still gets the parameter's error), and prints numbers as C++
streams do (``%g``: ``lambda=-1``, ``std nan``). The bounds of ``random_`` / ``randint`` follow
aten/src/ATen/native/DistributionTemplates.h: ``from < to``, both as the dtype holds them
(floats rounded as torch rounds them), then each within the dtype's range, with a warning
beyond the integers a float type holds exactly.

Example::
    >>> random_bounds(0, 1000, ember.int8)
    Traceback (most recent call last):
    RuntimeError: to - 1 is out of bounds for signed char
"""

from __future__ import annotations

import operator
import warnings

import numpy as np

from .. import _dtype as dt
from .sampler import _BITS_OF as FLOAT_DIGITS  # integers a float type holds exactly: 2^digits

_INT64_MIN = -(1 << 63)
# the largest finite value of each float type (bfloat16's without loading ml_dtypes)
_LARGEST = {
    "float16": 65504.0,
    "bfloat16": (2 - 2.0**-7) * 2.0**127,
    "float32": float(np.finfo(np.float32).max),
    "float64": float(np.finfo(np.float64).max),
}


def shown(value) -> str:
    """A number as torch's messages print it (C++ ``operator<<`` on a double: ``%g``)."""
    return f"{value:g}"


def _is_number(value) -> bool:
    return isinstance(value, (int, float, np.integer, np.floating))


# --- continuous fills ----------------------------------------------------------------------
def check_uniform(low, high, dtype: dt.dtype) -> None:
    """uniform_(from, to): both finite in ``dtype`` (a complex tensor's real type), from <= to,
    and to - from within the dtype's largest value."""
    if dtype.category in (dt.BOOL, dt.INT):
        raise NotImplementedError(
            f"\"check_uniform_bounds\" not implemented for '{dtype.legacy_name}'"
        )
    real = dtype.to_real()
    low, high = float(low), float(high)
    largest = _LARGEST[real.name]
    for value, name in ((low, "from"), (high, "to")):
        if not -largest <= value <= largest:
            raise RuntimeError(f"{name} is out of bounds for {real.c_name}")
    if low > high:
        raise RuntimeError(
            "uniform_ expects to return a [from, to) range, but found "
            f"from={shown(low)} > to={shown(high)}"
        )
    if high - low > largest:
        raise RuntimeError(
            f"uniform_ expects to-from <= std::numeric_limits<{real.legacy_name}>::max(), but "
            f"found to={shown(high)} and from={shown(low)} which result in to-from to exceed "
            "the limit"
        )


def check_normal_std(std) -> None:
    """normal_ / normal with a number std: std >= 0 (NaN fails)."""
    if not float(std) >= 0.0:
        raise RuntimeError(f"normal expects std >= 0.0, but found std {shown(float(std))}")


def check_normal_std_array(std: np.ndarray) -> None:
    """normal with a tensor std: real, and every element >= 0 (a NaN fails)."""
    if std.dtype.kind == "c":
        raise RuntimeError("normal expects standard deviation to be non-complex")
    if std.size and not std.min() >= 0:
        raise RuntimeError("normal expects all elements of std >= 0.0")


def check_exponential(lambd) -> None:
    lambd = float(lambd)
    if not lambd > 0.0:
        raise RuntimeError(f"exponential_ expects lambda > 0.0, but found lambda={shown(lambd)}")


def check_geometric(p) -> None:
    p = float(p)
    if not 0 < p < 1:
        raise RuntimeError(f"geometric_ expects p to be in (0, 1), but got p={shown(p)}")


def check_log_normal(std) -> None:
    std = float(std)
    if not std > 0.0:
        raise RuntimeError(f"log_normal_ expects std > 0.0, but found std={shown(std)}")


def check_cauchy(sigma) -> None:
    sigma = float(sigma)
    if not sigma > 0.0:
        raise RuntimeError(f"cauchy_ expects sigma > 0.0, but found sigma={shown(sigma)}")


def check_bernoulli_p(p) -> None:
    """bernoulli_(p) and bernoulli(input, p) with a number p: 0 <= p <= 1 (NaN fails)."""
    p = float(p)
    if not 0 <= p <= 1:
        raise RuntimeError(f"bernoulli_ expects p to be in [0, 1], but got p={shown(p)}")


def check_bernoulli_probabilities(probs: np.ndarray) -> None:
    """bernoulli(probs) and bernoulli_(probs): every probability in [0, 1] (NaN fails); torch's
    kernel checks with a bare condition, hence its message."""
    if probs.size and not bool(((probs >= 0) & (probs <= 1)).all()):
        raise RuntimeError(
            "Expected p_in >= 0 && p_in <= 1 to be true, but got false.  (Could this error "
            "message be improved?  If so, please report an enhancement request to PyTorch.)"
        )


# --- random_ / randint ------------------------------------------------------------------------
_RANDOM_SIGNATURES = (
    " * (*, ember.Generator generator = None)\n"
    " * (int from, int to, *, ember.Generator generator = None)\n"
    " * (int to, *, ember.Generator generator = None)\n"
)


def integer_argument(value, op: str, name: str, position: int) -> int:
    """An integer argument of ``op`` as torch's parser reads it: an int or anything with
    ``__index__`` (a 0-d integer tensor), never a bool or a float."""
    if not isinstance(value, (bool, np.bool_)):
        try:
            return operator.index(value)
        except TypeError:
            pass
    raise TypeError(
        f"{op}(): argument '{name}' (position {position}) must be int, not {type(value).__name__}"
    )


def random_arguments(args: tuple) -> tuple:
    """random_'s bounds as ints, or torch's TypeError listing its signatures."""
    try:
        return tuple(None if a is None else integer_argument(a, "random_", "", 0) for a in args)
    except TypeError:
        got = ", ".join(type(a).__name__ for a in args)
        raise TypeError(
            f"random_() received an invalid combination of arguments - got ({got}), but "
            f"expected one of:\n{_RANDOM_SIGNATURES}"
        ) from None


def random_bounds(low: int, high: int | None, dtype: dt.dtype) -> tuple[int, int]:
    """random_(from, to) and randint: the half-open ``[low, high)`` to draw from, after torch's
    checks. ``high=None`` is random_(from, None): from ``low`` up to the largest integer the
    dtype holds (2^digits for a float type), inclusive."""
    if dtype.category == dt.COMPLEX:
        raise RuntimeError(
            "check_random_bounds handles only integral, floating-point and boolean types"
        )
    floating = dtype.category == dt.FLOAT
    if high is None:
        if floating:
            to_inc = 1 << FLOAT_DIGITS[dtype.name]
            low = _round_from(low, dtype)
            if not low < to_inc:
                raise RuntimeError(
                    "random_ expects 'from' casted to dtype to be less than or equal to "
                    f"'to_inc' casted to dtype, but got from={low} > to_inc={to_inc}"
                )
        else:
            to_inc = 1 if dtype.category == dt.BOOL else int(np.iinfo(dtype.np).max)
        _check_in_range(low, to_inc, dtype)
        return low, to_inc + 1
    if not low < high:
        raise RuntimeError(
            f"random_ expects 'from' to be less than 'to', but got from={low} >= to={high}"
        )
    if floating:
        low, high = _round_from(low, dtype), _round_to(high, dtype)
        if not low < high:
            raise RuntimeError(
                "random_ expects 'from' casted to dtype to be less than 'to' casted to dtype, "
                f"but got from={low} >= to={high}"
            )
    _check_in_range(low, high - 1, dtype)
    return low, high


def _through_float(value: int, dtype: dt.dtype) -> int:
    """``static_cast<int64_t>(static_cast<scalar_t>(value))`` as torch's x86 build computes it:
    half and bfloat16 convert through float; a value beyond the type's range becomes infinity,
    which converts to the lowest int64."""
    if not -(1 << 63) <= value < (1 << 63):
        return _INT64_MIN
    through = np.float64 if dtype.name == "float64" else np.float32
    with np.errstate(over="ignore"):
        held = np.array(value, dtype=np.int64).astype(through).astype(dtype.np)
    as_float = float(held)
    return int(as_float) if np.isfinite(as_float) and abs(as_float) < 2.0**63 else _INT64_MIN


def _round_from(low: int, dtype: dt.dtype) -> int:
    """torch's update_from: a ``from`` whose successor rounds below it moves up to the next
    integer the float type holds."""
    from_plus_1 = _through_float(low + 1, dtype)
    if from_plus_1 < low:
        n = abs(low + 1).bit_length() - 1
        return from_plus_1 + (1 << (n - FLOAT_DIGITS[dtype.name] + 1))
    return low


def _round_to(high: int, dtype: dt.dtype) -> int:
    """torch's update_to: a ``to`` whose predecessor rounds up to it or past it moves down."""
    to_minus_1 = _through_float(high - 1, dtype)
    if to_minus_1 >= high:
        n = abs(high - 1).bit_length() - 1
        return to_minus_1 - (1 << (n - FLOAT_DIGITS[dtype.name] + 1))
    return high


def _check_in_range(low: int, to_inc: int, dtype: dt.dtype) -> None:
    """torch's check_from_to_in_range: both ends within the dtype's range (errors), and for a
    float type within the integers it holds exactly (a warning)."""
    if dtype.category == dt.FLOAT:
        largest = _LARGEST[dtype.name]
        smallest = -largest
    elif dtype.category == dt.BOOL:
        smallest, largest = 0, 1
    else:
        info = np.iinfo(dtype.np)
        smallest, largest = int(info.min), int(info.max)
    for value, name in ((low, "from"), (to_inc, "to - 1")):
        if not smallest <= value <= largest:
            raise RuntimeError(f"{name} is out of bounds for {dtype.c_name}")
    if dtype.category == dt.FLOAT:
        digits = FLOAT_DIGITS[dtype.name]
        for value, name in ((low, "from"), (to_inc, "to - 1")):
            if value < -(1 << digits) or value > (1 << digits):
                warnings.warn(
                    f"{name} is out of bounds [-(2^{digits}), 2^{digits}]. Due to precision "
                    f"limitations {dtype.c_name} can support discrete uniform distribution "
                    "only within this range. This warning will become an error in version "
                    "1.7 release, please fix the code in advance",
                    UserWarning,
                    stacklevel=2,
                )


# --- randperm ---------------------------------------------------------------------------------
_C_INTEGER_TYPES = {"int8": "int8_t", "uint8": "uint8_t", "int16": "int16_t", "int32": "int32_t"}
_RANDPERM_FLOAT_LIMITS = {
    "float16": ((1 << 11) + 1, "2049", "Half"),
    "float32": ((1 << 24) + 1, "2^24+1", "Float"),
    "float64": ((1 << 53) + 1, "2^53+1", "Double"),
}


def check_randperm(n, dtype: dt.dtype) -> int:
    """randperm(n, dtype=...): ``n`` an integer, not negative, its largest value held by the
    dtype (exactly, for a float type), a dtype torch's kernel has. Returns ``n``."""
    n = integer_argument(n, "randperm", "n", 1)
    if n < 0:
        raise RuntimeError(f"Trying to create tensor with negative dimension {n}: [{n}]")
    largest = n - 1 if n > 0 else n
    if dtype.name in _C_INTEGER_TYPES:
        info = np.iinfo(dtype.np)
        if not info.min <= largest <= info.max:
            raise RuntimeError(
                f"value cannot be converted to type {_C_INTEGER_TYPES[dtype.name]} without overflow"
            )
    if dtype.name in _RANDPERM_FLOAT_LIMITS:
        limit, text, name = _RANDPERM_FLOAT_LIMITS[dtype.name]
        if n > limit:
            raise RuntimeError(f"n cannot be greater than {text} for {name} type.")
    if dtype.category in (dt.BOOL, dt.COMPLEX):
        raise NotImplementedError(f"\"randperm\" not implemented for '{dtype.legacy_name}'")
    return n
