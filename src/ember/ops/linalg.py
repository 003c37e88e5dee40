"""Linear algebra: products, einsum, inverse, determinant, solve and matrix norms."""

from __future__ import annotations

import math
import string

from .. import _backend
from .. import _dtype as dt
from .._creation import eye, tensor
from .._tensor import Tensor
from ..autograd import grad_mode as _gm
from ..autograd.node import Node
from . import linear_backward, linear_gemm  # they read gemm from this module when called
from ._dispatch import array_module, grad_state, record, result, wrap
from .complex import conj_of
from .reduction import vector_norm
from .shape import (
    TBackward0,
    UnsafeViewBackward0,
    ViewBackward0,
    broadcast_shapes,
    make_view,
    stack,
)
from .shape import t as transpose_2d


def conjugate_matrix_transpose(input: Tensor) -> Tensor:
    """``Tensor.mH``: the last two dims swapped and conjugated (a view for real tensors)."""
    if input._data.ndim == 0:  # torch: deprecated on 0-D tensors, where it is conj()
        return conj_of(input)
    if input._data.ndim < 2:
        raise RuntimeError(
            "tensor.mH is only supported on matrices or batches of matrices. "
            f"Got {input._data.ndim}-D tensor."
        )
    return conj_of(input.transpose(-2, -1))


def conjugate_transpose(input: Tensor) -> Tensor:
    """``Tensor.H``: the conjugate transpose of a matrix (conj() of a 0-D tensor)."""
    n = input._data.ndim
    if n == 0:
        return conj_of(input)
    if n != 2:
        hint = " For batches of matrices, consider using tensor.mH" if n > 2 else ""
        raise RuntimeError(
            f"tensor.H is only supported on matrices (2-D tensors). Got {n}-D tensor.{hint}"
        )
    return conj_of(input.transpose(0, 1))


def _shape(t: Tensor) -> str:
    return "x".join(str(s) for s in t._data.shape) or "scalar"


def _same_dtype(op: str, a: Tensor, b: Tensor) -> None:
    if a._data.dtype != b._data.dtype:
        raise RuntimeError(
            f"{op}: expected m1 and m2 to have the same dtype, but got: {a.dtype.name} != "
            f"{b.dtype.name}"
        )
    if type(a._data) is not type(b._data) and a.device != b.device:
        raise RuntimeError(
            f"{op}: Expected all tensors to be on the same device, but found at least two "
            f"devices, {a.device} and {b.device}!"
        )


class MmBackward0(Node):
    """Gradient of a @ b for every matmul case: 1-D operands are matrices with a unit dim."""

    torch_saved = {"self": 0, "mat2": 1}

    def backward(self, g):
        a, b = self.unpack_saved()  # each saved only when the other needs a gradient
        if g._data.dtype.kind == "c":  # complex operands pass back the conjugate of the other
            a, b = conj_of(a), conj_of(b)
        edges = self._edges
        a1, b1 = self.a_dim == 1, self.b_dim == 1
        if a1 and b1:  # dot product
            return (
                g * b if edges[0] is not None else None,
                g * a if edges[1] is not None else None,
            )
        ga = gb = None
        if a1:  # (k) @ (..., k, m) -> (..., m)
            if edges[0] is not None:
                ga = (g.unsqueeze(-2) @ b.mT).squeeze(-2)
            if edges[1] is not None:
                gb = a.unsqueeze(-1) @ g.unsqueeze(-2)
        elif b1:  # (..., n, k) @ (k) -> (..., n)
            if edges[0] is not None:
                ga = g.unsqueeze(-1) @ b.unsqueeze(-2)
            if edges[1] is not None:
                gb = (a.mT @ g.unsqueeze(-1)).squeeze(-1)
        else:  # d(AB) = dA B + A dB
            if edges[0] is not None:
                ga = g @ b.mT
            if edges[1] is not None:
                gb = a.mT @ g
        return ga, gb


class DotBackward0(MmBackward0):
    torch_saved = {"self": 0, "tensor": 1}


class MvBackward0(MmBackward0):
    torch_saved = {"self": 0, "vec": 1}


class BmmBackward0(MmBackward0):
    torch_saved = {"self": 0, "mat2": 1}


class MatmulBackward0(MmBackward0):
    pass


# Below this many multiply-adds a NumPy GEMM runs on one OpenBLAS thread. A second thread
# saves microseconds here, but once woken it spins for a while after the call and takes a core
# from whatever runs next: ember's own threaded kernels (a small CNN's step with its convs
# split over ember's threads measured 58 -> 39 ms with BLAS on one thread).
SERIAL_GEMM_MACS = 1 << 22
OPENBLAS_SERIAL_MACS = 1 << 18  # up to here OpenBLAS keeps a GEMM on one thread itself


def gemm(xp, a, b):
    """``xp.matmul``; NumPy has no half-precision GEMM (float16 falls back to a loop 300x
    slower, bfloat16 comes back as float32), so 2-byte floats multiply in float32 and round.
    Small NumPy products run on one BLAS thread (:data:`SERIAL_GEMM_MACS`)."""
    if a.dtype.itemsize == 2 and a.dtype.kind in "fV" and xp.__name__ == "numpy":
        return xp.matmul(a.astype(xp.float32), b.astype(xp.float32)).astype(a.dtype)
    if a.__class__ is _backend._np.ndarray and a.ndim == 2 and b.ndim == 2:
        if (
            a.shape[1] == 1
            and a.dtype.char in "fd"
            and b.__class__ is a.__class__
            and a.dtype == b.dtype
        ):
            # an outer product (the gradient of a layer with one output): OpenBLAS's GEMM
            # takes ~10x a broadcast multiply for K = 1 (36 vs 4 us at 128x128), and each
            # element is the one product a_i b_j either way (the same bits)
            out = xp.empty((a.shape[0], b.shape[1]), dtype=a.dtype)
            return xp.multiply(a, b, out=out)
        if OPENBLAS_SERIAL_MACS < a.shape[0] * a.shape[1] * b.shape[1] < SERIAL_GEMM_MACS:
            with _backend.one_blas_thread():
                return xp.matmul(a, b)
    return xp.matmul(a, b)


