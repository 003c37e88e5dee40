"""Special functions (gamma family, error-function family, Bessel, xlogy, ...) and derivatives.

Kernels come from ``scipy.special`` on the CPU and ``cupyx.scipy.special`` on CUDA (imported
on first use, so ``import ember`` stays fast). Each differentiable op's backward formula sits
next to its kernel and is written with ember ops, so higher derivatives work. Ops that PyTorch
marks non-differentiable (Bessel functions of the first/second kind, Airy, the orthogonal
polynomials) return tensors that do not require grad, as PyTorch's do.
"""

from __future__ import annotations

import math

from .. import _backend
from .. import _dtype as dt
from .._tensor import Tensor
from ..autograd.node import Node
from . import special_bessel
from ._dispatch import (
    NUMBERS,
    array_module,
    data_of,
    float_result,
    named,
    non_differentiable,
    promote,
    result,
    to_tensor,
    wrap,
)
from .elementwise import where

SQRT_PI = math.sqrt(math.pi)
SQRT_2PI = math.sqrt(2.0 * math.pi)
LOG_PI = math.log(math.pi)

_MODULES: dict = {}
_HOST = _backend.require_module(_backend.CPU)  # the CPU's array module
_META = _backend.require_module(_backend.META)  # scipy's ufuncs give meta arrays their shapes


def _special_module(xp):
    """scipy.special for NumPy arrays, cupyx.scipy.special for CuPy arrays (cached)."""
    module = _MODULES.get(xp)
    if module is None:
        if xp is _HOST or xp is _META:
            import scipy.special as module
        else:
            import cupyx.scipy.special as module
        _MODULES[xp] = module
    return module


def _kernel(name: str, xp):
    """The named special-function kernel for arrays of ``xp``.

    CuPy lacks a few of scipy's functions: those run on a host copy (one transfer, still
    vectorised) rather than failing.
    """
    fn = getattr(_special_module(xp), name, None)
    if fn is not None:
        return fn
    host = getattr(_special_module(_HOST), name)

    def on_host(*arrays):
        moved = [a.get() if hasattr(a, "get") else a for a in arrays]
        return xp.asarray(host(*moved))

    return on_host


def _compute(name: str, *arrays, dtype):
    """Run kernel ``name`` on ``arrays`` and give the result in ``dtype``.

    scipy computes float16/bfloat16 in float32 and some kernels answer float64 for float32
    inputs: the result is cast back to the operands' dtype.
    """
    first = next(a for a in arrays if not isinstance(a, (int, float)))
    xp = array_module(first)
    if dtype.itemsize < 4:
        arrays = tuple(
            a if isinstance(a, (int, float)) else a.astype(dt.float32.np) for a in arrays
        )
    out = _kernel(name, xp)(*arrays)
    return xp.asarray(out).astype(dtype, copy=False)


def _floating_input(op: str, input) -> Tensor:
    if not isinstance(input, Tensor):
        raise TypeError(f"{op}(): argument 'input' must be Tensor, not {type(input).__name__}")
    return float_result(op, input)


# --------------------------------------------------------------------------------------------
# Differentiable unary ops: forward kernel and derivative side by side.
# derivative(node, g, x, y) -> gradient for x;  ``saves`` says which of x and y it reads.
# --------------------------------------------------------------------------------------------
DOCS = {
    "lgamma": "log |Γ(x)|, elementwise; its derivative is digamma.",
    "digamma": "ψ(x) = d/dx log Γ(x); -inf at 0 and nan at negative integers, as PyTorch.",
    "erfinv": "The inverse error function on (-1, 1); ±inf at ±1.",
    "erfcx": "The scaled complementary error function e^{x²} erfc(x).",
    "i0": "The modified Bessel function of the first kind, order 0.",
    "i0e": "The exponentially scaled modified Bessel function e^{-|x|} I0(x).",
    "i1": "The modified Bessel function of the first kind, order 1.",
    "i1e": "The exponentially scaled modified Bessel function e^{-|x|} I1(x).",
    "ndtr": "The standard normal cumulative distribution function Φ(x).",
    "ndtri": "The inverse of the standard normal CDF, Φ⁻¹(p).",
    "log_ndtr": "log Φ(x), accurate far into the lower tail.",
    "entr": "-x log x for x > 0, 0 at 0, -inf for x < 0.",
    "sinc": "The normalized sinc sin(πx)/(πx), 1 at 0.",
}


