"""MultiheadAttention and the Transformer stack (PyTorch's parameters, layout and math).

Encoder and decoder layers are post-norm by default (``norm_first=True`` for pre-norm);
the stacks hold deep copies of one layer, as PyTorch does, so checkpoints load unchanged.
"""

from __future__ import annotations

import copy

from ... import _creation
from ..._tensor import Tensor
from ...ops._dispatch import grad_state
from ...ops.attention import multi_head_attention_forward
from ...ops.encoder_inference import encoder_layer_inference
from ...ops.linear_activation import linear_relu
from .. import functional as F
from .. import init
from ..parameter import Parameter
from .container import ModuleList
from .dropout import Dropout
from .linear import Linear, NonDynamicallyQuantizableLinear
from .module import Module
from .normalization import LayerNorm

__all__ = [
    "MultiheadAttention",
    "Transformer",
    "TransformerEncoder",
    "TransformerDecoder",
    "TransformerEncoderLayer",
    "TransformerDecoderLayer",
]


class MultiheadAttention(Module):
    """Attention over ``num_heads`` subspaces of width ``embed_dim // num_heads``.

    Example::
        >>> mha = ember.nn.MultiheadAttention(8, 2, batch_first=True)
        >>> x = ember.randn(3, 5, 8)
        >>> out, weights = mha(x, x, x)  # out (3, 5, 8), weights (3, 5, 5)
    """

    def __init__(
        self,
        embed_dim: int,
        num_heads: int,
        dropout: float = 0.0,
        bias: bool = True,
        add_bias_kv: bool = False,
        add_zero_attn: bool = False,
        kdim: int | None = None,
        vdim: int | None = None,
        batch_first: bool = False,
        device=None,
        dtype=None,
    ) -> None:
        super().__init__()
        if embed_dim <= 0 or num_heads <= 0:
            raise ValueError(
                f"embed_dim and num_heads must be greater than 0, got embed_dim={embed_dim} "
                f"and num_heads={num_heads} instead"
            )
        kw = dict(device=device, dtype=dtype)
        self.embed_dim = embed_dim
        self.kdim = kdim if kdim is not None else embed_dim
        self.vdim = vdim if vdim is not None else embed_dim
        self._qkv_same_embed_dim = self.kdim == embed_dim and self.vdim == embed_dim
        self.num_heads, self.dropout, self.batch_first = num_heads, dropout, batch_first
        self.head_dim = embed_dim // num_heads
        if self.head_dim * num_heads != embed_dim:
            raise AssertionError("embed_dim must be divisible by num_heads")
        if self._qkv_same_embed_dim:
            self.in_proj_weight = Parameter(_creation.empty(3 * embed_dim, embed_dim, **kw))
            for name in ("q_proj_weight", "k_proj_weight", "v_proj_weight"):
                self.register_parameter(name, None)
        else:
            self.q_proj_weight = Parameter(_creation.empty(embed_dim, embed_dim, **kw))
            self.k_proj_weight = Parameter(_creation.empty(embed_dim, self.kdim, **kw))
            self.v_proj_weight = Parameter(_creation.empty(embed_dim, self.vdim, **kw))
            self.register_parameter("in_proj_weight", None)
        if bias:
            self.in_proj_bias = Parameter(_creation.empty(3 * embed_dim, **kw))
        else:
            self.register_parameter("in_proj_bias", None)
        self.out_proj = NonDynamicallyQuantizableLinear(embed_dim, embed_dim, bias=bias, **kw)
        if add_bias_kv:
            self.bias_k = Parameter(_creation.empty(1, 1, embed_dim, **kw))
            self.bias_v = Parameter(_creation.empty(1, 1, embed_dim, **kw))
        else:
            self.bias_k = self.bias_v = None
        self.add_zero_attn = add_zero_attn
        self._reset_parameters()

    def _reset_parameters(self) -> None:
        if self._qkv_same_embed_dim:
            init.xavier_uniform_(self.in_proj_weight)
        else:
            init.xavier_uniform_(self.q_proj_weight)
            init.xavier_uniform_(self.k_proj_weight)
            init.xavier_uniform_(self.v_proj_weight)
        if self.in_proj_bias is not None:
            init.constant_(self.in_proj_bias, 0.0)
            init.constant_(self.out_proj.bias, 0.0)
        if self.bias_k is not None:
            init.xavier_normal_(self.bias_k)
            init.xavier_normal_(self.bias_v)

    def forward(
        self,
        query: Tensor,
        key: Tensor,
        value: Tensor,
        key_padding_mask: Tensor | None = None,
        need_weights: bool = True,
        attn_mask: Tensor | None = None,
        average_attn_weights: bool = True,
        is_causal: bool = False,
    ) -> tuple[Tensor, Tensor | None]:
        batched = query.dim() == 3
        if self.batch_first and batched:
            if query is key and key is value:  # self-attention stays recognisable as such
                query = key = value = query.transpose(1, 0)
            else:
                query, key, value = (x.transpose(1, 0) for x in (query, key, value))
        out, weights = multi_head_attention_forward(
            query,
            key,
            value,
            self.embed_dim,
            self.num_heads,
            self.in_proj_weight,
            self.in_proj_bias,
            self.bias_k,
            self.bias_v,
            self.add_zero_attn,
            self.dropout,
            self.out_proj.weight,
            self.out_proj.bias,
            training=self.training,
            key_padding_mask=key_padding_mask,
            need_weights=need_weights,
            attn_mask=attn_mask,
            use_separate_proj_weight=not self._qkv_same_embed_dim,
            q_proj_weight=self.q_proj_weight,
            k_proj_weight=self.k_proj_weight,
            v_proj_weight=self.v_proj_weight,
            average_attn_weights=average_attn_weights,
            is_causal=is_causal,
        )
        if self.batch_first and batched:
            out = out.transpose(1, 0)
        return out, weights


