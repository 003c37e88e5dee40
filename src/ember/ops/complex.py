"""Complex-number ops: parts and views (real, imag, view_as_real/complex), construction
(complex, polar), conj, abs/sgn/angle, casts to and from complex dtypes, and the complex path
of the holomorphic elementwise ops.

Gradients follow PyTorch's convention: for a real loss L of z = x + iy, ``z.grad`` is
∂L/∂x + i ∂L/∂y, so a holomorphic f passes back ``g * conj(f'(z))``.
"""

from __future__ import annotations

import builtins

from .. import _dtype as dt
from .._tensor import Tensor
from ..autograd.node import Node, torch_node_name
from ._dispatch import array_module, grad_state, no_grad_result, record, result, wrap


def _is_complex(t) -> bool:
    return t.__class__ is Tensor and t._data.dtype.kind == "c"


def conj_of(x):
    """conj of a tensor or Python number; real values come back unchanged (no copy)."""
    if x.__class__ is Tensor:
        return conj(x) if x._data.dtype.kind == "c" else x
    return x.conjugate() if x.__class__ is builtins.complex else x


def not_implemented(op: str, t: Tensor) -> NotImplementedError:
    # NotImplementedError is a RuntimeError, as PyTorch raises it for missing kernels
    return NotImplementedError(f"\"{op}_cpu\" not implemented for '{t.dtype.legacy_name}'")


# --- casts ------------------------------------------------------------------------------------
class ToCopyBackward0(Node):
    def backward(self, g):
        src = self.src_dtype
        if src.category != dt.COMPLEX and g._data.dtype.kind == "c":
            g = real(g)  # a real input gets the real part of its gradient
        return cast(g, src)


def cast(input: Tensor, dtype: dt.dtype) -> Tensor:
    """``input`` as ``dtype`` where either side is complex, differentiable (complex -> real
    keeps the real part, as PyTorch, which also warns)."""
    data = input._data
    if data.dtype == dtype.np:
        return input
    if data.dtype.kind == "c" and dtype.category != dt.COMPLEX:
        import warnings

        warnings.warn(
            "Casting complex values to real discards the imaginary part", UserWarning, stacklevel=3
        )
        data = data.real
    out = data.astype(dtype.np)
    if input._rg and dtype.category >= dt.FLOAT:
        return result(ToCopyBackward0, out, (input,), src_dtype=input.dtype)
    return wrap(out)


def cfloat(self: Tensor, memory_format=None) -> Tensor:
    return cast(self, dt.complex64)


def cdouble(self: Tensor, memory_format=None) -> Tensor:
    return cast(self, dt.complex128)


# --- parts as views -------------------------------------------------------------------------
class RealBackward0(Node):
    def backward(self, g):
        return complex(g, g * 0)  # ∂L/∂x = g, ∂L/∂y = 0


class ImagBackward0(Node):
    def backward(self, g):
        return complex(g * 0, g)


def _part_view(node_cls, data, src: Tensor, step) -> Tensor:
    from .shape import _view_result

    return _view_result(node_cls, data, src, step)


def real(input: Tensor) -> Tensor:
    """The real part: a view for complex tensors, ``input`` itself for real ones."""
    if input._data.dtype.kind != "c":
        return input
    return _part_view(RealBackward0, input._data.real, input, (real, ()))


def imag(input: Tensor) -> Tensor:
    """The imaginary part of a complex tensor, as a view."""
    if input._data.dtype.kind != "c":
        raise RuntimeError("imag is not implemented for tensors with non-complex dtypes.")
    return _part_view(ImagBackward0, input._data.imag, input, (imag, ()))


class ViewAsRealBackward0(Node):
    def backward(self, g):
        return complex(g[..., 0], g[..., 1])


class ViewAsComplexBackward0(Node):
    def backward(self, g):
        return view_as_real(g.contiguous() if g._data.ndim else g)


def view_as_real(input: Tensor) -> Tensor:
    """A real view of a complex tensor with a trailing dimension of 2 (real, imaginary)."""
    data = input._data
    if data.dtype.kind != "c":
        raise RuntimeError("view_as_real is only supported for complex tensors")
    real_np = input.dtype.to_real().np
    out = data[..., None].view(real_np)
    from .shape import make_view

    return make_view(result(ViewAsRealBackward0, out, (input,)), input, (view_as_real, ()))


