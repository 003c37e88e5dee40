"""Attention: scaled dot-product attention and the multi-head attention forward.

Both are compositions of differentiable ember ops (matmul, softmax, where), so their
gradients of every order come from the op table; a fused kernel may replace them later
and be checked against these.
"""

from __future__ import annotations

import math

from .. import _creation
from .._tensor import Tensor
from .activation import softmax
from .elementwise import where
from .indexing import pad
from .linalg import linear
from .shape import cat

__all__ = ["scaled_dot_product_attention", "multi_head_attention_forward"]


def _dropout(x: Tensor, p: float) -> Tensor:
    from ..nn.functional import dropout

    return dropout(x, p, True) if p > 0 else x


def _safe_softmax(scores: Tensor) -> Tensor:
    """Softmax over the last dim whose fully masked (all -inf) rows are 0 instead of NaN."""
    dead = (scores == float("-inf")).all(-1, keepdim=True)
    if not bool(dead.any()):
        return softmax(scores, -1)
    # zero the dead rows before softmax too, so that no NaN reaches the backward pass
    return where(dead, 0.0, softmax(where(dead, 0.0, scores), -1))


def scaled_dot_product_attention(
    query: Tensor,
    key: Tensor,
    value: Tensor,
    attn_mask: Tensor | None = None,
    dropout_p: float = 0.0,
    is_causal: bool = False,
    scale: float | None = None,
    enable_gqa: bool = False,
) -> Tensor:
    """softmax(Q Kᵀ · scale + mask) V over the last two dims, batch dims broadcast.

    A boolean ``attn_mask`` marks the positions that *may* be attended (True = keep); a float
    one is added to the scores. ``is_causal`` keeps position j ≤ i only.

    Example::
        >>> q = k = v = ember.randn(2, 4, 5, 8)  # (batch, heads, length, head_dim)
        >>> F.scaled_dot_product_attention(q, k, v, is_causal=True).shape
        ember.Size([2, 4, 5, 8])
    """
    if not (query.dtype == key.dtype == value.dtype):
        raise RuntimeError(
            "Expected query, key, and value to have the same dtype, but got query.dtype: "
            f"{query.dtype.name} key.dtype: {key.dtype.name} and value.dtype: "
            f"{value.dtype.name} instead."
        )
    if is_causal and attn_mask is not None:
        raise RuntimeError(
            "_scaled_dot_product_attention: Explicit attn_mask should not be set when "
            "is_causal=True"
        )
    if attn_mask is not None and attn_mask.dtype.name != "bool":
        if not attn_mask.is_floating_point():
            raise RuntimeError(
                "Expected attn_mask dtype to be bool or float or to match query dtype, but got "
                f"attn_mask.dtype: {attn_mask.dtype.name} and query.dtype: "
                f"{query.dtype.name} instead."
            )
    if query.shape[-1] != key.shape[-1]:
        raise RuntimeError(
            f"scaled_dot_product_attention: query and key head dims differ "
            f"({query.shape[-1]} != {key.shape[-1]})"
        )
    if enable_gqa and query.dim() >= 3 and key.dim() >= 3:
        heads, kv_heads = query.shape[-3], key.shape[-3]
        if kv_heads == 0 or heads % kv_heads:
            raise RuntimeError(
                f"scaled_dot_product_attention: number of heads in key/value must divide "
                f"number of heads in query ({kv_heads} does not divide {heads})"
            )
        if heads != kv_heads:
            key = key.repeat_interleave(heads // kv_heads, -3)
            value = value.repeat_interleave(heads // value.shape[-3], -3)
    target, source = query.shape[-2], key.shape[-2]
    factor = 1.0 / math.sqrt(query.shape[-1]) if scale is None else float(scale)
    scores = (query @ key.transpose(-2, -1)) * factor
    allowed = None
    if is_causal:
        allowed = _creation.ones(target, source, dtype="bool", device=query.device).tril()
    if attn_mask is not None:
        if attn_mask.dtype.name == "bool":
            allowed = attn_mask
        else:
            scores = scores + attn_mask
    if allowed is not None:
        scores = where(allowed, scores, float("-inf"))
    weights = _dropout(_safe_softmax(scores), dropout_p)
    return weights @ value


def _additive_mask(mask: Tensor | None, dtype, name: str) -> Tensor | None:
    """PyTorch's canonical mask: bool (True = masked out) becomes -inf/0; float is kept."""
    if mask is None:
        return None
    if mask.dtype.name == "bool":
        return where(mask, float("-inf"), 0.0).to(dtype)
    if not mask.is_floating_point():
        raise AssertionError(f"only bool and floating types of {name} are supported")
    return mask


def _check_batched(query: Tensor, key: Tensor, value: Tensor, key_padding_mask, attn_mask):
    """Whether the input is batched, with PyTorch's shape assertions."""
    if query.dim() == 3:
        if key.dim() != 3 or value.dim() != 3:
            raise AssertionError(
                "For batched (3-D) `query`, expected `key` and `value` to be 3-D but found "
                f"{key.dim()}-D and {value.dim()}-D tensors respectively"
            )
        if key_padding_mask is not None and key_padding_mask.dim() != 2:
            raise AssertionError(
                "For batched (3-D) `query`, expected `key_padding_mask` to be `None` or 2-D "
                f"but found {key_padding_mask.dim()}-D tensor instead"
            )
        if attn_mask is not None and attn_mask.dim() not in (2, 3):
            raise AssertionError(
                "For batched (3-D) `query`, expected `attn_mask` to be `None`, 2-D or 3-D but "
                f"found {attn_mask.dim()}-D tensor instead"
            )
        return True
    if query.dim() == 2:
        if key.dim() != 2 or value.dim() != 2:
            raise AssertionError(
                "For unbatched (2-D) `query`, expected `key` and `value` to be 2-D but found "
                f"{key.dim()}-D and {value.dim()}-D tensors respectively"
            )
        if key_padding_mask is not None and key_padding_mask.dim() != 1:
            raise AssertionError(
                "For unbatched (2-D) `query`, expected `key_padding_mask` to be `None` or 1-D "
                f"but found {key_padding_mask.dim()}-D tensor instead"
            )
        if attn_mask is not None and attn_mask.dim() not in (2, 3):
            raise AssertionError(
                "For unbatched (2-D) `query`, expected `attn_mask` to be `None`, 2-D or 3-D "
                f"but found {attn_mask.dim()}-D tensor instead"
            )
        return False
    raise AssertionError(
        f"query should be unbatched 2D or batched 3D tensor but received {query.dim()}-D "
        "query tensor"
    )


def multi_head_attention_forward(
    query: Tensor,
    key: Tensor,
    value: Tensor,
    embed_dim_to_check: int,
    num_heads: int,
    in_proj_weight: Tensor | None,
    in_proj_bias: Tensor | None,
    bias_k: Tensor | None,
    bias_v: Tensor | None,
    add_zero_attn: bool,
    dropout_p: float,
    out_proj_weight: Tensor,
    out_proj_bias: Tensor | None,
    training: bool = True,
    key_padding_mask: Tensor | None = None,
    need_weights: bool = True,
    attn_mask: Tensor | None = None,
    use_separate_proj_weight: bool = False,
    q_proj_weight: Tensor | None = None,
    k_proj_weight: Tensor | None = None,
    v_proj_weight: Tensor | None = None,
    static_k: Tensor | None = None,
    static_v: Tensor | None = None,
    average_attn_weights: bool = True,
    is_causal: bool = False,
) -> tuple[Tensor, Tensor | None]:
    """The computation of ``nn.MultiheadAttention`` on (L, N, E) inputs (or unbatched (L, E)).

    Returns the attended output and, if ``need_weights``, the attention weights
    (averaged over heads when ``average_attn_weights``).
    """
    batched = _check_batched(query, key, value, key_padding_mask, attn_mask)
    if not batched:
        query, key, value = query.unsqueeze(1), key.unsqueeze(1), value.unsqueeze(1)
        if key_padding_mask is not None:
            key_padding_mask = key_padding_mask.unsqueeze(0)
    tgt_len, bsz, embed_dim = query.shape
    src_len = key.shape[0]
    if embed_dim != embed_dim_to_check:
        raise AssertionError(
            f"was expecting embedding dimension of {embed_dim_to_check}, but got {embed_dim}"
        )
    head_dim = embed_dim // num_heads
    if head_dim * num_heads != embed_dim:
        raise AssertionError(f"embed_dim {embed_dim} not divisible by num_heads {num_heads}")
    key_padding_mask = _additive_mask(key_padding_mask, query.dtype, "key_padding_mask")
    if is_causal and attn_mask is None:
        raise RuntimeError(
            "Need attn_mask if specifying the is_causal hint. You may use the Transformer "
            "module method `generate_square_subsequent_mask` to create this mask."
        )
    # is_causal is only a hint that attn_mask is causal: the mask itself is what is applied
    attn_mask = _additive_mask(attn_mask, query.dtype, "attn_mask")

    if not use_separate_proj_weight:
        w_q, w_k, w_v = in_proj_weight.chunk(3)
    else:
        if q_proj_weight is None or k_proj_weight is None or v_proj_weight is None:
            raise AssertionError("use_separate_proj_weight is True but a projection is None")
        w_q, w_k, w_v = q_proj_weight, k_proj_weight, v_proj_weight
    b_q, b_k, b_v = in_proj_bias.chunk(3) if in_proj_bias is not None else (None, None, None)
    q, k, v = linear(query, w_q, b_q), linear(key, w_k, b_k), linear(value, w_v, b_v)

    if attn_mask is not None:
        if attn_mask.dim() == 2:
            if tuple(attn_mask.shape) != (tgt_len, src_len):
                raise RuntimeError(
                    f"The shape of the 2D attn_mask is {attn_mask.shape}, but should be "
                    f"{(tgt_len, src_len)}."
                )
            attn_mask = attn_mask.unsqueeze(0)
        elif attn_mask.dim() == 3:
            if tuple(attn_mask.shape) != (bsz * num_heads, tgt_len, src_len):
                raise RuntimeError(
                    f"The shape of the 3D attn_mask is {attn_mask.shape}, but should be "
                    f"{(bsz * num_heads, tgt_len, src_len)}."
                )
        else:
            raise RuntimeError(f"attn_mask's dimension {attn_mask.dim()} is not supported")

    if bias_k is not None and bias_v is not None:
        if static_k is not None or static_v is not None:
            raise AssertionError("bias cannot be added to static key/value.")
        k = cat([k, bias_k.expand(1, bsz, embed_dim)])
        v = cat([v, bias_v.expand(1, bsz, embed_dim)])
        attn_mask = pad(attn_mask, (0, 1)) if attn_mask is not None else None
        key_padding_mask = pad(key_padding_mask, (0, 1)) if key_padding_mask is not None else None
    elif bias_k is not None or bias_v is not None:
        raise AssertionError("bias_k and bias_v must both be given or both be None")

    # (L, N, E) -> (N·heads, L, head_dim)
    q = q.reshape(tgt_len, bsz * num_heads, head_dim).transpose(0, 1)
    k = (
        k.reshape(k.shape[0], bsz * num_heads, head_dim).transpose(0, 1)
        if static_k is None
        else static_k
    )
    v = (
        v.reshape(v.shape[0], bsz * num_heads, head_dim).transpose(0, 1)
        if static_v is None
        else static_v
    )
    if add_zero_attn:
        zeros = _creation.zeros(bsz * num_heads, 1, head_dim, dtype=k.dtype, device=k.device)
        k, v = cat([k, zeros], 1), cat([v, zeros.to(v.dtype)], 1)
        attn_mask = pad(attn_mask, (0, 1)) if attn_mask is not None else None
        key_padding_mask = pad(key_padding_mask, (0, 1)) if key_padding_mask is not None else None
    src_len = k.shape[1]

    if key_padding_mask is not None:
        if tuple(key_padding_mask.shape) != (bsz, src_len):
            raise AssertionError(
                f"expecting key_padding_mask shape of {(bsz, src_len)}, but got "
                f"{key_padding_mask.shape}"
            )
        padding = (
            key_padding_mask.reshape(bsz, 1, 1, src_len)
            .expand(bsz, num_heads, 1, src_len)
            .reshape(bsz * num_heads, 1, src_len)
        )
        attn_mask = padding if attn_mask is None else attn_mask + padding
    if not training:
        dropout_p = 0.0

    if need_weights:
        scores = (q * math.sqrt(1.0 / head_dim)) @ k.transpose(-2, -1)
        if attn_mask is not None:
            scores = scores + attn_mask
        weights = _dropout(softmax(scores, -1), dropout_p)
        heads_out = weights @ v
    else:
        if attn_mask is not None:
            attn_mask = (
                attn_mask.unsqueeze(0)
                if attn_mask.shape[0] == 1
                else attn_mask.reshape(bsz, num_heads, -1, src_len)
            )
        heads_out = scaled_dot_product_attention(
            q.reshape(bsz, num_heads, tgt_len, head_dim),
            k.reshape(bsz, num_heads, src_len, head_dim),
            v.reshape(bsz, num_heads, src_len, head_dim),
            attn_mask,
            dropout_p,
        ).reshape(bsz * num_heads, tgt_len, head_dim)
        weights = None
    out = heads_out.transpose(0, 1).reshape(tgt_len * bsz, embed_dim)
    out = linear(out, out_proj_weight, out_proj_bias).reshape(tgt_len, bsz, embed_dim)
    if not batched:
        out = out.squeeze(1)
    if weights is None:
        return out, None
    weights = weights.reshape(bsz, num_heads, tgt_len, src_len)
    if average_attn_weights:
        weights = weights.mean(1)
    if not batched:
        weights = weights.squeeze(0)
    return out, weights
