"""ember._kernels.cuda_fused: the fused kernels' wrappers on the fake CuPy (which runs each kernel's
NumPy reference) against ember's composite CPU ops; the CUDA sources through NVRTC where CuPy
is installed; the kernels themselves against the references on a real GPU."""

import numpy as np
import pytest

import ember
import ember.nn.functional as F
from ember._kernels import cuda_fused as kernels
from tests import _fake_cupy

rng = np.random.default_rng(0)


def _dev(fake, a):
    return fake.asarray(a)


def _host(a):
    return a.get() if hasattr(a, "get") else np.asarray(a)


def test_numpy_arrays_are_left_to_the_composite_path():
    x = np.ones((2, 3))
    assert kernels.fused_softmax(np, x) is None
    assert kernels.fused_gelu(np, x) is None
    assert kernels.fused_layer_norm(np, x, 3) is None
    assert kernels.fused_cross_entropy(np, x, np.zeros(2, dtype=np.int64)) is None
    assert (
        kernels.fused_adam_step(np, x, x, x, x, step=1, lr=0.1, beta1=0.9, beta2=0.99, eps=1e-8)
        is None
    )


def test_unsupported_dtypes_are_left_to_the_composite_path(cuda_device):
    assert kernels.fused_softmax(cuda_device, cuda_device.ones((2, 3), dtype=np.float16)) is None
    assert kernels.fused_gelu(cuda_device, cuda_device.ones(3, dtype=np.int64)) is None


@pytest.mark.parametrize("log", [False, True])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_softmax_forward_and_backward(cuda_device, log, dtype):
    x = rng.normal(size=(3, 2, 5)).astype(dtype)
    x[0, 0, 1] = 40.0  # large logits must not overflow
    x[1, 0, 2] = np.inf  # rows with inf, -inf and nan answer as torch's softmax
    x[1, 1, :] = -np.inf
    x[2, 0, 3] = np.nan
    g = rng.normal(size=x.shape).astype(dtype)
    t = ember.tensor(x, requires_grad=True)
    ref = (F.log_softmax if log else F.softmax)(t, -1)
    ref.backward(ember.tensor(g))
    y = kernels.fused_softmax(cuda_device, _dev(cuda_device, x), log=log)
    gx = kernels.fused_softmax_backward(cuda_device, y, _dev(cuda_device, g), log=log)
    tol = 1e-6 if dtype == np.float32 else 1e-12
    assert y.dtype == dtype and isinstance(y, cuda_device.ndarray)
    np.testing.assert_allclose(_host(y), ref.detach().numpy(), rtol=tol, atol=tol)
    finite = np.isfinite(x).all(axis=-1)  # where the gradient is nan, nan it is on both
    np.testing.assert_allclose(
        _host(gx)[finite], t.grad.numpy()[finite], rtol=10 * tol, atol=10 * tol
    )


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("weighted", [False, True])
def test_cross_entropy_forward_and_backward(cuda_device, reduction, weighted):
    x = rng.normal(size=(6, 4))
    target = np.array([0, 3, -100, 1, 2, 3])
    weight = rng.uniform(0.5, 2.0, size=4) if weighted else None
    t = ember.tensor(x, requires_grad=True)
    w = ember.tensor(weight) if weighted else None
    ref = F.cross_entropy(t, ember.tensor(target), weight=w, reduction=reduction)
    g = rng.normal(size=ref.shape)
    ref.backward(ember.tensor(g))
    dw = _dev(cuda_device, weight) if weighted else None
    dx, dt = _dev(cuda_device, x), _dev(cuda_device, target)
    loss, saved = kernels.fused_cross_entropy(cuda_device, dx, dt, dw, -100, reduction)
    gx = kernels.fused_cross_entropy_backward(cuda_device, dx, dt, saved, _dev(cuda_device, g))
    np.testing.assert_allclose(_host(loss), ref.detach().numpy(), rtol=1e-12)
    np.testing.assert_allclose(_host(gx), t.grad.numpy(), rtol=1e-12, atol=1e-15)
    assert not _host(gx)[2].any()  # the ignored row gets no gradient


def test_cross_entropy_target_out_of_range_raises(cuda_device):
    x, target = cuda_device.zeros((2, 3)), cuda_device.asarray(np.array([1, 3]))
    with pytest.raises(IndexError, match="Target 3 is out of bounds"):
        kernels.fused_cross_entropy(cuda_device, x, target)
    # a target it does not handle (class probabilities) goes to the composite path
    assert kernels.fused_cross_entropy(cuda_device, x, cuda_device.zeros((2, 3))) is None


