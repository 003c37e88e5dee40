"""ember.linalg: PyTorch's torch.linalg names."""

from .ops.linalg import det, inv, matrix_norm, norm, solve, svdvals
from .ops.reduction import vector_norm

__all__ = ["det", "inv", "matrix_norm", "norm", "solve", "svdvals", "vector_norm"]