def _has_hooks(module: Module) -> bool:
    return bool(
        module._forward_pre_hooks
        or module._forward_hooks
        or module._backward_hooks
        or module._backward_pre_hooks
    )


def _hidden(layer, x: Tensor) -> Tensor:
    """``layer.activation(layer.linear1(x))``, the feed-forward block's first half: one node
    for a plain Linear and ReLU (``layer._fused_linear_relu()``, the same values)."""
    if layer._fused_linear_relu():
        return linear_relu(x, layer.linear1.weight, layer.linear1.bias)
    return layer.activation(layer.linear1(x))


def _get_activation_fn(activation):
    if isinstance(activation, str):
        if activation == "relu":
            return F.relu
        if activation == "gelu":
            return F.gelu
        raise RuntimeError(f"activation should be relu/gelu, not {activation}")
    return activation


def _detect_is_causal_mask(mask: Tensor | None, is_causal: bool | None, size: int | None):
    """``is_causal`` if given, else whether ``mask`` equals the square subsequent mask."""
    if is_causal is not None or mask is None:
        return bool(is_causal)
    size = size if size is not None else mask.shape[-2]
    causal = Transformer.generate_square_subsequent_mask(size, dtype=mask.dtype)
    if mask.dtype.name == "bool":
        causal = causal.isinf()
    return tuple(mask.shape) == (size, size) and bool((mask.cpu() == causal).all())


def _sequence_length(layers: ModuleList, x: Tensor) -> int:
    """The length of the sequence ``x`` as the stack's first layer reads it (dim 1 of batched
    input with ``batch_first``, else dim 0)."""
    batch_first = getattr(getattr(layers[0], "self_attn", None), "batch_first", False)
    return x.shape[1 if batch_first and x.dim() == 3 else 0]


