"""layer_norm, dropout and scaled_dot_product_attention on nested tensors."""

import numpy as np
import pytest

import ember

from .helpers import arrays, as_nested, assert_close, nested, raises_like

SEQ_SHAPES = [(3, 8), (5, 8), (2, 8)]  # three sequences, embedding 8, two heads of 4


@pytest.mark.parametrize("layout", ["strided", "jagged"])
def test_layer_norm_normalizes_every_position(layout):
    data = arrays()
    weight, bias = ember.arange(4.0), ember.ones(4)
    out = ember.nn.functional.layer_norm(nested(ember, data, layout), (4,), weight, bias)
    for got, a in zip(out.unbind(), data):
        norm = (a - a.mean(-1, keepdims=True)) / np.sqrt(a.var(-1, keepdims=True) + 1e-5)
        np.testing.assert_allclose(got.numpy(), norm * np.arange(4.0) + 1, rtol=1e-4, atol=1e-5)


def test_dropout_masks_are_torchs_and_eval_is_identity():
    nt = nested(ember, arrays())
    ember.manual_seed(0)
    dropped = ember.nn.functional.dropout(nt, 0.5)
    assert [int(c.ne(0).sum()) for c in dropped.unbind()] == [3, 8, 2]  # torch's draw
    module = ember.nn.Dropout(0.5).eval()
    assert_close(module(nt), nt)


def test_attention_equals_dense_attention_of_each_sequence():
    data = arrays(SEQ_SHAPES)
    nt, leaves = as_nested(ember, data)
    F = ember.nn.functional
    q = nt.unflatten(-1, [2, 4]).transpose(1, 2)
    out = F.scaled_dot_product_attention(q, q, q)
    for got, a in zip(out.unbind(), data):
        x = ember.tensor(a).unflatten(-1, [2, 4]).transpose(0, 1)
        np.testing.assert_allclose(
            got.detach().numpy(), F.scaled_dot_product_attention(x, x, x).numpy(), rtol=1e-5
        )
    out.values().sum().backward()
    assert all(leaf.grad is not None and leaf.grad.shape == leaf.shape for leaf in leaves)


def test_attention_errors():
    q = nested(ember, arrays(SEQ_SHAPES)).unflatten(-1, [2, 4]).transpose(1, 2)
    with pytest.raises(ValueError, match="Masks are not yet supported"):
        ember.nn.functional.scaled_dot_product_attention(q, q, q, attn_mask=ember.ones(1, 1))
    with pytest.raises(RuntimeError, match="must all be NestedTensors"):
        ember.nn.functional.scaled_dot_product_attention(q, ember.ones(3, 2, 4, 4), q)


@pytest.mark.parametrize("layout", ["strided", "jagged"])
def test_layer_norm_and_dropout_match_torch(torch_nested, layout):
    torch = torch_nested
    results = {}
    for lib in (ember, torch):
        lib.manual_seed(0)
        nt, leaves = as_nested(lib, arrays(), layout)
        norm = lib.nn.LayerNorm(4)
        with lib.no_grad():
            norm.weight.copy_(lib.arange(4.0))
        out = lib.nn.functional.dropout(norm(nt), 0.25)
        (out.to_padded_tensor(0.0) ** 2).sum().backward()
        results[lib] = (out, norm.weight.grad, norm.bias.grad, [leaf.grad for leaf in leaves])
    assert_close(results[ember], results[torch], atol=1e-4)


def test_sdpa_tutorial_pattern_matches_torch(torch_nested):
    """Variable-length sequences through projections and multi-head attention, as in
    PyTorch's "SDPA with nested tensors" tutorial: values and every gradient agree."""
    torch = torch_nested
    results = {}
    for lib in (ember, torch):
        lib.manual_seed(0)
        q_proj, out_proj = lib.nn.Linear(8, 8), lib.nn.Linear(8, 8)
        nt, leaves = as_nested(lib, arrays(SEQ_SHAPES))
        q = q_proj(nt).unflatten(-1, [2, 4]).transpose(1, 2)
        attended = lib.nn.functional.scaled_dot_product_attention(q, q, q)
        out = out_proj(attended.transpose(1, 2).flatten(-2))
        out.values().pow(2).sum().backward()
        results[lib] = (
            out,
            q_proj.weight.grad,
            q_proj.bias.grad,
            out_proj.weight.grad,
            [leaf.grad for leaf in leaves],
        )
    assert_close(results[ember], results[torch], atol=1e-4)


def test_attention_mask_error_matches_torch(torch_nested):
    torch = torch_nested

    def call(lib):
        q = nested(lib, arrays(SEQ_SHAPES)).unflatten(-1, [2, 4]).transpose(1, 2)
        return lib.nn.functional.scaled_dot_product_attention(q, q, q, attn_mask=lib.ones(1, 1))

    raises_like(lambda: call(torch), lambda: call(ember))


@pytest.mark.parametrize("layout", ["strided", "jagged"])
def test_embedding_of_nested_token_ids(layout):
    weight = ember.arange(12.0).reshape(4, 3)
    ids = ember.nested.nested_tensor(
        [ember.tensor([1, 2]), ember.tensor([3, 0, 1])], layout=getattr(ember, layout)
    )
    out = ember.nn.functional.embedding(ids, weight)
    assert [c.tolist() for c in out.unbind()] == [
        [[3.0, 4.0, 5.0], [6.0, 7.0, 8.0]],
        [[9.0, 10.0, 11.0], [0.0, 1.0, 2.0], [3.0, 4.0, 5.0]],
    ]


def test_embedding_bag_of_words_matches_torch(torch_nested):
    torch = torch_nested
    results = {}
    for lib in (ember, torch):
        lib.manual_seed(0)
        embed = lib.nn.Embedding(6, 4)
        ids = lib.nested.nested_tensor(
            [lib.tensor([1, 2, 5]), lib.tensor([0]), lib.tensor([3, 3])], layout=lib.jagged
        )
        pooled = embed(ids).to_padded_tensor(0.0).sum(dim=1)  # one vector per sequence
        pooled.pow(2).sum().backward()
        results[lib] = (pooled, embed.weight.grad)
    assert_close(results[ember], results[torch])
