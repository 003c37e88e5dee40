"""Forward-mode (JVP) rules, one table keyed by graph-node class name.

A rule gets the node (with what its forward saved) and the tangent of each input (``None``: no
tangent) and returns the tangent of the output (or a tuple, one per output). A node class
without a rule of its own takes its nearest base class's rule; failing that, two generic
rules cover every op:

- ``elementwise``: for an op whose output element depends only on the same (broadcast)
  element of each input, the Jacobian is diagonal, so the VJP applied to the tangent is the
  JVP: ``Σᵢ backward(tᵢ)[i]``.
- ``transposed_vjp``: any other node, through its VJP, which is linear in the cotangent u:
  ``J t = d/du <Jᵀu, t>``, one more backward through the (differentiable) backward formula.
"""

from __future__ import annotations

from . import _cuts
from . import grad_mode as _gm
from .node import _tensor_class


def out_shape(node, nr: int = 0) -> tuple:
    return node._meta[nr][0]


def _sum(terms):
    total = None
    for term in terms:
        if term is not None:
            total = term if total is None else total + term
    return total


def to_output(node, t, nr: int = 0):
    """``t`` broadcast to the output's shape and cast to its dtype (a symbolic zero stays)."""
    if t is None:
        return None
    shape, np_dtype = node._meta[nr]
    if tuple(t.shape) != tuple(shape):
        t = t.expand(shape)
    if t._data.dtype != np_dtype:
        from .engine import _dtype_of

        t = t.to(_dtype_of(np_dtype))
    return t


def _as_tuple(out) -> tuple:
    return out if out.__class__ is tuple else (out,)


# ---------------------------------------------------------------------------------------------
# The generic rules
# ---------------------------------------------------------------------------------------------
def elementwise(node, tangents):
    """Diagonal Jacobian: the node's own VJP applied to each input's tangent."""
    complex_values = node._meta[0][1].kind == "c" or any(
        t is not None and t._data.dtype.kind == "c" for t in tangents
    )
    if complex_values:  # the VJP conjugates: it is not the JVP for complex values
        return transposed_vjp(node, tangents)
    terms = []
    for i, t in enumerate(tangents):
        if t is not None:
            terms.append(_as_tuple(node.backward(to_output(node, t)))[i])
    return to_output(node, _sum(terms))


def transposed_vjp(node, tangents):
    """J t for any node, as d/du <Jᵀu, t> at u = 0 (the VJP is linear in u).

    For complex values <a, b> = Re Σ conj(a) b: the VJP is J's adjoint for it, and the
    gradient of a real function of a complex u is ∂/∂Re u + i ∂/∂Im u, which gives J t."""
    from . import grad as autograd_grad
    from .engine import _dtype_of

    Tensor = _tensor_class()
    needs_graph = _gm.state.enabled
    like = first_tangent(tangents)  # the cotangents live where the tangents do
    cotangents = [
        like.new_zeros(shape, dtype=_dtype_of(np_dtype)).requires_grad_(True)
        for shape, np_dtype in node._meta
    ]
    _cuts.state.quiet += 1
    try:
        with _gm.enable_grad():
            grads = node.apply(list(cotangents))
            terms = []
            for i, (g, t) in enumerate(zip(grads, tangents)):
                if g is None or t is None:
                    continue
                if not isinstance(g, Tensor):
                    continue
                edge = node._edges[i]
                in_shape = edge[0]._meta[edge[1]][0]
                if tuple(g.shape) != tuple(in_shape):
                    g = g.sum_to_size(in_shape)
                if g._data.dtype.kind == "c":  # the real inner product Re Σ conj(g) t
                    terms.append((g.conj() * t).real.sum())
                else:
                    terms.append((g * t.to(g.dtype)).sum())
            inner = _sum(terms)
            if inner is None or not inner._rg:
                return tuple(None for _ in cotangents) if len(cotangents) > 1 else None
            out = autograd_grad(inner, cotangents, create_graph=needs_graph, allow_unused=True)
    finally:
        _cuts.state.quiet -= 1
    return out if len(out) > 1 else out[0]


