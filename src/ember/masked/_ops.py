"""``ember.masked``'s reductions and normalizations on strided tensors, with torch's rules.

Every function takes ``mask=`` (a bool tensor broadcastable to the input, or None for all
elements). A masked-out element takes the reduction's identity before the plain reduction
runs (0 for sum, 1 for prod, -inf for amax, ...), so gradients are the plain reduction's
gradients with zeros at masked-out places. Reductions whose identity is undefined (mean,
var, std, median) give ``nan`` for a fully masked-out slice, as torch does.
"""

from __future__ import annotations

import math

from .. import _op_namespace as _ops
from .. import linalg as _linalg
from .._dtype import bool_ as _bool
from .._dtype import float32 as _float32
from .._dtype import int8, int16, int32, int64, uint8
from .._type_info import iinfo as _iinfo
from ..nn import functional as _functional
from . import _core
from ._core import MaskedTensor

_PROMOTED_TO_INT64 = frozenset({uint8, _bool, int8, int16, int32})


def _canonical_dim(dim, ndim: int) -> tuple[int, ...]:
    """``dim`` as a sorted tuple of non-negative dims; None and () mean every dim."""
    if dim is None or dim == ():
        return tuple(range(ndim))
    ndim = max(ndim, 1)
    dims = (dim,) if isinstance(dim, int) else tuple(dim)
    result: list[int] = []
    for d in dims:
        if d in result:
            raise RuntimeError(f"dim={d} appears multiple times in the list of dims")
        if d >= ndim or d < -ndim:
            raise IndexError(
                f"Dimension out of range (expected to be in range of [{-ndim}, {ndim - 1}], "
                f"but got {d})"
            )
        result.append(d % ndim)
    return tuple(sorted(result))


def _is_masked_tensor(value) -> bool:
    return isinstance(value, MaskedTensor)


def _input_mask(input, *args, mask=None, **kwargs):
    """``mask`` broadcast to ``input``'s shape, dense and bool (torch.masked's private helper,
    which OpInfo's gradient checks call)."""
    if mask is None:
        raise ValueError("_input_mask requires explicit mask")
    if getattr(mask, "layout", None) is not None and mask.layout != input.layout:
        mask = mask.to_dense()
    if tuple(mask.shape) != tuple(input.shape):
        if mask.ndim > input.ndim:
            raise IndexError(
                "_input_mask expected broadcastable mask (got mask dimensionality higher than "
                "of the input)"
            )
        mask = _ops.broadcast_to(mask.clone(), input.shape)
    return mask.to(dtype=_bool)


def _output_mask(op, input, *args, **kwargs):
    """Which elements of ``op(input, *args, mask=...)``'s result are defined: for a
    reduction, the slices that keep at least one element; for a normalization, the mask.
    (torch.masked's private helper; OpInfo's gradient checks call it.)"""
    name = getattr(op, "__name__", None)
    if name in _REDUCTIONS:
        if name == "norm" and args:
            args = args[1:]  # the ord argument
        dim = args[0] if args else kwargs.get("dim")
        inmask = _input_mask(input, mask=kwargs.get("mask"))
        dims = _canonical_dim(dim, input.ndim)
        return _ops.any(inmask, dims, keepdim=bool(kwargs.get("keepdim", False)))
    if name in _NORMALIZATIONS:
        return _input_mask(input, mask=kwargs.get("mask"))
    raise ValueError(f"_output_mask expected masked operation (got {type(op).__name__} object)")


_REDUCTIONS = frozenset(
    "sum prod amax amin argmax argmin mean median norm var std logsumexp".split()
)
_NORMALIZATIONS = frozenset("softmax log_softmax softmin normalize cumsum cumprod".split())


def _identity(op_name: str, input, ord=None):
    """The value a masked-out element takes so that ``op`` ignores it (torch's table)."""
    dtype = input.dtype
    floating = dtype.is_floating_point
    integral = dtype.is_signed or dtype == uint8
    value = None
    if op_name in ("sum", "cumsum"):
        value = 0
    elif op_name in ("prod", "cumprod"):
        value = 1
    elif op_name in ("amax", "argmax", "logaddexp", "logsumexp"):
        if floating or (op_name == "logsumexp" and dtype.is_complex):
            value = -math.inf
        elif integral and not dtype.is_complex:
            value = _iinfo(dtype).min
    elif op_name in ("amin", "argmin"):
        if floating:
            value = math.inf
        elif integral and not dtype.is_complex:
            value = _iinfo(dtype).max
    elif op_name == "norm":
        value = math.inf if ord == -math.inf else 0
    elif op_name == "median":
        return _ops.tensor(math.nan, dtype=dtype if floating else _float32, device=input.device)
    if value is None:
        raise NotImplementedError(f"identity of {op_name} on {dtype} input")
    return _ops.tensor(value, dtype=dtype, device=input.device)


