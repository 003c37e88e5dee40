"""optim.adam: torch's checks of tensor hyperparameters (lr, betas)."""

import pytest

import ember


def _tensor_cases(m):
    t = m.tensor
    return [
        dict(lr=t(1e-3), foreach=True),
        dict(lr=t([1e-3, 1e-3])),
        dict(betas=(0.9, t(0.99))),
        dict(betas=(t(0.9), 0.99)),
        dict(betas=(t(0.9), t(0.99)), foreach=True),
        dict(betas=(t([0.9, 0.9]), t(0.99))),  # torch's range check fails first
        dict(betas=(0, 0.99)),  # an int is not a float: torch refuses it too
    ]


@pytest.mark.parametrize("name", ["Adam", "AdamW"])
@pytest.mark.parametrize("case", range(7))
def test_tensor_hyperparameters_are_refused_as_torch(torch_mod, name, case):
    messages = []
    for m in (ember, torch_mod):
        param = m.nn.Parameter(m.zeros(2))
        with pytest.raises((ValueError, RuntimeError)) as info:
            getattr(m.optim, name)([param], **_tensor_cases(m)[case])
        messages.append((type(info.value), str(info.value)))
    assert messages[0] == messages[1]


def test_tensor_betas_are_stored_0d_as_torch(torch_mod):
    shapes = []
    for m in (ember, torch_mod):
        param = m.nn.Parameter(m.zeros(2))
        opt = m.optim.Adam([param], betas=(m.tensor([0.9]), m.tensor([0.99])))
        shapes.append([tuple(b.shape) for b in opt.param_groups[0]["betas"]])
    assert shapes[0] == shapes[1] == [(), ()]
