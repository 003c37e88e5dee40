import pytest


@pytest.fixture
def torch_sparse(torch_mod):
    """Real PyTorch, without its warning that sparse invariant checks are off by default."""
    import warnings

    warnings.filterwarnings("ignore", "Sparse invariant checks", UserWarning)
    warnings.filterwarnings("ignore", "Sparse CSR tensor support is in beta", UserWarning)
    return torch_mod
