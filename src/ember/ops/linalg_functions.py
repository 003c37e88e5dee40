"""Matrix functions and derived quantities: matrix powers and exponential, rank, condition
number, matrix norms, products of several matrices, cross products, Vandermonde and
Householder matrices.

``matrix_exp`` has its own derivative (the exponential of a block matrix); the rest are
compositions of differentiable ops, so their gradients (and higher ones) come for free.
"""

from __future__ import annotations

import numbers

from .. import _dtype as dt
from .._backend import errstate
from .._creation import eye, ones, zeros
from .._tensor import Tensor
from ..autograd import forward_rules
from ..autograd.node import Node
from ._dispatch import array_module, result, wrap
from ._linalg_common import check_matrix, svd_kernel
from .complex import conj_of
from .linalg import check_square, matmul
from .linalg import matrix_norm as _matrix_norm_basic
from .linalg_decompositions import svdvals
from .linalg_solvers import inv, inv_ex
from .reduction import vector_norm
from .shape import broadcast_tensors, cat, stack


# --------------------------------------------------------------------------------------------
# powers and the exponential
# --------------------------------------------------------------------------------------------
def matrix_power(A: Tensor, n: int) -> Tensor:
    """``A`` multiplied by itself ``n`` times; negative ``n`` powers the inverse."""
    if isinstance(n, bool) or not isinstance(n, numbers.Integral):
        raise TypeError(
            f"linalg_matrix_power(): argument 'n' (position 2) must be int, not {type(n).__name__}"
        )
    check_square("linalg.matrix_power", A)
    if n == 0:
        # the identity, still in the graph (a zero gradient, as PyTorch gives)
        return A * 0 + eye(A._data.shape[-1], dtype=A.dtype, device=A.device)
    if n < 0:
        A = inv(A)
        n = -n
    # square-and-multiply: log2(n) products
    out = None
    base = A
    while n:
        if n & 1:
            out = base if out is None else matmul(out, base)
        n >>= 1
        if n:
            base = matmul(base, base)
    return out


def _expm_kernel(a, xp):
    """Scaling and squaring with a degree-18 Taylor polynomial, per matrix, on any device.

    Each matrix is scaled by 2⁻ˢ so that its 1-norm is at most 1/2, where the truncated
    series is exact to float64 rounding, then squared s times (scipy's expm costs
    milliseconds per call on small matrices)."""
    if a.size == 0:
        return xp.zeros(a.shape, dtype=a.dtype)
    norms = xp.abs(a).sum(-2).max(-1)
    with errstate(xp, divide="ignore"):
        s = xp.maximum(xp.ceil(xp.log2(norms / 0.5)), 0)
    s = xp.where(xp.isfinite(s), s, 0).astype(dt.int64.np)
    scaled = a * (2.0 ** -s.astype(a.dtype))[..., None, None]
    n = a.shape[-1]
    identity = xp.eye(n, dtype=a.dtype)
    out = identity + scaled / 18
    for k in range(17, 0, -1):  # Horner: I + X/1 (I + X/2 (I + ...))
        out = identity + (scaled @ out) / k
    for step in range(int(s.max())):
        squared = out @ out
        out = xp.where((step < s)[..., None, None], squared, out)
    return out


class LinalgMatrixExpBackward0(Node):
    def backward(self, g):
        (A,) = self.unpack_saved()
        n = A.shape[-1]
        # the adjoint of exp's derivative at A, applied to G: the top-right block of
        # exp([[Aᴴ, G], [0, Aᴴ]])
        At = A.mH
        top = cat([At, g], -1)
        bottom = cat([(g * 0).detach(), At], -1)
        return matrix_exp(cat([top, bottom], -2))[..., :n, n:]


def matrix_exp(A: Tensor) -> Tensor:
    """The matrix exponential of each square matrix in ``A``."""
    check_matrix("linalg.matrix_exp", A, "A", square=True, low_precision=True)
    a = A._data
    xp = array_module(a)
    wide = dt.complex128.np if a.dtype.kind == "c" else dt.float64.np
    # single and half precision: computed in double and rounded once (the squarings lose
    # digits; torch's float32 results are within a few ulps of the exact exponential)
    out = _expm_kernel(a.astype(wide, copy=False), xp).astype(a.dtype, copy=False)
    return result(LinalgMatrixExpBackward0, out, (A,), (A,))


