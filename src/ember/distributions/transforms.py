"""Transforms: invertible (or not) maps between constrained spaces, each with its domain,
codomain and log |det Jacobian|, for TransformedDistribution and constraint registries.

Example::
    >>> t = ExpTransform()
    >>> t.inv(t(ember.tensor(0.0)))
    tensor(0.)
"""

from __future__ import annotations

import functools
import math
import operator
import weakref
from numbers import Number, Real

from .. import _op_namespace as ember
from .._tensor import Tensor
from ..ops.activation import logsigmoid, softplus
from . import constraints
from .utils import broadcast_all, finfo, forwarded_property, sum_rightmost

__all__ = [
    "AbsTransform",
    "AffineTransform",
    "CatTransform",
    "ComposeTransform",
    "CorrCholeskyTransform",
    "CumulativeDistributionTransform",
    "ExpTransform",
    "IndependentTransform",
    "LowerCholeskyTransform",
    "PositiveDefiniteTransform",
    "PowerTransform",
    "ReshapeTransform",
    "SigmoidTransform",
    "SoftmaxTransform",
    "SoftplusTransform",
    "StackTransform",
    "StickBreakingTransform",
    "TanhTransform",
    "Transform",
    "identity_transform",
]


class Transform:
    """An invertible map ``y = t(x)`` with ``t.inv(y)`` and ``log_abs_det_jacobian(x, y)``.
    With ``cache_size=1`` the latest (x, y) pair is remembered, so ``inv`` of a just-computed
    output returns the very input (useful where the inverse is unstable)."""

    bijective = False
    domain: constraints.Constraint
    codomain: constraints.Constraint

    def __init__(self, cache_size: int = 0) -> None:
        self._cache_size = cache_size
        self._inv = None
        if cache_size == 0:
            pass
        elif cache_size == 1:
            self._cached_x_y = None, None
        else:
            raise ValueError("cache_size must be 0 or 1")
        super().__init__()

    def __getstate__(self):
        state = self.__dict__.copy()
        state["_inv"] = None
        return state

    @property
    def event_dim(self) -> int:
        if self.domain.event_dim == self.codomain.event_dim:
            return self.domain.event_dim
        raise ValueError("Please use either .domain.event_dim or .codomain.event_dim")

    @property
    def inv(self) -> Transform:
        """The inverse transform, made once and then held by a weak reference (so that the
        two do not keep each other alive)."""
        inv = self._inv() if self._inv is not None else None
        if inv is None:
            inv = self._new_inverse()
            self._inv = weakref.ref(inv)
        return inv

    def _new_inverse(self) -> Transform:
        return _InverseTransform(self)

    @property
    def sign(self):
        """+1 or -1 for a monotone increasing or decreasing bijection."""
        raise NotImplementedError

    def with_cache(self, cache_size: int = 1) -> Transform:
        if self._cache_size == cache_size:
            return self
        if type(self).__init__ is Transform.__init__:
            return type(self)(cache_size=cache_size)
        raise NotImplementedError(f"{type(self)}.with_cache is not implemented")

    def __eq__(self, other) -> bool:
        return self is other

    def __ne__(self, other) -> bool:
        return not self.__eq__(other)

    __hash__ = object.__hash__

    def __call__(self, x: Tensor) -> Tensor:
        return self._through_cache(x, self._call, side=0)

    def _inv_call(self, y: Tensor) -> Tensor:
        return self._through_cache(y, self._inverse, side=1)

    def _through_cache(self, value: Tensor, compute, side: int) -> Tensor:
        """``compute(value)``, where ``value`` is side ``side`` (0: x, 1: y) of a pair (x, y);
        with ``cache_size=1``, the very object of the latest pair gives back its other side."""
        if self._cache_size == 0:
            return compute(value)
        if value is self._cached_x_y[side]:
            return self._cached_x_y[1 - side]
        result = compute(value)
        self._cached_x_y = (value, result) if side == 0 else (result, value)
        return result

    def _call(self, x):
        raise NotImplementedError

    def _inverse(self, y):
        raise NotImplementedError

    def log_abs_det_jacobian(self, x: Tensor, y: Tensor) -> Tensor:
        raise NotImplementedError

    def __repr__(self) -> str:
        return self.__class__.__name__ + "()"

    def forward_shape(self, shape):
        return shape

    def inverse_shape(self, shape):
        return shape