# torch has no float16/bfloat16 kernel for these (NotImplementedError)
_NO_HALF_KERNEL = frozenset({"erfcx", "ndtri", "log_ndtr"})


def _make_unary(name: str, kernel, derivative, saves: str, node_name: str):
    save_x, save_y = "x" in saves, "y" in saves

    def backward(self, g):
        x = self.unpack_saved()[0] if save_x else None
        y = self.saved_output() if save_y else None
        return derivative(g, x, y)

    node_cls = type(node_name, (Node,), {"backward": backward, "__module__": __name__})

    def op(input: Tensor) -> Tensor:
        input = _floating_input(name, input)
        if name in _NO_HALF_KERNEL and input.dtype.itemsize == 2:
            raise NotImplementedError(
                f"\"{name}_cpu\" not implemented for '{input.dtype.legacy_name}'"
            )
        data = input._data
        out = kernel(data)
        return result(node_cls, out, (input,), (input,) if save_x else (), save_y)

    named(op, name)
    op.__doc__ = DOCS[name]
    return op, node_cls


def _lgamma_kernel(x):
    out = _compute("gammaln", x, dtype=x.dtype)
    # scipy gives lgamma(-inf) = -inf; |Γ| grows without bound there, so PyTorch says +inf
    xp = array_module(out)
    return xp.where(x == -xp.inf, xp.inf, out).astype(x.dtype, copy=False) if x.size else out


def _i1_derivative(g, x, y):
    # d I1 = I0 - I1/x, with the limit 1/2 at x = 0
    at_zero = x == 0
    safe_x = where(at_zero, 1.0, x)
    return g * where(at_zero, 0.5, i0(x) - y / safe_x)


def _i1e_derivative(g, x, y):
    # d I1e = I0e - I1e (sgn x + 1/x), with the limit 1/2 at x = 0
    at_zero = x == 0
    safe_x = where(at_zero, 1.0, x)
    return g * where(at_zero, 0.5, i0e(x) - y * (x.sgn() + 1 / safe_x))


def _sinc_derivative(g, x, y):
    # d sinc = (πx cos πx - sin πx) / (πx²), 0 at x = 0 (as PyTorch's formula)
    at_zero = x == 0
    px = where(at_zero, 1.0, x) * math.pi
    slope = (px * px.cos() - px.sin()) / (px * px) * math.pi
    return g * slope.masked_fill(at_zero, 0.0)


def _sinc_kernel(x):
    xp = array_module(x)
    # half floats in float32 and rounded once, as torch's CPU kernel computes them
    work = x.astype(xp.float32) if x.dtype.itemsize < 4 else x
    at_zero = work == 0
    px = xp.where(at_zero, 1, work) * work.dtype.type(math.pi)  # no 0/0 (and no warning) at 0
    return xp.where(at_zero, 1, xp.sin(px) / px).astype(x.dtype, copy=False)


def _entr_derivative(g, x, y):
    return g * -(x.log() + 1)  # d(-x log x) = -(1 + log x)