# --------------------------------------------------------------------------------------------
# rank, norms and condition numbers
# --------------------------------------------------------------------------------------------
def matrix_rank(A: Tensor, *, atol=None, rtol=None, hermitian: bool = False, tol=None) -> Tensor:
    """The number of singular values above max(atol, rtol·σ₁) (int64)."""
    check_matrix("torch.linalg.matrix_rank", A, "input")
    if tol is not None:
        atol, rtol = tol, 0.0
    a = A._data
    xp = array_module(a)
    m, n = a.shape[-2:]
    if a.size == 0:
        return wrap(xp.zeros(a.shape[:-2], dtype=dt.int64.np))
    s = xp.abs(xp.linalg.eigvalsh(a)) if hermitian else svd_kernel(xp, a, compute_uv=False)
    s_max = s.max(-1, keepdims=True)
    eps = float(xp.finfo(a.dtype).eps)
    if rtol is None:
        given = atol is not None and (isinstance(atol, Tensor) or atol > 0)
        rtol = 0.0 if given else eps * max(m, n)
    atol_v = atol._data[..., None] if isinstance(atol, Tensor) else (atol or 0.0)
    rtol_v = rtol._data[..., None] if isinstance(rtol, Tensor) else rtol
    cutoff = xp.maximum(atol_v, rtol_v * s_max)
    return wrap((s > cutoff).sum(-1).astype(dt.int64.np))


_SVD_ORDS = ("nuc", 2, -2)


def matrix_norm(A: Tensor, ord="fro", dim=(-2, -1), keepdim: bool = False, *, dtype=None):
    """Frobenius, nuclear, spectral (±2), max-column (±1) or max-row (±inf) norms."""
    if dtype is not None:
        A = A.to(dtype)
    valid = ("fro", "nuc", 1, -1, 2, -2, float("inf"), float("-inf"))
    # half types: the sums of absolute values, not the singular values (no LAPACK kernel)
    check_matrix("linalg.matrix_norm", A, "A", low_precision=ord in valid and ord not in _SVD_ORDS)
    if ord not in valid:
        raise RuntimeError(f"linalg.matrix_norm: Order {ord} not supported.")
    if ord not in _SVD_ORDS:
        return _matrix_norm_basic(A, ord, dim, keepdim)
    nd = A.ndim
    d0, d1 = dim[0] % nd, dim[1] % nd
    s = svdvals(A.movedim((d0, d1), (-2, -1)))
    if ord == "nuc" or s.shape[-1] == 0:  # no singular values: every norm is 0, as in torch
        out = s.sum(-1)
    else:
        out = s.amax(-1) if ord == 2 else s.amin(-1)
    if keepdim:
        for d in sorted((d0, d1)):
            out = out.unsqueeze(d)
    return out


def norm(A: Tensor, ord=None, dim=None, keepdim: bool = False, *, dtype=None) -> Tensor:
    """A vector norm or a matrix norm, chosen as PyTorch chooses (by ``dim`` and ``ord``)."""
    if dtype is not None:
        A = A.to(dtype)
    if dim is not None and not isinstance(dim, int) and len(dim) == 2:
        return matrix_norm(A, "fro" if ord is None else ord, tuple(dim), keepdim)
    if dim is None and ord is not None:
        if A.ndim == 2:
            return matrix_norm(A, ord, (-2, -1), keepdim)
        if A.ndim != 1:
            raise RuntimeError(
                f"linalg.norm: If dim is not specified but ord is, the input must be 1D or 2D. "
                f"Got {A.ndim}D."
            )
    if isinstance(ord, str):
        raise RuntimeError(f"linalg.vector_norm: Order {ord} not supported.")
    return vector_norm(A, 2 if ord is None else ord, dim, keepdim)


