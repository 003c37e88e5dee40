"""``ember.abs_(x)`` and the other in-place functions PyTorch also offers at the top level:
each is ``x.<name>(...)``."""

from __future__ import annotations

from ._tensor import Tensor

NAMES = (
    "abs_ absolute_ acos_ acosh_ arccos_ arccosh_ arcsin_ arcsinh_ arctan_ arctanh_ asin_ "
    "asinh_ atan_ atanh_ ceil_ clamp_ clamp_max_ clamp_min_ clip_ cos_ cosh_ deg2rad_ erf_ "
    "erfc_ exp2_ exp_ expm1_ fill_ fix_ floor_ frac_ gcd_ index_put_ lcm_ ldexp_ log10_ "
    "log1p_ log2_ log_ logit_ nan_to_num_ neg_ negative_ rad2deg_ reciprocal_ relu_ round_ "
    "rsqrt_ sigmoid_ sin_ sinh_ sqrt_ square_ tan_ tanh_ trunc_ zero_"
).split()


def _forward_to_method(name: str):
    def function(input: Tensor, *args, **kwargs) -> Tensor:
        return getattr(input, name)(*args, **kwargs)

    function.__name__ = function.__qualname__ = name
    function.__doc__ = f"In-place: ``input.{name}(...)``."
    return function


__all__ = [name for name in NAMES if hasattr(Tensor, name)]
globals().update({name: _forward_to_method(name) for name in __all__})
