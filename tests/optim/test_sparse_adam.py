"""optim.sparse_adam: torch's constructor checks."""

import pytest

import ember


def _params(m, kind):
    if kind == "sparse param":
        return [m.zeros(3).to_sparse()], {}
    return [m.nn.Parameter(m.zeros(3))], {"lr": m.tensor([1e-3, 1e-3])}


@pytest.mark.parametrize("kind", ["sparse param", "tensor lr of 2 elements"])
def test_constructor_refuses_as_torch(torch_mod, kind):
    messages = []
    for m in (ember, torch_mod):
        params, kwargs = _params(m, kind)
        with pytest.raises(ValueError) as info:
            m.optim.SparseAdam(params, **kwargs)
        messages.append(str(info.value))
    assert messages[0] == messages[1]
