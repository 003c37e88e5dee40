"""``layer_norm`` and ``scaled_dot_product_attention`` on nested tensors.

Layer norm over trailing regular dimensions runs on the values (jagged) or on the buffer's
rows (strided). Attention runs per batch element, each with its own sequence lengths, as
PyTorch's math path for nested inputs does: ``(B, H, j, D)`` after the usual
``unflatten(-1, [H, D]).transpose(1, 2)``.
"""

from __future__ import annotations

import ember

from . import _build
from ._matmul import rows_apply, uniform_last
from ._tensor import NestedTensor, make_strided


def layer_norm(
    input, normalized_shape, weight=None, bias=None, eps: float = 1e-5, cudnn_enable: bool = True
):
    shape = (normalized_shape,) if isinstance(normalized_shape, int) else tuple(normalized_shape)
    norm = ember.nn.functional.layer_norm
    if input.layout == "jagged":
        if input._ragged_idx >= input.dim() - len(shape):
            raise RuntimeError(
                "layer_norm(): not supported for NestedTensor objects with normalized_shape "
                "including the ragged dimension"
            )
        return input._like(norm(input._inner, shape, weight, bias, eps))
    if len(shape) == 1 and uniform_last(input) == shape[0]:
        return rows_apply(input, lambda rows: norm(rows, shape, weight, bias, eps))
    return _build.strided_from_list([norm(c, shape, weight, bias, eps) for c in input.unbind()])


def scaled_dot_product_attention(
    query,
    key,
    value,
    attn_mask=None,
    dropout_p: float = 0.0,
    is_causal: bool = False,
    scale=None,
    enable_gqa: bool = False,
):
    """softmax(q kᵀ · scale) v for each batch element of nested ``query``, ``key``, ``value``."""
    if attn_mask is not None:
        raise ValueError("Masks are not yet supported!")
    if not all(isinstance(t, NestedTensor) for t in (query, key, value)):
        raise RuntimeError(
            "scaled_dot_product_attention(): query, key and value must all be NestedTensors "
            "when one of them is"
        )
    if not len(query) == len(key) == len(value):
        raise RuntimeError(
            "scaled_dot_product_attention(): query, key and value must have the same batch "
            f"size, got {len(query)}, {len(key)} and {len(value)}"
        )
    if query.dim() != 4:
        raise RuntimeError(
            "scaled_dot_product_attention(): expected 4-D nested inputs (B, H, j, D), got "
            f"{query.dim()}-D"
        )
    attend = ember.nn.functional.scaled_dot_product_attention
    outs = [
        attend(q, k, v, None, dropout_p, is_causal, scale=scale, enable_gqa=enable_gqa)
        for q, k, v in zip(query.unbind(), key.unbind(), value.unbind())
    ]
    return _build.from_list_like(query, outs)


def embedding(input, weight, *args, **kwargs):
    """``F.embedding`` of nested indices: one embedding row per position."""
    lookup = ember.nn.functional.embedding
    if input.layout == "jagged":
        return input._like(lookup(input._inner, weight, *args, **kwargs))
    rows = lookup(input._inner, weight, *args, **kwargs)
    return make_strided(rows.reshape(-1), [s + (rows.shape[-1],) for s in input._sizes])