def cond(A: Tensor, p=None) -> Tensor:
    """The condition number of ``A`` in the norm ``p`` (2-norm by default)."""
    check_matrix("linalg.cond", A, "A")
    if A._data.size == 0:  # PyTorch's convention: empty matrices are perfectly conditioned
        return (A.sum((-2, -1)) * 0).detach()
    if p is None or p in (2, -2):
        s = svdvals(A)
        big, small = s[..., 0], s[..., -1]
        return small / big if p == -2 else big / small
    check_matrix("linalg.cond", A, "A", square=True)
    inverse, info = inv_ex(A)
    out = matrix_norm(A, p) * matrix_norm(inverse, p)
    if bool(info._data.any()):  # singular matrices: an infinite condition number, no error
        from .elementwise import where

        out = where(info != 0, float("inf"), out)
    return out


# --------------------------------------------------------------------------------------------
# products
# --------------------------------------------------------------------------------------------
def multi_dot(tensors) -> Tensor:
    """The product of a chain of matrices (first and last may be vectors), in the cheapest
    order."""
    tensors = list(tensors)
    if len(tensors) < 2:
        raise RuntimeError(f"multi_dot(): expected at least 2 tensors but got {len(tensors)}")
    first_vec, last_vec = tensors[0].ndim == 1, tensors[-1].ndim == 1
    mats = list(tensors)
    if first_vec:
        mats[0] = mats[0].unsqueeze(0)
    if last_vec:
        mats[-1] = mats[-1].unsqueeze(-1)
    for i, t in enumerate(mats):
        if t.ndim != 2:
            which = "first" if i == 0 else ("last" if i == len(mats) - 1 else "")
            if which:
                raise RuntimeError(
                    f"multi_dot(): the {which} tensor must be 1D or 2D but got {t.ndim}D"
                )
            raise RuntimeError(f"multi_dot(): tensor {i} must be 2D but got {t.ndim}D")
        if t.dtype != mats[0].dtype:
            raise RuntimeError(
                f"multi_dot(): all tensors must have be the same dtype but tensor 0 is "
                f"{mats[0].dtype.name} and tensor {i} {t.dtype.name}"
            )
    for i in range(len(mats) - 1):
        if mats[i].shape[1] != mats[i + 1].shape[0]:
            a, b = mats[i], mats[i + 1]
            raise RuntimeError(
                f"multi_dot(): tensors {i} and {i + 1} with shapes {tuple(a.shape)} and "
                f"{tuple(b.shape)} cannot be multiplied"
            )
    out = _chain(
        mats, _chain_order([m.shape[0] for m in mats] + [mats[-1].shape[1]]), 0, len(mats) - 1
    )
    if first_vec:
        out = out.squeeze(0)
    if last_vec:
        out = out.squeeze(-1)
    return out


def _chain_order(dims: list) -> list:
    """Matrix-chain dynamic programme: split[i][j] is where to split the product i..j."""
    n = len(dims) - 1
    cost = [[0] * n for _ in range(n)]
    split = [[0] * n for _ in range(n)]
    for length in range(1, n):
        for i in range(n - length):
            j = i + length
            cost[i][j] = None
            for k in range(i, j):
                c = cost[i][k] + cost[k + 1][j] + dims[i] * dims[k + 1] * dims[j + 1]
                if cost[i][j] is None or c < cost[i][j]:
                    cost[i][j], split[i][j] = c, k
    return split


def _chain(mats: list, split: list, i: int, j: int) -> Tensor:
    if i == j:
        return mats[i]
    k = split[i][j]
    return matmul(_chain(mats, split, i, k), _chain(mats, split, k + 1, j))


def chain_matmul(*matrices) -> Tensor:
    """``torch.chain_matmul`` (deprecated in PyTorch): ``multi_dot`` of 2-D matrices."""
    if len(matrices) == 1 and isinstance(matrices[0], (list, tuple)):
        matrices = tuple(matrices[0])
    if len(matrices) == 1:
        return matrices[0].clone()
    return multi_dot(matrices)


