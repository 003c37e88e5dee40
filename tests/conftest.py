import numpy as np
import pytest

try:
    import torch  # noqa: F401

    HAVE_TORCH = True
except ImportError:  # pragma: no cover - depends on the environment
    HAVE_TORCH = False


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
