"""The public ops reach ember.cuda's fused kernels for CUDA tensors (the fake CuPy runs each
kernel's NumPy reference and records the launch) and give the CPU's values and gradients;
what the kernels do not cover (another dim, half floats, create_graph) takes the composite."""

import numpy as np
import pytest

import ember
import ember.nn.functional as F
from tests import _fake_cupy

rng = np.random.default_rng(3)


def _launched(prefix: str) -> int:
    return sum(name.startswith(prefix) for name in _fake_cupy.launched)


def _both(a):
    return ember.tensor(a, requires_grad=True), ember.tensor(a).cuda().requires_grad_()


def _same(cuda_tensor, cpu_tensor, rtol=1e-12, atol=1e-14):
    np.testing.assert_allclose(
        cuda_tensor.detach().cpu().numpy(), cpu_tensor.detach().numpy(), rtol=rtol, atol=atol
    )


@pytest.mark.parametrize("name", ["softmax", "log_softmax"])
def test_softmax_over_the_last_dim_runs_the_fused_kernels(fake_cuda, name):
    x_cpu, x_gpu = _both(rng.normal(size=(3, 4, 5)))
    g = rng.normal(size=(3, 4, 5))
    ref, out = getattr(F, name)(x_cpu, -1), getattr(F, name)(x_gpu, 2)
    assert _launched("ember_softmax_forward") == 1
    assert out.grad_fn.name() == ref.grad_fn.name()
    ref.backward(ember.tensor(g))
    out.backward(ember.tensor(g).cuda())
    assert _launched("ember_softmax_backward") == 1
    _same(out, ref)
    _same(x_gpu.grad, x_cpu.grad)


def test_softmax_over_another_dim_and_double_backward_take_the_composite(fake_cuda):
    x_cpu, x_gpu = _both(rng.normal(size=(3, 4)))
    _same(F.softmax(x_gpu, 0), F.softmax(x_cpu, 0))
    assert _launched("ember_softmax") == 0
    grads = []
    for x in (x_cpu, x_gpu):
        (gx,) = ember.autograd.grad(F.log_softmax(x, 1).pow(2).sum(), x, create_graph=True)
        gx.pow(2).sum().backward()
        grads.append(x.grad)
    # the create_graph pass is ember ops; the second pass meets the forward's node once more
    assert _launched("ember_softmax_backward") == 1
    _same(grads[1], grads[0], rtol=1e-10)


@pytest.mark.parametrize("approximate", ["none", "tanh"])
def test_gelu_runs_the_fused_kernel(fake_cuda, approximate):
    x_cpu, x_gpu = _both(rng.normal(size=(4, 6)) * 3)
    ref, out = F.gelu(x_cpu, approximate=approximate), F.gelu(x_gpu, approximate=approximate)
    ref.sum().backward()
    out.sum().backward()
    assert _launched("ember_gelu") == 2  # forward and backward
    assert out.grad_fn.name() == "GeluBackward0"
    _same(out, ref, rtol=1e-10)
    _same(x_gpu.grad, x_cpu.grad, rtol=1e-10)


def test_half_gelu_and_softmax_take_the_composite(fake_cuda):
    x = ember.randn(2, 3).half()
    assert F.gelu(x.cuda()).dtype == ember.float16 and F.softmax(x.cuda(), 1).is_cuda
    assert _launched("ember_") == 0


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_cross_entropy_runs_the_fused_kernel(fake_cuda, reduction):
    x_cpu, x_gpu = _both(rng.normal(size=(5, 4)))
    target = ember.tensor([1, -100, 3, 0, 2])
    ref = F.cross_entropy(x_cpu, target, reduction=reduction)
    out = F.cross_entropy(x_gpu, target.cuda(), reduction=reduction)
    assert _launched("ember_cross_entropy_forward") == 1
    assert out.is_cuda and out.grad_fn.name() == "NllLossBackward0"
    ref.sum().backward()
    out.sum().backward()
    _same(out, ref)
    _same(x_gpu.grad, x_cpu.grad)
    F.cross_entropy(x_gpu, target.cuda(), label_smoothing=0.1)  # composite
    assert _launched("ember_cross_entropy_forward") == 1


def test_layer_norm_runs_the_fused_kernel(fake_cuda):
    x_cpu, x_gpu = _both(rng.normal(size=(2, 3, 4)) * 2 + 1)
    w_cpu, w_gpu = _both(rng.normal(size=(3, 4)))
    ref = F.layer_norm(x_cpu, (3, 4), w_cpu, None)
    out = F.layer_norm(x_gpu, (3, 4), w_gpu, None)
    assert _launched("ember_layer_norm_forward") == 1
    _, mean, rstd = ember.native_layer_norm(x_gpu, (3, 4), w_gpu, None, 1e-5)
    _, ref_mean, ref_rstd = ember.native_layer_norm(x_cpu, (3, 4), w_cpu, None, 1e-5)
    assert mean.shape == ref_mean.shape == (2, 1, 1) and mean.is_cuda
    _same(mean, ref_mean)
    _same(rstd, ref_rstd, rtol=1e-10)
    g = rng.normal(size=(2, 3, 4))
    ref.backward(ember.tensor(g))
    out.backward(ember.tensor(g).cuda())
    assert _launched("ember_layer_norm_backward") == 1
    _same(out, ref, rtol=1e-10)
    _same(x_gpu.grad, x_cpu.grad, rtol=1e-9, atol=1e-12)
    _same(w_gpu.grad, w_cpu.grad, rtol=1e-10)


@pytest.mark.parametrize("cls", ["Adam", "AdamW"])
def test_adam_steps_cuda_parameters_in_the_fused_kernel(fake_cuda, cls):
    start, grads = rng.normal(size=(3, 4)), [rng.normal(size=(3, 4)) for _ in range(2)]
    params = []
    for device in ("cpu", "cuda"):
        p = ember.nn.Parameter(ember.tensor(start).to(device))
        opt = getattr(ember.optim, cls)([p], lr=0.01, amsgrad=True)
        for g in grads:
            p.grad = ember.tensor(g).to(device)
            opt.step()
        params.append(p)
    assert _launched("ember_adam_step") == 2
    _same(params[1], params[0])


def test_cpu_tensors_never_reach_the_kernels(fake_cuda):
    x = ember.randn(3, 4, requires_grad=True)
    loss = F.cross_entropy(F.gelu(F.layer_norm(x, (4,))), ember.tensor([0, 1, 2]))
    loss.backward()
    ember.optim.Adam([x]).step()
    assert _fake_cupy.launched == []