class _InverseTransform(Transform):
    """``t.inv``: the same map run backwards."""

    def __init__(self, transform: Transform) -> None:
        super().__init__(cache_size=transform._cache_size)
        self._inv = transform  # a strong reference: the inverse keeps its forward alive

    @constraints.dependent_property(is_discrete=False)
    def domain(self):
        return self._inv.codomain

    @constraints.dependent_property(is_discrete=False)
    def codomain(self):
        return self._inv.domain

    bijective = forwarded_property("_inv.bijective")
    sign = forwarded_property("_inv.sign")

    @property
    def inv(self) -> Transform:
        return self._inv

    def with_cache(self, cache_size: int = 1) -> Transform:
        return self.inv.with_cache(cache_size).inv

    def __eq__(self, other) -> bool:
        if not isinstance(other, _InverseTransform):
            return False
        return self._inv == other._inv

    __hash__ = object.__hash__

    def __repr__(self) -> str:
        return f"{self.__class__.__name__}({self._inv!r})"

    def __call__(self, x):
        return self._inv._inv_call(x)

    def log_abs_det_jacobian(self, x, y):
        return -self._inv.log_abs_det_jacobian(y, x)

    def forward_shape(self, shape):
        return self._inv.inverse_shape(shape)

    def inverse_shape(self, shape):
        return self._inv.forward_shape(shape)


class _ParameterFreeTransform(Transform):
    """A transform without parameters: equal to any instance of its class."""

    def __init_subclass__(cls, **kwargs) -> None:
        super().__init_subclass__(**kwargs)
        # the class equality is checked against: the direct subclass, as each of PyTorch's
        # classes compares with isinstance(other, ItsOwnClass), so its subclasses match it too
        if _ParameterFreeTransform in cls.__bases__:
            cls._equal_to_instances_of = cls

    def __eq__(self, other) -> bool:
        return isinstance(other, self._equal_to_instances_of)

    __hash__ = object.__hash__


class _IncreasingOnReals:
    """Mixin: an increasing bijection from the real line (elementwise)."""

    domain = constraints.real
    bijective = True
    sign = +1


def _check_event_dims(shape, event_dims: int) -> None:
    """Shapes (or tensors) with fewer than ``event_dims`` dims cannot hold one event."""
    if len(shape) < event_dims:
        raise ValueError("Too few dimensions on input")


