"""The special functions the distributions need (lgamma, digamma, polygamma, erfinv, xlogy).

They come from ``ember.ops.special`` once that module exists; until then this file defines
them here on scipy.special, each with its derivative, so log_prob and entropy differentiate
twice.
"""

from __future__ import annotations

import math

import numpy as np

import ember

from .._tensor import Tensor
from ..autograd.node import Node
from ..ops._dispatch import result

try:  # pragma: no cover - depends on what has landed
    from ..ops.special import digamma, erfinv, lgamma, polygamma, xlogy
except ImportError:

    def _scipy(array):
        if isinstance(array, np.ndarray) or np.isscalar(array):
            import scipy.special as sc
        else:
            import cupyx.scipy.special as sc
        return sc

    def _floating(x: Tensor) -> Tensor:
        return x if x.is_floating_point() else x.to(ember.get_default_dtype())

    class LgammaBackward0(Node):
        def backward(self, g):
            (x,) = self.saved_tensors()
            return g * digamma(x)  # d lgamma = digamma

    class DigammaBackward0(Node):
        def backward(self, g):
            (x,) = self.saved_tensors()
            return g * polygamma(1, x)  # d digamma = trigamma

    class PolygammaBackward0(Node):
        def backward(self, g):
            (x,) = self.saved_tensors()
            return g * polygamma(self.n + 1, x)

    class ErfinvBackward0(Node):
        def backward(self, g):
            (x,) = self.saved_tensors()
            # d erfinv(x) = √π/2 · exp(erfinv(x)²)
            return g * (erfinv(x).square().exp() * (math.sqrt(math.pi) / 2))

    class XlogyBackward0(Node):
        def backward(self, g):
            x, y = self.saved_tensors()
            edges = self._edges
            gx = g * xlogy((x != 0).to(g.dtype), y) if edges[0] is not None else None
            gy = g * x / y if edges[1] is not None else None
            return gx, gy

    def lgamma(input: Tensor) -> Tensor:
        """log |Γ(x)|."""
        x = _floating(input)
        data = _scipy(x._data).gammaln(x._data).astype(x._data.dtype, copy=False)
        return result(LgammaBackward0, data, (x,), (x,))

    def digamma(input: Tensor) -> Tensor:
        """ψ(x) = d/dx log Γ(x) (PyTorch: digamma(0) = -inf)."""
        x = _floating(input)
        data = _scipy(x._data).psi(x._data).astype(x._data.dtype, copy=False)
        xp = np if isinstance(data, np.ndarray) else None
        if xp is not None:
            data = np.where(x._data == 0, -np.inf, data).astype(x._data.dtype, copy=False)
        return result(DigammaBackward0, data, (x,), (x,))

    def polygamma(n: int, input: Tensor) -> Tensor:
        """The n-th derivative of digamma."""
        x = _floating(input)
        sc = _scipy(x._data)
        data = sc.psi(x._data) if n == 0 else sc.polygamma(n, x._data)
        data = data.astype(x._data.dtype, copy=False)
        return result(PolygammaBackward0, data, (x,), (x,), n=n)

    def erfinv(input: Tensor) -> Tensor:
        """The inverse of erf on (-1, 1)."""
        x = _floating(input)
        data = _scipy(x._data).erfinv(x._data).astype(x._data.dtype, copy=False)
        return result(ErfinvBackward0, data, (x,), (x,))

    def xlogy(input, other) -> Tensor:
        """x · log(y), 0 where x == 0 (unless y is nan)."""
        x, y = ember.broadcast_tensors(*_as_tensors(input, other))
        xd, yd = x._data, y._data
        with np.errstate(all="ignore"):
            data = np.where((xd == 0) & ~np.isnan(yd), 0.0, xd * np.log(yd))
        data = data.astype(np.result_type(xd, yd), copy=False)
        return result(XlogyBackward0, data, (x, y), (x, y))

    def _as_tensors(a, b):
        if not isinstance(a, Tensor):
            a = ember.tensor(float(a), dtype=b.dtype)
        if not isinstance(b, Tensor):
            b = ember.tensor(float(b), dtype=a.dtype)
        a, b = _floating(a), _floating(b)
        if a.dtype != b.dtype:
            rt = ember.promote_types(a.dtype, b.dtype)
            a, b = a.to(rt), b.to(rt)
        return a, b


__all__ = ["digamma", "erfinv", "lgamma", "polygamma", "xlogy"]
