"""``torch.nn.modules.linear_cross_entropy_options``: options of the fused loss."""

from .loss import LinearCrossEntropyOptions

__all__ = ["LinearCrossEntropyOptions"]
