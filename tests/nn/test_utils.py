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
