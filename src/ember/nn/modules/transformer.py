"""MultiheadAttention and TransformerEncoderLayer (PyTorch's parameters, layout and math)."""

from __future__ import annotations

import math

from ... import _creation
from ...ops.elementwise import where
from .. import functional as F
from .. import init
from ..parameter import Parameter
from .activation import ReLU
from .dropout import Dropout
from .linear import Linear
from .module import Module
from .normalization import LayerNorm


class NonDynamicallyQuantizableLinear(Linear):
    """PyTorch's name for the attention output projection (a plain Linear)."""


def _as_additive(mask, dtype, name: str):
    """Boolean masks (True = not allowed) become -inf additions; float masks are added."""
    if mask is None:
        return None
    if mask.dtype.name == "bool":
        return where(mask, float("-inf"), 0.0).to(dtype)
    if not mask.is_floating_point():
        raise AssertionError(f"only bool and floating types of {name} are supported")
    return mask


class MultiheadAttention(Module):
    def __init__(
        self,
        embed_dim: int,
        num_heads: int,
        dropout: float = 0.0,
        bias: bool = True,
        add_bias_kv: bool = False,
        add_zero_attn: bool = False,
        kdim=None,
        vdim=None,
        batch_first: bool = False,
        device=None,
        dtype=None,
    ):
        super().__init__()
        if embed_dim % num_heads:
            raise AssertionError("embed_dim must be divisible by num_heads")
        if (
            add_bias_kv
            or add_zero_attn
            or (kdim not in (None, embed_dim))
            or (vdim not in (None, embed_dim))
        ):
            raise NotImplementedError(
                "add_bias_kv, add_zero_attn and kdim/vdim different from "
                "embed_dim are not supported by ember yet"
            )
        self.embed_dim, self.num_heads, self.dropout = embed_dim, num_heads, dropout
        self.batch_first, self.head_dim = batch_first, embed_dim // num_heads
        self.kdim = self.vdim = embed_dim
        self._qkv_same_embed_dim = True
        self.in_proj_weight = Parameter(
            _creation.empty(3 * embed_dim, embed_dim, device=device, dtype=dtype)
        )
        if bias:
            self.in_proj_bias = Parameter(
                _creation.empty(3 * embed_dim, device=device, dtype=dtype)
            )
        else:
            self.register_parameter("in_proj_bias", None)
        self.out_proj = NonDynamicallyQuantizableLinear(
            embed_dim, embed_dim, bias=bias, device=device, dtype=dtype
        )
        self._reset_parameters()

    def _reset_parameters(self) -> None:
        init.xavier_uniform_(self.in_proj_weight)
        if self.in_proj_bias is not None:
            init.constant_(self.in_proj_bias, 0.0)
            init.constant_(self.out_proj.bias, 0.0)

    def forward(
        self,
        query,
        key,
        value,
        key_padding_mask=None,
        need_weights: bool = True,
        attn_mask=None,
        average_attn_weights: bool = True,
        is_causal: bool = False,
    ):
        unbatched = query.dim() == 2
        if unbatched:
            query, key, value = query.unsqueeze(1), key.unsqueeze(1), value.unsqueeze(1)
            if key_padding_mask is not None:
                key_padding_mask = key_padding_mask.unsqueeze(0)
        elif self.batch_first:
            query, key, value = (t.transpose(0, 1) for t in (query, key, value))
        tgt, batch, embed = query.shape
        src = key.shape[0]
        heads, hd = self.num_heads, self.head_dim
        w_q, w_k, w_v = self.in_proj_weight.chunk(3)
        b_q = b_k = b_v = None
        if self.in_proj_bias is not None:
            b_q, b_k, b_v = self.in_proj_bias.chunk(3)
        q = F.linear(query, w_q, b_q)
        k = F.linear(key, w_k, b_k)
        v = F.linear(value, w_v, b_v)
        # (L, N, E) -> (N, heads, L, hd)
        q = q.reshape(tgt, batch * heads, hd).transpose(0, 1).reshape(batch, heads, tgt, hd)
        k = k.reshape(src, batch * heads, hd).transpose(0, 1).reshape(batch, heads, src, hd)
        v = v.reshape(src, batch * heads, hd).transpose(0, 1).reshape(batch, heads, src, hd)
        scores = (q @ k.transpose(-2, -1)) / math.sqrt(hd)
        if is_causal and attn_mask is None:
            attn_mask = _creation.ones(tgt, src, dtype="bool").triu(1)
        mask = _as_additive(attn_mask, scores.dtype, "attn_mask")
        if mask is not None:
            scores = scores + (mask if mask.dim() == 2 else mask.reshape(batch, heads, tgt, src))
        pad = _as_additive(key_padding_mask, scores.dtype, "key_padding_mask")
        if pad is not None:
            scores = scores + pad.reshape(batch, 1, 1, src)
        weights = F.softmax(scores, -1)
        if self.dropout and self.training:
            weights = F.dropout(weights, self.dropout, True)
        out = (
            (weights @ v).reshape(batch * heads, tgt, hd).transpose(0, 1).reshape(tgt, batch, embed)
        )
        out = self.out_proj(out)
        if unbatched:
            out = out.squeeze(1)
        elif self.batch_first:
            out = out.transpose(0, 1)
        if not need_weights:
            return out, None
        if average_attn_weights:
            weights = weights.mean(1)
        if unbatched:
            weights = weights.squeeze(0)
        return out, weights


