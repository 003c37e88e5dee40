"""ops.pooling_2d: errors as torch raises them."""

import pytest

import ember


@pytest.mark.parametrize("shape", [(4, 4), (1, 1, 1, 4, 4)])
@pytest.mark.parametrize("return_indices", [False, True])
def test_max_pool2d_refuses_other_ranks_as_torch(torch_mod, shape, return_indices):
    messages = []
    for m in (ember, torch_mod):
        with pytest.raises(RuntimeError) as info:
            m.nn.functional.max_pool2d(m.zeros(shape), 2, return_indices=return_indices)
        messages.append(str(info.value))
    assert messages[0] == messages[1]
