"""ember.ops.cuda_fused on the fake CuPy: the fused ops against ember's CPU ops (values,
gradients, double backward), and None wherever the kernels do not apply."""

import numpy as np
import pytest

import ember
import ember.nn.functional as F
from ember.ops import cuda_fused as fused_ops

rng = np.random.default_rng(1)


def _pair(a, requires_grad=True):
    cpu = ember.tensor(a, requires_grad=requires_grad)
    cuda = ember.tensor(a).cuda().requires_grad_(requires_grad)
    return cpu, cuda


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_cross_entropy_matches_cpu_with_weight_and_ignore_index(cuda_device, reduction):
    logits = rng.normal(size=(5, 4))
    target = np.array([1, -100, 3, 0, 3])
    weight = rng.uniform(0.5, 2, size=4)
    x_cpu, x_gpu = _pair(logits)
    ref = F.cross_entropy(x_cpu, ember.tensor(target), ember.tensor(weight), reduction=reduction)
    out = fused_ops.cross_entropy(
        x_gpu, ember.tensor(target).cuda(), ember.tensor(weight).cuda(), reduction=reduction
    )
    assert out.is_cuda and out.grad_fn.name() == "NllLossBackward0"
    g = ember.tensor(rng.normal(size=ref.shape))
    ref.backward(g)
    out.backward(g.cuda())
    np.testing.assert_allclose(out.detach().cpu().numpy(), ref.detach().numpy(), rtol=1e-12)
    np.testing.assert_allclose(x_gpu.grad.cpu().numpy(), x_cpu.grad.numpy(), rtol=1e-11)


def test_cross_entropy_double_backward_uses_the_composite(cuda_device):
    logits = rng.normal(size=(3, 5))
    target = ember.tensor([4, 0, 2])
    grads = []
    for x, loss_fn in [
        (ember.tensor(logits, requires_grad=True), lambda x: F.cross_entropy(x, target)),
        (
            ember.tensor(logits).cuda().requires_grad_(),
            lambda x: fused_ops.cross_entropy(x, target.cuda()),
        ),
    ]:
        (gx,) = ember.autograd.grad(loss_fn(x), x, create_graph=True)
        gx.pow(2).sum().backward()
        grads.append(x.grad.cpu().numpy())
    np.testing.assert_allclose(grads[1], grads[0], rtol=1e-10)


def test_cross_entropy_leaves_other_cases_to_the_composite(cuda_device):
    x = ember.randn(3, 4, device="cuda")
    t = ember.tensor([0, 1, 2], device="cuda")
    assert fused_ops.cross_entropy(x.cpu(), t.cpu()) is None
    assert fused_ops.cross_entropy(x, t, label_smoothing=0.1) is None
    assert fused_ops.cross_entropy(x, x.softmax(1)) is None  # probabilities as target
    assert fused_ops.cross_entropy(x, t.cpu()) is None  # the composite raises torch's error
    assert fused_ops.cross_entropy(x.half(), t) is None
    with pytest.raises(IndexError, match="Target 7 is out of bounds"):
        fused_ops.cross_entropy(x, ember.tensor([0, 7, 1], device="cuda"))


@pytest.mark.parametrize("affine", [True, False])
def test_layer_norm_matches_cpu(cuda_device, affine):
    a = rng.normal(size=(2, 3, 6)) * 2 + 0.5
    x_cpu, x_gpu = _pair(a)
    w_cpu, w_gpu = _pair(rng.normal(size=6)) if affine else (None, None)
    b_cpu, b_gpu = _pair(rng.normal(size=6)) if affine else (None, None)
    ref = F.layer_norm(x_cpu, (6,), w_cpu, b_cpu, 1e-5)
    out, mean, rstd = fused_ops.layer_norm(x_gpu, (6,), w_gpu, b_gpu, 1e-5)
    assert mean.shape == rstd.shape == (6,)
    g = rng.normal(size=a.shape)
    ref.backward(ember.tensor(g))
    out.backward(ember.tensor(g).cuda())
    np.testing.assert_allclose(out.detach().cpu().numpy(), ref.detach().numpy(), rtol=1e-10)
    np.testing.assert_allclose(x_gpu.grad.cpu().numpy(), x_cpu.grad.numpy(), rtol=1e-9, atol=1e-12)
    if affine:
        np.testing.assert_allclose(w_gpu.grad.cpu().numpy(), w_cpu.grad.numpy(), rtol=1e-10)
        np.testing.assert_allclose(b_gpu.grad.cpu().numpy(), b_cpu.grad.numpy(), rtol=1e-10)


