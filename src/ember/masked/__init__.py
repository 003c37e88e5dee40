"""``ember.masked``: torch.masked's reductions and normalizations with a ``mask=`` keyword,
and ``MaskedTensor``.

Example::
    >>> x = ember.tensor([[1.0, -2.0], [3.0, 4.0]])
    >>> ember.masked.amax(x, 1, mask=x > 0)
    tensor([1., 4.])
"""

from __future__ import annotations

from ._core import MaskedTensor, as_masked_tensor, is_masked_tensor, masked_tensor
from ._ops import (  # noqa: I001 - the private helpers OpInfo calls come first
    _input_mask,
    _output_mask,
    amax,
    amin,
    argmax,
    argmin,
    cumprod,
    cumsum,
    log_softmax,
    logaddexp,
    logsumexp,
    mean,
    median,
    norm,
    normalize,
    prod,
    softmax,
    softmin,
    std,
    sum,
    var,
)

__all__ = [
    "MaskedTensor",
    "as_masked_tensor",
    "is_masked_tensor",
    "masked_tensor",
    "amax",
    "amin",
    "argmax",
    "argmin",
    "cumprod",
    "cumsum",
    "log_softmax",
    "logaddexp",
    "logsumexp",
    "mean",
    "median",
    "norm",
    "normalize",
    "prod",
    "softmax",
    "softmin",
    "std",
    "sum",
    "var",
]
