"""Sample frequencies and spectrum reordering: fftfreq, rfftfreq, fftshift, ifftshift."""

from __future__ import annotations

from .. import _creation
from .. import _dtype as dt
from .._tensor import Tensor, _wrap_dim
from ..ops.shape import roll


def _frequencies(values: Tensor, n: int, d: float, requires_grad: bool) -> Tensor:
    out = values * (1.0 / (n * d))
    return out.requires_grad_() if requires_grad else out


def fftfreq(
    n: int, d: float = 1.0, *, dtype=None, layout=None, device=None, requires_grad: bool = False
) -> Tensor:
    """The frequencies of ``fft(x, n)``'s bins for samples spaced ``d`` apart.

    Example::
        >>> ember.fft.fftfreq(4)
        tensor([ 0.0000,  0.2500, -0.5000, -0.2500])
    """
    target = dt.to_dtype(dtype) if dtype is not None else dt.get_default_dtype()
    k = _creation.arange(n, dtype=target, device=device)
    k = k - n * (k >= (n + 1) // 2).to(target)  # the second half holds negative frequencies
    return _frequencies(k, n, d, requires_grad)


def rfftfreq(
    n: int, d: float = 1.0, *, dtype=None, layout=None, device=None, requires_grad: bool = False
) -> Tensor:
    """The frequencies of ``rfft(x, n)``'s n//2 + 1 bins."""
    target = dt.to_dtype(dtype) if dtype is not None else dt.get_default_dtype()
    k = _creation.arange(n // 2 + 1, dtype=target, device=device)
    return _frequencies(k, n, d, requires_grad)


def _shift(input: Tensor, dim, inverse: bool) -> Tensor:
    ndim = input._data.ndim
    if dim is None:
        dims = tuple(range(ndim))
    else:
        dims = (dim,) if isinstance(dim, int) else tuple(dim)
        dims = tuple(_wrap_dim(d, ndim) for d in dims)
    if not dims:
        return input
    sizes = [input._data.shape[d] for d in dims]
    shifts = [(n + 1) // 2 if inverse else n // 2 for n in sizes]
    return roll(input, shifts, dims)


def fftshift(input: Tensor, dim=None) -> Tensor:
    """Move the zero frequency to the centre (over ``dim``, all dimensions by default)."""
    return _shift(input, dim, inverse=False)


def ifftshift(input: Tensor, dim=None) -> Tensor:
    """The inverse of ``fftshift``."""
    return _shift(input, dim, inverse=True)