class _TransformerLayer(Module):
    """What encoder and decoder layers share: the feed-forward block's modules, the
    self-attention block and the test for running linear1 and a ReLU as one node."""

    def _add_blocks(
        self,
        attentions: tuple,
        d_model: int,
        nhead: int,
        dim_feedforward: int,
        dropout: float,
        layer_norm_eps: float,
        batch_first: bool,
        norm_first: bool,
        bias: bool,
        kw: dict,
    ) -> None:
        """The submodules in PyTorch's order: a MultiheadAttention for each name in
        ``attentions``, the feed-forward block (linear1, dropout, linear2), then a LayerNorm
        and a Dropout for each block (norm1, norm2, ... and dropout1, dropout2, ...; the
        feed-forward block is the last)."""
        for name in attentions:
            attention = MultiheadAttention(
                d_model, nhead, dropout=dropout, bias=bias, batch_first=batch_first, **kw
            )
            setattr(self, name, attention)
        self.linear1 = Linear(d_model, dim_feedforward, bias=bias, **kw)
        self.dropout = Dropout(dropout)
        self.linear2 = Linear(dim_feedforward, d_model, bias=bias, **kw)
        self.norm_first = norm_first
        blocks = range(1, len(attentions) + 2)
        for i in blocks:
            setattr(self, f"norm{i}", LayerNorm(d_model, eps=layer_norm_eps, bias=bias, **kw))
        for i in blocks:
            setattr(self, f"dropout{i}", Dropout(dropout))

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

    def _fused_linear_relu(self) -> bool:
        """Whether linear1 and a ReLU activation may run as one node (the same values): a
        plain Linear with a bias, and no hooks on it or on the activation to call."""
        from .activation import ReLU  # see TransformerEncoderLayer.__init__

        linear1, activation = self.linear1, self.activation
        if type(linear1) is not Linear or linear1.bias is None or _has_hooks(linear1):
            return False
        if activation is F.relu:
            return True
        return type(activation) is ReLU and not _has_hooks(activation)


