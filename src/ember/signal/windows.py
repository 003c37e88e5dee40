"""Window functions of ``torch.signal.windows``, computed by ``scipy.signal.windows`` in
float64 and returned in the requested dtype (float32 by default).

Example::
    >>> ember.signal.windows.hann(4, sym=False)
    tensor([0.0000, 0.5000, 1.0000, 0.5000])
"""

from __future__ import annotations

from collections.abc import Iterable

from .. import _dtype as dt
from .._tensor import Tensor

__all__ = [
    "bartlett",
    "blackman",
    "cosine",
    "exponential",
    "gaussian",
    "general_cosine",
    "general_hamming",
    "hamming",
    "hann",
    "kaiser",
    "nuttall",
]


def _make(checked_as: str, M: int, sym: bool, dtype, layout, device, requires_grad: bool, compute):
    """Checks in torch's order, then ``compute(M, sym)`` (a float64 NumPy array) as a tensor."""
    if M < 0:
        raise ValueError(f"{checked_as} requires non-negative window length, got M={M}")
    if layout is not None and str.__str__(layout) != "strided":
        raise ValueError(f"{checked_as} is implemented for strided tensors only, got: {layout!r}")
    kind = dt.get_default_dtype() if dtype is None else dt.to_dtype(dtype)
    if kind not in (dt.float32, dt.float64):
        raise ValueError(f"{checked_as} expects float32 or float64 dtypes, got: {kind}")
    from .. import _creation

    values = compute(M, sym) if M else []
    return _creation.tensor(values, dtype=kind, device=device, requires_grad=requires_grad)


def _scipy(name: str, *args):
    from scipy.signal import windows

    return lambda M, sym: getattr(windows, name)(M, *args, sym=sym)


def general_cosine(
    M, *, a: Iterable, sym=True, dtype=None, layout=None, device=None, requires_grad=False
) -> Tensor:
    """Σₖ (-1)ᵏ aₖ cos(2πkn/(M-1)) (M in the denominator for ``sym=False``)."""
    if not isinstance(a, (list, tuple)):
        raise TypeError("Coefficients must be a list/tuple")
    if not a:
        raise ValueError("Coefficients cannot be empty")
    compute = _scipy("general_cosine", list(a))
    return _make("general_cosine", M, sym, dtype, layout, device, requires_grad, compute)


def general_hamming(
    M, *, alpha: float = 0.54, sym=True, dtype=None, layout=None, device=None, requires_grad=False
) -> Tensor:
    """α - (1 - α) cos(2πn/(M-1))."""
    compute = _scipy("general_hamming", alpha)
    return _make("general_cosine", M, sym, dtype, layout, device, requires_grad, compute)


def hann(M: int, *, sym=True, dtype=None, layout=None, device=None, requires_grad=False) -> Tensor:
    """The Hann window, ½ - ½ cos(2πn/(M-1))."""
    compute = _scipy("hann")
    return _make("general_cosine", M, sym, dtype, layout, device, requires_grad, compute)


def hamming(
    M: int, *, sym=True, dtype=None, layout=None, device=None, requires_grad=False
) -> Tensor:
    """The Hamming window, 0.54 - 0.46 cos(2πn/(M-1))."""
    compute = _scipy("hamming")
    return _make("general_cosine", M, sym, dtype, layout, device, requires_grad, compute)


def blackman(
    M: int, *, sym=True, dtype=None, layout=None, device=None, requires_grad=False
) -> Tensor:
    """The Blackman window (0.42, 0.5, 0.08)."""
    compute = _scipy("blackman")
    return _make("general_cosine", M, sym, dtype, layout, device, requires_grad, compute)


def nuttall(
    M: int, *, sym=True, dtype=None, layout=None, device=None, requires_grad=False
) -> Tensor:
    """The minimum 4-term Blackman-Harris window of Nuttall."""
    compute = _scipy("nuttall")
    return _make("general_cosine", M, sym, dtype, layout, device, requires_grad, compute)


def bartlett(
    M: int, *, sym=True, dtype=None, layout=None, device=None, requires_grad=False
) -> Tensor:
    """The triangular window with zero end points."""
    return _make("bartlett", M, sym, dtype, layout, device, requires_grad, _scipy("bartlett"))


def cosine(
    M: int, *, sym=True, dtype=None, layout=None, device=None, requires_grad=False
) -> Tensor:
    """sin(π(n + ½)/M), the sine window."""
    return _make("cosine", M, sym, dtype, layout, device, requires_grad, _scipy("cosine"))


def kaiser(
    M: int, *, beta: float = 12.0, sym=True, dtype=None, layout=None, device=None,
    requires_grad=False,
) -> Tensor:  # fmt: skip
    """I₀(β √(1 - (2n/(M-1) - 1)²)) / I₀(β)."""
    if beta < 0:
        raise ValueError(f"beta must be non-negative, got: {beta} instead.")
    return _make("kaiser", M, sym, dtype, layout, device, requires_grad, _scipy("kaiser", beta))


def gaussian(
    M: int, *, std: float = 1.0, sym=True, dtype=None, layout=None, device=None,
    requires_grad=False,
) -> Tensor:  # fmt: skip
    """exp(-(n - (M-1)/2)² / (2 std²))."""
    if std <= 0:
        raise ValueError(f"Standard deviation must be positive, got: {std} instead.")
    return _make("gaussian", M, sym, dtype, layout, device, requires_grad, _scipy("gaussian", std))


def exponential(
    M: int, *, center: float | None = None, tau: float = 1.0, sym=True, dtype=None,
    layout=None, device=None, requires_grad=False,
) -> Tensor:  # fmt: skip
    """exp(-|n - center| / τ), centred by default."""
    if tau <= 0:
        raise ValueError(f"Tau must be positive, got: {tau} instead.")
    if sym and center is not None:
        raise ValueError("Center must be None for symmetric windows")

    def compute(length: int, symmetric: bool):
        import numpy as np

        middle = center
        if middle is None:  # the middle of the window, or of its periodic extension
            middle = (length if not symmetric and length > 1 else length - 1) / 2.0
        return np.exp(-np.abs(np.arange(length) - middle) / tau)

    return _make("exponential", M, sym, dtype, layout, device, requires_grad, compute)