class ComposeTransform(Transform):
    """Transforms applied in order: ``parts[0]`` first."""

    def __init__(self, parts: list, cache_size: int = 0) -> None:
        if cache_size:
            parts = [part.with_cache(cache_size) for part in parts]
        super().__init__(cache_size=cache_size)
        self.parts = list(parts)

    def __eq__(self, other) -> bool:
        if not isinstance(other, ComposeTransform):
            return False
        return self.parts == other.parts

    __hash__ = object.__hash__

    @constraints.dependent_property(is_discrete=False)
    def domain(self):
        if not self.parts:
            return constraints.real
        domain = self.parts[0].domain
        # the composite's input event is as large as any part needs, traced backwards
        event_dim = self.parts[-1].codomain.event_dim
        for part in reversed(self.parts):
            event_dim += part.domain.event_dim - part.codomain.event_dim
            event_dim = max(event_dim, part.domain.event_dim)
        if event_dim > domain.event_dim:
            domain = constraints.independent(domain, event_dim - domain.event_dim)
        return domain

    @constraints.dependent_property(is_discrete=False)
    def codomain(self):
        if not self.parts:
            return constraints.real
        codomain = self.parts[-1].codomain
        event_dim = self.parts[0].domain.event_dim
        for part in self.parts:
            event_dim += part.codomain.event_dim - part.domain.event_dim
            event_dim = max(event_dim, part.codomain.event_dim)
        if event_dim > codomain.event_dim:
            codomain = constraints.independent(codomain, event_dim - codomain.event_dim)
        return codomain

    @property
    def bijective(self) -> bool:
        return all(p.bijective for p in self.parts)

    @property
    def sign(self):
        sign = 1
        for p in self.parts:
            sign = sign * p.sign
        return sign

    def _new_inverse(self) -> Transform:
        inv = ComposeTransform([p.inv for p in reversed(self.parts)])
        inv._inv = weakref.ref(self)
        return inv

    def with_cache(self, cache_size: int = 1) -> Transform:
        if self._cache_size == cache_size:
            return self
        return ComposeTransform(self.parts, cache_size=cache_size)

    def __call__(self, x):
        for part in self.parts:
            x = part(x)
        return x

    def log_abs_det_jacobian(self, x, y):
        if not self.parts:
            return ember.zeros_like(x)
        xs = [x]
        for part in self.parts[:-1]:
            xs.append(part(xs[-1]))
        xs.append(y)
        terms = []
        event_dim = self.domain.event_dim
        for part, x, y in zip(self.parts, xs[:-1], xs[1:]):
            terms.append(
                sum_rightmost(part.log_abs_det_jacobian(x, y), event_dim - part.domain.event_dim)
            )
            event_dim += part.codomain.event_dim - part.domain.event_dim
        return functools.reduce(operator.add, terms)

    def forward_shape(self, shape):
        for part in self.parts:
            shape = part.forward_shape(shape)
        return shape

    def inverse_shape(self, shape):
        for part in reversed(self.parts):
            shape = part.inverse_shape(shape)
        return shape

    def __repr__(self) -> str:
        inner = ",\n    ".join(repr(p) for p in self.parts)
        return self.__class__.__name__ + "(\n    " + inner + "\n)"


identity_transform = ComposeTransform([])


class IndependentTransform(Transform):
    """``base_transform`` acting on events of ``reinterpreted_batch_ndims`` more dims: its
    log-det-Jacobian is summed over them."""

    def __init__(self, base_transform: Transform, reinterpreted_batch_ndims: int, cache_size=0):
        super().__init__(cache_size=cache_size)
        self.base_transform = base_transform.with_cache(cache_size)
        self.reinterpreted_batch_ndims = reinterpreted_batch_ndims

    def with_cache(self, cache_size: int = 1) -> Transform:
        if self._cache_size == cache_size:
            return self
        return IndependentTransform(
            self.base_transform, self.reinterpreted_batch_ndims, cache_size=cache_size
        )

    @constraints.dependent_property(is_discrete=False)
    def domain(self):
        return constraints.independent(self.base_transform.domain, self.reinterpreted_batch_ndims)

    @constraints.dependent_property(is_discrete=False)
    def codomain(self):
        return constraints.independent(self.base_transform.codomain, self.reinterpreted_batch_ndims)

    bijective = forwarded_property("base_transform.bijective")
    sign = forwarded_property("base_transform.sign")

    def _call(self, x):
        _check_event_dims(x.shape, self.domain.event_dim)
        return self.base_transform(x)

    def _inverse(self, y):
        _check_event_dims(y.shape, self.codomain.event_dim)
        return self.base_transform.inv(y)

    def log_abs_det_jacobian(self, x, y):
        result = self.base_transform.log_abs_det_jacobian(x, y)
        return sum_rightmost(result, self.reinterpreted_batch_ndims)

    def __repr__(self) -> str:
        return (
            f"{self.__class__.__name__}({self.base_transform!r}, {self.reinterpreted_batch_ndims})"
        )

    def forward_shape(self, shape):
        return self.base_transform.forward_shape(shape)

    def inverse_shape(self, shape):
        return self.base_transform.inverse_shape(shape)