@pytest.mark.parametrize("affine", [False, True])
def test_layer_norm_forward_and_backward(cuda_device, affine):
    x = rng.normal(size=(2, 3, 4, 5)) * 3 + 1
    g = rng.normal(size=x.shape)
    w, b = rng.normal(size=(4, 5)), rng.normal(size=(4, 5))
    t = ember.tensor(x, requires_grad=True)
    tw = ember.tensor(w, requires_grad=True) if affine else None
    tb = ember.tensor(b, requires_grad=True) if affine else None
    ref = F.layer_norm(t, (4, 5), tw, tb, eps=1e-5)
    ref.backward(ember.tensor(g))
    dw = _dev(cuda_device, w) if affine else None
    db = _dev(cuda_device, b) if affine else None
    y, mean, rstd = kernels.fused_layer_norm(cuda_device, _dev(cuda_device, x), 20, dw, db, 1e-5)
    assert mean.shape == rstd.shape == (6,)
    gx, gw, gb = kernels.fused_layer_norm_backward(
        cuda_device, _dev(cuda_device, x), _dev(cuda_device, g), mean, rstd, dw, db
    )
    np.testing.assert_allclose(_host(y), ref.detach().numpy(), rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(_host(gx), t.grad.numpy(), rtol=1e-9, atol=1e-11)
    if affine:
        np.testing.assert_allclose(_host(gw), tw.grad.numpy(), rtol=1e-10)
        np.testing.assert_allclose(_host(gb), tb.grad.numpy(), rtol=1e-10)
    else:
        assert gw is None and gb is None


@pytest.mark.parametrize("approximate", ["none", "tanh"])
def test_gelu_forward_and_backward(cuda_device, approximate):
    x = rng.normal(size=(4, 7)) * 3
    g = rng.normal(size=x.shape)
    t = ember.tensor(x, requires_grad=True)
    ref = F.gelu(t, approximate=approximate)
    ref.backward(ember.tensor(g))
    y = kernels.fused_gelu(cuda_device, _dev(cuda_device, x), approximate)
    gx = kernels.fused_gelu_backward(
        cuda_device, _dev(cuda_device, x), _dev(cuda_device, g), approximate
    )
    np.testing.assert_allclose(_host(y), ref.detach().numpy(), rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(_host(gx), t.grad.numpy(), rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize(
    "options",
    [
        {},
        {"weight_decay": 0.1},
        {"weight_decay": 0.1, "decoupled": True},
        {"amsgrad": True, "maximize": True},
    ],
)
def test_adam_step_equals_ember_adam(cuda_device, options):
    options = dict(options)
    amsgrad = options.pop("amsgrad", False)
    decoupled = options.pop("decoupled", False)
    cls = ember.optim.AdamW if decoupled else ember.optim.Adam
    p0 = rng.normal(size=(3, 4))
    grads = [rng.normal(size=p0.shape) for _ in range(3)]
    p = ember.nn.Parameter(ember.tensor(p0))
    opt = cls([p], lr=0.01, betas=(0.8, 0.95), eps=1e-6, amsgrad=amsgrad, **options)
    dp, dm, dv = _dev(cuda_device, p0), cuda_device.zeros(p0.shape), cuda_device.zeros(p0.shape)
    dmax = cuda_device.zeros(p0.shape) if amsgrad else None
    for step, g in enumerate(grads, 1):
        p.grad = ember.tensor(g)
        opt.step()
        out = kernels.fused_adam_step(
            cuda_device, dp, _dev(cuda_device, g), dm, dv, dmax, step=step, lr=0.01, beta1=0.8,
            beta2=0.95, eps=1e-6, weight_decay=options.get("weight_decay", 0.0),
            decoupled=decoupled, maximize=options.get("maximize", False),
        )  # fmt: skip
        assert out is dp
    state = opt.state[p]
    np.testing.assert_allclose(_host(dp), p.detach().numpy(), rtol=1e-12)
    np.testing.assert_allclose(_host(dm), state["exp_avg"].numpy(), rtol=1e-12)
    np.testing.assert_allclose(_host(dv), state["exp_avg_sq"].numpy(), rtol=1e-12)
    if amsgrad:
        np.testing.assert_allclose(_host(dmax), state["max_exp_avg_sq"].numpy(), rtol=1e-12)


def test_the_sources_built_are_the_ones_nvrtc_checks(fake_cuda):
    _fake_cupy.compiled_sources.clear()
    kernels.fused_gelu(fake_cuda, fake_cuda.ones(3, dtype=np.float32))
    kind, name, source = _fake_cupy.compiled_sources[-1]
    assert (kind, name) == ("raw", "ember_gelu_float")
    assert source == kernels.all_kernel_sources()["ember_gelu_float"]
    assert set(kernels.NUMPY_REFERENCES) == set(kernels.all_kernel_sources())


def test_every_kernel_compiles_with_nvrtc():
    nvrtc = pytest.importorskip("cupy_backends.cuda.libs.nvrtc", reason="CuPy not installed")
    try:
        nvrtc.getVersion()
    except Exception as exc:  # CuPy present, libnvrtc not found (its own error types)
        pytest.skip(f"NVRTC library not loadable: {type(exc).__name__}")
    sizes = kernels.compile_with_nvrtc("compute_90")
    assert set(sizes) == set(kernels.all_kernel_sources()) and all(sizes.values())


# --- on a real GPU: the kernels against their NumPy references -------------------------------

gpu = pytest.mark.skipif(
    not ember.cuda.is_available(), reason="no CUDA GPU (CuPy not installed or no device)"
)


@gpu
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_gpu_kernels_match_references(dtype):
    import cupy

    tol = 2e-5 if dtype == np.float32 else 1e-11
    x = rng.normal(size=(37, 1000)).astype(dtype)  # more columns than threads in a block
    g = rng.normal(size=x.shape).astype(dtype)
    dx, dg = cupy.asarray(x), cupy.asarray(g)
    for log in (False, True):
        y = np.empty_like(x)
        kernels._ref_softmax_forward(x, y, 37, 1000, log)
        out = kernels.fused_softmax(cupy, dx, log)
        np.testing.assert_allclose(out.get(), y, rtol=tol, atol=tol)
        gx = np.empty_like(x)
        kernels._ref_softmax_backward(y, g, gx, 37, 1000, log)
        got = kernels.fused_softmax_backward(cupy, out, dg, log).get()
        np.testing.assert_allclose(got, gx, rtol=tol * 10, atol=tol * 10)
    t = ember.tensor(x, requires_grad=True)
    target = rng.integers(0, 1000, size=37)
    target[3] = -100
    ref = F.cross_entropy(t, ember.tensor(target))
    ref.backward()
    loss, saved = kernels.fused_cross_entropy(cupy, dx, cupy.asarray(target))
    gx = kernels.fused_cross_entropy_backward(cupy, dx, cupy.asarray(target), saved, cupy.ones(()))
    np.testing.assert_allclose(float(loss), ref.item(), rtol=tol)
    np.testing.assert_allclose(gx.get(), t.grad.numpy(), rtol=tol * 10, atol=tol)
    y, mean, rstd = kernels.fused_layer_norm(cupy, dx, 1000)
    ref = F.layer_norm(ember.tensor(x), (1000,))
    np.testing.assert_allclose(y.get(), ref.numpy(), rtol=tol * 10, atol=tol * 10)
    for approximate in ("none", "tanh"):
        ref = F.gelu(ember.tensor(x), approximate=approximate).numpy()
        np.testing.assert_allclose(
            kernels.fused_gelu(cupy, dx, approximate).get(), ref, rtol=tol, atol=tol
        )
    p = [x.copy(), g.copy(), np.zeros_like(x), np.zeros_like(x), np.zeros_like(x)]
    dp = [cupy.asarray(a) for a in p]
    scalars = dict(step=1, lr=0.01, beta1=0.9, beta2=0.999, eps=1e-8, weight_decay=0.01)
    kernels.fused_adam_step(cupy, *dp, **scalars, decoupled=True)
    kernels._ref_adam_step(
        *p, x.size, *(dtype(v) for v in (0.1, 0.999, 0.001, 0.01 / 0.1, np.sqrt(0.001), 1e-8,
                                         0.01, 1 - 0.01 * 0.01)), 1, 1, 0,
    )  # fmt: skip
    for got, want in zip(dp, p):
        np.testing.assert_allclose(got.get(), want, rtol=tol, atol=tol)