def _empty_batched_product(a_shape: tuple, b_shape: tuple) -> bool:
    """Whether torch runs ``a @ b`` as a batched product (both operands batched, or a matrix
    times a batch, which it does not fold into one mm) with nothing to sum or compute."""
    if len(b_shape) < 3 or len(a_shape) < 2 or len(a_shape) == 2 and a_shape[-1] != b_shape[-2]:
        return False
    return 0 in a_shape or 0 in b_shape[:-2] or b_shape[-1] == 0


def matmul(input: Tensor, other: Tensor) -> Tensor:
    if not isinstance(input, Tensor) or not isinstance(other, Tensor):
        raise TypeError(
            f"matmul(): argument 'other' (position 2) must be Tensor, not "
            f"{type(other if isinstance(input, Tensor) else input).__name__}"
        )
    a, b = input._data, other._data
    if a.dtype != b.dtype and _empty_batched_product(a.shape, b.shape):
        # torch's bmm returns before its dtype check: zeros in the second operand's dtype
        return matmul(input.to(other.dtype), other)
    _same_dtype("matmul", input, other)
    if a.ndim == 0 or b.ndim == 0:
        raise RuntimeError(
            f"both arguments to matmul need to be at least 1D, but they are {a.ndim}D and {b.ndim}D"
        )
    k_a = a.shape[-1]
    k_b = b.shape[0] if b.ndim == 1 else b.shape[-2]
    if k_a != k_b:
        raise RuntimeError(
            f"matmul: shapes {tuple(a.shape)} and {tuple(b.shape)} cannot be multiplied "
            f"({k_a} != {k_b})"
        )
    if (a.ndim > 2 or b.ndim > 2 or a.ndim == 1 and b.ndim == 2) and (
        grad_state.enabled and (input._rg or other._rg)
    ):
        return _matmul_as_torch_records(input, other)
    return _product(input, other)


def _product(input: Tensor, other: Tensor) -> Tensor:
    """``input @ other`` (checked operands) as one node: Dot, Mm, Mv, Bmm or Matmul."""
    a, b = input._data, other._data
    xp = array_module(a)
    try:
        out = gemm(xp, a, b)
    except ValueError:
        raise _batch_error(a, b) from None
    if a.ndim == 1 and b.ndim == 1:
        node = DotBackward0
    elif a.ndim == 2 and b.ndim == 2:
        node = MmBackward0
    elif b.ndim == 1 and a.ndim == 2:
        node = MvBackward0
    elif a.ndim == 3 and b.ndim == 3:
        node = BmmBackward0
    else:
        node = MatmulBackward0
    return result(
        node,
        out,
        (input, other),
        (input if other._rg else None, other if input._rg else None),
        a_dim=a.ndim,
        b_dim=b.ndim,
    )


def _batch_error(a, b) -> RuntimeError:
    return RuntimeError(
        f"matmul: batch dimensions of shapes {tuple(a.shape)} and {tuple(b.shape)} cannot "
        "be broadcast"
    )


def _matmul_as_torch_records(input: Tensor, other: Tensor) -> Tensor:
    """matmul with a graph, built from the steps torch's matmul takes: a vector times a matrix
    through unsqueeze/mm/squeeze; a batch times a matrix or vector folded into one mm or mv;
    everything else broadcast (expand), reshaped to 3-D and multiplied with bmm, the result
    viewed back to its shape (UnsafeViewBackward0)."""
    a, b = input._data, other._data
    if a.ndim == 1 and b.ndim == 2:
        out = _product(input.unsqueeze(0), other)
        return result(SqueezeBackward4, out._data.reshape(-1), (out,), shape=out._data.shape)
    if a.ndim >= 3 and b.ndim <= 2 and (other._rg or _leading_dims_fold(a)):
        # the row count spelled out: -1 cannot be inferred when a dim is 0
        folded = _product(input.reshape(math.prod(a.shape[:-1]), a.shape[-1]), other)
        shape = a.shape[:-1] + b.shape[1:]
        return result(
            UnsafeViewBackward0, folded._data.reshape(shape), (folded,), shape=folded.shape
        )
    if b.ndim >= 3 and a.ndim <= 2 and (input._rg or a.ndim == 1 and _leading_dims_fold(b.mT)):
        # folded the other way: (other.mT folded) @ input.t(), transposed back (torch's order)
        t1 = other.mT
        t2 = input.t() if a.ndim == 2 else input
        folded = _product(t1.reshape(math.prod(t1.shape[:-1]), t1.shape[-1]), t2)
        shape = t1.shape[:-1] + t2.shape[1:]
        out = result(
            UnsafeViewBackward0, folded._data.reshape(shape), (folded,), shape=folded.shape
        )
        return out.mT.contiguous() if a.ndim == 2 else out
    a_mat = input.unsqueeze(0) if a.ndim == 1 else input
    b_mat = other.unsqueeze(-1) if b.ndim == 1 else other
    try:
        batch = broadcast_shapes(a_mat.shape[:-2], b_mat.shape[:-2])
    except RuntimeError:
        raise _batch_error(a, b) from None
    rows = math.prod(batch)
    a3 = a_mat.expand(batch + a_mat.shape[-2:]).reshape(rows, *a_mat.shape[-2:])
    b3 = b_mat.expand(batch + b_mat.shape[-2:]).reshape(rows, *b_mat.shape[-2:])
    product = _product(a3, b3)
    shape = batch + (a.shape[-2],) if a.ndim > 1 else batch
    shape = shape + (b.shape[-1],) if b.ndim > 1 else shape
    return result(
        UnsafeViewBackward0, product._data.reshape(shape), (product,), shape=product.shape
    )