class ReshapeTransform(Transform):
    """Reshape the rightmost dims from ``in_shape`` to ``out_shape`` (same number of elements)."""

    bijective = True

    def __init__(self, in_shape, out_shape, cache_size: int = 0) -> None:
        self.in_shape = ember.Size(in_shape)
        self.out_shape = ember.Size(out_shape)
        if self.in_shape.numel() != self.out_shape.numel():
            raise ValueError("in_shape, out_shape have different numbers of elements")
        super().__init__(cache_size=cache_size)

    @constraints.dependent_property
    def domain(self):
        return constraints.independent(constraints.real, len(self.in_shape))

    @constraints.dependent_property
    def codomain(self):
        return constraints.independent(constraints.real, len(self.out_shape))

    def with_cache(self, cache_size: int = 1) -> Transform:
        if self._cache_size == cache_size:
            return self
        return ReshapeTransform(self.in_shape, self.out_shape, cache_size=cache_size)

    def _call(self, x):
        batch_shape = tuple(x.shape[: x.dim() - len(self.in_shape)])
        return x.reshape(batch_shape + tuple(self.out_shape))

    def _inverse(self, y):
        batch_shape = tuple(y.shape[: y.dim() - len(self.out_shape)])
        return y.reshape(batch_shape + tuple(self.in_shape))

    def log_abs_det_jacobian(self, x, y):
        batch_shape = tuple(x.shape[: x.dim() - len(self.in_shape)])
        return x.new_zeros(batch_shape)

    def forward_shape(self, shape):
        return _replace_event_shape(shape, self.in_shape, self.out_shape)

    def inverse_shape(self, shape):
        return _replace_event_shape(shape, self.out_shape, self.in_shape)


def _replace_event_shape(shape, old, new) -> ember.Size:
    """``shape`` with its rightmost dims ``old`` replaced by ``new``."""
    _check_event_dims(shape, len(old))
    cut = len(shape) - len(old)
    if tuple(shape[cut:]) != tuple(old):
        raise ValueError(f"Shape mismatch: expected {shape[cut:]} but got {old}")
    return ember.Size(tuple(shape[:cut]) + tuple(new))


class ExpTransform(_IncreasingOnReals, _ParameterFreeTransform):
    """y = exp(x)."""

    codomain = constraints.positive

    def _call(self, x):
        return x.exp()

    def _inverse(self, y):
        return y.log()

    def log_abs_det_jacobian(self, x, y):
        return x  # log |d e^x / dx| = x


class PowerTransform(Transform):
    """y = x ** exponent on the positive reals."""

    domain = constraints.positive
    codomain = constraints.positive
    bijective = True

    def __init__(self, exponent, cache_size: int = 0) -> None:
        super().__init__(cache_size=cache_size)
        (self.exponent,) = broadcast_all(exponent)

    def with_cache(self, cache_size: int = 1) -> Transform:
        if self._cache_size == cache_size:
            return self
        return PowerTransform(self.exponent, cache_size=cache_size)

    @property
    def sign(self):
        return self.exponent.sign()

    def __eq__(self, other) -> bool:
        if not isinstance(other, PowerTransform):
            return False
        return bool(self.exponent.eq(other.exponent).all().item())

    __hash__ = object.__hash__

    def _call(self, x):
        return x.pow(self.exponent)

    def _inverse(self, y):
        return y.pow(1 / self.exponent)

    def log_abs_det_jacobian(self, x, y):
        return (self.exponent * y / x).abs().log()  # d x^p = p x^(p-1) = p y / x

    def forward_shape(self, shape):
        return ember.broadcast_shapes(shape, getattr(self.exponent, "shape", ()))

    inverse_shape = forward_shape  # broadcasting with the exponent either way


def _clipped_sigmoid(x):
    info = finfo(x)
    return ember.sigmoid(x).clamp(min=float(info.tiny), max=1.0 - float(info.eps))


