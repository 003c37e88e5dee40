"""Attention: scaled dot-product attention and the multi-head attention forward.

The attention proper, dropout(softmax(Q Kᵀ · scale + mask)) V, is one fused node on NumPy
float32/float64 data (``_fused_attention``): its forward is two batched GEMMs around one
softmax pass (compiled when ember's kernels are on), and its backward the four GEMMs of the
closed form around one pass for the softmax's gradient, so that no score-sized temporary but
the probabilities is kept and no graph of eight nodes is walked. Self-attention in
``multi_head_attention_forward`` projects Q, K and V with one GEMM over the flattened leading
dims, and the fused node reads the heads from that packed projection and writes them merged
((L, N, E) or (N, L, E)) through strided views, so that splitting and merging heads copies
nothing. Under ``create_graph`` the node's backward is written with ember ops (gradients of
every order). Other cases (a mask that requires grad, broadcast batch dims, half floats, CuPy)
run the composition of differentiable ember ops that the fused node is checked against.
"""

from __future__ import annotations

import math

from .. import _backend, _creation
from .._kernels import jit
from .._kernels.blocked import errors_ignored, is_plain_numpy
from .._tensor import Tensor
from ..autograd.node import Node
from . import dropout as _dropout_ops
from ._dispatch import array_module, grad_state, result, wrap
from ._recorded import kernel_call as _kernel_call
from ._recorded import recorder as _recorder
from .activation import softmax
from .elementwise import where
from .indexing import pad
from .linalg import _records, bmm, linear
from .shape import cat

__all__ = ["scaled_dot_product_attention", "multi_head_attention_forward"]


def _dropout(x: Tensor, p: float) -> Tensor:
    return _dropout_ops.dropout(x, p, True) if p > 0 else x


def _safe_softmax(scores: Tensor) -> Tensor:
    """Softmax over the last dim whose fully masked (all -inf) rows are 0 instead of NaN."""
    dead = (scores == float("-inf")).all(-1, keepdim=True)
    if not dead._data.any():  # (on the array: a meta tensor has no dead rows to find)
        return softmax(scores, -1)
    # zero the dead rows before softmax too, so that no NaN reaches the backward pass
    return where(dead, 0.0, softmax(where(dead, 0.0, scores), -1))


# --------------------------------------------------------------------------------------------
# The fused attention node
# --------------------------------------------------------------------------------------------
def _heads(data, part: int, parts: int, heads: int, batch_first: bool):
    """The (N, heads, L, D) view of part ``part`` of a packed projection ``data`` of shape
    (N, L, parts·E) (``batch_first``) or (L, N, parts·E); no copy (``data`` is contiguous)."""
    a, b, width = data.shape
    head_dim = width // (parts * heads)
    split = data.reshape(a, b, parts, heads, head_dim)[:, :, part]
    return split.transpose(0, 2, 1, 3) if batch_first else split.transpose(1, 2, 0, 3)


def _product(xp, a, b, out=None):
    """``a @ b`` (into ``out`` when given, which may be a strided view)."""
    if out is None:
        return xp.matmul(a, b)
    return xp.matmul(a, b, out=out)


_CHOOSE = object()  # "choose the kernels here", as opposed to a caller's choice (or None)


def _softmax_kernels(xp, scores):
    """ember._kernels.attention_jit for a NumPy score array (or ember.compile's recording of
    one) when compiled kernels are on and the scores are large enough; else None."""
    if not (is_plain_numpy(scores) or _recorder(xp) is not None):
        return None
    return jit.module("attention_jit", scores.size)


def _softmax_scores(xp, scores, scale: float, mask, kernels=_CHOOSE) -> None:
    """``scores = softmax(scores · scale + mask)`` over the last axis, in place; a row masked
    everywhere (all -inf) becomes 0, as scaled_dot_product_attention's safe softmax.
    ``kernels``: chosen here (and split over ember's pool) unless a span of a split call
    passes the module its caller chose (or None), to run on this thread only."""
    if scores.size == 0:
        return
    parallel = kernels is _CHOOSE
    if parallel:
        kernels = _softmax_kernels(xp, scores)
    if mask is not None:
        scores *= scale
        scores += mask
        scale = 1.0
    if kernels is None:
        _softmax_scores_numpy(xp, scores, scale)
    elif parallel:
        _kernel_call(xp, kernels.softmax_, scores, scale)
    else:
        kernels.softmax_(scores, scale, False)