def view_as_complex(input: Tensor) -> Tensor:
    """A complex view of a real tensor whose last dimension (stride 1) holds (real, imag)."""
    data = input._data
    if input.dtype is dt.float16:
        raise RuntimeError("view_as_complex: ember has no complex32, half tensors have no view")
    if input.dtype not in (dt.float32, dt.float64):
        raise RuntimeError(
            "view_as_complex is only supported for half, float and double tensors, but got a "
            f"tensor of scalar type: {input.dtype.legacy_name}"
        )
    if data.ndim == 0 or data.shape[-1] != 2:
        raise RuntimeError("Tensor must have a last dimension of size 2")
    if data.strides[-1] != data.itemsize:
        raise RuntimeError("Tensor must have a last dimension with stride 1")
    if any(s % (2 * data.itemsize) for s in data.strides[:-1]):
        raise RuntimeError("Tensor must have a stride divisible by 2 for all but last dimension")
    out = data.view(input.dtype.to_complex().np)[..., 0]
    from .shape import make_view

    return make_view(result(ViewAsComplexBackward0, out, (input,)), input, (view_as_complex, ()))


# --- construction ---------------------------------------------------------------------------
class ComplexBackward0(Node):
    def backward(self, g):
        edges = self._edges
        return (
            real(g) if edges[0] is not None else None,
            imag(g) if edges[1] is not None else None,
        )


def complex(real: Tensor, imag: Tensor) -> Tensor:
    """``real + i·imag`` from two floating tensors of the same dtype (broadcast).

    Example::
        >>> ember.complex(ember.tensor([1.0]), ember.tensor([2.0]))
        tensor([1.+2.j])
    """
    if not isinstance(real, Tensor) or not isinstance(imag, Tensor):
        raise TypeError("complex(): argument 'real' and 'imag' must be Tensor")
    if real.dtype not in (dt.float16, dt.float32, dt.float64) or imag.dtype not in (
        dt.float16,
        dt.float32,
        dt.float64,
    ):
        raise RuntimeError(
            f"Expected both inputs to be Half, Float or Double tensors but got "
            f"{real.dtype.legacy_name} and {imag.dtype.legacy_name}"
        )
    if real.dtype is not imag.dtype:
        raise RuntimeError(
            f"Expected object of scalar type {real.dtype.legacy_name} but got scalar type "
            f"{imag.dtype.legacy_name} for second argument"
        )
    xp = array_module(real._data)
    shape = xp.broadcast_shapes(real._data.shape, imag._data.shape)
    out = xp.empty(shape, dtype=real.dtype.to_complex().np)
    out.real = real._data
    out.imag = imag._data
    return result(ComplexBackward0, out, (real, imag))


def polar(abs: Tensor, angle: Tensor) -> Tensor:
    """``abs · (cos(angle) + i·sin(angle))``."""
    if abs.dtype is not angle.dtype:
        raise RuntimeError(
            f"Expected object of scalar type {abs.dtype.legacy_name} but got scalar type "
            f"{angle.dtype.legacy_name} for second argument"
        )
    return complex(abs * angle.cos(), abs * angle.sin())


# --- conj, abs, sgn, angle --------------------------------------------------------------------
class ConjBackward0(Node):
    def backward(self, g):
        return conj(g)


def conj(input: Tensor) -> Tensor:
    """The complex conjugate (ember materialises it: ``is_conj()`` stays False)."""
    data = input._data
    if data.dtype.kind != "c":
        return input
    return result(ConjBackward0, array_module(data).conj(data), (input,))


def conj_physical(input: Tensor) -> Tensor:
    if input._data.dtype.kind != "c":
        return input.clone()
    return conj(input)


class AbsBackward0(Node):
    def backward(self, g):
        (z,) = self.unpack_saved()
        return g * sgn(z)  # ∇|z| = z/|z|


def abs(input: Tensor) -> Tensor:
    """|z| of a complex tensor, real (float32 for complex64)."""
    data = input._data
    return result(AbsBackward0, array_module(data).abs(data), (input,), (input,))


class SgnBackward0(Node):
    def backward(self, g):
        (z,) = self.unpack_saved()
        s = self.saved_output()
        a = abs(z)
        zero = a == 0
        # only the part of g turning s along the unit circle counts: (g - Re(g s̄) s)/|z|
        grad = (g - real(g * conj(s)) * s) / a.masked_fill(zero, 1.0)
        return grad.masked_fill(zero, 0.0)


