"""linear's forward GEMM: the transposed product where OpenBLAS's AVX-512 kernels are slow."""

import numpy as np
import pytest

import ember
from ember.ops import linear_gemm


@pytest.fixture
def avx512_core(monkeypatch):
    """linear_product as it runs where NumPy's OpenBLAS has the SkylakeX kernels."""
    monkeypatch.setattr(linear_gemm, "openblas_core_type", lambda: "skylakex")


@pytest.fixture
def avx2_core(monkeypatch):
    monkeypatch.setattr(linear_gemm, "openblas_core_type", lambda: "haswell")


def _operands(rows, n_in, n_out, dtype=np.float32):
    rng = np.random.default_rng(rows * 1000 + n_in + n_out)
    return (
        rng.standard_normal((rows, n_in)).astype(dtype),
        rng.standard_normal((n_out, n_in)).astype(dtype),
    )


def test_openblas_core_type_is_the_library_answer():
    name = linear_gemm.openblas_core_type()
    assert name == name.lower()
    if ember._backend.numpy_blas() is not None:
        assert name  # NumPy's OpenBLAS always names its kernel set


@pytest.mark.parametrize("rows, n_in, n_out", [(32, 784, 512), (8, 512, 512), (64, 128, 256)])
def test_transposed_product_is_x_wt_in_c_order(avx512_core, rows, n_in, n_out, monkeypatch):
    x, w = _operands(rows, n_in, n_out)
    calls = []
    monkeypatch.setattr(
        linear_gemm,
        "_TRANSPOSED_PRODUCT",
        lambda *a: calls.append(1) or linear_gemm._transposed_product(*a),
    )
    out = linear_gemm.linear_product(np, x, w)
    assert calls == [1]
    assert out.flags.c_contiguous and out.shape == (rows, n_out) and out.dtype == np.float32
    expected = x.astype(np.float64) @ w.T.astype(np.float64)
    np.testing.assert_allclose(out, expected, rtol=1e-4, atol=1e-3)


@pytest.mark.parametrize(
    "rows, n_in, n_out, dtype",
    [
        (128, 784, 512, np.float32),  # many rows: the plain product is as fast or faster
        (32, 512, 10, np.float32),  # a narrow output
        (32, 64, 512, np.float32),  # a narrow input
        (32, 784, 512, np.float64),  # double precision gains nothing
    ],
)
def test_plain_product_outside_the_measured_region(
    avx512_core, rows, n_in, n_out, dtype, monkeypatch
):
    x, w = _operands(rows, n_in, n_out, dtype)
    monkeypatch.setattr(linear_gemm, "_TRANSPOSED_PRODUCT", None)  # calling it would fail
    out = linear_gemm.linear_product(np, x, w)
    # linalg.gemm's product (it may run on one BLAS thread, which blocks the sums otherwise
    # than a two-thread ``x @ w.T``: the last bit can differ)
    expected = x.astype(np.float64) @ w.T.astype(np.float64)
    tolerance = 1e-4 if dtype == np.float32 else 1e-12
    np.testing.assert_allclose(out, expected, rtol=tolerance, atol=tolerance)


def test_avx2_kernels_keep_the_plain_product(avx2_core, monkeypatch):
    x, w = _operands(32, 784, 512)
    monkeypatch.setattr(linear_gemm, "_TRANSPOSED_PRODUCT", None)
    out = linear_gemm.linear_product(np, x, w)
    np.testing.assert_allclose(out, x.astype(np.float64) @ w.T.astype(np.float64), 1e-4, 1e-4)


@pytest.mark.parametrize("core", ["avx512_core", "avx2_core"])
def test_linear_layer_step_matches_torch(core, request):
    torch = pytest.importorskip("torch")
    request.getfixturevalue(core)
    x, w = _operands(32, 784, 512)
    b = np.linspace(-1, 1, 512, dtype=np.float32)
    ex, ew, eb = (ember.tensor(a, requires_grad=True) for a in (x, w, b))
    tx, tw, tb = (torch.tensor(a, requires_grad=True) for a in (x, w, b))
    ey = ember.nn.functional.relu(ember.nn.functional.linear(ex, ew, eb))
    ty = torch.nn.functional.relu(torch.nn.functional.linear(tx, tw, tb))
    np.testing.assert_allclose(ey.detach().numpy(), ty.detach().numpy(), rtol=1e-4, atol=1e-4)
    assert ey.grad_fn.name() == ty.grad_fn.name()
    ey.sum().backward()
    ty.sum().backward()
    for e, t in ((ex, tx), (ew, tw), (eb, tb)):
        np.testing.assert_allclose(e.grad.numpy(), t.grad.numpy(), rtol=1e-4, atol=1e-3)
