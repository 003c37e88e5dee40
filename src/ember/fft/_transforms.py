"""The three FFT primitives (complex-to-complex, real-to-complex, complex-to-real), a
resize step for ``n``/``s``, and their derivatives side by side, as PyTorch's
``_fft_c2c`` / ``_fft_r2c`` / ``_fft_c2r``.

A primitive takes a scale mode ("none", "sqrt" or "n": divide by 1, √n or n) that applies
whatever the direction; the adjoint of a transform is the opposite transform with the same
scale, which is what makes the backward formulas short. Kernels come from scipy.fft on the
CPU (precision preserving) and cupy.fft on CUDA.
"""

from __future__ import annotations

from .. import _dtype as dt
from .._tensor import Tensor
from ..autograd.node import Node
from ..ops import complex as cx
from ..ops._dispatch import array_module, result

# scale mode -> NumPy-style ``norm`` of a forward / an inverse transform with that scaling
_FORWARD_NORM = {"none": "backward", "sqrt": "ortho", "n": "forward"}
_INVERSE_NORM = {"none": "forward", "sqrt": "ortho", "n": "backward"}


def _fft_module(data):
    xp = array_module(data)
    if xp.__name__ == "numpy":
        try:
            import scipy.fft

            return scipy.fft
        except ImportError:  # pragma: no cover - scipy is a dependency
            return xp.fft
    return xp.fft


def _empty_result(xp, shape, np_dtype):
    return xp.zeros(shape, dtype=np_dtype)


# --- resize: zero-pad or crop along dims (n= / s=) ----------------------------------------------
class ResizeBackward(Node):
    def name(self) -> str:
        return "ConstantPadNdBackward0"

    def backward(self, g):
        return resize(g, self.dims, self.sizes)  # the adjoint of padding is cropping, and back


def resize(input: Tensor, dims: tuple, sizes: tuple) -> Tensor:
    """``input`` cut or zero-padded at the end of each of ``dims`` to ``sizes``."""
    data = input._data
    old = tuple(data.shape[d] for d in dims)
    if old == tuple(sizes):
        return input
    xp = array_module(data)
    shape = list(data.shape)
    for d, n in zip(dims, sizes):
        shape[d] = n
    out = xp.zeros(shape, dtype=data.dtype)
    common = [slice(None)] * data.ndim
    for d, n, m in zip(dims, sizes, old):
        common[d] = slice(0, min(n, m))
    out[tuple(common)] = data[tuple(common)]
    return result(ResizeBackward, out, (input,), dims=dims, sizes=old)


# --- complex to complex -------------------------------------------------------------------------
class FftC2CBackward0(Node):
    def backward(self, g):
        return fft_c2c(g, self.dims, self.scale, not self.forward)


def fft_c2c(input: Tensor, dims: tuple, scale: str, forward: bool) -> Tensor:
    data = input._data
    xp = array_module(data)
    if data.size == 0:
        out = _empty_result(xp, data.shape, data.dtype)
    elif forward:
        out = _fft_module(data).fftn(data, axes=dims, norm=_FORWARD_NORM[scale])
    else:
        out = _fft_module(data).ifftn(data, axes=dims, norm=_INVERSE_NORM[scale])
    out = out.astype(data.dtype, copy=False)
    return result(FftC2CBackward0, out, (input,), dims=dims, scale=scale, forward=forward)


# --- real to complex (always forward) -----------------------------------------------------------
class FftR2CBackward0(Node):
    def backward(self, g):
        last = self.dims[-1]
        if self.onesided:  # the dropped half of the spectrum gets zero gradient
            g = resize(g, (last,), (self.last_size,))
        return cx.real(fft_c2c(g, self.dims, self.scale, False))


def fft_r2c(input: Tensor, dims: tuple, scale: str, onesided: bool) -> Tensor:
    data = input._data
    xp = array_module(data)
    complex_np = input.dtype.to_complex().np
    last = dims[-1]
    shape = list(data.shape)
    if onesided:
        shape[last] = shape[last] // 2 + 1
    if data.size == 0:
        out = _empty_result(xp, tuple(shape), complex_np)
    else:
        mod = _fft_module(data)
        kernel = mod.rfftn if onesided else mod.fftn
        out = kernel(data, axes=dims, norm=_FORWARD_NORM[scale])
    out = out.astype(complex_np, copy=False)
    return result(
        FftR2CBackward0,
        out,
        (input,),
        dims=dims,
        scale=scale,
        onesided=onesided,
        last_size=data.shape[last],
    )


# --- complex to real (always inverse, Hermitian half-spectrum in) --------------------------------
class FftC2RBackward0(Node):
    def backward(self, g):
        grad = fft_r2c(g, self.dims, self.scale, True)
        last = self.dims[-1]
        n_half = grad._data.shape[last]
        doubled = g._data.shape[last] - n_half
        if doubled > 0:
            # every bin but DC (and Nyquist for even n) stands for itself and its mirror image
            xp = array_module(grad._data)
            shape = [1] * grad._data.ndim
            shape[last] = n_half
            weight = xp.ones(n_half, dtype=grad.dtype.to_real().np)
            weight[1 : 1 + doubled] = 2
            grad = grad * Tensor._wrap(weight.reshape(shape))
        return grad


def fft_c2r(input: Tensor, dims: tuple, scale: str, last_dim_size: int) -> Tensor:
    data = input._data
    xp = array_module(data)
    real_np = input.dtype.to_real().np
    shape = list(data.shape)
    shape[dims[-1]] = last_dim_size
    if data.size == 0 or last_dim_size == 0:
        out = _empty_result(xp, tuple(shape), real_np)
    else:
        sizes = tuple(shape[d] for d in dims)
        out = _fft_module(data).irfftn(data, s=sizes, axes=dims, norm=_INVERSE_NORM[scale])
    out = out.astype(real_np, copy=False)
    return result(FftC2RBackward0, out, (input,), dims=dims, scale=scale)


def as_complex(input: Tensor) -> Tensor:
    """Integer and real inputs computed in the matching complex dtype (float32 -> complex64)."""
    d = input.dtype
    if d.category == dt.COMPLEX:
        return input
    if d.category != dt.FLOAT:
        d = dt.get_default_dtype()
    return cx.cast(input, d.to_complex())


def as_real(input: Tensor, op: str) -> Tensor:
    d = input.dtype
    if d.category == dt.COMPLEX:
        raise RuntimeError(f"{op} expects a real input tensor, but got {d.legacy_name}")
    if d.category != dt.FLOAT:
        return input.to(dt.get_default_dtype())
    return input