def composite(node, tangents):
    """A node standing for a private graph of ember ops (convolution): walk that graph."""
    from .forward_ad import propagate_graph

    inner = getattr(node, "inner", None)
    if inner is None:  # freed by a backward pass: record the private graph again
        Tensor = _tensor_class()
        inputs = node.unpack_saved()
        inner_inputs = tuple(
            t._detach().requires_grad_(True) if isinstance(t, Tensor) and t._rg else t
            for t in inputs
        )
        with _gm.enable_grad():
            inner = (inner_inputs, node.fn(*inner_inputs))
    inner_inputs, inner_out = inner
    seeds = {}
    for x, t in zip(inner_inputs, tangents):
        if t is not None:
            seeds[x._edge()[0]] = (t,)
    return propagate_graph(seeds, inner_out)


def _convolution(node, tangents):
    """A convolution is bilinear in (input, weight) and affine in bias:
    d conv = conv(dx, w) + conv(x, dw) + db."""
    x, w, b = node.unpack_saved()
    tx, tw = tangents[0], tangents[1]
    tb = tangents[2] if len(tangents) > 2 else None
    out = None
    if tx is not None:
        out = node.compute(tx, w, None)
    if tw is not None:
        part = node.compute(x, tw, None)
        out = part if out is None else out + part
    if tb is not None:
        shape = (1, -1) + (1,) * len(node.kernel)
        part = tb.reshape(shape[1:] if node.unbatched else shape)
        out = part.expand(node_output_shape(node)) if out is None else out + part
    return (out,)


def node_output_shape(node):
    return node._meta[0][0]


# ---------------------------------------------------------------------------------------------
# Explicit rules: the common nodes, without the extra backward calls of the generic rules
# ---------------------------------------------------------------------------------------------
def _add(node, tangents):
    ta, tb = tangents if len(tangents) == 2 else (tangents[0], None)
    alpha = getattr(node, "alpha", 1)
    if tb is not None and alpha != 1:
        tb = tb * alpha
    return to_output(node, _sum((ta, tb)))


def _sub(node, tangents):
    ta, tb = tangents if len(tangents) == 2 else (tangents[0], None)
    if tb is not None:
        alpha = getattr(node, "alpha", 1)
        tb = -tb if alpha == 1 else tb * -alpha
    return to_output(node, _sum((ta, tb)))


def _mul(node, tangents):  # d(ab) = da b + a db
    a, b = node.unpack_saved()
    ta, tb = tangents
    return to_output(
        node, _sum((ta * b if ta is not None else None, a * tb if tb is not None else None))
    )


def _matmul(node, tangents):  # d(AB) = dA B + A dB, for every matmul case
    a, b = node.unpack_saved()
    ta, tb = tangents
    return _sum((ta @ b if ta is not None else None, a @ tb if tb is not None else None))


def _linear(node, tangents):  # d(x Wᵀ + b) = dx Wᵀ + x dWᵀ + db
    x, w = node.unpack_saved()
    tx, tw = tangents[0], tangents[1]
    tb = tangents[2] if len(tangents) > 2 else None
    return to_output(
        node,
        _sum((tx @ w.mT if tx is not None else None, x @ tw.mT if tw is not None else None, tb)),
    )


def _linear_addmm(node, tangents):  # inputs (b, x, Wᵀ): d(b + x Wᵀ) = db + dx Wᵀ + x dWᵀ
    x, w_t = node.unpack_saved()
    tb, tx, tw_t = tangents
    return to_output(
        node,
        _sum((tb, tx @ w_t if tx is not None else None, x @ tw_t if tw_t is not None else None)),
    )


def _linear_mm(node, tangents):  # inputs (x, Wᵀ)
    x, w_t = node.unpack_saved()
    tx, tw_t = tangents
    return _sum((tx @ w_t if tx is not None else None, x @ tw_t if tw_t is not None else None))


def _reshape(node, tangents):
    return tangents[0].reshape(out_shape(node))


def _expand(node, tangents):
    return tangents[0].expand(out_shape(node))


def _identity(node, tangents):
    return tangents[0]


def _transpose(node, tangents):
    return tangents[0].transpose(node.dim0, node.dim1)


def _permute(node, tangents):
    return tangents[0].permute(node.dims)


def _reduced(node, t):
    if node.dims:
        t = t.sum(node.dims, keepdim=node.keepdim)
    else:
        t = t.sum()
    return t.reshape(out_shape(node))


def _sum_rule(node, tangents):
    return _reduced(node, tangents[0])