class SigmoidTransform(_IncreasingOnReals, _ParameterFreeTransform):
    """y = 1 / (1 + exp(-x)), kept strictly inside (0, 1)."""

    codomain = constraints.unit_interval

    def _call(self, x):
        return _clipped_sigmoid(x)

    def _inverse(self, y):
        info = finfo(y)
        y = y.clamp(min=float(info.tiny), max=1.0 - float(info.eps))
        return y.log() - (-y).log1p()

    def log_abs_det_jacobian(self, x, y):
        return -softplus(-x) - softplus(x)  # log σ'(x) = log σ(x) + log σ(-x)


class SoftplusTransform(_IncreasingOnReals, _ParameterFreeTransform):
    """y = log(1 + exp(x))."""

    codomain = constraints.positive

    def _call(self, x):
        return softplus(x)

    def _inverse(self, y):
        return (-y).expm1().neg().log() + y  # x = y + log(1 - e^-y)

    def log_abs_det_jacobian(self, x, y):
        return -softplus(-x)  # log σ(x)


class TanhTransform(_IncreasingOnReals, _ParameterFreeTransform):
    """y = tanh(x); the inverse is not clamped, so prefer ``cache_size=1`` near ±1."""

    codomain = constraints.interval(-1.0, 1.0)

    def _call(self, x):
        return x.tanh()

    def _inverse(self, y):
        return ember.atanh(y)

    def log_abs_det_jacobian(self, x, y):
        # log(1 - tanh²x) = 2 (log 2 - x - softplus(-2x)), stable for large |x|
        return 2.0 * (math.log(2.0) - x - softplus(-2.0 * x))


class AbsTransform(_ParameterFreeTransform):
    """y = |x| (not injective: the inverse picks the non-negative root)."""

    domain = constraints.real
    codomain = constraints.positive

    def _call(self, x):
        return x.abs()

    def _inverse(self, y):
        return y


class AffineTransform(Transform):
    """y = loc + scale · x, on events of ``event_dim`` dims."""

    bijective = True

    def __init__(self, loc, scale, event_dim: int = 0, cache_size: int = 0) -> None:
        super().__init__(cache_size=cache_size)
        self.loc = loc
        self.scale = scale
        self._event_dim = event_dim

    @property
    def event_dim(self) -> int:
        return self._event_dim

    @constraints.dependent_property(is_discrete=False)
    def domain(self):
        if self.event_dim == 0:
            return constraints.real
        return constraints.independent(constraints.real, self.event_dim)

    codomain = domain  # real events of event_dim dims, in and out

    def with_cache(self, cache_size: int = 1) -> Transform:
        if self._cache_size == cache_size:
            return self
        return AffineTransform(self.loc, self.scale, self.event_dim, cache_size=cache_size)

    def __eq__(self, other) -> bool:
        if not isinstance(other, AffineTransform):
            return False
        for a, b in ((self.loc, other.loc), (self.scale, other.scale)):
            if isinstance(a, Number) and isinstance(b, Number):
                if a != b:
                    return False
            elif not bool((ember.as_tensor(a) == ember.as_tensor(b)).all().item()):
                return False
        return True

    __hash__ = object.__hash__

    @property
    def sign(self):
        if isinstance(self.scale, Real):
            return 1 if float(self.scale) > 0 else -1 if float(self.scale) < 0 else 0
        return self.scale.sign()

    def _call(self, x):
        return self.loc + self.scale * x

    def _inverse(self, y):
        return (y - self.loc) / self.scale

    def log_abs_det_jacobian(self, x, y):
        shape = x.shape
        scale = self.scale
        if isinstance(scale, Real):
            result = ember.full_like(x, math.log(abs(scale)))
        else:
            result = ember.abs(scale).log()
        if self.event_dim:
            result = result.reshape(tuple(result.shape[: result.dim() - self.event_dim]) + (-1,))
            result = result.sum(-1)
            shape = shape[: len(shape) - self.event_dim]
        return result.expand(tuple(shape))

    def forward_shape(self, shape):
        return ember.broadcast_shapes(
            shape, getattr(self.loc, "shape", ()), getattr(self.scale, "shape", ())
        )

    inverse_shape = forward_shape  # broadcasting with loc and scale either way