def vecdot(x: Tensor, y: Tensor, *, dim: int = -1) -> Tensor:
    """The dot product of vectors along ``dim`` (broadcasting)."""
    if x.dtype != y.dtype:
        raise RuntimeError(
            f"linalg.vecdot: Expected x and y to have the same dtype, but found x of type "
            f"{x.dtype.legacy_name} and y of type {y.dtype.legacy_name} instead"
        )
    if not (x.dtype.is_floating_point or x.dtype.is_complex):
        raise RuntimeError(
            f"linalg.vecdot: Expected a floating point or complex tensor as input. Got "
            f"{x.dtype.legacy_name}"
        )
    return (conj_of(x) * y).sum(dim)  # x̄ · y, as torch conjugates the first vector


def cross(input: Tensor, other: Tensor, *, dim: int = -1) -> Tensor:
    """The 3-D cross product along ``dim`` (broadcasting)."""
    if input.ndim != other.ndim:
        raise RuntimeError("linalg.cross: inputs must have the same number of dimensions.")
    nd = input.ndim
    if not -nd <= dim < nd:
        raise IndexError(
            f"Dimension out of range (expected to be in range of [{-nd}, {nd - 1}], but got {dim})"
        )
    if input.shape[dim] != 3 or other.shape[dim] != 3:  # the dim itself does not broadcast
        raise RuntimeError(
            f"linalg.cross: inputs dimension {dim} must have length 3. Got {input.shape[dim]} "
            f"and {other.shape[dim]}"
        )
    a, b = broadcast_tensors(input, other)
    a0, a1, a2 = (a.select(dim, i) for i in range(3))
    b0, b1, b2 = (b.select(dim, i) for i in range(3))
    return stack([a1 * b2 - a2 * b1, a2 * b0 - a0 * b2, a0 * b1 - a1 * b0], dim)


def cross_legacy(input: Tensor, other: Tensor, dim: int | None = None) -> Tensor:
    """``torch.cross``: without ``dim``, the first dimension of size 3."""
    if dim is None:
        shape = broadcast_tensors(input, other)[0].shape
        sizes = [i for i, s in enumerate(shape) if s == 3]
        if not sizes:
            raise RuntimeError("no dimension of size 3 in input")
        dim = sizes[0]
    return cross(input, other, dim=dim)


def vander(x: Tensor, N: int | None = None) -> Tensor:
    """Columns x⁰, x¹, …, x^(N-1) (increasing powers, as ``torch.linalg.vander``)."""
    if x.ndim == 0:  # torch: a 0-d x is a vector of one element
        x = x.reshape(1)
    if N is not None and N <= 1:
        raise RuntimeError("N must be greater than 1.")
    n = x.shape[-1] if N is None else N
    if n == 0:
        return (x.unsqueeze(-1) * 0)[..., :0]
    first = ones(tuple(x.shape) + (1,), dtype=x.dtype, device=x.device)
    if n == 1:
        return first
    powers = x.unsqueeze(-1).expand(tuple(x.shape) + (n - 1,)).cumprod(-1)
    return cat([first, powers], -1)


class LinalgHouseholderProductBackward0(Node):
    """householder_product with no reflectors: constant in A and tau."""

    def backward(self, g):
        return None, None


def _constant_jvp(node, tangents):
    """An output that does not depend on its inputs: a zero tangent (torch gives one)."""
    given = [t for t in tangents if t is not None]
    if not given:
        return None
    shape, np_dtype = node._meta[0]
    return wrap(array_module(given[0]._data).zeros(shape, dtype=np_dtype))


forward_rules.RULES["LinalgHouseholderProductBackward0"] = _constant_jvp