def _mean(node, tangents):
    return _reduced(node, tangents[0]) / node.count


def _var(node, tangents):  # d var = 2/(N - c) Σ (x - x̄) dx
    (x,) = node.unpack_saved()
    centred = x - x.mean(node.dims, keepdim=True)
    return _reduced(node, centred * tangents[0]) * (2.0 / node.denom)


def _index(node, tangents):  # basic and advanced indexing: the same key on the tangent
    return tangents[0][node.key]


def _index_select(node, tangents):
    return tangents[0].index_select(node.dim, node.index)


def first_tangent(tangents):
    return next(t for t in tangents if t is not None)


def _softmax(node, tangents):  # J = diag(y) - y yᵀ is symmetric: the JVP is the VJP
    return node.backward(tangents[0])


def _log_softmax(node, tangents):  # d log softmax = dx - Σ softmax dx
    y = node.saved_output()
    t = tangents[0]
    return t - (y.exp() * t).sum(node.dim, keepdim=True)


def _pointwise_loss(node, tangents):  # d Σ ℓ(x, t) = Σ (∂ℓ/∂x dx + ∂ℓ/∂t dt)
    x, target = node.unpack_saved()
    tx, tt = tangents
    terms = _sum(
        (
            node.d_input(x, target) * tx if tx is not None else None,
            node.d_target(x, target) * tt if tt is not None else None,
        )
    )
    if node.reduction == "sum":
        return terms.sum()
    if node.reduction == "mean":
        return terms.sum() / max(node.count, 1)
    return terms.expand(out_shape(node)) if tuple(terms.shape) != out_shape(node) else terms


def _nll_loss(node, tangents):  # linear in the input: loss = Σ coeff · x
    terms = node.coeff * tangents[0]
    if node.reduction == "none" and len(out_shape(node)) > 0:
        return terms.sum(node.class_dim)
    return terms.sum().reshape(out_shape(node))


def _cumsum(node, tangents):
    return tangents[0].cumsum(node.dim)


def _flip(node, tangents):
    return tangents[0].flip(node.dims)


def _roll(node, tangents):
    return tangents[0].roll(node.shifts, node.dims)


def _masked_fill(node, tangents):
    t_self = tangents[0]
    t_value = tangents[1] if len(tangents) > 1 else None
    mask = node.mask
    return to_output(
        node,
        _sum(
            (
                t_self.masked_fill(mask, 0.0) if t_self is not None else None,
                t_value * mask if t_value is not None else None,
            )
        ),
    )


def _gather(node, tangents):
    return tangents[0].gather(node.dim, node.index)


def _repeat(node, tangents):
    return tangents[0].repeat(node.repeats)


def _max_along_dim(node, tangents):  # the tangent at the selected index
    d, index = node.dim, node.indices
    if not node.keepdim:
        index = index.unsqueeze(d)
    picked = tangents[0].gather(d, index)
    return picked if node.keepdim else picked.squeeze(d)


def _vector_norm(node, tangents):
    """ord=0 counts non-zeros, a flat function: torch's tangent is 0 (its gradient None)."""
    if node.ord != 0:
        return transposed_vjp(node, tangents)
    t = tangents[0]
    return None if t is None else to_output(node, (t * 0).sum())


def _logsumexp(node, tangents):  # d logsumexp = Σ softmax(x) dx
    (x,) = node.unpack_saved()
    y = node.saved_output()
    if not node.keepdim and node.dims:
        kept = list(x.shape)
        for d in node.dims:
            kept[d] = 1
        y = y.reshape(tuple(kept))
    return _reduced(node, (x - y).exp() * tangents[0])


def _logcumsumexp(node, tangents):
    """torch's logcumsumexp_jvp: d out_j = Σ_{i≤j} e^{x_i} dx_i / Σ_{i≤j} e^{x_i}, with x shifted
    by its maximum along dim (the VJP splits by the cotangent's sign: flat at zero)."""
    (x,) = node.unpack_saved()
    d = node.dim
    shifted = x if x.dim() == 0 or x.numel() == 0 else x - x.amax(d, keepdim=True)
    weights = shifted.exp()
    return (weights * tangents[0]).cumsum(d) / (weights.cumsum(d) + 1e-13)


