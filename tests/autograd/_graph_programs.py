"""Programs whose autograd graphs tests/autograd/test_graph_structure.py compares with torch's.

Each program takes the library (``ember`` or ``torch``) and returns a tensor whose ``grad_fn``
graph is compared; ``signature`` writes a graph as text (node names, inputs in order, output
numbers, shared nodes by reference), so that two graphs are equal when their texts are.
"""

from __future__ import annotations


def signature(root) -> str:
    """``Name(input, ...)`` for the graph below ``root``: ``None`` for an input without a
    gradient, ``:k`` for output k of a node, ``#i`` for the i-th node seen again."""
    ids: dict = {}

    def walk(fn, nr: int) -> str:
        if fn is None:
            return "None"
        suffix = f":{nr}" if nr else ""
        if fn in ids:
            return f"#{ids[fn]}{suffix}"
        ids[fn] = len(ids)
        inputs = [walk(f, n) for f, n in fn.next_functions]
        inner = f"({', '.join(inputs)})" if inputs else ""
        return f"{type(fn).__name__}{suffix}{inner}"

    return walk(root, 0)


def _leaf(m, *shape):
    return m.randn(*shape, requires_grad=True)


def _binary(m):
    a, b = _leaf(m, 3), _leaf(m, 3)
    return (a + b * 2 - a / b).sum()


def _numbers(m):
    a = _leaf(m, 3)
    return (a * 2.5 + 1 - 3 / a - 0.5) ** 2 + (2 - a) + 2**a


def _unary(m):
    return _leaf(m, 3).exp().log().sin().cos().tanh().sigmoid().sqrt().abs().neg().log1p()


def _reductions(m):
    a = _leaf(m, 2, 3)
    return a.mean() + a.mean(1).sum() + a.sum(0, keepdim=True).mean() + a.var() + a.std(1).sum()


def _max_min(m):
    a = _leaf(m, 2, 3)
    return a.max() + a.max(1).values.sum() + a.amax(0).sum() + m.maximum(a, a * 2).sum()


def _matrix_products(m):
    a, b, v = _leaf(m, 2, 3), _leaf(m, 3, 4), _leaf(m, 3)
    return (a @ b).sum() + (a @ v).sum() + (v @ b).sum() + v @ v + a.mm(b).sum()


def _batched_products(m):
    a, b, w = _leaf(m, 5, 2, 3), _leaf(m, 5, 3, 4), _leaf(m, 3, 4)
    c = _leaf(m, 2, 5, 2, 3)
    return (a @ b).sum() + (a @ w).sum() + (c @ b).sum() + m.bmm(a, b).sum()


def _vector_times_batch(m):
    v, b, a = _leaf(m, 3), _leaf(m, 5, 3, 4), _leaf(m, 2, 3)
    return (v @ b).sum() + (a @ b).sum()


def _views(m):
    a = _leaf(m, 2, 3)
    return a.view(6).reshape(3, 2).flatten() + a.t().reshape(6) + a.reshape(2, 3).flatten()


def _reshape_alias(m):
    return _leaf(m, 2, 3, 4).permute(2, 0, 1).reshape(4, 1, 6)


def _transposes(m):
    a = _leaf(m, 2, 3)
    return a.t().unsqueeze(0).squeeze(0).T.mT.transpose(0, 1).permute(1, 0).contiguous()


def _squeezes(m):
    a = _leaf(m, 2, 1, 3)
    return a.squeeze() + a.squeeze(1) + a.squeeze((1,)) + a.unsqueeze(-1).sum(-1).squeeze(1)


def _expand(m):
    a = _leaf(m, 3, 1)
    return a.expand(3, 4) * 2 + a.expand_as(a) + a.expand(2, 3, 4).sum(0)


def _indexing(m):
    a = _leaf(m, 4, 5)
    return a[0] + a[1:3].sum(0) + a[:, 2].sum() + a[[0, 2]].sum(0) + a[0, 1] + a[-1, ::2].sum()


def _new_axes(m):
    a = _leaf(m, 4, 5)
    return a[None].sum() + a[:, None].sum() + a[..., None].sum() + a[...].sum() + a[:].sum()


def _joins(m):
    a, b = _leaf(m, 2, 3), _leaf(m, 2, 3)
    return m.cat([a, b]).sum() + m.stack([a, b], 1).sum() + m.hstack([a, b]).sum()


def _splits(m):
    a = _leaf(m, 4, 6)
    parts = a.chunk(3, 1)
    sizes = a.split([1, 3], 0)
    rows = a.unbind(0)
    return (
        parts[0].sum() + parts[2].sum() + sizes[1].sum() + rows[3].sum() + a.narrow(1, 1, 2).sum()
    )


def _selection(m):
    a, b = _leaf(m, 3), _leaf(m, 3)
    return (
        m.where(a > 0, a, b)
        + m.where(a > 0, a, 0.0)
        + a.clamp(-1, 1)
        + a.clamp(min=0)
        + a.clamp(b, b + 1)
        + m.clamp_min(a, 0)
        + a.masked_fill(a > 0, 0.0)
        + a.lerp(b, 0.5)
        + a.fmod(2)
        + a.remainder(b)
    )


