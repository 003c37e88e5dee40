"""SGD, Adam/AdamW, RMSprop and Adagrad updates on raw arrays (``ember.optim._fused``): N
steps against torch's default (single-tensor) path, versions bumped as torch's in-place ops
bump them, the foreach/fused flags, non-contiguous and empty parameters, the NumPy fallback."""

import copy

import numpy as np
import pytest

import ember
from ember import _backend
from ember._kernels import jit
from ember.optim import _fused

SGD_CASES = {
    "plain": dict(lr=0.1),
    "momentum": dict(lr=0.05, momentum=0.9),
    "dampening_wd": dict(lr=0.05, momentum=0.9, dampening=0.3, weight_decay=0.01),
    "nesterov": dict(lr=0.05, momentum=0.8, nesterov=True),
    "nesterov_wd_maximize": dict(
        lr=0.05, momentum=0.8, nesterov=True, weight_decay=0.02, maximize=True
    ),
    "maximize": dict(lr=0.05, maximize=True),
    "maximize_momentum": dict(lr=0.05, momentum=0.7, maximize=True),
    "wd": dict(lr=0.1, weight_decay=0.1),
    "foreach": dict(lr=0.05, momentum=0.9, foreach=True),
    "fused": dict(lr=0.05, momentum=0.9, fused=True),
}
ADAM_CASES = {
    "adam": ("Adam", dict(lr=0.01)),
    "adam_wd_amsgrad": ("Adam", dict(lr=0.01, betas=(0.8, 0.99), weight_decay=0.1, amsgrad=True)),
    "adam_maximize": ("Adam", dict(lr=0.01, maximize=True, weight_decay=0.05)),
    "adam_small_beta1": ("Adam", dict(lr=0.01, betas=(0.3, 0.9))),
    "adam_decoupled": ("Adam", dict(lr=0.01, weight_decay=0.1, decoupled_weight_decay=True)),
    "adam_foreach": ("Adam", dict(lr=0.01, foreach=True)),
    "adam_fused": ("Adam", dict(lr=0.01, amsgrad=True, fused=True)),
    "adamw": ("AdamW", dict(lr=0.01)),
    "adamw_amsgrad_maximize": ("AdamW", dict(lr=0.02, amsgrad=True, maximize=True)),
    "adamw_fused": ("AdamW", dict(lr=0.02, weight_decay=0.1, fused=True)),
}
OTHER_CASES = {
    "rmsprop": ("RMSprop", dict(lr=0.01)),
    "rmsprop_centered_momentum_wd": (
        "RMSprop",
        dict(lr=0.01, momentum=0.5, centered=True, weight_decay=0.01),
    ),
    "rmsprop_centered_small_alpha_maximize": (
        "RMSprop",
        dict(lr=0.01, alpha=0.3, centered=True, maximize=True),
    ),
    "adagrad": ("Adagrad", dict(lr=0.1)),
    "adagrad_all": (
        "Adagrad",
        dict(lr=0.1, lr_decay=0.01, weight_decay=0.01, initial_accumulator_value=0.1),
    ),
    "adagrad_maximize_fused": ("Adagrad", dict(lr=0.1, maximize=True, fused=True)),
}
CASES = {f"sgd_{k}": ("SGD", v) for k, v in SGD_CASES.items()} | ADAM_CASES | OTHER_CASES


def _params(m, dtype):
    rng = np.random.default_rng(0)
    w = m.tensor(rng.standard_normal((7, 5)), dtype=dtype, requires_grad=True)
    b = m.tensor(rng.standard_normal(7), dtype=dtype, requires_grad=True)
    x = m.tensor(rng.standard_normal((4, 5)), dtype=dtype)
    return w, b, x


def _train(m, name, kwargs, dtype_name="float64", steps=5):
    dtype = getattr(m, dtype_name)
    w, b, x = _params(m, dtype)
    opt = getattr(m.optim, name)([{"params": [w]}, {"params": [b], "lr": 0.03}], **kwargs)
    for _ in range(steps):
        opt.zero_grad()
        ((x @ w.T + b).tanh() ** 2).sum().backward()
        opt.step()
    return w, b, opt


def _state_versions(opt, params):
    return [
        {k: v._version for k, v in opt.state[p].items() if hasattr(v, "_version")} for p in params
    ]


