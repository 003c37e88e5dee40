"""Products of a few rows with a matrix packed once (numba; see :mod:`ember._kernels.jit`): the
recurrent layers' per-step ``h @ W_hhᵀ``.

A time step multiplies a batch span of a few rows (16-32) by the same (state x gates) matrix,
50 or more times per layer. OpenBLAS packs that matrix again on every call, which at these
sizes costs as much as the arithmetic: measured on a 2-core AVX2 EPYC, (16, 128) x (128, 512)
in float32 took 40-48 us (~45 GFLOP/s, half one core's peak). Here :func:`pack` lays the
matrix out once per layer in panels two SIMD vectors wide, and a register-blocked kernel (4
rows x 2 vectors: 8 accumulators that stay in registers over the whole inner dimension) reads
each panel row with two vector loads: the same product in ~30 us (~70 GFLOP/s).

numba has no SIMD vector type, so this file gives it one: :class:`_Vector` is LLVM's
``<8 x float>`` (``<4 x double>``: 32 bytes, one AVX register; LLVM splits it on narrower
machines), with five intrinsics to make, load, store, broadcast and multiply-add them
(``llvm.fmuladd``: fused where the CPU has FMA, else a multiply and an add). Each output is
Σ_k a[r, k] w[k, j] summed in k order, so results differ from BLAS's by rounding only.

The intrinsics index an array's data by flat offset, so they refuse (at compile time) any
array that is not C-contiguous, and :func:`packed_product` checks every shape before its
loops: numba does not check bounds.
"""

from __future__ import annotations

import numba
import numpy as np
from llvmlite import ir
from numba import types
from numba.core import cgutils
from numba.extending import intrinsic, models, register_model

from . import jit

VECTOR_BYTES = 32  # one AVX register
ROWS = 4  # rows per register block: 4 x 2 accumulators, 2 weight vectors, 1 broadcast


class _Vector(types.Type):
    """A SIMD vector of ``VECTOR_BYTES`` of float32 or float64 (a register, never memory)."""

    def __init__(self, dtype) -> None:
        self.dtype = dtype
        self.lanes = VECTOR_BYTES * 8 // dtype.bitwidth
        super().__init__(name=f"Vector{self.lanes}({dtype})")


@register_model(_Vector)
class _VectorModel(models.PrimitiveModel):
    def __init__(self, dmm, fe_type) -> None:
        element = ir.FloatType() if fe_type.dtype == types.float32 else ir.DoubleType()
        super().__init__(dmm, fe_type, ir.VectorType(element, fe_type.lanes))


_VECTORS: dict = {}


def _vector_of(array) -> _Vector:
    """The vector type for ``array``'s elements; a TypingError for anything but a C-contiguous
    float32/float64 array (the intrinsics index its data by flat offset)."""
    if not isinstance(array, types.Array) or array.layout != "C":
        raise numba.core.errors.TypingError(f"packed_gemm: {array} is not C-contiguous")
    if array.dtype not in (types.float32, types.float64):
        raise numba.core.errors.TypingError(f"packed_gemm: {array.dtype} is not a float type")
    if array.dtype not in _VECTORS:
        _VECTORS[array.dtype] = _Vector(array.dtype)
    return _VECTORS[array.dtype]


def _element_pointer(context, builder, array_type, array, index):
    data = context.make_array(array_type)(context, builder, array).data
    return builder.gep(data, [index])


@intrinsic
def _zero(typingctx, like):
    """A vector of zeros of ``like``'s element type."""
    vector = _vector_of(like)

    def codegen(context, builder, signature, args):
        return ir.Constant(context.get_value_type(vector), None)

    return vector(like), codegen


@intrinsic
def _load(typingctx, array, index):
    """The vector at ``array``'s flat element ``index`` (unaligned)."""
    vector = _vector_of(array)

    def codegen(context, builder, signature, args):
        pointer = _element_pointer(context, builder, signature.args[0], args[0], args[1])
        as_vector = builder.bitcast(pointer, context.get_value_type(vector).as_pointer())
        return builder.load(as_vector, align=1)

    return vector(array, types.intp), codegen


@intrinsic
def _store(typingctx, array, index, value):
    """``value`` written at ``array``'s flat element ``index`` (unaligned)."""
    if _vector_of(array) != value:
        raise numba.core.errors.TypingError(f"packed_gemm: cannot store {value} in {array}")

    def codegen(context, builder, signature, args):
        pointer = _element_pointer(context, builder, signature.args[0], args[0], args[1])
        builder.store(args[2], builder.bitcast(pointer, args[2].type.as_pointer()), align=1)
        return context.get_dummy_value()

    return types.void(array, types.intp, value), codegen


