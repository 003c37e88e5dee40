"""A transformer encoder layer's inference forward as one call (PyTorch's "fast path").

In evaluation with nothing to differentiate, ``nn.TransformerEncoderLayer`` hands its whole
forward here: self-attention, the residual adds, both layer norms and the feed-forward block
run on arrays, with no graph, no per-op dispatch and no dropout. The batch is cut into one
span of sequences per thread of ember's pool and each thread runs the whole layer on its span
with NumPy's BLAS on one thread (a sequence's rows meet other sequences' rows nowhere), so the
threads never wait on each other inside the layer, and no OpenBLAS worker is left spinning
against ember's threads between the layer's GEMMs and its row passes. The row passes (bias and
ReLU, softmax, residual add and layer norm) are ember's compiled kernels when they are on,
else the NumPy passes of the ordinary path; each value is computed as that path computes it
(rows of a GEMM may round differently when BLAS blocks them differently).
"""

from __future__ import annotations

import math

from .. import _backend
from .._kernels import jit
from .._kernels.blocked import errors_ignored, is_plain_numpy
from .._tensor import Tensor
from ._dispatch import array_module, wrap
from .attention import _heads, _part, _softmax_scores
from .linalg import gemm, linear
from .normalization import layer_norm_rows

__all__ = ["encoder_layer_inference"]

_LINEAR_CODE = linear.__code__
# Below this many input elements a span is not worth a hand-off to another thread.
MIN_SPAN_ELEMENTS = 1 << 13


class _Kernels:
    """The compiled kernel modules a call uses (None each: the NumPy passes), chosen once on
    the calling thread (:func:`jit.disabled` is per thread) with the ordinary path's sizes."""

    __slots__ = ("attention", "linear", "norm", "parallel")

    def __init__(self, batch: int, length: int, embed: int, heads: int, hidden: int, parallel):
        rows = batch * length
        self.attention = jit.module("attention_jit", batch * heads * length * length)
        self.linear = jit.module("linear_jit", rows * hidden)
        self.norm = jit.module("layernorm_jit", rows * embed)
        self.parallel = parallel  # whether a kernel may split its rows over ember's pool


def _layer_norm(k: _Kernels, xp, rows, norm, out=None):
    weight, bias, eps = norm
    if k.norm is None:
        return layer_norm_rows(xp, rows, weight, bias, eps, out)
    normed = k.norm.layer_norm_forward(rows, weight, bias, eps, k.parallel)[0]
    if out is None:
        return normed
    out[...] = normed
    return out


def _residual_norm(k: _Kernels, xp, x, bias, residual, norm, out=None):
    """``x += bias + residual`` (in place), then its layer norm (into ``out`` if given)."""
    weight, norm_bias, eps = norm
    if k.norm is None:
        x += bias
        x += residual
        return layer_norm_rows(xp, x, weight, norm_bias, eps, out)
    if out is None:
        out = xp.empty(x.shape, x.dtype)
    return k.norm.residual_layer_norm_(x, bias, residual, weight, norm_bias, eps, out, k.parallel)


