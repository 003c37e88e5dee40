"""Connectionist temporal classification loss (Graves et al. 2006).

The forward (alpha) and backward (beta) recursions run in log space on arrays, vectorised over
the batch and the extended target, one time step at a time. Like PyTorch, the gradient given
for ``log_probs`` is ``exp(log_probs) - occupancy``: the gradient for the logits when
``log_probs`` come from ``log_softmax``, which is how CTC is used (and how its gradient is
checked). It cannot be differentiated again (nor can PyTorch's).
"""

from __future__ import annotations

from .._backend import errstate
from .._tensor import Tensor
from ..autograd.node import Node
from ._dispatch import array_module, grad_state, result, wrap
from .elementwise import where
from .loss import check_reduction

NEG_INF = float("-inf")


class CtcLossBackwardBackward0(Node):
    def backward(self, gg):
        raise RuntimeError("derivative for aten::_ctc_loss_backward is not implemented")


class CtcLossBackward0(Node):
    def backward(self, g):
        (log_probs,) = self.unpack_saved()
        coeff = self.coeff
        data = coeff._data * g._data.reshape(1, -1, 1).astype(coeff._data.dtype, copy=False)
        return result(CtcLossBackwardBackward0, data, (g, log_probs))


def _lengths(value, name: str, xp) -> object:
    if isinstance(value, Tensor):
        return xp.asarray(value._data).reshape(-1).astype(xp.int64)
    if isinstance(value, int):
        return xp.asarray([value], dtype=xp.int64)
    return xp.asarray(list(value), dtype=xp.int64).reshape(-1)


def _logaddexp(xp, a, b):
    with_inf = xp.maximum(a, b)
    finite = xp.isfinite(with_inf)
    m = xp.where(finite, with_inf, 0)
    with errstate(xp, divide="ignore"):  # log 0 where both are -inf: not the value used
        summed = m + xp.log(xp.exp(a - m) + xp.exp(b - m))
    return xp.where(finite, summed, with_inf)


def _extended_targets(xp, targets, target_lengths, batch: int, blank: int):
    """Targets with a blank before, between and after the labels: (N, 2 L_max + 1)."""
    longest = int(target_lengths.max()) if batch else 0
    labels = xp.full((batch, longest), blank, dtype=xp.int64)
    if targets.ndim == 2:
        width = min(longest, targets.shape[1])
        labels[:, :width] = targets[:, :width]
    else:
        offsets = xp.concatenate([xp.zeros(1, dtype=xp.int64), xp.cumsum(target_lengths)[:-1]])
        for n in range(batch):
            length = int(target_lengths[n])
            labels[n, :length] = targets[int(offsets[n]) : int(offsets[n]) + length]
    keep = xp.arange(longest)[None, :] < target_lengths[:, None]
    labels = xp.where(keep, labels, blank)
    ext = xp.full((batch, 2 * longest + 1), blank, dtype=xp.int64)
    ext[:, 1::2] = labels
    return ext


def _check(log_probs, targets, input_lengths, target_lengths, batch: int) -> None:
    steps = log_probs.shape[0]
    if input_lengths.shape[0] != batch or target_lengths.shape[0] != batch:
        raise RuntimeError(
            f"input_lengths and target_lengths must have size batch_size ({batch}), got "
            f"{input_lengths.shape[0]} and {target_lengths.shape[0]}"
        )
    if batch and int(input_lengths.max()) > steps:
        raise RuntimeError(
            f"Expected input_lengths to have value at most {steps}, but got value "
            f"{int(input_lengths.max())} (while checking arguments for ctc_loss_allocate_outputs)"
        )
    if batch and (int(input_lengths.min()) < 0 or int(target_lengths.min()) < 0):
        raise RuntimeError("ctc_loss: input_lengths and target_lengths must be non-negative")
    if targets.ndim == 2 and batch and int(target_lengths.max()) > targets.shape[1]:
        raise RuntimeError(
            f"Expected tensor to have size at least {int(target_lengths.max())} at dimension 1, "
            f"but got size {targets.shape[1]} for argument #2 'targets' (while checking "
            "arguments for ctc_loss_allocate_outputs)"
        )
    if targets.ndim == 1 and int(target_lengths.sum()) > targets.shape[0]:
        raise RuntimeError(
            f"ctc_loss: targets hold {targets.shape[0]} labels but target_lengths sum to "
            f"{int(target_lengths.sum())}"
        )


