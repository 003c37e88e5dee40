"""The tensor-level random kernels behind the distributions, drawing torch's CPU values:
``_standard_gamma`` (with its reparameterisation gradient), ``_sample_dirichlet`` (likewise),
``poisson``, ``binomial``, and the categorical draws of ``multinomial``.

The arithmetic lives in :mod:`ember._random` (NumPy, on the generator's mt19937 stream);
this file moves data between tensors and arrays and records the autograd nodes.
"""

from __future__ import annotations

import numpy as np

from ._random import resolve_generator
from ._random.counts import binomial as _binomial_draws
from ._random.counts import poisson as _poisson_draws
from ._random.gamma import sample_dirichlet as _dirichlet_draws
from ._random.gamma import standard_gamma as _gamma_draws
from ._random.multinomial import multinomial_rows
from ._random.reparameterization import dirichlet_grad, standard_gamma_grad
from ._tensor import Tensor
from .autograd.node import Node
from .ops._dispatch import result, wrap

_TORCH_NAMES = {
    "float32": "Float",
    "float64": "Double",
    "int64": "Long",
    "int32": "Int",
    "int16": "Short",
    "int8": "Char",
    "uint8": "Byte",
    "bool": "Bool",
    "float16": "Half",
    "bfloat16": "BFloat16",
    "complex64": "ComplexFloat",
    "complex128": "ComplexDouble",
}


def _host(t: Tensor) -> np.ndarray:
    return t.detach().cpu()._data


def _to_device(array: np.ndarray, like: Tensor):
    from . import _backend

    data = np.asarray(array)
    if not data.flags.c_contiguous:  # (ascontiguousarray would turn a 0-d array into 1-d)
        data = np.ascontiguousarray(data)
    if like.device.type != "cpu":
        data = _backend.move(data, like.device)
    return data


def _require_float(t: Tensor, kernel: str) -> None:
    name = t.dtype.name
    if name not in ("float32", "float64"):
        raise NotImplementedError(
            f"\"{kernel}\" not implemented for '{_TORCH_NAMES.get(name, name)}'"
        )


def _same_dtype(expected: Tensor, other: Tensor) -> None:
    if other.dtype != expected.dtype:
        raise RuntimeError(
            f"Found dtype {_TORCH_NAMES.get(other.dtype.name, other.dtype.name.title())} but "
            f"expected {_TORCH_NAMES.get(expected.dtype.name, expected.dtype.name.title())}"
        )


# --- gamma -----------------------------------------------------------------------------------
class StandardGammaBackward0(Node):
    def backward(self, g):
        (alpha,) = self.unpack_saved()
        x = self.saved_output()
        # torch's _standard_gamma_grad is not differentiable again; the product with g is
        grad = standard_gamma_grad(_host(alpha), _host(x))
        return g * wrap(_to_device(grad, alpha))


def _standard_gamma(input: Tensor, generator=None) -> Tensor:
    """Gamma(α, 1) draws, one per element of ``input`` (α), differentiable in α.

    Example::
        >>> ember.manual_seed(0)
        >>> ember._standard_gamma(ember.tensor([0.5, 2.0]))  # torch's values
        tensor([0.0008, 0.6315])
    """
    _require_float(input, "gamma_cpu")
    draws = _gamma_draws(resolve_generator(generator), _host(input))
    return result(StandardGammaBackward0, _to_device(draws, input), (input,), (input,), True)


def _standard_gamma_grad(input: Tensor, output: Tensor) -> Tensor:
    """d output / d α for gamma draws ``output`` of concentration ``input`` (not differentiable)."""
    _require_float(input, "_standard_gamma_grad_cpu")
    _same_dtype(input, output)
    return wrap(_to_device(standard_gamma_grad(_host(input), _host(output)), input))


standard_gamma = _standard_gamma  # the name the distributions import


# --- Dirichlet -------------------------------------------------------------------------------
class SampleDirichletBackward0(Node):
    def backward(self, g):
        (alpha,) = self.unpack_saved()
        x = self.saved_output()
        alpha_host, x_host = _host(alpha), _host(x)
        total = np.broadcast_to(alpha_host.sum(-1, keepdims=True), alpha_host.shape)
        grad = wrap(_to_device(dirichlet_grad(x_host, alpha_host, total), alpha))
        # the simplex constraint: a push along one coordinate is taken back from all of them
        return grad * (g - (x.detach() * g).sum(-1, True))


def _sample_dirichlet(input: Tensor, generator=None) -> Tensor:
    """Dirichlet(α) draws over the last dimension of ``input``, differentiable in α.

    Example::
        >>> ember.manual_seed(0)
        >>> ember._sample_dirichlet(ember.tensor([1.0, 2.0, 3.0]))  # torch's values
        tensor([0.5282, 0.2411, 0.2307])
    """
    _require_float(input, "dirichlet")
    draws = _dirichlet_draws(resolve_generator(generator), _host(input))
    return result(SampleDirichletBackward0, _to_device(draws, input), (input,), (input,), True)


def _dirichlet_grad(x: Tensor, alpha: Tensor, total: Tensor) -> Tensor:
    """torch's ``_dirichlet_grad``: the reparameterisation gradient of Dirichlet draws ``x``."""
    _require_float(x, "_dirichlet_grad_cpu")
    grad = dirichlet_grad(_host(x), _host(alpha), _host(total))
    return wrap(_to_device(grad, x))


# --- counts ----------------------------------------------------------------------------------
def poisson(input: Tensor, generator=None) -> Tensor:
    """Poisson counts, one per rate in ``input``, as floats of its dtype (not differentiable).

    Example::
        >>> ember.manual_seed(0)
        >>> ember.poisson(ember.tensor([1.0, 10.0, 100.0]))  # torch's values
        tensor([  2.,  15., 109.])
    """
    _require_float(input, "poisson_cpu")
    return wrap(_to_device(_poisson_draws(resolve_generator(generator), _host(input)), input))


def binomial(count: Tensor, prob: Tensor, generator=None) -> Tensor:
    """Binomial(count, prob) draws, elementwise, as floats of their dtype (not differentiable).

    Example::
        >>> ember.manual_seed(0)
        >>> ember.binomial(ember.tensor([10.0, 100.0]), ember.tensor([0.3, 0.9]))
        tensor([ 6., 91.])
    """
    if count.dtype.name not in ("float32", "float64", "float16", "bfloat16"):
        name = count.dtype.name
        raise ValueError(
            "binomial only supports floating-point dtypes for count, got: "
            f"{_TORCH_NAMES.get(name, name)}"
        )
    _require_float(count, "binomial_cpu")
    _same_dtype(count, prob)
    draws = _binomial_draws(resolve_generator(generator), _host(count), _host(prob))
    return wrap(_to_device(draws, count))


def categorical(probs_2d: Tensor, num_samples: int, generator=None) -> Tensor:
    """Indices drawn with replacement from each row's weights, shape (rows, num_samples):
    torch.multinomial's draws (PyTorch's Categorical samples through it)."""
    rows = _host(probs_2d)
    data = multinomial_rows(resolve_generator(generator), rows, int(num_samples), True)
    return wrap(_to_device(data, probs_2d))
