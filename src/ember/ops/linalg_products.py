"""The torch.* product helpers around matmul: addmv, addr, baddbmm, addbmm, kron, block_diag
and trace. All are compositions of differentiable ops."""

from __future__ import annotations

from .. import _dtype as dt
from .._creation import zeros
from .._tensor import Tensor
from .linalg import bmm, check_fused_product, mm, mv, outer
from .linalg import scaled_sum as _scaled_sum
from .shape import cat


def addmv(input: Tensor, mat: Tensor, vec: Tensor, *, beta=1, alpha=1) -> Tensor:
    """β·input + α·(mat @ vec)."""
    check_fused_product("addmv", input, mat, vec)
    return _scaled_sum(input, mv(mat, vec), beta, alpha)


def addr(input: Tensor, vec1: Tensor, vec2: Tensor, *, beta=1, alpha=1) -> Tensor:
    """β·input + α·outer(vec1, vec2)."""
    if vec1.ndim != 1 or vec2.ndim != 1:
        raise RuntimeError(
            f"addr: Expected 1-D argument vec1, but got {vec1.ndim}-D"
            if vec1.ndim != 1
            else f"addr: Expected 1-D argument vec2, but got {vec2.ndim}-D"
        )
    product = outer(vec1, vec2)
    if not (product.is_floating_point() or product.is_complex()):
        for name, value in (("beta", beta), ("alpha", alpha)):
            if isinstance(value, float):
                raise RuntimeError(
                    f"For integral input tensors, argument {name} must not be a floating point "
                    "number."
                )
            if isinstance(value, bool) and product.dtype != dt.bool_:
                raise RuntimeError(f"Boolean {name} only supported for Boolean results.")
    if product.dtype == dt.bool_:  # torch: input · beta or (vec1 ⊗ vec2 · alpha), logically
        return (input.bool() & bool(beta)) | (product & bool(alpha))
    if product.is_floating_point() or product.is_complex():
        # torch's kernel: β·input + (α·vec1)·vec2 element by element, β and α first converted
        # to the result's type and each step rounded to it (float16: a half ulp per step)
        beta, alpha = _in_type(beta, product.dtype), _in_type(alpha, product.dtype)
        if alpha != 1:
            product = outer(vec1.to(product.dtype) * alpha, vec2)
        return _scaled_sum(input, product, beta, 1)
    return _scaled_sum(input, product, beta, alpha)


def _in_type(value, dtype):
    """A Python scalar as torch's kernels see it after ``value.to<scalar_t>()``."""
    rounded = dtype.np.type(value)
    return complex(rounded) if dtype.is_complex else float(rounded)


def baddbmm(input: Tensor, batch1: Tensor, batch2: Tensor, *, beta=1, alpha=1) -> Tensor:
    """β·input + α·(batch1 @ batch2), batch by batch."""
    check_fused_product("baddbmm", input, batch1, batch2)
    if input.dtype in (dt.float16, dt.bfloat16):  # torch: in float32, rounded once
        product = bmm(batch1.float(), batch2.float())
        return _scaled_sum(input.float(), product, beta, alpha).to(input.dtype)
    return _scaled_sum(input, bmm(batch1, batch2), beta, alpha)


def addbmm(input: Tensor, batch1: Tensor, batch2: Tensor, *, beta=1, alpha=1) -> Tensor:
    """β·input + α·Σ_b batch1[b] @ batch2[b]."""
    check_fused_product("addbmm", input, batch1, batch2)
    if input.dtype in (dt.float16, dt.bfloat16) and batch1.ndim == 3 and batch1.shape[0]:
        # torch adds one batch's product at a time, each step in float32 rounded to the half
        # type (one sum of all products rounded once differs by a few half ulps)
        out = input
        for i in range(batch1.shape[0]):
            product = mm(batch1[i].float(), batch2[i].float())
            out = _scaled_sum(out.float(), product, beta if i == 0 else 1, alpha).to(input.dtype)
        return out
    products = bmm(batch1, batch2)
    return _scaled_sum(input, products.sum(0, dtype=products.dtype), beta, alpha)  # int8 stays


def kron(input: Tensor, other: Tensor) -> Tensor:
    """The Kronecker product: blocks input[i] · other."""
    nd = max(input.ndim, other.ndim)
    a = input.reshape((1,) * (nd - input.ndim) + tuple(input.shape))
    b = other.reshape((1,) * (nd - other.ndim) + tuple(other.shape))
    # interleave: a's dims at even places, b's at odd places, then merge each pair
    a_view = a.reshape(tuple(s for d in a.shape for s in (d, 1)))
    b_view = b.reshape(tuple(s for d in b.shape for s in (1, d)))
    return (a_view * b_view).reshape(tuple(x * y for x, y in zip(a.shape, b.shape)))


def block_diag(*tensors: Tensor) -> Tensor:
    """The block-diagonal matrix of 0-, 1- or 2-D tensors (0-D as 1×1, 1-D as one row)."""
    mats = []
    for i, t in enumerate(tensors):
        if t.ndim > 2:
            raise RuntimeError(
                f"torch.block_diag: Input tensors must have 2 or fewer dimensions. Input {i} "
                f"has {t.ndim} dimensions"
            )
        mats.append(t.reshape(1, 1) if t.ndim == 0 else (t.reshape(1, -1) if t.ndim == 1 else t))
    if not mats:
        return zeros(1, 0)
    out_dtype = mats[0].dtype
    for m in mats[1:]:
        out_dtype = dt.result_type(_dtype_probe(out_dtype), m)
    mats = [m.to(out_dtype) for m in mats]
    width = sum(m.shape[1] for m in mats)
    rows, left = [], 0
    device = mats[0].device
    for m in mats:
        r, c = m.shape
        parts = []
        if left:
            parts.append(zeros(r, left, dtype=out_dtype, device=device))
        parts.append(m)
        if width - left - c:
            parts.append(zeros(r, width - left - c, dtype=out_dtype, device=device))
        rows.append(cat(parts, 1) if len(parts) > 1 else m)
        left += c
    return cat(rows, 0)


def _dtype_probe(dtype) -> Tensor:
    return zeros(0, dtype=dtype)


def trace(input: Tensor) -> Tensor:
    """The sum of the main diagonal of a matrix."""
    if input.ndim != 2:
        raise RuntimeError(f"trace: expected a matrix, but got tensor with dim {input.ndim}")
    return input.diagonal().sum()