# ---------------------------------------------------------------------------------------------
# The table. A class takes the rule of its nearest base class that has one. Rules that call an
# op (cat, pad, unfold_windows) live beside it in ops/ and register here on import.
# ---------------------------------------------------------------------------------------------
RULES = {
    "AddBackward0": _add,
    "AddNumberBackward": _add,
    "SubBackward0": _sub,
    "MulBackward0": _mul,
    "MmBackward0": _matmul,  # and Dot, Mv, Bmm, Matmul (subclasses)
    "LinearBackward0": _linear,
    "LinearAddmmBackward": _linear_addmm,
    "LinearMmBackward": _linear_mm,
    "ViewBackward0": _reshape,  # and ReshapeAlias
    "ExpandBackward0": _expand,
    "CloneBackward0": _identity,
    "TransposeBackward0": _transpose,
    "PermuteBackward0": _permute,
    "SumBackward0": _sum_rule,
    "SumBackward1": _sum_rule,
    "MeanBackward0": _mean,
    "MeanBackward1": _mean,
    "VarBackward0": _var,
    "IndexBackward0": _index,  # and Slice, Select, Unsqueeze, Alias
    "IndexSelectBackward0": _index_select,
    "SoftmaxBackward0": _softmax,
    "LogSoftmaxBackward0": _log_softmax,
    "PointwiseLossNode": _pointwise_loss,  # MseLoss, L1Loss, SmoothL1Loss, ...
    "NllLossBackward0": _nll_loss,
    "CompositeBackward": composite,  # grouped and transposed convolutions
    "ConvolutionOneGemmBackward0": _convolution,
    "CumsumBackward0": _cumsum,
    "FlipBackward0": _flip,
    "RollBackward0": _roll,
    "MaskedFillBackward0": _masked_fill,
    "GatherBackward0": _gather,
    "RepeatBackward0": _repeat,
    "MaxBackward0": _max_along_dim,  # and min along a dim
    "LogsumexpBackward0": _logsumexp,
    "LogcumsumexpBackward0": _logcumsumexp,
    "LinalgVectorNormBackward0": _vector_norm,
}

# Ops whose output element depends on the same element of each (broadcast) input.
ELEMENTWISE = """
Neg Exp Exp2 Expm1 Log Log2 Log10 Log1p Sqrt Rsqrt Square Abs Sign Sin Cos Tan Asin Acos Atan
Sinh Cosh Tanh Asinh Acosh Atanh Sigmoid Relu Erf Erfc Reciprocal Floor Ceil Trunc Frac
Round Logit NanToNum Rsub Div Pow Atan2 Maximum Minimum Fmod Remainder Hypot Logaddexp Where
Clamp Lerp Addcmul Addcdiv Polygamma Xlogy SpecialXlog1Py SpecialZeta Igamma Igammac
LeakyRelu Elu Celu Hardtanh Hardswish Hardsigmoid Softshrink Hardshrink Threshold Softplus
LogSigmoid Silu Mish Gelu TanhBackward SigmoidBackward ThresholdBackward
""".split()
for _name in ELEMENTWISE:
    for _suffix in ("Backward0", "Backward1", "Backward2"):
        RULES.setdefault(_name + _suffix, elementwise)
RULES.setdefault("MulByNumberBackward", elementwise)
RULES.setdefault("SubNumberBackward", _add)


_RESOLVED: dict = {}


def rule_of(node_cls):
    """The JVP rule of a node class (its own, its nearest base's, or ``transposed_vjp``)."""
    rule = _RESOLVED.get(node_cls)
    if rule is None:
        for cls in node_cls.__mro__:
            rule = RULES.get(cls.__dict__.get("python_name", cls.__name__))
            if rule is not None:
                break
        else:
            rule = transposed_vjp
        _RESOLVED[node_cls] = rule
    return rule


def jvp_of_node(node, tangents: list, needs_graph: bool) -> tuple:
    """The tangents of ``node``'s outputs (a tuple), given its inputs' tangents.

    ``needs_graph``: record the computation (a tangent that something differentiates later);
    otherwise the rule runs under no_grad and the tangent is a plain tensor.
    """
    state = _gm.state
    previous = state.enabled
    state.enabled = needs_graph
    _cuts.state.quiet += 1
    try:
        out = rule_of(node.__class__)(node, tangents)
    finally:
        state.enabled = previous
        _cuts.state.quiet -= 1
    return _as_tuple(out)