def _forward_backward(xp, lp, ext, input_lengths, target_lengths, blank: int, need_grad: bool):
    """Negative log-likelihoods (N,) and, when asked, the occupancies per class (T, N, C)."""
    steps, batch, classes = lp.shape
    width = ext.shape[1]
    ext_len = 2 * target_lengths + 1
    rows = xp.arange(batch)
    lp_ext = lp[:, rows[:, None], ext]  # (T, N, S): log-prob of each extended label
    skip = xp.zeros((batch, width), dtype=bool)
    skip[:, 2:] = (ext[:, 2:] != blank) & (ext[:, 2:] != ext[:, :-2])
    inside = xp.arange(width)[None, :] < ext_len[:, None]

    alpha = xp.full((steps, batch, width), NEG_INF, dtype=lp.dtype)
    if steps:
        alpha[0, :, 0] = lp_ext[0, :, 0]
        alpha[0, :, 1:2] = xp.where(target_lengths[:, None] > 0, lp_ext[0, :, 1:2], NEG_INF)
    for t in range(1, steps):
        prev = alpha[t - 1]
        total = prev.copy()
        total[:, 1:] = _logaddexp(xp, total[:, 1:], prev[:, :-1])
        total[:, 2:] = _logaddexp(xp, total[:, 2:], xp.where(skip[:, 2:], prev[:, :-2], NEG_INF))
        alpha[t] = xp.where(inside, total + lp_ext[t], NEG_INF)

    last_t = xp.maximum(input_lengths - 1, 0)
    end = alpha[last_t, rows]  # (N, S)
    final = end[rows, ext_len - 1]
    before = xp.where(ext_len >= 2, end[rows, xp.maximum(ext_len - 2, 0)], NEG_INF)
    nll = -_logaddexp(xp, final, before)
    nll = xp.where(input_lengths == 0, xp.where(target_lengths == 0, 0.0, xp.inf), nll)
    if not need_grad:
        return nll, None

    beta = xp.full((steps, batch, width), NEG_INF, dtype=lp.dtype)
    for t in range(steps - 1, -1, -1):
        if t + 1 < steps:
            nxt = beta[t + 1]
            total = nxt.copy()
            total[:, :-1] = _logaddexp(xp, total[:, :-1], nxt[:, 1:])
            total[:, :-2] = _logaddexp(
                xp, total[:, :-2], xp.where(skip[:, 2:], nxt[:, 2:], NEG_INF)
            )
            beta[t] = xp.where(inside, total + lp_ext[t], NEG_INF)
        starts = input_lengths - 1 == t
        if bool(starts.any()):
            init = xp.full((batch, width), NEG_INF, dtype=lp.dtype)
            init[rows, ext_len - 1] = lp_ext[t, rows, ext_len - 1]
            two = ext_len >= 2
            init[rows[two], ext_len[two] - 2] = lp_ext[t, rows[two], ext_len[two] - 2]
            beta[t] = xp.where(starts[:, None], init, beta[t])

    # log Σ_{s: ext[s] = c} α β, per (t, n, c), via a max-shifted scatter-add
    ab = alpha + beta
    shift = ab.max(-1, keepdims=True)
    shift = xp.where(xp.isfinite(shift), shift, 0)
    summed = xp.zeros((steps, batch, classes), dtype=lp.dtype)
    index_t = xp.arange(steps)[:, None, None]
    xp.add.at(summed, (index_t, rows[None, :, None], ext[None, :, :]), xp.exp(ab - shift))
    # log 0 for classes off every path; -inf + inf (nan, as PyTorch) for impossible samples
    with errstate(xp, divide="ignore", invalid="ignore"):
        log_ab = xp.log(summed) + shift
        occupancy = xp.exp(log_ab + nll[None, :, None] - lp)
    return nll, occupancy


def ctc_loss(
    log_probs: Tensor,
    targets: Tensor,
    input_lengths,
    target_lengths,
    blank: int = 0,
    reduction: str = "mean",
    zero_infinity: bool = False,
) -> Tensor:
    """CTC loss of (T, N, C) (or unbatched (T, C)) log-probabilities against padded (N, S) or
    concatenated targets; 'mean' divides each loss by its target length, then averages."""
    check_reduction(reduction)
    unbatched = log_probs.dim() == 2
    if log_probs.dim() not in (2, 3):
        raise RuntimeError(
            f"ctc_loss: expected log_probs of shape (T, N, C) or (T, C), got "
            f"{list(log_probs.shape)}"
        )
    if not log_probs.is_floating_point():
        raise RuntimeError(f"\"ctc_loss_cpu\" not implemented for '{log_probs.dtype.legacy_name}'")
    lp_tensor = log_probs.unsqueeze(1) if unbatched else log_probs
    lp = lp_tensor._data
    xp = array_module(lp)
    tgt = targets._data
    if unbatched:
        tgt = tgt.reshape(1, -1)
    if tgt.dtype.kind not in "iu":
        raise RuntimeError(f"ctc_loss: targets must be integers, got {targets.dtype}")
    tgt = tgt.astype(xp.int64, copy=False)
    in_lens = _lengths(input_lengths, "input_lengths", xp)
    tgt_lens = _lengths(target_lengths, "target_lengths", xp)
    batch, classes = lp.shape[1], lp.shape[2]
    _check(lp, tgt, in_lens, tgt_lens, batch)
    if not 0 <= blank < classes:
        raise RuntimeError("blank must be in label range")
    ext = _extended_targets(xp, tgt, tgt_lens, batch, blank)
    need_grad = log_probs.requires_grad and grad_state.enabled
    nll, occupancy = _forward_backward(xp, lp, ext, in_lens, tgt_lens, blank, need_grad)
    nll = nll.astype(lp.dtype, copy=False)
    coeff = None
    if need_grad:
        grad = xp.exp(lp) - occupancy
        grad = xp.where(xp.arange(lp.shape[0])[:, None, None] < in_lens[None, :, None], grad, 0)
        if zero_infinity:
            grad = xp.where(xp.isinf(nll)[None, :, None], 0, grad)
        coeff = wrap(grad.astype(lp.dtype, copy=False))  # nan where the loss is infinite
    loss = result(CtcLossBackward0, nll, (lp_tensor,), (lp_tensor,), coeff=coeff)
    if zero_infinity:
        loss = where(loss == float("inf"), 0.0, loss)
    if reduction == "mean":
        lengths = wrap(xp.maximum(tgt_lens, 1).astype(lp.dtype))
        return (loss / lengths).mean()
    if reduction == "sum":
        return loss.sum()
    return loss.squeeze(0) if unbatched else loss