@pytest.mark.parametrize("case", sorted(CASES))
def test_float64_steps_and_versions_equal_torch(case, torch_mod):
    name, kwargs = CASES[case]
    we, be, oe = _train(ember, name, kwargs)
    wt, bt, ot = _train(torch_mod, name, kwargs)
    for e, t in ((we, wt), (be, bt)):
        # 1e-10: RMSprop's centred sqrt(v - avg²) cancels, and torch fuses that product
        np.testing.assert_allclose(e.detach().numpy(), t.detach().numpy(), rtol=1e-10, atol=1e-13)
        assert e._version == t._version
    assert _state_versions(oe, [we, be]) == _state_versions(ot, [wt, bt])
    for pe, pt in ((we, wt), (be, bt)):
        for key, value in ot.state[pt].items():
            np.testing.assert_allclose(
                oe.state[pe][key].numpy(), value.numpy(), rtol=1e-10, atol=1e-13
            )


def _fixed_gradient_steps(m, name, kwargs, dtype_name, steps=8):
    rng = np.random.default_rng(1)
    start, grads = rng.standard_normal((33, 17)), rng.standard_normal((steps, 33, 17))
    p = m.tensor(start, dtype=getattr(m, dtype_name), requires_grad=True)
    opt = getattr(m.optim, name)([p], **kwargs)
    for g in grads:
        p.grad = m.tensor(g, dtype=getattr(m, dtype_name))
        opt.step()
    return p.detach().numpy()