def _leading_dims_fold(a) -> bool:
    """Whether (..., n, k) views as (-1, k) without a copy (torch folds the batch then)."""
    if a.size == 0:
        return True
    strides, shape = a.strides, a.shape
    return all(strides[i] == strides[i + 1] * shape[i + 1] for i in range(a.ndim - 2))


def mm(input: Tensor, mat2: Tensor) -> Tensor:
    if input._data.ndim != 2 or mat2._data.ndim != 2:
        which = "self" if input._data.ndim != 2 else "mat2"
        raise RuntimeError(f"{which} must be a matrix")
    if input._data.shape[1] != mat2._data.shape[0]:
        raise RuntimeError(
            f"mat1 and mat2 shapes cannot be multiplied ({_shape(input)} and {_shape(mat2)})"
        )
    return matmul(input, mat2)


def bmm(input: Tensor, mat2: Tensor) -> Tensor:
    if input._data.ndim != 3 or mat2._data.ndim != 3:
        raise RuntimeError(
            "batch1 must be a 3D tensor" if input._data.ndim != 3 else "batch2 must be a 3D tensor"
        )
    if input._data.shape[0] != mat2._data.shape[0] or input._data.shape[2] != mat2._data.shape[1]:
        raise RuntimeError(
            f"Expected size for first two dimensions of batch2 tensor to be: "
            f"[{input._data.shape[0]}, {input._data.shape[2]}] but got: "
            f"[{mat2._data.shape[0]}, {mat2._data.shape[1]}]."
        )
    if input._data.dtype != mat2._data.dtype:
        return matmul(input, mat2)  # matmul's dtype rules and errors
    return _product(input, mat2)  # one BmmBackward0 (matmul records its broadcasting steps)


def mv(input: Tensor, vec: Tensor) -> Tensor:
    if input._data.ndim == 0:  # torch sizes its result by input.size(0) first
        raise IndexError("Dimension specified as 0 but tensor has no dimensions")
    if input._data.ndim != 2 or vec._data.ndim != 1:
        raise RuntimeError(
            f"vector + matrix @ vector expected, got 1, {input._data.ndim}, {vec._data.ndim}"
        )
    if input._data.shape[1] != vec._data.shape[0]:
        raise RuntimeError(
            f"size mismatch, got input ({input._data.shape[0]}), mat ({_shape(input)}), vec "
            f"({vec._data.shape[0]})"
        )
    return matmul(input, vec)


def dot(input: Tensor, tensor: Tensor) -> Tensor:
    if input._data.ndim != 1 or tensor._data.ndim != 1:
        raise RuntimeError(
            f"1D tensors expected, but got {input._data.ndim}D and {tensor._data.ndim}D tensors"
        )
    if input._data.dtype != tensor._data.dtype:
        raise RuntimeError(
            "dot : expected both vectors to have same dtype, but found "
            f"{input.dtype.legacy_name} and {tensor.dtype.legacy_name}"
        )
    if input._data.shape[0] != tensor._data.shape[0]:
        n, m = input._data.shape[0], tensor._data.shape[0]
        raise RuntimeError(
            f"inconsistent tensor size, expected tensor [{n}] and src [{m}] to have the same "
            f"number of elements, but got {n} and {m} elements respectively"
        )
    return matmul(input, tensor)


def inner(input: Tensor, other: Tensor) -> Tensor:
    """Sums of products over the last dims: shape ``input.shape[:-1] + other.shape[:-1]``; a
    0-d operand multiplies.

    >>> ember.inner(ember.tensor([[1.0, 2.0]]), ember.tensor([[3.0, 4.0], [1.0, 0.0]]))
    tensor([[11.,  1.]])
    """
    if input._data.ndim == 0 or other._data.ndim == 0:
        return input * other
    k = input.shape[-1]
    if k != other.shape[-1]:
        raise RuntimeError(
            "inner() the last dimension must match on both input tensors but got shapes "
            f"{list(input.shape)} and {list(other.shape)}"
        )
    if input.dtype != other.dtype:
        raise RuntimeError("both inputs should have same dtype")
    if input._data.ndim == 1 and other._data.ndim == 1:
        return dot(input, other)
    rows, columns = math.prod(input.shape[:-1]), math.prod(other.shape[:-1])
    out = matmul(input.reshape(rows, k), other.reshape(columns, k).mT)
    return out.reshape(tuple(input.shape[:-1]) + tuple(other.shape[:-1]))


inner_product = inner  # ember.inner


