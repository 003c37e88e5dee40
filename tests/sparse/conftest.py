import pytest

import ember
import ember.sparse

ember.sparse.install()  # what ember/__init__.py does once the hook is in; idempotent


@pytest.fixture
def torch_sparse(torch_mod):
    """Real PyTorch, without its warning that sparse invariant checks are off by default."""
    import warnings

    warnings.filterwarnings("ignore", "Sparse invariant checks", UserWarning)
    return torch_mod
