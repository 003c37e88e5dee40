"""The fused norms (``native_layer_norm``, ``native_batch_norm``, ``native_group_norm``):
float64 gradcheck and gradgradcheck, and values, gradients, statistics, running stats, dtypes,
node names and errors against PyTorch."""

from __future__ import annotations

import numpy as np
import pytest

import ember
from ember.ops import normalization as normalization_ops
from ember.ops.normalization import native_batch_norm, native_group_norm, native_layer_norm

from ..helpers import arrays_for, check_gradients, compare_with_torch

F = ember.nn.functional

# (input shape, normalized_shape, affine: weight, bias)
LAYER_CASES = [
    ((3, 4, 5), (5,), True, True),
    ((2, 3, 4), (3, 4), True, False),
    ((4, 6), (6,), False, False),
    ((2, 5), (5,), False, True),
    ((0, 5), (5,), True, True),
    ((3, 0), (0,), True, True),
    ((5,), (5,), True, True),
]


def _affine_arrays(shape, weight: bool, bias: bool, seed: int = 1):
    w, b = arrays_for([shape, shape], seed=seed)
    return (w + 3.0 if weight else None), (b if bias else None)


def _with_params(fn, weight, bias):
    """``fn(m, x, w, b)`` as a function of the tensors that are present."""

    def call(m, x, *params):
        it = iter(params)
        w = next(it) if weight is not None else None
        b = next(it) if bias is not None else None
        return fn(m, x, w, b)

    return call


def _present(*arrays):
    return [a for a in arrays if a is not None]


@pytest.mark.parametrize("shape, normalized, weight, bias", LAYER_CASES)
@pytest.mark.parametrize("noncontiguous", [False, True])
def test_layer_norm_gradcheck_and_gradgradcheck(shape, normalized, weight, bias, noncontiguous):
    (x,) = arrays_for([shape])
    w, b = _affine_arrays(normalized, weight, bias)
    fn = _with_params(lambda m, x, w, b: m.nn.functional.layer_norm(x, normalized, w, b), w, b)
    # a zero-size tensor is contiguous whatever its strides
    check_gradients(fn, [x, *_present(w, b)], noncontiguous=noncontiguous and x.size > 0)


@pytest.mark.parametrize("shape, normalized, weight, bias", LAYER_CASES)
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_layer_norm_matches_torch(shape, normalized, weight, bias, dtype):
    (x,) = arrays_for([shape], seed=3)
    w, b = _affine_arrays(normalized, weight, bias)
    fn = _with_params(lambda m, x, w, b: m.nn.functional.layer_norm(x, normalized, w, b), w, b)
    tol = dict(atol=1e-5, rtol=1e-4) if dtype == np.float32 else {}
    compare_with_torch(fn, [x, *_present(w, b)], dtype=dtype, **tol)


BATCH_SHAPES = [(6, 3), (4, 3, 5), (2, 3, 4, 5), (2, 3, 2, 3, 2)]


@pytest.mark.parametrize("shape", BATCH_SHAPES)
def test_batch_norm_training_gradcheck_and_gradgradcheck(shape):
    x, w, b = arrays_for([shape, (3,), (3,)], seed=2)
    fn = lambda m, x, w, b: m.nn.functional.batch_norm(x, None, None, w + 3, b, training=True)
    check_gradients(fn, [x, w, b])


@pytest.mark.parametrize("shape", [(4, 3, 5), (2, 3, 4, 5)])
def test_batch_norm_eval_and_no_affine_gradcheck(shape):
    (x,) = arrays_for([shape], seed=4)
    mean = ember.tensor([0.5, -1.0, 0.0], dtype=ember.float64)
    var = ember.tensor([0.5, 2.0, 1.0], dtype=ember.float64)
    fn = lambda m, x: m.nn.functional.batch_norm(x, mean, var, training=False)
    check_gradients(fn, [x], noncontiguous=True)
    fn = lambda m, x: m.nn.functional.batch_norm(x, None, None, training=True)
    check_gradients(fn, [x], noncontiguous=True)


