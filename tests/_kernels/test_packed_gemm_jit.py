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
        ((4, 3), 0, -1, (4, 8)),  # negative rows
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


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize(
    "inputs,state,columns,rows", [(3, 5, 20, 7), (64, 128, 512, 16), (2, 0, 9, 1)]
)
def test_packed_affine_pair_equals_numpy(kernels, dtype, inputs, state, columns, rows):
    rng = np.random.default_rng(inputs + rows)
    matrix = rng.standard_normal((inputs + state, columns)).astype(dtype)
    packed = kernels.pack(matrix)
    width = packed.shape[0] * packed.shape[2]
    bias = np.zeros(width, dtype=dtype)
    bias[:columns] = rng.standard_normal(columns)
    x = rng.standard_normal((3 * rows, inputs)).astype(dtype)
    h = rng.standard_normal((rows + 1, state)).astype(dtype)
    out = np.full((rows + 1, width), np.nan, dtype=dtype)
    kernels.packed_affine_pair(x, rows, h, rows, packed, bias, out)
    want = np.concatenate([x[rows : 2 * rows], h[:rows]], 1) @ matrix + bias[:columns]
    tol = TOLERANCE[dtype] * 4
    np.testing.assert_allclose(out[:rows, :columns], want, rtol=tol, atol=tol)
    assert np.isnan(out[rows:]).all()


def test_packed_affine_pair_raises_when_shapes_do_not_fit(kernels):
    packed = kernels.pack(np.ones((5, 8)))  # 2 inputs + 3 states deep, one panel of 8
    x, h, bias, out = np.ones((4, 2)), np.ones((3, 3)), np.zeros(8), np.empty((3, 8))
    kernels.packed_affine_pair(x, 1, h, 3, packed, bias, out)  # fits
    kernels.packed_affine_pair(x, 9, h, 0, packed, bias, out)  # no rows: any start
    for args in [
        (np.ones((4, 3)), 0, h, 3, packed, bias, out),  # x and h not the packed depth
        (x, 2, h, 3, packed, bias, out),  # x rows past its end
        (x, 0, np.ones((2, 3)), 3, packed, bias, out),  # more rows than h has
        (x, 0, h, 3, packed, np.zeros(7), out),  # bias narrower than the panels
        (x, 0, h, 3, packed, bias, np.empty((3, 7))),  # output narrower than the panels
    ]:
        with pytest.raises(ValueError, match="do not fit"):
            kernels.packed_affine_pair(*args)


def test_rnn_jit_names_the_packed_gemm_source_its_loops_inline():
    # numba caches rnn_jit's loops by rnn_jit.py's content only; see PACKED_GEMM_SOURCE
    import hashlib
    from pathlib import Path

    import ember._kernels.packed_gemm_jit as packed_gemm
    import ember._kernels.rnn_jit as rnn_jit

    digest = hashlib.sha256(Path(packed_gemm.__file__).read_bytes()).hexdigest()[:16]
    assert rnn_jit.PACKED_GEMM_SOURCE == digest, (
        f"packed_gemm_jit.py changed: set PACKED_GEMM_SOURCE = {digest!r} in rnn_jit.py so that "
        "numba recompiles the loops that inline it"
    )
