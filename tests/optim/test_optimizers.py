import numpy as np
import pytest

import ember

OPTIMIZERS = {
    "sgd": ("SGD", dict(lr=0.1)),
    "sgd_momentum": ("SGD", dict(lr=0.05, momentum=0.9, dampening=0.1, weight_decay=0.01)),
    "sgd_nesterov": ("SGD", dict(lr=0.05, momentum=0.9, nesterov=True, maximize=True)),
    "adam": ("Adam", dict(lr=0.01)),
    "adam_wd_amsgrad": ("Adam", dict(lr=0.01, betas=(0.8, 0.99), weight_decay=0.1, amsgrad=True)),
    "adamw": ("AdamW", dict(lr=0.01, weight_decay=0.05)),
    "adamw_amsgrad": ("AdamW", dict(lr=0.02, amsgrad=True, maximize=True)),
    "rmsprop": ("RMSprop", dict(lr=0.01)),
    "rmsprop_centered": ("RMSprop", dict(lr=0.01, momentum=0.5, centered=True, weight_decay=0.01)),
    "adagrad": (
        "Adagrad",
        dict(lr=0.1, lr_decay=0.01, weight_decay=0.01, initial_accumulator_value=0.1),
    ),
}


def _train(m, name, kwargs, steps=8):
    rng = np.random.default_rng(0)
    w = m.tensor(rng.standard_normal((3, 4)), requires_grad=True)
    b = m.tensor(rng.standard_normal(3), requires_grad=True)
    x = m.tensor(rng.standard_normal((5, 4)))
    opt = getattr(m.optim, name)([{"params": [w]}, {"params": [b], "lr": 0.03}], **kwargs)
    for _ in range(steps):
        opt.zero_grad()
        loss = ((x @ w.T + b).tanh() ** 2).sum()
        loss.backward()
        opt.step()
    return w.detach().numpy().copy(), b.detach().numpy().copy(), opt


@pytest.mark.parametrize("case", sorted(OPTIMIZERS))
def test_parameters_after_steps_equal_torch(case, torch_mod):
    name, kwargs = OPTIMIZERS[case]
    we, be, _ = _train(ember, name, kwargs)
    wt, bt, _ = _train(torch_mod, name, kwargs)
    np.testing.assert_allclose(we, wt, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(be, bt, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("case", sorted(OPTIMIZERS))
def test_optimizer_reduces_the_loss(case):
    name, kwargs = OPTIMIZERS[case]
    if kwargs.get("maximize"):
        return
    w0, _, _ = _train(ember, name, kwargs, steps=0)
    w, b, _ = _train(ember, name, kwargs, steps=20)
    assert not np.allclose(w, w0)


def test_state_dict_round_trip_continues_identically():
    _, _, opt = _train(ember, "Adam", dict(lr=0.01), steps=3)
    sd = opt.state_dict()
    assert sorted(sd["state"]) == [0, 1] and sd["param_groups"][1]["params"] == [1]
    assert sd["param_groups"][1]["lr"] == 0.03
    params = [p for g in opt.param_groups for p in g["params"]]
    fresh = ember.optim.Adam([{"params": [params[0]]}, {"params": [params[1]]}], lr=0.5)
    fresh.load_state_dict(sd)
    assert fresh.param_groups[1]["lr"] == 0.03
    assert fresh.state[params[0]]["step"].item() == 3


def test_optimizer_errors():
    with pytest.raises(ValueError, match="optimizer got an empty parameter list"):
        ember.optim.SGD([], lr=0.1)
    with pytest.raises(ValueError, match="Invalid learning rate"):
        ember.optim.Adam([ember.ones(1, requires_grad=True)], lr=-1)
    with pytest.raises(ValueError, match="can't optimize a non-leaf Tensor"):
        ember.optim.SGD([ember.ones(1, requires_grad=True) * 2], lr=0.1)
    p = ember.ones(1, requires_grad=True)
    with pytest.raises(ValueError, match="more than one parameter group"):
        ember.optim.SGD([{"params": [p]}, {"params": [p]}], lr=0.1)


def test_zero_grad_set_to_none_and_zeroing():
    p = ember.ones(2, requires_grad=True)
    opt = ember.optim.SGD([p], lr=0.1)
    (p * 2).sum().backward()
    opt.zero_grad(set_to_none=False)
    assert p.grad.tolist() == [0.0, 0.0]
    opt.zero_grad()
    assert p.grad is None