UNARY = {
    # name: (kernel(array), derivative(g, x, y), saves, node name)
    "lgamma": (_lgamma_kernel, lambda g, x, y: g * digamma(x), "x", "LgammaBackward0"),
    "digamma": (
        lambda x: _compute("psi", x, dtype=x.dtype),
        lambda g, x, y: g * polygamma(1, x),
        "x",
        "DigammaBackward0",
    ),
    # d erfinv = √π/2 exp(erfinv(x)²)
    "erfinv": (
        lambda x: _compute("erfinv", x, dtype=x.dtype),
        lambda g, x, y: g * (y * y).exp() * (SQRT_PI / 2),
        "y",
        "ErfinvBackward0",
    ),
    # d erfcx = 2x erfcx(x) - 2/√π
    "erfcx": (
        lambda x: _compute("erfcx", x, dtype=x.dtype),
        lambda g, x, y: g * (x * y * 2 - 2 / SQRT_PI),
        "xy",
        "SpecialErfcxBackward0",
    ),
    "i0": (
        lambda x: _compute("i0", x, dtype=x.dtype),
        lambda g, x, y: g * i1(x),
        "x",
        "I0Backward0",
    ),
    # d I0e = I1e - sgn(x) I0e
    "i0e": (
        lambda x: _compute("i0e", x, dtype=x.dtype),
        lambda g, x, y: g * (i1e(x) - x.sgn() * y),
        "xy",
        "SpecialI0EBackward0",
    ),
    "i1": (lambda x: _compute("i1", x, dtype=x.dtype), _i1_derivative, "xy", "SpecialI1Backward0"),
    "i1e": (
        lambda x: _compute("i1e", x, dtype=x.dtype),
        _i1e_derivative,
        "xy",
        "SpecialI1EBackward0",
    ),
    # d Φ = e^{-x²/2} / √(2π)
    "ndtr": (
        lambda x: _compute("ndtr", x, dtype=x.dtype),
        lambda g, x, y: g * (x * x * -0.5).exp() / SQRT_2PI,
        "x",
        "SpecialNdtrBackward0",
    ),
    # d Φ⁻¹ = √(2π) e^{y²/2}
    "ndtri": (
        lambda x: _compute("ndtri", x, dtype=x.dtype),
        lambda g, x, y: g * (y * y * 0.5).exp() * SQRT_2PI,
        "y",
        "SpecialNdtriBackward0",
    ),
    # d log Φ = e^{-x²/2} / (√(2π) Φ) = e^{-(y + x²/2)} / √(2π)
    "log_ndtr": (
        lambda x: _compute("log_ndtr", x, dtype=x.dtype),
        lambda g, x, y: g * (-(y + x * x * 0.5)).exp() / SQRT_2PI,
        "xy",
        "SpecialLogNdtrBackward0",
    ),
    "entr": (
        lambda x: _compute("entr", x, dtype=x.dtype),
        _entr_derivative,
        "x",
        "SpecialEntrBackward0",
    ),
    "sinc": (_sinc_kernel, _sinc_derivative, "x", "SincBackward0"),
}

lgamma, LgammaBackward0 = _make_unary("lgamma", *UNARY["lgamma"])
digamma, DigammaBackward0 = _make_unary("digamma", *UNARY["digamma"])
erfinv, ErfinvBackward0 = _make_unary("erfinv", *UNARY["erfinv"])
erfcx, SpecialErfcxBackward0 = _make_unary("erfcx", *UNARY["erfcx"])
i0, I0Backward0 = _make_unary("i0", *UNARY["i0"])
i0e, SpecialI0EBackward0 = _make_unary("i0e", *UNARY["i0e"])
i1, SpecialI1Backward0 = _make_unary("i1", *UNARY["i1"])
i1e, SpecialI1EBackward0 = _make_unary("i1e", *UNARY["i1e"])
ndtr, SpecialNdtrBackward0 = _make_unary("ndtr", *UNARY["ndtr"])
ndtri, SpecialNdtriBackward0 = _make_unary("ndtri", *UNARY["ndtri"])
log_ndtr, SpecialLogNdtrBackward0 = _make_unary("log_ndtr", *UNARY["log_ndtr"])
entr, SpecialEntrBackward0 = _make_unary("entr", *UNARY["entr"])
sinc, SincBackward0 = _make_unary("sinc", *UNARY["sinc"])

gammaln = lgamma
psi = digamma


# --------------------------------------------------------------------------------------------
# polygamma(n, x) and the multivariate log-gamma
# --------------------------------------------------------------------------------------------
class PolygammaBackward0(Node):
    def backward(self, g):
        (x,) = self.unpack_saved()
        return g * polygamma(self.n + 1, x)  # d ψ⁽ⁿ⁾ = ψ⁽ⁿ⁺¹⁾


def polygamma(n: int, input: Tensor) -> Tensor:
    """The n-th derivative of the digamma function, ψ⁽ⁿ⁾(x).

    Example::
        >>> ember.polygamma(1, ember.tensor([1.0]))  # π²/6
        tensor([1.6449])
    """
    if isinstance(n, bool) or not hasattr(n, "__index__"):
        raise TypeError(f"polygamma(): argument 'n' must be int, not {type(n).__name__}")
    if n < 0:
        raise RuntimeError("polygamma(n, x) does not support negative n.")
    input = _floating_input("polygamma", input)
    data = input._data
    out = _compute("psi", data, dtype=data.dtype) if n == 0 else _polygamma_kernel(n, data)
    return result(PolygammaBackward0, out, (input,), (input,), n=int(n))


