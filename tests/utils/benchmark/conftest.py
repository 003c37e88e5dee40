import pytest


@pytest.fixture
def torch_benchmark(torch_mod):
    """``torch.utils.benchmark`` (PyTorch does not import it with ``torch``), or a skip."""
    import torch.utils.benchmark

    return torch.utils.benchmark


@pytest.fixture
def fixed_torch_fuzzer(torch_benchmark, monkeypatch):
    """torch's benchmark module with dict distributions usable again.

    PyTorch 2.13's ``FuzzedParameter._check_distribution`` inverts its normalisation test and
    rejects every dict distribution ("Distribution is not normalized" for {2: 0.6, 3: 0.4});
    skipping the check leaves the rest of its Fuzzer to compare against.
    """
    monkeypatch.setattr(torch_benchmark.FuzzedParameter, "_check_distribution", lambda self, d: d)
    return torch_benchmark