@pytest.mark.parametrize("case", sorted(CASES))
def test_float32_steps_equal_torch_within_rounding(case, torch_mod):
    name, kwargs = CASES[case]
    mine = _fixed_gradient_steps(ember, name, kwargs, "float32")
    theirs = _fixed_gradient_steps(torch_mod, name, kwargs, "float32")
    np.testing.assert_allclose(mine, theirs, rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("case", ["plain", "momentum", "maximize_momentum", "nesterov"])
def test_sgd_float32_is_bit_identical_to_torch_through_blas(case, torch_mod):
    """axpy's fused multiply-add rounds as torch's vectorised add_(alpha=) does."""
    if _backend.numpy_blas() is None:
        pytest.skip("NumPy's OpenBLAS is not reachable here: the NumPy fallback rounds twice")
    rng = np.random.default_rng(1)
    start, grads = rng.standard_normal(4096), rng.standard_normal((6, 4096))
    results = []
    for m in (ember, torch_mod):
        p = m.tensor(start, dtype=m.float32, requires_grad=True)
        opt = m.optim.SGD([p], **SGD_CASES[case])
        for g in grads:
            p.grad = m.tensor(g, dtype=m.float32)
            opt.step()
        results.append(p.detach().numpy())
    np.testing.assert_array_equal(results[0], results[1])


@pytest.mark.parametrize(
    "name,kwargs",
    [
        ("SGD", dict(momentum=0.9, nesterov=True)),
        ("Adam", {}),
        ("RMSprop", dict(momentum=0.5, centered=True)),
    ],
)
def test_numpy_fallback_without_blas_equals_torch(name, kwargs, torch_mod, monkeypatch):
    monkeypatch.setattr(_backend, "_numpy_blas", [None])
    we, be, _ = _train(ember, name, dict(lr=0.05, **kwargs))
    wt, bt, _ = _train(torch_mod, name, dict(lr=0.05, **kwargs))
    np.testing.assert_allclose(we.detach().numpy(), wt.detach().numpy(), rtol=1e-12)
    np.testing.assert_allclose(be.detach().numpy(), bt.detach().numpy(), rtol=1e-12)


@pytest.mark.parametrize(
    "name,kwargs",
    [("SGD", dict(momentum=0.9, weight_decay=0.1)), ("Adam", dict(weight_decay=0.1, amsgrad=True))],
)
def test_non_contiguous_parameters_and_gradients_equal_torch(name, kwargs, torch_mod):
    rng = np.random.default_rng(2)
    start, grads = rng.standard_normal((5, 3)), rng.standard_normal((4, 10, 6))
    results = []
    for m in (ember, torch_mod):
        p = m.tensor(start).t().detach().requires_grad_()  # a transposed leaf
        assert not p.is_contiguous()
        opt = getattr(m.optim, name)([p], lr=0.1, **kwargs)
        for g in grads:
            p.grad = m.tensor(g)[::2, ::2].t()  # strided in both dims
            opt.step()
        results.append(p.detach().numpy())
    np.testing.assert_allclose(results[0], results[1], rtol=1e-12)
    assert results[0].shape == (3, 5)


@pytest.mark.parametrize("name", ["SGD", "Adam", "AdamW", "RMSprop", "Adagrad"])
def test_empty_parameter_steps_and_bumps_its_version(name, torch_mod):
    versions = []
    for m in (ember, torch_mod):
        p = m.zeros(0, 3, requires_grad=True)
        opt = getattr(m.optim, name)([p], lr=0.1, **({"momentum": 0.5} if name == "SGD" else {}))
        for _ in range(2):
            p.grad = m.zeros(0, 3)
            opt.step()
        versions.append(p._version)
        assert tuple(p.shape) == (0, 3)
    assert versions[0] == versions[1]


def test_stepping_a_saved_parameter_makes_backward_raise(torch_mod):
    for m in (ember, torch_mod):
        w = m.tensor([1.0, 2.0], requires_grad=True)
        opt = m.optim.SGD([w], lr=0.1)
        w.grad = m.ones(2)
        y = (w * w).sum()
        opt.step()
        with pytest.raises(RuntimeError, match="modified by an inplace operation"):
            y.backward()


@pytest.mark.parametrize("name", ["SGD", "Adam", "RMSprop", "Adagrad"])
def test_zero_learning_rate_still_propagates_nan_as_torch(name, torch_mod):
    results = []
    for m in (ember, torch_mod):
        p = m.ones(20000, requires_grad=True)
        opt = getattr(m.optim, name)([p], lr=0.0)
        g = m.zeros(20000)
        g[3] = float("nan")
        p.grad = g
        opt.step()
        results.append(p.detach().numpy())
    np.testing.assert_array_equal(np.isnan(results[0]), np.isnan(results[1]))
    assert np.isnan(results[0][3]) and results[0][0] == 1.0


def test_scratch_buffers_are_reused_and_never_saved():
    w = ember.randn(300, 40, requires_grad=True)
    b = ember.randn(40, requires_grad=True)
    opt = ember.optim.Adam([w, b])
    with jit.disabled():  # the NumPy path's scratch (the compiled update needs none)
        for _ in range(3):
            w.grad, b.grad = ember.randn(300, 40), ember.randn(40)
            opt.step()
    buffers = _fused.scratch_of(opt).buffers
    assert sorted(buffers) == [(0, "f"), (1, "f"), (2, "f")]
    assert all(a.size == 300 * 40 for a in buffers.values())
    assert "_scratch" not in opt.__getstate__()
    assert "_scratch" not in copy.deepcopy(opt).__dict__
    assert set(opt.state_dict()["state"][0]) == {"step", "exp_avg", "exp_avg_sq"}


def test_step_counter_advances_in_place():
    w = ember.zeros(3, requires_grad=True)
    opt = ember.optim.AdamW([w])
    w.grad = ember.ones(3)
    opt.step()
    step = opt.state[w]["step"]
    opt.step()
    assert opt.state[w]["step"] is step and step.item() == 2.0 and step.dtype == ember.float32


def test_differentiable_sgd_still_records_the_update(torch_mod):
    results = []
    for m in (ember, torch_mod):
        start = m.tensor([1.0, 2.0], requires_grad=True)
        w = start.clone()
        opt = m.optim.SGD([w], lr=0.5, momentum=0.9, differentiable=True)
        for _ in range(2):
            w.grad = w * 1.0
            opt.step()
        (d_start,) = m.autograd.grad(w.sum(), start)
        results.append(d_start.tolist())
    assert results[0] == results[1]


def test_full_dampening_still_propagates_nan_into_the_momentum_buffer(torch_mod):
    """dampening=1 makes the gradient's coefficient 0, which OpenBLAS would skip."""
    results = []
    for m in (ember, torch_mod):
        p = m.ones(20000, requires_grad=True)
        opt = m.optim.SGD([p], lr=0.1, momentum=0.5, dampening=1.0)
        for bad in (False, True):
            g = m.ones(20000)
            if bad:
                g[7] = float("nan")
            p.grad = g
            opt.step()
        results.append(opt.state[p]["momentum_buffer"].numpy())
    np.testing.assert_array_equal(results[0], results[1])
    assert np.isnan(results[0][7])