def _polygamma_kernel(n: int, x):
    xp = array_module(x)
    if n == 1:
        return _trigamma_kernel(x)
    # ψ⁽ⁿ⁾(x) = (-1)ⁿ⁺¹ n! ζ(n+1, x) for n ≥ 2
    zeta_values = _zeta_kernel(float(n + 1), x, x.dtype)
    return xp.asarray(zeta_values * ((-1) ** (n + 1) * math.factorial(n))).astype(x.dtype)


def _trigamma_kernel(x):
    """ψ⁽¹⁾(x) by torch's method, in the input's precision (half types in float32): reflection
    ψ⁽¹⁾(x) = π²/sin²(πx) - ψ⁽¹⁾(1 - x) below ½, six steps of ψ⁽¹⁾(x) = 1/x² + ψ⁽¹⁾(x + 1),
    then the asymptotic series. So float32 results near the poles are torch's to the rounding
    (at a negative integer sin(πx) is not 0 in float32: a huge finite value, as torch's)."""
    xp = array_module(x)
    work = x.astype(dt.float32.np) if x.dtype.itemsize < 4 else x
    one = work.dtype.type(1)
    pi = work.dtype.type(math.pi)
    with _backend.errstate(xp, divide="ignore", invalid="ignore", over="ignore"):
        reflect = work < work.dtype.type(0.5)
        sin_pi_x = xp.sin(pi * work)
        acc = xp.where(reflect, -(pi * pi) / (sin_pi_x * sin_pi_x), 0).astype(work.dtype)
        z = xp.where(reflect, one - work, work)
        for _ in range(6):
            acc = acc + one / (z * z)
            z = z + one
        inv2 = one / (z * z)
        series = inv2 * (one / 6 - inv2 * (one / 30 - inv2 * (one / 42)))
        acc = acc + (one + one / (2 * z) + series) / z
    return xp.asarray(xp.where(reflect, -acc, acc)).astype(x.dtype)


def mvlgamma(input: Tensor, p: int) -> Tensor:
    """Multivariate log-gamma: p(p-1)/4 log π + Σ_{j<p} lgamma(x - j/2), elementwise.

    Like PyTorch 2.x, arguments at or below (p-1)/2 are not rejected (lgamma gives inf there).
    """
    if p < 1:
        raise RuntimeError("p has to be greater than or equal to 1")
    input = _floating_input("mvlgamma", input)
    out = lgamma(input)
    for j in range(1, p):
        out = out + lgamma(input - j / 2)
    return out + p * (p - 1) / 4 * LOG_PI


multigammaln = mvlgamma


# --------------------------------------------------------------------------------------------
# Binary ops: xlogy, xlog1py, zeta, igamma, igammac. Operands follow PyTorch's promotion
# (a Python number is weak), and integer results compute in the default float dtype.
# --------------------------------------------------------------------------------------------
def _binary_operands(op: str, input, other):
    if not isinstance(input, Tensor) and not isinstance(other, Tensor):
        raise TypeError(f"{op}(): expected at least one Tensor argument")
    a, b = promote(op, input, other)
    tensor = a if isinstance(a, Tensor) else b
    if tensor._data.dtype.kind in "biu":
        # torch casts each integer operand to float itself: -4 in int32 stays -4 next to a
        # uint8 tensor, where the common integer dtype would have wrapped it
        floating = dt.get_default_dtype()
        a = input.to(floating) if isinstance(input, Tensor) else float(input)
        b = other.to(floating) if isinstance(other, Tensor) else float(other)
        tensor = a if isinstance(a, Tensor) else b
    return a, b, tensor._data


def _binary_kernel(op: str, kernel, a, b):
    """``kernel`` (a scipy name, or a function of two arrays and a dtype) on broadcast operands."""
    like = a._data if isinstance(a, Tensor) else b._data
    ad, bd = data_of(a, like), data_of(b, like)
    xp = array_module(like)
    try:
        xp.broadcast_shapes(xp.shape(ad), xp.shape(bd))
    except ValueError:
        from ._dispatch import broadcast_error

        raise broadcast_error(op, ad, bd) from None
    if isinstance(kernel, str):
        return _compute(kernel, ad, bd, dtype=like.dtype)
    return kernel(ad, bd, like.dtype)


