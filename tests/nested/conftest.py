import warnings

import pytest

import ember.nested  # noqa: F401 - installs the nested kernels, as first use does


@pytest.fixture
def torch_nested(torch_mod):
    """Real PyTorch, without its notes that the strided layout is a prototype."""
    warnings.filterwarnings("ignore", "The PyTorch API of nested tensors", UserWarning)
    warnings.filterwarnings("ignore", ".*is_fx_tracing.*")
    import logging

    logging.getLogger("torch.nested._internal.sdpa").setLevel(logging.ERROR)
    logging.getLogger("torch.fx._symbolic_trace").setLevel(logging.ERROR)
    return torch_mod