def vdot(input: Tensor, other: Tensor) -> Tensor:
    """The dot product with the first vector conjugated: Σ conj(input) · other."""
    if input._data.ndim == 1 and other._data.ndim == 1 and input._data.dtype == other._data.dtype:
        return dot(conj_of(input), other)
    return dot(input, other)  # dot's errors


def outer(input: Tensor, vec2: Tensor) -> Tensor:
    if input._data.ndim != 1 or vec2._data.ndim != 1:
        raise RuntimeError("outer: expected 1-D tensors")
    return input.reshape(-1, 1) * vec2


ger = outer


def scaled_sum(input: Tensor, product: Tensor, beta, alpha) -> Tensor:
    """β·input + α·product; β = 0 ignores input (nan and inf in it do not propagate). An
    integer result takes β and α as torch converts them to its type (0.5 truncates to 0)."""
    if not (product.is_floating_point() or product.is_complex()):
        beta, alpha = int(beta), int(alpha)
    if alpha != 1:
        product = product * alpha
    if beta == 0:
        return product + (input * 0).nan_to_num(0.0, 0.0, 0.0)
    return (input if beta == 1 else input * beta) + product


def check_fused_product(op: str, input: Tensor, a: Tensor, b: Tensor) -> None:
    """addmm/addmv/addbmm/baddbmm take one dtype for all three tensors (no promotion) and no
    bool, each with torch's message."""
    dtypes = (input.dtype, a.dtype, b.dtype)
    if dtypes[0] != dtypes[1] or dtypes[0] != dtypes[2]:
        if op == "addmv":
            names = [d.legacy_name for d in dtypes]
            raise RuntimeError(
                f"addmv input tensors must have the same dtype, but got {names[0]}, {names[1]}, "
                f"and {names[2]}"
            )
        if op == "baddbmm":
            c = [d.c_name for d in dtypes]
            raise RuntimeError(
                f"Input dtypes must be the same, got: input {c[0]}, batch1: {c[1]}, batch2: {c[2]}"
            )
        other = dtypes[2] if dtypes[2] != dtypes[0] else dtypes[1]
        raise RuntimeError(
            f"self and mat2 must have the same dtype, but got {dtypes[0].legacy_name} and "
            f"{other.legacy_name}"
        )
    if input.dtype == dt.bool_:
        kernel = {"addmv": "addmv_impl_cpu", "baddbmm": "baddbmm"}.get(op, "addmm_impl_cpu_")
        raise NotImplementedError(f"\"{kernel}\" not implemented for 'Bool'")


class AddmmBackward0(Node):
    """β·input + α·(mat1 @ mat2) as one node, inputs (input, mat1, mat2) as torch records it."""

    torch_saved = {"alpha": "alpha", "beta": "beta", "mat1": 0, "mat2": 1}

    def backward(self, g):
        mat1, mat2 = self.unpack_saved()  # each saved only when the other needs a gradient
        e_input, e_mat1, e_mat2 = self._edges
        alpha, beta = self.alpha, self.beta
        g_input = g_mat1 = g_mat2 = None
        if e_input is not None:
            g_input = g if beta == 1 else g * beta
        scaled = g if alpha == 1 else g * alpha
        if e_mat1 is not None:
            g_mat1 = scaled @ conj_of(mat2).mT
        if e_mat2 is not None:
            g_mat2 = conj_of(mat1).mT @ scaled
        return g_input, g_mat1, g_mat2


def addmm(input: Tensor, mat1: Tensor, mat2: Tensor, *, beta=1, alpha=1) -> Tensor:
    """β·input + α·(mat1 @ mat2)."""
    check_fused_product("addmm", input, mat1, mat2)
    if not _records(input, mat1, mat2):
        return scaled_sum(input, mm(mat1, mat2), beta, alpha)
    with _gm.no_grad():
        out = scaled_sum(input, mm(mat1, mat2), beta, alpha)
    saved = (mat1 if mat2._rg else None, mat2 if mat1._rg else None)
    return result(AddmmBackward0, out._data, (input, mat1, mat2), saved, alpha=alpha, beta=beta)


# --------------------------------------------------------------------------------------------
# einsum
# --------------------------------------------------------------------------------------------
def _parse_einsum(equation: str, shapes: list) -> tuple:
    """Explicit subscripts (ellipsis spelled out as letters) and the output subscript."""
    eq = equation.replace(" ", "")
    lhs, arrow, rhs = eq.partition("->")
    terms = lhs.split(",")
    if len(terms) != len(shapes):
        raise RuntimeError(
            "einsum(): more operands were provided than specified in the equation"
            if len(shapes) > len(terms)
            else "einsum(): fewer operands were provided than specified in the equation"
        )
    used = set(c for c in eq if c.isalpha())
    spare = [c for c in string.ascii_letters if c not in used]
    ell_dims = 0
    for term, shape in zip(terms, shapes):
        if "..." in term:
            ell_dims = max(ell_dims, len(shape) - (len(term) - 3))
    ell = "".join(spare[:ell_dims])
    explicit = []
    for term, shape in zip(terms, shapes):
        if "..." in term:
            n = len(shape) - (len(term) - 3)
            term = term.replace("...", ell[ell_dims - n :] if n else "")
        if len(term) != len(shape):
            raise RuntimeError(
                f"einsum(): the number of subscripts in the equation ({len(term)}) does not "
                f"match the number of dimensions ({len(shape)}) for operand "
                f"{len(explicit)} and no ellipsis was given"
            )
        explicit.append(term)
    if arrow:
        out = rhs.replace("...", ell)
    else:
        counts = {}
        for term in explicit:
            for c in term:
                counts[c] = counts.get(c, 0) + 1
        out = ell + "".join(sorted(c for c, n in counts.items() if n == 1 and c not in ell))
    return explicit, out