def _masked_input(op_name: str, input, mask, ord=None):
    """``input`` with its masked-out elements replaced by ``op_name``'s identity."""
    if _is_masked_tensor(input):
        input, mask = input.get_data(), input.get_mask()
    if mask is None:
        return input
    return _ops.where(_input_mask(input, mask=mask), input, _identity(op_name, input, ord))


def _strided_only(name: str, input) -> None:
    if input.layout != "strided" and not _is_masked_tensor(input):
        raise ValueError(f"masked {name} expects strided tensor (got {input.layout} tensor)")


def _integer_promoted(input, dtype):
    if dtype is None:
        return int64 if input.dtype in _PROMOTED_TO_INT64 else input.dtype
    return dtype


def _data_and_mask(input, mask):
    """A MaskedTensor's data and mask, or ``input`` and ``mask`` as given."""
    if _is_masked_tensor(input):
        return input.get_data(), input.get_mask()
    return input, mask


def sum(input, dim=None, *, keepdim: bool = False, dtype=None, mask=None):
    """Sum of the elements that ``mask`` keeps (masked-out elements count as 0).

    Example::
        >>> x = ember.tensor([[1.0, 2.0], [3.0, 4.0]])
        >>> ember.masked.sum(x, 1, mask=ember.tensor([[True, False], [False, False]]))
        tensor([1., 0.])
    """
    _strided_only("sum", input)
    dtype = _integer_promoted(input, dtype)
    dims = _canonical_dim(dim, input.ndim)
    return _ops.sum(_masked_input("sum", input, mask), dims, bool(keepdim), dtype=dtype)


def prod(input, dim=None, *, keepdim: bool = False, dtype=None, mask=None):
    """Product of the elements that ``mask`` keeps (masked-out elements count as 1)."""
    _strided_only("prod", input)
    dtype = _integer_promoted(input, dtype)
    dims = _canonical_dim(dim, input.ndim)
    result = _masked_input("prod", input, mask).to(dtype=dtype)
    for d in reversed(dims):
        result = result.prod(dim=d, keepdim=bool(keepdim))
    return result


def cumsum(input, dim: int, *, dtype=None, mask=None):
    """Cumulative sum along ``dim``; masked-out elements add 0."""
    _strided_only("cumsum", input)
    dtype = input.dtype if dtype is None else dtype
    d = _canonical_dim(dim, input.ndim)[0]
    return _ops.cumsum(_masked_input("sum", input, mask), d, dtype=dtype).to(dtype=dtype)


def cumprod(input, dim: int, *, dtype=None, mask=None):
    """Cumulative product along ``dim``; masked-out elements multiply by 1."""
    _strided_only("cumprod", input)
    dtype = input.dtype if dtype is None else dtype
    d = _canonical_dim(dim, input.ndim)[0]
    return _ops.cumprod(_masked_input("prod", input, mask), d, dtype=dtype).to(dtype=dtype)


def amax(input, dim=None, *, keepdim: bool = False, dtype=None, mask=None):
    """Maximum of the kept elements; a fully masked-out slice gives the lowest value."""
    _strided_only("amax", input)
    dtype = input.dtype if dtype is None else dtype
    masked = _masked_input("amax", input, mask)
    return _ops.amax(masked, _canonical_dim(dim, masked.ndim), bool(keepdim)).to(dtype=dtype)


def amin(input, dim=None, *, keepdim: bool = False, dtype=None, mask=None):
    """Minimum of the kept elements; a fully masked-out slice gives the highest value."""
    _strided_only("amin", input)
    dtype = input.dtype if dtype is None else dtype
    masked = _masked_input("amin", input, mask)
    return _ops.amin(masked, _canonical_dim(dim, masked.ndim), bool(keepdim)).to(dtype=dtype)


def argmax(input, dim: int | None = None, *, keepdim: bool = False, dtype=None, mask=None):
    """Index of the kept maximum, cast to ``dtype`` (the input's by default, as torch does)."""
    _strided_only("argmax", input)
    dtype = input.dtype if dtype is None else dtype
    masked = _masked_input("argmax", input, mask)
    return _ops.argmax(masked, dim, bool(keepdim)).to(dtype=dtype)


