"""What every loss shares (reductions, the one-node pointwise loss), and ``nll_loss``.

PyTorch records some losses as one node (``MseLossBackward0``, ``NllLossBackward0``, ...) and
composes the others from ops; ember does the same, so ``loss.grad_fn.name()`` agrees. A
one-node loss computes its forward on arrays and writes its backward with ember ops, so double
backward works. The families live next door: ``loss_regression``, ``loss_classification``,
``loss_margin`` and ``loss_ctc``.
"""

from __future__ import annotations

import warnings

from .. import _backend
from .._kernels import jit
from .._tensor import Tensor
from ..autograd.node import Node, torch_int
from ._dispatch import NUMPY_ARRAY, array_module, check_same_device, grad_state, result, wrap

REDUCTIONS = ("none", "mean", "sum")


def legacy_reduction(size_average, reduce, reduction: str) -> str:
    """PyTorch's deprecated ``size_average``/``reduce`` pair, turned into ``reduction``."""
    if size_average is None and reduce is None:
        return reduction
    size_average = True if size_average is None else size_average
    reduce = True if reduce is None else reduce
    chosen = "none" if not reduce else ("mean" if size_average else "sum")
    warnings.warn(
        f"size_average and reduce args will be deprecated, please use reduction='{chosen}' "
        "instead.",
        stacklevel=3,
    )
    return chosen


def refuse_grad(op: str, argument: str, t) -> None:
    """PyTorch's error for an argument a loss is not differentiable in (weights, labels)."""
    if t is not None and t.requires_grad and grad_state.enabled:
        raise RuntimeError(
            f"The function '{op}' is not differentiable with respect to argument '{argument}'. "
            "This input cannot have requires_grad True."
        )


def check_reduction(reduction: str) -> None:
    if reduction not in REDUCTIONS:
        raise ValueError(f"{reduction} is not a valid value for reduction")


def reduce(loss: Tensor, reduction: str) -> Tensor:
    """Reduce elementwise losses built from ember ops."""
    if reduction == "mean":
        return loss.mean()
    if reduction == "sum":
        return loss.sum()
    if reduction == "none":
        return loss
    raise ValueError(f"{reduction} is not a valid value for reduction")


def reduce_array(xp, terms, reduction: str):
    if reduction == "none":
        return terms
    if reduction == "sum":
        return xp.asarray(terms.sum(), dtype=terms.dtype)
    if terms.size == 0:
        return xp.asarray(float("nan"), dtype=terms.dtype)
    return xp.asarray(terms.mean(), dtype=terms.dtype)


def warn_if_sizes_differ(input: Tensor, target: Tensor) -> None:
    if tuple(input.shape) != tuple(target.shape):
        warnings.warn(
            f"Using a target size ({target.shape}) that is different to the input size "
            f"({input.shape}). This will likely lead to incorrect results due to broadcasting. "
            "Please ensure they have the same size.",
            stacklevel=3,
        )


class PointwiseLossNode(Node):
    """Base of one-node losses over (input, target) whose terms are elementwise.

    Subclasses give ``d_input(x, t)`` and ``d_target(x, t)``: derivatives of one term, as ember
    ops. ``count`` is the number of terms, for the mean."""

    def backward(self, g):
        x, t = self.unpack_saved()
        if self.reduction == "mean":
            g = g / max(self.count, 1)
        edges = self._edges
        gx = self.d_input(x, t) * g if edges[0] is not None else None
        gt = self.d_target(x, t) * g if edges[1] is not None else None
        return gx, gt


def pointwise_loss(node_cls, input: Tensor, target: Tensor, terms, reduction: str, **attrs):
    """Reduce the array ``terms`` and record one ``node_cls`` node over (input, target)."""
    xp = array_module(input._data)
    # arithmetic on 0-d arrays gives NumPy scalars
    out = reduce_array(xp, xp.asarray(terms), reduction)
    return result(
        node_cls,
        out,
        (input, target),
        (input, target),
        reduction=reduction,
        count=terms.size,
        **attrs,
    )


# --- the compiled pointwise losses (ember._kernels.loss_jit) ---------------------------------
# A loss over n elements reads its inputs once: the ``none`` reduction writes the terms, the
# others one float64 partial sum per block (the total added here). Cheap kernels (smooth L1)
# split over threads only from 2^18 elements a span (below that the hand-off costs more),
# the costly ones (an exp an element) from 2^15.
CHEAP_SPAN = 1 << 18
COSTLY_SPAN = 1 << 15  # losses with an exp or a log: 2-3 ns an element


