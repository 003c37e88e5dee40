"""The losses as the ``torch`` namespace spells them (``torch.kl_div``, ``torch.ctc_loss``,
...): the reduction is PyTorch's enum (0 'none', 1 'mean', 2 'sum') and there are no legacy
``size_average``/``reduce`` arguments. Each forwards to the ``ember.nn.functional`` form.
"""

from __future__ import annotations

from .._tensor import Tensor
from .loss_classification import binary_cross_entropy_with_logits as _bce_logits
from .loss_ctc import ctc_loss as _ctc_loss
from .loss_margin import cosine_embedding_loss as _cosine_embedding
from .loss_margin import hinge_embedding_loss as _hinge_embedding
from .loss_margin import margin_ranking_loss as _margin_ranking
from .loss_margin import triplet_margin_loss as _triplet_margin
from .loss_regression import kl_div as _kl_div
from .loss_regression import poisson_nll_loss as _poisson_nll

MEAN = 1
_NAMES = {0: "none", 1: "mean", 2: "sum"}


def reduction_name(reduction: int) -> str:
    """PyTorch's reduction enum as its string."""
    if isinstance(reduction, str) or reduction not in _NAMES:
        raise RuntimeError(f"reduction must be 0 (none), 1 (mean) or 2 (sum), got {reduction!r}")
    return _NAMES[reduction]


def binary_cross_entropy_with_logits(
    input: Tensor, target: Tensor, weight=None, pos_weight=None, reduction: int = MEAN
) -> Tensor:
    return _bce_logits(
        input, target, weight, reduction=reduction_name(reduction), pos_weight=pos_weight
    )


def kl_div(input: Tensor, target: Tensor, reduction: int = MEAN, log_target: bool = False):
    import warnings

    with warnings.catch_warnings():  # only the functional form warns about 'mean'
        warnings.simplefilter("ignore")
        return _kl_div(input, target, reduction=reduction_name(reduction), log_target=log_target)


def poisson_nll_loss(
    input: Tensor, target: Tensor, log_input: bool, full: bool, eps: float, reduction: int
) -> Tensor:
    return _poisson_nll(
        input, target, log_input, full, eps=eps, reduction=reduction_name(reduction)
    )


def hinge_embedding_loss(
    input: Tensor, target: Tensor, margin: float = 1.0, reduction: int = MEAN
) -> Tensor:
    return _hinge_embedding(input, target, margin, reduction=reduction_name(reduction))


def margin_ranking_loss(
    input1: Tensor, input2: Tensor, target: Tensor, margin: float = 0.0, reduction: int = MEAN
) -> Tensor:
    return _margin_ranking(input1, input2, target, margin, reduction=reduction_name(reduction))


def cosine_embedding_loss(
    input1: Tensor, input2: Tensor, target: Tensor, margin: float = 0.0, reduction: int = MEAN
) -> Tensor:
    return _cosine_embedding(input1, input2, target, margin, reduction=reduction_name(reduction))


def triplet_margin_loss(
    anchor: Tensor,
    positive: Tensor,
    negative: Tensor,
    margin: float = 1.0,
    p: float = 2,
    eps: float = 1e-6,
    swap: bool = False,
    reduction: int = MEAN,
) -> Tensor:
    return _triplet_margin(
        anchor, positive, negative, margin, p, eps, swap, reduction=reduction_name(reduction)
    )


def ctc_loss(
    log_probs: Tensor,
    targets: Tensor,
    input_lengths,
    target_lengths,
    blank: int = 0,
    reduction: int = MEAN,
    zero_infinity: bool = False,
) -> Tensor:
    return _ctc_loss(
        log_probs,
        targets,
        input_lengths,
        target_lengths,
        blank,
        reduction_name(reduction),
        zero_infinity,
    )