def _softmax_scores_numpy(xp, scores, scale: float) -> None:
    """``scores = softmax(scores · scale)`` in place, NumPy's passes (no mask; dead rows 0)."""
    if scale != 1.0:
        scores *= scale
    top = scores.max(axis=-1, keepdims=True)
    dead = top == float("-inf")
    # a dead row: exp(-inf - 0) = 0 everywhere, divided by 1
    scores -= xp.where(dead, 0, top)
    xp.exp(scores, out=scores)
    scores /= xp.where(dead, 1, scores.sum(axis=-1, keepdims=True))


def _softmax_scores_backward(xp, grad, probs, scale: float, noise, kernels=_CHOOSE) -> None:
    """``grad = scale · p (g·noise - Σ g·noise·p)`` in place: from the gradient of dropout's
    output (or softmax's, ``noise`` None) to the scores' (before scaling). ``kernels``: as
    :func:`_softmax_scores`."""
    if grad.size == 0:
        return
    parallel = kernels is _CHOOSE
    if parallel:
        kernels = _softmax_kernels(xp, grad)
    if kernels is not None:
        if parallel:
            _kernel_call(xp, kernels.softmax_backward_, grad, probs, scale, noise)
        else:
            kernels.softmax_backward_(grad, probs, scale, noise, False)
        return
    if noise is not None:
        grad *= noise
    dot = xp.einsum("...j,...j->...", grad, probs)[..., None]
    grad -= dot
    grad *= probs
    if scale != 1.0:
        grad *= scale


def _dropout_noise(probs, p: float, device):
    """The scaled keep-mask of ``F.dropout(probs, p)``, drawn as dropout draws it (the same
    random stream), as an array; None without dropout."""
    if p <= 0:
        return None
    if p >= 1:
        return array_module(probs).zeros_like(probs)
    noise = _dropout_ops._element_noise(wrap(probs), p).to(device)
    return _dropout_ops._with_number(noise, lambda t: t / (1.0 - p))._data