def _not_implemented(what: str) -> RuntimeError:
    return RuntimeError(f"the derivative for '{what}' is not implemented.")


class XlogyBackward0(Node):
    def backward(self, g):
        x, y = self.unpack_saved()
        gx = gy = None
        if self._edges[0] is not None:
            # d/dx x log y = log y; PyTorch zeroes it where x = 0 and y ≤ 0 (log y undefined)
            gx = xlogy(g, y)
            if y.__class__ in NUMBERS:
                gx = gx.masked_fill(x == 0, 0.0) if y <= 0 else gx
            else:
                gx = gx.masked_fill((x == 0) & (y <= 0), 0.0)
        if self._edges[1] is not None:
            gy = g * x / y
        return gx, gy


def _xlogy_kernel(x, y, dtype):
    if dtype.itemsize >= 4:
        return _compute("xlogy", x, y, dtype=dtype)
    # half floats: torch rounds both operands and log(y) to the half type, then x · log(y)
    xp = array_module(x if not isinstance(x, (int, float)) else y)
    x, y = xp.asarray(x).astype(dtype), xp.asarray(y).astype(dtype)
    single = xp.float32
    with _HOST.errstate(all="ignore"):
        log_y = xp.log(y.astype(single)).astype(dtype).astype(single)
        out = (x.astype(single) * log_y).astype(dtype)
    out = xp.where(x == 0, dtype.type(0), out)
    return xp.where(y != y, y, out)  # NaN y wins over x = 0


def xlogy(input, other) -> Tensor:
    """x · log(y), with 0 where x = 0 (unless y is nan).

    Example::
        >>> ember.xlogy(ember.tensor([0.0, 2.0]), ember.tensor([0.0, 3.0]))
        tensor([0.0000, 2.1972])
    """
    a, b, _ = _binary_operands("xlogy", input, other)
    out = _binary_kernel("xlogy", _xlogy_kernel, a, b)
    return result(XlogyBackward0, out, (a, b), (a, b))


class SpecialXlog1PyBackward0(Node):
    def backward(self, g):
        x, y = self.unpack_saved()
        gx = gy = None
        if self._edges[0] is not None:
            gx = xlog1py(g, y)  # d/dx x log1p y = log1p y, zeroed where x = 0 and y ≤ -1
            if y.__class__ in NUMBERS:
                gx = gx.masked_fill(x == 0, 0.0) if y <= -1 else gx
            else:
                gx = gx.masked_fill((x == 0) & (y <= -1), 0.0)
        if self._edges[1] is not None:
            gy = g * x / (y + 1)
        return gx, gy


def xlog1py(input, other) -> Tensor:
    """x · log1p(y), with 0 where x = 0 (unless y is nan)."""
    a, b, _ = _binary_operands("xlog1py", input, other)
    out = _binary_kernel("xlog1py", "xlog1py", a, b)
    return result(SpecialXlog1PyBackward0, out, (a, b), (a, b))


class SpecialZetaBackward0(Node):
    def backward(self, g):
        x, q = self.unpack_saved()
        if self._edges[0] is not None:
            raise _not_implemented("zeta")
        return None, g * -x * zeta(x + 1, q)  # ∂ζ(x, q)/∂q = -x ζ(x+1, q)


def _zeta_kernel(x, q, dtype):
    out = _compute("zeta", x, q, dtype=dtype)
    # scipy gives ζ(x, +inf) = 0, PyTorch nan (its series does not converge there)
    xp = array_module(out)
    return xp.where(q == xp.inf, xp.nan, out).astype(dtype, copy=False)


def zeta(input, other) -> Tensor:
    """The Hurwitz zeta function ζ(x, q) = Σ_k (k + q)^-x."""
    a, b, _ = _binary_operands("zeta", input, other)
    out = _binary_kernel("zeta", _zeta_kernel, a, b)
    return result(SpecialZetaBackward0, out, (a, b), (a, b))


def _igamma_density(a, x):
    # ∂P(a, x)/∂x = x^(a-1) e^-x / Γ(a)
    return ((a - 1) * x.log() - x - lgamma(a if isinstance(a, Tensor) else to_tensor(a, x))).exp()


