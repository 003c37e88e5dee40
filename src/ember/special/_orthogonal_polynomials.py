"""The orthogonal polynomials of ``torch.special``: Chebyshev (T, U, V, W and shifted), Hermite
(physicists' H, probabilists' He), Laguerre L and Legendre P, evaluated at x for degree n.

Each polynomial is its three-term recurrence plus PyTorch's special cases (endpoints, a
trigonometric closed form for high degree inside (-1, 1), n < 0 gives 0, n is truncated to an
integer). The recurrence runs once per degree over the array of elements that need it, never
per element in Python. Like PyTorch, the results are not differentiable.
"""

from __future__ import annotations

import contextlib

import numpy as np

from .._random.fma import fma_float32, fma_float64
from .._tensor import Tensor
from ..ops._dispatch import array_module, data_of, named, non_differentiable, wrap
from ..ops.special import _binary_operands


def _prepare(op: str, input, n):
    a, b, like = _binary_operands(op, input, n)
    xp = array_module(like)
    x = xp.asarray(data_of(a, like), dtype=like.dtype)
    degree = xp.asarray(data_of(b, like), dtype=like.dtype)
    try:
        x, degree = xp.broadcast_arrays(x, degree)
    except ValueError:
        from ..ops._dispatch import broadcast_error

        raise broadcast_error(op, x, degree) from None
    # PyTorch casts n to a 64-bit integer (truncation towards zero); nan, ±inf and values out
    # of its range become the most negative integer there, so their result is 0
    in_range = xp.abs(degree) < 2.0**63
    degree_int = xp.trunc(xp.where(in_range, degree, -1))
    # kept in x's dtype, as PyTorch's kernels compute n · acos(x) and the like in it
    return a, b, xp, x, degree_int.astype(x.dtype, copy=False)


def _recurrence(xp, x, n, first, step):
    """P_n(x) for n ≥ 2 from P_0 = 1, P_1 = ``first`` and P_j = ``step(x, P_{j-2}, P_{j-1}, j)``."""
    out = xp.full(x.shape, xp.nan, dtype=x.dtype)
    need = n >= 2
    if not bool(need.any()):
        return out
    xs, ns = x[need], n[need]
    p, q = xp.ones_like(xs), first[need].astype(x.dtype, copy=False)
    values = xp.full(xs.shape, xp.nan, dtype=x.dtype)
    for j in range(2, int(ns.max()) + 1):
        p, q = q, step(xs, p, q, j)
        done = ns == j
        values[done] = q[done]
    out[need] = values
    return out


def _first_match(xp, cases, fallback):
    """Pick, per element, the value of the first case whose mask holds (else ``fallback``)."""
    out = fallback
    for mask, value in reversed(cases):
        out = xp.where(mask, value, out)
    return out


def _signed(xp, n, value):
    """value for even n, -value for odd n."""
    return xp.where(n % 2 == 0, value, -value)


# --- one function per polynomial: (xp, x, n) -> the ordered special cases and the recurrence --
def _chebyshev_t(xp, x, n):
    acos = xp.arccos(xp.clip(x, -1, 1))
    cases = [
        (xp.abs(x) == 1, xp.where((x > 0) | (n % 2 == 0), 1.0, -1.0)),
        ((n > 6) & (xp.abs(x) < 1), xp.cos(n * acos)),
    ]
    return cases, x, lambda x, p, q, j: (x + x) * q - p


def _u_closed_form(xp, x, n):
    """U_n(x) = sin((n + 1)·θ) / sin θ, x = cos θ (its limit where sin θ = 0)."""
    acos = xp.arccos(xp.clip(x, -1, 1))
    sin_acos = xp.sin(acos)
    return xp.where(
        sin_acos != 0,
        xp.sin((n + 1) * acos) / xp.where(sin_acos != 0, sin_acos, 1),
        (n + 1) * xp.cos((n + 1) * acos) / x,
    )


def _v_closed_form(xp, x, n):
    """V_n(x) = cos((n + ½)·θ) / cos(θ/2), x = cos θ (±(2n + 1) where sin(θ/2) = 1)."""
    acos = xp.arccos(xp.clip(x, -1, 1))
    return xp.where(
        xp.sin(acos / 2) != 1,
        xp.cos((n + 0.5) * acos) / xp.cos(acos / 2),
        _signed(xp, n, 2 * n + 1),
    )