@intrinsic
def _broadcast(typingctx, array, index):
    """A vector whose every lane is ``array``'s flat element ``index``."""
    vector = _vector_of(array)

    def codegen(context, builder, signature, args):
        pointer = _element_pointer(context, builder, signature.args[0], args[0], args[1])
        value = builder.load(pointer)
        vector_type = context.get_value_type(vector)
        first = builder.insert_element(
            ir.Constant(vector_type, ir.Undefined), value, ir.Constant(ir.IntType(32), 0)
        )
        zeros = ir.Constant(ir.VectorType(ir.IntType(32), vector.lanes), None)
        return builder.shuffle_vector(first, ir.Constant(vector_type, ir.Undefined), zeros)

    return vector(array, types.intp), codegen


@intrinsic
def _multiply_add(typingctx, a, b, c):
    """a · b + c lane by lane (``llvm.fmuladd``: one rounding where the CPU has FMA)."""
    if not (isinstance(a, _Vector) and a == b == c):
        raise numba.core.errors.TypingError(f"packed_gemm: {a}, {b}, {c} are not one vector type")

    def codegen(context, builder, signature, args):
        vector_type = args[0].type
        bits = 32 if vector_type.element == ir.FloatType() else 64
        name = f"llvm.fmuladd.v{vector_type.count}f{bits}"
        function = cgutils.get_or_insert_function(
            builder.module, ir.FunctionType(vector_type, [vector_type] * 3), name
        )
        return builder.call(function, args)

    return a(a, b, c), codegen


def panel_width(dtype) -> int:
    """Columns per packed panel: two SIMD vectors of ``dtype``."""
    return 2 * VECTOR_BYTES // np.dtype(dtype).itemsize


