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
