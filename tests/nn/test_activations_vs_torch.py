"""Activations of ember.nn.functional and ember.nn against PyTorch: values, gradients, dtypes,
grad_fn names, in-place forms, module defaults and errors; float64 gradcheck/gradgradcheck."""

import numpy as np
import pytest

import ember
from tests.helpers import arrays_for, check_gradients, compare_with_torch

# values near the kinks (0, ±0.5 shrink, ±3 hard*, 0.1 threshold) moved off for gradcheck
X = arrays_for([(3, 4)], -4, 4, avoid=(0, 0.5, -0.5, 3, -3, 0.1, 1, -1, 6), gap=0.05)[0]

# name -> (fn(module, x), torch's grad_fn name)
ACTIVATIONS = {
    "hardswish": (lambda m, x: m.nn.functional.hardswish(x), "HardswishBackward0"),
    "hardsigmoid": (lambda m, x: m.nn.functional.hardsigmoid(x), "HardsigmoidBackward0"),
    "selu": (lambda m, x: m.nn.functional.selu(x), "EluBackward0"),
    "celu": (lambda m, x: m.nn.functional.celu(x, 0.7), "CeluBackward0"),
    "elu": (lambda m, x: m.nn.functional.elu(x, 1.3), "EluBackward0"),
    "rrelu_eval": (lambda m, x: m.nn.functional.rrelu(x), "RreluWithNoiseBackward0"),
    "softshrink": (lambda m, x: m.nn.functional.softshrink(x), "SoftshrinkBackward0"),
    "hardshrink": (lambda m, x: m.nn.functional.hardshrink(x, 1.0), "HardshrinkBackward0"),
    "tanhshrink": (lambda m, x: m.nn.functional.tanhshrink(x), "SubBackward0"),
    "threshold": (lambda m, x: m.nn.functional.threshold(x, 0.1, -2.0), "ThresholdBackward0"),
    "logsigmoid": (lambda m, x: m.nn.functional.logsigmoid(x), "LogSigmoidBackward0"),
    "softmin": (lambda m, x: m.nn.functional.softmin(x, 1), "SoftmaxBackward0"),
    "glu": (lambda m, x: m.nn.functional.glu(x, 1), "GluBackward0"),
    "glu0": (lambda m, x: m.nn.functional.glu(x[:2], 0), "GluBackward0"),
    "mish": (lambda m, x: m.nn.functional.mish(x), "MishBackward0"),
    "silu": (lambda m, x: m.nn.functional.silu(x), "SiluBackward0"),
    "relu6": (lambda m, x: m.nn.functional.relu6(x * 2), "HardtanhBackward0"),
    "hardtanh": (lambda m, x: m.nn.functional.hardtanh(x, -1.0, 3.0), "HardtanhBackward0"),
    "softplus": (lambda m, x: m.nn.functional.softplus(x, 2.0, 3.0), "SoftplusBackward0"),
    "softsign": (lambda m, x: m.nn.functional.softsign(x), "DivBackward0"),
    "leaky_relu": (lambda m, x: m.nn.functional.leaky_relu(x, 0.2), "LeakyReluBackward0"),
    "gelu": (lambda m, x: m.nn.functional.gelu(x), "GeluBackward0"),
    "gelu_tanh": (lambda m, x: m.nn.functional.gelu(x, approximate="tanh"), "GeluBackward0"),
    "sigmoid": (lambda m, x: m.nn.functional.sigmoid(x), "SigmoidBackward0"),
    "tanh": (lambda m, x: m.nn.functional.tanh(x), "TanhBackward0"),
    "relu": (lambda m, x: m.nn.functional.relu(x), "ReluBackward0"),
    "prelu": (
        lambda m, x, w: m.nn.functional.prelu(x, w),
        "PreluKernelBackward0",
    ),
}


def _inputs(name):
    if name == "prelu":
        return [X, np.array([0.1, -0.2, 0.3, 0.25])]
    return [X]


@pytest.mark.parametrize("name", sorted(ACTIVATIONS))
def test_activation_gradcheck_and_gradgradcheck(name):
    fn, _ = ACTIVATIONS[name]
    check_gradients(fn, _inputs(name))