class TransformerEncoderLayer(_TransformerLayer):
    """Self-attention and a feed-forward block, each with a residual and a LayerNorm.

    Example::
        >>> layer = ember.nn.TransformerEncoderLayer(d_model=8, nhead=2, batch_first=True)
        >>> layer(ember.randn(3, 5, 8)).shape
        ember.Size([3, 5, 8])
    """

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
    ) -> None:
        super().__init__()
        self._add_blocks(
            ("self_attn",),
            d_model,
            nhead,
            dim_feedforward,
            dropout,
            layer_norm_eps,
            batch_first,
            norm_first,
            bias,
            dict(device=device, dtype=dtype),
        )
        activation = _get_activation_fn(activation)
        # imported here so that activation.py may re-export MultiheadAttention (as torch does)
        from .activation import GELU, ReLU

        if activation is F.relu or isinstance(activation, ReLU):
            self.activation_relu_or_gelu = 1
        elif activation is F.gelu or isinstance(activation, GELU):
            self.activation_relu_or_gelu = 2
        else:
            self.activation_relu_or_gelu = 0
        self.activation = activation

    def _ff_block(self, x):
        return self.dropout2(self.linear2(self.dropout(_hidden(self, x))))

    def _inference_params(self) -> dict | None:
        """The parameters for ``encoder_layer_inference`` when the layer may run as one call
        (PyTorch's fast path): PyTorch's own submodules, unchanged and without hooks, a ReLU
        feed-forward, no attention extras; else None. (Read from the modules' dicts: this
        runs on every call, and ``Module.__getattr__`` costs ~1 µs a lookup.)"""
        if (
            type(self)._sa_block is not TransformerEncoderLayer._sa_block
            or type(self)._ff_block is not TransformerEncoderLayer._ff_block
            or not self._fused_linear_relu()
        ):
            return None
        modules = self._modules
        attn, linear1, linear2 = modules["self_attn"], modules["linear1"], modules["linear2"]
        if type(attn) is not MultiheadAttention or type(linear2) is not Linear:
            return None
        out_proj = attn._modules["out_proj"]
        if type(out_proj) is not NonDynamicallyQuantizableLinear:
            return None
        if not attn._qkv_same_embed_dim or attn.bias_k is not None or attn.add_zero_attn:
            return None
        norms = (modules["norm1"], modules["norm2"])
        dropouts = (modules["dropout"], modules["dropout1"], modules["dropout2"])
        for module in (attn, out_proj, linear2, *norms, *dropouts):
            if _has_hooks(module) or "forward" in module.__dict__:
                return None
        for dropout in dropouts:
            if type(dropout) is not Dropout:
                return None
        for norm in norms:
            if type(norm) is not LayerNorm:
                return None
        params = {
            "in_proj_weight": attn._parameters["in_proj_weight"],
            "in_proj_bias": attn._parameters["in_proj_bias"],
            "out_proj_weight": out_proj._parameters["weight"],
            "out_proj_bias": out_proj._parameters["bias"],
            "linear1_weight": linear1._parameters["weight"],
            "linear1_bias": linear1._parameters["bias"],
            "linear2_weight": linear2._parameters["weight"],
            "linear2_bias": linear2._parameters["bias"],
        }
        for name, norm in zip(("norm1", "norm2"), norms):
            weight, bias = norm._parameters.get("weight"), norm._parameters.get("bias")
            params[name] = (weight, bias, norm.eps)
        for value in params.values():
            if value is None or value.__class__ is tuple and (value[0] is None or value[1] is None):
                return None
        return params

    def _inference(self, src: Tensor, src_mask, src_key_padding_mask, is_causal) -> Tensor | None:
        """The layer's output by ``encoder_layer_inference`` (evaluation, nothing to
        differentiate), or None: the ordinary forward runs (and raises what it raises)."""
        if self.training or (is_causal and src_mask is None):
            return None
        if not isinstance(src, Tensor) or src.dim() != 3:
            return None
        params = self._inference_params()
        if params is None:
            return None
        if grad_state.enabled and (
            src.requires_grad
            or any(p.requires_grad for p in self.parameters())
            or any(getattr(m, "requires_grad", False) for m in (src_mask, src_key_padding_mask))
        ):
            return None
        attn = self.self_attn
        return encoder_layer_inference(
            src,
            attn.num_heads,
            attn.batch_first,
            self.norm_first,
            params,
            src_mask,
            src_key_padding_mask,
        )

    def forward(
        self,
        src: Tensor,
        src_mask: Tensor | None = None,
        src_key_padding_mask: Tensor | None = None,
        is_causal: bool = False,
    ) -> Tensor:
        out = self._inference(src, src_mask, src_key_padding_mask, is_causal)
        if out is not None:
            return out
        x = src
        if self.norm_first:
            x = x + self._sa_block(self.norm1(x), src_mask, src_key_padding_mask, is_causal)
            x = x + self._ff_block(self.norm2(x))
        else:
            x = self.norm1(x + self._sa_block(x, src_mask, src_key_padding_mask, is_causal))
            x = self.norm2(x + self._ff_block(x))
        return x