def pack(matrix: np.ndarray) -> np.ndarray:
    """``matrix`` (depth, columns) as (panels, depth, width) panels of :func:`panel_width`
    columns each, the last panel padded with zero columns: row k of a panel is the ``width``
    weights one step of the kernel's inner loop reads."""
    depth, columns = matrix.shape
    width = panel_width(matrix.dtype)
    packed = np.empty((-(-columns // width), depth, width), dtype=matrix.dtype)
    _pack_panels(matrix, packed)
    return packed


@jit.njit(error_model="numpy")
def _pack_panels(matrix, packed):
    # (NumPy's copy through a transposed view gathers element by element: ~10x slower)
    depth, columns = matrix.shape
    width = packed.shape[2]
    for panel in range(packed.shape[0]):
        first = panel * width
        count = min(width, columns - first)
        block = packed[panel]
        for j in range(count):  # along a weight's row when ``matrix`` is its transpose
            column = matrix[:, first + j]
            for k in range(depth):
                block[k, j] = column[k]
        for j in range(count, width):
            for k in range(depth):
                block[k, j] = 0


@jit.njit(error_model="numpy")
def _accumulate_four(acc, a, a_first, packed, w):
    # acc (4 rows x 2 vectors) += a[a_first:+4] @ the packed rows from flat offset ``w`` on,
    # a's whole width deep; returned, not stored: the accumulators stay in registers
    c00, c01, c10, c11, c20, c21, c30, c31 = acc
    depth, width = a.shape[1], packed.shape[2]
    lanes = width // 2
    a0 = a_first * depth
    a1, a2, a3 = a0 + depth, a0 + 2 * depth, a0 + 3 * depth
    for k in range(depth):
        w0 = _load(packed, w)
        w1 = _load(packed, w + lanes)
        w += width
        x = _broadcast(a, a0 + k)
        c00 = _multiply_add(x, w0, c00)
        c01 = _multiply_add(x, w1, c01)
        x = _broadcast(a, a1 + k)
        c10 = _multiply_add(x, w0, c10)
        c11 = _multiply_add(x, w1, c11)
        x = _broadcast(a, a2 + k)
        c20 = _multiply_add(x, w0, c20)
        c21 = _multiply_add(x, w1, c21)
        x = _broadcast(a, a3 + k)
        c30 = _multiply_add(x, w0, c30)
        c31 = _multiply_add(x, w1, c31)
    return c00, c01, c10, c11, c20, c21, c30, c31


@jit.njit(error_model="numpy")
def _store_four(out, out_first, panel, acc):
    width = 2 * VECTOR_BYTES // out.itemsize
    lanes = width // 2
    stride = out.shape[1]
    c00, c01, c10, c11, c20, c21, c30, c31 = acc
    o = out_first * stride + panel * width
    _store(out, o, c00)
    _store(out, o + lanes, c01)
    o += stride
    _store(out, o, c10)
    _store(out, o + lanes, c11)
    o += stride
    _store(out, o, c20)
    _store(out, o + lanes, c21)
    o += stride
    _store(out, o, c30)
    _store(out, o + lanes, c31)


@jit.njit(error_model="numpy")
def _accumulate_one(acc, a, a_row, packed, w):
    # the rows a block of four leaves over: acc (2 vectors) += a[a_row] @ packed rows from w
    c0, c1 = acc
    depth, width = a.shape[1], packed.shape[2]
    lanes = width // 2
    a0 = a_row * depth
    for k in range(depth):
        x = _broadcast(a, a0 + k)
        c0 = _multiply_add(x, _load(packed, w), c0)
        c1 = _multiply_add(x, _load(packed, w + lanes), c1)
        w += width
    return c0, c1


@jit.njit(error_model="numpy")
def _store_one(out, out_row, panel, acc):
    width = 2 * VECTOR_BYTES // out.itemsize
    o = out_row * out.shape[1] + panel * width
    _store(out, o, acc[0])
    _store(out, o + width // 2, acc[1])


@jit.njit(error_model="numpy")
def packed_product(a, a_start, rows, packed, out):
    """``out[:rows, :panels·width] = a[a_start:a_start + rows] @ M`` for the matrix M that
    :func:`pack` gave as ``packed`` (its padding columns included, as zeros). Raises
    ValueError when the shapes do not fit (a start past ``a``'s rows only with rows to read:
    a split time loop hands empty steps to threads whose rows finished)."""
    panels, depth, width = packed.shape
    if (
        width * a.itemsize != 2 * VECTOR_BYTES
        or a.shape[1] != depth
        or out.shape[1] < panels * width
        or rows < 0
        or rows > out.shape[0]
        or (rows > 0 and (a_start < 0 or a_start + rows > a.shape[0]))
    ):
        raise ValueError("packed_product: the rows, packed matrix and output do not fit")
    zero = _zero(a)
    block_rows = rows - rows % ROWS
    for r in range(0, block_rows, ROWS):  # a block's rows stay in L1 while every panel passes
        for panel in range(panels):
            acc = (zero, zero, zero, zero, zero, zero, zero, zero)
            acc = _accumulate_four(acc, a, a_start + r, packed, panel * depth * width)
            _store_four(out, r, panel, acc)
    for r in range(block_rows, rows):
        for panel in range(panels):
            acc = _accumulate_one((zero, zero), a, a_start + r, packed, panel * depth * width)
            _store_one(out, r, panel, acc)


@jit.njit(error_model="numpy")
def packed_affine_pair(x, x_start, h, rows, packed, bias, out):
    """``out[:rows, :panels·width] = [x[x_start:x_start + rows], h[:rows]] @ M + bias`` for
    the matrix M (x's width and then h's width deep) that :func:`pack` gave as ``packed`` and
    ``bias`` padded to its width: a recurrent step's input and state products and bias in one
    pass, the sums kept in registers from the bias to the last term. Raises ValueError when
    the shapes do not fit."""
    panels, depth, width = packed.shape
    if (
        width * x.itemsize != 2 * VECTOR_BYTES
        or x.shape[1] + h.shape[1] != depth
        or bias.shape[0] != panels * width
        or out.shape[1] < panels * width
        or rows < 0
        or rows > h.shape[0]
        or rows > out.shape[0]
        or (rows > 0 and (x_start < 0 or x_start + rows > x.shape[0]))
    ):
        raise ValueError("packed_affine_pair: the rows, packed matrix and output do not fit")
    lanes = width // 2
    state_offset = x.shape[1] * width  # where h's rows of a panel start
    block_rows = rows - rows % ROWS
    for r in range(0, block_rows, ROWS):
        for panel in range(panels):
            b0 = _load(bias, panel * width)
            b1 = _load(bias, panel * width + lanes)
            w = panel * depth * width
            acc = (b0, b1, b0, b1, b0, b1, b0, b1)
            acc = _accumulate_four(acc, x, x_start + r, packed, w)
            acc = _accumulate_four(acc, h, r, packed, w + state_offset)
            _store_four(out, r, panel, acc)
    for r in range(block_rows, rows):
        for panel in range(panels):
            w = panel * depth * width
            acc = (_load(bias, panel * width), _load(bias, panel * width + lanes))
            acc = _accumulate_one(acc, x, x_start + r, packed, w)
            acc = _accumulate_one(acc, h, r, packed, w + state_offset)
            _store_one(out, r, panel, acc)


__all__ = ["pack", "packed_affine_pair", "packed_product", "panel_width"]