def _batch_spans(xp, q, k) -> list:
    """Spans of the leading axis over which a call may split attention on ember's pool (each
    batch index is a product of its own; BLAS runs these small GEMMs on one thread anyway,
    so unsplit they ran on one core): [] for CuPy, ember.compile's recordings, unbatched or
    small calls, or one thread."""
    if q.ndim < 3 or not (is_plain_numpy(q) and is_plain_numpy(k)):
        return []
    batch = q.shape[0]
    scores = math.prod(q.shape[:-1]) * k.shape[-2]
    count = min(_backend.get_num_threads(), batch, scores // jit.PARALLEL_MIN_ELEMENTS)
    if count < 2:
        return []
    step = -(-batch // count)
    return [(start, min(start + step, batch)) for start in range(0, batch, step)]


def _part(array, start: int, stop: int, ndim: int):
    """``array``'s rows [start, stop) along the scores' leading axis, or ``array`` itself when
    it broadcasts along it (None, fewer dims, or size 1 there)."""
    if array is None or array.ndim < ndim or array.shape[0] == 1:
        return array
    return array[start:stop]


def _attend(xp, q, k, v, mask, scale: float, p: float, device, out=None):
    """dropout(softmax(q kᵀ · scale + mask)) v on arrays (..., L, D); ``out``: an array (or
    strided view) of the result's shape to write it to. Returns (out, probs, noise)."""
    spans = _batch_spans(xp, q, k)
    if not spans:
        probs = _product(xp, q, k.swapaxes(-1, -2))
        _softmax_scores(xp, probs, scale, mask)
        noise = _dropout_noise(probs, p, device)
        dropped = probs if noise is None else probs * noise
        return _product(xp, dropped, v, out), probs, noise
    probs = xp.empty(q.shape[:-1] + (k.shape[-2],), q.dtype)
    if out is None:
        out = xp.empty(q.shape[:-1] + (v.shape[-1],), q.dtype)
    kernels = _softmax_kernels(xp, probs)  # chosen on this thread (jit.disabled is per thread)

    def scores_span(start: int, stop: int) -> None:
        part = probs[start:stop]
        xp.matmul(q[start:stop], k[start:stop].swapaxes(-1, -2), out=part)
        with errors_ignored():
            _softmax_scores(xp, part, scale, _part(mask, start, stop, part.ndim), kernels)
        if p <= 0:
            xp.matmul(part, v[start:stop], out=out[start:stop])

    _backend.run_spans(scores_span, spans)
    noise = _dropout_noise(probs, p, device)  # drawn whole: the random stream's order kept
    if noise is not None:
        dropped = probs * noise
        _backend.run_spans(
            lambda start, stop: xp.matmul(dropped[start:stop], v[start:stop], out=out[start:stop]),
            spans,
        )
    return out, probs, noise


def _attend_backward(xp, g, q, k, v, probs, noise, scale: float, need, grads):
    """The gradients of q, k, v (for ``need[i]``) into ``grads[i]`` (arrays or None: new)."""
    spans = _batch_spans(xp, q, k)
    if not spans:
        return _attend_backward_span(xp, g, q, k, v, probs, noise, scale, need, grads, _CHOOSE)
    grads = [
        (grads[i] if grads[i] is not None else xp.empty(x.shape, probs.dtype)) if need[i] else None
        for i, x in enumerate((q, k, v))
    ]
    kernels = _softmax_kernels(xp, probs)

    def span(start: int, stop: int) -> None:
        parts = [_part(a, start, stop, probs.ndim) for a in (g, q, k, v, probs, noise)]
        targets = [None if a is None else a[start:stop] for a in grads]
        _attend_backward_span(xp, *parts, scale, need, targets, kernels)

    _backend.run_spans(span, spans)
    return tuple(grads)


def _attend_backward_span(xp, g, q, k, v, probs, noise, scale: float, need, grads, kernels):
    gq = gk = gv = None
    if need[2]:
        dropped = probs if noise is None else probs * noise
        gv = _product(xp, dropped.swapaxes(-1, -2), g, grads[2])
    if need[0] or need[1]:
        gs = _product(xp, g, v.swapaxes(-1, -2))
        _softmax_scores_backward(xp, gs, probs, scale, noise, kernels)
        if need[0]:
            gq = _product(xp, gs, k, grads[0])
        if need[1]:
            gk = _product(xp, gs.swapaxes(-1, -2), q, grads[1])
    return gq, gk, gv


def _attend_graph(g, q, k, v, mask, noise, scale: float, need):
    """The same gradients written with ember ops (differentiable again, for create_graph)."""
    scores = (q @ k.transpose(-2, -1)) * scale
    if mask is not None:
        scores = scores + mask
    probs = _safe_softmax(scores)
    gq = gk = gv = None
    if need[2]:
        dropped = probs if noise is None else probs * noise
        gv = dropped.transpose(-2, -1) @ g
    if need[0] or need[1]:
        gp = g @ v.transpose(-2, -1)
        if noise is not None:
            gp = gp * noise
        gs = probs * (gp - (gp * probs).sum(-1, keepdim=True)) * scale
        if need[0]:
            gq = gs @ k
        if need[1]:
            gk = gs.transpose(-2, -1) @ q
    return gq, gk, gv


class _FusedAttentionBackward(Node):
    """Backward of the fused attention. Attributes: ``scale``, ``probs`` (the softmax),
    ``noise`` (dropout's scaled keep-mask or None), ``mask`` (additive array or None)."""

    def release(self) -> None:
        super().release()
        self.probs = self.noise = self.mask = None

    def _constants(self):
        mask = None if self.mask is None else wrap(self.mask)
        noise = None if self.noise is None else wrap(self.noise)
        return mask, noise


class ScaledDotProductAttentionBackward0(_FusedAttentionBackward):
    """Inputs (query, key, value), each (..., L, D) with equal batch dims."""

    def backward(self, g):
        q, k, v = self.unpack_saved()
        need = tuple(e is not None for e in self._edges)
        if grad_state.enabled:
            mask, noise = self._constants()
            return _attend_graph(g, q, k, v, mask, noise, self.scale, need)
        xp = array_module(self.probs)
        grads = _attend_backward(
            xp,
            g._data,
            q._data,
            k._data,
            v._data,
            self.probs,
            self.noise,
            self.scale,
            need,
            (None, None, None),
        )
        return tuple(None if a is None else wrap(a) for a in grads)


class PackedSelfAttentionBackward0(_FusedAttentionBackward):
    """Input: a packed (N, L, 3E) (``batch_first``) or (L, N, 3E) Q/K/V projection; output:
    the heads merged, (L, N, E). Attribute ``heads``."""

    def _split(self, data):
        return tuple(_heads(data, i, 3, self.heads, self.batch_first) for i in range(3))

    def backward(self, g):
        (qkv,) = self.unpack_saved()
        if grad_state.enabled:
            return self._graph_backward(g, qkv)
        data = qkv._data
        xp = array_module(data)
        q, k, v = self._split(data)
        grad = xp.empty(data.shape, data.dtype)
        gheads = _heads(g._data, 0, 1, self.heads, False)
        _attend_backward(
            xp,
            gheads,
            q,
            k,
            v,
            self.probs,
            self.noise,
            self.scale,
            (True, True, True),
            self._split(grad),
        )
        return wrap(grad)

    def _graph_backward(self, g, qkv):
        a, b, width = qkv.shape
        heads, embed = self.heads, width // 3
        order = (0, 2, 1, 3) if self.batch_first else (1, 2, 0, 3)
        back = (0, 2, 1, 3) if self.batch_first else (2, 0, 1, 3)
        parts = qkv.reshape(a, b, 3, heads, embed // heads)
        q, k, v = (parts.select(2, i).permute(*order) for i in range(3))
        gheads = g.reshape(g.shape[0], g.shape[1], heads, embed // heads).permute(1, 2, 0, 3)
        mask, noise = self._constants()
        grads = _attend_graph(gheads, q, k, v, mask, noise, self.scale, (True, True, True))
        merged = [gi.permute(*back).reshape(a, b, embed) for gi in grads]
        from .shape import stack

        return stack(merged, 2).reshape(a, b, width)


def _fusable(*tensors) -> bool:
    """The fused node takes NumPy float32/float64 data (plain or recorded by ember.compile)."""
    dtype = tensors[0]._data.dtype
    if dtype.name not in ("float32", "float64"):
        return False
    return all(
        t._data.dtype == dtype and array_module(t._data).__name__ == "numpy" for t in tensors
    )


def _mask_array(mask: Tensor | None, dtype, allowed: bool = False):
    """An additive mask array (bool ``allowed`` masks: True keeps, False is -inf)."""
    if mask is None:
        return None
    data = mask._data
    if data.dtype.kind == "b":
        xp = array_module(data)
        keep, drop = (0.0, float("-inf")) if allowed else (float("-inf"), 0.0)
        return xp.where(data, keep, drop).astype(dtype)
    return data


def _sdpa_fusable(query: Tensor, key: Tensor, value: Tensor, mask: Tensor | None) -> bool:
    """Whether scaled_dot_product_attention takes the fused node: NumPy float data, equal
    batch dims, and a mask (if any) that needs no gradient and broadcasts to the scores."""
    if query.dim() < 2 or key.dim() != query.dim() or value.dim() != query.dim():
        return False
    if not _fusable(query, key, value):
        return False
    batch = tuple(query.shape[:-2])
    if tuple(key.shape[:-2]) != batch or tuple(value.shape[:-2]) != batch:
        return False
    if key.shape[-2] != value.shape[-2]:
        return False
    if mask is None:
        return True
    if mask._rg or (mask.dtype.name != "bool" and mask._data.dtype != query._data.dtype):
        return False
    if array_module(mask._data).__name__ != "numpy" or mask.dim() > query.dim():
        return False
    scores = batch + (query.shape[-2], key.shape[-2])
    shape = (1,) * (len(scores) - mask.dim()) + tuple(mask.shape)
    return all(m in (1, s) for m, s in zip(shape, scores))


class ScaledDotProductFlashAttentionBackward(ScaledDotProductAttentionBackward0):
    """The fused attention of 4-D inputs without dropout: torch's CPU flash kernel's node."""

    torch_name = "ScaledDotProductFlashAttentionForCpuBackward0"
    torch_saved = {
        "attn_mask": ("value", None),
        "dropout_p": ("value", 0.0),
        "key": 1,
        "query": 0,
        "value": 2,
    }


def _output_like(xp, q, width: int):
    """An empty (..., L, width) result laid out in memory as ``q`` is (torch's flash kernel
    writes its output in the query's layout, so that multi-head attention's permute of it
    is contiguous)."""
    order = sorted(range(q.ndim), key=lambda i: -q.strides[i])
    if q.ndim != 4 or order[-1] != 3 or order == [0, 1, 2, 3]:
        return None
    shape = q.shape[:-1] + (width,)
    buffer = xp.empty(tuple(shape[i] for i in order), q.dtype)
    return buffer.transpose([order.index(i) for i in range(4)])


def _fused_attention(query: Tensor, key: Tensor, value: Tensor, mask, scale: float, p: float):
    xp = array_module(query._data)
    flash = query._data.ndim == 4 and p <= 0
    out = _output_like(xp, query._data, value._data.shape[-1]) if flash else None
    out, probs, noise = _attend(
        xp, query._data, key._data, value._data, mask, scale, p, query.device, out
    )
    inputs = (query, key, value)
    return result(
        ScaledDotProductFlashAttentionBackward if flash else ScaledDotProductAttentionBackward0,
        out,
        inputs,
        inputs,
        scale=scale,
        probs=probs,
        noise=noise,
        mask=mask,
    )


def _packed_self_attention(
    qkv: Tensor, heads: int, batch_first: bool, mask, scale: float, p: float
) -> Tensor:
    """Attention over ``heads`` heads read from a packed (N, L, 3E) (``batch_first``) or
    (L, N, 3E) projection; the heads come back merged as (L, N, E), the layout in which torch's
    multi-head attention returns its output (a later dropout draws its mask in memory order)."""
    data = qkv._data
    xp = array_module(data)
    a, b, width = data.shape
    out = xp.empty((b, a, width // 3) if batch_first else (a, b, width // 3), data.dtype)
    q, k, v = (_heads(data, i, 3, heads, batch_first) for i in range(3))
    merged = _heads(out, 0, 1, heads, False)
    _, probs, noise = _attend(xp, q, k, v, mask, scale, p, qkv.device, merged)
    return result(
        PackedSelfAttentionBackward0,
        out,
        (qkv,),
        (qkv,),
        scale=scale,
        probs=probs,
        noise=noise,
        mask=mask,
        heads=heads,
        batch_first=batch_first,
    )


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
    if query.dtype.name in ("float16", "bfloat16"):  # torch's CPU kernels accumulate in float
        if attn_mask is not None and attn_mask.is_floating_point():
            attn_mask = attn_mask.float()
        out = scaled_dot_product_attention(
            query.float(), key.float(), value.float(), attn_mask, dropout_p, is_causal, scale,
            enable_gqa,
        )  # fmt: skip
        return out.to(query.dtype)
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
    if _sdpa_fusable(query, key, value, attn_mask):
        mask = _mask_array(attn_mask, query._data.dtype, allowed=True)
        if is_causal:
            xp = array_module(query._data)
            mask = xp.triu(xp.full((target, source), float("-inf"), query._data.dtype), 1)
        return _fused_attention(query, key, value, mask, factor, dropout_p)
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
    dims = query.dim()
    if dims not in (2, 3):
        raise AssertionError(
            f"query should be unbatched 2D or batched 3D tensor but received {dims}-D query tensor"
        )
    given = f"For {'batched' if dims == 3 else 'unbatched'} ({dims}-D) `query`, expected"
    if key.dim() != dims or value.dim() != dims:
        raise AssertionError(
            f"{given} `key` and `value` to be {dims}-D but found {key.dim()}-D and "
            f"{value.dim()}-D tensors respectively"
        )
    if key_padding_mask is not None and key_padding_mask.dim() != dims - 1:
        raise AssertionError(
            f"{given} `key_padding_mask` to be `None` or {dims - 1}-D but found "
            f"{key_padding_mask.dim()}-D tensor instead"
        )
    if attn_mask is not None and attn_mask.dim() not in (2, 3):
        raise AssertionError(
            f"{given} `attn_mask` to be `None`, 2-D or 3-D but found {attn_mask.dim()}-D "
            "tensor instead"
        )
    return dims == 3


def _transposed_batch_first(x: Tensor) -> bool:
    """Whether (L, N, E) ``x`` is the transpose of a contiguous batch-first (N, L, E) tensor."""
    data = x._data
    return not data.flags.c_contiguous and data.transpose(1, 0, 2).flags.c_contiguous


def _project(x: Tensor, weight: Tensor, bias: Tensor | None) -> Tensor:
    """``linear(x, weight, bias)`` of (L, N, E) ``x``; a transposed batch-first input is
    projected in its own memory order (one GEMM, instead of one per position)."""
    if x.dim() == 3 and _transposed_batch_first(x):
        return linear(x.transpose(0, 1), weight, bias).transpose(0, 1)
    return linear(x, weight, bias)


def _in_projection_packed(q: Tensor, k: Tensor, v: Tensor, w: Tensor, b: Tensor | None) -> tuple:
    """Q, K and V as torch's ``_in_projection_packed`` computes them (and so with its graph):
    self-attention projects once and splits the heads' packed (3, L, N, E) copy; encoder-
    decoder attention projects K and V together; otherwise each is projected alone."""
    embed_dim = q.shape[-1]
    if k is v:
        if q is k:
            proj = linear(q, w, b).unflatten(-1, (3, embed_dim))
            proj = proj.unsqueeze(0).transpose(0, -2).squeeze(-2).contiguous()
            return proj[0], proj[1], proj[2]
        w_q, w_kv = w.split([embed_dim, embed_dim * 2])
        b_q, b_kv = (None, None) if b is None else b.split([embed_dim, embed_dim * 2])
        kv = linear(k, w_kv, b_kv).unflatten(-1, (2, embed_dim))
        kv = kv.unsqueeze(0).transpose(0, -2).squeeze(-2).contiguous()
        return linear(q, w_q, b_q), kv[0], kv[1]
    w_q, w_k, w_v = w.chunk(3)
    b_q, b_k, b_v = (None, None, None) if b is None else b.chunk(3)
    return linear(q, w_q, b_q), linear(k, w_k, b_k), linear(v, w_v, b_v)


def _packable(query: Tensor, weight: Tensor, bias, attn_mask, key_padding_mask) -> bool:
    """Whether self-attention takes the packed path (NumPy float data, masks of the query's
    dtype that need no gradient)."""
    tensors = [t for t in (query, weight, bias) if t is not None]
    for mask in (attn_mask, key_padding_mask):
        if mask is not None:
            if mask._rg:
                return False
            tensors.append(mask)
    return _fusable(*tensors)


def _packed_multi_head_attention(
    query: Tensor,
    heads: int,
    in_proj_weight: Tensor,
    in_proj_bias: Tensor | None,
    out_proj_weight: Tensor,
    out_proj_bias: Tensor | None,
    attn_mask: Tensor | None,
    key_padding_mask: Tensor | None,
    dropout_p: float,
) -> Tensor:
    """Self-attention on (L, N, E) ``query``: Q, K and V from one GEMM over the flattened
    leading dims (in the (N, L, E) order when ``query`` is a transposed batch-first tensor,
    so that no copy is made), the fused attention, and the output projection ((L, N, E))."""
    tgt_len, bsz, embed_dim = query.shape
    batch_first = _transposed_batch_first(query)
    x = query.transpose(0, 1) if batch_first else query
    if not x._data.flags.c_contiguous:
        x = x.contiguous()
    qkv = linear(x, in_proj_weight, in_proj_bias)
    if not qkv._data.flags.c_contiguous:
        qkv = qkv.contiguous()
    mask = None
    if attn_mask is not None:  # (1, L, S) or (N·heads, L, S), checked by the caller
        mask = attn_mask._data
        if mask.shape[0] != 1:
            mask = mask.reshape(bsz, heads, tgt_len, tgt_len)
    if key_padding_mask is not None:
        if tuple(key_padding_mask.shape) != (bsz, tgt_len):
            raise AssertionError(
                f"expecting key_padding_mask shape of {(bsz, tgt_len)}, but got "
                f"{key_padding_mask.shape}"
            )
        padding = key_padding_mask._data.reshape(bsz, 1, 1, tgt_len)
        mask = padding if mask is None else mask + padding
    scale = 1.0 / math.sqrt(embed_dim // heads)
    merged = _packed_self_attention(qkv, heads, batch_first, mask, scale, dropout_p)
    return linear(merged, out_proj_weight, out_proj_bias)


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
    self_attention = query is key and key is value
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

    if not training:
        dropout_p = 0.0
    packed = (
        self_attention
        and not use_separate_proj_weight
        and not need_weights
        and bias_k is None
        and bias_v is None
        and not add_zero_attn
        and static_k is None
        and static_v is None
    )
    recording = _records(query, key, value, in_proj_weight, in_proj_bias, q_proj_weight)
    packable = _packable(query, in_proj_weight, in_proj_bias, attn_mask, key_padding_mask)
    if packed and packable and not recording:  # recording takes torch's steps below
        out = _packed_multi_head_attention(
            query,
            num_heads,
            in_proj_weight,
            in_proj_bias,
            out_proj_weight,
            out_proj_bias,
            attn_mask,
            key_padding_mask,
            dropout_p,
        )
        return (out if batched else out.squeeze(1)), None

    if not use_separate_proj_weight and recording:  # torch's steps, for torch's graph
        q, k, v = _in_projection_packed(query, key, value, in_proj_weight, in_proj_bias)
    else:
        if not use_separate_proj_weight:
            w_q, w_k, w_v = in_proj_weight.chunk(3)
        else:
            if q_proj_weight is None or k_proj_weight is None or v_proj_weight is None:
                raise AssertionError("use_separate_proj_weight is True but a projection is None")
            w_q, w_k, w_v = q_proj_weight, k_proj_weight, v_proj_weight
        b_q, b_k, b_v = in_proj_bias.chunk(3) if in_proj_bias is not None else (None,) * 3
        project = linear if recording else _project
        q, k, v = project(query, w_q, b_q), project(key, w_k, b_k), project(value, w_v, b_v)

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

    if need_weights:
        scores = bmm(q * math.sqrt(1.0 / head_dim), k.transpose(-2, -1))
        if attn_mask is not None:
            scores = scores + attn_mask
        weights = _dropout(softmax(scores, -1), dropout_p)
        heads_out = bmm(weights, v)
    else:
        if attn_mask is not None:
            attn_mask = (
                attn_mask.unsqueeze(0)
                if attn_mask.shape[0] == 1
                else attn_mask.reshape(bsz, num_heads, -1, src_len)
            )
        heads_out = scaled_dot_product_attention(
            q.view(bsz, num_heads, tgt_len, head_dim),
            k.view(bsz, num_heads, src_len, head_dim),
            v.view(bsz, num_heads, src_len, head_dim),
            attn_mask,
            dropout_p,
        )
        weights = None
    if need_weights:
        out = heads_out.transpose(0, 1).reshape(tgt_len * bsz, embed_dim)
    else:  # (N, heads, L, D) -> (L·N, E), as torch
        out = heads_out.permute(2, 0, 1, 3).contiguous().view(tgt_len * bsz, embed_dim)
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
