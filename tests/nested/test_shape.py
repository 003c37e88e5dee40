"""transpose, view/reshape, unflatten, flatten, unsqueeze, squeeze on nested tensors."""

import numpy as np
import pytest

import ember

from .helpers import arrays, as_nested, assert_close, nested, raises_like, shape_text


def test_transpose_moves_the_ragged_dim():
    data = arrays()
    nt = nested(ember, data)
    t = nt.transpose(1, 2)
    assert shape_text(t.shape) == "(3, 4, j)" and t.shape[2] == nt.shape[1]
    assert not t.is_contiguous() and t.values().shape == (4, 6)
    for got, a in zip(t.unbind(), data):
        np.testing.assert_array_equal(got.numpy(), a.T)
    assert t.transpose(1, 2).shape == nt.shape
    s = nested(ember, data, "strided").transpose(1, 2)
    assert [c.shape for c in s.unbind()] == [(4, 2), (4, 3), (4, 1)]


def test_heads_split_and_merged_as_in_attention():
    nt = nested(ember, arrays())
    heads = nt.unflatten(-1, [2, 2]).transpose(1, 2)
    assert shape_text(heads.shape) == "(3, 2, j, 2)"
    for got, a in zip(heads.unbind(), arrays()):
        np.testing.assert_array_equal(got.numpy(), a.reshape(-1, 2, 2).transpose(1, 0, 2))
    merged = heads.transpose(1, 2).flatten(-2)
    assert merged.shape == nt.shape
    assert_close(merged, nt)
    viewed = nt.view(3, -1, 2, 2)
    assert shape_text(viewed.shape) == "(3, j, 2, 2)"
    assert nt.reshape(3, nt.shape[1], 4).shape == nt.shape


def test_unsqueeze_squeeze():
    nt = nested(ember, arrays())
    u = nt.unsqueeze(-1)
    assert shape_text(u.shape) == "(3, j, 4, 1)" and u.squeeze(-1).shape == nt.shape
    assert shape_text(nt.unsqueeze(1).shape) == "(3, 1, j, 4)"


def test_shape_errors():
    nt = nested(ember, arrays())
    with pytest.raises(ValueError, match="Transpose is not supported on the batch dimension"):
        nt.transpose(0, 1)
    with pytest.raises(RuntimeError, match="dimension 0 cannot be transposed"):
        nested(ember, arrays(), "strided").transpose(0, 1)
    with pytest.raises(RuntimeError, match="cannot view shape"):
        nt.view(3, 4, -1)
    with pytest.raises(RuntimeError, match="not supported for NestedTensor on ragged dim"):
        nt.flatten(1, 2)
    with pytest.raises(RuntimeError, match="not supported for NestedTensor on dim=0"):
        nt.unsqueeze(0)


@pytest.mark.parametrize("layout", ["strided", "jagged"])
def test_shape_ops_and_gradients_match_torch(torch_nested, layout):
    torch = torch_nested
    results = {}
    for lib in (ember, torch):
        nt, leaves = as_nested(lib, arrays(), layout)
        if layout == "jagged":
            transposed = [nt.transpose(1, 2), nt.unflatten(-1, [2, 2]).transpose(1, 2)]
            outs = [
                nt.reshape(3, -1, 2, 2),
                nt.unsqueeze(-1),
                nt.unflatten(-1, [2, 2]).flatten(-2),
                nt.view(3, -1, 2, 2),
            ]
            shown = outs + transposed
            # torch cannot differentiate to_padded_tensor of a transposed jagged tensor
            loss = sum((o.values() ** 2).sum() for o in transposed)
        else:  # torch's strided layout pads or differentiates only some of them
            outs = [nt.reshape(3, -1, 2, 2)]
            shown = outs + [nt.transpose(1, 2), nt.unsqueeze(-1)]
            loss = 0.0
        (loss + sum((o.to_padded_tensor(0.0) * 1.5).sum() for o in outs)).backward()
        results[lib] = (shown, [leaf.grad for leaf in leaves])
    assert_close(results[ember], results[torch])


