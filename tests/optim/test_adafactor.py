"""optim.adafactor: torch's constructor checks."""

import pytest

import ember


def test_tensor_lr_must_have_one_element_as_torch(torch_mod):
    messages = []
    for m in (ember, torch_mod):
        with pytest.raises(ValueError) as info:
            m.optim.Adafactor([m.nn.Parameter(m.zeros(2, 2))], lr=m.tensor([0.1, 0.1]))
        messages.append(str(info.value))
    assert messages[0] == messages[1] == "Tensor lr must be 1-element"