def householder_product(A: Tensor, tau: Tensor) -> Tensor:
    """The first n columns of H₁⋯H_k, H_i = I - τ_i v_i v_iᵀ with v_i stored below A's
    diagonal (as LAPACK's orgqr)."""
    op = "torch.linalg.householder_product"
    if A.ndim < 2:
        raise RuntimeError(f"{op}: input must have at least 2 dimensions.")
    m, n = A.shape[-2:]
    k = tau.shape[-1]
    if m < n:
        raise RuntimeError(
            f"{op}: input.shape[-2] must be greater than or equal to input.shape[-1]"
        )
    if n < k:
        raise RuntimeError(f"{op}: input.shape[-1] must be greater than or equal to tau.shape[-1]")
    if tau.ndim != A.ndim - 1 or tuple(tau.shape[:-1]) != tuple(A.shape[:-2]):
        raise RuntimeError(
            f"{op}: Expected batch dimensions of tau to be equal to input.shape[:-2], but "
            f"got {list(tau.shape[:-1])}"
        )
    if A.dtype != tau.dtype:
        raise RuntimeError(
            f"{op}: tau dtype {tau.dtype.name} does not match input dtype {A.dtype.name}"
        )
    if k == 0:  # no reflectors: the identity's columns, recorded (as torch) with no gradient
        Q = eye(m, n, dtype=A.dtype, device=A.device).expand(tuple(A.shape)).contiguous()
        return result(LinalgHouseholderProductBackward0, Q._data, (A, tau))
    V = A.tril(-1)[..., :, :k] + eye(m, k, dtype=A.dtype, device=A.device)
    Q = eye(m, dtype=A.dtype, device=A.device).expand(tuple(A.shape[:-2]) + (m, m))
    for i in range(k):
        v = V[..., :, i : i + 1]
        Q = Q - (Q @ v) @ (v.mH * tau[..., i, None, None])  # H_i = I - τ_i v_i v_iᴴ
    return Q[..., :, :n]


def ormqr(
    input: Tensor, tau: Tensor, other: Tensor, left: bool = True, transpose: bool = False
) -> Tensor:
    """``other`` multiplied by the full Q of ``geqrf``'s ``(input, tau)``: Q C, Qᴴ C, C Q or
    C Qᴴ."""
    op = "torch.ormqr"
    if input.ndim < 2:
        raise RuntimeError(f"{op}: input must have at least 2 dimensions.")
    if other.ndim < 2:
        raise RuntimeError(f"{op}: other must have at least 2 dimensions.")
    m, n = input.shape[-2:]
    k = tau.shape[-1] if tau.ndim else 1
    other_dim = -2 if left else -1
    if k != min(other.shape[other_dim], n):
        raise RuntimeError(
            f"{op}: tau.shape[-1] must be equal to min(other.shape[{other_dim}], input.shape[-1])"
        )
    if other.shape[other_dim] != m:
        raise RuntimeError(f"{op}: other.shape[{other_dim}] must be equal to input.shape[-2]")
    if other.ndim != input.ndim:
        raise RuntimeError(
            f"{op}: Expected other to have the same number of dimensions as input, but got "
            f"other.ndim equal to {other.ndim} and input.ndim is equal to {input.ndim}"
        )
    batch = tuple(input.shape[:-2])
    if tau.ndim != input.ndim - 1 or tuple(tau.shape[:-1]) != batch:
        raise RuntimeError(
            f"{op}: Expected batch dimensions of tau to be equal to input.shape[:-2], but got "
            f"{list(tau.shape[:-1])}"
        )
    for name, t in (("tau", tau), ("other", other)):
        if t.dtype != input.dtype:
            raise RuntimeError(
                f"{op}: Expected input and {name} to have the same dtype, but input has dtype"
                f"{input.dtype.legacy_name} and {name} has dtype {t.dtype.legacy_name}"
            )
    if 0 in batch:  # no matrices: nothing depends on input or tau (torch: no gradient)
        Q = eye(m, dtype=input.dtype, device=input.device).expand(batch + (m, m))
        return Q @ other if left else other @ Q
    # the k reflectors, padded with identities (τ = 0) to a full m×m Q
    reflectors = input[..., :, :k]
    if k < m:
        pad = zeros(batch + (m, m - k), dtype=input.dtype, device=input.device)
        reflectors = cat([reflectors, pad], -1)
        tau = cat([tau, zeros(batch + (m - k,), dtype=tau.dtype, device=tau.device)], -1)
    Q = householder_product(reflectors, tau)
    Q = Q.mH if transpose else Q
    return Q @ other if left else other @ Q


def diagonal(A: Tensor, *, offset: int = 0, dim1: int = -2, dim2: int = -1) -> Tensor:
    """``torch.linalg.diagonal``: the diagonal of each matrix (dims -2, -1 by default)."""
    return A.diagonal(offset, dim1, dim2)