@pytest.mark.parametrize("shape", BATCH_SHAPES)
@pytest.mark.parametrize("training", [True, False])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_batch_norm_matches_torch_with_running_stats(torch_mod, shape, training, dtype):
    x, w, b, rm, rv = arrays_for([shape, (3,), (3,), (3,), (3,)], seed=5)
    rv = np.abs(rv) + 0.5
    stats = {}

    def fn(m, x, w, b):
        running = m.tensor(rm.astype(dtype)), m.tensor(rv.astype(dtype))
        stats[m.__name__] = running
        return m.nn.functional.batch_norm(x, *running, w, b, training, 0.3, 1e-3)

    tol = dict(atol=1e-5, rtol=1e-4) if dtype == np.float32 else {}
    compare_with_torch(fn, [x, w, b], dtype=dtype, **tol)
    for ours, theirs in zip(stats["ember"], stats["torch"]):
        assert ours.dtype.name == str(theirs.dtype).split(".")[-1]
        np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-5, atol=1e-6)


GROUP_CASES = [((2, 6, 5), 3), ((3, 4, 2, 3), 2), ((2, 4), 4), ((0, 4, 3), 2), ((2, 4, 0), 2)]


@pytest.mark.parametrize("shape, groups", GROUP_CASES)
@pytest.mark.parametrize("affine", [True, False])
def test_group_norm_gradcheck_and_gradgradcheck(shape, groups, affine):
    (x,) = arrays_for([shape], seed=6)
    c = shape[1]
    w, b = _affine_arrays((c,), affine, affine)
    fn = _with_params(lambda m, x, w, b: m.nn.functional.group_norm(x, groups, w, b), w, b)
    check_gradients(fn, [x, *_present(w, b)], noncontiguous=x.size > 0)


@pytest.mark.parametrize("shape, groups", GROUP_CASES)
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_group_norm_matches_torch(shape, groups, dtype):
    x, w, b = arrays_for([shape, shape[1:2], shape[1:2]], seed=7)
    fn = lambda m, x, w, b: m.nn.functional.group_norm(x, groups, w, b)
    # groups of one element: torch's float32 output strays ~1e-5 from the exact bias
    tol = dict(atol=1e-4, rtol=1e-4) if dtype == np.float32 else {}
    # no spatial elements: torch's weight gradient is NaN (its 1/std is), ember's the empty sum 0
    compare_with_torch(fn, [x, w, b], dtype=dtype, grad=shape[-1] > 0, **tol)


def test_native_functions_return_torchs_statistics(torch_mod):
    (x,) = arrays_for([(3, 4, 5)], seed=8)
    w, b = arrays_for([(5,), (5,)], seed=9)
    te, tt = ember.tensor(x), torch_mod.tensor(x)
    cases = [
        (
            native_layer_norm(te, (5,), ember.tensor(w), ember.tensor(b), 1e-5),
            torch_mod.native_layer_norm(tt, (5,), torch_mod.tensor(w), torch_mod.tensor(b), 1e-5),
        ),
        (
            native_group_norm(te, None, None, 3, 4, 5, 2, 1e-5),
            torch_mod.native_group_norm(tt, None, None, 3, 4, 5, 2, 1e-5),
        ),
        (
            native_batch_norm(te, None, None, None, None, True, 0.1, 1e-5),
            torch_mod.native_batch_norm(tt, None, None, None, None, True, 0.1, 1e-5),
        ),
    ]
    rm, rv = np.zeros(4), np.ones(4)
    cases.append(
        (
            native_batch_norm(te, None, None, ember.tensor(rm), ember.tensor(rv), False, 0.1, 0.1),
            torch_mod.native_batch_norm(
                tt, None, None, torch_mod.tensor(rm), torch_mod.tensor(rv), False, 0.1, 0.1
            ),
        )
    )
    for ours, theirs in cases:
        assert len(ours) == len(theirs) == 3
        for e, t in zip(ours, theirs):
            assert tuple(e.shape) == tuple(t.shape)
            assert e.dtype.name == str(t.dtype).split(".")[-1]
            assert not e.requires_grad or e is ours[0]
            np.testing.assert_allclose(e.numpy(), t.numpy(), rtol=1e-12, atol=1e-12)