class EinsumBackward0(Node):
    def backward(self, g):
        operands = self.unpack_saved()
        terms, out_term = self.terms, self.out_term
        grads = []
        for i, (term, t) in enumerate(zip(terms, operands)):
            if self._edges[i] is None:
                grads.append(None)
                continue
            others = [(s, o) for j, (s, o) in enumerate(zip(terms, operands)) if j != i]
            available = set(out_term).union(*(set(s) for s, _ in others))
            unique = "".join(dict.fromkeys(term))
            reachable = "".join(c for c in unique if c in available)
            eq = ",".join([out_term] + [s for s, _ in others]) + "->" + reachable
            grad = einsum(eq, g, *[conj_of(o) for _, o in others])  # conj: complex operands
            # letters summed inside this operand alone: the gradient is constant along them
            sizes = {c: t.shape[term.index(c)] for c in unique}
            if reachable != unique:
                shape_now = [sizes[c] for c in reachable]
                for c in unique:
                    if c not in reachable:
                        grad = grad.unsqueeze(-1)
                        shape_now.append(sizes[c])
                order = reachable + "".join(c for c in unique if c not in reachable)
                grad = grad.expand(shape_now)
                grad = grad.permute([order.index(c) for c in unique])
            if unique != term:  # repeated letters: the gradient lives on the diagonal
                grad = _onto_diagonal(grad, unique, term, sizes)
            grads.append(grad)
        return tuple(grads)


def _onto_diagonal(grad: Tensor, unique: str, term: str, sizes: dict) -> Tensor:
    used = set(term)
    spare = iter(c for c in string.ascii_letters if c not in used)
    renamed, eyes, seen = [], [], set()
    for c in term:
        if c in seen:
            fresh = next(spare)
            renamed.append(fresh)
            eyes.append((c + fresh, eye(sizes[c], dtype=grad.dtype, device=grad.device)))
        else:
            seen.add(c)
            renamed.append(c)
    eq = ",".join([unique] + [s for s, _ in eyes]) + "->" + "".join(renamed)
    return einsum(eq, grad, *[e for _, e in eyes])


# below this many operand elements the contraction order is not worth planning (~30 us)
EINSUM_PLAN_MIN_ELEMENTS = 1 << 12
# intermediates a planned einsum may build (elements): NumPy's default, the largest operand,
# keeps a bilinear form as one nested loop (15x slower than through a matrix product)
EINSUM_INTERMEDIATE_ELEMENTS = 1 << 24


def _einsum_plan(xp, operands):
    """NumPy's ``optimize`` for an einsum: its greedy pairwise order, each pair through BLAS
    where it can (the unplanned loop is ~7x slower for a matrix product), as torch contracts
    pairwise through bmm; tiny operands (and other array libraries) keep their default."""
    sizes = [o._data.size for o in operands]
    if xp.__name__ != "numpy":
        return len(operands) > 2
    if sum(sizes) < EINSUM_PLAN_MIN_ELEMENTS:
        return False
    return ("greedy", max(max(sizes), EINSUM_INTERMEDIATE_ELEMENTS))


def _einsum_as_matmul(xp, terms: list, out_term: str, arrays: list):
    """A two-operand einsum that is a batched matrix product (letters in both operands and
    the output: batch; in one operand and the output: rows or columns; in both operands
    only: contracted; in one operand only: summed first) as one ``matmul`` on permuted
    operands, as torch contracts through bmm; None where it is not one (NumPy's einsum
    plans no BLAS call once a letter is shared by both operands and the output)."""
    if len(arrays) != 2 or any(x.dtype.kind not in "fc" for x in arrays):
        return None
    (ta, tb), (a, b) = terms, arrays
    if len(set(ta)) != len(ta) or len(set(tb)) != len(tb) or not set(ta) & set(tb) - set(out_term):
        return None  # a diagonal, or nothing contracted (an outer or elementwise product)
    sizes = {}
    for term, x in ((ta, a), (tb, b)):
        for c, n in zip(term, x.shape):
            if sizes.setdefault(c, n) != n:
                return None  # a broadcast dim (the ellipsis): einsum's rules
    # letters of one operand alone, summed away first
    a_alone = [i for i, c in enumerate(ta) if c not in tb and c not in out_term]
    b_alone = [i for i, c in enumerate(tb) if c not in ta and c not in out_term]
    if a_alone:
        a = a.sum(axis=tuple(a_alone))
        ta = "".join(c for i, c in enumerate(ta) if i not in a_alone)
    if b_alone:
        b = b.sum(axis=tuple(b_alone))
        tb = "".join(c for i, c in enumerate(tb) if i not in b_alone)
    batch = [c for c in out_term if c in ta and c in tb]
    rows = [c for c in out_term if c in ta and c not in tb]
    cols = [c for c in out_term if c in tb and c not in ta]
    inner = [c for c in ta if c in tb and c not in out_term]
    count = math.prod(sizes[c] for c in batch)
    m, n = math.prod(sizes[c] for c in rows), math.prod(sizes[c] for c in cols)
    k = math.prod(sizes[c] for c in inner)
    left = a.transpose([ta.index(c) for c in batch + rows + inner]).reshape(count, m, k)
    right = b.transpose([tb.index(c) for c in batch + inner + cols]).reshape(count, k, n)
    product = xp.matmul(left, right).reshape([sizes[c] for c in batch + rows + cols])
    order = batch + rows + cols
    out = product.transpose([order.index(c) for c in out_term])
    return out if out.flags.c_contiguous else out.copy()  # (ascontiguousarray makes 0-d 1-d)


