"""to_padded_tensor: the nested tensor as one dense, padded tensor (and its gradient)."""

import numpy as np
import pytest

import ember

from .helpers import arrays, as_nested, assert_close, nested, raises_like


@pytest.mark.parametrize("layout", ["strided", "jagged"])
def test_pads_every_component_to_the_longest(layout):
    data = arrays()
    padded = nested(ember, data, layout).to_padded_tensor(-1.0)
    want = np.full((3, 3, 4), -1.0, dtype=np.float32)
    for i, a in enumerate(data):
        want[i, : a.shape[0]] = a
    np.testing.assert_array_equal(padded.numpy(), want)


def test_strided_pads_ragged_in_several_dims_and_to_output_size():
    nt = ember.nested.nested_tensor([ember.ones(1, 2), ember.ones(2, 1)])
    assert ember.nested.to_padded_tensor(nt, 0.0).tolist() == [
        [[1.0, 1.0], [0.0, 0.0]],
        [[1.0, 0.0], [1.0, 0.0]],
    ]
    big = ember.nested.to_padded_tensor(nt, 5.0, output_size=(3, 2, 3))
    assert big.shape == (3, 2, 3) and big[2].tolist() == [[5.0] * 3] * 2


def test_gradient_reaches_the_components_and_skips_the_padding():
    nt, leaves = as_nested(ember, arrays())
    weights = ember.arange(36.0).reshape(3, 3, 4)
    (nt.to_padded_tensor(0.0) * weights).sum().backward()
    for i, leaf in enumerate(leaves):
        np.testing.assert_array_equal(leaf.grad.numpy(), weights[i, : leaf.shape[0]].numpy())


def test_jagged_output_size_reads_the_ragged_entry_only():
    nt = nested(ember, arrays())
    assert ember.nested.to_padded_tensor(nt, 0.0, output_size=(3, 5, 9)).shape == (3, 5, 4)
    short = ember.nested.to_padded_tensor(nt, 0.0, output_size=(3, 1, 4))
    np.testing.assert_array_equal(short[:, 0].numpy(), np.stack([a[0] for a in arrays()]))


def test_output_size_errors_and_dense_input():
    nt = nested(ember, arrays(), "strided")
    with pytest.raises(RuntimeError, match="Truncation is not supported"):
        ember.nested.to_padded_tensor(nt, 0.0, output_size=(3, 2, 4))
    with pytest.raises(RuntimeError, match="Broadcasting is not supported"):
        ember.nested.to_padded_tensor(nt, 0.0, output_size=(3, 4))
    with pytest.raises(NotImplementedError, match="to_padded_tensor"):
        ember.ones(2, 3).to_padded_tensor(0.0)


@pytest.mark.parametrize("layout", ["strided", "jagged"])
def test_padding_and_its_gradient_match_torch(torch_nested, layout):
    torch = torch_nested
    results = {}
    for lib in (ember, torch):
        nt, leaves = as_nested(lib, arrays(), layout)
        padded = lib.nested.to_padded_tensor(nt, 0.5, output_size=(3, 5, 6))
        (padded * padded).sum().backward()
        results[lib] = (padded, [leaf.grad for leaf in leaves])
    assert_close(results[ember], results[torch])
    if layout == "strided":
        raises_like(
            lambda: torch.nested.to_padded_tensor(nested(torch, arrays(), layout), 0.0, (3, 1, 4)),
            lambda: ember.nested.to_padded_tensor(nested(ember, arrays(), layout), 0.0, (3, 1, 4)),
        )
    else:
        assert_close(
            ember.nested.to_padded_tensor(nested(ember, arrays()), 0.0, (3, 1, 7)),
            torch.nested.to_padded_tensor(nested(torch, arrays()), 0.0, (3, 1, 7)),
        )
