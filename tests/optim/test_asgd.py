"""optim.asgd: the foreach path's step size rounds as torch's does."""

import numpy as np
import pytest

import ember


@pytest.mark.parametrize("foreach", [False, True])
def test_eta_and_params_follow_torch_bit_for_bit(torch_mod, foreach):
    # torch's foreach ASGD computes eta in float32 tensor arithmetic, its loop in Python floats
    runs = []
    for m in (ember, torch_mod):
        param = m.nn.Parameter(m.tensor([1.0, -2.0, 0.5], dtype=m.float64))
        opt = m.optim.ASGD([param], lr=0.02, foreach=foreach)
        etas = []
        for _ in range(6):
            opt.zero_grad()
            (param.sin() * 3).sum().backward()
            opt.step()
            etas.append(opt.state[param]["eta"].item())
        runs.append((etas, param.detach().numpy()))
    assert runs[0][0] == runs[1][0]
    np.testing.assert_allclose(runs[0][1], runs[1][1], rtol=1e-13)