def einsum(equation: str, *operands) -> Tensor:
    """Einstein summation, differentiable in every operand (also to higher order)."""
    if len(operands) == 1 and isinstance(operands[0], (list, tuple)):
        operands = tuple(operands[0])
    terms, out_term = _parse_einsum(equation, [o._data.shape for o in operands])
    eq = ",".join(terms) + "->" + out_term
    xp = array_module(operands[0]._data)
    arrays = [o._data for o in operands]
    half = arrays and arrays[0].dtype.itemsize == 2 and arrays[0].dtype.kind in "fV"
    if half:  # NumPy's einsum has no bfloat16 (and a slow float16): float32, rounded once
        arrays = [x.astype(xp.float32) for x in arrays]
    elif len(arrays) == 1 and arrays[0].dtype.kind in "iub" and set(terms[0]) - set(out_term):
        # one integer operand summed along a dim: torch reduces with sum, which gives int64
        arrays = [arrays[0].astype(dt.int64.np)]
    try:
        out = _einsum_as_matmul(xp, terms, out_term, arrays)
        if out is None:
            out = xp.einsum(eq, *arrays, optimize=_einsum_plan(xp, operands))
    except ValueError as exc:
        raise RuntimeError(
            f"einsum(): {exc} (equation '{equation}', shapes "
            f"{[list(o._data.shape) for o in operands]})"
        ) from None
    if half:
        out = out.astype(operands[0]._data.dtype)
    return result(
        EinsumBackward0, out, tuple(operands), tuple(operands), terms=terms, out_term=out_term
    )


def tensordot(a: Tensor, b: Tensor, dims=2) -> Tensor:
    if isinstance(dims, int):
        dims_a = list(range(a.ndim - dims, a.ndim))
        dims_b = list(range(dims))
    else:
        dims_a, dims_b = [list(d) if not isinstance(d, int) else [d] for d in dims]
    letters = iter(string.ascii_letters)
    sa = [next(letters) for _ in range(a.ndim)]
    sb = [next(letters) for _ in range(b.ndim)]
    for da, db in zip(dims_a, dims_b):
        size_a, size_b = a.shape[da], b.shape[db]
        if size_a != size_b:
            if size_a != 1 and size_b != 1:
                raise RuntimeError(
                    f"contracted dimensions need to match, but first has size {size_a} in dim "
                    f"{da} and second has size {size_b} in dim {db}"
                )
            # a size-1 dim broadcasts, as in torch: the other operand is summed along it
            if size_a == 1:
                b = b.sum(db, keepdim=True, dtype=b.dtype)
            else:
                a = a.sum(da, keepdim=True, dtype=a.dtype)
        sb[db] = sa[da]
    out = [c for i, c in enumerate(sa) if i not in [d % a.ndim for d in dims_a]]
    out += [c for i, c in enumerate(sb) if i not in [d % b.ndim for d in dims_b]]
    return einsum("".join(sa) + "," + "".join(sb) + "->" + "".join(out), a, b)


# --------------------------------------------------------------------------------------------
# inverse, determinant, solve
# --------------------------------------------------------------------------------------------
def check_square(op: str, A: Tensor) -> None:
    """``A`` is a batch of square matrices, of any dtype (torch's messages)."""
    shape = A._data.shape
    if len(shape) < 2:
        raise RuntimeError(f"{op}: The input tensor A must have at least 2 dimensions.")
    if shape[-1] != shape[-2]:
        raise RuntimeError(
            f"{op}: A must be batches of square matrices, but they are {shape[-2]} by "
            f"{shape[-1]} matrices"
        )


def _square(op: str, A: Tensor) -> None:
    check_square(op, A)
    if A._data.dtype.kind not in "fc":
        raise RuntimeError(
            f"{op}: Expected a floating point or complex tensor as input. Got {A.dtype.name}"
        )


class LinalgInvExBackward0(Node):
    def backward(self, g):
        inv = self.saved_output()
        inv_h = inv.mH
        return -(inv_h @ g @ inv_h)  # d A⁻¹ = -A⁻¹ dA A⁻¹


def inv(A: Tensor) -> Tensor:
    _square("linalg.inv", A)
    xp = array_module(A._data)
    try:
        out = xp.linalg.inv(A._data)
    except Exception:
        raise RuntimeError(
            "linalg.inv: The diagonal element is zero, the inversion could not be completed "
            "because the input matrix is singular."
        ) from None
    return result(LinalgInvExBackward0, out, (A,), save_output=True)


class LinalgDetBackward0(Node):
    def backward(self, g):
        (A,) = self.unpack_saved()
        det_a = self.saved_output()
        g = g.unsqueeze(-1).unsqueeze(-1)
        if bool((det_a._data != 0).all()):
            # d det = det tr(A⁻¹ dA): the gradient is conj(det A⁻ᵀ) = conj(det) A⁻ᴴ
            return g * conj_of(det_a).unsqueeze(-1).unsqueeze(-1) * inv(A).mH
        return g * conj_of(_cofactors(A))


