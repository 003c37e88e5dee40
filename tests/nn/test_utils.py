import numpy as np
import pytest

import ember


def _model_grads(m, scale=1.0):
    rng = np.random.default_rng(0)
    lin = m.nn.Linear(4, 3).double()
    with m.no_grad():
        lin.weight.copy_(m.tensor(rng.standard_normal((3, 4))))
        lin.bias.copy_(m.tensor(rng.standard_normal(3)))
    (lin(m.tensor(rng.standard_normal((5, 4)))) ** 2).sum().mul(scale).backward()
    return lin


@pytest.mark.parametrize("norm_type", [2.0, 1.0, float("inf"), 3.0])
def test_clip_grad_norm_matches_torch(norm_type, torch_mod):
    e, t = _model_grads(ember), _model_grads(torch_mod)
    total_e = ember.nn.utils.clip_grad_norm_(e.parameters(), 0.5, norm_type)
    total_t = torch_mod.nn.utils.clip_grad_norm_(t.parameters(), 0.5, norm_type)
    assert total_e.item() == pytest.approx(total_t.item(), rel=1e-12)
    for pe, pt in zip(e.parameters(), t.parameters()):
        np.testing.assert_allclose(pe.grad.numpy(), pt.grad.numpy(), rtol=1e-12)


def test_clip_grad_norm_scales_to_the_limit_and_reports_nonfinite():
    lin = _model_grads(ember)
    ember.nn.utils.clip_grad_norm_(lin.parameters(), 1.0)
    norms = [p.grad.norm().item() ** 2 for p in lin.parameters()]
    assert sum(norms) ** 0.5 == pytest.approx(1.0, rel=1e-5)
    lin.weight.grad[0, 0] = float("nan")
    with pytest.raises(RuntimeError, match="is non-finite"):
        ember.nn.utils.clip_grad_norm_(lin.parameters(), 1.0, error_if_nonfinite=True)


def test_clip_grad_value_and_parameter_vectors(torch_mod):
    e, t = _model_grads(ember), _model_grads(torch_mod)
    ember.nn.utils.clip_grad_value_(e.parameters(), 0.3)
    torch_mod.nn.utils.clip_grad_value_(t.parameters(), 0.3)
    for pe, pt in zip(e.parameters(), t.parameters()):
        np.testing.assert_allclose(pe.grad.numpy(), pt.grad.numpy())
    vec = ember.nn.utils.parameters_to_vector(e.parameters())
    assert vec.shape == (15,)
    ember.nn.utils.vector_to_parameters(vec * 0 + 1, e.parameters())
    assert e.weight.sum().item() == 12 and e.bias.sum().item() == 3


def test_clip_grads_with_norm_and_total_norm_match_torch(torch_mod):
    e, t = _model_grads(ember), _model_grads(torch_mod)
    grads_e = [p.grad for p in e.parameters()]
    grads_t = [p.grad for p in t.parameters()]
    total_e = ember.nn.utils.get_total_norm(grads_e, 3.0)
    total_t = torch_mod.nn.utils.get_total_norm(grads_t, 3.0)
    assert total_e.item() == pytest.approx(total_t.item(), rel=1e-12)
    ember.nn.utils.clip_grads_with_norm_(e.parameters(), 0.7, total_e)
    torch_mod.nn.utils.clip_grads_with_norm_(t.parameters(), 0.7, total_t)
    for pe, pt in zip(e.parameters(), t.parameters()):
        np.testing.assert_allclose(pe.grad.numpy(), pt.grad.numpy(), rtol=1e-12)
    # a limit above the norm leaves the gradients alone
    before = e.weight.grad.numpy().copy()
    ember.nn.utils.clip_grads_with_norm_(e.parameters(), 100.0, total_e)
    np.testing.assert_array_equal(e.weight.grad.numpy(), before)


def test_vector_to_parameters_rejects_non_tensors(torch_mod):
    for lib in (ember, torch_mod):
        with pytest.raises(TypeError, match="but got"):
            lib.nn.utils.vector_to_parameters([1.0, 2.0], lib.nn.Linear(1, 1).parameters())


