"""Random draws that NumPy's generator makes directly: gamma (with its implicit
reparameterisation gradient), Poisson and binomial counts.

Gamma samples have no closed-form inverse CDF, so ``rsample`` differentiates implicitly:
with F(x; α) the regularised lower incomplete gamma (the CDF) and x = F⁻¹(u; α) for a fixed
uniform u, dx/dα = -(∂F/∂α) / (∂F/∂x).
"""

from __future__ import annotations

import numpy as np

from .._random import resolve_generator
from .._tensor import Tensor
from ..autograd.node import Node
from ..ops._dispatch import result, wrap


def _host(t: Tensor) -> np.ndarray:
    return np.asarray(t.detach().cpu().numpy(), dtype=np.float64)


def _to_device(array, like: Tensor):
    from .. import _backend

    data = array.astype(like._data.dtype, copy=False)
    if like.device.type != "cpu":
        data = _backend.move(data, like.device)
    return data


def _gamma_sample_grad(alpha: np.ndarray, x: np.ndarray) -> np.ndarray:
    """dx/dα of a standard gamma sample x drawn with concentration α, holding its CDF fixed."""
    from scipy import special as sc

    with np.errstate(all="ignore"):
        # ∂F/∂x is the gamma density; ∂F/∂α by a central difference of the regularised
        # incomplete gamma (scipy has no closed form), with a step scaled to α
        log_density = (alpha - 1) * np.log(x) - x - sc.gammaln(alpha)
        density = np.exp(log_density)
        h = 1e-5 * np.maximum(alpha, 1e-3)
        dF_dalpha = (sc.gammainc(alpha + h, x) - sc.gammainc(alpha - h, x)) / (2 * h)
        grad = -dF_dalpha / density
    return np.where(np.isfinite(grad), grad, 0.0)


class StandardGammaBackward0(Node):
    def backward(self, g):
        (alpha,) = self.saved_tensors()
        grad = _gamma_sample_grad(_host(alpha), _host(self.saved_output()))
        # the implicit derivative is itself computed numerically: it does not differentiate
        # again (PyTorch's _standard_gamma_grad does not either)
        return g * wrap(_to_device(grad, alpha))


def standard_gamma(alpha: Tensor, generator=None) -> Tensor:
    """Gamma(α, 1) samples, one per entry of ``alpha``, differentiable in ``alpha``."""
    rng = resolve_generator(generator)
    a = _host(alpha)
    tiny = np.finfo(alpha._data.dtype).tiny
    x = np.maximum(rng.standard_gamma(a), tiny)
    return result(StandardGammaBackward0, _to_device(x, alpha), (alpha,), (alpha,), True)


def poisson(rate: Tensor, generator=None) -> Tensor:
    rng = resolve_generator(generator)
    return wrap(_to_device(rng.poisson(_host(rate)).astype(np.float64), rate))


def binomial(count: Tensor, probs: Tensor, generator=None) -> Tensor:
    rng = resolve_generator(generator)
    n = _host(count).astype(np.int64)
    draws = rng.binomial(n, np.clip(_host(probs), 0.0, 1.0)).astype(np.float64)
    return wrap(_to_device(draws, probs))


def categorical(probs_2d: Tensor, num_samples: int, generator=None) -> Tensor:
    """Indices drawn with replacement from each row's weights, shape (rows, num_samples):
    torch.multinomial's draws (PyTorch's Categorical samples through it)."""
    from .._random.multinomial import multinomial_rows

    rng = resolve_generator(generator)
    rows = probs_2d.detach().cpu()._data
    data = multinomial_rows(rng, rows, int(num_samples), True)
    if probs_2d.device.type != "cpu":
        from .. import _backend

        data = _backend.move(data, probs_2d.device)
    return wrap(data)
