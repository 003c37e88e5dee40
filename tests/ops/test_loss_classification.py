"""ops.loss_classification.cross_entropy: which target path torch takes, and its errors."""

import numpy as np
import pytest

import ember


def _case(m, name):
    x = m.tensor(np.linspace(-1, 1, 6).reshape(2, 3), dtype=m.float32)
    probabilities = m.tensor([[0.2, 0.3, 0.5], [0.1, 0.1, 0.8]])
    return {
        "integer target of the input's shape": (x, m.zeros((2, 3), dtype=m.int64), {}),
        "float target of another shape": (x, m.tensor([0.0, 1.0]), {}),
        "weight of the wrong length": (x, m.tensor([0, 1]), {"weight": m.ones(2)}),
        "ignore_index with probabilities": (x, probabilities, {"ignore_index": 1}),
        "label_smoothing above 1": (x, m.tensor([0, 1]), {"label_smoothing": 1.5}),
        "spatial target of the wrong size": (
            m.zeros((2, 3, 5)),
            m.zeros((2, 4), dtype=m.int64),
            {},
        ),
    }[name]


@pytest.mark.parametrize(
    "name",
    [
        "integer target of the input's shape",
        "float target of another shape",
        "weight of the wrong length",
        "ignore_index with probabilities",
        "label_smoothing above 1",
        "spatial target of the wrong size",
    ],
)
def test_cross_entropy_errors_as_torch(torch_mod, name):
    errors = []
    for m in (ember, torch_mod):
        x, target, kwargs = _case(m, name)
        with pytest.raises(Exception) as info:
            m.nn.functional.cross_entropy(x, target, **kwargs)
        errors.append((type(info.value).__name__, str(info.value).split(": ", 1)[-1]))
    assert errors[0] == errors[1]


def test_probability_target_with_default_ignore_index_matches_torch(torch_mod):
    values = []
    for m in (ember, torch_mod):
        x = m.tensor(np.linspace(-1, 1, 6).reshape(2, 3), dtype=m.float64)
        target = m.tensor([[0.2, 0.3, 0.5], [0.1, 0.1, 0.8]], dtype=m.float64)
        values.append(m.nn.functional.cross_entropy(x, target, label_smoothing=0.1).item())
    assert values[0] == pytest.approx(values[1], rel=1e-12)