def test_shape_errors_match_torch(torch_nested):
    torch = torch_nested
    for call in (
        lambda x: x.transpose(0, 1),
        lambda x: x.view(3, 4, -1),
        lambda x: x.flatten(0, 1),
        lambda x: x.flatten(1, 2),
        lambda x: x.unsqueeze(0),
    ):
        raises_like(lambda: call(nested(torch, arrays())), lambda: call(nested(ember, arrays())))
    raises_like(
        lambda: nested(torch, arrays(), "strided").transpose(0, 1),
        lambda: nested(ember, arrays(), "strided").transpose(0, 1),
    )


def test_chunk_split_permute():
    data = arrays()
    nt = nested(ember, data)
    halves = nt.chunk(2, -1)
    assert len(halves) == 2 and all(h.shape[1] == nt.shape[1] for h in halves)
    np.testing.assert_array_equal(halves[1].unbind()[0].numpy(), data[0][:, 2:])
    pieces = ember.split(nt, [1, 3], dim=2)
    assert [p.size(-1) for p in pieces] == [1, 3]
    permuted = nt.permute(0, 2, 1)
    assert shape_text(permuted.shape) == "(3, 4, j)"
    np.testing.assert_array_equal(permuted.unbind()[1].numpy(), data[1].T)
    with pytest.raises(RuntimeError, match="chunk\\(\\): not supported for NestedTensor on ragged"):
        nt.chunk(2, 1)
    strided = nested(ember, data, "strided").chunk(2, -1)
    assert [c.shape for c in strided[0].unbind()] == [(2, 2), (3, 2), (1, 2)]


def test_chunk_split_permute_match_torch(torch_nested):
    torch = torch_nested
    results = {}
    for lib in (ember, torch):
        nt, leaves = as_nested(lib, arrays())
        outs = [*nt.chunk(2, -1), *nt.split(3, dim=-1), nt.permute(0, 2, 1)]
        loss = sum((o.values() ** 2).sum() for o in outs)
        loss.backward()
        results[lib] = (outs, [leaf.grad for leaf in leaves])
    assert_close(results[ember], results[torch])
    raises_like(
        lambda: nested(torch, arrays()).chunk(2, 1), lambda: nested(ember, arrays()).chunk(2, 1)
    )
    raises_like(
        lambda: nested(torch, arrays()).permute(1, 0, 2),
        lambda: nested(ember, arrays()).permute(1, 0, 2),
    )


def test_cat_along_features():
    data = arrays()
    nt = nested(ember, data)
    joined = ember.cat([nt, nt * 2], dim=-1)
    assert joined.shape[1] == nt.shape[1] and joined.size(-1) == 8
    np.testing.assert_allclose(
        joined.unbind()[1].numpy(), np.concatenate([data[1], 2 * data[1]], -1)
    )
    with pytest.raises(RuntimeError, match="not supported for NestedTensor on ragged dim"):
        ember.cat([nt, nt], dim=1)
    strided = ember.cat([nested(ember, data, "strided")] * 2, dim=2)
    assert [c.shape for c in strided.unbind()] == [(2, 8), (3, 8), (1, 8)]


def test_cat_matches_torch(torch_nested):
    torch = torch_nested
    results = {}
    for lib in (ember, torch):
        nt, leaves = as_nested(lib, arrays())
        joined = lib.cat([nt, nt.relu()], dim=-1)
        (joined.values() ** 2).sum().backward()
        results[lib] = (joined, [leaf.grad for leaf in leaves])
    assert_close(results[ember], results[torch])
    for dim in (0, 1):
        raises_like(
            lambda dim=dim: torch.cat([nested(torch, arrays())] * 2, dim=dim),
            lambda dim=dim: ember.cat([nested(ember, arrays())] * 2, dim=dim),
        )
