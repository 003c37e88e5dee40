"""MaskedTensor against torch.masked's: construction checks, repr, reductions, elementwise ops
and arithmetic, indexing and shape ops, to_tensor, and gradients through as_masked_tensor."""

import numpy as np
import pytest

import ember
from ember.masked import as_masked_tensor, masked_tensor

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")  # torch: prototype API

DATA = [[0.0, 1.0, 2.0], [3.0, 4.0, 5.0]]
MASK = [[True, False, True], [False, False, True]]


def pair(data=DATA, mask=MASK):
    e = masked_tensor(ember.tensor(data), ember.tensor(mask))
    t = torch.masked.masked_tensor(torch.tensor(data), torch.tensor(mask))
    return e, t


def same(e, t):
    assert repr(e) == repr(t)
    np.testing.assert_array_equal(e.get_mask().numpy(), t.get_mask().numpy())
    kept = t.get_mask().numpy()
    np.testing.assert_allclose(e.get_data().numpy()[kept], t.get_data().numpy()[kept], rtol=1e-6)


def test_repr_matches_torch_for_floats_ints_and_scalars():
    same(*pair())
    same(*pair([1, 2], [True, False]))
    same(*pair(3.0, True))
    same(*pair(3.0, False))


@pytest.mark.parametrize("name", ["sum", "mean", "amax", "amin", "prod"])
@pytest.mark.parametrize("dim", [None, 0, 1])
def test_reductions_are_masked_where_no_element_is_kept(name, dim):
    e, t = pair()
    args = () if dim is None else (dim,)
    same(getattr(e, name)(*args), getattr(t, name)(*args))


def test_elementwise_and_arithmetic_keep_the_mask():
    e, t = pair()
    same(e.exp(), t.exp())
    same(e + e, t + t)
    same(e * 2, t * 2)
    same(e - 2, t - 2)
    same(-e, -t)


def test_indexing_and_transpose_move_data_and_mask_together():
    e, t = pair()
    same(e[0], t[0])
    same(e.t(), t.t())
    same(e.reshape(3, 2), t.reshape(3, 2))


def test_to_tensor_and_masked_functions_read_the_mask():
    e, t = pair()
    np.testing.assert_array_equal(e.to_tensor(-1.0).numpy(), t.to_tensor(-1.0).numpy())
    np.testing.assert_allclose(ember.masked.sum(e, 1).numpy(), torch.masked.sum(t, 1).numpy())
    assert tuple(e.shape) == tuple(t.shape) and e.dim() == t.dim() and e.size(1) == t.size(1)


def test_construction_errors_match_torch():
    data = ember.tensor(DATA)
    with pytest.raises(TypeError, match="mask must have dtype bool"):
        masked_tensor(data, ember.tensor(MASK).int())
    with pytest.raises(ValueError, match="data.dim\\(\\) must equal mask.dim\\(\\)"):
        masked_tensor(data, ember.tensor(MASK[0]))
    with pytest.raises(TypeError, match="data must be a Tensor"):
        masked_tensor(DATA, ember.tensor(MASK))
    e, _ = pair()
    other = masked_tensor(data, ~ember.tensor(MASK))
    with pytest.raises(ValueError, match="Input masks must match"):
        e + other


def test_gradient_through_as_masked_tensor_reaches_the_kept_elements():
    x = ember.tensor([1.0, 2.0, 3.0], requires_grad=True)
    tx = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)
    keep = [True, False, True]
    as_masked_tensor(x * x, ember.tensor(keep)).sum().backward()
    torch.masked.as_masked_tensor(tx * tx, torch.tensor(keep)).sum().backward()
    # torch's x.grad is a MaskedTensor; ember's is its data with 0 where masked out
    np.testing.assert_allclose(x.grad.numpy(), tx.grad.to_tensor(0.0).numpy())
