"""Helpers shared by the distributions: broadcasting parameters, probs <-> logits, lazy
attributes, and summing over the rightmost dimensions."""

from __future__ import annotations

from functools import update_wrapper
from numbers import Number
from operator import attrgetter

import numpy as np

from .. import _op_namespace as ember
from .._tensor import Tensor
from ..ops.activation import softplus

euler_constant = 0.57721566490153286060  # Euler-Mascheroni constant

__all__ = [
    "broadcast_all",
    "clamp_probs",
    "euler_constant",
    "lazy_property",
    "logits_to_probs",
    "probs_to_logits",
    "tril_matrix_to_vec",
    "vec_to_tril_matrix",
]


def finfo(dtype_or_tensor):
    """NumPy's float info for an ember tensor's (or dtype's) floating type."""
    if isinstance(dtype_or_tensor, Tensor):
        return np.finfo(dtype_or_tensor._data.dtype)
    return np.finfo(dtype_or_tensor.np)


def broadcast_all(*values) -> tuple:
    """Numbers and tensors broadcast to one shape; numbers become tensors of the tensors' dtype
    (the default dtype when all are numbers).

    Example::
        >>> loc, scale = broadcast_all(ember.zeros(3), 1.0)
        >>> scale
        tensor([1., 1., 1.])
    """
    like = None
    for v in values:
        if isinstance(v, Tensor):
            if like is None:
                like = v
        elif not isinstance(v, Number):
            raise ValueError(
                "Input arguments must all be instances of numbers.Number, ember.Tensor or "
                "objects implementing __torch_function__."
            )
    if like is None:
        dtype = ember.get_default_dtype()
        return tuple(ember.tensor(float(v), dtype=dtype) for v in values)
    tensors = [
        v if isinstance(v, Tensor) else ember.tensor(v, dtype=like.dtype, device=like.device)
        for v in values
    ]
    return tuple(ember.broadcast_tensors(*tensors))


def standard_normal(shape, dtype, device) -> Tensor:
    return ember.randn(tuple(shape), dtype=dtype, device=device)


def sum_rightmost(value, dim: int):
    """Sum out the ``dim`` rightmost dimensions (a number passes through)."""
    if dim == 0 or not isinstance(value, Tensor):
        return value
    required_shape = tuple(value.shape[: value.dim() - dim]) + (-1,)
    return value.reshape(required_shape).sum(-1)


def clamp_probs(probs: Tensor) -> Tensor:
    """Probabilities kept within [eps, 1 - eps] so their logs stay finite."""
    eps = float(finfo(probs).eps)
    return probs.clamp(min=eps, max=1 - eps)


def logits_to_probs(logits: Tensor, is_binary: bool = False) -> Tensor:
    if is_binary:
        return ember.sigmoid(logits)
    return ember.softmax(logits, -1)


def probs_to_logits(probs: Tensor, is_binary: bool = False) -> Tensor:
    clamped = clamp_probs(probs)
    if is_binary:
        return clamped.log() - (-clamped).log1p()
    return clamped.log()


class lazy_property:
    """A property computed on first access (with grad enabled) and then stored on the
    instance, so ``probs`` or ``logits`` is derived only when asked for."""

    def __init__(self, wrapped):
        self.wrapped = wrapped
        update_wrapper(self, wrapped)

    def __get__(self, instance, obj_type=None):
        if instance is None:
            return _LazyAndProperty(self.wrapped)
        with ember.enable_grad():
            value = self.wrapped(instance)
        setattr(instance, self.wrapped.__name__, value)
        return value


class _LazyAndProperty(lazy_property, property):
    """What the class attribute looks like: a property too, so introspection treats it as one."""

    def __init__(self, wrapped):
        property.__init__(self, wrapped)
        lazy_property.__init__(self, wrapped)


def tril_matrix_to_vec(mat: Tensor, diag: int = 0) -> Tensor:
    """The lower triangle (below diagonal ``diag``) of the last two dims, row by row."""
    n = mat.shape[-1]
    if not -n <= diag < n:
        raise ValueError(f"diag ({diag}) provided is outside [{-n}, {n - 1}].")
    rows, cols = np.tril_indices(n, k=diag)
    flat = mat.reshape(tuple(mat.shape[:-2]) + (n * n,))
    return flat[..., ember.tensor(rows * n + cols)]


def vec_to_tril_matrix(vec: Tensor, diag: int = 0) -> Tensor:
    """The inverse of ``tril_matrix_to_vec``: a lower-triangular matrix from its entries."""
    m = vec.shape[-1]
    # n solves m = n(n+1)/2 + diag·n - |diag|(|diag|-1)/2 for diag <= 0
    disc = (1 + 2 * diag) ** 2 + 8 * m + 4 * abs(diag) * (diag + 1)
    n = int(round((-(1 + 2 * diag) + disc**0.5) / 2))
    rows, cols = np.tril_indices(n, k=diag)
    if rows.size != m:
        raise ValueError(f"Incorrect vector shape: {m} entries do not fill a triangular matrix.")
    batch = tuple(vec.shape[:-1])
    flat = ember.zeros(batch + (n * n,), dtype=vec.dtype, device=vec.device)
    index = ember.tensor(rows * n + cols).expand(batch + (m,))
    return flat.scatter(-1, index, vec).reshape(batch + (n, n))


def bce_with_logits(logits: Tensor, target) -> Tensor:
    """Elementwise -[t log σ(x) + (1-t) log(1-σ(x))] = (1-t)·x + softplus(-x), overflow-free."""
    return (1 - target) * logits + softplus(-logits)


def one_hot(indices: Tensor, num_classes: int, dtype) -> Tensor:
    """Integer class indices -> one-hot vectors of ``dtype`` along a new last dim."""
    classes = ember.arange(num_classes, device=indices.device)
    return (indices.unsqueeze(-1) == classes).to(dtype)


def forwarded_property(path: str) -> property:
    """A read-only property reading the attribute at the dotted ``path`` from the instance:
    how a wrapping distribution (LogNormal, OneHotCategorical, ...) shows the parameters of
    the one it wraps, and how a statistic that is a parameter (Normal's mean) is given.

    Example::
        >>> class Wrapper:
        ...     loc = forwarded_property("base_dist.loc")
        ...     def __init__(self, base_dist):
        ...         self.base_dist = base_dist
        >>> Wrapper(ember.distributions.Normal(1.0, 2.0)).loc
        tensor(1.)
    """
    return property(attrgetter(path), doc=f"``self.{path}``")


# PyTorch's private names, which libraries built on torch.distributions import
_sum_rightmost = sum_rightmost
_standard_normal = standard_normal
