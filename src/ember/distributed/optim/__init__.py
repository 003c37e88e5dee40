"""``ember.distributed.optim``: optimizers for distributed training.

``DistributedOptimizer`` steps parameters that live on several workers (RRefs of them) with the
gradients a distributed autograd context holds.
"""

from .optimizer import DistributedOptimizer

__all__ = ["DistributedOptimizer"]