class IgammaBackward0(Node):
    def backward(self, g):
        a, x = self.unpack_saved()
        if self._edges[0] is not None:
            raise _not_implemented("igamma: input")
        return None, g * _igamma_density(a, x)


class IgammacBackward0(Node):
    def backward(self, g):
        a, x = self.unpack_saved()
        if self._edges[0] is not None:
            raise _not_implemented("igammac: input")
        return None, -(g * _igamma_density(a, x))


def _igamma_operands(op: str, input, other):
    for position, (arg, value) in enumerate((("input", input), ("other", other)), 1):
        if not isinstance(value, Tensor):
            raise TypeError(
                f"{op}(): argument '{arg}' (position {position}) must be Tensor, "
                f"not {type(value).__name__}"
            )
    a, b, _ = _binary_operands(op, input, other)
    return a, b


def igamma(input: Tensor, other: Tensor) -> Tensor:
    """The regularized lower incomplete gamma function P(a, x)."""
    a, x = _igamma_operands("igamma", input, other)
    out = _binary_kernel("igamma", "gammainc", a, x)
    return result(IgammaBackward0, out, (a, x), (a, x))


def igammac(input: Tensor, other: Tensor) -> Tensor:
    """The regularized upper incomplete gamma function Q(a, x) = 1 - P(a, x)."""
    a, x = _igamma_operands("igammac", input, other)
    out = _binary_kernel("igammac", "gammaincc", a, x)
    return result(IgammacBackward0, out, (a, x), (a, x))


gammainc, gammaincc = igamma, igammac


# --------------------------------------------------------------------------------------------
# Ops PyTorch marks non-differentiable: their results never require grad.
# --------------------------------------------------------------------------------------------
def _spherical_j0(x):
    # sin(x)/x: 1 at 0 and 0 at ±inf (its limits)
    xp = array_module(x)
    safe = xp.where((x == 0) | xp.isinf(x), 1, x)
    out = xp.where(x == 0, 1, xp.where(xp.isinf(x), 0, xp.sin(safe) / safe))
    return out.astype(x.dtype, copy=False)


def _airy_ai(x):
    xp = array_module(x)
    fn = getattr(_special_module(xp), "airy", None)
    if fn is None:  # CuPy has no Airy functions: compute on a host copy
        return xp.asarray(_airy_ai(x.get())).astype(x.dtype, copy=False)
    work = x.astype(dt.float32.np) if x.dtype.itemsize < 4 else x
    return xp.asarray(fn(work)[0]).astype(x.dtype, copy=False)


NON_DIFFERENTIABLE_UNARY = {
    "bessel_j0": special_bessel.bessel_j0,  # ATen's approximations, not scipy's exact ones
    "bessel_j1": special_bessel.bessel_j1,
    "bessel_y0": special_bessel.bessel_y0,
    "bessel_y1": special_bessel.bessel_y1,
    "modified_bessel_i0": "i0",
    "modified_bessel_i1": "i1",
    "modified_bessel_k0": "k0",
    "modified_bessel_k1": "k1",
    "scaled_modified_bessel_k0": "k0e",
    "scaled_modified_bessel_k1": "k1e",
    "spherical_bessel_j0": _spherical_j0,
    "airy_ai": _airy_ai,
}


def _make_non_differentiable(name: str, kernel):
    def op(input: Tensor) -> Tensor:
        input = _floating_input(name, input)
        data = input._data
        out = _compute(kernel, data, dtype=data.dtype) if isinstance(kernel, str) else kernel(data)
        return non_differentiable(name, wrap(out), input)

    named(op, name)
    op.__doc__ = f"``torch.special.{name}`` (not differentiable, as in PyTorch)."
    return op


for _name, _kernel_of in NON_DIFFERENTIABLE_UNARY.items():
    globals()[_name] = _make_non_differentiable(_name, _kernel_of)


# --------------------------------------------------------------------------------------------
# Tensor-method forms whose argument order differs from the function
# --------------------------------------------------------------------------------------------
def polygamma_method(self: Tensor, n: int) -> Tensor:
    """``x.polygamma(n)``: the same as ``polygamma(n, x)``."""
    return polygamma(n, self)
