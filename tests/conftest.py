import numpy as np
import pytest

try:
    import torch  # noqa: F401

    HAVE_TORCH = True
except ImportError:  # pragma: no cover - depends on the environment
    HAVE_TORCH = False


# The suite's tensors are small: without this the compiled kernels (numba, when installed)
# would sit out nearly every test. Run with EMBER_JIT=0 to test the NumPy paths instead.
from ember._kernels import jit as _jit  # noqa: E402

_jit.MIN_WORK = 0


@pytest.fixture
def torch_mod():
    """Real PyTorch, or a skip when it is not installed."""
    if not HAVE_TORCH:
        pytest.skip("torch is not installed")
    import torch

    return torch


@pytest.fixture(autouse=True)
def _seed():
    import ember

    ember.manual_seed(0)
    np.random.seed(0)