def _self_attention(k: _Kernels, xp, rows, batch: int, heads: int, mask, p):
    """The attention's heads merged, times the output projection (its bias not added):
    ``rows`` (batch·L, E) of ``batch`` whole sequences; ``mask``: additive, broadcasting to
    their (batch, heads, L, L) scores, or None."""
    embed = rows.shape[1]
    length = rows.shape[0] // batch
    qkv = gemm(xp, rows, p["in_proj_weight"].T)
    qkv += p["in_proj_bias"]
    qkv = qkv.reshape(batch, length, 3 * embed)
    q, key, value = (_heads(qkv, i, 3, heads, True) for i in range(3))
    scores = xp.matmul(q, key.swapaxes(-1, -2))
    scale = 1.0 / math.sqrt(embed // heads)
    if k.parallel:
        _softmax_scores(xp, scores, scale, mask)
    else:
        _softmax_scores(xp, scores, scale, mask, k.attention)
    merged = xp.empty((batch, length, embed), rows.dtype)
    xp.matmul(scores, value, out=_heads(merged, 0, 1, heads, True))
    return gemm(xp, merged.reshape(rows.shape), p["out_proj_weight"].T)


def _feed_forward(k: _Kernels, xp, rows, p):
    """``relu(rows W1ᵀ + b1) W2ᵀ`` (linear2's bias not added)."""
    hidden = gemm(xp, rows, p["linear1_weight"].T)
    if k.linear is not None:
        k.linear.bias_relu_(hidden, p["linear1_bias"], k.parallel)
    else:
        hidden += p["linear1_bias"]
        xp.maximum(hidden, 0, out=hidden)
    return gemm(xp, hidden, p["linear2_weight"].T)


def _layer_rows(k: _Kernels, xp, rows, batch: int, heads: int, mask, p, norm_first, out):
    """The layer on ``rows`` (batch·L, E), its output written to ``out`` (same shape)."""
    norm1, norm2 = p["norm1"], p["norm2"]
    if norm_first:  # x + sa(norm1(x)), then + ff(norm2(·))
        normed = _layer_norm(k, xp, rows, norm1)
        attended = _self_attention(k, xp, normed, batch, heads, mask, p)
        normed = _residual_norm(k, xp, attended, p["out_proj_bias"], rows, norm2)
        fed = _feed_forward(k, xp, normed, p)
        fed += p["linear2_bias"]
        xp.add(attended, fed, out=out)  # attended now holds x + sa(norm1(x))
        return
    attended = _self_attention(k, xp, rows, batch, heads, mask, p)
    hidden = _residual_norm(k, xp, attended, p["out_proj_bias"], rows, norm1)
    fed = _feed_forward(k, xp, hidden, p)
    _residual_norm(k, xp, fed, p["linear2_bias"], hidden, norm2, out)


def _arrays(src: Tensor, params: dict):
    """The arrays of ``src`` and ``params`` when the arrays path can take them: plain NumPy
    (not CuPy, not ember.compile's recording), one float32/float64 dtype, consistent shapes,
    something to compute; else None."""
    x = src._data
    if not is_plain_numpy(x) or x.dtype.char not in "fd" or x.ndim != 3 or x.size == 0:
        return None
    arrays = {}
    for name, value in params.items():
        tensors = value[:2] if isinstance(value, tuple) else (value,)
        for t in tensors:
            if not isinstance(t, Tensor) or not is_plain_numpy(t._data) or t._data.dtype != x.dtype:
                return None
        data = tuple(t._data for t in tensors)
        arrays[name] = data + (float(value[2]),) if isinstance(value, tuple) else data[0]
    embed = x.shape[2]
    hidden = arrays["linear1_weight"].shape[0]
    expected = {
        "in_proj_weight": (3 * embed, embed),
        "in_proj_bias": (3 * embed,),
        "out_proj_weight": (embed, embed),
        "out_proj_bias": (embed,),
        "linear1_weight": (hidden, embed),
        "linear1_bias": (hidden,),
        "linear2_weight": (embed, hidden),
        "linear2_bias": (embed,),
    }
    for name, shape in expected.items():
        if arrays[name].shape != shape:
            return None
    for norm in ("norm1", "norm2"):
        weight, bias, _ = arrays[norm]
        if weight.shape != (embed,) or bias.shape != (embed,):
            return None
    return x, arrays


def _additive(mask: Tensor, x):
    """``mask``'s array as the attention adds it (bool: True masks out, -inf), as
    multi_head_attention_forward converts it; None when that path would convert it otherwise
    (or raise)."""
    data = mask._data
    if not is_plain_numpy(data):
        return None
    if data.dtype.kind == "b":
        return array_module(data).where(data, float("-inf"), 0.0).astype(x.dtype)
    return data if data.dtype == x.dtype else None


def _mask(src_mask, padding, batch: int, heads: int, length: int, x):
    """The additive (1 | batch, 1 | heads, L, L) mask of the layer's attention (or None), as
    the packed self-attention builds it; False when the call must take the ordinary path
    (which checks and converts the masks, or raises)."""
    mask = None
    if src_mask is not None:
        mask = _additive(src_mask, x) if isinstance(src_mask, Tensor) else None
        if mask is None:
            return False
        if mask.shape == (length, length):
            mask = mask.reshape(1, length, length)
        elif mask.shape == (batch * heads, length, length):
            mask = mask.reshape(batch, heads, length, length)
        else:
            return False
    if padding is not None:
        pad = _additive(padding, x) if isinstance(padding, Tensor) else None
        if pad is None or pad.shape != (batch, length):
            return False
        pad = pad.reshape(batch, 1, 1, length)
        mask = pad if mask is None else mask + pad
    return mask


def encoder_layer_inference(
    src: Tensor,
    heads: int,
    batch_first: bool,
    norm_first: bool,
    params: dict,
    src_mask: Tensor | None = None,
    src_key_padding_mask: Tensor | None = None,
) -> Tensor | None:
    """The output of a ReLU ``TransformerEncoderLayer``, computed on arrays, or None when the
    arrays path cannot take the call (the caller runs its ordinary forward).

    ``params``: ``in_proj_weight``, ``in_proj_bias``, ``out_proj_weight``, ``out_proj_bias``,
    ``linear1_weight``, ``linear1_bias``, ``linear2_weight``, ``linear2_bias`` (tensors) and
    ``norm1``, ``norm2`` (``(weight, bias, eps)`` each). The masks are those of the layer's
    forward. The caller checks what only the module knows (evaluation mode, no hooks, nothing
    that requires grad while grad mode is on).
    """
    if linear.__code__ is not _LINEAR_CODE:  # autocast, the profiler or an ONNX export is on
        return None
    found = _arrays(src, params)
    if found is None:
        return None
    x, p = found
    embed = x.shape[2]
    if embed % heads:
        return None
    batch, length = (x.shape[0], x.shape[1]) if batch_first else (x.shape[1], x.shape[0])
    mask = _mask(src_mask, src_key_padding_mask, batch, heads, length, x)
    if mask is False:
        return None
    xp = array_module(x)
    threads = _backend.get_num_threads()
    count = max(1, min(threads, batch, x.size // MIN_SPAN_ELEMENTS))
    step = -(-batch // count)
    spans = [(start, min(start + step, batch)) for start in range(0, batch, step)]
    hidden = p["linear1_weight"].shape[0]
    kernels = _Kernels(batch, length, embed, heads, hidden, len(spans) < 2)
    out = xp.empty(x.shape, x.dtype)

    def span(start: int, stop: int) -> None:
        with errors_ignored():  # the caller's errstate does not reach ember's threads
            if batch_first:
                rows, target = x[start:stop], out[start:stop]
            else:  # (L, N, E): the span's sequences one after another
                rows, target = x[:, start:stop].transpose(1, 0, 2), None
            rows = xp.ascontiguousarray(rows).reshape(-1, embed)
            result = target.reshape(-1, embed) if target is not None else xp.empty_like(rows)
            part = _part(mask, start, stop, 4)
            _layer_rows(kernels, xp, rows, stop - start, heads, part, p, norm_first, result)
            if target is None:
                out[:, start:stop] = result.reshape(stop - start, length, embed).transpose(1, 0, 2)

    _backend.run_spans(span, spans)
    return wrap(out)