def test_node_names_are_torchs():
    x = ember.randn(4, 3, 5, requires_grad=True)
    w = ember.ones(3, requires_grad=True)
    assert F.layer_norm(x, (5,)).grad_fn.name() == "NativeLayerNormBackward0"
    assert F.group_norm(x, 3, w).grad_fn.name() == "NativeGroupNormBackward0"
    assert F.batch_norm(x, None, None, w, training=True).grad_fn.name() == (
        "NativeBatchNormBackward0"
    )
    out, mean, rstd = ember.ops.normalization.native_layer_norm(x, (5,), None, None, 1e-5)
    assert mean.grad_fn is None and not mean.requires_grad and not rstd.requires_grad
    assert tuple(mean.shape) == (4, 3, 1)


def _train_module(m, cls, steps: int = 3, **kwargs):
    rng = np.random.default_rng(11)
    module = cls(3, **kwargs)
    for _ in range(steps):
        module(m.tensor(rng.standard_normal((5, 3, 4)).astype(np.float32) * 2 + 1))
    module.eval()
    out = module(m.tensor(rng.standard_normal((2, 3, 4)).astype(np.float32)))
    return module, out


@pytest.mark.parametrize(
    "kwargs", [{}, {"momentum": None}, {"momentum": 0.5}, {"track_running_stats": False}]
)
def test_batchnorm_module_running_stats_match_torch(torch_mod, kwargs):
    ours, out_e = _train_module(ember, ember.nn.BatchNorm1d, **kwargs)
    theirs, out_t = _train_module(torch_mod, torch_mod.nn.BatchNorm1d, **kwargs)
    np.testing.assert_allclose(out_e.detach().numpy(), out_t.detach().numpy(), atol=1e-5)
    for name in ("running_mean", "running_var", "num_batches_tracked"):
        e, t = getattr(ours, name), getattr(theirs, name)
        assert (e is None) == (t is None)
        if e is not None:
            np.testing.assert_allclose(e.numpy(), t.numpy(), rtol=1e-5)