@pytest.mark.parametrize("name", sorted(ACTIVATIONS))
def test_activation_matches_torch_with_grad_fn_name(name, torch_mod):
    fn, node = ACTIVATIONS[name]
    compare_with_torch(fn, _inputs(name))
    compare_with_torch(fn, _inputs(name), dtype=np.float32, atol=1e-5, rtol=1e-5)
    out = fn(ember, *[ember.tensor(a, requires_grad=True) for a in _inputs(name)])
    assert out.grad_fn.name() == node
    ref = fn(torch_mod, *[torch_mod.tensor(a, requires_grad=True) for a in _inputs(name)])
    assert ref.grad_fn.name() == node


@pytest.mark.parametrize("name", ["hardswish", "selu", "mish", "softplus", "gelu", "prelu"])
def test_activation_on_non_contiguous_and_empty_inputs(name):
    fn, _ = ACTIVATIONS[name]
    check_gradients(fn, _inputs(name), noncontiguous=True)
    empty = [np.zeros((0, 4))] + _inputs(name)[1:]
    out = fn(ember, *[ember.tensor(a, requires_grad=True) for a in empty])
    assert tuple(out.shape) == (0, 4)


INPLACE = {
    "relu_": lambda F, x: F.relu_(x),
    "elu_": lambda F, x: F.elu_(x, 0.5),
    "leaky_relu_": lambda F, x: F.leaky_relu_(x, 0.3),
    "hardtanh_": lambda F, x: F.hardtanh_(x, -0.5, 0.5),
    "threshold_": lambda F, x: F.threshold_(x, 0.1, 5.0),
    "selu_": lambda F, x: F.selu_(x),
    "celu_": lambda F, x: F.celu_(x, 2.0),
    "rrelu_": lambda F, x: F.rrelu_(x),
    "hardswish": lambda F, x: F.hardswish(x, inplace=True),
    "silu": lambda F, x: F.silu(x, inplace=True),
    "mish": lambda F, x: F.mish(x, inplace=True),
    "relu6": lambda F, x: F.relu6(x, inplace=True),
}


@pytest.mark.parametrize("name", sorted(INPLACE))
def test_inplace_forms_write_into_input_and_backpropagate(name, torch_mod):
    fn = INPLACE[name]
    grads = []
    for m in (ember, torch_mod):
        leaf = m.tensor(X, requires_grad=True)
        x = leaf * 1.0
        out = fn(m.nn.functional, x)
        assert out is x
        (out * m.tensor(X)).sum().backward()
        grads.append((x.detach().numpy(), leaf.grad.numpy()))
    np.testing.assert_allclose(grads[0][0], grads[1][0], rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(grads[0][1], grads[1][1], rtol=1e-12, atol=1e-12)


def test_rrelu_training_draws_slopes_between_bounds():
    x = ember.tensor(-np.ones(2000), requires_grad=True)
    out = ember.nn.functional.rrelu(x, 0.1, 0.3, training=True)
    slopes = -out.detach().numpy()
    assert 0.1 <= slopes.min() and slopes.max() <= 0.3 and slopes.std() > 0.03
    out.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), slopes)
    positive = ember.nn.functional.rrelu(ember.ones(5), training=True)
    np.testing.assert_array_equal(positive.numpy(), np.ones(5))


MODULES = {
    "Hardswish": (), "Hardsigmoid": (), "SELU": (), "CELU": (0.5,), "Softshrink": (0.3,),
    "Hardshrink": (), "Tanhshrink": (), "Threshold": (0.1, 20.0), "LogSigmoid": (),
    "Softmin": (1,), "GLU": (), "Mish": (), "SiLU": (), "ELU": (), "ReLU6": (),
    "PReLU": (4,), "Softplus": (), "Softsign": (), "LeakyReLU": (), "Hardtanh": (),
    "GELU": (), "ReLU": (), "Sigmoid": (), "Tanh": (), "Softmax": (1,), "LogSoftmax": (1,),
}  # fmt: skip


@pytest.mark.parametrize("name", sorted(MODULES))
def test_module_matches_torch_and_repr(name, torch_mod):
    ours = getattr(ember.nn, name)(*MODULES[name])
    theirs = getattr(torch_mod.nn, name)(*MODULES[name])
    assert repr(ours) == repr(theirs)
    a = ours(ember.tensor(X.astype(np.float32)))
    b = theirs(torch_mod.tensor(X.astype(np.float32)))
    np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy(), rtol=1e-5, atol=1e-6)


