"""ember.optim.lr_scheduler: every PyTorch learning-rate schedule, by family."""

from collections import Counter as Counter  # re-exported as PyTorch's module does

from ..optimizer import Optimizer as Optimizer
from .annealing import CosineAnnealingLR, CosineAnnealingWarmRestarts, CyclicLR, OneCycleLR
from .base import EPOCH_DEPRECATION_WARNING, LRScheduler, _LRScheduler
from .composite import ChainedScheduler, SequentialLR
from .multiplicative import (
    ConstantLR,
    ExponentialLR,
    LambdaLR,
    LinearLR,
    MultiplicativeLR,
    MultiStepLR,
    PolynomialLR,
    StepLR,
)
from .plateau import ReduceLROnPlateau

__all__ = [
    "EPOCH_DEPRECATION_WARNING",
    "ChainedScheduler",
    "ConstantLR",
    "CosineAnnealingLR",
    "CosineAnnealingWarmRestarts",
    "CyclicLR",
    "ExponentialLR",
    "LRScheduler",
    "LambdaLR",
    "LinearLR",
    "MultiStepLR",
    "MultiplicativeLR",
    "OneCycleLR",
    "PolynomialLR",
    "ReduceLROnPlateau",
    "SequentialLR",
    "StepLR",
    "_LRScheduler",
]