def sgn(input: Tensor) -> Tensor:
    """z/|z| (0 at 0); for real tensors the sign."""
    data = input._data
    if data.dtype.kind != "c":
        return input.sign()
    xp = array_module(data)
    a = xp.abs(data)
    out = xp.where(a == 0, 0, data / xp.where(a == 0, 1, a)).astype(data.dtype, copy=False)
    return result(SgnBackward0, out, (input,), (input,), save_output=True)


class AngleBackward0(Node):
    def backward(self, g):
        (z,) = self.unpack_saved()
        if z._data.dtype.kind != "c":  # piecewise constant on the reals
            return g * 0
        # ∇ atan2(y, x) = (-y + i x)/|z|² = i z/|z|², taken as 0 at z = 0 (as PyTorch)
        squared = real(z) ** 2 + imag(z) ** 2
        return (z * 1j) * (g / squared.masked_fill(squared == 0, 1.0))


def angle(input: Tensor) -> Tensor:
    """The argument of z in (-π, π], real: π for negative reals, 0 for the others (-0.0
    included), NaN for NaN. Integers and bools give the default float dtype.

    >>> ember.angle(ember.tensor([-2.0, 0.0, 3.0]))
    tensor([3.1416, 0.0000, 0.0000])
    """
    data = input._data
    xp = array_module(data)
    if data.dtype.kind == "c":
        return result(AngleBackward0, xp.angle(data), (input,), (input,))
    if data.dtype.kind in "biu":
        data = data.astype(dt.get_default_dtype().np)
    out = xp.where(data < 0, data.dtype.type(builtins.float(xp.pi)), data.dtype.type(0))
    out = xp.where(data != data, data, out)  # NaN stays NaN
    return result(AngleBackward0, out.astype(data.dtype, copy=False), (input,), (input,))


# --- holomorphic elementwise ops on complex tensors -------------------------------------------
HOLOMORPHIC = frozenset(
    "neg exp exp2 expm1 log log2 log10 log1p sqrt rsqrt square sin cos tan asin acos atan "
    "sinh cosh tanh asinh acosh atanh sigmoid reciprocal".split()
)
# fused real kernels of these do not conjugate their second derivative: use plain formulas
COMPLEX_DERIVATIVES = {
    "tanh": lambda g, x, y: g * (1 - y * y),
    "sigmoid": lambda g, x, y: g * (y * (1 - y)),
    # the principal acosh is log(z + √(z-1)√(z+1)): √(z²-1) takes the other branch off the axis
    "acosh": lambda g, x, y: g / ((x - 1).sqrt() * (x + 1).sqrt()),
}
_NO_COMPLEX_MESSAGES = {
    "sign": "Unlike NumPy, sign is not intended to support complex numbers. Please use sgn "
    "instead.",
    "relu": "clamp is not supported for complex types",
    **{
        name: f"{name} is not supported for complex inputs"
        for name in ("floor", "ceil", "trunc", "frac")
    },
}


def _holomorphic_node(name: str, derivative, save_x: bool, save_y: bool):
    derivative = COMPLEX_DERIVATIVES.get(name, derivative)

    def backward(self, g):
        x = self.unpack_saved()[0] if save_x else None
        y = self.saved_output() if save_y else None
        # g·conj(f'(z)) = conj(conj(g)·f'(z)): the real formula, conjugated around
        return conj(derivative(conj_of(g), x, y))

    node_name = torch_node_name(name)
    return type(node_name, (Node,), {"backward": backward, "__module__": __name__})


_NODES: dict = {}


def unary(name: str, kernel, derivative, saves: str, input: Tensor) -> Tensor:
    """The complex path of an elementwise op from ``elementwise.UNARY``."""
    if name == "abs":
        return abs(input)
    if name not in HOLOMORPHIC:
        message = _NO_COMPLEX_MESSAGES.get(name)
        if message is None:
            raise not_implemented(name, input)
        raise NotImplementedError(message)
    data = input._data
    xp = array_module(data)
    # the real sigmoid kernel branches on the sign of x, which complex numbers lack
    out = 1 / (1 + xp.exp(-data)) if name == "sigmoid" else kernel(xp, data)
    if out.dtype != data.dtype:
        out = out.astype(data.dtype)
    node_cls = _NODES.get(name)
    if node_cls is None:
        node_cls = _NODES[name] = _holomorphic_node(name, derivative, "x" in saves, "y" in saves)
    if input._rg:
        if grad_state.enabled:
            return record(node_cls(), out, (input,), (input,) if "x" in saves else (), "y" in saves)
        return no_grad_result(node_cls, out, (input,))
    return wrap(out)