def argmin(input, dim: int | None = None, *, keepdim: bool = False, dtype=None, mask=None):
    """Index of the kept minimum, cast to ``dtype`` (the input's by default, as torch does)."""
    _strided_only("argmin", input)
    dtype = input.dtype if dtype is None else dtype
    masked = _masked_input("argmin", input, mask)
    return _ops.argmin(masked, dim, bool(keepdim)).to(dtype=dtype)


def _count(input, mask, dims, keepdim: bool):
    """How many elements each reduced slice keeps (int64)."""
    if mask is None:
        ones = _ops.ones(input.shape, dtype=int64, device=input.device)
        return _ops.sum(ones, dims, keepdim)
    return _ops.sum(mask, dims, keepdim)


def mean(input, dim=None, *, keepdim: bool = False, dtype=None, mask=None):
    """Mean of the kept elements; ``nan`` where a slice keeps none.

    Example::
        >>> x = ember.tensor([[1.0, 2.0], [3.0, 4.0]])
        >>> ember.masked.mean(x, 1, mask=ember.tensor([[True, True], [False, False]]))
        tensor([1.5000,    nan])
    """
    source = "Optional"
    if dtype is None:
        dtype, source = input.dtype, "Input"
    if not (dtype.is_floating_point or dtype.is_complex):
        raise ValueError(
            f"mean(): Could not infer output dtype. {source} dtype must be either "
            f"a floating point or complex dtype. Got: {dtype}"
        )
    _strided_only("mean", input)
    input, mask = _data_and_mask(input, mask)
    dims = _canonical_dim(dim, input.ndim)
    inmask = None if mask is None else _input_mask(input, mask=mask)
    count = _count(input, inmask, dims, bool(keepdim))
    total = sum(input, dim, keepdim=keepdim, dtype=dtype, mask=inmask)
    return total / count


def median(input, dim: int = -1, *, keepdim: bool = False, dtype=None, mask=None):
    """Median of the kept elements along ``dim`` (``nan`` for a fully masked-out slice)."""
    _strided_only("median", input)
    dtype = input.dtype if dtype is None else dtype
    d = _canonical_dim(dim, input.ndim)[0]
    input, mask = _data_and_mask(input, mask)
    is_float = input.dtype.is_floating_point
    if not is_float:
        input = input.to(dtype=_float32)
    output = _ops.nanmedian(_masked_input("median", input, mask), d, keepdim).values
    if is_float:
        return output
    if not bool(_ops.isnan(output).any()):
        return output.to(dtype=dtype)
    raise ValueError(
        "masked median expects no fully masked out rows if dtype is not floating point"
    )


def logsumexp(input, dim=None, *, keepdim: bool = False, dtype=None, mask=None):
    """log(sum(exp)) of the kept elements (``-inf`` for a fully masked-out slice)."""
    _strided_only("logsumexp", input)
    dtype = input.dtype if dtype is None else dtype
    dims = _canonical_dim(dim, input.ndim)
    masked = _masked_input("logsumexp", input, mask)
    return _ops.logsumexp(masked, dims, keepdim=keepdim).to(dtype=dtype)


def logaddexp(input, other, *, dtype=None, input_mask=None, other_mask=None):
    """``log(exp(input) + exp(other))`` with each side's masked-out elements as ``-inf``.

    Example::
        >>> mask = ember.tensor([True, False, True])
        >>> ember.masked.logaddexp(ember.tensor([-100.0, -200, -300]),
        ...                        ember.tensor([-1.0, -2, -3]), input_mask=mask, other_mask=mask)
        tensor([-1., -inf, -3.])
    """
    dtype = input.dtype if dtype is None else dtype
    if input.layout != "strided" or other.layout != "strided":
        raise ValueError(
            f"masked logaddexp expects strided tensors (got {input.layout} tensor for input, "
            f"{other.layout} for other)"
        )
    masked_input = _masked_input("logaddexp", input, input_mask)
    masked_other = _masked_input("logaddexp", other, other_mask)
    return _ops.logaddexp(masked_input, masked_other).to(dtype=dtype)


def norm(input, ord: float | None = 2.0, dim=None, *, keepdim: bool = False, dtype=None,
         mask=None):  # fmt: skip
    """Vector norm of the kept elements (masked-out elements count as 0, or inf for -inf)."""
    _strided_only("norm", input)
    dtype = input.dtype if dtype is None else dtype
    masked = _masked_input("norm", input, mask, ord)
    dims = _canonical_dim(dim, input.ndim)
    return _linalg.vector_norm(masked, ord, dims, bool(keepdim), dtype=dtype)


