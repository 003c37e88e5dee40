"""ember.fft: discrete Fourier transforms as ``torch.fft``, differentiable (PyTorch's adjoint
formulas, Hermitian halves included)."""

from ._functions import (
    fft,
    fft2,
    fftn,
    hfft,
    hfft2,
    hfftn,
    ifft,
    ifft2,
    ifftn,
    ihfft,
    ihfft2,
    ihfftn,
    irfft,
    irfft2,
    irfftn,
    rfft,
    rfft2,
    rfftn,
)
from ._helpers import fftfreq, fftshift, ifftshift, rfftfreq

__all__ = [
    "fft",
    "ifft",
    "rfft",
    "irfft",
    "hfft",
    "ihfft",
    "fft2",
    "ifft2",
    "rfft2",
    "irfft2",
    "hfft2",
    "ihfft2",
    "fftn",
    "ifftn",
    "rfftn",
    "irfftn",
    "hfftn",
    "ihfftn",
    "fftfreq",
    "rfftfreq",
    "fftshift",
    "ifftshift",
]

from .. import _out  # noqa: E402

_out.install(globals(), _out.FFT_OUT_FUNCTIONS)  # out= where torch takes it
