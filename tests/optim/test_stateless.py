"""swap_in_optimizer_params_and_state against PyTorch's: the swapped-in copies step, the
live parameters, state and options come back untouched."""

import copy

import numpy as np
import pytest

import ember


def _setup(m):
    w = m.tensor([[1.0, -2.0], [0.5, 3.0]], dtype=m.float64, requires_grad=True)
    b = m.tensor([0.25, -0.75], dtype=m.float64, requires_grad=True)
    opt = m.optim.Adam([{"params": [w]}, {"params": [b], "lr": 0.5}], lr=0.1)
    for _ in range(2):
        opt.zero_grad()
        ((w**2).sum() + (b**3).sum()).backward()
        opt.step()
    return w, b, opt


def test_stepping_swapped_in_copies_matches_torch_and_restores_the_live_optimizer(torch_mod):
    results = []
    for m in (ember, torch_mod):
        w, b, opt = _setup(m)
        live = (w.detach().numpy().copy(), opt.state[w]["exp_avg"].numpy().copy())
        groups_before = [dict(g) for g in opt.param_groups]
        copies = {"w": w.detach().clone(), "b": b.detach().clone()}
        copies["w"].grad = m.ones(2, 2, dtype=m.float64)
        copies["b"].grad = m.ones(2, dtype=m.float64)
        state = copy.deepcopy(opt.state_dict())
        state["param_groups"][1]["lr"] = 0.01
        with m.optim.swap_in_optimizer_params_and_state(opt, copies, state):
            assert opt.param_groups[1]["lr"] == 0.01
            opt.step()
        assert opt.param_groups[1]["lr"] == 0.5
        assert [g["params"] for g in opt.param_groups] == [g["params"] for g in groups_before]
        np.testing.assert_array_equal(w.detach().numpy(), live[0])
        np.testing.assert_array_equal(opt.state[w]["exp_avg"].numpy(), live[1])
        results.append(
            (
                copies["w"].numpy(),
                copies["b"].numpy(),
                state["state"][0]["exp_avg"].numpy(),  # updated in place through the block
                float(state["state"][1]["step"]),
            )
        )
    for e, t in zip(*results):
        np.testing.assert_allclose(e, t, rtol=1e-12)
    assert results[0][3] == 3.0


def test_swap_in_checks_as_torch(torch_mod):
    for m in (ember, torch_mod):
        p = m.ones(2, requires_grad=True)
        fresh = m.optim.SGD([p], lr=0.1, momentum=0.9)
        with pytest.raises(RuntimeError, match="requires initialized optimizer state"):
            with m.optim.swap_in_optimizer_params_and_state(fresh, {}, fresh.state_dict()):
                pass
        p.grad = m.ones(2)
        fresh.step()
        sd = fresh.state_dict()
        bad = {"state": sd["state"], "param_groups": sd["param_groups"] * 2}
        with pytest.raises(RuntimeError, match="different number of parameter groups"):
            with m.optim.swap_in_optimizer_params_and_state(fresh, {"p": p}, bad):
                pass
        extra = {"state": {**sd["state"], 5: {}}, "param_groups": sd["param_groups"]}
        with pytest.raises(RuntimeError, match="got extra keys \\[5\\]"):
            with m.optim.swap_in_optimizer_params_and_state(fresh, {"p": p}, extra):
                pass
        group = dict(sd["param_groups"][0], surprise=1)
        with pytest.raises(RuntimeError, match="Keys only in swap-in: \\['surprise'\\]"):
            with m.optim.swap_in_optimizer_params_and_state(
                fresh, {"p": p}, {"state": sd["state"], "param_groups": [group]}
            ):
                pass