def _cofactors(A: Tensor) -> Tensor:
    """Cofactor matrix from minors; works for singular matrices, where det·A⁻ᵀ does not."""
    n = A.shape[-1]
    if n == 1:
        return A * 0 + 1
    rows = []
    for i in range(n):
        keep_r = tensor([k for k in range(n) if k != i], device=A.device)
        row = []
        for j in range(n):
            keep_c = tensor([k for k in range(n) if k != j], device=A.device)
            minor = A.index_select(-2, keep_r).index_select(-1, keep_c)
            row.append(det(minor) * (-1) ** (i + j))
        rows.append(stack(row, -1))
    return stack(rows, -2)


def det(A: Tensor) -> Tensor:
    _square("linalg.det", A)
    xp = array_module(A._data)
    return result(LinalgDetBackward0, xp.linalg.det(A._data), (A,), (A,), save_output=True)


class LinalgSolveExBackward0(Node):
    def backward(self, g):
        A, _ = self.unpack_saved()
        X = self.saved_output()
        vector = self.vector
        gB = solve(A.mH, g)  # A X = B  =>  dB = A⁻ᴴ g,  dA = -dB Xᴴ
        gA = None
        if self._edges[0] is not None:
            X = conj_of(X)
            gA = -(gB.unsqueeze(-1) @ X.unsqueeze(-2)) if vector else -(gB @ X.mT)
        return gA, gB if self._edges[1] is not None else None


def solve(A: Tensor, B: Tensor, *, left: bool = True) -> Tensor:
    if not left:
        return solve(A.mT, B.mT).mT
    _square("linalg.solve", A)
    _same_dtype("linalg.solve", A, B)
    xp = array_module(A._data)
    # PyTorch's rule: B is a (batch of) vector(s) when it has exactly A's batch shape plus n
    vector = B._data.ndim == 1 or B._data.shape == A._data.shape[:-1]
    b = B._data[..., None] if vector else B._data
    if b.shape[-2] != A._data.shape[-1]:
        raise RuntimeError(
            f"linalg.solve: Incompatible shapes of A and B for the equation AX = B "
            f"({_shape(A)} and {_shape(B)})"
        )
    try:
        out = xp.linalg.solve(A._data, b)
    except Exception:
        raise RuntimeError(
            "linalg.solve: The solver failed because the input matrix is singular."
        ) from None
    if vector:
        out = out[..., 0]
    return result(LinalgSolveExBackward0, out, (A, B), (A, B), save_output=True, vector=vector)


def matrix_norm(A: Tensor, ord="fro", dim=(-2, -1), keepdim: bool = False) -> Tensor:
    """The matrix norms made of sums of absolute values (Frobenius, ±1, ±inf); the ones of
    singular values, and the checks: :func:`ember.ops.linalg_functions.matrix_norm`."""
    d0, d1 = dim
    if ord == "fro":
        return vector_norm(A, 2, dim, keepdim)
    if ord in (1, -1, float("inf"), float("-inf")):
        nd = A.ndim
        d0, d1 = d0 % nd, d1 % nd
        sum_dim, max_dim = (d0, d1) if ord in (1, -1) else (d1, d0)
        sums = A.abs().sum(sum_dim, keepdim=True)
        if ord > 0:  # the largest of no sums is 0 (a norm's identity), as torch gives
            empty = sums.shape[max_dim] == 0
            out = sums.sum(max_dim, keepdim=True) if empty else sums.amax(max_dim, keepdim=True)
        else:
            out = sums.amin(max_dim, keepdim=True)
        return out if keepdim else out.squeeze((d0, d1))
    raise RuntimeError(f"linalg.matrix_norm: Order {ord} not supported.")


def linear_gradients(g, x, w, need_x: bool, need_w: bool, need_b: bool) -> tuple:
    """(gx, gw, gb) of y = x Wᵀ + b, each computed in its own layout (gW as (out, in),
    contiguous); None where not needed."""
    if linear_backward.applies(g, x, w):
        # 2-D real operands: on the arrays, or (create_graph) as one differentiable op
        return linear_backward.linear_gradients(g, x, w, need_x, need_w, need_b)
    if g._data.dtype.kind == "c":  # complex operands pass back the conjugate of the other
        x, w = conj_of(x), conj_of(w)
    gx = None
    if need_x:
        if g.dim() > 2:  # one 2-D GEMM over the flattened leading dims (see linear)
            rows = math.prod(g.shape[:-1])
            gx = (g.reshape(rows, g.shape[-1]) @ w).reshape(tuple(g.shape[:-1]) + (w.shape[1],))
        else:
            gx = g @ w
    gw = gb = None
    if need_w or need_b:
        # 2-D already (the common case): no reshape, which double backward would record
        g2 = g if g.dim() == 2 else g.reshape(math.prod(g.shape[:-1]), g.shape[-1])
        if need_w:
            x2 = x if x.dim() == 2 else x.reshape(g2.shape[0], x.shape[-1])
            gw = g2.mT @ x2
        if need_b:
            gb = g2.sum(0)
    return gx, gw, gb


class LinearBackward0(Node):
    """y = x Wᵀ + b as one node, inputs (x, W[, b]): the fused ops that are one node in torch
    too (the linear layers of a packed RNN or attention) record it."""

    def backward(self, g):
        x, w = self.unpack_saved()
        edges = self._edges
        need_b = len(edges) > 2 and edges[2] is not None
        grads = linear_gradients(g, x, w, edges[0] is not None, edges[1] is not None, need_b)
        return grads[: len(edges)]