def _activations(m):
    f = m.nn.functional
    a = _leaf(m, 2, 3)
    return (
        f.relu(a)
        + f.gelu(a)
        + f.silu(a)
        + f.leaky_relu(a)
        + f.elu(a)
        + f.softplus(a)
        + f.hardtanh(a)
        + f.softmax(a, 1)
        + f.log_softmax(a, dim=1)
        + a.square()
        + a.pow(3)
    )


def _losses(m):
    f = m.nn.functional
    a, t = _leaf(m, 4, 5), m.tensor([0, 1, 2, 3])
    return (
        f.cross_entropy(a, t)
        + f.nll_loss(f.log_softmax(a, 1), t)
        + f.mse_loss(a, m.zeros(4, 5))
        + f.l1_loss(a, m.zeros(4, 5))
    )


def _normalize(m):
    return m.nn.functional.normalize(_leaf(m, 2, 3))


def _linear(m):
    layer = m.nn.Linear(4, 3)
    return layer(m.randn(2, 4)).sum() + layer(_leaf(m, 2, 4)).sum()


def _linear_shapes(m):
    layer, bare = m.nn.Linear(4, 3), m.nn.Linear(4, 3, bias=False)
    x3 = m.randn(5, 2, 4)
    return (
        layer(x3).sum()
        + layer(m.randn(4)).sum()
        + bare(m.randn(2, 4)).sum()
        + bare(x3).sum()
        + bare(_leaf(m, 4)).sum()
    )


def _mlp(m):
    model = m.nn.Sequential(m.nn.Linear(4, 8), m.nn.ReLU(), m.nn.Linear(8, 3))
    return m.nn.functional.cross_entropy(model(m.randn(2, 4)), m.tensor([0, 2]))


def _convolutions(m):
    return (
        m.nn.Conv2d(2, 3, 3)(m.randn(1, 2, 5, 5)).sum()
        + m.nn.Conv2d(2, 3, 3, bias=False)(_leaf(m, 1, 2, 5, 5)).sum()
        + m.nn.Conv1d(2, 3, 3)(m.randn(1, 2, 5)).sum()
    )


def _pooling(m):
    f = m.nn.functional
    x = _leaf(m, 1, 2, 4, 4)
    return (
        f.max_pool2d(x, 2).sum()
        + f.avg_pool2d(x, 2).sum()
        + f.adaptive_avg_pool2d(x, 1).sum()
        + f.max_pool2d(x, 3, 1).sum()
    )


def _norms(m):
    x = _leaf(m, 2, 3, 4, 4)
    return (
        m.nn.BatchNorm2d(3)(x).sum()
        + m.nn.BatchNorm2d(3).eval()(x).sum()
        + m.nn.LayerNorm(4)(x).sum()
        + m.nn.GroupNorm(1, 3)(x).sum()
    )


def _cnn(m):
    model = m.nn.Sequential(
        m.nn.Conv2d(1, 4, 3, padding=1),
        m.nn.BatchNorm2d(4),
        m.nn.ReLU(),
        m.nn.MaxPool2d(2),
        m.nn.Flatten(),
        m.nn.Linear(16, 3),
    )
    return m.nn.functional.cross_entropy(model(m.randn(2, 1, 4, 4)), m.tensor([0, 2]))


def _embedding_dropout(m):
    table = m.nn.Embedding(5, 3)
    x = table(m.tensor([[0, 1], [2, 4]]))
    return m.nn.functional.dropout(x, training=False).sum() + x.clone().sum()


def _multihead(m):
    attention = m.nn.MultiheadAttention(8, 2, batch_first=True)
    x = m.randn(2, 3, 8)
    return attention(x, x, x)[0].sum()


def _transformer(m):
    layer = m.nn.TransformerEncoderLayer(8, 2, dim_feedforward=16, dropout=0.0, batch_first=True)
    return layer(m.randn(2, 3, 8)).sum()


def _sorting(m):
    a = _leaf(m, 2, 5)
    return a.sort(1)[0].sum() + a.topk(2)[0].sum() + a.cummax(1)[0].sum() + a.median()


def _addmm(m):
    x, a, b = _leaf(m, 2, 4), _leaf(m, 2, 3), _leaf(m, 3, 4)
    return m.addmm(x, a, b).sum() + m.addmm(x[0], a, b, beta=0.5, alpha=2).sum()


def _inplace(m):
    a = _leaf(m, 3)
    b = a * 2
    b.add_(1)
    b.mul_(3)
    return b + a.detach() * a


PROGRAMS = {
    "binary": _binary,
    "numbers": _numbers,
    "unary": _unary,
    "reductions": _reductions,
    "max_min": _max_min,
    "matrix_products": _matrix_products,
    "batched_products": _batched_products,
    "vector_times_batch": _vector_times_batch,
    "views": _views,
    "reshape_alias": _reshape_alias,
    "transposes": _transposes,
    "squeezes": _squeezes,
    "expand": _expand,
    "indexing": _indexing,
    "new_axes": _new_axes,
    "joins": _joins,
    "splits": _splits,
    "selection": _selection,
    "activations": _activations,
    "losses": _losses,
    "normalize": _normalize,
    "linear": _linear,
    "linear_shapes": _linear_shapes,
    "mlp": _mlp,
    "convolutions": _convolutions,
    "pooling": _pooling,
    "norms": _norms,
    "cnn": _cnn,
    "embedding_dropout": _embedding_dropout,
    "multihead": _multihead,
    "transformer": _transformer,
    "sorting": _sorting,
    "addmm": _addmm,
    "inplace": _inplace,
}