def _chebyshev_u(xp, x, n):
    cases = [
        (xp.abs(x) == 1, xp.where((x > 0) | (n % 2 == 0), n + 1, -(n + 1))),
        ((n > 8) & (xp.abs(x) < 1), _u_closed_form(xp, x, n)),
    ]
    return cases, x + x, lambda x, p, q, j: (x + x) * q - p


def _chebyshev_v(xp, x, n):
    cases = [
        (xp.abs(x) == 1, xp.where(x > 0, 1, _signed(xp, n, 2 * n + 1))),
        ((n > 8) & (xp.abs(x) < 1), _v_closed_form(xp, x, n)),
    ]
    return cases, x + x - 1, lambda x, p, q, j: (x + x) * q - p


def _chebyshev_w(xp, x, n):
    acos = xp.arccos(xp.clip(x, -1, 1))
    at_one = xp.where(x > 0, 2 * n + 1, _signed(xp, n, 1))
    closed = xp.where(
        xp.cos(acos / 2) != 1,
        xp.sin((n + 0.5) * acos) / xp.where(xp.sin(acos / 2) != 0, xp.sin(acos / 2), 1),
        at_one,
    )
    cases = [(xp.abs(x) == 1, at_one), ((n > 8) & (xp.abs(x) < 1), closed)]
    return cases, x + x + 1, lambda x, p, q, j: (x + x) * q - p


def _shifted_chebyshev_t(xp, x, n):
    y = x + x - 1
    cases = [
        (x == 1, 1.0),
        (x == 0, _signed(xp, n, 1.0)),
        ((n > 6) & (xp.abs(y) < 1), xp.cos(n * xp.arccos(xp.clip(y, -1, 1)))),
    ]
    return cases, y, lambda x, p, q, j: (4 * x - 2) * q - p


def _shifted_chebyshev_u(xp, x, n):
    y = x + x - 1
    cases = [
        (x == 1, n + 1),
        (x == 0, _signed(xp, n, n + 1)),
        ((n > 6) & (xp.abs(y) < 1), _u_closed_form(xp, y, n)),
    ]
    return cases, y + y, lambda x, p, q, j: (4 * x - 2) * q - p


def _shifted_chebyshev_v(xp, x, n):
    y = x + x - 1
    cases = [
        (x == 1, 1.0),
        (x == 0, _signed(xp, n, 2 * n + 1)),
        ((n > 6) & (xp.abs(y) < 1), _v_closed_form(xp, y, n)),
    ]
    return cases, y + y - 1, lambda x, p, q, j: (4 * x - 2) * q - p


def _shifted_chebyshev_w(xp, x, n):
    y = x + x - 1
    acos = xp.arccos(xp.clip(y, -1, 1))
    half_sin = xp.sin(acos / 2)
    closed = xp.where(
        xp.cos(acos / 2) != 1,
        xp.sin((n + 0.5) * acos) / xp.where(half_sin != 0, half_sin, 1),
        _signed(xp, n, 1.0),
    )
    cases = [
        (x == 1, 2 * n + 1),
        (x == 0, _signed(xp, n, 1.0)),
        ((n > 4) & (xp.abs(y) < 1), closed),
    ]
    return cases, y + y + 1, lambda x, p, q, j: (4 * x - 2) * q - p


def _hermite_limit(dtype) -> int:
    # PyTorch gives nan beyond these degrees (the recurrence loses all precision there)
    return 512 if dtype.itemsize == 8 else 128


def _fused(xp, a, b, c):
    """``a * b + c`` rounded once: ATen's CPU kernels compile ``x * q - k * p`` to an fma."""
    if xp is not np or a.dtype.itemsize < 4:
        return a * b + c
    if a.dtype == np.float32:
        return fma_float32(a, b, c)  # exact in float64, so overflow comes out as inf
    plain = a * b + c
    # past overflow the error terms are inf - inf: the unfused inf (or nan) is the fma's too
    return np.where(np.isfinite(plain), fma_float64(a, b, c), plain)


def _hermite_h(xp, x, n):
    cases = [(n > _hermite_limit(x.dtype), xp.nan)]
    return cases, x + x, lambda x, p, q, j: _fused(xp, x + x, q, -(2 * (j - 1) * p))