class SoftmaxTransform(_ParameterFreeTransform):
    """y = softmax(x) over the last dim (not injective: the inverse is log y)."""

    domain = constraints.real_vector
    codomain = constraints.simplex

    def _call(self, x):
        probs = (x - x.max(-1, True)[0]).exp()
        return probs / probs.sum(-1, True)

    def _inverse(self, y):
        return y.log()

    def forward_shape(self, shape):
        _check_event_dims(shape, 1)
        return shape

    inverse_shape = forward_shape


class StickBreakingTransform(_ParameterFreeTransform):
    """R^(K-1) -> the K-simplex by breaking a stick: bijective, unlike softmax."""

    domain = constraints.real_vector
    codomain = constraints.simplex
    bijective = True

    def _offset(self, x, n: int):
        # K - k for k = 1..K-1: centres the sigmoid so that x = 0 maps to the uniform point
        return ember.arange(n, 0, -1, dtype=x.dtype, device=x.device)

    def _call(self, x):
        z = _clipped_sigmoid(x - self._offset(x, x.shape[-1]).log())
        z_cumprod = (1 - z).cumprod(-1)
        one = ember.ones(tuple(x.shape[:-1]) + (1,), dtype=x.dtype, device=x.device)
        return ember.cat([z, one], -1) * ember.cat([one, z_cumprod], -1)

    def _inverse(self, y):
        y_crop = y[..., :-1]
        offset = self._offset(y, y.shape[-1] - 1)
        sf = (1 - y_crop.cumsum(-1)).clamp(min=float(finfo(y).tiny))
        return y_crop.log() - sf.log() + offset.log()

    def log_abs_det_jacobian(self, x, y):
        x = x - self._offset(x, x.shape[-1]).log()
        return (-x + logsigmoid(x) + y[..., :-1].log()).sum(-1)

    def forward_shape(self, shape):
        _check_event_dims(shape, 1)
        return ember.Size(tuple(shape[:-1]) + (shape[-1] + 1,))

    def inverse_shape(self, shape):
        _check_event_dims(shape, 1)
        return ember.Size(tuple(shape[:-1]) + (shape[-1] - 1,))


class LowerCholeskyTransform(_ParameterFreeTransform):
    """Unconstrained square matrices -> lower-triangular with positive diagonal: keep the
    strictly lower part, exponentiate the diagonal."""

    domain = constraints.independent(constraints.real, 2)
    codomain = constraints.lower_cholesky

    def _call(self, x):
        return x.tril(-1) + x.diagonal(dim1=-2, dim2=-1).exp().diag_embed()

    def _inverse(self, y):
        return y.tril(-1) + y.diagonal(dim1=-2, dim2=-1).log().diag_embed()


class CumulativeDistributionTransform(Transform):
    """y = distribution.cdf(x): maps samples to the unit interval."""

    bijective = True
    codomain = constraints.unit_interval
    sign = +1

    def __init__(self, distribution, cache_size: int = 0) -> None:
        super().__init__(cache_size=cache_size)
        self.distribution = distribution

    @property
    def domain(self):
        return self.distribution.support

    def with_cache(self, cache_size: int = 1) -> Transform:
        if self._cache_size == cache_size:
            return self
        return type(self)(self.distribution, cache_size=cache_size)

    def _call(self, x):
        return self.distribution.cdf(x)

    def _inverse(self, y):
        return self.distribution.icdf(y)

    def log_abs_det_jacobian(self, x, y):
        return self.distribution.log_prob(x)


from ._structured_transforms import (  # noqa: E402  (they subclass Transform, defined above)
    CatTransform,
    CorrCholeskyTransform,
    PositiveDefiniteTransform,
    StackTransform,
)