def _records(*tensors) -> bool:
    """Whether an op on ``tensors`` records a node (grad mode on, some input needs grad)."""
    return grad_state.enabled and any(t is not None and t._rg for t in tensors)


def _transposed(gw):
    """W's gradient as the gradient of W.t() (TBackward0 turns it back): a view."""
    if gw is None:
        return None
    return gw.mT if grad_state.enabled else wrap(gw._data.T)


def _weight_of(w_t):
    """W from the saved Wᵀ: a view of the array when no graph is wanted (no dispatch)."""
    if w_t is None:
        return None
    return w_t.mT if grad_state.enabled else wrap(w_t._data.T)


class LinearAddmmBackward(Node):
    """linear with a bias on 2-D input, recorded as torch does: addmm(bias, x, W.t()), inputs
    (bias, x, Wᵀ) (the last through a TBackward0 node); the gradients are linear's."""

    torch_name = "AddmmBackward0"
    torch_saved = {"alpha": ("value", 1), "beta": ("value", 1), "mat1": 0, "mat2": 1}

    def backward(self, g):
        x, w_t = self.unpack_saved()
        e_bias, e_x, e_w = self._edges
        gx, gw, gb = linear_gradients(
            g, x, _weight_of(w_t), e_x is not None, e_w is not None, e_bias is not None
        )
        return gb, gx, _transposed(gw)


class LinearMmBackward(Node):
    """linear without a bias on 2-D input: mm(x, W.t()), inputs (x, Wᵀ)."""

    torch_name = "MmBackward0"
    torch_saved = {"self": 0, "mat2": 1}

    def backward(self, g):
        x, w_t = self.unpack_saved()
        e_x, e_w = self._edges
        gx, gw, _ = linear_gradients(g, x, _weight_of(w_t), e_x is not None, e_w is not None, False)
        return gx, _transposed(gw)


class SqueezeBackward4(ViewBackward0):  # torch's in-place squeeze_(dim) after a 1-D linear
    torch_saved = {"dim": ("value", 0), "self_sym_sizes": "shape"}


def linear(input: Tensor, weight: Tensor, bias: Tensor | None = None) -> Tensor:
    """``ember.nn.functional.linear``: x Wᵀ + b, recorded as torch records it (addmm or mm on
    W.t(), with views around it for input that is not 2-D)."""
    try:
        x, w = input._data, weight._data
    except AttributeError:  # not a tensor (a forward pre-hook's 3 reaches here): torch's error
        name, position, value = (
            ("input", 1, input) if not isinstance(input, Tensor) else ("weight", 2, weight)
        )
        raise TypeError(
            f"linear(): argument '{name}' (position {position}) must be Tensor, not "
            f"{type(value).__name__}"
        ) from None
    if w.ndim != 2 or x.ndim == 0 or x.shape[-1] != w.shape[1]:
        rows = "x".join(str(s) for s in x.shape) or "scalar"
        raise RuntimeError(
            f"mat1 and mat2 shapes cannot be multiplied ({rows} and "
            f"{w.shape[1] if w.ndim == 2 else w.shape}x{w.shape[0]})"
        )
    _same_dtype("linear", input, weight)
    if bias is not None and bias._data.dtype != x.dtype:
        raise RuntimeError(
            f"linear: bias dtype {bias.dtype.name} differs from input dtype {input.dtype.name}"
        )
    if x.ndim != 2:
        # torch views the input as (rows, in), multiplies, and views the result back; a 1-D
        # input without bias is unsqueezed and squeezed instead
        if x.ndim == 1 and bias is None:
            out = linear(input.unsqueeze(0), weight)
            if not out._rg:
                return out.squeeze(0)
            return result(SqueezeBackward4, out._data.reshape(-1), (out,), shape=out._data.shape)
        if bias is not None and not x.flags.c_contiguous and _records(input, weight, bias):
            return matmul(input, weight.t()) + bias  # torch's steps: matmul, then the bias
        out = linear(input.reshape(-1, x.shape[-1]), weight, bias)
        shape = x.shape[:-1] + (w.shape[0],)
        if bias is None and out._rg:  # torch's matmul: mm then _unsafe_view
            return result(UnsafeViewBackward0, out._data.reshape(shape), (out,), shape=out.shape)
        return out.view(shape)
    xp = array_module(x)
    out = linear_gemm.linear_product(xp, x, w)
    if bias is not None:
        out += bias._data
    return linear_result(input, weight, bias, out)


def linear_result(input: Tensor, weight: Tensor, bias: Tensor | None, out) -> Tensor:
    """2-D linear's output ``out`` (computed by linear or a fused kernel that shares it) as a
    tensor, with the nodes torch records: addmm(bias, x, W.t()) or mm(x, W.t())."""
    node_cls = LinearMmBackward if bias is None else LinearAddmmBackward
    if not (grad_state.enabled and (input._rg or weight._rg or bias is not None and bias._rg)):
        # no node (result notes inputs that require grad under no_grad, for explain())
        return result(node_cls, out, (input, weight) if bias is None else (bias, input, weight))
    # weight.t() (TBackward0, a view of W) without t()'s dispatch: one per layer and step
    w_data = weight._data
    w_t = record(TBackward0(), w_data.T, (weight,)) if weight._rg else wrap(w_data.T)
    make_view(w_t, weight, (transpose_2d, ()))
    saved = (input if weight._rg else None, w_t if input._rg else None)
    return result(node_cls, out, (input, w_t) if bias is None else (bias, input, w_t), saved)
