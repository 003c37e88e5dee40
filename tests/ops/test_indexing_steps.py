"""Slices step forward only, as in PyTorch (which has no negative strides; flip reverses)."""

import pytest

import ember

STEP = "step must be greater than zero"

READS = {
    "x[::-1]": lambda m, x, g: x[::-1],
    "x[::-2]": lambda m, x, g: x[::-2],
    "x[5:1:-1]": lambda m, x, g: x[5:1:-1],
    "x[..., ::-1]": lambda m, x, g: x[..., ::-1],
    "x[None, ::-1]": lambda m, x, g: x[None, ::-1],
    "grid[:, ::-1]": lambda m, x, g: g[:, ::-1],
    "grid[tensor, ::-1]": lambda m, x, g: g[m.tensor([0, 1]), ::-1],
    "x[::tensor(-1)]": lambda m, x, g: x[:: m.tensor(-1)],
}


def _operands(m):
    return m.arange(6.0), m.arange(12.0).reshape(3, 4)


@pytest.mark.parametrize("case", list(READS))
def test_negative_step_raises(case):
    x, grid = _operands(ember)
    with pytest.raises(ValueError, match=STEP):
        READS[case](ember, x, grid)


@pytest.mark.parametrize("case", list(READS))
def test_negative_step_raises_as_torch(case, torch_mod):
    x, grid = _operands(torch_mod)
    with pytest.raises(ValueError, match=STEP):
        READS[case](torch_mod, x, grid)


def _assign_reversed(x):
    x[::-1] = 0


def _add_into_reversed(x):
    x[::-1] += 1


@pytest.mark.parametrize("write", [_assign_reversed, _add_into_reversed])
def test_negative_step_in_an_assignment_raises(write, torch_mod):
    for m in (ember, torch_mod):
        x = m.arange(6.0)
        with pytest.raises(ValueError, match=STEP):
            write(x)
        assert x.tolist() == [0.0, 1.0, 2.0, 3.0, 4.0, 5.0]  # nothing was written


def test_negative_step_in_an_advanced_assignment_raises():
    x = ember.arange(12.0).reshape(3, 4)
    with pytest.raises(ValueError, match=STEP):
        x[ember.tensor([0]), ::-1] = 1.0


def test_zero_step_raises_pythons_error():
    with pytest.raises(ValueError, match="slice step cannot be zero"):
        ember.arange(6.0)[::0]


def test_positive_steps_still_index():
    x = ember.arange(6.0)
    assert x[::2].tolist() == [0.0, 2.0, 4.0]
    assert x[4:0:1].tolist() == []
    assert ember.arange(12.0).reshape(3, 4)[1, ::3].tolist() == [4.0, 7.0]
    assert x.flip(0).tolist() == [5.0, 4.0, 3.0, 2.0, 1.0, 0.0]