class TransformerEncoderLayer(Module):
    """Self-attention and a feed-forward block, each with residual and LayerNorm."""

    def __init__(
        self,
        d_model: int,
        nhead: int,
        dim_feedforward: int = 2048,
        dropout: float = 0.1,
        activation="relu",
        layer_norm_eps: float = 1e-5,
        batch_first: bool = False,
        norm_first: bool = False,
        bias: bool = True,
        device=None,
        dtype=None,
    ):
        super().__init__()
        kw = dict(device=device, dtype=dtype)
        self.self_attn = MultiheadAttention(
            d_model, nhead, dropout=dropout, bias=bias, batch_first=batch_first, **kw
        )
        self.linear1 = Linear(d_model, dim_feedforward, bias=bias, **kw)
        self.dropout = Dropout(dropout)
        self.linear2 = Linear(dim_feedforward, d_model, bias=bias, **kw)
        self.norm_first = norm_first
        self.norm1 = LayerNorm(d_model, eps=layer_norm_eps, bias=bias, **kw)
        self.norm2 = LayerNorm(d_model, eps=layer_norm_eps, bias=bias, **kw)
        self.dropout1 = Dropout(dropout)
        self.dropout2 = Dropout(dropout)
        if isinstance(activation, str):
            if activation not in ("relu", "gelu"):
                raise RuntimeError(f"activation should be relu/gelu, not {activation}")
            activation = F.relu if activation == "relu" else F.gelu
        self.activation = activation
        self.activation_relu_or_gelu = (
            1
            if activation in (F.relu,) or isinstance(activation, ReLU)
            else 2
            if activation is F.gelu
            else 0
        )

    def _sa_block(self, x, attn_mask, key_padding_mask, is_causal):
        out = self.self_attn(
            x,
            x,
            x,
            attn_mask=attn_mask,
            key_padding_mask=key_padding_mask,
            need_weights=False,
            is_causal=is_causal,
        )[0]
        return self.dropout1(out)

    def _ff_block(self, x):
        return self.dropout2(self.linear2(self.dropout(self.activation(self.linear1(x)))))

    def forward(self, src, src_mask=None, src_key_padding_mask=None, is_causal: bool = False):
        x = src
        if self.norm_first:
            x = x + self._sa_block(self.norm1(x), src_mask, src_key_padding_mask, is_causal)
            x = x + self._ff_block(self.norm2(x))
        else:
            x = self.norm1(x + self._sa_block(x, src_mask, src_key_padding_mask, is_causal))
            x = self.norm2(x + self._ff_block(x))
        return x