def _std_var(input, dim, unbiased, correction, keepdim, dtype, mask, take_sqrt: bool):
    if unbiased is not None and correction is not None:
        raise ValueError("Only one of unbiased and correction may be given")
    if correction is None:
        correction = 1.0 if unbiased is None or unbiased else 0.0
    correction = float(correction)
    _strided_only("std/var", input)
    input, mask = _data_and_mask(input, mask)
    if dtype is None:
        dtype = input.dtype
        if not (dtype.is_floating_point or dtype.is_complex):
            dtype = _float32
    compute_dtype = dtype if (dtype.is_floating_point or dtype.is_complex) else _float32
    dims = _canonical_dim(dim, input.ndim)
    inmask = None if mask is None else _input_mask(input, mask=mask)
    count = _count(input, inmask, dims, True)
    sample_mean = sum(input, dim, keepdim=True, dtype=dtype, mask=inmask) / count
    centred = input - sample_mean
    total = sum(centred * centred.conj(), dim, keepdim=keepdim, dtype=compute_dtype, mask=inmask)
    if not keepdim:
        count = count.reshape(total.shape)
    if correction != 0:
        real_dtype = compute_dtype.to_real() if compute_dtype.is_complex else compute_dtype
        count = _ops.clamp_min(count.to(real_dtype) - correction, 0)
    output = (total / count).to(dtype=dtype)
    return output.sqrt() if take_sqrt else output


def var(input, dim=None, unbiased: bool | None = None, *, correction=None, keepdim: bool = False,
        dtype=None, mask=None):  # fmt: skip
    """Variance of the kept elements (``nan`` where too few are kept for ``correction``)."""
    return _std_var(input, dim, unbiased, correction, keepdim, dtype, mask, take_sqrt=False)


def std(input, dim=None, unbiased: bool | None = None, *, correction=None, keepdim: bool = False,
        dtype=None, mask=None):  # fmt: skip
    """Standard deviation of the kept elements (the square root of ``masked.var``)."""
    return _std_var(input, dim, unbiased, correction, keepdim, dtype, mask, take_sqrt=True)


def softmax(input, dim: int, *, dtype=None, mask=None):
    """Softmax over the kept elements along ``dim``: masked-out elements get 0, a fully
    masked-out slice ``nan``.

    Example::
        >>> ember.masked.softmax(ember.tensor([1.0, 1.0, 5.0]), 0,
        ...                      mask=ember.tensor([True, True, False]))
        tensor([0.5000, 0.5000, 0.0000])
    """
    _strided_only("softmax", input)
    dtype = input.dtype if dtype is None else dtype
    d = _canonical_dim(dim, input.ndim)[0]
    return _functional.softmax(_masked_input("amax", input, mask), d, dtype=dtype)


def log_softmax(input, dim: int, *, dtype=None, mask=None):
    """Log-softmax over the kept elements along ``dim`` (``-inf`` at masked-out elements)."""
    _strided_only("log_softmax", input)
    dtype = input.dtype if dtype is None else dtype
    d = _canonical_dim(dim, input.ndim)[0]
    return _functional.log_softmax(_masked_input("amax", input, mask), d, dtype=dtype)


def softmin(input, dim: int, *, dtype=None, mask=None):
    """Softmin over the kept elements along ``dim`` (0 at masked-out elements)."""
    _strided_only("softmin", input)
    dtype = input.dtype if dtype is None else dtype
    d = _canonical_dim(dim, input.ndim)[0]
    return _functional.softmin(_masked_input("amin", input, mask), d, dtype=dtype)


def normalize(input, ord: float, dim: int, *, eps: float = 1e-12, dtype=None, mask=None):
    """``input`` divided by the ``ord``-norm of its kept elements along ``dim`` (at least
    ``eps``); masked-out elements become 0."""
    _strided_only("normalize", input)
    dtype = input.dtype if dtype is None else dtype
    masked = _masked_input("sum", input, mask)
    norms = norm(input, ord, dim, keepdim=True, dtype=dtype, mask=mask)
    return _ops.divide(masked, _ops.clamp_min(norms, eps))


_core._FUNCTIONS.update({name: globals()[name] for name in _REDUCTIONS}, _output_mask=_output_mask)
