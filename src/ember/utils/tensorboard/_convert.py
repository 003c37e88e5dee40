"""What the writer accepts wherever PyTorch's accepts a tensor, as a NumPy array."""

from __future__ import annotations

import numpy as np

from ..._tensor import Tensor


def make_np(x) -> np.ndarray:
    """``x`` (an ember tensor, a NumPy array or a Python/NumPy scalar) as a NumPy array.

    A scalar becomes a one-element array, as in PyTorch. The array may share memory with the
    tensor: callers copy before writing into it.

    Example::
        >>> make_np(ember.tensor([1.0, 2.0]))
        array([1., 2.], dtype=float32)
    """
    if isinstance(x, np.ndarray):
        return x
    if np.isscalar(x):
        return np.array([x])
    if isinstance(x, Tensor):
        array = x.numpy(force=True)  # detached, and copied to the host for a CUDA tensor
        if array.dtype.name == "bfloat16":
            # NumPy's histograms and PIL do not know ml_dtypes' bfloat16; float32 holds it exactly
            array = array.astype(np.float32)
        return array
    raise NotImplementedError(
        f"Got {type(x).__name__}, but a NumPy array or an ember tensor was expected."
    )
