"""The packed-matrix products of the recurrent time loops (``ember._kernels.packed_gemm_jit``):
equal to NumPy's matmul over float32 and float64, odd and zero sizes, row offsets and padded
panels, and they refuse layouts and shapes their flat indexing cannot serve."""

import numpy as np
import pytest

from ember._kernels import jit

pytest.importorskip("numba")

TOLERANCE = {"float32": 2e-5, "float64": 1e-12}


@pytest.fixture
def kernels():
    module = jit.module("packed_gemm_jit")
    if module is None:
        pytest.skip("compiled kernels are off (EMBER_JIT=0)")
    return module


def test_pack_lays_out_panels_padded_with_zero_columns(kernels):
    matrix = np.arange(3 * 21, dtype=np.float32).reshape(3, 21)
    packed = kernels.pack(matrix.T.T)  # any layout: pack copies
    width = kernels.panel_width(np.float32)
    assert width == 16 and kernels.panel_width(np.float64) == 8
    assert packed.shape == (2, 3, 16) and packed.flags.c_contiguous
    np.testing.assert_array_equal(packed[0], matrix[:, :16])
    np.testing.assert_array_equal(packed[1, :, :5], matrix[:, 16:])
    assert not packed[1, :, 5:].any()


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize(
    "depth,columns,start,rows",
    [(7, 13, 2, 11), (128, 512, 0, 16), (5, 40, 1, 6), (3, 8, 4, 1), (0, 9, 0, 3), (4, 9, 2, 0)],
)
def test_packed_product_equals_numpy_matmul(kernels, dtype, depth, columns, start, rows):
    rng = np.random.default_rng(depth * 100 + rows)
    matrix = rng.standard_normal((depth, columns)).astype(dtype)
    a = rng.standard_normal((start + rows + 2, depth)).astype(dtype)
    packed = kernels.pack(matrix)
    out = np.full((rows + 3, packed.shape[0] * packed.shape[2]), np.nan, dtype=dtype)
    kernels.packed_product(a, start, rows, packed, out)
    want = a[start : start + rows] @ matrix
    tol = TOLERANCE[dtype]
    np.testing.assert_allclose(out[:rows, :columns], want, rtol=tol, atol=tol)
    assert not out[:rows, columns:].any()  # the padding columns' products are zeros
    assert np.isnan(out[rows:]).all()  # rows past ``rows`` untouched


def test_packed_product_of_a_row_slice_of_a_larger_state(kernels):
    # the time loops pass each thread its rows of the batch as a C-contiguous slice
    rng = np.random.default_rng(5)
    state = rng.standard_normal((9, 6))
    matrix = rng.standard_normal((6, 10))
    packed = kernels.pack(matrix)
    out = np.empty((4, 16))
    kernels.packed_product(state[5:9], 0, 4, packed, out)
    np.testing.assert_allclose(out[:, :10], state[5:9] @ matrix, rtol=1e-12, atol=1e-12)


def test_packed_product_refuses_a_matrix_that_is_not_c_contiguous(kernels):
    from numba.core.errors import TypingError

    packed = kernels.pack(np.ones((3, 8)))
    with pytest.raises(TypingError, match="not C-contiguous"):
        kernels.packed_product(np.ones((3, 4)).T, 0, 4, packed, np.empty((4, 8)))


@pytest.mark.parametrize(
    "a_shape,start,rows,out_shape",
    [
        ((4, 5), 0, 4, (4, 8)),  # a's width is not the packed depth
        ((4, 3), 2, 3, (4, 8)),  # rows past a's end
        ((4, 3), -1, 2, (4, 8)),  # a negative start
        ((4, 3), 0, 4, (3, 8)),  # more rows than the output has
        ((4, 3), 0, 4, (4, 7)),  # an output narrower than the packed panels
    ],
)
def test_packed_product_raises_when_shapes_do_not_fit(kernels, a_shape, start, rows, out_shape):
    packed = kernels.pack(np.ones((3, 8)))
    with pytest.raises(ValueError, match="do not fit"):
        kernels.packed_product(np.ones(a_shape), start, rows, packed, np.empty(out_shape))


def test_packed_product_raises_on_a_matrix_packed_for_another_dtype(kernels):
    packed = kernels.pack(np.ones((3, 8), dtype=np.float32))  # panels of 16 float32
    with pytest.raises(ValueError, match="do not fit"):
        kernels.packed_product(np.ones((2, 3)), 0, 2, packed.astype(np.float64), np.empty((2, 16)))
