"""``ember.fft``'s transforms under PyTorch's names and arguments (``n``/``s``, ``dim``,
``norm``), built on the three primitives of ``_transforms``."""

from __future__ import annotations

from .. import _dtype as dt
from .._tensor import Tensor, _wrap_dim
from ..ops import complex as cx
from ._transforms import as_complex, as_real, fft_c2c, fft_c2r, fft_r2c, resize


def _scale(norm: str | None, forward: bool) -> str:
    """PyTorch's norm names to the primitives' scale modes for a transform's direction."""
    if norm is None or norm == "backward":
        return "none" if forward else "n"
    if norm == "forward":
        return "n" if forward else "none"
    if norm == "ortho":
        return "sqrt"
    raise RuntimeError(f'Invalid normalization mode: "{norm}"')


def _fft_dim(dim: int, ndim: int) -> int:
    """``dim`` wrapped; a 0-d tensor has no dimension to transform (torch's IndexError)."""
    if ndim == 0:
        raise IndexError(f"Dimension specified as {dim} but tensor has no dimensions")
    return _wrap_dim(dim, ndim)


def _check_points(n: int) -> None:
    if n < 1:
        raise RuntimeError(f"Invalid number of data points ({n}) specified")


def _one_dim(x: Tensor, n: int | None, dim: int) -> tuple:
    d = _fft_dim(dim, x._data.ndim)
    if n is not None:
        _check_points(n)
    return d, (x._data.shape[d] if n is None else n)


def _dims_and_sizes(x: Tensor, s, dim) -> tuple:
    """(dims, sizes) as PyTorch reads ``s`` and ``dim`` of the n-dimensional transforms."""
    ndim = x._data.ndim
    if isinstance(dim, int):
        dim = (dim,)
    if s is not None:
        s = tuple(s)
        if dim is None:
            if len(s) > ndim:
                raise RuntimeError(
                    f"Got shape with {len(s)} values but input tensor only has {ndim} dimensions."
                )
            dim = tuple(range(ndim - len(s), ndim))
        elif len(s) != len(dim):
            raise RuntimeError("When given, dim and shape arguments must have the same length")
    dims = tuple(_fft_dim(d, ndim) for d in (range(ndim) if dim is None else dim))
    if len(set(dims)) != len(dims):
        raise RuntimeError("FFT dims must be unique")
    if s is None:
        sizes = tuple(x._data.shape[d] for d in dims)
    else:
        sizes = tuple(x._data.shape[d] if n == -1 else n for d, n in zip(dims, s))
    for n in sizes:
        _check_points(n)
    return dims, sizes


# --- one dimension ----------------------------------------------------------------------------
def fft(input: Tensor, n: int | None = None, dim: int = -1, norm: str | None = None) -> Tensor:
    """The discrete Fourier transform along ``dim`` (real inputs are read as complex).

    Example::
        >>> ember.fft.fft(ember.tensor([1.0, 0.0, 0.0, 0.0]))
        tensor([1.+0.j, 1.+0.j, 1.+0.j, 1.+0.j])
    """
    x = as_complex(input)
    d, size = _one_dim(x, n, dim)
    return fft_c2c(resize(x, (d,), (size,)), (d,), _scale(norm, True), True)


def ifft(input: Tensor, n: int | None = None, dim: int = -1, norm: str | None = None) -> Tensor:
    """The inverse discrete Fourier transform along ``dim``."""
    x = as_complex(input)
    d, size = _one_dim(x, n, dim)
    return fft_c2c(resize(x, (d,), (size,)), (d,), _scale(norm, False), False)


def rfft(input: Tensor, n: int | None = None, dim: int = -1, norm: str | None = None) -> Tensor:
    """The transform of a real signal: the n//2 + 1 non-negative frequencies."""
    x = as_real(input, "rfft")
    d, size = _one_dim(x, n, dim)
    return fft_r2c(resize(x, (d,), (size,)), (d,), _scale(norm, True), True)


