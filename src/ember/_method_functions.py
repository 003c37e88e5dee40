"""Top-level functions that are a Tensor method under the same name: ``ember.abs_(x)`` is
``x.abs_()``, ``ember.is_nonzero(x)`` is ``x.is_nonzero()``."""

from __future__ import annotations

from ._tensor import Tensor

NAMES = (
    "abs_ absolute_ acos_ acosh_ arccos_ arccosh_ arcsin_ arcsinh_ arctan_ arctanh_ asin_ "
    "asinh_ atan_ atanh_ ceil_ clamp_ clamp_max_ clamp_min_ clip_ cos_ cosh_ deg2rad_ erf_ "
    "erfc_ exp2_ exp_ expm1_ fill_ fix_ floor_ frac_ gcd_ index_put_ lcm_ ldexp_ log10_ "
    "log1p_ log2_ log_ logit_ nan_to_num_ neg_ negative_ rad2deg_ reciprocal_ relu_ round_ "
    "rsqrt_ sigmoid_ sin_ sinh_ sqrt_ square_ tan_ tanh_ trunc_ zero_ "
    # queries and the real-only complex helpers
    "is_nonzero is_same_size is_signed get_device is_inference is_conj is_neg resolve_conj "
    "resolve_neg conj conj_physical conj_physical_ angle dist narrow_copy detach detach_ "
    "fill_diagonal_ index_copy_ index_reduce_ scatter_reduce_ put_ "
    # aliases and in-place forms that PyTorch also exposes at the top level
    "absolute arccosh arcsinh arctanh sinc_ i0_ xlogy_ addmv_ as_strided_ resize_as_ "
    "unsafe_chunk unsafe_split unsafe_split_with_sizes"
).split()


def _forward_to_method(name: str):
    def function(input: Tensor, *args, **kwargs) -> Tensor:
        return getattr(input, name)(*args, **kwargs)

    function.__name__ = function.__qualname__ = name
    function.__doc__ = f"``input.{name}(...)``."
    return function


__all__ = [name for name in NAMES if hasattr(Tensor, name)]
globals().update({name: _forward_to_method(name) for name in __all__})
