"""``torch.nn.modules.linear_cross_entropy``: the fused linear + cross-entropy loss."""

from .loss import LinearCrossEntropyLoss

__all__ = ["LinearCrossEntropyLoss"]