# Below this many elements the NumPy paths run even where jit.MIN_WORK lets kernels in (the
# tests set it to 0): their sums are reassociated, so a small loss in eager mode would not
# equal, to the bit, the NumPy ops ember.compile records and replays (its tests train small
# models and compare exactly). From here up a loss takes the kernel in eager mode only.
KERNEL_MIN_ELEMENTS = 1 << 14


def _loss_kernels(*arrays):
    """``ember._kernels.loss_jit`` when kernels are on and ``arrays`` are plain NumPy float32 or
    float64 arrays of one shape and dtype, big enough to be worth it; else None."""
    if arrays[0].size < KERNEL_MIN_ELEMENTS:
        return None
    return _backend.compiled_kernels("loss_jit", *arrays)


def _flat(array):
    return _HOST.ascontiguousarray(array).reshape(-1)


def _fused_loss_forward(
    kernels, name: str, arrays: tuple, constants: tuple, reduction: str, span, outputs=()
):
    """The loss ``loss_jit.<name>_terms`` / ``<name>_sums`` computes over ``arrays`` (the first
    gives the shape and dtype), reduced; ``span``: elements a thread takes at least;
    ``outputs``: flat arrays the kernel also writes (what it keeps for the backward)."""
    first = arrays[0]
    flat = [_flat(a) for a in arrays]
    n = first.size
    if reduction == "none":
        out = _HOST.empty(first.shape, first.dtype)
        jit.parallel_for(getattr(kernels, name + "_terms"), n, *flat, out.reshape(-1), *outputs,
                         *constants, min_chunk=span)  # fmt: skip
        return out
    block = kernels.BLOCK
    partial = _HOST.empty(-(-n // block))
    jit.parallel_for(getattr(kernels, name + "_sums"), partial.size, *flat, partial, *outputs,
                     *constants, min_chunk=max(1, span // block))  # fmt: skip
    total = partial.sum()
    return _HOST.asarray(total / n if reduction == "mean" else total, dtype=first.dtype)


def _fused_loss_backward(node, kernels, name: str, arrays: tuple, constants: tuple, g, span):
    """d loss / d input from ``loss_jit.<name>_backward`` (``g`` of the terms' shape) or
    ``<name>_backward_scalar`` (a reduced loss's ``g``, divided by the count for the mean);
    None where ``g`` does not fit (another dtype or shape): the caller's formula runs."""
    first = arrays[0]
    flat = [_flat(a) for a in arrays]
    out = _HOST.empty(first.shape, first.dtype)
    g = g._data
    if node.reduction == "none":
        if g.__class__ is not first.__class__ or g.dtype != first.dtype or g.shape != first.shape:
            return None
        jit.parallel_for(getattr(kernels, name + "_backward"), first.size, *flat, _flat(g),
                         out.reshape(-1), *constants, min_chunk=span)  # fmt: skip
        return out
    if node.reduction == "mean":
        g = g / max(node.count, 1)  # the rounding of the formula's ``g / count``
    g = first.dtype.type(g)
    jit.parallel_for(getattr(kernels, name + "_backward_scalar"), first.size, *flat,
                     out.reshape(-1), g, *constants, min_chunk=span)  # fmt: skip
    return out


def _total_weight(node) -> Tensor:
    if node.weights is None:  # _nll_loss_plain: every weight 1
        return wrap(_HOST.asarray(node.input_shape[0], dtype=node.input._data.dtype))
    return wrap(node.weights.sum(dtype=node.weights.dtype))


class NllLossBackward0(Node):
    """d loss / d input: ``-weight[target] / denominator`` at each target class, else 0.

    The coefficients do not depend on the input (the loss is linear in it), so the gradient is
    ``coefficients * grad``: differentiable again in ``grad``, with no second derivative in
    ``input``. The node keeps one coefficient per target (``scale``) and scatters
    ``scale * grad`` into zeros when it runs, so no full-size array lives between forward and
    backward and none is multiplied."""

    torch_saved = {
        "ignore_index": lambda node: torch_int(node.ignore_index),
        "reduction": lambda node: REDUCTIONS.index(node.reduction),
        "self": ("tensor", lambda node: node.input),
        "target": 0,
        "total_weight": ("tensor", _total_weight),
        "weight": ("tensor", lambda node: node.weight),
    }

    def _scatter(self, values):
        """A zero array of the input's shape with ``values`` at each target class."""
        xp = array_module(self.scale)
        out = xp.zeros(self.input_shape, dtype=values.dtype)
        safe, class_dim = self.safe, self.class_dim
        if len(self.input_shape) == 2:
            out[xp.arange(self.input_shape[0]), safe] = values
        else:
            index = xp.expand_dims(safe, class_dim)
            xp.put_along_axis(out, index, xp.expand_dims(values, class_dim), class_dim)
        return out

    @property
    def coeff(self) -> Tensor:
        """d loss / d input as a full-size tensor (forward-mode AD reads it)."""
        return wrap(self._scatter(self.scale))

    def backward(self, g):
        self.unpack_saved()  # the target: changed in place since forward, it raises
        scale = self.scale
        if grad_state.enabled:  # create_graph: coefficients · grad, differentiable in grad
            coeff = self.coeff
            if self.reduction == "none" and g.dim() > 0:
                g = g.unsqueeze(self.class_dim)
            return coeff * g
        values = array_module(scale).asarray(scale * g._data, dtype=scale.dtype)
        return wrap(self._scatter(values))


class NllLoss2DBackward0(NllLossBackward0):
    """PyTorch's name for the node of K-dimensional inputs (N, C, d1, ...)."""


def _check_target_shape(shape: tuple, target_shape: tuple) -> None:
    """torch's checks of a class-index target against the input, in its order and words."""
    batch = target_shape[0] if target_shape else 0
    if len(shape) > 1 and batch != shape[0]:
        raise ValueError(
            f"Expected input batch_size ({shape[0]}) to match target batch_size ({batch})."
        )
    if len(shape) <= 2:
        if len(target_shape) > 1:
            raise RuntimeError("0D or 1D target tensor expected, multi-target not supported")
        if len(shape) == 1 and target_shape and target_shape[0] != 1:
            raise ValueError(
                f"For 1D input, 1D target must have size 1, but got target size: {batch}"
            )
    elif len(shape) == 4:
        if len(target_shape) != 3:
            raise RuntimeError(
                "only batches of spatial targets supported (3D tensors) but got targets of "
                f"dimension: {len(target_shape)}"
            )
        if tuple(target_shape[1:]) != tuple(shape[2:]):
            raise RuntimeError(
                f"size mismatch (got input: {list(shape)} , target: {list(target_shape)}"
            )
    elif tuple(target_shape) != (shape[0], *shape[2:]):
        expected = [shape[0], *shape[2:]]
        raise RuntimeError(f"Expected target size {expected}, got {list(target_shape)}")


_HOST = array_module(NUMPY_ARRAY(0))  # NumPy, as the backend hands it out
_FAST_FLOATS = (_HOST.dtype(_HOST.float32), _HOST.dtype(_HOST.float64))


def _nll_loss_plain(input: Tensor, target: Tensor, reduction: str, ignore_index: int) -> Tensor:
    """``nll_loss`` of a (N, C) NumPy input with in-range int64 targets, no weight and no
    target equal to ``ignore_index``: every weight 1, so the loss is the picked entries' sum
    (over N for the mean) and the gradient's coefficient one number. The values are those of
    the general path to the bit: ``-sum(x)`` is ``sum(-x)``, and ``N`` is exact."""
    data, t = input._data, target._data
    picked = data[_HOST.arange(data.shape[0]), t]
    one = data.dtype.type(1)
    count = data.dtype.type(data.shape[0]) if reduction == "mean" else one
    out = _HOST.asarray(-picked.sum() / count)
    if not (input._rg and grad_state.enabled):
        return result(NllLossBackward0, out, (input,))
    return result(
        NllLossBackward0,
        out,
        (input,),
        (target,),
        scale=_HOST.asarray(-one / count),  # 0-d: the same for every target
        safe=t,
        input_shape=data.shape,
        reduction=reduction,
        class_dim=1,
        input=input,
        weight=None,
        weights=None,  # all ones: total_weight is the count
        ignore_index=ignore_index,
    )


def nll_loss(
    input: Tensor,
    target: Tensor,
    weight: Tensor | None = None,
    size_average=None,
    ignore_index: int = -100,
    reduce=None,
    reduction: str = "mean",
) -> Tensor:
    """``-input[n, target[n], ...] * weight[target[n]]``, reduced; class axis 1 (0 for 1-d).

    >>> nll_loss(ember.tensor([[-1.0, -2.0]]), ember.tensor([1]))
    tensor(2.)
    """
    reduction = legacy_reduction(size_average, reduce, reduction)
    refuse_grad("nll_loss_forward", "weight", weight)
    if reduction not in REDUCTIONS:
        raise ValueError(f"{reduction} is not a valid value for reduction")
    data, t = input._data, target._data
    if t.__class__ is not data.__class__:
        check_same_device("nll_loss", input, target)
    if weight is not None and weight._data.__class__ is not data.__class__:
        check_same_device("nll_loss", input, weight)
    xp = array_module(data)
    if data.ndim < 1:
        raise ValueError(f"Expected 1 or more dimensions (got {data.ndim})")
    class_dim = 1 if data.ndim > 1 else 0
    classes = data.shape[class_dim]
    _check_target_shape(data.shape, t.shape)
    if target.dtype.name not in ("int64", "uint8"):
        raise RuntimeError(
            f"expected target dtype to be Long or Byte, but got {target.dtype.legacy_name}"
        )
    if weight is not None and weight.dtype != input.dtype:
        raise RuntimeError(
            f"expected scalar type {input.dtype.legacy_name} but found {weight.dtype.legacy_name}"
        )
    if (
        data.ndim == 2
        and weight is None
        and reduction != "none"
        and xp is _HOST
        and t.dtype == _HOST.int64
        and data.dtype in _FAST_FLOATS
        and t.size
        and t.view(_HOST.uint64).max() < classes  # one pass: a negative index wraps around
        and (ignore_index < 0 or ignore_index >= classes or not (t == ignore_index).any())
    ):
        return _nll_loss_plain(input, target, reduction, ignore_index)
    ignored = t == ignore_index
    any_ignored = bool(ignored.any()) if t.size else False
    safe = xp.where(ignored, 0, t) if any_ignored else t
    # one yes/no question to Python (ember.compile replays it as a guard), numbers on failure
    if safe.size and bool(((safe >= classes) | (safe < 0)).any()):
        high, low = int(safe.max()), int(safe.min())
        raise IndexError(f"Target {high if high >= classes else low} is out of bounds.")
    if data.ndim == 2:  # the common case: plain fancy indexing beats take_along_axis
        rows = xp.arange(data.shape[0])
        picked = data[rows, safe]
    else:
        index = xp.expand_dims(safe, class_dim)
        picked = xp.take_along_axis(data, index, axis=class_dim).squeeze(class_dim)
    if weight is not None:
        w = weight._data[safe].astype(data.dtype, copy=False)
    else:
        w = xp.ones(safe.shape, dtype=data.dtype)
    if any_ignored:
        w = xp.where(ignored, xp.zeros((), dtype=data.dtype), w)
    terms = -(picked * w)
    # as torch: half floats sum in float32, rounded once at the end
    acc = xp.float32 if data.dtype.kind in "fV" and data.dtype.itemsize == 2 else None
    if reduction == "none":
        out, denominator = terms, 1
    elif reduction == "sum":
        out, denominator = terms.sum(dtype=acc), 1
    else:
        denominator = w.sum(dtype=acc)
        out = terms.sum(dtype=acc) / denominator
        denominator = xp.asarray(denominator, dtype=data.dtype)
    out = xp.asarray(out, dtype=data.dtype)
    node_cls = NllLoss2DBackward0 if data.ndim >= 3 else NllLossBackward0
    if not (input._rg and grad_state.enabled):
        return result(node_cls, out, (input,))
    scale = xp.asarray(-w / denominator, dtype=data.dtype)
    if any_ignored:  # as torch: an ignored target's gradient is 0, even 0/0 when all are
        scale = xp.where(ignored, xp.zeros((), dtype=data.dtype), scale)
    return result(
        node_cls,
        out,
        (input,),
        (target,),
        scale=scale,
        safe=safe,
        input_shape=data.shape,
        reduction=reduction,
        class_dim=class_dim,
        input=input,  # what torch's node saves, for _saved_* (no copy)
        weight=weight,
        weights=w,
        ignore_index=ignore_index,
    )