def _fusable(m, kind):
    rng = np.random.default_rng(7)
    if kind == "conv":
        layer, bn = m.nn.Conv2d(2, 3, 3), m.nn.BatchNorm2d(3)
    elif kind == "conv_t":
        layer, bn = m.nn.ConvTranspose2d(2, 3, 3), m.nn.BatchNorm2d(3)
    else:
        layer, bn = m.nn.Linear(4, 3), m.nn.BatchNorm1d(3)
    layer, bn = layer.double(), bn.double()
    with m.no_grad():
        for p in [*layer.parameters(), *bn.parameters()]:
            p.copy_(m.tensor(rng.standard_normal(tuple(p.shape))))
        bn.running_mean.copy_(m.tensor(rng.standard_normal(3)))
        bn.running_var.copy_(m.tensor(rng.uniform(0.5, 2.0, 3)))
    return layer.eval(), bn.eval()


@pytest.mark.parametrize("kind", ["conv", "conv_t", "linear"])
def test_fuse_batchnorm_into_the_layer_before_matches_torch(kind, torch_mod):
    (le, be), (lt, bt) = _fusable(ember, kind), _fusable(torch_mod, kind)
    if kind == "linear":
        fe, ft = (
            ember.nn.utils.fuse_linear_bn_eval(le, be),
            torch_mod.nn.utils.fuse_linear_bn_eval(lt, bt),
        )
        x = np.random.default_rng(8).standard_normal((5, 4))
    else:
        transpose = kind == "conv_t"
        fe = ember.nn.utils.fuse_conv_bn_eval(le, be, transpose=transpose)
        ft = torch_mod.nn.utils.fuse_conv_bn_eval(lt, bt, transpose=transpose)
        x = np.random.default_rng(8).standard_normal((2, 2, 5, 5))
    for pe, pt in zip(fe.parameters(), ft.parameters()):
        assert isinstance(pe, ember.nn.Parameter) and pe.requires_grad
        np.testing.assert_allclose(pe.detach().numpy(), pt.detach().numpy(), rtol=1e-12)
    fused_out = fe(ember.tensor(x)).detach().numpy()
    np.testing.assert_allclose(fused_out, be(le(ember.tensor(x))).detach().numpy(), rtol=1e-9)
    assert le.weight is not fe.weight  # the original layer is untouched
    with pytest.raises(AssertionError, match="Fusion only for eval!"):
        ember.nn.utils.fuse_linear_bn_eval(ember.nn.Linear(2, 3), ember.nn.BatchNorm1d(3))
    with pytest.raises(AssertionError, match="linear.out_features == bn.num_features"):
        ember.nn.utils.fuse_linear_bn_eval(
            ember.nn.Linear(2, 3).eval(), ember.nn.BatchNorm1d(2).eval()
        )


def test_stateless_functional_call_and_skip_init():
    lin = ember.nn.Linear(2, 1)
    weight = ember.tensor([[1.0, 2.0]])
    with pytest.warns(FutureWarning, match="deprecated as of PyTorch 2.0"):
        out = ember.nn.utils.stateless.functional_call(
            lin, {"weight": weight, "bias": ember.zeros(1)}, (ember.tensor([[3.0, 4.0]]),)
        )
    assert out.tolist() == [[11.0]]
    assert lin.weight is not weight
    m = ember.nn.utils.skip_init(ember.nn.Linear, 6, 3, bias=False)
    assert isinstance(m, ember.nn.Linear) and m.weight.shape == (3, 6) and m.bias is None
    with pytest.raises(RuntimeError, match="Expected a Module"):
        ember.nn.utils.skip_init(int)


def test_memory_format_conversion_keeps_the_module():
    conv = ember.nn.Conv2d(2, 3, 3)
    before = conv.weight.detach().numpy().copy()
    assert ember.nn.utils.convert_conv2d_weight_memory_format(conv, "channels_last") is conv
    assert ember.nn.utils.convert_conv3d_weight_memory_format(conv, "channels_last") is conv
    np.testing.assert_array_equal(conv.weight.detach().numpy(), before)