def irfft(input: Tensor, n: int | None = None, dim: int = -1, norm: str | None = None) -> Tensor:
    """The inverse of ``rfft``: a real signal of length ``n`` (default 2·(m - 1))."""
    x = as_complex(input)
    d = _fft_dim(dim, x._data.ndim)
    last = 2 * (x._data.shape[d] - 1) if n is None else n
    _check_points(last)
    x = resize(x, (d,), (last // 2 + 1,))
    return fft_c2r(x, (d,), _scale(norm, False), last)


def hfft(input: Tensor, n: int | None = None, dim: int = -1, norm: str | None = None) -> Tensor:
    """The transform of a Hermitian-symmetric signal given by its first half: real output."""
    x = as_complex(input)
    d = _fft_dim(dim, x._data.ndim)
    last = 2 * (x._data.shape[d] - 1) if n is None else n
    _check_points(last)
    x = resize(x, (d,), (last // 2 + 1,))
    return fft_c2r(cx.conj(x), (d,), _scale(norm, True), last)


def ihfft(input: Tensor, n: int | None = None, dim: int = -1, norm: str | None = None) -> Tensor:
    """The inverse of ``hfft``: the first half of a Hermitian spectrum of a real signal."""
    x = as_real(input, "ihfft")
    d, size = _one_dim(x, n, dim)
    return cx.conj(fft_r2c(resize(x, (d,), (size,)), (d,), _scale(norm, False), True))


# --- n dimensions ---------------------------------------------------------------------------------
def fftn(input: Tensor, s=None, dim=None, norm: str | None = None) -> Tensor:
    """The n-dimensional transform over ``dim`` (all dimensions by default)."""
    x = as_complex(input)
    dims, sizes = _dims_and_sizes(x, s, dim)
    return fft_c2c(resize(x, dims, sizes), dims, _scale(norm, True), True)


def ifftn(input: Tensor, s=None, dim=None, norm: str | None = None) -> Tensor:
    x = as_complex(input)
    dims, sizes = _dims_and_sizes(x, s, dim)
    return fft_c2c(resize(x, dims, sizes), dims, _scale(norm, False), False)


def rfftn(input: Tensor, s=None, dim=None, norm: str | None = None) -> Tensor:
    """The n-dimensional transform of a real signal, halved along the last of ``dim``."""
    x = as_real(input, "rfftn")
    dims, sizes = _dims_and_sizes(x, s, dim)
    return fft_r2c(resize(x, dims, sizes), dims, _scale(norm, True), True)


def _c2r_dims(x: Tensor, s, dim) -> tuple:
    """dims, the input sizes (last one halved) and the output's last size of c2r transforms."""
    dims, sizes = _dims_and_sizes(x, s, dim)
    last = sizes[-1] if s is not None else 2 * (sizes[-1] - 1)
    _check_points(last)
    return dims, sizes[:-1] + (last // 2 + 1,), last


def irfftn(input: Tensor, s=None, dim=None, norm: str | None = None) -> Tensor:
    """The inverse of ``rfftn``: a real signal (last size ``s[-1]``, default 2·(m - 1))."""
    x = as_complex(input)
    dims, sizes, last = _c2r_dims(x, s, dim)
    return fft_c2r(resize(x, dims, sizes), dims, _scale(norm, False), last)


def hfftn(input: Tensor, s=None, dim=None, norm: str | None = None) -> Tensor:
    """The n-dimensional transform of a Hermitian signal given by its half: real output."""
    x = as_complex(input)
    dims, sizes, last = _c2r_dims(x, s, dim)
    x = resize(x, dims, sizes)
    scale = _scale(norm, True)
    if len(dims) == 1:
        return fft_c2r(cx.conj(x), dims, scale, last)
    # two transforms in a row: complex64 runs them in complex128 and rounds once, or the
    # intermediate rounding puts small outputs past float32's tolerance from torch's
    single = x.dtype == dt.complex64
    if single:
        x = cx.cast(x, dt.complex128)
    out = fft_c2r(cx.conj(fft_c2c(x, dims[:-1], scale, True)), dims[-1:], scale, last)
    return out.to(dt.float32) if single else out


def ihfftn(input: Tensor, s=None, dim=None, norm: str | None = None) -> Tensor:
    """The inverse of ``hfftn``: half of the Hermitian spectrum of a real signal."""
    x = as_real(input, "ihfftn")
    dims, sizes = _dims_and_sizes(x, s, dim)
    scale = _scale(norm, False)
    out = cx.conj(fft_r2c(resize(x, dims, sizes), dims[-1:], scale, True))
    if len(dims) > 1:
        out = fft_c2c(out, dims[:-1], scale, False)
    return out


def fft2(input: Tensor, s=None, dim=(-2, -1), norm: str | None = None) -> Tensor:
    return fftn(input, s, dim, norm)


def ifft2(input: Tensor, s=None, dim=(-2, -1), norm: str | None = None) -> Tensor:
    return ifftn(input, s, dim, norm)


def rfft2(input: Tensor, s=None, dim=(-2, -1), norm: str | None = None) -> Tensor:
    return rfftn(input, s, dim, norm)


def irfft2(input: Tensor, s=None, dim=(-2, -1), norm: str | None = None) -> Tensor:
    return irfftn(input, s, dim, norm)


def hfft2(input: Tensor, s=None, dim=(-2, -1), norm: str | None = None) -> Tensor:
    return hfftn(input, s, dim, norm)


def ihfft2(input: Tensor, s=None, dim=(-2, -1), norm: str | None = None) -> Tensor:
    return ihfftn(input, s, dim, norm)