class TransformerDecoderLayer(_TransformerLayer):
    """Self-attention, attention over the encoder's memory, and a feed-forward block.

    Example::
        >>> layer = ember.nn.TransformerDecoderLayer(d_model=8, nhead=2)
        >>> layer(ember.randn(4, 3, 8), ember.randn(6, 3, 8)).shape
        ember.Size([4, 3, 8])
    """

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
    ) -> None:
        super().__init__()
        self._add_blocks(
            ("self_attn", "multihead_attn"),
            d_model,
            nhead,
            dim_feedforward,
            dropout,
            layer_norm_eps,
            batch_first,
            norm_first,
            bias,
            dict(device=device, dtype=dtype),
        )
        self.activation = _get_activation_fn(activation)

    def _mha_block(self, x, mem, attn_mask, key_padding_mask, is_causal):
        out = self.multihead_attn(
            x,
            mem,
            mem,
            attn_mask=attn_mask,
            key_padding_mask=key_padding_mask,
            is_causal=is_causal,
            need_weights=False,
        )[0]
        return self.dropout2(out)

    def _ff_block(self, x):
        return self.dropout3(self.linear2(self.dropout(_hidden(self, x))))

    def forward(
        self,
        tgt: Tensor,
        memory: Tensor,
        tgt_mask: Tensor | None = None,
        memory_mask: Tensor | None = None,
        tgt_key_padding_mask: Tensor | None = None,
        memory_key_padding_mask: Tensor | None = None,
        tgt_is_causal: bool = False,
        memory_is_causal: bool = False,
    ) -> Tensor:
        x = tgt
        if self.norm_first:
            x = x + self._sa_block(self.norm1(x), tgt_mask, tgt_key_padding_mask, tgt_is_causal)
            x = x + self._mha_block(
                self.norm2(x), memory, memory_mask, memory_key_padding_mask, memory_is_causal
            )
            x = x + self._ff_block(self.norm3(x))
        else:
            x = self.norm1(x + self._sa_block(x, tgt_mask, tgt_key_padding_mask, tgt_is_causal))
            x = self.norm2(
                x
                + self._mha_block(x, memory, memory_mask, memory_key_padding_mask, memory_is_causal)
            )
            x = self.norm3(x + self._ff_block(x))
        return x


def _get_clones(module: Module, n: int) -> ModuleList:
    return ModuleList([copy.deepcopy(module) for _ in range(n)])


class TransformerEncoder(Module):
    """``num_layers`` copies of an encoder layer, then an optional norm.

    ``enable_nested_tensor`` is accepted for compatibility; the encoder does not convert its
    input to a nested tensor (``ember.nested``), so padded positions are computed (not zeroed)
    in every mode.
    """

    def __init__(
        self,
        encoder_layer: TransformerEncoderLayer,
        num_layers: int,
        norm: Module | None = None,
        enable_nested_tensor: bool = True,
        mask_check: bool = True,
    ) -> None:
        super().__init__()
        self.layers = _get_clones(encoder_layer, num_layers)
        self.num_layers = num_layers
        self.norm = norm
        self.enable_nested_tensor = enable_nested_tensor
        self.use_nested_tensor = False
        self.mask_check = mask_check

    def forward(
        self,
        src: Tensor,
        mask: Tensor | None = None,
        src_key_padding_mask: Tensor | None = None,
        is_causal: bool | None = None,
    ) -> Tensor:
        is_causal = _detect_is_causal_mask(mask, is_causal, _sequence_length(self.layers, src))
        output = src
        for layer in self.layers:
            output = layer(
                output,
                src_mask=mask,
                is_causal=is_causal,
                src_key_padding_mask=src_key_padding_mask,
            )
        return self.norm(output) if self.norm is not None else output


class TransformerDecoder(Module):
    """``num_layers`` copies of a decoder layer, then an optional norm."""

    def __init__(
        self, decoder_layer: TransformerDecoderLayer, num_layers: int, norm: Module | None = None
    ) -> None:
        super().__init__()
        self.layers = _get_clones(decoder_layer, num_layers)
        self.num_layers = num_layers
        self.norm = norm

    def forward(
        self,
        tgt: Tensor,
        memory: Tensor,
        tgt_mask: Tensor | None = None,
        memory_mask: Tensor | None = None,
        tgt_key_padding_mask: Tensor | None = None,
        memory_key_padding_mask: Tensor | None = None,
        tgt_is_causal: bool | None = None,
        memory_is_causal: bool = False,
    ) -> Tensor:
        seq_len = _sequence_length(self.layers, tgt)
        tgt_is_causal = _detect_is_causal_mask(tgt_mask, tgt_is_causal, seq_len)
        output = tgt
        for layer in self.layers:
            output = layer(
                output,
                memory,
                tgt_mask=tgt_mask,
                memory_mask=memory_mask,
                tgt_key_padding_mask=tgt_key_padding_mask,
                memory_key_padding_mask=memory_key_padding_mask,
                tgt_is_causal=tgt_is_causal,
                memory_is_causal=memory_is_causal,
            )
        return self.norm(output) if self.norm is not None else output