def _hermite_he(xp, x, n):
    cases = [(n > _hermite_limit(x.dtype), xp.nan)]
    return cases, x, lambda x, p, q, j: _fused(xp, x, q, -((j - 1) * p))


def _laguerre_l(xp, x, n):
    cases = [(x == 0, 1.0)]
    # (k+1) L_{k+1} = (2k + 1 - x) L_k - k L_{k-1}, with k = j - 1
    return cases, 1 - x, lambda x, p, q, j: ((2 * j - 1 - x) * q - (j - 1) * p) / j


def _legendre_p(xp, x, n):
    cases = [(xp.abs(x) == 1, xp.where(x > 0, 1.0, _signed(xp, n, 1.0)))]
    # (k+1) P_{k+1} = (2k + 1) x P_k - k P_{k-1}, with k = j - 1
    return cases, x, lambda x, p, q, j: ((2 * j - 1) * x * q - (j - 1) * p) / j


def _evaluate(name: str, polynomial, input, n) -> Tensor:
    a, b, xp, x, degree = _prepare(name, input, n)
    # every case is computed everywhere: overflow and 0/0 where a case is not taken are expected
    quiet = xp.errstate(all="ignore") if hasattr(xp, "errstate") else contextlib.nullcontext()
    with quiet:
        cases, first, step = polynomial(xp, x, degree)
        first = xp.broadcast_to(xp.asarray(first, dtype=x.dtype), x.shape)
        recurred = _recurrence(xp, x, degree, first, step)
        cases = [(degree < 0, 0.0)] + cases
        cases += [(degree == 0, 1.0), (degree == 1, first)]
        out = _first_match(xp, cases, recurred).astype(x.dtype, copy=False)
    tensors = [t for t in (a, b) if isinstance(t, Tensor)]
    return non_differentiable(name, wrap(out), *tensors)


POLYNOMIALS = {
    "chebyshev_polynomial_t": _chebyshev_t,
    "chebyshev_polynomial_u": _chebyshev_u,
    "chebyshev_polynomial_v": _chebyshev_v,
    "chebyshev_polynomial_w": _chebyshev_w,
    "hermite_polynomial_h": _hermite_h,
    "hermite_polynomial_he": _hermite_he,
    "laguerre_polynomial_l": _laguerre_l,
    "legendre_polynomial_p": _legendre_p,
    "shifted_chebyshev_polynomial_t": _shifted_chebyshev_t,
    "shifted_chebyshev_polynomial_u": _shifted_chebyshev_u,
    "shifted_chebyshev_polynomial_v": _shifted_chebyshev_v,
    "shifted_chebyshev_polynomial_w": _shifted_chebyshev_w,
}


def _make(name: str, polynomial):
    def op(input, n) -> Tensor:
        return _evaluate(name, polynomial, input, n)

    named(op, name)
    op.__doc__ = f"``torch.special.{name}(input, n)``: the polynomial of degree n at input."
    return op


chebyshev_polynomial_t = _make("chebyshev_polynomial_t", _chebyshev_t)
chebyshev_polynomial_u = _make("chebyshev_polynomial_u", _chebyshev_u)
chebyshev_polynomial_v = _make("chebyshev_polynomial_v", _chebyshev_v)
chebyshev_polynomial_w = _make("chebyshev_polynomial_w", _chebyshev_w)
hermite_polynomial_h = _make("hermite_polynomial_h", _hermite_h)
hermite_polynomial_he = _make("hermite_polynomial_he", _hermite_he)
laguerre_polynomial_l = _make("laguerre_polynomial_l", _laguerre_l)
legendre_polynomial_p = _make("legendre_polynomial_p", _legendre_p)
shifted_chebyshev_polynomial_t = _make("shifted_chebyshev_polynomial_t", _shifted_chebyshev_t)
shifted_chebyshev_polynomial_u = _make("shifted_chebyshev_polynomial_u", _shifted_chebyshev_u)
shifted_chebyshev_polynomial_v = _make("shifted_chebyshev_polynomial_v", _shifted_chebyshev_v)
shifted_chebyshev_polynomial_w = _make("shifted_chebyshev_polynomial_w", _shifted_chebyshev_w)