@pytest.mark.parametrize(
    "cls, shape", [("BatchNorm2d", (2, 3, 4, 5)), ("BatchNorm3d", (2, 3, 2, 3, 2))]
)
def test_batchnorm_modules_train_step_matches_torch(torch_mod, cls, shape):
    (x,) = arrays_for([shape], seed=12)
    results = {}
    for m in (ember, torch_mod):
        layer = getattr(m.nn, cls)(3)
        inp = m.tensor(x.astype(np.float32), requires_grad=True)
        layer(inp).pow(2).sum().backward()
        results[m.__name__] = (inp.grad, layer.weight.grad, layer.bias.grad, layer.running_var)
    for e, t in zip(results["ember"], results["torch"]):
        np.testing.assert_allclose(e.numpy(), t.numpy(), rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_half_precision_computes_in_float32_and_keeps_its_dtype(torch_mod, dtype):
    (x,) = arrays_for([(4, 3, 8)], seed=13)
    for fn in (
        lambda m, x: m.nn.functional.layer_norm(x, (8,)),
        lambda m, x: m.nn.functional.group_norm(x, 3, m.ones(3)),
        lambda m, x: m.nn.functional.batch_norm(x, m.zeros(3), m.ones(3), training=True),
    ):
        e = fn(ember, ember.tensor(x).to(getattr(ember, dtype)))
        t = fn(torch_mod, torch_mod.tensor(x).to(getattr(torch_mod, dtype)))
        assert e.dtype.name == dtype
        np.testing.assert_allclose(
            e.float().numpy(), t.float().numpy(), atol=0.05 if dtype == "bfloat16" else 5e-3
        )


def test_double_backward_matches_torch(torch_mod):
    x, w, b = arrays_for([(3, 4, 5), (5,), (5,)], seed=14)
    grads = {}
    for m in (ember, torch_mod):
        xs = [m.tensor(a, requires_grad=True) for a in (x, w, b)]
        out = m.nn.functional.layer_norm(xs[0], (5,), xs[1], xs[2])
        (gx,) = m.autograd.grad((out * out.detach().sin()).sum(), xs[0], create_graph=True)
        grads[m.__name__] = m.autograd.grad(gx.pow(2).sum(), xs, allow_unused=True)
    for e, t in zip(grads["ember"], grads["torch"]):
        if t is None:  # the bias does not reach the input's gradient
            assert e is None
            continue
        np.testing.assert_allclose(e.numpy(), t.numpy(), rtol=1e-9, atol=1e-10)


ERROR_CASES = [
    lambda m: m.nn.functional.layer_norm(m.randn(3, 4), (5,)),
    lambda m: m.nn.functional.layer_norm(m.randn(3, 4), ()),
    lambda m: m.nn.functional.layer_norm(m.randn(3, 4), (4,), m.ones(3)),
    lambda m: m.nn.functional.layer_norm(m.randn(3, 4), (4,), None, m.ones(3)),
    lambda m: m.nn.functional.layer_norm(m.ones(3, 4, dtype=m.int64), (4,)),
    lambda m: m.nn.functional.layer_norm(m.randn(3, 4, dtype=m.float64), (4,), m.ones(4)),
    lambda m: m.nn.functional.batch_norm(m.randn(1, 3), None, None, training=True),
    lambda m: m.nn.functional.batch_norm(m.randn(2, 3), None, None, training=False),
    lambda m: m.nn.functional.batch_norm(m.randn(2, 3), m.zeros(4), m.ones(3), training=True),
    lambda m: m.nn.functional.batch_norm(m.randn(2, 3), m.zeros(3), m.ones(3), m.ones(2)),
    lambda m: m.nn.functional.batch_norm(m.ones(2, 3, dtype=m.int64), None, None, training=True),
    lambda m: m.nn.functional.group_norm(m.randn(3, 4, 5), 3),
    lambda m: m.nn.functional.group_norm(m.randn(3, 4, 5), 2, m.ones(3)),
    lambda m: m.nn.functional.group_norm(m.randn(3, 4, 5), 2, None, m.ones(3)),
    lambda m: m.nn.functional.group_norm(m.randn(3), 1),
    lambda m: m.nn.functional.group_norm(m.ones(3, 4, dtype=m.int64), 2),
]


@pytest.mark.parametrize("case", range(len(ERROR_CASES)))
def test_errors_match_torch(torch_mod, case):
    with pytest.raises(Exception) as theirs:
        ERROR_CASES[case](torch_mod)
    with pytest.raises(type(theirs.value)) as ours:
        ERROR_CASES[case](ember)
    assert str(ours.value).replace("ember", "torch") == str(theirs.value)


def test_batch_norm_on_an_empty_batch_leaves_running_stats(torch_mod):
    for m in (ember, torch_mod):
        rm, rv = m.zeros(3) + 0.5, m.ones(3)
        out = m.nn.functional.batch_norm(m.randn(0, 3), rm, rv, training=True)
        assert tuple(out.shape) == (0, 3)
        np.testing.assert_array_equal(rm.numpy(), [0.5, 0.5, 0.5])
        np.testing.assert_array_equal(rv.numpy(), [1.0, 1.0, 1.0])


def test_saved_input_modified_in_place_raises():
    x = ember.randn(3, 4, requires_grad=True)
    y = x * 1.0
    out = F.layer_norm(y, (4,))
    y.add_(1.0)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        out.sum().backward()


def test_output_modified_in_place_keeps_gradients_right():
    x = ember.tensor(arrays_for([(3, 4)], seed=15)[0], requires_grad=True)
    out = F.layer_norm(x, (4,))
    expected = ember.autograd.grad((F.layer_norm(x, (4,)) * 2).sum(), x)[0]
    out.mul_(2.0)
    (grad,) = ember.autograd.grad(out.sum(), x)
    np.testing.assert_allclose(grad.numpy(), expected.numpy(), atol=1e-12)


# large enough (> 65,536 elements) to be shared among threads, cut into many slabs here
LARGE_CASES = {
    "layer_norm": ((300, 7, 40), lambda m, x, w, b: m.nn.functional.layer_norm(x, (40,), w, b)),
    "group_norm": ((8, 6, 40, 40), lambda m, x, w, b: m.nn.functional.group_norm(x, 3, w, b)),
    "batch_norm": (
        (8, 6, 40, 40),
        lambda m, x, w, b: m.nn.functional.batch_norm(x, None, None, w, b, training=True),
    ),
    "batch_norm_eval": (
        (8, 6, 40, 40),
        lambda m, x, w, b: m.nn.functional.batch_norm(
            x, m.arange(6.0, dtype=x.dtype), m.arange(1.0, 7.0, dtype=x.dtype), w, b
        ),
    ),
}


@pytest.mark.parametrize("name", LARGE_CASES)
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_large_inputs_cut_into_slabs_match_torch(monkeypatch, name, dtype):
    monkeypatch.setattr(normalization_ops, "_SLAB", 4096)
    shape, fn = LARGE_CASES[name]
    params = (40,) if name == "layer_norm" else (6,)
    x, w, b = arrays_for([shape, params, params], seed=16)
    tol = dict(atol=2e-5, rtol=1e-4) if dtype == np.float32 else dict(atol=1e-10, rtol=1e-9)
    compare_with_torch(fn, [x * 3 + 1, w, b], dtype=dtype, **tol)


def test_large_non_contiguous_input_matches_contiguous(monkeypatch):
    monkeypatch.setattr(normalization_ops, "_SLAB", 4096)
    (x,) = arrays_for([(40, 8, 300)], seed=17)
    for fn in (
        lambda t: F.layer_norm(t, (40,)),
        lambda t: F.group_norm(t, 2),
        lambda t: F.batch_norm(t, None, None, training=True),
    ):
        strided = ember.tensor(x).permute(2, 1, 0).requires_grad_()
        dense = ember.tensor(np.ascontiguousarray(x.transpose(2, 1, 0))).requires_grad_()
        out_s, out_d = fn(strided), fn(dense)
        np.testing.assert_allclose(out_s.detach().numpy(), out_d.detach().numpy(), atol=1e-12)
        seed = ember.tensor(np.cos(np.arange(out_d.numel())).reshape(tuple(out_d.shape)))
        (g_s,) = ember.autograd.grad(out_s, strided, seed)
        (g_d,) = ember.autograd.grad(out_d, dense, seed)
        np.testing.assert_allclose(g_s.numpy(), g_d.numpy(), atol=1e-12)


def test_top_level_aliases_take_atens_cudnn_flag():
    x = ember.randn(2, 4, 3)
    np.testing.assert_array_equal(
        ember.layer_norm(x, (3,), None, None, 1e-5, True).numpy(), F.layer_norm(x, (3,)).numpy()
    )
    np.testing.assert_array_equal(
        ember.group_norm(x, 2, None, None, 1e-5, True).numpy(), F.group_norm(x, 2).numpy()
    )


@pytest.mark.parametrize("shape", [(2, 3, 5), (2, 3, 2, 3)])
def test_instance_norm_on_the_fused_batch_norm_gradcheck(shape):
    x, w, b = arrays_for([shape, (3,), (3,)], seed=18)
    fn = lambda m, x, w, b: m.nn.functional.instance_norm(x, weight=w, bias=b)
    check_gradients(fn, [x, w, b])


@pytest.mark.parametrize("shape", [(2, 3, 5), (2, 3, 2, 3)])
def test_instance_norm_on_the_fused_batch_norm_matches_torch(torch_mod, shape):
    x, w, b = arrays_for([shape, (3,), (3,)], seed=18)
    fn = lambda m, x, w, b: m.nn.functional.instance_norm(x, weight=w, bias=b)
    compare_with_torch(fn, [x, w, b])
    stats = {}

    def with_running(m, x):
        running = m.zeros(3, dtype=m.float64), m.ones(3, dtype=m.float64)
        stats[m.__name__] = running
        return m.nn.functional.instance_norm(x, *running, momentum=0.2)

    compare_with_torch(with_running, [x])
    assert set(stats) == {"ember", "torch"}
    for ours, theirs in zip(stats["ember"], stats["torch"]):
        np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-12)


def test_group_norm_statistics_are_differentiable_like_torch(torch_mod):
    x, w, b = arrays_for([(2, 4, 3), (4,), (4,)], seed=4)

    def stats(m, xt, wt, bt):
        _, mean, rstd = m.native_group_norm(xt, wt, bt, 2, 4, 3, 2, 1e-5)
        return mean, rstd

    compare_with_torch(stats, [x, w, b])
    check_gradients(lambda m, xt: stats(m, xt, None, None), [x])
    out = native_group_norm(
        ember.tensor(x), ember.tensor(w, requires_grad=True), None, 2, 4, 3, 2, 1e-5
    )
    assert all(t.requires_grad for t in out)  # weight alone: still recorded, as torch
    assert out[1].grad_fn.name() == "NativeGroupNormBackward0"