def test_layer_norm_double_backward_uses_the_composite(cuda_device):
    a = rng.normal(size=(4, 5))
    w = rng.normal(size=5)
    results = []
    for device in ("cpu", "cuda"):
        x = ember.tensor(a).to(device).requires_grad_()
        weight = ember.tensor(w).to(device).requires_grad_()
        if device == "cpu":
            out = F.layer_norm(x, (5,), weight, None)
        else:
            out = fused_ops.layer_norm(x, (5,), weight, None, 1e-5)[0]
        gx, gw = ember.autograd.grad(out.pow(3).sum(), (x, weight), create_graph=True)
        (gx.pow(2).sum() + gw.sum()).backward()
        results.append((x.grad.cpu().numpy(), weight.grad.cpu().numpy()))
    for got, want in zip(results[1], results[0]):
        np.testing.assert_allclose(got, want, rtol=1e-8, atol=1e-10)


def test_layer_norm_leaves_cpu_and_half_tensors_alone(cuda_device):
    assert fused_ops.layer_norm(ember.randn(2, 3), (3,), None, None, 1e-5) is None
    x = ember.randn(2, 3, device="cuda").half()
    assert fused_ops.layer_norm(x, (3,), None, None, 1e-5) is None


@pytest.mark.parametrize(
    "cls,options",
    [
        ("Adam", {}),
        ("Adam", {"amsgrad": True, "weight_decay": 0.1, "maximize": True}),
        ("AdamW", {"weight_decay": 0.05}),
    ],
)
def test_adam_step_matches_cpu(cuda_device, monkeypatch, cls, options):
    opt_cls = getattr(ember.optim, cls)
    original_fused = fused_ops.adam_step
    calls = []

    def counted(p, *args):
        done = original_fused(p, *args)
        if done:
            calls.append(p)
        return done

    monkeypatch.setattr(fused_ops, "adam_step", counted)  # Adam.step calls it for CUDA params
    start = rng.normal(size=(3, 4))
    grads = [rng.normal(size=start.shape) for _ in range(3)]
    params = {}
    for device in ("cpu", "cuda"):
        p = ember.nn.Parameter(ember.tensor(start).to(device))
        opt = opt_cls([p], lr=0.01, **options)
        for g in grads:
            p.grad = ember.tensor(g).to(device)
            opt.step()
        params[device] = (p, opt.state[p])
    assert len(calls) == 3
    (p_cpu, s_cpu), (p_gpu, s_gpu) = params["cpu"], params["cuda"]
    np.testing.assert_allclose(p_gpu.detach().cpu().numpy(), p_cpu.detach().numpy(), rtol=1e-12)
    for key in s_cpu:
        if key != "step":
            np.testing.assert_allclose(s_gpu[key].cpu().numpy(), s_cpu[key].numpy(), rtol=1e-12)


def test_adam_step_leaves_cpu_and_differentiable_steps_alone(cuda_device):
    p = ember.nn.Parameter(ember.randn(3))
    state = {"step": ember.tensor(1.0), "exp_avg": ember.zeros(3), "exp_avg_sq": ember.zeros(3)}
    group = {"amsgrad": False, "betas": (0.9, 0.999), "eps": 1e-8, "weight_decay": 0.0,
             "maximize": False, "differentiable": False}  # fmt: skip
    assert fused_ops.adam_step(p, ember.ones(3), state, group, 0.1) is False
    gpu_state = {k: v.cuda() for k, v in state.items()}
    gp = ember.nn.Parameter(ember.randn(3, device="cuda"))
    assert fused_ops.adam_step(gp, ember.ones(3, device="cuda"), gpu_state, group, 0.1) is True
    assert (
        fused_ops.adam_step(
            gp, ember.ones(3, device="cuda"), gpu_state, {**group, "differentiable": True}, 0.1
        )
        is False
    )