def test_rrelu_module_is_deterministic_in_eval_and_softmax2d_uses_channels(torch_mod):
    layer = ember.nn.RReLU().eval()
    ref = torch_mod.nn.RReLU().eval()
    np.testing.assert_allclose(
        layer(ember.tensor(X)).numpy(), ref(torch_mod.tensor(X)).numpy(), rtol=1e-12
    )
    x = arrays_for([(2, 3, 2, 2)])[0]
    for shaped in (x, x[0]):
        np.testing.assert_allclose(
            ember.nn.Softmax2d()(ember.tensor(shaped)).numpy(),
            torch_mod.nn.Softmax2d()(torch_mod.tensor(shaped)).numpy(),
            rtol=1e-12,
        )
    with pytest.raises(ValueError, match="expected input to be 3D or 4D, got 2D"):
        ember.nn.Softmax2d()(ember.tensor(X))


def test_inplace_module_flags_and_reprs(torch_mod):
    flagged = [("ReLU", ()), ("ELU", (0.5,)), ("Hardtanh", (-2.0, 2.0)), ("SELU", ())]
    flagged += [("Hardswish", ()), ("Hardsigmoid", ()), ("CELU", (2.0,)), ("Threshold", (0.1, 2.0))]
    flagged += [("Mish", ()), ("SiLU", ()), ("ReLU6", ()), ("LeakyReLU", (0.2,)), ("RReLU", ())]
    for name, args in flagged:
        ours = getattr(ember.nn, name)(*args, inplace=True)
        theirs = getattr(torch_mod.nn, name)(*args, inplace=True)
        assert repr(ours) == repr(theirs)
        x = ember.tensor(X.copy())
        assert ours(x) is x


def test_softmax_without_dim_warns_like_torch(torch_mod):
    F = ember.nn.functional
    for fn in (F.softmax, F.log_softmax, F.softmin):
        with pytest.warns(UserWarning, match="Implicit dimension choice for .* has been deprec"):
            out = fn(ember.tensor(X))
        with pytest.warns(UserWarning):
            ref = getattr(torch_mod.nn.functional, fn.__name__)(torch_mod.tensor(X))
        np.testing.assert_allclose(out.numpy(), ref.numpy(), rtol=1e-12)


def test_hardtanh_family_clamps_integer_tensors_like_torch():
    x = ember.tensor([1, -1, 7])
    assert ember.nn.functional.relu6(x).tolist() == [1, 0, 6]
    out = ember.nn.functional.hardtanh(x)
    assert out.dtype == ember.int64 and out.tolist() == [1, -1, 1]


def test_bad_arguments_raise_torch_errors():
    F = ember.nn.functional
    with pytest.raises(RuntimeError, match="Halving dimension must be even, but dimension 1"):
        F.glu(ember.randn(2, 5), 1)
    with pytest.raises(NotImplementedError, match="not implemented for 'Long'"):
        F.elu(ember.tensor([1, 2]))
    with pytest.raises(RuntimeError, match="alpha cannot be 0 for CELU"):
        F.celu(ember.randn(3), alpha=0.0)
    with pytest.raises(RuntimeError, match="lambda must be in range"):
        F.softshrink(ember.randn(3), -1.0)
    with pytest.raises(RuntimeError, match="Found parameter numbers = 3 and channel size = 5"):
        F.prelu(ember.randn(2, 5), ember.ones(3))
    with pytest.raises(ValueError, match="min_val cannot be greater than max_val"):
        F.hardtanh(ember.randn(3), 1.0, -1.0)
    with pytest.raises(RuntimeError, match="approximate argument must be either none or tanh"):
        F.gelu(ember.randn(3), approximate="fast")


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_half_precision_activations_keep_dtype_and_match_torch(dtype, torch_mod):
    x = np.linspace(-4, 4, 8).reshape(2, 4)
    for name in ["hardswish", "selu", "gelu", "softplus", "mish", "leaky_relu", "glu"]:
        fn, _ = ACTIVATIONS[name]
        e_x = ember.tensor(x).to(getattr(ember, dtype)).requires_grad_()
        t_x = torch_mod.tensor(x).to(getattr(torch_mod, dtype)).requires_grad_()
        e_out, t_out = fn(ember, e_x), fn(torch_mod, t_x)
        e_out.backward(ember.ones_like(e_out))
        t_out.backward(torch_mod.ones_like(t_out))
        assert e_out.dtype.name == dtype and e_x.grad.dtype.name == dtype
        for a, b in ((e_out.detach(), t_out.detach()), (e_x.grad, t_x.grad)):
            np.testing.assert_allclose(a.float().numpy(), b.float().numpy(), rtol=3e-2, atol=3e-2)