class Transformer(Module):
    """The encoder-decoder Transformer of "Attention Is All You Need" (PyTorch's layout).

    Example::
        >>> model = ember.nn.Transformer(d_model=16, nhead=2, num_encoder_layers=1,
        ...                              num_decoder_layers=1, dim_feedforward=32)
        >>> out = model(ember.randn(6, 3, 16), ember.randn(4, 3, 16))  # (4, 3, 16)
    """

    def __init__(
        self,
        d_model: int = 512,
        nhead: int = 8,
        num_encoder_layers: int = 6,
        num_decoder_layers: int = 6,
        dim_feedforward: int = 2048,
        dropout: float = 0.1,
        activation="relu",
        custom_encoder: Module | None = None,
        custom_decoder: Module | None = None,
        layer_norm_eps: float = 1e-5,
        batch_first: bool = False,
        norm_first: bool = False,
        bias: bool = True,
        device=None,
        dtype=None,
    ) -> None:
        super().__init__()
        kw = dict(device=device, dtype=dtype)
        layer_kw = dict(
            dim_feedforward=dim_feedforward,
            dropout=dropout,
            activation=activation,
            layer_norm_eps=layer_norm_eps,
            batch_first=batch_first,
            norm_first=norm_first,
            bias=bias,
            **kw,
        )
        if custom_encoder is not None:
            self.encoder = custom_encoder
        else:
            self.encoder = TransformerEncoder(
                TransformerEncoderLayer(d_model, nhead, **layer_kw),
                num_encoder_layers,
                LayerNorm(d_model, eps=layer_norm_eps, bias=bias, **kw),
            )
        if custom_decoder is not None:
            self.decoder = custom_decoder
        else:
            self.decoder = TransformerDecoder(
                TransformerDecoderLayer(d_model, nhead, **layer_kw),
                num_decoder_layers,
                LayerNorm(d_model, eps=layer_norm_eps, bias=bias, **kw),
            )
        self._reset_parameters()
        self.d_model, self.nhead, self.batch_first = d_model, nhead, batch_first

    def _reset_parameters(self) -> None:
        for p in self.parameters():
            if p.dim() > 1:
                init.xavier_uniform_(p)

    @staticmethod
    def generate_square_subsequent_mask(sz: int, device=None, dtype=None) -> Tensor:
        """A float (sz, sz) mask: 0 on and below the diagonal, -inf above it."""
        return _creation.full(
            (sz, sz), float("-inf"), device=device, dtype=dtype or "float32"
        ).triu(1)

    def forward(
        self,
        src: Tensor,
        tgt: Tensor,
        src_mask: Tensor | None = None,
        tgt_mask: Tensor | None = None,
        memory_mask: Tensor | None = None,
        src_key_padding_mask: Tensor | None = None,
        tgt_key_padding_mask: Tensor | None = None,
        memory_key_padding_mask: Tensor | None = None,
        src_is_causal: bool | None = None,
        tgt_is_causal: bool | None = None,
        memory_is_causal: bool = False,
    ) -> Tensor:
        batched = src.dim() == 3
        batch_dim = 0 if self.batch_first else 1
        if batched and src.shape[batch_dim] != tgt.shape[batch_dim]:
            raise RuntimeError("the batch number of src and tgt must be equal")
        if src.shape[-1] != self.d_model or tgt.shape[-1] != self.d_model:
            raise RuntimeError("the feature number of src and tgt must be equal to d_model")
        memory = self.encoder(
            src, mask=src_mask, src_key_padding_mask=src_key_padding_mask, is_causal=src_is_causal
        )
        return self.decoder(
            tgt,
            memory,
            tgt_mask=tgt_mask,
            memory_mask=memory_mask,
            tgt_key_padding_mask=tgt_key_padding_mask,
            memory_key_padding_mask=memory_key_padding_mask,
            tgt_is_causal=tgt_is_causal,
            memory_is_causal=memory_is_causal,
        )
