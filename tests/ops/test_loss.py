"""ops.loss.nll_loss: one node, checked by gradcheck (first and second order) and against torch."""

import numpy as np
import pytest

import ember
from ember.autograd import gradcheck, gradgradcheck
from ember.nn.functional import nll_loss

CASES = {
    "mean": dict(),
    "sum": dict(reduction="sum"),
    "none": dict(reduction="none"),
    "weight": dict(weight=[0.5, 2.0, 1.0, 3.0]),
    "ignore": dict(ignore=True),
    "weight_ignore_none": dict(weight=[0.5, 2.0, 1.0, 3.0], ignore=True, reduction="none"),
}


def _args(m, case, shape=(5, 4)):
    rng = np.random.default_rng(0)
    x = m.tensor(rng.standard_normal(shape), dtype=m.float64, requires_grad=True)
    target = rng.integers(0, shape[1], (shape[0],) + shape[2:])
    if case.get("ignore"):
        target.reshape(-1)[1] = -100
    kwargs = {"reduction": case.get("reduction", "mean")}
    if "weight" in case:
        kwargs["weight"] = m.tensor(case["weight"], dtype=m.float64)
    return x, m.tensor(target), kwargs


@pytest.mark.parametrize("name", sorted(CASES))
def test_nll_loss_gradcheck_first_and_second_order(name):
    x, target, kwargs = _args(ember, CASES[name])
    fn = lambda inp: nll_loss(inp, target, **kwargs)
    assert gradcheck(fn, (x,))
    assert gradgradcheck(fn, (x,))


def test_nll_loss_is_one_node_and_k_dimensional_inputs_work():
    x, target, kwargs = _args(ember, {}, shape=(2, 3, 4, 5))
    loss = nll_loss(x, target, **kwargs)
    assert loss.grad_fn.name() == "NllLoss2DBackward0"  # PyTorch's name for K-dim inputs
    assert gradcheck(lambda inp: nll_loss(inp, target), (x,))


def test_non_contiguous_and_single_sample_inputs():
    x = ember.randn(4, 6, dtype=ember.float64, requires_grad=True)
    target = ember.tensor([0, 2, 1, 3, 0, 1])
    assert gradcheck(lambda inp: nll_loss(inp.t(), target), (x,))
    single = ember.randn(5, dtype=ember.float64, requires_grad=True)
    assert gradcheck(lambda inp: nll_loss(inp, ember.tensor(3)), (single,))


@pytest.mark.parametrize("name", sorted(CASES))
def test_nll_loss_matches_torch(name, torch_mod):
    ours = _args(ember, CASES[name])
    theirs = _args(torch_mod, CASES[name])
    a = nll_loss(ours[0], ours[1], **ours[2])
    b = torch_mod.nn.functional.nll_loss(theirs[0], theirs[1], **theirs[2])
    np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy(), rtol=1e-12)
    a.sum().backward()
    b.sum().backward()
    np.testing.assert_allclose(ours[0].grad.numpy(), theirs[0].grad.numpy(), rtol=1e-12)


def test_bad_targets_raise_clear_errors():
    x = ember.randn(3, 4)
    with pytest.raises(IndexError, match="Target 4 is out of bounds"):
        nll_loss(x, ember.tensor([0, 4, 1]))
    with pytest.raises(ValueError, match="Expected input batch_size \\(3\\) to match target"):
        nll_loss(x, ember.tensor([0, 1]))
    with pytest.raises(RuntimeError, match="to be Long or Byte, but got Float"):
        nll_loss(x, ember.tensor([0.0, 1.0, 2.0]))
    with pytest.raises(RuntimeError, match="to be Long or Byte, but got Int"):
        nll_loss(x, ember.tensor([0, 1, 2], dtype=ember.int32))


def test_all_ignored_targets_give_zero_gradient_as_torch(torch_mod):
    # the mean is 0/0 = nan, but torch's gradient of an ignored target is 0, not nan
    grads = []
    for m in (ember, torch_mod):
        x = m.tensor([[0.1, 0.2, 0.3], [1.0, 2.0, 3.0]], dtype=m.float64, requires_grad=True)
        loss = m.nn.functional.nll_loss(x, m.tensor([1, 1]), ignore_index=1)
        assert np.isnan(loss.item())
        (grad,) = m.autograd.grad(loss, x, m.tensor(0.7, dtype=m.float64))
        grads.append(grad.numpy())
    np.testing.assert_array_equal(grads[0], grads[1])
    np.testing.assert_array_equal(grads[0], np.zeros((2, 3)))


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_half_precision_sum_accumulates_in_float32(dtype):
    # 4000 terms of about 1.5: summed in the half type itself the total drifts by whole units
    rng = np.random.default_rng(0)
    values = rng.uniform(1.0, 2.0, (4000, 1))
    x = ember.tensor(-values, dtype=ember.float32).to(getattr(ember, dtype))
    exact = -x.double().sum().item()
    target = ember.zeros(4000, dtype=ember.int64)
    total = nll_loss(x, target, reduction="sum")
    assert total.dtype == getattr(ember, dtype)
    assert abs(total.item() - exact) <= 2 * abs(exact) * 2.0 ** (-11 if dtype == "float16" else -8)


@pytest.mark.parametrize(
    "input_shape, target_shape",
    [
        ((2, 3, 5), (2, 4)),
        ((2, 3, 5), (2,)),
        ((2, 3), (2, 4)),
        ((2, 3), (3,)),
        ((2, 3, 5, 6), (2, 5)),
        ((2, 3, 5, 6), (2, 5, 7)),
        ((2, 3, 5, 6, 2), (2, 5)),
        ((3,), (2,)),
        ((2, 3), ()),
    ],
)
def test_target_shape_errors_as_torch(torch_mod, input_shape, target_shape):
    errors = []
    for m in (ember, torch_mod):
        x, target = m.zeros(input_shape), m.zeros(target_shape, dtype=m.int64)
        with pytest.raises((RuntimeError, ValueError)) as info:
            m.nn.functional.nll_loss(x, target)
        errors.append((type(info.value), str(info.value)))
    assert errors[0] == errors[1]
